"""Red team (issue 9): estimators that try to pass without attributing anything, each run through `pytest checks`
on the tiny fixture as a user would run it (a subprocess, the estimator selected by dotted path, no expectations).
For each: what the suite does (a named error, NOT JUDGED, or the check that catches it) and exit code 1.

The tiny fixture must be built; CI's main job builds it first into the shared cache (BT_BENCH_CACHE).
Every estimator is scored in a sandboxed process of its own (bt_bench.estimator.sealed), so GcWalker no longer
reaches the harness's labels; the attacks on the judging process itself (patching on import, frames, the cache) are
the SEALED cases below, run under --bt-paper-gate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "redteam"


# The fixture self-checks (planted cause, planting, sketch fidelity and ranking, integrity) judge the fixture, not
# the estimator: runs outside the paper gate leave them out (about 70 s a run; they have tests of their own). The
# paper gate refuses any selection, so its runs keep them.
FIXTURE_MODULES = ("test_planted_cause.py", "test_fixture_planting.py", "test_sketch_fidelity.py",
                   "test_sketch_ranking.py", "test_fixture_integrity.py")


def run_checks(cls: str | list[str], tmp_path: Path, cache: Path, *extra: str, path: tuple[str, ...] = ()
               ) -> tuple[int, str, dict | None]:
    """One `pytest checks` session on the estimator(s) ``cls`` (a redteam_estimators class, or pkg.module:Class)."""
    sel = [a for c in ([cls] if isinstance(cls, str) else cls)
           for a in ("--bt-estimator", c if ":" in c else f"redteam_estimators:{c}")]
    report = tmp_path / "r.json"
    report.unlink(missing_ok=True)
    if "--bt-paper-gate" not in extra:
        extra = (*extra, *(f"--ignore={ROOT / 'checks' / m}" for m in FIXTURE_MODULES))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(HERE), os.environ.get("PYTHONPATH", "")]),
           "BT_BENCH_CACHE": str(cache)}
    p = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "checks"), "-p", "no:cacheprovider", "-p",
                        "no:xdist", "-q", *sel, "--bt-report", str(report), *extra],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    doc = json.loads(report.read_text()) if report.exists() else None
    return p.returncode, p.stdout + p.stderr, doc


def own(doc: dict, est: str | None) -> str:
    """``est``, else the session's one gated estimator (the oracle canary's estimators are scored beside it, with
    no gate line of their own)."""
    if est is not None:
        return est
    (g,) = doc["gates"]
    return g["estimator"]


def labels(doc: dict, est: str | None = None) -> dict[str, str]:
    """{check: label} of the session's estimator (of ``est`` in a session of several)."""
    from bt_bench.checklist import gate
    est = own(doc, est)
    return {c: r.label for (e, c), r in gate.checks(doc["results"]).items() if e == est}


def gate_of(doc: dict, est: str) -> dict:
    """The gate of ``est`` in a session of several estimators."""
    found = [g for g in doc["gates"] if g["estimator"] == est]
    assert len(found) == 1, [g["estimator"] for g in doc["gates"]]
    return found[0]


def own_problems(g: dict) -> list[str]:
    """The estimator's own failing cells in its gate, beside any failed fixture self-check (``gate.with_fixture``
    fails every gate then, whatever the attack earned)."""
    fixture = set(g.get("fixture") or ())
    return [p for p in g["problems"] if p not in fixture and not p.startswith("no verdict on these fixtures")]


def reasons(doc: dict, est: str | None = None) -> str:
    """Every cell's reason (of ``est``'s cells only, with their tracebacks, in a session of several)."""
    from bt_bench.checklist import gate
    tb, est = est is not None, own(doc, est)
    return " ".join(json.dumps((r.get("cell") or {}).get("reason", "")) + ("" if not tb else " " + json.dumps(
        r.get("traceback") or r.get("reason") or "")) for r in doc["results"] if gate.cell_of(r)[1] == est)


