"""The statistics of the bt-bench checklist (spec: checklist.md, section "Metrics"). Pure numpy/scipy.

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

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import rankdata

DEFAULT_RESAMPLES = 5000
DEFAULT_PERCENTILES = (2.5, 97.5)
_CHUNK_ELEMENTS = 1_000_000  # bound on the [resamples x clusters] arrays of one chunk of resamples


# ----------------------------------------------------------------------------------------------- validation
def as_vector(name: str, x, *, n: int | None = None, ref: str = "", kind: str = "float") -> np.ndarray:
    """A 1-D array of `kind` ('float', 'bool', 'int'); `n`/`ref` check its length against another argument."""
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name}: length {a.shape[0]} differs from {ref} length {n}")
    if kind == "bool":
        if a.dtype != bool:
            if a.size and not (np.issubdtype(a.dtype, np.number) and np.isin(a, (0, 1)).all()):
                raise ValueError(f"{name}: expected booleans (or 0/1), got dtype {a.dtype}")
            a = a.astype(bool)
        return a
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise ValueError(f"{name}: expected real numbers, got dtype {a.dtype}")
    if kind == "int":
        if not np.issubdtype(a.dtype, np.integer):
            if a.size and not np.all(np.mod(a, 1) == 0):
                raise ValueError(f"{name}: expected integers, got dtype {a.dtype} with fractional values")
            a = a.astype(np.int64)
        return a
    a = a.astype(np.float64)
    if np.isnan(a).any():
        raise ValueError(f"{name}: contains NaN")
    return a


def _nonempty(name: str, a: np.ndarray) -> None:
    if a.shape[0] == 0:
        raise ValueError(f"{name}: is empty")


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with NaN where den == 0 (a resample that leaves the statistic undefined)."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def cluster_index(cluster, name: str = "cluster") -> tuple[np.ndarray, int]:
    """Map arbitrary cluster ids to 0..C-1; returns (index per row, C)."""
    c = np.asarray(cluster)
    if c.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {c.shape}")
    _, idx = np.unique(c, return_inverse=True)
    return idx.astype(np.int64), int(idx.max() + 1) if idx.size else 0


# ------------------------------------------------------------------------------- tie-aware precision@k
def _tie_precision(size: np.ndarray, gt: np.ndarray, k: int) -> float:
    """Tie-aware precision for blocks in descending score order (spec "Tie-aware precision@k").

    size, gt: rows and GT rows per tie block.  Whole blocks credit their GT count; the block that
    straddles the cut credits GT_in_block * slots_taken / block_size; the sum is divided by k.
    """
    cs, cg = np.cumsum(size), np.cumsum(gt)
    j = int(np.searchsorted(cs, k))  # first block whose end reaches the cut
    prev_s, prev_g = (cs[j - 1], cg[j - 1]) if j > 0 else (0.0, 0.0)
    return float((prev_g + gt[j] * (k - prev_s) / size[j]) / k)


def _check_k(k: int | None, n: int, n_gt: int) -> int:
    if k is None:
        if n_gt == 0:
            raise ValueError("is_gt: has no positive row, so precision@|GT| is undefined")
        return n_gt
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k: must be a positive integer, got {k!r}")
    if k > n:
        raise ValueError(f"k: {k} is larger than the number of rows {n}")
    return int(k)


def precision_at_k(scores, is_gt, k: int | None = None) -> float:
    """Tie-aware precision@k (spec "Metrics": Tie-aware precision@k); k defaults to |GT|.

    Sort by score descending, equal scores form a tie block, fill k slots block by block; a block that
    straddles the cut credits GT_in_block * slots_taken / block_size.  Order inside a block never matters.
    """
    s = as_vector("scores", scores)
    g = as_vector("is_gt", is_gt, n=s.shape[0], ref="scores", kind="bool")
    _nonempty("scores", s)
    k = _check_k(k, s.shape[0], int(g.sum()))
    _, block = np.unique(-s, return_inverse=True)
    return _tie_precision(np.bincount(block).astype(float), np.bincount(block, weights=g.astype(float)), k)


def chance(is_gt) -> float:
    """Chance = |GT| / N (spec "Metrics")."""
    g = as_vector("is_gt", is_gt, kind="bool")
    _nonempty("is_gt", g)
    return float(g.mean())


def _step_density(g: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Per-row GT density of the row's step: the score of the best step-level ranking."""
    sidx, ns = cluster_index(step, "step")
    dens = np.bincount(sidx, weights=g.astype(float), minlength=ns) / np.bincount(sidx, minlength=ns)
    return dens[sidx]


