"""The sketch benchmark at sizes where projection costs what it does in practice: cost estimates, size ladder.

``python -m bt_bench.bench sketch --ladder [--json PATH]`` (or ``bench ladder``) runs ``bench sketch`` (one
subprocess per size and completion length: a clean memory baseline, and an out-of-memory kill costs one row)
on the toy and Qwen2 shapes of about 5M, 20M and 100M parameters (``SIZES``: Qwen2.5 widths, fewer layers, a
smaller vocabulary), each at completion lengths 12 and 64, and reports per size ours/floor, loop_dense,
vmap_dense and traker_basic / ours (paired, same round) and peak memory, with a PASS/FAIL per target: ours <=
1.25x the floor at every size; >= 10x faster than loop_dense and traker_basic from 5M up (the toy is reported,
not judged). A baseline estimated above ``--max-call-s`` per call is skipped ("skipped: est. N s/round"; its
estimated ratio is shown, its target reads SKIP); one above ``--slow-s`` runs once (no warm-up, 1 round).
dattri_random is left out (the same CPU BasicProjector cost as traker_basic; ``bench sketch`` runs it).

``--scale`` (or ``bench scale``) prints the scale table of the published setting (``bt_bench.bench.scale``),
projected with the ours/floor ratio measured here (``measured_floor_ratio``).

Cost estimates (``estimate_baselines``, used by ``bench sketch`` itself), per baseline: its per-rollout
gradients (one single-rollout forward+backward x rollouts; vmap assumed no faster than the loop), the random
matrix it regenerates every call (P x k seeded Gaussian chunks, unless the dense matrix fits the 2 GiB cache;
traker/dattri: P x 1100 by in-place normal_, each at the rate measured now) and the projection matmul; peak:
the rollouts x P float32 gradients twice, plus the buffers its setup holds (the cached dense matrix; traker's
P x 100 block), which the measured peak (above the level before the call) leaves out.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bt_bench.bench.scale import paper_setting, print_scale, qwen2_params, scale_table

TARGET_RATIO_TO_FLOOR = 1.25  # ours <= 1.25x the floor's time: a sketch costs about one forward+backward
TARGET_SPEEDUP = 10.0  # >= 10x faster than loop_dense and traker_basic, which materialize per-rollout gradients
BASELINES = ("loop_dense", "vmap_dense", "traker_basic")
SPEED_TARGETS = ("loop_dense", "traker_basic")


# ------------------------------------------------------------------------------------------ cost estimates
def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo (None off Linux)."""
    try:
        with open("/proc/meminfo") as fh:
            return next((int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("MemAvailable:")), None)
    except OSError:
        return None


def dense_cached(n_params: int, k: int) -> bool:
    """The dense baselines keep M [P, k] in memory up to 2 GiB, else regenerate its chunks every call."""
    return n_params * k * 4 <= 2**31


def _seconds(run: Callable[[], Any], repeat: int = 2) -> float:
    run()  # warm-up
    return min(timeit.repeat(run, number=1, repeat=repeat))


def estimate_baselines(model: Any, batch: dict[str, Any], n_params: int, k: int, seed: int
                       ) -> dict[str, Any]:
    """Estimated seconds per call and peak bytes of each baseline from its parts, measured now (module
    docstring): {"rates": {...}, name: {"seconds", "grads_s", "generate_s", "matmul_s", "peak_bytes"}}."""
    import torch

    from bt_bench.sketch import reference
    from bt_bench.sketch.projectors import DenseGaussianProjector

    b = batch["prompt_ids"].shape[0]
    one = {key: v[:1] if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == b else v
           for key, v in batch.items()}
    t_one = _seconds(lambda: reference.per_rollout_grads_loop(model, one))
    chunk, block, gen = DenseGaussianProjector(8192, k, seed=seed), torch.empty(65536, 100), torch.Generator()
    randn_per_s = 8192 * k / _seconds(lambda: chunk._chunk(0))  # the dense baselines' seeded chunks
    normal_per_s = block.numel() / _seconds(lambda: block.normal_(generator=gen))  # BasicProjector's blocks
    g, m = torch.randn(b, 8192), torch.randn(8192, k)
    flops_per_s = 2 * b * 8192 * k / _seconds(lambda: g @ m)
    grads_s, grads_bytes = b * t_one, 2 * b * n_params * 4  # the stacked gradients and their negation
    traker_cols = math.ceil(k / 100) * 100  # BasicProjector: blocks of 100 columns, regenerated every call
    cached = dense_cached(n_params, k)
    dense_buf = (n_params if cached else 8192) * k * 4
    out: dict[str, Any] = {"rates": {"one_rollout_grads_s": t_one, "randn_per_s": randn_per_s,
                                     "normal_per_s": normal_per_s, "matmul_flops_per_s": flops_per_s}}
    for name, cols, rate, buf in (("loop_dense", k, 0 if cached else randn_per_s, dense_buf),
                                  ("vmap_dense", k, 0 if cached else randn_per_s, dense_buf),
                                  ("traker_basic", traker_cols, normal_per_s, n_params * 100 * 4),
                                  ("dattri_random", traker_cols, normal_per_s, n_params * 100 * 4)):
        generate_s = n_params * cols / rate if rate else 0.0
        matmul_s = 2 * b * n_params * cols / flops_per_s
        out[name] = {"seconds": grads_s + generate_s + matmul_s, "grads_s": grads_s,
                     "generate_s": generate_s, "matmul_s": matmul_s, "peak_bytes": grads_bytes + buf}
    return out


