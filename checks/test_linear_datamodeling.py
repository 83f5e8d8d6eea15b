"""Check 10, linear_datamodeling (ours; docs/checklist.md "The checks" 10): per seed, Spearman's rho over the
fixture's S half-subset replays of the window between the behavior measure at W and the estimator's scores summed
over the kept rollouts (TRAK's LDS) must beat every control's (paired bootstrap over subsets, CI lower bound > 0 on
every seed). Runs with --bt-lds; otherwise N/A, not run."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["linear_datamodeling"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed)


def test_linear_datamodeling(bt_suite, bt_estimator, bt_seed, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed)