@pytest.fixture(scope="module")
def built(shared_cache):
    from bt_bench.runs.build import fixture_seeds
    from bt_bench.runs.config import DEFAULT_PROFILE, make_config
    from bt_bench.fixture.reader import fixture_config, load_fixture

    runs, _ = fixture_seeds(make_config(DEFAULT_PROFILE), 3, shared_cache, progress=False)
    for r in runs:
        load_fixture(r, fixture_config(DEFAULT_PROFILE, 3), shared_cache)
    return shared_cache


# The paper gate's fresh fixtures (issue 19 item 3), for one fixed gate seed so every run here shares one build; a
# user's gate run draws its seed at gate time. Built like the reference fixture, into the same shared cache. Gate
# seed 2's fixtures pass every fixture self-check, so an attack's GATE FAIL below is its own cells' doing. (Gate
# seeds 20261204, used until 2026-12-06, and 1 fail the sketch-ranking self-check: TracIn's median Spearman of stored
# vs exact scores 0.58 and 0.68 against the bar 0.95; their gate lines read FIXTURE FAILED for everyone.)
GATE_SEED = 2
GATE = ("--bt-paper-gate", "--bt-gate-seed", str(GATE_SEED))


@pytest.fixture(scope="module")
def gate_built(shared_cache):
    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import fixture_seeds
    from bt_bench.runs.config import DEFAULT_PROFILE, gate_config

    cfg, first = gate_config(DEFAULT_PROFILE, GATE_SEED)
    runs, _ = fixture_seeds(cfg, 3, shared_cache, progress=False, first=first)
    for r in runs:
        load_fixture(r, fixture_config(DEFAULT_PROFILE, 3), shared_cache)
    return shared_cache


CASES = {
    # (a) no path is reachable from anything handed over: its score raises -> ERROR on every check it takes part in
    "FileReader": lambda lab, why: all(v in ("ERROR", "N/A") for v in lab.values())
    and "no file path reachable" in why,
    # (b) walks gc and frames for the harness's labels: scored in its own process it finds none (ERROR); when
    # estimators ran beside the judge it found them, and only target_dependence failed it
    "GcWalker": lambda lab, why: set(lab.values()) <= {"ERROR", "N/A"} and "no harness object with labels" in why,
    # (c) the behavior identity hard-coded: blind to the target
    "HardCoded": lambda lab, why: lab["target_dependence"] == "FAIL",
    # (d) `labels` from outside the suite's own test-only controls: LabelsRefusedError
    "LabelsDeclarer": lambda lab, why: set(lab.values()) <= {"ERROR", "N/A"} and "LabelsRefusedError" in why
    or "declares 'labels'" in why,
    # (e) token sketches are not in full views: every full-view read is NOT JUDGED
    "TokenNorms": lambda lab, why: lab["gradient_norm_baseline"] == "NOT JUDGED"
    and "token-restricted view" in why,
    # (f) step level is verified: LevelMismatchError on the training rollouts
    "FakeStep": lambda lab, why: lab["gradient_norm_baseline"] == "ERROR" and "declares level='step'" in why,
    # (g) never scores: NOT JUDGED everywhere, which fails the gate
    "NeverScores": lambda lab, why: set(lab.values()) <= {"NOT JUDGED", "N/A"},
    # (h) ignores the target
    "IgnoresTarget": lambda lab, why: lab["target_dependence"] == "FAIL",
}


@pytest.mark.parametrize("cls", list(CASES))
def test_redteam_estimator_fails_the_gate(cls, built, tmp_path):
    rc, out, doc = run_checks(cls, tmp_path, built)
    lab = labels(doc)
    assert rc == 1, out[-3000:]
    (g,) = doc["gates"]
    assert not g["ok"] and "GATE FAIL" in g["line"], g
    assert CASES[cls](lab, reasons(doc) + out), (lab, g["line"])


