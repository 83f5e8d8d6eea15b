"""pytest plugin for bt-bench (registered under ``pytest11``). Import-light: no torch at module top.

It adds the ``bt_bench`` option group (``--bt-*``; the same keys are read from ``[tool.bt_bench]`` in the
rootdir's pyproject.toml), keeps its settings in ``config.stash``, provides the session fixtures the checks use
(planted runs, built once even under ``pytest -n 2`` thanks to the store's lock), and registers one
``BtSession`` object that collects each check's metrics from ``user_properties`` (they travel from xdist
workers), decides every estimator's gate (``bt_bench.checklist.gate``; the exit code), prints the summary table and the gate
lines and writes the JSON report once, on the controller.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPORT_SCHEMA = "bt-bench-report/1"


@dataclasses.dataclass(frozen=True)
class Settings:
    """Resolved ``--bt-*`` settings (command line > ``[tool.bt_bench]`` > defaults)."""

    estimators: tuple[str, ...] = ()
    profile: str = "tiny"
    seeds: int = 3
    draws: int = 3
    cache_dir: str | None = None
    rebuild: bool = False
    report: str | None = None
    evidence: str | None = None
    strict: bool = False
    paper_gate: bool = False
    thresholds: dict = dataclasses.field(default_factory=dict)  # [tool.bt_bench.thresholds] overrides


settings_key = pytest.StashKey[Settings]()
results_key = pytest.StashKey[list]()

_OPTIONS = {  # name: (type, help)
    "estimator": (str, "estimator name or pkg.module:Class (repeatable; default: every registered estimator "
                       "except test-only ones)"),
    "profile": (str, "fixture profile: tiny (default), smoke, paper"),
    "seeds": (int, "number of planted seeds (default 3)"),
    "draws": (int, "number of generation draws per checkpoint (default 3)"),
    "cache-dir": (str, "run store root (default $BT_BENCH_CACHE or ~/.cache/bt-bench)"),
    "rebuild": (bool, "rebuild the fixtures even if cached"),
    "report": (str, "write the JSON report to this path"),
    "evidence": (str, "replay recorded evidence from this folder instead of building fixtures"),
    "strict": (bool, "built-ins and controls are gated like any estimator (their declared expected outcomes "
                     "are ignored)"),
    "paper-gate": (bool, "refuse to run with thresholds that differ from the checklist's defaults (and with a "
                         "profile that relaxes them, e.g. smoke): the setting to gate a paper on"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
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
    s = Settings(**vals)
    if s.seeds < 1 or s.draws < 1:
        raise pytest.UsageError(f"--bt-seeds and --bt-draws must be >= 1 (got {s.seeds}, {s.draws})")
    from bt_bench.runs.config import PROFILES

    if s.profile not in PROFILES:
        raise pytest.UsageError(f"--bt-profile {s.profile!r} is unknown: allowed {sorted(PROFILES)}")
    try:
        mod = modified_thresholds(s)
    except (TypeError, ValueError) as e:
        raise pytest.UsageError(f"[tool.bt_bench.thresholds]: {e}") from e
    if s.paper_gate and mod:
        raise pytest.UsageError("--bt-paper-gate refuses modified thresholds: " + ", ".join(
            f"{k}={v['value']!r} (default {v['default']!r})" for k, v in mod.items())
            + "; remove them from [tool.bt_bench.thresholds] (or do not use --bt-paper-gate)")
    if s.paper_gate and s.strict is False and s.evidence is None and (s.seeds < 3 or s.draws < 3):
        raise pytest.UsageError(f"--bt-paper-gate needs >= 3 seeds and >= 3 draws (got {s.seeds}, {s.draws})")
    return s


def profile_thresholds(profile: str) -> dict:
    """Threshold overrides a profile itself brings (smoke: its tiny draws cannot reach the defaults). They count
    as modified thresholds: printed with every gate line, refused by --bt-paper-gate."""
    if profile == "smoke":
        from bt_bench.fixture.derive import fixture_config

        return {"min_pairs": fixture_config("smoke", 1).draw.min_pairs, "min_seeds": 1, "min_draws": 1}
    return {}


def effective_thresholds(s: Settings):
    from bt_bench.checklist.verdicts import Thresholds

    return Thresholds.from_mapping({**profile_thresholds(s.profile), **s.thresholds})


def modified_thresholds(s: Settings) -> dict[str, dict]:
    """{name: {value, default}} of every threshold that differs from the checklist's default."""
    from bt_bench.checklist.verdicts import Thresholds

    now, default = dataclasses.asdict(effective_thresholds(s)), dataclasses.asdict(Thresholds())
    return {k: {"value": now[k], "default": default[k]} for k in default if now[k] != default[k]}


