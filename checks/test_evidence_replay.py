"""Evidence replay (``--bt-evidence DIR``): the same verdict functions judge per-rollout rows recorded elsewhere
(e.g. the BehaviorTrace paper's published rows, or a large GPU run in bt-bench's native format), so results can be
gated without rerunning them. One cell per (check, estimator) the evidence supports; the rest skip with a reason.
Without ``--bt-evidence`` this module collects nothing."""

from bt_bench.plugin.glue import run_cell


def test_evidence_replay(bt_replay_verdict, request):
    v = bt_replay_verdict
    # a replayed skip means the evidence holds nothing for this check: N/A, as in `bt-bench replay`
    run_cell(request, v.check, v.estimator, v, na=True, source="evidence")
