"""Third-party robustness of the plugin (issue 12 item 5; bt_bench/plugin/robust.py): --bt-timeout, one terminal
line per estimator error (the traceback goes to the JSON report), and an xdist worker crash as ERROR cells.

Like tests/test_plugin.py, no fixture is built: the pytester cells score a small synthetic CandidateData through
the real ``Suite`` (cache, fit, time limit) and judge "GT scored above the rest", so an estimator's verdict comes
from its own scores. The broken plug-ins live in a module of the pytester folder (selected as ``bt_plug:Class``).
"""

from __future__ import annotations

import json
import signal
import threading
import time
import warnings

import pytest

PLUG = '''
import os
import time

import numpy as np


class _Base:
    capabilities = frozenset()
    level = "rollout"


class Good(_Base):
    """Scores the even uids (the GT of the cells) highest, without labels."""
    name = "good"

    def score(self, candidates, target):
        return (np.asarray(candidates.uid) % 2 == 0).astype(float)


def _hang(seconds=30.0):
    """Long enough to be a hang for the test, short enough that a broken time limit fails it, not CI."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)


class Hang(Good):
    name = "hang"

    def score(self, candidates, target):
        _hang()
        return super().score(candidates, target)


class HangFit(Good):
    name = "hang_fit"

    def fit(self, run):
        _hang()


class Boom(_Base):
    name = "boom"

    def score(self, candidates, target):
        raise ValueError("boom-marker went off")


class Crash(_Base):
    name = "crash"

    def score(self, candidates, target):
        os._exit(1)
'''

CELLS = '''
import numpy as np
import pytest

from bt_bench.checklist.base import Thresholds, Verdict
from bt_bench.checklist.suite import Suite
from bt_bench.estimator import Checkpoint, Target
from bt_bench.estimator.views import CandidateData
from bt_bench.plugin.glue import cell, run_cell

N = 8
IS_GT = np.arange(N) % 2 == 0
DATA = CandidateData({"uid": np.arange(N), "step": np.arange(N) // 2, "group": np.arange(N) // 2,
                      "gen_index": np.arange(N) % 2, "advantage": np.linspace(-1, 1, N),
                      "completion_ids": np.ones((N, 3), np.int32), "is_gt": IS_GT},
                     checkpoints=(Checkpoint(4, lr=1e-3, batch_size=64),))
TARGET = Target("in_context", {4: np.array([1.0, 0.0, 0.0])})


@pytest.fixture(scope="session")
def suite():
    s = Suite(fixtures=[], failed_seeds=[], thresholds=Thresholds())
    s._data[("training_data", 0)] = DATA  # what fit(run_view) sees
    return s


def judge(suite, est, seed):
    s = suite._score(("train", est, seed), est, DATA, TARGET, fit_seed=0)
    ok = s[IS_GT].mean() > s[~IS_GT].mean()
    return Verdict("gradient_norm_baseline", "pass" if ok else "fail", {}, "GT above the rest")


@pytest.fixture
def verdict(suite, bt_estimator, bt_seed, request):
    return cell(request, "gradient_norm_baseline", bt_estimator, judge, suite, bt_estimator, bt_seed)


def test_gradient_norm_baseline(bt_estimator, bt_seed, verdict, request):
    run_cell(request, "gradient_norm_baseline", bt_estimator, verdict, seed=bt_seed)
'''


@pytest.fixture
def cells(pytester):
    pytester.makepyfile(bt_plug=PLUG, test_cells=CELLS)
    return pytester


def run(pytester, report, *estimators, args=()):
    argv = [a for e in estimators for a in ("--bt-estimator", e)]
    res = pytester.runpytest_subprocess(*argv, "--bt-report", str(report), *args)
    return res, json.loads(report.read_text())


@pytest.fixture
def own_tmpdir(tmp_path, monkeypatch):
    """A temp folder of the run's own (TMPDIR), to see what a run leaves behind there."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    return d


def left_behind(d) -> list[str]:
    """bt-bench's files and folders still in the temp folder: the crashed-estimator list, scoring folders."""
    return sorted(p.name for p in d.iterdir() if p.name.startswith("bt-bench-"))


def by_cell(doc) -> dict:
    """{(estimator, seed): (pytest outcome, verdict)} of every per-estimator result."""
    return {(r["cell"]["estimator"], r["nodeid"].rsplit("-", 1)[1].rstrip("]")): (r["outcome"], r["cell"])
            for r in doc["results"] if (r.get("cell") or {}).get("estimator")}


