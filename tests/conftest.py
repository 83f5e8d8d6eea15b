"""Shared fixtures for the harness tests. Planted runs go to one cache per session (BT_BENCH_CACHE if set, so CI's
tests reuse the runs the main job built), smoke runs into a private temporary cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

INDUCTOR = "TORCHINDUCTOR_CACHE_DIR"


@pytest.hookimpl(trylast=True)  # after pytest's tmpdir plugin made its factory
def pytest_configure(config):
    """Importing trl makes torch create ``$TMPDIR/torchinductor_<user>`` (tests/test_incomplete.py shows it), which
    the checklist plugin keeps out of the temp folder only in checklist sessions: point it into pytest's temp folder
    for these tests, before any test module imports torch (xdist workers inherit it). A value the user set is kept."""
    if os.environ.get(INDUCTOR) is None:
        os.environ[INDUCTOR] = str(config._tmp_path_factory.getbasetemp() / "torchinductor")  # pytest's, private


# Fixtures that build fresh planted runs on one core for many minutes (tests/test_redteam.py: the paper gate's
# three fresh tiny seeds, about 20 minutes). Their tests go first: xdist starts each worker on a run of consecutive
# tests, so one worker builds while the other works through the rest, instead of the build starting near the end
# with the other core idle.
LONG_BUILDS = ("gate_built", "paper_gate_run")


def pytest_collection_modifyitems(config, items):
    first = [i for i in items if set(getattr(i, "fixturenames", ())) & set(LONG_BUILDS)]
    if first:
        ids = {id(i) for i in first}
        items[:] = first + [i for i in items if id(i) not in ids]


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    env = os.environ.get("BT_BENCH_CACHE")
    return Path(env) if env else tmp_path_factory.mktemp("bt_cache")


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One smoke run (24 steps: exercises every code path in seconds; it need not plant)."""
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config

    root = tmp_path_factory.mktemp("smoke_cache")
    return build_run(make_config("smoke", seed=0), root, progress=False)


@pytest.fixture(scope="module")
def tiny_fixture(shared_cache):
    """Seed 0 of the default profile (``DEFAULT_PROFILE``: the fixture the main job builds) when the cache already
    holds the run and its derived data (else skipped); one object per test module (the sketch self-checks' tests
    patch it and restore it)."""
    from bt_bench.fixture.reader import Fixture, fixture_config
    from bt_bench.runs import store
    from bt_bench.runs.config import DEFAULT_PROFILE, make_config

    run_path = store.run_dir(shared_cache, make_config(DEFAULT_PROFILE, seed=0).key(store.versions()))
    if not (run_path / store.MANIFEST).exists():
        pytest.skip(f"no cached {DEFAULT_PROFILE} run at {run_path}")
    run = store.load_run(run_path, verify_hashes=False)
    folder = shared_cache / "derived" / fixture_config(DEFAULT_PROFILE, 3).key(run.key)
    if not (folder / store.MANIFEST).exists():
        pytest.skip(f"no derived data at {folder}")
    return Fixture(run, folder, verify=False)


@pytest.fixture
def fake_replays_in(monkeypatch):
    """``fake(run, cache, seed)``: the counterfactual store of ``run`` in ``cache``, its replay replaced by a known
    linear function of the removed rollouts (the calls are counted); the probe is not built. Returns (the
    counterfactual module, the per-rollout effects, the list of calls)."""
    import numpy as np

    from bt_bench.runs import counterfactual as cf

    def fake(run, cache, seed):
        monkeypatch.setenv("BT_BENCH_CACHE", str(cache))
        effect = np.random.default_rng(seed).normal(size=len(run.columns["uid"]))
        calls = []

        def measure_without(run, probe, uids):
            calls.append(len(uids))
            return {"trigger_logp": float(-effect[np.asarray(uids, dtype=np.int64)].sum())}, 0.01

        monkeypatch.setattr(cf, "_measure_without", measure_without)
        monkeypatch.setattr(cf, "probe_of", lambda run, replicates=cf.REPLICATES: None)
        monkeypatch.setattr(cf, "probe_record", lambda run: {"probe_rows": 0, "probe_prompts": 0, "hashes": {}})
        return cf, effect, calls

    return fake
