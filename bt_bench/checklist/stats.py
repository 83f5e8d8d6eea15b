"""The statistics of the bt-bench checklist (spec: checklist.md, section "Metrics"). Pure numpy/scipy.

One import path for two modules: :mod:`bt_bench.checklist.metrics` (precision@k, chance, ceiling, lift, headroom,
normalized gain, window, within-group AUC, residualization, Spearman, variance shares) and
:mod:`bt_bench.checklist.bootstrap` (every cluster-bootstrap CI). ``stats.X`` resolves every public name of both.

Every public function takes numpy arrays, validates shapes and lengths, and raises ``ValueError`` whose
message starts with the name of the offending argument.

Confidence intervals (spec "Confidence intervals") come from one resampling loop: a resample draws C of
the C clusters (groups for AUC, steps for precision, responses for token-level means) with replacement,
a whole chunk of resamples at once as a [B, C] index matrix.  Ratios of per-cluster sums (AUC, means) just
gather and sum the drawn clusters' totals (:func:`ratio_bootstrap`); other statistics see the multinomial
counts per cluster (:func:`cluster_bootstrap`; precision@|GT| then needs no re-sort, see
:class:`WeightedRanking`).  No Python loop runs over resamples.  Speed, 5000 resamples over 1e5 rows on
this 2-core machine (``tests/test_stats.py::test_bootstrap_speed_on_1e5_rows`` prints it): within-group
AUC in 12,500 groups of 8, about 1-2 s (~2,500-5,000 resamples/s, depending on load); precision@|GT| over
100 steps, about 1 s (~5,000 resamples/s).

Fluency residualization fits its slope once on all rows and the bootstrap does *not* refit it. That is what
the BehaviorTrace README says, and it is what reproduces the published CIs: on the published seed-2 rows,
with one set of 5000 resamples, the fixed-slope bounds lay within 0.006 of the published ones for every
method while refitting the slope in each resample moved them by up to 0.011 (mp_centered lower bound 0.5726
vs 0.5612).  With this module's stream the fixed-slope bounds stay within 0.0075 of the published ones for
each of the seeds 0-19 (seed 0: 0.0069).
"""

from __future__ import annotations

from bt_bench.checklist.bootstrap import (
    DEFAULT_PERCENTILES,
    DEFAULT_RESAMPLES,
    BootstrapResult,
    WeightedRanking,
    auc_bootstrap,
    cluster_bootstrap,
    mean_bootstrap,
    normalized_gain_bootstrap,
    paired_auc_difference_bootstrap,
    paired_difference_bootstrap,
    precision_bootstrap,
    precision_difference_bootstrap,
    ratio_bootstrap,
    residualized_auc_bootstrap,
)
from bt_bench.checklist.metrics import (
    GroupPairs,
    RankingMetrics,
    as_vector,
    ceiling,
    chance,
    cluster_index,
    count_pairs,
    group_center,
    group_pairs,
    headroom,
    lift,
    normalized_gain,
    pairwise_spearman,
    precision_at_k,
    ranking_metrics,
    residualize,
    spearman,
    variance_shares,
    window_mask,
    window_metrics,
    within_group_auc,
)

__all__ = [
    "DEFAULT_PERCENTILES", "DEFAULT_RESAMPLES", "BootstrapResult", "GroupPairs", "RankingMetrics", "WeightedRanking",
    "as_vector", "auc_bootstrap", "ceiling", "chance", "cluster_bootstrap", "cluster_index", "count_pairs",
    "group_center", "group_pairs", "headroom", "lift", "mean_bootstrap", "normalized_gain", "normalized_gain_bootstrap",
    "paired_auc_difference_bootstrap", "paired_difference_bootstrap", "pairwise_spearman", "precision_at_k",
    "precision_bootstrap", "precision_difference_bootstrap", "ranking_metrics", "ratio_bootstrap", "residualize",
    "residualized_auc_bootstrap", "spearman", "variance_shares", "window_mask", "window_metrics", "within_group_auc",
]
