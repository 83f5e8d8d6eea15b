"""Shared fixtures for the harness tests. Planted runs go to one cache per session (BT_BENCH_CACHE if set, so CI's
tests reuse the runs the main job built), smoke runs into a private temporary cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


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
