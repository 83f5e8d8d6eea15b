"""The front: ``Sketcher(model, spec).sketch(batch) -> np.ndarray [B, k]`` float32.

Row i is the sketch S(-grad loss_i) of rollout i's contribution to the update direction (schema.md,
"Sketch semantics"), from one batched forward+backward (kind "factorized") or from exact per-rollout
gradients times a dense Gaussian (kind "dense", reference). S is linear and the same for every batch of
one spec, so sketches of one spec add up and compare by inner products: E<Sx, Sy> = <x, y>.

Layout of the factorized sketch (first stage, in parameter order): one block per weight matrix
(Linear weights and embeddings; a tied LM head shares its embedding's block), then the small-tensor
block (norms, biases: exact per-rollout gradients, sparse-JL hashed to k_small); then the optional
second-stage sparse JL to k. Every parameter tensor is assigned in ``coverage()``; a rule whose hook
did not fire in a sketch raises (e.g. a patched forward that bypasses the LM head module).

``sketch(batch, precondition={name: P})`` gives S(-P * grad loss_i) with the same S (AdamW's 1/(sqrt(v)+eps);
bt_bench.sketch.precondition says how and what it costs).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from bt_bench.sketch import reference
from bt_bench.sketch.hooks import (
    Capture,
    EmbeddingRule,
    GenericRule,
    LinearRule,
    MatrixBlock,
    Rule,
    ScaleRule,
    full_precision,
    is_elementwise_scale,
)
from bt_bench.sketch.loss import LossFn, completion_logps, policy_loss_terms, slice_batch
from bt_bench.sketch.precondition import Preconditioned
from bt_bench.sketch.projectors import DenseGaussianProjector, SparseJL, make_factor
from bt_bench.sketch.spec import SketchSpec


@contextmanager
def frozen_parameters(model: nn.Module):
    """Parameters temporarily requires_grad=False: backward then computes activation gradients only
    and never touches .grad of the model (safe inside a training step)."""
    flags = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in flags:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)


class Sketcher:
    """Sketches per-rollout gradients of `model` under `spec` (see module docstring)."""

    def __init__(self, model: nn.Module, spec: SketchSpec) -> None:
        self.model, self.spec = model, spec
        self.names, self.shapes = reference.flat_parameters(model)
        self.n_params = sum(int(np.prod(s)) for s in self.shapes)
        self.device = next(model.parameters()).device
        if spec.kind == "dense":
            self._dense = DenseGaussianProjector(self.n_params, spec.k, spec.seed)
            self.dim = spec.k
            return
        self._build_layout()
        first = sum(b.size for b in self.blocks.values()) + self.small_map.k
        self.final = SparseJL(first, spec.k, spec.sjlt_nnz, spec.seed, "__final__") if spec.k else None
        if self.final is not None:
            self.final.to(self.device)
        self.first_dim = first
        self.dim = self.final.k if self.final is not None else first

    # ---------------------------------------------------------------- layout
    def _build_layout(self) -> None:
        spec = self.spec
        name_of = {id(p): n for n, p in self.model.named_parameters()}
        # Rows indexed by token id (input embeddings, the output head tied or not): CountSketch side.
        embedded = {id(m.weight) for m in self.model.modules() if isinstance(m, nn.Embedding)}
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        if isinstance(head, nn.Linear):
            embedded.add(id(head.weight))
        self.blocks: dict[str, MatrixBlock] = {}
        self.small_offsets: dict[str, int] = {}
        self.rules: list[Rule] = []
        self._coverage: dict[str, str] = {}

        def matrix_block(param: nn.Parameter) -> MatrixBlock:
            name = name_of[id(param)]
            if name not in self.blocks:
                d_out, d_in = param.shape
                rows_are_tokens = id(param) in embedded
                if rows_are_tokens:
                    out_kind, k_out = "countsketch", spec.k_vocab
                else:
                    out_kind, k_out = "gaussian", spec.k_out
                self.blocks[name] = MatrixBlock(
                    name,
                    make_factor(out_kind, d_out, k_out, spec.seed, name, "out"),
                    make_factor("gaussian", d_in, spec.k_in, spec.seed, name, "in"),
                )
                self._coverage[name] = f"matrix:{name}"
            return self.blocks[name]

        self.n_small = 0

        def small(param: nn.Parameter) -> int:
            name = name_of[id(param)]
            if name not in self.small_offsets:
                self.small_offsets[name] = self.n_small
                self.n_small += param.numel()
                self._coverage[name] = "small"
            return self.small_offsets[name]

        for mod_name, module in self.model.named_modules():
            own = dict(module.named_parameters(recurse=False))
            if not own:
                continue
            use = mod_name or "<root>"
            if isinstance(module, nn.Linear):
                bias = small(module.bias) if module.bias is not None else None
                self.rules.append(LinearRule(module, use, matrix_block(module.weight), bias))
            elif isinstance(module, nn.Embedding):
                self.rules.append(EmbeddingRule(module, use, matrix_block(module.weight)))
            elif own.keys() == {"weight"} and is_elementwise_scale(module, own["weight"].numel()):
                self.rules.append(ScaleRule(module, use, small(module.weight)))
            else:
                self.rules.append(GenericRule(module, use, {n: small(p) for n, p in own.items()}))
        for block in self.blocks.values():
            block.out_factor.to(self.device)
            block.in_factor.to(self.device)
        uncovered = [n for n in self.names if n not in self._coverage]
        if uncovered:
            raise ValueError(f"Sketcher: parameters without a sketch rule: {uncovered}")
        self.small_map = SparseJL(max(self.n_small, 1), spec.k_small, spec.sjlt_nnz, spec.seed, "__small__")
        self.small_map.to(self.device)

    def coverage(self) -> dict[str, str]:
        """Parameter name -> the block that sketches it ("matrix:<name>" or "small")."""
        if self.spec.kind == "dense":
            return {n: "dense" for n in self.names}
        return dict(self._coverage)

    def block_slices(self) -> dict[str, slice]:
        """First-stage coordinates of each block (for diagnostics and the fidelity bound)."""
        out, start = {}, 0
        for name, block in self.blocks.items():
            out[name] = slice(start, start + block.size)
            start += block.size
        out["small"] = slice(start, start + self.small_map.k)
        return out

    # ---------------------------------------------------------------- maps
    def _finish(self, matrix: Mapping[str, Tensor], small: Tensor | None, batch: int, final: bool) -> Tensor:
        with full_precision(torch.device(self.device)):  # fp32 under a caller's autocast too (hooks docstring)
            return self._finish_fp32(matrix, small, batch, final)

    def _finish_fp32(self, matrix: Mapping[str, Tensor], small: Tensor | None, batch: int, final: bool) -> Tensor:
        parts = []
        for name, block in self.blocks.items():
            if name in matrix:
                parts.append(matrix[name])
            else:
                parts.append(torch.zeros(batch, block.size, device=self.device))
        small = small if small is not None else torch.zeros(batch, max(self.n_small, 1), device=self.device)
        parts.append(self.small_map.project(small))
        first = torch.cat(parts, dim=1)
        return self.final.project(first) if (final and self.final is not None) else first

    def project(self, grads: Tensor, final: bool = True) -> Tensor:
        """The sketch map S applied to explicit flat gradients [B, P] (order of `flat_parameters`).
        `sketch(batch)` equals `project(-per-rollout gradients)` up to float error."""
        with full_precision(torch.device(self.device)):
            return self._project_fp32(grads.to(device=self.device, dtype=torch.float32), final)

    def _project_fp32(self, grads: Tensor, final: bool) -> Tensor:
        if self.spec.kind == "dense":
            return self._dense.project(grads)
        views, start = {}, 0
        for name, shape in zip(self.names, self.shapes):
            n = int(np.prod(shape))
            views[name] = grads[:, start : start + n].reshape(grads.shape[0], *shape)
            start += n
        matrix = {name: block.project_exact(views[name]) for name, block in self.blocks.items()}
        small = grads.new_zeros(grads.shape[0], max(self.n_small, 1))
        for name, offset in self.small_offsets.items():
            flat = views[name].reshape(grads.shape[0], -1)
            small[:, offset : offset + flat.shape[1]] = flat
        return self._finish(matrix, small, grads.shape[0], final)

    # ---------------------------------------------------------------- sketching
    def sketch(self, batch: Mapping[str, Any], loss_fn: LossFn = policy_loss_terms,
               chunk_size: int | None = None,
               precondition: Mapping[str, Tensor] | Preconditioned | None = None) -> np.ndarray:
        """[B, k] float32 sketches of -grad(loss_i); `chunk_size` bounds the rows per backward.

        `precondition` ({parameter name: tensor of its shape}, e.g. ``adam_preconditioner(adam_v)``) sketches
        -P * grad(loss_i) elementwise instead, with this same map S (bt_bench.sketch.precondition)."""
        return self.sketch_torch(batch, loss_fn, chunk_size, precondition=precondition).cpu().numpy()

    def sketch_torch(self, batch: Mapping[str, Any], loss_fn: LossFn = policy_loss_terms,
                     chunk_size: int | None = None, final: bool = True,
                     precondition: Mapping[str, Tensor] | Preconditioned | None = None) -> Tensor:
        b = batch["prompt_ids"].shape[0]
        if precondition is not None and not isinstance(precondition, Preconditioned):
            precondition = Preconditioned(self, precondition)  # once, not per chunk
        if chunk_size is not None and chunk_size < b:
            chunks = [self.sketch_torch(slice_batch(batch, slice(s, s + chunk_size)), loss_fn, None, final,
                                        precondition) for s in range(0, b, chunk_size)]
            return torch.cat(chunks)
        if self.spec.kind == "dense":
            grads = reference.per_rollout_grads_vmap(self.model, batch, loss_fn)
            with full_precision(torch.device(self.device)):
                return self._dense.project(-grads if precondition is None else -grads * precondition.flat)
        if precondition is None:
            capture = Capture(self.rules, self.n_small, make_leaf=True)
        else:
            capture = Capture(precondition.rules, self.n_small, make_leaf=True, transforms=precondition.transforms)
        with frozen_parameters(self.model), capture as cap, torch.enable_grad():
            losses = loss_fn(completion_logps(self.model, batch), batch)
            if losses.shape != (b,):
                raise ValueError(f"loss_fn returned shape {tuple(losses.shape)}, expected ({b},)")
            losses.sum().backward()
        if precondition is not None and cap.acc.small is not None:
            cap.acc.small = cap.acc.small * precondition.small  # exact per rollout: scale, then the sparse JL
        return -self.collect(cap, b, final)

    @contextmanager
    def capture(self):
        """Passive capture: hooks only, parameters untouched. Run any forward+backward of a loss whose
        row i depends on rollout i only inside the block; then ``handle.result(batch_size)`` gives the
        [B, k] sketches of -grad(loss_i). (For in-run capture; the forward must run the LM head as a
        module, so trl's fused head must be bypassed, else `result` raises.)"""
        if self.spec.kind == "dense":
            raise ValueError("Sketcher.capture: kind='dense' has no hooks")
        with Capture(self.rules, self.n_small, make_leaf=False) as cap:
            cap.result = lambda batch_size, final=True: -self.collect(cap, batch_size, final)
            yield cap

    def collect(self, cap: Capture, batch: int, final: bool = True) -> Tensor:
        """Sketches of +grad(sum of losses) collected by `cap` (checks every use fired)."""
        missing = cap.missing_uses()
        if missing:
            raise RuntimeError(
                f"Sketcher: no gradient reached the hooks of {missing}; the forward bypassed these modules "
                "(a patched forward?) or they do not influence the loss, so their parameters are not sketched"
            )
        return self._finish(cap.acc.matrix, cap.acc.small, batch, final)
