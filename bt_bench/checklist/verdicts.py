"""One pure verdict function per checklist item (spec: checklist.md, "The checks").

Each function maps plain arrays (scores, labels, steps, groups, ...) and :class:`Thresholds` to a
:class:`Verdict`: an outcome, the metrics with their bootstrap CIs, and a reason that names the figures.
The pytest glue in ``checks/`` and evidence replay (``bt_bench.checklist.evidence``) call the same functions, so a
published table and a fixture run are judged by one piece of code (spec: architecture.md).

Outcomes: "pass"/"fail" are verdicts on the estimator; "error" means the fixture cannot support a verdict
(too little headroom, too few within-group pairs, too few seeds or draws), never a pass; "skip" means the
estimator cannot take part (no token-level scores, a step-level estimator in advantage_baseline).
A check passes only if it passes on every seed and draw: :func:`combine`.

Every CI carries the count of resamples where its statistic was undefined (no pair or no GT drawn); when
more than ``UNDEFINED_NOTE_SHARE`` (1%) of a metric's resamples were undefined, the metric's string and the
verdict's reason say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from bt_bench.checklist import stats
OUTCOMES = ("pass", "fail", "error", "skip")
CHECKS = ("gradient_norm_baseline", "fluency_confound", "headroom", "seed_draw_variance",
          "trigger_token_alignment", "advantage_baseline", "target_dependence")
UNDEFINED_NOTE_SHARE = 0.01  # a CI with more undefined resamples than this share is flagged


def _help(text: str) -> dict:
    return {"help": text}


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the checklist, with the spec's defaults (numbers in brackets in checklist.md)."""

    n_resamples: int = field(default=stats.DEFAULT_RESAMPLES, metadata=_help(
        "cluster-bootstrap resamples behind every CI (Metrics: Confidence intervals)"))
    bootstrap_seed: int = field(default=0, metadata=_help("seed of the bootstrap; reported with every CI"))
    ci_low_percentile: float = field(default=2.5, metadata=_help("lower percentile of the bootstrap CI"))
    ci_high_percentile: float = field(default=97.5, metadata=_help("upper percentile of the bootstrap CI"))
    norm_margin: float = field(default=0.0, metadata=_help(
        "gradient_norm_baseline: CI lower bound of precision@|GT| minus the declared norm_only variant's "
        "must exceed this"))
    min_headroom: float = field(default=0.10, metadata=_help(
        "headroom: window ceiling - chance below this means the fixture cannot support a verdict (error)"))
    gain_margin: float = field(default=0.0, metadata=_help(
        "headroom: CI lower bound of the window normalized gain must exceed this"))
    auc_bar: float = field(default=0.5, metadata=_help(
        "headroom: CI lower bound of the within-group AUC at the unsaturated checkpoint must exceed this"))
    fluency_margin: float = field(default=0.0, metadata=_help(
        "fluency_confound: CI lower bound of the paired (group-bootstrap) difference within-group AUC minus "
        "fluency's AUC must exceed this"))
    residual_auc_bar: float = field(default=0.5, metadata=_help(
        "fluency_confound, seed_draw_variance: CI lower bound of the residualized AUC must exceed this"))
    min_pairs: int = field(default=100, metadata=_help(
        "within-group (behavior, non-behavior) pairs a candidate set needs, else the fixture errors"))
    min_seeds: int = field(default=3, metadata=_help("seed_draw_variance: training seeds needed"))
    min_draws: int = field(default=3, metadata=_help("seed_draw_variance: draws needed on every seed"))
    draw_spearman: float = field(default=0.5, metadata=_help(
        "seed_draw_variance: Spearman of scores under two draws' targets must reach this on every seed"))
    alignment_margin: float = field(default=0.0, metadata=_help(
        "trigger_token_alignment: CI lower bound of mean(in_context - placebo) must exceed this"))
    cosine_bar: float = field(default=0.05, metadata=_help(
        "trigger_token_alignment: for cosine-scale estimators, CI lower bound of the mean in-context "
        "cosine must exceed this"))
    advantage_margin: float = field(default=0.0, metadata=_help(
        "advantage_baseline: CI lower bounds of precision minus advantage_only's must exceed this"))
    target_margin: float = field(default=0.0, metadata=_help(
        "target_dependence: CI lower bounds of precision@|GT| (step bootstrap) and of the within-group AUC "
        "(group bootstrap), each real target minus placebo target, paired, must exceed this"))
    saturated_rate: float = field(default=0.8, metadata=_help(
        "a checkpoint is saturated when its behavior rate on trigger prompts is at least this"))
    unsaturated_low: float = field(default=0.2, metadata=_help("lowest behavior rate of an unsaturated one"))
    unsaturated_high: float = field(default=0.8, metadata=_help("highest behavior rate of an unsaturated one"))

    def __post_init__(self) -> None:
        for name in ("n_resamples", "min_pairs", "min_seeds", "min_draws"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
        if not 0 <= self.ci_low_percentile < self.ci_high_percentile <= 100:
            raise ValueError("ci_low_percentile, ci_high_percentile: need 0 <= low < high <= 100, got "
                             f"{self.ci_low_percentile!r}, {self.ci_high_percentile!r}")
        for name in ("auc_bar", "residual_auc_bar", "saturated_rate", "unsaturated_low", "unsaturated_high",
                     "min_headroom"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name}: must lie in [0, 1], got {getattr(self, name)!r}")
        if isinstance(self.bootstrap_seed, bool) or not isinstance(self.bootstrap_seed, (int, np.integer)) \
                or self.bootstrap_seed < 0:
            raise ValueError(f"bootstrap_seed: must be an integer >= 0, got {self.bootstrap_seed!r}")
        if not -1 <= self.draw_spearman <= 1:
            raise ValueError(f"draw_spearman: must lie in [-1, 1], got {self.draw_spearman!r}")
        if not -1 <= self.cosine_bar <= 1:
            raise ValueError(f"cosine_bar: must lie in [-1, 1], got {self.cosine_bar!r}")
        if not self.unsaturated_low < self.unsaturated_high:
            raise ValueError("unsaturated_low, unsaturated_high: need low < high, got "
                             f"{self.unsaturated_low!r}, {self.unsaturated_high!r}")

    @classmethod
    def help(cls) -> dict[str, str]:
        """Help text per field (for ``--bt-*`` options and the report)."""
        return {f.name: f.metadata["help"] for f in fields(cls)}

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> Thresholds:
        """Build from e.g. pyproject ``[tool.bt_bench]`` values; unknown keys are an error."""
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: unknown threshold(s); allowed: {sorted(cls.help())}")
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def bootstrap(self) -> dict:
        """Keyword arguments of the bt_bench.checklist.stats bootstraps."""
        return {"n_resamples": self.n_resamples, "seed": self.bootstrap_seed,
                "percentiles": (self.ci_low_percentile, self.ci_high_percentile)}


def _num(x) -> float | None:
    return None if x is None else float(x)


def _int(x) -> int | None:
    return None if x is None else int(x)


@dataclass(frozen=True)
class Metric:
    """One reported figure: a value, its CI (None for a point figure), the sample size, the CI's seed, and
    for a bootstrap CI the resample count and how many resamples left the statistic undefined (they are
    left out of the percentiles; spec "Confidence intervals")."""

    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    seed: int | None = None
    n_resamples: int | None = None
    n_undefined: int | None = None

    @classmethod
    def of(cls, r: stats.BootstrapResult) -> Metric:
        return cls(r.estimate, r.ci_low, r.ci_high, r.n, r.seed, r.n_resamples, r.n_undefined)

    @property
    def undefined_share(self) -> float | None:
        """Share of the bootstrap resamples where the statistic was undefined; None for a point figure."""
        if self.n_resamples is None or self.n_undefined is None or self.n_resamples <= 0:
            return None
        return self.n_undefined / self.n_resamples

    @property
    def undefined_flag(self) -> bool:
        """True when more than UNDEFINED_NOTE_SHARE (1%) of the resamples were undefined."""
        share = self.undefined_share
        return share is not None and share > UNDEFINED_NOTE_SHARE

    def to_dict(self) -> dict:
        """JSON-ready (NaN becomes None, since strict JSON has no NaN)."""
        def clean(v):
            return None if v is None or (isinstance(v, float) and np.isnan(v)) else v
        return {"value": clean(_num(self.value)), "ci_low": clean(_num(self.ci_low)),
                "ci_high": clean(_num(self.ci_high)), "n": _int(self.n), "seed": _int(self.seed),
                "n_resamples": _int(self.n_resamples), "n_undefined": _int(self.n_undefined)}

    def __str__(self) -> str:
        ci = "" if self.ci_low is None else f" [{self.ci_low:.4f}, {self.ci_high:.4f}]"
        out = f"{self.value:+.4f}{ci}" if self.value < 0 else f"{self.value:.4f}{ci}"
        if self.undefined_flag:
            out += f" ({self.undefined_share:.1%} resamples undefined)"
        return out


@dataclass(frozen=True)
class Verdict:
    """The result of one check for one estimator (on one seed/draw, or combined over all of them)."""

    check: str
    outcome: str
    metrics: dict[str, Metric]
    reason: str
    estimator: str = ""
    units: tuple[dict, ...] = ()  # per seed/draw verdicts of a combined verdict (see combine)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome: must be one of {OUTCOMES}, got {self.outcome!r}")
        object.__setattr__(self, "units", tuple(self.units))

    def to_dict(self) -> dict:
        d = {"check": self.check, "estimator": self.estimator, "outcome": self.outcome,
             "reason": self.reason, "metrics": {k: m.to_dict() for k, m in self.metrics.items()}}
        if self.units:
            d["units"] = [dict(u) for u in self.units]
        return d


def _unit_label(unit: Mapping) -> str:
    """'seed2/draw1' from {"seed": 2, "draw": 1}."""
    return "/".join(f"{k}{v}" for k, v in unit.items())


def combine(verdicts: Sequence[Verdict], labels: Sequence[str] | None = None,
            units: Sequence[Mapping] | None = None) -> Verdict:
    """One verdict over seeds/draws: the check passes only if it passes on every one (spec "The checks":
    "a check passes only if it passes on every seed and draw").

    Any fail -> fail (a fail anywhere is decisive); else any error -> error; all skip -> skip; a mix of
    pass and skip -> error (not judged on every seed); pass only when every verdict passes.  Metrics are
    prefixed with each label (labels default to the units, e.g. 'seed2/draw1', else '#i').  With `units`
    (one mapping per verdict, e.g. ``{"seed": 2, "draw": 1}``) the result's ``units`` holds, per verdict,
    ``{**unit, "outcome", "reason", "metrics": {name: Metric.to_dict()}}``.
    """
    if not verdicts:
        raise ValueError("verdicts: empty; a check needs at least one seed/draw")
    if units is not None:
        units = [dict(u) for u in units]
        if len(units) != len(verdicts):
            raise ValueError(f"units: {len(units)} units for {len(verdicts)} verdicts")
        clash = sorted({k for u in units for k in u} & {"outcome", "reason", "metrics"})
        if clash:
            raise ValueError(f"units: keys {clash} are reserved for the unit's verdict")
    if labels is not None:
        labels = list(labels)
    elif units is not None:
        labels = [_unit_label(u) for u in units]
    else:
        labels = [f"#{i}" for i in range(len(verdicts))]
    if len(labels) != len(verdicts):
        raise ValueError(f"labels: {len(labels)} labels for {len(verdicts)} verdicts")
    if len({v.check for v in verdicts}) != 1 or len({v.estimator for v in verdicts}) != 1:
        raise ValueError("verdicts: mix different checks or estimators")
    outcomes = [v.outcome for v in verdicts]
    if "fail" in outcomes:
        outcome = "fail"
    elif "error" in outcomes:
        outcome = "error"
    elif all(o == "skip" for o in outcomes):
        outcome = "skip"
    elif all(o == "pass" for o in outcomes):
        outcome = "pass"
    else:  # pass and skip mixed: not judged on every seed/draw
        outcome = "error"
    metrics = {f"{lab}/{k}": m for lab, v in zip(labels, verdicts) for k, m in v.metrics.items()}
    head = {"pass": "passes on every one of", "fail": "fails on at least one of",
            "error": "cannot be judged on every one of", "skip": "is skipped on all"}[outcome]
    reason = f"{head} {len(verdicts)} seed/draw(s): " + "; ".join(
        f"{lab}: {v.outcome}: {v.reason}" for lab, v in zip(labels, verdicts))
    per_unit = () if units is None else tuple(
        {**u, "outcome": v.outcome, "reason": v.reason, "metrics": {k: m.to_dict() for k, m in v.metrics.items()}}
        for u, v in zip(units, verdicts))
    return Verdict(verdicts[0].check, outcome, metrics, reason, verdicts[0].estimator, per_unit)


# ------------------------------------------------------------------------------------------------ helpers
def _outcome(ok: bool) -> str:
    return "pass" if ok else "fail"


def _mark(ok: bool) -> str:
    return "ok" if ok else "NOT met"


def _undefined_note(metrics: Mapping[str, Metric]) -> str:
    """'; CI caveat: ...' naming every metric with more than 1% undefined resamples, else ''."""
    flagged = [f"{k} {m.n_undefined}/{m.n_resamples} ({m.undefined_share:.1%})"
               for k, m in metrics.items() if m.undefined_flag]
    return f"; CI caveat: resamples undefined (left out of the percentiles): {', '.join(flagged)}" if flagged \
        else ""


def _verdict(check: str, outcome: str, metrics: dict[str, Metric], reason: str) -> Verdict:
    """A Verdict whose reason says which CIs dropped more than 1% of their resamples as undefined."""
    return Verdict(check, outcome, metrics, reason + _undefined_note(metrics))


def _auc_support(has_behavior, group, th: Thresholds, what: str) -> str | None:
    """Why a candidate set cannot support an AUC verdict (too few pairs), or None."""
    n_pairs = stats.count_pairs(has_behavior, group)
    if n_pairs < th.min_pairs:
        return (f"the fixture cannot support this check: {what} has {n_pairs} within-group (behavior, "
                f"non-behavior) pairs, fewer than min_pairs={th.min_pairs}")
    return None


def _run_arrays(scores, is_gt, step) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated (scores, is_gt, step) of training rollouts."""
    s = stats.as_vector("scores", scores)
    return (s, stats.as_vector("is_gt", is_gt, n=len(s), ref="scores", kind="bool"),
            stats.as_vector("step", step, n=len(s), ref="scores", kind="int"))


def _window_support(is_gt, step, W: int, nonzero) -> tuple[np.ndarray, str | None]:
    m = stats.window_mask(step, W, nonzero)
    g = np.asarray(is_gt, bool)
    if not m.any():
        return m, f"the fixture cannot support this check: the window (steps < W={W}, nonzero) is empty"
    if not g[m].any():
        return m, (f"the fixture cannot support this check: the window (steps < W={W}, nonzero) has "
                   f"{int(m.sum())} rollouts and no GT")
    return m, None


def _error(check: str, reason: str, metrics: dict | None = None) -> Verdict:
    return _verdict(check, "error", metrics or {}, reason)


# ------------------------------------------------------------------------------------------------- checks
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
    ns = stats.as_vector("norm_scores", norm_scores, n=len(s), ref="scores")
    m, why = _window_support(g, st, W, nonzero)
    if why:
        return _error(check, why)
    overall = stats.precision_bootstrap(s, g, st, **th.bootstrap)
    norm = stats.precision_bootstrap(ns, g, st, **th.bootstrap)
    diff = stats.precision_difference_bootstrap(s, ns, g, st, **th.bootstrap)
    win = stats.precision_bootstrap(s[m], g[m], st[m], **th.bootstrap)
    win_chance = stats.chance(g[m])
    ok_diff, ok_win = diff.ci_low > th.norm_margin, win.ci_low > win_chance
    metrics = {"precision": Metric.of(overall), "chance": Metric(stats.chance(g), n=len(g)),
               "norm_precision": Metric.of(norm), "precision_minus_norm": Metric.of(diff),
               "window_precision": Metric.of(win), "window_chance": Metric(win_chance, n=int(m.sum()))}
    reason = (f"precision@|GT| {Metric.of(overall)} vs declared {norm_name} {Metric.of(norm)}: difference "
              f"{Metric.of(diff)} (CI low > {th.norm_margin}: {_mark(ok_diff)}); window precision "
              f"{Metric.of(win)} vs window chance {win_chance:.4f} (CI low > chance: {_mark(ok_win)})")
    return _verdict(check, _outcome(ok_diff and ok_win), metrics, reason)


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
    raw = stats.auc_bootstrap(scores, has_behavior, group, **th.bootstrap)
    flu = stats.auc_bootstrap(fluency, has_behavior, group, **th.bootstrap)
    diff = stats.paired_auc_difference_bootstrap(scores, fluency, has_behavior, group, **th.bootstrap)
    res = stats.residualized_auc_bootstrap(scores, fluency, has_behavior, group, **th.bootstrap)
    ok_raw, ok_res = diff.ci_low > th.fluency_margin, res.ci_low > th.residual_auc_bar
    metrics = {"auc": Metric.of(raw), "fluency_auc": Metric.of(flu), "auc_minus_fluency": Metric.of(diff),
               "residualized_auc": Metric.of(res)}
    reason = (f"within-group AUC {Metric.of(raw)} vs fluency's {Metric.of(flu)}: paired difference "
              f"{Metric.of(diff)} (CI low > {th.fluency_margin}: {_mark(ok_raw)}); residualized AUC "
              f"{Metric.of(res)} (CI low > {th.residual_auc_bar}: {_mark(ok_res)}); {raw.n} pairs")
    return _verdict(check, _outcome(ok_raw and ok_res), metrics, reason)


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
    wm = stats.ranking_metrics(s[m], g[m], st[m])
    metrics = {"window_headroom": Metric(wm.headroom, n=wm.n), "window_ceiling": Metric(wm.ceiling, n=wm.n),
               "window_chance": Metric(wm.chance, n=wm.n)}
    if wm.headroom < th.min_headroom:
        return _error(check, f"the fixture cannot support this check: window headroom {wm.headroom:.4f} "
                      f"(ceiling {wm.ceiling:.4f} - chance {wm.chance:.4f}) < min_headroom={th.min_headroom}",
                      metrics)
    if not unsat_applicable:
        gain = stats.normalized_gain_bootstrap(s[m], g[m], st[m], **th.bootstrap)
        ok_gain = gain.ci_low > th.gain_margin
        metrics |= {"window_normalized_gain": Metric.of(gain)}
        return _verdict(check, _outcome(ok_gain), metrics, f"window headroom {wm.headroom:.4f}; window normalized "
                        f"gain {Metric.of(gain)} (CI low > {th.gain_margin}: {_mark(ok_gain)}); unsaturated AUC "
                        "N/A (step-level)")
    if unsat_scores is None or unsat_has_behavior is None or unsat_group is None:
        return _error(check, "the fixture cannot support this check: no unsaturated checkpoint qualified",
                      metrics)
    why = _auc_support(unsat_has_behavior, unsat_group, th, "the unsaturated candidate set")
    if why:
        return _error(check, why, metrics)
    gain = stats.normalized_gain_bootstrap(s[m], g[m], st[m], **th.bootstrap)
    auc = stats.auc_bootstrap(unsat_scores, unsat_has_behavior, unsat_group, **th.bootstrap)
    ok_gain, ok_auc = gain.ci_low > th.gain_margin, auc.ci_low > th.auc_bar
    metrics |= {"window_normalized_gain": Metric.of(gain), "unsaturated_auc": Metric.of(auc)}
    reason = (f"window headroom {wm.headroom:.4f}; window normalized gain {Metric.of(gain)} (CI low > "
              f"{th.gain_margin}: {_mark(ok_gain)}); unsaturated within-group AUC {Metric.of(auc)} (CI low > "
              f"{th.auc_bar}: {_mark(ok_auc)})")
    return _verdict(check, _outcome(ok_gain and ok_auc), metrics, reason)


def seed_draw_variance(seed, draw, residual_auc, residual_ci_low, *, stability_seed, stability_spearman,
                       thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 4 from per-(seed, draw) residualized AUCs and per-seed draw-stability Spearman values.

    No flip: the verdict "residualized AUC CI low > residual_auc_bar" is the same on every (seed, draw)
    and positive.  Draw stability: every Spearman of scores under two draws' targets (same candidates)
    >= draw_spearman, and every seed has one.  Fewer than min_seeds x min_draws -> error.  Reports the
    share of the residualized AUC's variance between seeds vs between draws (stats.variance_shares).
    """
    check, th = "seed_draw_variance", thresholds
    sd = stats.as_vector("seed", seed, kind="int")
    dr = stats.as_vector("draw", draw, n=len(sd), ref="seed", kind="int")
    auc = stats.as_vector("residual_auc", residual_auc, n=len(sd), ref="seed")
    low = stats.as_vector("residual_ci_low", residual_ci_low, n=len(sd), ref="seed")
    sp_seed = stats.as_vector("stability_seed", stability_seed, kind="int")
    sp = stats.as_vector("stability_spearman", stability_spearman, n=len(sp_seed), ref="stability_seed")
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
    share_seed, share_draw = stats.variance_shares(auc, sd)
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
    ctx = stats.as_vector("in_context", in_context)
    if len(ctx) < 2:
        return _error(check, f"the fixture cannot support this check: {len(ctx)} behavior-containing candidates")
    placebo = None if placebo is None else stats.as_vector("placebo", placebo, n=len(ctx), ref="in_context")
    response = None if response is None else stats.as_vector("response", response, n=len(ctx), ref="in_context",
                                                              kind="int")
    metrics: dict[str, Metric] = {}
    parts, oks = [], []
    if cosine_scale:
        mean = stats.mean_bootstrap(ctx, response, **th.bootstrap)
        ok = mean.ci_low > th.cosine_bar
        metrics["in_context_mean"] = Metric.of(mean)
        parts.append(f"mean in-context cosine {Metric.of(mean)} (CI low > {th.cosine_bar}: {_mark(ok)})")
        oks.append(ok)
    if placebo is not None:
        diff = stats.paired_difference_bootstrap(ctx, placebo, response, **th.bootstrap)
        ok = diff.ci_low > th.alignment_margin
        metrics["in_context_minus_placebo"] = Metric.of(diff)
        parts.insert(0, f"mean(in_context - placebo) {Metric.of(diff)} (CI low > {th.alignment_margin}: "
                        f"{_mark(ok)})")
        oks.append(ok)
    if constructed is not None:
        con = stats.mean_bootstrap(stats.as_vector("constructed", constructed, n=len(ctx), ref="in_context"),
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
    a = stats.as_vector("advantage_scores", advantage_scores, n=len(s), ref="scores")
    m, why = _window_support(g, st, W, nonzero)
    if why:
        return _error(check, why)
    overall = stats.precision_difference_bootstrap(s, a, g, st, **th.bootstrap)
    win = stats.precision_difference_bootstrap(s[m], a[m], g[m], st[m], **th.bootstrap)
    ok_all, ok_win = overall.ci_low > th.advantage_margin, win.ci_low > th.advantage_margin
    metrics = {"precision_minus_advantage": Metric.of(overall),
               "window_precision_minus_advantage": Metric.of(win),
               "advantage_precision": Metric(stats.precision_at_k(a, g), n=len(g)),
               "window_advantage_precision": Metric(stats.precision_at_k(a[m], g[m]), n=int(m.sum()))}
    reason = (f"precision@|GT| minus advantage_only's: overall {Metric.of(overall)} (CI low > "
              f"{th.advantage_margin}: {_mark(ok_all)}), window {Metric.of(win)} ({_mark(ok_win)})")
    return _verdict(check, _outcome(ok_all and ok_win), metrics, reason)


def target_dependence_training(train_real, train_placebo, is_gt, step, *,
                               thresholds: Thresholds = Thresholds()) -> Verdict:
    """Check 7, training half: precision@|GT| of the training rollouts scored against the real target minus
    against the placebo target, paired on the same step resamples; CI low > target_margin. Point figures of
    each side are reported as well (their own CIs are not needed for the decision)."""
    check, th = "target_dependence", thresholds
    tr = stats.as_vector("train_real", train_real)
    tp = stats.as_vector("train_placebo", train_placebo, n=len(tr), ref="train_real")
    g = stats.as_vector("is_gt", is_gt, n=len(tr), ref="train_real", kind="bool")
    st = stats.as_vector("step", step, n=len(tr), ref="train_real", kind="int")
    p_diff = stats.precision_difference_bootstrap(tr, tp, g, st, **th.bootstrap)
    ok = p_diff.ci_low > th.target_margin
    metrics = {"precision_real": Metric(stats.precision_at_k(tr, g), n=len(tr)),
               "precision_placebo": Metric(stats.precision_at_k(tp, g), n=len(tr)),
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
    dr = stats.as_vector("draw_real", draw_real)
    dp = stats.as_vector("draw_placebo", draw_placebo, n=len(dr), ref="draw_real")
    y = stats.as_vector("has_behavior", has_behavior, n=len(dr), ref="draw_real", kind="bool")
    grp = stats.as_vector("group", group, n=len(dr), ref="draw_real", kind="int")
    why = _auc_support(y, grp, th, "the candidate set")
    if why:
        return _error(check, why)
    a_diff = stats.paired_auc_difference_bootstrap(dr, dp, y, grp, **th.bootstrap)
    ok = a_diff.ci_low > th.target_margin
    metrics = {"auc_real": Metric(stats.within_group_auc(dr, y, grp), n=a_diff.n),
               "auc_placebo": Metric(stats.within_group_auc(dp, y, grp), n=a_diff.n),
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