# Attacks on the judge from the estimator's own process (tests/redteam/rt_sealed.py), each under --bt-paper-gate.
# Beside the judge (isolation none) (i) turned all 11 cells PASS and (j) passed every oracle cell; sealed, they earn
# nothing: (i) patches the judges of its own process only, (j) finds no frame, (k) is refused the cache.
SEALED = {
    "rt_patcher:JudgePatcher": lambda lab, why: "FAIL" in lab.values(),
    "rt_sealed:FrameReader": lambda lab, why: set(lab.values()) <= {"ERROR", "N/A"}
    and "no score_estimator frame" in why,
    "rt_sealed:CacheReader": lambda lab, why: set(lab.values()) <= {"ERROR", "N/A"} and "PermissionError" in why,
}
# the name each attack's gate and cells go by: the dotted path it was selected by
NAMES = {**{c: c for c in SEALED}, "memorized_table": "rt_memo_table:MemorizedTable",
         "hard_coded_factor": "rt_memo:HardCodedFactor"}


@pytest.fixture(scope="module")
def paper_gate_run(built, gate_built, tmp_path_factory):
    """One --bt-paper-gate session judging every attack that needs one (the three above and the two prepared ones
    below) on the fresh fixtures of GATE_SEED. Each estimator is scored in a sandboxed process of its own, so sharing
    the session gives an attack nothing more to reach (JudgePatcher now patches beside four other estimators' cells,
    and the assertions read each one's own cells); the session's fixed cost (the controls' scores, the fixture
    self-checks, the full grid's statistics) is paid once instead of five times (CI: 887 s of five sessions)."""
    import fcntl

    # under xdist both workers may get some of these tests: the first runs the session, the other reads its result
    # (a worker's base temp is popen-gw<N> inside the run's own)
    shared = os.environ.get("PYTEST_XDIST_WORKER") is not None
    tmp = (tmp_path_factory.getbasetemp().parent if shared else tmp_path_factory.getbasetemp()) / "paper_gate"
    tmp.mkdir(exist_ok=True)
    with open(tmp / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = tmp / "session.json"
        if not done.exists():
            memo, path = _memo(built, tmp)
            rc, out, doc = run_checks([*SEALED, memo, "rt_memo:HardCodedFactor"], tmp, gate_built, *GATE, path=path)
            done.write_text(json.dumps({"rc": rc, "out": out, "doc": doc}))
        res = json.loads(done.read_text())
    rc, out, doc = res["rc"], res["out"], res["doc"]
    assert rc == 1 and doc is not None, out[-3000:]
    assert {g["estimator"] for g in doc["gates"]} == set(NAMES.values()), [g["estimator"] for g in doc["gates"]]
    assert not fixture_problems(doc), fixture_problems(doc)  # an attack's GATE FAIL below is its own cells' doing
    return out, doc


def fixture_problems(doc: dict) -> list:
    from bt_bench.checklist import gate
    return list(gate.fixture_problems(doc["results"]))


@pytest.mark.parametrize("cls", list(SEALED))
def test_attack_on_the_judge_fails_the_paper_gate(cls, paper_gate_run):
    out, doc = paper_gate_run
    name = NAMES[cls]
    lab = labels(doc, name)
    g = gate_of(doc, name)
    assert not g["ok"] and "GATE FAIL" in g["line"] and not g.get("fixture") and own_problems(g), g
    assert SEALED[cls](lab, reasons(doc, name)), (lab, g["line"], reasons(doc, name)[:2000])
    assert doc["machine"]["scoring_sandbox"].startswith("Landlock ABI")


def test_a_deselected_unit_exits_nonzero_under_paper_gate(built, tmp_path):
    """(i) Selective reporting: leave out the unit that fails and report the rest ("PASS 8/8", issue 19). Under
    --bt-paper-gate the selection is refused before anything runs; without it the check is INCOMPLETE, the gate
    fails, and the report lists the unit and the command line."""
    est = "redteam_estimators:HardCoded"
    unit = f"checks/test_fluency_confound.py::test_fluency_confound[{est}-seed2-draw1]"
    rc, out, doc = run_checks("HardCoded", tmp_path, built, "--deselect", unit, "--bt-paper-gate")
    assert rc == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "--bt-paper-gate refuses any test selection" in out and f"--deselect {unit}" in out
    assert doc is None  # nothing ran
    rc, out, doc = run_checks("HardCoded", tmp_path, built, "--deselect", unit, "-k", "fluency_confound")
    assert rc == 1, out[-3000:]
    (g,) = doc["gates"]
    assert not g["ok"] and "fluency_confound INCOMPLETE 1/9 missing" in g["line"], g
    assert unit in [m["nodeid"] for m in doc["completeness"]["missing"]]
    assert unit in doc["command_line"]["args"]


# Attacks that carry what they know of the fixture in with them (tests/redteam/rt_memo.py): a table prepared from
# the cache beforehand, and the reference toy's behavior id times a factor from the target. On the reference fixture
# they were prepared on, each earns what is asserted below (the attack is live); a paper gate's fresh fixtures
# (strings, ids, base model and seeds drawn at gate time) leave them nothing to match.
LIVE = "gradient_norm_baseline or target_dependence"


def _memo(built, tmp_path) -> tuple[str, tuple[str, ...]]:
    import sys

    sys.path.insert(0, str(HERE))
    try:
        import rt_memo
    finally:
        sys.path.remove(str(HERE))
    folder = tmp_path / "memo"
    folder.mkdir()
    table = rt_memo.build_table(built, reference_only=True)
    assert len(table["pos"]) > 1000 and len(table["real"]) > 10, {k: len(v) for k, v in table.items()}
    return rt_memo.write_module(table, folder), (str(folder),)


@pytest.mark.parametrize("attack", ["memorized_table", "hard_coded_factor"])
def test_prepared_knowledge_fails_the_paper_gate(attack, built, paper_gate_run, tmp_path):
    cls, path = _memo(built, tmp_path) if attack == "memorized_table" else ("rt_memo:HardCodedFactor", ())
    rc, out, doc = run_checks(cls, tmp_path, built, "-k", LIVE, path=path)
    lab = labels(doc)
    if attack == "memorized_table":
        assert lab["gradient_norm_baseline"] == "PASS" and lab["target_dependence"] == "PASS", (lab, out[-2000:])
    else:  # its factor tells the placebo on fresh draws (AUC 1.0 vs ~0.5); on training rollouts the placebo points
        # the same way, and its gradient_norm_baseline pass is marginal (CI low +0.003 on one build, FAIL on another)
        # (every draw is judged under two sketch seeds: the units read seed<s>/draw<d>/sketch_seed<k>)
        assert all(f"seed{s}/draw0/sketch_seed{k}: pass" in reasons(doc) for s in range(3) for k in (0, 1)), \
            reasons(doc)[:2000]
    out, doc = paper_gate_run  # the same attack, prepared the same way, in the shared paper-gate session
    lab = labels(doc, NAMES[attack])
    g = gate_of(doc, NAMES[attack])
    assert not g["ok"] and "GATE FAIL" in g["line"] and not g.get("fixture"), g
    assert any(p.startswith("gradient_norm_baseline FAIL") for p in own_problems(g)), g
    assert lab["gradient_norm_baseline"] == "FAIL", (lab, g["line"])
    assert doc["gate_seed"]["seed"] == GATE_SEED and f"fresh fixtures of gate seed {GATE_SEED}" in out
    # its fixtures passed the sketch-ranking screen before scoring (bt_bench.plugin.gate_draw): used as drawn
    assert doc["gate_seed"]["drawn"] == GATE_SEED and doc["gate_seed"]["rejected"] == [], doc["gate_seed"]
