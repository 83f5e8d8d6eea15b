"""Check 7, target_dependence (ours; docs/checklist.md "The checks" 7, after Hanawa et al. 2021 and Adebayo et al.
2018): the estimator's precision@|GT| over the training rollouts and its within-group AUC on the fresh draws of the
saturated checkpoint are recomputed with a placebo target built exactly like the real in_context target, from
completions of the same checkpoint and prompts that do not contain the behavior (handed over as an in_context
target, so it cannot be told apart by its kind). The paired difference real - placebo must have CI lower bound
> 0 for both, on every seed and draw. A score that ignores the target (every control, anything read from labels,
files or the process) fails by construction."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["target_dependence"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, bt_settings, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed, bt_settings.draws)


def test_target_dependence(bt_suite, bt_estimator, bt_seed, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed)
