"""One cell function per checklist item: (suite, estimator, seed/draw) -> Verdict. The pytest modules in ``checks/``
and the control tests in ``tests/`` call these (each ``CheckSpec.cell`` of ``bt_bench.checklist.registry``), so a
check and its controls are judged by one piece of code.

Each function fetches arrays from the ``Suite`` (``bt_bench.checklist.suite``; scores are cached there) and calls the
pure verdict function of ``bt_bench.checklist.judges``. Every verdict carries its units as data (``Verdict.units``:
``{"seed": <fixture seed>, "draw": <d or None>, ..., "outcome", "reason", "metrics"}``): one for a per-seed or
per-(seed, draw) cell, one per (seed, draw) for seed_draw_variance, the training half and every draw for
target_dependence. ``SkipCell`` (a capability the estimator lacks) and ``EstimatorError`` propagate.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from bt_bench.checklist import bootstrap, judges, metrics
from bt_bench.checklist.base import Verdict, combine, with_unit


def norm_variant(suite, est: str) -> str:
    """The norm_only variant check 1 compares with: a step-level estimator only ever with the step-level control
    (its scores are one value per step, so it is compared with a control of the same resolution); a rollout-level
    one with the variant declared for the fixture's profile before anything is scored
    (``bt_bench.runs.config.Profile.norm_variant``), never the one that happens to score higher on a seed."""
    return "norm_only_step" if getattr(suite.estimator(est), "level", "rollout") == "step" else suite.norm_variant


def gradient_norm_baseline(suite, est: str, i: int) -> Verdict:
    s = suite.training_scores(est, i)
    t = suite.training(i)
    ref = norm_variant(suite, est)
    return with_unit(judges.gradient_norm_baseline(
        s, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"], norm_scores=suite.training_scores(ref, i),
        norm_name=ref, thresholds=suite.thresholds), _unit(suite, i))


def advantage_baseline(suite, est: str, i: int) -> Verdict:
    suite.require_applicable("advantage_baseline", est)
    s = suite.training_scores(est, i)
    t = suite.training(i)
    return with_unit(judges.advantage_baseline(s, suite.training_scores("advantage_only", i), t["is_gt"], t["step"],
                                               W=t["W"], nonzero=t["nonzero"], rollout_level=True,
                                               thresholds=suite.thresholds), _unit(suite, i))


def target_dependence(suite, est: str, i: int, draws: int) -> Verdict:
    """Check 7 on seed ``i``: the estimator's precision@|GT| over the training rollouts, and its within-group AUC
    on every draw at the saturated checkpoint, each with the real ``in_context`` target and with the
    ``no_behavior`` placebo (built the same way from completions without the behavior; handed over as an
    in_context target). Units: the training half, then one per draw; every one must pass (draws are N/A for a
    step-level estimator)."""
    t = suite.training(i)
    fx = suite.fixtures[i]
    vs = [judges.target_dependence_training(suite.training_scores(est, i), suite.training_scores(est, i, "no_behavior"),
                                            t["is_gt"], t["step"], thresholds=suite.thresholds)]
    units = [{"seed": fx.seed, "draw": None, "part": "training"}]
    if getattr(suite.estimator(est), "level", "rollout") != "step":
        suite.require_draw(i, "saturated")
        for d in range(draws):
            r = suite.draw(i, "saturated", d)
            vs.append(judges.target_dependence_draw(
                suite.draw_scores(est, i, "saturated", d),
                suite.draw_scores(est, i, "saturated", d, target_kind="no_behavior"), r["has_behavior"], r["group"],
                thresholds=suite.thresholds))
            units.append({"seed": fx.seed, "draw": d, "part": "draw"})
    return combine(vs, labels=[f"seed{fx.seed}" if u["draw"] is None else f"seed{fx.seed}/draw{u['draw']}"
                               for u in units], units=units)


def fluency_confound(suite, est: str, i: int, d: int) -> Verdict:
    suite.require_applicable("fluency_confound", est)
    suite.require_draw(i, "saturated")
    s = suite.draw_scores(est, i, "saturated", d)
    r = suite.draw(i, "saturated", d)
    return with_unit(judges.fluency_confound(s, r["has_behavior"], r["group"], r["fluency"],
                                             thresholds=suite.thresholds), _unit(suite, i, d))


def headroom(suite, est: str, i: int, d: int) -> Verdict:
    train = suite.training_scores(est, i)
    t = suite.training(i)
    kw: dict = {}
    if getattr(suite.estimator(est), "level", "rollout") == "step":
        kw = {"unsat_applicable": False}  # one score per step cannot rank the candidates of one checkpoint
    elif suite.has_draw(i, "unsaturated") is None:
        r = suite.draw(i, "unsaturated", d)
        kw = {"unsat_scores": suite.draw_scores(est, i, "unsaturated", d), "unsat_has_behavior": r["has_behavior"],
              "unsat_group": r["group"]}
    v = judges.headroom(train, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"],
                        thresholds=suite.thresholds, **kw)
    if not kw and v.outcome == "error":
        v = Verdict(v.check, v.outcome, v.metrics, f"{v.reason} ({suite.has_draw(i, 'unsaturated')})")
    return with_unit(v, _unit(suite, i, d))


def seed_draw_variance(suite, est: str, draws: int) -> tuple[Verdict, list[float]]:
    """Aggregate over every seed and draw: residualized AUC per (seed, draw) at the saturated checkpoint (the
    verdict's units), and draw stability (Spearman of the draw-0 candidates' scores under two different draws'
    targets; returned as the series of every pair)."""
    suite.require_applicable("seed_draw_variance", est)
    th = suite.thresholds
    seed, draw, res, sp_seed, sp = [], [], [], [], []
    for i in range(suite.n_seeds):
        suite.require_draw(i, "saturated")
        for d in range(draws):
            r = suite.draw(i, "saturated", d)
            res.append(bootstrap.residualized_auc_bootstrap(suite.draw_scores(est, i, "saturated", d),
                                                            r["fluency"], r["has_behavior"], r["group"],
                                                            **th.bootstrap))
            seed.append(r["seed"]), draw.append(d)
        fixed = [suite.draw_scores(est, i, "saturated", 0, target_draw=d) for d in range(draws)]
        for a, b in itertools.combinations(range(draws), 2):
            sp_seed.append(suite.fixtures[i].seed)
            sp.append(metrics.spearman(fixed[a], fixed[b]))
    v = judges.seed_draw_variance(seed, draw, [x.estimate for x in res], [x.ci_low for x in res],
                                  stability_seed=sp_seed, stability_spearman=sp, thresholds=th)
    v = dataclasses.replace(v, units=judges.residual_auc_units(seed, draw, res, thresholds=th))
    return v, [float(x) for x in sp]


def trigger_token_alignment(suite, est: str, i: int, draws: int) -> tuple[Verdict, dict]:
    """Behavior-containing candidates of every draw at the saturated checkpoint, pooled per seed; token-restricted
    scores against in_context, placebo and constructed targets. Bootstrap clusters are prompts: the draws reuse
    the same candidate prompts, so responses to one prompt in different draws are not independent (spec
    "Confidence intervals")."""
    from bt_bench.estimator.contract import is_cosine_scale

    suite.require_applicable("trigger_token_alignment", est)
    suite.require_draw(i, "saturated")
    out: dict[str, list] = {"in_context": [], "placebo": [], "constructed": [], "response": []}
    for d in range(draws):
        beh = suite.draw(i, "saturated", d)["has_behavior"]
        for kind in ("in_context", "placebo", "constructed"):
            out[kind].append(suite.draw_scores(est, i, "saturated", d, target_kind=kind, token=True)[beh])
        out["response"].append(np.asarray(suite.draw(i, "saturated", d)["group"])[beh])  # prompt id
    t = {k: np.concatenate(v) for k, v in out.items()}
    v = judges.trigger_token_alignment(t["in_context"], t["placebo"], response=t["response"],
                                       constructed=t["constructed"],
                                       cosine_scale=is_cosine_scale(suite.estimator(est)),
                                       thresholds=suite.thresholds)
    series = {k: [float(x) for x in t[k]] for k in ("in_context", "placebo", "constructed")}
    return with_unit(v, _unit(suite, i)), series


def _unit(suite, i: int, d: int | None = None) -> dict:
    """The unit of a per-seed (``d`` None) or per-(seed, draw) cell: the fixture's seed, not its index."""
    return {"seed": suite.fixtures[i].seed, "draw": d}
