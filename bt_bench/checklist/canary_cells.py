"""The oracle canary judged before anyone else is scored: every cell the canary takes (``CheckSpec.canary``), for its
estimators (``gate.CANARY_PASSES``, ``gate.CANARY_FAILS``), computed outside pytest from a ``Suite`` and turned into
the records a session's tests would have recorded, then judged by ``gate.canary`` as the session will judge them.

Why: under ``--bt-paper-gate`` a gate seed is accepted before any estimator is scored (``bt_bench.plugin.gate_draw``).
A fixture on which perfect attribution cannot pass gates nobody, so a gate seed whose fixtures fail the
canary is redrawn like one that fails the sketch-ranking self-check, instead of ending the session with
``FIXTURE FAILED`` after every estimator was scored. The cells are the session's own: the same ``Suite`` methods, the
same score cache and counterfactual replays (shared with the workers by their locks), so the tests that follow read
what was computed here and the session's own canary (``BtSession.decide``) repeats this verdict.

Pure checklist stage: no pytest. A cell that cannot be judged is recorded as the glue records it (``plugin.glue.cell``):
N/A or NOT JUDGED for a skip, ERROR for a fixture that cannot support it or an estimator error.
"""

from __future__ import annotations

from collections.abc import Iterable

from bt_bench.checklist import gate
from bt_bench.checklist.base import Verdict
from bt_bench.checklist.grid import pools_draws
from bt_bench.checklist.registry import CHECKS
from bt_bench.checklist.result import CellResult
from bt_bench.checklist.suite import FixtureUnsupported, NotApplicable, SkipCell


def _units(spec, seeds: int, draws: int) -> list[tuple[tuple, dict]]:
    """(the cell's arguments after ``(suite, estimator)``, the node id's parameters) of every unit of ``spec``, as
    the thin module ``checks/test_<name>.py`` calls it (``bt_seed``, ``bt_draw``, or ``draws`` where it pools)."""
    pools = pools_draws(spec.cell)
    if spec.unit == "all":
        return [((draws,) if pools else (), {})]
    if spec.unit == "seed":
        return [(((i, draws) if pools else (i,)), {"seed": i}) for i in range(seeds)]
    return [((i, d), {"seed": i, "draw": d}) for i in range(seeds) for d in range(draws)]


def _record(spec, estimator: str, args: tuple, params: dict, suite) -> dict:
    """The result record of one cell, as the session would hold it (``nodeid``, pytest's ``outcome``, ``cell``)."""
    from bt_bench.estimator import EstimatorError

    na = False
    try:
        verdict = spec.cell(suite, estimator, *args)
        if isinstance(verdict, tuple):  # a cell that also returns what it records beside its verdict (a series)
            verdict = verdict[0]
    except SkipCell as e:
        na, verdict = isinstance(e, NotApplicable), Verdict(spec.name, "skip", {}, str(e), estimator)
    except (FixtureUnsupported, EstimatorError) as e:
        verdict = Verdict(spec.name, "error", {}, str(e), estimator)
    ident = "-".join([estimator, *(f"{k}{v}" for k, v in params.items())])
    cell = CellResult.of(verdict, estimator, na=na)
    outcome = {"pass": "passed", "skip": "skipped"}.get(verdict.outcome, "failed")
    return {"nodeid": f"checks/test_{spec.name}.py::test_{spec.name}[{ident}]", "outcome": outcome,
            "cell": cell.to_dict()}


def canary_records(suite, draws: int, *, reverse: bool = False) -> list[dict]:
    """Every canary cell's record on ``suite``'s fixtures with ``draws`` draws. ``reverse``: the units in the
    opposite order (a second process that computes the same cells then starts at the other end, and the replays
    both need are split by their locks instead of built twice)."""
    todo = [(spec, est, args, params) for est in (*gate.CANARY_PASSES, *gate.CANARY_FAILS)
            for spec in CHECKS.values() if spec.canary
            for args, params in _units(spec, suite.n_seeds, draws)]
    return [_record(spec, est, args, params, suite)
            for spec, est, args, params in (reversed(todo) if reverse else todo)]


def canary_problems(records: Iterable[dict], *, modified_thresholds: bool = False) -> list[str]:
    """Why the canary fails on these records (``canary_records``), [] when the oracle passes and random fails."""
    by_est: dict[str, dict] = {}
    for (est, check), r in gate.checks(list(records)).items():
        by_est.setdefault(est, {})[check] = r
    excluded = tuple(name for name, spec in CHECKS.items() if not spec.canary)
    verdict = gate.canary(by_est, excluded=excluded, modified_thresholds=modified_thresholds)
    if verdict is None:
        return ["oracle canary: neither canary estimator was judged on any check"]
    ok, problems, _ = verdict
    return [] if ok else [f"fixture self-check {gate.CANARY} FAILED ({'; '.join(problems)})"]


__all__ = ["canary_problems", "canary_records"]
