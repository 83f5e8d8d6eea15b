"""Check 1, gradient_norm_baseline (spec, "The checks" 1): overall precision@|GT| minus that of the stronger
norm_only variant has CI lower bound > 0, and inside the planting window the precision CI lower bound exceeds
window chance. Published: a target-free gradient-norm ranking reaches ~4x chance and matches the best targeted
estimator; inside the window every method is within ~0.03 of chance."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["gradient_norm_baseline"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed)


def test_gradient_norm_baseline(bt_suite, bt_estimator, bt_seed, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed)
