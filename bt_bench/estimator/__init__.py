"""The estimator contract: protocol, capabilities, the label-free view, targets and validation errors.

Spec: checklist.md "Objects" (Estimator, Target) and issue 4 items 1 and 3; data layout: brief/schema.md.

An estimator maps (candidates, target) to one float per candidate, higher = more responsible. It is any object
with ``name``, ``capabilities``, ``level`` and ``score`` (structural typing: a third party need not inherit).

Labels stay behind a wall (architecture.md): the harness holds a ``CandidateData`` (visible rows, labels,
sketches) and hands an estimator only ``CandidateData.view_for(estimator)``, a ``Candidates`` object built
from the visible arrays and the sketches its capabilities unlock. The labels live in a separate ``Labels``
object that the view never references. Only the suite's own test-only controls (``TEST_ONLY``, checked by class
identity in ``labels_allowed``) may declare ``labels``; they receive them as ``score(candidates, target,
labels=...)``, and for a placebo target a seeded permutation of them (uninformative). Any other estimator that
declares ``labels`` is refused (``LabelsRefusedError``). ``score_estimator`` is the one call the checks make: it
builds the view, calls ``score`` twice and turns every way a score vector can be wrong into a named
``EstimatorError`` (including a ``level="step"`` estimator whose scores differ inside a step).

What the wall holds against (issue "Gate integrity"): every array a view or a ``Target`` exposes is a fresh
in-memory copy that owns its data (``base is None``), made once when the container is built, so no ``.base``
chain reaches a memory map, a file name, a manifest or a fixture object; mappings are ``MappingProxyType``
over plain dicts built per view. What it cannot hold against: code running in the same process can walk the
interpreter (``gc.get_objects()``, ``sys._getframe().f_back`` up to the harness's frames, monkeypatching) and
flip ``flags.writeable`` back on an owning array. Only a separate process would close that; the wall makes
reading labels a deliberate act, never an accident of reaching through an attribute.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np


class Capability(StrEnum):
    """What an estimator may read. The view refuses anything that was not declared (``CapabilityError``)."""

    CHECKPOINT_SKETCHES = "checkpoint_sketches"  # {checkpoint step: [M,k]} sketches at theta_c
    IN_RUN_SKETCHES = "in_run_sketches"  # [M,k] at the parameters that generated each rollout; {step: [k]}
    TOKEN_SKETCHES = "token_sketches"  # can score views whose sketches are restricted to the behavior tokens
    MODEL = "model"  # a loader for the model at a checkpoint
    OPTIMIZER_STATE = "optimizer_state"  # {c: [M,k]} sketches of g / sqrt(v_c + eps) (AdamW second moment)
    FLUENCY = "fluency"  # [M] mean token log-prob of the completion under the checkpoint
    LABELS = "labels"  # ground truth, behavior, rewards: controls only
    GRAD_NORM = "grad_norm"  # [M] per-rollout gradient norms; {step: norm of the step's summed gradient}


LEVELS = ("rollout", "step")
TARGET_KINDS = ("sequence", "in_context", "constructed", "placebo")
SOURCES = ("training", "draw")  # training rollouts of the run, or fresh candidates drawn at a checkpoint

# The suite's own test-only controls, by import path: the only estimators that may declare ``labels``. Matched
# by class identity (``type(est) is <the class at that path>``), never by name and never for a subclass.
TEST_ONLY: frozenset[str] = frozenset({"estimators.controls:Oracle"})
# Seed of the one permutation that makes labels uninformative for a placebo target (see ``score_estimator``).
PLACEBO_SEED = 12345

# schema.md, "visible to estimators". Anything else in the rows must be a label, or construction fails.
VISIBLE_FIELDS = (
    "uid", "step", "group", "gen_index", "prompt_ids", "prompt_mask", "completion_ids", "completion_mask",
    "advantage", "lr", "num_items_in_batch", "has_trigger",
)
REQUIRED_FIELDS = ("uid", "step", "group", "advantage")
LABEL_FIELDS = ("is_gt", "has_behavior", "reward")  # plus reward_<function> for each reward function

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
# In a token-restricted view the gradient sketches are those of the behavior tokens' log-prob only; sketches
# of the full gradient are dropped so nothing mixes the two (checklist item 5).
_TOKEN_SWAP = {"token_checkpoint": "checkpoint", "token_in_run": "in_run"}
_TOKEN_KEEP = ("fluency",)


# ----------------------------------------------------------------------------------------------- errors
class EstimatorError(Exception):
    """An estimator could not produce valid scores. The checks report it as an error of that estimator."""

    def __init__(self, estimator: str, message: str):
        self.estimator = estimator
        super().__init__(f"estimator {estimator!r}: {message}")


class _ExpectedGot(EstimatorError):
    def __init__(self, estimator: str, expected: str, got: str):
        self.expected, self.got = expected, got
        super().__init__(estimator, f"expected {expected}, got {got}")


class ScoreShapeError(_ExpectedGot):
    """``score`` did not return a real-valued array with one entry per candidate."""


class NonFiniteScoreError(_ExpectedGot):
    """``score`` returned NaN or inf."""


class ConstantScoreError(_ExpectedGot):
    """Every candidate got the same score: the ranking is a tie and says nothing."""


class NonDeterministicScoreError(_ExpectedGot):
    """Two identical ``score`` calls disagreed."""


class ScoringFailedError(EstimatorError):
    """``score`` or ``fit`` raised; the original exception is chained as ``__cause__``."""


class InvalidEstimatorError(EstimatorError):
    """The object does not satisfy the estimator protocol (missing member, unknown capability or level)."""


class CapabilityError(EstimatorError):
    """The estimator read something it did not declare in ``capabilities``."""


class MissingInputError(EstimatorError):
    """The estimator declared an input that this data (or target) does not provide."""


class MissingFieldError(MissingInputError, AttributeError):
    """A row field this data lacks (an ``AttributeError`` too, so ``getattr(view, f, default)`` works)."""


class LabelsRefusedError(EstimatorError):
    """An estimator that is not one of the suite's test-only controls declared ``labels``."""

    def __init__(self, estimator: str, where: str = ""):
        super().__init__(estimator, f"{where}declares 'labels'; ground truth is given only to the suite's own "
                                    "test-only controls (bt_bench.estimator.TEST_ONLY); a real estimator must "
                                    "not read labels")


