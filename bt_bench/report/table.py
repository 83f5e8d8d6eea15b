"""The outcome matrix: which (check, estimator) cell a result belongs to, its label and key figure, and the
terminal table (:func:`format_table`).  Cells are labelled by the gate (``bt_bench.checklist.gate``): PASS, FAIL,
ERROR, NOT JUDGED, N/A, and INCOMPLETE where the report's ``completeness`` lists units of the cell that did not run.  Everything here reads results in :func:`canonical` order, so a table does not depend on
the order pytest (``-n 2``) delivered them in.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterable, Sequence

from bt_bench.checklist.figures import short_reason
from bt_bench.checklist.gate import FIXTURE, cell_of
from bt_bench.checklist.registry import CHECKS, FIXTURE_CHECKS, key_figure

LABELS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP",
          "xfail": "FAIL (expected)", "xpass": "PASS (xfail)"}  # pytest outcomes (fixture self-checks, counts)
# Which outcome names a cell that aggregates several tests (e.g. one per seed/draw): the most serious one.
SEVERITY = ("failed", "error", "xpass", "xfail", "passed", "skipped")
VERDICT_OUTCOME = {"pass": "passed", "fail": "failed", "error": "error", "skip": "skipped",
                   "unsupported": "skipped"}  # a unit no ranking can pass: pytest skips it, the gate counts it
# Cells are labelled by the gate (bt_bench.checklist.gate): PASS, FAIL, ERROR, NOT JUDGED, N/A.
COLORS = {"PASS": "#cdeccd", "FAIL": "#f6c6c6", "ERROR": "#f9ddb1", "NOT JUDGED": "#f9ddb1", "N/A": "#e8e8e8",
          "INCOMPLETE": "#f6c6c6", "passed": "#cdeccd", "failed": "#f6c6c6", "error": "#f9ddb1", "skipped": "#e8e8e8"}
GATE_ORDER = ("INCOMPLETE", "FAIL", "ERROR", "NOT JUDGED", "PASS", "N/A")



def _label(result: dict) -> str:
    """The gate label of one result; a fixture self-check (no cell) by its pytest outcome."""
    from bt_bench.checklist import gate
    if not result.get("cell"):
        return {"passed": "PASS", "failed": "FAIL", "skipped": "NOT JUDGED"}.get(result.get("outcome"), "ERROR")
    return gate.unit_label(result)


def _cell_outcome(results: Sequence[dict]) -> tuple[str, dict]:
    """The gate label of a cell holding one or more results (every-seed rule, bt_bench.checklist.gate.aggregate) and the
    first result carrying that label (its key figure and reason describe the cell)."""
    from bt_bench.checklist import gate
    labels = [_label(r) for r in results]
    label = gate.aggregate(labels)
    # an ERROR because too many units cannot support a verdict: described by the first of those
    return label, results[labels.index(gate.UNSUPPORTED if gate.unsupported_error(label, labels) else label)]


def _est_rank(order: Sequence[str]):
    pos = {e: i for i, e in enumerate(order)}
    return lambda e: (pos.get(e, len(pos)), e)


def _check_rank(c: str) -> tuple:
    known = (*CHECKS, *FIXTURE_CHECKS)  # checklist order, then the fixture self-checks
    return known.index(c) if c in known else len(known), c


def _num(x) -> tuple:
    return (0, x, "") if isinstance(x, (int, float)) and not isinstance(x, bool) else (1, 0, str(x))


def canonical(results: Iterable[dict], order: Sequence[str] = ()) -> list[dict]:
    """Results sorted by check (spec order), estimator (``order`` first, e.g. the settings' estimators, then by
    name), seed, draw and node id: one order whatever order they were recorded in."""
    est = _est_rank(order)

    def key(r: dict):
        c, e = cell_of(r)
        m = (r.get("cell") or {}).get("info") or {}
        return (_check_rank(c), est(e), _num(m.get("seed")), _num(m.get("draw")), str(r.get("nodeid", "")))

    return sorted(results, key=key)


def gaps(completeness: dict | None) -> dict[tuple[str, str], tuple[int, int]]:
    """{(check, estimator): (missing units, expected units)} of every cell the report's ``completeness`` lists
    units of that have no complete verdict (``bt_bench.checklist.grid``)."""
    from bt_bench.checklist import gate

    expected, missing = gate.expected_and_missing(completeness)
    return {(c, e): (len(ms), expected.get((e, c), len(ms))) for (e, c), ms in missing.items()}


def _cells(results: Iterable[dict], order: Sequence[str] = (), completeness: dict | None = None
           ) -> tuple[list[str], list[str], dict]:
    """Ordered checks, ordered estimators, {(check, estimator): [results]} (each cell's results in canonical
    order; a cell with units missing from ``completeness`` is there, empty when none of its units ran)."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for r in canonical(results, order):
        c, e = cell_of(r)
        cells.setdefault((c, e), []).append(r)
    for key in gaps(completeness):
        cells.setdefault(key, [])
    ests = sorted({e for c, e in cells if e != FIXTURE}, key=_est_rank(order))
    checks = sorted({c for c, e in cells if e != FIXTURE}, key=_check_rank)
    return checks, ests, cells


