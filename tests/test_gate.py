"""The gate (docs/checklist.md, "The gate"; bt_bench.checklist.gate): unit labels, the every-seed rule, the estimator gate,
the strict expected-outcome snapshot both ways, modified thresholds shown and refused by --bt-paper-gate, and the
exit code of `pytest checks` for an estimator that never scores. Plugin paths run in pytester subprocesses with
synthetic verdicts (no fixture is built)."""

from __future__ import annotations

import json

import pytest

from bt_bench.checklist import gate
def _cell(check: str, est: str, outcome: str, reason: str, na: bool = False) -> dict:
    """A recorded cell (bt_bench.checklist.result.CellResult.to_dict()) without units."""
    return {"check": check, "estimator": est, "outcome": outcome, "na": na, "reason": reason, "units": [],
            "figures": {}}


def _r(outcome: str, verdict: str | None = None, na: bool = False, check: str = "headroom", est: str = "mine"):
    if verdict is None:  # nothing recorded: a crash before the cell recorded anything
        return {"nodeid": f"x::{check}[{est}]", "outcome": outcome, "metrics": {"check": check, "estimator": est}}
    return {"nodeid": f"x::{check}[{est}]", "outcome": outcome, "cell": _cell(check, est, verdict, f"{verdict} here",
                                                                              na)}


def test_unit_labels():
    assert gate.unit_label(_r("passed", "pass")) == gate.PASS
    assert gate.unit_label(_r("xpass", "pass")) == gate.PASS
    assert gate.unit_label(_r("failed", "fail")) == gate.FAIL
    assert gate.unit_label(_r("xfail", "fail")) == gate.FAIL
    assert gate.unit_label(_r("error", "error")) == gate.ERROR
    assert gate.unit_label(_r("skipped", "skip", na=True)) == gate.NA
    assert gate.unit_label(_r("skipped", "skip")) == gate.NOT_JUDGED  # a run-time skip is not judged
    assert gate.unit_label(_r("failed", "pass")) == gate.ERROR  # a pass whose test still failed is no pass


def test_one_failing_seed_makes_the_check_fail():
    rs = [_r("xpass", "pass"), _r("xfail", "fail"), _r("xpass", "pass")]
    (res,) = gate.checks(rs).values()
    assert res.label == gate.FAIL and res.count == "1/3"
    assert gate.aggregate([gate.PASS, gate.NOT_JUDGED]) == gate.NOT_JUDGED
    assert gate.aggregate([gate.PASS, gate.ERROR, gate.FAIL]) == gate.FAIL
    assert gate.aggregate([gate.NA, gate.NA]) == gate.NA


def test_estimator_gate():
    def checks(*labels):
        return {f"c{i}": gate.CheckResult("e", f"c{i}", lab, (lab,), ()) for i, lab in enumerate(labels)}

    assert gate.estimator_gate("e", checks(gate.PASS, gate.NA)).ok
    assert not gate.estimator_gate("e", checks(gate.PASS, gate.NOT_JUDGED)).ok
    assert not gate.estimator_gate("e", checks(gate.NA, gate.NA)).ok  # all N/A: nothing was judged
    assert not gate.estimator_gate("e", checks(gate.NOT_JUDGED)).ok
    g = gate.estimator_gate("e", checks(gate.PASS, gate.FAIL), modified_thresholds=True)
    assert not g.ok and "GATE FAIL" in g.line() and "with modified thresholds" in g.line() and "c1 FAIL" in g.line()


