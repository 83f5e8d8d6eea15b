"""The estimator contract: protocol, capabilities, the label-free view, targets and validation errors.

Everything a plug-in author needs is importable from here (``from bt_bench.estimator import Candidates, Target,
Capability ...``). Where it lives: ``contract.py`` (Capability, Estimator, Checkpoint, Target,
validate_estimator), ``errors.py`` (the named ``EstimatorError`` subclasses), ``views.py`` (Labels, Candidates,
CandidateData, and the builders from fixture data), ``scoring.py`` (score_estimator, fit_estimator, score
validation, the label policy), ``registry.py`` (entry points).

Spec: checklist.md "Objects" (Estimator, Target); data layout: brief/schema.md.

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

What the wall holds against (an estimator that looks for labels on purpose): every array a view or a ``Target``
exposes is a fresh in-memory copy that owns its data (``base is None``), made once when the container is built, so
no ``.base`` chain reaches a memory map, a file name, a manifest or a fixture object; mappings are
``MappingProxyType`` over plain dicts built per view. What it cannot hold against: code running in the same
process can walk the interpreter (``gc.get_objects()``, ``sys._getframe().f_back`` up to the harness's frames,
monkeypatching) and flip ``flags.writeable`` back on an owning array. Only a separate process would close that;
the wall makes reading labels a deliberate act, never an accident of reaching through an attribute.
"""

from __future__ import annotations

from bt_bench.estimator.contract import (
    LEVELS,
    PLACEBO_SEED,
    SKETCH_KEYS,
    SOURCES,
    TARGET_KINDS,
    TEST_ONLY,
    Capability,
    Checkpoint,
    Estimator,
    Target,
    describe,
    is_cosine_scale,
    validate_estimator,
)
from bt_bench.estimator.errors import (
    CapabilityError,
    ConstantScoreError,
    EstimatorError,
    InvalidEstimatorError,
    LabelsRefusedError,
    LevelMismatchError,
    MissingFieldError,
    MissingInputError,
    NonDeterministicScoreError,
    NonFiniteScoreError,
    ScoreShapeError,
    ScoringFailedError,
)
from bt_bench.estimator.handover import draw_candidates, training_candidates, training_target
from bt_bench.estimator.objective import TargetDefinition, rollout_batch, rollout_losses, target_loss
from bt_bench.estimator.scoring import (
    check_deterministic,
    check_labels,
    check_step_level,
    fit_estimator,
    labels_allowed,
    score_estimator,
    target_for,
    validate_scores,
)
from bt_bench.estimator.views import CandidateData, Candidates, Labels
from bt_bench.runs.schema import LABEL_FIELDS, REQUIRED_FIELDS, VISIBLE_FIELDS

__all__ = [
    "LABEL_FIELDS",
    "LEVELS",
    "PLACEBO_SEED",
    "REQUIRED_FIELDS",
    "SKETCH_KEYS",
    "SOURCES",
    "TARGET_KINDS",
    "TEST_ONLY",
    "VISIBLE_FIELDS",
    "CandidateData",
    "Candidates",
    "Capability",
    "CapabilityError",
    "Checkpoint",
    "ConstantScoreError",
    "Estimator",
    "EstimatorError",
    "InvalidEstimatorError",
    "Labels",
    "LabelsRefusedError",
    "LevelMismatchError",
    "MissingFieldError",
    "MissingInputError",
    "NonDeterministicScoreError",
    "NonFiniteScoreError",
    "ScoreShapeError",
    "ScoringFailedError",
    "Target",
    "TargetDefinition",
    "check_deterministic",
    "check_labels",
    "check_step_level",
    "describe",
    "draw_candidates",
    "fit_estimator",
    "is_cosine_scale",
    "labels_allowed",
    "rollout_batch",
    "rollout_losses",
    "score_estimator",
    "target_for",
    "target_loss",
    "training_candidates",
    "training_target",
    "validate_estimator",
    "validate_scores",
]
