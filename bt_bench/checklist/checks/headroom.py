"""Check 3, headroom: with enough window headroom (ceiling - chance), the estimator's normalized gain in the window
is above 0, and its within-group AUC at an unsaturated checkpoint is above 0.5. The paper's finding: headroom
bounds what any step-level method can show; window gains did not clear it."""

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
    run_arrays,
    supported_or,
    window_support,
)
from bt_bench.checklist.bootstrap import auc_bootstrap, normalized_gain_bootstrap
from bt_bench.checklist.evidence_judging import draws_of_kind, per_item, skip
from bt_bench.checklist.figures import fig
from bt_bench.checklist.metrics import as_vector, ranking_metrics
from bt_bench.checklist.sketch_units import under_sketch_seeds
from bt_bench.checklist.spec import CheckSpec

NAME = "headroom"


def judge(scores, is_gt, step, *, W: int, nonzero, unsat_scores=None, unsat_has_behavior=None,
          unsat_group=None, unsat_applicable: bool = True, thresholds: Thresholds = Thresholds()) -> Verdict:
    """With window headroom >= min_headroom (else error), the window normalized gain has CI low > gain_margin,
    and the within-group AUC at an unsaturated checkpoint has CI low > auc_bar.

    The unsaturated arrays are None when no unsaturated checkpoint qualified: an error of the fixture.
    ``unsat_applicable=False`` (a step-level estimator, which cannot rank the candidates of one checkpoint):
    the window gain alone decides.
    """
    th = thresholds
    s, g, st = run_arrays(scores, is_gt, step)
    m, why = window_support(g, st, W, nonzero)
    if why:
        return error_verdict(NAME, why)
    wm = ranking_metrics(s[m], g[m], st[m])
    metrics = {"window_headroom": Metric(wm.headroom, n=wm.n), "window_ceiling": Metric(wm.ceiling, n=wm.n),
               "window_chance": Metric(wm.chance, n=wm.n)}
    if wm.headroom < th.min_headroom:
        return error_verdict(NAME, f"the fixture cannot support this check: window headroom {wm.headroom:.4f} "
                             f"(ceiling {wm.ceiling:.4f} - chance {wm.chance:.4f}) < min_headroom={th.min_headroom}",
                             metrics)
    perfect_gain = (normalized_gain_bootstrap(g[m].astype(float), g[m], st[m], **th.bootstrap),
                    th.gain_margin)
    if not unsat_applicable:
        gain = normalized_gain_bootstrap(s[m], g[m], st[m], **th.bootstrap)
        ok_gain = gain.ci_low > th.gain_margin
        metrics |= {"window_normalized_gain": Metric.of(gain)}
        return supported_or(NAME, out_of_reach({"window_normalized_gain": perfect_gain}), pass_fail(ok_gain),
                            metrics, f"window headroom {wm.headroom:.4f}; window normalized gain {Metric.of(gain)} "
                            f"(CI low > {th.gain_margin}: {mark(ok_gain)}); unsaturated AUC N/A (step-level)")
    if unsat_scores is None or unsat_has_behavior is None or unsat_group is None:
        return error_verdict(NAME, "the fixture cannot support this check: no unsaturated checkpoint qualified",
                             metrics)
    why = auc_support(unsat_has_behavior, unsat_group, th, "the unsaturated candidate set")
    if why:
        return error_verdict(NAME, why, metrics)
    gain = normalized_gain_bootstrap(s[m], g[m], st[m], **th.bootstrap)
    auc = auc_bootstrap(unsat_scores, unsat_has_behavior, unsat_group, **th.bootstrap)
    ok_gain, ok_auc = gain.ci_low > th.gain_margin, auc.ci_low > th.auc_bar
    metrics |= {"window_normalized_gain": Metric.of(gain), "unsaturated_auc": Metric.of(auc)}
    reason = (f"window headroom {wm.headroom:.4f}; window normalized gain {Metric.of(gain)} (CI low > "
              f"{th.gain_margin}: {mark(ok_gain)}); unsaturated within-group AUC {Metric.of(auc)} (CI low > "
              f"{th.auc_bar}: {mark(ok_auc)})")
    uy = as_vector("unsat_has_behavior", unsat_has_behavior, kind="bool")
    reach = out_of_reach({"window_normalized_gain": perfect_gain, "unsaturated_auc": (
        auc_bootstrap(uy.astype(float), uy, unsat_group, **th.bootstrap), th.auc_bar)})
    return supported_or(NAME, reach, pass_fail(ok_gain and ok_auc), metrics, reason)


