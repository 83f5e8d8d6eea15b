"""The linear datamodeling score (LDS; Park et al. 2023, TRAK) of one seed, as figures: Spearman's rho, over the
fixture's S half-subset replays (``bt_bench.runs.counterfactual.lds_set``), between the behavior measure at W of
each replay and an estimator's scores summed over the rollouts it kept; and its paired difference to every
control's. Pure numbers in, ``Metric`` out; the check that judges them and the bench that reports them import it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bt_bench.checklist.base import Metric, Thresholds
from bt_bench.checklist.bootstrap import paired_spearman_difference_bootstrap, spearman_bootstrap
from bt_bench.checklist.metrics import as_vector

# every control of the suite, at training level: chance, both gradient norms, fluency, the advantage and the four
# retrieval controls. An estimator must beat each: together, the best control on each seed
CONTROLS = ("random", "norm_only", "norm_only_step", "fluency", "advantage_only", "bm25", "repsim", "bm25_adv",
            "repsim_adv")
MIN_SUBSETS = 8


def subset_sums(scores, kept) -> np.ndarray:
    """[S] sums of the training-level ``scores`` over each LDS subset's kept uids (``kept``: [S, h] indices)."""
    s = as_vector("scores", scores)
    return s[np.asarray(kept, dtype=np.int64)].sum(axis=1)


def support_problem(measure) -> str | None:
    """Why a set of LDS replays cannot support a verdict (too few, or a measure that never moves), or None."""
    y = as_vector("measure", measure)
    if len(y) < MIN_SUBSETS:
        return f"{len(y)} LDS subset(s); a rank correlation with a CI needs at least {MIN_SUBSETS}"
    if np.ptp(y) == 0:
        return "the behavior measure is the same after every LDS replay, there is nothing to predict"
    return None


def lds_figures(sums, controls: Mapping[str, object], measure, *, thresholds: Thresholds = Thresholds()
                ) -> tuple[dict[str, Metric], list[str], list[bool]]:
    """(metrics, reason parts, one ok per control): ``lds`` (Spearman(sums, measure) with a bootstrap CI over the
    subsets), ``lds_minus_<control>`` (paired: the same subset resamples; ok when its CI low > lds_margin) and
    ``lds_minus_best`` (the one with the lowest CI low)."""
    th = thresholds
    y = as_vector("measure", measure)
    x = as_vector("sums", sums, n=len(y), ref="measure")
    metrics, parts, oks = {"lds": Metric.of(spearman_bootstrap(x, y, **th.bootstrap))}, [], []
    for name, c in controls.items():
        cx = as_vector(f"{name}_sums", c, n=len(y), ref="measure")
        d = Metric.of(paired_spearman_difference_bootstrap(x, cx, y, **th.bootstrap))
        oks.append(d.ci_low is not None and d.ci_low > th.lds_margin)
        metrics[f"lds_minus_{name}"] = d
        parts.append(f"minus {name}'s {d} ({'met' if oks[-1] else 'NOT met'})")
    if controls:
        metrics["lds_minus_best"] = min((metrics[f"lds_minus_{c}"] for c in controls),
                                        key=lambda m: (float("-inf") if m.ci_low is None else m.ci_low, m.value))
    return metrics, parts, oks
