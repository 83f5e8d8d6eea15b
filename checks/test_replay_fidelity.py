"""Fixture self-check (docs/checklist.md, "Fixture self-checks": replay fidelity): a replay of each fixture's window
from its step-0 weights, re-applying every recorded update with trl's loss and the run's optimizer (no generation,
bt_bench.runs.replay), reproduces the run: the largest relative weight difference to any stored checkpoint up to W,
and the behavior measure at W against the stored checkpoint's: weights within a relative 1e-3, or twice the difference
another row order makes where larger (trl shuffles a step's rows; the replay sums them in the recorded order,
which on a CPU reproduces the run exactly, and bt_bench.runs.counterfactual.order_noise measures the rest); the measure within 1e-3 nats or 5% of the random removals' mean drop. The counterfactual check's replays rest on it. Runs once, not per
estimator; its replays are cached and shared with that check."""

from bt_bench.runs.counterfactual import FIDELITY_MEASURE, FIDELITY_WEIGHTS, MEASURE_SHARE, ORDER_FACTOR, fidelity_problem
from bt_bench.plugin.glue import record


def test_replay_fidelity(bt_suite, request):
    from bt_bench.runs import counterfactual as cf

    per_seed = []
    for fx in bt_suite.fixtures:
        b, noise = cf.baseline(fx.run), cf.order_noise(fx.run)
        per_seed.append({"seed": fx.seed, "max_relative": b["fidelity"]["max_relative"],
                         "at_W": b["fidelity"]["at_W"],
                         "measure_gap": abs(b["full"]["trigger_logp"] - b["stored_W"]["trigger_logp"]),
                         "replay_seconds": b["full_seconds"], "train_seconds": b["train_seconds"],
                         "order_noise": {k: noise[k] for k in ("max_relative", "measure_gap")},
                         "problem": fidelity_problem(b, noise)})
    worst = cf.worst_fidelity(s["max_relative"] for s in per_seed)
    record(request, check="replay_fidelity", seeds=[s["seed"] for s in per_seed], per_seed=per_seed,
           tolerance={"weights": FIDELITY_WEIGHTS, "measure": FIDELITY_MEASURE, "order_factor": ORDER_FACTOR,
                      "measure_share": MEASURE_SHARE},
           key_figure=f"largest relative weight difference {worst:.1e}" if worst is not None else "no fixture")
    assert per_seed, "no fixture to check"
    bad = [f"seed {s['seed']}: {s['problem']}" for s in per_seed if s["problem"]]
    assert not bad, "; ".join(bad)
