"""Exact influence through the recorded trajectory: the metagradient of the target's loss with respect to each
training rollout's weight in the update (MAGIC, Ilyas & Engstrom 2025, arXiv 2504.16430, for GRPO).

The run is a deterministic function of the per-rollout weights w (1 = trained on as recorded, 0 = removed): each
optimizer step s maps (theta, AdamW's m and v) through trl's GRPO loss of its rows (advantages times w), global-norm
clipping and AdamW at the step's lr (``bt_bench.estimator.trajectory``; bit-equal to the replay's trl step on a CPU).
The score of rollout i is -dL_target(theta_c)/dw_i at w = 1, c the target's checkpoint: positive when training more
on i lowers the target's loss, the sign of TracIn's <g_target, -grad loss_i> (its one-step SGD special case).

Reverse mode, one pass for every rollout at once: the forward replay keeps the state every ``every`` steps; going
back, each segment is recomputed from its kept state and each step's vector-Jacobian product (a gradient of the
step's own gradient: a Hessian-vector product through the model, the clipping and AdamW's moments) carries the
adjoint of (theta, m, v) one step back and gives the derivative for that step's rollouts. Forward mode would need a
pass per rollout. Memory: sqrt(T) kept states plus one segment and one step's double-backward graph.

Uses only capabilities ``trajectory`` (the update) and ``model`` (the target's loss as a function of the weights);
rollouts trained at or after the target's checkpoint cannot have moved it: they score 0. Deterministic (no
sampling; CPU arithmetic).

Fresh draws (``draw_scores``) were never trained on: each gets the derivative it would have if it were added, with
weight w, to the update at the draw's checkpoint c, the target read at c (the only target a draw view holds): to
first order in the step, -dL/dw = lr_c <grad L_target(theta_c), grad l_i(theta_c)>, l_i the draw's own loss term
(``candidates.objective``: -sum log p of its completion), i.e. the target-gradient inner product at c times the
step's lr. This is the plain-SGD form of that one step, an approximation of the run's: a draw view carries no
trajectory (training views only), so neither AdamW's moments m_c, v_c nor step c's own gradient are there, and
with them go the preconditioning 1/(sqrt(v_hat_c) + eps), the moment terms and the clipping factor of the step (a
positive factor common to every draw of the step: no rank change). Nothing is propagated: the target is at c.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from bt_bench.estimator import Candidates, Capability, MissingInputError, Target

StepFn = Callable[[dict, dict, int, Any, bool], tuple[dict, dict]]


def _detached(params: Mapping[str, Any], state: Mapping[str, Any]) -> tuple[dict, dict]:
    return ({k: p.detach() for k, p in params.items()},
            {a: {k: x.detach() for k, x in d.items()} for a, d in state.items()})


def _leaf(t: Any) -> Any:
    return t.detach().requires_grad_(True)


def replay_states(step_fn: StepFn, params: dict, state: dict, until: int, rows: Callable[[int], int],
                  every: int) -> tuple[dict, dict, dict[int, tuple[dict, dict]]]:
    """Run steps 0..until-1 at weight 1; return (params, state) after them and the kept states {s: state before s}
    for s = 0, every, 2 every, ..."""
    kept = {}
    p, st = _detached(params, state)
    for s in range(until):
        if s % every == 0:
            kept[s] = (p, st)
        p = {k: _leaf(x) for k, x in p.items()}
        p, st = step_fn(p, st, s, _ones(rows(s), p), False)
        p, st = _detached(p, st)
    return p, st, kept


def reverse(step_fn: StepFn, kept: Mapping[int, tuple[dict, dict]], until: int, rows: Callable[[int], int],
            target_grad: Mapping[str, Any], every: int) -> dict[int, np.ndarray]:
    """{step s: d L/d w_s} ([rows(s)] float64, in the step's row order) for s < until, given the adjoint
    ``target_grad`` = dL/dtheta at the state after ``until`` steps (dL/dm = dL/dv = 0: the target reads weights
    only)."""
    import torch

    names = list(target_grad)
    lam_p = {k: target_grad[k].detach() for k in names}
    lam_m = lam_v = None
    out: dict[int, np.ndarray] = {}
    starts = sorted(s for s in kept if s < until)
    for a in reversed(starts):
        b = min(a + every, until)
        seg = [kept[a]]
        for s in range(a, b - 1):  # the states before a+1 .. b-1, recomputed from the kept one
            p, st = seg[-1]
            p, st = step_fn({k: _leaf(x) for k, x in p.items()}, st, s, _ones(rows(s), p), False)
            seg.append(_detached(p, st))
        for s in range(b - 1, a - 1, -1):
            p0, st0 = seg[s - a]
            p = {k: _leaf(x) for k, x in p0.items()}
            st = {a_: {k: _leaf(x) for k, x in d.items()} for a_, d in st0.items()}
            w = _ones(rows(s), p).requires_grad_(True)
            p1, st1 = step_fn(p, st, s, w, True)
            outs = [p1[k] for k in names]
            cots = [lam_p[k] for k in names]
            if lam_m is not None:
                outs += [st1["m"][k] for k in names] + [st1["v"][k] for k in names]
                cots += [lam_m[k] for k in names] + [lam_v[k] for k in names]
            ins = [p[k] for k in names] + [st["m"][k] for k in names] + [st["v"][k] for k in names] + [w]
            g = torch.autograd.grad(outs, ins, cots, allow_unused=True)
            z = len(names)
            lam_p = {k: _or_zero(g[j], p[k]) for j, k in enumerate(names)}
            lam_m = {k: _or_zero(g[z + j], p[k]) for j, k in enumerate(names)}
            lam_v = {k: _or_zero(g[2 * z + j], p[k]) for j, k in enumerate(names)}
            out[s] = _or_zero(g[3 * z], w).double().numpy()
    return out


def _or_zero(grad: Any, like: Any) -> Any:
    import torch

    return torch.zeros_like(like) if grad is None else grad.detach()


def _ones(n: int, like: Mapping[str, Any]) -> Any:
    import torch

    return torch.ones(n, dtype=next(iter(like.values())).dtype)


def checkpoint_every(until: int) -> int:
    return max(1, math.ceil(math.sqrt(until)))


def target_gradient(model: Any, params: Mapping[str, Any], loss: Callable[[Any], Any]) -> dict:
    """dL/dtheta of ``loss(model)`` at ``params`` (loaded into ``model``), by parameter name."""
    import torch

    with torch.no_grad():
        for k, p in model.named_parameters():
            p.copy_(params[k])
    model.zero_grad(set_to_none=True)
    loss(model).backward()
    return {k: (torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()) for k, p in model.named_parameters()}


class MetaGradient:
    """Metagradient (MAGIC, Ilyas & Engstrom 2025): score_i = -dL_target(theta_c)/dw_i at w = 1.

    Exact derivative of the target's loss at its checkpoint with respect to each training rollout's weight in the
    update (w_i = 1), through trl's GRPO term, gradient clipping and AdamW with its moments and lr schedule, by
    reverse mode with checkpointed recomputation (module docstring). Fresh draws: lr_c times the target-gradient
    inner product at their checkpoint, the one-step SGD form of that derivative (``draw_scores``). Opt-in (selected
    by name, not in the default set): it replays and differentiates the run for every target it scores.
    """

    name = "metagradient"
    description = "Metagradient (MAGIC, Ilyas+ 2025): -dL_target/dw_i through every recorded GRPO + AdamW step"
    capabilities = frozenset({Capability.TRAJECTORY, Capability.MODEL})
    level = "rollout"
    opt_in = True

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        if candidates.token_level:
            raise MissingInputError(self.name, "no token-restricted scores: the weight of a rollout multiplies its "
                                               "whole loss term")
        if candidates.source != "training":
            return draw_scores(candidates, target, self.name)
        dw = metagradient(candidates.trajectory(), target)
        return -dw[np.asarray(candidates.uid)]


def draw_scores(candidates: Candidates, target: Target, name: str = "metagradient") -> np.ndarray:
    """[M] lr_c <grad L_target(theta_c), grad l_i(theta_c)> for the candidates of a draw view at the target's
    checkpoint c (module docstring: -dL/dw_i of a one-step update at c that trains on candidate i with weight w,
    without AdamW's preconditioning). All candidates at once per chunk: the gradient of sum_i u_i l_i is
    differentiated once more along the target gradient, d/du_i <grad sum_j u_j l_j, g_t> = <grad l_i, g_t> (math
    attention: the fused kernels have no second derivative)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from bt_bench.estimator.objective import rollout_batch, rollout_losses

    c = int(target.final_step)
    lr = float(candidates.checkpoint(c).lr)  # MissingInputError if the view has no checkpoint c
    out = np.zeros(len(candidates), np.float64)
    model = candidates.model(c)
    params = [p for p in model.parameters() if p.requires_grad]
    loss = target.loss(model)
    if not loss.requires_grad or len(candidates) == 0:  # a zero target (no rows)
        return out
    g_t = [torch.zeros_like(p) if g is None else g.detach()
           for p, g in zip(params, torch.autograd.grad(loss, params, allow_unused=True))]
    size = max(1, int(candidates.objective.get("loss_batch_size") or 64))
    with sdpa_kernel([SDPBackend.MATH]):
        for a in range(0, len(candidates), size):
            idx = np.arange(a, min(len(candidates), a + size))
            terms = rollout_losses(model, rollout_batch(candidates, idx))
            u = torch.ones(len(idx), dtype=terms.dtype, requires_grad=True)
            gs = torch.autograd.grad((terms * u).sum(), params, create_graph=True, allow_unused=True)
            dot = sum((g * t).sum() for g, t in zip(gs, g_t) if g is not None)
            if not isinstance(dot, torch.Tensor) or not dot.requires_grad:
                continue
            out[idx] = torch.autograd.grad(dot, u)[0].detach().double().numpy()
    return lr * out


def metagradient(traj: Any, target: Target) -> np.ndarray:
    """[n] dL_target(theta_c)/dw_i for every training rollout (0 for rollouts of steps >= c)."""
    return metagradient_of(traj, min(int(target.final_step), traj.steps), lambda m: target.loss(m))


def metagradient_of(traj: Any, until: int, loss: Callable[[Any], Any]) -> np.ndarray:
    """[n] d loss(model at theta_until)/dw_i for every training rollout (0 for rollouts of steps >= until)."""
    from bt_bench.estimator.trajectory import parameters

    model = traj.initial_model()
    model.train()  # as the run trained (dropout is off in these runs)
    params = parameters(model)

    def step_fn(p, st, s, w, create_graph):
        return traj.step(model, p, st, s, w, create_graph=create_graph)

    def rows(s):
        return len(traj.uids(s))

    every = checkpoint_every(until)
    final, _, kept = replay_states(step_fn, params, traj.initial_state(params), until, rows, every)
    per_step = reverse(step_fn, kept, until, rows, target_gradient(model, final, loss), every)
    out = np.zeros(traj.n, np.float64)
    for s, d in per_step.items():
        out[traj.uids(s)] = d
    return out


def sequence_loss64(model: Any, definition: Any) -> float:
    """A ``sequence`` target's loss (``bt_bench.estimator.objective.target_loss``) in float64 throughout, for
    finite-difference checks of the derivative: ``completion_logps`` casts logits to float32, whose rounding (1.2e-7
    at a loss near 1) is above many rollouts' effect on the target."""
    import copy

    import torch

    from bt_bench.sketch.loss import model_inputs, sequence_logprob_terms

    m = copy.deepcopy(model).double()
    b = definition.batch()
    ids, am, lc = model_inputs(b)
    with torch.no_grad():
        logits = type(m).forward(m, input_ids=ids, attention_mask=am, use_cache=False,
                                 logits_to_keep=lc + 1).logits[:, :-1] / definition.temperature
        lp = torch.log_softmax(logits, -1).gather(-1, b["completion_ids"].long().unsqueeze(-1)).squeeze(-1)
    return float(sequence_logprob_terms(lp, b).mean()) * float(definition.weight)
