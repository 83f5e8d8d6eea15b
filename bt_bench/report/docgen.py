"""Generated docs: ``docs/results.md`` and every generated block of ``README.md`` and ``docs/*.md``, from the slim
result files in ``docs/results/`` (one per fixture, :mod:`.slim`).

A generated block sits between two markers; everything between them is replaced on regeneration::

    <!-- bt-bench:generated tiny-table -->
    ...
    <!-- /bt-bench:generated -->

A block's name is a fixture's slug (``tiny``, ``bpe``, ``tiny-gate-seed-5``) and a kind: ``table`` (the cells,
one row per estimator), ``fixture-checks`` (the self-checks' line), ``gates`` (the gate lines), ``provenance``
(where the figures come from). :func:`regenerate` rewrites them (or, ``check=True``, only lists the files that
differ: a hand edit of a generated figure is then a test failure, ``tests/test_results_docs.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from . import leaderboard as L
from .slim import dumps, load_any

RESULTS_DIR = Path("docs") / "results"
RESULTS_MD = Path("docs") / "results.md"
KINDS = ("fixture-checks", "provenance", "table", "gates")
BLOCK = re.compile(r"(<!-- bt-bench:generated (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /bt-bench:generated -->)",
                   re.S)
COMMAND = "bt-bench results docs"
INTRO = ("Generated from the slim result files in [results/](results/) (one per fixture, made from a full "
         "`--bt-report` JSON report by `bt-bench results import REPORT.json`) by `bt-bench results docs`; do not "
         "edit by hand (`tests/test_results_docs.py` regenerates this page and every generated block of the docs "
         "and fails on any difference). The whole page as HTML with sortable columns: `bt-bench leaderboard "
         "docs/results/*.json --out DIR`.")


def slug(fixture: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", fixture).strip("-").lower() or "unknown"


def load_boards(root: str | Path) -> dict[str, dict]:
    """{fixture: merged slim} of every ``docs/results/*.json`` under ``root`` (by file name)."""
    files = sorted((Path(root) / RESULTS_DIR).glob("*.json"))
    return L.merge(load_any(p) for p in files)


def _provenance(board: Mapping) -> list[str]:
    out = []
    for name, text in L.provenance_lines(board):
        out.append(f"From {name}: {L._md(text)}.")
    notes = L.merge_notes(board)
    if len(board["reports"]) > 1:
        out.append(f"Merged: {L.MERGE_RULE}." + (" " + "; ".join(notes) + "." if notes else ""))
    return out


def checks_index() -> str:
    """The ``checks-index`` block: one row per check of the registry (``bt_bench.checklist.registry``), in order."""
    from bt_bench.checklist.registry import CHECKS

    unit = {"seed": "per seed", "seed_draw": "per seed and draw", "all": "over every seed and draw"}
    rows = ["| # | check | judged | compared with | passes when | thresholds it owns |", "|---|---|---|---|---|---|"]
    rows += [f"| {s.order} | `{s.name}` | {unit[s.unit]} | {s.reference or '-'} | {s.title} | "
             f"{', '.join(f'`{t}`' for t in s.thresholds) or '-'} |" for s in CHECKS.values()]
    return "\n".join(rows) + "\n"


def block(boards: Mapping[str, Mapping], name: str) -> str:
    """The text of one generated block (ValueError naming the block when its fixture or kind is unknown)."""
    if name == "checks-index":
        return checks_index()
    kind = next((k for k in KINDS if name.endswith("-" + k)), None)
    if kind is None:
        raise ValueError(f"generated block {name!r}: unknown kind (the name ends in one of {', '.join(KINDS)})")
    fx = name[: -len(kind) - 1]
    board = next((b for f, b in boards.items() if slug(f) == fx), None)
    if board is None:
        have = ", ".join(slug(f) for f in boards) or "none"
        raise ValueError(f"generated block {name!r}: no result file for fixture {fx!r} in {RESULTS_DIR} (have: {have})")
    if kind == "table":
        lines = L.markdown_table(board)
    elif kind == "fixture-checks":
        lines = [L.fixture_line(board)]
    elif kind == "gates":
        lines = [f"- `{(e.get('gate') or {}).get('line') or n + ': no gate line'}`" for n, e in board["estimators"].items()]
    else:
        lines = _provenance(board)
    return "\n".join(lines) + "\n"


def fill(text: str, boards: Mapping[str, Mapping], where: str = "") -> str:
    """``text`` with every generated block refilled."""
    def one(m: re.Match) -> str:
        try:
            body = block(boards, m["name"])
        except ValueError as e:
            raise ValueError(f"{where}: {e}" if where else str(e)) from None
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(one, text)


def results_page(boards: Mapping[str, Mapping]) -> str:
    return L.render_markdown(boards, intro=[INTRO]).replace("# bt-bench leaderboard", "# Results", 1)


def doc_files(root: str | Path) -> list[Path]:
    root = Path(root)
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def regenerate(root: str | Path, check: bool = False) -> list[Path]:
    """Rewrite ``docs/results.md`` and every generated block under ``root`` from ``docs/results/*.json``; returns the
    files whose text changed (``check``: would change; nothing is written)."""
    root = Path(root)
    boards = load_boards(root)
    if not boards:
        raise ValueError(f"no result files in {root / RESULTS_DIR} (make one: bt-bench results import REPORT.json)")
    changed = []
    wanted = {root / RESULTS_MD: results_page(boards)}
    for p in doc_files(root):
        if p != root / RESULTS_MD:
            old = p.read_text(encoding="utf-8")
            wanted[p] = fill(old, boards, str(p.relative_to(root)))
    for p, text in wanted.items():
        old = p.read_text(encoding="utf-8") if p.is_file() else None
        if old != text:
            changed.append(p)
            if not check:
                p.write_text(text, encoding="utf-8")
    return changed


def write_slims(boards: Mapping[str, Mapping], folder: str | Path) -> list[Path]:
    """One ``<fixture slug>.json`` per fixture in ``folder``; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for fx, board in boards.items():
        p = folder / f"{slug(fx)}.json"
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(dumps(board), encoding="utf-8")
        tmp.replace(p)
        out.append(p)
    return out


def import_reports(root: str | Path, reports: list[str | Path]) -> tuple[list[Path], list[Path]]:
    """Merge full reports (or slim files) into ``docs/results/<fixture>.json`` under ``root`` (the file already
    there first, so the reports given win per estimator), then regenerate the docs; returns (result files written,
    doc files changed)."""
    root = Path(root)
    new = [load_any(p) for p in reports]
    existing = {}
    for fx in dict.fromkeys(s["fixture"] for s in new):
        p = root / RESULTS_DIR / f"{slug(fx)}.json"
        if p.is_file():
            existing[fx] = load_any(p)
    boards = L.merge([*existing.values(), *new])
    written = write_slims(boards, root / RESULTS_DIR)
    return written, regenerate(root)
