"""Check 6, advantage_baseline (ours; spec, "The checks" 6): for rollout-level estimators, overall and window
precision@|GT| minus that of advantage_only, CI lower bound > 0 on every seed. Inside the window a positive
advantage nearly implies GT (the bonus dominates the reward), so a score that only tracks the advantage finds GT
without attributing anything."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["advantage_baseline"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed)


def test_advantage_baseline(bt_suite, bt_estimator, bt_seed, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed)