def test_a_failed_fixture_self_check_fails_every_gate():
    """Only a fixture self-check (no estimator) that failed or raised counts; it fails a passing gate and an
    as-expected one, and leads their lines. Control: passing or skipped self-checks and failed estimator cells
    leave the gates alone."""
    res = [{"nodeid": "checks/test_sketch_ranking.py::test_sketch_ranking", "outcome": "failed",
            "metrics": {"check": "sketch_ranking"}},
           {"nodeid": "checks/test_integrity.py::test_integrity", "outcome": "error", "metrics": {}},
           {"nodeid": "checks/test_planted_cause.py::test_planted_cause", "outcome": "passed", "metrics": {}},
           {"nodeid": "checks/test_replay_fidelity.py::test_replay_fidelity", "outcome": "skipped", "metrics": {}},
           {"nodeid": "checks/test_headroom.py::test_headroom[mine-seed0-draw0]", "outcome": "failed",
            "cell": {"check": "headroom", "estimator": "mine"}}]
    fx = gate.fixture_problems(res)
    assert fx == ("fixture self-check sketch_ranking FAILED", "fixture self-check integrity ERROR")
    assert gate.fixture_problems([r for r in res if r["outcome"] != "failed" and r["outcome"] != "error"]) == ()
    ok = {"c": gate.CheckResult("e", "c", gate.PASS, (gate.PASS,), ())}
    for g in (gate.estimator_gate("e", ok), gate.expectation_gate("e", ok, {"c": (gate.PASS, "why")})):
        assert g.ok and gate.with_fixture(g, ()) == g
        f = gate.with_fixture(g, fx)
        assert not f.ok and f.fixture == fx and f.problems[:2] == fx
        assert f.line().startswith("e: FIXTURE FAILED, NOT JUDGED: fixture self-check sketch_ranking FAILED")


def _cr(est: str, check: str, label: str) -> gate.CheckResult:
    return gate.CheckResult(est, check, label, (label,) if label != gate.INCOMPLETE else (), ())


def _canary_cells(oracle: dict, random: dict) -> dict:
    return {e: {c: _cr(e, c, lab) for c, lab in cells.items()} for e, cells in (("oracle", oracle), ("random", random))}


def test_the_oracle_canary_passes_only_when_the_oracle_passes_and_random_fails():
    """docs/checklist.md, "Fixture self-checks" (oracle canary): the oracle is judged as any user's estimator, so an
    ERROR of the fixture in one check (tiny's retrieval_baseline) fails the canary, and so does a random ranking that
    passes. LDS is left out, and so is a check a test selection left INCOMPLETE."""
    good = _canary_cells({"headroom": gate.PASS, "retrieval_baseline": gate.PASS, "trigger_token_alignment": gate.NA},
                         {"headroom": gate.FAIL, "retrieval_baseline": gate.FAIL})
    ok, problems, lines = gate.canary(good)
    assert ok and not problems and lines == {"oracle": "oracle: GATE PASS", "random": lines["random"]}
    assert lines["random"].startswith("random: GATE FAIL")
    # negative controls: a fixture ERROR in one of the oracle's checks; a control that passes everything
    bad = _canary_cells({"headroom": gate.PASS, "retrieval_baseline": gate.ERROR}, {"headroom": gate.FAIL})
    ok, problems, _ = gate.canary(bad)
    assert not ok and len(problems) == 1 and "perfect attribution cannot pass" in problems[0]
    assert "retrieval_baseline ERROR" in problems[0]
    ok, problems, _ = gate.canary(_canary_cells({"headroom": gate.PASS}, {"headroom": gate.PASS}))
    assert not ok and problems == ("a ranking that attributes nothing passes: random: GATE PASS",)
    # what it leaves out: LDS (the GT indicator is no LDS ceiling) and INCOMPLETE cells
    lds = _canary_cells({"headroom": gate.PASS, "linear_datamodeling": gate.FAIL, "fluency_confound": gate.INCOMPLETE},
                        {"headroom": gate.FAIL})
    assert gate.canary(lds, excluded=("linear_datamodeling",))[0] and not gate.canary(lds)[0]
    from bt_bench.checklist.registry import CHECKS

    assert [n for n, s in CHECKS.items() if not s.canary] == ["linear_datamodeling"]  # what the session leaves out
    # nothing to judge: no canary estimator scored, or only INCOMPLETE cells (a selection of self-checks)
    assert gate.canary({"mine": {"headroom": _cr("mine", "headroom", gate.PASS)}}) is None
    assert gate.canary(_canary_cells({"headroom": gate.INCOMPLETE}, {"headroom": gate.INCOMPLETE})) is None
    # a selection that keeps another estimator's verdicts but drops the canary's (e.g. -k mine) fails the canary
    dropped = _canary_cells({"headroom": gate.PASS, "fluency_confound": gate.INCOMPLETE},
                            {"headroom": gate.FAIL, "fluency_confound": gate.INCOMPLETE})
    assert gate.canary(dropped, required=["headroom"])[0]
    ok, problems, _ = gate.canary(dropped, required=["headroom", "fluency_confound"])
    assert not ok and problems[0].startswith("oracle has no verdict on fluency_confound (deselected or lost)")
    none = _canary_cells({"headroom": gate.INCOMPLETE}, {"headroom": gate.INCOMPLETE})
    assert not gate.canary(none, required=["headroom"])[0]  # nothing of the canary ran, the user's cells did
    # one of the two not scored at all is a problem, not a pass
    assert gate.canary(_canary_cells({"headroom": gate.PASS}, {}))[1] == (
        "random was not scored on any check the canary judges",)


