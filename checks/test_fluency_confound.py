"""Check 2, fluency_confound (spec, "The checks" 2): at a saturated checkpoint the raw within-group AUC exceeds
fluency's AUC, and the fluency-residualized AUC has CI lower bound > 0.5. Published: fluency AUC 0.72-0.80, at or
above every gradient method."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["fluency_confound"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, bt_draw, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed, bt_draw)


def test_fluency_confound(bt_suite, bt_estimator, bt_seed, bt_draw, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed, draw=bt_draw,
             checkpoint=bt_suite.fixtures[bt_seed].chosen("saturated"))
