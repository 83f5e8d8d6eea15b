"""Fresh fixtures the sketch can judge (bt_bench.plugin.gate_draw): a gate seed whose fixtures fail the
sketch-ranking self-check is redrawn before any estimator is scored, every rejected seed is reported, and a session
where no attempt passes stops before scoring. The order of the attempts is a function of the drawn seed alone.

The plugin tests run the real ``bt_runs`` fixture with its building, deriving and ranking parts replaced in the
session's conftest (nothing is built); the real screen on real fixtures runs in every paper gate of
tests/test_redteam.py (gate seed 2, whose fixtures pass: ``test_prepared_knowledge_fails_the_paper_gate``)."""

from __future__ import annotations

import json

import pytest

from bt_bench.plugin.gate_draw import attempt_seeds, choose, none_passed


def test_the_attempts_are_the_drawn_seed_then_a_fixed_sequence_derived_from_it():
    a = attempt_seeds(7, 4)
    assert a[0] == 7 and len(set(a)) == 4 and all(0 <= s < 2**31 for s in a)
    assert attempt_seeds(7, 4) == a and attempt_seeds(7, 6)[:4] == a  # reproducible, a prefix of longer ones
    assert attempt_seeds(8, 4)[1:] != a[1:]  # another drawn seed, another sequence
    assert attempt_seeds(7, 1) == [7]


def test_choose_takes_the_first_attempt_that_passes_and_reports_the_rejected():
    seeds, lines, prepared = attempt_seeds(11, 4), [], []

    def prepare(seed):
        prepared.append(seed)
        return {"seed": seed}

    def screen(p):  # the first two fail
        return [f"tracin rho low on {p['seed']}"] if p["seed"] in seeds[:2] else []

    res = choose(11, 4, prepare, screen, note=lines.append)
    assert res["drawn"] == 11 and res["accepted"] == seeds[2] and res["prepared"] == {"seed": seeds[2]}
    assert res["rejected"] == [{"seed": s, "problems": [f"tracin rho low on {s}"]} for s in seeds[:2]]
    assert prepared == seeds[:3]  # nothing after the accepted one is built
    assert len(lines) == 2 and f"drawing gate seed {seeds[1]} (attempt 2 of 4)" in lines[0]
    # control: a passing drawn seed is used as drawn, nothing rejected
    assert choose(11, 4, prepare, lambda p: [])["accepted"] == 11


def test_when_no_attempt_passes_nothing_is_accepted_and_the_message_names_every_seed():
    res = choose(5, 3, lambda s: s, lambda p: [f"bad {p}"])
    assert res["accepted"] is None and res["prepared"] is None and len(res["rejected"]) == 3
    msg = none_passed(res)
    assert all(f"gate seed {s}: bad {s}" in msg for s in attempt_seeds(5, 3)) and "--bt-gate-attempts" in msg


# ---------------------------------------------------------------- through the plugin (nothing is built)

CONFTEST = '''
import json, os, types
import pytest
import bt_bench.plugin.fixtures as F
import bt_bench.fixture.reader as reader
import bt_bench.checklist.sketch_verdicts as sv
from bt_bench.plugin.gate_draw import attempt_seeds

LOG = os.environ["LOG"]
BAD = attempt_seeds(int(os.environ["DRAWN"]), 8)[: int(os.environ["REJECT"])]

_AT = os.environ.get("UNPLANTED_AT")
UNPLANTED = [attempt_seeds(int(os.environ["DRAWN"]), 8)[int(_AT)]] if _AT else []  # attempts whose runs do not plant

def _tried(cfg, first, s):  # the runs a failed planting tried: two fake folders
    from bt_bench.runs.store import cache_root
    out = []
    for x in (first, first + 1):
        path = cache_root(s.cache_dir) / "runs" / f"tried{x}"
        path.mkdir(parents=True, exist_ok=True)
        out.append(types.SimpleNamespace(key=f"tried{x}", path=path))
    return out

def _planted(cfg, first, s, config):  # a gate seed's "runs": one fake run named by its first run seed, a folder each
    from bt_bench.runs.config import gate_config
    from bt_bench.runs.store import cache_root
    if any(gate_config("tiny", g)[1] == first for g in UNPLANTED):
        _tried(cfg, first, s)
        raise RuntimeError("only 1 of 9 seeds from %d on planted (need 3) (fake)" % first)
    path = cache_root(s.cache_dir) / "runs" / f"run{first}"
    (path / "checkpoints").mkdir(parents=True, exist_ok=True)
    return {"runs": [types.SimpleNamespace(key=f"run{first}", gate_first=first, path=path)], "failed": []}

def _ranking(fx, folder=None, th=None):
    with open(LOG, "a") as f:
        f.write(json.dumps({"screened": fx.first, "pid": os.getpid()}) + "\\n")
    return {"first": fx.first}

def _judge(reports):
    from bt_bench.runs.config import gate_config
    bad_firsts = {gate_config("tiny", g)[1] for g in BAD}
    return [f"tracin: median Spearman 0.5 < 0.95 (fake, run seed {r['first']})" for r in reports
            if r["first"] in bad_firsts]

F._planted, F._tried_runs = _planted, _tried
F._derive = lambda runs, fcfg, cache_dir, config: None
def _load(run, fcfg, cache_dir):
    folder = run.path.parent.parent / "derived" / run.key
    folder.mkdir(parents=True, exist_ok=True)
    return types.SimpleNamespace(first=run.gate_first, folder=folder)

_CAN = os.environ.get("CANARY_AT")
CANARY_BAD = [attempt_seeds(int(os.environ["DRAWN"]), 8)[int(_CAN)]] if _CAN else []  # attempts the oracle fails

def _canary(config, s, prepared):  # the real one judges oracle and random on a real suite
    from bt_bench.runs.config import gate_config
    first = prepared["runs"][0].gate_first
    with open(LOG + ".canary", "a") as f:
        f.write(json.dumps({"canary": first, "pid": os.getpid()}) + "\\n")
    if first in {gate_config("tiny", g)[1] for g in CANARY_BAD}:
        return ["fixture self-check oracle_canary FAILED (perfect attribution cannot pass: oracle: GATE FAIL (fake))"]
    return []

reader.load_fixture = _load
sv.fixture_verdicts_memo, sv.judge = _ranking, _judge
F._canary_screen = _canary
'''

