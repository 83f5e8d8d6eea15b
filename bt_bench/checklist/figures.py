"""Key figures: the one short string per check that a table cell shows (``lift 4.3 vs norm 4.5; window lift 1.0``),
computed from a cell (``bt_bench.checklist.result.CellResult.to_dict()``): means over its units and the lowest CI
lower bound ('lo').

Each check's module gives the parts of its figure from the cell's units (``CheckSpec.figure_parts``); :func:`figure`
turns them into the key-figure function, and ``bt_bench.checklist.registry.key_figure`` picks the cell's check. Pure
functions over JSON-ready dicts, so the pytest glue, evidence replay and the report share them.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable


def cell_units(cell: dict) -> list[dict]:
    """A cell's units (``CellResult.to_dict()``), then one unit (seed None) of its figures over all units, if any."""
    out = [dict(u) for u in cell.get("units") or ()]
    if cell.get("figures"):
        out.append({"seed": None, "draw": None, "outcome": cell.get("outcome"), "reason": cell.get("reason", ""),
                    "metrics": dict(cell["figures"])})
    return out


# ----------------------------------------------------------------------------------------------- helpers
def vals(us: list[dict], name: str, field: str = "value") -> list[float]:
    return [u["metrics"][name][field] for u in us
            if name in u["metrics"] and u["metrics"][name].get(field) is not None]


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def fig(name: str, us: list[dict], fmt: str = "{:.2f}", lo: bool = True) -> str | None:
    """'0.63 (lo 0.56)': the mean over units and the lowest CI lower bound; None when not recorded."""
    v = vals(us, name)
    if not v:
        return None
    low = vals(us, name, "ci_low")
    return fmt.format(mean(v)) + (f" (lo {fmt.format(min(low))})" if lo and low else "")


def short_reason(reason: str, n: int = 44) -> str:
    """The innermost reason of a (possibly combined) verdict, shortened for a table cell."""
    r = re.sub(r"^.*?seed/draw\(s\): ", "", str(reason))
    r = re.sub(r"^[\w/]+: (pass|fail|error|skip|unsupported): ", "", r)
    r = re.sub(r"^Skipped: ", "", r.strip().strip("()").split("', ")[-1].strip("'\""))
    return textwrap.shorten(r, n, placeholder=" …")


def figure(parts: Callable[[list[dict]], list[str | None]]) -> Callable[[dict], str]:
    """A key-figure function (a cell, ``CellResult.to_dict()`` -> str) from a function of the cell's units to its
    parts; with no figure recorded, a skipped or errored cell shows its shortened reason."""
    def key(cell: dict) -> str:
        us = cell_units(cell)
        text = ", ".join(p for p in parts(us) if p)
        if not text and cell.get("outcome") in ("skip", "error"):
            text = short_reason(cell.get("reason", ""))
        if cell.get("outcome") == "unsupported":  # what even a perfect ranking gets, then the estimator's
            perfect = [f"{k[len('perfect_'):]} lo {m['ci_low']:+.3f}" for u in us for k, m in u["metrics"].items()
                       if k.startswith("perfect_") and m.get("ci_low") is not None]
            text = "unsupported: perfect " + (", ".join(perfect) or "ranking fails") + (f"; {text}" if text else "")
        return text

    return key
