"""The ``--bt-*`` options (one group, ``bt_bench``) and their validated settings.

Resolution order: command line > ``[tool.bt_bench]`` in the rootdir's pyproject.toml > defaults. ``Settings`` is a
frozen dataclass whose ``__post_init__`` names the field and the fix for any bad value (kronfluence style), so a
typo fails at collection with a message, never deep inside a fixture.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from bt_bench.runs.config import DEFAULT_PROFILE  # no torch: the specs and profiles only

SESSION_ENV = "BT_BENCH_SESSION"  # this checklist session's id, set by the controller, inherited by its xdist workers


def _help(text: str, default: Any) -> Any:
    return dataclasses.field(default=default, metadata={"help": text})


@dataclasses.dataclass(frozen=True)
class Settings:
    """Resolved ``--bt-*`` settings."""

    estimators: tuple[str, ...] = _help("estimator names or pkg.module:Class (default: every registered one except "
                                        "test-only ones)", ())
    profile: str = _help("fixture profile (bt_bench.runs.config.PROFILES)", DEFAULT_PROFILE)
    seeds: int = _help("number of planted seeds", 3)
    draws: int = _help("number of generation draws per chosen checkpoint", 3)
    cache_dir: str | None = _help("run store root (default $BT_BENCH_CACHE or ~/.cache/bt-bench)", None)
    rebuild: bool = _help("rebuild the fixtures even if cached", False)
    report: str | None = _help("write the JSON report to this path", None)
    evidence: str | None = _help("replay recorded evidence from this folder instead of building fixtures", None)
    fixture: str | None = _help("run on the fixtures of a pack file or folder (bt-bench pack) instead of building "
                                "them; profile and seeds come from it", None)
    strict: bool = _help("gate built-ins and controls like any estimator (ignore their declared outcomes)", False)
    paper_gate: bool = _help("refuse modified thresholds, a profile that relaxes them, fewer seeds or draws than the "
                             "defaults, and any test selection (-k, -m, --deselect, node ids, -x, --lf)", False)
    lds: bool = _help("run check 10 (LDS): the fixture's LDS set, S replays per seed "
                      "(Profile.lds_subsets); also under --bt-paper-gate, only when given", False)
    causal_all_seeds: bool = _help("run the 'planted cause is causal' re-runs for every seed (default: the first)",
                                   False)
    gate_seed: int | None = _help("build fresh fixtures from this seed (run seeds, base model, nonce trigger and "
                                  "behavior strings); --bt-paper-gate draws one when it is not given", None)
    gate_attempts: int = _help("how many gate seeds (the drawn one, then seeds derived from it) a session on fresh "
                               "fixtures tries until one's fixtures pass the sketch-ranking self-check and the oracle canary "
                               "(bt_bench.plugin.gate_draw)", 6)
    sketch_seed: int = _help("sketch seed of the fixtures' runs (RunConfig.sketch_seed): every sketch, in-run and "
                             "derived, under another random projection; the draws are also judged under the next "
                             "ones (FixtureConfig.sketch_seeds)", 0)
    timeout: float = _help("time limit in seconds of one estimator fit/score call (0: none)", 3600.0)
    rescore: bool = _help("compute every score again instead of reading the scores earlier sessions stored "
                          "(bt_bench.checklist.score_cache); --bt-paper-gate implies it", False)
    isolation: str = _help("where estimators are imported and run: 'sandbox' (a separate, Landlock-sandboxed "
                           "process), 'process' (separate, not sandboxed), 'none' (in the judging process)", "sandbox")
    thresholds: dict = dataclasses.field(default_factory=dict, metadata={
        "help": "[tool.bt_bench.thresholds] overrides of bt_bench.checklist.base.Thresholds"})

    def __post_init__(self) -> None:
        from bt_bench.runs.config import PROFILES

        if self.profile not in PROFILES:
            raise ValueError(f"profile: {self.profile!r} is unknown; use one of {sorted(PROFILES)} (--bt-profile)")
        for name in ("seeds", "draws", "gate_attempts"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {v!r} (--bt-{name.replace('_', '-')})")
        if not all(isinstance(e, str) and e for e in self.estimators):
            raise ValueError(f"estimators: names must be non-empty strings, got {self.estimators!r} (--bt-estimator)")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not self.timeout >= 0:
            raise ValueError(f"timeout: must be a number of seconds >= 0 (0: no limit), got {self.timeout!r} "
                             "(--bt-timeout)")
        if self.gate_seed is not None and (isinstance(self.gate_seed, bool) or not isinstance(self.gate_seed, int)
                                           or not 0 <= self.gate_seed < 2**31):
            raise ValueError(f"gate_seed: must be an integer in [0, 2**31), got {self.gate_seed!r} (--bt-gate-seed)")
        if isinstance(self.sketch_seed, bool) or not isinstance(self.sketch_seed, int) or not 0 <= self.sketch_seed < 2**31:
            raise ValueError(f"sketch_seed: must be an integer in [0, 2**31), got {self.sketch_seed!r} "
                             "(--bt-sketch-seed)")
        if self.sketch_seed and (self.fixture or self.evidence):
            raise ValueError("sketch_seed: a pack's or evidence's sketches are what they were built with; drop "
                             "--bt-sketch-seed or build fresh fixtures")
        if self.gate_seed is not None and (self.fixture or self.evidence):
            raise ValueError("gate_seed: fresh fixtures are built, never read from --bt-fixture or --bt-evidence; "
                             "drop one of them (--bt-gate-seed)")
        if self.lds and not get_profile_lds(self.profile):  # also a pack's profile (dataclasses.replace)
            raise ValueError(f"lds: profile {self.profile!r} declares no LDS set size (Profile.lds_subsets: none "
                             "measured yet); measure one with `python -m bt_bench.bench.counterfactual lds`, or drop "
                             "--bt-lds")
        if self.isolation not in ("sandbox", "process", "none"):
            raise ValueError(f"isolation: {self.isolation!r} is unknown; use 'sandbox', 'process' or 'none' "
                             "(--bt-isolation)")
        if not isinstance(self.thresholds, dict):
            raise ValueError(f"thresholds: must be a table of name = value, got {self.thresholds!r} "
                             "([tool.bt_bench.thresholds])")


_OPTIONS = {  # name: (type, help)
    "estimator": (str, "estimator name or pkg.module:Class (repeatable; default: every registered estimator "
                       "except test-only ones)"),
    "profile": (str, "fixture profile: tiny_family (the default: a family behavior retrieval cannot find by its "
                        "text), tiny (the paper's one-token behavior: check 8 is an ERROR of it), bpe, bpe_family, "
                        "smoke, paper"),
    "seeds": (int, "number of planted seeds (default 3)"),
    "draws": (int, "number of generation draws per checkpoint (default 3)"),
    "cache-dir": (str, "run store root (default $BT_BENCH_CACHE or ~/.cache/bt-bench)"),
    "rebuild": (bool, "rebuild the fixtures even if cached"),
    "report": (str, "write the JSON report to this path"),
    "evidence": (str, "replay recorded evidence from this folder instead of building fixtures"),
    "fixture": (str, "run the checklist on the fixtures of a pack (bt-bench pack FILE) or an unpacked/cache folder "
                     "instead of building any: verified first; the profile and the seeds are the pack's"),
    "strict": (bool, "built-ins and controls are gated like any estimator (their declared expected outcomes "
                     "are ignored)"),
    "lds": (bool, "run check 10 (LDS, linear datamodeling score): the fixture's S half-subset replays per seed (tiny: "
                  "S = 120, about 4 s each; cached, shared by the xdist workers); without it the check is N/A "
                  "(not run), also under --bt-paper-gate: on fresh fixtures the set costs tiny about 25 CPU-minutes"),
    "causal-all-seeds": (bool, "run the two re-runs of the 'planted cause is causal' self-check for every seed "
                               "(default: the first seed only)"),
    "timeout": (float, "time limit in seconds of one call into an estimator (its fit or one score); a call that "
                       "runs longer is interrupted and the cell is an ERROR (default 3600; 0: no limit)"),
    "rescore": (bool, "compute every score again: by default a score is stored under the cache (scores/) and read "
                      "back by a later session when the estimator's package sources, bt-bench's sources, every "
                      "installed distribution's version and the exact input are the same (an estimator that reads "
                      "anything else, e.g. its own files, needs this flag after changing them). --bt-paper-gate "
                      "implies it"),
    "isolation": (str, "where estimators are imported and run: sandbox (default: a separate scoring process that "
                       "cannot read the run cache), process (separate, not sandboxed), none (in-process, to debug "
                       "an estimator; refused by --bt-paper-gate)"),
    "sketch-seed": (int, "sketch seed of the fixtures' runs (default 0): the same training under another random "
                         "projection of every gradient sketch, to measure whether a verdict moves with the "
                         "instrument (the draws are judged under this seed and the next ones anyway). Refused by "
                         "--bt-paper-gate: choosing a sketch seed is a selection"),
    "gate-seed": (int, "build fresh fixtures from this seed: run seeds, the embedded base model, and its trigger and "
                       "behavior as nonce strings drawn with the profile's token lengths. --bt-paper-gate draws it at "
                       "gate time and reports it; pass it to reproduce that gate run exactly"),
    "gate-attempts": (int, "fresh fixtures (--bt-paper-gate, --bt-gate-seed): how many gate seeds to try, the given "
                           "or drawn one and then seeds derived from it, until one's fixtures pass the sketch-ranking "
                           "self-check and the oracle canary, before any other estimator is scored; every rejected "
                           "seed is reported (default 6)"),
    "paper-gate": (bool, "refuse to run with thresholds that differ from the checklist's defaults (and with a "
                         "profile that relaxes them, e.g. smoke), with fewer seeds or draws than the defaults, and "
                         "with any test selection (-k, -m, --deselect, --ignore, node ids or paths inside the checks "
                         "folder, -x/--maxfail, --lf/--ff/--sw): the setting to gate a paper on"),
}


def get_profile_lds(profile: str) -> int:
    """The profile's LDS set size S (0: none measured), or 0 for an unknown profile (refused elsewhere)."""
    from bt_bench.runs.config import PROFILES

    p = PROFILES.get(profile)
    return int(p.lds_subsets) if p else 0


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("bt_bench", "bt-bench checklist")
    for name, (typ, help_) in _OPTIONS.items():
        dest = "bt_" + name.replace("-", "_")
        if typ is bool:
            group.addoption(f"--bt-{name}", action="store_true", default=None, dest=dest, help=help_)
        elif name == "estimator":
            group.addoption(f"--bt-{name}", action="append", default=None, dest=dest, help=help_)
        else:
            group.addoption(f"--bt-{name}", type=typ, default=None, dest=dest, help=help_)


