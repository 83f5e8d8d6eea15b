"""Fixture self-check (docs/checklist.md, "Fixture self-checks": sketch ranking): on draws 0-2 of each fixture's
saturated checkpoint, the stored sketches rank the candidates as their exact gradients do, for TracIn and GAS
(TRAK-style scoring measured and reported): median Spearman >= 0.95 and within-group AUC within 0.03 of exact's on
every draw. Runs once, not per estimator (bt_bench.fixture.rank_fidelity)."""

from bt_bench.fixture.rank_fidelity import fixture_ranking_memo, judge, key_figure, summary
from bt_bench.plugin.glue import record


def test_sketch_ranking(bt_suite, request):
    folder = getattr(bt_suite, "stats_folder", None)  # kept for the same fixture bytes and code
    reports = [fixture_ranking_memo(fx, folder) for fx in bt_suite.fixtures]
    bad = judge(reports)
    na = [r["not_applicable"] for r in reports if r["not_applicable"]]
    record(request, check="sketch_ranking", seeds=[r["seed"] for r in reports], **summary(reports),
           per_seed=reports, not_applicable=na or None, key_figure=key_figure(reports))
    assert reports, "no fixture to check"
    assert not bad, "; ".join(bad)
