"""One function per checklist item: (suite, estimator, seed/draw) -> Verdict. The pytest modules in ``checks/`` and
the control tests in ``tests/`` call these, so a check and its controls are judged by one piece of code.

Each function fetches arrays from the ``Suite`` (scores are cached there) and calls the pure verdict function of
``bt_bench.checklist.verdicts``. ``SkipCell`` (a capability the estimator lacks) and ``EstimatorError`` propagate.
"""

from __future__ import annotations

import itertools

import numpy as np

from bt_bench.checklist import stats

from bt_bench.checklist import verdicts
from bt_bench.checklist.suite import Suite


def norm_variant(suite: Suite, est: str) -> str:
    """The norm_only variant check 1 compares with: a step-level estimator only ever with the step-level control
    (issue 9 item 5); a rollout-level one with the variant declared for the fixture's profile before anything is
    scored (``bt_bench.checklist.expectations.NORM_VARIANT``), never the one that happens to score higher on a seed."""
    return "norm_only_step" if getattr(suite.estimator(est), "level", "rollout") == "step" else suite.norm_variant


def gradient_norm_baseline(suite: Suite, est: str, i: int) -> verdicts.Verdict:
    s = suite.training_scores(est, i)
    t = suite.training(i)
    ref = norm_variant(suite, est)
    return verdicts.gradient_norm_baseline(
        s, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"], norm_scores=suite.training_scores(ref, i),
        norm_name=ref, thresholds=suite.thresholds)


def advantage_baseline(suite: Suite, est: str, i: int) -> verdicts.Verdict:
    suite.require_applicable("advantage_baseline", est)
    s = suite.training_scores(est, i)
    t = suite.training(i)
    return verdicts.advantage_baseline(s, suite.training_scores("advantage_only", i), t["is_gt"], t["step"],
                                       W=t["W"], nonzero=t["nonzero"], rollout_level=True,
                                       thresholds=suite.thresholds)


def target_dependence(suite: Suite, est: str, i: int, draws: int) -> verdicts.Verdict:
    """Check 7 on seed ``i``: the estimator's precision@|GT| over the training rollouts, and its within-group AUC
    on every draw at the saturated checkpoint, each with the real ``in_context`` target and with the
    ``no_behavior`` placebo (built the same way from completions without the behavior; handed over as an
    in_context target). Units: the training half, then one per draw; every one must pass (draws are N/A for a
    step-level estimator)."""
    t = suite.training(i)
    fx = suite.fixtures[i]
    vs = [verdicts.target_dependence_training(suite.training_scores(est, i), suite.training_scores(est, i, "no_behavior"),
                                              t["is_gt"], t["step"], thresholds=suite.thresholds)]
    units = [{"seed": fx.seed, "draw": None, "part": "training"}]
    if getattr(suite.estimator(est), "level", "rollout") != "step":
        suite.require_draw(i, "saturated")
        for d in range(draws):
            r = suite.draw(i, "saturated", d)
            vs.append(verdicts.target_dependence_draw(
                suite.draw_scores(est, i, "saturated", d),
                suite.draw_scores(est, i, "saturated", d, target_kind="no_behavior"), r["has_behavior"], r["group"],
                thresholds=suite.thresholds))
            units.append({"seed": fx.seed, "draw": d, "part": "draw"})
    return verdicts.combine(vs, labels=[f"seed{fx.seed}" if u["draw"] is None else f"seed{fx.seed}/draw{u['draw']}"
                                        for u in units], units=units)


def fluency_confound(suite: Suite, est: str, i: int, d: int) -> verdicts.Verdict:
    suite.require_applicable("fluency_confound", est)
    suite.require_draw(i, "saturated")
    s = suite.draw_scores(est, i, "saturated", d)
    r = suite.draw(i, "saturated", d)
    return verdicts.fluency_confound(s, r["has_behavior"], r["group"], r["fluency"], thresholds=suite.thresholds)


