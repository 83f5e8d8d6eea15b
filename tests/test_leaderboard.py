"""The leaderboard, the slim result files and the generated docs (bt_bench.report.leaderboard, .slim, .docgen,
.board_cli), on small hand-made report dicts: cells by the every-seed rule, the merge rule (the later report wins
per estimator, and says so), provenance, and one-line errors for missing, malformed and unknown-version files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bt_bench.report import board_cli, docgen
from bt_bench.report import leaderboard as L
from bt_bench.report.schema import SCHEMA
from bt_bench.report.slim import SLIM_SCHEMA, load_any, slim_of

PYTEST = {"pass": "passed", "fail": "failed", "error": "failed", "skip": "skipped"}


def unit(check: str, est: str, seed: int, outcome: str, lift: float = 2.0, expected: str | None = None) -> dict:
    """One per-seed result of a gradient_norm_baseline-like check, as the plugin records it."""
    metrics = {"precision": {"value": 0.1 * lift, "ci_low": 0.05 * lift, "ci_high": 0.2 * lift},
               "chance": {"value": 0.1}}
    m = {"check": check, "estimator": est, "info": {"seed": seed}, "outcome": outcome, "reason": f"seed{seed}: {outcome}",
         "units": [{"seed": seed, "draw": None, "outcome": outcome, "reason": "", "metrics": metrics}], "figures": {}}
    if expected:
        m["expected"] = {"label": expected, "reason": "declared"}
    return {"nodeid": f"checks/test_{check}.py::test_{check}[{est}-seed{seed}]", "outcome": PYTEST[outcome],
            "reason": None, "cell": m}


def report(cells: dict, *, profile: str = "tiny", torch: str = "2.13.0", argv=("checks", "-n", "2"),
           gates: dict | None = None, fixture: bool = True, sha: str = "ab" * 32) -> dict:
    """A full report: cells = {estimator: {check: [outcome per seed]}}."""
    results = [unit(c, e, s, o) for e, checks in cells.items() for c, outs in checks.items()
               for s, o in enumerate(outs)]
    if fixture:
        results += [{"nodeid": "checks/test_fixture_causal.py::test_planted_cause", "outcome": "passed",
                     "reason": None, "metrics": {"check": "planted_cause", "key_figure": "rate 0.02"}},
                    {"nodeid": "checks/test_fixture_integrity.py::test_integrity", "outcome": "passed",
                     "reason": None, "metrics": {"check": "integrity", "key_figure": "3 runs, hashes ok"}}]
    gates = gates or {e: f"{e}: GATE FAIL: something" for e in cells}
    return {"schema": SCHEMA, "exit_status": 1,
            "settings": {"profile": profile, "seeds": 3, "draws": 3, "estimators": list(cells)},
            "versions": {"bt-bench": "0.1.0", "torch": torch, "trl": "0.29.0", "transformers": "5.0.0"},
            "thresholds": {"n_resamples": 5000, "bootstrap_seed": 0}, "modified_thresholds": {},
            "runs": [{"seed": s, "key": f"k{s}"} for s in range(3)], "tried_seeds": [0, 1, 2],
            "estimators": {e: {"name": e, "distribution": "bt-bench", "version": "0.1.0", "source_sha256": sha}
                           for e in cells},
            "gates": [{"estimator": e, "ok": "PASS" in line, "expected": False, "line": line}
                      for e, line in gates.items()],
            "command_line": {"argv": ["/x/bin/pytest", *argv], "args": list(argv), "dir": "/repo"},
            "results": results}


def write(tmp_path: Path, name: str, doc) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


GN = "gradient_norm_baseline"


def test_cells_follow_the_every_seed_rule_with_counts_and_figures():
    s = slim_of(report({"a": {GN: ["pass", "fail", "pass"]}, "b": {GN: ["pass"] * 3}}))
    a, b = s["estimators"]["a"]["cells"][GN], s["estimators"]["b"]["cells"][GN]
    assert (a["label"], a["count"]) == ("FAIL", "1/3") and (b["label"], b["count"]) == ("PASS", "3/3")
    assert a["key"].startswith("lift 2.0"), a  # a mean over all three seeds, not one seed's
    assert L.label_text(a) == "FAIL 1/3" and L.rows(L.merge([s])["tiny"]) == ["b", "a"]  # most PASS first
    assert s["fixture_checks"] == {"integrity": {"label": "PASS", "key": "3 runs, hashes ok"},
                                   "planted_cause": {"label": "PASS", "key": "rate 0.02"}}


def test_key_figure_is_the_mean_over_every_unit():
    rep = report({"a": {GN: ["fail"] * 3}})
    for r, lift in zip(rep["results"], (1.0, 2.0, 6.0)):
        r["cell"]["units"][0]["metrics"]["precision"]["value"] = 0.1 * lift
    assert slim_of(rep)["estimators"]["a"]["cells"][GN]["key"] == "lift 3.0"


def test_not_applicable_cells_carry_no_figure():
    rep = report({"a": {GN: ["skip"] * 3}})
    for r in rep["results"][:3]:
        r["cell"]["na"] = True
    cell = slim_of(rep)["estimators"]["a"]["cells"][GN]
    assert (cell["label"], cell["key"], L.label_text(cell)) == ("N/A", "", "N/A")


def test_deviation_from_a_declared_outcome_is_shown():
    rep = report({"a": {GN: ["pass"] * 3}})
    for r in rep["results"][:3]:
        r["cell"]["expected"] = {"label": "FAIL", "reason": "declared"}
    cell = slim_of(rep)["estimators"]["a"]["cells"][GN]
    assert L.label_text(cell) == "PASS 3/3 (expected FAIL!)"
    cell["expected"] = "PASS"
    assert L.label_text(cell) == "PASS 3/3"


def test_provenance_is_recorded_and_shown():
    rep = report({"a": {GN: ["pass"] * 3}}, argv=("checks", "-n", "2", "--bt-report", "r.json"))
    rep["gate_seed"] = {"seed": 77}
    rep["modified_thresholds"] = {"norm_margin": {"value": 0.1, "default": 0.0}}
    s = slim_of(rep, "r.json", "2026-12-04 13:00 UTC")
    assert s["fixture"] == "tiny gate seed 77"
    p = s["reports"][0]
    assert p["versions"] == {"bt-bench": "0.1.0", "torch": "2.13.0", "trl": "0.29.0", "transformers": "5.0.0"}
    assert p["command_line"] == "pytest checks -n 2 --bt-report r.json" and p["run_seeds"] == [0, 1, 2]
    assert s["estimators"]["a"]["source_sha256"] == "ab" * 32
    md = L.render_markdown(L.merge([s]))
    for text in ("date 2026-12-04 13:00 UTC", "torch 2.13.0", "trl 0.29.0", "gate seed 77", "run seeds 0, 1, 2",
                 "norm_margin=0.1 (default 0.0)", "pytest checks -n 2 --bt-report r.json", "abababababab"):
        assert text in md, text


def test_later_report_wins_per_estimator_and_says_so(tmp_path):
    first = write(tmp_path, "a.json", report({"x": {GN: ["fail"] * 3}, "y": {GN: ["fail"] * 3}}, torch="2.12"))
    second = write(tmp_path, "b.json", report({"x": {GN: ["pass"] * 3}}, torch="2.13", fixture=False))
    boards = L.merge(load_any(p) for p in (first, second))
    b = boards["tiny"]
    assert [r["source"] for r in b["reports"]] == ["a.json", "b.json"]
    assert b["estimators"]["x"]["cells"][GN]["label"] == "PASS" and b["estimators"]["x"]["from"] == 1
    assert b["estimators"]["y"]["cells"][GN]["label"] == "FAIL" and b["estimators"]["y"]["from"] == 0
    assert b["fixture_checks_from"] == 0  # the last report that has self-checks
    assert L.merge_notes(b) == ["x: from report 2 (b.json), replacing report 1 (a.json)"]
    assert "the later report wins per estimator" in L.render_markdown(boards)
    # the other order: the first file's x wins
    back = L.merge(load_any(p) for p in (second, first))["tiny"]
    assert back["estimators"]["x"]["cells"][GN]["label"] == "FAIL"


def test_a_failed_fixture_self_check_turns_every_gate_on_the_board(tmp_path):
    """A report written before sessions failed every gate on a failed self-check (fdd7b36) reads 'AS EXPECTED' or
    'GATE PASS' beside 'sketch_ranking FAIL': the board applies the session's rule (gate.with_fixture)."""
    doc = report({"x": {GN: ["pass"] * 3}, "y": {GN: ["fail"] * 3}},
                 gates={"x": "x: GATE PASS", "y": "y: GATE FAIL: gradient_norm_baseline FAIL 3/3"})
    bad = json.loads(json.dumps(doc))
    bad["results"].append({"nodeid": "checks/test_sketch_ranking.py::test_sketch_ranking", "outcome": "failed",
                           "reason": "AssertionError: tracin gap 0.044 > 0.03",
                           "metrics": {"check": "sketch_ranking", "key_figure": "tracin rho 0.988, gap 0.044"}})
    b = L.merge([load_any(write(tmp_path, "bad.json", bad))])["tiny"]
    for name in ("x", "y"):
        g = b["estimators"][name]["gate"]
        assert g["ok"] is False and g["fixture"] == ["fixture self-check sketch_ranking FAILED"], g
        assert g["line"].startswith(f"{name}: FIXTURE FAILED, NOT JUDGED: fixture self-check sketch_ranking FAILED")
        assert "as reported: " + doc["gates"][["x", "y"].index(name)]["line"] in g["line"]
        assert L.gate_head(b["estimators"][name]) == "FIXTURE FAILED, NOT JUDGED"
    page, md = L.render_html({"tiny": b}), L.render_markdown({"tiny": b})
    assert "GATE PASS" not in md.split("as reported")[0] and md.count("FIXTURE FAILED, NOT JUDGED") >= 4
    assert ">FIXTURE FAILED, NOT JUDGED</td>" in page
    # merged again (a slim file written from the board): the rule is applied once
    again = L.merge([b])["tiny"]["estimators"]["x"]["gate"]["line"]
    assert again.count("FIXTURE FAILED, NOT JUDGED") == 1
    # control: every self-check passed, the reported gates stand
    ok = L.merge([load_any(write(tmp_path, "ok.json", doc))])["tiny"]
    assert ok["estimators"]["x"]["gate"] == {"ok": True, "expected": False, "line": "x: GATE PASS"}
    assert L.gate_head(ok["estimators"]["x"]) == "GATE PASS" and L.gate_head(ok["estimators"]["y"]) == "GATE FAIL"