def ceiling(is_gt, step, k: int | None = None) -> float:
    """Ceiling (spec "Metrics"): precision when the blocks are the steps ordered by GT density.

    Ranking rows by their step's GT density reproduces it exactly: steps of equal density form one tie
    block whose straddling credit is density * slots, the same in any order.
    """
    g = as_vector("is_gt", is_gt, kind="bool")
    st = as_vector("step", step, n=g.shape[0], ref="is_gt", kind="int")
    _nonempty("is_gt", g)
    return precision_at_k(_step_density(g, st), g, k)


def lift(precision: float, chance: float) -> float:
    """Lift = precision / chance (spec "Metrics")."""
    if not chance > 0:
        raise ValueError(f"chance: must be > 0 for a lift, got {chance}")
    return float(precision / chance)


def headroom(ceiling: float, chance: float) -> float:
    """Headroom = ceiling - chance (spec "Metrics")."""
    return float(ceiling - chance)


def normalized_gain(precision: float, chance: float, ceiling: float) -> float:
    """Normalized gain = (precision - chance) / (ceiling - chance) (spec "Metrics").

    A rollout-level estimator may exceed the step-level ceiling, so the gain may exceed 1 (spec note).
    """
    if ceiling == chance:
        raise ValueError("ceiling: equals chance (zero headroom), so the normalized gain is undefined")
    return float((precision - chance) / (ceiling - chance))


@dataclass(frozen=True)
class RankingMetrics:
    """The spec's ranking metrics over one set of rows. normalized_gain is NaN when headroom is 0."""

    precision: float
    chance: float
    ceiling: float
    lift: float
    headroom: float
    normalized_gain: float
    k: int
    n: int
    n_gt: int

    def to_dict(self) -> dict:
        return asdict(self)


def ranking_metrics(scores, is_gt, step, k: int | None = None) -> RankingMetrics:
    """precision@k, chance, ceiling, lift, headroom and normalized gain of one score vector."""
    s = as_vector("scores", scores)
    g = as_vector("is_gt", is_gt, n=s.shape[0], ref="scores", kind="bool")
    st = as_vector("step", step, n=s.shape[0], ref="scores", kind="int")
    _nonempty("scores", s)
    k = _check_k(k, s.shape[0], int(g.sum()))
    p, c, ceil = precision_at_k(s, g, k), chance(g), ceiling(g, st, k)
    gain = (p - c) / (ceil - c) if ceil != c else float("nan")
    return RankingMetrics(p, c, ceil, lift(p, c), ceil - c, float(gain), k, int(s.shape[0]), int(g.sum()))


def window_mask(step, W: int, nonzero) -> np.ndarray:
    """Rows of the planting window with a gradient that is not exactly zero (spec "Window restriction")."""
    st = as_vector("step", step, kind="int")
    nz = as_vector("nonzero", nonzero, n=st.shape[0], ref="step", kind="bool")
    if isinstance(W, bool) or int(W) != W or W < 1:
        raise ValueError(f"W: must be a positive integer (the planting window), got {W!r}")
    return (st < W) & nz


def window_metrics(scores, is_gt, step, W: int, nonzero) -> RankingMetrics:
    """Ranking metrics inside the window (the paper's ``early_nonzero``): chance, ceiling, k recomputed."""
    m = window_mask(step, W, nonzero)
    s = as_vector("scores", scores, n=m.shape[0], ref="step")
    g = as_vector("is_gt", is_gt, n=m.shape[0], ref="step", kind="bool")
    if not m.any():
        raise ValueError(f"nonzero: the window (steps < W={W} with a nonzero gradient) is empty")
    return ranking_metrics(s[m], g[m], np.asarray(step)[m])


# ----------------------------------------------------------------------------------- within-group AUC
@dataclass(frozen=True)
class GroupPairs:
    """Per-group counts of (behavior, non-behavior) sibling pairs: wins, ties, pairs (float arrays [C])."""

    wins: np.ndarray
    ties: np.ndarray
    pairs: np.ndarray

    @property
    def n_pairs(self) -> int:
        return int(self.pairs.sum())

    def auc(self, weights: np.ndarray | None = None) -> np.ndarray | float:
        """Pooled (wins + ties/2) / pairs; `weights` [B, C] are bootstrap counts per group."""
        if weights is None:
            return float(_safe_ratio(self.wins.sum() + self.ties.sum() / 2, self.pairs.sum()))
        return _safe_ratio(weights @ (self.wins + self.ties / 2), weights @ self.pairs)


