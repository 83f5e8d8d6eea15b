"""Sharded derive (issue 13 item 2): parts merged into the derived folder equal a 1-process ``build_derived``
bitwise (every array, and the manifest but for ``created``), and a missing, foreign, misplaced or damaged part is
refused by name. Bitwise, no tolerance: every process derives on CPU with one thread and the same batches, and
every sample is seeded per (step, draw, role)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from bt_bench.fixture.derive import build_derived
from bt_bench.fixture.reader import Fixture, fixture_config
from bt_bench.fixture.shard import ShardError, derive_in_parts, derive_shard, main, merge_shards, part_dir

FCFG = fixture_config("smoke", 2)


@pytest.fixture(scope="module")
def reference(smoke_run, tmp_path_factory):
    return build_derived(smoke_run, FCFG, tmp_path_factory.mktemp("single"))


@pytest.fixture(scope="module")
def sharded(smoke_run, tmp_path_factory):
    """Parts 0/2 and 1/2 and their merge, in a cache that holds a copy of the run (for the command line)."""
    root = tmp_path_factory.mktemp("sharded")
    shutil.copytree(smoke_run.path, root / "runs" / smoke_run.key)
    parts = [derive_shard(smoke_run, FCFG, i, 2, root) for i in range(2)]
    return root, parts, merge_shards(smoke_run, FCFG, 2, root)


def _same(a, b) -> None:
    files = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert files == sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    assert [f for f in files if f != "manifest.json" and (a / f).read_bytes() != (b / f).read_bytes()] == []
    ma, mb = (json.loads((x / "manifest.json").read_text()) for x in (a, b))
    ma.pop("created"), mb.pop("created")
    assert json.dumps(ma, sort_keys=True) == json.dumps(mb, sort_keys=True)  # text: a NaN AUC compares equal


def test_two_parts_merge_to_the_single_process_result(smoke_run, reference, sharded):
    root, parts, merged = sharded
    assert merged == root / "derived" / FCFG.key(smoke_run.key)
    units = [set(json.loads((p / "manifest.json").read_text())["units"]) for p in parts]
    assert all(units) and not units[0] & units[1]  # both parts did work, none twice
    _same(reference, merged)
    Fixture(smoke_run, merged)  # the reader verifies every hash


def test_one_part_works(smoke_run, reference, tmp_path):
    derive_shard(smoke_run, FCFG, 0, 1, tmp_path)
    _same(reference, merge_shards(smoke_run, FCFG, 1, tmp_path))


def test_derive_in_parts_alone_gives_the_single_process_result_and_removes_its_parts(smoke_run, reference, tmp_path):
    out = derive_in_parts(smoke_run, FCFG, 2, first=1, root=tmp_path)
    _same(reference, out)
    assert not (tmp_path / "derived_shards" / FCFG.key(smoke_run.key)).exists()
    assert derive_in_parts(smoke_run, FCFG, 2, first=0, root=tmp_path) == out  # a later caller finds it done


def test_two_callers_split_a_derive_and_publish_it_once(smoke_run, reference, tmp_path):
    """What two xdist workers do with a seed left over (bt_bench.plugin.fixtures._derive): one process each,
    starting at parts 0 and 1 at once."""
    code = ("import sys; from pathlib import Path; from bt_bench.runs.store import load_run; "
            "from bt_bench.fixture.reader import fixture_config; from bt_bench.fixture.shard import derive_in_parts; "
            "derive_in_parts(load_run(Path(sys.argv[1])), fixture_config('smoke', 2), 2, first=int(sys.argv[2]), "
            "root=sys.argv[3])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(smoke_run.path), str(i), str(tmp_path)])
             for i in range(2)]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    _same(reference, tmp_path / "derived" / FCFG.key(smoke_run.key))
    assert not (tmp_path / "derived_shards" / FCFG.key(smoke_run.key)).exists()


def _copy_parts(smoke_run, sharded, tmp_path):
    src = sharded[0] / "derived_shards" / FCFG.key(smoke_run.key)
    shutil.copytree(src, tmp_path / "derived_shards" / src.name)
    return [part_dir(tmp_path, src.name, i, 2) for i in range(2)]


def _edit(part, fn) -> None:
    m = json.loads((part / "manifest.json").read_text())
    fn(m)
    (part / "manifest.json").write_text(json.dumps(m))


def _flip(part) -> None:
    victim = min(part.rglob("*.npy"))
    raw = bytearray(victim.read_bytes())
    raw[-1] ^= 0xFF
    victim.write_bytes(bytes(raw))


def _steal(parts) -> None:  # part 1 also claims part 0's first unit (and its files)
    m0 = json.loads((parts[0] / "manifest.json").read_text())
    u = next(iter(m0["units"]))
    for rel in m0["units"][u]["files"]:
        (parts[1] / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(parts[0] / rel, parts[1] / rel)
    _edit(parts[1], lambda m: m["units"].update({u: m0["units"][u]}))


def _escape(m) -> None:  # a doctored manifest that would copy a file from outside the part
    files = next(iter(m["units"].values()))["files"]
    files["../../x.npy"] = files.popitem()[1]


def _drop(part) -> None:  # a unit lost with its files: the parts no longer cover the plan
    m = json.loads((part / "manifest.json").read_text())
    rec = m["units"].pop(next(iter(m["units"])))
    for rel in rec["files"]:
        (part / rel).unlink()
    (part / "manifest.json").write_text(json.dumps(m))


SPOILERS = {
    "missing": (lambda p: shutil.rmtree(p[1]), r"part 1/2 is missing"),
    "another run": (lambda p: _edit(p[0], lambda m: m.update(run="0" * 20)), r"part 0/2 .*: run '0{20}', expected"),
    "tampered": (lambda p: _flip(p[1]), r"part 1/2 .*\.npy does not match its sha256"),
    "sketch spec": (lambda p: _edit(p[1], lambda m: m["sketch_spec"].update(k=m["sketch_spec"]["k"] + 1)),
                    r"part 1/2 .*: sketch spec .* expected"),
    "misplaced": (lambda p: _edit(p[1], lambda m: m.update(shard=0)), r"part 1/2 .*: part index 0, expected 1"),
    "other plan": (lambda p: _edit(p[1], lambda m: m["plan"]["probe"][0].update(rate=0.5)),
                   r"part 1/2 .*probe/chosen checkpoints .* differ"),
    "unit twice": (_steal, r"unit .* is held by part 0/2 and by part 1/2"),
    "unit lost": (lambda p: _drop(p[1]), r"do not cover the plan exactly once: missing units \['"),
    "file deleted": (lambda p: min(p[1].rglob("*.npy")).unlink(), r"part 1/2 .*\.npy is missing"),
    "foreign path": (lambda p: _edit(p[0], _escape), r"part 0/2 .*file '\.\./\.\./x\.npy' is not one unit"),
    "unlisted file": (lambda p: shutil.copyfile(min(p[0].rglob("*.npy")), p[0] / "extra.npy"),
                      r"part 0/2 .*unlisted files \['extra.npy'\]"),
}


@pytest.mark.parametrize("fault", list(SPOILERS))
def test_a_bad_part_is_refused_by_name(smoke_run, sharded, tmp_path, fault):
    spoil, message = SPOILERS[fault]
    spoil(_copy_parts(smoke_run, sharded, tmp_path))
    with pytest.raises(ShardError, match=message):
        merge_shards(smoke_run, FCFG, 2, tmp_path)
    assert not (tmp_path / "derived" / FCFG.key(smoke_run.key) / "manifest.json").exists()  # nothing published


def test_command_line(smoke_run, sharded, tmp_path, monkeypatch, capsys):
    """``RANK``/``WORLD_SIZE`` (torchrun, accelerate launch) pick the part; a published part or derived folder is
    not computed again."""
    root, parts, merged = sharded
    shutil.copytree(smoke_run.path, tmp_path / "runs" / smoke_run.key)
    shutil.copytree(parts[1], part_dir(tmp_path, merged.name, 1, 2))  # part 1/2 done, part 0/2 not yet
    args = [smoke_run.key[:8], "--profile", "smoke", "--draws", "2", "--cache-dir", str(tmp_path), "--quiet"]
    assert main(args) == 2 and "--shard I/N is needed" in capsys.readouterr().err
    assert main(args + ["--shard", "2/2"]) == 2 and "shard must be in 0..1" in capsys.readouterr().err
    assert main(args + ["--merge", "2"]) == 1 and "part 0/2 is missing" in capsys.readouterr().err
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert main(args) == 0 and capsys.readouterr().out.strip() == str(part_dir(tmp_path, merged.name, 1, 2))
    args[-2] = str(root)  # the merged cache: nothing left to derive
    assert main(args) == 0 and capsys.readouterr().out.strip() == str(merged)


@pytest.mark.parametrize("workers, seeds, whole, in_parts", [(1, 3, 3, 0), (2, 3, 2, 1), (2, 4, 4, 0), (2, 1, 0, 1),
                                                             (3, 3, 3, 0), (4, 3, 0, 3)])
def test_the_plugin_derives_whole_seeds_then_splits_the_leftover_ones(monkeypatch, workers, seeds, whole, in_parts):
    """``_derive``: each worker derives whole seeds (its own first), and the seeds that do not divide evenly over the
    workers in parts, every worker starting at its own part."""
    import types

    from bt_bench.fixture import derive, shard
    from bt_bench.plugin import fixtures

    for w in range(workers):
        calls = []
        monkeypatch.setattr(derive, "build_derived", lambda run, *a, **k: calls.append(("whole", run)))
        monkeypatch.setattr(shard, "derive_in_parts", lambda run, f, n, first, root: calls.append(("parts", run, n,
                                                                                                   first)))
        config = types.SimpleNamespace(workerinput={"workerid": f"gw{w}", "workercount": workers})
        fixtures._derive(list(range(seeds)), None, None, config)
        assert sorted(c[1] for c in calls if c[0] == "whole") == list(range(whole))
        if whole:
            assert calls[0] == ("whole", w % whole)  # each worker starts on a seed of its own
        assert [c[1:] for c in calls if c[0] == "parts"] == [(s, workers, w) for s in range(whole, seeds)]
        assert len(calls) == whole + in_parts