def test_fixtures_stay_apart_and_a_slim_file_reads_back(tmp_path):
    tiny = write(tmp_path, "t.json", report({"x": {GN: ["fail"] * 3}}))
    bpe = write(tmp_path, "b.json", report({"x": {GN: ["pass"] * 3}}, profile="bpe"))
    boards = L.merge(load_any(p) for p in (tiny, bpe))
    assert list(boards) == ["tiny", "bpe"]
    files = docgen.write_slims(boards, tmp_path / "results")
    assert [p.name for p in files] == ["tiny.json", "bpe.json"]
    again = L.merge(load_any(p) for p in files)
    assert again == boards
    assert L.render_markdown(again) == L.render_markdown(boards)  # the same page from the file (keys sorted)
    assert L.render_html(again) == L.render_html(boards)
    assert L.merge([*again.values(), *again.values()]) == boards  # the same report twice is kept once


@pytest.mark.parametrize("content, needle", [
    (None, "report file not found"),
    ("{not json", "is not a JSON report"),
    ({"schema": "bt-bench-report/9"}, "unknown version: schema 'bt-bench-report/9'"),
    ([1, 2], "unknown version: schema 'list'"),
    ({"schema": SCHEMA, "settings": {}, "results": {"a": 1}}, "malformed report: 'results' is dict"),
    ({"schema": SCHEMA, "settings": {}, "results": [1]}, "malformed report: results[0] is not an object"),
    ({"schema": SLIM_SCHEMA, "fixture": "tiny", "reports": []}, "malformed result file"),
    ({"schema": SLIM_SCHEMA, "fixture": "tiny", "reports": [{}], "estimators": {"a": {"cells": {}, "from": 3}}},
     "malformed result file"),
])
def test_bad_files_are_refused_in_one_line(tmp_path, capsys, content, needle):
    p = tmp_path / "r.json"
    if content is not None:
        p.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ValueError, match=None) as e:
        load_any(p)
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert board_cli.leaderboard_main([str(p), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bt-bench leaderboard: error: ") and needle in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()


def test_pages_hold_every_cell_gate_line_and_sort_script(tmp_path, capsys):
    p = write(tmp_path, "r.json", report({"x": {GN: ["fail"] * 3}, "y": {GN: ["pass"] * 3}},
                                         gates={"x": "x: GATE FAIL: g", "y": "y: GATE PASS"}))
    assert board_cli.leaderboard_main([str(p), "--out", str(tmp_path / "o"), "--slim", str(tmp_path / "s")]) == 0
    page = (tmp_path / "o" / "leaderboard.html").read_text()
    md = (tmp_path / "o" / "leaderboard.md").read_text()
    for text in ("x: GATE FAIL: g", "y: GATE PASS", "FAIL 3/3", "PASS 3/3", "lift 2.0"):
        assert text in page and text in md, text
    assert "<script>" in page and "http" not in page.replace("http-equiv", "")  # no external asset, no network
    assert (tmp_path / "s" / "tiny.json").is_file()


def _repo(tmp_path: Path, doc_text: str) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# x\n")
    (root / "docs" / "f.md").write_text(doc_text)
    return root


BLOCK = "a\n<!-- bt-bench:generated tiny-table -->\nhand-typed\n<!-- /bt-bench:generated -->\nb\n"


def test_import_fills_blocks_and_docs_check_catches_hand_edits(tmp_path, capsys):
    root = _repo(tmp_path, BLOCK)
    rep = write(tmp_path, "r.json", report({"x": {GN: ["fail"] * 3}}))
    assert board_cli.results_main(["import", str(rep), "--root", str(root)]) == 0
    text = (root / "docs" / "f.md").read_text()
    assert "hand-typed" not in text and "| x | GATE FAIL | FAIL 3/3: lift 2.0" in text and text.endswith("-->\nb\n")
    assert (root / "docs" / "results.md").read_text().startswith("# Results")
    assert board_cli.results_main(["docs", "--check", "--root", str(root)]) == 0
    (root / "docs" / "f.md").write_text(text.replace("FAIL 3/3", "PASS 3/3"))
    assert board_cli.results_main(["docs", "--check", "--root", str(root)]) == 1
    assert "f.md" in capsys.readouterr().out
    assert board_cli.results_main(["docs", "--root", str(root)]) == 0
    assert (root / "docs" / "f.md").read_text() == text


def test_import_merges_into_the_existing_result_file(tmp_path):
    root = _repo(tmp_path, "")
    a = write(tmp_path, "a.json", report({"x": {GN: ["fail"] * 3}, "y": {GN: ["fail"] * 3}}))
    b = write(tmp_path, "b.json", report({"y": {GN: ["pass"] * 3}}))
    docgen.import_reports(root, [a])
    docgen.import_reports(root, [b])
    board = load_any(root / "docs" / "results" / "tiny.json")
    assert sorted(board["estimators"]) == ["x", "y"] and board["estimators"]["y"]["cells"][GN]["label"] == "PASS"


def test_unknown_block_names_the_file_and_block(tmp_path, capsys):
    root = _repo(tmp_path, BLOCK.replace("tiny-table", "bpe-table"))
    rep = write(tmp_path, "r.json", report({"x": {GN: ["fail"] * 3}}))
    assert board_cli.results_main(["import", str(rep), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert "docs/f.md" in err and "'bpe-table'" in err and "no result file for fixture 'bpe'" in err
