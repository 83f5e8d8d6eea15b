"""Trajectory replay (bt_bench.runs.replay), the behavior probe (bt_bench.runs.probe), the counterfactual store
(bt_bench.runs.counterfactual) and the verdict of the counterfactual check: the replay against a slow reference
written from the GRPO formula without trl, the fidelity to a real run's checkpoints, and the verdict's positive and
negative controls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bt_bench.checklist.base import Thresholds
from bt_bench.checklist.registry import CHECKS

SPEC = CHECKS["counterfactual_removal"]
TH = Thresholds(n_resamples=500)


@pytest.fixture(scope="module")
def replayer(smoke_run):
    from bt_bench.runs.replay import Replayer

    torch.set_num_threads(1)
    return Replayer(smoke_run)


def _params(model) -> dict[str, torch.Tensor]:
    return {k: p.detach().clone() for k, p in model.named_parameters()}


def _reference(run, steps: int, weight: np.ndarray) -> dict[str, torch.Tensor]:
    """The run's update written out from the formula, without trl: on-policy GRPO (ratio 1, so the gradient of the
    clipped surrogate is A_i times the gradient of the token log-probs), dapo normalisation by the step's recorded
    num_items_in_batch, global-norm clipping, torch AdamW with the Trainer's defaults, one rollout at a time."""
    from trl.trainer.utils import disable_dropout_in_model

    cfg, c = run.config, run.columns
    model = run.load_model(0)
    disable_dropout_in_model(model)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    ts = np.asarray(c["trained_step"])
    for s in range(steps):
        for u in np.flatnonzero(ts == s):
            p = np.asarray(c["prompt_ids"][u])[np.asarray(c["prompt_mask"][u]).astype(bool)]
            comp = np.asarray(c["completion_ids"][u])[np.asarray(c["completion_mask"][u]).astype(bool)]
            ids = torch.as_tensor(np.concatenate([p, comp]), dtype=torch.long)[None]
            logits = model(input_ids=ids).logits[0, len(p) - 1:-1].float() / cfg.temperature
            lp = torch.log_softmax(logits, -1).gather(-1, ids[0, len(p):, None]).squeeze(-1)
            a = float(c["advantage"][u]) * float(weight[u])
            (-(a * lp.sum()) / float(c["num_items_in_batch"][u])).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
    return _params(model)


def test_replay_matches_a_slow_reference_with_rollouts_removed(smoke_run, replayer):
    n = len(smoke_run.columns["uid"])
    w = np.ones(n, np.float32)
    w[::3] = 0.0  # remove every third rollout
    got = _params(replayer.replay(until=3, weight=w).model)
    ref = _reference(smoke_run, 3, w)
    init = _params(smoke_run.load_model(0))
    for k in ref:
        moved = (ref[k] - init[k]).norm()
        assert (got[k] - ref[k]).norm() <= 1e-3 * moved + 1e-7, k


def test_replay_reproduces_the_run_and_removing_everything_changes_nothing(smoke_run, replayer):
    res = replayer.replay(until=smoke_run.config.window, compare=True)
    assert res.fidelity, "no stored checkpoint inside the window was compared"
    assert max(res.fidelity.values()) <= 1e-3
    again = replayer.replay(until=smoke_run.config.window)  # the same replay twice: bit for bit
    first = _params(res.model) if res.model is not again.model else None
    assert first is None or all(torch.equal(first[k], p) for k, p in _params(again.model).items())
    zero = replayer.replay(until=4, weight=np.zeros(len(smoke_run.columns["uid"]), np.float32))
    init = _params(smoke_run.load_model(0))
    assert all(torch.equal(p, init[k]) for k, p in _params(zero.model).items()), \
        "with every rollout removed every gradient is 0, so AdamW must not move a weight"


def test_replay_refuses_bad_input(smoke_run, replayer):
    with pytest.raises(ValueError, match="until"):
        replayer.replay(until=smoke_run.config.steps + 1)
    with pytest.raises(ValueError, match="weight has 3 entries"):
        replayer.replay(until=2, weight=np.ones(3))


def test_probe_round_trips_through_npy_arrays(tmp_path):
    from bt_bench.runs.probe import Probe

    p = Probe([np.array([1, 2, 3], np.int32), np.array([4, 5], np.int32)],
              [np.array([0, 1, 1], bool), np.array([0, 1], bool)],
              [np.array([7, 2, 3], np.int32), np.array([8, 5], np.int32)],
              [np.array([0, 1, 1], bool), np.array([0, 1], bool)], n_prompts=5)
    for k, a in p.to_arrays().items():
        np.save(tmp_path / f"{k}.npy", a, allow_pickle=False)
    q = Probe.from_arrays({f.stem: np.load(f, allow_pickle=False) for f in tmp_path.glob("*.npy")})
    assert q.n_prompts == 5 and len(q.ids_trig) == 2
    assert all(np.array_equal(a, b) for a, b in zip(p.ids_plain + p.span_trig, q.ids_plain + q.span_trig))


def test_top_in_window_ranks_only_window_rollouts_and_breaks_ties_by_seed(smoke_run):
    from bt_bench.runs import counterfactual as cf

    win, gt, _ = cf.window_pool(smoke_run)
    n = len(smoke_run.columns["uid"])
    s = np.zeros(n)
    s[np.setdiff1d(np.arange(n), win)] = 1e9  # outside the window: never removed, however high
    top = cf.top_in_window(smoke_run, s, k=5)
    assert len(top) == 5 and set(top) <= set(win)
    assert np.array_equal(top, cf.top_in_window(smoke_run, s, k=5))
    s[win[-3:]] = 1.0
    assert set(win[-3:]) <= set(cf.top_in_window(smoke_run, s, k=5))


