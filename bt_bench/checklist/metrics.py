"""The metrics of the bt-bench checklist (docs/checklist.md, section "Metrics"): tie-aware precision@k, chance,
ceiling, lift, headroom, normalized gain, the window restriction, the within-group AUC, fluency residualization,
Spearman correlation and the seed/draw variance shares. Pure numpy/scipy; their confidence intervals are in
:mod:`bt_bench.checklist.bootstrap`.

Every public function takes numpy arrays, validates shapes and lengths, and raises ``ValueError`` whose
message starts with the name of the offending argument.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import rankdata


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
