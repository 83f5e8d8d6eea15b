"""The fixture self-check "sketch ranking" (bt_bench.checklist.sketch_verdicts over bt_bench.fixture.rank_fidelity's
scores, checks/test_sketch_ranking.py): its scorings are the built-ins' maths and depend on inner products only (so a
sketch and the exact gradients score the same estimator), its unit rule and judge are hand-checked, and on the cached
default fixture the stored sketches pass while the same sketches swapped between the candidates of a group fail."""

from __future__ import annotations

import numpy as np
import pytest

from bt_bench.checklist import sketch_verdicts as V
from bt_bench.checklist.base import Thresholds
from bt_bench.fixture import rank_fidelity as R


def _scores(seed: int = 0, n: int = 24, d: int = 40):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=d)


def test_trak_scoring_is_the_damped_kernel_of_inner_products():
    """score = G (G^T G + lam I)^-1 t = (K + lam I)^-1 G t with K = G G^T and lam relative to trace(K) / min(n, d):
    unchanged by a rotation of the feature space and by zero-padding it (a sketch's dimension is not the
    gradient's), which the built-in's trace / d damping is not."""
    g, t = _scores()
    s = R.method_scores(g, t)
    K, lam = g @ g.T, 1e-2 * np.trace(g @ g.T) / min(g.shape)
    np.testing.assert_allclose(s["trak"], np.linalg.solve(K + lam * np.eye(len(g)), g @ t), rtol=1e-8)
    np.testing.assert_allclose(s["tracin"], g @ t)
    np.testing.assert_allclose(s["gas"], g @ t / np.linalg.norm(g, axis=1) / np.linalg.norm(t))
    q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(40, 40)))
    wide = np.hstack([g @ q, np.zeros((len(g), 200))]), np.concatenate([t @ q, np.zeros(200)])
    for name, v in R.method_scores(*wide).items():
        np.testing.assert_allclose(v, s[name], rtol=1e-7, atol=1e-10)


def test_compare_draw_reads_within_group_pairs():
    """Two groups; stored flips the order inside group 1 only: AUC 1.0 exact, 0.5 stored (hand count)."""
    has = np.array([1, 0, 1, 0], bool)
    group = np.array([0, 0, 1, 1])
    exact = {m: np.array([2.0, 1.0, 4.0, 3.0]) for m in R.METHODS}
    stored = {m: np.array([2.0, 1.0, 3.0, 4.0]) for m in R.METHODS}
    out = R.compare_draw(stored, exact, has, group)
    assert out["tracin"]["auc_exact"] == 1.0 and out["tracin"]["auc_stored"] == 0.5
    assert out["tracin"]["auc_gap"] == 0.5 and out["tracin"]["spearman"] == pytest.approx(0.8)


def test_a_unit_agrees_only_when_the_verdict_holds_with_the_shift_doubled():
    """sketch_verdicts.unit by hand: same verdict from exact and stored, and with exact + 2 x shift."""
    u = V.unit("fluency_confound", "residualized_auc", 0.5, exact=0.60, stored=0.58)  # doubled 0.56: holds
    assert u["agrees"] and u["verdict_exact"] and u["shift"] == pytest.approx(-0.02)
    u = V.unit("fluency_confound", "residualized_auc", 0.5, exact=0.56, stored=0.52)  # doubled 0.48: nearly flips
    assert not u["agrees"] and u["verdict_stored"] and not u["verdict_doubled"]
    u = V.unit("fluency_confound", "residualized_auc", 0.5, exact=0.52, stored=0.49)  # flips
    assert not u["agrees"] and u["verdict_exact"] != u["verdict_stored"]
    assert V.unit("x", "residualized_auc", 0.5, exact=0.2, stored=0.3)["agrees"]  # far from the bar: all three fail
    assert not V.unit("x", "residualized_auc", 0.5, exact=0.2, stored=0.45)["agrees"]  # doubled 0.7: it would flip
    # draw stability is judged as check 4 does: >= the bar, not >
    assert V.unit("seed_draw_variance", "draw_stability", 0.5, exact=0.5, stored=0.5)["verdict_exact"]


