"""Evidence replay: judge rows recorded elsewhere (:mod:`bt_bench.checklist.evidence_format`) with the verdict
functions of :mod:`bt_bench.checklist.judges`, so a published table and a fixture run are judged by one piece of code.

:func:`replay` runs every check of the registry that replay supports (``CheckSpec.replay``) for every estimator in
the evidence and reports the rest as "skip" with a reason; per-seed/draw verdicts are combined with
:func:`bt_bench.checklist.base.combine` and carry their units as data (``Verdict.units``), as the cells' do.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import numpy as np

from bt_bench.checklist import bootstrap, metrics
from bt_bench.checklist.base import Thresholds, Verdict, combine
from bt_bench.checklist.evidence_format import DrawEvidence, Evidence, RunEvidence, load_evidence
from bt_bench.checklist.judges import (
    advantage_baseline,
    fluency_confound,
    gradient_norm_baseline,
    headroom,
    residual_auc_units,
    seed_draw_variance,
    trigger_token_alignment,
)
from bt_bench.checklist.registry import CHECKS


def _skip(check: str, reason: str) -> Verdict:
    return Verdict(check, "skip", {}, reason)


def _per(check: str, items: list, judge: Callable, unit: Callable, missing: str) -> Verdict:
    """Judge every item (seed or draw) and combine, each with its unit ``{"seed", "draw"}`` as data and labelled
    ``seed2`` or ``seed2/draw1``; skip when the evidence has none."""
    if not items:
        return _skip(check, missing)
    units = [unit(x) for x in items]
    return combine([judge(x) for x in items], [_label(u) for u in units], units=units)


def _label(unit: dict) -> str:
    return f"seed{unit['seed']}" + ("" if unit["draw"] is None else f"/draw{unit['draw']}")


def _seed_unit(x) -> dict:
    return {"seed": x.seed, "draw": None}


def _draw_unit(d) -> dict:
    return {"seed": d.seed, "draw": d.draw}


NORM_VARIANTS = ("norm_only", "norm_only_step")  # rollout level first: it wins a tie


def declared_norm_variant(ev: Evidence) -> str | None:
    """The norm_only variant gradient_norm_baseline compares with on this evidence (spec, check 1: "the
    stronger on that fixture, fixed before any estimator is scored, never chosen per seed").

    Rule: among the variants scored on every run (else on any run), the one with the higher mean
    precision@|GT| over the runs that hold it; a tie goes to the rollout-level ``norm_only`` (the
    published rows' ``norm`` field).  It reads only the norm_only scores and GT, never an estimator's
    scores, so it is the same for every estimator and every seed.  None when no run has either variant.
    """
    present = [v for v in NORM_VARIANTS if any(v in r.scores for r in ev.runs)]
    everywhere = [v for v in present if all(v in r.scores for r in ev.runs)]
    pool = everywhere or present
    if len(pool) <= 1:
        return pool[0] if pool else None
    mean = {v: float(np.mean([metrics.precision_at_k(r.scores[v], r.is_gt) for r in ev.runs
                              if v in r.scores and r.is_gt.any()] or [-np.inf])) for v in pool}
    return max(pool, key=lambda v: mean[v])  # max keeps the first of equals: norm_only


def _replay_gradient_norm(ev: Evidence, name: str, th: Thresholds) -> Verdict:
    check = "gradient_norm_baseline"
    if name in NORM_VARIANTS:
        return _skip(check, f"{name} is the reference of this check")
    variant = declared_norm_variant(ev)
    if variant is None:
        return _skip(check, "the evidence has no norm_only scores (norm_only or norm_only_step)")

    def judge(r: RunEvidence) -> Verdict:
        if variant not in r.scores:
            return _skip(check, f"the run has no scores of the declared norm_only variant {variant}")
        return gradient_norm_baseline(r.scores[name], r.is_gt, r.step, W=r.W, nonzero=r.nonzero,
                                      norm_scores=r.scores[variant], norm_name=variant, thresholds=th)

    return _per(check, [r for r in ev.runs if name in r.scores], judge, _seed_unit,
                "the evidence has no training-rollout scores for this estimator")


def _draws(ev: Evidence, name: str, kind: str, th: Thresholds) -> list[DrawEvidence]:
    return [d for d in ev.draws if name in d.scores and d.checkpoint_kind(th) == kind]


def _replay_fluency(ev: Evidence, name: str, th: Thresholds) -> Verdict:
    check = "fluency_confound"
    if name == "fluency":
        return _skip(check, "fluency is the reference of this check")
    return _per(check, _draws(ev, name, "saturated", th),
                lambda d: fluency_confound(d.scores[name], d.has_behavior, d.group, d.fluency, thresholds=th),
                _draw_unit, "the evidence has no saturated candidate set scored by this estimator")


def _replay_headroom(ev: Evidence, name: str, th: Thresholds) -> Verdict:
    check = "headroom"
    unsat = _draws(ev, name, "unsaturated", th)
    if not unsat:
        return _skip(check, "the evidence has no unsaturated candidate set scored by this estimator")
    cells = [(r, [d for d in unsat if d.seed == r.seed] or [None]) for r in ev.runs if name in r.scores]
    items = [(r, d) for r, ds in cells for d in ds]

    def judge(item) -> Verdict:
        r, d = item
        return headroom(r.scores[name], r.is_gt, r.step, W=r.W, nonzero=r.nonzero,
                        unsat_scores=None if d is None else d.scores[name],
                        unsat_has_behavior=None if d is None else d.has_behavior,
                        unsat_group=None if d is None else d.group, thresholds=th)

    return _per(check, items, judge, lambda it: {"seed": it[0].seed, "draw": None if it[1] is None else it[1].draw},
                "the evidence has no training-rollout scores for this estimator")


def _replay_seed_draw(ev: Evidence, name: str, th: Thresholds) -> Verdict:
    check = "seed_draw_variance"
    cells = _draws(ev, name, "saturated", th)
    per_seed = {s: len({d.draw for d in cells if d.seed == s}) for s in {d.seed for d in cells}}
    if len(per_seed) < th.min_seeds or min(per_seed.values(), default=0) < th.min_draws:
        return _skip(check, f"the evidence holds saturated draws per seed {per_seed}; the check needs "
                     f">= {th.min_seeds} seeds x {th.min_draws} draws")
    stab = [s for s in ev.stability if s.estimator == name]
    if not stab:
        return _skip(check, "the evidence has no draw-stability scores for this estimator")
    for d in cells:
        if metrics.count_pairs(d.has_behavior, d.group) < th.min_pairs:
            return Verdict(check, "error", {}, f"the fixture cannot support this check: {_label(_draw_unit(d))} has "
                           f"fewer than min_pairs={th.min_pairs} within-group pairs")
    res = [bootstrap.residualized_auc_bootstrap(d.scores[name], d.fluency, d.has_behavior, d.group,
                                                **th.bootstrap) for d in cells]
    sp = [(s.seed, v) for s in stab for v in metrics.pairwise_spearman(s.scores)]
    seeds, draws = [d.seed for d in cells], [d.draw for d in cells]
    v = seed_draw_variance(seeds, draws, [r.estimate for r in res], [r.ci_low for r in res],
                           stability_seed=[s for s, _ in sp], stability_spearman=[x for _, x in sp], thresholds=th)
    return dataclasses.replace(v, units=residual_auc_units(seeds, draws, res, thresholds=th))


def _replay_token(ev: Evidence, name: str, th: Thresholds) -> Verdict:
    return _per("trigger_token_alignment", [t for t in ev.token_level if t.estimator == name],
                lambda t: trigger_token_alignment(t.in_context, t.placebo, cosine_scale=t.cosine_scale,
                                                  response=t.response, constructed=t.constructed, thresholds=th),
                lambda t: {"seed": t.seed, "draw": t.draw},
                "the evidence has no token-level scores for this estimator")


def _replay_advantage(ev: Evidence, name: str, th: Thresholds) -> Verdict:
    check = "advantage_baseline"
    if name == "advantage_only":
        return _skip(check, "advantage_only is the reference of this check")

    def judge(r: RunEvidence) -> Verdict:
        adv = r.scores.get("advantage_only", r.advantage)
        if adv is None:
            return _skip(check, "the run has neither advantage_only scores nor an advantage column")
        return advantage_baseline(r.scores[name], adv, r.is_gt, r.step, W=r.W, nonzero=r.nonzero,
                                  rollout_level=r.rollout_level[name], thresholds=th)

    return _per(check, [r for r in ev.runs if name in r.scores], judge, _seed_unit,
                "the evidence has no training-rollout scores for this estimator")


_REPLAY = {"gradient_norm_baseline": _replay_gradient_norm, "fluency_confound": _replay_fluency,
           "headroom": _replay_headroom, "seed_draw_variance": _replay_seed_draw,
           "trigger_token_alignment": _replay_token, "advantage_baseline": _replay_advantage}
# the checks evidence replay supports, in checklist order (registry: CheckSpec.replay)
REPLAYS = tuple(_REPLAY[name] for name, spec in CHECKS.items() if spec.replay)


def replay(path: str | os.PathLike | Evidence, thresholds: Thresholds | None = None) -> list[Verdict]:
    """Every check x every estimator in the evidence, one combined Verdict each (estimator-major order);
    thresholds default to the spec's (Thresholds())."""
    ev = path if isinstance(path, Evidence) else load_evidence(path)
    th = thresholds or Thresholds()
    return [dataclasses.replace(fn(ev, name, th), estimator=name) for name in ev.estimators() for fn in REPLAYS]
