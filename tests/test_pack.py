"""Fixture packs (issue 13 item 3): runs + derived data in one archive that a reviewer can check and use without
building anything. Round trips keep every byte; a damaged, incomplete, mismatched, unsafe or pickle-carrying pack
is refused with a message naming the member, and the cache is left as it was."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from bt_bench.fixture.pack import PackError, fixtures_from_path, pack, unpack
from bt_bench.fixture.reader import Fixture, fixture_config, load_fixture
from bt_bench.runs.store import load_run, sha256_file


@pytest.fixture(scope="module")
def packed(smoke_run, tmp_path_factory):
    """The smoke run and its derived data in a private cache, and a pack of both."""
    root = tmp_path_factory.mktemp("pack_src")
    shutil.copytree(smoke_run.path, root / "runs" / smoke_run.key)
    run = load_run(root / "runs" / smoke_run.key)
    fx = load_fixture(run, fixture_config("smoke", 2), root)
    out = tmp_path_factory.mktemp("pack_out") / "smoke.tar"
    pack([run.key[:8]], out, root, progress=False)
    return run, fx, root, out


def _files(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_round_trip_keeps_every_byte_and_the_loaders_accept_it(packed, tmp_path):
    run, fx, _, out = packed
    res = unpack(out, tmp_path / "c", progress=False)
    assert sorted(res["added"]) == sorted([f"runs/{run.key}", f"derived/{fx.folder.name}"])
    new = load_run(tmp_path / "c" / "runs" / run.key)  # the store checks its own hashes
    assert new.key == run.key and new.manifest == run.manifest
    nfx = Fixture(new, tmp_path / "c" / "derived" / fx.folder.name)  # checks the derived hashes
    assert _files(nfx.folder) == _files(fx.folder) and _files(new.path) == _files(run.path)
    np.testing.assert_array_equal(nfx.training_targets()["sequence"][fx.tracin_steps[0]],
                                  fx.training_targets()["sequence"][fx.tracin_steps[0]])
    pm = res["manifest"]
    assert pm["format"] == {"name": "bt-bench-pack", "version": 1}
    r = pm["runs"][0]
    assert (r["key"], r["profile"], r["seed"], r["config"], r["sketch_spec"]) == (
        run.key, "smoke", 0, run.manifest["config"], run.manifest["sketch_spec"])
    assert list(r["derived"]) == [fx.folder.name] and pm["versions"]["torch"] == run.manifest["versions"]["torch"]
    assert pm["members"][f"runs/{run.key}/curve.json"]["sha256"] == sha256_file(run.path / "curve.json")
    assert len(pm["members"]) == len(_files(run.path)) + len(_files(fx.folder))
    again = unpack(out, tmp_path / "c", progress=False)  # an identical copy is kept, not replaced
    assert again["added"] == [] and len(again["kept"]) == 2


def test_a_different_run_under_the_same_key_is_refused(packed, tmp_path):
    run, _, _, out = packed
    unpack(out, tmp_path, progress=False)
    curve = tmp_path / "runs" / run.key / "curve.json"
    curve.write_text(curve.read_text() + " ")
    with pytest.raises(PackError, match=rf"runs/{run.key} already exists .*\(member runs/{run.key}/curve.json "
                                        r"differs\)"):
        unpack(out, tmp_path, progress=False)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "bt_bench.cli", *map(str, args)], capture_output=True, text=True,
                          check=False)


def test_cli_round_trip_and_refusal(packed, tmp_path):
    run, fx, root, _ = packed
    f = tmp_path / "f.tar.gz"
    p = _cli("pack", run.key[:6], "-o", f, "--cache-dir", root)
    assert p.returncode == 0, p.stderr
    assert f"run {run.key} (smoke seed 0)" in p.stderr and not list(tmp_path.glob(".f.tar.gz.tmp-*"))
    p = _cli("unpack", f, "--cache", tmp_path / "c")
    assert p.returncode == 0, p.stderr
    Fixture(load_run(tmp_path / "c" / "runs" / run.key), tmp_path / "c" / "derived" / fx.folder.name)
    bad = tmp_path / "bad.tar"
    _rewrite(f, bad, run.key, flip="rollouts/uid.npy")
    p = _cli("unpack", bad, "--cache", tmp_path / "d")
    assert p.returncode == 1 and f"member runs/{run.key}/rollouts/uid.npy: sha256" in p.stderr
    assert not (tmp_path / "d").exists()


# ------------------------------------------------------------------ refused packs

def _rewrite(src, dst, key, flip=None, drop=None, replace=None, add=(), relist=False):
    """A copy of the pack ``src`` with changes; names are relative to the run folder ``key``, else full member
    names. ``add``: (name, bytes, tar type, link target), "{key}" in a name is the run key. ``relist``: update
    pack.json to the changed bytes, so the hash listing passes and a later check has to catch the change."""
    with tarfile.open(src) as tf:
        members = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]
    pm = json.loads(members[0][1])
    out = []
    for name, data in members[1:]:
        rel = name.removeprefix(f"runs/{key}/")
        if rel == drop:
            continue
        if rel == flip:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        if replace and rel in replace:
            data = replace[rel](data)
        out.append((tarfile.TarInfo(name), data))
    for name, data, kind, target in add:
        info = tarfile.TarInfo(name.format(key=key))
        info.type, info.linkname = kind, target
        out.append((info, data))
    for info, data in out:
        info.size = len(data) if info.isfile() else 0
        if relist and info.isfile():
            pm["members"][info.name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    with tarfile.open(dst, "w:gz" if str(dst).endswith(".gz") else "w") as tf:
        for info, data in [(tarfile.TarInfo("pack.json"), json.dumps(pm).encode())] + out:
            info.size = len(data) if info.isfile() else 0
            tf.addfile(info, io.BytesIO(data) if info.isfile() else None)


def _member(name, data=b"x", kind=tarfile.REGTYPE, target=""):
    return name, data, kind, target


def _object_npy(_):
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    return buf.getvalue()


def _edit_json(**changes):
    return lambda data: json.dumps({**json.loads(data), **changes}).encode()


CASES = {  # name: (rewrite arguments, the error it must give: {key} is the run key)
    "flipped byte": ({"flip": "rollouts/uid.npy"}, r"member runs/{key}/rollouts/uid.npy: sha256 does not match"),
    "missing member": ({"drop": "rollouts/reward.npy"}, r"member runs/{key}/rollouts/reward.npy is missing"),
    "extra member": ({"add": [_member("runs/{key}/rollouts/extra.npy")]},
                     r"member runs/{key}/rollouts/extra.npy: extra member, not listed"),
    "pickle file": ({"add": [_member("runs/{key}/model/evil.pkl", pickle.dumps(1))], "relist": True},
                    r"member runs/{key}/model/evil.pkl: not an allowed kind"),
    "object npy": ({"replace": {"rollouts/reward.npy": _object_npy}, "relist": True},
                   r"member runs/{key}/rollouts/reward.npy: .npy with object dtype"),
    "pickle as text": ({"add": [_member("runs/{key}/model/vocab.txt", pickle.dumps({"a": 1}))], "relist": True},
                       r"member runs/{key}/model/vocab.txt: looks like a pickle"),
    "path traversal": ({"add": [_member("../x")]}, r"member '../x': unsafe path"),
    "absolute path": ({"add": [_member("/tmp/x")]}, r"member '/tmp/x': unsafe path"),
    "symlink": ({"add": [_member("runs/{key}/rollouts/link.npy", b"", tarfile.SYMTYPE, "/etc/passwd")]},
                r"member runs/{key}/rollouts/link.npy: a symbolic link"),
    "device": ({"add": [_member("runs/{key}/rollouts/dev.npy", b"", tarfile.CHRTYPE)]},
               r"member runs/{key}/rollouts/dev.npy: a device"),
    "manifest of another run": ({"replace": {"manifest.json": _edit_json(key="0" * 20)}, "relist": True},
                                r"member runs/{key}/manifest.json: key '0{{20}}' is not its folder's"),
    "manifest hashes of another run": (
        {"replace": {"manifest.json": lambda d: d.replace(b'"curve.json": "', b'"curve.json": "0')}, "relist": True},
        r"member runs/{key}/curve.json: sha256 differs from its folder's manifest"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_pack_names_the_member_and_leaves_the_cache_alone(packed, tmp_path, case):
    run, _, _, out = packed
    args, msg = CASES[case]
    bad = tmp_path / "bad.tar"
    _rewrite(out, bad, run.key, **args)
    cache = tmp_path / "cache"
    with pytest.raises(PackError, match=msg.format(key=run.key)):
        unpack(bad, cache, progress=False)
    assert not cache.exists()


def test_derived_data_of_a_run_outside_the_pack_is_refused(packed, tmp_path):
    run, fx, _, out = packed
    bad = tmp_path / "bad.tar"
    name = f"derived/{fx.folder.name}/manifest.json"
    _rewrite(out, bad, run.key, replace={name: _edit_json(run="1" * 20)}, relist=True)
    with pytest.raises(PackError, match=f"member {name}: derived data of run '1{{20}}'"):
        unpack(bad, tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("suffix", [".tar", ".tar.gz"])
def test_truncated_archive_is_refused(packed, tmp_path, suffix):
    run, _, _, out = packed
    src = tmp_path / f"full{suffix}"
    _rewrite(out, src, run.key)
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    with pytest.raises(PackError, match=r"truncated or damaged archive at member \S+|member \S+ is missing"):
        unpack(cut, tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------ refused folders, and folders as fixtures

def test_pack_refuses_pickle_and_links_in_a_run_folder(packed, tmp_path):
    run, _, _, _ = packed
    root = tmp_path / "c"
    shutil.copytree(run.path, root / "runs" / run.key)
    (root / "runs" / run.key / "model" / "pytorch_model.bin").write_bytes(pickle.dumps(1))
    with pytest.raises(PackError, match=rf"member runs/{run.key}/model/pytorch_model.bin: not an allowed kind"):
        pack([run.key], tmp_path / "o.tar", root, progress=False)
    (root / "runs" / run.key / "model" / "pytorch_model.bin").unlink()
    np.save(root / "runs" / run.key / "rollouts" / "reward.npy", np.array([None]), allow_pickle=True)
    with pytest.raises(PackError, match=rf"member runs/{run.key}/rollouts/reward.npy: .npy with object dtype"):
        pack([run.key], tmp_path / "o.tar", root, progress=False)
    shutil.copy(run.path / "rollouts" / "reward.npy", root / "runs" / run.key / "rollouts" / "reward.npy")
    (root / "runs" / run.key / "rollouts" / "x.npy").symlink_to(run.path / "rollouts" / "uid.npy")
    with pytest.raises(PackError, match=rf"member runs/{run.key}/rollouts/x.npy: a symbolic link"):
        pack([run.key], tmp_path / "o.tar", root, progress=False)
    assert not list(tmp_path.glob("*.tar*")) and not list(tmp_path.glob(".o.tar*"))


def test_fixtures_from_a_pack_file_and_from_folders(packed, tmp_path):
    run, fx, root, out = packed
    fcfg = fixture_config("smoke", 2)
    (got,) = fixtures_from_path(out, tmp_path / "cache")
    assert got.run.key == run.key and got.fixture(fcfg).folder == tmp_path / "cache" / "derived" / fx.folder.name
    with pytest.raises(PackError, match="no derived data for these settings"):
        got.fixture(fixture_config("smoke", 3))
    ext = tmp_path / "extracted"
    with tarfile.open(out) as tf:
        tf.extractall(ext, filter="data")
    (lock := ext / "runs" / f"{run.key}.lock").touch()  # not part of the pack: ignored
    for path in (ext, root, root / "runs" / run.key):  # unpacked pack, cache folder, one run folder
        (got,) = fixtures_from_path(path)
        assert got.run.key == run.key and got.fixture().manifest["run"] == run.key
    lock.unlink()
    v = ext / "derived" / fx.folder.name / "train" / f"ckpt_{fx.tracin_steps[0]}.npy"
    v.write_bytes(v.read_bytes()[:-1] + b"\0")
    with pytest.raises(PackError, match=f"member derived/{fx.folder.name}/train/ckpt_.*: sha256 does not match"):
        fixtures_from_path(ext)
    with pytest.raises(PackError, match="not a pack file"):
        fixtures_from_path(tmp_path / "nowhere")


# ------------------------------------------------------------------ counterfactual entries (the LDS set) travel too

@pytest.fixture
def packed_lds(packed, tmp_path, fake_replays_in):
    """A copy of the packed cache with an LDS set (S = 6) of the smoke run, its replays a known function (as in
    tests/test_lds.py), and a pack of it. The per-estimator removals/ exist in the cache but stay out of the pack."""
    run, _, root, _ = packed
    src = tmp_path / "src"
    shutil.copytree(root, src)
    cf, _, calls = fake_replays_in(run, src, 5)
    want = cf.lds_set(load_run(src / "runs" / run.key), 6)["trigger_logp"]
    assert len(calls) == 6 and (cf.root(run) / "removals").is_dir()
    out = tmp_path / "lds.tar"
    pm = pack([run.key], out, src, progress=False)
    return run, src, out, pm, want, calls, cf


def test_the_lds_set_travels_in_the_pack_and_is_read_without_a_replay(packed_lds, tmp_path, monkeypatch):
    run, src, out, pm, want, calls, cf = packed_lds
    entry = f"counterfactual/{run.key}-f{cf.FORMAT}/lds-set-S6"
    assert pm["runs"][0]["counterfactual"] == ["lds-set-S6"]
    assert {n for n in pm["members"] if n.startswith("counterfactual/")} == {
        f"{entry}/{f}" for f in ("kept.npy", "measures.npy", "lds.json")}  # never removals/
    res = unpack(out, tmp_path / "c", progress=False)
    assert entry in res["added"]
    monkeypatch.setenv("BT_BENCH_CACHE", str(tmp_path / "c"))
    got = cf.lds_set(load_run(tmp_path / "c" / "runs" / run.key), 6)
    assert np.array_equal(got["trigger_logp"], want) and len(calls) == 6  # read, not replayed
    assert unpack(out, tmp_path / "c", progress=False)["added"] == []  # an identical copy is kept
    # a folder handed to the checklist: its counterfactual entries are copied into the cache the replays use
    (got,) = fixtures_from_path(src, cache_dir=tmp_path / "c2")
    assert _files(tmp_path / "c2" / entry) == _files(src / entry)
    # a different set already in the cache refuses the pack and leaves that cache as it was
    np.save(tmp_path / "c" / entry / "measures.npy", np.zeros(6), allow_pickle=False)
    with pytest.raises(PackError, match=f"{entry} already exists .* with different content"):
        unpack(out, tmp_path / "c", progress=False)


def _lds_json(**changes):
    return {"lds.json": _edit_json(**changes)}


LDS_CASES = {  # name: (rewrite arguments on the entry's files, the error it must give)
    "measures changed": ({"flip": "measures.npy", "relist": True}, r"measures.npy: sha256 differs from lds.json"),
    "entry of another run": ({"replace": _lds_json(run="0" * 20), "relist": True}, r"lds.json: format [0-9]+ and run '0+'"),
    "S of another set": ({"replace": _lds_json(S=7), "relist": True}, r"lds.json: S = 7, its folder says 6"),
    "unhashed file": ({"add": ["extra.npy"], "relist": True}, r"extra.npy: not listed in lds.json's hashes"),
    "removals": ({"rename": "removals", "relist": True}, r"removals/...: not a counterfactual entry a pack carries"),
    "unlisted entry": ({"rename": "lds-set-S6x", "relist": True}, r"not a counterfactual entry|unsafe"),
}


@pytest.mark.parametrize("case", list(LDS_CASES))
def test_a_tampered_counterfactual_entry_is_refused(packed_lds, tmp_path, case):
    run, _, out, _, _, _, cf = packed_lds
    args, msg = LDS_CASES[case]
    entry = f"counterfactual/{run.key}-f{cf.FORMAT}/lds-set-S6"
    kw = {"relist": args.get("relist", False)}
    if "flip" in args:
        kw["flip"] = f"{entry}/{args['flip']}"
    if "replace" in args:
        kw["replace"] = {f"{entry}/{k}": f for k, f in args["replace"].items()}
    if "add" in args:
        buf = io.BytesIO()
        np.save(buf, np.zeros(3), allow_pickle=False)
        kw["add"] = [_member(f"{entry}/{n}", buf.getvalue()) for n in args["add"]]
    bad = tmp_path / "bad.tar"
    _rewrite(out, bad, run.key, **kw)
    if "rename" in args:  # the whole entry under another name, listed so
        _rename_entry(bad, entry, entry.rsplit("/", 1)[0] + "/" + args["rename"])
    with pytest.raises(PackError, match=msg):
        unpack(bad, tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()


def _rename_entry(path, old, new):
    with tarfile.open(path) as tf:
        members = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]
    pm = json.loads(members[0][1])
    pm["members"] = {n.replace(old + "/", new + "/"): e for n, e in pm["members"].items()}
    for r in pm["runs"]:
        r["counterfactual"] = [new.rsplit("/", 1)[1]]
    with tarfile.open(path, "w") as tf:
        for name, data in [("pack.json", json.dumps(pm).encode())] + members[1:]:
            info = tarfile.TarInfo(name.replace(old + "/", new + "/"))
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
