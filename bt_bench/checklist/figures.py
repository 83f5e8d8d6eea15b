"""Key figures: the one short string per check that a table cell shows (``lift 4.3 vs norm 4.5; window lift 1.0``),
computed from a (combined) ``Verdict.to_dict()``: means over seeds/draws and the lowest CI lower bound ('lo').

Each check's module gives the parts of its figure from the verdict's units (``CheckSpec.figure_parts``);
:func:`figure` turns them into the key-figure function, and ``bt_bench.checklist.registry.key_figure`` picks the
verdict's check. Pure functions over JSON-ready dicts, so the pytest glue, evidence replay and the report share
them. Units are read back from the metric names :func:`bt_bench.checklist.base.combine` prefixes
(``seed2/draw1/auc``): :func:`units_of_verdict`.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable


_UNIT = re.compile(r"^seed(-?\d+)(?:/draw(-?\d+))?/(.+)$")


def units_of_verdict(verdict: dict) -> list[dict]:
    """Split a combined Verdict.to_dict() into units by its metric prefixes; outcomes from its reason."""
    found: dict[tuple, dict] = {}
    plain = {}
    for name, m in (verdict.get("metrics") or {}).items():
        hit = _UNIT.match(name)
        if not hit:
            plain[name] = m
            continue
        s, d, rest = int(hit[1]), None if hit[2] is None else int(hit[2]), hit[3]
        found.setdefault((s, d), {})[rest] = m
    reason = verdict.get("reason", "")
    out = []
    for (s, d), ms in found.items():
        lab = f"seed{s}" + ("" if d is None else f"/draw{d}")
        hit = re.search(rf"(?:^|; |: ){re.escape(lab)}: (pass|fail|error|skip|unsupported): ", reason)
        out.append({"seed": s, "draw": d, "outcome": hit[1] if hit else None, "metrics": ms})
    if plain:  # an uncombined verdict (one unit) or figures over all units (a check pooled over seeds)
        out.append({"seed": None, "draw": None, "outcome": verdict.get("outcome"), "metrics": plain})
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
    """A key-figure function (Verdict.to_dict() -> str) from a function of the verdict's units to its parts;
    with no figure recorded, a skipped or errored verdict shows its shortened reason."""
    def key(verdict: dict) -> str:
        text = ", ".join(p for p in parts(units_of_verdict(verdict)) if p)
        if not text and verdict.get("outcome") in ("skip", "error"):
            text = short_reason(verdict.get("reason", ""))
        if verdict.get("outcome") == "unsupported":  # what even a perfect ranking gets, then the estimator's
            perfect = [f"{k[len('perfect_'):]} lo {m['ci_low']:+.3f}" for k, m in (verdict.get("metrics") or {}).items()
                       if k.startswith("perfect_") and m.get("ci_low") is not None]
            text = "unsupported: perfect " + (", ".join(perfect) or "ranking fails") + (f"; {text}" if text else "")
        return text

    return key
