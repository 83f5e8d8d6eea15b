"""Check 8, retrieval_baseline (ours; docs/checklist.md "The checks" 8): a rollout-level estimator's precision@|GT|
over the training rollouts, and its within-group AUC on every draw of the saturated checkpoint under every sketch
seed, minus those of each retrieval control (bm25, repsim), paired bootstrap, CI lower bound > 0 on every unit. The
behavior is a literal string and the target is built from completions that contain it: text retrieval finds GT
without attributing anything."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["retrieval_baseline"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, bt_settings, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed, bt_settings.draws)


def test_retrieval_baseline(bt_suite, bt_estimator, bt_seed, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed)
