"""Compare two JSON reports cell by cell: ``python -m bt_bench.report.compare A.json B.json``.

A *cell* here is one (check, estimator, seed, draw): one unit of a verdict (``seed``/``draw`` ``*`` for figures
over all units, or a result without a verdict such as a fixture self-check, compared by its pytest outcome).  Its
key figure is that unit's own (the figure code applied to the unit alone).  Cells are matched by that key, never by the order of
the results, so the report of a ``pytest -n 2`` run compares equal to its own reshuffled copy.  Compared: the
outcome and the key figure; a cell present in only one report is a difference too.  Exit 1 when anything
differs, 0 when nothing does, 2 when a file is not a report.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .schema import load_report
from bt_bench.checklist.gate import cell_of
from bt_bench.checklist.figures import cell_units
from bt_bench.checklist.registry import key_figure



def _show(x) -> str:
    return "*" if x is None else str(x)


def report_cells(report: dict) -> dict[tuple, list[tuple[str, str]]]:
    """{(check, estimator, seed, draw): [(outcome, key figure), ...]} of a report (a list: a key recorded twice
    keeps both, sorted, so duplicates compare too)."""
    out: dict[tuple, list[tuple[str, str]]] = {}
    results = [r for r in report.get("results") or [] if isinstance(r, dict)]
    for r in results:
        c, e = cell_of(r)
        v = r.get("cell")
        if not v:
            m = r.get("metrics") or {}
            key = (c, e, _show(m.get("seed")), _show(m.get("draw")))
            out.setdefault(key, []).append((str(r.get("outcome")), str(m.get("key_figure") or "")))
            continue
        for u in cell_units(v):
            one = {"check": v.get("check", c), "estimator": e, "outcome": u.get("outcome"),
                   "reason": u.get("reason") or "", "units": [u]}
            out.setdefault((c, e, _show(u.get("seed")), _show(u.get("draw"))), []).append(
                (str(u.get("outcome")), key_figure(one)))
    return {k: sorted(v) for k, v in out.items()}


def compare_cells(a: dict, b: dict) -> tuple[int, list[str]]:
    """(number of cells compared (the union of both reports' keys), one line per differing cell)."""
    ca, cb = report_cells(a), report_cells(b)
    keys = sorted(set(ca) | set(cb), key=lambda k: tuple(map(str, k)))
    diffs = []
    for k in keys:
        name = f"{k[0]}[{k[1]}] seed {k[2]} draw {k[3]}"
        if k not in cb:
            diffs.append(f"{name}: only in A ({_fmt(ca[k])})")
        elif k not in ca:
            diffs.append(f"{name}: only in B ({_fmt(cb[k])})")
        elif ca[k] != cb[k]:
            diffs.append(f"{name}: A {_fmt(ca[k])} | B {_fmt(cb[k])}")
    return len(keys), diffs


def _fmt(vals: list[tuple[str, str]]) -> str:
    return "; ".join(f"{o}" + (f" '{k}'" if k else "") for o, k in vals)


def compare_reports(a: dict, b: dict) -> list[str]:
    """The differences (outcome, key figure, presence) of every (check, estimator, seed, draw) cell of two
    reports, matched by key, not by order; empty when they agree."""
    return compare_cells(a, b)[1]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or any(a.startswith("-") for a in args):
        print("usage: python -m bt_bench.report.compare A.json B.json", file=sys.stderr)
        return 2
    try:
        a, b = (load_report(p) for p in args)
    except ValueError as e:
        print(f"compare: error: {e}", file=sys.stderr)
        return 2
    n, diffs = compare_cells(a, b)
    print(f"{n} cells compared, {len(diffs)} differ")
    for d in diffs:
        print(f"  {d}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
