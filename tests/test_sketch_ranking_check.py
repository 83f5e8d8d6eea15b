"""The fixture self-check "sketch ranking" (bt_bench.fixture.rank_fidelity, checks/test_sketch_ranking.py): its
scorings are the built-ins' maths and depend on inner products only (so a sketch and the exact gradients score the
same estimator), its verdict is hand-checked, and on the cached tiny fixture the stored sketches pass while the same
sketches swapped between the candidates of a group fail."""

from __future__ import annotations

import numpy as np
import pytest

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


def _report(gaps: dict[str, list[float]], rho: dict[str, list[float]], seed: int = 0) -> dict:
    draws = []
    for i in range(len(gaps["tracin"])):
        draws.append({"draw": i, "candidates": 10, "methods": {
            m: {"spearman": rho[m][i], "auc_stored": 0.7, "auc_exact": 0.7 + gaps[m][i], "auc_gap": gaps[m][i]}
            for m in R.METHODS}})
    return {"seed": seed, "draws": draws, "not_applicable": None}


def test_judge_by_hand():
    ok_gap, ok_rho = [0.01, 0.02, 0.03], [0.94, 0.96, 0.99]  # median 0.96, largest gap 0.03: both at the bar
    good = _report({m: ok_gap for m in R.METHODS}, {m: ok_rho for m in R.METHODS})
    assert R.judge([good]) == []
    one_gap = _report({**{m: ok_gap for m in R.METHODS}, "gas": [0.01, 0.031, 0.0]}, {m: ok_rho for m in R.METHODS},
                      seed=4)
    bad = R.judge([good, one_gap])
    assert len(bad) == 1 and bad[0].startswith("gas: within-group AUC") and "seed 4, draw 1" in bad[0]
    low_rho = _report({m: ok_gap for m in R.METHODS}, {**{m: ok_rho for m in R.METHODS}, "tracin": [0.9, 0.94, 0.99]})
    assert R.judge([low_rho]) == ["tracin: median Spearman of stored vs exact scores 0.940 < 0.95 over 3 draws"]
    # TRAK-style scoring is measured and reported, not judged (rank_fidelity.JUDGED says why)
    trak_off = _report({**{m: ok_gap for m in R.METHODS}, "trak": [0.2, 0.0, 0.0]},
                       {**{m: ok_rho for m in R.METHODS}, "trak": [0.1, 0.2, 0.3]})
    assert "trak" not in R.JUDGED and R.judge([trak_off]) == []
    assert "trak rho 0.200, gap 0.200 (reported)" in R.key_figure([trak_off])
    assert R.judge([{"seed": 0, "draws": [], "not_applicable": None}]) == ["no draw scored"]
    na = {"seed": 0, "draws": [], "not_applicable": "the model is wider than the exact preset"}
    assert R.judge([na]) == [] and R.key_figure([na]).startswith("not applicable")
    line = R.key_figure([good])
    assert line.startswith("3 sketched draws vs exact: tracin rho 0.960, gap 0.030")


def test_compare_draw_reads_within_group_pairs():
    """Two groups; stored flips the order inside group 1 only: AUC 1.0 exact, 0.5 stored (hand count)."""
    has = np.array([1, 0, 1, 0], bool)
    group = np.array([0, 0, 1, 1])
    exact = {m: np.array([2.0, 1.0, 4.0, 3.0]) for m in R.METHODS}
    stored = {m: np.array([2.0, 1.0, 3.0, 4.0]) for m in R.METHODS}
    out = R.compare_draw(stored, exact, has, group)
    assert out["tracin"]["auc_exact"] == 1.0 and out["tracin"]["auc_stored"] == 0.5
    assert out["tracin"]["auc_gap"] == 0.5 and out["tracin"]["spearman"] == pytest.approx(0.8)


# ----------------------------------------------------------------------------------------- the real fixture
def test_tiny_fixture_passes_and_noisy_sketches_fail(tiny_fixture, monkeypatch):
    import torch

    torch.set_num_threads(1)
    cfg = R.RankConfig(draws=2)
    rep = R.fixture_ranking(tiny_fixture, cfg)
    assert rep["not_applicable"] is None and len(rep["draws"]) == 2 * len(tiny_fixture.sketch_seeds)
    assert {d["sketch_seed"] for d in rep["draws"]} == set(tiny_fixture.sketch_seeds)  # every one the checks judge
    assert R.judge([rep]) == [], R.judge([rep])
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
    bad = R.judge([R.fixture_ranking(tiny_fixture, cfg)])
    assert any("within-group AUC" in b or "median Spearman" in b for b in bad), bad