def test_a_failed_canary_is_a_failed_fixture_self_check_that_names_the_cells():
    """The canary's record reads like any self-check's: fixture_problems names it with the failing cells, and it
    fails every gate (with_fixture), a GATE PASS of a user's estimator included; a passing canary fails none."""
    bad = gate.canary(_canary_cells({"headroom": gate.PASS, "retrieval_baseline": gate.ERROR}, {"headroom": gate.FAIL}))
    rec = gate.canary_record(bad)
    assert gate.cell_of(rec) == (gate.CANARY, gate.FIXTURE) and rec["outcome"] == "failed"
    (line,) = gate.fixture_problems([rec])
    assert line.startswith("fixture self-check oracle_canary FAILED (perfect attribution cannot pass: oracle: GATE "
                           "FAIL: retrieval_baseline ERROR")
    mine = gate.estimator_gate("mine", {"headroom": _cr("mine", "headroom", gate.PASS)})
    assert mine.ok and not gate.with_fixture(mine, (line,)).ok
    good = gate.canary_record(gate.canary(_canary_cells({"headroom": gate.PASS}, {"headroom": gate.FAIL})))
    assert good["outcome"] == "passed" and gate.fixture_problems([good]) == ()
    assert "oracle: GATE PASS" in good["metrics"]["key_figure"]


def test_expectation_gate_both_ways():
    res = {"c": gate.CheckResult("b", "c", gate.PASS, (gate.PASS,), ())}
    assert gate.expectation_gate("b", res, {"c": (gate.PASS, "why")}).ok
    up = gate.expectation_gate("b", res, {"c": (gate.FAIL, "paper")})  # declared FAIL, now passes
    assert not up.ok and "expected FAIL, got PASS" in up.line()
    down = gate.expectation_gate("b", {"c": gate.CheckResult("b", "c", gate.FAIL, (gate.FAIL,), ())},
                                 {"c": (gate.PASS, "why")})
    assert not down.ok and "expected PASS, got FAIL" in down.line()
    assert not gate.expectation_gate("b", res, {}).ok  # an undeclared check of a built-in deviates too


def test_pass_or_fail_is_as_declared_for_pass_and_fail_only():
    """A built-in's cell measured PASS on one machine and FAIL on another is declared gate.PASS_OR_FAIL: either of
    the two is as declared, any other label deviates; every other declaration matches itself only."""
    for label, ok in ((gate.PASS, True), (gate.FAIL, True), (gate.ERROR, False), (gate.NA, False)):
        assert gate.as_declared(label, gate.PASS_OR_FAIL) is ok, label
        r = {"c": gate.CheckResult("b", "c", label, (label,), ())}
        assert gate.expectation_gate("b", r, {"c": (gate.PASS_OR_FAIL, "machine")}).ok is ok, label
    assert not gate.as_declared(gate.INCOMPLETE, gate.PASS_OR_FAIL) and not gate.as_declared(None, gate.PASS_OR_FAIL)
    assert not gate.as_declared(gate.FAIL, gate.PASS) and not gate.as_declared(gate.PASS, gate.FAIL)
    assert not gate.as_declared(gate.PASS_OR_FAIL, gate.PASS)  # a measured label is never the declaration itself


