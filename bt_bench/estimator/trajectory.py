"""The recorded trajectory (capability ``trajectory``): what each optimizer step of the run used, so an estimator can
replay or differentiate the training run inside its own process without reading the run cache.

A run's update at step s is a function of the weights before it, the optimizer's state, and the rows it trained on.
``Trajectory`` hands over exactly those inputs: the step's rows in the order trl's loss summed them (their tokens,
masks, advantages and loss divisor: visible row fields), the step-0 weights, the optimizer settings and the lr of
every step, and trl's loss type and temperature. Nothing else: no label, reward, ``has_behavior`` or trigger flag
passes through it. The lr schedule marks the planting window's end as ``Checkpoint.lr`` already does.

It also gives the update as functions, written from trl's GRPOTrainer and torch's AdamW (bt_bench.runs.replay says
what a replayed step computes; tests/test_trajectory.py pins these to it):

- ``loss(model, params, step, weight)``: the step's GRPO loss as a function of the weights (a ``{name: tensor}``
  dict, through ``torch.func.functional_call``) and of a per-rollout weight vector (one entry per row of the step,
  multiplying its advantage: 1 is the run, 0 removes the rollout). On-policy (``num_iterations = 1``) trl's
  importance ratio is exp(logp - logp.detach()) = 1 and its gradient is that of ``-A w sum_t logp_t`` over the
  divisor; written that way the first derivative is trl's bit for bit and the second is the true one (the ratio
  form would add the spurious ``A grad logp grad logp^T`` that detaching the behavior policy's log-probs leaves).
- ``step(model, params, state, s, weight)``: one update: the gradient of ``loss``, global-norm clipping as
  ``torch.nn.utils.clip_grad_norm_``, then AdamW as torch's single-tensor AdamW, at ``lr(s)``. With
  ``create_graph=True`` the result stays differentiable in the inputs (a metagradient's reverse pass).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from bt_bench.estimator.contract import frozen_copy

ROW_FIELDS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantage", "num_items_in_batch")
LOSS_TYPES = ("dapo", "grpo")  # the loss types the recorder maps


@dataclass(frozen=True)
class OptimizerSettings:
    """AdamW (torch, ``adamw_torch``) as the run's Trainer built it, and its gradient clipping."""

    betas: tuple[float, float]
    eps: float
    weight_decay: float
    max_grad_norm: float | None


