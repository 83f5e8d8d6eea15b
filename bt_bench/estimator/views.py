"""The label-free candidate views (the label wall).

Labels stay behind a wall (architecture.md): the harness holds a ``CandidateData`` (visible rows, labels,
sketches) and hands an estimator only ``CandidateData.view_for(estimator)``, a ``Candidates`` object built
from the visible arrays and the sketches its capabilities unlock. The labels live in a separate ``Labels``
object that the view never references. Which row field is visible and which is a label is the rollout schema's
call (``bt_bench.runs.schema``); a field it does not list is refused.

The builders that turn a fixture's plain data into these containers and ``Target`` objects are in
``bt_bench.estimator.handover``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from bt_bench.estimator.contract import (
    SKETCH_KEYS,
    SOURCES,
    Capability,
    Checkpoint,
    Estimator,
    frozen_copy,
)
from bt_bench.estimator.errors import CapabilityError, MissingFieldError, MissingInputError
from bt_bench.runs.schema import LABEL_FIELDS, REQUIRED_FIELDS, VISIBLE_FIELDS, WITHHELD, is_label

# In a token-restricted view the gradient sketches are those of the behavior tokens' log-prob only; sketches
# of the full gradient are dropped so nothing mixes the two (checklist item 5).
_TOKEN_SWAP = {"token_checkpoint": "checkpoint", "token_in_run": "in_run"}
_TOKEN_KEEP = ("fluency",)


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
        return Labels({k: frozen_copy(v[perm]) for k, v in self._data.items()})


class _Field:
    """Descriptor exposing one visible row field of a ``Candidates`` view."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, view: Candidates | None, owner: type) -> Any:
        if view is None:
            return self
        try:
            return view._fields[self.name]
        except KeyError:
            raise MissingFieldError(view._estimator, f"this data has no field {self.name!r}; "
                                                     f"it has {sorted(view._fields)}") from None


class _Withheld:
    """A former row field that is no longer handed over (``schema.WITHHELD``): reading it says why."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, view: Candidates | None, owner: type) -> Any:
        if view is None:
            return self
        raise MissingFieldError(view._estimator, f"no field {self.name!r}: {WITHHELD[self.name]}")


class Candidates:
    """The label-free view an estimator scores. Row fields are read-only attributes (``uid``, ``step``,
    ``group``, ``advantage``, tokens ...); sketches come from methods that check the capability.
    It holds no reference to labels: they are not in this object nor in anything it points to."""

    __slots__ = (
        "_caps",
        "_checkpoints",
        "_estimator",
        "_fields",
        "_model_loader",
        "_objective",
        "_sketches",
        "_source",
        "_token_level",
        "_token_mask",
        "_trajectory",
    )
    # one read-only attribute per visible field of the rollout schema (set below the class)

    def __init__(self, estimator: str, capabilities: frozenset[str], fields: Mapping[str, np.ndarray],
                 sketches: Mapping[str, Any], checkpoints: tuple[Checkpoint, ...], source: str,
                 token_level: bool, model_loader: Callable[[int], Any] | None,
                 objective: Mapping[str, Any] | None = None, token_mask: np.ndarray | None = None,
                 trajectory: Any = None):
        self._estimator, self._caps = estimator, frozenset(capabilities)
        self._trajectory = trajectory if Capability.TRAJECTORY in self._caps and source == "training" else None
        self._fields, self._sketches = MappingProxyType(dict(fields)), MappingProxyType(dict(sketches))
        self._checkpoints, self._source, self._token_level = checkpoints, source, token_level
        self._model_loader = model_loader if Capability.MODEL in self._caps else None
        loss = "token" if token_level else ("policy" if source == "training" else "likelihood")
        self._objective = MappingProxyType({**(objective or {}), "loss": loss})
        self._token_mask = token_mask if token_level and Capability.MODEL in self._caps else None

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
        """{checkpoint step: [M,k]} sketches of g / (sqrt(v_c) + eps), v_c the AdamW second moment at c."""
        return self._get("preconditioned")

    def fluency(self) -> np.ndarray:
        return self._get("fluency")

    def grad_norm(self) -> np.ndarray:
        return self._get("grad_norm")

    def step_grad_norm(self) -> Mapping[int, float]:
        return self._get("step_grad_norm")

    @property
    def objective(self) -> Mapping[str, Any]:
        """What ``bt_bench.estimator.objective.rollout_batch`` needs besides the rows: ``loss`` ("policy": trl's
        GRPO term of a training rollout; "likelihood": -sum log p of a fresh draw's completion; "token": -sum
        log p over the behavior span of a token-restricted view), ``loss_type``, ``temperature``,
        ``loss_batch_size``."""
        return self._objective

    def token_mask(self) -> np.ndarray:
        """[M, Lc] the behavior's token span, in a token-restricted view for ``model`` estimators only (the
        token sketches' counterpart: zero rows for candidates without the behavior, which the check ignores)."""
        if Capability.MODEL not in self._caps:
            raise CapabilityError(self._estimator, "token_mask is for 'model' estimators (declare it)")
        if self._token_mask is None:
            raise MissingInputError(self._estimator, "token_mask is given only in a token-restricted view")
        return self._token_mask

    def trajectory(self) -> Any:
        """The training run's recorded update, step by step (``bt_bench.estimator.trajectory.Trajectory``): each
        step's rows in trl's order, the step-0 weights, the optimizer settings and lr schedule, and the GRPO loss
        and update as functions of the weights and per-rollout weights. Training views only; no labels."""
        if Capability.TRAJECTORY not in self._caps:
            raise CapabilityError(self._estimator, "asked for the trajectory without declaring capability "
                                                   "'trajectory'")
        if self._trajectory is None:
            raise MissingInputError(self._estimator, f"this data provides no trajectory (a {self._source!r} view; "
                                                     "it is handed over with the training rollouts)")
        return self._trajectory

    def model(self, step: int) -> Any:
        """A freshly loaded HF model at checkpoint ``step`` (one of ``checkpoints``): eval mode, the run's device,
        the plain forward (never trl's patched one). Loaded once per process, a new copy per call."""
        if Capability.MODEL not in self._caps:
            raise CapabilityError(self._estimator, "asked for the model without declaring capability 'model'")
        if self._model_loader is None:
            raise MissingInputError(self._estimator, "this data provides no model loader")
        self.checkpoint(int(step))  # only the checkpoints this view lists
        return self._model_loader(int(step))