def test_glue_expects_the_declared_outcome_from_the_stash():
    """The glue reads the session's profile and --bt-strict from config.stash[GLUE_KEY] (the plugin stores them);
    without them, under --bt-strict, or for a user's estimator no outcome is expected."""
    from types import SimpleNamespace

    from bt_bench.checklist.expectations import expected_for
    from bt_bench.plugin import glue

    class NoFixture(pytest.FixtureLookupError):
        def __init__(self):  # what request.getfixturevalue raises outside a bt-bench session
            Exception.__init__(self, "no bt_settings fixture")

    def no_fixture(name):
        raise NoFixture()

    def request(settings):
        stash = pytest.Stash()
        if settings is not None:
            stash[glue.GLUE_KEY] = settings
        return SimpleNamespace(config=SimpleNamespace(stash=stash), getfixturevalue=no_fixture)

    label, reason = expected_for("tiny", "random")["headroom"]
    assert glue._expected(request({"profile": "tiny", "strict": False}), "random", "headroom") == {
        "label": label, "reason": reason}
    assert glue._expected(request({"profile": "tiny", "strict": True}), "random", "headroom") is None
    assert glue._expected(request({"profile": "tiny", "strict": False}), "pkg.mod:Mine", "headroom") is None
    assert glue._expected(request(None), "random", "headroom") is None


# ------------------------------------------------------------------------------------- the expected grid
ROLLOUT = {"level": "rollout", "capabilities": ["checkpoint_sketches", "token_sketches"]}


def _full(grid, est: str, drop=()) -> list[dict]:
    """A passing result for every unit of ``est`` in ``grid`` except those in ``drop`` ((check, seed, draw))."""
    return [{"nodeid": f"checks/test_{u.check}.py::{u.test_name}", "outcome": "passed",
             "cell": _cell(u.check, est, "pass", "ok")}
            for u in grid.units if u.estimator == est and (u.check, u.seed, u.draw) not in drop]


def test_expected_grid_comes_from_the_registry():
    from bt_bench.checklist.grid import Grid
    from bt_bench.checklist.registry import CHECKS

    per_unit = {"seed": 3, "seed_draw": 9, "all": 1}
    g = Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=3, ran_draws=3)
    assert g.expected() == {("mine", n): per_unit[s.unit] for n, s in CHECKS.items()}
    assert sum(g.expected().values()) == 40
    # N/A by declaration has no units: step level (draw checks, advantage_baseline), no token capability
    step = Grid.of({"st": {"level": "step", "capabilities": ["grad_norm"]}}, seeds=3, draws=3, ran_seeds=3,
                   ran_draws=3).expected()
    assert set(step) == {("st", c) for c in ("gradient_norm_baseline", "headroom", "target_dependence",
                                              "counterfactual_removal", "linear_datamodeling")}
    none = Grid.of({"a": {"level": "rollout", "capabilities": []}, "m": {"level": "rollout", "capabilities":
                    ["model"]}, "x": None}, seeds=3, draws=3, ran_seeds=3, ran_draws=3).expected()
    assert ("a", "trigger_token_alignment") not in none and none[("m", "trigger_token_alignment")] == 3
    assert len([k for k in none if k[0] == "x"]) == len(CHECKS)  # an unreadable declaration excludes nothing
    # more seeds than the default: all of them; fewer: the default's
    assert Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=5, ran_draws=3).expected()[
        ("mine", "fluency_confound")] == 15
    assert Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=1, ran_draws=1).expected()[
        ("mine", "fluency_confound")] == 9


def test_a_new_check_is_in_the_grid_without_a_second_list(monkeypatch):
    import dataclasses

    from bt_bench.checklist import registry
    from bt_bench.checklist.grid import Grid

    monkeypatch.setitem(registry.CHECKS, "new_check", dataclasses.replace(registry.CHECKS["headroom"],
                                                                          name="new_check", order=99))
    g = Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=3, ran_draws=3)
    assert g.expected()[("mine", "new_check")] == 9


def test_not_applicable_is_the_suites_rule():
    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.registry import not_applicable
    from bt_bench.checklist.suite import NotApplicable, Suite

    suite = Suite(fixtures=[], failed_seeds=[], thresholds=Thresholds())
    with pytest.raises(NotApplicable) as e:
        suite.require_applicable("fluency_confound", "norm_only_step")
    assert str(e.value) == not_applicable("fluency_confound", "norm_only_step", "step", ["grad_norm"])
    with pytest.raises(NotApplicable, match="neither 'token_sketches' nor 'model'"):
        suite.require_applicable("trigger_token_alignment", "random")
    suite.require_applicable("trigger_token_alignment", "gas")  # declares token_sketches: takes part
    assert not_applicable("headroom", "x", "step", []) is None