def group_pairs(scores, has_behavior, group) -> GroupPairs:
    """Count wins/ties/pairs per group in O(N log N) (spec "Within-group AUC").

    Rows are keyed by (group, dense score rank); for each behavior row two binary searches in the sorted
    keys of the non-behavior rows count the siblings it beats and the ones it ties.
    """
    s = as_vector("scores", scores)
    y = as_vector("has_behavior", has_behavior, n=s.shape[0], ref="scores", kind="bool")
    gidx, ng = cluster_index(as_vector("group", group, n=s.shape[0], ref="scores", kind="int"), "group")
    _, rank = np.unique(s, return_inverse=True)
    base = np.int64(rank.max() + 2) if rank.size else np.int64(1)
    key = gidx * base + rank
    neg = np.sort(key[~y])
    kp, gp = key[y], gidx[y]
    below = np.searchsorted(neg, kp, "left")
    wins = below - np.searchsorted(neg, gp * base, "left")
    ties = np.searchsorted(neg, kp, "right") - below
    pairs = np.bincount(gp, minlength=ng) * np.bincount(gidx[~y], minlength=ng)
    return GroupPairs(np.bincount(gp, weights=wins, minlength=ng).astype(float),
                      np.bincount(gp, weights=ties, minlength=ng).astype(float), pairs.astype(float))


def count_pairs(has_behavior, group) -> int:
    """Number of within-group (behavior, non-behavior) sibling pairs: sum over groups of n_pos * n_neg."""
    y = as_vector("has_behavior", has_behavior, kind="bool")
    gidx, ng = cluster_index(as_vector("group", group, n=y.shape[0], ref="has_behavior", kind="int"), "group")
    return int((np.bincount(gidx[y], minlength=ng) * np.bincount(gidx[~y], minlength=ng)).sum())


def within_group_auc(scores, has_behavior, group) -> float:
    """Within-group AUC (spec "Metrics"): pooled over groups; groups with no pair contribute nothing."""
    gp = group_pairs(scores, has_behavior, group)
    if gp.n_pairs == 0:
        raise ValueError("has_behavior: no group holds both a behavior and a non-behavior rollout (0 pairs)")
    return float(gp.auc())


def group_center(x, group, name: str = "x") -> np.ndarray:
    """x minus its group mean (the centring of spec "Fluency residualization")."""
    v = as_vector(name, x)
    gidx, ng = cluster_index(as_vector("group", group, n=v.shape[0], ref=name, kind="int"), "group")
    means = np.bincount(gidx, weights=v, minlength=ng) / np.bincount(gidx, minlength=ng)
    return v - means[gidx]


def residualize(scores, fluency, group) -> tuple[np.ndarray, float]:
    """Fluency residualization (spec "Metrics"): returns (residual, pooled slope b).

    score_c, fluency_c = group-centred; b = cov(score_c, fluency_c) / var(fluency_c) over all rows (the
    centred columns have mean 0, so this is sum(score_c * fluency_c) / sum(fluency_c**2));
    residual = score_c - b * fluency_c.  Fitted once; the bootstrap does not refit (module docstring).
    """
    s = as_vector("scores", scores)
    f = as_vector("fluency", fluency, n=s.shape[0], ref="scores")
    sc, fc = group_center(s, group, "scores"), group_center(f, group, "fluency")
    var = float(fc @ fc)
    if var == 0:
        raise ValueError("fluency: constant within every group, so the residualization slope is undefined")
    b = float(sc @ fc) / var
    return sc - b * fc, b


