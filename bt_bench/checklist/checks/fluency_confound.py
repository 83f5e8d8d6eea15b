"""Check 2, fluency_confound: at a saturated checkpoint the estimator's within-group AUC beats fluency's (mean token
log-prob), and stays above 0.5 after residualizing on fluency. The paper's finding: at saturation fluency predicted
the behavior label (AUC 0.72-0.80) as well as any gradient method."""

from __future__ import annotations

from bt_bench.checklist.base import (
    Metric,
    Thresholds,
    Verdict,
    auc_support,
    error_verdict,
    mark,
    out_of_reach,
    pass_fail,
    supported_or,
)
from bt_bench.checklist.bootstrap import (
    auc_bootstrap,
    paired_auc_difference_bootstrap,
    residualized_auc_bootstrap,
)
from bt_bench.checklist.evidence_judging import draw_unit, draws_of_kind, per_item, skip
from bt_bench.checklist.figures import fig
from bt_bench.checklist.metrics import as_vector
from bt_bench.checklist.sketch_units import under_sketch_seeds
from bt_bench.checklist.spec import CheckSpec, step_level_on_draws

NAME = "fluency_confound"


def judge(scores, has_behavior, group, fluency, *, thresholds: Thresholds = Thresholds()) -> Verdict:
    """At a saturated checkpoint: raw within-group AUC above fluency's AUC, decided by the CI of the paired
    group-bootstrap difference AUC(scores) - AUC(fluency) (lower bound > fluency_margin; both AUCs on the same
    group resamples), and the fluency-residualized AUC has CI lower bound > residual_auc_bar.  Too few pairs ->
    error."""
    th = thresholds
    why = auc_support(has_behavior, group, th, "the saturated candidate set")
    if why:
        return error_verdict(NAME, why)
    raw = auc_bootstrap(scores, has_behavior, group, **th.bootstrap)
    flu = auc_bootstrap(fluency, has_behavior, group, **th.bootstrap)
    diff = paired_auc_difference_bootstrap(scores, fluency, has_behavior, group, **th.bootstrap)
    res = residualized_auc_bootstrap(scores, fluency, has_behavior, group, **th.bootstrap)
    ok_raw, ok_res = diff.ci_low > th.fluency_margin, res.ci_low > th.residual_auc_bar
    metrics = {"auc": Metric.of(raw), "fluency_auc": Metric.of(flu), "auc_minus_fluency": Metric.of(diff),
               "residualized_auc": Metric.of(res)}
    reason = (f"within-group AUC {Metric.of(raw)} vs fluency's {Metric.of(flu)}: paired difference "
              f"{Metric.of(diff)} (CI low > {th.fluency_margin}: {mark(ok_raw)}); residualized AUC "
              f"{Metric.of(res)} (CI low > {th.residual_auc_bar}: {mark(ok_res)}); {raw.n} pairs")
    y = as_vector("has_behavior", has_behavior, kind="bool")
    reach = out_of_reach({"auc_minus_fluency": (paired_auc_difference_bootstrap(
        y.astype(float), fluency, y, group, **th.bootstrap), th.fluency_margin)})
    return supported_or(NAME, reach, pass_fail(ok_raw and ok_res), metrics, reason)


def cell(suite, est: str, i: int, d: int) -> Verdict:
    suite.require_applicable(NAME, est)
    suite.require_draw(i, "saturated")
    r = suite.draw(i, "saturated", d)
    ks = suite.sketch_seeds(i)
    return under_sketch_seeds([judge(suite.draw_scores(est, i, "saturated", d, sketch_seed=k), r["has_behavior"],
                                     r["group"], r["fluency"], thresholds=suite.thresholds) for k in ks],
                              suite.unit(i, d), ks)


def figure_parts(us: list[dict]) -> list[str | None]:
    raw, flu = fig("auc", us, lo=False), fig("fluency_auc", us, lo=False)
    return [raw and f"AUC {raw}" + (f" vs fluency {flu}" if flu else ""),
            (r := fig("residualized_auc", us)) and f"resid {r}"]


def replay(ev, name: str, th: Thresholds) -> Verdict:
    if name == "fluency":
        return skip(NAME, "fluency is the reference of this check")
    return per_item(NAME, draws_of_kind(ev, name, "saturated", th),
                    lambda d: judge(d.scores[name], d.has_behavior, d.group, d.fluency, thresholds=th),
                    draw_unit, "the evidence has no saturated candidate set scored by this estimator")


SPEC = CheckSpec(
    name=NAME, order=2, unit="seed_draw", title="beats fluency at a saturated checkpoint, also after residualization",
    finding="At saturation fluency (mean token log-prob) predicted the behavior label (AUC 0.72-0.80) as well as any "
            "gradient method.",
    reference="fluency", cell=cell, judge=judge, figure_parts=figure_parts, replay=replay,
    not_applicable=step_level_on_draws, plots=("auc_vs_fluency",),
    thresholds={"fluency_margin": "CI lower bound of the paired (group-bootstrap) difference within-group AUC minus "
                                  "fluency's AUC must exceed this",
                "residual_auc_bar": "CI lower bound of the residualized AUC must exceed this"})