def _pyproject_settings(rootdir: Path) -> dict[str, Any]:
    import tomllib

    p = rootdir / "pyproject.toml"
    if not p.exists():
        return {}
    with open(p, "rb") as f:
        return tomllib.load(f).get("tool", {}).get("bt_bench", {})


def resolve_settings(config: pytest.Config) -> Settings:
    file = _pyproject_settings(Path(str(config.rootpath)))
    known = {f.name for f in dataclasses.fields(Settings)} | {"estimator"}
    unknown = sorted(set(file) - known)
    if unknown:
        raise pytest.UsageError(f"[tool.bt_bench] has unknown key(s) {unknown}; known: {sorted(known)}")
    vals: dict[str, Any] = {}
    for name in _OPTIONS:
        field = name.replace("-", "_")
        cli = config.getoption("bt_" + field)
        fkey = "estimators" if field == "estimator" else field
        v = cli if cli is not None else file.get(field, file.get(fkey))
        if v is not None:
            vals[fkey] = tuple([v] if isinstance(v, str) else v) if fkey == "estimators" else v
    if "thresholds" in file:
        vals["thresholds"] = dict(file["thresholds"])
    try:
        s = Settings(**vals)
        if s.paper_gate and (s.fixture or s.evidence):
            flag = "--bt-fixture" if s.fixture else "--bt-evidence"
            raise pytest.UsageError(f"--bt-paper-gate refuses {flag}: a pack or recorded evidence is prepared data, "
                                    "which a table or constant prepared beforehand can match; the paper gate builds "
                                    f"fresh fixtures at gate time (run without {flag}; --bt-gate-seed N reproduces a "
                                    "gate run)")
        if s.fixture:  # the pack decides the profile and the seeds (its planted runs)
            profile, n = fixture_path_summary(s.fixture)
            s = dataclasses.replace(s, profile=profile, seeds=max(1, n))
        mod = modified_thresholds(s)
        from bt_bench.fixture.reader import fixture_config

        fixture_config(s.profile, s.draws, effective_thresholds(s))  # checkpoint thresholds must be consistent
    except (TypeError, ValueError) as e:
        raise pytest.UsageError(f"bt-bench settings: {e}") from e
    if s.paper_gate and mod:
        raise pytest.UsageError("--bt-paper-gate refuses modified thresholds: " + ", ".join(
            f"{k}={v['value']!r} (default {v['default']!r})" for k, v in mod.items())
            + "; remove them from [tool.bt_bench.thresholds] (or do not use --bt-paper-gate)")
    if s.paper_gate and s.sketch_seed:
        raise pytest.UsageError(f"--bt-paper-gate refuses --bt-sketch-seed {s.sketch_seed}: choosing the sketch a "
                                "verdict is judged under is a selection (the gate judges each draw under the default "
                                "sketch seeds)")
    if s.paper_gate:
        refuse_unsealed(s)
        if s.gate_seed is None:
            s = dataclasses.replace(s, gate_seed=gate_seed_of(config))
    # --bt-paper-gate's refusal of fewer seeds or draws and of any test selection: bt_bench.plugin.selection
    return s


