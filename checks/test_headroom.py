"""Check 3, headroom (spec, "The checks" 3): the run must have window headroom (ceiling - chance) >= 0.10, else
the fixture cannot support a verdict (error); the estimator's window normalized gain has CI lower bound > 0; and at
an unsaturated checkpoint its within-group AUC has CI lower bound > 0.5 (on every draw). Headroom bounds what any
step-level method can show."""

import pytest

from bt_bench import verdicts
from bt_bench.pytest_plugin import cell, run_cell


@pytest.fixture
def scores(bt_suite, bt_estimator, bt_seed, bt_draw):
    train = cell(bt_suite.training_scores, bt_estimator, bt_seed)
    if bt_suite.has_draw(bt_seed, "unsaturated"):
        return train, None
    return train, cell(bt_suite.draw_scores, bt_estimator, bt_seed, "unsaturated", bt_draw)


def test_headroom(bt_suite, bt_estimator, bt_seed, bt_draw, scores, request):
    train, unsat = scores
    t = bt_suite.training(bt_seed)
    kw = {}
    if unsat is not None:
        d = bt_suite.draw(bt_seed, "unsaturated", bt_draw)
        kw = dict(unsat_scores=unsat, unsat_has_behavior=d["has_behavior"], unsat_group=d["group"])
    v = verdicts.headroom(train, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"],
                          thresholds=bt_suite.thresholds, **kw)
    run_cell(request, "headroom", bt_estimator, v, seed=t["seed"], draw=bt_draw)
