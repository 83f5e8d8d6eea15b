"""Check 8, retrieval_baseline (ours): a rollout-level estimator must rank better than text and representation
retrieval, the controls ``bm25``, ``repsim`` and their advantage-weighted variants ``bm25_adv`` and ``repsim_adv``
(estimators/retrieval.py). The planted behavior is a literal string and the in_context target is built from
completions that contain it, so a score that retrieves the target's tokens finds GT without attributing anything; in fact tracing BM25 beats gradient-based attribution (Akyurek et al.
2022; Chang et al. 2024) and DATE-LM (2025) reports both controls beside every gradient method."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bt_bench.checklist.base import (
    Metric,
    Thresholds,
    Verdict,
    auc_support,
    combine,
    error_verdict,
    mark,
    out_of_reach,
    pass_fail,
    supported_or,
)
from bt_bench.checklist.bootstrap import paired_auc_difference_bootstrap, precision_difference_bootstrap
from bt_bench.checklist.figures import fig
from bt_bench.checklist.metrics import as_vector
from bt_bench.checklist.spec import CheckSpec

NAME = "retrieval_baseline"
# every one must be beaten: together, the best retrieval control on each unit. The advantage-weighted variants are
# in because they were stronger on tiny's training rollouts (estimators/retrieval.py has the figures)
CONTROLS = ("bm25", "repsim", "bm25_adv", "repsim_adv")


def _best(metrics: dict, prefix: str, controls: Mapping) -> Metric:
    """The difference against the strongest control on this unit: the one with the lowest CI lower bound."""
    return min((metrics[prefix + c] for c in controls),
               key=lambda m: (float("-inf") if m.ci_low is None else m.ci_low, m.value))


def judge_training(scores, controls: Mapping[str, object], is_gt, step, *,
                   thresholds: Thresholds = Thresholds()) -> Verdict:
    """Training rollouts: precision@|GT| minus each control's, paired on the same step resamples; every CI low >
    retrieval_margin. A unit where even the GT indicator cannot beat a control on that CI is unsupported."""
    th = thresholds
    s = as_vector("scores", scores)
    g = as_vector("is_gt", is_gt, n=len(s), ref="scores", kind="bool")
    st = as_vector("step", step, n=len(s), ref="scores", kind="int")
    metrics, parts, oks, reach = {}, [], [], {}
    for name, c in controls.items():
        cv = as_vector(f"{name}_scores", c, n=len(s), ref="scores")
        d = precision_difference_bootstrap(s, cv, g, st, **th.bootstrap)
        ok = d.ci_low > th.retrieval_margin
        metrics[f"precision_minus_{name}"] = Metric.of(d)
        parts.append(f"precision@|GT| minus {name}'s {Metric.of(d)} (CI low > {th.retrieval_margin}: {mark(ok)})")
        oks.append(ok)
        reach[f"precision_minus_{name}"] = (precision_difference_bootstrap(g.astype(float), cv, g, st,
                                                                           **th.bootstrap), th.retrieval_margin)
    metrics["precision_minus_best"] = _best(metrics, "precision_minus_", controls)
    return supported_or(NAME, out_of_reach(reach), pass_fail(all(oks)), metrics, "training: " + "; ".join(parts))


def judge_draw(scores, controls: Mapping[str, object], has_behavior, group, *,
               thresholds: Thresholds = Thresholds()) -> Verdict:
    """One draw: within-group AUC minus each control's, paired on the same group resamples; every CI low >
    retrieval_margin. Too few pairs -> error; a draw no ranking can win is unsupported."""
    th = thresholds
    s = as_vector("scores", scores)
    y = as_vector("has_behavior", has_behavior, n=len(s), ref="scores", kind="bool")
    grp = as_vector("group", group, n=len(s), ref="scores", kind="int")
    why = auc_support(y, grp, th, "the candidate set")
    if why:
        return error_verdict(NAME, why)
    metrics, parts, oks, reach = {}, [], [], {}
    for name, c in controls.items():
        cv = as_vector(f"{name}_scores", c, n=len(s), ref="scores")
        d = paired_auc_difference_bootstrap(s, cv, y, grp, **th.bootstrap)
        ok = d.ci_low > th.retrieval_margin
        metrics[f"auc_minus_{name}"] = Metric.of(d)
        parts.append(f"within-group AUC minus {name}'s {Metric.of(d)} (CI low > {th.retrieval_margin}: {mark(ok)})")
        oks.append(ok)
        reach[f"auc_minus_{name}"] = (paired_auc_difference_bootstrap(y.astype(float), cv, y, grp, **th.bootstrap),
                                      th.retrieval_margin)
    metrics["auc_minus_best"] = _best(metrics, "auc_minus_", controls)
    return supported_or(NAME, out_of_reach(reach), pass_fail(all(oks)), metrics, "; ".join(parts))


def judge(scores, controls: Mapping[str, object], is_gt, step, draw_scores=None, draw_controls=None,
          has_behavior=None, group=None, *, thresholds: Thresholds = Thresholds()) -> Verdict:
    """One seed's training half and, when ``draw_scores`` is given, one draw: both must pass (a draw that cannot
    support a verdict decides as it is)."""
    tv = judge_training(scores, controls, is_gt, step, thresholds=thresholds)
    if draw_scores is None:
        return tv
    dv = judge_draw(draw_scores, draw_controls or {}, has_behavior, group, thresholds=thresholds)
    return combine([tv, dv], labels=["training", "draw"])


def cell(suite, est: str, i: int, draws: int) -> Verdict:
    """Seed ``i``: the training half (every TracIn checkpoint's in_context target), then every draw at the saturated
    checkpoint under every sketch seed; each unit must pass."""
    suite.require_applicable(NAME, est)
    t, fx = suite.training(i), suite.fixtures[i]
    ks = suite.sketch_seeds(i)
    vs = [judge_training(suite.training_scores(est, i), {c: suite.training_scores(c, i) for c in CONTROLS},
                         t["is_gt"], t["step"], thresholds=suite.thresholds)]
    units = [{"seed": fx.seed, "draw": None, "part": "training", "sketch_seed": ks[0]}]
    suite.require_draw(i, "saturated")
    for d in range(draws):
        r = suite.draw(i, "saturated", d)
        for k in ks:
            vs.append(judge_draw(suite.draw_scores(est, i, "saturated", d, sketch_seed=k),
                                 {c: suite.draw_scores(c, i, "saturated", d, sketch_seed=k) for c in CONTROLS},
                                 r["has_behavior"], r["group"], thresholds=suite.thresholds))
            units.append({"seed": fx.seed, "draw": d, "part": "draw", "sketch_seed": k})
    return combine(vs, labels=[(f"seed{fx.seed}" if u["draw"] is None else f"seed{fx.seed}/draw{u['draw']}")
                               + ("" if len(ks) == 1 else f"/sketch_seed{u['sketch_seed']}") for u in units],
                   units=units)


def figure_parts(us: list[dict]) -> list[str | None]:
    """Against the strongest control of each unit (every control's difference is in the unit's metrics)."""
    return [(p := fig("precision_minus_best", us, "{:+.3f}")) and f"prec vs best retrieval {p}",
            (a := fig("auc_minus_best", us, "{:+.2f}")) and f"AUC vs best retrieval {a}"]


def not_applicable(name: str, level: str, capabilities: Iterable[str]) -> str | None:
    if level == "step":
        return (f"{name} is step-level: {NAME} compares rollout-level rankings with the rollout-level retrieval "
                "controls")
    return None


SPEC = CheckSpec(
    name=NAME, order=8, unit="seed", title="beats text and representation retrieval (bm25, repsim, and both times the advantage) (ours)",
    finding="The behavior is a literal string and the target is built from completions that contain it: retrieval "
            "finds GT without attributing (in fact tracing BM25 beats gradient attribution, Akyurek et al. 2022).",
    cell=cell, judge=judge, figure_parts=figure_parts, not_applicable=not_applicable,
    thresholds={"retrieval_margin": "CI lower bounds of precision@|GT| (training, step bootstrap) and of the "
                                    "within-group AUC (draws, group bootstrap), each minus every retrieval "
                                    "control's, paired, must exceed this"})
