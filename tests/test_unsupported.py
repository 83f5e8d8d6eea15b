"""A unit no ranking can pass is "unsupported", for every estimator (docs/checklist.md, "The gate"; issue 19 item 6).

Where the comparison's ceiling is reached (e.g. fluency's within-group AUC is 1 in enough group resamples that the
paired difference AUC - AUC(fluency) has CI lower bound 0 even for the labels), the unit supports no verdict: not a
pass for anyone, not a fail for everyone. Just below the ceiling the perfect ranking (the oracle's score) passes and
the negative controls fail, so the rule cannot turn a check into one that nobody can fail. More than a third of a
check's units unsupported is an ERROR of the fixture.
"""

from __future__ import annotations

import numpy as np
import pytest

from bt_bench.checklist import base, bootstrap, gate
from bt_bench.checklist.checks import (
    advantage_baseline as ab,
    fluency_confound as fc,
    gradient_norm_baseline as gnb,
    headroom as hr,
)
from bt_bench.checklist.registry import key_figure
from bt_bench.checklist.result import CellResult
from bt_bench.report.table import cell_text, format_table

TH = base.Thresholds(n_resamples=1000)


def candidates(gap: float, n_groups: int = 60, G: int = 8, seed: int = 0, wrong_groups: int = 0) -> dict:
    """Candidates in groups of G, half with the behavior; fluency = gap * behavior + N(0, 1) noise. With
    ``wrong_groups`` > 0 fluency instead ranks every group perfectly except one flipped pair in each of the first
    ``wrong_groups`` groups (fluency's AUC just under 1 with a CI that reaches 1, as measured on tiny seed 2 draw 1)."""
    rng = np.random.default_rng(seed)
    n = n_groups * G
    group = np.repeat(np.arange(n_groups), G)
    beh = np.tile(np.arange(G) < G // 2, n_groups)
    fluency = gap * beh + rng.normal(0, 1, n)
    if wrong_groups:
        fluency = np.where(beh, 10.0, 0.0) + rng.uniform(0, 1, n)
        for g in range(wrong_groups):  # one behavior row below one non-behavior row of its group
            fluency[g * G] = -1.0
    return {"group": group, "has_behavior": beh, "fluency": fluency, "oracle": beh.astype(float),
            "random": rng.random(n), "fluency_like": fluency + rng.normal(0, 0.05, n),
            "norm_like": rng.uniform(0.5, 1.5, n) + 0.2 * beh}  # a target-free score, weakly informative


def fluency(c: dict, est: str, th: base.Thresholds = TH) -> base.Verdict:
    return fc.judge(c[est], c["has_behavior"], c["group"], c["fluency"], thresholds=th)


ALL = ("oracle", "random", "fluency_like", "norm_like")


# ------------------------------------------------------------------------------ the unit: at and below the ceiling
def test_fluency_at_the_ceiling_is_unsupported_for_every_score():
    c = candidates(gap=0.0, wrong_groups=0)
    c["fluency"] = np.where(c["has_behavior"], 10.0, 0.0) + np.random.default_rng(1).uniform(0, 1, len(c["group"]))
    for est in ALL:
        v = fluency(c, est)
        assert v.outcome == "unsupported", (est, v.reason)
        assert v.metrics["fluency_auc"].value == 1.0
        p = v.metrics["perfect_auc_minus_fluency"]  # what the labels get on the same paired bootstrap
        assert (p.value, p.ci_low, p.ci_high) == (0.0, 0.0, 0.0)
        assert v.reason.startswith("cannot support a verdict: no ranking can pass this unit")
        assert "auc" in v.metrics and "residualized_auc" in v.metrics  # the estimator's own figures are kept


def test_fluency_just_under_one_with_a_ci_reaching_one_is_unsupported():
    """The measured case: fluency's AUC 0.99, CI up to 1.0, so the paired difference's lower bound is 0 for anyone."""
    c = candidates(gap=0.0, wrong_groups=2)
    flu = bootstrap.auc_bootstrap(c["fluency"], c["has_behavior"], c["group"], **TH.bootstrap)
    assert 0.99 < flu.estimate < 1.0 and flu.ci_high == 1.0
    for est in ALL:
        v = fluency(c, est)
        assert v.outcome == "unsupported", (est, v.reason)
        assert v.metrics["perfect_auc_minus_fluency"].ci_low == pytest.approx(0.0)


def test_just_below_the_ceiling_the_oracle_passes_and_the_negative_controls_fail():
    c = candidates(gap=2.0)  # fluency's AUC ~0.92, CI well below 1: there is room to beat it
    flu = bootstrap.auc_bootstrap(c["fluency"], c["has_behavior"], c["group"], **TH.bootstrap)
    assert 0.85 < flu.estimate and flu.ci_high < 0.97
    v = fluency(c, "oracle")
    assert v.outcome == "pass", v.reason
    assert not any(k.startswith("perfect_") for k in v.metrics)  # a supported unit carries no perfect figure
    for est in ("random", "fluency_like", "norm_like"):
        assert fluency(c, est).outcome == "fail", est


def test_a_margin_no_ranking_can_clear_makes_the_unit_unsupported_not_failed():
    """The same rule for any threshold: a fluency_margin above what a perfect ranking reaches."""
    c = candidates(gap=2.0)
    th = base.Thresholds(n_resamples=1000, fluency_margin=0.2)  # the labels beat fluency by ~0.08
    assert {fluency(c, est, th).outcome for est in ALL} == {"unsupported"}


# ----------------------------------------------------------------------------- the other comparison-type checks
def run(seed: int = 0, T: int = 30, P: int = 8, G: int = 8, W: int = 15) -> dict:
    rng = np.random.default_rng(seed)
    n = T * P * G
    step = np.repeat(np.arange(T), P * G)
    nonzero = rng.random(n) < 0.3
    is_gt = nonzero & (rng.random(n) < np.where(step < W, 0.9 * (1 - step / W), 0.0))
    return {"step": step, "nonzero": nonzero, "is_gt": is_gt, "W": W, "oracle": is_gt.astype(float),
            "random": rng.random(n), "norm_like": nonzero * rng.uniform(0.5, 1.5, n) + 0.3 * is_gt}


def test_a_reference_that_is_itself_perfect_leaves_no_unit_to_judge():
    """gradient_norm_baseline against a norm that ranks GT perfectly, advantage_baseline against a perfect advantage:
    nobody can beat them, so the unit is unsupported for the oracle and the random score alike."""
    r = run()
    kw = {"W": r["W"], "nonzero": r["nonzero"], "thresholds": TH}
    for est in ("oracle", "random", "norm_like"):
        v = gnb.judge(r[est], r["is_gt"], r["step"], norm_scores=r["oracle"],
                                          norm_name="norm_only", **kw)
        assert v.outcome == "unsupported" and "perfect_precision_minus_norm" in v.metrics, (est, v.reason)
        v = ab.judge(r[est], r["oracle"], r["is_gt"], r["step"], rollout_level=True, **kw)
        assert v.outcome == "unsupported" and "perfect_precision_minus_advantage" in v.metrics, (est, v.reason)
    # against the real controls the perfect ranking has room: the oracle passes, the negative controls fail
    v = gnb.judge(r["oracle"], r["is_gt"], r["step"], norm_scores=r["norm_like"],
                                      norm_name="norm_only", **kw)
    assert v.outcome == "pass", v.reason
    for est in ("random", "norm_like"):
        assert gnb.judge(r[est], r["is_gt"], r["step"], norm_scores=r["norm_like"],
                                             norm_name="norm_only", **kw).outcome == "fail", est


def test_headroom_with_a_bar_no_ranking_can_clear_is_unsupported():
    r, c = run(), candidates(gap=1.0)
    unsat = {"unsat_has_behavior": c["has_behavior"], "unsat_group": c["group"], "W": r["W"], "nonzero": r["nonzero"]}
    for th, want in ((TH, {"oracle": "pass", "random": "fail"}),
                     (base.Thresholds(n_resamples=1000, auc_bar=1.0),
                      {"oracle": "unsupported", "random": "unsupported"})):
        for est, outcome in want.items():
            v = hr.judge(r[est], r["is_gt"], r["step"], unsat_scores=c[est], thresholds=th, **unsat)
            assert v.outcome == outcome, (est, v.reason)


# ------------------------------------------------------------------------------------------------- aggregation
def _v(outcome: str) -> base.Verdict:
    return base.Verdict("fluency_confound", outcome, {"x": base.Metric(0.5)}, outcome)


@pytest.mark.parametrize("outcomes, expected", [
    (["pass"] * 8 + ["unsupported"], "pass"),            # left out; the supported units decide
    (["pass"] * 6 + ["unsupported"] * 3, "pass"),        # exactly a third: still judged
    (["pass"] * 5 + ["unsupported"] * 4, "error"),       # more than a third: the fixture cannot support the check
    (["fail"] * 5 + ["unsupported"] * 4, "error"),       # ... for everyone, whatever the supported units show
    (["pass"] * 7 + ["fail", "unsupported"], "fail"),
    (["unsupported"], "error"),
    (["skip", "skip", "unsupported"], "error"),           # skipped units aside, as the gate leaves N/A aside
])
def test_combine_leaves_unsupported_units_out_up_to_a_third(outcomes, expected):
    v = base.combine([_v(o) for o in outcomes])
    assert v.outcome == expected, v.reason
    n = outcomes.count("unsupported")
    if expected == "error":
        assert "a fixture defect" in v.reason and f"({n} units cannot support a verdict" in v.reason
    else:
        assert f"({n} unsupported, left out)" in v.reason


def _result(outcome: str, seed: int, draw: int, est: str = "mine", expected: str | None = None) -> dict:
    pytest_outcome = {"pass": "passed", "fail": "failed", "unsupported": "skipped", "error": "error"}[outcome]
    m = {"check": "fluency_confound", "estimator": est, "info": {"seed": seed, "draw": draw}, "key_figure": outcome,
         "outcome": outcome, "reason": f"{outcome} here", "units": [], "figures": {}}
    if expected:
        m["expected"] = {"label": expected, "reason": "declared"}
    return {"nodeid": f"x::fluency_confound[{est}-seed{seed}-draw{draw}]", "outcome": pytest_outcome, "cell": m}


def _nine(n_unsupported: int, other: str = "pass", est: str = "mine") -> list[dict]:
    return [_result("unsupported" if i < n_unsupported else other, i // 3, i % 3, est) for i in range(9)][::-1]


def test_gate_counts_unsupported_units_in_the_cell_and_errors_above_a_third():
    (r,) = gate.checks(_nine(1)).values()
    assert (r.label, r.count) == (gate.PASS, "8/9, 1 unsupported")
    assert gate.estimator_gate("mine", {"fluency_confound": r}).ok
    (r,) = gate.checks(_nine(3, "fail")).values()
    assert (r.label, r.count) == (gate.FAIL, "6/9, 3 unsupported")
    (r,) = gate.checks(_nine(4)).values()
    assert (r.label, r.count) == (gate.ERROR, "4/9 unsupported (fixture)")
    assert r.reason.startswith("the fixture cannot support this check: 4/9 unsupported (fixture), more than a third")
    g = gate.estimator_gate("mine", {"fluency_confound": r})
    assert not g.ok and "fluency_confound ERROR 4/9 unsupported (fixture)" in g.line()
    assert gate.unit_label(_result("unsupported", 0, 0)) == gate.UNSUPPORTED
    # N/A units carry no weight in the share
    assert gate.aggregate([gate.PASS, gate.PASS, gate.UNSUPPORTED, gate.NA, gate.NA]) == gate.PASS
    assert gate.aggregate([gate.PASS, gate.UNSUPPORTED, gate.NA, gate.NA]) == gate.ERROR


def test_table_shows_and_counts_unsupported_units():
    assert cell_text(_nine(1)) == ("PASS 8/9, 1 unsupported", "pass")
    label, key = cell_text(_nine(4))
    assert label == "ERROR 4/9 unsupported (fixture)" and key == "unsupported"  # described by an unsupported unit
    rows = [dict(r, cell={**r["cell"], "expected": {"label": "PASS", "reason": "declared"}})
            for r in _nine(1, est="oracle")]
    assert cell_text(rows)[0] == "PASS 8/9, 1 unsupported (expected)"
    text = format_table(_nine(1) + _nine(1, "fail", est="random"))
    assert "units that cannot support a verdict" in text
    assert "fluency_confound seed0/draw0 (2 estimators)" in text
    assert "units that cannot" not in format_table(_nine(0))


def test_key_figure_of_an_unsupported_unit_names_the_perfect_ranking():
    c = candidates(gap=0.0, wrong_groups=2)
    fig = key_figure(CellResult.of(fluency(c, "random"), "random").to_dict())
    assert fig.startswith("unsupported: perfect auc_minus_fluency lo +0.000; AUC ")


def test_report_page_shows_unsupported_units(tmp_path):
    from bt_bench.report.html import render_html

    doc = {"schema": "bt-bench-report/1", "settings": {"profile": "tiny"}, "results": _nine(1), "gates": []}
    html = render_html(doc, tmp_path / "r.html").read_text()
    assert "PASS 8/9, 1 unsupported" in html and "— UNSUPPORTED" in html