TESTS = '''
def test_one(bt_runs):
    assert bt_runs["runs"]

def test_other(bt_runs):
    assert bt_runs["runs"]
'''


def _session(pytester, tmp_path, monkeypatch, drawn: int, reject: int, *args, unplanted_at: int | None = None,
             canary_at: int | None = None):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_gate_fake=TESTS)
    log = tmp_path / "screened.jsonl"
    for k, v in (("LOG", log), ("DRAWN", drawn), ("REJECT", reject), ("UNPLANTED_AT", unplanted_at),
                 ("CANARY_AT", canary_at)):
        monkeypatch.setenv(k, "" if v is None else str(v))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this test may itself run on a worker
    report = tmp_path / "r.json"
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--bt-gate-seed", str(drawn), "--bt-report",
                                      str(report), "--bt-cache-dir", str(tmp_path / "cache"), *args)
    screened = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return r, (json.loads(report.read_text()) if report.exists() else None), screened


def test_rejected_gate_seeds_are_redrawn_once_for_every_worker_and_reported(pytester, tmp_path, monkeypatch):
    r, doc, screened = _session(pytester, tmp_path, monkeypatch, 31, 2, "-n", "2")
    seeds = attempt_seeds(31, 4)
    g = doc["gate_seed"]
    assert g["drawn"] == 31 and g["seed"] == seeds[2] and g["reproduce"] == f"--bt-gate-seed {seeds[2]}"
    assert [x["seed"] for x in g["rejected"]] == seeds[:2] and "median Spearman 0.5" in g["rejected"][0]["problems"][0]
    # each attempt screened once although two workers built it (the decision is shared, so they agree)
    from bt_bench.runs.config import gate_config
    assert sorted(x["screened"] for x in screened) == sorted(gate_config("tiny", s)[1] for s in seeds[:3])
    # the rejected attempts' runs and derived data left the cache once both workers were done with them
    firsts = [gate_config("tiny", s)[1] for s in seeds[:3]]
    cache = tmp_path / "cache"
    assert [(cache / "runs" / f"run{f}").exists() for f in firsts] == [False, False, True]
    assert [(cache / "derived" / f"run{f}").exists() for f in firsts] == [False, False, True]
    r.stdout.fnmatch_lines([f"*gate seed {seeds[0]} not judged: its fixtures fail the screen before scoring*",
                            f"*fresh fixtures of gate seed {seeds[2]}*"])
    # while it works: one progress line per rejection (from one worker), naming the next attempt
    said = r.stdout.str().count(f"gate seed {seeds[0]}: its fixtures fail the screen before scoring")
    assert said == 1 and f"drawing gate seed {seeds[1]} (attempt 2 of 6)" in r.stdout.str(), r.stdout.str()[-3000:]
    assert r.ret == 0


def test_a_drawn_seed_that_passes_is_used_as_drawn(pytester, tmp_path, monkeypatch):
    """Control: nothing rejected, the report's seed is the drawn one."""
    r, doc, screened = _session(pytester, tmp_path, monkeypatch, 31, 0, "-p", "no:xdist")
    assert doc["gate_seed"]["seed"] == 31 and doc["gate_seed"]["rejected"] == [] and len(screened) == 1
    from bt_bench.runs.config import gate_config
    assert (tmp_path / "cache" / "derived" / f"run{gate_config('tiny', 31)[1]}").is_dir()  # the judged one stays


