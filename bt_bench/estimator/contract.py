"""The estimator contract: capabilities, the protocol, checkpoints and targets (what an estimator is handed).

An estimator maps (candidates, target) to one float per candidate, higher = more responsible. It is any object
with ``name``, ``capabilities``, ``level`` and ``score`` (structural typing: a third party need not inherit).
The candidate views are in ``views.py``, the call that scores and validates (and the label policy) in
``scoring.py``, the errors in ``errors.py``; ``bt_bench.estimator`` exports the names a plug-in author needs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bt_bench.estimator.errors import InvalidEstimatorError, MissingInputError

# One list of target kinds: the stored kinds (bt_bench.fixture.targets). An estimator is only ever shown sequence,
# in_context or constructed: both placebos (placebo, no_behavior) are handed over as in_context (targets.SHOWN_AS).
from bt_bench.fixture.targets import TARGET_KINDS


class Capability(StrEnum):
    """What an estimator may read. The view refuses anything that was not declared (``CapabilityError``)."""

    CHECKPOINT_SKETCHES = "checkpoint_sketches"  # {checkpoint step: [M,k]} sketches at theta_c
    IN_RUN_SKETCHES = "in_run_sketches"  # [M,k] at the parameters that generated each rollout; {step: [k]}
    TOKEN_SKETCHES = "token_sketches"  # can score views whose sketches are restricted to the behavior tokens
    MODEL = "model"  # a loader for the model at a checkpoint
    OPTIMIZER_STATE = "optimizer_state"  # {c: [M,k]} sketches of g / (sqrt(v_c) + eps) (AdamW second moment)
    FLUENCY = "fluency"  # [M] mean token log-prob of the completion under the checkpoint
    LABELS = "labels"  # ground truth, behavior, rewards: controls only
    GRAD_NORM = "grad_norm"  # [M] per-rollout gradient norms; {step: norm of the step's summed gradient}
    TRAJECTORY = "trajectory"  # the recorded update step by step (estimator.trajectory.Trajectory): training only


LEVELS = ("rollout", "step")
SOURCES = ("training", "draw")  # training rollouts of the run, or fresh candidates drawn at a checkpoint

# sketch key -> (capability that unlocks it, layout). "rows": [M,k]; "per_ckpt": {c: [M,k]};
# "vector": [M]; "per_step": {step: [k] or scalar}.
SKETCH_KEYS: Mapping[str, tuple[Capability, str]] = MappingProxyType({
    "checkpoint": (Capability.CHECKPOINT_SKETCHES, "per_ckpt"),
    "in_run": (Capability.IN_RUN_SKETCHES, "rows"),
    "step": (Capability.IN_RUN_SKETCHES, "per_step"),
    "preconditioned": (Capability.OPTIMIZER_STATE, "per_ckpt"),
    "token_checkpoint": (Capability.TOKEN_SKETCHES, "per_ckpt"),
    "token_in_run": (Capability.TOKEN_SKETCHES, "rows"),
    "fluency": (Capability.FLUENCY, "vector"),
    "grad_norm": (Capability.GRAD_NORM, "vector"),
    "step_grad_norm": (Capability.GRAD_NORM, "per_step"),
})


@runtime_checkable
class Estimator(Protocol):
    """Structural protocol. Optional members: ``fit(run_view)``, ``description`` (one line; default: the first
    line of the class docstring), ``test_only`` (excluded from the default set), ``cosine_scale`` (True when a
    score is a plain cosine in [-1, 1], so checklist item 5's cosine bar applies; see ``is_cosine_scale``).

    ``score`` returns one float per candidate, higher = more responsible. An estimator that declares
    ``labels`` is called as ``score(candidates, target, labels=labels)``.
    """

    name: str
    capabilities: frozenset[str]
    level: str  # "rollout" (a score per rollout) or "step" (one score shared by every rollout of a step)

    def score(self, candidates: Candidates, target: Target) -> np.ndarray: ...  # noqa: F821 (views.Candidates)


def validate_estimator(obj: Any) -> Estimator:
    """Return ``obj`` if it satisfies the protocol, else raise ``InvalidEstimatorError`` saying why."""
    label = str(getattr(obj, "name", type(obj).__name__))
    missing = [m for m in ("name", "capabilities", "level", "score") if not hasattr(obj, m)]
    if missing:
        raise InvalidEstimatorError(label, f"missing protocol member(s) {missing}; "
                                           "see bt_bench.estimator.Estimator")
    if not isinstance(obj.name, str) or not obj.name:
        raise InvalidEstimatorError(label, f"name must be a non-empty str, got {obj.name!r}")
    caps = obj.capabilities
    if not isinstance(caps, (frozenset, set)) or not all(isinstance(c, str) for c in caps):
        raise InvalidEstimatorError(label, f"capabilities must be a frozenset of str, got {caps!r}")
    unknown = sorted(set(caps) - {c.value for c in Capability})
    if unknown:
        allowed = [c.value for c in Capability]
        raise InvalidEstimatorError(label, f"unknown capabilities {unknown}; allowed: {allowed}")
    if obj.level not in LEVELS:
        raise InvalidEstimatorError(label, f"level must be one of {LEVELS}, got {obj.level!r}")
    if not callable(obj.score):
        raise InvalidEstimatorError(label, "score must be callable")
    return obj


def is_cosine_scale(estimator: Any) -> bool:
    """Whether scores are plain cosines (checklist item 5: "for cosine-scale estimators also ...")."""
    return bool(getattr(estimator, "cosine_scale", False))


def describe(estimator: Any) -> str:
    """One-line description: the ``description`` attribute, else the first line of the class docstring."""
    text = getattr(estimator, "description", None) or (type(estimator).__doc__ or "").strip()
    return text.splitlines()[0].strip() if text else ""


# -------------------------------------------------------------------------------------------- containers
@dataclass(frozen=True)
class Checkpoint:
    """Facts of a saved checkpoint. ``batch_size`` is the divisor of that step's loss (trl's
    ``num_items_in_batch`` for loss_type dapo): the GRPO counterpart of |B_t| in GAS's eta_t / |B_t|."""

    step: int
    lr: float
    batch_size: float

    def __post_init__(self) -> None:
        if int(self.step) != self.step or self.step < 0:
            raise ValueError(f"Checkpoint.step must be an int >= 0, got {self.step!r}")
        if not (math.isfinite(self.lr) and self.lr >= 0):
            raise ValueError(f"Checkpoint.lr must be finite and >= 0, got {self.lr!r}")
        if not (math.isfinite(self.batch_size) and self.batch_size > 0):
            raise ValueError(f"Checkpoint.batch_size must be finite and > 0, got {self.batch_size!r}")


