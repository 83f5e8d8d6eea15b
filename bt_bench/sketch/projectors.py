"""Seeded random projections. Nothing here is ever written to disk: every factor is regenerated
from a stable hash of (spec seed, parameter name, role), so one spec gives one map everywhere.

When to use which:
* :class:`GaussianFactor` - dense N(0, 1/k) factor for a weight side of moderate width (hidden, MLP).
  E[P P^T] = I, so inner products are unbiased; sub-Gaussian JL tails (Johnson-Lindenstrauss).
* :class:`CountSketchFactor` - one signed bucket per row (Charikar et al. 2002). Used on the token-id
  side of embeddings and tied LM heads: projecting logits-gradients costs O(V) instead of O(V k), and a
  row lookup for token ids is a single signed one-hot, so every vocabulary row is covered.
* :class:`SparseJL` - block-sparse JL with s nonzeros of +-1/sqrt(s) per input coordinate, one per
  block of k/s outputs (Kane & Nelson 2014, "graph" construction). Used for the small-tensor block
  and as the optional second stage to the global k.
* :class:`IdentityFactor` - exact; chosen automatically when k >= d.
* :class:`DenseGaussianProjector` - the reference map for flat gradients [B, P] (tests, benchmark).
"""

from __future__ import annotations

import hashlib
import math
import warnings

import torch
from torch import Tensor


