"""Forward/tensor hooks that sketch per-rollout gradients inside one batched backward.

Every parameter tensor is covered by exactly one *rule* per module that uses it (a tied weight has two
uses, the embedding and the LM head, and both feed the same block):
* :class:`LinearRule` - y = x W^T + b. Weight: sum_t P_out^T delta_t a_t^T P_in = (delta P_out)^T (a P_in)
  per rollout (LoGra factorization: never forms d_out x d_in per rollout). Bias: sum_t delta_t, exact.
* :class:`EmbeddingRule` - e_t = W[id_t]. Weight: sum_t P_out[id_t]^T (g_t P_in); P_out is the token-id
  factor (a CountSketch), so the rows actually used (trigger, behavior tokens) land in the sketch.
* :class:`ScaleRule` - y = w * f(x) elementwise (RMSNorm): exact per-rollout grad sum_t delta_t * f(x_t),
  f(x) recomputed with w = 1.
* :class:`GenericRule` - any other module with its own small parameters: exact per-rollout gradients by
  torch.func vmap of the module's vector-Jacobian product. Slower; the fallback.

Precision: every projection and accumulation runs in fp32 whatever precision the model runs in (bf16 or
fp16 weights, or autocast around the forward as trl/accelerate do for ``bf16=True``): activations and
output gradients are cast to fp32 before they meet a projection factor, and autocast is switched off inside
the hooks (:func:`full_precision`), so an autocast forward cannot turn one operand of a projection into
bf16 while the backward hook produces the other in fp32. The sketch is then the fp32 projection of the
gradient the model really computed in its own precision.

The tensor hook is registered on a module output only when that output requires grad in grad mode,
and it closes over the inputs of that same call. So with gradient checkpointing the outputs whose
gradient is really computed are the hooked ones: non-reentrant recomputation builds outputs whose
hooks never fire, reentrant checkpointing hooks only the recomputed call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Self

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from bt_bench.sketch.projectors import Factor


@dataclass
class Accumulator:
    """What one capture collects: per-rollout projected gradients of the matrix blocks [B, k_out * k_in]
    and the flat exact per-rollout gradients of the small tensors [B, n_small]."""

    matrix: dict[str, Tensor] = field(default_factory=dict)
    small: Tensor | None = None
    n_small: int = 0
    fired: set[str] = field(default_factory=set)
    # block -> map applied to each use's value before it accumulates (the preconditioned path: scale, project)
    transforms: Mapping[str, Callable[[Tensor], Tensor]] = field(default_factory=dict)

    def add_pair(self, block: str, left: Tensor, right: Tensor) -> None:
        """Add sum_t left_t^T right_t per rollout (left [B, T, k_out], right [B, T, k_in]). Done at once,
        in the hook, while the operands are in cache (measured faster than one batched bmm at the end)."""
        value = torch.bmm(left.transpose(1, 2), right).flatten(1)
        if block in self.transforms:
            value = self.transforms[block](value)
        self.matrix[block] = self.matrix[block] + value if block in self.matrix else value

    def add_small(self, offset: int, value: Tensor) -> None:
        if self.small is None:
            self.small = value.new_zeros(value.shape[0], self.n_small)
        self.small[:, offset : offset + value.shape[1]] += value


@dataclass
class MatrixBlock:
    """A weight matrix [d_out, d_in] sketched as P_out^T G P_in (flattened [k_out * k_in])."""

    name: str
    out_factor: Factor
    in_factor: Factor

    @property
    def size(self) -> int:
        return self.out_factor.k * self.in_factor.k

    def project_exact(self, grads: Tensor) -> Tensor:
        """The same map on explicit gradients [B, d_out, d_in] (reference path)."""
        x = self.in_factor.project(grads)  # [B, d_out, k_in]
        y = self.out_factor.project(x.transpose(1, 2))  # [B, k_in, k_out]
        return y.transpose(1, 2).reshape(grads.shape[0], -1)


def full_precision(device: torch.device):
    """Autocast off on ``device`` (projections stay fp32 inside an autocast forward; see module docstring)."""
    return torch.autocast(device_type=device.type, enabled=False)


def _as_batch(x: Tensor, batch: int) -> Tensor:
    """[B, ..., d] -> [B, T, d] float32."""
    return x.reshape(batch, -1, x.shape[-1]).to(torch.float32)


class Rule:
    """One module's hooks. `install` returns the removable handle; `use` names the checked use."""

    def __init__(self, module: nn.Module, use: str) -> None:
        self.module, self.use = module, use
        self.capture: Capture | None = None

    def install(self, capture: Capture) -> torch.utils.hooks.RemovableHandle:
        self.capture = capture
        return self.module.register_forward_hook(self._forward)

    def _hookable(self, out: object) -> bool:
        return (
            self.capture is not None
            and not self.capture.paused
            and isinstance(out, Tensor)
            and torch.is_grad_enabled()
            and out.requires_grad
        )

    def _forward(self, module: nn.Module, inputs: tuple, out: object) -> object:
        raise NotImplementedError


