"""The session object (pytest-benchmark is the model): registered in ``pytest_configure``, it collects every cell's
result on the controller (results travel from xdist workers in ``user_properties``), decides each estimator's gate
(``bt_bench.checklist.gate``; the exit code), prints the table and the gate lines, and writes the JSON report once.
A test whose xdist worker crashed becomes an ERROR cell of its estimator (``bt_bench.plugin.robust``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bt_bench.plugin.options import Settings, effective_thresholds, modified_thresholds


class BtSession:
    """Results, gates and the report of one pytest session. Workers keep one too but never print or write."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config, self.settings = config, settings
        self.results: list[dict] = []
        self.gates: list = []
        self.complete: dict | None = None  # the report's ``completeness`` (expected grid, missing units)
        self._provenance: dict = {}

    @property
    def worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from bt_bench.plugin import robust
        from bt_bench.plugin.glue import CELL_KEY

        if not self.worker and report.when == robust.CRASHED:  # xdist: the worker died while running this test
            msg = str(report.longrepr)
            self.results.append({"nodeid": report.nodeid, "outcome": "error", "duration_s": None, "reason": msg,
                                 **robust.crash_record(report.nodeid, msg, self._estimators()), "traceback": msg})
            return
        if self.worker or (report.when != "call" and not (report.when == "setup" and report.outcome != "passed")):
            return
        metrics: dict = {}
        cell, tb = None, None
        for k, v in report.user_properties:
            if k == CELL_KEY:  # a check's cell: serialised once by the glue (CellResult.to_dict), passed on as is
                cell = json.loads(v)
            elif k == "bt_bench":  # a fixture self-check's figures
                metrics.update(json.loads(v))
            elif k == robust.TRACEBACK_KEY:  # the terminal showed one line (robust.one_line); the JSON keeps all
                tb = v
        if cell is None and not metrics and report.outcome == "skipped":  # e.g. an empty parameter set
            return
        outcome = report.outcome
        if cell is not None and cell["outcome"] == "error":
            outcome = "error"  # the estimator or the fixture could not support a verdict
        elif hasattr(report, "wasxfail"):
            outcome = "xpass" if report.passed else "xfail"
        elif report.when == "setup" and report.failed:
            outcome = "error"
        self.results.append({"nodeid": report.nodeid, "outcome": outcome,
                             **({"cell": cell} if cell is not None else {"metrics": metrics}),
                             "duration_s": round(report.duration, 3),
                             "reason": (str(report.longrepr)[-400:] if report.skipped else None), "traceback": tb})

    def _estimators(self) -> list[str]:
        robustness = self.config.pluginmanager.get_plugin("bt_bench_robustness")
        return robustness.estimators() if robustness is not None else []

    def completeness(self) -> dict | None:
        """The expected grid of a session that runs the checklist (``bt_bench.checklist.grid``) and the units it
        left out, as the report's ``completeness``; None when there is no grid to hold it to (replayed evidence,
        --collect-only, or a session whose arguments name no checklist folder)."""
        from bt_bench.plugin import selection

        s = self.settings
        if s.evidence or self.config.option.collectonly or not selection.runs_the_checklist(self.config):
            return None
        from bt_bench.checklist.grid import Grid

        names = list(dict.fromkeys(self._estimators()))
        seeds, draws = selection.full_counts(s)
        prov = self.provenance(names)
        declared = {n: (None if "error" in prov.get(n, {"error": 1}) else prov[n]) for n in names}
        grid = Grid.of(declared, seeds=seeds, draws=draws, ran_seeds=s.seeds, ran_draws=s.draws)
        return grid.to_dict(grid.missing(self.results, lambda c: selection.module_path(self.config, c)))

    def provenance(self, names) -> dict:
        """Each estimator's provenance (``bt_bench.report.schema.estimator_provenance``: its declared level and
        capabilities among it), looked up once for the grid and the report."""
        from bt_bench.report.schema import estimator_provenance

        todo = [n for n in names if n not in self._provenance]
        self._provenance.update(estimator_provenance(todo) if todo else {})
        return {n: self._provenance[n] for n in names}

    def decide(self) -> list:
        """One ``Gate`` per estimator with results or expected units: against its declared snapshot for a built-in
        on a profile that has one (unless --bt-strict), else by its own cells; a check with expected units left out
        is INCOMPLETE (``bt_bench.checklist.gate``); a fixture self-check that failed in the session fails every gate
        (``gate.fixture_problems``)."""
        from bt_bench.checklist import gate
        from bt_bench.checklist.expectations import expected_for

        s = self.settings
        mod = bool(modified_thresholds(s))
        by_est: dict[str, dict] = {}
        for (est, check), r in gate.checks(self.results, self.complete).items():
            by_est.setdefault(est, {})[check] = r
        order = {e: i for i, e in enumerate(dict.fromkeys(self._estimators()))}
        self._judge_canary(by_est, mod)
        fixture = gate.fixture_problems(self.results)  # a failed self-check: no estimator's verdict counts
        extras = set(self._canary_extras())
        out = []  # in the session's estimator order, not the order xdist delivered the results in
        for est, checks in sorted(by_est.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])):
            if est in extras:  # scored for the canary only: its verdict is the canary's self-check line
                continue
            want = None if (s.strict or s.evidence or s.gate_seed is not None) else expected_for(s.profile, est, lds=s.lds)
            out.append(gate.with_fixture(gate.expectation_gate(est, checks, want, modified_thresholds=mod)
                                         if want is not None else gate.estimator_gate(est, checks,
                                                                                      modified_thresholds=mod),
                                         fixture))
        return out

    def _canary_extras(self) -> tuple[str, ...]:
        robustness = self.config.pluginmanager.get_plugin("bt_bench_robustness")
        return robustness.canary_extras() if robustness is not None else ()

    def _judge_canary(self, by_est: dict, modified: bool) -> None:
        """The oracle canary (``gate.canary``), recorded once as a fixture self-check's result, so a fixture on which
        the oracle cannot pass (or random can) fails every gate like any failed self-check. Only in a session that runs
        the checklist on planted fixtures (``fixtures.canary_estimators``), not on a collect-only one, and not when
        neither canary estimator has a judged check (a selection of self-checks only)."""
        from bt_bench.checklist import gate
        from bt_bench.plugin.fixtures import canary_estimators
        from bt_bench.plugin.selection import runs_the_checklist

        if self.config.option.collectonly or any(gate.cell_of(r)[0] == gate.CANARY for r in self.results):
            return
        if not (runs_the_checklist(self.config) and canary_estimators(self.settings)):
            return  # the canary's estimators were not scored for it (someone else's tests, smoke, replayed evidence)
        from bt_bench.checklist.registry import CHECKS

        excluded = tuple(name for name, spec in CHECKS.items() if not spec.canary)
        required = {c for e, cells in by_est.items() if e not in (*gate.CANARY_PASSES, *gate.CANARY_FAILS)
                    for c, r in cells.items() if r.label not in (gate.INCOMPLETE, gate.NA)}
        verdict = gate.canary(by_est, excluded=excluded, required=required, modified_thresholds=modified)
        if verdict is not None:
            self.results.append(gate.canary_record(verdict, excluded))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        if self.worker:
            return
        self.complete = self.completeness()
        self.gates = self.decide()
        if any(not g.ok for g in self.gates) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the gate: see bt_bench.checklist.gate
        s = self.settings
        if s.report:
            from bt_bench.plugin.selection import command_line
            from bt_bench.report.schema import write_report

            gates = [dataclasses.asdict(g) | {"line": g.line()} for g in self.gates]
            write_report(Path(s.report), settings=dataclasses.asdict(s), results=self.results,
                         exit_status=int(session.exitstatus), gates=gates,
                         thresholds=effective_thresholds(s).to_dict(), modified_thresholds=modified_thresholds(s),
                         provenance=self.provenance(sorted({g["estimator"] for g in gates})),
                         extra={"command_line": command_line(self.config), "completeness": self.complete,
                                **self.fixture_origin()})

    def fixture_origin(self) -> dict:
        """Where the fixtures came from, for the report: a gate seed's fresh fixtures (the seed, the first run seed
        and the drawn strings, so a reviewer reruns it with --bt-gate-seed), or prepared data ("not a paper
        gate": a pack or recorded evidence can be matched by a table prepared beforehand)."""
        s = self.settings
        if s.fixture or s.evidence:
            flag = "--bt-fixture" if s.fixture else "--bt-evidence"
            return {"not_a_paper_gate": f"prepared data ({flag}): --bt-paper-gate refuses it"}
        if s.gate_seed is None:
            return {}
        from bt_bench.runs.config import gate_config

        # the gate seed whose fixtures were judged: the drawn one, or one drawn after it when the drawn one's fixtures
        # failed the sketch-ranking screen (bt_bench.plugin.gate_draw); None when no attempt passed
        draw = self.gate_draw()
        seed = draw["accepted"] if draw else s.gate_seed
        if seed is None:
            return {"gate_seed": {"seed": None, "drawn": draw["drawn"], "rejected": draw["rejected"],
                                  "reproduce": f"--bt-gate-seed {draw['drawn']}"}}
        cfg, first = gate_config(s.profile, seed)
        out = {"seed": seed, "first_run_seed": first, "trigger": cfg.trigger, "behavior": cfg.behavior,
               "reproduce": f"--bt-gate-seed {seed}"}
        if draw:
            out |= {"drawn": draw["drawn"], "rejected": draw["rejected"]}
        return {"gate_seed": out}

    @staticmethod
    def gate_seed_lines(origin: dict) -> list[tuple[str, bool]]:
        """(line, red) for the summary: each rejected gate seed, then the one judged (or that none was)."""
        g = origin.get("gate_seed")
        if not g:
            return []
        from bt_bench.plugin.gate_draw import SCREEN

        out = [(f"gate seed {r['seed']} not judged: its fixtures fail {SCREEN} "
                f"({'; '.join(r['problems'])})", False) for r in g.get("rejected") or []]
        if g["seed"] is None:
            out.append((f"no gate seed drawn from {g['drawn']} gave fixtures that can gate: nothing judged "
                        f"(reproduce: {g['reproduce']})", True))
        else:
            out.append((f"fresh fixtures of gate seed {g['seed']}: run seeds from {g['first_run_seed']}, trigger "
                        f"{g['trigger']!r}, behavior {g['behavior']!r} (reproduce: {g['reproduce']})", False))
        return out

    def gate_draw(self) -> dict | None:
        """The gate seeds a session on fresh fixtures tried (``plugin.fixtures._publish_draw``): from this process
        (no xdist) or from the file its first worker left in the shared folder of the base temp; None if none."""
        from bt_bench.plugin.fixtures import DRAW_FILE, SHARED, gate_draw_key

        if gate_draw_key in self.config.stash:
            return self.config.stash[gate_draw_key]
        base = getattr(getattr(self.config, "_tmp_path_factory", None), "_basetemp", None)  # pytest's, private
        path = Path(base) / SHARED / DRAW_FILE if base is not None else None
        return json.loads(path.read_text()) if path is not None and path.is_file() else None

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        if self.worker:
            return
        rows = [r for r in self.results if r.get("cell") or r.get("metrics")]
        if not rows and not self.gates:  # nothing to tabulate; the gate seeds a session on fresh fixtures tried, still
            lines = self.gate_seed_lines(self.fixture_origin())
            if lines:
                terminalreporter.section("bt-bench fresh fixtures")
            for line, red in lines:
                terminalreporter.write_line(line, red=red)
            return
        from bt_bench.checklist.expectations import has_snapshot
        from bt_bench.report.table import format_table

        s = self.settings
        terminalreporter.section(f"bt-bench checklist on fixture {s.profile!r} ({s.seeds} seeds x {s.draws} draws)")
        terminalreporter.write_line(format_table(rows, order=s.estimators, completeness=self.complete))
        missing = (self.complete or {}).get("missing") or []
        if missing:
            terminalreporter.write_line(f"INCOMPLETE: {len(missing)} expected unit(s) of the grid have no complete "
                                        "verdict (-k, --deselect, -x, --bt-seeds/--bt-draws, or a crash), e.g. "
                                        f"{missing[0]['nodeid']} ({missing[0]['why']})"
                                        + ("; all of them in completeness.missing of the JSON report"
                                           if s.report else "; --bt-report FILE lists all of them"), red=True)
        mod = modified_thresholds(s)
        if mod:
            terminalreporter.write_line("MODIFIED THRESHOLDS (not the checklist's defaults): " + ", ".join(
                f"{k}={v['value']!r} (default {v['default']!r})" for k, v in mod.items()))
        if s.gate_seed is not None and not s.strict and has_snapshot(s.profile):
            terminalreporter.write_line("fresh fixtures: the built-ins' declared outcomes were measured on the "
                                        "reference fixtures and do not apply here; every estimator is gated by its "
                                        "own cells")
        elif not s.strict and not s.evidence and not has_snapshot(s.profile):
            terminalreporter.write_line(f"profile {s.profile!r} has no expected-outcome snapshot: built-ins are "
                                        "gated like any estimator")
        origin = self.fixture_origin()
        for line, red in self.gate_seed_lines(origin):
            terminalreporter.write_line(line, red=red)
        if "not_a_paper_gate" in origin:
            terminalreporter.write_line(f"not a paper gate: {origin['not_a_paper_gate']}")
        for g in self.gates:
            terminalreporter.write_line(g.line(), red=not g.ok, green=g.ok, bold=True)
        if s.report:
            terminalreporter.write_line(f"JSON report: {s.report}  (human report: bt-bench report {s.report} "
                                        "--html report.html)")