def test_unit_of_reads_the_node_id():
    from bt_bench.checklist.grid import Unit, unit_of

    def r(nodeid, est):
        return {"nodeid": nodeid, "cell": {"estimator": est}}

    assert unit_of(r("checks/test_headroom.py::test_headroom[gas-seed2-draw1]", "gas")) == Unit("gas", "headroom", 2, 1)
    assert unit_of(r("c/test_target_dependence.py::test_target_dependence[a-seed1-x-seed0]", "a-seed1-x")) == Unit(
        "a-seed1-x", "target_dependence", 0, None)
    assert unit_of(r("c/test_seed_draw_variance.py::test_seed_draw_variance[pkg.m:Cls]", "pkg.m:Cls")) == Unit(
        "pkg.m:Cls", "seed_draw_variance")
    assert unit_of(r("c/test_headroom.py::test_headroom[gas0-seed0-draw0]", "gas")) is None  # not its id
    assert unit_of({"nodeid": "checks/test_fixture_integrity.py::test_integrity", "metrics": {}}) is None


def test_a_missing_unit_makes_the_check_incomplete_and_fails_the_gate():
    from bt_bench.checklist.grid import Grid

    g = Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=3, ran_draws=3)
    full = _full(g, "mine")
    assert g.missing(full) == []  # positive control: the whole grid
    cs = gate.checks(full, g.to_dict([]))
    assert {r.label for r in cs.values()} == {gate.PASS}
    assert gate.estimator_gate("mine", {c: r for (_, c), r in cs.items()}).ok

    part = _full(g, "mine", drop={("fluency_confound", 2, 1)})
    miss = g.missing(part)
    assert miss == [{"estimator": "mine", "check": "fluency_confound", "seed": 2, "draw": 1, "why": "not run",
                     "nodeid": "checks/test_fluency_confound.py::test_fluency_confound[mine-seed2-draw1]"}]
    assert {r.label for r in gate.checks(part).values()} == {gate.PASS}  # what it was: "PASS 8/8"
    cs = gate.checks(part, g.to_dict(miss))
    flu = cs[("mine", "fluency_confound")]
    assert flu.label == gate.INCOMPLETE and flu.count == "1/9 missing" and flu.ran == "PASS 8/8"
    assert "not run: test_fluency_confound[mine-seed2-draw1]" in flu.reason
    g_line = gate.estimator_gate("mine", {c: r for (_, c), r in cs.items()})
    assert not g_line.ok and "fluency_confound INCOMPLETE 1/9 missing" in g_line.line()

    # a whole check left out (-k "not fluency_confound"): INCOMPLETE although none of its units ran
    nok = [r for r in full if r["cell"]["check"] != "fluency_confound"]
    cs = gate.checks(nok, g.to_dict(g.missing(nok)))
    assert cs[("mine", "fluency_confound")].label == gate.INCOMPLETE
    assert cs[("mine", "fluency_confound")].count == "9/9 missing"
    # an estimator none of whose units ran is still gated
    assert {r.label for (e, _), r in gate.checks([], g.to_dict(g.missing([]))).items() if e == "mine"} == {
        gate.INCOMPLETE}


def test_a_unit_without_a_verdict_or_judged_on_fewer_seeds_is_missing():
    from bt_bench.checklist.grid import Grid

    g = Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=3, ran_draws=3)
    crashed = _full(g, "mine")
    crashed[0] = {"nodeid": crashed[0]["nodeid"], "outcome": "error", "metrics": {}}  # crashed before recording
    (m,) = g.missing(crashed)
    assert m["why"] == "ran without a verdict (error)"
    # --bt-seeds 1: seeds 1 and 2 are not run, and the one all-seeds cell was judged on one seed only
    one = Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=1, ran_draws=3)
    ran = [r for r in _full(one, "mine") if "seed1" not in r["nodeid"] and "seed2" not in r["nodeid"]]
    whys = {(m["check"], m["why"]) for m in one.missing(ran)}
    assert ("seed_draw_variance", "judged on 1 of 3 seeds (--bt-seeds 1)") in whys
    assert ("headroom", "not run") in whys and ("gradient_norm_baseline", "not run") in whys
    # --bt-draws 2: a per-seed cell that pools the draws is incomplete too
    two = Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=3, ran_draws=2)
    whys = {(m["check"], m["why"]) for m in two.missing(_full(two, "mine"))}
    assert ("target_dependence", "judged on 2 of 3 draws (--bt-draws 2)") in whys
    assert not any(c == "gradient_norm_baseline" for c, _ in whys)  # its cell takes no draws