def plan_skips(estimates: dict[str, Any], max_call_s: float | None,
               max_mem_bytes: int | None) -> dict[str, str]:
    """{baseline: reason} for the baselines whose estimate exceeds the time or memory budget."""
    out = {}
    for name, est in estimates.items():
        if name == "rates":
            continue
        if max_mem_bytes is not None and est["peak_bytes"] > max_mem_bytes:
            out[name] = (f"skipped: est. peak {est['peak_bytes'] / 2**30:.1f} GiB > "
                         f"{max_mem_bytes / 2**30:.1f} GiB allowed")
        elif max_call_s is not None and est["seconds"] > max_call_s:
            out[name] = f"skipped: est. {est['seconds']:.0f} s/round"
    return out


# ------------------------------------------------------------------------------------------------ the ladder
@dataclass(frozen=True)
class Size:
    """One rung: a random-init Qwen2 shape and how hard to measure it (fewer rollouts and rounds when big)."""

    name: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int | None
    rollouts: int
    rounds: int
    speed_target: bool = True  # the >= 10x targets apply (from 5M up)

    @property
    def n_params(self) -> int:
        return qwen2_params(self.vocab, self.hidden, self.layers, self.heads, self.kv_heads,
                            self.intermediate or 2 * self.hidden)

    def argv(self, completion_len: int) -> list[str]:
        """``bench sketch`` arguments of this size (the caller adds the shared options)."""
        out = ["sketch", "--vocab", self.vocab, "--hidden", self.hidden, "--layers", self.layers,
               "--heads", self.heads, "--kv-heads", self.kv_heads, "--rollouts", self.rollouts,
               "--rounds", self.rounds, "--completion-len", completion_len]
        return [str(a) for a in out + (["--intermediate", self.intermediate] if self.intermediate else [])]


SIZES = (
    Size("toy", 96, 64, 2, 4, 2, None, rollouts=64, rounds=5, speed_target=False),  # bench sketch defaults
    Size("5M", 4096, 256, 4, 4, 2, 1024, rollouts=16, rounds=3),  # Qwen2.5 head width 64, 2 kv heads
    Size("20M", 8192, 512, 6, 8, 2, 1344, rollouts=8, rounds=3),
    Size("100M", 16384, 896, 6, 14, 2, 4864, rollouts=4, rounds=3),  # Qwen2.5-0.5B widths, 6 of 24 layers
)
COMPLETION_LENS = (12, 64)


