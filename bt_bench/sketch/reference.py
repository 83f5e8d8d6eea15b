"""Reference path: exact per-rollout gradients, by a loop and by torch.func, flattened in
``flat_parameters`` order. For tests (the factorized sketcher must agree with ``Sketcher.project`` of
these) and for the benchmark baselines (loop + dense projection, vmap + dense projection).

Both return grad(loss_i); callers negate it for the update direction -grad(loss_i) that a sketch holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from bt_bench.sketch.loss import LossFn, completion_logps, policy_loss_terms, slice_batch


def flat_parameters(model: nn.Module) -> tuple[list[str], list[tuple[int, ...]]]:
    """Names and shapes of the distinct parameter tensors (a tied weight once, under its first name)."""
    named = list(model.named_parameters())
    return [n for n, _ in named], [tuple(p.shape) for _, p in named]


def per_rollout_grads_loop(model: nn.Module, batch: Mapping[str, Any],
                           loss_fn: LossFn = policy_loss_terms) -> Tensor:
    """[B, P] exact grad(loss_i), one forward+backward per rollout (batch of one row)."""
    params = [p for _, p in model.named_parameters()]
    rows = []
    with torch.enable_grad():
        for i in range(batch["prompt_ids"].shape[0]):
            one = slice_batch(batch, slice(i, i + 1))
            loss = loss_fn(completion_logps(model, one), one).sum()
            grads = torch.autograd.grad(loss, params, allow_unused=True)
            rows.append(torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1).float()
                                   for p, g in zip(params, grads)]))
    return torch.stack(rows)


class _LogpsOf(nn.Module):
    """Wrapper so torch.func.functional_call can swap parameters under `completion_logps` (which calls
    the class forward, bypassing any instance patch). Tied weights follow (functional_call ties)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.inner = model

    def forward(self, batch: Mapping[str, Any]) -> Tensor:
        return completion_logps(self.inner, batch)


def per_rollout_grads_vmap(model: nn.Module, batch: Mapping[str, Any],
                           loss_fn: LossFn = policy_loss_terms) -> Tensor:
    """[B, P] exact grad(loss_i) by torch.func: vmap over rollouts of grad of the one-row loss."""
    names, _ = flat_parameters(model)
    wrapper = _LogpsOf(model)
    params = {f"inner.{n}": p.detach() for n, p in model.named_parameters()}
    full = slice_batch(batch, slice(None))
    b = full["prompt_ids"].shape[0]
    rowwise = {k: v for k, v in full.items() if isinstance(v, Tensor) and v.dim() >= 1 and v.shape[0] == b}
    fixed = {k: v for k, v in full.items() if k not in rowwise}

    def one_loss(p: dict[str, Tensor], row: dict[str, Tensor]) -> Tensor:
        one = {**fixed, **{k: v.unsqueeze(0) for k, v in row.items()}}
        return loss_fn(functional_call(wrapper, p, (one,)), one).sum()

    per = vmap(grad(one_loss), in_dims=(None, 0))(params, rowwise)
    return torch.cat([per[f"inner.{n}"].reshape(b, -1).float() for n in names], dim=1)
