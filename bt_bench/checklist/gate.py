"""The gate: what a cell, a check and an estimator end in, and what the exit code means (docs/checklist.md,
"The gate"). Pure functions over the report's result dicts, so the plugin, the report and the tests share them.

A *unit* is one recorded verdict (one seed, or one seed and draw). A *check* of one estimator aggregates its units
by the every-seed rule into exactly one label:

- ``PASS``: judged on every unit and passed on every unit;
- ``FAIL``: failed on at least one unit (whatever the others show);
- ``ERROR``: the estimator raised or returned invalid scores, or the fixture cannot support a verdict;
- ``NOT JUDGED``: skipped at run time (a missing input, an estimator that never scores): it fails the gate;
- ``N/A``: the check cannot take part by what the estimator *declared* (its capabilities or level), with the
  reason; it neither passes nor fails the gate;
- ``INCOMPLETE``: a unit of the expected grid (``bt_bench.checklist.grid``: every seed and draw of the fixture that
  the estimator's declaration admits) has no complete verdict: deselected, left out by ``-k``/``-x``/``--bt-seeds``,
  or lost to a crash. It overrides whatever the units that ran show, and it fails the gate (and differs from any
  declared outcome of a built-in).

A unit that no ranking can pass (the comparison's ceiling is reached: even the labels fail it) is ``UNSUPPORTED``:
a unit label only, never a check's. It is left out of the every-seed rule and counted in the cell (``PASS 8/9,
1 unsupported``); more than a third of a check's units unsupported makes the check an ERROR of the fixture, for
every estimator (:func:`too_many_unsupported`).

An estimator's gate passes only if none of its checks is FAIL, ERROR, NOT JUDGED or INCOMPLETE and at least one is
PASS.
Built-ins and controls instead carry a declared expected label per (fixture, estimator, check)
(``bt_bench.checklist.expectations``), enforced strictly both ways; a user's estimator has none: its gate is its cells.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence

PASS, FAIL, ERROR, NOT_JUDGED, NA = "PASS", "FAIL", "ERROR", "NOT JUDGED", "N/A"
INCOMPLETE = "INCOMPLETE"  # a check of the expected grid with units left out (never a unit's own label)
LABELS = (PASS, FAIL, ERROR, NOT_JUDGED, NA, INCOMPLETE)
FAILING = (FAIL, ERROR, NOT_JUDGED, INCOMPLETE)
FIXTURE = "(fixture)"  # fixture self-checks are not per estimator
UNSUPPORTED = "UNSUPPORTED"  # a unit no ranking can pass: a unit label, never a check's (see aggregate)
# A built-in's declared outcome for a cell measured PASS on one machine and FAIL on another: the same code and versions
# compute different last digits on different CPUs (their float kernels differ: bpe builds different runs, tiny the same
# runs but some estimators' scores differ; docs/fixtures.md, "lr 1.5e-5 after W"), and a cell at its check's bar can
# land on either side. Either label is then as declared. Snapshots only: a user's estimator is judged by each check's
# rule, never against a declaration.
PASS_OR_FAIL = "PASS or FAIL"


def as_declared(label: str | None, declared: str | None) -> bool:
    """Whether a built-in's measured ``label`` is its ``declared`` one (``PASS_OR_FAIL``: PASS or FAIL)."""
    return label == declared or (declared == PASS_OR_FAIL and label in (PASS, FAIL))


def too_many_unsupported(n_unsupported: int, n_units: int) -> bool:
    """More than a third of a check's units cannot support a verdict: the check is an ERROR of the fixture for every
    estimator (a fixture defect to fix, not a verdict). Exact integer arithmetic."""
    return 3 * n_unsupported > n_units


def unit_label(result: Mapping) -> str:
    """The label of one recorded result (a pytest report plus its ``cell``, ``bt_bench.checklist.result``)."""
    v = result.get("cell") or {}
    o = v.get("outcome")
    if o == "pass":
        # a passing verdict whose test still failed (e.g. an assertion of the glue) is not a pass
        return PASS if result.get("outcome") in ("passed", "xpass") else ERROR
    if o == "fail":
        return FAIL
    if o == "error":
        return ERROR
    if o == "unsupported":
        return UNSUPPORTED
    if o == "skip":
        return NA if v.get("na") else NOT_JUDGED
    # no verdict recorded: a crash in setup/call before the cell recorded anything
    return {"passed": PASS, "skipped": NOT_JUDGED}.get(result.get("outcome"), ERROR)


