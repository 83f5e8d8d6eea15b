"""The retrieval controls (estimators/retrieval.py): BM25 against a hand-computed case, and both controls on a real
fixture's draw, where the behavior's own tokens make them find the behavior rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from estimators.retrieval import BM25, BM25Adv, RepSim, RepSimAdv, bm25_scores


def test_bm25_matches_a_hand_computed_case():
    docs = [np.array([1, 2, 2]), np.array([3]), np.array([1, 3, 3, 3])]
    # query token 2: N = 3 documents, n_2 = 1 holds it, idf = ln(1 + 2.5 / 1.5); avgdl = 8 / 3;
    # doc 0: tf 2, |d| 3 -> 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3 / (8 / 3))) * idf
    idf = math.log(1 + 2.5 / 1.5)
    want = 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3 / (8 / 3))) * idf
    got = bm25_scores(docs, np.array([2]))
    assert got[0] == pytest.approx(want, rel=1e-12) and got[0] == pytest.approx(1.34706, abs=1e-5)
    assert got[1] == 0 and got[2] == 0
    assert np.allclose(bm25_scores(docs, np.array([2, 2])), 2 * got)  # a repeated query token counts twice
    # the same term frequency in a longer document scores lower (b = 0.75 length normalization)
    s = bm25_scores([np.array([5, 1]), np.array([5, 1, 1, 1, 1])], np.array([5]))
    assert s[0] > s[1] > 0
    assert not bm25_scores([], np.array([1])).size and not bm25_scores(docs, np.array([], np.int64)).any()


@pytest.fixture(scope="module")
def draw(smoke_run, tmp_path_factory):
    from bt_bench.estimator.handover import draw_candidates
    from bt_bench.fixture.reader import fixture_config, load_fixture

    fx = load_fixture(smoke_run, fixture_config("smoke", 1), tmp_path_factory.mktemp("retrieval_cache"))
    kind = next(k for k in ("saturated", "unsaturated") if fx.chosen(k) is not None)
    data, targets = draw_candidates(fx, kind, 0)
    return data, targets, fx.draw_rows(kind, 0)


@pytest.mark.parametrize("cls", [BM25, RepSim])
def test_retrieval_controls_find_the_behavior_rows_by_their_tokens(draw, cls):
    from bt_bench.checklist.metrics import within_group_auc
    from bt_bench.estimator.scoring import score_estimator

    data, targets, rows = draw
    s = score_estimator(cls(), data, targets["in_context"])
    assert s.shape == (data.n,) and np.isfinite(s).all()
    auc = within_group_auc(s, rows["has_behavior"], rows["group"])
    assert auc > 0.7, auc  # the in_context target is built from the behavior's tokens
    placebo = score_estimator(cls(), data, targets["no_behavior"], placebo=True)
    assert not np.allclose(placebo, s)  # it reads the target: the placebo's rows move it


# ---------------------------------------------------------------- check 8, retrieval_baseline
def _synthetic():
    from test_verdicts import make_candidates, make_run

    r, c = make_run(), make_candidates()
    rng = np.random.default_rng(7)
    # a retrieval control that finds most of the signal: the GT / behavior indicator plus noise
    ctrl_r = {"bm25": r["is_gt"] + rng.normal(0, 0.3, len(r["step"])), "repsim": rng.random(len(r["step"]))}
    ctrl_c = {"bm25": c["has_behavior"] + rng.normal(0, 0.8, len(c["group"])), "repsim": rng.random(len(c["group"]))}
    return r, c, ctrl_r, ctrl_c


def test_retrieval_baseline_oracle_passes_random_norm_and_the_controls_fail():
    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.checks import retrieval_baseline as rb

    th = Thresholds(n_resamples=1000)
    r, c, ctrl_r, ctrl_c = _synthetic()
    v = rb.judge_training(r["is_gt"].astype(float), ctrl_r, r["is_gt"], r["step"], thresholds=th)
    assert v.outcome == "pass", v.reason
    assert set(v.metrics) == {"precision_minus_bm25", "precision_minus_repsim", "precision_minus_best"}
    v = rb.judge_draw(c["has_behavior"].astype(float), ctrl_c, c["has_behavior"], c["group"], thresholds=th)
    assert v.outcome == "pass", v.reason
    for bad in (r["random"], r["norm_only"], ctrl_r["bm25"]):
        v = rb.judge_training(bad, ctrl_r, r["is_gt"], r["step"], thresholds=th)
        assert v.outcome == "fail", v.reason
    for bad in (c["random"], c["fluency_like"], ctrl_c["bm25"]):
        v = rb.judge_draw(bad, ctrl_c, c["has_behavior"], c["group"], thresholds=th)
        assert v.outcome == "fail", v.reason
    # beating one control is not enough: a score that beats repsim (noise) but not bm25 fails
    v = rb.judge_draw(c["has_behavior"] + np.random.default_rng(1).normal(0, 0.8, len(c["group"])), ctrl_c,
                      c["has_behavior"], c["group"], thresholds=th)
    assert v.outcome == "fail" and "minus bm25" in v.reason
    assert v.metrics["auc_minus_best"] == v.metrics["auc_minus_bm25"]  # the strongest control on this unit


def test_advantage_weighted_variants_are_the_plain_score_times_the_advantage(draw):
    from bt_bench.estimator.scoring import score_estimator

    data, targets, _ = draw
    adv = np.asarray(data._visible["advantage"], np.float64)
    t = targets["in_context"]
    b, ba = score_estimator(BM25(), data, t), score_estimator(BM25Adv(), data, t)
    r, ra = score_estimator(RepSim(), data, t), score_estimator(RepSimAdv(), data, t)
    np.testing.assert_allclose(ba, b * adv, rtol=1e-9)
    np.testing.assert_allclose(ra, (1 + r) / 2 * adv, rtol=1e-6, atol=1e-12)
