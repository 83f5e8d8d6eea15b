"""Check 2, fluency_confound (spec, "The checks" 2): at a saturated checkpoint the raw within-group AUC exceeds
fluency's AUC, and the fluency-residualized AUC has CI lower bound > 0.5. Published: fluency AUC 0.72-0.80, at or
above every gradient method."""

import pytest

from bt_bench import verdicts
from bt_bench.pytest_plugin import FixtureCannotSupport, cell, run_cell


@pytest.fixture
def scores(bt_suite, bt_estimator, bt_seed, bt_draw):
    why = bt_suite.has_draw(bt_seed, "saturated")
    if why:
        raise FixtureCannotSupport(why)
    return cell(bt_suite.draw_scores, bt_estimator, bt_seed, "saturated", bt_draw)


def test_fluency_confound(bt_suite, bt_estimator, bt_seed, bt_draw, scores, request):
    d = bt_suite.draw(bt_seed, "saturated", bt_draw)
    v = verdicts.fluency_confound(scores, d["has_behavior"], d["group"], d["fluency"], thresholds=bt_suite.thresholds)
    run_cell(request, "fluency_confound", bt_estimator, v, seed=d["seed"], draw=bt_draw, checkpoint=d["step"])