def headroom(suite: Suite, est: str, i: int, d: int) -> verdicts.Verdict:
    train = suite.training_scores(est, i)
    t = suite.training(i)
    kw: dict = {}
    if getattr(suite.estimator(est), "level", "rollout") == "step":
        kw = {"unsat_applicable": False}  # one score per step cannot rank the candidates of one checkpoint
    elif suite.has_draw(i, "unsaturated") is None:
        r = suite.draw(i, "unsaturated", d)
        kw = dict(unsat_scores=suite.draw_scores(est, i, "unsaturated", d), unsat_has_behavior=r["has_behavior"],
                  unsat_group=r["group"])
    v = verdicts.headroom(train, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"],
                          thresholds=suite.thresholds, **kw)
    if not kw and v.outcome == "error":
        v = verdicts.Verdict(v.check, v.outcome, v.metrics, f"{v.reason} ({suite.has_draw(i, 'unsaturated')})")
    return v


def seed_draw_variance(suite: Suite, est: str, draws: int) -> tuple[verdicts.Verdict, list[dict], list[float]]:
    """Aggregate over every seed and draw: residualized AUC per (seed, draw) at the saturated checkpoint, and
    draw stability (Spearman of the draw-0 candidates' scores under two different draws' targets)."""
    suite.require_applicable("seed_draw_variance", est)
    th = suite.thresholds
    seed, draw, auc, low, sp_seed, sp = [], [], [], [], [], []
    for i in range(suite.n_seeds):
        suite.require_draw(i, "saturated")
        for d in range(draws):
            r = suite.draw(i, "saturated", d)
            res = stats.residualized_auc_bootstrap(suite.draw_scores(est, i, "saturated", d), r["fluency"],
                                                   r["has_behavior"], r["group"], **th.bootstrap)
            seed.append(r["seed"]), draw.append(d), auc.append(res.estimate), low.append(res.ci_low)
        fixed = [suite.draw_scores(est, i, "saturated", 0, target_draw=d) for d in range(draws)]
        for a, b in itertools.combinations(range(draws), 2):
            sp_seed.append(suite.fixtures[i].seed)
            sp.append(stats.spearman(fixed[a], fixed[b]))
    v = verdicts.seed_draw_variance(seed, draw, auc, low, stability_seed=sp_seed, stability_spearman=sp,
                                    thresholds=th)
    per_unit = [{"seed": s, "draw": d, "verdict": {
        "check": "seed_draw_variance", "outcome": "pass" if lo > th.residual_auc_bar else "fail",
        "reason": f"residualized AUC {a:.4f} (CI low {lo:.4f})",
        "metrics": {"residualized_auc": {"value": float(a), "ci_low": float(lo), "ci_high": None, "n": None,
                                         "seed": th.bootstrap_seed}}}} for s, d, a, lo in zip(seed, draw, auc, low)]
    return v, per_unit, [float(x) for x in sp]


def trigger_token_alignment(suite: Suite, est: str, i: int, draws: int) -> tuple[verdicts.Verdict, dict]:
    """Behavior-containing candidates of every draw at the saturated checkpoint, pooled per seed; token-restricted
    scores against in_context, placebo and constructed targets. Bootstrap clusters are prompts: the draws reuse
    the same candidate prompts, so responses to one prompt in different draws are not independent (issue 9
    item 6; spec "Confidence intervals")."""
    from bt_bench.estimator import is_cosine_scale

    suite.require_applicable("trigger_token_alignment", est)
    suite.require_draw(i, "saturated")
    out: dict[str, list] = {"in_context": [], "placebo": [], "constructed": [], "response": []}
    for d in range(draws):
        beh = suite.draw(i, "saturated", d)["has_behavior"]
        for kind in ("in_context", "placebo", "constructed"):
            out[kind].append(suite.draw_scores(est, i, "saturated", d, target_kind=kind, token=True)[beh])
        out["response"].append(np.asarray(suite.draw(i, "saturated", d)["group"])[beh])  # prompt id
    t = {k: np.concatenate(v) for k, v in out.items()}
    v = verdicts.trigger_token_alignment(t["in_context"], t["placebo"], response=t["response"],
                                         constructed=t["constructed"],
                                         cosine_scale=is_cosine_scale(suite.estimator(est)),
                                         thresholds=suite.thresholds)
    return v, {k: [float(x) for x in t[k]] for k in ("in_context", "placebo", "constructed")}




