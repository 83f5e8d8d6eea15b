"""Hand-computed cases for bt_bench.checklist.metrics and .bootstrap (spec: checklist.md, "Metrics")."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.stats import spearmanr

from bt_bench.checklist import bootstrap, metrics
# ------------------------------------------------------------------------------------ precision@k
def test_precision_tie_block_straddles_cut():
    # |GT| = 3: block {5} credits 1; block {4,4,4} (1 GT) straddles with 2 of 3 slots: 1 * 2/3.
    scores, gt = [5, 4, 4, 4, 1], [1, 1, 0, 0, 1]
    assert metrics.precision_at_k(scores, gt) == pytest.approx((1 + 2 / 3) / 3)
    assert metrics.precision_at_k(scores, gt, k=1) == 1.0
    assert metrics.precision_at_k(scores, gt, k=4) == pytest.approx(2 / 4)  # the whole tie block fits
    assert metrics.precision_at_k(scores, gt, k=5) == pytest.approx(3 / 5)


def test_precision_order_inside_tie_block_does_not_matter():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, 50).astype(float)
    gt = rng.random(50) < 0.3
    p = metrics.precision_at_k(scores, gt)
    for _ in range(5):
        perm = rng.permutation(50)
        assert metrics.precision_at_k(scores[perm], gt[perm]) == pytest.approx(p)


def test_precision_all_tied_equals_chance():
    gt = [1, 0, 0, 0]
    assert metrics.precision_at_k(np.zeros(4), gt) == pytest.approx(0.25) == metrics.chance(gt)


def test_precision_rejects_bad_k_and_inputs():
    with pytest.raises(ValueError, match="^k: 6 is larger"):
        metrics.precision_at_k([1, 2, 3, 4, 5], [1, 0, 0, 0, 0], k=6)
    with pytest.raises(ValueError, match="^k:"):
        metrics.precision_at_k([1, 2], [1, 0], k=0)
    with pytest.raises(ValueError, match="^is_gt: has no positive"):
        metrics.precision_at_k([1, 2], [0, 0])
    with pytest.raises(ValueError, match="^is_gt: length 3 differs"):
        metrics.precision_at_k([1, 2], [0, 1, 0])
    with pytest.raises(ValueError, match="^scores: expected a 1-D"):
        metrics.precision_at_k(np.zeros((2, 2)), [0, 1])
    with pytest.raises(ValueError, match="^scores: contains NaN"):
        metrics.precision_at_k([np.nan, 1.0], [0, 1])
    with pytest.raises(ValueError, match="^is_gt: expected booleans"):
        metrics.precision_at_k([1.0, 2.0], [0.5, 1])


# ------------------------------------------------------------------- chance, ceiling, lift, gain
def _three_steps():
    step = np.repeat([0, 1, 2], 4)
    gt = np.array([1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], bool)  # densities 0.5, 0.25, 0
    return step, gt


def test_ceiling_orders_steps_by_density():
    step, gt = _three_steps()
    # k = 3; the densest step (4 rows, 2 GT) straddles the cut: 2 * 3/4 = 1.5 -> 0.5
    assert metrics.ceiling(gt, step) == pytest.approx(0.5)
    assert metrics.ceiling(gt, step, k=8) == pytest.approx(3 / 8)
    m = metrics.ranking_metrics(np.arange(12)[::-1], gt, step)  # scores: row 0 highest
    assert (m.precision, m.chance, m.ceiling) == pytest.approx((2 / 3, 0.25, 0.5))
    assert m.lift == pytest.approx((2 / 3) / 0.25)
    assert m.headroom == pytest.approx(0.25)
    assert m.normalized_gain == pytest.approx((2 / 3 - 0.25) / 0.25)  # > 1: a rollout-level ranking
    assert (m.k, m.n, m.n_gt) == (3, 12, 3)


def test_ceiling_equal_density_steps_tie():
    step = np.repeat([0, 1], 2)
    gt = np.array([1, 0, 1, 0], bool)
    assert metrics.ceiling(gt, step) == pytest.approx(0.5)  # one tie block of 4 rows, 2 GT, k = 2


def test_lift_headroom_gain_scalars():
    assert metrics.lift(0.4, 0.1) == pytest.approx(4.0)
    assert metrics.headroom(0.5, 0.2) == pytest.approx(0.3)
    assert metrics.normalized_gain(0.35, 0.2, 0.5) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="^ceiling:"):
        metrics.normalized_gain(0.3, 0.2, 0.2)
    with pytest.raises(ValueError, match="^chance:"):
        metrics.lift(0.3, 0.0)


def test_window_restriction_recomputes_chance_ceiling_k():
    step = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    gt = np.array([1, 0, 0, 1, 1, 0, 1, 0], bool)
    nonzero = np.array([1, 1, 0, 1, 1, 1, 1, 1], bool)
    scores = np.array([0.1, 0.9, 5, 0.8, 0.7, 0.2, 9, 9])
    assert metrics.window_mask(step, 2, nonzero).tolist() == [1, 1, 0, 1, 1, 1, 0, 0]
    m = metrics.window_metrics(scores, gt, step, 2, nonzero)
    # window rows: (0.1,GT) (0.9,-) (0.8,GT) (0.7,GT) (0.2,-); k = 3 -> top 0.9, 0.8, 0.7 -> 2 GT
    assert (m.k, m.n, m.chance, m.precision) == pytest.approx((3, 5, 0.6, 2 / 3))
    # steps: step 1 density 2/3 (3 rows) fits whole (2 GT), step 0 (1/2) gives 1 * 0/2 -> 2/3
    assert m.ceiling == pytest.approx(2 / 3)


def test_empty_window_and_bad_W_rejected():
    step, nonzero = np.array([3, 4]), np.array([True, True])
    with pytest.raises(ValueError, match="^nonzero: the window .* is empty"):
        metrics.window_metrics([1.0, 2.0], [1, 0], step, 2, nonzero)
    with pytest.raises(ValueError, match="^W:"):
        metrics.window_mask(step, 0, nonzero)
    with pytest.raises(ValueError, match="^nonzero: length 1"):
        metrics.window_mask(step, 2, [True])


# ------------------------------------------------------------------------------ within-group AUC
def _auc_case():
    # group 0: behavior [3, 1] vs non [2, 1]: wins (3>2, 3>1), tie (1=1), loss (1<2) -> 2.5/4
    # group 1: behavior only -> no pair; group 2: behavior [5] vs non [4, 6] -> 1/2
    scores = np.array([3, 1, 2, 1, 7, 8, 5, 4, 6], float)
    beh = np.array([1, 1, 0, 0, 1, 1, 1, 0, 0], bool)
    group = np.array([0, 0, 0, 0, 1, 1, 2, 2, 2])
    return scores, beh, group


def test_within_group_auc_hand_case():
    scores, beh, group = _auc_case()
    gp = metrics.group_pairs(scores, beh, group)
    assert gp.wins.tolist() == [2, 0, 1] and gp.ties.tolist() == [1, 0, 0] and gp.pairs.tolist() == [4, 0, 2]
    assert metrics.within_group_auc(scores, beh, group) == pytest.approx(3.5 / 6)
    assert metrics.count_pairs(beh, group) == 6
    # the pairless group contributes nothing: dropping it changes nothing
    keep = group != 1
    assert metrics.within_group_auc(scores[keep], beh[keep], group[keep]) == pytest.approx(3.5 / 6)


def test_within_group_auc_matches_brute_force_with_ties():
    rng = np.random.default_rng(1)
    group = rng.integers(0, 30, 300)
    beh = rng.random(300) < 0.4
    scores = rng.integers(0, 5, 300).astype(float)  # many ties
    wins = ties = pairs = 0
    for g in np.unique(group):
        a, b = scores[(group == g) & beh][:, None], scores[(group == g) & ~beh][None, :]
        wins, ties, pairs = wins + (a > b).sum(), ties + (a == b).sum(), pairs + a.size * b.size
    assert metrics.within_group_auc(scores, beh, group) == pytest.approx((wins + ties / 2) / pairs)


def test_auc_all_tied_is_half_and_no_pairs_rejected():
    beh, group = np.array([1, 0, 1, 0], bool), np.array([0, 0, 1, 1])
    assert metrics.within_group_auc(np.ones(4), beh, group) == 0.5
    with pytest.raises(ValueError, match="^has_behavior: no group"):
        metrics.within_group_auc([1.0, 2.0], [True, False], [0, 1])


def test_residualize_hand_case():
    scores, fluency, group = [1, 3, 2, 2], [0, 2, 1, 3], [0, 0, 1, 1]
    # centred: scores [-1, 1, 0, 0], fluency [-1, 1, -1, 1]; b = 2 / 4
    res, b = metrics.residualize(scores, fluency, group)
    assert b == pytest.approx(0.5)
    assert res.tolist() == pytest.approx([-0.5, 0.5, 0.5, -0.5])
    with pytest.raises(ValueError, match="^fluency: constant"):
        metrics.residualize(scores, [1, 1, 5, 5], group)


def test_residualizing_fluency_itself_leaves_nothing():
    rng = np.random.default_rng(2)
    group, beh, f = np.repeat(np.arange(40), 8), rng.random(320) < 0.5, rng.normal(size=320)
    res = bootstrap.residualized_auc_bootstrap(f, f, beh, group, n_resamples=200)
    assert res.estimate == pytest.approx(0.5, abs=1e-9)


# ----------------------------------------------------------------------------------- bootstrap
def test_bootstrap_reports_seed_and_is_reproducible():
    scores, beh, group = _auc_case()
    a = bootstrap.auc_bootstrap(scores, beh, group, n_resamples=300, seed=7)
    b = bootstrap.auc_bootstrap(scores, beh, group, n_resamples=300, seed=7)
    assert a == b and (a.seed, a.n_resamples, a.n) == (7, 300, 6)
    assert a.estimate == pytest.approx(3.5 / 6)
    assert a.ci_low <= a.estimate <= a.ci_high
    # resamples that draw only the pairless group are undefined and left out
    assert 0 < a.n_undefined < 300
    x = np.random.default_rng(0).normal(size=200)
    m7 = bootstrap.mean_bootstrap(x, n_resamples=300, seed=7)
    m8 = bootstrap.mean_bootstrap(x, n_resamples=300, seed=8)
    assert m7.estimate == m8.estimate and m7.ci_low != m8.ci_low


def test_ratio_bootstrap_equals_counts_bootstrap():
    """The gather fast path and the generic counts path draw the same resamples."""
    rng = np.random.default_rng(3)
    num, den = rng.random(50), rng.random(50) + 0.5
    fast = bootstrap.ratio_bootstrap(num, den, n=50, n_resamples=400, seed=5)
    slow = bootstrap.cluster_bootstrap(lambda w: (w @ num) / (w @ den), 50, n=50, n_resamples=400, seed=5)
    assert (fast.estimate, fast.ci_low, fast.ci_high) == pytest.approx((slow.estimate, slow.ci_low, slow.ci_high))


def test_one_cluster_gives_degenerate_ci_and_validation():
    r = bootstrap.mean_bootstrap([1.0, 2.0, 3.0], cluster=[0, 0, 0], n_resamples=50)
    assert (r.estimate, r.ci_low, r.ci_high) == pytest.approx((2.0, 2.0, 2.0))
    with pytest.raises(ValueError, match="^percentiles:"):
        bootstrap.mean_bootstrap([1.0, 2.0], percentiles=(97.5, 2.5))
    with pytest.raises(ValueError, match="^n_resamples:"):
        bootstrap.mean_bootstrap([1.0, 2.0], n_resamples=0)
    with pytest.raises(ValueError, match="^x: is empty"):
        bootstrap.mean_bootstrap([])


def test_weighted_precision_matches_repeated_rows():
    """The bisection over tie blocks equals precision@|GT| of the resample written out row by row."""
    rng = np.random.default_rng(4)
    step = np.repeat(np.arange(6), 10)
    gt = rng.random(60) < 0.3
    scores = rng.integers(0, 8, 60).astype(float)  # ties within and across steps
    cidx, nc = metrics.cluster_index(step)
    wr = bootstrap.WeightedRanking(scores, gt, cidx, nc)
    counts = np.array([[1, 1, 1, 1, 1, 1], [2, 0, 0, 3, 1, 0], [0, 0, 6, 0, 0, 0], [0, 1, 0, 2, 0, 3]], float)
    got = wr.precision(counts)
    for row, value in zip(counts, got):
        rep = np.repeat(np.arange(60), row[step].astype(int))
        assert value == pytest.approx(metrics.precision_at_k(scores[rep], gt[rep]))


def test_precision_bootstraps_point_estimates():
    step, gt = _three_steps()
    scores = np.arange(12)[::-1].astype(float)
    assert bootstrap.precision_bootstrap(scores, gt, step, n_resamples=100).estimate == pytest.approx(2 / 3)
    d = bootstrap.precision_difference_bootstrap(scores, -scores, gt, step, n_resamples=100)
    assert d.estimate == pytest.approx(2 / 3 - metrics.precision_at_k(-scores, gt))
    g = bootstrap.normalized_gain_bootstrap(scores, gt, step, n_resamples=100)
    assert g.estimate == pytest.approx(metrics.ranking_metrics(scores, gt, step).normalized_gain)


def test_normalized_gain_bootstrap_equals_the_direct_cluster_bootstrap():
    """The memoized gain (precision values of both rankings, chance on the same draws) gives exactly the values the
    direct statistic gives under cluster_bootstrap: same estimate, same CI, same undefined count."""
    rng = np.random.default_rng(3)
    step = np.repeat(np.arange(9), 7)
    gt = rng.random(step.shape[0]) < 0.3
    gt[step == 4] = False  # a step with no GT: resamples differ in k, chance and ceiling
    scores = gt + rng.normal(0, 0.8, step.shape[0])
    scores[:5] = scores[0]  # ties across a step
    (a, c), nc, n = bootstrap._rankings(gt, step, scores=scores, ceiling=bootstrap._step_density(gt, step))

    def gain(w):
        ch = a.chance(w)
        return bootstrap._safe_ratio(a.precision(w) - ch, c.precision(w) - ch)

    want = bootstrap.cluster_bootstrap(gain, nc, n=n, n_resamples=400, seed=11)
    got = bootstrap.normalized_gain_bootstrap(scores, gt, step, n_resamples=400, seed=11)
    assert got == want


def _paired_auc_case():
    """Group 0 (2 behavior, 2 not): a wins all 4 pairs, b wins 1 (3 > 2).  Group 1 (2 behavior, 2 not):
    a: 1 vs 1 tie, 1 vs 0 win (twice) -> 3; b: 0 loses twice, 2 wins twice -> 2.  Group 2: no pair.
    AUC(a) = (4 + 3) / 8 = 0.875, AUC(b) = (1 + 2) / 8 = 0.375; per-group differences 3/4 and 1/4."""
    a = np.array([4, 3, 2, 1, 1, 1, 1, 0, 5, 6], float)
    b = np.array([1, 3, 2, 4, 0, 2, 1, 1, 6, 5], float)
    beh = np.array([1, 1, 0, 0, 1, 1, 0, 0, 0, 0], bool)
    group = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    return a, b, beh, group


def test_paired_auc_difference_hand_case():
    a, b, beh, group = _paired_auc_case()
    assert metrics.within_group_auc(a, beh, group) == 0.875
    assert metrics.within_group_auc(b, beh, group) == 0.375
    d = bootstrap.paired_auc_difference_bootstrap(a, b, beh, group, n_resamples=300, seed=3)
    assert d.estimate == 0.875 - 0.375 == 0.5 and d.n == 8 and (d.seed, d.n_resamples) == (3, 300)
    assert d.ci_low <= d.estimate <= d.ci_high
    # a resample's difference is a mean of the drawn groups' 3/4 and 1/4, so it lies in [1/4, 3/4]
    assert 0.25 <= d.ci_low and d.ci_high <= 0.75
    # the same group resamples as auc_bootstrap with the same seed: the same draws leave it undefined
    # (only the pairless group drawn: about 1/27 of them)
    ra = bootstrap.auc_bootstrap(a, beh, group, n_resamples=300, seed=3)
    assert d.n_undefined == ra.n_undefined > 0
    # identical inputs: difference 0 in every resample
    z = bootstrap.paired_auc_difference_bootstrap(a, a, beh, group, n_resamples=300, seed=3)
    assert (z.estimate, z.ci_low, z.ci_high) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="^scores_b: length 3 differs"):
        bootstrap.paired_auc_difference_bootstrap(a, b[:3], beh, group)
    with pytest.raises(ValueError, match="^has_behavior: no group"):
        bootstrap.paired_auc_difference_bootstrap([1.0, 2.0], [2.0, 1.0], [True, False], [0, 1])


def test_paired_auc_difference_matches_brute_force_resamples():
    """Each resample equals AUC(a) - AUC(b) recomputed on the drawn groups written out row by row."""
    rng = np.random.default_rng(6)
    group = np.repeat(np.arange(12), 6)
    beh = rng.random(72) < 0.5
    a, b = rng.integers(0, 4, 72).astype(float), rng.normal(size=72)
    B, C = 200, 12
    draws = np.random.default_rng(9).integers(0, C, size=(B, C), dtype=np.int32)  # the stream of seed 9
    values = []
    for d in draws:
        rows = np.concatenate([np.flatnonzero(group == c) for c in d])
        new_group = np.repeat(np.arange(C), 6)  # a group drawn twice counts twice
        if metrics.count_pairs(beh[rows], new_group) == 0:
            continue
        values.append(metrics.within_group_auc(a[rows], beh[rows], new_group)
                      - metrics.within_group_auc(b[rows], beh[rows], new_group))
    r = bootstrap.paired_auc_difference_bootstrap(a, b, beh, group, n_resamples=B, seed=9)
    auc_a, auc_b = metrics.within_group_auc(a, beh, group), metrics.within_group_auc(b, beh, group)
    assert r.estimate == pytest.approx(auc_a - auc_b)
    assert (r.ci_low, r.ci_high) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])))
    assert r.n_undefined == B - len(values)


def test_paired_difference_and_mean():
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 1.0, 1.0, 1.5])
    r = bootstrap.paired_difference_bootstrap(a, b, cluster=[0, 0, 1, 1], n_resamples=200)
    assert r.estimate == pytest.approx(1.5) and r.n == 4
    assert r.ci_low == pytest.approx(0.75) and r.ci_high == pytest.approx(2.25)  # cluster means 0.75, 2.25
    with pytest.raises(ValueError, match="^b: length 2 differs"):
        bootstrap.paired_difference_bootstrap(a, b[:2])


# -------------------------------------------------------------------------- Spearman, variance
def test_spearman_hand_case_and_scipy():
    assert metrics.spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 5, 40), rng.integers(0, 5, 40)
    assert metrics.spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    with pytest.raises(ValueError, match="^b: is constant"):
        metrics.spearman([1, 2, 3], [1, 1, 1])
    rho = metrics.pairwise_spearman([[1, 2, 3], [1, 3, 2], [3, 2, 1]])
    assert rho.tolist() == pytest.approx([0.5, -1.0, -0.5])


def test_variance_shares():
    assert metrics.variance_shares([1, 1, 3, 3], [0, 0, 1, 1]) == pytest.approx((1.0, 0.0))
    assert metrics.variance_shares([1, 3, 1, 3], [0, 0, 1, 1]) == pytest.approx((0.0, 1.0))
    assert metrics.variance_shares([1, 2, 3, 6], [0, 0, 1, 1]) == pytest.approx((9 / 14, 5 / 14))
    assert all(np.isnan(metrics.variance_shares([2, 2], [0, 1])))


# ------------------------------------------------------------------------------------- speed
def test_bootstrap_speed_on_1e5_rows():
    """5000 resamples over 1e5 rows (AUC: 12,500 groups of 8; precision: 100 steps); prints resamples/s."""
    rng = np.random.default_rng(6)
    n = 100_000
    group, beh = np.repeat(np.arange(n // 8), 8), rng.random(n) < 0.5
    t = time.perf_counter()
    auc = bootstrap.auc_bootstrap(rng.normal(size=n) + beh, beh, group)
    t_auc = time.perf_counter() - t
    step, gt = np.repeat(np.arange(100), n // 100), rng.random(n) < 0.2
    t = time.perf_counter()
    prec = bootstrap.precision_bootstrap(rng.normal(size=n) + gt, gt, step)
    t_prec = time.perf_counter() - t
    print(f"\nAUC bootstrap: {5000 / t_auc:.0f} resamples/s ({t_auc:.2f} s); "
          f"precision bootstrap: {5000 / t_prec:.0f} resamples/s ({t_prec:.2f} s)")
    assert auc.n_resamples == prec.n_resamples == 5000 and auc.n_undefined == prec.n_undefined == 0
    assert auc.ci_low < auc.estimate < auc.ci_high and prec.ci_low < prec.estimate < prec.ci_high
    assert t_auc < 30 and t_prec < 30  # measured ~1 s each on 2 cores; a loose guard against a regression
