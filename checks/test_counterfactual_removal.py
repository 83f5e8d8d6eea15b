"""Check 9, counterfactual_removal (ours; docs/checklist.md "The checks" 9): per seed, the behavior measure at W of a
replay of the window without the estimator's top-|GT| in-window training rollouts must drop more than without as
many random in-window rollouts with a nonzero advantage (bootstrap over the random replicates, CI lower bound > 0 on
every seed). The other checks compare rankings with the paid rollouts; this one asks whether what is blamed taught
the behavior."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["counterfactual_removal"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed)


def test_counterfactual_removal(bt_suite, bt_estimator, bt_seed, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed)
