"""The whole grid or no pass (issue 19 item 1), through the plugin as a user runs it: the real thin modules of
``checks/`` (copied into a pytester folder, so the node ids and the parametrization are the real ones) with their
cells replaced by synthetic verdicts and a fake ``bt_suite`` (no fixture is built). Every unit of the expected grid
(``bt_bench.checklist.grid``) that a session leaves out (``--deselect``, ``-k``, ``--bt-seeds``) makes its check
INCOMPLETE and the exit code nonzero; ``--bt-paper-gate`` refuses any selection before anything runs; the report
lists the missing units and the command line. The gate's own rules are unit-tested in tests/test_gate.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER = "estimators.controls:RandomEstimator"  # a dotted path: a user's estimator (no declared outcomes)

# checks/conftest.py of the pytester folder: every cell answers what the estimator's declaration and, for a built-in,
# its declared outcome on the default profile say (so the full grid passes / is as expected); N/A by the grid's own rule
FAKE = '''
import dataclasses
import functools
import os
import types

import pytest

from bt_bench.checklist import registry
from bt_bench.checklist.base import Verdict
from bt_bench.checklist.expectations import expected_for
from bt_bench.checklist.registry import not_applicable
from bt_bench.checklist.suite import NotApplicable
from bt_bench.estimator.registry import get_estimator

PAIRED = ("seed_draw_variance", "trigger_token_alignment")  # their cells return (verdict, series)


def _fake(spec):
    @functools.wraps(spec.cell)  # keeps the signature the grid reads (does the cell pool the draws?)
    def cell(suite, est, *args):
        e = get_estimator(est)
        why = not_applicable(spec.name, est, e.level, e.capabilities)
        if why:
            raise NotApplicable(why)
        if spec.name == "linear_datamodeling" and not suite.lds_subsets:  # the real cell's suite.require_lds()
            raise NotApplicable("not run in this session")
        label = (expected_for(suite.profile, est, lds=suite.lds_subsets > 0) or {}).get(spec.name, ("PASS", ""))[0]
        if est in ("oracle", "random"):  # the oracle canary's: the oracle passes, random fails, unless told otherwise
            label = os.environ.get(f"BT_FAKE_{est}_{spec.name}", "PASS" if est == "oracle" else "FAIL")
        outcome = {"PASS": "pass", "ERROR": "error"}.get(label, "fail")  # a declared ERROR: the fixture's
        v = Verdict(spec.name, outcome, {}, "synthetic " + label, est)
        return (v, {}) if spec.name in PAIRED else v
    return cell


for _name, _spec in list(registry.CHECKS.items()):
    registry.CHECKS[_name] = dataclasses.replace(_spec, cell=_fake(_spec))


class _Fixture:
    def __init__(self, seed):
        self.seed = seed

    def chosen(self, kind):
        return 10


@pytest.fixture(scope="session", autouse=True)
def _inductor_env():  # what the session's processes see (tests/test_incomplete.py: temp folder kept clean)
    import os
    import pathlib

    pathlib.Path("inductor_env.txt").write_text(os.environ.get("TORCHINDUCTOR_CACHE_DIR", "-") + "\\n"
                                                + os.environ.get("BT_BENCH_CACHE", "-"))


@pytest.fixture(scope="session")
def bt_suite(bt_settings):
    return types.SimpleNamespace(fixtures=[_Fixture(i) for i in range(bt_settings.seeds)],
                                 lds_subsets=120 if bt_settings.lds else 0, profile=bt_settings.profile)
'''


@pytest.fixture
def checklist(pytester):
    """A pytester folder with ``checks/``: the real thin modules (one per registered check) and the fake cells."""
    from bt_bench.checklist.registry import CHECKS

    d = pytester.path / "checks"
    d.mkdir()
    for name in CHECKS:
        shutil.copy(ROOT / "checks" / f"test_{name}.py", d)
    (d / "conftest.py").write_text(FAKE)
    return pytester


def _run(pytester, tmp_path, *args):
    report = tmp_path / "r.json"
    res = pytester.runpytest_subprocess("checks", "-p", "no:cacheprovider", "--bt-report", str(report), *args)
    doc = json.loads(report.read_text()) if report.exists() else None
    return res, res.stdout.str(), doc


def test_the_full_grid_passes_also_under_the_paper_gate(checklist, tmp_path):
    """Positive control: nothing left out, nothing INCOMPLETE; the user's estimator passes, the built-in is as
    declared, the exit code is 0 and --bt-paper-gate accepts the whole checks folder. (Under the paper gate's fresh
    fixtures a built-in is gated by its own cells, tests/test_fresh_fixtures.py: gas is checked without it.)"""
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-estimator", "gas")
    assert res.ret == 0, out
    assert f"{USER}: GATE PASS" in out and "gas: AS EXPECTED" in out and "INCOMPLETE" not in out
    units = {(x["estimator"], x["check"]): x["units"] for x in doc["completeness"]["expected"]}
    assert units[("gas", "trigger_token_alignment")] == 3
    lds = {r["cell"]["estimator"]: r["cell"] for r in doc["results"]
           if (r.get("cell") or {}).get("check") == "linear_datamodeling"}
    assert lds and all(c["na"] for c in lds.values())  # not run without --bt-lds: N/A for the user and the built-in
    # with it: judged, and the built-in as measured (on tiny: the default, tiny_family, has no LDS set size yet)
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-estimator", "gas", "--bt-lds",
                         "--bt-profile", "tiny")
    assert res.ret == 0 and "gas: AS EXPECTED" in out, out
    assert not any(r["cell"]["na"] for r in doc["results"] if (r.get("cell") or {}).get("check") ==
                   "linear_datamodeling")
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-paper-gate")
    assert res.ret == 0, out
    assert f"{USER}: GATE PASS" in out and "INCOMPLETE" not in out
    comp = doc["completeness"]
    assert comp["missing"] == [] and comp["seeds"] == 3 and comp["draws"] == 3
    units = {(x["estimator"], x["check"]): x["units"] for x in comp["expected"]}
    assert units[(USER, "fluency_confound")] == 9 and (USER, "trigger_token_alignment") not in units  # N/A
    assert "checks" in doc["command_line"]["args"] and "--bt-paper-gate" in doc["command_line"]["args"]


SELF_CHECK = """
from bt_bench.plugin.glue import record


