"""Third-party robustness: one broken estimator costs its own cells, never the run.

- Time limit: ``--bt-timeout`` goes to ``bt_bench.estimator.scoring.TIME_LIMIT`` (a SIGALRM timer around every single
  ``fit``/``score`` call; its limits are written there), and each test names itself there so that a timeout says
  which cell it hit. ``Suite`` then calls that estimator no more in the process.
- One line per estimator error: an ``EstimatorError`` (or a fixture that cannot support a verdict) is an expected
  kind of ERROR cell whose reason is its message, so the terminal gets that one line instead of a harness traceback.
  The full traceback goes to the JSON report (``results[].traceback``), and stays on the terminal under ``-v`` or
  ``--tb=long``/``--tb=native``.
- Worker crashes (pytest-xdist): xdist reports the test a dead worker was running as failed (``when="???"``) and
  starts a new worker. The session turns that report into an ERROR cell of the estimator and check
  (:func:`crash_record`), and the estimator is listed in a small file that every worker reads before a cell, so its
  remaining cells are ERRORs at once instead of one more crash each (xdist gives up after 4 restarts per worker and
  the rest of the run would be lost).
"""

from __future__ import annotations

import json
import os
import tempfile
import traceback
from pathlib import Path

import pytest

TRACEBACK_KEY = "bt_bench_traceback"  # user_properties key: the full traceback, for the JSON report only
CRASH_FILE_KEY = "bt_bench_crash_file"  # workerinput key: where the controller lists estimators that crashed
CRASHED = "???"  # the ``when`` of xdist's report for the test a crashed worker was running


def check_of_name(test_name: str) -> str:
    """'test_<check>[gas-seed0-draw1]' -> '<check>': every per-estimator module in checks/ is test_<check>."""
    return test_name.split("[")[0].removeprefix("test_")


def cell_of_nodeid(nodeid: str, estimators) -> tuple[str, str | None]:
    """(check, estimator) of a cell known only by its node id (the controller of xdist collects nothing). The
    estimator's id comes first in the parameter id (the plugin parametrizes it first, with the names as ids);
    the longest selected name that fits wins, so 'gas' does not claim 'gas_fixed_target-seed0'."""
    name = nodeid.split("::")[-1]
    params = name.partition("[")[2].removesuffix("]")
    fits = [e for e in estimators if params == e or params.startswith(e + "-")]
    return check_of_name(name), (max(fits, key=len) if fits else None)


def crash_record(nodeid: str, message: str, estimators) -> dict:
    """What a result records for a test whose xdist worker crashed: an ERROR ``cell`` of its estimator and check, or
    for a fixture self-check its ``metrics``."""
    check, est = cell_of_nodeid(nodeid, estimators)
    reason = (f"{message}: the worker process died (os._exit, a segfault, out of memory) and was replaced; "
              "the cell has no result")
    if est is None:  # not a per-estimator cell (a fixture self-check): an error of the fixture, as its own cells
        return {"metrics": {"check": check, "key_figure": "worker crashed"}}
    return {"cell": _error_cell(check, est, reason)}


def _error_cell(check: str, est: str, reason: str) -> dict:
    from bt_bench.checklist.base import Verdict
    from bt_bench.checklist.result import CellResult

    return CellResult.of(Verdict(check, "error", {}, reason, est), key_figure="worker crashed").to_dict()


def _is_cell_error(exc: BaseException) -> bool:
    from bt_bench.checklist.suite import FixtureUnsupported
    from bt_bench.estimator.errors import EstimatorError

    return isinstance(exc, (EstimatorError, FixtureUnsupported))


def _recorded(item: pytest.Item) -> dict:
    out: dict = {}
    for k, v in item.user_properties:
        if k == "bt_bench":
            out.update(json.loads(v))
    return out


def one_line(item: pytest.Item, exc: BaseException) -> str:
    """estimator, check, error class and message: what the terminal shows of an estimator error."""
    m = _recorded(item)
    params = getattr(getattr(item, "callspec", None), "params", {})
    est = m.get("estimator") or params.get("bt_estimator") or getattr(exc, "estimator", "?")
    check = m.get("check") or check_of_name(item.name)
    msg = " ".join(str(exc).split())  # one line, whatever the estimator put in its message
    # the error first: pytest's short summary repeats this line cut to the terminal's width
    return (f"{type(exc).__name__}: {msg} [bt-bench: estimator {est}, check {check}; full traceback with -v, or "
            "in results[].traceback of the --bt-report JSON]")


