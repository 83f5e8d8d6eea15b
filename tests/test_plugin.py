"""The pytest plugin, tested with pytester: options, pyproject settings, estimator selection, the gate (exit code),
declared expected outcomes, --bt-strict, and the JSON report written once (also under xdist). The gate's own rules
are tested in tests/test_gate.py."""

from __future__ import annotations

import json
import sys

import pytest

CELL_TEST = '''
import pytest
from bt_bench.checklist.base import Verdict
from bt_bench.plugin.glue import run_cell

OUTCOME = {"oracle": "pass", "random": "fail", "advantage_only": "pass"}

def test_gradient_norm_baseline(bt_estimator, request):
    run_cell(request, "gradient_norm_baseline", bt_estimator,
             Verdict("gradient_norm_baseline", OUTCOME.get(bt_estimator, "fail"), {}, "synthetic verdict"))
'''


def test_plugin_is_import_light():
    import subprocess

    code = "import bt_bench.plugin, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_options_are_in_the_bt_bench_group(pytester):
    result = pytester.runpytest_subprocess("--help")
    out = result.stdout.str()
    assert "bt-bench checklist" in out
    for opt in ("--bt-estimator", "--bt-profile", "--bt-seeds", "--bt-draws", "--bt-cache-dir", "--bt-rebuild",
                "--bt-report", "--bt-evidence", "--bt-strict", "--bt-paper-gate"):
        assert opt in out


def test_gate_exit_code_and_report(pytester, tmp_path):
    pytester.makepyfile(test_cells=CELL_TEST)
    report = tmp_path / "r.json"
    ok = pytester.runpytest_subprocess("--bt-estimator", "oracle", "--bt-report", str(report))
    ok.assert_outcomes(passed=1)
    assert ok.ret == 0
    doc = json.loads(report.read_text())
    assert doc["schema"] == "bt-bench-report/2" and doc["settings"]["estimators"] == ["oracle"]
    assert doc["results"][0]["cell"]["outcome"] == "pass"
    # an estimator with no declared expected failure (as any third-party one): a failed check fails the gate
    bad = pytester.runpytest_subprocess("--bt-estimator", "estimators.gas:GAS")
    assert bad.ret == 1


def test_expected_failures_are_xfail_unless_strict(pytester):
    pytester.makepyfile(test_cells=CELL_TEST)
    res = pytester.runpytest_subprocess("--bt-estimator", "random")
    res.assert_outcomes(xfailed=1)
    assert res.ret == 0
    assert "FAIL (expected)" in res.stdout.str() and "random: AS EXPECTED" in res.stdout.str()
    strict = pytester.runpytest_subprocess("--bt-estimator", "random", "--bt-strict")
    strict.assert_outcomes(failed=1)


def test_unknown_estimator_did_you_mean(pytester):
    pytester.makepyfile(test_cells=CELL_TEST)
    res = pytester.runpytest_subprocess("--bt-estimator", "gass")
    assert res.ret != 0
    assert "did you mean" in (res.stdout.str() + res.stderr.str())


def test_pyproject_settings(pytester):
    pytester.makepyfile(test_cells=CELL_TEST)
    pytester.makefile(".toml", pyproject='[tool.bt_bench]\nestimator = ["oracle", "random"]\nseeds = 2\n')
    res = pytester.runpytest_subprocess("-v")
    res.assert_outcomes(passed=1, xfailed=1)
    bad = pytester.makefile(".toml", pyproject='[tool.bt_bench]\nseedz = 2\n')
    assert bad.exists()
    res = pytester.runpytest_subprocess()
    assert "unknown key(s) ['seedz']" in (res.stdout.str() + res.stderr.str())


def test_report_written_once_under_xdist(pytester, tmp_path):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_cells=CELL_TEST)
    report = tmp_path / "r.json"
    res = pytester.runpytest_subprocess("-n", "2", "--bt-estimator", "oracle", "--bt-estimator", "random",
                                        "--bt-report", str(report))
    assert res.ret == 0, res.stdout.str()
    doc = json.loads(report.read_text())
    assert sorted(r["cell"]["estimator"] for r in doc["results"]) == ["oracle", "random"]
    assert not list(tmp_path.glob("*.tmp"))
