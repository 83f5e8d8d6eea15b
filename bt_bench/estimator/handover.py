"""Handing a fixture over to estimators: the builders that turn the plain data a fixture reads
(``bt_bench.fixture.reader``) into label-walled ``CandidateData`` and the ``Target`` objects an estimator scores;
the placebo target of target_dependence (``no_behavior``) is handed over disguised as an ``in_context`` target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bt_bench.estimator.contract import Checkpoint, Target
from bt_bench.estimator.views import CandidateData
from bt_bench.fixture.targets import shown_kind
from bt_bench.runs.schema import is_harness


def _checkpoints(facts: Sequence[Mapping[str, Any]]) -> list[Checkpoint]:
    return [Checkpoint(step=c["step"], lr=c["lr"], batch_size=c["batch_size"]) for c in facts]


def training_candidates(fixture: Any) -> CandidateData:
    """The training rollouts of ``fixture`` (a ``bt_bench.fixture.reader.Fixture``) as ``CandidateData``: every
    row copied into memory once (checks gradient_norm_baseline, headroom, advantage_baseline)."""
    data = fixture.training()
    return CandidateData(data.rows, data.sketches, checkpoints=_checkpoints(data.checkpoints), source="training",
                         model_loader=fixture.model, objective=data.objective)


def training_target(fixture: Any, kind: str = "in_context") -> Target:
    """The training-level ``kind`` target of ``fixture`` (a vector per TracIn checkpoint, draw 0), final step the
    last of them. ``no_behavior`` (the placebo of target_dependence) is handed over as an ``in_context`` one."""
    vectors = fixture.training_targets((kind,))[kind]
    defs = _definitions(kind, fixture.training_target_definitions((kind,))[kind], fixture.objective())
    pre = fixture.training_preconditioned_targets((kind,))[kind] or None  # the stored kind's own: no tell
    return Target(shown_kind(kind), vectors, final_step=max(vectors), definitions=defs, preconditioned=pre)


def _definitions(kind: str, defs: Mapping[int, Mapping[str, np.ndarray]] | None,
                 objective: Mapping[str, Any] | None) -> dict | None:
    """{step: TargetDefinition} of a stored ``kind`` target (its loss from ``targets.LOSS_OF``)."""
    from bt_bench.estimator.objective import TargetDefinition
    from bt_bench.fixture.targets import LOSS_OF

    if defs is None:
        return None
    temp = float((objective or {}).get("temperature", 1.0))
    return {int(c): TargetDefinition(LOSS_OF[kind], **d, temperature=temp) for c, d in defs.items()}


def draw_candidates(fixture: Any, kind: str, d: int) -> tuple[CandidateData, dict[str, Target]]:
    """(CandidateData, {target kind: Target}) of draw ``d`` at the ``kind`` ("saturated" / "unsaturated")
    checkpoint of ``fixture``; LookupError if the fixture has no such checkpoint. Each target is keyed by its
    stored kind and shown to the estimator as ``shown_kind(kind)``."""
    data = fixture.draw(kind, d)
    rows = {k: v for k, v in data.rows.items() if not is_harness(k)}  # has_trigger: recorded, never handed over
    cands = CandidateData(rows, data.sketches, checkpoints=_checkpoints(data.checkpoints), source="draw",
                          model_loader=fixture.model, objective=data.objective, token_mask=data.token_mask)
    defs = data.definitions or {}
    pre = data.preconditioned or {}
    targets = {k: Target(shown_kind(k), vectors, draw=data.draw,
                         definitions=_definitions(k, defs.get(k), data.objective), preconditioned=pre.get(k))
               for k, vectors in data.targets.items()}
    return cands, targets
