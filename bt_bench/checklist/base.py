"""The vocabulary of every verdict (spec: checklist.md, "The checks" and "The gate"): :class:`Thresholds`,
:class:`Metric`, :class:`Verdict`, :func:`combine` (the every-seed rule) and the helpers the checks' verdict
functions (``bt_bench.checklist.checks``) share.

Outcomes: "pass"/"fail" are verdicts on the estimator; "error" means the fixture cannot support a verdict
(too little headroom, too few within-group pairs, too few seeds or draws), never a pass; "skip" means the
estimator cannot take part (no token-level scores, a step-level estimator in a comparison of rollout-level ones);
"unsupported" means no ranking at all can pass this one unit (the comparison's ceiling is reached: a perfect
ranking, the labels themselves, fails it on the same paired bootstrap), so the unit supports no verdict, for any
estimator: it is neither a pass nor a fail (:func:`out_of_reach`, docs/checklist.md "The gate").
A check passes only if it passes on every seed and draw it can be judged on: :func:`combine`; more than a third
of its units unsupported is an error of the fixture (:func:`bt_bench.checklist.gate.too_many_unsupported`).

Every verdict carries its *units* as data (``Verdict.units``): one entry per seed (or seed and draw) it judges,
``{"seed", "draw", ..., "outcome", "reason", "metrics"}``; :func:`with_unit` attaches the one unit of a
single-unit verdict, :func:`combine` those of the verdicts it combines.

Every CI carries the count of resamples where its statistic was undefined (no pair or no GT drawn); when
more than ``UNDEFINED_NOTE_SHARE`` (1%) of a metric's resamples were undefined, the metric's string and the
verdict's reason say so.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace

import numpy as np

from bt_bench.checklist.bootstrap import DEFAULT_RESAMPLES, BootstrapResult
from bt_bench.checklist.gate import too_many_unsupported
from bt_bench.checklist.metrics import as_vector, count_pairs, window_mask

class Outcome(str, enum.Enum):
    """What a verdict, a unit or a cell says (docs/checklist.md, "The gate"), one spelling everywhere: ``pass`` /
    ``fail`` judge the estimator; ``error``: the fixture cannot support a verdict (or the estimator failed);
    ``skip``: it cannot take part (N/A by declaration, else NOT JUDGED); ``unsupported``: no ranking can pass this
    unit. A str, so it compares and serialises as its value."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"
    UNSUPPORTED = "unsupported"

    def __str__(self) -> str:
        return self.value


OUTCOMES = tuple(o.value for o in Outcome)
UNDEFINED_NOTE_SHARE = 0.01  # a CI with more undefined resamples than this share is flagged


