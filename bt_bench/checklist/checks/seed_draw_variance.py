"""Check 4, seed_draw_variance: after fluency control the verdict does not flip across seeds and generation draws
(residualized AUC CI low above 0.5 on every seed and draw), and scores are stable under other draws' targets. The
paper's finding: after fluency control, per-rollout verdicts flipped across seeds and draws."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from bt_bench.checklist import bootstrap, metrics
from bt_bench.checklist.base import Metric, Thresholds, Verdict, error_verdict, make_verdict, mark, pass_fail
from bt_bench.checklist.evidence_judging import draw_unit, draws_of_kind, label, skip
from bt_bench.checklist.figures import fig
from bt_bench.checklist.metrics import as_vector, variance_shares
from bt_bench.checklist.spec import CheckSpec, step_level_on_draws

NAME = "seed_draw_variance"


def judge(seed, draw, residual_auc, residual_ci_low, *, stability_seed, stability_spearman, sketch_seed=None,
          thresholds: Thresholds = Thresholds()) -> Verdict:
    """From per-(seed, draw) residualized AUCs and per-seed draw-stability Spearman values; with ``sketch_seed``,
    per (seed, draw, sketch seed): each draw judged under every sketch seed.

    No flip: the verdict "residualized AUC CI low > residual_auc_bar" is the same on every (seed, draw)
    (and sketch seed) and positive.  Draw stability: every Spearman of scores under two draws' targets (same
    candidates) >= draw_spearman, and every seed has one.  Fewer than min_seeds x min_draws -> error.  Reports the
    share of the residualized AUC's variance between seeds vs within them (metrics.variance_shares); with sketch
    seeds also the share between sketch seeds of one (seed, draw).
    """
    th = thresholds
    sd = as_vector("seed", seed, kind="int")
    dr = as_vector("draw", draw, n=len(sd), ref="seed", kind="int")
    auc = as_vector("residual_auc", residual_auc, n=len(sd), ref="seed")
    low = as_vector("residual_ci_low", residual_ci_low, n=len(sd), ref="seed")
    sp_seed = as_vector("stability_seed", stability_seed, kind="int")
    sp = as_vector("stability_spearman", stability_spearman, n=len(sp_seed), ref="stability_seed")
    seeds = np.unique(sd)
    draws_per_seed = {int(s): len(np.unique(dr[sd == s])) for s in seeds}
    if len(seeds) < th.min_seeds or min(draws_per_seed.values(), default=0) < th.min_draws:
        return error_verdict(NAME, f"the fixture cannot support this check: draws per seed {draws_per_seed}; "
                             f"needs >= {th.min_seeds} seeds x {th.min_draws} draws")
    unstable_missing = sorted(int(s) for s in seeds if not (sp_seed == s).any())
    if unstable_missing:
        return error_verdict(NAME, f"the fixture cannot support this check: no draw-stability Spearman for "
                             f"seed(s) {unstable_missing}")
    positive = low > th.residual_auc_bar
    no_flip = bool(positive.all())
    stable = bool((sp >= th.draw_spearman).all())
    share_seed, share_draw = variance_shares(auc, sd)
    ms = {"residualized_auc_mean": Metric(float(auc.mean()), n=len(auc)),
          "residualized_auc_min_ci_low": Metric(float(low.min()), n=len(auc)),
          "min_draw_spearman": Metric(float(sp.min()), n=len(sp)),
          "variance_share_seed": Metric(share_seed, n=len(auc)),
          "variance_share_draw": Metric(share_draw, n=len(auc))}
    ks = None if sketch_seed is None else as_vector("sketch_seed", sketch_seed, n=len(sd), ref="seed", kind="int")
    if ks is not None and len(np.unique(ks)) > 1:
        ms["variance_share_sketch"] = Metric(sketch_share(auc, sd, dr), n=len(auc))
    flips = [f"seed {int(s)} draw {int(d)}" + ("" if ks is None else f" sketch seed {int(ks[j])}")
             for j, (s, d, p) in enumerate(zip(sd, dr, positive)) if not p]
    what = "(seed, draw)" if ks is None else "(seed, draw, sketch seed)"
    sk = f" (sketch seeds {ms['variance_share_sketch'].value:.2f})" if "variance_share_sketch" in ms else ""
    reason = (f"residualized AUC CI low > {th.residual_auc_bar} on {int(positive.sum())}/{len(positive)} "
              f"{what} ({mark(no_flip)}" + (f"; not on {', '.join(flips)}" if flips else "") + "); "
              f"min draw Spearman {sp.min():.4f} (>= {th.draw_spearman}: {mark(stable)}); variance share "
              f"seed {share_seed:.2f} / draw {share_draw:.2f}{sk}")
    return make_verdict(NAME, pass_fail(no_flip and stable), ms, reason)


def sketch_share(values, seed, draw) -> float:
    """Share of the variance of ``values`` within (seed, draw) cells, i.e. between the sketch seeds of one draw
    (NaN when all values agree)."""
    v = np.asarray(values, float)
    total = float(((v - v.mean()) ** 2).sum())
    if total == 0:
        return float("nan")
    cells = {}
    for j, key in enumerate(zip(np.asarray(seed).tolist(), np.asarray(draw).tolist())):
        cells.setdefault(key, []).append(j)
    within = sum(float(((v[j] - v[j].mean()) ** 2).sum()) for j in map(np.asarray, cells.values()))
    return within / total


def residual_auc_units(seed, draw, residual, *, sketch_seed=None, thresholds: Thresholds = Thresholds()
                       ) -> list[dict]:
    """The units of this check as data (``Verdict.units``): per (seed, draw) (and sketch seed, when given) its
    residualized AUC (a ``bootstrap.BootstrapResult``) and whether its CI lower bound clears residual_auc_bar."""
    th = thresholds
    ks = [None] * len(residual) if sketch_seed is None else list(sketch_seed)
    return [{"seed": int(s), "draw": int(d), **({} if k is None else {"sketch_seed": int(k)}),
             "outcome": pass_fail(r.ci_low > th.residual_auc_bar),
             "reason": f"residualized AUC {r.estimate:.4f} (CI low {r.ci_low:.4f})",
             "metrics": {"residualized_auc": Metric.of(r).to_dict()}} for s, d, k, r in zip(seed, draw, ks, residual)]


def cell(suite, est: str, draws: int) -> tuple[Verdict, list[float]]:
    """Aggregate over every seed, draw and sketch seed: residualized AUC per (seed, draw, sketch seed) at the
    saturated checkpoint (the verdict's units), and draw stability (Spearman of the draw-0 candidates' scores under
    two different draws' targets, under each sketch seed; returned as the series of every pair)."""
    suite.require_applicable(NAME, est)
    th = suite.thresholds
    seed, draw, ks, res, sp_seed, sp = [], [], [], [], [], []
    for i in range(suite.n_seeds):
        suite.require_draw(i, "saturated")
        for k in suite.sketch_seeds(i):  # every draw under every sketch seed: a verdict must hold under each
            for d in range(draws):
                r = suite.draw(i, "saturated", d)
                res.append(bootstrap.residualized_auc_bootstrap(
                    suite.draw_scores(est, i, "saturated", d, sketch_seed=k), r["fluency"], r["has_behavior"],
                    r["group"], **th.bootstrap))
                seed.append(r["seed"]), draw.append(d), ks.append(k)
            fixed = [suite.draw_scores(est, i, "saturated", 0, target_draw=d, sketch_seed=k) for d in range(draws)]
            for a, b in itertools.combinations(range(draws), 2):
                sp_seed.append(suite.fixtures[i].seed)
                sp.append(metrics.spearman(fixed[a], fixed[b]))
    known = None if None in ks else ks
    v = judge(seed, draw, [x.estimate for x in res], [x.ci_low for x in res],
              stability_seed=sp_seed, stability_spearman=sp, sketch_seed=known, thresholds=th)
    v = dataclasses.replace(v, units=residual_auc_units(seed, draw, res, sketch_seed=known, thresholds=th))
    return v, [float(x) for x in sp]


def figure_parts(us: list[dict]) -> list[str | None]:
    return [(r := fig("residualized_auc_mean", us, lo=False)) and f"resid {r}",
            (lo := fig("residualized_auc_min_ci_low", us, lo=False)) and f"min lo {lo}",
            (s := fig("min_draw_spearman", us, lo=False)) and f"rho {s}",
            (v := fig("variance_share_seed", us, lo=False)) and f"seed share {v}"]


def replay(ev, name: str, th: Thresholds) -> Verdict:
    cells = draws_of_kind(ev, name, "saturated", th)
    per_seed = {s: len({d.draw for d in cells if d.seed == s}) for s in {d.seed for d in cells}}
    if len(per_seed) < th.min_seeds or min(per_seed.values(), default=0) < th.min_draws:
        return skip(NAME, f"the evidence holds saturated draws per seed {per_seed}; the check needs "
                    f">= {th.min_seeds} seeds x {th.min_draws} draws")
    stab = [s for s in ev.stability if s.estimator == name]
    if not stab:
        return skip(NAME, "the evidence has no draw-stability scores for this estimator")
    for d in cells:
        if metrics.count_pairs(d.has_behavior, d.group) < th.min_pairs:
            return Verdict(NAME, "error", {}, f"the fixture cannot support this check: {label(draw_unit(d))} has "
                           f"fewer than min_pairs={th.min_pairs} within-group pairs")
    res = [bootstrap.residualized_auc_bootstrap(d.scores[name], d.fluency, d.has_behavior, d.group,
                                                **th.bootstrap) for d in cells]
    sp = [(s.seed, v) for s in stab for v in metrics.pairwise_spearman(s.scores)]
    seeds, draws = [d.seed for d in cells], [d.draw for d in cells]
    v = judge(seeds, draws, [r.estimate for r in res], [r.ci_low for r in res],
              stability_seed=[s for s, _ in sp], stability_spearman=[x for _, x in sp], thresholds=th)
    return dataclasses.replace(v, units=residual_auc_units(seeds, draws, res, thresholds=th))


SPEC = CheckSpec(
    name=NAME, order=4, unit="all", title="no verdict flip across seeds and draws, stable under other draws' targets",
    finding="After fluency control, per-rollout verdicts flipped across seeds and generation draws.",
    cell=cell, judge=judge, figure_parts=figure_parts, replay=replay, not_applicable=step_level_on_draws,
    plots=("variance_shares",),
    thresholds={"residual_auc_bar": "CI lower bound of the residualized AUC must exceed this",
                "min_seeds": "training seeds needed", "min_draws": "draws needed on every seed",
                "draw_spearman": "Spearman of scores under two draws' targets must reach this on every seed"})
