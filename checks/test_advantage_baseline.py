"""Check 6, advantage_baseline (ours; spec, "The checks" 6): for rollout-level estimators, overall and window
precision@|GT| minus that of advantage_only, CI lower bound > 0 on every seed. Inside the window a positive
advantage nearly implies GT (the bonus dominates the reward), so a score that only tracks the advantage finds GT
without attributing anything."""

import pytest

from bt_bench import verdicts
from bt_bench.pytest_plugin import cell, run_cell


@pytest.fixture
def scores(bt_suite, bt_estimator, bt_seed):
    return cell(bt_suite.training_scores, bt_estimator, bt_seed), bt_suite.training_scores("advantage_only", bt_seed)


def test_advantage_baseline(bt_suite, bt_estimator, bt_seed, scores, request):
    s, adv = scores
    t = bt_suite.training(bt_seed)
    level = getattr(bt_suite.estimator(bt_estimator), "level", "rollout")
    v = verdicts.advantage_baseline(s, adv, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"],
                                    rollout_level=level == "rollout", thresholds=bt_suite.thresholds)
    run_cell(request, "advantage_baseline", bt_estimator, v, seed=t["seed"])
