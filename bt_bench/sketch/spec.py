"""SketchSpec: which random linear map turns a per-rollout gradient into a k-vector.

The spec's ``to_dict()`` goes into the run-store key: sketches made under different specs live in
different slots and are never compared (schema.md, "Sketch semantics"). Two kinds exist:

* ``factorized`` (the default, :class:`bt_bench.sketch.sketcher.Sketcher`): one batched
  forward+backward; per weight matrix W [d_out, d_in] the block ``P_out^T G P_in`` (LoGra-style,
  Choe et al. 2024), Gaussian factors except on the token-id side of embeddings / tied heads, which
  is a CountSketch over token ids so every vocabulary row (trigger and behavior tokens included) is
  covered; exact per-rollout gradients of small tensors (norms, biases) hashed by a sparse JL map;
  then an optional second-stage sparse JL (SJLT, Kane & Nelson 2014) to ``k``.
* ``dense``: exact per-rollout gradients (torch.func) times a dense seeded Gaussian [P, k]. Only for
  small models and tests; it is the textbook JL sketch the factorized one is checked against.

A factor dimension >= the dimension it reduces becomes the identity (exact), so a spec with large
dims reproduces the exact gradient; the tests use that to check the hooks without JL noise.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

KINDS = ("factorized", "dense")


@dataclass(frozen=True)
class SketchSpec:
    """Dimensions and seed of a gradient sketch (see module docstring). The field defaults are the ``compact``
    preset; the ``default`` preset (what runs use) is larger: see ``PRESETS``.

    kind: "factorized" (hooks, one backward) or "dense" (reference: exact gradients x dense Gaussian).
    k_in: Gaussian dimension on the input side of each weight matrix (and the hidden side of embeddings).
    k_out: Gaussian dimension on the output side of each Linear weight.
    k_vocab: CountSketch buckets over token ids (rows of embeddings and of a tied LM head).
    k_small: sparse-JL dimension for the concatenated exact gradients of small tensors (norms, biases).
    k: final dimension (second-stage sparse JL over the concatenated blocks); None keeps the first stage.
       For kind="dense", k is the dense projection dimension and must be set.
    sjlt_nnz: nonzeros per column of the sparse JL maps (k_small and k must be divisible by it).
    seed: base seed; every factor's seed is a stable hash of (seed, parameter name, role).
    """

    kind: str = "factorized"
    k_in: int = 16
    k_out: int = 16
    k_vocab: int = 64
    k_small: int = 256
    k: int | None = 1024
    sjlt_nnz: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"SketchSpec.kind={self.kind!r}: allowed values are {KINDS}")
        for name in ("k_in", "k_out", "k_vocab", "k_small", "sjlt_nnz"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"SketchSpec.{name}={value!r}: must be a positive int")
        if self.k is not None and (not isinstance(self.k, int) or self.k < 1):
            raise ValueError(f"SketchSpec.k={self.k!r}: must be a positive int or None")
        if self.kind == "dense" and self.k is None:
            raise ValueError("SketchSpec.k=None: kind='dense' needs a projection dimension k")
        for name in ("k_small", "k"):
            value = getattr(self, name)
            if value is not None and value % self.sjlt_nnz:
                raise ValueError(
                    f"SketchSpec.{name}={value}: must be divisible by sjlt_nnz={self.sjlt_nnz} "
                    "(block-sparse JL puts one nonzero in each of sjlt_nnz equal blocks)"
                )
        if not isinstance(self.seed, int):
            raise TypeError(f"SketchSpec.seed={self.seed!r}: must be an int")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the store key and reports (stable field order)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SketchSpec:
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"SketchSpec: unknown fields {sorted(unknown)}")
        return cls(**data)


# Presets, a trade-off: a JL sketch's inner-product error shrinks as 1/sqrt(k), while its store grows as 4k bytes per
# rollout and checkpoint (at k = 1024 the sketches of the published 16,000-rollout run at all 37 saved checkpoints
# take 2.4 GB, docs/scaling.md). "default" was chosen by measurement (docs/findings.md, "Choosing the default
# sketch"; ``bt-bench bench sketch-seeds``): the smallest spec tried whose draw-level TracIn, GAS and TRAK-style
# scores agree with exact gradients on tiny and bpe (median Spearman >= 0.95, within-group AUC within 0.03 on every
# draw, under two sketch seeds); "compact" (16 x 16 factors, k = 1024) was the default until 2026-12-04 and moved
# within-group AUCs by up to 0.24. The 64 x 64 factors are the identity on these models' hidden side. "exact" makes
# every factor the identity on the tiny and bpe models (vocab <= 4096, widths <= 4096): the sketch *is* the flat
# per-rollout gradient (the sketch-ranking self-check's reference, and the tests' check of hook coverage).
PRESETS: dict[str, SketchSpec] = {
    "small": SketchSpec(k_in=8, k_out=8, k_vocab=32, k_small=128, k=512),
    "compact": SketchSpec(),
    "large": SketchSpec(k_in=32, k_out=32, k_vocab=128, k_small=512, k=2048),
    "default": SketchSpec(k_in=64, k_out=64, k_vocab=256, k_small=1024, k=4096),
    "first_stage": SketchSpec(k=None),
    "exact": SketchSpec(k_in=4096, k_out=4096, k_vocab=4096, k_small=1 << 20, k=None),
    "dense": SketchSpec(kind="dense", k=1024),
}

def preset(name: str, seed: int = 0) -> SketchSpec:
    """A named preset with the given seed."""
    if name not in PRESETS:
        raise ValueError(f"preset name={name!r}: allowed values are {sorted(PRESETS)}")
    return dataclasses.replace(PRESETS[name], seed=seed)