def pytest_configure(config: pytest.Config) -> None:
    config.stash[settings_key] = resolve_settings(config)
    config.stash[results_key] = []
    config.pluginmanager.register(BtSession(config), "bt_bench_session")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _worker_index(config: pytest.Config) -> int:
    wid = getattr(config, "workerinput", {}).get("workerid", "gw0")
    return int(wid[2:]) if wid.startswith("gw") and wid[2:].isdigit() else 0


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def bt_settings(pytestconfig) -> Settings:
    return pytestconfig.stash[settings_key]


@pytest.fixture(scope="session")
def bt_runs(pytestconfig, bt_settings):
    """The planted runs: the first ``--bt-seeds`` seeds of 0, 1, 2, ... that pass the planting gate, and the failed
    ones. Workers build in a rotated order so two xdist workers build two seeds at once; the store's lock makes
    each run build exactly once."""
    from bt_bench.runs.build import build_run, fixture_seeds
    from bt_bench.runs.config import make_config

    cfg = make_config(bt_settings.profile)
    n = bt_settings.seeds
    order = list(range(n))
    r = _worker_index(pytestconfig) % n
    for seed in order[r:] + order[:r]:  # warm the cache in parallel across workers
        build_run(dataclasses.replace(cfg, seed=seed), bt_settings.cache_dir, rebuild=bt_settings.rebuild,
                  progress=False)
    if bt_settings.profile == "smoke":  # code paths only: a smoke run never plants, so the gate is not applied
        runs = [build_run(dataclasses.replace(cfg, seed=s), bt_settings.cache_dir, progress=False) for s in order]
        return {"runs": runs, "failed": []}
    runs, failed = fixture_seeds(cfg, n, bt_settings.cache_dir, progress=False)
    return {"runs": runs, "failed": failed}