def test_timeout_is_an_error_naming_the_call_and_others_are_unchanged(cells, tmp_path):
    base_res, base = run(cells, tmp_path / "base.json", "oracle", "bt_plug:Good", args=("--bt-seeds", "2"))
    assert base_res.ret == 0, base_res.stdout.str()
    res, doc = run(cells, tmp_path / "r.json", "oracle", "bt_plug:Good", "bt_plug:Hang", "bt_plug:HangFit",
                   args=("--bt-seeds", "2", "--bt-timeout", "2"))
    assert res.ret != 0
    got = by_cell(doc)
    for est in ("oracle", "bt_plug:Good"):  # the healthy estimators' cells are exactly what they were alone
        for seed in ("seed0", "seed1"):
            assert got[est, seed] == by_cell(base)[est, seed]
    for est, call in (("bt_plug:Hang", "score"), ("bt_plug:HangFit", "fit")):
        first, second = got[est, "seed0"][1], got[est, "seed1"][1]
        assert first["outcome"] == second["outcome"] == "error"
        assert (f"{call} timed out after 2 s (--bt-timeout 2) in test_gradient_norm_baseline[{est}-seed0]"
                in first["reason"]), first["reason"]
        assert "not called again" in second["reason"]
        took = {r["nodeid"].rsplit("-", 1)[1]: r["duration_s"] for r in doc["results"]
                if (r.get("cell") or {}).get("estimator") == est}
        assert took["seed0]"] >= 1.9 and took["seed1]"] < 1.0, took  # the limit is waited out once, not per cell
    out = res.stdout.str()
    assert "bt_plug:Hang: GATE FAIL" in out and "oracle: AS EXPECTED" in out and "bt_plug:Good: GATE PASS" in out


def test_estimator_error_is_one_line_and_the_traceback_is_in_the_json(cells, tmp_path):
    res, doc = run(cells, tmp_path / "r.json", "oracle", "bt_plug:Boom", args=("--bt-seeds", "1"))
    assert res.ret != 0
    out = res.stdout.lines
    summary = [ln for ln in out if "ScoringFailedError: estimator 'boom'" in ln and not ln.startswith("ERROR ")]
    assert len(summary) == 1, "\n".join(out)
    assert "bt_plug:Boom" in summary[0] and "gradient_norm_baseline" in summary[0]
    assert "boom-marker went off" in summary[0]
    text = res.stdout.str()
    for tb in ("Traceback", 'raise ValueError("boom-marker went off")', "scoring.py", "glue.py"):
        assert tb not in text, tb
    assert not [ln for ln in out if ln.startswith("E   ")]  # no pytest traceback at all
    (boom,) = [r for r in doc["results"] if (r.get("cell") or {}).get("estimator") == "bt_plug:Boom"]
    assert boom["outcome"] == "error"
    assert 'raise ValueError("boom-marker went off")' in boom["traceback"]  # the estimator's own frame
    assert "ScoringFailedError" in boom["traceback"]
    verbose = cells.runpytest_subprocess("--bt-estimator", "bt_plug:Boom", "--bt-seeds", "1", "-v")
    assert 'raise ValueError("boom-marker went off")' in verbose.stdout.str()


def test_a_crashing_estimator_dies_in_its_scoring_process_not_in_the_worker(cells, tmp_path, own_tmpdir):
    """Scored in a process of its own (the default), os._exit ends that process: an ERROR cell per call, every xdist
    worker lives on; the run leaves nothing of its own in the temp folder (scoring folders, the crash list)."""
    pytest.importorskip("xdist")
    res, doc = run(cells, tmp_path / "r.json", "oracle", "bt_plug:Crash",
                   args=("-n", "2", "--max-worker-restart", "0", "--bt-seeds", "4"))
    out = res.stdout.str()
    assert res.ret != 0 and doc["exit_status"] != 0
    got = by_cell(doc)
    for s in [f"seed{i}" for i in range(4)]:
        assert got["oracle", s][0] == "passed"
        outcome, v = got["bt_plug:Crash", s]
        assert outcome == "error" and "scoring process died" in v["reason"], v
        assert "worker 'gw" not in v["reason"]
    assert "crashed" not in out.replace("crashed workers", "")
    assert out.count("bt_plug:Crash: GATE FAIL") == 1 and out.count("oracle: AS EXPECTED") == 1
    assert left_behind(own_tmpdir) == []


