"""Per-unit data of a recorded result, and the cells' key figures.

A *unit* is one seed (or seed and draw) of a check: ``{seed, draw, outcome, reason, metrics}``, metrics as
``{name: {value, ci_low, ci_high, ...}}``.  Verdicts carry them structured (``verdict["units"]``, written by
the checklist's ``combine``); :func:`units` reads those.  Only results recorded without them (older
JSON files, and verdicts of a single unit) go through :func:`legacy_units`, the one place that still splits
metric-name prefixes.

The cells' key figures (``key_figure``; ``units_of_verdict``, the prefix split; ``short_reason``) are computed by
``bt_bench.checklist.figures``, shared with the pytest glue and the replay; they are re-exported here.
"""

from __future__ import annotations

from bt_bench.checklist.figures import units_of_verdict

__all__ = ["legacy_units", "units"]
_RESERVED = ("outcome", "reason", "metrics")


def _unit(u: dict) -> dict:
    return {"seed": u.get("seed"), "draw": u.get("draw"), "outcome": u.get("outcome"), "reason": u.get("reason"),
            "metrics": u.get("metrics") or {}}


def units(metrics: dict) -> list[dict]:
    """The units of a result's metrics: the verdict's structured ``units``, plus one unit (seed None) of the
    figures over all units when the verdict has any (e.g. the variance shares of a check pooled over seeds)."""
    verdict = metrics.get("verdict") or {}
    if not verdict.get("units"):
        return legacy_units(metrics)
    out = [_unit(u) for u in verdict["units"]]
    prefixed = {"/".join(f"{k}{v}" for k, v in u.items() if k not in _RESERVED) + "/" + name
                for u in verdict["units"] for name in (u.get("metrics") or {})}
    # a verdict of one unit carries that unit's metrics unprefixed: they are not figures over all units
    own = {name for name in (verdict["units"][0].get("metrics") or {})} if len(verdict["units"]) == 1 else set()
    plain = {k: m for k, m in (verdict.get("metrics") or {}).items() if k not in prefixed and k not in own}
    if plain:
        out.append({"seed": None, "draw": None, "outcome": verdict.get("outcome"), "reason": verdict.get("reason"),
                    "metrics": plain})
    return out


# ----------------------------------------------------------------- legacy: results without structured units
def legacy_units(metrics: dict) -> list[dict]:
    """Units of a result recorded without ``verdict["units"]`` (older JSON files; a verdict of one unit):
    ``per_unit`` when recorded, the verdict itself when the result is one seed's, else split from the combined
    verdict, whose metric names carry the unit as prefix (``seed2/draw1/auc``)."""
    if metrics.get("per_unit"):
        return [{"seed": u.get("seed"), "draw": u.get("draw"), "outcome": u["verdict"].get("outcome"),
                 "reason": u["verdict"].get("reason"), "metrics": u["verdict"].get("metrics", {})}
                for u in metrics["per_unit"]]
    verdict = metrics.get("verdict") or {}
    if "seed" in metrics:  # one cell per seed (and draw): the verdict is that unit's own
        return [{"seed": metrics["seed"], "draw": metrics.get("draw"), "outcome": verdict.get("outcome"),
                 "reason": verdict.get("reason"), "metrics": verdict.get("metrics", {})}]
    return units_of_verdict(verdict)
