"""Shared arithmetic of the built-in estimators: inner products, cosines and sums over checkpoints.

Zero gradients are common (schema.md: ~70% of rollouts have advantage 0, so an exactly zero gradient); every
kernel here maps a zero sketch to a score of exactly 0 (a zero vector has no direction), never NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from bt_bench.estimator import Candidates, Checkpoint, EstimatorError

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]


def check_dims(name: str, rows: np.ndarray, vec: np.ndarray) -> None:
    if rows.ndim != 2 or vec.ndim != 1 or rows.shape[1] != vec.shape[0]:
        raise EstimatorError(name, f"sketch dimension mismatch: candidates {rows.shape}, target {vec.shape}; "
                                   "both must come from the same SketchSpec")


def inner(rows: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """<g_i, t> for every row, in float64."""
    return np.asarray(rows, dtype=np.float64) @ np.asarray(vec, dtype=np.float64)


def cosine(rows: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """cos(g_i, t); defined as 0 when either vector is exactly zero."""
    rows, vec = np.asarray(rows, dtype=np.float64), np.asarray(vec, dtype=np.float64)
    dots = rows @ vec
    norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(vec)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


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

