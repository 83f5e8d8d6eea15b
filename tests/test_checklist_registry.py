"""The check registry (bt_bench.checklist.registry) is the one list of checks: every check is one module of
bt_bench.checklist.checks holding its spec, and one thin module in checks/; every other list of checks comes from
the registry; no other module of the package names a check; and the key figures are the strings the report printed
before."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from bt_bench.checklist import expectations, figures, registry
from bt_bench.checklist.registry import CHECKS, FIXTURE_CHECKS, get_check, key_figure
from bt_bench.checklist.result import upgrade_v1
from bt_bench.checklist.spec import CheckSpec

ROOT = Path(__file__).resolve().parents[1]
NOT_A_CHECK = {"test_fixture_integrity.py", "test_fixture_planting.py", "test_sketch_fidelity.py",
               "test_sketch_ranking.py", "test_planted_cause.py", "test_evidence_replay.py",
               "test_replay_fidelity.py"}
ORDER = ("gradient_norm_baseline", "fluency_confound", "headroom", "seed_draw_variance", "trigger_token_alignment",
         "advantage_baseline", "target_dependence", "retrieval_baseline", "counterfactual_removal",
         "linear_datamodeling")


def _spec_of_module(path: Path) -> str | None:
    """The name in ``SPEC = CHECKS["name"]`` of a thin check module, else None."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["SPEC"] \
                and isinstance(node.value, ast.Subscript) and getattr(node.value.value, "id", None) == "CHECKS":
            return ast.literal_eval(node.value.slice)
    return None


def test_checks_in_checklist_order():
    assert tuple(CHECKS) == ORDER
    assert [s.order for s in CHECKS.values()] == sorted(s.order for s in CHECKS.values())
    assert FIXTURE_CHECKS == ("planted_cause", "planting_gate", "sketch_fidelity", "sketch_ranking", "integrity",
                              "replay_fidelity", "oracle_canary")


def test_every_check_module_is_one_spec_and_every_spec_one_module():
    modules = sorted(p for p in (ROOT / "checks").glob("test_*.py") if p.name not in NOT_A_CHECK)
    named = {p.name: _spec_of_module(p) for p in modules}
    assert all(named.values()), f"thin check modules without SPEC = CHECKS[...]: {named}"
    assert {f"test_{n}.py" for n in named.values()} == set(named), named  # module test_<name>.py judges <name>
    assert sorted(named.values()) == sorted(CHECKS)
    for p in modules:  # the test function is test_<name> (the report reads the check from the node id)
        assert f"def test_{named[p.name]}(" in p.read_text(), p.name


def test_each_thin_module_takes_the_parameters_of_its_unit():
    """The expected grid (bt_bench.checklist.grid) reads a check's units from ``CheckSpec.unit``; the thin module
    gets its units from the plugin's parameters: bt_seed for ``seed`` and ``seed_draw``, bt_draw for ``seed_draw``
    only. Both must say the same, so a new check is in the grid as it is collected."""
    for name, spec in CHECKS.items():
        tree = ast.parse((ROOT / "checks" / f"test_{name}.py").read_text())
        params = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                params |= {a.arg for a in node.args.args}
        assert ("bt_seed" in params) == (spec.unit in ("seed", "seed_draw")), (name, spec.unit, params)
        assert ("bt_draw" in params) == (spec.unit == "seed_draw"), (name, spec.unit, params)
        assert "bt_estimator" in params, name


def test_thin_modules_use_only_the_glue_of_the_plugin():
    for p in (ROOT / "checks").glob("test_*.py"):
        assert set(re.findall(r"bt_bench\.plugin[\w.]*", p.read_text())) <= {"bt_bench.plugin.glue"}, p.name


def test_every_list_of_checks_comes_from_the_registry():
    assert expectations.CHECKS == tuple(CHECKS)
    assert [s.name for s in registry.replayed()] == [n for n in ORDER
                                                     if n not in ("target_dependence", "retrieval_baseline",
                                                                  "counterfactual_removal", "linear_datamodeling")]
    assert [m.SPEC for m in registry.MODULES] == sorted(CHECKS.values(), key=lambda s: s.order)