# ---------------------------------------------------------------- verdict controls (synthetic drops)
RANDOM = np.random.default_rng(0).normal(0.02, 0.01, 19)


def test_removing_gt_passes():
    v = SPEC.judge(5.5, RANDOM, 5.5, thresholds=TH)
    assert v.outcome == "pass" and v.metrics["fraction_of_gt"].value == pytest.approx(1.0)


def test_a_random_removal_fails_however_its_draw_falls_against_the_mean():
    # one more draw of the random distribution: above the replicates' mean (the CI of a mean would pass it), not
    # above all of them
    draw = float(np.sort(RANDOM)[-2])
    assert draw > RANDOM.mean()
    assert SPEC.judge(draw, RANDOM, 5.5, thresholds=TH).outcome == "fail"
    assert SPEC.judge(0.0, RANDOM, 5.5, thresholds=TH).outcome == "fail"


def test_a_fixture_where_gt_does_not_matter_supports_no_verdict_and_too_few_replicates_errors():
    assert SPEC.judge(5.5, RANDOM, float(RANDOM.max()), thresholds=TH).outcome == "unsupported"
    assert SPEC.judge(5.5, RANDOM[:10], 5.5, thresholds=TH).outcome == "error"


def test_removal_is_cached_by_the_removed_set(smoke_run, tmp_path, monkeypatch):
    from bt_bench.runs import counterfactual as cf

    monkeypatch.setenv("BT_BENCH_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(cf, "probe_of", lambda run, replicates=cf.REPLICATES: None)
    monkeypatch.setattr(cf, "_measure_without",
                        lambda run, probe, uids: (calls.append(len(uids)) or {"trigger_logp": -1.0}, 0.1))
    a = cf.removal(smoke_run, [3, 1, 2])
    b = cf.removal(smoke_run, [1, 2, 3, 3])
    assert a == b and calls == [3]


def test_the_replay_in_the_recorded_row_order_reproduces_the_run_bit_for_bit(smoke_run, replayer):
    """trl shuffles a step's rows before the loss; the recorder keeps that order (train_order) and the replay sums in
    it, so every stored checkpoint up to W comes back exactly. Control: the same replay in uid order does not."""
    from bt_bench.runs import store
    from bt_bench.runs.replay import _step_rows

    c = smoke_run.columns
    order, step = np.asarray(c["train_order"]), np.asarray(c["step"])
    assert any(not np.array_equal(order[step == s], np.arange((step == s).sum())) for s in range(4)), \
        "train_order is trl's shuffled order, not the uid order"
    W = smoke_run.config.window
    got = replayer.replay(until=W, compare=True).fidelity
    assert got and set(got) == {s for s in smoke_run.checkpoints if 0 < s <= W}
    assert all(v == 0.0 for v in got.values()), got
    rows = replayer.rows
    try:
        replayer.rows = {s: np.sort(u) for s, u in rows.items()}  # uid order: the replay before train_order
        uid = replayer.replay(until=W, compare=True).fidelity
    finally:
        replayer.rows = rows
    assert max(uid.values()) > 0.0, "summing in another order changes the rounding"
    assert {s: list(u) for s, u in _step_rows(smoke_run).items()} == {s: list(u) for s, u in rows.items()}

    bad = {k: np.asarray(v) for k, v in c.items()}
    bad["train_order"] = bad["train_order"].copy()
    bad["train_order"][1] = bad["train_order"][0]  # two rows at one position of step 0
    with pytest.raises(store.IntegrityError, match="train_order"):
        store.check_integrity(bad, smoke_run.manifest)


def test_the_key_figure_of_an_exact_replay_is_zero_not_infinite():
    """An exact replay's 0.0 is a figure, not a missing one (the check printed 'inf' for it before)."""
    from bt_bench.runs.counterfactual import worst_fidelity

    assert worst_fidelity([0.0, 0.0, 0.0]) == 0.0
    assert worst_fidelity([0.0, 2e-5]) == 2e-5
    assert worst_fidelity([None, 0.0]) == float("inf")
    assert worst_fidelity([]) is None


def test_a_replay_in_another_row_order_is_close_and_sets_the_fidelity_bar(smoke_run, replayer):
    a = _params(replayer.replay(until=4).model)
    b = _params(replayer.replay(until=4, order_seed=1).model)
    assert any(not torch.equal(a[k], b[k]) for k in a), "the row order changes the summation order"
    assert all((a[k] - b[k]).norm() <= 1e-3 * a[k].norm() for k in a)

    from bt_bench.runs.counterfactual import fidelity_problem

    base = {"fidelity": {"max_relative": 5e-3}, "full": {"trigger_logp": -0.05}, "stored_W": {"trigger_logp": -0.05}}
    assert "weight difference" in fidelity_problem(base)  # above the fixed 1e-3
    assert fidelity_problem(base, {"max_relative": 4e-3, "measure_gap": 0.0}) is None  # within 2x the order noise
    assert "weight difference" in fidelity_problem(base, {"max_relative": 2e-3, "measure_gap": 0.0})
    off = {**base, "fidelity": {"max_relative": 1e-5}, "full": {"trigger_logp": -0.06}}
    assert "behavior measure" in fidelity_problem(off, {"max_relative": 0.0, "measure_gap": 1e-3})
    # the measure's bar is the larger of 1e-3 nats and 5% of the random removals' mean drop
    rnd = [{"measure": {"trigger_logp": -0.06 - d}} for d in (0.1, 0.3)]
    assert fidelity_problem({**off, "random": rnd}) is None
    assert "behavior measure" in fidelity_problem({**off, "random": [{"measure": {"trigger_logp": -0.07}}]})