def _help(text: str) -> dict:
    return {"help": text}


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the checklist, with the spec's defaults (numbers in brackets in checklist.md). A threshold
    a check owns has its help text in that check's module (``CheckSpec.thresholds``); the shared ones have theirs
    here. ``bt_bench.checklist.registry.thresholds_help`` gives every field's."""

    n_resamples: int = field(default=DEFAULT_RESAMPLES, metadata=_help(
        "cluster-bootstrap resamples behind every CI (Metrics: Confidence intervals)"))
    bootstrap_seed: int = field(default=0, metadata=_help("seed of the bootstrap; reported with every CI"))
    ci_low_percentile: float = field(default=2.5, metadata=_help("lower percentile of the bootstrap CI"))
    ci_high_percentile: float = field(default=97.5, metadata=_help("upper percentile of the bootstrap CI"))
    norm_margin: float = 0.0  # help: its check module
    min_headroom: float = 0.10  # help: its check module
    gain_margin: float = 0.0  # help: its check module
    auc_bar: float = 0.5  # help: its check module
    fluency_margin: float = 0.0  # help: its check module
    residual_auc_bar: float = 0.5  # help: its check module
    min_pairs: int = field(default=100, metadata=_help(
        "within-group (behavior, non-behavior) pairs a candidate set needs, else the fixture errors"))
    min_seeds: int = 3  # help: its check module
    min_draws: int = 3  # help: its check module
    draw_spearman: float = 0.5  # help: its check module
    alignment_margin: float = 0.0  # help: its check module
    cosine_bar: float = 0.05  # help: its check module
    advantage_margin: float = 0.0  # help: its check module
    target_margin: float = 0.0  # help: its check module
    retrieval_margin: float = 0.0  # help: its check module
    counterfactual_margin: float = 0.0  # help: its check module
    lds_margin: float = 0.0  # help: its check module
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
    def from_mapping(cls, values: Mapping[str, object]) -> Thresholds:
        """Build from e.g. pyproject ``[tool.bt_bench]`` values; unknown keys are an error."""
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: unknown threshold(s); allowed: {sorted(f.name for f in fields(cls))}")
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def bootstrap(self) -> dict:
        """Keyword arguments of the bt_bench.checklist.bootstrap functions."""
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
    def of(cls, r: BootstrapResult) -> Metric:
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
    units: tuple[dict, ...] = ()  # the seeds/draws it judges, as data (see with_unit, combine)

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

    More than a third of the verdicts (skipped ones aside) "unsupported" (no ranking can pass them) -> error: the
    fixture cannot support the check. Otherwise the unsupported ones are left out and the rest decide: any fail ->
    fail (a fail anywhere is decisive); else any error -> error; all skip -> skip; a mix of pass and skip -> error
    (not judged on every seed); pass only when every remaining verdict passes.  Metrics are
    prefixed with each label (labels default to the units, e.g. 'seed2/draw1', else '#i').  With `units`
    (one mapping per verdict, e.g. ``{"seed": 2, "draw": 1}``) the result's ``units`` holds, per verdict,
    ``{**unit, "outcome", "reason", "metrics": {name: Metric.to_dict()}}``.
    """
    if not verdicts:
        raise ValueError("verdicts: empty; a check needs at least one seed/draw")
    if units is not None:
        units = [_check_unit(u) for u in units]
        if len(units) != len(verdicts):
            raise ValueError(f"units: {len(units)} units for {len(verdicts)} verdicts")
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
    n_unsupported = outcomes.count("unsupported")
    rest = [o for o in outcomes if o != "unsupported"]
    too_many = too_many_unsupported(n_unsupported, sum(o != "skip" for o in outcomes))  # as the gate: N/A aside
    if too_many:
        outcome = "error"
    elif "fail" in rest:
        outcome = "fail"
    elif "error" in rest:
        outcome = "error"
    elif all(o == "skip" for o in rest):
        outcome = "skip"
    elif all(o == "pass" for o in rest):
        outcome = "pass"
    else:  # pass and skip mixed: not judged on every seed/draw
        outcome = "error"
    metrics = {f"{lab}/{k}": m for lab, v in zip(labels, verdicts) for k, m in v.metrics.items()}
    head = {"pass": "passes on every one of", "fail": "fails on at least one of",
            "error": "cannot be judged on every one of", "skip": "is skipped on all"}[outcome]
    if too_many:
        head = (f"is an error of the fixture, which cannot support this check ({n_unsupported} units cannot "
                "support a verdict, no ranking can pass them: more than a third, a fixture defect), on")
    elif n_unsupported:
        head = head.replace(" one of", f" one ({n_unsupported} unsupported, left out) of")
    reason = f"{head} {len(verdicts)} seed/draw(s): " + "; ".join(
        f"{lab}: {v.outcome}: {v.reason}" for lab, v in zip(labels, verdicts))
    entries = () if units is None else tuple(_unit_entry(u, v) for u, v in zip(units, verdicts))
    return Verdict(verdicts[0].check, outcome, metrics, reason, verdicts[0].estimator, entries)


_RESERVED = ("outcome", "reason", "metrics")


def _check_unit(unit: Mapping) -> dict:
    clash = sorted(set(unit) & set(_RESERVED))
    if clash:
        raise ValueError(f"units: keys {clash} are reserved for the unit's verdict")
    return dict(unit)


def _unit_entry(unit: Mapping, v: Verdict) -> dict:
    """One entry of ``Verdict.units``: the unit's keys, then its verdict's outcome, reason and metrics."""
    return {**unit, "outcome": v.outcome, "reason": v.reason,
            "metrics": {k: m.to_dict() for k, m in v.metrics.items()}}


def with_unit(verdict: Verdict, unit: Mapping) -> Verdict:
    """The verdict of one unit (e.g. ``{"seed": 2, "draw": None}``) carrying that unit as data: ``units`` holds
    the one entry ``{**unit, "outcome", "reason", "metrics"}``. Outcome, metric names and reason are unchanged."""
    return replace(verdict, units=(_unit_entry(_check_unit(unit), verdict),))


# ------------------------------------------------------------------------------------------------ helpers
def pass_fail(ok: bool) -> str:
    return "pass" if ok else "fail"


def out_of_reach(perfect: Mapping[str, tuple[BootstrapResult, float]]) -> dict[str, tuple[Metric, float]]:
    """The conditions of a unit that even a perfect ranking cannot meet: ``perfect`` maps a metric name to (the
    perfect ranking's bootstrap of it, the bar its CI lower bound must exceed); returns {name: (Metric, bar)} of
    those whose CI low does not exceed the bar (a NaN bound, every resample undefined, is out of reach too).

    Used only for conditions where the labels are the best ranking in *every* resample (an AUC of 1, a
    precision@|GT| of 1, against a reference that does not depend on the estimator): a percentile bound is
    monotone in the resample values, so if the labels' CI low misses the bar, every ranking's does."""
    return {k: (Metric.of(r), bar) for k, (r, bar) in perfect.items() if not r.ci_low > bar}


def supported_or(check: str, reach: Mapping[str, tuple[Metric, float]], outcome: str,
                  metrics: dict[str, Metric], reason: str) -> Verdict:
    """The unit's verdict: ``outcome`` when every condition is within reach of some ranking; else "unsupported",
    with the perfect ranking's figures added (``perfect_<name>``) and the estimator's own figures kept."""
    if not reach:
        return make_verdict(check, outcome, metrics, reason)
    why = "; ".join(f"{k} {m} (CI low > {bar}: NOT met)" for k, (m, bar) in reach.items())
    ms = {**metrics, **{f"perfect_{k}": m for k, (m, _) in reach.items()}}
    return make_verdict(check, "unsupported", ms, f"cannot support a verdict: no ranking can pass this unit, a perfect "
                    f"ranking (the labels) gets {why}; the estimator's own figures, not judged: {reason}")


def mark(ok: bool) -> str:
    return "ok" if ok else "NOT met"


def _undefined_note(metrics: Mapping[str, Metric]) -> str:
    """'; CI caveat: ...' naming every metric with more than 1% undefined resamples, else ''."""
    flagged = [f"{k} {m.n_undefined}/{m.n_resamples} ({m.undefined_share:.1%})"
               for k, m in metrics.items() if m.undefined_flag]
    return f"; CI caveat: resamples undefined (left out of the percentiles): {', '.join(flagged)}" if flagged \
        else ""


def make_verdict(check: str, outcome: str, metrics: dict[str, Metric], reason: str) -> Verdict:
    """A Verdict whose reason says which CIs dropped more than 1% of their resamples as undefined."""
    return Verdict(check, outcome, metrics, reason + _undefined_note(metrics))


def auc_support(has_behavior, group, th: Thresholds, what: str) -> str | None:
    """Why a candidate set cannot support an AUC verdict (too few pairs), or None."""
    n_pairs = count_pairs(has_behavior, group)
    if n_pairs < th.min_pairs:
        return (f"the fixture cannot support this check: {what} has {n_pairs} within-group (behavior, "
                f"non-behavior) pairs, fewer than min_pairs={th.min_pairs}")
    return None


def run_arrays(scores, is_gt, step) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated (scores, is_gt, step) of training rollouts."""
    s = as_vector("scores", scores)
    return (s, as_vector("is_gt", is_gt, n=len(s), ref="scores", kind="bool"),
            as_vector("step", step, n=len(s), ref="scores", kind="int"))


def window_support(is_gt, step, W: int, nonzero) -> tuple[np.ndarray, str | None]:
    m = window_mask(step, W, nonzero)
    g = np.asarray(is_gt, bool)
    if not m.any():
        return m, f"the fixture cannot support this check: the window (steps < W={W}, nonzero) is empty"
    if not g[m].any():
        return m, (f"the fixture cannot support this check: the window (steps < W={W}, nonzero) has "
                   f"{int(m.sum())} rollouts and no GT")
    return m, None


def error_verdict(check: str, reason: str, metrics: dict | None = None) -> Verdict:
    return make_verdict(check, "error", metrics or {}, reason)


def json_default(o):
    """``json.dumps(default=...)`` of results and reports: numpy scalars and arrays, dataclass instances; anything
    else as its str (the run store's manifests use a strict one instead: ``bt_bench.runs.store``)."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if is_dataclass(o) and not isinstance(o, type):
        return asdict(o)
    return str(o)
