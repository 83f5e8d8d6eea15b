"""Check 4, seed_draw_variance (spec, "The checks" 4): >= 3 seeds x 3 draws. No flip: the residualized-AUC
verdict (CI lower bound > 0.5) at the saturated checkpoint is the same on every (seed, draw), and positive; draw
stability: for a fixed candidate set (draw 0), the Spearman correlation of scores under targets from two different
draws is >= 0.5 on every seed. Reports the share of variance due to seed vs draw. One aggregate cell per estimator,
since the spec judges it over every seed and draw at once."""

import itertools

import numpy as np
import pytest

from bt_bench import stats, verdicts
from bt_bench.pytest_plugin import FixtureCannotSupport, cell, run_cell


@pytest.fixture
def per_unit(bt_suite, bt_estimator, bt_settings):
    out = []
    for i in range(bt_suite.n_seeds):
        why = bt_suite.has_draw(i, "saturated")
        if why:
            raise FixtureCannotSupport(why)
        scores = [cell(bt_suite.draw_scores, bt_estimator, i, "saturated", d) for d in range(bt_settings.draws)]
        # draw stability: the same candidates (draw 0) scored under the targets of two different draws
        fixed = [cell(bt_suite.draw_scores, bt_estimator, i, "saturated", 0, target_draw=d)
                 for d in range(bt_settings.draws)]
        out.append((i, scores, fixed))
    return out


def test_seed_draw_variance(bt_suite, bt_estimator, per_unit, request):
    th = bt_suite.thresholds
    seed, draw, auc, low, sp_seed, sp = [], [], [], [], [], []
    for i, scores, fixed in per_unit:
        for d, s in enumerate(scores):
            r = bt_suite.draw(i, "saturated", d)
            res = stats.residualized_auc_bootstrap(s, r["fluency"], r["has_behavior"], r["group"], **th.bootstrap)
            seed.append(r["seed"]), draw.append(d), auc.append(res.estimate), low.append(res.ci_low)
        for a, b in itertools.combinations(range(len(fixed)), 2):
            sp_seed.append(bt_suite.fixtures[i].seed)
            sp.append(stats.spearman(fixed[a], fixed[b]))
    v = verdicts.seed_draw_variance(seed, draw, auc, low, stability_seed=sp_seed, stability_spearman=sp,
                                    thresholds=th)
    run_cell(request, "seed_draw_variance", bt_estimator, v,
             per_unit=[{"seed": s, "draw": d, "residualized_auc": a, "ci_low": lo}
                       for s, d, a, lo in zip(seed, draw, auc, low)],
             series={"draw_spearman": [float(x) for x in np.asarray(sp)]})
