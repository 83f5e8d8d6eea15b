"""Each verdict function passes a planted signal and fails a random one (spec: checklist.md, "The checks").

The synthetic makers here are also used by tests/test_evidence.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from bt_bench.checklist import base, bootstrap, metrics, registry
from bt_bench.checklist.checks import (
    advantage_baseline as ab,
    fluency_confound as fc,
    gradient_norm_baseline as gnb,
    headroom as hr,
    seed_draw_variance as sdv,
    target_dependence as td,
    trigger_token_alignment as tta,
)
from bt_bench.checklist.sketch_units import under_sketch_seeds

TH = base.Thresholds(n_resamples=1000)


def make_run(seed: int = 0, T: int = 30, P: int = 8, G: int = 8, W: int = 15) -> dict:
    """A synthetic planted run: inside the window GT = trigger-prompt rollouts with the behavior and a
    positive advantage, denser early (so the step-level ceiling has headroom); ~70% zero gradients."""
    rng = np.random.default_rng(seed)
    n = T * P * G
    step = np.repeat(np.arange(T), P * G)
    group = np.repeat(np.arange(T * P), G)
    nonzero = rng.random(n) < 0.3
    p_gt = np.where(step < W, 0.9 * (1 - step / W), 0.0)
    is_gt = nonzero & (rng.random(n) < p_gt)
    advantage = np.where(is_gt, rng.uniform(0.5, 1.5, n), np.where(nonzero, rng.normal(0, 1, n), 0.0))
    step_norm = (np.bincount(step, weights=is_gt, minlength=T) + rng.normal(0, 2.0, T))[step]
    return {"seed": seed, "W": W, "step": step, "group": group, "nonzero": nonzero, "is_gt": is_gt,
            "advantage": advantage,
            "planted": is_gt + rng.normal(0, 0.3, n), "random": rng.random(n),
            "norm_only": nonzero * rng.uniform(0.5, 1.5, n) + 0.3 * is_gt, "norm_only_step": step_norm}


def make_candidates(seed: int = 0, n_groups: int = 60, G: int = 8, rate: float = 0.5) -> dict:
    """Candidates in groups of G: fluency is confounded with the behavior (as published); `planted`
    carries a signal beyond fluency, `fluency_like` none."""
    rng = np.random.default_rng(seed)
    n = n_groups * G
    group = np.repeat(np.arange(n_groups), G)
    beh = rng.random(n) < rate
    fluency = 0.6 * beh + rng.normal(0, 1, n)
    return {"group": group, "has_behavior": beh, "fluency": fluency,
            "planted": 2.0 * beh + 0.5 * fluency + rng.normal(0, 1, n),
            "fluency_like": fluency + rng.normal(0, 0.05, n), "random": rng.random(n)}


def make_token_level(seed: int = 0, n: int = 80, k: int = 64, aligned: bool = True) -> dict:
    """Cosines of synthetic behavior-token sketches with an in_context target (planted alignment when
    `aligned`) and with a placebo target built at random non-behavior positions."""
    rng = np.random.default_rng(seed)
    target, placebo = rng.normal(size=k), rng.normal(size=k)
    sketches = (0.8 * target if aligned else 0.0) + rng.normal(size=(n, k))

    def cos(t):
        return sketches @ t / (np.linalg.norm(sketches, axis=1) * np.linalg.norm(t))

    return {"in_context": cos(target), "placebo": cos(placebo), "constructed": cos(rng.normal(size=k))}


def _run_kw(r: dict) -> dict:
    return {"W": r["W"], "nonzero": r["nonzero"], "thresholds": TH}


# ------------------------------------------------------------------------------------ 1. gradient norm
def _norm(r: dict, name: str = "norm_only") -> dict:
    return {"norm_scores": r[name], "norm_name": name}


def test_gradient_norm_baseline_planted_passes_random_fails():
    r = make_run()
    v = gnb.judge(r["planted"], r["is_gt"], r["step"], **_norm(r), **_run_kw(r))
    assert v.outcome == "pass", v.reason
    assert set(v.metrics) == {"precision", "chance", "norm_precision", "precision_minus_norm",
                              "window_precision", "window_chance"}
    assert v.metrics["precision_minus_norm"].ci_low > 0 and v.metrics["precision"].seed == 0
    n = v.metrics["norm_precision"]
    assert n.value == pytest.approx(metrics.precision_at_k(r["norm_only"], r["is_gt"]))
    assert n.ci_low <= n.ci_high
    assert "declared norm_only" in v.reason and "window chance" in v.reason
    v = gnb.judge(r["random"], r["is_gt"], r["step"], **_norm(r), **_run_kw(r))
    assert v.outcome == "fail", v.reason


def test_gradient_norm_baseline_compares_with_the_declared_variant_only():
    """The caller declares the variant; the verdict never swaps it for a stronger one."""
    r = make_run()
    p = {k: metrics.precision_at_k(r[k], r["is_gt"]) for k in ("norm_only", "norm_only_step")}
    weak = min(p, key=p.get)
    v = gnb.judge(r["planted"], r["is_gt"], r["step"], **_norm(r, weak), **_run_kw(r))
    assert v.metrics["norm_precision"].value == pytest.approx(p[weak])
    assert f"declared {weak} " in v.reason
    d = bootstrap.precision_difference_bootstrap(r["planted"], r[weak], r["is_gt"], r["step"], **TH.bootstrap)
    assert v.metrics["precision_minus_norm"] == base.Metric.of(d)


def test_gradient_norm_baseline_errors_without_window_gt():
    r = make_run()
    v = gnb.judge(r["planted"], r["is_gt"], r["step"], **_norm(r, "norm_only_step"),
                                      W=1, nonzero=np.zeros_like(r["nonzero"]), thresholds=TH)
    assert v.outcome == "error" and "cannot support" in v.reason
    with pytest.raises(TypeError):
        gnb.judge(r["planted"], r["is_gt"], r["step"], **_run_kw(r))
    with pytest.raises(ValueError, match="^norm_name:"):
        gnb.judge(r["planted"], r["is_gt"], r["step"], norm_scores=r["norm_only"],
                                      norm_name="", **_run_kw(r))
    with pytest.raises(ValueError, match="^norm_scores: length 3 differs"):
        gnb.judge(r["planted"], r["is_gt"], r["step"], norm_scores=[1.0, 2.0, 3.0],
                                      norm_name="norm_only", **_run_kw(r))
    with pytest.raises(ValueError, match="^is_gt: length 3 differs"):
        gnb.judge(r["planted"], [1, 0, 0], r["step"], **_norm(r), **_run_kw(r))


# ----------------------------------------------------------------------------------- 2. fluency
def test_fluency_confound_planted_passes_fluency_like_fails():
    c = make_candidates()
    args = (c["has_behavior"], c["group"], c["fluency"])
    v = fc.judge(c["planted"], *args, thresholds=TH)
    assert v.outcome == "pass", v.reason
    assert v.metrics["auc"].value > v.metrics["fluency_auc"].value
    assert v.metrics["auc_minus_fluency"].value == pytest.approx(
        v.metrics["auc"].value - v.metrics["fluency_auc"].value)
    v = fc.judge(c["fluency_like"], *args, thresholds=TH)
    assert v.outcome == "fail", v.reason
    assert fc.judge(c["random"], *args, thresholds=TH).outcome == "fail"


_NON = (1.0, 2.0, 3.0)
# per group type: behavior fluencies (the non-behavior ones are _NON) and which behavior row the
# estimator lifts by +0.6 (it then beats exactly one more non-behavior sibling) or lowers by -0.6 (None:
# no win to lose); fluency's per-group AUCs are 3/9, 8/9, 0/9, 7/9: spread out.
_TYPES = {"A": ((0.5, 1.5, 2.5), 2, 1), "B": ((2.5, 3.5, 4.5), 0, 0), "C": ((-1.0, 0.0, 0.5), 2, None),
          "D": ((1.5, 3.5, 4.5), 0, 0)}


def _fluency_plus_one_pair(straddle: bool) -> tuple:
    """16 groups (4 of each type) of 3 behavior + 3 non-behavior rows: 144 pairs, fluency AUC 72/144.
    The scores equal fluency except one behavior row per group moved across one sibling: +1 win in every
    group (AUC 88/144, paired difference 1/9 in every group), or, with `straddle`, +1 in the 8 groups of
    the first two repeats, -1 in 6 of the last 8, 0 in the two C groups there (difference 2/144)."""
    f, s, y, g = [], [], [], []
    for gid, (rep, (beh, up, down)) in enumerate((r, t) for r in range(4) for t in _TYPES.values()):
        idx, d = (down, -0.6) if straddle and rep >= 2 else (up, 0.6)
        f += [*beh, *_NON]
        s += [b + (d if i == idx else 0.0) for i, b in enumerate(beh)] + list(_NON)
        y += [True] * 3 + [False] * 3
        g += [gid] * 6
    return np.array(s), np.array(y), np.array(g), np.array(f)


def test_fluency_confound_paired_difference_decides_where_unpaired_cis_overlap():
    s, y, g, f = _fluency_plus_one_pair(straddle=False)
    v = fc.judge(s, y, g, f, thresholds=TH)
    auc, flu, diff = v.metrics["auc"], v.metrics["fluency_auc"], v.metrics["auc_minus_fluency"]
    assert (auc.value, flu.value) == pytest.approx((88 / 144, 72 / 144)) and auc.n == 144
    assert flu.ci_high > auc.ci_low  # the unpaired intervals overlap ...
    assert (diff.value, diff.ci_low, diff.ci_high) == pytest.approx((1 / 9, 1 / 9, 1 / 9))  # ... paired: not
    assert v.outcome == "pass", v.reason
    assert "paired difference 0.1111 [0.1111, 0.1111] (CI low > 0.0: ok)" in v.reason
    # a margin above the paired difference fails it
    th = base.Thresholds(n_resamples=1000, fluency_margin=0.12)
    assert fc.judge(s, y, g, f, thresholds=th).outcome == "fail"


def test_fluency_confound_paired_difference_straddling_zero_fails():
    s, y, g, f = _fluency_plus_one_pair(straddle=True)
    th = base.Thresholds(n_resamples=1000, residual_auc_bar=0.0)  # isolate the paired condition
    v = fc.judge(s, y, g, f, thresholds=th)
    diff = v.metrics["auc_minus_fluency"]
    assert diff.value == pytest.approx(2 / 144) and diff.ci_low < 0 < diff.ci_high
    assert v.metrics["residualized_auc"].ci_low > 0.0
    assert v.outcome == "fail" and "(CI low > 0.0: NOT met); residualized" in v.reason


def test_fluency_confound_too_few_pairs_is_error():
    c = make_candidates(n_groups=3)
    v = fc.judge(c["planted"], c["has_behavior"], c["group"], c["fluency"], thresholds=TH)
    assert v.outcome == "error" and "min_pairs=100" in v.reason


# ---------------------------------------------------------------------------------- 3. headroom
def test_headroom_planted_passes_random_fails():
    r, c = make_run(), make_candidates(rate=0.4)
    unsat = {"unsat_has_behavior": c["has_behavior"], "unsat_group": c["group"]}
    v = hr.judge(r["planted"], r["is_gt"], r["step"], unsat_scores=c["planted"], **unsat, **_run_kw(r))
    assert v.outcome == "pass", v.reason
    assert v.metrics["window_headroom"].value >= 0.10
    v = hr.judge(r["random"], r["is_gt"], r["step"], unsat_scores=c["random"], **unsat, **_run_kw(r))
    assert v.outcome == "fail", v.reason


def test_headroom_errors_when_fixture_cannot_support():
    r = make_run()
    # every window step has the same GT density -> ceiling == chance -> headroom 0
    flat_gt = (np.arange(len(r["step"])) % 4 == 0)
    v = hr.judge(r["planted"], flat_gt, r["step"], W=r["W"], nonzero=np.ones_like(r["nonzero"]),
                        thresholds=TH)
    assert v.outcome == "error" and "headroom 0.0000" in v.reason
    v = hr.judge(r["planted"], r["is_gt"], r["step"], **_run_kw(r))
    assert v.outcome == "error" and "no unsaturated checkpoint" in v.reason


# ------------------------------------------------------------------------- 4. seed/draw variance
def _cells(low):
    seed, draw = np.repeat([0, 1, 2], 3), np.tile([0, 1, 2], 3)
    auc = np.array([0.70, 0.72, 0.71, 0.60, 0.61, 0.62, 0.66, 0.65, 0.67])
    return seed, draw, auc, np.asarray(low, float)


def test_seed_draw_variance_pass_flip_unstable_and_error():
    seed, draw, auc, low = _cells(np.full(9, 0.55))
    stab = {"stability_seed": [0, 1, 2], "stability_spearman": [0.8, 0.7, 0.9], "thresholds": TH}
    v = sdv.judge(seed, draw, auc, low, **stab)
    assert v.outcome == "pass", v.reason
    share = v.metrics["variance_share_seed"].value
    assert share > 0.9 and share + v.metrics["variance_share_draw"].value == pytest.approx(1.0)
    low_flip = low.copy()
    low_flip[4] = 0.49
    v = sdv.judge(seed, draw, auc, low_flip, **stab)
    assert v.outcome == "fail" and "seed 1 draw 1" in v.reason
    v = sdv.judge(seed, draw, auc, low, **(stab | {"stability_spearman": [0.8, 0.3, 0.9]}))
    assert v.outcome == "fail" and "0.3000" in v.reason
    keep = seed < 2
    v = sdv.judge(seed[keep], draw[keep], auc[keep], low[keep], **stab)
    assert v.outcome == "error" and "3 seeds x 3 draws" in v.reason


# ----------------------------------------------------------------------- 5. trigger-token alignment
def test_trigger_token_alignment_planted_passes_removed_fails():
    t = make_token_level(aligned=True)
    v = tta.judge(t["in_context"], t["placebo"], cosine_scale=True,
                                       constructed=t["constructed"], thresholds=TH)
    assert v.outcome == "pass", v.reason
    assert {"in_context_mean", "in_context_minus_placebo", "constructed_mean"} <= set(v.metrics)
    t = make_token_level(aligned=False)
    v = tta.judge(t["in_context"], t["placebo"], cosine_scale=True, thresholds=TH)
    assert v.outcome == "fail", v.reason


def test_trigger_token_alignment_skips_and_never_passes_without_placebo():
    assert tta.judge(None, None, cosine_scale=True).outcome == "skip"
    t = make_token_level(aligned=True)
    v = tta.judge(t["in_context"], None, cosine_scale=True, thresholds=TH)
    assert v.outcome == "skip" and "no placebo" in v.reason
    t = make_token_level(aligned=False)
    v = tta.judge(t["in_context"], None, cosine_scale=True, thresholds=TH)
    assert v.outcome == "fail"
    # clustered by response: rows are behavior occurrences of 20 responses
    t = make_token_level(aligned=True)
    v = tta.judge(t["in_context"], t["placebo"], cosine_scale=False,
                                       response=np.repeat(np.arange(20), 4), thresholds=TH)
    assert v.outcome == "pass" and "in_context_mean" not in v.metrics
    with pytest.raises(ValueError, match="^placebo: length 3 differs"):
        tta.judge(t["in_context"], t["placebo"][:3], cosine_scale=True)


# -------------------------------------------------------------------------------- 6. advantage
def test_advantage_baseline_planted_passes_advantage_tracker_fails():
    r = make_run()
    v = ab.judge(r["planted"], r["advantage"], r["is_gt"], r["step"], rollout_level=True,
                                  **_run_kw(r))
    assert v.outcome == "pass", v.reason
    tracker = r["advantage"] + np.random.default_rng(1).normal(0, 1e-3, len(r["step"]))
    v = ab.judge(tracker, r["advantage"], r["is_gt"], r["step"], rollout_level=True,
                                  **_run_kw(r))
    assert v.outcome == "fail", v.reason
    v = ab.judge(r["norm_only_step"], r["advantage"], r["is_gt"], r["step"],
                                  rollout_level=False, **_run_kw(r))
    assert v.outcome == "skip"


# ----------------------------------------------------------------------------- 7. target dependence
def _target_args(real_train, placebo_train, real_draw, placebo_draw, r, c) -> tuple:
    return (real_train, placebo_train, r["is_gt"], r["step"], real_draw, placebo_draw, c["has_behavior"],
            c["group"])


def test_target_dependence_real_beats_placebo_passes():
    r, c = make_run(), make_candidates()
    v = td.judge(*_target_args(r["planted"], r["random"], c["planted"], c["random"], r, c),
                                 thresholds=TH)
    assert v.outcome == "pass", v.reason
    assert set(v.metrics) == {"precision_real", "precision_placebo", "precision_real_minus_placebo",
                              "auc_real", "auc_placebo", "auc_real_minus_placebo"}
    m = v.metrics
    assert m["precision_real_minus_placebo"].value == pytest.approx(m["precision_real"].value
                                                                    - m["precision_placebo"].value)
    assert m["auc_real_minus_placebo"].value == pytest.approx(m["auc_real"].value - m["auc_placebo"].value)
    assert m["precision_real_minus_placebo"].ci_low > 0 and m["auc_real_minus_placebo"].ci_low > 0
    # the oracle: GT / behavior indicator with the real target, constant with the placebo
    o = td.judge(*_target_args(r["is_gt"].astype(float), np.zeros(len(r["step"])),
                                               c["has_behavior"].astype(float), np.zeros(len(c["group"])),
                                               r, c), thresholds=TH)
    assert o.outcome == "pass" and o.metrics["auc_real"].value == 1.0 and o.metrics["auc_placebo"].value == 0.5


def test_target_dependence_target_free_scores_fail():
    r, c = make_run(), make_candidates()
    v = td.judge(*_target_args(r["planted"], r["planted"], c["planted"], c["planted"], r, c),
                                 thresholds=TH)
    assert v.outcome == "fail"
    for k in ("precision_real_minus_placebo", "auc_real_minus_placebo"):
        m = v.metrics[k]
        assert (m.value, m.ci_low, m.ci_high) == (0.0, 0.0, 0.0)
    # one part alone is not enough: real beats placebo on the draws only
    v = td.judge(*_target_args(r["planted"], r["planted"], c["planted"], c["random"], r, c),
                                 thresholds=TH)
    assert v.outcome == "fail" and "(CI low > 0.0: NOT met)" in v.reason and "(CI low > 0.0: ok)" in v.reason


def test_target_dependence_pools_draws_and_errors_on_too_few_pairs():
    r = make_run()
    c0, c1 = make_candidates(0), make_candidates(1)
    pooled = {k: np.concatenate([c0[k], c1[k]]) for k in ("has_behavior", "planted", "random")}
    pooled["group"] = np.concatenate([c0["group"], c1["group"]])  # the prompt index, shared across draws
    v = td.judge(*_target_args(r["planted"], r["random"], pooled["planted"], pooled["random"],
                                               r, pooled), thresholds=TH)
    assert v.outcome == "pass" and v.metrics["auc_real"].n == _n_pairs(pooled)
    small = make_candidates(n_groups=3)
    v = td.judge(*_target_args(r["planted"], r["random"], small["planted"], small["random"],
                                               r, small), thresholds=TH)
    assert v.outcome == "error" and "min_pairs=100" in v.reason
    with pytest.raises(ValueError, match="^draw_placebo: length 3 differs"):
        td.judge(*_target_args(r["planted"], r["random"], c0["planted"], [1.0, 2.0, 3.0],
                                               r, c0))


def _n_pairs(c: dict) -> int:
    return metrics.count_pairs(c["has_behavior"], c["group"])


# ---------------------------------------------------------------------- undefined resamples
def test_metric_flags_more_than_one_percent_undefined_resamples():
    m = base.Metric(0.5, 0.4, 0.6, 10, 0, n_resamples=1000, n_undefined=32)
    assert m.undefined_share == pytest.approx(0.032) and m.undefined_flag
    assert str(m) == "0.5000 [0.4000, 0.6000] (3.2% resamples undefined)"
    # exactly 1%: no flag
    assert str(base.Metric(0.5, 0.4, 0.6, 10, 0, 1000, 10)) == "0.5000 [0.4000, 0.6000]"
    assert base.Metric(0.5).undefined_share is None and not base.Metric(0.5).undefined_flag
    r = bootstrap.BootstrapResult(0.5, 0.4, 0.6, 3, 1000, 10, 32)
    assert base.Metric.of(r) == base.Metric(0.5, 0.4, 0.6, 10, 3, 1000, 32)


def test_verdict_reason_names_undefined_resamples():
    # two groups with pairs and one without: a resample that draws only the pairless group (~1/27) is undefined
    s = np.array([4, 3, 2, 1, 1, 1, 1, 0, 5, 6], float)
    f = np.array([1, 3, 2, 4, 0, 2, 1, 1, 6, 5], float)
    y = np.array([1, 1, 0, 0, 1, 1, 0, 0, 0, 0], bool)
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    v = fc.judge(s, y, g, f, thresholds=base.Thresholds(n_resamples=1000, min_pairs=1))
    m = v.metrics["auc_minus_fluency"]
    assert m.n_resamples == 1000 and 10 < m.n_undefined < 80 and m.undefined_flag
    assert f"({m.undefined_share:.1%} resamples undefined)" in v.reason
    assert "CI caveat" in v.reason and f"auc_minus_fluency {m.n_undefined}/1000" in v.reason
    assert v.to_dict()["metrics"]["auc"]["n_undefined"] == v.metrics["auc"].n_undefined
    # no undefined resamples: no caveat
    c = make_candidates()
    v = fc.judge(c["planted"], c["has_behavior"], c["group"], c["fluency"], thresholds=TH)
    assert "CI caveat" not in v.reason


# ------------------------------------------------------------------------------ combine, types
def _v(outcome: str) -> base.Verdict:
    return base.Verdict("headroom", outcome, {"x": base.Metric(0.5)}, outcome)


@pytest.mark.parametrize("outcomes, expected", [
    (["pass", "pass"], "pass"), (["pass", "fail", "error"], "fail"), (["pass", "error"], "error"),
    (["skip", "skip"], "skip"), (["pass", "skip"], "error")])
def test_combine_passes_only_if_every_seed_passes(outcomes, expected):
    v = base.combine([_v(o) for o in outcomes], [f"seed{i}" for i in range(len(outcomes))])
    assert v.outcome == expected and set(v.metrics) == {f"seed{i}/x" for i in range(len(outcomes))}


def test_combine_units_carry_each_seed_and_draw():
    vs = [_v("pass"), _v("fail"), _v("pass")]
    units = [{"seed": 0, "draw": 0}, {"seed": 0, "draw": 1}, {"seed": 1, "draw": 0}]
    v = base.combine(vs, units=units)
    assert v.outcome == "fail"  # every-seed rule: one fail decides
    assert set(v.metrics) == {"seed0/draw0/x", "seed0/draw1/x", "seed1/draw0/x"}  # labels from the units
    assert [u["outcome"] for u in v.units] == ["pass", "fail", "pass"]
    assert v.units[1] == {"seed": 0, "draw": 1, "outcome": "fail", "reason": "fail",
                          "metrics": {"x": base.Metric(0.5).to_dict()}}
    d = json.loads(json.dumps(v.to_dict()))
    assert d["units"][2]["seed"] == 1 and d["units"][2]["metrics"]["x"]["value"] == 0.5
    assert "units" not in base.combine(vs).to_dict() and base.combine(vs).units == ()
    assert set(base.combine(vs, ["a", "b", "c"], units).metrics) == {"a/x", "b/x", "c/x"}
    with pytest.raises(ValueError, match="^units: 1 units for 3"):
        base.combine(vs, units=units[:1])
    with pytest.raises(ValueError, match="^units: keys"):
        base.combine(vs[:1], units=[{"outcome": 1}])


def test_with_unit_carries_one_unit_and_changes_nothing_else():
    v = base.Verdict("headroom", "fail", {"x": base.Metric(0.5, 0.4, 0.6)}, "why")
    u = base.with_unit(v, {"seed": 2, "draw": None})
    assert (u.check, u.outcome, u.metrics, u.reason) == (v.check, v.outcome, v.metrics, v.reason)
    assert u.units == ({"seed": 2, "draw": None, "outcome": "fail", "reason": "why",
                        "metrics": {"x": base.Metric(0.5, 0.4, 0.6).to_dict()}},)
    assert {k: x for k, x in u.to_dict().items() if k != "units"} == v.to_dict()
    with pytest.raises(ValueError, match="^units: keys"):
        base.with_unit(v, {"seed": 0, "metrics": {}})


def test_residual_auc_units_one_per_seed_and_draw():
    r = bootstrap.BootstrapResult(0.7, 0.55, 0.8, 0, 1000, 120, 0)
    low = bootstrap.BootstrapResult(0.6, 0.45, 0.7, 0, 1000, 120, 0)
    us = sdv.residual_auc_units([0, 0, 1], [0, 1, 0], [r, low, r], thresholds=TH)
    assert [(u["seed"], u["draw"], u["outcome"]) for u in us] == [(0, 0, "pass"), (0, 1, "fail"), (1, 0, "pass")]
    assert us[1]["reason"] == "residualized AUC 0.6000 (CI low 0.4500)"
    assert us[0]["metrics"]["residualized_auc"] == base.Metric.of(r).to_dict()


def test_combine_rejects_empty_and_mixed():
    with pytest.raises(ValueError, match="^verdicts:"):
        base.combine([])
    with pytest.raises(ValueError, match="^verdicts:"):
        base.combine([_v("pass"), base.Verdict("fluency_confound", "pass", {}, "")])


def test_verdict_and_metric_json_and_validation():
    v = base.Verdict("headroom", "pass", {"a": base.Metric(0.7, 0.6, 0.8, 882, 0), "b": base.Metric(float("nan"))},
                     "r")
    d = json.loads(json.dumps(v.to_dict()))
    assert d["metrics"]["a"] == {"value": 0.7, "ci_low": 0.6, "ci_high": 0.8, "n": 882, "seed": 0,
                                 "n_resamples": None, "n_undefined": None}
    r = bootstrap.BootstrapResult(0.7, 0.6, 0.8, 0, 5000, 882, 4)
    assert base.Metric.of(r).to_dict() == {"value": 0.7, "ci_low": 0.6, "ci_high": 0.8, "n": 882, "seed": 0,
                                           "n_resamples": 5000, "n_undefined": 4}
    assert d["metrics"]["b"]["value"] is None
    with pytest.raises(ValueError, match="^outcome:"):
        base.Verdict("headroom", "maybe", {}, "")


def test_thresholds_defaults_help_and_validation():
    th = base.Thresholds()
    assert (th.n_resamples, th.min_headroom, th.min_pairs, th.cosine_bar, th.draw_spearman) == (5000, 0.1, 100,
                                                                                                0.05, 0.5)
    assert (th.fluency_margin, th.target_margin) == (0.0, 0.0)
    helps = registry.thresholds_help()
    assert helps["fluency_margin"].startswith("fluency_confound: ") and "paired" in helps["fluency_margin"]
    assert helps["residual_auc_bar"].startswith("fluency_confound, seed_draw_variance: ")  # shared by two checks
    assert set(helps) == set(th.to_dict()) and all(helps.values())
    # every field's help has one home: a check module that owns it, or the field itself (shared thresholds)
    from dataclasses import fields
    owned = {k for s in registry.CHECKS.values() for k in s.thresholds}
    for f in fields(base.Thresholds):
        assert (f.name in owned) != bool(f.metadata.get("help")), f.name
    assert base.Thresholds.from_mapping({"min_pairs": 50}).min_pairs == 50
    with pytest.raises(ValueError, match="^bogus: unknown"):
        base.Thresholds.from_mapping({"bogus": 1})
    with pytest.raises(ValueError, match="^min_pairs:"):
        base.Thresholds(min_pairs=0)
    with pytest.raises(ValueError, match="^bootstrap_seed:"):
        base.Thresholds(bootstrap_seed=-1)
    with pytest.raises(ValueError, match="^unsaturated_low, unsaturated_high:"):
        base.Thresholds(unsaturated_low=0.9)


# ------------------------------------------------------------------ sketch seeds (issue 21 item 2)
def test_under_sketch_seeds_a_verdict_must_hold_under_each():
    c = make_candidates()
    args = (c["has_behavior"], c["group"], c["fluency"])
    good, bad = fc.judge(c["planted"], *args, thresholds=TH), fc.judge(c["random"], *args, thresholds=TH)
    unit = {"seed": 3, "draw": 1, "sketch_seed": 0}
    v = under_sketch_seeds([good, good], unit, [0, 1])
    assert v.outcome == "pass" and "under every one of 2 sketch seeds" in v.reason
    assert [(u["seed"], u["draw"], u["sketch_seed"], u["outcome"]) for u in v.units] == [(3, 1, 0, "pass"),
                                                                                         (3, 1, 1, "pass")]
    assert v.units[1]["metrics"]["auc"]["value"] == good.metrics["auc"].value
    v = under_sketch_seeds([good, bad], unit, [0, 1])
    assert v.outcome == "fail" and "moves with the sketch seed (pass under sketch seed 0, fail under sketch seed 1)" \
        in v.reason
    one = under_sketch_seeds([good], unit, [0])
    assert one.outcome == "pass" and one.metrics == good.metrics and one.units[0]["sketch_seed"] == 0
    unsup = base.Verdict("fluency_confound", "unsupported", {}, "no ranking can pass")
    v = under_sketch_seeds([unsup, unsup], unit, [0, 1])
    assert v.outcome == "unsupported" and len(v.units) == 2  # decided by labels alone: one unsupported unit
    with pytest.raises(ValueError, match="sketch seeds"):
        under_sketch_seeds([good], unit, [0, 1])


class _SketchSuite:
    """Just what the draw-level cells ask of a ``Suite``: three seeds x three draws of synthetic candidates, each
    scored by ``scorer(seed index, draw, sketch seed)``."""

    def __init__(self, scorer, sketch_seeds=(0, 1)):
        self.scorer, self.ks, self.thresholds, self.n_seeds = scorer, list(sketch_seeds), TH, 3
        self.fixtures = [type("F", (), {"seed": 10 + i})() for i in range(3)]

    def require_applicable(self, *a): pass

    def require_draw(self, *a): pass

    def require_training_target(self, *a): pass

    def sketch_seeds(self, i): return self.ks

    def unit(self, i, d=None): return {"seed": 10 + i, "draw": d, "sketch_seed": self.ks[0]}

    def draw(self, i, kind, d):
        return {**make_candidates(seed=100 * i + d), "seed": 10 + i}

    def draw_scores(self, est, i, kind, d, target_draw=None, sketch_seed=None, **kw):
        return self.scorer(i, d if target_draw is None else target_draw, sketch_seed, self.draw(i, kind, d))


def test_draw_level_cells_judge_every_sketch_seed_and_fail_a_verdict_that_moves():
    """The cells themselves (fluency_confound, seed_draw_variance): scores that carry the signal under sketch seed 0
    only pass under that seed alone and fail under two, and every unit names its sketch seed."""
    def scorer(i, d, k, c):
        return c["planted"] if k in (0, None) else c["random"]

    v = fc.cell(_SketchSuite(scorer, [0]), "x", 0, 1)
    assert v.outcome == "pass" and [u["sketch_seed"] for u in v.units] == [0]
    v = fc.cell(_SketchSuite(scorer), "x", 0, 1)
    assert v.outcome == "fail" and [u["sketch_seed"] for u in v.units] == [0, 1] and "sketch seed 1" in v.reason
    v = fc.cell(_SketchSuite(lambda i, d, k, c: c["planted"]), "x", 0, 1)
    assert v.outcome == "pass"
    v, _ = sdv.cell(_SketchSuite(lambda i, d, k, c: c["planted"]), "x", 3)
    assert v.outcome == "pass", v.reason
    assert len(v.units) == 18 and {u["sketch_seed"] for u in v.units} == {0, 1}
    assert "(seed, draw, sketch seed)" in v.reason and "variance_share_sketch" in v.metrics
    v, _ = sdv.cell(_SketchSuite(scorer), "x", 3)
    assert v.outcome == "fail" and "sketch seed 1" in v.reason


def test_target_dependence_cell_judges_each_draw_under_every_sketch_seed():
    """Check 7's draw half: one unit per (draw, sketch seed), the training half under the run's own sketch; a draw
    whose real-vs-placebo gap exists under sketch seed 0 only fails the seed."""
    run = make_run()

    class Suite(_SketchSuite):
        def training(self, i):
            return {"is_gt": run["is_gt"], "step": run["step"]}

        def training_scores(self, est, i, kind="in_context"):
            return run["planted"] if kind == "in_context" else run["random"]

        def estimator(self, est):
            return type("E", (), {"level": "rollout"})()

    def scorer(moves):
        def f(i, d, k, c, kind="in_context"):
            return c["planted"] if kind == "in_context" or (moves and k == 1) else c["random"]
        return f

    class Kinds(Suite):
        def draw_scores(self, est, i, kind, d, target_draw=None, sketch_seed=None, target_kind="in_context", **kw):
            return self.scorer(i, d, sketch_seed, self.draw(i, kind, d), target_kind)

    v = td.cell(Kinds(scorer(False)), "x", 0, 3)
    assert v.outcome == "pass", v.reason
    assert [(u["part"], u["draw"], u["sketch_seed"]) for u in v.units] == [("training", None, 0)] + [
        ("draw", d, k) for d in range(3) for k in (0, 1)]
    v = td.cell(Kinds(scorer(True)), "x", 0, 3)
    assert v.outcome == "fail" and "sketch_seed1" in v.reason
    assert [u["outcome"] for u in v.units if u["part"] == "draw"] == ["pass", "fail"] * 3


def test_an_empty_placebo_target_is_the_fixtures_error_not_the_estimators():
    """On a fixture where every sampled completion at a TracIn checkpoint holds the behavior, the no_behavior
    placebo is the zero vector there (bpe at W = 150, seeds 0 and 2, checkpoint 275): an estimator that reads the
    target's rows would score every rollout 0 and be blamed for it. The check reports the fixture instead."""
    from types import SimpleNamespace

    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.checks.target_dependence import cell
    from bt_bench.checklist.suite import FixtureUnsupported, Suite

    fx = SimpleNamespace(seed=7, training_targets=lambda kinds: {k: {75: np.ones(4), 275: np.zeros(4)} for k in kinds})
    suite = Suite(fixtures=[fx], failed_seeds=[], thresholds=Thresholds())
    with pytest.raises(FixtureUnsupported, match=r"seed 7: the no_behavior target is the zero vector at TracIn "
                                                 r"checkpoint\(s\) \[275\]"):
        cell(suite, "random", 0, 1)
    fx.training_targets = lambda kinds: {k: {75: np.ones(4), 275: np.full(4, 1e-3)} for k in kinds}
    suite.require_training_target(0, "no_behavior")  # a real placebo: nothing raised