def test_a_check_is_named_in_its_module_its_thin_module_and_the_registry_only():
    """Issue 20's rule, as the suite's own invariant: adding a check touches its module, its thin module and one
    line of the registry (and the expectation tables); no other file of the package, checks/ or estimators/ names
    it, in code or in comments. ``headroom`` is also the paper's word for ceiling minus chance, which the runs
    report as a realism statistic (``bt_bench/runs/``), so there only its quoted name counts, and not in runs/."""
    allowed = {"bt_bench/checklist/registry.py"} | {  # and the expectation tables, one module a profile or check
        str(p.relative_to(ROOT)) for p in (ROOT / "bt_bench/checklist").glob("expectations*.py")}
    for name in CHECKS:
        pattern = re.compile(r"[\"']headroom[\"']" if name == "headroom" else rf"\b{name}\b")
        found = {str(p.relative_to(ROOT)) for d in ("bt_bench", "checks", "estimators") for p in (ROOT / d).rglob("*.py")
                 if pattern.search(p.read_text())}
        own = {f"bt_bench/checklist/checks/{name}.py", f"checks/test_{name}.py"}
        found = {f for f in found if not (name == "headroom" and f.startswith("bt_bench/runs/"))}
        assert found - allowed - own == set(), (name, sorted(found - allowed - own))


@pytest.mark.parametrize("name", ORDER)
def test_spec_fields(name):
    s = CHECKS[name]
    assert isinstance(s, CheckSpec) and s.name == name and s.title and s.finding.endswith(".")
    module = next(m for m in registry.MODULES if m.SPEC is s)
    assert module.__name__ == f"bt_bench.checklist.checks.{name}" and module.NAME == name
    assert s.cell is module.cell and s.judge is module.judge and s.figure_parts is module.figure_parts
    assert s.replay is getattr(module, "replay", None)
    params = list(inspect.signature(s.cell).parameters)
    want = {"seed": ["suite", "est", "i"], "seed_draw": ["suite", "est", "i", "d"], "all": ["suite", "est", "draws"]}
    assert params[:len(want[s.unit])] == want[s.unit], params
    assert s.reference in (None, "norm_only", "fluency", "advantage_only")


def test_references():
    assert {n: s.reference for n, s in CHECKS.items() if s.reference} == {
        "gradient_norm_baseline": "norm_only", "fluency_confound": "fluency", "advantage_baseline": "advantage_only"}


def test_get_check_did_you_mean():
    assert get_check("headroom") is CHECKS["headroom"]
    with pytest.raises(KeyError, match="did you mean headroom"):
        get_check("headrom")
    with pytest.raises(KeyError, match="unknown check 'zzz'"):
        get_check("zzz")


def test_spec_validates_unit_and_reference():
    s = CHECKS["headroom"]
    with pytest.raises(ValueError, match="unit"):
        CheckSpec(**{**s.__dict__, "unit": "draw"})
    with pytest.raises(ValueError, match="reference"):
        CheckSpec(**{**s.__dict__, "reference": "random"})


# ------------------------------------------------------------------------------------------------ key figures
def _m(value, lo=None, hi=None):
    return {"value": value, "ci_low": lo, "ci_high": hi, "n": 100, "seed": 0, "n_resamples": 1000, "n_undefined": 0}


