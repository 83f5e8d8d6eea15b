"""The objective as public functions: what a model-based estimator differentiates.

A sketch-based estimator reads sketches; a model-based one (declares ``model``) gets ``candidates.model(step)``, a
freshly loaded HF model at a recorded checkpoint, and differentiates these functions itself. They are the exact
terms the suite's sketches are taken of (``bt_bench.sketch.loss``, verified against trl's loss), so a method that
sketches ``-grad`` of them with the run's sketch rebuilds the suite's own inputs (tests/test_objective.py):

- ``rollout_losses(model, rollout_batch(candidates, idx))`` -> [B] per-candidate losses, row i depending on row i
  only. Training rollouts: the rollout's term of trl's GRPO loss on-policy (``-A_i sum_t m_it logp_it /
  num_items_in_batch`` for dapo). Fresh draws were never trained on: ``-sum_t logp_t`` over the completion. In a
  token-restricted view: ``-sum_t logp_t`` over the behavior's token span only (``candidates.token_mask()``;
  zero rows for candidates without the behavior, whose scores the check ignores).
- ``target.loss(model)`` (``target_loss``) -> the scalar whose ``-grad`` the target vector sketches: the mean over
  the target's rows of their term (``TargetDefinition``: ids, masks, the token mask, the loss kind).

The label wall holds: nothing here carries GT, rewards or ``has_behavior`` of training rollouts. What a
definition does expose: the target's own rows, so definitions are handed to ``model`` estimators only. Such a
method could tell a placebo (handed over as an ``in_context`` target) from the real one by reading them, e.g. by
noticing that its masked tokens differ from row to row, or that its ``weight`` is not 1; docs/checklist.md
("Threat model") says why process isolation and fresh fixtures, not this interface, are what stop that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bt_bench.estimator.contract import frozen_copy
from bt_bench.fixture.targets import DEFINITION_FIELDS, LOSS_OF

TARGET_LOSSES = tuple(sorted(set(LOSS_OF.values())))  # "sequence", "token"
CANDIDATE_LOSSES = ("policy", "likelihood", "token")


@dataclass(frozen=True)
class TargetDefinition:
    """The rows a target vector was built from at one checkpoint (``bt_bench.fixture.targets``).

    ``loss``: "token" (-sum of log-probs at ``token_mask``) or "sequence" (-mean log-prob of the completion);
    ``temperature``: the run's sampling temperature (log-probs of logits / temperature, as trl takes them);
    ``weight``: the factor on the mean (1 except for a placebo: the factor that gives it the real target's norm;
    its handed vector is that rescaled sketch with its entries rearranged, ``bt_bench.fixture.targets.disguise``). Arrays are read-only copies: ids [R, L], masks [R, L]. R = 0 where the
    target is the zero vector."""

    loss: str
    prompt_ids: np.ndarray
    prompt_mask: np.ndarray
    completion_ids: np.ndarray
    completion_mask: np.ndarray
    token_mask: np.ndarray
    temperature: float = 1.0
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.loss not in TARGET_LOSSES:
            raise ValueError(f"TargetDefinition.loss must be one of {TARGET_LOSSES}, got {self.loss!r}")
        for f in DEFINITION_FIELDS:
            object.__setattr__(self, f, frozen_copy(getattr(self, f)))
        if self.completion_ids.shape != self.token_mask.shape:
            raise ValueError(f"TargetDefinition.token_mask has shape {self.token_mask.shape}, expected the "
                             f"completion_ids shape {self.completion_ids.shape}")

    def __len__(self) -> int:
        return int(self.completion_ids.shape[0])

    def loss_under(self, model: Any) -> Any:
        """``target_loss(model, self)``: what ``Target.loss`` returns."""
        return target_loss(model, self)

    def batch(self, index: Any = slice(None), device: Any = "cpu") -> dict:
        """Rows ``index`` as a torch batch for ``target_terms``."""
        return _batch({f: getattr(self, f) for f in DEFINITION_FIELDS}, index, device, self.temperature)


def _batch(rows: Mapping[str, np.ndarray], index: Any, device: Any, temperature: float) -> dict:
    import torch

    def t(name: str, dtype=torch.long):
        return torch.as_tensor(np.array(np.asarray(rows[name])[index]), device=device).to(dtype)

    b: dict[str, Any] = {k: t(k) for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
    keep = b["prompt_mask"].sum(0) > 0  # drop all-pad prompt columns (trl pads each batch to its own max length)
    b["prompt_ids"], b["prompt_mask"] = b["prompt_ids"][:, keep], b["prompt_mask"][:, keep]
    if "token_mask" in rows:
        b["token_mask"] = t("token_mask")
    b["temperature"] = float(temperature)
    return b


def target_terms_fn(loss: str):
    """The loss function form (logps, batch) -> [R] of a target's per-row terms, for a ``Sketcher``."""
    from bt_bench.sketch import sequence_logprob_terms, token_logprob_terms

    return {"token": token_logprob_terms, "sequence": sequence_logprob_terms}[loss]


