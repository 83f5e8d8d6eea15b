"""Benchmarks. ``python -m bt_bench.bench sketch [--json PATH]``;
``bench sketch --ladder`` / ``--scale`` (or ``bench ladder`` / ``bench scale``): the size ladder and the scale
table of the published setting (bt_bench.bench.ladder, bt_bench.bench.scale).

One model and one batch; interleaved rounds (the order rotates each round) of:
  floor         one batched forward+backward of the same GRPO loss (parameter gradients);
  bt_bench      the factorized sketcher (bt_bench.sketch.Sketcher);
  loop_dense    exact per-rollout gradients by a loop + dense seeded Gaussian projection;
  vmap_dense    exact per-rollout gradients by torch.func vmap + the same dense projection;
  traker_basic  traker's BasicProjector on the vmap per-rollout gradients (if traker imports);
  dattri_random dattri's random_project (CPU: its BasicProjector) on the same gradients (if it imports).
Ratios are per round (candidate time / floor time of the same round); min and median are reported.
"x ours" (time_vs_bt_bench) is the median over rounds of candidate time / bt_bench time of the same round:
the speedup targets use it, since a paired ratio does not drift with the load of a shared machine.
Peak memory is the resident-set high-water mark above the level before the candidate's first timed call (Linux
clear_refs); setup (a cached dense matrix, projector buffers) is not counted.
Before anything runs, each baseline's cost is estimated from its parts measured on this batch
(bt_bench.bench.ladder.estimate_baselines). ``--max-call-s`` skips a baseline whose estimate exceeds it
("skipped: est. N s/round"), ``--max-mem-gib`` one whose estimated peak exceeds it, and ``--slow-s S
--slow-rounds N`` gives a baseline estimated above S seconds no warm-up call and only the first N rounds (its
paired ratios use those rounds).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import torch

from bt_bench.bench.ladder import (
    TARGET_RATIO_TO_FLOOR,
    TARGET_SPEEDUP,
    available_bytes,
    dense_cached,
    estimate_baselines,
    plan_skips,
)
from bt_bench.sketch import Sketcher, completion_logps, policy_loss_terms, preset, reference
from bt_bench.sketch.projectors import DenseGaussianProjector
from bt_bench.sketch.synthetic import random_batch, tiny_qwen2

CONFIG_KEYS = ("rollouts", "prompt_len", "completion_len", "vocab", "hidden", "layers", "heads", "kv_heads",
               "intermediate", "rounds", "threads", "preset", "seed")


@dataclass
class Candidate:
    name: str
    run: Callable[[], Any]
    note: str = ""
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    peak_bytes: int | None = None
    slow: bool = False  # no warm-up, only the first `slow_rounds` rounds (run_rounds)


def _fixed_mmap_threshold() -> None:
    """Large buffers always mmapped and unmapped on free, so resident memory follows torch's use."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
    except OSError:
        pass