class Robustness:
    """Registered next to ``BtSession`` in ``pytest_configure``, on the controller and on every xdist worker."""

    def __init__(self, config: pytest.Config, settings):
        from bt_bench.estimator.scoring import TIME_LIMIT

        self.config, self.settings = config, settings
        self._estimators: list[str] | None = None  # selected names, looked up at the first crash (controller)
        self._canary_extras: tuple[str, ...] = ()
        self.crash_file: Path | None = None  # the controller creates it with its first xdist worker
        self._old_limit = TIME_LIMIT.seconds
        TIME_LIMIT.seconds = float(settings.timeout)  # process-wide: the estimator calls do not see the config

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        from bt_bench.estimator.scoring import TIME_LIMIT

        TIME_LIMIT.seconds = self._old_limit  # an in-process pytester run must not leak its limit
        if self.crash_file is not None:
            self.crash_file.unlink(missing_ok=True)

    # ----------------------------------------------------------------- time limit: which cell is calling
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        from bt_bench.estimator.scoring import TIME_LIMIT

        TIME_LIMIT.where = item.name
        try:
            return (yield)
        finally:
            TIME_LIMIT.where = ""

    # ----------------------------------------------------------------- one line per estimator error
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        rep = yield
        exc = call.excinfo.value if call.excinfo is not None else None
        if exc is None or not _is_cell_error(exc):
            return rep
        rep.user_properties.append((TRACEBACK_KEY, "".join(traceback.format_exception(exc))))
        opt = self.config.option
        if opt.verbose <= 0 and getattr(opt, "tbstyle", "auto") not in ("long", "native"):
            rep.longrepr = one_line(item, exc)  # a str longrepr is printed as is, also by xdist's controller
        return rep

    # ----------------------------------------------------------------- xdist worker crashes
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """Controller: tell each (also each replacement) worker where crashed estimators are listed."""
        if self.crash_file is None:
            fd, path = tempfile.mkstemp(prefix="bt-bench-crashed-", suffix=".txt")
            os.close(fd)
            self.crash_file = Path(path)
        node.workerinput[CRASH_FILE_KEY] = str(self.crash_file)

    def estimators(self) -> list[str]:
        """Every estimator the session scores (the oracle canary's included; ``fixtures.estimator_selection``)."""
        if self._estimators is None:
            from bt_bench.plugin.fixtures import estimator_selection
            from bt_bench.plugin.selection import runs_the_checklist

            try:
                self._estimators, self._canary_extras = ([], ()) if self.settings.evidence \
                    else estimator_selection(self.settings, canary=runs_the_checklist(self.config))
            except pytest.UsageError:
                self._estimators, self._canary_extras = [], ()
        return self._estimators

    def canary_extras(self) -> tuple[str, ...]:
        """The canary's estimators the user did not select (scored for the canary, no gate line of their own)."""
        self.estimators()
        return self._canary_extras

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Controller: list the estimator whose cell crashed a worker (one line: name, tab, node id)."""
        if report.when != CRASHED or self.crash_file is None:
            return
        _, est = cell_of_nodeid(report.nodeid, self.estimators())
        if est is not None:
            with open(self.crash_file, "a") as f:
                f.write(f"{est}\t{report.nodeid}\n")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Worker: a cell of an estimator that crashed a worker earlier is an ERROR at once, before its fixtures."""
        path = getattr(self.config, "workerinput", {}).get(CRASH_FILE_KEY)
        est = getattr(getattr(item, "callspec", None), "params", {}).get("bt_estimator")
        if not path or est is None:
            return
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            return
        where = next((ln.split("\t", 1)[1] for ln in lines if ln.split("\t", 1)[0] == est), None)
        if where is None:
            return
        from bt_bench.estimator.errors import WorkerCrashedError

        err = WorkerCrashedError(est, f"crashed a pytest-xdist worker in {where} (os._exit or a segfault in its "
                                      "code); its remaining cells are not run")
        check = check_of_name(item.name)
        from bt_bench.plugin.glue import CELL_KEY

        item.user_properties.append((CELL_KEY, json.dumps(_error_cell(check, est, str(err)))))
        raise err