def cell_label(results: Sequence[dict], gap: tuple[int, int] | None = None) -> str:
    """The gate label of a cell: INCOMPLETE when ``gap`` (missing, expected) says units are missing, else the
    every-seed rule over its results."""
    return "INCOMPLETE" if gap and gap[0] else _cell_outcome(results)[0]


def cell_text(results: Sequence[dict], gap: tuple[int, int] | None = None) -> tuple[str, str]:
    """(label, key figure) of a cell; several results show the count of the deciding outcome. ``gap``: (missing,
    expected) units of an INCOMPLETE cell; its key figure then says what the units that ran show."""
    if gap and gap[0]:
        ran = ("ran: " + cell_text(results)[0].split(" (")[0]) if results else "none ran"
        exp = next(((r.get("cell") or {}).get("expected") for r in results
                    if (r.get("cell") or {}).get("expected")), None)
        return f"INCOMPLETE {gap[0]}/{gap[1]} missing" + (f" (expected {exp.get('label')}!)" if exp else ""), ran
    from bt_bench.checklist import gate

    outcome, worst = _cell_outcome(results)
    label = outcome
    labels = [_label(r) for r in results]
    if len(results) > 1 or gate.UNSUPPORTED in labels:
        label += " " + gate.count_text(outcome, labels)
    m = worst.get("cell") or worst.get("metrics") or {}
    exp = m.get("expected")
    if exp:  # a built-in's declared outcome: say whether the cell matches it
        label += " (expected)" if gate.as_declared(outcome, exp.get("label")) else f" (expected {exp.get('label')}!)"
    key = m.get("key_figure") or (key_figure(m) if worst.get("cell") else "")
    if not key and outcome in ("NOT JUDGED", "N/A", "ERROR") and worst.get("reason"):
        key = short_reason(worst["reason"])
    return label, key



# ------------------------------------------------------------------------------------------- table
def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _matrix(checks, ests, cells, w0: int, cw: int, gap: dict) -> list[str]:
    def row(parts: list[list[str]]) -> list[str]:
        h = max(len(p) for p in parts)
        return [" | ".join(f"{(p[i] if i < len(p) else ''):<{w}}" for p, w in zip(parts, [w0] + [cw] * len(ests)))
                .rstrip() for i in range(h)]

    sep = "-+-".join(["-" * w0] + ["-" * cw] * len(ests))
    lines = row([_wrap("check", w0)] + [_wrap(e, cw) for e in ests]) + [sep]
    for c in checks:
        parts = [_wrap(c, w0)]
        for e in ests:
            label, key = cell_text(cells[(c, e)], gap.get((c, e))) if (c, e) in cells else ("-", "")
            parts.append(_wrap(label, cw) + (_wrap(key, cw) if key else []))
        lines += row(parts) + [sep]
    return lines