def test_a_missing_unit_of_a_builtin_deviates_from_its_declared_outcome():
    from bt_bench.checklist.grid import Grid

    g = Grid.of({"b": ROLLOUT}, seeds=3, draws=3, ran_seeds=3, ran_draws=3)
    rs = _full(g, "b", drop={("fluency_confound", 2, 1)})
    for r in rs:  # every unit it ran fails, as declared
        if r["cell"]["check"] == "fluency_confound":
            r["outcome"], r["cell"]["outcome"] = "xfail", "fail"
    cs = {c: r for (_, c), r in gate.checks(rs, g.to_dict(g.missing(rs))).items()}
    declared = {c: (gate.PASS, "why") for c in cs} | {"fluency_confound": (gate.FAIL, "paper")}
    dev = gate.expectation_gate("b", cs, declared)
    assert not dev.ok and "fluency_confound expected FAIL, got INCOMPLETE 1/9 missing" in dev.line()
    assert gate.expectation_gate("b", {c: r for (_, c), r in gate.checks(rs).items()}, declared).ok  # before


def test_table_shows_incomplete_with_the_count():
    from bt_bench.checklist.grid import Grid
    from bt_bench.report.table import format_table

    g = Grid.of({"mine": ROLLOUT}, seeds=3, draws=3, ran_seeds=3, ran_draws=3)
    rs = [r for r in _full(g, "mine", drop={("fluency_confound", 2, 1)}) if r["cell"]["check"] != "headroom"]
    out = format_table(rs, width=120, completeness=g.to_dict(g.missing(rs)))
    assert "INCOMPLETE 1/9 missing" in out and "ran: PASS 8/8" in out
    assert "INCOMPLETE 9/9 missing" in out and "none ran" in out and "2 INCOMPLETE" in out


# ------------------------------------------------------------------------------------- plugin (pytester)
CELLS = '''
import pytest
from bt_bench.checklist.base import Verdict
from bt_bench.checklist.suite import NotApplicable, SkipCell
from bt_bench.plugin.glue import cell, run_cell

OUT = {OUT}

def judge(est, check, seed):
    o = OUT.get(est, {{}}).get(check, "fail")
    if isinstance(o, list):
        o = o[seed]
    if o == "skip":
        raise SkipCell("this data provides no model loader")
    if o == "na":
        raise NotApplicable("declares no token_sketches")
    return Verdict(check, o, {{}}, "synthetic " + o)

@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("check", ["headroom", "trigger_token_alignment"])
def test_cell(bt_estimator, check, seed, request):
    v = cell(request, check, bt_estimator, judge, bt_estimator, check, seed)
    run_cell(request, check, bt_estimator, v, seed=seed)
'''


def _cells(pytester, out: dict, conftest: str = "") -> None:
    pytester.makepyfile(test_cells=CELLS.format(OUT=repr(out)))
    if conftest:
        pytester.makeconftest(conftest)


def test_all_skip_exits_1(pytester, tmp_path):
    """An estimator that never scores (every cell NOT JUDGED, e.g. the `model` capability no fixture provides)."""
    # a dotted path is a user's estimator (no expectations), whatever class it names
    _cells(pytester, {"estimators.controls:RandomEstimator": {"headroom": "skip", "trigger_token_alignment": "skip"}})
    res = pytester.runpytest_subprocess("--bt-estimator", "estimators.controls:RandomEstimator",
                                        "--bt-report", str(tmp_path / "r.json"))
    res.assert_outcomes(skipped=6)
    assert res.ret == 1, res.stdout.str()
    assert "GATE FAIL" in res.stdout.str() and "NOT JUDGED" in res.stdout.str()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["exit_status"] == 1 and not doc["gates"][0]["ok"]


