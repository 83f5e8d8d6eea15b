"""The plug-in author's API: the estimator protocol, the candidate view, targets, the named errors and the
objective functions (``from bt_bench.estimator import Candidates, Target, Capability ...``).

An estimator maps (candidates, target) to one float per candidate, higher = more responsible. It is any object
with ``name``, ``capabilities``, ``level`` and ``score`` (structural typing: a third party need not inherit;
docs/estimators.md). Where each name lives: ``contract.py`` (Estimator, Capability, Checkpoint, Target),
``views.py`` (Candidates, the label-free view), ``trajectory.py`` (Trajectory: the recorded update step by step,
for ``trajectory`` estimators), ``objective.py`` (TargetDefinition, rollout_batch,
rollout_losses, target_loss: what a ``model`` estimator differentiates), ``errors.py`` (the named
``EstimatorError`` subclasses).

Nothing that holds labels is exported here, and nothing of the harness: the label-holding containers
(``views.CandidateData``, ``views.Labels``), the builders from fixture data (``handover``), the scoring call
and its validation and label policy (``scoring``), the registry (``registry``) and sealed scoring (``sealed``)
are imported by the harness from their own modules. tests/test_architecture.py pins this list.

The label wall (``views.py``): the harness holds a ``CandidateData`` and hands an estimator only
``CandidateData.view_for(estimator)``, a ``Candidates`` built from the visible arrays and the sketches its
capabilities unlock. What the wall holds against (an estimator that looks for labels on purpose): every array
a view or a ``Target`` exposes is a fresh in-memory copy that owns its data (``base is None``), so no
``.base`` chain reaches a memory map, a file name, a manifest or a fixture object; mappings are
``MappingProxyType`` over plain dicts built per view. What it cannot hold against: code running in the same
process can walk the interpreter (``gc.get_objects()``, ``sys._getframe().f_back``, monkeypatching); against
that, sealed scoring (``sealed.py``) runs every estimator but the suite's own oracle in a sandboxed process.
"""

from __future__ import annotations

from bt_bench.estimator.contract import Capability, Checkpoint, Estimator, Target
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
from bt_bench.estimator.objective import TargetDefinition, rollout_batch, rollout_losses, target_loss
from bt_bench.estimator.trajectory import OptimizerSettings, Trajectory
from bt_bench.estimator.views import Candidates

__all__ = [
    "Candidates",
    "Capability",
    "CapabilityError",
    "Checkpoint",
    "ConstantScoreError",
    "Estimator",
    "EstimatorError",
    "InvalidEstimatorError",
    "LabelsRefusedError",
    "LevelMismatchError",
    "MissingFieldError",
    "MissingInputError",
    "NonDeterministicScoreError",
    "NonFiniteScoreError",
    "OptimizerSettings",
    "ScoreShapeError",
    "ScoringFailedError",
    "Target",
    "TargetDefinition",
    "Trajectory",
    "rollout_batch",
    "rollout_losses",
    "target_loss",
]
