"""Each verdict function passes a planted signal and fails a random one (spec: checklist.md, "The checks").

The synthetic makers here are also used by tests/test_evidence.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from bt_bench import verdicts as V

TH = V.Thresholds(n_resamples=1000)


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
def test_gradient_norm_baseline_planted_passes_random_fails():
    r = make_run()
    v = V.gradient_norm_baseline(r["planted"], r["is_gt"], r["step"], norm_rollout=r["norm_only"],
                                 norm_step=r["norm_only_step"], **_run_kw(r))
    assert v.outcome == "pass", v.reason
    assert v.metrics["precision_minus_norm"].ci_low > 0 and v.metrics["precision"].seed == 0
    assert "norm_only" in v.reason and "window chance" in v.reason
    v = V.gradient_norm_baseline(r["random"], r["is_gt"], r["step"], norm_rollout=r["norm_only"],
                                 **_run_kw(r))
    assert v.outcome == "fail", v.reason


def test_gradient_norm_baseline_errors_without_window_gt():
    r = make_run()
    v = V.gradient_norm_baseline(r["planted"], r["is_gt"], r["step"], norm_step=r["norm_only_step"],
                                 W=1, nonzero=np.zeros_like(r["nonzero"]), thresholds=TH)
    assert v.outcome == "error" and "cannot support" in v.reason
    with pytest.raises(ValueError, match="norm_rollout, norm_step"):
        V.gradient_norm_baseline(r["planted"], r["is_gt"], r["step"], **_run_kw(r))
    with pytest.raises(ValueError, match="^is_gt: length 3 differs"):
        V.gradient_norm_baseline(r["planted"], [1, 0, 0], r["step"], norm_step=r["norm_only_step"], **_run_kw(r))


# ----------------------------------------------------------------------------------- 2. fluency
def test_fluency_confound_planted_passes_fluency_like_fails():
    c = make_candidates()
    args = (c["has_behavior"], c["group"], c["fluency"])
    v = V.fluency_confound(c["planted"], *args, thresholds=TH)
    assert v.outcome == "pass", v.reason
    assert v.metrics["auc"].value > v.metrics["fluency_auc"].value
    v = V.fluency_confound(c["fluency_like"], *args, thresholds=TH)
    assert v.outcome == "fail", v.reason
    assert V.fluency_confound(c["random"], *args, thresholds=TH).outcome == "fail"


def test_fluency_confound_too_few_pairs_is_error():
    c = make_candidates(n_groups=3)
    v = V.fluency_confound(c["planted"], c["has_behavior"], c["group"], c["fluency"], thresholds=TH)
    assert v.outcome == "error" and "min_pairs=100" in v.reason


# ---------------------------------------------------------------------------------- 3. headroom
def test_headroom_planted_passes_random_fails():
    r, c = make_run(), make_candidates(rate=0.4)
    unsat = {"unsat_has_behavior": c["has_behavior"], "unsat_group": c["group"]}
    v = V.headroom(r["planted"], r["is_gt"], r["step"], unsat_scores=c["planted"], **unsat, **_run_kw(r))
    assert v.outcome == "pass", v.reason
    assert v.metrics["window_headroom"].value >= 0.10
    v = V.headroom(r["random"], r["is_gt"], r["step"], unsat_scores=c["random"], **unsat, **_run_kw(r))
    assert v.outcome == "fail", v.reason


def test_headroom_errors_when_fixture_cannot_support():
    r = make_run()
    # every window step has the same GT density -> ceiling == chance -> headroom 0
    flat_gt = (np.arange(len(r["step"])) % 4 == 0)
    v = V.headroom(r["planted"], flat_gt, r["step"], W=r["W"], nonzero=np.ones_like(r["nonzero"]),
                   thresholds=TH)
    assert v.outcome == "error" and "headroom 0.0000" in v.reason
    v = V.headroom(r["planted"], r["is_gt"], r["step"], **_run_kw(r))
    assert v.outcome == "error" and "no unsaturated checkpoint" in v.reason


# ------------------------------------------------------------------------- 4. seed/draw variance
def _cells(low):
    seed, draw = np.repeat([0, 1, 2], 3), np.tile([0, 1, 2], 3)
    auc = np.array([0.70, 0.72, 0.71, 0.60, 0.61, 0.62, 0.66, 0.65, 0.67])
    return seed, draw, auc, np.asarray(low, float)


def test_seed_draw_variance_pass_flip_unstable_and_error():
    seed, draw, auc, low = _cells(np.full(9, 0.55))
    stab = {"stability_seed": [0, 1, 2], "stability_spearman": [0.8, 0.7, 0.9], "thresholds": TH}
    v = V.seed_draw_variance(seed, draw, auc, low, **stab)
    assert v.outcome == "pass", v.reason
    share = v.metrics["variance_share_seed"].value
    assert share > 0.9 and share + v.metrics["variance_share_draw"].value == pytest.approx(1.0)
    low_flip = low.copy()
    low_flip[4] = 0.49
    v = V.seed_draw_variance(seed, draw, auc, low_flip, **stab)
    assert v.outcome == "fail" and "seed 1 draw 1" in v.reason
    v = V.seed_draw_variance(seed, draw, auc, low, **(stab | {"stability_spearman": [0.8, 0.3, 0.9]}))
    assert v.outcome == "fail" and "0.3000" in v.reason
    keep = seed < 2
    v = V.seed_draw_variance(seed[keep], draw[keep], auc[keep], low[keep], **stab)
    assert v.outcome == "error" and "3 seeds x 3 draws" in v.reason


# ----------------------------------------------------------------------- 5. trigger-token alignment
def test_trigger_token_alignment_planted_passes_removed_fails():
    t = make_token_level(aligned=True)
    v = V.trigger_token_alignment(t["in_context"], t["placebo"], cosine_scale=True,
                                  constructed=t["constructed"], thresholds=TH)
    assert v.outcome == "pass", v.reason
    assert {"in_context_mean", "in_context_minus_placebo", "constructed_mean"} <= set(v.metrics)
    t = make_token_level(aligned=False)
    v = V.trigger_token_alignment(t["in_context"], t["placebo"], cosine_scale=True, thresholds=TH)
    assert v.outcome == "fail", v.reason


def test_trigger_token_alignment_skips_and_never_passes_without_placebo():
    assert V.trigger_token_alignment(None, None, cosine_scale=True).outcome == "skip"
    t = make_token_level(aligned=True)
    v = V.trigger_token_alignment(t["in_context"], None, cosine_scale=True, thresholds=TH)
    assert v.outcome == "skip" and "no placebo" in v.reason
    t = make_token_level(aligned=False)
    v = V.trigger_token_alignment(t["in_context"], None, cosine_scale=True, thresholds=TH)
    assert v.outcome == "fail"
    # clustered by response: rows are behavior occurrences of 20 responses
    t = make_token_level(aligned=True)
    v = V.trigger_token_alignment(t["in_context"], t["placebo"], cosine_scale=False,
                                  response=np.repeat(np.arange(20), 4), thresholds=TH)
    assert v.outcome == "pass" and "in_context_mean" not in v.metrics
    with pytest.raises(ValueError, match="^placebo: length 3 differs"):
        V.trigger_token_alignment(t["in_context"], t["placebo"][:3], cosine_scale=True)


# -------------------------------------------------------------------------------- 6. advantage
def test_advantage_baseline_planted_passes_advantage_tracker_fails():
    r = make_run()
    v = V.advantage_baseline(r["planted"], r["advantage"], r["is_gt"], r["step"], rollout_level=True,
                             **_run_kw(r))
    assert v.outcome == "pass", v.reason
    tracker = r["advantage"] + np.random.default_rng(1).normal(0, 1e-3, len(r["step"]))
    v = V.advantage_baseline(tracker, r["advantage"], r["is_gt"], r["step"], rollout_level=True, **_run_kw(r))
    assert v.outcome == "fail", v.reason
    v = V.advantage_baseline(r["norm_only_step"], r["advantage"], r["is_gt"], r["step"], rollout_level=False,
                             **_run_kw(r))
    assert v.outcome == "skip"


# ------------------------------------------------------------------------------ combine, types
def _v(outcome: str) -> V.Verdict:
    return V.Verdict("headroom", outcome, {"x": V.Metric(0.5)}, outcome)


@pytest.mark.parametrize("outcomes, expected", [
    (["pass", "pass"], "pass"), (["pass", "fail", "error"], "fail"), (["pass", "error"], "error"),
    (["skip", "skip"], "skip"), (["pass", "skip"], "error")])
def test_combine_passes_only_if_every_seed_passes(outcomes, expected):
    v = V.combine([_v(o) for o in outcomes], [f"seed{i}" for i in range(len(outcomes))])
    assert v.outcome == expected and set(v.metrics) == {f"seed{i}/x" for i in range(len(outcomes))}


def test_combine_rejects_empty_and_mixed():
    with pytest.raises(ValueError, match="^verdicts:"):
        V.combine([])
    with pytest.raises(ValueError, match="^verdicts:"):
        V.combine([_v("pass"), V.Verdict("fluency_confound", "pass", {}, "")])


def test_verdict_and_metric_json_and_validation():
    v = V.Verdict("headroom", "pass", {"a": V.Metric(0.7, 0.6, 0.8, 882, 0), "b": V.Metric(float("nan"))}, "r")
    d = json.loads(json.dumps(v.to_dict()))
    assert d["metrics"]["a"] == {"value": 0.7, "ci_low": 0.6, "ci_high": 0.8, "n": 882, "seed": 0}
    assert d["metrics"]["b"]["value"] is None
    with pytest.raises(ValueError, match="^outcome:"):
        V.Verdict("headroom", "maybe", {}, "")


def test_thresholds_defaults_help_and_validation():
    th = V.Thresholds()
    assert (th.n_resamples, th.min_headroom, th.min_pairs, th.cosine_bar, th.draw_spearman) == (5000, 0.1, 100,
                                                                                                0.05, 0.5)
    assert set(V.Thresholds.help()) == set(th.to_dict()) and all(V.Thresholds.help().values())
    assert V.Thresholds.from_mapping({"min_pairs": 50}).min_pairs == 50
    with pytest.raises(ValueError, match="^bogus: unknown"):
        V.Thresholds.from_mapping({"bogus": 1})
    with pytest.raises(ValueError, match="^min_pairs:"):
        V.Thresholds(min_pairs=0)
    with pytest.raises(ValueError, match="^bootstrap_seed:"):
        V.Thresholds(bootstrap_seed=-1)
    with pytest.raises(ValueError, match="^unsaturated_low, unsaturated_high:"):
        V.Thresholds(unsaturated_low=0.9)
