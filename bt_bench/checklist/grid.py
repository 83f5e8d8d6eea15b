"""The expected grid (docs/checklist.md, "The gate": "The whole grid or no pass"): every unit a session of
``pytest checks`` must judge for an estimator, and which of them it did not.

A *unit* is one cell of ``checks/``: one test of ``checks/test_<check>.py`` for one estimator, named in its node id
``test_<check>[<estimator>-seed<i>-draw<d>]``. Which units a check has comes from its ``CheckSpec.unit`` in the
one registry (``bt_bench.checklist.registry``), the same spec the thin module takes (``SPEC = CHECKS[...]``) and
whose parameters the plugin gives it (``bt_seed`` for ``seed`` and ``seed_draw``, ``bt_draw`` for ``seed_draw``;
``tests/test_checklist_registry.py`` keeps the two in step), so a new check is in the grid without a second list:

- ``seed``: one unit per seed ``i`` of the fixture; ``seed_draw``: one per seed and draw; ``all``: one per estimator;
- the fixture's seeds and draws are the full counts (the defaults, 3 x 3, or more when asked; a ``--bt-fixture``
  pack's own seeds), never fewer: ``--bt-seeds 1`` leaves units out;
- a check the estimator's *declared* level or capabilities exclude (``CheckSpec.why_not_applicable``, the rule
  ``Suite.require_applicable`` raises ``NotApplicable`` with) has no units: it is N/A wherever it runs;
- a unit whose cell pools over the seeds (``all``) or over the draws (its cell takes ``draws``) is complete only
  when the session ran every seed / draw; otherwise it is listed as missing too, with why.

Everything here is pure data in, data out (``results`` are the report's result dicts); ``bt_bench.checklist.gate``
turns the missing units into INCOMPLETE labels.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterable, Mapping


@dataclasses.dataclass(frozen=True)
class Unit:
    """One expected cell. ``seed`` is the seed parameter of the node id (``seed<i>``: the i-th planted seed of the
    fixture), None for a check judged once over every seed; ``draw`` None for a check without a draw parameter."""

    estimator: str
    check: str
    seed: int | None = None
    draw: int | None = None

    @property
    def test_name(self) -> str:
        """``test_<check>[<estimator>-seed<i>-draw<d>]``, as pytest names the cell."""
        parts = [self.estimator] + ([f"seed{self.seed}"] if self.seed is not None else []) \
            + ([f"draw{self.draw}"] if self.draw is not None else [])
        return f"test_{self.check}[{'-'.join(parts)}]"

    def key(self) -> tuple:
        return (self.estimator, self.check, -1 if self.seed is None else self.seed,
                -1 if self.draw is None else self.draw)


def pools_draws(cell: Callable) -> bool:
    """Whether a check's cell judges several draws inside one unit (it takes the number of draws)."""
    return "draws" in inspect.signature(cell).parameters


def expected_units(declared: Mapping[str, Mapping | None], seeds: int, draws: int) -> list[Unit]:
    """Every unit of every check for each estimator of ``declared`` ({name: {"level", "capabilities"}}, or None
    when its declaration could not be read: then no check is excluded), on ``seeds`` x ``draws``."""
    from bt_bench.checklist.registry import CHECKS

    out = []
    for est, decl in declared.items():
        for name, spec in CHECKS.items():
            if decl is not None and spec.why_not_applicable(est, decl.get("level", "rollout"),
                                                            decl.get("capabilities") or ()):
                continue
            if spec.unit == "all":
                out.append(Unit(est, name))
            elif spec.unit == "seed":
                out += [Unit(est, name, i) for i in range(seeds)]
            else:
                out += [Unit(est, name, i, d) for i in range(seeds) for d in range(draws)]
    return out


_TAIL = (("draw", re.compile(r"-draw(\d+)$")), ("seed", re.compile(r"-seed(\d+)$")))


