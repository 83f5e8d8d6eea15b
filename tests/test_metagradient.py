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


# ------------------------------------------------------------------------------------------ fresh draws
C = 8  # a smoke checkpoint inside its run (W = 8)


def _draw_view_and_target(run):
    """A draw view at checkpoint C (the 16 rollouts generated at C stand in for fresh draws: only their rows are
    read) and a ``sequence`` target at C from rollouts of later steps."""
    from bt_bench.estimator import Checkpoint, Target
    from bt_bench.estimator.objective import TargetDefinition
    from bt_bench.estimator.views import CandidateData
    from estimators.metagradient import MetaGradient

    cols, cfg = run.columns, run.config
    step = np.asarray(cols["step"])
    rows = np.flatnonzero(step == C)[:16]
    keep = ("uid", "step", "group", "gen_index", "prompt_ids", "prompt_mask", "completion_ids", "completion_mask",
            "advantage")
    lr = float(np.asarray(cols["lr"])[np.flatnonzero(np.asarray(cols["trained_step"]) == C)[0]])
    data = CandidateData({k: np.asarray(cols[k])[rows] for k in keep}, source="draw", model_loader=run.load_model,
                         checkpoints=[Checkpoint(step=C, lr=lr, batch_size=float(cfg.rollouts_per_step))],
                         objective={"loss_type": cfg.loss_type, "temperature": cfg.temperature,
                                    "loss_batch_size": 6})  # chunks of 6: 16 rows split unevenly
    t = np.flatnonzero(step > C)[:12]
    d = {k: np.asarray(cols[k])[t] for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
    definition = TargetDefinition("sequence", **d, token_mask=d["completion_mask"], temperature=cfg.temperature)
    target = Target("in_context", {C: np.zeros(4)}, final_step=C, draw=0, definitions={C: definition})
    return data.view_for(MetaGradient()), target, lr


def test_a_draw_scores_lr_times_the_target_gradient_inner_product(smoke_run):
    """Each draw's score is lr_C <grad L_target, grad l_i> at C (a per-candidate loop, exact_tracin's), its
    derivative under a one-step SGD update that trains on it; deterministic; a float64 finite difference of that
    step agrees."""
    from bt_bench.estimator.objective import rollout_batch, rollout_losses
    from estimators.metagradient import MetaGradient

    torch.set_num_threads(1)
    view, target, lr = _draw_view_and_target(smoke_run)
    got = MetaGradient().score(view, target)
    assert np.array_equal(got, MetaGradient().score(view, target))  # deterministic, bit for bit

    model = view.model(C)
    params = [p for p in model.parameters() if p.requires_grad]
    g_t = torch.autograd.grad(target.loss(model), params)
    ref = np.zeros(len(view))
    for i in range(len(view)):
        g = torch.autograd.grad(rollout_losses(model, rollout_batch(view, [i]))[0], params, allow_unused=True)
        ref[i] = lr * sum(float((a * b.double()).sum()) for a, b in zip(g_t, g) if b is not None)
    assert np.abs(ref).max() > 0 and len(set(np.sign(ref))) > 1, "draws whose scores do not differ test nothing"
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6 * np.abs(ref).max())

    # the one SGD step theta - w lr grad l_i, differentiated in w at 0 by a central difference in float64
    from estimators.metagradient import sequence_loss64

    i = int(np.argmax(np.abs(ref)))
    g = torch.autograd.grad(rollout_losses(model, rollout_batch(view, [i]))[0], params)
    eps, vals = 1e-3, []
    for w in (eps, -eps):
        moved = view.model(C)
        with torch.no_grad():
            for p, gi in zip([p for p in moved.parameters() if p.requires_grad], g):
                p.sub_(w * lr * gi)
        vals.append(sequence_loss64(moved, target.definition()))
    fd = -(vals[0] - vals[1]) / (2 * eps)  # the score is -dL/dw
    assert fd == pytest.approx(got[i], rel=2e-2)


def test_a_token_restricted_draw_view_is_refused():
    """A rollout's weight multiplies its whole loss term: there is no token-restricted derivative."""
    from bt_bench.estimator import MissingInputError
    from estimators.metagradient import MetaGradient

    class _TokenView:
        token_level, source = True, "draw"

    with pytest.raises(MissingInputError, match="token-restricted"):
        MetaGradient().score(_TokenView(), None)
