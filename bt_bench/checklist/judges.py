"""One pure verdict function per checklist item (spec: checklist.md, "The checks").

Each function maps plain arrays (scores, labels, steps, groups, ...) and :class:`Thresholds` to a
:class:`Verdict`: an outcome, the metrics with their bootstrap CIs, and a reason that names the figures.
The cells of ``bt_bench.checklist.cells`` (the pytest checks in ``checks/``) and evidence replay
(``bt_bench.checklist.replay``) call the same functions, so a published table and a fixture run are judged by one
piece of code (spec: architecture.md). Outcomes and the every-seed rule: :mod:`bt_bench.checklist.base`.

Whether a unit can support a verdict at all (docs/checklist.md, "The gate"): every condition that compares the
estimator with a reference that does not depend on it (a control's scores: norm_only, fluency, advantage_only; or a
fixed bar: chance, 0.5, a margin) is also computed for a perfect ranking, the labels themselves (GT for training
rollouts, the behavior label for candidates), on the same paired bootstrap. There the labels are the best ranking in
every resample (precision@|GT| 1, within-group AUC 1), so if their CI lower bound misses the bar no ranking can
pass the unit: it is "unsupported" (neither pass nor fail, for every estimator), with the perfect ranking's figure.
Not such conditions: the residualized AUC (a ranking other than the labels can score higher; the labels are no
bound there) and the comparisons with the estimator's own scores under a placebo target (trigger_token_alignment,
target_dependence: the reference is the estimator's, and against an uninformative placebo a perfect ranking always
has room, AUC difference 0.5 and precision difference 1 - chance, once min_pairs holds).
"""

from __future__ import annotations

import numpy as np

from bt_bench.checklist.base import (
    Metric,
    Thresholds,
    Verdict,
    _auc_support,
    _error,
    _mark,
    _out_of_reach,
    _outcome,
    _run_arrays,
    _supported_or,
    _verdict,
    _window_support,
)
from bt_bench.checklist.bootstrap import (
    auc_bootstrap,
    mean_bootstrap,
    normalized_gain_bootstrap,
    paired_auc_difference_bootstrap,
    paired_difference_bootstrap,
    precision_bootstrap,
    precision_difference_bootstrap,
    residualized_auc_bootstrap,
)
from bt_bench.checklist.metrics import (
    as_vector,
    chance,
    precision_at_k,
    ranking_metrics,
    variance_shares,
    within_group_auc,
)


