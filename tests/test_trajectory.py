"""The recorded trajectory (capability ``trajectory``, bt_bench.estimator.trajectory): its functional GRPO + clipping
+ AdamW step against the replay, which runs trl's own GRPOTrainer.compute_loss, accelerator clipping and the
Trainer's AdamW (bt_bench.runs.replay)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bt_bench.runs.replay import FIDELITY_TOL


@pytest.fixture(scope="module")
def trajectory(smoke_run):
    from bt_bench.estimator.handover import run_trajectory

    torch.set_num_threads(1)
    return run_trajectory(smoke_run)


def _functional(traj, until: int, weight: np.ndarray) -> list[dict[str, torch.Tensor]]:
    from bt_bench.estimator.trajectory import parameters

    model = traj.initial_model()
    params = parameters(model)
    state = traj.initial_state(params)
    out = []
    for s in range(until):
        params, state = traj.step(model, params, state, s, torch.as_tensor(weight[traj.uids(s)]))
        params = {k: p.detach().requires_grad_() for k, p in params.items()}
        state = {a: {k: x.detach() for k, x in d.items()} for a, d in state.items()}
        out.append({k: p.detach().clone() for k, p in params.items()})
    return out


def test_the_functional_step_reproduces_trls_step_with_weighted_rollouts(smoke_run, trajectory):
    """Every step of the smoke run's window, rollouts weighted 1, 0.5 and 0: the functional step's weights equal the
    replay's (trl's loss and optimizer) within the replay-fidelity bar; on a CPU they are bit for bit the same."""
    from bt_bench.runs.replay import Replayer

    n, until = len(smoke_run.columns["uid"]), smoke_run.config.window
    w = np.ones(n, np.float32)
    w[::3], w[1::5] = 0.5, 0.0
    ref: dict[int, dict[str, torch.Tensor]] = {}
    Replayer(smoke_run).replay(until=until, weight=w, on_step=lambda s, m: ref.__setitem__(
        s, {k: p.detach().clone() for k, p in m.named_parameters()}))
    got = _functional(trajectory, until, w)
    assert sorted(ref) == list(range(1, until + 1))
    worst = max(float((got[s - 1][k] - p).norm() / p.norm()) for s, ps in ref.items() for k, p in ps.items())
    assert worst <= FIDELITY_TOL, worst
    assert all(torch.equal(got[-1][k], p) for k, p in ref[until].items()), "not bit for bit on a CPU"


def test_the_trajectory_carries_no_label(trajectory):
    from bt_bench.runs.schema import VISIBLE_FIELDS

    assert set(trajectory.rows) <= set(VISIBLE_FIELDS)
    assert trajectory.steps == len(trajectory.lr) and trajectory.n == sum(len(trajectory.uids(s))
                                                                           for s in range(trajectory.steps))


def test_the_loss_is_linear_in_the_rollout_weights(trajectory):
    """The loss is written as -A w sum logp / N (not in trl's ratio form, whose value does not depend on the
    weights' logp): at w = 0 it is 0 and doubling w doubles it."""
    from bt_bench.estimator.trajectory import parameters

    model = trajectory.initial_model()
    params = parameters(model)
    b = len(trajectory.uids(0))
    one = trajectory.loss(model, params, 0, torch.ones(b)).detach()
    assert float(trajectory.loss(model, params, 0, torch.zeros(b)).detach()) == 0.0
    assert float(trajectory.loss(model, params, 0, 2 * torch.ones(b)).detach()) == pytest.approx(2 * float(one), rel=1e-6)


# ------------------------------------------------------------------------------- the capability and its view
class _Declares:
    name, level = "traj_probe", "rollout"

    def __init__(self, caps):
        self.capabilities = frozenset(caps)

    def score(self, candidates, target):
        return np.zeros(len(candidates))


def _data(run, traj, source="training"):
    from bt_bench.estimator.views import CandidateData

    c = run.columns
    keep = ("uid", "step", "group", "gen_index", "prompt_ids", "prompt_mask", "completion_ids", "completion_mask",
            "advantage") + (("num_items_in_batch",) if source == "training" else ())
    return CandidateData({k: np.asarray(c[k]) for k in keep}, source=source, model_loader=run.load_model,
                         objective={"loss_type": run.config.loss_type, "temperature": run.config.temperature,
                                    "loss_batch_size": run.config.rollouts_per_step},
                         trajectory=lambda: traj)


def test_the_view_hands_the_trajectory_only_to_training_views_that_declare_it(smoke_run, trajectory):
    from bt_bench.estimator import CapabilityError, MissingInputError

    data = _data(smoke_run, trajectory)
    assert data.view_for(_Declares({"trajectory"})).trajectory() is trajectory
    with pytest.raises(CapabilityError, match="trajectory"):
        data.view_for(_Declares({"model"})).trajectory()
    with pytest.raises(MissingInputError, match="'draw' view"):
        _data(smoke_run, trajectory, source="draw").view_for(_Declares({"trajectory"})).trajectory()


def test_the_trajectory_crosses_the_wire_intact(smoke_run, trajectory, tmp_path):
    """What a sandboxed scoring process rebuilds (bt_bench.estimator.wire) is the same trajectory: rows, steps,
    schedule, optimizer, and a step taken from its step-0 weights."""
    from bt_bench.estimator import wire
    from bt_bench.estimator.trajectory import parameters
    from bt_bench.estimator.worker import _Models

    view = _data(smoke_run, trajectory).view_for(_Declares({"trajectory", "model"}))
    folder = tmp_path / "proc"
    folder.mkdir()
    enc = wire.encode_view(view, wire.Outbox(folder, wire.Pool(tmp_path / "pool")))
    got = wire.decode_view(enc, wire.Inbox(folder), _Models(folder, "cpu")).trajectory()
    assert got.steps == trajectory.steps and got.optimizer == trajectory.optimizer
    assert (got.loss_type, got.temperature) == (trajectory.loss_type, trajectory.temperature)
    assert np.array_equal(got.lr, trajectory.lr)
    assert all(np.array_equal(got.uids(s), trajectory.uids(s)) for s in range(got.steps))
    assert all(np.array_equal(got.rows[k], v) for k, v in trajectory.rows.items())
    steps = []
    for t in (trajectory, got):
        model = t.initial_model()
        p = parameters(model)
        steps.append(t.step(model, p, t.initial_state(p), 0)[0])
    assert all(torch.equal(steps[0][k], steps[1][k]) for k in steps[0])


# ------------------------------------------------------------------------------------ the metagradient estimator
def test_the_metagradient_estimator_matches_a_finite_difference_replay(smoke_run, trajectory):
    """Scored as the harness scores (``score_estimator``: twice, deterministic), on a sequence target at checkpoint
    c = 4 of the smoke run: rollouts of steps >= c score 0, and the two largest scores of steps 1..c-1 equal -dL/dw
    by central finite differences of trl's replay (eps 0.01; float64 target loss at the replayed weights). Step 0
    is left out: AdamW's first update is g / (|g| + eps) elementwise, so the loss is so curved in a step-0 weight
    that a finite difference does not settle before float32 rounding takes over (measured on this run: 0.0056,
    0.0050, 0.0042, 0.0034 at eps 0.1, 0.03, 0.01, 0.003 against a derivative of 0.0050)."""
    from bt_bench.estimator import Target, TargetDefinition
    from bt_bench.estimator.scoring import score_estimator
    from bt_bench.runs.replay import Replayer
    from estimators.metagradient import MetaGradient, sequence_loss64

    run, c = smoke_run, 4
    cols = run.columns
    rows = np.flatnonzero(np.asarray(cols["step"]) == c)[:8]
    t = {k: np.asarray(cols[k])[rows] for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
    d = TargetDefinition("sequence", **t, token_mask=t["completion_mask"], temperature=run.config.temperature)
    target = Target("sequence", {c: np.ones(3)}, definitions={c: d})
    scores = score_estimator(MetaGradient(), _data(run, trajectory), target)
    step = np.asarray(cols["step"])
    assert np.all(scores[step >= c] == 0) and np.any(scores[step < c] != 0)

    rep, eps = Replayer(run), 0.01
    for u in np.argsort(-np.abs(np.where(step >= 1, scores, 0.0)))[:2]:
        vals = []
        for wv in (1 + eps, 1 - eps):
            w = np.ones(len(step), np.float32)
            w[u] = wv
            vals.append(sequence_loss64(rep.replay(until=c, weight=w).model, d))
        assert scores[u] == pytest.approx(-(vals[0] - vals[1]) / (2 * eps), rel=2e-2), u
