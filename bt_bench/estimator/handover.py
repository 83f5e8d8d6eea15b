"""Handing a fixture over to estimators: the builders that turn the plain data a fixture reads
(``bt_bench.fixture.reader``) into label-walled ``CandidateData`` and the ``Target`` objects an estimator scores.

The placebo targets (checks 5 and 7: ``targets.PLACEBO_KINDS``) are handed over disguised as the real
``in_context`` target: its kind, and at every checkpoint its entries, so its norm and every statistic of them
(``targets.disguise``). Which parts of a target an estimator then receives (definitions only for ``model``) is
decided per estimator by ``score_estimator``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bt_bench.estimator.contract import Checkpoint, Target
from bt_bench.estimator.views import CandidateData
from bt_bench.fixture.targets import DISGUISED_AS, disguise, is_placebo, shown_kind
from bt_bench.runs.schema import is_harness


def _checkpoints(facts: Sequence[Mapping[str, Any]]) -> list[Checkpoint]:
    return [Checkpoint(step=c["step"], lr=c["lr"], batch_size=c["batch_size"]) for c in facts]


def training_candidates(fixture: Any, copy: bool = True) -> CandidateData:
    """The training rollouts of ``fixture`` (a ``bt_bench.fixture.reader.Fixture``) as ``CandidateData``: every
    row copied into memory once (the training-level checks); ``copy=False`` keeps the stored sketches as read-only
    memory maps (only where no estimator runs in this process: ``CandidateData``). The run's ``Trajectory`` is
    built for the first view that declares ``trajectory``."""
    data = fixture.training()
    return CandidateData(data.rows, data.sketches, checkpoints=_checkpoints(data.checkpoints), source="training",
                         model_loader=fixture.model, objective=data.objective, copy=copy,
                         trajectory=lambda: run_trajectory(fixture.run, fixture.model))


def training_target(fixture: Any, kind: str = "in_context") -> Target:
    """The training-level ``kind`` target of ``fixture`` (a vector per TracIn checkpoint, draw 0), final step the
    last of them. A placebo kind (``no_behavior``, ``placebo``) is handed over disguised as the real ``in_context``
    target (``targets.disguise``: its kind, and its entries at every checkpoint)."""
    kinds = (kind, DISGUISED_AS) if is_placebo(kind) else (kind,)
    vectors = fixture.training_targets(kinds)
    pre = fixture.training_preconditioned_targets(kinds)
    defs = fixture.training_target_definitions((kind,))[kind]
    return _target(kind, vectors, defs, fixture.objective(), pre, final_step=max(vectors[kind]))


def _target(kind: str, vectors: Mapping[str, Mapping[int, np.ndarray]],
            defs: Mapping[int, Mapping[str, np.ndarray]] | None, objective: Mapping[str, Any] | None,
            pre: Mapping[str, Mapping[int, np.ndarray]], **kw: Any) -> Target:
    """The ``Target`` an estimator is handed for the stored ``kind`` (``vectors``/``pre``: {stored kind: {c:
    vector}}, the real ``in_context`` one among them for a placebo). A placebo gets the real target's kind and, at
    every checkpoint, its entries in the placebo's order (the preconditioned vector those of the real preconditioned
    one); each definition carries the factor that gives the raw placebo the real norm (``weight``), so
    ``Target.loss`` is the placebo's own loss at the handed norm."""
    vec, factors, p = vectors[kind], None, pre.get(kind) or None
    if is_placebo(kind):
        vec, factors = disguise(vec, vectors[DISGUISED_AS])
        if p is not None:
            p, _ = disguise(p, pre.get(DISGUISED_AS) or {})
    return Target(shown_kind(kind), vec, definitions=_definitions(kind, defs, objective, factors),
                  preconditioned=p, **kw)


