"""Data-parallel builds (bt_bench.runs.build_dist): a 2-process build of the smoke profile on CPU (gloo),
launched by the documented launcher lines, compared with the 1-process build of the same profile and seed; a
failing rank leaves no published run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from bt_bench.runs import build_dist, store
from bt_bench.runs.config import make_config

MODULE = ["-m", "bt_bench.runs.build_dist"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
ACCELERATE = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--main_process_port", "0"]


def _launch(cmd: list[str], env: dict | None = None, timeout: int = 240):
    t0 = time.perf_counter()
    base = {k: v for k, v in os.environ.items() if k != build_dist.FAIL_ENV}
    with tempfile.TemporaryDirectory() as tmp:  # torchrun's torchelastic_* folder goes there, not in $TMPDIR
        env = {**base, "BT_BENCH_THREADS": "1", "OMP_NUM_THREADS": "1", "TMPDIR": tmp, **(env or {})}
        res = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=timeout)
    return res, time.perf_counter() - t0


def _json(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=store._json_default)


def _fresh_cache(tmp_path, smoke_run):
    """A private cache holding the smoke run's toy model (so a launch does not rebuild it)."""
    root = tmp_path / "cache"
    shutil.copytree(smoke_run.path.parents[1] / "toy", root / "toy")
    return root


@pytest.fixture(scope="module")
def dist_run(smoke_run, tmp_path_factory):
    """The smoke profile, seed 0, built by 2 processes through the documented torchrun line."""
    root = tmp_path_factory.mktemp("dist_cache")
    shutil.copytree(smoke_run.path.parents[1] / "toy", root / "toy")
    res, wall = _launch(TORCHRUN + MODULE + ["--profile", "smoke", "--seeds", "0", "--cache-dir", str(root),
                                             "--quiet"])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]
    key = make_config("smoke", seed=0).key(build_dist.dist_versions(2))
    assert f"| {key} | 2 processes" in res.stdout
    print(f"\n2-process build: {wall:.1f}s (launcher included); 1-process manifest wall "
          f"{smoke_run.manifest['summary']['wall_seconds']}s")
    return store.load_run(store.run_dir(root, key))  # integrity: counts, uids 0..N-1, trained in their step


def test_launcher_line_is_the_documented_one():
    args = build_dist.parser().parse_args(["--profile", "smoke", "--seeds", "0", "1", "--steps", "4",
                                           "--no-capture-in-run", "--quiet", "--cache-dir", "/x"])
    argv = build_dist.forward_argv(args)
    assert build_dist.parser().parse_args(argv) == args  # what `bt-bench build --num-processes N` forwards
    assert build_dist.launch_command(argv, 2) == TORCHRUN + MODULE + argv
    assert build_dist.launch_command(argv, 2, "accelerate") == ACCELERATE[:-2] + MODULE + argv


# what torchrun does at every launch: a torchelastic_* log folder in $TMPDIR, never removed
_TORCHELASTIC = [sys.executable, "-c", "import os, tempfile; d = tempfile.mkdtemp(prefix='torchelastic_'); "
                                       "open(os.path.join(d, 'log'), 'w').write('rank 0')"]


