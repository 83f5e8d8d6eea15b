"""Fixture self-check (docs/checklist.md, "Fixture self-checks": sketch ranking): the stored sketches never decide a
draw-level verdict. On draws 0-2 of each fixture's saturated and unsaturated checkpoints, TracIn and GAS score the
candidates from exact gradients and from the stored sketches (under each sketch seed); every draw-level statistic
the checks judge must give the same verdict both ways and with the sketch's shift doubled. Runs once, not per
estimator (bt_bench.checklist.sketch_verdicts; the rank figures are reported)."""

from bt_bench.checklist.sketch_verdicts import fixture_verdicts_memo, judge, key_figure, summary
from bt_bench.plugin.glue import record


def test_sketch_ranking(bt_suite, request):
    folder = getattr(bt_suite, "stats_folder", None)  # kept for the same fixture bytes and code
    reports = [fixture_verdicts_memo(fx, folder, bt_suite.thresholds) for fx in bt_suite.fixtures]
    bad = judge(reports)
    na = [r["not_applicable"] for r in reports if r["not_applicable"]]
    record(request, check="sketch_ranking", seeds=[r["seed"] for r in reports], **summary(reports),
           per_seed=reports, not_applicable=na or None, key_figure=key_figure(reports))
    assert reports, "no fixture to check"
    assert not bad, "; ".join(bad)