def gradient_norm_baseline(scores, is_gt, step, *, W: int, nonzero, norm_scores, norm_name: str,
                           thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 1: precision@|GT| beats the declared norm_only variant, and beats chance inside the window.

    `norm_scores` are the scores of the one norm_only variant declared for the fixture (`norm_name`, e.g.
    "norm_only" or "norm_only_step"), fixed by the caller before any estimator is scored, never chosen
    here or per seed (spec, check 1).  The CIs are cluster bootstraps over steps; the difference is
    paired (the same step resamples for both scores).
    """
    check, th = "gradient_norm_baseline", thresholds
    if not isinstance(norm_name, str) or not norm_name:
        raise ValueError(f"norm_name: must name the declared norm_only variant, got {norm_name!r}")
    s, g, st = _run_arrays(scores, is_gt, step)
    ns = as_vector("norm_scores", norm_scores, n=len(s), ref="scores")
    m, why = _window_support(g, st, W, nonzero)
    if why:
        return _error(check, why)
    overall = precision_bootstrap(s, g, st, **th.bootstrap)
    norm = precision_bootstrap(ns, g, st, **th.bootstrap)
    diff = precision_difference_bootstrap(s, ns, g, st, **th.bootstrap)
    win = precision_bootstrap(s[m], g[m], st[m], **th.bootstrap)
    win_chance = chance(g[m])
    ok_diff, ok_win = diff.ci_low > th.norm_margin, win.ci_low > win_chance
    metrics = {"precision": Metric.of(overall), "chance": Metric(chance(g), n=len(g)),
               "norm_precision": Metric.of(norm), "precision_minus_norm": Metric.of(diff),
               "window_precision": Metric.of(win), "window_chance": Metric(win_chance, n=int(m.sum()))}
    reason = (f"precision@|GT| {Metric.of(overall)} vs declared {norm_name} {Metric.of(norm)}: difference "
              f"{Metric.of(diff)} (CI low > {th.norm_margin}: {_mark(ok_diff)}); window precision "
              f"{Metric.of(win)} vs window chance {win_chance:.4f} (CI low > chance: {_mark(ok_win)})")
    perfect = g.astype(float)
    reach = _out_of_reach({
        "precision_minus_norm": (precision_difference_bootstrap(perfect, ns, g, st, **th.bootstrap),
                                 th.norm_margin),
        "window_precision": (precision_bootstrap(perfect[m], g[m], st[m], **th.bootstrap), win_chance)})
    return _supported_or(check, reach, _outcome(ok_diff and ok_win), metrics, reason)


def fluency_confound(scores, has_behavior, group, fluency, *, thresholds: Thresholds = Thresholds()
                     ) -> Verdict:
    """Check 2 (at a saturated checkpoint): raw within-group AUC above fluency's AUC, decided by the CI of
    the paired group-bootstrap difference AUC(scores) - AUC(fluency) (lower bound > fluency_margin; both
    AUCs on the same group resamples), and the fluency-residualized AUC has CI lower bound >
    residual_auc_bar.  Too few pairs -> error."""
    check, th = "fluency_confound", thresholds
    why = _auc_support(has_behavior, group, th, "the saturated candidate set")
    if why:
        return _error(check, why)
    raw = auc_bootstrap(scores, has_behavior, group, **th.bootstrap)
    flu = auc_bootstrap(fluency, has_behavior, group, **th.bootstrap)
    diff = paired_auc_difference_bootstrap(scores, fluency, has_behavior, group, **th.bootstrap)
    res = residualized_auc_bootstrap(scores, fluency, has_behavior, group, **th.bootstrap)
    ok_raw, ok_res = diff.ci_low > th.fluency_margin, res.ci_low > th.residual_auc_bar
    metrics = {"auc": Metric.of(raw), "fluency_auc": Metric.of(flu), "auc_minus_fluency": Metric.of(diff),
               "residualized_auc": Metric.of(res)}
    reason = (f"within-group AUC {Metric.of(raw)} vs fluency's {Metric.of(flu)}: paired difference "
              f"{Metric.of(diff)} (CI low > {th.fluency_margin}: {_mark(ok_raw)}); residualized AUC "
              f"{Metric.of(res)} (CI low > {th.residual_auc_bar}: {_mark(ok_res)}); {raw.n} pairs")
    y = as_vector("has_behavior", has_behavior, kind="bool")
    reach = _out_of_reach({"auc_minus_fluency": (paired_auc_difference_bootstrap(
        y.astype(float), fluency, y, group, **th.bootstrap), th.fluency_margin)})
    return _supported_or(check, reach, _outcome(ok_raw and ok_res), metrics, reason)


def headroom(scores, is_gt, step, *, W: int, nonzero, unsat_scores=None, unsat_has_behavior=None,
             unsat_group=None, unsat_applicable: bool = True, thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 3: with window headroom >= min_headroom (else error), the window normalized gain has CI low
    > gain_margin, and the within-group AUC at an unsaturated checkpoint has CI low > auc_bar.

    The unsaturated arrays are None when no unsaturated checkpoint qualified: an error of the fixture.
    ``unsat_applicable=False`` (a step-level estimator, which cannot rank the candidates of one checkpoint):
    the window gain alone decides.
    """
    check, th = "headroom", thresholds
    s, g, st = _run_arrays(scores, is_gt, step)
    m, why = _window_support(g, st, W, nonzero)
    if why:
        return _error(check, why)
    wm = ranking_metrics(s[m], g[m], st[m])
    metrics = {"window_headroom": Metric(wm.headroom, n=wm.n), "window_ceiling": Metric(wm.ceiling, n=wm.n),
               "window_chance": Metric(wm.chance, n=wm.n)}
    if wm.headroom < th.min_headroom:
        return _error(check, f"the fixture cannot support this check: window headroom {wm.headroom:.4f} "
                      f"(ceiling {wm.ceiling:.4f} - chance {wm.chance:.4f}) < min_headroom={th.min_headroom}",
                      metrics)
    perfect_gain = (normalized_gain_bootstrap(g[m].astype(float), g[m], st[m], **th.bootstrap),
                    th.gain_margin)
    if not unsat_applicable:
        gain = normalized_gain_bootstrap(s[m], g[m], st[m], **th.bootstrap)
        ok_gain = gain.ci_low > th.gain_margin
        metrics |= {"window_normalized_gain": Metric.of(gain)}
        return _supported_or(check, _out_of_reach({"window_normalized_gain": perfect_gain}), _outcome(ok_gain),
                             metrics, f"window headroom {wm.headroom:.4f}; window normalized gain {Metric.of(gain)} "
                             f"(CI low > {th.gain_margin}: {_mark(ok_gain)}); unsaturated AUC N/A (step-level)")
    if unsat_scores is None or unsat_has_behavior is None or unsat_group is None:
        return _error(check, "the fixture cannot support this check: no unsaturated checkpoint qualified",
                      metrics)
    why = _auc_support(unsat_has_behavior, unsat_group, th, "the unsaturated candidate set")
    if why:
        return _error(check, why, metrics)
    gain = normalized_gain_bootstrap(s[m], g[m], st[m], **th.bootstrap)
    auc = auc_bootstrap(unsat_scores, unsat_has_behavior, unsat_group, **th.bootstrap)
    ok_gain, ok_auc = gain.ci_low > th.gain_margin, auc.ci_low > th.auc_bar
    metrics |= {"window_normalized_gain": Metric.of(gain), "unsaturated_auc": Metric.of(auc)}
    reason = (f"window headroom {wm.headroom:.4f}; window normalized gain {Metric.of(gain)} (CI low > "
              f"{th.gain_margin}: {_mark(ok_gain)}); unsaturated within-group AUC {Metric.of(auc)} (CI low > "
              f"{th.auc_bar}: {_mark(ok_auc)})")
    uy = as_vector("unsat_has_behavior", unsat_has_behavior, kind="bool")
    reach = _out_of_reach({"window_normalized_gain": perfect_gain, "unsaturated_auc": (
        auc_bootstrap(uy.astype(float), uy, unsat_group, **th.bootstrap), th.auc_bar)})
    return _supported_or(check, reach, _outcome(ok_gain and ok_auc), metrics, reason)


def seed_draw_variance(seed, draw, residual_auc, residual_ci_low, *, stability_seed, stability_spearman,
                       thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 4 from per-(seed, draw) residualized AUCs and per-seed draw-stability Spearman values.

    No flip: the verdict "residualized AUC CI low > residual_auc_bar" is the same on every (seed, draw)
    and positive.  Draw stability: every Spearman of scores under two draws' targets (same candidates)
    >= draw_spearman, and every seed has one.  Fewer than min_seeds x min_draws -> error.  Reports the
    share of the residualized AUC's variance between seeds vs between draws (metrics.variance_shares).
    """
    check, th = "seed_draw_variance", thresholds
    sd = as_vector("seed", seed, kind="int")
    dr = as_vector("draw", draw, n=len(sd), ref="seed", kind="int")
    auc = as_vector("residual_auc", residual_auc, n=len(sd), ref="seed")
    low = as_vector("residual_ci_low", residual_ci_low, n=len(sd), ref="seed")
    sp_seed = as_vector("stability_seed", stability_seed, kind="int")
    sp = as_vector("stability_spearman", stability_spearman, n=len(sp_seed), ref="stability_seed")
    seeds = np.unique(sd)
    draws_per_seed = {int(s): len(np.unique(dr[sd == s])) for s in seeds}
    if len(seeds) < th.min_seeds or min(draws_per_seed.values(), default=0) < th.min_draws:
        return _error(check, f"the fixture cannot support this check: draws per seed {draws_per_seed}; "
                      f"needs >= {th.min_seeds} seeds x {th.min_draws} draws")
    unstable_missing = sorted(int(s) for s in seeds if not (sp_seed == s).any())
    if unstable_missing:
        return _error(check, f"the fixture cannot support this check: no draw-stability Spearman for "
                      f"seed(s) {unstable_missing}")
    positive = low > th.residual_auc_bar
    no_flip = bool(positive.all())
    stable = bool((sp >= th.draw_spearman).all())
    share_seed, share_draw = variance_shares(auc, sd)
    metrics = {"residualized_auc_mean": Metric(float(auc.mean()), n=len(auc)),
               "residualized_auc_min_ci_low": Metric(float(low.min()), n=len(auc)),
               "min_draw_spearman": Metric(float(sp.min()), n=len(sp)),
               "variance_share_seed": Metric(share_seed, n=len(auc)),
               "variance_share_draw": Metric(share_draw, n=len(auc))}
    flips = [f"seed {int(s)} draw {int(d)}" for s, d, p in zip(sd, dr, positive) if not p]
    reason = (f"residualized AUC CI low > {th.residual_auc_bar} on {int(positive.sum())}/{len(positive)} "
              f"(seed, draw) ({_mark(no_flip)}" + (f"; not on {', '.join(flips)}" if flips else "") + "); "
              f"min draw Spearman {sp.min():.4f} (>= {th.draw_spearman}: {_mark(stable)}); variance share "
              f"seed {share_seed:.2f} / draw {share_draw:.2f}")
    return _verdict(check, _outcome(no_flip and stable), metrics, reason)


def residual_auc_units(seed, draw, residual, *, thresholds: Thresholds = Thresholds()) -> list[dict]:
    """The units of check 4 as data (``Verdict.units``): per (seed, draw) its residualized AUC (a
    ``bootstrap.BootstrapResult``) and whether its CI lower bound clears residual_auc_bar."""
    th = thresholds
    return [{"seed": int(s), "draw": int(d), "outcome": _outcome(r.ci_low > th.residual_auc_bar),
             "reason": f"residualized AUC {r.estimate:.4f} (CI low {r.ci_low:.4f})",
             "metrics": {"residualized_auc": Metric.of(r).to_dict()}} for s, d, r in zip(seed, draw, residual)]


def trigger_token_alignment(in_context, placebo, *, cosine_scale: bool, response=None, constructed=None,
                            thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 5 on one seed: for behavior-containing candidates, the token-restricted gradient's score
    against the in_context target minus against a placebo target has mean CI low > alignment_margin;
    for cosine-scale estimators also mean in_context cosine CI low > cosine_bar.  Responses are the
    bootstrap clusters (`response`: one id per row; default each row its own response).

    in_context None -> skip (no token-level support).  placebo None (evidence without a placebo target):
    the paired part cannot be judged, so the outcome is fail if the part that can be judged fails, else
    skip -- never a pass.  `constructed` scores, if given, are only reported (spec: ~0 or negative).
    """
    check, th = "trigger_token_alignment", thresholds
    if in_context is None:
        return Verdict(check, "skip", {}, "the estimator has no token-level scores")
    ctx = as_vector("in_context", in_context)
    if len(ctx) < 2:
        return _error(check, f"the fixture cannot support this check: {len(ctx)} behavior-containing candidates")
    placebo = None if placebo is None else as_vector("placebo", placebo, n=len(ctx), ref="in_context")
    response = None if response is None else as_vector("response", response, n=len(ctx), ref="in_context",
                                                              kind="int")
    metrics: dict[str, Metric] = {}
    parts, oks = [], []
    if cosine_scale:
        mean = mean_bootstrap(ctx, response, **th.bootstrap)
        ok = mean.ci_low > th.cosine_bar
        metrics["in_context_mean"] = Metric.of(mean)
        parts.append(f"mean in-context cosine {Metric.of(mean)} (CI low > {th.cosine_bar}: {_mark(ok)})")
        oks.append(ok)
    if placebo is not None:
        diff = paired_difference_bootstrap(ctx, placebo, response, **th.bootstrap)
        ok = diff.ci_low > th.alignment_margin
        metrics["in_context_minus_placebo"] = Metric.of(diff)
        parts.insert(0, f"mean(in_context - placebo) {Metric.of(diff)} (CI low > {th.alignment_margin}: "
                        f"{_mark(ok)})")
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
        outcome = _outcome(all(oks))
    return _verdict(check, outcome, metrics, "; ".join(parts) + f"; {len(ctx)} rows")


def advantage_baseline(scores, advantage_scores, is_gt, step, *, W: int, nonzero, rollout_level: bool,
                       thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 6 (rollout-level estimators only; step-level -> skip): overall and window precision@|GT|
    minus advantage_only's, both with CI low > advantage_margin (paired step bootstrap)."""
    check, th = "advantage_baseline", thresholds
    if not rollout_level:
        return Verdict(check, "skip", {}, "step-level estimator: advantage_baseline guards rollout-level ones")
    s, g, st = _run_arrays(scores, is_gt, step)
    a = as_vector("advantage_scores", advantage_scores, n=len(s), ref="scores")
    m, why = _window_support(g, st, W, nonzero)
    if why:
        return _error(check, why)
    overall = precision_difference_bootstrap(s, a, g, st, **th.bootstrap)
    win = precision_difference_bootstrap(s[m], a[m], g[m], st[m], **th.bootstrap)
    ok_all, ok_win = overall.ci_low > th.advantage_margin, win.ci_low > th.advantage_margin
    metrics = {"precision_minus_advantage": Metric.of(overall),
               "window_precision_minus_advantage": Metric.of(win),
               "advantage_precision": Metric(precision_at_k(a, g), n=len(g)),
               "window_advantage_precision": Metric(precision_at_k(a[m], g[m]), n=int(m.sum()))}
    reason = (f"precision@|GT| minus advantage_only's: overall {Metric.of(overall)} (CI low > "
              f"{th.advantage_margin}: {_mark(ok_all)}), window {Metric.of(win)} ({_mark(ok_win)})")
    perfect = g.astype(float)
    reach = _out_of_reach({
        "precision_minus_advantage": (precision_difference_bootstrap(perfect, a, g, st, **th.bootstrap),
                                      th.advantage_margin),
        "window_precision_minus_advantage": (precision_difference_bootstrap(
            perfect[m], a[m], g[m], st[m], **th.bootstrap), th.advantage_margin)})
    return _supported_or(check, reach, _outcome(ok_all and ok_win), metrics, reason)


def target_dependence_training(train_real, train_placebo, is_gt, step, *,
                               thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 7, training half: precision@|GT| of the training rollouts scored against the real target minus
    against the placebo target, paired on the same step resamples; CI low > target_margin. Point figures of
    each side are reported as well (their own CIs are not needed for the decision)."""
    check, th = "target_dependence", thresholds
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
              f"{th.target_margin}: {_mark(ok)})")
    return _verdict(check, _outcome(ok), metrics, reason)


def target_dependence_draw(draw_real, draw_placebo, has_behavior, group, *,
                           thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 7, draw half: within-group AUC of fresh candidates scored against the real target minus against
    the placebo, paired on the same group resamples; CI low > target_margin. Too few pairs -> error."""
    check, th = "target_dependence", thresholds
    dr = as_vector("draw_real", draw_real)
    dp = as_vector("draw_placebo", draw_placebo, n=len(dr), ref="draw_real")
    y = as_vector("has_behavior", has_behavior, n=len(dr), ref="draw_real", kind="bool")
    grp = as_vector("group", group, n=len(dr), ref="draw_real", kind="int")
    why = _auc_support(y, grp, th, "the candidate set")
    if why:
        return _error(check, why)
    a_diff = paired_auc_difference_bootstrap(dr, dp, y, grp, **th.bootstrap)
    ok = a_diff.ci_low > th.target_margin
    metrics = {"auc_real": Metric(within_group_auc(dr, y, grp), n=a_diff.n),
               "auc_placebo": Metric(within_group_auc(dp, y, grp), n=a_diff.n),
               "auc_real_minus_placebo": Metric.of(a_diff)}
    reason = (f"within-group AUC real target {metrics['auc_real'].value:.4f} vs placebo "
              f"{metrics['auc_placebo'].value:.4f}: paired difference {Metric.of(a_diff)} (CI low > "
              f"{th.target_margin}: {_mark(ok)}); {a_diff.n} pairs")
    return _verdict(check, _outcome(ok), metrics, reason)


def target_dependence(train_real, train_placebo, is_gt, step, draw_real, draw_placebo, has_behavior, group, *,
                      thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 7 on one seed and one draw: scores recomputed with a placebo target (built like the real one from
    completions without the behavior) must rank worse than with the real target, for both the training half
    (precision@|GT|) and the draw half (within-group AUC); see the two functions above. ``draw_real=None`` (a
    step-level estimator, for which fresh draws are N/A): the training half decides. A score that ignores the
    target has difference 0 on both and fails."""
    tv = target_dependence_training(train_real, train_placebo, is_gt, step, thresholds=thresholds)
    if draw_real is None:
        return tv
    dv = target_dependence_draw(draw_real, draw_placebo, has_behavior, group, thresholds=thresholds)
    if dv.outcome == "error":
        return dv
    ok = tv.outcome == "pass" and dv.outcome == "pass"
    return _verdict("target_dependence", _outcome(ok), {**tv.metrics, **dv.metrics}, f"{tv.reason}; {dv.reason}")