def _scored(exact: list[float], stored: list[float], seed: int = 0) -> dict:
    """A fixture_scores report with one saturated draw: 20 groups of 8, the first half of each group behavior."""
    n = len(exact)
    entry = {"kind": "saturated", "draw": 0, "has_behavior": [i % 8 < 4 for i in range(n)],
             "group": [i // 8 for i in range(n)], "fluency": [float(i % 3) for i in range(n)],
             "exact": {"in_context": {"tracin": exact}, "no_behavior": {"tracin": [0.0] * n}},
             "stored": {"0": {"in_context": {"tracin": stored}, "no_behavior": {"tracin": [0.0] * n}}}}
    return {"seed": seed, "draws": [entry], "not_applicable": None}


def test_judge_names_the_unit_whose_verdict_the_sketch_decides():
    """Exact scores that separate the behavior perfectly; stored ones equal (PASS), and stored ones with each
    group's order reversed (the sketch flips check 2's and check 7's verdicts: the judge names them)."""
    n = 160
    exact = [float(1 + (i % 8 < 4)) + 0.01 * i for i in range(n)]
    th = Thresholds(min_pairs=10)
    good = {"seed": 0, "units": V.fixture_units(_scored(exact, exact), th), "not_applicable": None}
    assert good["units"] and all(u["agrees"] for u in good["units"]) and V.judge([good]) == []
    flipped = [-x for x in exact]
    bad = {"seed": 3, "units": V.fixture_units(_scored(exact, flipped, seed=3), th), "not_applicable": None}
    lines = V.judge([good, bad])
    assert lines and all("seed 3 saturated draw 0, sketch seed 0" in ln and "flips the verdict" in ln for ln in lines)
    assert {ln.split()[1] for ln in lines} >= {"fluency_confound", "target_dependence"}
    assert V.judge([]) == ["no draw-level statistic could be compared"]
    na = {"seed": 0, "units": [], "not_applicable": "the model is wider than the exact preset"}
    assert V.judge([na]) == [] and V.key_figure([na]).startswith("not applicable")


# ----------------------------------------------------------------------------------------- the real fixture
def test_default_fixture_passes_and_noisy_sketches_fail(tiny_fixture, monkeypatch):
    """On the cached default fixture (seed 0) every compared verdict agrees; with each row's stored sketch swapped
    with its group neighbour's (sketches that rank a group's candidates in another order) some verdict flips."""
    import torch

    torch.set_num_threads(1)
    cfg = R.RankConfig(draws=2)
    rep = V.fixture_verdicts(tiny_fixture, cfg=cfg)
    assert rep["not_applicable"] is None and rep["units"]
    assert {u["sketch_seed"] for u in rep["units"]} == {str(k) for k in tiny_fixture.sketch_seeds}
    assert {u["kind"] for u in rep["units"]} == {"saturated", "unsaturated"}
    assert V.judge([rep]) == [], V.judge([rep])
    original = type(tiny_fixture).draw

    def noisy(self, kind, d, sketch_seed=None):  # each row's stored sketch swapped with its group neighbour's: sketches
        data = original(self, kind, d, sketch_seed)  # that rank the group's candidates in another order (isotropic noise,
        c = next(iter(data.sketches["checkpoint"]))  # even as large as a row, barely moves an inner product with a fixed
        # target: JL at work)
        g = np.asarray(data.sketches["checkpoint"][c])
        group = np.asarray(self.draw_rows(kind, d)["group"])
        idx = np.arange(len(g))
        for grp in np.unique(group):
            rows = np.flatnonzero(group == grp)
            idx[rows] = np.roll(rows, 1)
        data.sketches["checkpoint"][c] = g[idx]
        return data

    monkeypatch.setattr(type(tiny_fixture), "draw", noisy)
    bad = V.judge([V.fixture_verdicts(tiny_fixture, cfg=cfg)])
    assert bad and all("the verdict" in b for b in bad), bad


def test_draw_stability_of_a_target_without_gradient_is_not_compared():
    """A target whose gradient is exactly zero scores every candidate 0 (exact and sketched alike): no rank
    correlation exists, so the unit is not compared (None) instead of crashing the self-check (seen on bpe_family);
    with scores that vary, the smallest pairwise Spearman (hand-checked: reversed order gives -1)."""
    up, down = [1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]
    assert V._least_spearman({"0": {"tracin": up}, "1": {"tracin": [0.0] * 4}}, "tracin") is None
    assert V._least_spearman({"0": {"tracin": up}, "1": {"tracin": up}, "2": {"tracin": down}}, "tracin") == -1.0
