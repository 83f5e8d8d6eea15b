"""The pytest glue of the thin check modules in ``checks/``: compute a cell in a fixture (:func:`cell`), record its
verdict and turn it into the test's outcome (:func:`run_cell`), attach the cell's result to the test's report
(:func:`record_cell`; a fixture self-check's figures: :func:`record`).
It is the plugin's because it is pytest's protocol (skip, xfail, ``user_properties``); the checklist stage it calls
imports no pytest. The thin modules import this module and nothing else of the plugin.

What a built-in is declared to do (``bt_bench.checklist.expectations``) depends on the session's fixture profile and
``--bt-strict``; the plugin stores both under :data:`GLUE_KEY` in ``config.stash`` (``{"profile": ..., "strict":
...}``). Without it no outcome is expected: every estimator is gated by its own cells.
"""

from __future__ import annotations

import json

import pytest

from bt_bench.checklist.base import json_default
from bt_bench.checklist.gate import PASS_OR_FAIL

GLUE_KEY = pytest.StashKey[dict]()  # {"profile": str, "strict": bool, "lds": bool}, set by the plugin
CELL_KEY = "bt_bench_cell"  # the user_properties key of a cell's result; fixture self-checks record "bt_bench"
# the oracle canary's estimators the user did not select (``fixtures.estimator_selection``), set where the tests are
# collected: their cells feed the canary (``gate.canary``), so a FAIL or ERROR of theirs is no failed test
CANARY_ONLY_KEY = pytest.StashKey[tuple]()


def _settings(request) -> dict | None:
    return request.config.stash.get(GLUE_KEY, None)


def _expected(request, estimator: str, check: str) -> dict | None:
    """The declared outcome of a built-in on the session's profile ({label, reason}); None for a user's estimator,
    under --bt-strict, or without the session's settings."""
    from bt_bench.checklist.expectations import expected_for

    s = _settings(request)
    if s is None or s.get("strict"):
        return None
    want = (expected_for(s.get("profile", ""), estimator, lds=s.get("lds", False)) or {}).get(check)
    return None if want is None else {"label": want[0], "reason": want[1]}


def _canary_only(request, estimator: str) -> bool:
    return estimator in request.config.stash.get(CANARY_ONLY_KEY, ())


def run_cell(request, check: str, estimator: str, verdict, *, na: bool = False, **info) -> None:
    """Record a cell's verdict (JSON report + table) and turn it into the test outcome. ``na``: a skip verdict is
    N/A (the input can never take part, e.g. replayed evidence that holds nothing for the check), not NOT JUDGED."""
    from bt_bench.checklist.result import CellResult

    exp = _expected(request, estimator, check)
    record_cell(request, CellResult.of(verdict, estimator, na=na, expected=exp, **info))
    if verdict.outcome in ("fail", "error") and _canary_only(request, estimator):
        pytest.xfail(f"scored for the oracle canary (its verdict is the canary's): {verdict.reason}")
    if verdict.outcome == "skip":
        pytest.skip(verdict.reason)
    if verdict.outcome == "unsupported":  # no ranking can pass this unit: neither a pass nor a fail; the gate
        pytest.skip(f"UNSUPPORTED: {verdict.reason}")  # counts it (bt_bench.checklist.gate.UNSUPPORTED)
    if verdict.outcome == "error":
        if exp and exp["label"] == "ERROR":  # a built-in's declared error of the fixture (e.g. a check the default
            pytest.xfail(f"expected: {exp['reason']}")  # fixture cannot support): the gate checks it both ways
        from bt_bench.checklist.suite import FixtureUnsupported

        raise FixtureUnsupported(verdict.reason)
    if verdict.outcome == "fail" and exp and exp["label"] in ("FAIL", PASS_OR_FAIL):
        # a built-in's declared failure: xfail keeps pytest's count readable; whether the check as a whole ends as
        # declared (both ways) is decided by the gate at the end of the session (the plugin's BtSession.decide)
        pytest.xfail(f"expected: {exp['reason']}")
    assert verdict.outcome == "pass", f"{check}[{estimator}]: {verdict.reason}"


def cell(request, check: str, estimator: str, fn, *args, **kwargs):
    """Compute a cell in a fixture (setup phase): a capability gap skips it with its reason; an estimator error or
    a fixture that cannot support the check propagates, so pytest reports an ERROR of that cell, not a crash of
    the session, and the table shows it with its reason."""
    from bt_bench.checklist.base import Verdict
    from bt_bench.checklist.result import CellResult
    from bt_bench.checklist.suite import FixtureUnsupported, NotApplicable, SkipCell
    from bt_bench.estimator import EstimatorError

    exp = _expected(request, estimator, check)
    try:
        return fn(*args, **kwargs)
    except SkipCell as e:  # N/A by declaration, or NOT JUDGED at run time (which fails the gate)
        na = isinstance(e, NotApplicable)
        record_cell(request, CellResult.of(Verdict(check, "skip", {}, str(e), estimator), na=na, expected=exp,
                                      key_figure=("N/A: " if na else "not judged: ") + str(e)[:60]))
        pytest.skip(("N/A: " if na else "NOT JUDGED (fails the gate): ") + str(e))
    except (FixtureUnsupported, EstimatorError) as e:
        record_cell(request, CellResult.of(Verdict(check, "error", {}, str(e), estimator), expected=exp,
                                      key_figure=type(e).__name__))
        if isinstance(e, FixtureUnsupported) and exp and exp["label"] == "ERROR":
            pytest.xfail(f"expected: {exp['reason']}")  # declared: the fixture cannot support this check
        if _canary_only(request, estimator):
            pytest.xfail(f"scored for the oracle canary (its verdict is the canary's): {e}")
        raise


def record_cell(request, result) -> None:
    """Attach a cell's result (``bt_bench.checklist.result.CellResult``) to the current test's report, serialised
    once; it travels from an xdist worker to the controller and into the JSON report as the result's ``cell``."""
    request.node.user_properties.append((CELL_KEY, json.dumps(result.to_dict(), default=json_default)))


def record(request, **metrics) -> None:
    """Attach a fixture self-check's figures to the current test's report (the result's ``metrics``)."""
    request.node.user_properties.append(("bt_bench", json.dumps(metrics, default=json_default)))


__all__ = ["CANARY_ONLY_KEY", "CELL_KEY", "GLUE_KEY", "cell", "record", "record_cell", "run_cell"]