def test_a_launch_leaves_nothing_in_the_temp_folder(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(build_dist, "launch_command", lambda argv, n, launcher="torchrun": _TORCHELASTIC)
    args = build_dist.parser().parse_args(["--profile", "smoke", "--seeds", "0", "--quiet"])
    assert build_dist.launch(args, 2) == 0
    assert list(tmp.iterdir()) == []
    # control: the same launcher run in the user's environment leaves its folder there
    assert subprocess.call(_TORCHELASTIC, env={**os.environ}) == 0
    assert [p.name[:13] for p in tmp.iterdir()] == ["torchelastic_"]


def test_two_processes_record_every_rollout_once_in_the_one_process_structure(dist_run, smoke_run):
    from bt_bench.runs.build import planting_gate, summarize

    a, b = smoke_run.columns, dist_run.columns
    cfg = dist_run.config
    assert cfg == smoke_run.config and dist_run.key != smoke_run.key  # same config, own cache key
    assert dist_run.manifest["versions"]["data_parallel_processes"] == "2"
    P, G, T = cfg.prompts_per_step, cfg.generations, cfg.steps
    assert sorted(a) == sorted(b)
    for c in (a, b):
        assert np.array_equal(np.bincount(c["step"]), np.full(T, P * G))  # rollouts per step
        assert np.array_equal(np.bincount(c["group"]), np.full(T * P, G))  # G per group
        assert np.array_equal(np.asarray(c["group"]), np.arange(T * P * G) // G)
        assert np.array_equal(np.asarray(c["gen_index"]), np.arange(T * P * G) % G)
        assert all(len(np.unique(g)) == P for g in np.asarray(c["group"]).reshape(T, P * G))  # P a step
        prompts = np.asarray(c["prompt_ids"]).reshape(T * P, G, -1)
        assert np.all(prompts == prompts[:, :1])  # one prompt per group
        # advantages are trl's: the group-normalized total reward (trl gathers rewards across ranks first)
        r = np.asarray(c["reward"], np.float64).reshape(-1, G)
        z = (r - r.mean(1, keepdims=True)) / (r.std(1, ddof=1, keepdims=True) + 1e-4)
        assert np.allclose(np.asarray(c["advantage"]).reshape(-1, G), z, atol=1e-5)
        assert not np.isnan(c["fluency"]).any() and not np.isnan(c["step_grad_norm"]).any()
        assert np.array_equal(np.asarray(c["trained_step"]), np.asarray(c["step"]))
    # the same prompt at every uid (trl's sampler: rank r takes the r-th block of each step's rows) ...
    for k in ("uid", "step", "group", "gen_index", "prompt_ids", "prompt_mask", "has_trigger", "lr"):
        assert np.array_equal(a[k], b[k]), k
    # ... but other completions: rank r samples with seed + r, on its own P*G/2 rows
    same = np.mean(np.all(np.asarray(a["completion_ids"]) == np.asarray(b["completion_ids"]), axis=1))
    assert same < 0.5
    info = dist_run.manifest["distributed"]
    assert (info["num_processes"], info["rows_per_rank_per_step"]) == (2, P * G // 2)
    assert info["rank_seeds"] == [0, 1]
    assert "distributed" not in smoke_run.manifest
    # the planting gate and the summary: present in both, computed by the same code from the stored run
    for run in (smoke_run, dist_run):
        m = run.manifest
        assert set(m["gate"]) == set(smoke_run.manifest["gate"])
        assert planting_gate(run.curve(), run.config) == m["gate"]
        s = summarize(run.columns, run.config)
        assert _json({k: m["summary"][k] for k in s}) == _json(s)
    assert dist_run.checkpoints == smoke_run.checkpoints
    print(f"\ncompletions equal to the 1-process run: {same:.3f}; |GT| {int(np.sum(a['is_gt']))} (1 process) "
          f"vs {int(np.sum(b['is_gt']))} (2); gate 1: {smoke_run.manifest['gate']['reason']}; gate 2: "
          f"{dist_run.manifest['gate']['reason']}")


def test_two_process_in_run_sketches_and_fluency_are_exact(dist_run):
    """Gathered from both ranks (divided by 2): equal to the sketches recomputed at each step's checkpoint."""
    from test_inrun import test_in_run_sketches_equal_recomputed_at_the_steps_checkpoint as check_sketches
    from test_inrun import test_training_fluency_recorded_in_run as check_fluency

    check_sketches(dist_run)
    check_fluency(dist_run)


@pytest.mark.parametrize("launcher, fail, needle", [
    (TORCHRUN, "1:2", "rank 1 fails at step 2 (test hook)"),  # mid-training: rank 0's collectives fail
    (ACCELERATE, "1:end", "a rank failed after training; not published"),  # after training: the ok flag is 0
])
def test_a_failing_rank_leaves_no_published_run(tmp_path, smoke_run, launcher, fail, needle):
    root = _fresh_cache(tmp_path, smoke_run)
    argv = ["--profile", "smoke", "--seeds", "0", "--steps", "4", "--window", "2", "--cache-dir", str(root),
            "--quiet", "--no-capture-in-run"]
    res, _ = _launch(launcher + MODULE + argv, env={build_dist.FAIL_ENV: fail})
    out = res.stdout + res.stderr
    assert res.returncode != 0 and needle in out, out[-6000:]
    cfg = make_config("smoke", seed=0, steps=4, window=2, capture_in_run=False)
    key = cfg.key(build_dist.dist_versions(2))
    assert not store.run_dir(root, key).exists() and store.list_runs(root) == []
    assert list((root / "runs").glob(f".tmp-{key}-*"))  # rank 0 had started building: its temp stays behind
    assert "| 2 processes" not in res.stdout
