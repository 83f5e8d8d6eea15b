"""Slim result files: what the leaderboard and the generated docs need of a full JSON report, and nothing else.

A full report (``bt-bench-report/2``, :mod:`.schema`) holds every unit's metrics with CIs, the runs' learning
curves and every traceback: hundreds of KB to MB.  A slim result file (``bt-bench-results/1``) holds, for one
fixture (the report's profile, plus the gate seed of fresh fixtures):

* ``reports``: the provenance of each report it was made from, in merge order: file name and date (the report
  file's modification time; a report records no date of its own), command line, exit status, the versions of
  bt-bench / torch / trl / transformers, seeds (the setting, the run seeds used, every seed tried), the gate seed
  of fresh fixtures, the thresholds and those that differ from the defaults;
* ``estimators``: per estimator, the report it came from (index into ``reports``), its distribution, version and
  source hash (``source_sha256``, where the report has it), its gate line, and one cell per check: label
  (``PASS``/``FAIL``/... by the every-seed rule of ``bt_bench.checklist.gate``), the unit count (``1/3``,
  ``8/9, 1 unsupported``), the declared label of a built-in (``expected``) and the key figure
  (``bt_bench.checklist.figures``: means over every unit of the cell and the lowest CI lower bound);
* ``fixture_checks``: the fixture self-checks' labels and key figures, and the report they came from.

:func:`slim_of` makes one from a loaded full report; :func:`load_any` reads either kind of file, refusing a missing,
malformed or unknown-version one with a one-line ``ValueError`` naming the file.  No pickle, JSON only.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from pathlib import Path

from bt_bench.checklist import gate
from bt_bench.checklist.figures import cell_units, short_reason
from bt_bench.checklist.registry import key_figure

from .schema import SCHEMA, load_report

SLIM_SCHEMA = "bt-bench-results/1"
VERSIONS = ("bt-bench", "torch", "trl", "transformers")  # the versions a page names
_OUTCOME = {gate.PASS: "pass", gate.FAIL: "fail", gate.ERROR: "error", gate.NOT_JUDGED: "skip", gate.NA: "skip"}


def fixture_of(report: Mapping) -> str:
    """The fixture a report was measured on: its profile, and ``gate seed N`` for fresh fixtures."""
    st = report.get("settings") or {}
    name = str(st.get("profile") or "unknown")
    gs = report.get("gate_seed") or {}
    seed = gs.get("seed") if isinstance(gs, Mapping) else None
    if seed is None:
        seed = st.get("gate_seed")
    return f"{name} gate seed {seed}" if seed is not None else name


def _command(report: Mapping) -> str:
    cmd = report.get("command_line") or {}
    if cmd.get("args") is not None:
        return " ".join(["pytest", *map(str, cmd["args"])])
    return " ".join(map(str, cmd.get("argv") or ()))


def provenance_of(report: Mapping, source: str, date: str | None) -> dict:
    """The provenance entry of one report (see the module docstring)."""
    st = report.get("settings") or {}
    gs = report.get("gate_seed")
    return {"source": source, "date": date, "command_line": _command(report),
            "exit_status": report.get("exit_status"),
            "versions": {k: (report.get("versions") or {}).get(k) for k in VERSIONS},
            "seeds": st.get("seeds"), "draws": st.get("draws"),
            "run_seeds": [r.get("seed") for r in report.get("runs") or [] if isinstance(r, Mapping)],
            "tried_seeds": [t.get("seed") if isinstance(t, Mapping) else t for t in report.get("tried_seeds") or []],
            "gate_seed": gs.get("seed") if isinstance(gs, Mapping) else st.get("gate_seed"),
            "thresholds": dict(report.get("thresholds") or {}),
            "modified_thresholds": dict(report.get("modified_thresholds") or {})}


def _figure(check: str, rs: list[dict], deciding: dict) -> str:
    """The key figure of a cell over every unit of its results (one synthetic cell holding all their units); one
    result: its own figure."""
    m = deciding.get("cell") or {}
    own = m.get("key_figure") or (key_figure(m) if m else "")
    if len(rs) > 1:
        us: list[dict] = []
        for r in rs:
            for u in cell_units(r.get("cell") or {}):
                if u.get("seed") is None:  # a figure over all units of one result: no unit to name it by
                    return own
                us.append(u)
        combined = key_figure({"check": check, "outcome": m.get("outcome"), "units": us})
        own = combined or own
    if not own and gate.unit_label(deciding) in (gate.ERROR, gate.NOT_JUDGED):
        own = short_reason(m.get("reason") or deciding.get("reason") or "")
    return own


def cells_of(report: Mapping) -> dict[str, dict[str, dict]]:
    """{estimator: {check: {label, count, expected, key}}} by ``bt_bench.checklist.gate.checks`` (the every-seed
    rule, INCOMPLETE from the report's ``completeness``)."""
    results = [r for r in report.get("results") or [] if isinstance(r, Mapping)]
    out: dict[str, dict[str, dict]] = {}
    for (est, check), cr in gate.checks(results, report.get("completeness")).items():
        want = gate.UNSUPPORTED if gate.unsupported_error(cr.label, cr.units) else cr.label
        rs = [dict(r) for r in cr.results]
        deciding = next((r for r in rs if gate.unit_label(r) == want), rs[0] if rs else {})
        exp = next(((r.get("cell") or {}).get("expected") for r in rs if (r.get("cell") or {}).get("expected")), None)
        key = cr.ran if cr.label == gate.INCOMPLETE else (_figure(check, rs, deciding) if rs else "")
        key = "" if cr.label == gate.NA else key  # excluded by the estimator's declaration: the label says it
        out.setdefault(est, {})[check] = {"label": cr.label, "count": cr.count if rs or cr.missing else "",
                                          "expected": (exp or {}).get("label"), "key": key}
    return out


def fixture_checks_of(report: Mapping) -> dict[str, dict]:
    """{self-check: {label, key}} of the fixture self-checks (several results of one check: the worst)."""
    out: dict[str, dict] = {}
    rank = {"FAIL": 0, "ERROR": 1, "NOT JUDGED": 2, "PASS": 3}
    for r in report.get("results") or []:
        if not isinstance(r, Mapping) or gate.cell_of(r)[1] != gate.FIXTURE:
            continue
        check = gate.cell_of(r)[0]
        label = {"passed": "PASS", "failed": "FAIL", "skipped": "NOT JUDGED"}.get(r.get("outcome"), "ERROR")
        m = r.get("metrics") or {}
        key = m.get("key_figure") or (short_reason(r.get("reason") or "") if label != "PASS" else "")
        if check not in out or rank[label] < rank[out[check]["label"]]:
            out[check] = {"label": label, "key": str(key)}
    return out


def slim_of(report: Mapping, source: str = "report.json", date: str | None = None) -> dict:
    """The slim result file of one loaded full report (``source``: its file name, ``date``: when it was written)."""
    prov = report.get("estimators") or {}
    gates = {g.get("estimator"): g for g in report.get("gates") or [] if isinstance(g, Mapping)}
    cells = cells_of(report)
    ests = {}
    for est in sorted(set(cells) | {e for e in gates if e}):
        p = prov.get(est) or {}
        g = gates.get(est) or {}
        ests[est] = {"from": 0, "distribution": p.get("distribution"), "version": p.get("version"),
                     "source_sha256": p.get("source_sha256"),
                     "gate": {"ok": g.get("ok"), "expected": g.get("expected"), "line": g.get("line")} if g else None,
                     "cells": cells.get(est, {})}
    fx = fixture_checks_of(report)
    return {"schema": SLIM_SCHEMA, "fixture": fixture_of(report), "reports": [provenance_of(report, source, date)],
            "estimators": ests, "fixture_checks": fx, "fixture_checks_from": 0 if fx else None}


def _date_of(path: Path) -> str:
    t = _dt.datetime.fromtimestamp(path.stat().st_mtime, tz=_dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M UTC")


def _check_full(doc: Mapping, p: Path) -> None:
    for key, kind in (("settings", dict), ("results", list)):
        if not isinstance(doc.get(key), kind):
            raise ValueError(f"{p}: malformed report: {key!r} is {type(doc.get(key)).__name__}, not a {kind.__name__}")
    for key in ("gates",):
        if doc.get(key) is not None and not isinstance(doc[key], list):
            raise ValueError(f"{p}: malformed report: {key!r} is not a list")
    bad = next((i for i, r in enumerate(doc["results"]) if not isinstance(r, dict)), None)
    if bad is not None:
        raise ValueError(f"{p}: malformed report: results[{bad}] is not an object")


def check_slim(doc, p) -> dict:
    """``doc`` if it is a well-formed slim result file, else a one-line ValueError naming ``p``."""
    if not isinstance(doc, dict) or doc.get("schema") != SLIM_SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{p}: unknown version: schema {got!r} is neither {SCHEMA!r} nor {SLIM_SCHEMA!r}")
    if not isinstance(doc.get("fixture"), str) or not isinstance(doc.get("reports"), list) or not doc["reports"]:
        raise ValueError(f"{p}: malformed result file: needs 'fixture' (text) and a non-empty 'reports' list")
    ests = doc.get("estimators")
    if not isinstance(ests, dict) or not all(isinstance(e, dict) and isinstance(e.get("cells"), dict)
                                             and isinstance(e.get("from"), int) and 0 <= e["from"] < len(doc["reports"])
                                             for e in ests.values()):
        raise ValueError(f"{p}: malformed result file: each estimator needs 'cells' and a 'from' index into 'reports'")
    if not isinstance(doc.get("fixture_checks", {}), dict):
        raise ValueError(f"{p}: malformed result file: 'fixture_checks' is not an object")
    return doc


def load_any(path: str | Path) -> dict:
    """A slim result file from ``path``: a full report (made slim) or a slim file (checked). ValueError, one line
    naming the file, when it is missing, not JSON, malformed or of an unknown schema version."""
    p = Path(path)
    try:  # a full report; load_report refuses a missing file and one that is not JSON
        doc = load_report(p)
    except ValueError as e:
        if not str(e).startswith(f"{p}: schema "):
            raise
        doc = json.loads(p.read_text(encoding="utf-8"))  # JSON of another schema: a slim file, or refused below
    else:
        _check_full(doc, p)
        return slim_of(doc, p.name, _date_of(p))
    return check_slim(doc, p)


def dumps(slim: Mapping) -> str:
    """The file text of a slim result file: sorted keys, one line per leaf object, so a diff stays readable."""
    return json.dumps(slim, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
