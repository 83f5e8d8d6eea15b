"""Check 3, headroom (spec, "The checks" 3): the run must have window headroom (ceiling - chance) >= 0.10, else
the fixture cannot support a verdict (error); the estimator's window normalized gain has CI lower bound > 0; and at
an unsaturated checkpoint its within-group AUC has CI lower bound > 0.5 (on every draw). Headroom bounds what any
step-level method can show."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["headroom"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, bt_draw, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed, bt_draw)


def test_headroom(bt_suite, bt_estimator, bt_seed, bt_draw, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed, draw=bt_draw,
             checkpoint=bt_suite.fixtures[bt_seed].chosen("unsaturated"))
