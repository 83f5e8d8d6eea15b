"""One pure verdict function per checklist item (spec: checklist.md, "The checks"), and what they share.

Each function maps plain arrays (scores, labels, steps, groups, ...) and :class:`Thresholds` to a
:class:`Verdict`: an outcome, the metrics with their bootstrap CIs, and a reason that names the figures.
The pytest glue in ``checks/`` and evidence replay (``bt_bench.checklist.evidence``) call the same functions, so a
published table and a fixture run are judged by one piece of code (spec: architecture.md).

One import path for two modules: :mod:`bt_bench.checklist.base` (Thresholds, Metric, Verdict, combine, with_unit:
outcomes, the every-seed rule, units as data) and :mod:`bt_bench.checklist.judges` (the verdict function of each
check). ``CHECKS`` are the names of the checks in checklist order, from the registry
(:mod:`bt_bench.checklist.registry`).
"""

from __future__ import annotations

from bt_bench.checklist import stats
from bt_bench.checklist.base import (
    OUTCOMES,
    UNDEFINED_NOTE_SHARE,
    Metric,
    Thresholds,
    Verdict,
    combine,
    with_unit,
)
from bt_bench.checklist.judges import (
    advantage_baseline,
    fluency_confound,
    gradient_norm_baseline,
    headroom,
    residual_auc_units,
    seed_draw_variance,
    target_dependence,
    target_dependence_draw,
    target_dependence_training,
    trigger_token_alignment,
)
from bt_bench.checklist.registry import CHECKS as _REGISTRY

CHECKS = tuple(_REGISTRY)

__all__ = [
    "CHECKS", "OUTCOMES", "UNDEFINED_NOTE_SHARE", "Metric", "Thresholds", "Verdict", "advantage_baseline", "combine",
    "fluency_confound", "gradient_norm_baseline", "headroom", "residual_auc_units", "seed_draw_variance", "stats",
    "target_dependence", "target_dependence_draw", "target_dependence_training", "trigger_token_alignment",
    "with_unit",
]