for _name in VISIBLE_FIELDS:  # uid, step, group, gen_index, tokens, advantage, ... (bt_bench.runs.schema)
    setattr(Candidates, _name, _Field(_name))
for _name in WITHHELD:  # lr, has_trigger: recorded, never handed over per rollout
    setattr(Candidates, _name, _Withheld(_name))


class CandidateData:
    """Harness-side container (never handed to an estimator): visible rows, labels, sketches, checkpoints.

    ``rows`` is the rollout table (one array per field, one row per rollout; ``bt_bench.runs.schema``): visible
    fields become the view's row fields, label fields are split off into ``labels``; any other field (harness
    columns such as ``lr`` and ``has_trigger`` included) is refused so nothing label-like slips into the view
    under a new name. Rows and sketches are copied into memory once, here (the harness passes memory-mapped arrays);
    every ``view_for`` then hands out those same read-only copies.
    """

    def __init__(self, rows: Mapping[str, Any], sketches: Mapping[str, Any] | None = None, *,
                 checkpoints: Sequence[Checkpoint] = (), source: str = "training",
                 model_loader: Callable[[int], Any] | None = None, token_level: bool = False,
                 objective: Mapping[str, Any] | None = None, token_mask: Any = None, copy: bool = True,
                 trajectory: Any = None):
        if source not in SOURCES:
            raise ValueError(f"CandidateData.source must be one of {SOURCES}, got {source!r}")
        visible, labels = {}, {}
        for key, arr in rows.items():
            if key in VISIBLE_FIELDS:
                visible[key] = frozen_copy(arr)
            elif is_label(key):
                labels[key] = frozen_copy(arr)
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
        self.objective = dict(objective or {})
        self.token_mask = None if token_mask is None else frozen_copy(token_mask)
        if self.token_mask is not None and self.token_mask.shape[0] != self.n:
            raise ValueError(f"CandidateData.token_mask needs {self.n} rows, got {self.token_mask.shape}")
        self._visible = visible
        self.labels = Labels(labels)
        # a Trajectory, or a no-argument function building one (built once, for the first view that declares it)
        self._trajectory = trajectory
        self._copy = copy
        self._sketches = {k: self._check_sketch(k, v) for k, v in (sketches or {}).items()}

    def _check_sketch(self, key: str, value: Any) -> Any:
        if key not in SKETCH_KEYS:
            raise ValueError(f"CandidateData.sketches: unknown key {key!r}; allowed: {sorted(SKETCH_KEYS)}")
        layout = SKETCH_KEYS[key][1]
        if layout == "per_step":
            # {step: [k] sketch} or {step: float norm}
            return MappingProxyType({int(s): frozen_copy(v) if np.ndim(v) else float(v)
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
        # copy=False keeps a read-only memory map of the store as it is (no copy in memory): for the judging
        # process when every estimator scores in a process of its own, which receives its own arrays through
        # files (bt_bench.estimator.wire) and never this object. At k = 4096 a seed's training sketches are 2.6 GB.
        keep = not self._copy and isinstance(value, np.memmap) and not value.flags.writeable
        arr = value if keep else frozen_copy(value)
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
        out.objective, out.token_mask, out._trajectory = self.objective, self.token_mask, self._trajectory
        out.token_level, out._visible, out.labels, out._sketches = True, self._visible, self.labels, sk
        return out

    def view_for(self, estimator: Estimator) -> Candidates:
        """The view ``estimator`` may read: visible rows plus only the sketches its capabilities unlock.

        A full view (``token_level=False``) never holds the token sketches, whatever the capabilities: they
        exist only as the ``checkpoint``/``in_run`` sketches of a ``token_restricted()`` view. Arrays are the
        read-only copies made at construction; every mapping is a fresh ``MappingProxyType`` per view."""
        caps = frozenset(estimator.capabilities)
        if self.token_level and not {Capability.TOKEN_SKETCHES, Capability.MODEL} & caps:
            raise CapabilityError(estimator.name, "cannot score a token-restricted view: it declares neither "
                                                  "'token_sketches' nor 'model'")
        sketches = {k: MappingProxyType(dict(v)) if isinstance(v, Mapping) else v
                    for k, v in self._sketches.items()
                    if SKETCH_KEYS[k][0] in caps and (self.token_level or k not in _TOKEN_SWAP)}
        return Candidates(estimator.name, caps, self._visible, sketches, self.checkpoints, self.source,
                          self.token_level, self.model_loader, self.objective, self.token_mask,
                          self.trajectory() if Capability.TRAJECTORY in caps else None)

    def trajectory(self) -> Any:
        """The ``Trajectory`` handed to views that declare ``trajectory`` (None: this data has none)."""
        if callable(self._trajectory):
            self._trajectory = self._trajectory()
        return self._trajectory
