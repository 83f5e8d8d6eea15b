"""Sketch fidelity against exact per-rollout gradients (checklist.md, "sketch fidelity").

For a linear sketch S with E[S^T S] = I, the error of an inner product err = <Sx, Sy> - <x, y> has mean 0.
Its variance, block by block (blocks use independent factors, so variances add):
  * a JL map of dimension k (dense Gaussian, CountSketch, sparse JL) on flat x, y:
      Var = (<x,y>^2 + |x|^2|y|^2)/k for a Gaussian and no more for the others, so Var <= 2|x|^2|y|^2/k;
  * a Kronecker block S(G) = P_out^T G P_in (LoGra) for per-rollout gradient matrices G, H: the right
    factor estimates <G, H> through <P_in P_in^T, G^T H>, the left one through <P_out P_out^T, G H^T>, so
      Var <= 2|G^T H|_F^2/k_in + 2|G H^T|_F^2/k_out + 4|G|^2|H|^2/(k_in k_out)
    (a 1/k term is 0 for an identity factor). For rank-1 G = H this is (1+2/k_in)(1+2/k_out) - 1: a
    16 x 16 block is then only as good as a JL map of dimension 7.5, not 256. Per-rollout gradients
    have rank <= tokens, and the bound uses the actual |G^T H|_F, |G H^T|_F;
  * the second stage: 2|S1 x|^2 |S1 y|^2 / k on the first-stage sketches.
The stated bound is the JL form |err| <= eps |x||y| with eps = z * sigma / (|x||y|) and
z = sqrt(2 log(2 m / delta)) for m checked pairs (union bound, sub-Gaussian tails). For the dense map
eps = z sqrt(2/k) ~ sqrt(4 log(2m/delta)/k), the textbook JL rate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bt_bench.sketch.projectors import IdentityFactor, SparseJL
from bt_bench.sketch.sketcher import Sketcher


def _inv_k(factor: Any) -> float:
    return 0.0 if isinstance(factor, IdentityFactor) else 1.0 / factor.k


def _sjlt_inv_k(sjlt: SparseJL | None) -> float:
    return 0.0 if sjlt is None or sjlt.identity else 1.0 / sjlt.k


def _gram_sq(a: Tensor) -> Tensor:
    """[B, B] of |A_i A_j^T|_F^2 for matrices a [B, n, m] (contraction over the last axis)."""
    prod = torch.einsum("inm,jpm->ijnp", a, a)
    return prod.pow(2).sum((-1, -2))


def pair_sigma(sketcher: Sketcher, grads: Tensor) -> Tensor:
    """[B, B] standard-deviation bound of <S g_i, S g_j> - <g_i, g_j> for flat gradients `grads` [B, P]."""
    grads = grads.to(torch.float64)
    b = grads.shape[0]
    if sketcher.spec.kind == "dense":
        sq = grads.pow(2).sum(1)
        return (2.0 / sketcher.dim * sq[:, None] * sq[None, :]).sqrt()
    var = torch.zeros(b, b, dtype=torch.float64)
    small_sq = torch.zeros(b, dtype=torch.float64)
    start = 0
    for name, shape in zip(sketcher.names, sketcher.shapes):
        n = int(np.prod(shape))
        g = grads[:, start : start + n]
        start += n
        sq = g.pow(2).sum(1)
        if name not in sketcher.blocks:
            small_sq += sq
            continue
        block = sketcher.blocks[name]
        mats = g.reshape(b, *shape)
        inv_out, inv_in = _inv_k(block.out_factor), _inv_k(block.in_factor)
        if inv_in:
            var += 2 * inv_in * _gram_sq(mats.transpose(1, 2))  # |G_i^T G_j|_F^2
        if inv_out:
            var += 2 * inv_out * _gram_sq(mats)  # |G_i G_j^T|_F^2
        var += 4 * inv_in * inv_out * sq[:, None] * sq[None, :]
    var += 2 * _sjlt_inv_k(sketcher.small_map) * small_sq[:, None] * small_sq[None, :]
    if sketcher.final is not None:
        first = sketcher.project(grads.float(), final=False).to(grads.device, torch.float64).pow(2).sum(1)
        var += 2 * _sjlt_inv_k(sketcher.final) * first[:, None] * first[None, :]
    return var.sqrt()


def fidelity_report(sketcher: Sketcher, grads: Tensor, sketches: Tensor | None = None,
                    delta: float = 1e-3) -> dict[str, Any]:
    """Measured inner-product and norm errors of the sketches of `grads` [B, P] against the JL bound.

    `sketches` defaults to ``sketcher.project(grads)``; pass the hook-path sketches to check those."""
    grads = grads.to(torch.float64)
    sk = sketcher.project(grads.float()) if sketches is None else torch.as_tensor(sketches)
    sk = sk.to(device=grads.device, dtype=torch.float64)
    exact, approx = grads @ grads.T, sk @ sk.T
    norms = grads.norm(dim=1)
    scale = norms[:, None] * norms[None, :]
    keep = norms > 0
    iu = torch.triu_indices(len(grads), len(grads))
    pairs = keep[iu[0]] & keep[iu[1]]
    m = int(pairs.sum())
    z = math.sqrt(2 * math.log(2 * max(m, 1) / delta))
    err = (approx - exact).abs()
    bound = z * pair_sigma(sketcher, grads)
    rel = (err / scale)[iu[0], iu[1]][pairs]
    eps = (bound / scale)[iu[0], iu[1]][pairs]
    ratio = (err / bound.clamp_min(1e-300))[iu[0], iu[1]][pairs]
    diag = torch.diagonal(err / scale)[keep]
    return {
        "pairs": m, "delta": delta, "z": z, "k": sketcher.dim,
        "max_rel_err": float(rel.max()), "rms_rel_err": float(rel.pow(2).mean().sqrt()),
        "max_norm2_rel_err": float(diag.max()), "eps_bound_median": float(eps.median()),
        "eps_bound_max": float(eps.max()), "max_err_over_bound": float(ratio.max()),
        "dense_jl_eps_same_k": z * math.sqrt(2.0 / sketcher.dim),
        "within_bound": bool((ratio <= 1).all()),
    }
