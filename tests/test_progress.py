"""Progress where the user looks (bt_bench.runs.progress, bt_bench.plugin.progress): long work emits lines (a build
that is not cached, the GRPO steps with elapsed time and ETA, its summary), a cached run emits none, and under
``pytest -n 2`` the controller's terminal shows the workers' lines while the tests run, from a file that goes with
the session."""

from __future__ import annotations

import logging

import pytest

from bt_bench.runs import progress


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def lines():
    h = _Capture()
    old = progress.LOGGER.level
    progress.LOGGER.addHandler(h)
    progress.LOGGER.setLevel(logging.INFO)
    yield h.lines
    progress.LOGGER.removeHandler(h)
    progress.LOGGER.setLevel(old)


def test_ticker_says_the_first_and_last_step_and_throttles_between(lines, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    t = progress.Ticker("seed 0: GRPO", 10, every=15.0)
    for i in range(1, 11):
        now[0] += 4.0  # a step every 4 s: lines at step 1, then every 15 s at most, and the last
        t(i)
    assert lines[0] == "seed 0: GRPO: step 1/10, 4 s elapsed, ETA 36 s"
    assert lines[-1] == "seed 0: GRPO: step 10/10, 40 s elapsed"
    assert len(lines) == 4 and progress.duration(185) == "3 min 05 s"


def test_a_build_says_what_it_builds_and_a_cached_run_says_nothing(lines, tmp_path):
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config

    cfg = make_config("smoke", seed=0)
    build_run(cfg, tmp_path, progress=False)
    assert lines[0] == f"seed 0: building (not in the cache: {cfg.steps} GRPO steps)"
    assert any(line.startswith("base model warm-up") for line in lines)
    assert any(line.startswith(f"seed 0: GRPO: step {cfg.steps}/{cfg.steps}") for line in lines)
    assert lines[-2].startswith("seed 0: ") and "rollouts" in lines[-2]  # the run's summary line
    assert lines[-1].startswith("seed 0: realism: ") and "window_adv_auc_gt" in lines[-1]
    n = len(lines)
    build_run(cfg, tmp_path, progress=False)
    assert len(lines) == n  # cached: nothing to report


CONFTEST = '''
import time

import pytest

from bt_bench.runs.progress import Ticker, emit


@pytest.fixture(scope="session")
def built():
    emit("seed 0: building (not in the cache: 3 GRPO steps)")
    tick = Ticker("seed 0: GRPO", 3, every=0.0)
    for i in range(1, 4):
        time.sleep(0.6)
        tick(i)
    return True
'''

TESTS = '''
def test_a(built):
    assert built


def test_b(built):
    assert built
'''


@pytest.fixture
def work(pytester, tmp_path, monkeypatch):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_work=TESTS)
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    return pytester, d


def test_workers_progress_shows_on_the_controllers_terminal(work):
    pytest.importorskip("xdist")
    pytester, tmpdir = work
    res = pytester.runpytest_subprocess("-n", "2", "-p", "xdist")
    out = res.stdout.str()
    assert res.ret == 0, out
    shown = [ln for ln in out.splitlines() if ln.startswith("bt-bench: [gw")]
    assert any(ln.endswith("seed 0: building (not in the cache: 3 GRPO steps)") for ln in shown), out
    assert any("seed 0: GRPO: step 3/3" in ln for ln in shown), out
    assert out.index("GRPO: step 3/3") < out.index("2 passed")
    assert not [p.name for p in tmpdir.iterdir() if p.name.startswith("bt-bench-")]  # the file went with the run


def test_without_xdist_the_lines_go_straight_to_the_terminal(work):
    pytester, _ = work
    res = pytester.runpytest_subprocess("-p", "no:xdist")
    out = res.stdout.str()
    assert res.ret == 0 and "bt-bench: seed 0: GRPO: step 3/3, " in out, out


def test_nothing_to_build_shows_nothing(pytester):
    pytester.makepyfile(test_quiet="def test_q():\n    assert True\n")
    out = pytester.runpytest_subprocess("-n", "2", "-p", "xdist").stdout.str()
    assert "bt-bench: " not in out.split("short test summary")[0]