def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_extra_bytes(run: Callable[[], Any]) -> int | None:
    """Resident high-water mark during `run` minus resident memory before it (None off Linux)."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current VmRSS
    except OSError:
        run()
        return None
    before = _status_kib("VmRSS")
    run()
    peak = _status_kib("VmHWM")
    return None if before is None or peak is None else max(0, peak - before) * 1024


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info(threads: int) -> dict[str, Any]:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cpu": cpu, "cores": os.cpu_count(), "torch_threads": threads, "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {d: _version(d) for d in ("torch", "transformers", "trl", "numpy", "traker", "dattri")},
    }


def build_candidates(model: torch.nn.Module, batch: dict[str, Any], sketcher: Sketcher, k: int,
                     skip: set[str]) -> tuple[list[Candidate], list[dict[str, str]]]:
    """The candidates; setup (projector matrices, hooks layout) is done here, untimed."""
    n_params = sketcher.n_params
    cache = dense_cached(n_params, k)
    dense = DenseGaussianProjector(n_params, k, seed=sketcher.spec.seed, cache=cache)
    if cache and not {"loop_dense", "vmap_dense"} <= skip:
        dense.project(torch.zeros(1, n_params))  # generate and cache M outside the timing
    m_note = "cached" if cache else "regenerated per call"

    def floor() -> None:
        model.zero_grad(set_to_none=True)
        policy_loss_terms(completion_logps(model, batch), batch).sum().backward()

    cands = [
        Candidate("floor", floor, "batched forward+backward, parameter gradients"),
        Candidate("bt_bench", lambda: sketcher.sketch_torch(batch), f"factorized sketch, k={sketcher.dim}"),
        Candidate("loop_dense", lambda: dense.project(-reference.per_rollout_grads_loop(model, batch)),
                  f"per-rollout loop + dense Gaussian [{n_params}x{k}] ({m_note})"),
        Candidate("vmap_dense", lambda: dense.project(-reference.per_rollout_grads_vmap(model, batch)),
                  f"torch.func vmap + dense Gaussian ({m_note})"),
    ]

    def traker() -> Candidate:
        from trak.projectors import BasicProjector, ProjectionType

        proj = BasicProjector(grad_dim=n_params, proj_dim=k, seed=0, proj_type=ProjectionType.normal,
                              device=torch.device("cpu"))
        return Candidate("traker_basic",
                         lambda: proj.project(-reference.per_rollout_grads_vmap(model, batch), model_id=0),
                         "vmap gradients + trak.projectors.BasicProjector (regenerates its blocks per call)")

    def dattri() -> Candidate:
        from dattri.func.projection import random_project

        b = batch["prompt_ids"].shape[0]
        dproj = random_project(torch.zeros(b, n_params), b, k, b, proj_seed=0, proj_type="normal",
                               device="cpu")
        return Candidate("dattri_random", lambda: dproj(-reference.per_rollout_grads_vmap(model, batch)),
                         "vmap gradients + dattri.func.projection.random_project (CPU BasicProjector)")

    unavailable: list[dict[str, str]] = []
    for name, make in (("traker_basic", traker), ("dattri_random", dattri)):
        if name not in skip:
            try:
                cands.append(make())
            except Exception as exc:  # noqa: BLE001 - report why, whatever it is
                unavailable.append({"name": name, "reason": f"{type(exc).__name__}: {exc}"})
    kept = [c for c in cands if c.name == "floor" or c.name not in skip]
    return kept, unavailable


def run_rounds(cands: list[Candidate], rounds: int, slow_rounds: int | None = None) -> None:
    """Warm-up once, then `rounds` interleaved rounds with the order rotated each round; peak memory is taken
    on each candidate's first timed call. A slow candidate gets no warm-up and runs only in the first
    `slow_rounds` rounds, so its i-th time pairs with the i-th time of the others (same round)."""
    for cand in cands:
        if not cand.slow:
            cand.run()
    for r in range(rounds):
        order = cands[r % len(cands):] + cands[: r % len(cands)]
        for cand in order:
            if cand.slow and slow_rounds is not None and len(cand.wall) >= slow_rounds:
                continue
            gc.collect()

            def timed(cand: Candidate = cand) -> None:
                w0, c0 = time.perf_counter(), time.thread_time()
                cand.run()
                cand.cpu.append(time.thread_time() - c0)
                cand.wall.append(time.perf_counter() - w0)

            if r == 0:
                cand.peak_bytes = peak_extra_bytes(timed)
            else:
                timed()


def summarize(cands: list[Candidate], rollouts: int, k: int) -> list[dict[str, Any]]:
    floor = next(c for c in cands if c.name == "floor")
    ours = next((c for c in cands if c.name == "bt_bench"), None)
    rows = []
    for cand in cands:
        ratios = [t / f for t, f in zip(cand.wall, floor.wall)]  # zip: a slow candidate ran the first rounds
        # time relative to bt_bench in the same round (paired: robust to the machine's load drifting)
        vs_ours = None if ours is None else statistics.median(t / o for t, o in zip(cand.wall, ours.wall))
        cpu_ratios = [t / f for t, f in zip(cand.cpu, floor.cpu)]
        median = statistics.median(cand.wall)
        rows.append({
            "name": cand.name,
            "rollouts_per_s": rollouts / median,
            "ratio_to_floor": statistics.median(ratios),
            "ratio_to_floor_min": min(ratios),
            "cpu_ratio_to_floor": statistics.median(cpu_ratios),
            "time_vs_bt_bench": vs_ours,
            "seconds_median": median,
            "seconds_min": min(cand.wall),
            "rounds": len(cand.wall),
            "peak_bytes": cand.peak_bytes,
            "peak_bytes_per_rollout": None if cand.peak_bytes is None else cand.peak_bytes / rollouts,
            "output_bytes_per_rollout": 0 if cand.name == "floor" else 4 * k,
            "note": cand.note,
        })
    return rows


def check_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by = {r["name"]: r for r in rows}
    ours = by.get("bt_bench")
    out: dict[str, dict[str, Any]] = {}
    if ours is None:
        return out
    out["bt_bench_vs_floor"] = {"value": ours["ratio_to_floor"], "target": f"<= {TARGET_RATIO_TO_FLOOR}",
                                "pass": ours["ratio_to_floor"] <= TARGET_RATIO_TO_FLOOR}
    for base in ("loop_dense", "traker_basic"):
        if base in by:
            speedup = by[base]["time_vs_bt_bench"]
            out[f"speedup_vs_{base}"] = {"value": speedup, "target": f">= {TARGET_SPEEDUP}",
                                         "pass": speedup >= TARGET_SPEEDUP}
    return out


def _fmt_mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f}"


def print_report(report: dict[str, Any]) -> None:
    cfg, mach = report["config"], report["machine"]
    print(f"bt-bench sketch benchmark: {cfg['rollouts']} rollouts, prompt {cfg['prompt_len']} + completion "
          f"{cfg['completion_len']} tokens, Qwen2 vocab {cfg['vocab']} hidden {cfg['hidden']} layers "
          f"{cfg['layers']} ({report['n_params']} params), k={report['k']}, {cfg['rounds']} rounds")
    print(f"machine: {mach['cpu']}, {mach['cores']} cores, torch threads {mach['torch_threads']}; "
          + ", ".join(f"{d} {v}" for d, v in mach["versions"].items() if v))
    head = f"{'name':<14}{'rollouts/s':>11}{'ratio med':>10}{'ratio min':>10}{'cpu ratio':>10}{'x ours':>8}"
    print(head + f"{'peak MiB':>9}{'peak B/rollout':>15}  note")
    for r in report["candidates"]:
        per = "n/a" if r["peak_bytes_per_rollout"] is None else f"{r['peak_bytes_per_rollout']:.0f}"
        print(f"{r['name']:<14}{r['rollouts_per_s']:>11.1f}{r['ratio_to_floor']:>10.3f}"
              f"{r['ratio_to_floor_min']:>10.3f}{r['cpu_ratio_to_floor']:>10.3f}"
              f"{'n/a' if r['time_vs_bt_bench'] is None else format(r['time_vs_bt_bench'], '.2f'):>8}"
              f"{_fmt_mib(r['peak_bytes']):>9}{per:>15}  {r['note']}")
    for u in report["unavailable"]:
        print(f"{u['name']:<14} unavailable: {u['reason']}")
    for u in report["skipped"]:
        print(f"{u['name']:<14} {u['reason']} (est. {u['est_time_vs_bt_bench']:.1f}x ours)")
    for name, t in report["targets"].items():
        print(f"target {name}: {t['value']:.3f} (want {t['target']}) {'PASS' if t['pass'] else 'FAIL'}")


def bench_sketch(args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    _fixed_mmap_threshold()
    model = tiny_qwen2(vocab=args.vocab, hidden=args.hidden, layers=args.layers, heads=args.heads,
                       kv_heads=args.kv_heads, intermediate=args.intermediate, seed=args.seed)
    batch = random_batch(args.rollouts, args.prompt_len, args.completion_len, args.vocab, seed=args.seed)
    sketcher = Sketcher(model, preset(args.preset, seed=args.seed))
    k = sketcher.dim
    skip = set(filter(None, args.skip.split(",")))
    estimates = estimate_baselines(model, batch, sketcher.n_params, k, args.seed)
    avail = available_bytes()
    max_mem = (int(args.max_mem_gib * 2**30) if args.max_mem_gib is not None
               else None if avail is None else int(0.8 * avail))
    too_big = {n: r for n, r in plan_skips(estimates, args.max_call_s, max_mem).items() if n not in skip}
    cands, unavailable = build_candidates(model, batch, sketcher, k, skip | set(too_big))
    for cand in cands:
        cand.slow = args.slow_s is not None and estimates.get(cand.name, {}).get("seconds", 0.0) > args.slow_s
    run_rounds(cands, args.rounds, args.slow_rounds)
    rows = summarize(cands, args.rollouts, k)
    ours = next((r for r in rows if r["name"] == "bt_bench"), None)
    skipped = [{"name": n, "reason": reason, "est_seconds": estimates[n]["seconds"],
                "est_peak_bytes": estimates[n]["peak_bytes"],
                "est_time_vs_bt_bench": (None if ours is None
                                         else estimates[n]["seconds"] / ours["seconds_median"])}
               for n, reason in too_big.items()]
    return {
        "benchmark": "sketch",
        "config": {key: getattr(args, key) for key in CONFIG_KEYS},
        "machine": machine_info(args.threads),
        "spec": sketcher.spec.to_dict(),
        "n_params": sketcher.n_params,
        "k": k,
        "candidates": rows,
        "unavailable": unavailable,
        "skipped": skipped,
        "estimates": estimates,
        "max_mem_bytes": max_mem,
        "targets": check_targets(rows),
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bt-bench bench", description="bt-bench benchmarks")
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("sketch", help="per-rollout gradient sketches vs the forward+backward floor")
    p.add_argument("--rollouts", type=int, default=64)
    p.add_argument("--prompt-len", type=int, default=8)
    p.add_argument("--completion-len", type=int, default=12)
    p.add_argument("--vocab", type=int, default=96)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--intermediate", type=int, default=None, help="MLP width (default 2 x hidden)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--preset", default="default", help="SketchSpec preset (bt_bench.sketch.spec.PRESETS)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip", default="", help="comma-separated candidate names to leave out")
    p.add_argument("--max-call-s", type=float, default=None,
                   help="skip a baseline whose estimated seconds per call exceed this (default: none)")
    p.add_argument("--max-mem-gib", type=float, default=None,
                   help="skip a baseline whose estimated peak exceeds this (default: 0.8 x MemAvailable)")
    p.add_argument("--slow-s", type=float, default=None,
                   help="a baseline estimated above this many s/call: no warm-up, --slow-rounds rounds")
    p.add_argument("--slow-rounds", type=int, default=1, help="rounds of a slow baseline (with --slow-s)")
    p.add_argument("--json", default=None, help="write the report as JSON here")
    p.add_argument("--ladder", action="store_true", help="run the size ladder (bt-bench bench ladder -h)")
    p.add_argument("--scale", action="store_true", help="print the scale table of the published setting")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["ladder"], ["scale"]) or (argv[:1] == ["sketch"] and {"--ladder", "--scale"} & {*argv}):
        from bt_bench.bench import ladder

        return ladder.main(argv)
    args = build_parser().parse_args(argv)
    report = bench_sketch(args)
    print_report(report)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