def test_pass_plus_na_passes_the_gate_and_all_na_fails(pytester):
    est = "estimators.controls:RandomEstimator"
    _cells(pytester, {est: {"headroom": "pass", "trigger_token_alignment": "na"}})
    res = pytester.runpytest_subprocess("--bt-estimator", est)
    assert res.ret == 0, res.stdout.str()
    assert "GATE PASS" in res.stdout.str() and "N/A" in res.stdout.str()
    _cells(pytester, {est: {"headroom": "na", "trigger_token_alignment": "na"}})
    res = pytester.runpytest_subprocess("--bt-estimator", est)
    assert res.ret == 1 and "no check PASSED" in res.stdout.str()


def test_one_failing_seed_fails_the_check(pytester):
    est = "estimators.controls:RandomEstimator"
    _cells(pytester, {est: {"headroom": ["pass", "fail", "pass"], "trigger_token_alignment": "pass"}})
    res = pytester.runpytest_subprocess("--bt-estimator", est)
    out = res.stdout.str()
    assert res.ret == 1 and "FAIL 1/3" in out and "GATE FAIL" in out and "headroom FAIL 1/3" in out


def test_unsupported_units_are_left_out_counted_and_error_above_a_third(pytester, tmp_path):
    """A unit no ranking can pass is skipped (neither PASS nor FAIL), counted in the cell, and more than a third of
    them is an ERROR of the fixture (docs/checklist.md, "The gate")."""
    est = "estimators.controls:RandomEstimator"
    _cells(pytester, {est: {"headroom": ["pass", "unsupported", "pass"], "trigger_token_alignment": "pass"}})
    res = pytester.runpytest_subprocess("--bt-estimator", est, "--bt-report", str(tmp_path / "r.json"))
    out = res.stdout.str()
    assert res.ret == 0 and "PASS 2/3, 1 unsupported" in out and "GATE PASS" in out, out
    assert "units that cannot support a verdict" in out and "headroom" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert sorted(gate.unit_label(r) for r in doc["results"] if r.get("cell", {}).get("check") == "headroom") == [
        gate.PASS, gate.PASS, gate.UNSUPPORTED]
    _cells(pytester, {est: {"headroom": ["pass", "unsupported", "unsupported"], "trigger_token_alignment": "pass"}})
    res = pytester.runpytest_subprocess("--bt-estimator", est)
    out = res.stdout.str()
    assert res.ret == 1 and "headroom ERROR 2/3 unsupported (fixture)" in out and "GATE FAIL" in out, out


SNAPSHOT = '''
import bt_bench.checklist.expectations as X
from bt_bench.runs.config import DEFAULT_PROFILE
X.EXPECTED[DEFAULT_PROFILE] = {{"random": {{"headroom": ("{h}", "test"), "trigger_token_alignment": ("{t}", "test")}}}}
'''


@pytest.mark.parametrize("declared, measured, ok", [
    (("FAIL", "FAIL"), {"headroom": "fail", "trigger_token_alignment": "fail"}, True),
    (("FAIL", "FAIL"), {"headroom": "pass", "trigger_token_alignment": "fail"}, False),  # better than declared
    (("PASS", "FAIL"), {"headroom": "fail", "trigger_token_alignment": "fail"}, False),  # worse than declared
    (("PASS", "N/A"), {"headroom": "pass", "trigger_token_alignment": "na"}, True),
    # a cell declared machine-dependent (gate.PASS_OR_FAIL) is as declared either way, but not as an N/A or ERROR
    (("PASS or FAIL", "FAIL"), {"headroom": "pass", "trigger_token_alignment": "fail"}, True),
    (("PASS or FAIL", "FAIL"), {"headroom": "fail", "trigger_token_alignment": "fail"}, True),
    (("PASS or FAIL", "FAIL"), {"headroom": "na", "trigger_token_alignment": "fail"}, False),
])
def test_expected_outcome_snapshot_both_ways(pytester, declared, measured, ok):
    _cells(pytester, {"random": measured}, SNAPSHOT.format(h=declared[0], t=declared[1]))
    res = pytester.runpytest_subprocess("--bt-estimator", "random")
    out = res.stdout.str()
    assert (res.ret == 0) == ok, out
    assert ("AS EXPECTED" if ok else "DEVIATES FROM EXPECTED") in out
    strict = pytester.runpytest_subprocess("--bt-estimator", "random", "--bt-strict")  # gated like anyone's
    assert (strict.ret == 0) == all(v in ("pass", "na") for v in measured.values())


