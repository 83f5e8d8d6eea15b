"""What the checks' replay functions share (evidence replay: docs/evidence_format.md): judging each seed or draw
of recorded evidence (:mod:`bt_bench.checklist.evidence_format`) and combining the verdicts, each with its unit
``{"seed", "draw"}`` as data, as the cells' verdicts carry theirs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bt_bench.checklist import metrics
from bt_bench.checklist.base import Thresholds, Verdict, combine
from bt_bench.checklist.evidence_format import DrawEvidence, Evidence


def skip(check: str, reason: str) -> Verdict:
    return Verdict(check, "skip", {}, reason)


def per_item(check: str, items: list, judge: Callable, unit: Callable, missing: str) -> Verdict:
    """Judge every item (seed or draw) and combine, each with its unit ``{"seed", "draw"}`` as data and labelled
    ``seed2`` or ``seed2/draw1``; skip when the evidence has none."""
    if not items:
        return skip(check, missing)
    units = [unit(x) for x in items]
    return combine([judge(x) for x in items], [label(u) for u in units], units=units)


def label(unit: dict) -> str:
    return f"seed{unit['seed']}" + ("" if unit["draw"] is None else f"/draw{unit['draw']}")


def seed_unit(x) -> dict:
    return {"seed": x.seed, "draw": None}


def draw_unit(d) -> dict:
    return {"seed": d.seed, "draw": d.draw}


def draws_of_kind(ev: Evidence, name: str, kind: str, th: Thresholds) -> list[DrawEvidence]:
    """The candidate sets scored by ``name`` at checkpoints of ``kind`` (saturated or unsaturated)."""
    return [d for d in ev.draws if name in d.scores and d.checkpoint_kind(th) == kind]


NORM_VARIANTS = ("norm_only", "norm_only_step")  # rollout level first: it wins a tie


def declared_norm_variant(ev: Evidence) -> str | None:
    """The norm_only variant the norm comparison uses on this evidence (spec, check 1: "the stronger on that
    fixture, fixed before any estimator is scored, never chosen per seed").

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


__all__ = ["NORM_VARIANTS", "declared_norm_variant", "draw_unit", "draws_of_kind", "label", "per_item",
           "seed_unit", "skip"]
