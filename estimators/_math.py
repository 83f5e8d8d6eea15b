"""Shared arithmetic of the built-in estimators: dimension checks and sums over checkpoints. The kernels themselves
(``inner``, ``cosine``, TRAK's ``Whitener``) live in ``bt_bench.fixture.kernels``, where the sketch-ranking
self-check scores with the same maths; they map a zero sketch to a score of exactly 0, never NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from bt_bench.estimator import Candidates, Checkpoint, EstimatorError
from bt_bench.fixture.kernels import cosine, inner

__all__ = ["Kernel", "check_dims", "checkpoint_sum", "cosine", "inner"]

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]


def check_dims(name: str, rows: np.ndarray, vec: np.ndarray) -> None:
    if rows.ndim != 2 or vec.ndim != 1 or rows.shape[1] != vec.shape[0]:
        raise EstimatorError(name, f"sketch dimension mismatch: candidates {rows.shape}, target {vec.shape}; "
                                   "both must come from the same SketchSpec")


def checkpoint_sum(name: str, view: Candidates, sketches: Mapping[int, np.ndarray],
                   target_at: Callable[[int, str], np.ndarray], kernel: Kernel,
                   weight: Callable[[Checkpoint], float]) -> np.ndarray:
    """sum_c weight(c) * kernel(g^c, t^c) over the checkpoints the view holds sketches for.

    ``target_at(step, name)`` is ``Target.at`` or ``Target.preconditioned_at`` (they name the estimator in
    their error)."""
    if not sketches:
        raise EstimatorError(name, "the view holds sketches at no checkpoint")
    total = np.zeros(len(view), dtype=np.float64)
    for step in sorted(sketches):
        rows, vec = sketches[step], target_at(step, name)
        check_dims(name, rows, vec)
        total += weight(view.checkpoint(step)) * kernel(rows, vec)
    return total