def test_a_gate_seed_whose_runs_do_not_plant_is_redrawn_and_its_runs_removed(pytester, tmp_path, monkeypatch):
    r, doc, screened = _session(pytester, tmp_path, monkeypatch, 31, 0, "-p", "no:xdist", unplanted_at=0)
    seeds = attempt_seeds(31, 6)
    g = doc["gate_seed"]
    assert g["seed"] == seeds[1] and [x["seed"] for x in g["rejected"]] == [seeds[0]], g
    assert "only 1 of 9 seeds" in g["rejected"][0]["problems"][0] and len(screened) == 1  # nothing derived for it
    assert sorted(p.name for p in (tmp_path / "cache" / "runs").iterdir()) == [f"run{gate_config_first(seeds[1])}"]


def test_a_gate_seed_whose_fixtures_the_oracle_cannot_pass_is_redrawn_before_scoring(pytester, tmp_path, monkeypatch):
    """The oracle canary is part of the screen. The first attempt passes the sketch screen but fails the
    canary: it is rejected with the canary's problem, its data leave the cache, and the next attempt is judged. Its
    canary ran once per worker (both workers compute the cells; one decision is shared)."""
    r, doc, _ = _session(pytester, tmp_path, monkeypatch, 31, 0, "-n", "2", canary_at=0)
    seeds = attempt_seeds(31, 6)
    g = doc["gate_seed"]
    assert g["seed"] == seeds[1] and [x["seed"] for x in g["rejected"]] == [seeds[0]], g
    assert "oracle_canary FAILED (perfect attribution cannot pass" in g["rejected"][0]["problems"][0]
    canaried = [json.loads(x)["canary"] for x in (tmp_path / "screened.jsonl.canary").read_text().splitlines()]
    assert sorted(canaried) == sorted([gate_config_first(seeds[0])] * 2 + [gate_config_first(seeds[1])] * 2)
    assert sorted(p.name for p in (tmp_path / "cache" / "runs").iterdir()) == [f"run{gate_config_first(seeds[1])}"]
    r.stdout.fnmatch_lines([f"*gate seed {seeds[0]} not judged: its fixtures fail the screen before scoring*oracle_canary FAILED*"])
    assert r.ret == 0


def test_the_canary_runs_only_on_seeds_that_pass_the_sketch_screen(pytester, tmp_path, monkeypatch):
    """Control: a seed rejected by the sketch screen is not canaried (nothing is scored on it)."""
    _, doc, _ = _session(pytester, tmp_path, monkeypatch, 31, 1, "-p", "no:xdist")
    seeds = attempt_seeds(31, 6)
    canaried = [json.loads(x)["canary"] for x in (tmp_path / "screened.jsonl.canary").read_text().splitlines()]
    assert canaried == [gate_config_first(seeds[1])] and doc["gate_seed"]["seed"] == seeds[1]


def gate_config_first(seed: int) -> int:
    from bt_bench.runs.config import gate_config

    return gate_config("tiny", seed)[1]


def test_no_passing_attempt_stops_the_session_before_scoring(pytester, tmp_path, monkeypatch):
    r, doc, screened = _session(pytester, tmp_path, monkeypatch, 31, 3, "-p", "no:xdist", "--bt-gate-attempts", "3")
    assert r.ret != 0 and len(screened) == 3
    r.stdout.fnmatch_lines(["*no fresh fixtures that can gate: all 3 gate seeds drawn from 31 fail*"])
    assert r.parseoutcomes().get("errors") == 2  # both tests: their fixture failed, nothing ran
    assert not list((tmp_path / "cache" / "runs").iterdir())  # no attempt's data stays behind
    seeds = attempt_seeds(31, 3)  # the report says what was tried, though no test ran
    assert doc["gate_seed"] == {"seed": None, "drawn": 31, "reproduce": "--bt-gate-seed 31", "rejected": [
        {"seed": x, "problems": [f"tracin: median Spearman 0.5 < 0.95 (fake, run seed {gate_config_first(x)})"]}
        for x in seeds]}, doc["gate_seed"]
    r.stdout.fnmatch_lines(["*no gate seed drawn from 31 gave fixtures that can gate: nothing judged*"])


@pytest.mark.parametrize("bad", ["0", "-2"])
def test_a_bad_number_of_attempts_is_one_line_naming_the_option(pytester, bad):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = pytester.runpytest(f"--bt-gate-attempts={bad}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*gate_attempts: must be an integer >= 1*(--bt-gate-attempts)*"])
