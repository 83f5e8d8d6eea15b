"""The oracle canary computed before anyone is scored (``bt_bench.checklist.canary_cells``, the paper gate's screen of
a gate seed): on the cached default fixture (the main job's three reference seeds) its cells are every canary
check's units for oracle and random, the oracle passes and random fails (positive control), and one oracle cell
turned to FAIL, or random passing everything, fails it (negative controls). The redraw it drives is tested with
fakes in tests/test_gate_draw.py."""

from __future__ import annotations

import copy

import pytest

from bt_bench.checklist import gate
from bt_bench.checklist.canary_cells import canary_problems, canary_records
from bt_bench.checklist.registry import CHECKS

SEEDS, DRAWS = 3, 3


@pytest.fixture(scope="module")
def records(shared_cache):
    """Every canary cell on the default profile's three reference seeds, when the cache holds them (the main job
    builds them first in CI), else skipped; scores the main job stored are read back, as a warm session reads them."""
    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.score_cache import ScoreCache
    from bt_bench.checklist.suite import Suite
    from bt_bench.fixture.reader import Fixture, fixture_config
    from bt_bench.runs import store
    from bt_bench.runs.config import DEFAULT_PROFILE, get_profile, make_config

    fixtures = []
    for seed in range(SEEDS):  # the reference seeds 0-2 all plant (docs/fixtures.md, ten-seed table)
        path = store.run_dir(shared_cache, make_config(DEFAULT_PROFILE, seed=seed).key(store.versions()))
        if not (path / store.MANIFEST).exists():
            pytest.skip(f"no cached {DEFAULT_PROFILE} run for seed {seed} at {path}")
        run = store.load_run(path, verify_hashes=False)
        folder = shared_cache / "derived" / fixture_config(DEFAULT_PROFILE, DRAWS).key(run.key)
        if not (folder / store.MANIFEST).exists():
            pytest.skip(f"no derived data at {folder}")
        fixtures.append(Fixture(run, folder, verify=False))
    suite = Suite(fixtures=fixtures, failed_seeds=[], thresholds=Thresholds(),
                  norm_variant=get_profile(DEFAULT_PROFILE).norm_variant, lds_subsets=0,
                  score_cache=ScoreCache(shared_cache / "scores", session="", fresh=False),
                  stats_folder=None)
    return canary_records(suite, DRAWS)


def _units(spec) -> int:
    return {"all": 1, "seed": SEEDS, "seed_draw": SEEDS * DRAWS}[spec.unit]


def test_the_cells_are_every_canary_checks_units_for_oracle_and_random(records):
    got: dict = {}
    for r in records:
        check, est = gate.cell_of(r)
        got[(est, check)] = got.get((est, check), 0) + 1
    want = {(est, name): _units(spec) for est in (*gate.CANARY_PASSES, *gate.CANARY_FAILS)
            for name, spec in CHECKS.items() if spec.canary}
    assert got == want
    assert not any(spec.canary for spec in CHECKS.values() if spec.name == "linear_datamodeling")


def test_on_the_default_fixture_the_oracle_passes_and_random_fails(records):
    assert canary_problems(records) == []
    labels = {k: r.label for k, r in gate.checks(records).items()}
    oracle = {c: v for (e, c), v in labels.items() if e in gate.CANARY_PASSES}
    assert set(oracle.values()) <= {gate.PASS, gate.NA} and list(oracle.values()).count(gate.PASS) >= 7, oracle
    assert any(v == gate.FAIL for (e, _), v in labels.items() if e in gate.CANARY_FAILS), labels


def test_one_failed_oracle_cell_fails_the_canary_and_names_the_check(records):
    bad = copy.deepcopy(records)
    i = next(i for i, r in enumerate(bad) if gate.cell_of(r)[1] in gate.CANARY_PASSES)
    bad[i]["cell"]["outcome"], bad[i]["outcome"] = "fail", "failed"
    check = gate.cell_of(bad[i])[0]
    (problem,) = canary_problems(bad)
    assert gate.CANARY in problem and "perfect attribution cannot pass" in problem and check in problem


def test_random_passing_every_check_fails_the_canary(records):
    bad = copy.deepcopy(records)
    for r in bad:
        if gate.cell_of(r)[1] in gate.CANARY_FAILS:
            r["outcome"] = "passed"
            r["cell"]["outcome"] = "pass"
            for u in r["cell"]["units"]:
                u["outcome"] = "pass"
    (problem,) = canary_problems(bad)
    assert "a ranking that attributes nothing passes" in problem


def test_no_canary_cell_is_a_problem_not_a_pass():
    assert canary_problems([]) != []
