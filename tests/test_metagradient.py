"""The metagradient estimator's reverse pass (estimators/metagradient.py) against a for-loop finite difference on a
few-parameter model trained with the trajectory's own clipping and AdamW (bt_bench.estimator.trajectory)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bt_bench.estimator.trajectory import OptimizerSettings, adamw_step
from estimators.metagradient import checkpoint_every, replay_states, reverse

T, B = 7, 4  # steps, rows per step
OPT = OptimizerSettings(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, max_grad_norm=0.6)
LR = [0.05] * 4 + [0.01] * 3  # a schedule that drops, as the runs' does at W


def _problem():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, B, 3, generator=g, dtype=torch.float64)
    adv = torch.randn(T, B, generator=g, dtype=torch.float64)
    params = {"a": torch.randn(3, generator=g, dtype=torch.float64),
              "b": torch.randn(2, 3, generator=g, dtype=torch.float64)}

    def loss(p, s, w):  # a GRPO-like term: -A w logp(row), with a nonlinear "policy"
        logp = torch.nn.functional.logsigmoid(torch.tanh(x[s] * p["a"]) @ p["b"].T).sum(-1)
        return -(adv[s] * w * logp).sum() / B

    def step_fn(p, st, s, w, create_graph):
        names = list(p)
        grads = torch.autograd.grad(loss(p, s, w), [p[k] for k in names], create_graph=create_graph)
        return adamw_step(p, st, dict(zip(names, grads)), LR[s], s + 1, OPT)

    step_fn.loss = loss

    def target(p):
        return torch.tanh(p["b"] @ p["a"]).sum() + (p["a"] ** 3).sum()

    state = {"m": {k: torch.zeros_like(v) for k, v in params.items()},
             "v": {k: torch.zeros_like(v) for k, v in params.items()}}
    return params, state, step_fn, target


def _final_loss(w: np.ndarray) -> float:
    params, state, step_fn, target = _problem()
    p, st = params, state
    for s in range(T):
        p = {k: v.detach().requires_grad_() for k, v in p.items()}
        p, st = step_fn(p, st, s, torch.as_tensor(w[s]), False)
    return float(target({k: v.detach() for k, v in p.items()}))


@pytest.mark.parametrize("every", [1, 3, T])
def test_the_reverse_pass_matches_a_finite_difference(every):
    params, state, step_fn, target = _problem()
    final, _, kept = replay_states(step_fn, params, state, T, lambda s: B, every)
    p = {k: v.detach().requires_grad_() for k, v in final.items()}
    tg = dict(zip(p, torch.autograd.grad(target(p), list(p.values()))))
    got = reverse(step_fn, kept, T, lambda s: B, tg, every)
    assert sorted(got) == list(range(T))
    eps, fd = 1e-6, np.zeros((T, B))
    for s in range(T):
        for i in range(B):
            up, down = np.ones((T, B)), np.ones((T, B))
            up[s, i] += eps
            down[s, i] -= eps
            fd[s, i] = (_final_loss(up) - _final_loss(down)) / (2 * eps)
    rev = np.stack([got[s] for s in range(T)])
    assert np.abs(fd).max() > 1e-3, "a problem whose rollouts do not matter tests nothing"
    np.testing.assert_allclose(rev, fd, rtol=1e-5, atol=1e-8 * np.abs(fd).max())


def test_the_problem_clips_on_some_steps_and_not_on_others():
    """The finite-difference problem goes through both branches of the clipping (else the test above would not
    cover them): its gradient norm is above max_grad_norm on some steps and below it on others."""
    params, state, step_fn, _ = _problem()
    loss = step_fn.loss
    norms, p, st = [], params, state
    for s in range(T):
        p = {k: v.detach().requires_grad_() for k, v in p.items()}
        w = torch.ones(B, dtype=torch.float64)
        g = torch.autograd.grad(loss(p, s, w), list(p.values()))
        norms.append(float(torch.linalg.vector_norm(torch.cat([x.flatten() for x in g]))))
        p, st = step_fn(p, st, s, w, False)
    assert max(norms) > OPT.max_grad_norm > min(norms), norms


def test_checkpoint_spacing():
    assert checkpoint_every(100) == 10 and checkpoint_every(1) == 1 and checkpoint_every(101) == 11
