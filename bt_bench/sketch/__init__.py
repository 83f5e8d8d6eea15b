"""Per-rollout gradient sketches: loss terms, hooks, projections, reference path (a leaf library: it imports
nothing else of bt_bench, docs/architecture.md).

Front: ``Sketcher(model, spec).sketch(batch, loss_fn) -> np.ndarray [B, k]``; see sketcher.py. The AdamW-
preconditioned sketch, same map: ``.sketch(batch, loss_fn, precondition=adam_preconditioner(v))``."""

from bt_bench.sketch.loss import (
    LossFn,
    completion_logps,
    policy_loss_terms,
    sequence_logprob_terms,
    slice_batch,
    token_logprob_terms,
)
from bt_bench.sketch.precondition import ADAMW_EPS, adam_preconditioner
from bt_bench.sketch.sketcher import Sketcher
from bt_bench.sketch.spec import PRESETS, SketchSpec, preset

__all__ = [
    "ADAMW_EPS",
    "PRESETS",
    "LossFn",
    "SketchSpec",
    "Sketcher",
    "adam_preconditioner",
    "completion_logps",
    "policy_loss_terms",
    "preset",
    "sequence_logprob_terms",
    "slice_batch",
    "token_logprob_terms",
]