GATE_SEED_KEY = "bt_gate_seed"


def gate_seed_of(config: pytest.Config) -> int:
    """The paper gate's seed, drawn once per run at gate time (``secrets``: nothing prepared beforehand can know
    it): by the controller, which hands it to its xdist workers (``pytest_configure_node``)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and GATE_SEED_KEY in workerinput:
        return int(workerinput[GATE_SEED_KEY])
    import secrets

    return secrets.randbelow(2**31)


def refuse_unsealed(s: Settings) -> None:
    """The paper gate judges only estimators scored in a sandboxed process (bt_bench.estimator.sealed)."""
    if s.isolation != "sandbox":
        raise pytest.UsageError(f"--bt-paper-gate refuses --bt-isolation {s.isolation}: an estimator imported or "
                                "run beside the judge can patch it or read the labels; use the default (sandbox)")
    from bt_bench.estimator.sandbox import available

    ok, why = available()
    if not ok:
        raise pytest.UsageError(f"--bt-paper-gate needs the scoring sandbox, which is not available here: {why} "
                                "(Linux >= 5.13 with Landlock enabled)")


def effective_thresholds(s: Settings):
    """The checklist's thresholds after the profile's own overrides and the user's [tool.bt_bench.thresholds]."""
    from bt_bench.checklist.base import Thresholds
    from bt_bench.runs.config import get_profile

    return Thresholds.from_mapping({**get_profile(s.profile).thresholds, **s.thresholds})


