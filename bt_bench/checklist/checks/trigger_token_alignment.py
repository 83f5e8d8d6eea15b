"""Check 5, trigger_token_alignment: the gradient restricted to the behavior tokens aligns with the in_context target
(a target built where the behavior occurs) more than with a placebo target. The paper's finding: only the
trigger-token gradient aligned (+0.230 / +0.114 / +0.295 on three seeds; ~0 or negative for a constructed
target)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from bt_bench.checklist.base import (
    Metric,
    Thresholds,
    Verdict,
    error_verdict,
    make_verdict,
    mark,
    pass_fail,
)
from bt_bench.checklist.bootstrap import mean_bootstrap, paired_difference_bootstrap
from bt_bench.checklist.evidence_judging import per_item
from bt_bench.checklist.figures import fig
from bt_bench.checklist.metrics import as_vector
from bt_bench.checklist.sketch_units import under_sketch_seeds
from bt_bench.checklist.spec import CheckSpec, step_level_on_draws

NAME = "trigger_token_alignment"


def judge(in_context, placebo, *, cosine_scale: bool, response=None, constructed=None,
          thresholds: Thresholds = Thresholds()) -> Verdict:
    """On one seed: for behavior-containing candidates, the token-restricted gradient's score against the
    in_context target minus against a placebo target has mean CI low > alignment_margin; for cosine-scale
    estimators also mean in_context cosine CI low > cosine_bar.  Responses are the bootstrap clusters
    (`response`: one id per row; default each row its own response).

    in_context None -> skip (no token-level support).  placebo None (evidence without a placebo target):
    the paired part cannot be judged, so the outcome is fail if the part that can be judged fails, else
    skip -- never a pass.  `constructed` scores, if given, are only reported (spec: ~0 or negative).
    """
    th = thresholds
    if in_context is None:
        return Verdict(NAME, "skip", {}, "the estimator has no token-level scores")
    ctx = as_vector("in_context", in_context)
    if len(ctx) < 2:
        return error_verdict(NAME, f"the fixture cannot support this check: {len(ctx)} behavior-containing "
                             "candidates")
    placebo = None if placebo is None else as_vector("placebo", placebo, n=len(ctx), ref="in_context")
    response = None if response is None else as_vector("response", response, n=len(ctx), ref="in_context",
                                                       kind="int")
    metrics: dict[str, Metric] = {}
    parts, oks = [], []
    if cosine_scale:
        mean = mean_bootstrap(ctx, response, **th.bootstrap)
        ok = mean.ci_low > th.cosine_bar
        metrics["in_context_mean"] = Metric.of(mean)
        parts.append(f"mean in-context cosine {Metric.of(mean)} (CI low > {th.cosine_bar}: {mark(ok)})")
        oks.append(ok)
    if placebo is not None:
        diff = paired_difference_bootstrap(ctx, placebo, response, **th.bootstrap)
        ok = diff.ci_low > th.alignment_margin
        metrics["in_context_minus_placebo"] = Metric.of(diff)
        parts.insert(0, f"mean(in_context - placebo) {Metric.of(diff)} (CI low > {th.alignment_margin}: "
                        f"{mark(ok)})")
        oks.append(ok)
    if constructed is not None:
        con = mean_bootstrap(as_vector("constructed", constructed, n=len(ctx), ref="in_context"),
                             response, **th.bootstrap)
        metrics["constructed_mean"] = Metric.of(con)
        parts.append(f"constructed-target mean {Metric.of(con)} (reported only)")
    if placebo is None:
        outcome = "fail" if not all(oks) else "skip"
        parts.append("no placebo scores, so the paired difference cannot be judged")
    else:
        outcome = pass_fail(all(oks))
    return make_verdict(NAME, outcome, metrics, "; ".join(parts) + f"; {len(ctx)} rows")


def cell(suite, est: str, i: int, draws: int) -> tuple[Verdict, dict]:
    """Behavior-containing candidates of every draw at the saturated checkpoint, pooled per seed; token-restricted
    scores against in_context, placebo and constructed targets. Bootstrap clusters are prompts: the draws reuse
    the same candidate prompts, so responses to one prompt in different draws are not independent (spec
    "Confidence intervals")."""
    from bt_bench.estimator.contract import is_cosine_scale

    suite.require_applicable(NAME, est)
    suite.require_draw(i, "saturated")
    ks = suite.sketch_seeds(i)
    vs, series = [], None
    for k in ks:  # the pooled verdict under each sketch seed; it must hold under every one
        out: dict[str, list] = {"in_context": [], "placebo": [], "constructed": [], "response": []}
        for d in range(draws):
            beh = suite.draw(i, "saturated", d)["has_behavior"]
            for kind in ("in_context", "placebo", "constructed"):
                out[kind].append(suite.draw_scores(est, i, "saturated", d, target_kind=kind, token=True,
                                                   sketch_seed=k)[beh])
            out["response"].append(np.asarray(suite.draw(i, "saturated", d)["group"])[beh])  # prompt id
        t = {key: np.concatenate(v) for key, v in out.items()}
        vs.append(judge(t["in_context"], t["placebo"], response=t["response"], constructed=t["constructed"],
                        cosine_scale=is_cosine_scale(suite.estimator(est)), thresholds=suite.thresholds))
        if series is None:  # the plotted series: the run's own sketch
            series = {key: [float(x) for x in t[key]] for key in ("in_context", "placebo", "constructed")}
    return under_sketch_seeds(vs, suite.unit(i), ks), series


def figure_parts(us: list[dict]) -> list[str | None]:
    return [(d := fig("in_context_minus_placebo", us, "{:+.2f}")) and f"ctx-placebo {d}",
            (c := fig("in_context_mean", us, "{:+.2f}")) and f"cos {c}",
            (k := fig("constructed_mean", us, "{:+.2f}", lo=False)) and f"constructed {k}"]


def replay(ev, name: str, th: Thresholds) -> Verdict:
    return per_item(NAME, [t for t in ev.token_level if t.estimator == name],
                    lambda t: judge(t.in_context, t.placebo, cosine_scale=t.cosine_scale, response=t.response,
                                    constructed=t.constructed, thresholds=th),
                    lambda t: {"seed": t.seed, "draw": t.draw},
                    "the evidence has no token-level scores for this estimator")


def not_applicable(name: str, level: str, capabilities: Iterable[str]) -> str | None:
    """Step-level estimators cannot rank one draw's candidates; the check needs scores of the gradient restricted
    to the behavior tokens (token sketches, or the model, which hands over a token mask)."""
    from bt_bench.estimator.contract import Capability

    why = step_level_on_draws(name, level, capabilities)
    if why is None and not {Capability.TOKEN_SKETCHES.value, Capability.MODEL.value} & {str(c) for c in capabilities}:
        why = (f"{name} declares neither 'token_sketches' nor 'model': it cannot score the gradient restricted to "
               "the behavior tokens")
    return why


SPEC = CheckSpec(
    name=NAME, order=5, unit="seed", title="the behavior-token gradient aligns with the in_context target",
    finding="Only the trigger-token gradient aligned with a target built where the behavior occurs (+0.230 / +0.114 / "
            "+0.295 on three seeds; ~0 or negative for the constructed target).",
    cell=cell, judge=judge, figure_parts=figure_parts, replay=replay, not_applicable=not_applicable,
    plots=("alignment",),
    thresholds={"alignment_margin": "CI lower bound of mean(in_context - placebo) must exceed this",
                "cosine_bar": "for cosine-scale estimators, CI lower bound of the mean in-context cosine must "
                              "exceed this"})