# ------------------------------------------------------------------------------------ cluster bootstrap
@dataclass(frozen=True)
class BootstrapResult:
    """A point estimate with its percentile cluster-bootstrap CI (spec "Confidence intervals").

    n: rows (or pairs) behind the estimate; n_undefined: resamples where the statistic was undefined
    (e.g. no pair or no GT drawn); they are left out of the percentiles.
    """

    estimate: float
    ci_low: float
    ci_high: float
    seed: int
    n_resamples: int
    n: int
    n_undefined: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def _bootstrap(on_draws: Callable[[np.ndarray], np.ndarray], estimate: float, n_clusters: int, n: int,
               n_resamples: int, seed: int, percentiles: tuple[float, float]) -> BootstrapResult:
    """The resampling loop shared by every bootstrap: chunks of [b, C] drawn cluster indices -> values."""
    if isinstance(n_clusters, bool) or int(n_clusters) != n_clusters or n_clusters < 1:
        raise ValueError(f"n_clusters: must be a positive integer, got {n_clusters!r}")
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples: must be a positive integer, got {n_resamples!r}")
    lo, hi = percentiles
    if not 0 <= lo < hi <= 100:
        raise ValueError(f"percentiles: need 0 <= low < high <= 100, got {percentiles!r}")
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_ELEMENTS // n_clusters)
    values = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        values[start:start + b] = on_draws(rng.integers(0, n_clusters, size=(b, n_clusters), dtype=np.int32))
    ok = ~np.isnan(values)
    ci = np.percentile(values[ok], [lo, hi]) if ok.any() else (np.nan, np.nan)
    return BootstrapResult(float(estimate), float(ci[0]), float(ci[1]), int(seed), int(n_resamples), int(n),
                           int((~ok).sum()))


def cluster_bootstrap(statistic: Callable[[np.ndarray], np.ndarray], n_clusters: int, *, n: int,
                      n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                      percentiles: tuple[float, float] = DEFAULT_PERCENTILES) -> BootstrapResult:
    """Percentile cluster bootstrap of `statistic`, a function of cluster counts [B, C] -> [B].

    A resample draws C clusters with replacement; its counts per cluster (a multinomial draw) come from
    ``bincount`` of the drawn indices.  The point estimate is the statistic at counts of all ones.
    """
    def on_draws(d: np.ndarray) -> np.ndarray:
        b = d.shape[0]
        flat = (d + (np.arange(b, dtype=np.int64) * n_clusters)[:, None]).ravel()
        return statistic(np.bincount(flat, minlength=b * n_clusters).reshape(b, n_clusters).astype(float))

    estimate = float(np.asarray(statistic(np.ones((1, n_clusters))))[0])
    return _bootstrap(on_draws, estimate, n_clusters, n, n_resamples, seed, percentiles)


def ratio_bootstrap(num, den, *, n: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                    percentiles: tuple[float, float] = DEFAULT_PERCENTILES) -> BootstrapResult:
    """Bootstrap of sum(num) / sum(den) over clusters (num, den: per-cluster totals).

    Same resamples as :func:`cluster_bootstrap` with the same seed, but a ratio of per-cluster sums needs
    no counts: it gathers the drawn clusters' totals directly, about twice as fast.
    """
    nu = as_vector("num", num)
    de = as_vector("den", den, n=nu.shape[0], ref="num")
    return _bootstrap(lambda d: _safe_ratio(np.take(nu, d).sum(axis=1), np.take(de, d).sum(axis=1)),
                      float(_safe_ratio(nu.sum(), de.sum())), nu.shape[0], n, n_resamples, seed, percentiles)


def auc_bootstrap(scores, has_behavior, group, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                  percentiles: tuple[float, float] = DEFAULT_PERCENTILES) -> BootstrapResult:
    """Within-group AUC with a cluster bootstrap over groups (every group is a cluster; n = pairs).

    The per-group wins/ties/pairs are counted once; a resample only sums the drawn groups' counts.
    """
    gp = group_pairs(scores, has_behavior, group)
    if gp.n_pairs == 0:
        raise ValueError("has_behavior: no group holds both a behavior and a non-behavior rollout (0 pairs)")
    return ratio_bootstrap(gp.wins + gp.ties / 2, gp.pairs, n=gp.n_pairs, n_resamples=n_resamples,
                           seed=seed, percentiles=percentiles)