def run_subprocess(argv: list[str], timeout_s: float) -> dict[str, Any]:
    """``python -m bt_bench.bench <argv> --json tmp`` in a fresh process; its report (RuntimeError if not)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        proc = subprocess.run([sys.executable, "-m", "bt_bench.bench", *argv, "--json", str(out)],
                              check=False, capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode != 0 or not out.exists():
            why = " (killed: out of memory?)" if proc.returncode == -9 else ""
            raise RuntimeError(f"exit {proc.returncode}{why}: {proc.stderr.strip()[-400:]}")
        return json.loads(out.read_text())


def status(value: float | None, measured: bool, target: float, at_most: bool) -> str:
    """PASS/FAIL of a measured figure; SKIP for an estimate; N/A when there is no figure."""
    if value is None:
        return "N/A"
    if not measured:
        return "SKIP"
    return "PASS" if (value <= target if at_most else value >= target) else "FAIL"


def ladder_row(size: Size, completion_len: int, report: dict[str, Any]) -> dict[str, Any]:
    """The figures of one (size, completion length) from its ``bench sketch`` report, with target statuses."""
    by = {c["name"]: c for c in report["candidates"]}
    skipped = {s["name"]: s for s in report.get("skipped", [])}
    unavailable = {u["name"]: u["reason"] for u in report.get("unavailable", [])}
    row: dict[str, Any] = {
        "size": size.name, "n_params": report["n_params"], "completion_len": completion_len,
        "rollouts": report["config"]["rollouts"], "rounds": report["config"]["rounds"],
        "ours_vs_floor": by["bt_bench"]["ratio_to_floor"],
        "ours_vs_floor_min": by["bt_bench"]["ratio_to_floor_min"],
        "seconds_median": {n: c["seconds_median"] for n, c in by.items()},
        "peak_bytes": {n: c["peak_bytes"] for n, c in by.items()},
    }
    for base in BASELINES:
        if base in by:
            row[base] = {"x_ours": by[base]["time_vs_bt_bench"], "measured": True,
                         "rounds": by[base]["rounds"]}
        elif base in skipped:
            row[base] = {"x_ours": skipped[base]["est_time_vs_bt_bench"], "measured": False,
                         "reason": skipped[base]["reason"], "est_peak_bytes": skipped[base]["est_peak_bytes"]}
        else:
            row[base] = {"x_ours": None, "measured": False, "reason": unavailable.get(base, "left out")}
    row["targets"] = {"ours_vs_floor": status(row["ours_vs_floor"], True, TARGET_RATIO_TO_FLOOR, True)}
    for base in SPEED_TARGETS:
        c = row[base]
        row["targets"][f"vs_{base}"] = (status(c["x_ours"], c["measured"], TARGET_SPEEDUP, False)
                                        if size.speed_target else "INFO")
    return row


def overall(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per target: FAIL if any measured row fails, PASS if every row it applies to passes, else PARTIAL (no
    failure, but a row skipped (its estimate is given) or without a figure)."""
    out = {}
    for key in ["ours_vs_floor", *(f"vs_{b}" for b in SPEED_TARGETS)]:
        got = [(r["size"], r["completion_len"], r["targets"][key]) for r in rows
               if r["targets"].get(key) != "INFO"]
        seen = {s for _, _, s in got}
        verdict = ("FAIL" if seen & {"FAIL", "ERROR"} else "PASS" if seen == {"PASS"} else "N/A" if not got
                   else "PARTIAL")
        out[key] = {"status": verdict, "rows": [f"{s}/{c}: {st}" for s, c, st in got]}
    return out


def run_ladder(sizes: tuple[Size, ...] | list[Size] = SIZES,
               completion_lens: tuple[int, ...] = COMPLETION_LENS, extra: list[str] | None = None,
               runner: Callable[[list[str]], dict[str, Any]] | None = None, timeout_s: float = 1800.0,
               progress: bool = True) -> dict[str, Any]:
    """Every size at every completion length through ``runner`` (default: one subprocess each)."""
    run = runner or (lambda argv: run_subprocess(argv, timeout_s))
    rows, reports, t_start = [], [], time.perf_counter()
    for size in sizes:
        for cl in completion_lens:
            argv = size.argv(cl) + list(extra or [])
            t0 = time.perf_counter()
            try:
                report = run(argv)
                row = ladder_row(size, cl, report)
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
                report = None
                speed = "ERROR" if size.speed_target else "INFO"
                row = {"size": size.name, "n_params": size.n_params, "completion_len": cl, "error": str(exc),
                       "targets": {"ours_vs_floor": "ERROR", **{f"vs_{b}": speed for b in SPEED_TARGETS}}}
            row["wall_s"] = time.perf_counter() - t0
            rows.append(row)
            reports.append({"argv": argv, "report": report})
            if progress:
                print(f"[ladder] {size.name} completion {cl}: {row['wall_s']:.0f} s "
                      f"(total {time.perf_counter() - t_start:.0f} s)", file=sys.stderr, flush=True)
    machine = next((r["report"]["machine"] for r in reports if r["report"]), None)
    return {"benchmark": "sketch_ladder", "sizes": [{**asdict(s), "n_params": s.n_params} for s in sizes],
            "completion_lens": list(completion_lens), "options": list(extra or []), "rows": rows,
            "overall": overall(rows), "runs": reports, "machine": machine,
            "wall_s": time.perf_counter() - t_start}


def _x(c: dict[str, Any]) -> str:
    x = c["x_ours"]
    return "n/a" if x is None else f"{x:.1f}" if c["measured"] else f"~{x:.0f}*"


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.0f}"