def aggregate(labels: Iterable[str]) -> str:
    """Every-seed rule: more than a third of the units (N/A ones aside) UNSUPPORTED -> ERROR (the fixture); else,
    UNSUPPORTED units left out, FAIL anywhere -> FAIL; else ERROR; else NOT JUDGED; else PASS if any unit passed
    (N/A units of a judged check carry no weight); else N/A."""
    ls = list(labels)
    if not ls:
        raise ValueError("labels: empty; a check needs at least one unit")
    if too_many_unsupported(ls.count(UNSUPPORTED), sum(lab != NA for lab in ls)):
        return ERROR
    for lab in (FAIL, ERROR, NOT_JUDGED, PASS):
        if lab in ls:
            return lab
    return NA


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One (estimator, check): its label, unit counts and the results behind it."""

    estimator: str
    check: str
    label: str
    units: tuple[str, ...]  # the unit labels, in recording order
    results: tuple[dict, ...]
    missing: tuple[dict, ...] = ()  # expected units without a complete verdict (bt_bench.checklist.grid)
    expected: int = 0  # number of expected units (0: no expected grid)

    @property
    def count(self) -> str:
        """e.g. '1/3': units carrying the deciding label, over all units (see :func:`count_text`); INCOMPLETE:
        '1/9 missing'."""
        if self.label == INCOMPLETE:
            return f"{len(self.missing)}/{self.expected} missing"
        return count_text(self.label, self.units)

    @property
    def ran(self) -> str:
        """What the units that ran show, e.g. 'PASS 8/8' ('none ran' without any)."""
        if not self.units:
            return "none ran"
        lab = aggregate(self.units)
        return f"{lab} {count_text(lab, self.units)}"

    @property
    def reason(self) -> str:
        if self.label == INCOMPLETE:
            first = self.missing[0]
            more = f" and {len(self.missing) - 1} more" if len(self.missing) > 1 else ""
            head = f"ran: {self.ran}; " if self.units else ""
            return f"{head}{first['why']}: {first['nodeid'].split('::')[-1]}{more}"
        want = UNSUPPORTED if unsupported_error(self.label, self.units) else self.label
        for r in self.results:
            if unit_label(r) == want:
                why = (r.get("cell") or {}).get("reason") or r.get("reason") or ""
                return (f"the fixture cannot support this check: {self.count}, more than a third; first: {why}"
                        if want == UNSUPPORTED else why)
        return ""


def unsupported_error(label: str, units: Iterable[str]) -> bool:
    """The check is an ERROR because too many of its units are UNSUPPORTED (not because a unit errored)."""
    us = list(units)
    return label == ERROR and ERROR not in us and UNSUPPORTED in us


def count_text(label: str, units: Iterable[str]) -> str:
    """The count a cell shows after its label: '1/3' (units carrying the label / all units), then ', 1 unsupported'
    when units were left out as UNSUPPORTED; a check that is an ERROR because of them: '4/9 unsupported (fixture)'."""
    us = list(units)
    n = us.count(UNSUPPORTED)
    if unsupported_error(label, us):
        return f"{n}/{len(us)} unsupported (fixture)"
    return f"{us.count(label)}/{len(us)}" + (f", {n} unsupported" if n else "")


def cell_of(result: Mapping) -> tuple[str, str]:
    """(check, estimator) of one result: from its ``cell`` (or a self-check's ``metrics``) when recorded, else parsed
    from the node id (``checks/test_<check>.py::test_<check>[<estimator>-seed1-draw2]``); no estimator -> FIXTURE (a
    self-check). The one answer to "which cell is this record" for the gate, the report's table, plots, HTML and
    comparison."""
    m = result.get("cell") or result.get("metrics") or {}
    test = result.get("nodeid", "").split("::")[-1]
    func, _, param = test.partition("[")
    check = m.get("check") or re.sub(r"^test_", "", func) or "?"
    est = m.get("estimator")
    if not est and param:
        est = re.sub(r"(-seed\d+|-draw\d+)+$", "", param.rstrip("]"))
    return check, est or FIXTURE


def checks(results: Iterable[Mapping], completeness: Mapping | None = None) -> dict[tuple[str, str], CheckResult]:
    """{(estimator, check): CheckResult} over every per-estimator result (fixture self-checks left out).
    ``completeness`` (the report's, ``bt_bench.checklist.grid.Grid.to_dict``): every expected (estimator, check)
    is in the answer, INCOMPLETE when any of its units is missing, also when none of them ran."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        c, e = cell_of(r)
        if e == FIXTURE or not r.get("cell"):
            continue
        groups.setdefault((e, c), []).append(dict(r))
    expected, missing = expected_and_missing(completeness)
    out = {}
    for (e, c) in list(groups) + [k for k in {**expected, **missing} if k not in groups]:
        rs = groups.get((e, c), [])
        us = tuple(unit_label(r) for r in rs)
        miss = tuple(missing.get((e, c), ()))
        label = INCOMPLETE if miss else (aggregate(us) if us else NA)
        out[(e, c)] = CheckResult(e, c, label, us, tuple(rs), miss, expected.get((e, c), 0))
    return out


def expected_and_missing(completeness: Mapping | None) -> tuple[dict[tuple[str, str], int], dict[tuple, list]]:
    """({(estimator, check): expected units}, {(estimator, check): [missing unit records]}) of a report's
    ``completeness`` (both empty without one)."""
    expected = {(x["estimator"], x["check"]): int(x["units"]) for x in (completeness or {}).get("expected") or ()}
    missing: dict[tuple, list] = {}
    for m in (completeness or {}).get("missing") or ():
        missing.setdefault((m["estimator"], m["check"]), []).append(dict(m))
    return expected, missing


@dataclasses.dataclass(frozen=True)
class Gate:
    """The gate of one estimator. ``expected`` is True when it is judged against a declared snapshot
    (built-ins and controls), in which case ``ok`` means "no deviation" rather than "every check passed"."""

    estimator: str
    ok: bool
    expected: bool
    problems: tuple[str, ...]  # one line per failing check or deviation
    modified_thresholds: bool = False
    fixture: tuple[str, ...] = ()  # the session's failed fixture self-checks (``with_fixture``): no verdict counts

    def line(self) -> str:
        head = "GATE PASS" if self.ok else "GATE FAIL"
        if self.expected:
            head = "AS EXPECTED" if self.ok else "DEVIATES FROM EXPECTED"
        if self.fixture:
            head = "FIXTURE FAILED, NOT JUDGED"
        tail = " (with modified thresholds)" if self.modified_thresholds else ""
        return f"{self.estimator}: {head}{tail}" + ("" if self.ok else ": " + "; ".join(self.problems))


def estimator_gate(estimator: str, results: Mapping[str, CheckResult], *, modified_thresholds: bool = False
                   ) -> Gate:
    """The gate of an estimator without expectations (every user's): results = {check: CheckResult}."""
    problems = [f"{c} {r.label} {r.count} ({_short(r.reason)})" for c, r in results.items() if r.label in FAILING]
    if not any(r.label == PASS for r in results.values()):
        problems.append("no check PASSED" + ("" if results else " (no check ran)"))
    return Gate(estimator, not problems, False, tuple(problems), modified_thresholds)


def expectation_gate(estimator: str, results: Mapping[str, CheckResult], expected: Mapping[str, tuple[str, str]],
                     *, modified_thresholds: bool = False) -> Gate:
    """The gate of a built-in or control: every check that ran must end in its declared label, both ways
    (a declared FAIL that now passes deviates as much as a declared PASS that now fails)."""
    problems = []
    for c, r in results.items():
        want = expected.get(c)
        if want is None:
            problems.append(f"{c} {r.label}: no expected outcome declared (add it to bt_bench/checklist/expectations.py)")
        elif not as_declared(r.label, want[0]):
            problems.append(f"{c} expected {want[0]}, got {r.label} {r.count} ({_short(r.reason)})")
    return Gate(estimator, not problems, True, tuple(problems), modified_thresholds)


def fixture_problems(results: Iterable[Mapping]) -> tuple[str, ...]:
    """One line per fixture self-check (docs/checklist.md, "Fixture self-checks") that failed or raised in a session.
    They judge the fixtures every verdict rests on (the planted cause, the planting, the sketches, the replays), so
    when one fails no estimator's cells count: e.g. on a paper gate's fresh fixtures whose sketches reorder exact
    TracIn's scores, a "GATE PASS" would rest on the instrument, not the estimator."""
    out = []
    for r in results:
        check, est = cell_of(r)
        if est == FIXTURE and r.get("outcome") in ("failed", "error"):
            why = (r.get("metrics") or {}).get("problems") if check == CANARY else None  # the canary says which cells
            out.append(f"fixture self-check {check} {'FAILED' if r['outcome'] == 'failed' else 'ERROR'}"
                       + (f" ({'; '.join(why)})" if why else ""))
    return tuple(dict.fromkeys(out))


NO_VERDICT = "no verdict on these fixtures counts (a paper gate: draw another gate seed)"

# The canary (docs/checklist.md, "Fixture self-checks": the oracle canary). A fixture on which perfect attribution
# cannot pass gates nobody, and one on which a ranking that ignores everything passes gates nothing. So every session
# on planted fixtures also scores these two, judged as any user's estimator is (``estimator_gate``, never against a
# declared snapshot): the oracle (reads the labels) must end GATE PASS and random GATE FAIL. A check whose CheckSpec
# says ``canary=False`` stays out (check 10, LDS: the GT indicator is no LDS ceiling, docs/findings.md "LDS on bpe").
CANARY = "oracle_canary"
CANARY_PASSES, CANARY_FAILS = ("oracle",), ("random",)


def canary(by_est: Mapping[str, Mapping[str, CheckResult]], *, excluded: Sequence[str] = (),
           required: Iterable[str] = (), modified_thresholds: bool = False
           ) -> tuple[bool, tuple[str, ...], dict[str, str]] | None:
    """(passed, problems, {estimator: gate line}) of the oracle canary over ``by_est`` = {estimator: {check:
    CheckResult}} (``checks`` of a session's results), or None when no canary estimator has a judged check (nothing to judge:
    replayed evidence, or a selection of self-checks only). A check left INCOMPLETE by a test selection is not the
    fixture's doing and is left out (the selection already fails every gate it touches); every other label counts as
    it would for a user's estimator. ``required``: the checks another estimator of the session was judged on; a
    canary estimator left without a verdict on one of them (its cells deselected, e.g. ``-k mine``) fails the canary,
    so a selection cannot keep a verdict while dropping the canary's."""
    judged = {est: {c: r for c, r in (by_est.get(est) or {}).items() if c not in excluded and r.label != INCOMPLETE}
              for est in (*CANARY_PASSES, *CANARY_FAILS)}
    required = sorted(set(required) - set(excluded))
    if not any(judged.values()) and not required:
        return None
    problems, lines = [], {}
    for est, cells in judged.items():
        left = [c for c in required if c not in cells]
        if left:
            problems.append(f"{est} has no verdict on {', '.join(left)} (deselected or lost), which other estimators "
                            "were judged on: the canary cannot vouch for those checks")
        if not cells:
            problems.append(f"{est} was not scored on any check the canary judges")
            continue
        g = estimator_gate(est, cells, modified_thresholds=modified_thresholds)
        lines[est] = g.line()
        if est in CANARY_PASSES and not g.ok:
            problems.append(f"perfect attribution cannot pass: {g.line()}")
        if est in CANARY_FAILS and g.ok:
            problems.append(f"a ranking that attributes nothing passes: {g.line()}")
    return not problems, tuple(problems), lines


def canary_record(verdict: tuple[bool, tuple[str, ...], dict[str, str]], excluded: Sequence[str] = ()) -> dict:
    """The canary as a fixture self-check's result record (as ``checks/test_<self-check>.py`` records theirs), so
    ``fixture_problems``, the table, the report and the results pages read it like any self-check."""
    ok, problems, lines = verdict
    figure = ("; ".join(line.split(": ")[0] + ": " + line.split(": ")[1] for line in lines.values()) if ok
              else "; ".join(problems))  # passing: 'oracle: GATE PASS; random: GATE FAIL' (each line is in metrics)
    return {"nodeid": f"bt-bench::{CANARY}", "outcome": "passed" if ok else "failed", "duration_s": 0.0,
            "reason": None, "traceback": None,
            "metrics": {"check": CANARY, "passed": ok, "problems": list(problems), "gates": lines,
                        "excluded": list(excluded), "key_figure": figure}}



def with_fixture(g: Gate, fixture: Sequence[str]) -> Gate:
    """``g`` failed by the session's failed fixture self-checks (``fixture_problems``), which lead its problems
    (then ``NO_VERDICT``, then the estimator's own problems, if any)."""
    if not fixture:
        return g
    return dataclasses.replace(g, ok=False, fixture=tuple(fixture),
                               problems=(*fixture, NO_VERDICT, *g.problems))


def _short(text: str, n: int = 70) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"
