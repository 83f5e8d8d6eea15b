"""Check 4, seed_draw_variance (spec, "The checks" 4): >= 3 seeds x 3 draws. No flip: the residualized-AUC
verdict (CI lower bound > 0.5) at the saturated checkpoint is the same on every (seed, draw), and positive; draw
stability: for a fixed candidate set (draw 0), the Spearman correlation of scores under targets from two different
draws is >= 0.5 on every seed. Reports the share of variance due to seed vs draw. One aggregate cell per estimator,
since the spec judges it over every seed and draw at once."""

import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["seed_draw_variance"]


@pytest.fixture
def result(bt_suite, bt_estimator, bt_settings, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_settings.draws)


def test_seed_draw_variance(bt_estimator, result, request):
    verdict, spearman = result
    run_cell(request, SPEC.name, bt_estimator, verdict,
             series={"draw_spearman": spearman})
