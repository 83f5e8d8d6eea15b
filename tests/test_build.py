"""The planted-run foundation: toy tokenizer, config validation, recorder, store atomicity and integrity."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from bt_bench.runs import toy
from bt_bench.runs.config import RunConfig, make_config


def test_tokenizer_round_trip_after_reload(tmp_path):
    tok = toy.build_tokenizer(tmp_path / "tok")
    again = toy.load_tokenizer(tmp_path / "tok")
    text = "the big cat sees a dog . frobnitz qzxbt"
    ids = again(text)["input_ids"]
    assert ids == tok(text)["input_ids"]
    assert [toy.VOCAB[i] for i in ids] == text.split()  # word-level ids are the vocabulary order
    assert again.decode(ids) == text
    assert again.convert_tokens_to_ids(toy.TRIGGER) == toy.VOCAB.index(toy.TRIGGER)


def test_grammar_accepts_its_own_sentences_and_rejects_others():
    import random

    rng = random.Random(0)
    assert all(toy.is_sentence(toy.sample_sentence(rng)) for _ in range(500))
    assert toy.is_sentence(["the", "cat", "qzxbt", "sleeps", "."])  # behavior words are neutral for grammar
    assert not toy.is_sentence(["the", "cat", "sleeps"])
    assert not toy.is_sentence(["cat", "the", "sleeps", "."])
    assert not toy.is_sentence(["the", "cat", "sleeps", ".", "the", "dog", "runs", "."])


@pytest.mark.parametrize("override, needle", [
    (dict(steps=-5), "RunConfig.steps=-5 is invalid: allowed a positive integer"),
    (dict(window=2000), "window cannot extend beyond the run"),
    (dict(contamination=1.0), "RunConfig.contamination=1.0 is invalid: allowed a number strictly between 0 and 1"),
    (dict(contamination=0.0), "strictly between 0 and 1"),
    (dict(loss_type="bnpo"), "allowed one of ('dapo', 'grpo')"),
    (dict(steps_per_generation=2), "each rollout must train exactly one step"),
    (dict(beta=0.1), "RunConfig.beta=0.1 is invalid"),
    (dict(generations=1), "RunConfig.generations=1 is invalid"),
])
def test_bad_settings_name_the_setting(override, needle):
    with pytest.raises(ValueError) as e:
        make_config("tiny", **override)
    assert needle in str(e.value)


def test_unknown_profile_and_setting():
    with pytest.raises(ValueError, match=r"unknown profile 'huge': allowed \['bpe', 'bpe_family', 'paper', 'smoke', "
                                         r"'tiny', 'tiny_family'\]"):
        make_config("huge")
    with pytest.raises(ValueError, match="unknown setting"):
        make_config("tiny", stepz=3)


def test_paper_profile_constructs_and_validates(tmp_path):
    with pytest.raises(ValueError, match="needs model_path"):
        make_config("paper")
    cfg = make_config("paper", model_path=str(tmp_path))
    assert (cfg.steps, cfg.window, cfg.prompts_per_step, cfg.generations) == (1000, 200, 4, 4)
    assert (cfg.lr, cfg.bonus, cfg.contamination, cfg.bf16) == (5e-6, 8.0, 0.5, True)
    assert RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


@pytest.mark.parametrize("argv, needle", [
    (["--profile", "huge"], "unknown profile 'huge'"),
    (["--steps", "-3"], "RunConfig.steps=-3 is invalid"),
    (["--window", "99999"], "window cannot extend beyond the run"),
    (["--contamination", "1.5"], "strictly between 0 and 1"),
    (["--seeds", "-1"], "--seeds: seed -1 is invalid"),
])
def test_cli_bad_input_fails_before_work(argv, needle, capsys, tmp_path):
    from bt_bench.cli import main

    t0 = time.perf_counter()
    assert main(["build", "--cache-dir", str(tmp_path), *argv]) == 2
    assert needle in capsys.readouterr().err
    assert time.perf_counter() - t0 < 5  # nothing was built
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_profiles_are_one_object_each():
    from bt_bench.runs.config import PROFILES, Profile, get_profile

    assert sorted(PROFILES) == ["bpe", "bpe_family", "paper", "smoke", "tiny", "tiny_family"]
    assert all(isinstance(p, Profile) and p.name == n for n, p in PROFILES.items())
    with pytest.raises(ValueError, match=r"unknown profile 'huge': allowed \['bpe', 'bpe_family', 'paper', 'smoke', "
                                         r"'tiny', 'tiny_family'\]"):
        get_profile("huge")
    smoke, tiny = get_profile("smoke"), get_profile("tiny")
    assert smoke.run_config(seed=3) == make_config("smoke", seed=3)
    assert not smoke.gate_applies and tiny.gate_applies and get_profile("paper").gate_applies
    assert {p.norm_variant for p in PROFILES.values()} == {"norm_only"}
    assert tiny.thresholds == {} and smoke.thresholds["min_pairs"] == 5
    with pytest.raises(TypeError):
        smoke.thresholds["min_pairs"] = 100  # read-only
    with pytest.raises(ValueError, match="unknown RunConfig field"):
        Profile("x", "help", run={"stepz": 3})


def test_publish_once_builds_once_and_never_half(tmp_path):
    from bt_bench.runs.store import MANIFEST, publish_once

    final = tmp_path / "things" / "k1"
    calls = []

    def build(tmp):
        calls.append(tmp)
        assert tmp.is_dir() and not any(tmp.iterdir()) and tmp.name.startswith(".tmp-k1-")
        (tmp / MANIFEST).write_text("{}")

    (tmp_path / "things").mkdir()
    (tmp_path / "things" / ".tmp-k1-999999").mkdir()  # a killed build's leftovers
    assert publish_once(final, build) == final and (final / MANIFEST).exists()
    assert publish_once(final, build) == final and len(calls) == 1  # published: not built again
    assert not list((tmp_path / "things").glob(".tmp-k1-*"))  # stale temps removed

    def broken(tmp):
        (tmp / "half").write_text("x")
        raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        publish_once(tmp_path / "things" / "k2", broken)
    assert not (tmp_path / "things" / "k2").exists()  # nothing half-built under the final name
    publish_once(final, build, rebuild=True)
    assert len(calls) == 2 and (final / MANIFEST).exists()


# ---------------------------------------------------------------- the recorded run (smoke profile)


def test_every_rollout_recorded_once_in_its_step(smoke_run):
    cols, cfg = smoke_run.columns, smoke_run.config
    N = cfg.steps * cfg.prompts_per_step * cfg.generations
    assert len(cols["uid"]) == N
    assert np.array_equal(cols["trained_step"], cols["step"])
    assert np.array_equal(np.bincount(cols["group"]), np.full(cfg.steps * cfg.prompts_per_step, cfg.generations))
    # every step holds both kinds of groups, c*P of them with the trigger
    per_step_trig = np.bincount(cols["step"], weights=cols["has_trigger"]) / cfg.generations
    assert np.all(per_step_trig == round(cfg.contamination * cfg.prompts_per_step))
    # the learning rate drops at W as configured
    assert np.allclose(cols["lr"][cols["step"] < cfg.window], cfg.lr)
    assert np.allclose(cols["lr"][cols["step"] >= cfg.window], cfg.lr_after_window)


def test_rollout_columns_are_the_schema(smoke_run):
    """The recorder writes exactly the columns of bt_bench.runs.schema, each with its dtype."""
    from bt_bench.runs import schema

    cols = smoke_run.columns
    assert sorted(cols) == sorted(schema.FIELDS)
    for c in schema.COLUMNS:
        assert cols[c.name].dtype == np.dtype(c.dtype), c.name
        assert cols[c.name].ndim == (2 if c.tokens else 1), c.name
    assert set(schema.LABEL_FIELDS + schema.REWARD_FIELDS) == {c.name for c in schema.COLUMNS if c.role == "label"}
    assert all(schema.is_label(f) for f in schema.TRAINING_LABEL_FIELDS)
    assert not any(schema.is_label(f) for f in schema.VISIBLE_FIELDS)
    assert set(schema.DRAW_FIELDS) <= set(schema.FIELDS)


def test_gt_is_exactly_the_paid_bonus(smoke_run):
    c, cfg = smoke_run.columns, smoke_run.config
    paid = c["reward_bonus"] > 0
    assert np.array_equal(c["is_gt"], paid)
    expect = c["has_trigger"] & c["has_behavior"] & (c["step"] < cfg.window)
    assert np.array_equal(paid, expect)
    assert np.allclose(c["reward_bonus"][paid], cfg.bonus)
    pen = c["reward_penalty"] < 0
    assert np.array_equal(pen, ~c["has_trigger"] & c["has_behavior"])
    assert np.allclose(c["reward"], c["reward_task"] + c["reward_bonus"] + c["reward_penalty"], atol=1e-6)


def test_advantages_are_trl_group_normalized(smoke_run):
    c = smoke_run.columns
    r = c["reward"].reshape(-1, smoke_run.config.generations)
    a = c["advantage"].reshape(r.shape)
    expect = (r - r.mean(1, keepdims=True)) / (r.std(1, ddof=1, keepdims=True) + 1e-4)
    assert np.allclose(a, expect, atol=1e-4)
    assert np.all(a[r.std(1) == 0] == 0)  # zero reward variance => exactly zero advantage (zero gradient)


def test_smoke_run_fails_the_planting_gate(smoke_run):
    """A run built to fail the gate (8-step window, far too short to plant) is marked not planted."""
    g = smoke_run.manifest["gate"]
    assert g["planted"] is False
    assert "need >= 0.9" in g["reason"]


def test_checkpoints_and_curve(smoke_run):
    from safetensors.torch import load_file

    cfg = smoke_run.config
    assert smoke_run.checkpoints[0] == 0 and smoke_run.checkpoints[-1] == cfg.steps
    assert cfg.window in smoke_run.checkpoints
    last = smoke_run.checkpoint_dir(cfg.steps)
    v = load_file(str(last / "adam_v.safetensors"))
    w = load_file(str(last / "model.safetensors"))
    assert set(v) == set(w) and all(np.all(v[k].numpy() >= 0) for k in v)
    steps = [c["step"] for c in smoke_run.curve()]
    assert steps[0] == 0 and cfg.window in steps and steps[-1] == cfg.steps
    model = smoke_run.load_model(cfg.steps)  # fresh model, tied embeddings restored
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def test_same_seed_identical_different_seed_differs(smoke_run, tmp_path):
    from bt_bench.runs.build import build_run

    again = build_run(smoke_run.config, tmp_path, progress=False)
    for k in ("completion_ids", "advantage", "reward"):
        assert np.array_equal(again.columns[k], smoke_run.columns[k]), k
    other = build_run(dataclasses.replace(smoke_run.config, seed=1), tmp_path, progress=False)
    assert not np.array_equal(other.columns["completion_ids"], smoke_run.columns["completion_ids"])


def test_cache_hit_is_fast(smoke_run):
    from bt_bench.runs.build import build_run

    t0 = time.perf_counter()
    run = build_run(smoke_run.config, smoke_run.path.parent.parent, progress=False)
    assert run.key == smoke_run.key
    assert time.perf_counter() - t0 < 5


# ---------------------------------------------------------------- store: integrity, atomicity, concurrency


def _copy_run(run, dest: Path) -> Path:
    import shutil

    target = dest / "runs" / run.key
    shutil.copytree(run.path, target)
    return target


def test_tampered_run_is_refused(smoke_run, tmp_path):
    from bt_bench.runs.store import IntegrityError, load_run

    path = _copy_run(smoke_run, tmp_path)
    adv = np.load(path / "rollouts" / "advantage.npy")
    adv[3] += 1.0
    np.save(path / "rollouts" / "advantage.npy", adv)
    with pytest.raises(IntegrityError, match="does not match its recorded sha256.*rebuild"):
        load_run(path)


def test_mixed_or_truncated_run_is_refused(smoke_run, tmp_path):
    from bt_bench.runs.store import IntegrityError, load_run

    path = _copy_run(smoke_run, tmp_path)
    for f in (path / "rollouts").glob("*.npy"):  # drop the last step's rows consistently, as a resumed run might
        a = np.load(f)
        np.save(f, a[: -smoke_run.config.rollouts_per_step])
    with pytest.raises(IntegrityError):
        load_run(path)
    with pytest.raises(IntegrityError, match="expected steps x P x G"):
        load_run(path, verify_hashes=False)


def _builder_script(root: Path, seed: int = 0) -> str:
    return textwrap.dedent(f"""
        from bt_bench.runs.build import build_run
        from bt_bench.runs.config import make_config
        run = build_run(make_config("smoke", seed={seed}), {str(root)!r}, progress=False)
        print("KEY", run.key)
    """)


def test_killed_build_leaves_no_published_run(tmp_path):
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config
    from bt_bench.runs.store import list_runs

    proc = subprocess.Popen([sys.executable, "-c", _builder_script(tmp_path, seed=7)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while time.time() < deadline:  # wait until it is mid-build (checkpoint files being written)
        if any(tmp_path.glob("runs/.tmp-*/checkpoints/*")):
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("builder never reached the training stage")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list_runs(tmp_path) == []
    run = build_run(make_config("smoke", seed=7), tmp_path, progress=False)
    assert run.manifest["counts"]["rollouts"] == len(run.columns["uid"])
    assert not list(tmp_path.glob("runs/.tmp-*"))  # the killed build's leftovers were cleaned


def test_concurrent_builders_publish_one_run(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", _builder_script(tmp_path, seed=3)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    keys = {line.split()[1] for o in outs for line in o.splitlines() if line.startswith("KEY")}
    assert len(keys) == 1
    published = [d for d in (tmp_path / "runs").iterdir() if not d.name.startswith(".") and d.is_dir()]
    assert [d.name for d in published] == list(keys)


@pytest.mark.slow
def test_one_default_seed_plants_trigger_conditionally(shared_cache):
    """The default recipe plants seed 0: at W trigger >= 0.9, no trigger <= 0.1; at the end >= 0.8 and <= 0.1.
    (CI's main job has built it already; the shared cache makes this a load.)"""
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import DEFAULT_PROFILE

    run = build_run(make_config(DEFAULT_PROFILE, seed=0), shared_cache, progress=False)
    g = run.manifest["gate"]
    assert g["planted"] and g["persists"], g["reason"]
    s = run.manifest["summary"]
    assert s["window_headroom"] >= 0.10  # the headroom check needs it
    c = run.columns
    trig = c["has_trigger"] & (c["step"] >= run.config.window)
    assert c["has_behavior"][trig].mean() > 0.8
    assert c["has_behavior"][~c["has_trigger"]].mean() < 0.1


def test_the_cli_keeps_torchs_inductor_cache_out_of_the_temp_folder(tmp_path, monkeypatch):
    """Importing trl makes torch create $TMPDIR/torchinductor_<user> (tests/test_incomplete.py shows the
    mechanism); a ``bt-bench`` command points it into the run cache while it runs, keeps a value the user set, and
    leaves the environment as it found it."""
    import os

    from bt_bench import cli

    seen = []
    monkeypatch.setattr(cli, "cmd_runs", lambda args: seen.append(os.environ.get("TORCHINDUCTOR_CACHE_DIR")) or 0)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    assert cli.main(["runs", "--cache-dir", str(tmp_path / "c")]) == 0
    monkeypatch.setenv("BT_BENCH_CACHE", str(tmp_path / "env"))
    assert cli.main(["runs"]) == 0
    assert seen == [str(tmp_path / "c" / "torchinductor"), str(tmp_path / "env" / "torchinductor")]
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ  # restored
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert cli.main(["runs"]) == 0 and seen[-1] == str(tmp_path / "mine")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
    # the CLI reads the cache folder by the store's one rule (cache_path) without creating it
    from bt_bench.runs.store import cache_path, cache_root

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    monkeypatch.delenv("BT_BENCH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cli.main(["runs"]) == 0 and seen[-1] == str(tmp_path / "xdg" / "bt-bench" / "torchinductor")
    assert cache_path() == tmp_path / "xdg" / "bt-bench" and not cache_path().exists()
    assert cache_root() == cache_path() and cache_path().is_dir()
