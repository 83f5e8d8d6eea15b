"""Check 5, trigger_token_alignment (spec, "The checks" 5): for candidates that contain the behavior, the estimator
scores the gradient restricted to the behavior tokens against the in_context target and against a placebo target
(same construction at random non-behavior positions); the mean paired difference has CI lower bound > 0 on every
seed; for cosine-scale estimators the mean cosine with in_context also has CI lower bound > 0.05. Candidates of
every draw at the saturated checkpoint are pooled per seed (each response is its own bootstrap cluster).
Published: +0.230 / +0.114 / +0.295 on three seeds; ~0 or negative for the constructed target."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["trigger_token_alignment"]


@pytest.fixture
def result(bt_suite, bt_estimator, bt_seed, bt_settings, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed, bt_settings.draws)


def test_trigger_token_alignment(bt_suite, bt_estimator, bt_seed, result, request):
    verdict, series = result
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed, series=series)
