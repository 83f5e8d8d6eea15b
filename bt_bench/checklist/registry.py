"""The one check registry: the modules of ``bt_bench.checklist.checks``, listed here in checklist order
(docs/checklist.md, "The checks"), each handing over its :class:`~bt_bench.checklist.spec.CheckSpec` as ``SPEC``.
Everything that asks about checks (the suite's N/A rule, the expected grid, the gate, evidence replay, the
expectation tables' validation, the report's table and plots, the docs index) reads :data:`CHECKS`.

Adding a check: its module in ``bt_bench/checklist/checks/`` (spec, verdict, cell, key figure, replay, thresholds),
one line in :data:`MODULES`, one thin ``checks/test_<name>.py`` that takes ``SPEC = CHECKS["<name>"]``, and its rows
in the expectation tables. ``tests/test_checklist_registry.py`` keeps the registry and ``checks/`` in step.
"""

from __future__ import annotations

import difflib
from dataclasses import fields

from bt_bench.checklist.base import Thresholds
from bt_bench.checklist.checks import (
    advantage_baseline,
    counterfactual_removal,
    fluency_confound,
    gradient_norm_baseline,
    headroom,
    linear_datamodeling,
    retrieval_baseline,
    seed_draw_variance,
    target_dependence,
    trigger_token_alignment,
)
from bt_bench.checklist.figures import figure
from bt_bench.checklist.spec import PLOTS, CheckSpec

MODULES = (gradient_norm_baseline, fluency_confound, headroom, seed_draw_variance, trigger_token_alignment,
           advantage_baseline, target_dependence, retrieval_baseline, counterfactual_removal, linear_datamodeling)
CHECKS: dict[str, CheckSpec] = {s.name: s for s in sorted((m.SPEC for m in MODULES), key=lambda s: s.order)}
# fixture self-checks: once per session, not per estimator (checks/test_planted_cause.py, test_fixture_planting.py,
# test_sketch_fidelity.py, test_sketch_ranking.py, test_fixture_integrity.py, test_replay_fidelity.py), in the order
# docs/checklist.md lists them
FIXTURE_CHECKS = ("planted_cause", "planting_gate", "sketch_fidelity", "sketch_ranking", "integrity",
                  "replay_fidelity", "oracle_canary")  # the last: decided by the session (gate.canary), no module


def get_check(name: str) -> CheckSpec:
    """The CheckSpec of ``name``; an unknown name raises a KeyError that says what it may have meant."""
    try:
        return CHECKS[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), list(CHECKS), n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise KeyError(f"unknown check {name!r}{hint} (checks: {', '.join(CHECKS)})") from None


def not_applicable(check: str, estimator: str, level: str, capabilities) -> str | None:
    """Why ``check`` cannot take part for an estimator declaring ``level`` and ``capabilities`` (N/A by
    declaration, spec: never by what happens at run time); None when it takes part."""
    return get_check(check).why_not_applicable(estimator, level, capabilities)


_NO_FIGURE = figure(lambda us: [])


def key_figure(cell: dict) -> str:
    """One short string for a table cell from a cell of any check (``CellResult.to_dict()``): means over its units
    and the lowest CI lower bound ('lo'), e.g. ``lift 4.3 vs norm 4.5; window lift 1.0``."""
    spec = CHECKS.get(cell.get("check"))
    return spec.key_figure(cell) if spec else _NO_FIGURE(cell)


def plotted(plot: str) -> list[str]:
    """The checks whose units feed a report figure (``spec.PLOTS``), in checklist order."""
    if plot not in PLOTS:
        raise KeyError(f"unknown plot {plot!r}; one of {PLOTS}")
    return [name for name, s in CHECKS.items() if plot in s.plots]


def thresholds_help() -> dict[str, str]:
    """Help text of every field of ``Thresholds``: the checks' own (prefixed by the checks that use it), else the
    field's shared help (bootstrap, candidate sets, checkpoint kinds)."""
    owned: dict[str, list[tuple[str, str]]] = {}
    for name, s in CHECKS.items():
        for field_name, text in s.thresholds.items():
            owned.setdefault(field_name, []).append((name, text))
    out = {}
    for f in fields(Thresholds):
        if f.name in owned:
            names = ", ".join(n for n, _ in owned[f.name])
            out[f.name] = f"{names}: {owned[f.name][0][1]}"
        else:
            out[f.name] = f.metadata["help"]
    return out


def replayed() -> list[CheckSpec]:
    """The checks evidence replay can judge from recorded rows, in checklist order."""
    return [s for s in CHECKS.values() if s.replay is not None]


__all__ = ["CHECKS", "FIXTURE_CHECKS", "MODULES", "get_check", "key_figure", "not_applicable", "plotted", "replayed",
           "thresholds_help"]
