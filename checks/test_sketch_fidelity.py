"""Fixture self-check (docs/checklist.md, "Fixture self-checks": sketch fidelity): on a seeded subset of rollouts of
each fixture (training rollouts at a TracIn checkpoint, some of its own step, fresh candidates of draw 0), the
sketches agree with the exact per-rollout gradient inner products within the JL bound for the sketch dimension,
the stored sketches (checkpoint, in-run, draw, token) equal the ones recomputed through the hook path, and every
parameter tensor (embeddings included) is covered. Runs once, not per estimator (bt_bench.fixture.fidelity)."""

from bt_bench.fixture.fidelity import fixture_fidelity, key_figure, summary
from bt_bench.plugin.glue import record


def _brief(r: dict) -> dict:
    """A fixture's report without the per-tensor table (the uncovered tensors are listed by name)."""
    cov = {k: v for k, v in r["coverage"].items() if k != "per_tensor"}
    return {**{k: v for k, v in r.items() if k != "coverage"}, "coverage": cov}


def test_sketch_fidelity(bt_suite, request):
    reports = [fixture_fidelity(fx) for fx in bt_suite.fixtures]
    bad = [f"seed {r['seed']}: {p}" for r in reports for p in r["problems"]]
    record(request, check="sketch_fidelity", seeds=[r["seed"] for r in reports], **summary(reports),
           per_seed=[_brief(r) for r in reports], key_figure=key_figure(reports))
    assert reports, "no fixture to check"
    assert not bad, "; ".join(bad)
