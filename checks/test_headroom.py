"""Check 3, headroom (spec, "The checks" 3): the run must have window headroom (ceiling - chance) >= 0.10, else
the fixture cannot support a verdict (error); the estimator's window normalized gain has CI lower bound > 0; and at
an unsaturated checkpoint its within-group AUC has CI lower bound > 0.5 (on every draw). Headroom bounds what any
step-level method can show."""

import pytest

from bt_bench.checklist import cells
from bt_bench.plugin import cell, run_cell


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, bt_draw, request):
    return cell(request, "headroom", bt_estimator, cells.headroom, bt_suite, bt_estimator, bt_seed, bt_draw)


def test_headroom(bt_suite, bt_estimator, bt_seed, bt_draw, verdict, request):
    run_cell(request, "headroom", bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed, draw=bt_draw,
             checkpoint=bt_suite.fixtures[bt_seed].chosen("unsaturated"))
