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
