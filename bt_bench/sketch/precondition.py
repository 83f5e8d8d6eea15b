"""Sketches of the AdamW-preconditioned per-rollout gradient, P * g with P = 1 / (sqrt(v) + eps), elementwise.

Used by ``Sketcher.sketch(batch, precondition=...)``: the map S is the sketcher's own (same spec, same blocks,
same seeds), so a preconditioned sketch S(P * g) and a plain one S(g) live in one space (``tracin_adam`` reads
the former; the target's ``Target.preconditioned`` is made the same way).

Why materialise: the factorized block P_out^T G P_in is computed from the factors delta_t and a_t of
G = sum_t delta_t a_t^T without ever forming G; an elementwise P * G has no such factorisation. So here every
weight-matrix use gets identity factors (its hook forms the exact per-rollout gradient [B, d_out, d_in], the
embedding's through a one-hot [B, T, V]), the hook multiplies it by P and applies the block's real projection
at once, and the projected value is what accumulates (S is linear, so the two uses of a tied weight may be
projected apart). Small tensors are exact per rollout anyway: they are scaled before their sparse JL.

Cost: one matrix at a time, B * d_out * d_in floats and B * T * d_out * d_in multiply-adds per use, instead of
B * T * (d_out + d_in) * k. At hidden 64-256 that is nothing. At 1.5B parameters (Qwen2.5-1.5B: hidden 1536,
MLP 8960, vocab 151936, tied) one rollout's gradient is ~6 GB in float32, the embedding alone ~0.93 GB plus a
[T, 151936] one-hot; peak memory ~1 GB per rollout of the chunk (use ``chunk_size``), and the matmuls cost
about T * 2 * 1.5e9 flops per rollout (~1.5 TFLOP at T = 512): seconds per rollout on one GPU, feasible for
a few thousand rollouts at a handful of checkpoints, not for every in-run step.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from bt_bench.sketch.hooks import EmbeddingRule, LinearRule, MatrixBlock, Rule
from bt_bench.sketch.projectors import IdentityFactor

# torch.optim.AdamW's eps, which trl/transformers keep (TrainingArguments.adam_epsilon = 1e-8, beta2 = 0.999):
# the planted runs train with optim="adamw_torch" and these defaults (bt_bench.runs.train).
ADAMW_EPS = 1e-8
ADAMW_BETA2 = 0.999


def adam_preconditioner(exp_avg_sq: Mapping[str, Tensor], eps: float = ADAMW_EPS, step: int | None = None,
                        beta2: float = ADAMW_BETA2) -> dict[str, Tensor]:
    """{name: 1 / (sqrt(v) + eps)} from AdamW's second moment ``exp_avg_sq`` (a checkpoint's adam_v).

    With ``step`` (the optimizer steps taken, i.e. the checkpoint's step) v is first bias-corrected,
    v / (1 - beta2^step), which makes P exactly torch.optim.AdamW's denominator at that state; without it,
    P = 1 / (sqrt(v) + eps) on the stored v. The correction is one scalar for every parameter, so it changes a
    cosine only through eps."""
    if step is not None and int(step) < 1:  # checkpoint 0 is saved before any step: there is no v to use
        raise ValueError(f"adam_preconditioner: step must be >= 1 (steps AdamW has taken), got {step!r}")
    scale = 1.0 if step is None else 1.0 / (1.0 - beta2 ** int(step))
    return {n: 1.0 / ((v.double() * scale).sqrt() + eps).float() for n, v in exp_avg_sq.items()}


class Preconditioned:
    """One preconditioner prepared for one sketcher: rules with identity blocks, per-block transforms that scale
    and project, the flat small-tensor scale, and (kind "dense") the flat scale of every parameter."""

    def __init__(self, sketcher: Any, precondition: Mapping[str, Tensor]) -> None:
        # sketcher: a bt_bench.sketch.Sketcher (not imported here: sketcher.py imports this module)
        named = dict(sketcher.model.named_parameters())
        missing = sorted(set(named) - set(precondition))
        if missing:
            raise ValueError(f"precondition: no scale for parameter(s) {missing}")
        scales = {}
        for name, p in named.items():
            s = torch.as_tensor(precondition[name]).to(device=sketcher.device, dtype=torch.float32)
            if tuple(s.shape) != tuple(p.shape):
                raise ValueError(f"precondition[{name!r}] has shape {tuple(s.shape)}, parameter {tuple(p.shape)}")
            scales[name] = s
        if sketcher.spec.kind == "dense":
            self.flat = torch.cat([scales[n].reshape(-1) for n in sketcher.names])
            return
        small = torch.ones(max(sketcher.n_small, 1), device=sketcher.device)
        for name, offset in sketcher.small_offsets.items():
            small[offset : offset + scales[name].numel()] = scales[name].reshape(-1)
        self.small = small
        self.transforms = {n: _scale_then_project(b, scales[n]) for n, b in sketcher.blocks.items()}
        exact = {n: MatrixBlock(n, IdentityFactor(b.out_factor.d), IdentityFactor(b.in_factor.d))
                 for n, b in sketcher.blocks.items()}
        self.rules = [_with_block(r, exact) for r in sketcher.rules]


def _scale_then_project(block: MatrixBlock, scale: Tensor) -> Callable[[Tensor], Tensor]:
    def transform(exact: Tensor) -> Tensor:  # [B, d_out * d_in] from an identity block
        return block.project_exact(exact.reshape(exact.shape[0], *scale.shape) * scale)

    return transform


def _with_block(rule: Rule, exact: Mapping[str, MatrixBlock]) -> Rule:
    if not isinstance(rule, (LinearRule, EmbeddingRule)):
        return rule
    out = copy.copy(rule)
    out.block = exact[rule.block.name]
    return out