class LevelMismatchError(EstimatorError):
    """A ``level="step"`` estimator gave different scores to rollouts of the same step."""


# -------------------------------------------------------------------------------------------- protocol
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

    def score(self, candidates: Candidates, target: Target) -> np.ndarray: ...


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


def _import_path(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def labels_allowed(estimator: Any) -> bool:
    """True only when ``type(estimator)`` is exactly one of the classes at the ``TEST_ONLY`` import paths."""
    for path in TEST_ONLY:
        try:
            cls = _import_path(path)
        except (ImportError, AttributeError):  # not importable here: that path allows nothing
            continue
        if type(estimator) is cls:
            return True
    return False


def check_labels(estimator: Any) -> None:
    """Raise ``LabelsRefusedError`` if ``estimator`` declares ``labels`` and is not a ``TEST_ONLY`` control."""
    if Capability.LABELS in getattr(estimator, "capabilities", ()) and not labels_allowed(estimator):
        raise LabelsRefusedError(str(getattr(estimator, "name", type(estimator).__name__)))


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


def _frozen(a: Any) -> np.ndarray:
    """A fresh in-memory copy that owns its data (``base is None``), made read-only: exposed as is, never as a
    view, so nothing reachable from it leads back to the input (a memory map and its file, a structured array
    whose other columns are labels, a fixture object). ``np.array`` drops ndarray subclasses (``np.memmap``)."""
    out = np.array(a, copy=True)
    out.flags.writeable = False
    return out


def _freeze_vectors(where: str, vectors: Mapping[int, Any]) -> Mapping[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for step, vec in vectors.items():
        v = _frozen(vec)
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
    ``optimizer_state`` estimators the sketcher adds ``preconditioned`` (sketches of g / sqrt(v_c + eps))."""

    kind: str
    vectors: Mapping[int, np.ndarray]
    final_step: int | None = None
    preconditioned: Mapping[int, np.ndarray] | None = None
    draw: int | None = None

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

    def preconditioned_at(self, step: int, estimator: str = "?") -> np.ndarray:
        if self.preconditioned is None or step not in self.preconditioned:
            have = [] if self.preconditioned is None else sorted(self.preconditioned)
            raise MissingInputError(estimator, f"target has no preconditioned vector at checkpoint {step} "
                                               f"(has {have}); optimizer_state needs them from the sketcher")
        return self.preconditioned[step]


class Labels:
    """Ground truth and rewards, held apart from the view. Only ``labels`` estimators and verdicts see it."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, np.ndarray]):
        self._data = MappingProxyType(dict(data))

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._data[name]
        except KeyError:
            raise MissingInputError("labels", f"no label field {name!r}; have {sorted(self._data)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._data

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._data)

    def permuted(self, perm: np.ndarray) -> Labels:
        """Every label array reordered by the one permutation ``perm`` (fresh read-only copies)."""
        return Labels({k: _frozen(v[perm]) for k, v in self._data.items()})


class _Field:
    """Descriptor exposing one visible row field of a ``Candidates`` view."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, view: Candidates | None, owner: type) -> Any:
        if view is None:
            return self
        try:
            return view._fields[self.name]
        except KeyError:
            raise MissingFieldError(view._estimator, f"this data has no field {self.name!r}; "
                                                     f"it has {sorted(view._fields)}") from None


class Candidates:
    """The label-free view an estimator scores. Row fields are read-only attributes (``uid``, ``step``,
    ``group``, ``advantage``, tokens, ``lr`` ...); sketches come from methods that check the capability.
    It holds no reference to labels: they are not in this object nor in anything it points to."""

    __slots__ = (
        "_caps",
        "_checkpoints",
        "_estimator",
        "_fields",
        "_model_loader",
        "_sketches",
        "_source",
        "_token_level",
    )
    uid = _Field(); step = _Field(); group = _Field(); gen_index = _Field()  # noqa: E702
    prompt_ids = _Field(); prompt_mask = _Field(); completion_ids = _Field(); completion_mask = _Field()  # noqa
    advantage = _Field(); lr = _Field(); num_items_in_batch = _Field(); has_trigger = _Field()  # noqa: E702

    def __init__(self, estimator: str, capabilities: frozenset[str], fields: Mapping[str, np.ndarray],
                 sketches: Mapping[str, Any], checkpoints: tuple[Checkpoint, ...], source: str,
                 token_level: bool, model_loader: Callable[[int], Any] | None):
        self._estimator, self._caps = estimator, frozenset(capabilities)
        self._fields, self._sketches = MappingProxyType(dict(fields)), MappingProxyType(dict(sketches))
        self._checkpoints, self._source, self._token_level = checkpoints, source, token_level
        self._model_loader = model_loader if Capability.MODEL in self._caps else None

    def __len__(self) -> int:
        return len(self._fields["uid"])

    def __repr__(self) -> str:
        return (f"Candidates(n={len(self)}, source={self._source!r}, token_level={self._token_level}, "
                f"fields={sorted(self._fields)}, sketches={sorted(self._sketches)})")

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(self._fields)

    @property
    def source(self) -> str:
        return self._source

    @property
    def token_level(self) -> bool:
        return self._token_level

    @property
    def checkpoints(self) -> tuple[Checkpoint, ...]:
        return self._checkpoints

    def checkpoint(self, step: int) -> Checkpoint:
        for c in self._checkpoints:
            if c.step == step:
                return c
        have = [c.step for c in self._checkpoints]
        raise MissingInputError(self._estimator, f"no checkpoint {step}; have {have}")

    def _get(self, key: str) -> Any:
        cap = SKETCH_KEYS[key][0]
        if cap not in self._caps:
            raise CapabilityError(self._estimator, f"read {key!r} without declaring capability "
                                                   f"{cap.value!r}; add it to `capabilities` "
                                                   f"(declared: {sorted(self._caps)})")
        if key not in self._sketches:
            if key in _TOKEN_SWAP and not self._token_level:
                raise MissingInputError(self._estimator, f"{key!r} is given only in a token-restricted view, "
                                                         f"where it is the {_TOKEN_SWAP[key]!r} sketch "
                                                         "(CandidateData.token_restricted())")
            where = ", token-restricted view" if self._token_level else ""
            raise MissingInputError(self._estimator, f"this data provides no {key!r} "
                                                     f"(capability {cap.value!r}{where})")
        return self._sketches[key]

    def checkpoint_sketches(self) -> Mapping[int, np.ndarray]:
        """{checkpoint step: [M,k]} sketches of each candidate's update direction at theta_c."""
        return self._get("checkpoint")

    def in_run_sketches(self) -> np.ndarray:
        """[M,k] at the parameters that generated each rollout (its step; for a draw, the checkpoint)."""
        return self._get("in_run")

    def step_sketches(self) -> Mapping[int, np.ndarray]:
        """{step: [k]} sketch of the step's summed update direction."""
        return self._get("step")

    def preconditioned_sketches(self) -> Mapping[int, np.ndarray]:
        """{checkpoint step: [M,k]} sketches of g / sqrt(v_c + eps), v_c the AdamW second moment at c."""
        return self._get("preconditioned")

    def fluency(self) -> np.ndarray:
        return self._get("fluency")

    def grad_norm(self) -> np.ndarray:
        return self._get("grad_norm")

    def step_grad_norm(self) -> Mapping[int, float]:
        return self._get("step_grad_norm")

    def model(self, step: int) -> Any:
        if Capability.MODEL not in self._caps:
            raise CapabilityError(self._estimator, "asked for the model without declaring capability 'model'")
        if self._model_loader is None:
            raise MissingInputError(self._estimator, "this data provides no model loader")
        return self._model_loader(step)


class CandidateData:
    """Harness-side container (never handed to an estimator): visible rows, labels, sketches, checkpoints.

    ``rows`` is the schema.md rollout table (one array per field, one row per rollout); label fields are
    split off into ``labels``; an unknown field is refused so nothing label-like slips into the view under a
    new name. Rows and sketches are copied into memory once, here (the harness passes memory-mapped arrays);
    every ``view_for`` then hands out those same read-only copies.
    """

    def __init__(self, rows: Mapping[str, Any], sketches: Mapping[str, Any] | None = None, *,
                 checkpoints: Sequence[Checkpoint] = (), source: str = "training",
                 model_loader: Callable[[int], Any] | None = None, token_level: bool = False):
        if source not in SOURCES:
            raise ValueError(f"CandidateData.source must be one of {SOURCES}, got {source!r}")
        visible, labels = {}, {}
        for key, arr in rows.items():
            if key in VISIBLE_FIELDS:
                visible[key] = _frozen(arr)
            elif key in LABEL_FIELDS or key.startswith("reward_"):
                labels[key] = _frozen(arr)
            else:
                raise ValueError(f"CandidateData.rows: unknown field {key!r}; visible fields are "
                                 f"{VISIBLE_FIELDS}, labels are {LABEL_FIELDS} and reward_<function>")
        lacking = [f for f in REQUIRED_FIELDS if f not in visible]
        if lacking:
            raise ValueError(f"CandidateData.rows lacks required field(s) {lacking}")
        self.n = len(visible["uid"])
        bad = {k: len(v) for k, v in {**visible, **labels}.items() if len(v) != self.n}
        if bad:
            raise ValueError(f"CandidateData.rows: every field needs {self.n} rows (len(uid)); got {bad}")
        self.checkpoints = tuple(sorted(checkpoints, key=lambda c: c.step))
        if len({c.step for c in self.checkpoints}) != len(self.checkpoints):
            raise ValueError("CandidateData.checkpoints: duplicate checkpoint steps")
        self.source, self.token_level, self.model_loader = source, token_level, model_loader
        self._visible = visible
        self.labels = Labels(labels)
        self._sketches = {k: self._check_sketch(k, v) for k, v in (sketches or {}).items()}

    def _check_sketch(self, key: str, value: Any) -> Any:
        if key not in SKETCH_KEYS:
            raise ValueError(f"CandidateData.sketches: unknown key {key!r}; allowed: {sorted(SKETCH_KEYS)}")
        layout = SKETCH_KEYS[key][1]
        if layout == "per_step":
            # {step: [k] sketch} or {step: float norm}
            return MappingProxyType({int(s): _frozen(v) if np.ndim(v) else float(v)
                                     for s, v in value.items()})
        if layout == "per_ckpt":
            steps = {c.step for c in self.checkpoints}
            extra = sorted(set(map(int, value)) - steps)
            if extra:
                raise ValueError(f"CandidateData.sketches[{key!r}] has checkpoints {extra} with no "
                                 f"Checkpoint facts (have {sorted(steps)})")
            return MappingProxyType({int(c): self._check_rows(f"{key}[{c}]", v, 2) for c, v in value.items()})
        return self._check_rows(key, value, 2 if layout == "rows" else 1)

    def _check_rows(self, where: str, value: Any, ndim: int) -> np.ndarray:
        arr = _frozen(value)
        if arr.ndim != ndim or arr.shape[0] != self.n:
            want = f"[{self.n},k]" if ndim == 2 else f"[{self.n}]"
            raise ValueError(f"CandidateData.sketches[{where}] must have shape {want}, got {arr.shape}")
        return arr

    @property
    def sketch_keys(self) -> tuple[str, ...]:
        return tuple(self._sketches)

    @property
    def step(self) -> np.ndarray:
        """The candidates' step field (harness side; ``score_estimator`` checks step-level scores with it)."""
        return self._visible["step"]

    def token_restricted(self) -> CandidateData:
        """The same candidates with sketches of the behavior tokens' log-prob only (checklist item 5).

        Shares this object's read-only copies (no second copy): built without going through ``__init__``."""
        sk = {_TOKEN_SWAP[k]: v for k, v in self._sketches.items() if k in _TOKEN_SWAP}
        if not sk:
            raise MissingInputError("data", "no token-restricted sketches (token_checkpoint / token_in_run)")
        sk.update({k: self._sketches[k] for k in _TOKEN_KEEP if k in self._sketches})
        out = object.__new__(CandidateData)
        out.n, out.checkpoints, out.source, out.model_loader = self.n, self.checkpoints, self.source, \
            self.model_loader
        out.token_level, out._visible, out.labels, out._sketches = True, self._visible, self.labels, sk
        return out

    def view_for(self, estimator: Estimator) -> Candidates:
        """The view ``estimator`` may read: visible rows plus only the sketches its capabilities unlock.

        A full view (``token_level=False``) never holds the token sketches, whatever the capabilities: they
        exist only as the ``checkpoint``/``in_run`` sketches of a ``token_restricted()`` view. Arrays are the
        read-only copies made at construction; every mapping is a fresh ``MappingProxyType`` per view."""
        caps = frozenset(estimator.capabilities)
        if self.token_level and Capability.TOKEN_SKETCHES not in caps:
            raise CapabilityError(estimator.name, "cannot score token-restricted sketches: it does not "
                                                  "declare 'token_sketches'")
        sketches = {k: MappingProxyType(dict(v)) if isinstance(v, Mapping) else v
                    for k, v in self._sketches.items()
                    if SKETCH_KEYS[k][0] in caps and (self.token_level or k not in _TOKEN_SWAP)}
        return Candidates(estimator.name, caps, self._visible, sketches, self.checkpoints, self.source,
                          self.token_level, self.model_loader)


# -------------------------------------------------------------------------------------------- validation
def validate_scores(name: str, scores: Any, n: int) -> np.ndarray:
    """The scores as float64[n], or the named error for what is wrong with them (issue 4 item 3)."""
    arr = np.asarray(scores)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) \
            or np.iscomplexobj(arr):
        raise ScoreShapeError(name, f"a real-valued array of shape ({n},)", f"dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ScoreShapeError(name, f"shape ({n},) (one score per candidate)", f"shape {arr.shape}")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = np.flatnonzero(bad)
        raise NonFiniteScoreError(name, "finite scores", f"{idx.size} non-finite of {n} "
                                                         f"(first at index {idx[0]}: {arr[idx[0]]})")
    if n > 1 and np.all(arr == arr[0]):
        raise ConstantScoreError(name, "scores that rank the candidates",
                                 f"all {n} scores equal to {arr[0]!r}")
    return arr


def check_deterministic(name: str, first: np.ndarray, second: np.ndarray, rtol: float = 1e-6) -> None:
    """Two identical calls must agree to ``rtol`` of the score scale (room for GPU reduction order only)."""
    scale = float(np.max(np.abs(first))) if first.size else 0.0
    diff = np.abs(first - second)
    if np.any(diff > rtol * scale):
        i = int(np.argmax(diff))
        raise NonDeterministicScoreError(name, f"identical scores from two identical calls (rtol {rtol})",
                                         f"max difference {diff[i]:.3g} at index {i} "
                                         f"({first[i]!r} then {second[i]!r})")


def _call(name: str, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except EstimatorError:
        raise
    except Exception as exc:  # an estimator bug is an error of that estimator, not a crash of the suite
        raise ScoringFailedError(name, f"{what} raised {type(exc).__name__}: {exc}") from exc


def check_step_level(name: str, scores: np.ndarray, step: np.ndarray) -> None:
    """A ``level="step"`` estimator shares one score across the rollouts of a step: exact float64 equality
    inside every step, else ``LevelMismatchError`` naming the first (lowest) offending step."""
    step = np.asarray(step)
    order = np.argsort(step, kind="stable")
    s, v = step[order], np.asarray(scores, dtype=np.float64)[order]
    bad = np.flatnonzero((s[1:] == s[:-1]) & (v[1:] != v[:-1]))
    if bad.size:
        first = s[bad[0] + 1]
        block = v[s == first]
        raise LevelMismatchError(name, f"declares level='step' but step {first.item()!r} has "
                                       f"{np.unique(block).size} distinct scores over {block.size} rollouts; "
                                       "declare level='rollout' or return one score per step")


def fit_estimator(estimator: Estimator, run_data: CandidateData) -> None:
    """Call the optional ``fit(run_view)`` with the label-free view of the run's training rollouts."""
    validate_estimator(estimator)
    check_labels(estimator)
    fit = getattr(estimator, "fit", None)
    if fit is not None:
        _call(estimator.name, "fit", fit, run_data.view_for(estimator))


def score_estimator(estimator: Estimator, data: CandidateData, target: Target, *,
                    check_determinism: bool = True, placebo: bool = False) -> np.ndarray:
    """Score ``data`` against ``target`` and validate the result; every failure is an ``EstimatorError``.

    ``placebo``: ``target`` is a placebo (the caller hands it over with the same ``kind`` as the real target,
    so an estimator cannot tell the two apart). Only the labels a test-only control receives change: every
    label array is permuted by one seeded permutation (``PLACEBO_SEED``), so the oracle's scores become a
    random relabeling, uninformative but never constant. An estimator declaring ``labels`` that is not a
    ``TEST_ONLY`` control raises ``LabelsRefusedError``.
    """
    validate_estimator(estimator)
    check_labels(estimator)
    name = estimator.name
    kwargs: dict[str, Labels] = {}
    if Capability.LABELS in estimator.capabilities:
        perm = np.random.default_rng(PLACEBO_SEED).permutation(data.n) if placebo else None
        kwargs["labels"] = data.labels if perm is None else data.labels.permuted(perm)

    def once() -> np.ndarray:
        raw = _call(name, "score", estimator.score, data.view_for(estimator), target, **kwargs)
        return validate_scores(name, raw, data.n)

    first = once()
    # Only training rollouts are checked: draw candidates all come from one checkpoint, i.e. one step, so
    # "one score per step" would make every step-level draw score vector constant (a ConstantScoreError);
    # a step-level estimator's scores on draws are per candidate by construction.
    if estimator.level == "step" and data.source == "training":
        check_step_level(name, first, data.step)
    if check_determinism:
        check_deterministic(name, first, once())
    return first
