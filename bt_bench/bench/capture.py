"""In-run capture overhead: the same planted run with and without the sketch hooks on trl's backward.

``bt-bench bench capture [--steps 40] [--rounds 3] [--json PATH]``: interleaved rounds of (a) training without
capture (the baseline, measured in the same process) and (b) training with in-run capture; prints the ratio of
(b) to (a) as min and median over rounds, with the machine and thread count. Target: <= 1.2x the time without
capture.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import tempfile
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bt-bench bench capture", description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40, help="GRPO steps per measured run (default 40)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--json", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)

    import torch

    from bt_bench.runs.build import toy_model_dir
    from bt_bench.runs.config import make_config
    from bt_bench.runs.store import cache_root
    from bt_bench.runs.train import train_planted

    base = make_config("tiny", steps=args.steps, window=max(1, args.steps // 2), eval_every=10**6 // 2)
    model_dir = toy_model_dir(base.toy, cache_root(), progress=False)
    times: dict[str, list[float]] = {"no_capture": [], "capture": []}
    for r in range(args.rounds):
        for name, cap in (("no_capture", False), ("capture", True)):
            cfg = dataclasses.replace(base, capture_in_run=cap)
            with tempfile.TemporaryDirectory() as tmp:
                res = train_planted(cfg, model_dir, Path(tmp), progress=False)
            times[name].append(res.train_seconds)
            print(f"round {r}: {name:10s} {res['train_seconds']:.2f}s", flush=True)
    ratio = np.array(times["capture"]) / np.array(times["no_capture"])
    out = {"machine": platform.platform(), "processor": platform.processor(), "threads": torch.get_num_threads(),
           "steps": args.steps, "rounds": args.rounds, "seconds": times,
           "ratio_min": float(ratio.min()), "ratio_median": float(np.median(ratio))}
    print(f"capture / no capture: min {out['ratio_min']:.3f}x, median {out['ratio_median']:.3f}x over "
          f"{args.rounds} rounds of {args.steps} steps ({out['threads']} thread(s), {out['machine']})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