def test_sketch_ranking(bt_suite, request):
    record(request, check="sketch_ranking", key_figure="synthetic")
    assert {ok}, "synthetic: the stored sketches reorder exact TracIn's scores"
"""


def test_a_failed_fixture_self_check_fails_every_gate_in_the_session(checklist, tmp_path):
    """A fixture self-check that fails (here a synthetic sketch ranking) turns the user's GATE PASS and the
    built-in's AS EXPECTED into FIXTURE FAILED, NOT JUDGED, also under the paper gate. Control: the same self-check
    passing leaves both as they were and the exit code 0."""
    for ok in (True, False):
        (checklist.path / "checks" / "test_sketch_ranking.py").write_text(SELF_CHECK.format(ok=ok))
        for extra in (("--bt-estimator", "gas"), ("--bt-paper-gate",)):
            res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, *extra)
            if ok:
                assert res.ret == 0 and f"{USER}: GATE PASS" in out, out
                assert "gas" not in extra or "gas: AS EXPECTED" in out, out
                continue
            assert res.ret == 1, out
            line = "FIXTURE FAILED, NOT JUDGED: fixture self-check sketch_ranking FAILED"
            assert f"{USER}: {line}" in out and ("gas" not in extra or f"gas: {line}" in out), out
            assert all(not g["ok"] and g["fixture"] == ["fixture self-check sketch_ranking FAILED"]
                       for g in doc["gates"]), doc["gates"]


def test_the_oracle_canary_runs_in_every_session_and_fails_every_gate_when_the_oracle_cannot_pass(
        checklist, tmp_path, monkeypatch):
    """docs/checklist.md, "Fixture self-checks" (oracle canary). Whatever --bt-estimator says, the oracle and random
    are scored and judged as any user's estimator; the user's gate counts only if the oracle passes and random
    fails. Positive control: both as they should be, the user's GATE PASS stands and the canary's own estimators get
    no gate line. Negative controls: an ERROR of the fixture in one of the oracle's checks, and a random ranking
    that passes, each turn the user's GATE PASS into FIXTURE FAILED naming the canary's cells (also under
    --bt-paper-gate)."""
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER)
    assert res.ret == 0 and f"{USER}: GATE PASS" in out, out
    assert not any(g["estimator"] in ("oracle", "random") for g in doc["gates"])
    scored = {r["cell"]["estimator"] for r in doc["results"] if r.get("cell")}
    assert scored == {USER, "oracle", "random"}
    (canary,) = [r for r in doc["results"] if (r.get("metrics") or {}).get("check") == "oracle_canary"]
    assert canary["outcome"] == "passed" and canary["metrics"]["gates"]["oracle"] == "oracle: GATE PASS"
    assert canary["metrics"]["gates"]["random"].startswith("random: GATE FAIL")
    monkeypatch.setenv("BT_FAKE_oracle_retrieval_baseline", "ERROR")
    for extra in ((), ("--bt-paper-gate",)):
        res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, *extra)
        assert res.ret == 1, out
        assert (f"{USER}: FIXTURE FAILED, NOT JUDGED: fixture self-check oracle_canary FAILED (perfect attribution "
                "cannot pass: oracle: GATE FAIL: retrieval_baseline ERROR") in out, out
    monkeypatch.delenv("BT_FAKE_oracle_retrieval_baseline")
    for check in ("fluency_confound", "headroom", "gradient_norm_baseline", "advantage_baseline",
                  "target_dependence", "retrieval_baseline", "counterfactual_removal", "seed_draw_variance"):
        monkeypatch.setenv(f"BT_FAKE_random_{check}", "PASS")
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER)
    assert res.ret == 1 and "oracle_canary FAILED (a ranking that attributes nothing passes: random: GATE PASS" in out
    # a selection that keeps the user's cells and drops the canary's cannot keep the user's GATE PASS
    for var in list(os.environ):
        if var.startswith("BT_FAKE_"):
            monkeypatch.delenv(var)
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "-k", "controls")
    assert res.ret == 1 and f"{USER}: FIXTURE FAILED, NOT JUDGED: fixture self-check oracle_canary FAILED (oracle has " \
        "no verdict on" in out, out
    # the user's own choice of the oracle gets its gate line as usual (a built-in: against its declared outcomes)
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-estimator", "oracle", "--bt-strict")
    assert "oracle: GATE PASS" in out and f"{USER}: GATE PASS" in out and res.ret == 0, out


def test_a_deselected_unit_is_incomplete_and_exits_nonzero(checklist, tmp_path):
    ids = [f"checks/test_fluency_confound.py::test_fluency_confound[{e}-seed2-draw1]" for e in (USER, "gas")]
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-estimator", "gas",
                         "--deselect", ids[0], "--deselect", ids[1])
    assert res.ret == 1, out
    assert "2 deselected" in out
    assert f"{USER}: GATE FAIL: fluency_confound INCOMPLETE 1/9 missing (ran: PASS 8/8" in out
    # a built-in's deselected cell does not pass its expectation comparison either
    assert "gas: DEVIATES FROM EXPECTED: fluency_confound expected FAIL, got INCOMPLETE 1/9 missing" in out
    assert "INCOMPLETE 1/9" in out.split(f"{USER}: GATE FAIL")[0]  # the table's cell
    assert sorted(m["nodeid"] for m in doc["completeness"]["missing"]) == sorted(ids)
    assert all(m["why"] == "not run" and m["seed"] == 2 and m["draw"] == 1 for m in doc["completeness"]["missing"])
    assert doc["command_line"]["args"].count("--deselect") == 2 and ids[0] in doc["command_line"]["args"]
    assert doc["exit_status"] == 1 and not any(g["ok"] for g in doc["gates"])


def test_k_not_a_check_exits_nonzero(checklist, tmp_path):
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "-k", "not fluency_confound")
    assert res.ret == 1, out
    assert "fluency_confound INCOMPLETE 9/9 missing" in out and "GATE FAIL" in out
    assert len([m for m in doc["completeness"]["missing"] if m["estimator"] == USER]) == 9
    assert {m["estimator"] for m in doc["completeness"]["missing"]} == {USER, "oracle", "random"}  # the canary's too


def test_fewer_seeds_than_the_default_is_incomplete(checklist, tmp_path):
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-seeds", "1")
    assert res.ret == 1, out
    whys = {(m["check"], m["seed"], m["why"]) for m in doc["completeness"]["missing"]}
    assert ("gradient_norm_baseline", 2, "not run") in whys
    assert ("seed_draw_variance", None, "judged on 1 of 3 seeds (--bt-seeds 1)") in whys


def test_paper_gate_refuses_any_selection_before_running(checklist, tmp_path):
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-paper-gate", "-k", "x", "-x",
                         "--deselect", "checks/test_headroom.py::test_headroom", "--bt-seeds", "2",
                         "checks/test_headroom.py")
    err = res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, out + err
    (line,) = [ln for ln in err.splitlines() if "--bt-paper-gate refuses any test selection" in ln]
    for what in ("-k 'x'", "-x", "--deselect checks/test_headroom.py::test_headroom", "--bt-seeds 2 (fewer than the "
                 "default 3)", "checks/test_headroom.py (narrower than the checklist folder"):
        assert what in line, (what, line)
    assert doc is None  # nothing ran, nothing was written
    res, _, _ = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-paper-gate", "-m", "slow")
    assert res.ret == pytest.ExitCode.USAGE_ERROR and "-m 'slow'" in res.stderr.str()


# A new check, added as the registry says (bt_bench/checklist/registry.py): its module (here the conftest builds its
# CheckSpec), one entry in the registry, and its thin module in checks/. Nothing else in the harness is told.
DUMMY = '''
from bt_bench.checklist import registry
from bt_bench.checklist.base import Verdict, with_unit
from bt_bench.checklist.spec import CheckSpec


def _judge(seed, fails=True):
    return Verdict("dummy_check", "fail" if seed == 1 and fails else "pass", {}, f"dummy judged seed {seed}")


def _cell(suite, est, i):  # the oracle passes it (the canary's positive control holds), random and the user do not
    return with_unit(_judge(suite.fixtures[i].seed, fails=est != "oracle"), {"seed": suite.fixtures[i].seed,
                                                                               "draw": None})


registry.CHECKS["dummy_check"] = CheckSpec(
    name="dummy_check", order=8, unit="seed", title="a check added by a test", finding="Nothing.", cell=_cell,
    judge=_judge, figure_parts=lambda us: ["dummy figure"])
'''

THIN = '''
import pytest

from bt_bench.checklist.registry import CHECKS
from bt_bench.plugin.glue import cell, run_cell

SPEC = CHECKS["dummy_check"]


@pytest.fixture
def verdict(bt_suite, bt_estimator, bt_seed, request):
    return cell(request, SPEC.name, bt_estimator, SPEC.cell, bt_suite, bt_estimator, bt_seed)


def test_dummy_check(bt_suite, bt_estimator, bt_seed, verdict, request):
    run_cell(request, SPEC.name, bt_estimator, verdict, seed=bt_suite.fixtures[bt_seed].seed)
'''


def test_a_check_added_by_its_module_and_thin_module_is_judged_reported_and_gated(checklist, tmp_path):
    """Issue 20: adding a check is its module, its registry entry and its thin module. The new check is in the
    expected grid (INCOMPLETE if a unit is left out), judged per seed, shown in the table with its key figure, in
    the JSON report, and decides the gate (it fails seed 1, so the user's estimator fails the gate on it alone)."""
    d = checklist.path / "checks"
    (d / "conftest.py").write_text((d / "conftest.py").read_text() + DUMMY)
    (d / "test_dummy_check.py").write_text(THIN)
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER)
    assert res.ret == 1, out
    (g,) = doc["gates"]
    assert g["line"].startswith(f"{USER}: GATE FAIL: dummy_check FAIL 1/3"), g["line"]
    assert "dummy_check" in out.split("GATE FAIL")[0] and "dummy figure" in out  # the table row and key figure
    cells = [r["cell"] for r in doc["results"] if (r.get("cell") or {}).get("check") == "dummy_check"
             and r["cell"]["estimator"] == USER]
    assert sorted(c["outcome"] for c in cells) == ["fail", "pass", "pass"]
    assert all(c["key_figure"] == "dummy figure" and len(c["units"]) == 1 for c in cells)
    units = {(x["estimator"], x["check"]): x["units"] for x in doc["completeness"]["expected"]}
    assert units[(USER, "dummy_check")] == 3
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER, "-k", "not (dummy_check and seed1)")
    assert res.ret == 1 and "dummy_check INCOMPLETE 1/3 missing" in out, out
    # without the new check every unit of the others passes: the control
    (d / "test_dummy_check.py").unlink()
    res, out, doc = _run(checklist, tmp_path, "--bt-estimator", USER)
    assert "dummy_check INCOMPLETE 3/3 missing" in out  # registered but its thin module is gone: not run


