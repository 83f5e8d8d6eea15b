"""Session fixtures of the checklist and its parametrization: the planted runs, the fixtures with their derived
data (built once even under ``pytest -n 2``: the store's lock makes each build happen exactly once, and workers
start on different seeds so two of them build at once), and the ``Suite`` (scores kept in the cache, shared by the workers)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from bt_bench.plugin.options import SESSION_ENV, Settings, effective_thresholds
from bt_bench.plugin.selection import runs_the_checklist

settings_key = pytest.StashKey[Settings]()
gate_draw_key = pytest.StashKey[dict]()  # fresh fixtures: the gate seeds tried (no xdist: set in this process)
SHARED = "bt-bench-session"  # under xdist: the folder in the controller's base temp that its workers share
DRAW_FILE = "gate-draw.json"  # ... and the gate draw the first worker leaves there for the controller's report


def worker_index(config: pytest.Config) -> int:
    wid = getattr(config, "workerinput", {}).get("workerid", "gw0")
    return int(wid[2:]) if wid.startswith("gw") and wid[2:].isdigit() else 0


def _rotated(items: list, config: pytest.Config) -> list:
    r = worker_index(config) % max(1, len(items))
    return items[r:] + items[:r]


@pytest.fixture(scope="session")
def bt_settings(pytestconfig) -> Settings:
    return pytestconfig.stash[settings_key]


def _runs_from_pack(s: Settings) -> dict:
    """``bt_runs`` for ``--bt-fixture``: the pack's runs, verified (a pack file is unpacked into the cache once;
    concurrent workers publish each folder once), sorted by seed; nothing is built."""
    from bt_bench.fixture.pack import fixtures_from_path
    from bt_bench.runs.config import get_profile

    everything = fixtures_from_path(s.fixture, cache_dir=s.cache_dir)
    packed = sorted((p for p in everything if p.run.config.ablation == "none"), key=lambda p: p.run.config.seed)
    gate = get_profile(s.profile).gate_applies
    failed = [{"seed": p.run.config.seed, "key": p.run.key, "reason": p.run.manifest["gate"]["reason"]}
              for p in packed if gate and not p.run.planted]
    keep = [p for p in packed if p.run.planted or not gate]
    return {"runs": [p.run for p in keep], "failed": failed, "packed": keep,
            "reruns": [p.run for p in everything if p.run.config.ablation != "none"]}


@pytest.fixture(scope="session")
def bt_runs(pytestconfig, bt_settings, tmp_path_factory):
    """The planted runs: the first ``--bt-seeds`` seeds of 0, 1, 2, ... (of a gate's fresh fixtures: from its drawn
    first seed on, ``gate_config``) that pass the planting gate (every seed for
    a profile whose gate does not apply), and the failed ones; with ``--bt-fixture``, the pack's. Fresh fixtures
    come from the first gate seed whose fixtures pass the sketch-ranking self-check and the oracle canary
    (``_fresh_runs``)."""
    from bt_bench.runs.config import make_config

    if bt_settings.fixture:
        return _runs_from_pack(bt_settings)
    if bt_settings.gate_seed is not None:  # fresh fixtures (--bt-paper-gate draws the seed, --bt-gate-seed gives it)
        return _fresh_runs(pytestconfig, bt_settings, tmp_path_factory)
    return _planted(make_config(bt_settings.profile), 0, bt_settings, pytestconfig)


def _sketched(cfg, s: Settings):
    """``cfg`` under ``--bt-sketch-seed``: the same training, every sketch under another projection (another key)."""
    return dataclasses.replace(cfg, sketch_seed=s.sketch_seed) if s.sketch_seed else cfg


def _planted(cfg, first: int, s: Settings, config: pytest.Config) -> dict:
    """{"runs", "failed"}: the planted runs of ``cfg`` from seed ``first`` on (built across the workers)."""
    from bt_bench.runs.build import build_run, fixture_seeds
    from bt_bench.runs.config import get_profile

    cfg = _sketched(cfg, s)
    seeds = list(range(first, first + s.seeds))
    for seed in _rotated(seeds, config):  # warm the cache in parallel across workers
        build_run(dataclasses.replace(cfg, seed=seed), s.cache_dir, rebuild=s.rebuild, progress=False)
    if not get_profile(s.profile).gate_applies:
        runs = [build_run(dataclasses.replace(cfg, seed=x), s.cache_dir, progress=False) for x in seeds]
        return {"runs": runs, "failed": []}
    runs, failed = fixture_seeds(cfg, s.seeds, s.cache_dir, progress=False, first=first)
    return {"runs": runs, "failed": failed}


def _fresh_runs(config: pytest.Config, s: Settings, tmp_path_factory) -> dict:
    """``bt_runs`` of fresh fixtures: gate seeds are tried in ``gate_draw``'s order until one's fixtures plant and
    pass the sketch-ranking self-check and then the oracle canary (built, derived and screened before any
    estimator of the session is scored); the result
    carries ``gate`` (drawn, accepted, rejected) for the report. None passing stops the session here."""
    from bt_bench.checklist.sketch_verdicts import fixture_verdicts_memo, judge
    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.plugin import gate_draw
    from bt_bench.runs.config import gate_config
    from bt_bench.runs.progress import emit

    fcfg = fixture_config(s.profile, s.draws, effective_thresholds(s))

    def prepare(seed: int) -> dict:
        cfg, first = gate_config(s.profile, seed)
        try:
            out = _planted(cfg, first, s, config)
        except RuntimeError as e:  # fixture_seeds: too few of this gate seed's runs planted (every seed tried is built)
            return {"problems": [str(e)], "runs": _tried_runs(cfg, first, s), "key": f"unplanted-{seed}"}
        _derive(list(out["runs"]), fcfg, s.cache_dir, config)
        out["fixtures"] = [load_fixture(run, fcfg, s.cache_dir) for run in out["runs"]]
        return out

    def screen(prepared: dict) -> list[str]:
        key = prepared.get("key") or "-".join(r.key for r in prepared["runs"])
        if "problems" in prepared:
            def compute():
                return prepared["problems"]
        else:
            def compute():
                return judge([fixture_verdicts_memo(fx, _stats_folder(s), effective_thresholds(s))
                              for fx in prepared["fixtures"]])
        problems = _once_per_session(config, tmp_path_factory, f"gate-screen-{key}", compute)
        if not problems and "fixtures" in prepared:  # the oracle canary, before anyone else is scored
            problems = _canary_screen(config, s, prepared)
        # one decision for every worker; a rejected seed's data leaves the cache once all of them have it
        return _once_per_session(config, tmp_path_factory, f"gate-decision-{key}", lambda: problems,
                                 then=lambda got: _discard(prepared, s) if got else None)

    quiet = worker_index(config) != 0  # every worker takes the same decision; one of them says so
    res = gate_draw.choose(s.gate_seed, s.gate_attempts, prepare, screen, note=(lambda line: None) if quiet else emit)
    _publish_draw(config, tmp_path_factory, {k: res[k] for k in ("drawn", "accepted", "rejected")})
    if res["accepted"] is None:
        pytest.fail(gate_draw.none_passed(res), pytrace=False)  # every test errors with it: nothing is scored
    return {**res["prepared"], "gate": {k: res[k] for k in ("drawn", "accepted", "rejected")}}


def _canary_screen(config: pytest.Config, s: Settings, prepared: dict) -> list[str]:
    """The oracle canary on a gate seed's fixtures (``bt_bench.checklist.canary_cells``): [] when the oracle passes
    and random fails, judged as the session will judge them, else why not. Every worker computes the cells (the
    second from the other end, so the counterfactual replays both need are split by their locks and their scores
    land in the session's score cache for the tests); the screen's shared decision makes the first worker's answer
    everyone's. The suite is kept in ``prepared`` for ``bt_suite``."""
    from bt_bench.checklist.canary_cells import canary_problems, canary_records
    from bt_bench.plugin.options import modified_thresholds
    from bt_bench.runs.progress import emit

    if worker_index(config) == 0:
        emit("gate seed screen: the oracle canary (oracle and random judged on every check it takes) before any "
             "estimator of the session is scored")
    prepared["suite"] = _suite(s, prepared["fixtures"], prepared["failed"])
    records = canary_records(prepared["suite"], s.draws, reverse=worker_index(config) % 2 == 1)
    return canary_problems(records, modified_thresholds=bool(modified_thresholds(s)))


def _publish_draw(config: pytest.Config, tmp_path_factory, draw: dict) -> None:
    """The gate draw for the controller's report (``BtSession.fixture_origin``), also when no attempt passed and no
    test ran: in this process's stash without xdist, else a file the first worker writes in the shared folder."""
    import json

    if not hasattr(config, "workerinput"):
        config.stash[gate_draw_key] = draw
    elif worker_index(config) == 0:
        folder = Path(tmp_path_factory.getbasetemp()).parent / SHARED
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{DRAW_FILE}.{os.getpid()}"
        tmp.write_text(json.dumps(draw))
        os.replace(tmp, folder / DRAW_FILE)


def _tried_runs(cfg, first: int, s: Settings) -> list:
    """The runs ``fixture_seeds`` tried from ``first`` on (all built before it gave up: read from the cache)."""
    from bt_bench.runs.build import TRIES_PER_SEED, build_run

    return [build_run(dataclasses.replace(_sketched(cfg, s), seed=x), s.cache_dir, progress=False)
            for x in range(first, first + TRIES_PER_SEED * s.seeds)]


def _once_per_session(config: pytest.Config, tmp_path_factory, name: str, compute, then=None):
    """``compute()`` (a JSON value) once per session: under xdist the first worker computes it under a lock in the
    controller's base temp folder (removed with it at the end) and the others read it, so every worker takes the
    same decision; without xdist, computed. ``then(value)`` runs once, after every worker has it (by the last one to
    read it, under the lock)."""
    import fcntl
    import json

    if not hasattr(config, "workerinput"):
        value = compute()
        if then is not None:
            then(value)
        return value
    folder = Path(tmp_path_factory.getbasetemp()).parent / SHARED
    folder.mkdir(parents=True, exist_ok=True)
    path, readers = folder / f"{name}.json", folder / f"{name}.readers"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            value = json.loads(path.read_text())["value"]
        else:
            value = compute()
            path.write_text(json.dumps({"value": value}))
        count = (int(readers.read_text()) if readers.is_file() else 0) + 1
        readers.write_text(str(count))
        if then is not None and count == int(config.workerinput.get("workercount", 1)):
            then(value)
        return value


def _discard(prepared: dict, s: Settings) -> None:
    """A rejected gate seed's runs (planted or not) and derived data leave the cache: nothing reads them again (the
    report names the seed judged, not these), and each tiny attempt holds about 8 GB (three derived fixtures of
    2.3 GB, four runs of 0.4 GB): six attempts would fill a small disk."""
    import shutil

    from bt_bench.runs.store import cache_root, run_dir

    root = cache_root(s.cache_dir)
    folders = ([Path(fx.folder) for fx in prepared.get("fixtures", [])] + [Path(r.path) for r in prepared["runs"]]
               + [run_dir(root, f["key"]) for f in prepared.get("failed", [])])
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
        Path(f"{folder}.lock").unlink(missing_ok=True)


@pytest.fixture(scope="session")
def bt_suite(pytestconfig, bt_runs, bt_settings):
    """Fixtures with their derived data (checkpoint sketches, draws, targets), built once per run and cached."""
    from bt_bench.fixture.reader import fixture_config, load_fixture

    fcfg = fixture_config(bt_settings.profile, bt_settings.draws, effective_thresholds(bt_settings))
    runs = bt_runs["runs"]
    if "packed" in bt_runs:  # --bt-fixture: the pack's derived data for these settings, never derived here
        return _suite(bt_settings, [p.fixture(fcfg) for p in bt_runs["packed"]], bt_runs["failed"])
    if "suite" in bt_runs:  # fresh fixtures: their suite was built when the gate seed's canary was screened
        return bt_runs["suite"]
    if "fixtures" in bt_runs:  # fresh fixtures: derived and loaded when their gate seed was screened
        fixtures = bt_runs["fixtures"]
    else:
        _derive(list(runs), fcfg, bt_settings.cache_dir, pytestconfig)
        fixtures = [load_fixture(run, fcfg, bt_settings.cache_dir) for run in runs]
    return _suite(bt_settings, fixtures, bt_runs["failed"])


def _suite(s: Settings, fixtures: list, failed: list):
    """The session's ``Suite`` over loaded fixtures (thresholds, norm variant, LDS subsets, score cache, stats)."""
    from bt_bench.checklist.suite import Suite
    from bt_bench.runs.config import get_profile

    return Suite(fixtures=fixtures, failed_seeds=failed, thresholds=effective_thresholds(s),
                 norm_variant=get_profile(s.profile).norm_variant,
                 lds_subsets=get_profile(s.profile).lds_subsets if s.lds else 0,
                 score_cache=_score_cache(s), stats_folder=_stats_folder(s))


def _score_cache(s):
    """Scores stored under the cache and shared by the workers (``bt_bench.checklist.score_cache``); with
    --bt-rescore or --bt-paper-gate only this session's own are read."""
    from bt_bench.checklist.score_cache import ScoreCache
    from bt_bench.runs.store import cache_root

    return ScoreCache(cache_root(s.cache_dir) / "scores", session=os.environ.get(SESSION_ENV, ""),
                      fresh=s.rescore or s.paper_gate)


def _derive(runs: list, fcfg, cache_dir, config: pytest.Config) -> None:
    """Derive every run once across the xdist workers: whole seeds, each worker its own in turn, and the seeds left
    over when they do not divide evenly (3 seeds on 2 workers: the third) in parts shared by every worker, so that no
    core waits idle while one derives alone (``bt_bench.fixture.shard.derive_in_parts``)."""
    from bt_bench.fixture.derive import build_derived
    from bt_bench.fixture.shard import derive_in_parts

    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    whole = len(runs) - len(runs) % workers if workers > 1 else len(runs)
    for run in _rotated(runs[:whole], config):
        build_derived(run, fcfg, cache_dir)
    for run in runs[whole:]:
        derive_in_parts(run, fcfg, workers, first=worker_index(config), root=cache_dir)


def generate_tests(metafunc: pytest.Metafunc) -> None:
    s = metafunc.config.stash[settings_key]
    if "bt_estimator" in metafunc.fixturenames:
        from bt_bench.plugin.glue import CANARY_ONLY_KEY

        names, extras = estimator_selection(s, canary=runs_the_checklist(metafunc.config))
        metafunc.config.stash[CANARY_ONLY_KEY] = extras
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
    from bt_bench.checklist.replay import replay

    path = Path(s.evidence)
    if not path.exists():
        raise pytest.UsageError(f"--bt-evidence {path}: no such file or folder")
    return replay(path, effective_thresholds(s))


def selected_estimators(s: Settings, canary: bool = False) -> list[str]:
    """``--bt-estimator`` names (validated: unknown -> "did you mean"), else every non-test-only estimator; with
    ``canary`` (a session that runs the checklist) then the oracle canary's estimators that are not among them
    (:func:`estimator_selection`)."""
    return estimator_selection(s, canary)[0]


def estimator_selection(s: Settings, canary: bool = False) -> tuple[list[str], tuple[str, ...]]:
    """(every estimator the session scores, the canary's estimators among them that the user did not select). Those
    extras are scored and shown but get no gate line of their own: their gates are the canary's, not the session's
    exit code. ``canary``: whether the session runs the checklist (``selection.runs_the_checklist``); other
    sessions (a plug-in's own tests of synthetic cells) score what they select."""
    chosen = _chosen_estimators(s)
    extras = tuple(e for e in canary_estimators(s) if e not in chosen) if canary else ()
    return chosen + list(extras), extras


def canary_estimators(s: Settings) -> tuple[str, ...]:
    """The estimators of the oracle canary (``bt_bench.checklist.gate.canary``), scored in every session on planted
    fixtures whatever ``--bt-estimator`` says: the oracle must pass and random must fail, judged as any user's
    estimator is, or the fixture fails (a fixture the oracle cannot pass gates nobody). None on replayed evidence
    (no fixture) or on a profile whose runs need not plant (``Profile.gate_applies``: smoke)."""
    from bt_bench.checklist.gate import CANARY_FAILS, CANARY_PASSES
    from bt_bench.runs.config import get_profile

    if s.evidence or not get_profile(s.profile).gate_applies:
        return ()
    return (*CANARY_PASSES, *CANARY_FAILS)


def _chosen_estimators(s: Settings) -> list[str]:
    from bt_bench.estimator import registry, sealed

    if not s.estimators:
        return sealed.default_estimators()  # listing imports every plug-in: in a scoring process
    for name in s.estimators:
        if ":" not in name and name not in registry.available_names():
            try:
                registry.get_estimator(name)
            except registry.RegistryError as e:
                raise pytest.UsageError(f"--bt-estimator: {e}") from e
    return list(dict.fromkeys(s.estimators))  # once each: a repeated name would get pytest's suffixed ids


def _stats_folder(s) -> Path | None:
    """Where results that are a pure function of their inputs and of bt-bench's code are kept (named by the digest
    of bt-bench's sources and the installed versions, ``bt_bench.runs.memo``): the sketch-ranking self-check and the
    bootstrap's per-ranking resample values (``bootstrap.DISK_MEMO``, unset at unconfigure)."""
    from bt_bench.checklist import bootstrap
    from bt_bench.runs.memo import environment_digest
    from bt_bench.runs.store import cache_root

    # --bt-paper-gate reads nothing prepared beforehand: a file planted under a digest learned from an earlier run
    # with the same --bt-gate-seed would otherwise stand in for a statistic
    folder = None if s.paper_gate else cache_root(s.cache_dir) / "stats" / environment_digest()[:24]
    bootstrap.DISK_MEMO["folder"] = folder
    return folder