def test_worker_crash_is_an_error_cell_and_the_run_goes_on(cells, tmp_path, own_tmpdir):
    pytest.importorskip("xdist")
    # in-process scoring (--bt-isolation none): 4 crashing cells but only 2 worker restarts allowed: without the
    # crashed-estimator list every cell of it would kill a worker, xdist would stop the run and the remaining
    # cells would be lost
    res, doc = run(cells, tmp_path / "r.json", "oracle", "bt_plug:Crash",
                   args=("-n", "2", "--max-worker-restart", "2", "--bt-seeds", "4", "--bt-isolation", "none"))
    out = res.stdout.str()
    assert res.ret != 0 and doc["exit_status"] != 0
    assert "maximum crashed workers reached" not in out
    got = by_cell(doc)
    seeds = [f"seed{i}" for i in range(4)]
    for s in seeds:
        assert got["oracle", s][0] == "passed" and got["oracle", s][1]["outcome"] == "pass"
        outcome, v = got["bt_plug:Crash", s]
        assert outcome == "error" and v["outcome"] == "error" and "crashed" in v["reason"], v
    assert any("worker 'gw" in got["bt_plug:Crash", s][1]["reason"] for s in seeds)  # xdist's own report
    assert out.count("bt_plug:Crash: GATE FAIL") == 1 and out.count("oracle: AS EXPECTED") == 1
    assert not list(tmp_path.glob("*.tmp"))
    assert left_behind(own_tmpdir) == []  # the crashed-estimator list the workers shared is gone with the run


# ------------------------------------------------------------------ the timer itself, in this process
@pytest.fixture
def limit():
    from bt_bench.estimator import scoring

    old = scoring.TIME_LIMIT.seconds
    yield scoring.TIME_LIMIT
    scoring.TIME_LIMIT.seconds = old


def _spin():
    while True:
        time.sleep(0.01)


def test_time_limit_restores_the_previous_handler_and_timer(limit):
    from bt_bench.estimator.errors import CallTimeoutError
    from bt_bench.estimator.scoring import _call

    def outer(signum, frame):
        raise AssertionError("the outer timer must not fire during this test")

    old = signal.signal(signal.SIGALRM, outer)
    try:
        signal.setitimer(signal.ITIMER_REAL, 100)
        limit.seconds = 0.2
        with pytest.raises(CallTimeoutError, match="score timed out after 0.2 s"):
            _call("spin", "score", _spin)
        assert _call("quick", "score", lambda: 7) == 7
        assert signal.getsignal(signal.SIGALRM) is outer
        assert 90 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100  # re-armed with what was left
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_time_limit_off_the_main_thread_warns_once_and_does_not_limit(limit, monkeypatch):
    from bt_bench.estimator import scoring

    monkeypatch.setattr(scoring, "_warned_unlimited", False)
    limit.seconds = 0.05
    got: dict = {}

    def body():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got["a"] = scoring._call("slow", "score", lambda: time.sleep(0.2) or 1)  # past the limit, not stopped
            got["b"] = scoring._call("slow", "score", lambda: 2)
        got["warnings"] = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert got["a"] == 1 and got["b"] == 2
    assert len(got["warnings"]) == 1 and "not enforced" in got["warnings"][0]  # said once, not per call


def test_timeout_option_and_setting(pytester):
    from bt_bench.plugin.options import Settings

    assert Settings().timeout == 3600 and Settings(timeout=0).timeout == 0  # 0: no limit
    for bad in (-1, "2", True):
        with pytest.raises(ValueError, match="--bt-timeout"):
            Settings(timeout=bad)
    assert "--bt-timeout" in pytester.runpytest_subprocess("--help").stdout.str()


def test_the_suites_repr_formats_no_array():
    """pytest formats a failing or xfailed check function's arguments (bt_suite among them) with repr; the suite
    holds every score and candidate array, so its repr must name them, not print them (it cost 1.2 s a cell)."""
    import numpy as np

    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.suite import Suite

    class Fx:
        seed = 7

    s = Suite(fixtures=[Fx()], failed_seeds=[], thresholds=Thresholds())
    s._scores[("x", 0)] = np.arange(200_000, dtype=float)
    s._data["x"] = {"rows": np.zeros((1000, 64))}
    r = repr(s)
    assert len(r) < 200 and "seeds [7]" in r and "1 scores" in r and "array" not in r