def unit_of(result: Mapping, estimators: Iterable[str] = ()) -> Unit | None:
    """The unit a result is of, from its node id and the estimator it recorded, else the longest of
    ``estimators`` its parameter id starts with (a cell that crashed before recording anything); None for
    anything else: fixture self-checks, replayed evidence."""
    m = result.get("cell") or {}
    name = str(result.get("nodeid", "")).split("::")[-1]
    func, _, params = name.partition("[")
    params = params.removesuffix("]")
    est = m.get("estimator") or max((e for e in estimators if params == e or params.startswith(e + "-")),
                                    key=len, default=None)
    if not est or not params or not func.startswith("test_"):
        return None
    found: dict[str, int] = {}
    for k, pat in _TAIL:  # from the right: the estimator's id comes first and may hold anything
        hit = pat.search(params)
        if hit:
            found[k], params = int(hit.group(1)), params[: hit.start()]
    if params != est:
        return None
    return Unit(est, func.removeprefix("test_"), found.get("seed"), found.get("draw"))


@dataclasses.dataclass(frozen=True)
class Grid:
    """The expected units of a session and the counts it ran (``ran_seeds`` x ``ran_draws``, from --bt-seeds and
    --bt-draws) against the full ones (``seeds`` x ``draws``)."""

    units: tuple[Unit, ...]
    seeds: int
    draws: int
    ran_seeds: int
    ran_draws: int

    @classmethod
    def of(cls, declared: Mapping[str, Mapping | None], *, seeds: int, draws: int, ran_seeds: int,
           ran_draws: int) -> Grid:
        full_s, full_d = max(seeds, ran_seeds), max(draws, ran_draws)
        return cls(tuple(expected_units(declared, full_s, full_d)), full_s, full_d, ran_seeds, ran_draws)

    def expected(self) -> dict[tuple[str, str], int]:
        """{(estimator, check): number of expected units}."""
        out: dict[tuple[str, str], int] = {}
        for u in self.units:
            out[(u.estimator, u.check)] = out.get((u.estimator, u.check), 0) + 1
        return out

    def _partial(self, check: str) -> str | None:
        """Why a unit of ``check`` that ran is still incomplete (its cell pools over seeds or draws the session
        did not have), else None."""
        from bt_bench.checklist.registry import CHECKS

        spec = CHECKS[check]
        if spec.unit == "all" and self.ran_seeds < self.seeds:
            return f"judged on {self.ran_seeds} of {self.seeds} seeds (--bt-seeds {self.ran_seeds})"
        if pools_draws(spec.cell) and self.ran_draws < self.draws:
            return f"judged on {self.ran_draws} of {self.draws} draws (--bt-draws {self.ran_draws})"
        return None

    def missing(self, results: Iterable[Mapping], module: Callable[[str], str] = lambda c: f"checks/test_{c}.py"
                ) -> list[dict]:
        """Every expected unit without a complete recorded verdict: {estimator, check, seed, draw, nodeid, why}.
        ``why``: ``not run`` (deselected, left out by -k/-x/--bt-seeds, or lost to a crash), ``ran without a
        verdict (<outcome>)``, or a partial unit's reason. ``module(check)`` gives the path of a node id; one seen in
        the results wins."""
        seen: dict[Unit, str] = {}  # unit -> "verdict" or the outcome of a result without one
        paths: dict[str, str] = {}
        names = sorted({u.estimator for u in self.units})
        for r in results:
            u = unit_of(r, names)
            if u is None:
                continue
            paths.setdefault(u.check, str(r.get("nodeid", "")).split("::")[0])
            has = bool(r.get("cell"))
            if has or seen.get(u) != "verdict":
                seen[u] = "verdict" if has else str(r.get("outcome"))
        out = []
        for u in sorted(self.units, key=Unit.key):
            got = seen.get(u)
            why = "not run" if got is None else (f"ran without a verdict ({got})" if got != "verdict"
                                                else self._partial(u.check))
            if why:
                out.append({"estimator": u.estimator, "check": u.check, "seed": u.seed, "draw": u.draw,
                            "nodeid": f"{paths.get(u.check) or module(u.check)}::{u.test_name}", "why": why})
        return out

    def to_dict(self, missing: list[dict]) -> dict:
        """The report's ``completeness``: the full counts, the expected units per (estimator, check), the
        missing ones."""
        return {"seeds": self.seeds, "draws": self.draws, "ran_seeds": self.ran_seeds, "ran_draws": self.ran_draws,
                "expected": [{"estimator": e, "check": c, "units": n} for (e, c), n in self.expected().items()],
                "missing": list(missing)}


__all__ = ["Grid", "Unit", "expected_units", "pools_draws", "unit_of"]
