"""Check 6, advantage_baseline (ours, beyond the paper): a rollout-level estimator's precision@|GT| beats the
advantage_only control's, overall and in the window. Inside the window a positive advantage nearly implies the
planted cause, so a score that tracks the advantage finds GT without attributing anything."""

from __future__ import annotations

from collections.abc import Iterable

from bt_bench.checklist.base import (
    Metric,
    Thresholds,
    Verdict,
    error_verdict,
    mark,
    out_of_reach,
    pass_fail,
    run_arrays,
    supported_or,
    window_support,
    with_unit,
)
from bt_bench.checklist.bootstrap import precision_difference_bootstrap
from bt_bench.checklist.evidence_judging import per_item, seed_unit, skip
from bt_bench.checklist.figures import fig
from bt_bench.checklist.metrics import as_vector, precision_at_k
from bt_bench.checklist.spec import CheckSpec

NAME = "advantage_baseline"


def judge(scores, advantage_scores, is_gt, step, *, W: int, nonzero, rollout_level: bool,
          thresholds: Thresholds = Thresholds()) -> Verdict:
    """Rollout-level estimators only (step-level -> skip): overall and window precision@|GT| minus
    advantage_only's, both with CI low > advantage_margin (paired step bootstrap)."""
    th = thresholds
    if not rollout_level:
        return Verdict(NAME, "skip", {}, f"step-level estimator: {NAME} guards rollout-level ones")
    s, g, st = run_arrays(scores, is_gt, step)
    a = as_vector("advantage_scores", advantage_scores, n=len(s), ref="scores")
    m, why = window_support(g, st, W, nonzero)
    if why:
        return error_verdict(NAME, why)
    overall = precision_difference_bootstrap(s, a, g, st, **th.bootstrap)
    win = precision_difference_bootstrap(s[m], a[m], g[m], st[m], **th.bootstrap)
    ok_all, ok_win = overall.ci_low > th.advantage_margin, win.ci_low > th.advantage_margin
    metrics = {"precision_minus_advantage": Metric.of(overall),
               "window_precision_minus_advantage": Metric.of(win),
               "advantage_precision": Metric(precision_at_k(a, g), n=len(g)),
               "window_advantage_precision": Metric(precision_at_k(a[m], g[m]), n=int(m.sum()))}
    reason = (f"precision@|GT| minus advantage_only's: overall {Metric.of(overall)} (CI low > "
              f"{th.advantage_margin}: {mark(ok_all)}), window {Metric.of(win)} ({mark(ok_win)})")
    perfect = g.astype(float)
    reach = out_of_reach({
        "precision_minus_advantage": (precision_difference_bootstrap(perfect, a, g, st, **th.bootstrap),
                                      th.advantage_margin),
        "window_precision_minus_advantage": (precision_difference_bootstrap(
            perfect[m], a[m], g[m], st[m], **th.bootstrap), th.advantage_margin)})
    return supported_or(NAME, reach, pass_fail(ok_all and ok_win), metrics, reason)


def cell(suite, est: str, i: int) -> Verdict:
    suite.require_applicable(NAME, est)
    s = suite.training_scores(est, i)
    t = suite.training(i)
    return with_unit(judge(s, suite.training_scores("advantage_only", i), t["is_gt"], t["step"], W=t["W"],
                           nonzero=t["nonzero"], rollout_level=True, thresholds=suite.thresholds), suite.unit(i))


def figure_parts(us: list[dict]) -> list[str | None]:
    return [(a := fig("precision_minus_advantage", us, "{:+.3f}")) and f"vs adv {a}",
            (w := fig("window_precision_minus_advantage", us, "{:+.3f}")) and f"window {w}"]


def replay(ev, name: str, th: Thresholds) -> Verdict:
    if name == "advantage_only":
        return skip(NAME, "advantage_only is the reference of this check")

    def one(r) -> Verdict:
        adv = r.scores.get("advantage_only", r.advantage)
        if adv is None:
            return skip(NAME, "the run has neither advantage_only scores nor an advantage column")
        return judge(r.scores[name], adv, r.is_gt, r.step, W=r.W, nonzero=r.nonzero,
                     rollout_level=r.rollout_level[name], thresholds=th)

    return per_item(NAME, [r for r in ev.runs if name in r.scores], one, seed_unit,
                    "the evidence has no training-rollout scores for this estimator")


def not_applicable(name: str, level: str, capabilities: Iterable[str]) -> str | None:
    if level == "step":
        return (f"{name} is step-level: {NAME} compares rollout-level estimators with the rollout-level "
                "advantage_only control (spec, check 6)")
    return None


SPEC = CheckSpec(
    name=NAME, order=6, unit="seed", title="beats advantage_only, overall and in the window (ours)",
    finding="Inside the window a positive advantage nearly implies the planted cause, so a score that tracks the "
            "advantage finds GT without attributing anything.",
    reference="advantage_only", cell=cell, judge=judge, figure_parts=figure_parts, replay=replay,
    not_applicable=not_applicable,
    thresholds={"advantage_margin": "CI lower bounds of precision minus advantage_only's must exceed this"})