def _by_check(checks, ests, cells, width: int, gap: dict) -> list[str]:
    """One line per cell grouped by check, for matrices too wide for the terminal."""
    ew = max((len(e) for e in ests), default=8)
    lines = []
    for c in checks:
        lines.append(c)
        for e in ests:
            if (c, e) not in cells:
                continue
            label, key = cell_text(cells[(c, e)], gap.get((c, e)))
            head = f"  {e:<{ew}}  {label:<24}"
            wrapped = _wrap(key, max(20, width - len(head) - 1)) if key else [""]
            lines.append(f"{head} {wrapped[0]}".rstrip())
            lines += [" " * (len(head) + 1) + k for k in wrapped[1:]]
    return lines


def format_table(results: list[dict], width: int | None = None, order: Sequence[str] = (),
                 completeness: dict | None = None) -> str:
    """The terminal summary of a list of results (the report's ``results``): a matrix checks x estimators
    when it fits in ``width`` columns (default: the terminal's, clamped to 80-140), else one line per cell
    grouped by check; fixture self-checks follow in their own block; a count of cell outcomes ends it.
    Estimators in ``order`` (e.g. the settings' estimators) come first, the others by name. ``completeness``
    (the report's): cells with units left out are INCOMPLETE, with the count of missing units."""
    width = width or min(140, max(80, shutil.get_terminal_size((120, 24)).columns))
    checks, ests, cells = _cells(results, order, completeness)
    gap = gaps(completeness)
    lines: list[str] = []
    if checks:
        w0 = min(24, max(len(c) for c in checks))
        natural = max((len(x) for c in checks for e in ests if (c, e) in cells
                       for x in cell_text(cells[(c, e)], gap.get((c, e)))), default=8)
        for cw in range(min(30, max(natural, 12)), 15, -1):
            if w0 + (cw + 3) * len(ests) <= width:
                lines = _matrix(checks, ests, cells, w0, cw, gap)
                break
        else:
            lines = _by_check(checks, ests, cells, width, gap)
    fixture = [(c, cell_text(rs)) for (c, e), rs in cells.items() if e == FIXTURE]
    if fixture:
        lines += ["", "fixture self-checks:"]
        fw = max(len(c) for c, _ in fixture)
        for c, (label, key) in fixture:
            head = f"  {c:<{fw}}  {label:<6}"
            wrapped = _wrap(key, max(20, width - len(head) - 1)) if key else [""]
            lines += [f"{head} {wrapped[0]}".rstrip()] + [" " * (len(head) + 1) + k for k in wrapped[1:]]
    counts: dict[str, int] = {}
    for key, rs in cells.items():
        o = cell_label(rs, gap.get(key))
        counts[o] = counts.get(o, 0) + 1
    lines += ["", f"{len(cells)} cells: " + ", ".join(f"{counts[o]} {o}" for o in GATE_ORDER if o in counts)]
    uns = _unsupported(cells)
    if uns:
        lines.append("units that cannot support a verdict (no ranking can pass them; neither PASS nor FAIL): "
                     + "; ".join(f"{c} {', '.join(units)} ({len(ests)} estimator{'s' if len(ests) > 1 else ''})"
                                 for c, (units, ests) in uns.items()))
    return "\n".join(lines)


def _unsupported(cells: dict) -> dict[str, tuple[list[str], set]]:
    """{check: (its UNSUPPORTED units as 'seed2/draw1', the estimators with such units)}, in table order."""
    from bt_bench.checklist import gate
    out: dict[str, tuple[list[str], set]] = {}
    for (c, e), rs in sorted(cells.items(), key=lambda kv: _check_rank(kv[0][0])):
        for r in rs:
            if e == FIXTURE or _label(r) != gate.UNSUPPORTED:
                continue
            m = (r.get("cell") or {}).get("info") or {}
            unit = "/".join(f"{k}{m[k]}" for k in ("seed", "draw") if m.get(k) is not None) or "?"
            units, ests = out.setdefault(c, ([], set()))
            if unit not in units:
                units.append(unit)
            ests.add(e)
    return out