@pytest.fixture(scope="session")
def bt_suite(pytestconfig, bt_runs, bt_settings):
    """Fixtures with their derived data (checkpoint sketches, draws, targets), built once per run and cached."""
    from bt_bench.fixture.derive import fixture_config, load_fixture
    from bt_bench.checklist.suite import Suite

    fcfg = fixture_config(bt_settings.profile, bt_settings.draws)
    runs = bt_runs["runs"]
    r = _worker_index(pytestconfig) % max(1, len(runs))
    for run in runs[r:] + runs[:r]:  # xdist workers derive different seeds at once (the store's lock dedups)
        load_fixture(run, fcfg, bt_settings.cache_dir)
    fixtures = [load_fixture(run, fcfg, bt_settings.cache_dir) for run in runs]
    from bt_bench.checklist.expectations import NORM_VARIANT

    return Suite(fixtures=fixtures, failed_seeds=bt_runs["failed"], thresholds=effective_thresholds(bt_settings),
                 norm_variant=NORM_VARIANT.get(bt_settings.profile, "norm_only"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    s = metafunc.config.stash[settings_key]
    if "bt_estimator" in metafunc.fixturenames:
        names = selected_estimators(s)
        metafunc.parametrize("bt_estimator", names, ids=names, scope="session")
    if "bt_seed" in metafunc.fixturenames:
        metafunc.parametrize("bt_seed", range(s.seeds), ids=[f"seed{i}" for i in range(s.seeds)])
    if "bt_replay_verdict" in metafunc.fixturenames:
        vs = replay_verdicts(s) if s.evidence else []
        metafunc.parametrize("bt_replay_verdict", vs, ids=[f"{v.check}-{v.estimator}" for v in vs])
    if "bt_draw" in metafunc.fixturenames:
        metafunc.parametrize("bt_draw", range(s.draws), ids=[f"draw{d}" for d in range(s.draws)])


def replay_verdicts(s: Settings) -> list:
    """Verdicts of the evidence folder/file (``--bt-evidence``), judged with the configured thresholds."""
    from bt_bench.checklist.evidence import replay

    path = Path(s.evidence)
    if not path.exists():
        raise pytest.UsageError(f"--bt-evidence {path}: no such file or folder")
    return replay(path, effective_thresholds(s))


def selected_estimators(s: Settings) -> list[str]:
    """``--bt-estimator`` names (validated: unknown -> "did you mean"), else every non-test-only estimator."""
    from bt_bench.estimator import registry
    if not s.estimators:
        return registry.default_estimators()
    for name in s.estimators:
        if ":" not in name and name not in registry.available_names():
            try:
                registry.get_estimator(name)
            except registry.RegistryError as e:
                raise pytest.UsageError(f"--bt-estimator: {e}") from e
    return list(s.estimators)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Replaying evidence (--bt-evidence): only the replay cells run, nothing is built."""
    s = config.stash[settings_key]
    if s.evidence:
        keep = [i for i in items if "bt_replay_verdict" in getattr(i, "fixturenames", ())]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


def _expected(request, estimator: str, check: str) -> dict | None:
    from bt_bench.checklist.expectations import expected_for

    s = request.config.stash[settings_key]
    want = None if s.strict else (expected_for(s.profile, estimator) or {}).get(check)
    return None if want is None else {"label": want[0], "reason": want[1]}


def run_cell(request, check: str, estimator: str, verdict, **extra) -> None:
    """Record a cell's verdict (JSON report + table) and turn it into the test outcome."""
    from bt_bench.report import key_figure

    d = verdict.to_dict()
    exp = _expected(request, estimator, check)
    record(request, check=check, estimator=estimator, verdict=d, key_figure=key_figure(d), expected=exp,
           expected_failure=exp["reason"] if exp and exp["label"] != "PASS" else None, **extra)
    if verdict.outcome == "skip":
        pytest.skip(verdict.reason)
    if verdict.outcome == "error":
        from bt_bench.checklist.suite import FixtureUnsupported

        raise FixtureUnsupported(verdict.reason)
    if verdict.outcome == "fail" and exp and exp["label"] == "FAIL":
        # a built-in's declared failure: xfail keeps pytest's count readable; whether the check as a whole ends as
        # declared (both ways) is decided by the gate at the end of the session (BtSession.decide)
        pytest.xfail(f"expected: {exp['reason']}")
    assert verdict.outcome == "pass", f"{check}[{estimator}]: {verdict.reason}"


def cell(request, check: str, estimator: str, fn, *args, **kwargs):
    """Compute a cell in a fixture (setup phase): a capability gap skips it with its reason; an estimator error or
    a fixture that cannot support the check propagates, so pytest reports an ERROR of that cell, not a crash of
    the session, and the table shows it with its reason."""
    from bt_bench.estimator import EstimatorError
    from bt_bench.checklist.suite import FixtureUnsupported, NotApplicable, SkipCell

    exp = _expected(request, estimator, check)
    try:
        return fn(*args, **kwargs)
    except SkipCell as e:  # N/A by declaration, or NOT JUDGED at run time (which fails the gate)
        na = isinstance(e, NotApplicable)
        record(request, check=check, estimator=estimator, key_figure=("N/A: " if na else "not judged: ") + str(e)[:60],
               expected=exp, verdict={"check": check, "estimator": estimator, "outcome": "skip", "na": na,
                                      "reason": str(e), "metrics": {}})
        pytest.skip(("N/A: " if na else "NOT JUDGED (fails the gate): ") + str(e))
    except (FixtureUnsupported, EstimatorError) as e:
        record(request, check=check, estimator=estimator, key_figure=type(e).__name__, expected=exp,
               verdict={"check": check, "estimator": estimator, "outcome": "error", "reason": str(e), "metrics": {}})
        raise


def record(request, **metrics) -> None:
    """Attach metrics to the current test's report (they travel from xdist workers to the controller)."""
    request.node.user_properties.append(("bt_bench", json.dumps(metrics, default=_json_default)))


def _json_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)
    return str(o)


# ---------------------------------------------------------------- the session object: results, gate, report


class BtSession:
    """Collects every cell's result (on the controller only), decides the gates, prints the summary and writes
    the JSON report once. Registered as a plugin in ``pytest_configure``; no module-level state."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.settings: Settings = config.stash[settings_key]
        self.results: list[dict] = config.stash[results_key]
        self.gates: list = []

    @property
    def worker(self) -> bool:
        return _is_worker(self.config)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker or (report.when != "call" and not (report.when == "setup" and report.outcome != "passed")):
            return
        metrics: dict = {}
        for k, v in report.user_properties:
            if k == "bt_bench":
                metrics.update(json.loads(v))
        if not metrics and report.outcome == "skipped":  # e.g. a module with an empty parameter set
            return
        outcome = report.outcome
        if metrics.get("verdict", {}).get("outcome") == "error":
            outcome = "error"  # the estimator or the fixture could not support a verdict
        elif hasattr(report, "wasxfail"):
            outcome = "xpass" if report.passed else "xfail"
        elif report.when == "setup" and report.failed:
            outcome = "error"
        self.results.append({"nodeid": report.nodeid, "outcome": outcome, "metrics": metrics,
                             "duration_s": round(report.duration, 3),
                             "reason": (str(report.longrepr)[-400:] if report.skipped else None)})

    def decide(self) -> list:
        """One ``gate.Gate`` per estimator that has results: against its declared snapshot for a built-in on a
        profile that has one (unless --bt-strict), else by its own cells."""
        from bt_bench.checklist import gate
        from bt_bench.checklist.expectations import expected_for

        s = self.settings
        mod = bool(modified_thresholds(s))
        by_est: dict[str, dict] = {}
        for (est, check), r in gate.checks(self.results).items():
            by_est.setdefault(est, {})[check] = r
        out = []
        for est, checks in by_est.items():
            want = None if s.strict else expected_for(s.profile, est)
            out.append(gate.expectation_gate(est, checks, want, modified_thresholds=mod) if want is not None
                       else gate.estimator_gate(est, checks, modified_thresholds=mod))
        return out

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        if self.worker:
            return
        self.gates = self.decide()
        if any(not g.ok for g in self.gates) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the gate: see bt_bench.checklist.gate
        if self.settings.report:
            write_report(Path(self.settings.report), self.settings, self.results, int(session.exitstatus),
                         gates=self.gates)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        if self.worker:
            return
        rows = [r for r in self.results if r["metrics"]]
        if not rows:
            return
        from bt_bench.report import format_table

        terminalreporter.section("bt-bench checklist")
        terminalreporter.write_line(format_table(rows))
        s = self.settings
        mod = modified_thresholds(s)
        if mod:
            terminalreporter.write_line("MODIFIED THRESHOLDS (not the checklist's defaults): " + ", ".join(
                f"{k}={v['value']!r} (default {v['default']!r})" for k, v in mod.items()))
        from bt_bench.checklist.expectations import has_snapshot

        if not s.strict and not has_snapshot(s.profile):
            terminalreporter.write_line(f"profile {s.profile!r} has no expected-outcome snapshot: built-ins are "
                                        "gated like any estimator")
        for g in self.gates:
            terminalreporter.write_line(g.line(), red=not g.ok, green=g.ok, bold=True)
        if s.report:
            terminalreporter.write_line(f"JSON report: {s.report}  (human report: bt-bench report {s.report} "
                                        "--html report.html)")


def write_report(path: Path, s: Settings, results: list[dict], exitstatus: int, gates=()) -> None:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    vers = {}
    for dist in ("bt-bench", "torch", "trl", "transformers", "numpy", "scipy"):
        try:
            vers[dist] = version(dist)
        except PackageNotFoundError:
            vers[dist] = None
    runs, failed, tried = [], [], []
    for r in results:  # the planting self-check carries the runs (it ran where the fixtures live: maybe a worker)
        if r["metrics"].get("check") == "planting_gate":
            runs = r["metrics"].get("runs", runs)
            failed = r["metrics"].get("failed_seeds", failed)
            tried = r["metrics"].get("tried", tried)
    doc = {"schema": REPORT_SCHEMA, "exit_status": exitstatus, "settings": dataclasses.asdict(s),
           "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "cpus": os.cpu_count()},
           "versions": vers, "thresholds": effective_thresholds(s).to_dict(),
           "modified_thresholds": modified_thresholds(s), "runs": runs, "failed_seeds": failed,
           "tried_seeds": tried, "estimators": _provenance(sorted({g.estimator for g in gates})),
           "gates": [dataclasses.asdict(g) | {"line": g.line()} for g in gates], "results": results}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=_json_default))
    os.replace(tmp, path)


def _provenance(names: list[str]) -> dict:
    """Per estimator: distribution and version, declared capabilities and level, sha256 of its source."""
    from bt_bench.estimator import registry
    out = {}
    for n in names:
        try:
            out[n] = registry.provenance(n)
        except Exception as e:  # an unloadable estimator still gets a row saying why
            out[n] = {"name": n, "error": f"{type(e).__name__}: {e}"}
    return out