def frozen_copy(a: Any) -> np.ndarray:
    """A fresh in-memory copy that owns its data (``base is None``), made read-only: exposed as is, never as a
    view, so nothing reachable from it leads back to the input (a memory map and its file, a structured array
    whose other columns are labels, a fixture object). ``np.array`` drops ndarray subclasses (``np.memmap``)."""
    out = np.array(a, copy=True)
    out.flags.writeable = False
    return out


def _freeze_vectors(where: str, vectors: Mapping[int, Any]) -> Mapping[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for step, vec in vectors.items():
        v = frozen_copy(vec)
        if v.ndim != 1 or not np.issubdtype(v.dtype, np.floating) or not np.all(np.isfinite(v)):
            raise ValueError(f"{where}[{step}] must be a finite 1-D float vector, got {v.dtype}{v.shape}")
        out[int(step)] = v
    ks = {v.shape[0] for v in out.values()}
    if len(ks) > 1:
        raise ValueError(f"{where} vectors must share one dimension k, got {sorted(ks)}")
    return MappingProxyType(out)


@dataclass(frozen=True)
class Target:
    """What the estimator attributes (checklist "Objects: Target"): a k-vector per checkpoint step, in the
    same sketch space as the candidates. ``final_step`` is the fixed checkpoint (default: the latest). For
    ``optimizer_state`` estimators the sketcher adds ``preconditioned`` (sketches of g / (sqrt(v_c) + eps)).
    ``definitions`` ({step: ``objective.TargetDefinition``}, where the fixture stores them): the rows each vector
    was built from, so a model-based estimator rebuilds the target gradient exactly (``loss``). Handed only to
    ``model`` estimators, ``preconditioned`` only to ``optimizer_state`` ones (``scoring.target_for``)."""

    kind: str
    vectors: Mapping[int, np.ndarray]
    final_step: int | None = None
    preconditioned: Mapping[int, np.ndarray] | None = None
    draw: int | None = None
    definitions: Mapping[int, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise ValueError(f"Target.kind must be one of {TARGET_KINDS}, got {self.kind!r}")
        if not self.vectors:
            raise ValueError("Target.vectors must hold at least one checkpoint step")
        object.__setattr__(self, "vectors", _freeze_vectors("Target.vectors", self.vectors))
        final = max(self.vectors) if self.final_step is None else int(self.final_step)
        if final not in self.vectors:
            raise ValueError(f"Target.final_step must be one of {sorted(self.vectors)}, "
                             f"got {self.final_step!r}")
        object.__setattr__(self, "final_step", final)
        if self.preconditioned is not None:
            pre = _freeze_vectors("Target.preconditioned", self.preconditioned)
            if {v.shape[0] for v in pre.values()} - {self.k}:
                raise ValueError(f"Target.preconditioned vectors must have k={self.k} like Target.vectors")
            object.__setattr__(self, "preconditioned", pre)
        if self.definitions is not None:
            extra = sorted(set(map(int, self.definitions)) - set(self.vectors))
            if extra:
                raise ValueError(f"Target.definitions has steps {extra} with no vector (have {sorted(self.vectors)})")
            object.__setattr__(self, "definitions", MappingProxyType({int(s): d for s, d in
                                                                      self.definitions.items()}))

    @property
    def k(self) -> int:
        return next(iter(self.vectors.values())).shape[0]

    @property
    def final(self) -> np.ndarray:
        return self.vectors[self.final_step]

    def at(self, step: int, estimator: str = "?") -> np.ndarray:
        if step not in self.vectors:
            raise MissingInputError(estimator, f"target has no vector at checkpoint {step}; "
                                               f"it has {sorted(self.vectors)}")
        return self.vectors[step]

    def definition(self, step: int | None = None, estimator: str = "?") -> Any:
        """The ``TargetDefinition`` at ``step`` (default: ``final_step``)."""
        step = self.final_step if step is None else int(step)
        if self.definitions is None or step not in self.definitions:
            have = [] if self.definitions is None else sorted(self.definitions)
            raise MissingInputError(estimator, f"target has no definition at checkpoint {step} (has {have}); "
                                               "the fixture stores them from derived format 4 on")
        return self.definitions[step]

    def loss(self, model: Any, step: int | None = None) -> Any:
        """Scalar torch loss under ``model`` whose -grad, sketched with the run's sketch, is ``at(step)``
        (``bt_bench.estimator.objective.target_loss``; default step: ``final_step``)."""
        return self.definition(step).loss_under(model)  # objective.TargetDefinition (no import: no cycle)

    def preconditioned_at(self, step: int, estimator: str = "?") -> np.ndarray:
        if self.preconditioned is None or step not in self.preconditioned:
            have = [] if self.preconditioned is None else sorted(self.preconditioned)
            raise MissingInputError(estimator, f"target has no preconditioned vector at checkpoint {step} "
                                               f"(has {have}); optimizer_state needs them from the sketcher")
        return self.preconditioned[step]
