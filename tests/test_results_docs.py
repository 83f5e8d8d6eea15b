"""The committed results and the docs generated from them (bt_bench.report.docgen): regenerating docs/results.md and
every generated block of README.md and docs/*.md from docs/results/*.json changes nothing (so a hand edit of a
generated figure fails here), and the slim result files stay slim (a few tens of KB, no per-unit arrays)."""

from __future__ import annotations

import json
from pathlib import Path

from bt_bench.checklist.gate import NO_VERDICT, as_declared
from bt_bench.report import docgen
from bt_bench.report.slim import SLIM_SCHEMA, load_any

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / docgen.RESULTS_DIR).glob("*.json"))


def test_result_files_exist_for_tiny_and_bpe():
    assert {p.stem for p in FILES} >= {"tiny", "bpe"}, FILES
    for p in FILES:
        doc = load_any(p)
        assert doc["schema"] == SLIM_SCHEMA and docgen.slug(doc["fixture"]) == p.stem, p


def _longest_list(x) -> int:
    if isinstance(x, dict):
        return max((_longest_list(v) for v in x.values()), default=0)
    if isinstance(x, list):
        return max([len(x), *(_longest_list(v) for v in x)])
    return 0


def test_result_files_are_slim():
    for p in FILES:
        assert p.stat().st_size < 64 * 1024, f"{p.name}: {p.stat().st_size} bytes"
        assert _longest_list(json.loads(p.read_text())) <= 20, f"{p.name} holds a long array"


def test_generated_docs_are_up_to_date():
    changed = docgen.regenerate(ROOT, check=True)
    assert not changed, (f"generated docs differ from docs/results/*.json: {[str(p.relative_to(ROOT)) for p in changed]}"
                         "; regenerate with `bt-bench results docs` (and do not edit generated blocks by hand)")


def test_findings_tables_are_generated():
    text = (ROOT / "docs" / "findings.md").read_text()
    for name in ("tiny-table", "bpe-table"):
        assert f"<!-- bt-bench:generated {name} -->" in text, name


def test_cells_agree_with_the_recorded_gates():
    """A cross-check of the slim cells (labels recomputed from the results by bt_bench.checklist.gate) against the
    gate the plugin decided in the same session: a built-in recorded AS EXPECTED has every cell at its declared
    label, one that deviates has at least one cell off it. Under a failed fixture self-check (bpe) the gate is never
    ok, and its line names deviations after NO_VERDICT exactly when a cell is off its declared label."""
    seen = 0
    for p in FILES:
        for name, est in load_any(p)["estimators"].items():
            g = est.get("gate") or {}
            if not g.get("expected"):
                continue
            off = [c for c, cell in est["cells"].items() if not as_declared(cell["label"], cell.get("expected"))]
            if g.get("fixture"):
                assert not g["ok"] and NO_VERDICT in g["line"], (p.name, name, g["line"])
                assert bool(off) == bool(g["line"].split(NO_VERDICT, 1)[1].strip("; ")), (p.name, name, g["line"], off)
            else:
                assert (not off) == bool(g["ok"]), (p.name, name, g["line"], off)
            seen += 1
    assert seen >= 2 * 11, seen  # every built-in on tiny and bpe


def test_the_checks_index_is_generated_from_the_registry():
    from bt_bench.checklist.registry import CHECKS

    text = docgen.checks_index()
    assert [ln.split("|")[2].strip() for ln in text.splitlines()[2:]] == [f"`{n}`" for n in CHECKS]
    assert text in (ROOT / "docs" / "checklist.md").read_text()