def cell(suite, est: str, i: int, d: int) -> Verdict:
    train = suite.training_scores(est, i)
    t = suite.training(i)
    kw: dict = {}
    if getattr(suite.estimator(est), "level", "rollout") == "step":
        kw = {"unsat_applicable": False}  # one score per step cannot rank the candidates of one checkpoint
    elif suite.has_draw(i, "unsaturated") is None:
        r = suite.draw(i, "unsaturated", d)
        ks = suite.sketch_seeds(i)  # the window gain is the training rollouts' (the run's own sketch); the AUC each
        return under_sketch_seeds([judge(train, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"],
                                         thresholds=suite.thresholds,
                                         unsat_scores=suite.draw_scores(est, i, "unsaturated", d, sketch_seed=k),
                                         unsat_has_behavior=r["has_behavior"], unsat_group=r["group"])
                                   for k in ks], suite.unit(i, d), ks)
    v = judge(train, t["is_gt"], t["step"], W=t["W"], nonzero=t["nonzero"], thresholds=suite.thresholds, **kw)
    if not kw and v.outcome == "error":
        v = Verdict(v.check, v.outcome, v.metrics, f"{v.reason} ({suite.has_draw(i, 'unsaturated')})")
    return under_sketch_seeds([v], suite.unit(i, d), suite.sketch_seeds(i)[:1])


def figure_parts(us: list[dict]) -> list[str | None]:
    g = fig("window_normalized_gain", us)
    parts: list[str | None] = [g and f"gain {g}", (a := fig("unsaturated_auc", us)) and f"unsat AUC {a}"]
    if not g:
        parts.append((h := fig("window_headroom", us, lo=False)) and f"headroom {h}")
    return parts


def replay(ev, name: str, th: Thresholds) -> Verdict:
    unsat = draws_of_kind(ev, name, "unsaturated", th)
    if not unsat:
        return skip(NAME, "the evidence has no unsaturated candidate set scored by this estimator")
    cells = [(r, [d for d in unsat if d.seed == r.seed] or [None]) for r in ev.runs if name in r.scores]
    items = [(r, d) for r, ds in cells for d in ds]

    def one(item) -> Verdict:
        r, d = item
        return judge(r.scores[name], r.is_gt, r.step, W=r.W, nonzero=r.nonzero,
                     unsat_scores=None if d is None else d.scores[name],
                     unsat_has_behavior=None if d is None else d.has_behavior,
                     unsat_group=None if d is None else d.group, thresholds=th)

    return per_item(NAME, items, one, lambda it: {"seed": it[0].seed, "draw": None if it[1] is None else it[1].draw},
                    "the evidence has no training-rollout scores for this estimator")


SPEC = CheckSpec(
    name=NAME, order=3, unit="seed_draw", title="normalized window gain and unsaturated within-group AUC above chance",
    finding="Headroom (ceiling - chance) bounds what any step-level method can show; window gains did not clear it.",
    cell=cell, judge=judge, figure_parts=figure_parts, replay=replay,
    thresholds={"min_headroom": "window ceiling - chance below this means the fixture cannot support a verdict "
                                "(error)",
                "gain_margin": "CI lower bound of the window normalized gain must exceed this",
                "auc_bar": "CI lower bound of the within-group AUC at the unsaturated checkpoint must exceed this"})
