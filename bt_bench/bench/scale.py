"""The scale table: store size and sketching time of the published setting (Qwen2.5-1.5B-Instruct, the repo's
``paper`` profile), as arithmetic a reader can check line by line.

``python -m bt_bench.bench sketch --scale`` (or ``bench scale``; its command line is ``main`` of
``bt_bench.bench.ladder``) prints ``scale_table`` for ``paper_setting()``: bytes per sketch, store size, sketching time projected
from the ours/floor ratio measured on CPU by the size ladder (no GPU on the machine it was built on) and an
assumed GPU forward+backward rate. ``qwen2_params`` counts the parameters of a Qwen2 shape, for this table and for
the ladder's rungs.
"""

from __future__ import annotations

from typing import Any

GPU_BF16_DENSE_TFLOPS = 989.0  # H100 SXM and H200 (same compute die): bf16 dense peak, TFLOP/s
QWEN25_15B = {"vocab": 151936, "hidden": 1536, "layers": 28, "heads": 12, "kv_heads": 2, "intermediate": 8960}


def qwen2_params(vocab: int, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int,
                 tied: bool = True) -> int:
    """Parameters of a Qwen2ForCausalLM: q/k/v with biases, o and gated MLP without, 2 RMSNorms a layer."""
    kv = kv_heads * (hidden // heads)
    layer = (hidden * hidden + hidden) + 2 * (hidden * kv + kv) + hidden * hidden + 3 * hidden * intermediate
    return layers * (layer + 2 * hidden) + hidden + vocab * hidden * (1 if tied else 2)


def scheduled_checkpoints(steps: int, window: int, every_in_window: int, every_after: int) -> list[int]:
    """Steps a run saves a checkpoint at (bt_bench.runs.train), without the data-dependent dense band."""
    return [s for s in range(steps + 1)
            if s in (0, window, steps) or s % (every_in_window if s <= window else every_after) == 0]


def paper_setting() -> dict[str, Any]:
    """The published run's sizes, from the repo's ``paper`` profile and the fixture defaults."""
    from bt_bench.fixture.derive import FixtureConfig
    from bt_bench.runs.config import get_profile

    cfg = get_profile("paper").run_config(model_path="Qwen2.5-1.5B-Instruct")
    return {"steps": cfg.steps, "window": cfg.window, "prompts_per_step": cfg.prompts_per_step,
            "group_size": cfg.generations, "completion_tokens": cfg.max_completion_length,
            "sketch": cfg.sketch,
            "k": cfg.sketch_spec().k, "checkpoints_saved": len(scheduled_checkpoints(
                cfg.steps, cfg.window, cfg.ckpt_window_every, cfg.ckpt_every)),
            "tracin_checkpoints": FixtureConfig().tracin_checkpoints}


def scale_table(*, steps: int, prompts_per_step: int, group_size: int, k: int, checkpoints_saved: int,
                tracin_checkpoints: int, floor_ratio: float, completion_tokens: int = 64,
                prompt_tokens: int = 64, model: dict[str, int] | None = None,
                peak_tflops: float = GPU_BF16_DENSE_TFLOPS, mfu: float = 0.4, **_: Any) -> dict[str, Any]:
    """Store size and projected sketching time of a run (every figure and the arithmetic behind it).

    Sketching one checkpoint = one sketch of every training rollout; the fixture sketches
    ``tracin_checkpoints`` of them twice (plain and AdamW-preconditioned: bt_bench.fixture.derive), the run
    itself one in-run sketch per rollout. Time: forward+backward FLOPs of a rollout 6 N T + 12 L d T^2 (T
    tokens; the second term is attention) at ``peak_tflops x mfu``, times the measured ours/floor ratio."""
    m = dict(model or QWEN25_15B)
    n = qwen2_params(**m)
    rollouts, per = steps * prompts_per_step * group_size, 4 * k
    tokens = prompt_tokens + completion_tokens
    flops = 6 * n * tokens + 12 * m["layers"] * m["hidden"] * tokens**2
    rate = peak_tflops * 1e12 * mfu
    floor_s = flops / rate
    pass_s = rollouts * floor_s * floor_ratio
    passes = {"tracin": 2 * tracin_checkpoints, "every_saved": checkpoints_saved}
    store = {"in_run": rollouts * per, **{key: rollouts * p * per for key, p in passes.items()}}
    ours_ms = floor_s * floor_ratio * 1e3
    mb = {key: v / 1e6 for key, v in store.items()}
    arithmetic = [
        f"N = {n:,} parameters (Qwen2.5-1.5B-Instruct shape, tied embeddings)",
        f"rollouts = {steps} steps x {prompts_per_step} prompts x {group_size} group = {rollouts:,}",
        f"bytes per sketch = k x 4 = {k} x 4 = {per:,} B (float32)",
        f"in-run sketches = {rollouts:,} x {per:,} B = {mb['in_run']:.1f} MB",
        (f"TracIn checkpoint sketches = {rollouts:,} x {tracin_checkpoints} checkpoints x 2 (plain, AdamW)"
         f" x {per:,} B = {mb['tracin']:.1f} MB; with in-run {mb['tracin'] + mb['in_run']:.1f} MB"),
        (f"every saved checkpoint = {rollouts:,} x {checkpoints_saved} x {per:,} B = "
         f"{mb['every_saved']:.1f} MB; with in-run {mb['every_saved'] + mb['in_run']:.1f} MB"),
        (f"FLOPs per rollout (fwd+bwd) = 6 N T + 12 L d T^2 = 6 x {n:.4g} x {tokens} + 12 x {m['layers']}"
         f" x {m['hidden']} x {tokens}^2 = {flops:.4g} (T = {prompt_tokens} prompt + {completion_tokens})"),
        f"GPU rate = {peak_tflops:g} TFLOP/s bf16 dense peak x {mfu:.0%} MFU = {rate / 1e12:g} TFLOP/s",
        (f"floor per rollout = {flops:.4g} / {rate:.4g} = {floor_s * 1e3:.3g} ms; ours = x {floor_ratio:.3f}"
         f" = {ours_ms:.3g} ms"),
        f"one checkpoint (every rollout) = {rollouts:,} x {ours_ms:.3g} ms = {pass_s:.4g} s",
        (f"TracIn sketches = {passes['tracin']} passes x {pass_s:.4g} s = {passes['tracin'] * pass_s:.4g} s;"
         f" every saved checkpoint = {checkpoints_saved} x {pass_s:.4g} s = "
         f"{checkpoints_saved * pass_s:.4g} s"),
    ]
    return {"n_params": n, "model": m, "rollouts": rollouts, "bytes_per_sketch": per, "store_bytes": store,
            "tokens_per_rollout": tokens, "flops_per_rollout": flops, "gpu_flops_per_s": rate, "mfu": mfu,
            "floor_ratio": floor_ratio, "floor_s_per_rollout": floor_s, "sketch_s_per_checkpoint": pass_s,
            "passes": passes, "sketch_s": {key: p * pass_s for key, p in passes.items()},
            "arithmetic": arithmetic}


def print_scale(table: dict[str, Any], source: str) -> None:
    print("scale table: the published setting (paper profile); no GPU on this machine: the time is projected "
          f"from the ours/floor ratio ({table['floor_ratio']:.3f}, {source}) and an assumed GPU throughput:")
    print("\n".join("  " + line for line in table["arithmetic"]))
