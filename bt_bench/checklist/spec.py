"""What one check is (:class:`CheckSpec`): the one object a check's module (``bt_bench.checklist.checks.<name>``)
hands to the registry, and everything the rest of the harness asks about a check (the suite, the expected grid, the
gate, evidence replay, the report's table and plots, the docs index) reads from it, never from a list of names.

A check module holds, for one checklist item: its pure verdict function (arrays and thresholds in, ``Verdict``
out), its cell (which units, which targets: the suite's arrays in, a verdict out), its key figure (the short text of
a table cell), its replay of recorded evidence if it has one, the thresholds it owns with their help text, and the
rule that makes it N/A for an estimator by what that estimator declares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields

from bt_bench.checklist.base import Thresholds
from bt_bench.checklist.figures import figure

UNITS = ("seed", "seed_draw", "all")
REFERENCES = ("norm_only", "fluency", "advantage_only")
PLOTS = ("lift", "auc_vs_fluency", "variance_shares", "alignment")  # report figures a check's units feed


def step_level_on_draws(name: str, level: str, capabilities: Iterable[str]) -> str | None:
    """The N/A rule of every check judged on fresh candidates of one draw only (all of one checkpoint)."""
    if level == "step":
        return (f"{name} is step-level: the fresh candidates of a draw all share one checkpoint, so a score shared "
                "by every rollout of a step cannot rank them")
    return None


@dataclass(frozen=True)
class CheckSpec:
    """One checklist item.

    name: the check's name (its module's, its thin ``checks/test_<name>.py``'s). order: its place in the
    checklist (docs/checklist.md, "The checks"). unit: what one test cell judges: ``seed`` (one cell per seed),
    ``seed_draw`` (per seed and draw) or ``all`` (one cell over every seed and draw). title, finding: the one-line
    check and the paper's finding it gates (table and docs). reference: the control the check compares an
    estimator with (None when it compares with none). cell: ``(suite, estimator, seed index[, draw] | draws) ->
    Verdict`` (a cell that takes ``draws`` pools the draws of one unit). judge: the pure verdict function.
    figure_parts: ``units -> [text parts]`` of the key figure. replay: ``(evidence, estimator, thresholds) -> Verdict``,
    None when evidence replay cannot judge the check. thresholds: {field of ``Thresholds``: help text} of the ones
    this check owns. not_applicable: ``(estimator, level, capabilities) -> reason or None``, N/A by declaration
    only. plots: the report figures its units feed (``PLOTS``). canary: whether the oracle canary judges it (the
    oracle must pass it on every fixture that gates; ``bt_bench.checklist.gate.canary``): False for a check the
    labels are no ceiling of.
    """

    name: str
    order: int
    unit: str
    title: str
    finding: str
    cell: Callable
    judge: Callable
    figure_parts: Callable[[list[dict]], list[str | None]]
    reference: str | None = None
    replay: Callable | None = None
    thresholds: Mapping[str, str] = field(default_factory=dict)
    not_applicable: Callable[[str, str, Iterable[str]], str | None] | None = None
    plots: tuple[str, ...] = ()
    canary: bool = True

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"unit: must be one of {UNITS}, got {self.unit!r}")
        if self.reference is not None and self.reference not in REFERENCES:
            raise ValueError(f"reference: must be one of {REFERENCES} or None, got {self.reference!r}")
        known = {f.name for f in fields(Thresholds)}
        unknown = sorted(set(self.thresholds) - known)
        if unknown:
            raise ValueError(f"thresholds: {unknown} are not fields of Thresholds; add them there first")
        bad = sorted(set(self.plots) - set(PLOTS))
        if bad:
            raise ValueError(f"plots: {bad} unknown; one of {PLOTS}")

    def key_figure(self, cell: dict) -> str:
        """The short string a table cell shows, from a cell of this check (``CellResult.to_dict()``)."""
        return figure(self.figure_parts)(cell)

    def why_not_applicable(self, estimator: str, level: str, capabilities: Iterable[str]) -> str | None:
        """Why the check cannot take part for an estimator declaring ``level`` and ``capabilities``; None when
        it takes part."""
        return None if self.not_applicable is None else self.not_applicable(estimator, level, capabilities)


__all__ = ["PLOTS", "REFERENCES", "UNITS", "CheckSpec", "step_level_on_draws"]
