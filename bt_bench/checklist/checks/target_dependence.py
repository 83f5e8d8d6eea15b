"""Check 7, target_dependence (ours, a sanity test after Hanawa et al. 2021 and Adebayo et al. 2018): scores
recomputed with a placebo target (built like the real one from completions without the behavior, handed over
looking like it) must rank worse than with the real target. A score that ignores the target (every control,
anything read from labels, files or the process) fails it by construction."""

from __future__ import annotations

from bt_bench.checklist.base import (
    Metric,
    Thresholds,
    Verdict,
    auc_support,
    combine,
    error_verdict,
    make_verdict,
    mark,
    pass_fail,
)
from bt_bench.checklist.bootstrap import paired_auc_difference_bootstrap, precision_difference_bootstrap
from bt_bench.checklist.figures import fig
from bt_bench.checklist.metrics import as_vector, precision_at_k, within_group_auc
from bt_bench.checklist.spec import CheckSpec

NAME = "target_dependence"


def judge_training(train_real, train_placebo, is_gt, step, *, thresholds: Thresholds = Thresholds()) -> Verdict:
    """Training half: precision@|GT| of the training rollouts scored against the real target minus against the
    placebo target, paired on the same step resamples; CI low > target_margin. Point figures of each side are
    reported as well (their own CIs are not needed for the decision)."""
    th = thresholds
    tr = as_vector("train_real", train_real)
    tp = as_vector("train_placebo", train_placebo, n=len(tr), ref="train_real")
    g = as_vector("is_gt", is_gt, n=len(tr), ref="train_real", kind="bool")
    st = as_vector("step", step, n=len(tr), ref="train_real", kind="int")
    p_diff = precision_difference_bootstrap(tr, tp, g, st, **th.bootstrap)
    ok = p_diff.ci_low > th.target_margin
    metrics = {"precision_real": Metric(precision_at_k(tr, g), n=len(tr)),
               "precision_placebo": Metric(precision_at_k(tp, g), n=len(tr)),
               "precision_real_minus_placebo": Metric.of(p_diff)}
    reason = (f"training precision@|GT| real target {metrics['precision_real'].value:.4f} vs placebo "
              f"{metrics['precision_placebo'].value:.4f}: paired difference {Metric.of(p_diff)} (CI low > "
              f"{th.target_margin}: {mark(ok)})")
    return make_verdict(NAME, pass_fail(ok), metrics, reason)


def judge_draw(draw_real, draw_placebo, has_behavior, group, *, thresholds: Thresholds = Thresholds()) -> Verdict:
    """Draw half: within-group AUC of fresh candidates scored against the real target minus against the placebo,
    paired on the same group resamples; CI low > target_margin. Too few pairs -> error."""
    th = thresholds
    dr = as_vector("draw_real", draw_real)
    dp = as_vector("draw_placebo", draw_placebo, n=len(dr), ref="draw_real")
    y = as_vector("has_behavior", has_behavior, n=len(dr), ref="draw_real", kind="bool")
    grp = as_vector("group", group, n=len(dr), ref="draw_real", kind="int")
    why = auc_support(y, grp, th, "the candidate set")
    if why:
        return error_verdict(NAME, why)
    a_diff = paired_auc_difference_bootstrap(dr, dp, y, grp, **th.bootstrap)
    ok = a_diff.ci_low > th.target_margin
    metrics = {"auc_real": Metric(within_group_auc(dr, y, grp), n=a_diff.n),
               "auc_placebo": Metric(within_group_auc(dp, y, grp), n=a_diff.n),
               "auc_real_minus_placebo": Metric.of(a_diff)}
    reason = (f"within-group AUC real target {metrics['auc_real'].value:.4f} vs placebo "
              f"{metrics['auc_placebo'].value:.4f}: paired difference {Metric.of(a_diff)} (CI low > "
              f"{th.target_margin}: {mark(ok)}); {a_diff.n} pairs")
    return make_verdict(NAME, pass_fail(ok), metrics, reason)


def judge(train_real, train_placebo, is_gt, step, draw_real, draw_placebo, has_behavior, group, *,
          thresholds: Thresholds = Thresholds()) -> Verdict:
    """One seed and one draw: both halves must pass (see the two functions above). ``draw_real=None`` (a
    step-level estimator, for which fresh draws are N/A): the training half decides. A score that ignores the
    target has difference 0 on both and fails."""
    tv = judge_training(train_real, train_placebo, is_gt, step, thresholds=thresholds)
    if draw_real is None:
        return tv
    dv = judge_draw(draw_real, draw_placebo, has_behavior, group, thresholds=thresholds)
    if dv.outcome == "error":
        return dv
    ok = tv.outcome == "pass" and dv.outcome == "pass"
    return make_verdict(NAME, pass_fail(ok), {**tv.metrics, **dv.metrics}, f"{tv.reason}; {dv.reason}")


def cell(suite, est: str, i: int, draws: int) -> Verdict:
    """Seed ``i``: the estimator's precision@|GT| over the training rollouts, and its within-group AUC on every draw
    at the saturated checkpoint, each with the real ``in_context`` target and with the ``no_behavior`` placebo
    (built the same way from completions without the behavior; handed over as an in_context target). Units: the
    training half, then one per draw; every one must pass (draws are N/A for a step-level estimator)."""
    suite.require_training_target(i, "no_behavior")  # an empty placebo is the fixture's error, not the estimator's
    t = suite.training(i)
    fx = suite.fixtures[i]
    vs = [judge_training(suite.training_scores(est, i), suite.training_scores(est, i, "no_behavior"),
                         t["is_gt"], t["step"], thresholds=suite.thresholds)]
    ks = suite.sketch_seeds(i)  # the training half under the run's own sketch, each draw under every sketch seed
    units = [{"seed": fx.seed, "draw": None, "part": "training", "sketch_seed": ks[0]}]
    if getattr(suite.estimator(est), "level", "rollout") != "step":
        suite.require_draw(i, "saturated")
        for d in range(draws):
            r = suite.draw(i, "saturated", d)
            for k in ks:
                vs.append(judge_draw(suite.draw_scores(est, i, "saturated", d, sketch_seed=k),
                                     suite.draw_scores(est, i, "saturated", d, target_kind="no_behavior",
                                                       sketch_seed=k),
                                     r["has_behavior"], r["group"], thresholds=suite.thresholds))
                units.append({"seed": fx.seed, "draw": d, "part": "draw", "sketch_seed": k})
    return combine(vs, labels=[(f"seed{fx.seed}" if u["draw"] is None else f"seed{fx.seed}/draw{u['draw']}")
                               + ("" if len(ks) == 1 else f"/sketch_seed{u['sketch_seed']}") for u in units],
                   units=units)


def figure_parts(us: list[dict]) -> list[str | None]:
    return [(p := fig("precision_real_minus_placebo", us, "{:+.3f}")) and f"prec real-placebo {p}",
            (a := fig("auc_real_minus_placebo", us, "{:+.2f}")) and f"AUC real-placebo {a}"]


SPEC = CheckSpec(
    name=NAME, order=7, unit="seed", title="ranks worse under a placebo target than under the real one (ours)",
    finding="A sanity test (Hanawa et al. 2021, Adebayo et al. 2018): a score that ignores the target (every control, "
            "anything read from labels, files or the process) fails it by construction.",
    cell=cell, judge=judge, figure_parts=figure_parts,
    thresholds={"target_margin": "CI lower bounds of precision@|GT| (step bootstrap) and of the within-group AUC "
                                 "(group bootstrap), each real target minus placebo target, paired, must exceed "
                                 "this"})
