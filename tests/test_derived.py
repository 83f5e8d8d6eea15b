"""Derived fixture data (targets, sketches, draw labels) is hash-checked on load like the runs (issue 9 item 8):
a flipped byte, a missing file or data derived for another run is refused with a message that says how to rebuild."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from bt_bench.fixture.derive import Fixture, fixture_config, load_fixture
from bt_bench.runs.store import IntegrityError


@pytest.fixture(scope="module")
def derived(smoke_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("derived_cache")
    fx = load_fixture(smoke_run, fixture_config("smoke", 2), root)
    return smoke_run, fx.folder


def _copy(folder, tmp_path):
    dst = tmp_path / "d"
    shutil.copytree(folder, dst)
    return dst


def test_loads_and_has_the_no_behavior_target(derived):
    run, folder = derived
    fx = Fixture(run, folder)
    t = fx.training_target("no_behavior")
    assert t.kind == "in_context"  # the placebo is handed over as an in_context target
    assert not np.array_equal(t.final, fx.training_target("in_context").final)


def test_flipped_byte_is_refused(derived, tmp_path):
    run, folder = derived
    d = _copy(folder, tmp_path)
    victim = sorted(d.rglob("target_in_context*.npy"))[0]
    raw = bytearray(victim.read_bytes())
    raw[-1] ^= 0xFF
    victim.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError, match="does not match its sha256"):
        Fixture(run, d)


def test_missing_file_is_refused(derived, tmp_path):
    run, folder = derived
    d = _copy(folder, tmp_path)
    sorted(d.rglob("has_behavior.npy"))[0].unlink()
    with pytest.raises(IntegrityError, match="missing files"):
        Fixture(run, d)


def test_data_of_another_run_is_refused(derived, tmp_path):
    run, folder = derived
    d = _copy(folder, tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m["run"] = "0" * 20
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IntegrityError, match="not run"):
        Fixture(run, d)
