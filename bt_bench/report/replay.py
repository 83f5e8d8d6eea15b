"""``bt-bench replay``: judge recorded evidence (a BehaviorTrace seed folder, a published file, or native
evidence JSON) with the checklist, print the table and write the report once, through ``schema.write_report``
(the writer of fixture runs too: one schema for both)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .html import write_outputs
from .schema import SCHEMA, build_report, write_report
from .table import VERDICT_OUTCOME, format_table
from bt_bench.checklist.registry import get_check


def results_from_verdicts(verdicts, evidence=None) -> list[dict]:
    """Report results (schema ``results``) from replayed combined verdicts, each a ``cell``
    (``bt_bench.checklist.result.CellResult``); token-level series come from the evidence when given (for the
    alignment plot)."""
    from bt_bench.checklist.result import CellResult

    out = []
    for v in verdicts:
        info = {}
        if evidence is not None and "alignment" in get_check(v.check).plots:  # the token-level scores it drew
            series: dict[str, list[float]] = {}
            for t in evidence.token_level:
                if t.estimator == v.estimator:
                    for k in ("in_context", "placebo", "constructed"):
                        if getattr(t, k) is not None:
                            series.setdefault(k, []).extend(float(x) for x in getattr(t, k))
            if series:
                info["series"] = series
        # a skip: the evidence holds nothing this check needs for this estimator: not applicable
        cell = CellResult.of(v, na=True, **info).to_dict()
        out.append({"nodeid": f"replay::{v.check}[{v.estimator}]", "outcome": VERDICT_OUTCOME[v.outcome],
                    "duration_s": None, "reason": None if v.outcome == "pass" else v.reason, "cell": cell})
    return out


def replay_settings(ev, path: str, report: str | None) -> dict:
    """The ``settings`` of a replayed report (the keys of the plugin's settings, profile ``replay``)."""
    seeds = {x.seed for x in (*ev.runs, *ev.draws, *ev.token_level)}
    draws = max((len({d.draw for d in ev.draws if d.seed == s}) for s in seeds), default=0)
    return {"estimators": list(ev.estimators()), "profile": "replay", "seeds": len(seeds), "draws": draws,
            "cache_dir": None, "rebuild": False, "report": report, "evidence": str(path), "fixture": None,
            "strict": False, "paper_gate": False, "lds": False, "causal_all_seeds": False, "timeout": None, "isolation": None,
            "rescore": False, "gate_seed": None, "gate_attempts": None, "sketch_seed": None, "thresholds": {}}  # nothing is called, nothing is isolated, nothing is built


def replay_main(argv: Sequence[str] | None = None) -> int:
    """``bt-bench replay PATH [--report out.json] [--html report.html] [--png-dir DIR]``: judge recorded
    evidence (a BehaviorTrace seed folder, a published file, or native evidence JSON) with the checklist.

    Exit code (the gate): 0 when every replayed verdict passes or skips, 1 when any fails or errors (an
    error means the evidence cannot support a verdict, never a pass), 2 when the input cannot be read.
    """
    ap = argparse.ArgumentParser(prog="bt-bench replay", description=replay_main.__doc__.splitlines()[0])
    ap.add_argument("path", help="BehaviorTrace seed folder (e.g. the vendored bt_bench/data/behaviortrace/seed2), "
                                 "a published BehaviorTrace file, or native evidence (.json / .json.gz)")
    ap.add_argument("--report", help=f"write the JSON report (schema {SCHEMA}, runs: []) here")
    ap.add_argument("--html", help="write a self-contained HTML page here")
    ap.add_argument("--png-dir", help="write report.md and the plots as PNG files into this folder")
    args = ap.parse_args(argv)
    from bt_bench.checklist import evidence_format, replay
    from bt_bench.checklist.base import Thresholds

    th = Thresholds()
    try:
        if not Path(args.path).exists():
            raise ValueError(f"evidence not found: {args.path}")
        ev = evidence_format.load_evidence(args.path)
        verdicts = replay.replay(ev, th)
    except (ValueError, OSError) as e:
        print(f"bt-bench replay: error: {e}", file=sys.stderr)
        return 2
    results = results_from_verdicts(verdicts, ev)
    gate = 1 if any(v.outcome in ("fail", "error") for v in verdicts) else 0
    print(f"replayed {ev.source}")
    print(format_table(results))
    kw = {"settings": replay_settings(ev, args.path, args.report), "results": results, "exit_status": gate,
          "gates": [], "thresholds": th.to_dict(), "modified_thresholds": {}, "provenance": {},
          "extra": {"runs": [], "failed_seeds": [], "tried_seeds": [], "source": ev.source}}
    doc = write_report(args.report, **kw) if args.report else build_report(**kw)
    if args.report:
        print(f"wrote {args.report}")
    write_outputs(doc, args.html, args.png_dir)
    print(f"exit {gate}: " + ("every replayed verdict passes or skips" if gate == 0 else
                              "at least one replayed verdict fails or cannot be judged (error)"))
    return gate