def print_ladder(ladder: dict[str, Any]) -> None:
    print(f"sketch ladder ({ladder['wall_s']:.0f} s); x ours = candidate / ours time, paired per round; "
          "* = skipped, estimated; peak MiB above the level before the call")
    print(f"{'size':<6}{'params':>8}{'compl':>6}{'B':>4}{'ours/floor':>11}{'loop x':>8}{'vmap x':>8}"
          f"{'traker x':>9}   peak MiB floor/ours/loop/vmap/traker   targets floor|loop|traker")
    notes = []
    for r in ladder["rows"]:
        head = f"{r['size']:<6}{r['n_params'] / 1e6:>7.1f}M{r['completion_len']:>6}"
        if "error" in r:
            print(f"{head}  error: {r['error'][:100]}")
            continue
        pk = "/".join(_mib(r["peak_bytes"].get(n)) for n in ("floor", "bt_bench", *BASELINES))
        t = r["targets"]
        xs = "".join(f"{_x(r[b]):>{w}}" for b, w in zip(BASELINES, (8, 8, 9)))
        print(f"{head}{r['rollouts']:>4}{r['ours_vs_floor']:>11.3f}{xs}   {pk:<36}   "
              f"{t['ours_vs_floor']}|{t['vs_loop_dense']}|{t['vs_traker_basic']}")
        notes += [f"  {r['size']}/{r['completion_len']} {b}: {r[b]['reason']}" for b in BASELINES
                  if not r[b]["measured"]]
    if notes:
        print("\n".join(notes))
    for key, o in ladder["overall"].items():
        print(f"target {key}: {o['status']}  ({', '.join(o['rows'])})")


def measured_floor_ratio(ladder: dict[str, Any]) -> tuple[float, str] | None:
    """ours/floor of the largest measured size at its longest completion (closest to the paper's 64)."""
    ok = [r for r in ladder["rows"] if "error" not in r]
    if not ok:
        return None
    r = max(ok, key=lambda r: (r["n_params"], r["completion_len"]))
    return r["ours_vs_floor"], (f"measured on CPU: {r['size']} ({r['n_params'] / 1e6:.0f}M parameters), "
                                f"completion {r['completion_len']}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    what = argv.pop(0) if argv[:1] in (["sketch"], ["ladder"], ["scale"]) else "ladder"
    ap = argparse.ArgumentParser(prog=f"bt-bench bench {what}", description=__doc__.splitlines()[0])
    ap.add_argument("--ladder", action="store_true", default=what == "ladder", help="run the size ladder")
    ap.add_argument("--scale", action="store_true", default=what == "scale", help="print the scale table")
    ap.add_argument("--sizes", default=",".join(s.name for s in SIZES), help="SIZES names, comma-separated")
    ap.add_argument("--completion-lens", default=",".join(map(str, COMPLETION_LENS)))
    ap.add_argument("--max-call-s", type=float, default=90.0, help="skip a baseline estimated above this")
    ap.add_argument("--slow-s", type=float, default=5.0, help="a baseline estimated above this: 1 round only")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--timeout-s", type=float, default=1800.0, help="per size and completion length")
    ap.add_argument("--floor-ratio", type=float, default=None,
                    help="scale table: ours/floor to project with (default: the ladder's, else 1.25)")
    ap.add_argument("--mfu", type=float, default=0.4, help="scale table: assumed GPU model FLOPs utilization")
    ap.add_argument("--prompt-tokens", type=int, default=64, help="scale table: assumed prompt tokens")
    ap.add_argument("--json", default=None, help="write the report as JSON here")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {}
    if args.ladder:
        by_name = {s.name: s for s in SIZES}
        sizes = [by_name[n] for n in args.sizes.split(",")]
        extra = ["--threads", str(args.threads), "--preset", args.preset, "--max-call-s",
                 str(args.max_call_s), "--slow-s", str(args.slow_s), "--slow-rounds", "1",
                 "--skip", "dattri_random"]
        out["ladder"] = run_ladder(sizes, tuple(int(c) for c in args.completion_lens.split(",")), extra,
                                   timeout_s=args.timeout_s)
        print_ladder(out["ladder"])
    if args.scale:
        got = measured_floor_ratio(out["ladder"]) if "ladder" in out else None
        ratio, source = ((args.floor_ratio, "given by --floor-ratio") if args.floor_ratio is not None
                         else got or (TARGET_RATIO_TO_FLOOR, "the target bound, not measured"))
        setting = paper_setting()
        out["scale"] = {**scale_table(**setting, floor_ratio=ratio, mfu=args.mfu,
                                      prompt_tokens=args.prompt_tokens),
                        "floor_ratio_source": source, "setting": setting}
        print_scale(out["scale"], source)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0