def paired_auc_difference_bootstrap(scores_a, scores_b, has_behavior, group, *,
                                    n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                                    percentiles: tuple[float, float] = DEFAULT_PERCENTILES) -> BootstrapResult:
    """Within-group AUC(scores_a) - AUC(scores_b), paired: both on the same group resamples (n = pairs).

    Both scores rank the same (behavior, non-behavior) sibling pairs, so per group the difference of the
    credits (wins + ties/2) over the same pair count is a ratio of per-cluster sums: a resample gives
    exactly AUC_a - AUC_b on its drawn groups, and with the same seed it draws the same groups as
    :func:`auc_bootstrap` does for either score alone.
    """
    a = as_vector("scores_a", scores_a)
    b = as_vector("scores_b", scores_b, n=a.shape[0], ref="scores_a")
    ga, gb = group_pairs(a, has_behavior, group), group_pairs(b, has_behavior, group)
    if ga.n_pairs == 0:
        raise ValueError("has_behavior: no group holds both a behavior and a non-behavior rollout (0 pairs)")
    num = (ga.wins + ga.ties / 2) - (gb.wins + gb.ties / 2)
    return ratio_bootstrap(num, ga.pairs, n=ga.n_pairs, n_resamples=n_resamples, seed=seed,
                           percentiles=percentiles)


def residualized_auc_bootstrap(scores, fluency, has_behavior, group, **kw) -> BootstrapResult:
    """Within-group AUC of the fluency residual (slope fitted once on all rows), bootstrap over groups."""
    residual, _ = residualize(scores, fluency, group)
    return auc_bootstrap(residual, has_behavior, group, **kw)