class LinearRule(Rule):
    def __init__(self, module: nn.Linear, use: str, block: MatrixBlock, bias_offset: int | None) -> None:
        super().__init__(module, use)
        self.block, self.bias_offset = block, bias_offset

    def _forward(self, module: nn.Module, inputs: tuple, out: object) -> None:
        if not self._hookable(out):
            return
        batch = out.shape[0]
        capture = self.capture
        with full_precision(out.device):
            a_proj = self.block.in_factor.project(_as_batch(inputs[0].detach(), batch))

        def on_grad(g: Tensor) -> None:
            with full_precision(g.device):
                delta = _as_batch(g, batch)
                capture.acc.add_pair(self.block.name, self.block.out_factor.project(delta), a_proj)
                if self.bias_offset is not None:
                    capture.acc.add_small(self.bias_offset, delta.sum(1))
            capture.acc.fired.add(self.use)

        out.register_hook(on_grad)


class EmbeddingRule(Rule):
    def __init__(self, module: nn.Embedding, use: str, block: MatrixBlock) -> None:
        super().__init__(module, use)
        self.block = block

    def _forward(self, module: nn.Module, inputs: tuple, out: object) -> object:
        capture = self.capture
        replaced = None
        if capture is not None and capture.make_leaf and isinstance(out, Tensor) and not out.requires_grad:
            # Active mode: parameters are frozen, so the graph starts here; a leaf that requires grad
            # makes backward compute activation gradients only (no weight gradients: the floor's
            # extra cost we skip).
            out = replaced = out.detach().requires_grad_(True)
        if not self._hookable(out):
            return replaced
        ids = inputs[0]
        batch = ids.shape[0]
        rows = self.block.out_factor.rows(ids.reshape(batch, -1))  # [B, T, k_out]
        padding_idx = getattr(module, "padding_idx", None)
        if padding_idx is not None:  # nn.Embedding never updates the padding row
            rows = rows * (ids.reshape(batch, -1, 1) != padding_idx)

        def on_grad(g: Tensor) -> None:
            with full_precision(g.device):
                capture.acc.add_pair(self.block.name, rows, self.block.in_factor.project(_as_batch(g, batch)))
            capture.acc.fired.add(self.use)

        out.register_hook(on_grad)
        return replaced


