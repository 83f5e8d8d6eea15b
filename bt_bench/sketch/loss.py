"""Per-rollout loss terms of trl's GRPO loss, and the plain HF forward they are computed with.

A rollout's sketch is the sketch of -grad(loss_i) (schema.md, "Sketch semantics"), where loss_i is the
rollout's exact term of trl 1.16's ``GRPOTrainer._compute_loss`` on-policy with beta=0. On-policy the
importance ratio exp(logp - logp.detach()) is 1 with gradient grad(logp), so the clipped objective's
gradient is -A_i grad(logp_it), and
  dapo: loss_i = -A_i * sum_t m_it logp_it / num_items_in_batch
  grpo: loss_i = -A_i * (sum_t m_it logp_it / max(1, sum_t m_it)) / loss_batch_size
with logp of temperature-scaled logits (trl ``add_fused_lm_head(temperature=...)``).

Batch format (a dict of torch tensors): prompt_ids [B,Lp] left-padded, prompt_mask [B,Lp],
completion_ids [B,Lc] right-padded, completion_mask [B,Lc], advantages [B], num_items_in_batch (scalar or
[B]), and the plain entries loss_type ("dapo" | "grpo") and temperature (float). Optional:
loss_batch_size (grpo divisor; default B, set it when a batch is a slice of a larger one: trl divides by
the micro-batch size times the gradient-accumulation steps) and token_mask [B,Lc] (token-restricted
losses). num_items_in_batch must be the *effective* dapo normalizer of the step: trl divides the stored
count by num_processes and multiplies by gradient_accumulation_steps / steps_per_generation.

A loss function is any callable (logps [B,Lc], batch) -> per-rollout losses [B] in which row i depends
on row i only; the sketcher then separates rollouts exactly. Targets reuse it (checklist.md, "Target").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

LossFn = Callable[[Tensor, Mapping[str, Any]], Tensor]
TENSOR_KEYS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")
LOSS_TYPES = ("dapo", "grpo")


def check_batch(batch: Mapping[str, Any], need: tuple[str, ...] = ()) -> None:
    """Raise ValueError naming the first missing or mis-shaped entry."""
    for key in TENSOR_KEYS + need:
        if key not in batch:
            raise ValueError(f"batch[{key!r}] is missing (needed: {TENSOR_KEYS + need})")
    b, lp = batch["prompt_ids"].shape
    lc = batch["completion_ids"].shape[1]
    shapes = {"prompt_mask": (b, lp), "completion_ids": (b, lc), "completion_mask": (b, lc),
              "advantages": (b,), "token_mask": (b, lc)}
    for key, shape in shapes.items():
        if key in batch and tuple(batch[key].shape) != shape:
            raise ValueError(f"batch[{key!r}] has shape {tuple(batch[key].shape)}, expected {shape}")


def model_inputs(batch: Mapping[str, Any]) -> tuple[Tensor, Tensor, int]:
    """input_ids, attention_mask, logits_to_keep exactly as trl's ``_compute_loss`` builds them."""
    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1).long()
    attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1).long()
    return input_ids, attention_mask, batch["completion_ids"].shape[1]


def completion_logps(model: torch.nn.Module, batch: Mapping[str, Any]) -> Tensor:
    """Per-token log-probs [B, Lc] of the completion tokens under logits / temperature.

    Calls the model *class's* forward, so a forward patched on the instance (trl's
    ``add_fused_lm_head``) is bypassed. Like trl, no position_ids are passed (HF uses arange(L) even
    with left padding) and only the last Lc+1 positions are projected by the LM head; the position
    before each completion token predicts it. Every module, the LM head included, runs as a module
    so the sketch hooks see every use of every parameter.
    """
    check_batch(batch)
    input_ids, attention_mask, lc = model_inputs(batch)
    out = type(model).forward(
        model, input_ids=input_ids, attention_mask=attention_mask, use_cache=False, logits_to_keep=lc + 1
    )
    logits = out.logits[:, :-1].float() / float(batch.get("temperature", 1.0))
    logps = torch.log_softmax(logits, dim=-1)
    return logps.gather(-1, batch["completion_ids"].long().unsqueeze(-1)).squeeze(-1)


def policy_loss_terms(logps: Tensor, batch: Mapping[str, Any]) -> Tensor:
    """Each rollout's term of trl's GRPO loss (module docstring); sums to the batch loss."""
    check_batch(batch, ("advantages", "loss_type"))
    mask = batch["completion_mask"].to(logps.dtype)
    adv = batch["advantages"].to(logps.dtype)
    seq = (logps * mask).sum(-1)
    loss_type = batch["loss_type"]
    if loss_type == "dapo":
        if "num_items_in_batch" not in batch:
            raise ValueError("batch['num_items_in_batch'] is missing (needed for loss_type='dapo')")
        n_items = torch.as_tensor(batch["num_items_in_batch"], dtype=logps.dtype).clamp(min=1.0)
        return -adv * seq / n_items
    if loss_type == "grpo":
        n_batch = float(batch.get("loss_batch_size", logps.shape[0]))
        return -adv * seq / mask.sum(-1).clamp(min=1.0) / n_batch
    raise ValueError(f"batch['loss_type']={loss_type!r}: allowed values are {LOSS_TYPES}")


def token_logprob_terms(logps: Tensor, batch: Mapping[str, Any]) -> Tensor:
    """-(sum of log-probs at the positions of batch['token_mask']): no advantage weighting.

    Its sketch is the gradient of the log-prob of the chosen tokens only: token-restricted candidate
    sketches and the `in_context` target (checklist.md, "Target")."""
    check_batch(batch, ("token_mask",))
    mask = batch["token_mask"].to(logps.dtype) * batch["completion_mask"].to(logps.dtype)
    return -(logps * mask).sum(-1)


def sequence_logprob_terms(logps: Tensor, batch: Mapping[str, Any]) -> Tensor:
    """-(mean log-prob of the whole completion): the `sequence` target (checklist.md, "Target")."""
    mask = batch["completion_mask"].to(logps.dtype)
    return -(logps * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)


def slice_batch(batch: Mapping[str, Any], index: slice | Tensor) -> dict[str, Any]:
    """Rows `index` of a batch. Keeps the loss of each row unchanged: the grpo divisor is pinned to
    the full batch size and a per-row num_items_in_batch is sliced."""
    b = batch["prompt_ids"].shape[0]
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, Tensor) and value.dim() >= 1 and value.shape[0] == b:
            out[key] = value[index]
        else:
            out[key] = value
    out.setdefault("loss_batch_size", b)
    return out