def test_a_checklist_session_keeps_torchs_inductor_cache_out_of_the_temp_folder(checklist, tmp_path, monkeypatch):
    """Importing trl makes torch create $TMPDIR/torchinductor_<user>, left behind by every run: the plugin points
    it into the run cache for a checklist session (its processes inherit it), and only there."""
    import os
    import subprocess
    import sys

    # torch's inductor writes its default into os.environ once any earlier test in this process touched it (CI's
    # xdist worker did): the session under test would inherit that as a value "the user set" and keep it
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("BT_BENCH_CACHE", str(tmp_path / "other"))
    cache = tmp_path / "cache"
    res, out, _ = _run(checklist, tmp_path, "--bt-estimator", USER, "--bt-cache-dir", str(cache))
    assert res.ret == 0, out
    # ... and --bt-cache-dir is the cache every part finds by itself (the counterfactual replays): $BT_BENCH_CACHE
    assert (checklist.path / "inductor_env.txt").read_text() == f"{cache / 'torchinductor'}\n{cache}"
    # the mechanism: with the variable set, importing trl leaves the temp folder empty; without, it does not
    for inductor, left in ((str(tmp_path / "ind"), []), (None, ["torchinductor_"])):
        tmp = tmp_path / f"tmp-{bool(inductor)}"
        tmp.mkdir()
        env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"} | {"TMPDIR": str(tmp)}
        env |= {"TORCHINDUCTOR_CACHE_DIR": inductor} if inductor else {}
        subprocess.run([sys.executable, "-c", "from trl import GRPOTrainer"], env=env, check=True,
                       capture_output=True)
        assert [p.name[:14] for p in tmp.iterdir()] == left


