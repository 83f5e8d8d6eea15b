"""The JSON report: its schema name, the one writer (fixture runs and replays alike) and the loader.

A report of schema ``bt-bench-report/2`` is one JSON object::

    schema, exit_status, settings, machine, versions, thresholds, modified_thresholds,
    runs, failed_seeds, tried_seeds, estimators (provenance), gates, results   (+ e.g. source for a replay)

Each result is ``{nodeid, outcome (pytest's), duration_s, reason, traceback}`` plus, for a check's cell, ``cell``
(``bt_bench.checklist.result.CellResult.to_dict()``: check, estimator, outcome, na, reason, units, figures,
key_figure, expected, expected_failure, info), or for a fixture self-check its ``metrics``. Schema 1 (before
2026-12-04) kept a cell as ``metrics.verdict`` with every unit's figures twice; :func:`load_report` upgrades it
once (:func:`upgrade`).

plus, from ``pytest checks``: ``command_line`` ({argv, args, dir}: the invocation) and ``completeness`` (None when
the session ran no checklist folder or replayed evidence; else {seeds, draws, ran_seeds, ran_draws, expected:
[{estimator, check, units}], missing: [{estimator, check, seed, draw, nodeid, why}]}: every unit of the expected
grid, ``bt_bench.checklist.grid``, that has no complete verdict; a check with any is INCOMPLETE).

:func:`write_report` takes plain data (dicts and lists; no plugin object), so the pytest plugin and
``bt-bench replay`` write through the same code and this stage never imports the plugin.  ``runs``,
``failed_seeds`` and ``tried_seeds`` are taken only from the ``planting_gate`` self-check's metrics, never from
whichever result happens to carry a ``runs`` metric (the integrity check records run *keys* under that name).
A ``runs`` entry carries the run's ``summary`` and, from fixtures recorded since, its ``profile`` and ``realism``
(``bt_bench.runs.realism``: how hard the fixture is without any estimator; the HTML page shows it under Runs).
:func:`normalized` gives the renderers a copy that does not depend on the order results arrived in.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from bt_bench.checklist.base import json_default
from bt_bench.checklist.gate import cell_of

from .table import canonical

SCHEMA = "bt-bench-report/2"
OLDER = ("bt-bench-report/1",)  # read and upgraded on load (upgrade)
DISTRIBUTIONS = ("bt-bench", "torch", "trl", "transformers", "numpy", "scipy")  # versions written into a report
RUNS_CHECK = "planting_gate"  # the fixture self-check whose metrics carry runs, failed_seeds and tried_seeds


def versions() -> dict:
    """{distribution: version or None} of the distributions a result depends on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in DISTRIBUTIONS:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