def _definitions(kind: str, defs: Mapping[int, Mapping[str, np.ndarray]] | None,
                 objective: Mapping[str, Any] | None, weights: Mapping[int, float] | None = None) -> dict | None:
    """{step: TargetDefinition} of a stored ``kind`` target (its loss from ``targets.LOSS_OF``; ``weights``: the
    factor a placebo's vector was rescaled by at each step)."""
    from bt_bench.estimator.objective import TargetDefinition
    from bt_bench.fixture.targets import LOSS_OF

    if defs is None:
        return None
    temp = float((objective or {}).get("temperature", 1.0))
    w = weights or {}
    return {int(c): TargetDefinition(LOSS_OF[kind], **d, temperature=temp, weight=w.get(int(c), 1.0))
            for c, d in defs.items()}


def draw_candidates(fixture: Any, kind: str, d: int, sketch_seed: int | None = None
                    ) -> tuple[CandidateData, dict[str, Target]]:
    """(CandidateData, {target kind: Target}) of draw ``d`` at the ``kind`` ("saturated" / "unsaturated")
    checkpoint of ``fixture``, sketches and target vectors under ``sketch_seed`` (None: the run's own); LookupError
    if the fixture has no such checkpoint. Each target is keyed by its stored kind and shown to the estimator as
    ``shown_kind(kind)``. Nothing handed over names the sketch seed."""
    data = fixture.draw(kind, d) if sketch_seed is None else fixture.draw(kind, d, sketch_seed)
    rows = {k: v for k, v in data.rows.items() if not is_harness(k)}  # has_trigger: recorded, never handed over
    cands = CandidateData(rows, data.sketches, checkpoints=_checkpoints(data.checkpoints), source="draw",
                          model_loader=fixture.model, objective=data.objective, token_mask=data.token_mask)
    defs = data.definitions or {}
    pre = data.preconditioned or {}
    targets = {k: _target(k, data.targets, defs.get(k), data.objective, pre, draw=data.draw) for k in data.targets}
    return cands, targets


def run_trajectory(run: Any, model_loader: Any = None) -> Any:
    """The ``Trajectory`` of ``run`` (a ``bt_bench.runs.store.Run``) for capability ``trajectory``: every training
    rollout's visible row fields, each step's uids in the order trl's loss saw them, the lr each step used (as
    recorded), the optimizer settings of the run's Trainer (its ``GRPOConfig``), the loss type and temperature.
    ``model_loader(step)`` (default: the run's own ``load_model``) supplies the step-0 weights. Only the run
    configurations the replay maps (``bt_bench.runs.replay.Replayer``) are handed over."""
    import dataclasses

    from trl import GRPOConfig

    from bt_bench.estimator.trajectory import ROW_FIELDS, OptimizerSettings, Trajectory
    from bt_bench.runs.replay import _step_rows

    cfg, cols = run.config, run.columns
    if cfg.steps_per_generation != 1 or cfg.num_iterations != 1 or cfg.beta != 0.0 or cfg.bf16:
        raise ValueError("a trajectory is handed over for on-policy fp32 runs only (steps_per_generation = "
                         "num_iterations = 1, beta = 0), as the replay maps them")
    rows = _step_rows(run)
    steps = sorted(rows)
    if steps != list(range(len(steps))):
        raise ValueError(f"run {run.key}: steps {sorted(set(range(cfg.steps)) - set(steps))} trained on no rollout")
    lr_col, ts = np.asarray(cols["lr"]), np.asarray(cols["trained_step"])
    lr = [float(lr_col[np.flatnonzero(ts == s)[0]]) for s in steps]
    # the Trainer's AdamW: GRPOConfig's Adam defaults (bt_bench.runs.train._grpo_config sets no other) and the
    # weight decay and clipping it sets; instantiating a second GRPOConfig here would reset accelerate's state
    default = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    opt = OptimizerSettings(betas=(float(default["adam_beta1"]), float(default["adam_beta2"])),
                            eps=float(default["adam_epsilon"]), weight_decay=0.0, max_grad_norm=cfg.max_grad_norm)
    return Trajectory({f: np.asarray(cols[f]) for f in ROW_FIELDS}, [rows[s] for s in steps], lr, opt,
                      cfg.loss_type, cfg.temperature, model_loader or run.load_model)