class ScaleRule(Rule):
    """y = weight * f(x), weight of shape [d] (checked numerically by `is_elementwise_scale`).

    sum_t delta_t * f(x_t) = (sum_t delta_t * y_t) / weight when the output is float32/64 and no weight
    entry is 0 (exact to an ulp); otherwise f(x) is recomputed by calling the module with weight = 1."""

    def __init__(self, module: nn.Module, use: str, offset: int) -> None:
        super().__init__(module, use)
        self.offset = offset

    def _forward(self, module: nn.Module, inputs: tuple, out: object) -> None:
        if not self._hookable(out):
            return
        x, y, weight = inputs[0].detach(), out.detach(), module.weight.detach()
        batch = out.shape[0]
        capture = self.capture

        def on_grad(g: Tensor) -> None:
            with full_precision(g.device):
                if y.dtype in (torch.float32, torch.float64) and bool((weight != 0).all()):
                    # sum_t g_t * y_t / w: divide once per rollout, after the token sum
                    value = (_as_batch(g, batch) * _as_batch(y, batch)).sum(1) / weight.to(torch.float32)
                else:  # bf16/fp16 output: y / w would amplify its rounding, so recompute f(x) with w = 1
                    with capture.paused_hooks(), torch.no_grad():
                        normed = functional_call(module, {"weight": torch.ones_like(weight)}, (x,))
                    value = (_as_batch(g, batch) * _as_batch(normed, batch)).sum(1)
                capture.acc.add_small(self.offset, value)
            capture.acc.fired.add(self.use)

        out.register_hook(on_grad)


class GenericRule(Rule):
    """Exact per-rollout gradients of a module's own parameters by torch.func (single tensor input)."""

    def __init__(self, module: nn.Module, use: str, offsets: dict[str, int]) -> None:
        super().__init__(module, use)
        self.offsets = offsets

    def _forward(self, module: nn.Module, inputs: tuple, out: object) -> None:
        if not self._hookable(out):
            return
        if len(inputs) != 1 or not isinstance(inputs[0], Tensor):
            raise NotImplementedError(f"GenericRule({self.use}): only single-tensor inputs are supported")
        x = inputs[0].detach()
        capture = self.capture
        params = {n: p.detach() for n, p in module.named_parameters(recurse=False)}

        def vjp_one(p: dict[str, Tensor], xi: Tensor, gi: Tensor) -> Tensor:
            return (functional_call(module, p, (xi.unsqueeze(0),)) * gi.unsqueeze(0)).sum()

        def on_grad(g: Tensor) -> None:
            with capture.paused_hooks(), torch.enable_grad(), full_precision(g.device):
                per = vmap(grad(vjp_one), in_dims=(None, 0, 0))(params, x, g)
            for name, offset in self.offsets.items():
                capture.acc.add_small(offset, per[name].reshape(g.shape[0], -1).to(torch.float32))
            capture.acc.fired.add(self.use)

        out.register_hook(on_grad)


def is_elementwise_scale(module: nn.Module, width: int) -> bool:
    """True when the module's only own parameter is `weight` [width] and y(x) = weight * y_{w=1}(x)."""
    own = dict(module.named_parameters(recurse=False))
    if set(own) != {"weight"} or tuple(own["weight"].shape) != (width,):
        return False
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, width, generator=gen).to(own["weight"].dtype)
    w = torch.rand(width, generator=gen).to(own["weight"].dtype) + 0.5
    try:
        with torch.no_grad():
            y_w = functional_call(module, {"weight": w}, (x,))
            y_1 = functional_call(module, {"weight": torch.ones_like(w)}, (x,))
    except Exception:  # noqa: BLE001 - a module that cannot run on [2, 3, width] is not a scale
        return False
    return isinstance(y_w, Tensor) and torch.allclose(y_w, w * y_1, rtol=1e-5, atol=1e-6)


class Capture:
    """Installs rules for the duration of a `with`; `acc` collects the per-rollout sums."""

    def __init__(self, rules: list[Rule], n_small: int, make_leaf: bool,
                 transforms: Mapping[str, Callable[[Tensor], Tensor]] | None = None) -> None:
        self.rules, self.make_leaf = rules, make_leaf
        self.acc = Accumulator(n_small=n_small, transforms=transforms or {})
        self.paused = False
        self._handles: list[torch.utils.hooks.RemovableHandle] = []

    @contextmanager
    def paused_hooks(self):
        old, self.paused = self.paused, True
        try:
            yield
        finally:
            self.paused = old

    def __enter__(self) -> Self:
        self._handles = [rule.install(self) for rule in self.rules]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        for rule in self.rules:
            rule.capture = None

    def missing_uses(self) -> list[str]:
        return [rule.use for rule in self.rules if rule.use not in self.acc.fired]

