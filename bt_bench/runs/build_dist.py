"""Data-parallel build of a planted run: trl's own distributed GRPO path, every rank's rollouts recorded.

Every rank runs this module; its options are those of ``bt-bench build``::

    torchrun --standalone --nproc_per_node N -m bt_bench.runs.build_dist --profile tiny --seeds 0
    accelerate launch --multi_gpu --num_processes N -m bt_bench.runs.build_dist --profile tiny --seeds 0

On a machine without GPUs the ranks train on CPU over gloo. ``accelerate launch --cpu --num_processes N`` is
not a multi-process launch (accelerate runs CPU ranks only through mpirun, else falls back to one process):
``--multi_gpu`` selects torch's launcher, which works on CPU too. An accelerate config file (DeepSpeed, FSDP)
passes through to accelerate untouched, but the build refuses anything other than plain DDP before training
(``train_planted``: checkpoints, AdamW moments and in-run sketches are read from full parameters on rank 0).
One process (``python -m bt_bench.runs.build_dist``, or ``--nproc_per_node 1``) is exactly ``bt-bench build``.

The stored run (``manifest["distributed"]`` says all of this):
- P prompts x G generations per step, as in one process, split into N equal blocks of P*G/N rows: trl's
  sampler (``RepeatSampler`` + accelerate's batch sharding) hands rank r the r-th contiguous block of the
  step's rows, so the prompts, groups and gen_index of every uid are those of the 1-process run;
- every rollout exactly once, uids 0..N-1 ordered by step, then rank, then the rank's local row: trl's own
  global order of a step's rows (its ``process_slice``), so group = uid // G and gen_index = uid % G;
- advantages are trl's: it gathers every rank's rewards, normalizes within groups, keeps its own rows;
- generation RNG: trl seeds rank r with seed + r (``set_seed(seed, device_specific=True)``), so completions
  (hence the weights, the gate and every statistic) differ from the 1-process run of the same seed. The cache
  key includes the number of processes: a data-parallel run never stands in for the 1-process one;
- rank 0 alone writes (checkpoints, learning curve, gate by the same ``planting_gate``) and publishes
  (``store.publish_once``), only after an all-reduce (MIN) of every rank's ok flag: a rank that fails before
  it sends its flag makes that all-reduce fail on rank 0 (or torchrun stops rank 0), one that fails after
  sends 0, and nothing is renamed into the store either way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bt_bench.runs import store
from bt_bench.runs.config import RunConfig

MODULE = "bt_bench.runs.build_dist"
# test-only: "RANK:STEP" raises on RANK at STEP, "RANK:end" fails RANK after training
FAIL_ENV = "BT_BENCH_TEST_DIST_FAIL"


def parser() -> argparse.ArgumentParser:
    """The options of ``bt-bench build`` (same code: ``bt_bench.runs.options.add_run_args``)."""
    from bt_bench.runs.options import add_run_args as _add_run_args

    ap = argparse.ArgumentParser(prog=f"torchrun --nproc_per_node N -m {MODULE}",
                                 description=__doc__.splitlines()[0])
    _add_run_args(ap)
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    return ap


def forward_argv(args: argparse.Namespace) -> list[str]:
    """``args`` (parsed by ``bt-bench build``) back into this module's command line: every option of
    ``parser()`` whose value differs from its default; anything else in ``args`` (--num-processes) is
    dropped."""
    out: list[str] = []
    for act in parser()._actions:
        if not act.option_strings or act.dest == "help" or not hasattr(args, act.dest):
            continue
        val = getattr(args, act.dest)
        if val == act.default:
            continue
        flag = act.option_strings[0]
        if isinstance(act, argparse.BooleanOptionalAction):
            out.append(flag if val else "--no-" + flag[2:])
        elif act.nargs == 0:
            out.append(flag)
        else:
            out += [flag, *map(str, val if isinstance(val, list) else [val])]
    return out


def launch_command(argv: list[str], num_processes: int, launcher: str = "torchrun") -> list[str]:
    """The launcher line that runs this module on ``num_processes`` local processes (this Python)."""
    if launcher == "torchrun":
        head = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(num_processes)]
    elif launcher == "accelerate":
        head = ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(num_processes)]
    else:
        raise ValueError(f"launcher={launcher!r} is invalid: allowed 'torchrun', 'accelerate'")
    return [sys.executable, *head, "-m", MODULE, *argv]


def launch(args: argparse.Namespace, num_processes: int, launcher: str = "torchrun") -> int:
    """``bt-bench build --num-processes N``: run the launcher line, return its exit status."""
    if num_processes < 1:
        raise ValueError(f"--num-processes {num_processes} is invalid: allowed a positive integer")
    # torchrun keeps a torchelastic_* log folder in $TMPDIR per launch, never removed: the launcher gets a private
    # temp folder, removed when it exits, so a build leaves nothing in the user's
    with tempfile.TemporaryDirectory(prefix="bt-bench-launch-") as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        return subprocess.call(launch_command(forward_argv(args), num_processes, launcher), env=env)


def dist_versions(num_processes: int) -> dict[str, str]:
    """What shapes a data-parallel run beyond the config: the versions, and the number of processes (each rank
    draws from its own RNG stream), so the run has its own cache key."""
    return {**store.versions(), "data_parallel_processes": str(num_processes)}


def _test_failure(rank: int) -> tuple:
    """Test-only hook (``$BT_BENCH_TEST_DIST_FAIL``): (TrainerCallbacks, fail after training?) of a rank."""
    spec = os.environ.get(FAIL_ENV, "")
    if not spec or int(spec.split(":")[0]) != rank:
        return (), False
    at = spec.split(":")[1]
    if at == "end":
        return (), True
    from transformers import TrainerCallback

    class FailAt(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == int(at):
                raise RuntimeError(f"{FAIL_ENV}: rank {rank} fails at step {at} (test hook)")

    return (FailAt(),), False


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def build_run_dist(cfg: RunConfig, root=None, rebuild: bool = False, progress: bool = True) -> store.Run:
    """Every rank calls this; every rank returns the published run. Rank 0 builds inside ``publish_once`` and
    broadcasts its decision first ('build', 'cached' or 'error'): the other ranks train only when it does."""
    import torch
    import torch.distributed as dist
    from accelerate import PartialState
    from accelerate.utils import broadcast_object_list

    from bt_bench.runs.build import _train_into, base_model_dir, build_run
    from bt_bench.runs.runtime import set_determinism
    from bt_bench.runs.train import train_planted

    if _world_size() == 1:
        return build_run(cfg, root, rebuild=rebuild, progress=progress)
    ps = PartialState()
    set_determinism(cfg.seed)
    root = store.cache_root(root)
    vers = dist_versions(ps.num_processes)
    key = cfg.key(vers)
    final = store.run_dir(root, key)
    callbacks, fail_at_end = _test_failure(ps.process_index)

    def tell(word=None):
        box = [word]
        broadcast_object_list(box, from_process=0)
        return box[0]

    def all_ok(ok: bool) -> None:
        flag = torch.tensor([1 if ok else 0], device=ps.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if not flag.item():
            raise RuntimeError(f"data-parallel build of run {key}: a rank failed after training; "
                               "not published")

    if ps.is_main_process:
        told = []
        info = {"num_processes": ps.num_processes, "distributed_type": ps.distributed_type.value,
                "backend": ps.backend, "rows_per_rank_per_step": cfg.rollouts_per_step // ps.num_processes,
                "rank_seeds": [cfg.seed + r for r in range(ps.num_processes)],
                "uid_order": "step, then rank, then the rank's local row (trl's process_slice order)",
                "in_run_sketches": "gathered from every rank, divided by num_processes"}

        def build(tmp: Path) -> None:
            told.append(tell("build"))
            _train_into(cfg, root, key, vers, tmp, progress, distributed=info, callbacks=callbacks)
            all_ok(True)

        try:
            store.publish_once(final, build, rebuild=rebuild)
        except BaseException:
            if not told:
                tell("error")
            raise
        if not told:
            tell("cached")
    else:
        word = tell()
        if word == "error":
            raise RuntimeError(f"data-parallel build of run {key}: rank 0 failed before training "
                               "(see its log)")
        if word == "build":
            base = base_model_dir(cfg, root, progress=False)  # rank 0 builds it (publish_once's lock)
            with tempfile.TemporaryDirectory(prefix=f"bt-rank{ps.process_index}-") as scratch:
                res = train_planted(cfg, base, Path(scratch), progress=False, data_parallel=True,
                                    callbacks=callbacks)
            ok = len(res.columns["uid"]) == cfg.steps * cfg.rollouts_per_step and not fail_at_end
            all_ok(ok)
            if not ok:
                raise RuntimeError(f"rank {ps.process_index}: " + (f"{FAIL_ENV} (test hook)" if fail_at_end
                                   else "the gathered rollout table is incomplete"))
    ps.wait_for_everyone()  # rank 0 has published
    return store.load_run(final)


def main(argv: list[str] | None = None) -> int:
    import time

    from accelerate import PartialState

    from bt_bench.runs.options import configs as _configs
    from bt_bench.runs.options import summary_line as _summary_line
    from bt_bench.runs.runtime import pick_device

    args = parser().parse_args(argv)
    try:
        cfgs = _configs(args)  # validate every seed's config before any work starts
    except ValueError as e:
        print(f"{MODULE}: error: {e}", file=sys.stderr)
        return 2
    n = _world_size()
    if n > 1:  # initialize torch.distributed (gloo on CPU) before anything else asks accelerate for its state
        PartialState(cpu=pick_device(cfgs[0].device) == "cpu")
    for cfg in cfgs:
        t0 = time.perf_counter()
        run = build_run_dist(cfg, args.cache_dir, rebuild=args.rebuild, progress=not args.quiet)
        if int(os.environ.get("RANK", "0")) == 0:
            print(_summary_line(run) + f" | {n} process{'es' if n > 1 else ''} | this call "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
