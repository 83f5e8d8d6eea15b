"""``pytest checks --bt-fixture PACK`` runs the checklist on a packed fixture without building anything (issue 13
item 3): the profile and seeds come from the pack, the cache ends up holding exactly the pack's folders, and the
verdicts are those of the same fixture run from the cache it was packed from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bt_bench.fixture.pack import pack
from bt_bench.fixture.reader import fixture_config, load_fixture
from bt_bench.plugin.options import fixture_path_summary

ROOT = Path(__file__).resolve().parents[1]


def _checks(cache: Path, report: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BT_BENCH_CACHE": str(cache)}
    cmd = [sys.executable, "-m", "pytest", "checks", "-p", "no:cacheprovider", "-q", "--bt-estimator", "random",
           "--bt-draws", "2", "-k", "gradient_norm or integrity or planting or fluency_confound",
           "--bt-report", str(report), *extra]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def packed(smoke_run, tmp_path_factory):
    root = Path(smoke_run.path).parents[1]
    fx = load_fixture(smoke_run, fixture_config("smoke", 2), root)
    out = tmp_path_factory.mktemp("pack") / "smoke.tar"
    pack([smoke_run.key], out, root, progress=False)
    return smoke_run, fx, out, root


def test_summary_reads_profile_and_seeds_from_the_pack(packed):
    run, _, out, _ = packed
    assert fixture_path_summary(str(out)) == ("smoke", 1)


def test_checks_run_on_a_pack_and_build_nothing(packed, tmp_path):
    run, fx, out, src = packed
    cache = tmp_path / "empty_cache"
    res = _checks(cache, tmp_path / "r.json", "--bt-fixture", str(out))
    assert res.returncode in (0, 1), res.stdout[-3000:] + res.stderr[-3000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["settings"]["profile"] == "smoke" and doc["settings"]["fixture"] == str(out)
    assert {p.name for p in (cache / "runs").iterdir() if not p.name.endswith(".lock")} == {run.key}
    assert {p.name for p in (cache / "derived").iterdir() if not p.name.endswith(".lock")} == {fx.folder.name}
    # the same cells as from the cache the pack was made from
    ref = _checks(src, tmp_path / "ref.json", "--bt-profile", "smoke", "--bt-seeds", "1")
    assert ref.returncode == res.returncode
    cells = lambda d: sorted((r["nodeid"], r["outcome"], (r.get("cell") or r.get("metrics") or {}).get("key_figure"))  # noqa: E731
                             for r in d["results"])
    assert cells(doc) == cells(json.loads((tmp_path / "ref.json").read_text()))
    assert any((r.get("cell") or {}).get("check") == "gradient_norm_baseline" for r in doc["results"])


def test_a_tampered_pack_is_refused_before_any_check(packed, tmp_path):
    _, _, out, _ = packed
    bad = tmp_path / "bad.tar"
    raw = bytearray(out.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad.write_bytes(bytes(raw))
    res = _checks(tmp_path / "c", tmp_path / "r.json", "--bt-fixture", str(bad))
    assert res.returncode != 0
    assert "sha256" in (res.stdout + res.stderr) or "refused" in (res.stdout + res.stderr).lower()
    assert not (tmp_path / "c" / "runs").exists() or not any((tmp_path / "c" / "runs").iterdir())