def test_modified_thresholds_are_shown_and_refused_by_paper_gate(pytester, tmp_path):
    est = "estimators.controls:RandomEstimator"
    _cells(pytester, {est: {"headroom": "pass", "trigger_token_alignment": "pass"}})
    pytester.makefile(".toml", pyproject="[tool.bt_bench.thresholds]\nauc_bar = 0.4\n")
    res = pytester.runpytest_subprocess("--bt-estimator", est, "--bt-report", str(tmp_path / "r.json"))
    out = res.stdout.str()
    assert res.ret == 0, out
    assert "MODIFIED THRESHOLDS" in out and "auc_bar=0.4 (default 0.5)" in out
    assert "GATE PASS (with modified thresholds)" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["modified_thresholds"] == {"auc_bar": {"value": 0.4, "default": 0.5}}
    paper = pytester.runpytest_subprocess("--bt-estimator", est, "--bt-paper-gate")
    assert paper.ret != 0
    assert "--bt-paper-gate refuses modified thresholds: auc_bar=0.4" in paper.stderr.str() + paper.stdout.str()


def test_report_page_shows_modified_thresholds_and_gates(tmp_path):
    from bt_bench.report.html import render_html

    doc = {"schema": "bt-bench-report/1", "settings": {"profile": "tiny"}, "results": [
        _r("passed", "pass")], "modified_thresholds": {"auc_bar": {"value": 0.4, "default": 0.5}},
        "gates": [{"estimator": "mine", "ok": True, "line": "mine: GATE PASS (with modified thresholds)"}]}
    html = render_html(doc, tmp_path / "r.html").read_text()
    assert "auc_bar" in html and "with modified thresholds" in html and "GATE PASS" in html


def test_replayed_evidence_is_gated_by_its_own_cells(tmp_path):
    """`pytest checks --bt-evidence`: the published rows' estimators are nobody's built-in on a fixture (their
    'norm_only' is not our control on tiny), and a check the evidence holds nothing for is N/A, not NOT JUDGED."""
    import subprocess
    import sys
    from pathlib import Path

    from bt_bench.checklist.examples import behaviortrace_seed2

    root = Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, "-m", "pytest", str(root / "checks"), "-p", "no:xdist", "-p",
                        "no:cacheprovider", "-q", "--bt-evidence", str(behaviortrace_seed2()), "--bt-report",
                        str(tmp_path / "r.json")], cwd=root, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stdout[-2000:]  # fluency_confound fails the published gradient scores
    assert "DEVIATES" not in p.stdout and "norm_only: GATE FAIL" in p.stdout
    assert "not a paper gate: prepared data (--bt-evidence)" in p.stdout  # issue 19 item 3
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["not_a_paper_gate"].startswith("prepared data (--bt-evidence)")
    labels = {gate.unit_label(r) for r in doc["results"] if (r.get("cell") or {}).get("outcome") == "skip"}
    assert labels == {gate.NA}


def test_a_snapshot_emitted_from_a_report_reads_back_as_its_measured_labels():
    """``python -m bt_bench.checklist.expectations --emit NAME REPORT``: the printed dict is the report's labels, each
    reason its label, count and key figures; the oracle keeps its rule and is left out."""
    from bt_bench.checklist import expectations as ex

    rs = [_r("xpass", "pass", est="a"), _r("xfail", "fail", est="a"), _r("failed", "fail", check="x", est="b"),
          _r("skipped", "skip", na=True, check="x", est="a"), _r("xpass", "pass", est="oracle")]
    rs[0]["cell"]["key_figure"] = "gain 1.00 (lo 0.50)"
    doc = {"results": rs}
    want = {"a": {"headroom": (gate.FAIL, "FAIL 1/2: gain 1.00 (lo 0.50)"), "x": (gate.NA, "N/A 1/1: ")},
            "b": {"x": (gate.FAIL, "FAIL 1/1: ")}}
    assert ex.measured(doc) == want
    ns: dict = {}
    exec("from bt_bench.checklist.gate import ERROR, FAIL, NA, NOT_JUDGED, PASS\n" + ex.emit(doc, "SNAP"), ns)
    assert ns["SNAP"] == want