def stable_seed(seed: int, name: str, role: str) -> int:
    """A 63-bit seed from (seed, name, role), stable across processes and Python versions (no hash())."""
    digest = hashlib.blake2b(f"{seed}|{name}|{role}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def _generator(seed: int, name: str, role: str) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(stable_seed(seed, name, role))


class IdentityFactor:
    """Exact factor (k == d)."""

    def __init__(self, d: int) -> None:
        self.d = self.k = d

    def to(self, device: torch.device) -> IdentityFactor:
        return self

    def project(self, x: Tensor) -> Tensor:
        return x

    def rows(self, ids: Tensor) -> Tensor:
        return torch.nn.functional.one_hot(ids, self.d).to(torch.float32)


class GaussianFactor:
    """P [d, k] with i.i.d. N(0, 1/k) entries; project(x) = x @ P."""

    def __init__(self, d: int, k: int, seed: int, name: str, role: str) -> None:
        self.d, self.k = d, k
        gen = _generator(seed, name, role)
        self.matrix = torch.randn(d, k, generator=gen, dtype=torch.float32) / math.sqrt(k)

    def to(self, device: torch.device) -> GaussianFactor:
        """Move to the model's device (generated on the CPU, so the same on every device)."""
        self.matrix = self.matrix.to(device)
        return self

    def project(self, x: Tensor) -> Tensor:
        return x @ self.matrix

    def rows(self, ids: Tensor) -> Tensor:
        return self.matrix[ids]


class CountSketchFactor:
    """Row i goes to bucket h(i) with sign s(i): project(x)[j] = sum_{h(i)=j} s(i) x[i]."""

    def __init__(self, d: int, k: int, seed: int, name: str, role: str) -> None:
        self.d, self.k = d, k
        gen = _generator(seed, name, role)
        self.bucket = torch.randint(0, k, (d,), generator=gen)
        self.sign = torch.randint(0, 2, (d,), generator=gen).to(torch.float32) * 2 - 1

    def to(self, device: torch.device) -> CountSketchFactor:
        self.bucket, self.sign = self.bucket.to(device), self.sign.to(device)
        return self

    def project(self, x: Tensor) -> Tensor:
        flat = x.reshape(-1, self.d)
        out = flat.new_zeros(flat.shape[0], self.k)
        out.index_add_(1, self.bucket, flat * self.sign)
        return out.reshape(*x.shape[:-1], self.k)

    def rows(self, ids: Tensor) -> Tensor:
        one_hot = torch.nn.functional.one_hot(self.bucket[ids], self.k).to(torch.float32)
        return one_hot * self.sign[ids].unsqueeze(-1)


Factor = IdentityFactor | GaussianFactor | CountSketchFactor


def make_factor(kind: str, d: int, k: int, seed: int, name: str, role: str) -> Factor:
    """Identity when k >= d (exact and cheaper), else a Gaussian or CountSketch factor."""
    if k >= d:
        return IdentityFactor(d)
    if kind == "gaussian":
        return GaussianFactor(d, k, seed, name, role)
    if kind == "countsketch":
        return CountSketchFactor(d, k, seed, name, role)
    raise ValueError(f"factor kind={kind!r}: allowed values are ('gaussian', 'countsketch')")


class SparseJL:
    """Block-sparse JL map R^d -> R^k with `nnz` nonzeros +-1/sqrt(nnz) per input coordinate, one in
    each of `nnz` equal blocks (so they never collide). Identity when k >= d."""

    def __init__(self, d: int, k: int, nnz: int, seed: int, name: str) -> None:
        if k >= d:
            self.d = self.k = d
            self.identity = True
            return
        if k % nnz:
            raise ValueError(f"SparseJL k={k}: must be divisible by nnz={nnz}")
        self.d, self.k, self.identity = d, k, False
        gen = _generator(seed, name, "sjlt")
        block = k // nnz
        offsets = torch.arange(nnz) * block
        rows = (torch.randint(0, block, (d, nnz), generator=gen) + offsets).reshape(-1)
        sign = (torch.randint(0, 2, (d, nnz), generator=gen).to(torch.float32) * 2 - 1) / math.sqrt(nnz)
        cols = torch.arange(d).repeat_interleave(nnz)
        with warnings.catch_warnings():  # CSR is "beta" in torch; its CPU matmul is 6x faster than index_add
            warnings.simplefilter("ignore", UserWarning)
            coo = torch.sparse_coo_tensor(torch.stack([rows, cols]), sign.reshape(-1), (k, d))
            self.matrix = coo.coalesce().to_sparse_csr()  # [k, d]

    def to(self, device: torch.device) -> SparseJL:
        if not self.identity:
            self.matrix = self.matrix.to(device)
        return self

    def project(self, x: Tensor) -> Tensor:
        """x [B, d] -> [B, k]."""
        if self.identity:
            return x
        return (self.matrix @ x.T).T


class DenseGaussianProjector:
    """Reference JL map for flat gradients: G [B, P] -> G @ M, M [P, k] with N(0, 1/k) entries.

    M is generated in row chunks, each from its own stable seed, so any chunking gives the same M.
    With ``cache=True`` M is kept in memory after first use (benchmark: the baseline is timed without
    its generation cost, which only favours it)."""

    def __init__(self, p: int, k: int, seed: int, chunk_rows: int = 8192, cache: bool = False) -> None:
        self.p, self.k, self.seed, self.chunk_rows, self.cache = p, k, seed, chunk_rows, cache
        self._matrix: Tensor | None = None

    def _chunk(self, index: int) -> Tensor:
        rows = min(self.chunk_rows, self.p - index * self.chunk_rows)
        gen = _generator(self.seed, "__dense__", f"chunk{index}")
        return torch.randn(rows, self.k, generator=gen, dtype=torch.float32) / math.sqrt(self.k)

    def matrix(self) -> Tensor:
        n_chunks = math.ceil(self.p / self.chunk_rows)
        return torch.cat([self._chunk(i) for i in range(n_chunks)])

    def project(self, grads: Tensor) -> Tensor:
        if grads.shape[-1] != self.p:
            raise ValueError(f"DenseGaussianProjector: gradient width {grads.shape[-1]} != p={self.p}")
        grads = grads.to(torch.float32)
        if self.cache:
            if self._matrix is None or self._matrix.device != grads.device:
                self._matrix = self.matrix().to(grads.device)
            return grads @ self._matrix
        out = grads.new_zeros(grads.shape[0], self.k)
        for i, start in enumerate(range(0, self.p, self.chunk_rows)):
            out += grads[:, start : start + self.chunk_rows] @ self._chunk(i).to(grads.device)
        return out