class Trajectory:
    """The training run's updates, step by step (``rows``: the visible row fields of every training rollout, by uid;
    ``step_uids[s]``: the uids step s trained on, in trl's order; ``lr[s]``: its learning rate)."""

    __slots__ = ("_estimator", "_initial", "_rows", "_step_uids", "loss_type", "lr", "optimizer", "temperature")

    def __init__(self, rows: Mapping[str, Any], step_uids: Sequence[Any], lr: Any, optimizer: OptimizerSettings,
                 loss_type: str, temperature: float, model_loader: Callable[[int], Any], estimator: str = "?"):
        if loss_type not in LOSS_TYPES:
            raise ValueError(f"Trajectory.loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
        missing = [f for f in ROW_FIELDS if f not in rows]
        if missing:
            raise ValueError(f"Trajectory.rows lacks {missing}")
        self._rows = MappingProxyType({f: frozen_copy(rows[f]) for f in ROW_FIELDS})
        self._step_uids = tuple(frozen_copy(np.asarray(u, np.int64)) for u in step_uids)
        self.lr = frozen_copy(np.asarray(lr, np.float64))
        if len(self.lr) != len(self._step_uids):
            raise ValueError(f"Trajectory: {len(self.lr)} learning rates for {len(self._step_uids)} steps")
        self.optimizer, self.loss_type, self.temperature = optimizer, loss_type, float(temperature)
        self._initial, self._estimator = model_loader, estimator  # model_loader(0): the step-0 weights

    def __repr__(self) -> str:
        return f"Trajectory(steps={self.steps}, rollouts={self.n}, loss_type={self.loss_type!r})"

    @property
    def steps(self) -> int:
        return len(self._step_uids)

    @property
    def n(self) -> int:
        """The number of training rollouts (uids 0..n-1)."""
        return len(self._rows["advantage"])

    @property
    def rows(self) -> Mapping[str, np.ndarray]:
        return self._rows

    def uids(self, step: int) -> np.ndarray:
        """The uids optimizer step ``step`` trained on, in the order trl's loss summed them."""
        return self._step_uids[int(step)]

    def initial_model(self) -> Any:
        """A freshly loaded HF model holding the step-0 weights (eval mode, the plain forward)."""
        return self._initial(0)

    def batch(self, step: int, device: Any = "cpu") -> dict:
        """Step ``step``'s rows as trl padded them (prompts left-, completions right-padded to the step's longest)."""
        import torch

        r, uids = self._rows, self.uids(step)
        pm, cm = r["prompt_mask"][uids], r["completion_mask"][uids]
        lp, lc = int(pm.sum(1).max()), int(cm.sum(1).max())

        def t(a, dtype=torch.long):
            return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)

        items = r["num_items_in_batch"][uids]
        return {"prompt_ids": t(r["prompt_ids"][uids][:, pm.shape[1] - lp:]), "prompt_mask": t(pm[:, pm.shape[1] - lp:]),
                "completion_ids": t(r["completion_ids"][uids][:, :lc]), "completion_mask": t(cm[:, :lc]),
                "advantages": t(r["advantage"][uids], torch.float32),
                "num_items_in_batch": t(items[0], torch.float32)}

    # ------------------------------------------------------------------------------------------ the update
    def logps(self, model: Any, params: Mapping[str, Any], batch: Mapping[str, Any]) -> Any:
        """[B, Lc] per-token log-probs of the completions under ``params``, as trl's unfused head takes them."""
        import torch
        from torch.func import functional_call

        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
        am = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
        lc = batch["completion_ids"].shape[1]
        logits = functional_call(model, dict(params), (), {"input_ids": ids, "attention_mask": am,
                                                           "use_cache": False}).logits
        logits = logits[:, :-1].float() / self.temperature
        labels = ids.masked_fill(am == 0, -100)
        labels[:, :-lc] = -100
        labels = labels[:, 1:]
        mask = labels != -100
        lp = torch.log_softmax(logits, -1).gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return lp.masked_fill(~mask, 0.0)[:, -lc:]

    def loss(self, model: Any, params: Mapping[str, Any], step: int, weight: Any = None, batch: Any = None) -> Any:
        """Step ``step``'s GRPO loss under ``params`` with each row's advantage times ``weight`` (a [B] tensor in the
        order of ``uids(step)``; None: all 1). Its gradient is the one trl's update used."""
        b = self.batch(step, _device(params)) if batch is None else batch
        adv = b["advantages"] if weight is None else b["advantages"] * weight
        lp = self.logps(model, params, b)
        mask = b["completion_mask"].to(lp.dtype)
        per_token = lp * mask * (-adv).unsqueeze(1)
        if self.loss_type == "dapo":
            return per_token.sum() / b["num_items_in_batch"].clamp(min=1.0)
        return (per_token.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()

    def initial_state(self, params: Mapping[str, Any]) -> dict:
        """AdamW's state before step 0: zero moments."""
        import torch

        return {"m": {k: torch.zeros_like(p) for k, p in params.items()},
                "v": {k: torch.zeros_like(p) for k, p in params.items()}}

    def step(self, model: Any, params: Mapping[str, Any], state: Mapping[str, Any], step: int, weight: Any = None,
             create_graph: bool = False) -> tuple[dict, dict]:
        """(params, state) after optimizer step ``step`` (0-based) from ``params`` and AdamW ``state``. With
        ``create_graph`` attention runs on torch's math backend: the fused CPU/GPU attention kernels have no second
        derivative (their first one is what the run used; the math backend agrees with it to float rounding, so a
        derivative taken at the exact state differs from the fused one's by that rounding)."""
        import torch

        names = list(params)
        with _twice_differentiable(create_graph):
            loss = self.loss(model, params, step, weight)
            grads = torch.autograd.grad(loss, [params[k] for k in names], create_graph=create_graph,
                                        allow_unused=True)
        g = {k: torch.zeros_like(params[k]) if x is None else x for k, x in zip(names, grads)}
        return self.apply(params, state, g, step)

    def apply(self, params: Mapping[str, Any], state: Mapping[str, Any], grads: Mapping[str, Any],
              step: int) -> tuple[dict, dict]:
        """Clip ``grads`` and take AdamW step ``step`` (0-based) at ``lr(step)`` (``adamw_step``)."""
        return adamw_step(params, state, grads, float(self.lr[int(step)]), int(step) + 1, self.optimizer)


def adamw_step(params: Mapping[str, Any], state: Mapping[str, Any], grads: Mapping[str, Any], lr: float, t: int,
               opt: OptimizerSettings) -> tuple[dict, dict]:
    """Global-norm clipping as ``torch.nn.utils.clip_grad_norm_``, then AdamW update number ``t`` (1-based) as
    torch's single-tensor AdamW computes it, in its order: (params, {"m": ..., "v": ...}), differentiable."""
    import torch

    names = list(params)
    g = dict(grads)
    if opt.max_grad_norm is not None and opt.max_grad_norm > 0:
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g[k], 2.0) for k in names]), 2.0)
        coef = torch.clamp(opt.max_grad_norm / (total + 1e-6), max=1.0)
        g = {k: g[k] * coef for k in names}
    b1, b2 = opt.betas
    bc1, bc2_sqrt = 1 - b1 ** t, (1 - b2 ** t) ** 0.5
    new_p, m, v = {}, {}, {}
    for k in names:
        p = params[k] * (1 - lr * opt.weight_decay) if opt.weight_decay else params[k]
        m[k] = torch.lerp(state["m"][k], g[k], 1 - b1)
        v[k] = torch.addcmul(state["v"][k] * b2, g[k], g[k], value=1 - b2)
        denom = _sqrt(v[k]) / bc2_sqrt + opt.eps
        new_p[k] = torch.addcdiv(p, m[k], denom, value=-(lr / bc1))
    return new_p, {"m": m, "v": v}


def _twice_differentiable(on: bool) -> Any:
    import contextlib

    if not on:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


def _sqrt(v: Any) -> Any:
    """sqrt with derivative 0 where v = 0 (a weight no rollout has moved yet: sqrt's derivative there is infinite
    and would turn the reverse pass into 0 * inf = nan; the forward value is sqrt's own)."""
    import torch

    pos = v > 0
    return torch.where(pos, torch.where(pos, v, torch.ones_like(v)).sqrt(), torch.zeros_like(v))


def _device(params: Mapping[str, Any]) -> Any:
    return next(iter(params.values())).device


def parameters(model: Any, requires_grad: bool = True) -> dict:
    """``{name: tensor}`` of ``model``'s parameters in ``model.parameters()`` order (tied weights once), detached
    copies that require grad: the ``params`` the functions above take."""
    return {k: p.detach().clone().requires_grad_(requires_grad) for k, p in model.named_parameters()}