def target_terms(model: Any, batch: Mapping[str, Any], loss: str) -> Any:
    """[R] per-row terms of a target (``TargetDefinition.loss``) under ``model``."""
    from bt_bench.sketch import completion_logps

    return target_terms_fn(loss)(completion_logps(model, batch), batch)


def target_loss(model: Any, definition: TargetDefinition, batch_size: int = 128) -> Any:
    """The scalar whose -grad the target vector sketches: ``weight`` times the mean over the definition's rows of
    their term. Summed over row chunks of ``batch_size`` (one graph; call ``.backward()`` once)."""
    import torch

    n = len(definition)
    if n == 0:
        return torch.zeros((), requires_grad=False)
    total = 0.0
    for s in range(0, n, batch_size):
        b = definition.batch(slice(s, min(n, s + batch_size)), device=_device(model))
        total = total + target_terms(model, b, definition.loss).sum()
    mean = total / n
    return mean if definition.weight == 1 else mean * float(definition.weight)


def rollout_batch(candidates: Any, index: Any = slice(None), device: Any = None) -> dict:
    """Rows ``index`` of a ``Candidates`` view as the batch ``rollout_losses`` takes (torch tensors on
    ``device``, default cpu), with the view's objective facts (``candidates.objective``)."""
    import torch

    obj = candidates.objective
    rows = {k: getattr(candidates, k) for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
    if obj["loss"] == "token":
        rows["token_mask"] = candidates.token_mask()
    b = _batch(rows, index, device or "cpu", obj["temperature"])
    b["loss"] = obj["loss"]
    if obj["loss"] == "policy":
        b["advantages"] = torch.as_tensor(np.asarray(candidates.advantage)[index], device=b["prompt_ids"].device,
                                          dtype=torch.float32)
        b["num_items_in_batch"] = torch.as_tensor(np.asarray(candidates.num_items_in_batch)[index],
                                                  device=b["prompt_ids"].device, dtype=torch.float32)
        b["loss_type"], b["loss_batch_size"] = obj["loss_type"], obj["loss_batch_size"]
    return b


def candidate_terms(logps: Any, batch: Mapping[str, Any]) -> Any:
    """The loss function form (logps [B, Lc], batch) -> [B] of ``rollout_losses``, for a ``Sketcher``."""
    from bt_bench.sketch import policy_loss_terms, token_logprob_terms

    loss = batch.get("loss")
    if loss not in CANDIDATE_LOSSES:
        raise ValueError(f"batch['loss'] must be one of {CANDIDATE_LOSSES} (build it with rollout_batch), "
                         f"got {loss!r}")
    if loss == "policy":
        return policy_loss_terms(logps, batch)
    if loss == "likelihood":
        return token_logprob_terms(logps, {**batch, "token_mask": batch["completion_mask"]})
    return token_logprob_terms(logps, batch)


def rollout_losses(model: Any, batch: Mapping[str, Any]) -> Any:
    """[B] each candidate's loss term under ``model`` (module docstring): its -grad is what the candidate's
    sketch sketches. ``batch`` from ``rollout_batch``."""
    from bt_bench.sketch import completion_logps

    return candidate_terms(completion_logps(model, batch), batch)


def _device(model: Any) -> Any:
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return "cpu"