class WeightedRanking:
    """precision@|GT| and chance of any cluster (step) resample without re-sorting.

    With count c_s per step, the weighted number of rows in the first j tie blocks is
    sum_s c_s * N_s(j), where N_s(j) comes from one binary search in the rows sorted by (step, block).
    A vectorized bisection over j (log2(blocks) rounds of [B, C] look-ups) finds the block that straddles
    the cut k = sum_s c_s * GT_s; the credit then follows spec "Tie-aware precision@k".
    """

    def __init__(self, scores: np.ndarray, is_gt: np.ndarray, cidx: np.ndarray, n_clusters: int):
        _, block = np.unique(-np.asarray(scores, float), return_inverse=True)
        g = np.asarray(is_gt, float)
        self.n_blocks = nb = int(block.max() + 1)
        order = np.lexsort((block, cidx))
        self._offset = np.arange(n_clusters, dtype=np.int64) * nb
        self._keys = cidx[order] * nb + block[order]
        self._cum_gt = np.concatenate([[0.0], np.cumsum(g[order])])
        self._start = np.searchsorted(self._keys, self._offset)
        self.gt_per_cluster = np.bincount(cidx, weights=g, minlength=n_clusters)
        self.rows_per_cluster = np.bincount(cidx, minlength=n_clusters).astype(float)

    def _prefix(self, w: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weighted (rows, GT) in blocks < j[b] for each resample b."""
        pos = np.searchsorted(self._keys, self._offset[None, :] + j[:, None])
        rows = ((pos - self._start[None, :]) * w).sum(axis=1)
        gt = ((self._cum_gt[pos] - self._cum_gt[self._start][None, :]) * w).sum(axis=1)
        return rows, gt

    def precision(self, w: np.ndarray) -> np.ndarray:
        """precision@|GT| of each resample (rows of w, counts per cluster); NaN where it holds no GT."""
        k = w @ self.gt_per_cluster
        lo, hi = np.zeros(w.shape[0], np.int64), np.full(w.shape[0], self.n_blocks - 1, np.int64)
        for _ in range(int(np.ceil(np.log2(self.n_blocks))) if self.n_blocks > 1 else 0):
            mid = (lo + hi) // 2  # smallest j with rows(blocks <= j) >= k lies in [lo, hi]
            reached = self._prefix(w, mid + 1)[0] >= k
            hi, lo = np.where(reached, mid, hi), np.where(reached, lo, mid + 1)
        rows0, gt0 = self._prefix(w, lo)
        rows1, gt1 = self._prefix(w, lo + 1)
        credit = gt0 + (gt1 - gt0) * _safe_ratio(k - rows0, rows1 - rows0)
        return _safe_ratio(credit, k)

    def chance(self, w: np.ndarray) -> np.ndarray:
        return _safe_ratio(w @ self.gt_per_cluster, w @ self.rows_per_cluster)


def _rankings(is_gt, step, **named_scores) -> tuple[list[WeightedRanking], int, int]:
    g = as_vector("is_gt", is_gt, kind="bool")
    st = as_vector("step", step, n=g.shape[0], ref="is_gt", kind="int")
    _nonempty("is_gt", g)
    if not g.any():
        raise ValueError("is_gt: has no positive row, so precision@|GT| is undefined")
    cidx, nc = cluster_index(st, "step")
    out = [WeightedRanking(as_vector(k, v, n=g.shape[0], ref="is_gt"), g, cidx, nc)
           for k, v in named_scores.items()]
    return out, nc, int(g.shape[0])


def precision_bootstrap(scores, is_gt, step, **kw) -> BootstrapResult:
    """precision@|GT| with a cluster bootstrap over steps (k = |GT| of each resample)."""
    (r,), nc, n = _rankings(is_gt, step, scores=scores)
    return cluster_bootstrap(r.precision, nc, n=n, **kw)


def precision_difference_bootstrap(scores, other_scores, is_gt, step, **kw) -> BootstrapResult:
    """precision@|GT|(scores) - precision@|GT|(other_scores), paired: both on the same step resamples."""
    (a, b), nc, n = _rankings(is_gt, step, scores=scores, other_scores=other_scores)
    return cluster_bootstrap(lambda w: a.precision(w) - b.precision(w), nc, n=n, **kw)


def normalized_gain_bootstrap(scores, is_gt, step, **kw) -> BootstrapResult:
    """Normalized gain with chance and ceiling recomputed in each step resample (NaN at zero headroom)."""
    g = as_vector("is_gt", is_gt, kind="bool")
    st = as_vector("step", step, n=g.shape[0], ref="is_gt", kind="int")
    (a, c), nc, n = _rankings(g, st, scores=scores, ceiling=_step_density(g, st))

    def gain(w: np.ndarray) -> np.ndarray:
        ch = a.chance(w)
        return _safe_ratio(a.precision(w) - ch, c.precision(w) - ch)

    return cluster_bootstrap(gain, nc, n=n, **kw)


def mean_bootstrap(x, cluster=None, **kw) -> BootstrapResult:
    """Pooled mean of x with a cluster bootstrap (each row its own cluster unless `cluster` is given)."""
    v = as_vector("x", x)
    _nonempty("x", v)
    cidx, nc = (np.arange(v.shape[0]), v.shape[0]) if cluster is None else \
        cluster_index(as_vector("cluster", cluster, n=v.shape[0], ref="x", kind="int"))
    return ratio_bootstrap(np.bincount(cidx, weights=v, minlength=nc), np.bincount(cidx, minlength=nc),
                           n=v.shape[0], **kw)


def paired_difference_bootstrap(a, b, cluster=None, **kw) -> BootstrapResult:
    """Mean of a - b (paired rows) with a cluster bootstrap, responses as clusters by default."""
    x = as_vector("a", a)
    y = as_vector("b", b, n=x.shape[0], ref="a")
    return mean_bootstrap(x - y, cluster, **kw)


# ------------------------------------------------------------------------------ correlation, variance
def spearman(a, b) -> float:
    """Spearman rank correlation (average ranks for ties): Pearson correlation of the ranks."""
    x = as_vector("a", a)
    y = as_vector("b", b, n=x.shape[0], ref="a")
    if x.shape[0] < 2:
        raise ValueError(f"a: needs at least 2 rows for a correlation, got {x.shape[0]}")
    for name, v in (("a", x), ("b", y)):
        if np.all(v == v[0]):
            raise ValueError(f"{name}: is constant, so its rank correlation is undefined")
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


def pairwise_spearman(score_matrix) -> np.ndarray:
    """Spearman correlation of every pair of rows of [D, M] scores (same candidates, D draws' targets)."""
    m = np.asarray(score_matrix, float)
    if m.ndim != 2 or m.shape[0] < 2:
        raise ValueError(f"score_matrix: expected [D >= 2, M] scores, got shape {m.shape}")
    return np.array([spearman(m[i], m[j]) for i in range(m.shape[0]) for j in range(i + 1, m.shape[0])])


def variance_shares(values, seed) -> tuple[float, float]:
    """(share of the variance of `values` between seeds, share within seeds i.e. between draws).

    One-way decomposition: total SS = between-seed SS + within-seed SS. (NaN, NaN) when all values agree.
    """
    v = as_vector("values", values)
    _nonempty("values", v)
    sidx, ns = cluster_index(as_vector("seed", seed, n=v.shape[0], ref="values", kind="int"), "seed")
    means = np.bincount(sidx, weights=v, minlength=ns) / np.bincount(sidx, minlength=ns)
    total = float(((v - v.mean()) ** 2).sum())
    if total == 0:
        return float("nan"), float("nan")
    between = float(((means[sidx] - v.mean()) ** 2).sum())
    return between / total, 1.0 - between / total