def machine() -> dict:
    from bt_bench.estimator.sandbox import available

    return {"platform": platform.platform(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
            "scoring_sandbox": available()[1]}


def estimator_provenance(names) -> dict:
    """Per estimator: distribution and version, declared capabilities and level, sha256 of its source. Each is
    computed in a scoring process of its own (it imports the estimator: never in the judging process)."""
    from bt_bench.estimator import sealed

    out = {}
    for n in names:
        try:
            out[n] = sealed.provenance(n)
        except Exception as e:  # noqa: BLE001  (an unloadable estimator still gets a row saying why)
            out[n] = {"name": n, "error": f"{type(e).__name__}: {e}"}
    return out


def runs_of(results: list[dict]) -> dict:
    """{runs, failed_seeds, tried_seeds} from the planting self-check's metrics (empty lists without it). Only
    dict entries count as runs: another check's ``runs`` (e.g. integrity's list of run keys) is never taken."""
    out: dict[str, list] = {"runs": [], "failed_seeds": [], "tried_seeds": []}
    for r in results:
        if cell_of(r)[0] != RUNS_CHECK:
            continue
        m = r.get("metrics") or {}
        for key, name in (("runs", "runs"), ("failed_seeds", "failed_seeds"), ("tried_seeds", "tried")):
            if isinstance(m.get(name), list) and m[name]:
                out[key] = m[name]
    out["runs"] = [x for x in out["runs"] if isinstance(x, dict)]
    return out


def build_report(*, settings: dict, results: list[dict], exit_status: int, gates: list[dict] = (),
                 thresholds: dict | None = None, modified_thresholds: dict | None = None,
                 provenance: dict | None = None, extra: dict | None = None) -> dict:
    """The report document (see the module docstring). ``gates``: one dict per estimator with at least
    ``estimator``, ``ok`` and ``line``; ``provenance`` None: looked up for the gated estimators; ``extra``:
    keys added last (they override, e.g. ``runs: []`` and ``source`` for a replay)."""
    gates = [dict(g) for g in gates]
    if provenance is None:
        provenance = estimator_provenance(sorted({g["estimator"] for g in gates if g.get("estimator")}))
    doc = {"schema": SCHEMA, "exit_status": int(exit_status), "settings": dict(settings), "machine": machine(),
           "versions": versions(), "thresholds": dict(thresholds or {}),
           "modified_thresholds": dict(modified_thresholds or {}), **runs_of(results),
           "estimators": provenance, "gates": gates, "results": list(results)}
    doc.update(extra or {})
    return doc


def write_report(path: str | Path, *, settings: dict, results: list[dict], exit_status: int,
                 gates: list[dict] = (), thresholds: dict | None = None, modified_thresholds: dict | None = None,
                 provenance: dict | None = None, extra: dict | None = None) -> dict:
    """Write the report once, atomically (a temporary file renamed over ``path``); returns the document.
    Arguments as :func:`build_report`."""
    doc = build_report(settings=settings, results=results, exit_status=exit_status, gates=gates,
                       thresholds=thresholds, modified_thresholds=modified_thresholds, provenance=provenance,
                       extra=extra)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=json_default), encoding="utf-8")
    os.replace(tmp, path)
    return json.loads(json.dumps(doc, default=json_default))  # what a reader of the file gets


def load_report(path: str | Path) -> dict:
    """Read a JSON report; ValueError (with the path) when absent, not JSON, or of another schema."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"report file not found: {p}")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{p} is not a JSON report ({e})") from None
    if not isinstance(doc, dict) or doc.get("schema") not in (SCHEMA, *OLDER):
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{p}: schema {got!r} is not {SCHEMA!r}")
    return upgrade(doc)


def upgrade(doc: dict) -> dict:
    """A report of an older schema in this one (a copy; a current report is returned as it is): schema 1's cells
    (``metrics.verdict``) become ``cell`` (``bt_bench.checklist.result.upgrade_v1``)."""
    if doc.get("schema") == SCHEMA:
        return doc
    from bt_bench.checklist.result import upgrade_v1

    results = []
    for r in doc.get("results") or []:
        m = r.get("metrics") if isinstance(r, dict) else None
        if isinstance(m, dict) and m.get("verdict"):
            r = {k: v for k, v in r.items() if k != "metrics"} | {"cell": upgrade_v1(m)}
        results.append(r)
    return {**doc, "schema": SCHEMA, "upgraded_from": doc.get("schema"), "results": results}


def _seed_rank(seed) -> tuple:
    return (0, seed, "") if isinstance(seed, int) else (1, 0, str(seed))


def normalized(report: dict) -> dict:
    """A copy of a report the renderers read the same whatever order its results were recorded in (pytest -n 2
    delivers them in any order): results in canonical order (``table.canonical``), gates by estimator, ``runs``
    only run entries (dicts, by seed), recovered from the planting self-check when the top-level key is missing
    or holds something else (older writers took it from whichever result carried ``runs`` last)."""
    doc = dict(report)
    results = [r for r in report.get("results") or [] if isinstance(r, dict)]
    order = (report.get("settings") or {}).get("estimators") or ()
    doc["results"] = canonical(results, order)
    rank = {e: i for i, e in enumerate(order)}
    gates = [g for g in report.get("gates") or [] if isinstance(g, dict)]
    doc["gates"] = sorted(gates, key=lambda g: (rank.get(g.get("estimator"), len(rank)), str(g.get("estimator"))))
    found = runs_of(results)
    for key in ("runs", "failed_seeds", "tried_seeds"):
        v = report.get(key)
        v = [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []
        doc[key] = sorted(v or found[key], key=lambda r: (_seed_rank(r.get("seed")), str(r.get("key"))))
    return doc
