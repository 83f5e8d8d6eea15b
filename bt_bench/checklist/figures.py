"""Key figures: the one short string per check that a table cell shows (``lift 4.3 vs norm 4.5; window lift 1.0``),
computed from a (combined) ``Verdict.to_dict()``: means over seeds/draws and the lowest CI lower bound ('lo').

One figure function per check (:data:`FIGURES`, also each ``CheckSpec.key_figure`` of the registry); :func:`key_figure`
picks the verdict's. Pure functions over JSON-ready dicts, so the pytest glue, evidence replay and the report share
them. Units are read back from the metric names :func:`bt_bench.checklist.base.combine` prefixes
(``seed2/draw1/auc``): :func:`units_of_verdict`.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable


# ------------------------------------------------------------------------------------------------- units
def units(metrics: dict) -> list[dict]:
    """Per-unit verdicts of a result's metrics: ``per_unit`` when recorded, else split from the combined
    verdict, whose metric names carry the unit as prefix (``seed2/draw1/auc``, see base.combine).
    Each unit: {seed, draw, outcome, metrics: {name: {value, ci_low, ci_high, ...}}}."""
    if metrics.get("per_unit"):
        return [{"seed": u.get("seed"), "draw": u.get("draw"), "outcome": u["verdict"].get("outcome"),
                 "metrics": u["verdict"].get("metrics", {})} for u in metrics["per_unit"]]
    verdict = metrics.get("verdict") or {}
    if "seed" in metrics:  # one cell per seed (and draw): the verdict is that unit's own
        return [{"seed": metrics["seed"], "draw": metrics.get("draw"), "outcome": verdict.get("outcome"),
                 "metrics": verdict.get("metrics", {})}]
    return units_of_verdict(verdict)


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
    if plain:  # an uncombined verdict (one unit) or figures over all units (seed_draw_variance)
        out.append({"seed": None, "draw": None, "outcome": verdict.get("outcome"), "metrics": plain})
    return out


# ----------------------------------------------------------------------------------------------- helpers
def _vals(us: list[dict], name: str, field: str = "value") -> list[float]:
    return [u["metrics"][name][field] for u in us
            if name in u["metrics"] and u["metrics"][name].get(field) is not None]


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _fig(name: str, us: list[dict], fmt: str = "{:.2f}", lo: bool = True) -> str | None:
    """'0.63 (lo 0.56)': the mean over units and the lowest CI lower bound; None when not recorded."""
    v = _vals(us, name)
    if not v:
        return None
    low = _vals(us, name, "ci_low")
    return fmt.format(_mean(v)) + (f" (lo {fmt.format(min(low))})" if lo and low else "")


def _lifts(us: list[dict]) -> tuple[list[float], list[float], list[float]]:
    """Per unit: lift of the estimator, of the stronger norm_only variant, and window lift."""
    lift, norm, win = [], [], []
    for u in us:
        m = u["metrics"]
        ch = (m.get("chance") or {}).get("value")
        if ch and (m.get("precision") or {}).get("value") is not None:
            lift.append(m["precision"]["value"] / ch)
            ns = [m[k]["value"] for k in ("norm_precision", "norm_only_precision", "norm_only_step_precision")
                  if (m.get(k) or {}).get("value") is not None]
            if ns:
                norm.append(max(ns) / ch)
        wc = (m.get("window_chance") or {}).get("value")
        if wc and (m.get("window_precision") or {}).get("value") is not None:
            win.append(m["window_precision"]["value"] / wc)
    return lift, norm, win


def short_reason(reason: str, n: int = 44) -> str:
    """The innermost reason of a (possibly combined) verdict, shortened for a table cell."""
    r = re.sub(r"^.*?seed/draw\(s\): ", "", str(reason))
    r = re.sub(r"^[\w/]+: (pass|fail|error|skip|unsupported): ", "", r)
    r = re.sub(r"^Skipped: ", "", r.strip().strip("()").split("', ")[-1].strip("'\""))
    return textwrap.shorten(r, n, placeholder=" …")


# --------------------------------------------------------------------------------- one figure per check
def _gradient_norm_baseline(us: list[dict]) -> list[str | None]:
    parts: list[str | None] = []
    lift, norm, win = _lifts(us)
    if lift:
        parts.append(f"lift {_mean(lift):.1f}" + (f" vs norm {_mean(norm):.1f}" if norm else ""))
    if win:
        parts.append(f"window lift {_mean(win):.2f}")
    return parts


def _fluency_confound(us: list[dict]) -> list[str | None]:
    raw, flu = _fig("auc", us, lo=False), _fig("fluency_auc", us, lo=False)
    return [raw and f"AUC {raw}" + (f" vs fluency {flu}" if flu else ""),
            (r := _fig("residualized_auc", us)) and f"resid {r}"]


def _headroom(us: list[dict]) -> list[str | None]:
    g = _fig("window_normalized_gain", us)
    parts: list[str | None] = [g and f"gain {g}", (a := _fig("unsaturated_auc", us)) and f"unsat AUC {a}"]
    if not g:
        parts.append((h := _fig("window_headroom", us, lo=False)) and f"headroom {h}")
    return parts


def _seed_draw_variance(us: list[dict]) -> list[str | None]:
    return [(r := _fig("residualized_auc_mean", us, lo=False)) and f"resid {r}",
            (lo := _fig("residualized_auc_min_ci_low", us, lo=False)) and f"min lo {lo}",
            (s := _fig("min_draw_spearman", us, lo=False)) and f"rho {s}",
            (v := _fig("variance_share_seed", us, lo=False)) and f"seed share {v}"]


def _trigger_token_alignment(us: list[dict]) -> list[str | None]:
    return [(d := _fig("in_context_minus_placebo", us, "{:+.2f}")) and f"ctx-placebo {d}",
            (c := _fig("in_context_mean", us, "{:+.2f}")) and f"cos {c}",
            (k := _fig("constructed_mean", us, "{:+.2f}", lo=False)) and f"constructed {k}"]


def _advantage_baseline(us: list[dict]) -> list[str | None]:
    return [(a := _fig("precision_minus_advantage", us, "{:+.3f}")) and f"vs adv {a}",
            (w := _fig("window_precision_minus_advantage", us, "{:+.3f}")) and f"window {w}"]


def _target_dependence(us: list[dict]) -> list[str | None]:
    return [(p := _fig("precision_real_minus_placebo", us, "{:+.3f}")) and f"prec real-placebo {p}",
            (a := _fig("auc_real_minus_placebo", us, "{:+.2f}")) and f"AUC real-placebo {a}"]


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

    key.__name__ = key.__qualname__ = parts.__name__.lstrip("_") + "_figure"
    key.__doc__ = f"Key figure of {parts.__name__.lstrip('_')} from a Verdict.to_dict()."
    return key


FIGURES: dict[str, Callable[[dict], str]] = {fn.__name__.lstrip("_"): figure(fn) for fn in (
    _gradient_norm_baseline, _fluency_confound, _headroom, _seed_draw_variance, _trigger_token_alignment,
    _advantage_baseline, _target_dependence)}

def _no_figure(us: list[dict]) -> list[str | None]:
    return []


_NO_FIGURE = figure(_no_figure)


def key_figure(verdict: dict) -> str:
    """One short string for a table cell from a (combined) Verdict.to_dict(): means over seeds/draws and
    the lowest CI lower bound ('lo'), e.g. ``lift 4.3 vs norm 4.5; window lift 1.0``."""
    return FIGURES.get(verdict.get("check"), _NO_FIGURE)(verdict)
