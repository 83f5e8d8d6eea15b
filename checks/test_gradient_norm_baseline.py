"""Check 1, gradient_norm_baseline (spec, "The checks" 1): overall precision@|GT| minus that of the stronger
norm_only variant has CI lower bound > 0, and inside the planting window the precision CI lower bound exceeds
window chance. Published: a target-free gradient-norm ranking reaches ~4x chance and matches the best targeted
estimator; inside the window every method is within ~0.03 of chance."""

import pytest

from bt_bench import verdicts
from bt_bench.pytest_plugin import cell, run_cell


@pytest.fixture
def scores(bt_suite, bt_estimator, bt_seed):
    return (cell(bt_suite.training_scores, bt_estimator, bt_seed),
            bt_suite.training_scores("norm_only", bt_seed), bt_suite.training_scores("norm_only_step", bt_seed))


def test_gradient_norm_baseline(bt_suite, bt_estimator, bt_seed, scores, request):
    s, norm_r, norm_s = scores
    t = bt_suite.training(bt_seed)
    v = verdicts.gradient_norm_baseline(s, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"],
                                        norm_rollout=norm_r, norm_step=norm_s, thresholds=bt_suite.thresholds)
    run_cell(request, "gradient_norm_baseline", bt_estimator, v, seed=t["seed"])