def test_a_session_of_other_tests_keeps_its_environment(pytester, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    pytester.makepyfile(test_other="import os\n\ndef test_env():\n    assert 'TORCHINDUCTOR_CACHE_DIR' not in os.environ\n")
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == 0


def test_the_test_suite_keeps_torchs_inductor_cache_in_pytests_temp_folder(pytester, tmp_path, monkeypatch):
    """The plugin leaves a session of other tests alone (above), so ``pytest tests`` itself would leave
    $TMPDIR/torchinductor_<user> behind: tests/conftest.py points the cache into pytest's temp folder instead. A
    session with that conftest imports trl (which creates the cache) and leaves $TMPDIR empty."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp))
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(test_trl="import os, pathlib\n\ndef test_trl():\n    from trl import GRPOTrainer  # noqa: F401\n"
                        "    pathlib.Path('inductor.txt').write_text(os.environ['TORCHINDUCTOR_CACHE_DIR'])\n")
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert res.ret == 0, res.stdout.str()
    inductor = Path((pytester.path / "inductor.txt").read_text())
    assert inductor.is_dir() and inductor.is_relative_to(pytester.path)  # pytester's --basetemp is under it
    assert list(tmp.iterdir()) == []


def test_nothing_is_left_in_the_temp_folder_after_a_checklist_session_under_xdist(checklist, tmp_path, monkeypatch):
    """Issue 24 item 6. The whole main-job command (``pytest checks -n 2``) with $TMPDIR a fresh folder: afterwards
    the folder is empty (pytest-xdist's base temp folder, the progress relay's and the crash tracker's files, torch's
    inductor cache). Control: a session of someone else's tests under xdist keeps pytest's folder (only a checklist
    session removes it)."""
    import os
    import subprocess
    import sys

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TORCHINDUCTOR_"))}
    for name, args in (("checklist", ["checks", "--bt-estimator", USER, "--bt-cache-dir", str(tmp_path / "c")]),
                       ("other", ["test_other.py"])):
        tmp = tmp_path / f"tmp-{name}"
        tmp.mkdir()
        if name == "other":
            (checklist.path / "test_other.py").write_text("def test_nothing():\n    pass\n")
        res = subprocess.run([sys.executable, "-m", "pytest", *args, "-n", "2", "-p", "no:cacheprovider"],
                             cwd=checklist.path, env=env | {"TMPDIR": str(tmp)}, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        left = sorted(p.name for p in tmp.iterdir())
        assert left == ([] if name == "checklist" else [f"pytest-of-{__import__('getpass').getuser()}"]), left