def modified_thresholds(s: Settings) -> dict[str, dict]:
    """{name: {value, default}} of every threshold that differs from the checklist's default."""
    from bt_bench.checklist.base import Thresholds

    now, default = dataclasses.asdict(effective_thresholds(s)), dataclasses.asdict(Thresholds())
    return {k: {"value": now[k], "default": default[k]} for k in default if now[k] != default[k]}


def _pack_runs(path: str) -> list[dict]:
    """[{profile, seed, planted}] of the runs a pack file / folder holds, read from its manifests without
    verifying anything (that happens once, in ``bt_runs``): enough to parametrize the session."""
    import json
    import tarfile

    p = Path(path)
    if p.is_file():
        try:
            with tarfile.open(p) as tar:
                member = tar.extractfile("pack.json")
                pm = json.loads(member.read()) if member else None
        except (tarfile.TarError, KeyError, ValueError) as e:
            raise pytest.UsageError(f"--bt-fixture {p}: not a readable bt-bench pack ({e})") from e
        return [_brief(r["config"], r["planted"]) for r in pm["runs"]]
    if (p / "pack.json").is_file():
        return [_brief(r["config"], r["planted"]) for r in json.loads((p / "pack.json").read_text())["runs"]]
    folders = sorted((p / "runs").glob("*/manifest.json")) if (p / "runs").is_dir() else [p / "manifest.json"]
    out = []
    for f in folders:
        if f.is_file():
            m = json.loads(f.read_text())
            out.append(_brief(m["config"], m["gate"]["planted"]))
    if not out:
        raise pytest.UsageError(f"--bt-fixture {p}: no pack file, pack folder (pack.json), cache folder (runs/) "
                                "or run folder (manifest.json) there")
    return out


def _brief(config: dict, planted: bool) -> dict:
    # a causal re-run (ablation != none) ships with its run but is not a fixture seed
    return {"profile": config["profile"], "seed": config["seed"], "planted": bool(planted),
            "rerun": config.get("ablation", "none") != "none"}


def fixture_path_summary(path: str) -> tuple[str, int]:
    """(profile, number of runs the checklist will use) of a ``--bt-fixture`` pack: its planted runs (all of them
    where the profile's planting gate does not apply). One profile per pack."""
    from bt_bench.runs.config import get_profile

    runs = [r for r in _pack_runs(path) if not r["rerun"]]
    profiles = sorted({r["profile"] for r in runs})
    if len(profiles) != 1:
        raise pytest.UsageError(f"--bt-fixture {path}: runs of {len(profiles)} profiles {profiles}; pack one profile")
    gate = get_profile(profiles[0]).gate_applies
    return profiles[0], sum(1 for r in runs if r["planted"] or not gate)