# (verdict dict, the key figure the report's key_figure gave it before it moved here)
CASES = [
    {"check": "gradient_norm_baseline", "estimator": "x", "outcome": "fail",
     "reason": "fails on at least one of 2 seed/draw(s): seed0: pass: a; seed1: fail: b",
     "metrics": {"seed0/precision": _m(0.25, 0.2, 0.3), "seed0/chance": _m(0.06), "seed0/norm_precision": _m(0.19),
                 "seed0/window_precision": _m(0.4, 0.3, 0.5), "seed0/window_chance": _m(0.3),
                 "seed1/precision": _m(0.12, 0.1, 0.2), "seed1/chance": _m(0.05), "seed1/norm_precision": _m(0.2),
                 "seed1/window_precision": _m(0.3, 0.2, 0.4), "seed1/window_chance": _m(0.31)}},
    {"check": "fluency_confound", "estimator": "x", "outcome": "pass", "reason": "within-group AUC ...",
     "metrics": {"auc": _m(0.9134, 0.85, 0.95), "fluency_auc": _m(0.7777, 0.7, 0.8),
                 "auc_minus_fluency": _m(0.13, 0.05, 0.2), "residualized_auc": _m(0.8123, 0.7456, 0.88)}},
    {"check": "headroom", "estimator": "x", "outcome": "error",
     "reason": "the fixture cannot support this check: window headroom 0.0500 < min_headroom=0.1",
     "metrics": {"window_headroom": _m(0.05), "window_ceiling": _m(0.11), "window_chance": _m(0.06)}},
    {"check": "headroom", "estimator": "x", "outcome": "fail",
     "reason": "fails on at least one of 2 seed/draw(s): seed0/draw0: pass: a; seed0/draw1: fail: b",
     "metrics": {"seed0/draw0/window_normalized_gain": _m(0.5, 0.1, 0.8), "seed0/draw0/unsaturated_auc": _m(0.7, 0.6),
                 "seed0/draw1/window_normalized_gain": _m(0.5, 0.1, 0.8), "seed0/draw1/unsaturated_auc": _m(0.55, 0.45)}},
    {"check": "seed_draw_variance", "estimator": "x", "outcome": "pass", "reason": "residualized AUC CI low ...",
     "metrics": {"residualized_auc_mean": _m(0.8412), "residualized_auc_min_ci_low": _m(0.7012),
                 "min_draw_spearman": _m(0.9876), "variance_share_seed": _m(0.3333), "variance_share_draw": _m(0.6667)}},
    {"check": "trigger_token_alignment", "estimator": "x", "outcome": "pass",
     "reason": "passes on every one of 2 seed/draw(s): seed0: pass: a; seed1: pass: b",
     "metrics": {"seed0/in_context_minus_placebo": _m(0.23, 0.11), "seed0/in_context_mean": _m(0.96, 0.9),
                 "seed0/constructed_mean": _m(-0.02, -0.1), "seed1/in_context_minus_placebo": _m(0.114, 0.05),
                 "seed1/in_context_mean": _m(0.91, 0.88), "seed1/constructed_mean": _m(0.01, -0.05)}},
    {"check": "advantage_baseline", "estimator": "x", "outcome": "fail", "reason": "precision@|GT| minus ...",
     "metrics": {"precision_minus_advantage": _m(-0.2613, -0.4), "window_precision_minus_advantage": _m(0.0041, -0.01),
                 "advantage_precision": _m(0.5), "window_advantage_precision": _m(0.6)}},
    {"check": "target_dependence", "estimator": "x", "outcome": "pass",
     "reason": "passes on every one of 2 seed/draw(s): seed3: pass: a; seed3/draw0: pass: b",
     "metrics": {"seed3/precision_real": _m(0.5), "seed3/precision_placebo": _m(0.2),
                 "seed3/precision_real_minus_placebo": _m(0.28, 0.2), "seed3/draw0/auc_real": _m(0.97),
                 "seed3/draw0/auc_placebo": _m(0.02), "seed3/draw0/auc_real_minus_placebo": _m(0.95, 0.9)},
     "units": [{"seed": 3, "draw": None, "part": "training"}, {"seed": 3, "draw": 0, "part": "draw"}]},
    {"check": "trigger_token_alignment", "estimator": "x", "outcome": "skip",
     "reason": "is skipped on all 2 seed/draw(s): seed0: skip: the evidence has no token-level scores for this "
               "estimator; seed1: skip: the evidence has no token-level scores for this estimator", "metrics": {}},
    {"check": "not_a_check", "estimator": "x", "outcome": "error", "reason": "something broke in a long way here, "
     "longer than forty-four characters for sure", "metrics": {"auc": _m(0.5)}},
    {"check": "fluency_confound", "estimator": "x", "outcome": "pass", "reason": "r", "metrics": {}},
]

EXPECTED = ['lift 3.3 vs norm 3.6, window lift 1.15', 'AUC 0.91 vs fluency 0.78, resid 0.81 (lo 0.75)', 'headroom 0.05', 'gain 0.50 (lo 0.10), unsat AUC 0.62 (lo 0.45)', 'resid 0.84, min lo 0.70, rho 0.99, seed share 0.33', 'ctx-placebo +0.17 (lo +0.05), cos +0.94 (lo +0.88), constructed -0.01', 'vs adv -0.261 (lo -0.400), window +0.004 (lo -0.010)', 'prec real-placebo +0.280 (lo +0.200), AUC real-placebo +0.95 (lo +0.90)', 'the evidence has no token-level scores for …', 'something broke in a long way here, longer …', '']


@pytest.mark.parametrize("i", range(len(CASES)))
def test_key_figure_identical_to_the_report_before(i):
    """The verdicts as schema-1 reports recorded them, upgraded to cells (their units split from the metric
    prefixes): the key figures the report showed before."""
    v = CASES[i]
    cell = upgrade_v1({"check": v["check"], "estimator": v["estimator"], "verdict": v})
    assert key_figure(cell) == EXPECTED[i]
    if v["check"] in CHECKS:
        assert CHECKS[v["check"]].key_figure(cell) == EXPECTED[i]


def test_upgrade_splits_a_schema_1_verdict_into_units_by_its_metric_prefixes():
    cell = upgrade_v1({"verdict": CASES[0]})
    assert [(u["seed"], u["draw"], u["outcome"]) for u in cell["units"]] == [(0, None, "pass"), (1, None, "fail")]
    assert cell["figures"] == {} and cell["units"][1]["metrics"]["chance"]["value"] == 0.05
    one = upgrade_v1({"verdict": CASES[1]})  # one unit's verdict, no seed recorded: its figures are over all units
    assert one["units"] == [] and set(one["figures"]) == {"auc", "fluency_auc", "auc_minus_fluency", "residualized_auc"}
    assert figures.cell_units(one)[0]["seed"] is None

