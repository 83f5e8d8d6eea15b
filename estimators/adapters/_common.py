"""The protocol members every adapter shares. No torch here: listing imports this module, scoring imports
``_model`` (torch) and the library."""

from __future__ import annotations

from bt_bench.estimator import Candidates, Capability, EstimatorError
from bt_bench.estimator.registry import require_extra


class Adapter:
    """Base of the library adapters: ``model`` capability, rollout level, opt-in, the extra it needs.

    Subclasses set ``name``, ``description``, ``module`` (what to import) and ``extra`` (the pyproject extra).
    Constructing one without its library raises ``MissingExtraError`` (the listing shows the install command).
    """

    capabilities = frozenset({Capability.MODEL})
    level = "rollout"
    opt_in = True  # model-based and slow: run when selected by name, never by default
    module = extra = ""

    def __init__(self, batch_size: int = 64):
        require_extra(self, self.module, self.extra)
        if int(batch_size) < 1:
            raise ValueError(f"{type(self).__name__}.batch_size must be >= 1, got {batch_size!r}")
        self.batch_size = int(batch_size)

    def _steps(self, candidates: Candidates) -> list[int]:
        steps = [c.step for c in candidates.checkpoints]
        if not steps:
            raise EstimatorError(self.name, "the view lists no checkpoint to load the model at")
        return steps

