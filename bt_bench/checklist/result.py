"""The typed result of one cell: :class:`CellResult` and its :class:`Unit` s, with one outcome vocabulary
(``bt_bench.checklist.base.Outcome``, which verdicts use too). A cell's verdict becomes a ``CellResult`` in one place (:meth:`CellResult.of`), is serialised
once (:meth:`CellResult.to_dict`: the ``cell`` of a result in the JSON report, schema ``bt-bench-report/2``) and read
back once (:meth:`CellResult.from_dict`); the gate, the table, the plots and the comparison read its fields, never a
verdict's reason text.

Each figure is stored once: a unit's figures in its unit, the figures over all units (e.g. the variance shares of a
check pooled over seeds) in ``figures``. A combined ``Verdict`` also carries its units' figures under prefixed names
(``seed2/draw1/auc``, :func:`bt_bench.checklist.base.combine`); those stay in memory. :func:`upgrade_v1` turns the cell
of a report written before (schema 1: ``metrics.verdict`` with prefixed figures) into this form.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from bt_bench.checklist.base import Outcome


@dataclasses.dataclass(frozen=True)
class Unit:
    """One seed, or one seed and draw, of a cell (``part`` names a half of one, e.g. the training half of check 7
    half; ``sketch_seed`` the sketch seed its sketches and targets were under, None where no sketch was involved,
    e.g. replayed evidence); ``metrics``: {name: {value, ci_low, ci_high, n, ...}}."""

    seed: int | None
    draw: int | None
    outcome: Outcome | None
    reason: str = ""
    metrics: Mapping = dataclasses.field(default_factory=dict)
    part: str | None = None
    sketch_seed: int | None = None

    def to_dict(self) -> dict:
        d = {"seed": self.seed, "draw": self.draw, "outcome": None if self.outcome is None else self.outcome.value,
             "reason": self.reason, "metrics": dict(self.metrics)}
        return (d | ({"part": self.part} if self.part is not None else {})
                | ({"sketch_seed": self.sketch_seed} if self.sketch_seed is not None else {}))

    @classmethod
    def from_dict(cls, d: Mapping) -> Unit:
        o = d.get("outcome")
        return cls(d.get("seed"), d.get("draw"), None if o is None else Outcome(o), d.get("reason") or "",
                   dict(d.get("metrics") or {}), d.get("part"), d.get("sketch_seed"))


@dataclasses.dataclass(frozen=True)
class CellResult:
    """One cell: an estimator's verdict on one check for one seed (and draw), or over all of them.

    ``na``: a skip that is N/A by declaration (else NOT JUDGED). ``figures``: figures over all units, not any unit's.
    ``key_figure``: the table's short text. ``expected``: a built-in's declared outcome on the session's fixture
    ({label, reason}), None for anyone else. ``info``: what the cell recorded beside its verdict (seed, draw,
    checkpoint, the token-level ``series``)."""

    check: str
    estimator: str | None
    outcome: Outcome
    reason: str
    units: tuple[Unit, ...] = ()
    figures: Mapping = dataclasses.field(default_factory=dict)
    na: bool = False
    key_figure: str = ""
    expected: Mapping | None = None
    info: Mapping = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, verdict, estimator: str | None = None, *, na: bool = False, expected: Mapping | None = None,
           key_figure: str | None = None, **info) -> CellResult:
        """The one place a verdict (``bt_bench.checklist.base.Verdict``) becomes a cell result."""
        units = tuple(Unit(u.get("seed"), u.get("draw"), Outcome(u["outcome"]), u.get("reason") or "",
                           dict(u.get("metrics") or {}), u.get("part"), u.get("sketch_seed")) for u in verdict.units)
        # combine() copies each unit's figures under a prefixed name (seed2/draw1/auc): those are the units'; a
        # single unit's figures are its own; what is left is over all units
        own = set(verdict.units[0].get("metrics") or {}) if len(verdict.units) == 1 else set()
        figures = {k: (m.to_dict() if hasattr(m, "to_dict") else dict(m)) for k, m in verdict.metrics.items()
                   if "/" not in k and k not in own}
        out = cls(verdict.check, estimator or verdict.estimator, Outcome(verdict.outcome), verdict.reason, units,
                  figures, na and verdict.outcome == "skip", "", expected, dict(info))
        if key_figure is None:
            from bt_bench.checklist.registry import key_figure as figure_of

            key_figure = figure_of(out.to_dict())
        return dataclasses.replace(out, key_figure=key_figure)

    @property
    def expected_failure(self) -> str | None:
        """The declared reason a built-in fails this check, when it is declared to (pytest's xfail)."""
        e = self.expected or {}
        return e.get("reason") if e.get("label") == "FAIL" else None

    def unit_dicts(self) -> list[dict]:
        """Every unit as a dict, then one unit (seed None) holding the figures over all units, if any."""
        out = [u.to_dict() for u in self.units]
        if self.figures:
            out.append({"seed": None, "draw": None, "outcome": self.outcome.value, "reason": self.reason,
                        "metrics": dict(self.figures)})
        return out

    def to_dict(self) -> dict:
        """The JSON form (a result's ``cell``); the one serialisation."""
        return {"check": self.check, "estimator": self.estimator, "outcome": self.outcome.value, "na": self.na,
                "reason": self.reason, "units": [u.to_dict() for u in self.units], "figures": dict(self.figures),
                "key_figure": self.key_figure, "expected": None if self.expected is None else dict(self.expected),
                "expected_failure": self.expected_failure, **{"info": dict(self.info)}}

    @classmethod
    def from_dict(cls, d: Mapping) -> CellResult:
        return cls(d["check"], d.get("estimator"), Outcome(d["outcome"]), d.get("reason") or "",
                   tuple(Unit.from_dict(u) for u in d.get("units") or ()), dict(d.get("figures") or {}),
                   bool(d.get("na")), d.get("key_figure") or "", d.get("expected"), dict(d.get("info") or {}))


# --------------------------------------------------------------- reports written before (schema 1)
_PREFIX = re.compile(r"^seed(-?\d+)(?:/draw(-?\d+))?/(.+)$")
_INFO = ("seed", "draw", "checkpoint", "series")


def upgrade_v1(metrics: Mapping) -> dict:
    """The ``cell`` (this module's JSON form) of a schema-1 result's ``metrics`` (``{check, estimator, verdict,
    key_figure, expected, expected_failure, per_unit?, seed?, draw?, checkpoint?, series?}``): its units from the
    verdict's ``units`` when recorded, else from ``per_unit``, else from the metric prefixes and the reason text
    (the only place that still reads a reason); figures over all units kept once."""
    v = metrics.get("verdict") or {}
    ms = dict(v.get("metrics") or {})
    if v.get("units"):
        units = [dict(u) for u in v["units"]]
        for u in units:  # a unit recorded without its figures: they are in the verdict under its prefix
            if not u.get("metrics") and len(units) > 1:
                label = f"seed{u.get('seed')}" + ("" if u.get("draw") is None else f"/draw{u['draw']}") + "/"
                u["metrics"] = {k[len(label):]: m for k, m in ms.items()
                                if k.startswith(label) and "/" not in k[len(label):]}
    elif metrics.get("per_unit"):
        units = [{"seed": u.get("seed"), "draw": u.get("draw"), "outcome": u["verdict"].get("outcome"),
                  "reason": u["verdict"].get("reason") or "", "metrics": u["verdict"].get("metrics") or {}}
                 for u in metrics["per_unit"]]
    elif "seed" in metrics:  # one cell per seed (and draw): the verdict is that unit's own
        units = [{"seed": metrics["seed"], "draw": metrics.get("draw"), "outcome": v.get("outcome"),
                  "reason": v.get("reason") or "", "metrics": ms}]
    else:
        units = _units_from_prefixes(v)
    owned = set()
    for u in units:
        label = f"seed{u.get('seed')}" + ("" if u.get("draw") is None else f"/draw{u['draw']}")
        owned |= {f"{label}/{k}" for k in (u.get("metrics") or {})} | (
            set(u.get("metrics") or {}) if len(units) == 1 else set())
    cell = {"check": metrics.get("check") or v.get("check"), "estimator": metrics.get("estimator") or
            v.get("estimator"), "outcome": v.get("outcome"), "na": bool(v.get("na")), "reason": v.get("reason") or "",
            "units": [{"seed": u.get("seed"), "draw": u.get("draw"), "outcome": u.get("outcome"),
                       "reason": u.get("reason") or "", "metrics": dict(u.get("metrics") or {}),
                       **({"part": u["part"]} if u.get("part") else {})} for u in units],
            "figures": {k: m for k, m in ms.items() if k not in owned}, "key_figure": metrics.get("key_figure") or "",
            "expected": metrics.get("expected"), "expected_failure": metrics.get("expected_failure"),
            "info": {k: metrics[k] for k in _INFO if k in metrics}}
    return cell


def _units_from_prefixes(verdict: Mapping) -> list[dict]:
    """Units of a schema-1 combined verdict without recorded units: from its metric prefixes, outcomes from its
    reason (``seed2/draw1: fail: ...``)."""
    found: dict[tuple, dict] = {}
    for name, m in (verdict.get("metrics") or {}).items():
        hit = _PREFIX.match(name)
        if hit:
            key = (int(hit[1]), None if hit[2] is None else int(hit[2]))
            found.setdefault(key, {})[hit[3]] = m
    reason = verdict.get("reason") or ""
    out = []
    for (s, d), ms in found.items():
        label = f"seed{s}" + ("" if d is None else f"/draw{d}")
        hit = re.search(rf"(?:^|; |: ){re.escape(label)}: (pass|fail|error|skip|unsupported): ", reason)
        out.append({"seed": s, "draw": d, "outcome": hit[1] if hit else None, "reason": "", "metrics": ms})
    return out


__all__ = ["CellResult", "Unit", "upgrade_v1"]
