"""The suite's objective as a torch module a library can drive (imported at scoring time: it needs torch).

Libraries want a module and a dataset of examples. ``RowObjective`` holds the checkpoint LM and maps a tensor of
row indices to per-row loss terms: candidate rows give ``rollout_losses`` (their ``-grad`` is what the suite's
sketch of the candidate sketches); the sentinel ``TARGET_ROW`` gives ``target.loss`` at the loaded checkpoint (the
mean over the target's rows, so one "test example" carries the whole target gradient). The library then does its
own per-example differentiation, projection, Hessian or kernel on exactly the suite's objective.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from bt_bench.estimator import Candidates, EstimatorError, Target, rollout_batch, rollout_losses

TARGET_ROW = -1


class RowObjective(torch.nn.Module):
    """forward(idx [B]) -> [B] loss terms: candidate rows ``idx >= 0``, or ``[TARGET_ROW]`` -> the target loss.

    ``load(step)`` puts the weights of checkpoint ``step`` into the one LM (each checkpoint is loaded from the
    view once and kept as a state dict: parameters x checkpoints x 4 bytes)."""

    def __init__(self, candidates: Candidates, target: Target, steps: list[int]):
        super().__init__()
        self._cands, self._target = candidates, target
        self._states = {s: candidates.model(s).state_dict() for s in steps}
        self.lm = candidates.model(steps[-1])
        self.step = steps[-1]

    @property
    def device(self) -> torch.device:
        return next(self.lm.parameters()).device

    def load(self, step: int) -> None:
        if step != self.step:
            self.lm.load_state_dict(self._states[step])
            self.step = step

    def state(self, step: int) -> dict[str, torch.Tensor]:
        """Checkpoint ``step`` as a state dict of this module (keys ``lm.*``), for libraries that load it."""
        return {f"lm.{k}": v for k, v in self._states[step].items()}

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        idx = idx.reshape(-1)
        if bool((idx == TARGET_ROW).all()):
            return self._target.loss(self.lm, self.step).reshape(1).expand(len(idx))
        if bool((idx < 0).any()):
            raise EstimatorError("adapter", "a batch mixes the target row with candidate rows")
        return rollout_losses(self.lm, rollout_batch(self._cands, idx.cpu().numpy(), device=self.device))


def rows(n: int) -> torch.Tensor:
    """The candidate "dataset": row indices 0..n-1 (a library batches them; ``RowObjective`` resolves them)."""
    return torch.arange(n, dtype=torch.long)


def target_row() -> torch.Tensor:
    return torch.tensor([TARGET_ROW], dtype=torch.long)


def batches(n: int, size: int):
    """Contiguous index batches in row order (libraries that take batches one call at a time)."""
    for s in range(0, n, size):
        yield torch.arange(s, min(n, s + size), dtype=torch.long)


def as_scores(x: Any, n: int) -> np.ndarray:
    out = np.asarray(x.detach().cpu().double() if torch.is_tensor(x) else x, dtype=np.float64).reshape(-1)
    if out.shape[0] != n:
        raise EstimatorError("adapter", f"the library returned {out.shape[0]} scores for {n} candidates")
    return out
