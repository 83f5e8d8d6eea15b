"""The run options of ``bt-bench build`` (and of every rank of ``bt_bench.runs.build_dist``): one parser, the
validated configs, the one-line summary. Here, in the runs stage, so the distributed entry point shares them
without importing the command line (a stage imports only earlier ones)."""

from __future__ import annotations

import argparse
import dataclasses

from bt_bench.runs.config import DEFAULT_PROFILE, PROFILES, RunConfig


def add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default=DEFAULT_PROFILE, help=f"one of {sorted(PROFILES)} (default {DEFAULT_PROFILE})")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="training seeds (default 0)")
    p.add_argument("--cache-dir", default=None, help="run store root (default $BT_BENCH_CACHE or ~/.cache/bt-bench)")
    p.add_argument("--rebuild", action="store_true", help="rebuild even if a run with this config is cached")
    p.add_argument("--model-path", default=None, help="local folder of a HF causal LM (profile paper)")
    for f in dataclasses.fields(RunConfig):
        if f.name in ("profile", "seed", "model_path", "toy", "bpe"):
            continue
        if f.type == "bool":  # --bf16 / --no-bf16 (None = the profile's value)
            p.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, action=argparse.BooleanOptionalAction,
                           default=None, help=f.metadata.get("help", ""))
            continue
        if f.type not in ("int", "float", "str", "float | None"):
            continue
        typ = {"int": int, "float": float, "str": str, "float | None": float}[f.type]
        p.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=typ, default=None,
                       help=f.metadata.get("help", ""))


def configs(args) -> list[RunConfig]:
    from bt_bench.runs.config import make_config

    over = {f.name: getattr(args, f.name) for f in dataclasses.fields(RunConfig)
            if hasattr(args, f.name) and f.name not in ("profile", "seed")}
    over["model_path"] = args.model_path
    for s in args.seeds:
        if s < 0:
            raise ValueError(f"--seeds: seed {s} is invalid: allowed non-negative integers")
    return [make_config(args.profile, seed=s, **over) for s in args.seeds]


def summary_line(run) -> str:
    s, g = run.manifest["summary"], run.manifest["gate"]
    return (f"seed {run.config.seed}: {'PLANTED' if g['planted'] else 'NOT PLANTED'} | steps {run.config.steps} "
            f"rollouts {s['rollouts']} |GT| {s['gt']} chance {s['chance']:.3f} ceiling {s['ceiling']:.3f} | window "
            f"chance {s['window_chance']:.3f} headroom {s['window_headroom']:.3f} | final behavior rate trigger "
            f"{s['final_trigger_rate']:.2f} no-trigger {s['final_no_trigger_rate']:.2f} | train "
            f"{s['train_seconds']:.0f}s wall {s['wall_seconds']:.0f}s | {run.key}")
