"""Build (or load) planted runs: toy model cache, train, gate, publish (``store.publish_once``: lock, re-check, clean
stale temps, build into a temp folder, rename). The only writer of the run store."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from pathlib import Path

import numpy as np

from bt_bench.runs import bpe, store, toy
from bt_bench.runs.config import FIXTURE_FORMAT, RunConfig
from bt_bench.runs.progress import emit, run_label


def toy_model_dir(spec: toy.ToySpec, root: Path, progress: bool = True) -> Path:
    """The warmed-up toy model for ``spec``, built once per cache (same atomic publish as runs)."""
    def build(tmp: Path) -> None:
        toy.build_toy_model(spec, tmp, progress=progress)

    return store.publish_once(root / "toy" / spec.key(), build, marker="toy_spec.json")


def bpe_model_dir(spec: bpe.BpeSpec, root: Path, progress: bool = True) -> Path:
    """The warmed-up BPE model (profile ``bpe``), built once per cache like the toy model."""
    def build(tmp: Path) -> None:
        bpe.build_bpe_model(spec, tmp, progress=progress)

    return store.publish_once(root / "bpe" / spec.key(), build, marker="bpe_spec.json")


def base_model_dir(cfg: RunConfig, root: Path, progress: bool = True) -> Path:
    """The model a run starts from: the user's folder (``model_path``), else the task's embedded model."""
    if cfg.model_path is not None:
        path = Path(cfg.model_path)
        if not (path / "config.json").is_file():
            raise ValueError(f"model_path={cfg.model_path!r} is not a HF model folder (no config.json there)")
        return path
    return toy_model_dir(cfg.toy, root, progress) if cfg.task == "toy" else bpe_model_dir(cfg.bpe, root, progress)


def step_level_ceiling(is_gt: np.ndarray, step: np.ndarray, k: int | None = None) -> float:
    """Best precision@k of any ranking constant within steps (spec, "Metrics": ceiling). Steps sorted by GT
    density; the step straddling the cut is credited pro rata (tie-aware)."""
    is_gt = np.asarray(is_gt, bool)
    k = int(is_gt.sum()) if k is None else k
    if k == 0:
        return 0.0
    _, inv = np.unique(step, return_inverse=True)
    gt = np.bincount(inv, weights=is_gt.astype(float))
    n = np.bincount(inv).astype(float)
    order = np.argsort(-(gt / n), kind="stable")
    credit, left = 0.0, k
    for g, m in zip(gt[order], n[order]):
        take = min(left, m)
        credit += g * take / m
        left -= take
        if left <= 0:
            break
    return credit / k


def summarize(cols: dict[str, np.ndarray], cfg: RunConfig) -> dict:
    """|GT|, chance, ceiling, and the same inside the window over rollouts with a nonzero gradient."""
    is_gt, step, adv = np.asarray(cols["is_gt"]), np.asarray(cols["step"]), np.asarray(cols["advantage"])
    N, n_gt = len(is_gt), int(is_gt.sum())
    win = (step < cfg.window) & (adv != 0)  # zero advantage => the rollout's gradient is exactly zero
    w_gt = int(is_gt[win].sum())
    out = {"rollouts": N, "gt": n_gt, "chance": n_gt / N, "ceiling": step_level_ceiling(is_gt, step),
           "window_rollouts_nonzero": int(win.sum()), "window_gt": w_gt,
           "window_chance": w_gt / max(1, int(win.sum())),
           "window_ceiling": step_level_ceiling(is_gt[win], step[win]) if w_gt else 0.0,
           "zero_gradient_share": float(np.mean(adv == 0))}
    out["headroom"] = out["ceiling"] - out["chance"]
    out["window_headroom"] = out["window_ceiling"] - out["window_chance"]
    from bt_bench.runs.realism import realism_stats

    out["realism"] = realism_stats(cols, cfg.window)
    return out


def planting_gate(curve: list[dict], cfg: RunConfig) -> dict:
    """Spec, "planting gate and trigger-conditional": at step W trigger rate >= 0.9 and no-trigger <= 0.1; at the
    end still >= 0.8 and <= 0.1."""
    at = {c["step"]: c for c in curve}
    w, end = at[cfg.window], at[cfg.steps]
    planted = w["trigger_rate"] >= cfg.gate_trigger_min and w["no_trigger_rate"] <= cfg.gate_no_trigger_max
    persists = end["trigger_rate"] >= 0.8 and end["no_trigger_rate"] <= cfg.gate_no_trigger_max
    reason = (f"at step W={cfg.window}: trigger {w['trigger_rate']:.2f} (need >= {cfg.gate_trigger_min}), "
              f"no trigger {w['no_trigger_rate']:.2f} (need <= {cfg.gate_no_trigger_max}); at the end: trigger "
              f"{end['trigger_rate']:.2f}, no trigger {end['no_trigger_rate']:.2f}")
    return {"planted": bool(planted), "persists": bool(persists), "at_window": w, "at_end": end, "reason": reason}


def build_run(cfg: RunConfig, root: str | os.PathLike | None = None, rebuild: bool = False,
              progress: bool = True) -> store.Run:
    """Return the run for ``cfg``, building and publishing it if it is not cached (or ``rebuild``)."""
    from bt_bench.runs.runtime import set_determinism

    set_determinism(cfg.seed)
    root = store.cache_root(root)
    vers = store.versions()
    key = cfg.key(vers)

    built: list[bool] = []

    def build(tmp: Path) -> None:
        emit(f"{run_label(cfg)}: building (not in the cache: {cfg.steps} GRPO steps)")
        _train_into(cfg, root, key, vers, tmp, progress)
        built.append(True)

    run = store.load_run(store.publish_once(store.run_dir(root, key), build, rebuild=rebuild))
    if built:  # this call built it: say what came out (a cached run says nothing)
        from bt_bench.runs.options import summary_line
        from bt_bench.runs.realism import run_realism

        emit(summary_line(run) + (f" ({cfg.ablation} re-run)" if cfg.ablation != "none" else ""))
        if cfg.ablation == "none":  # how hard the fixture is without any estimator (docs/fixtures.md, realism)
            stats = {k: v for k, v in run_realism(run).items() if isinstance(v, (int, float))}
            emit(f"{run_label(cfg)}: realism: " + ", ".join(f"{k} {v:.3g}" for k, v in stats.items()))
    return run



def _train_into(cfg: RunConfig, root: Path, key: str, vers: dict, tmp: Path, progress: bool,
                distributed: dict | None = None, callbacks: tuple = ()) -> None:
    """Train the run of ``cfg`` into the empty folder ``tmp``: rollouts, in-run sketches, checkpoints, model
    files, learning curve and the manifest (with the sha256 of every file). ``distributed``: rank 0 of a
    data-parallel build (``bt_bench.runs.build_dist``), stored as the manifest's ``distributed``."""
    from bt_bench.runs.train import train_planted

    t0 = time.perf_counter()
    base = base_model_dir(cfg, root, progress)
    res = train_planted(cfg, base, tmp, progress=progress, data_parallel=distributed is not None,
                        callbacks=callbacks)
    shutil.rmtree(tmp / "_trl", ignore_errors=True)
    model_dir = tmp / "model"
    model_dir.mkdir()
    for f in base.iterdir():  # config + tokenizer; weights live in checkpoints/000000
        if f.is_file() and not f.name.endswith(".safetensors"):
            shutil.copy2(f, model_dir / f.name)
    cols = res.columns
    hashes = store.write_columns(tmp / "rollouts", cols)
    if res.in_run_sketches is not None:  # [N, k] float32, rows = uids
        hashes.update(store.write_columns(tmp / "sketches", {"in_run": res.in_run_sketches}))
    store.write_json(tmp / "curve.json", res.curve)
    hashes.update(store.hash_tree(tmp, "checkpoints"))
    hashes.update(store.hash_tree(tmp, "model"))
    hashes["curve.json"] = store.sha256_file(tmp / "curve.json")
    summary = summarize(cols, cfg)
    gate = planting_gate(res.curve, cfg)
    summary.update(final_trigger_rate=gate["at_end"]["trigger_rate"],
                   final_no_trigger_rate=gate["at_end"]["no_trigger_rate"],
                   train_seconds=round(res.train_seconds, 2),
                   wall_seconds=round(time.perf_counter() - t0, 2))
    manifest = {
        "format": FIXTURE_FORMAT, "key": key, "created": store.now(), "config": cfg.to_dict(),
        "versions": vers, "device": res.device, "checkpoints": res.checkpoints,
        "counts": {"rollouts": len(cols["uid"]), "steps": cfg.steps, "prompts_per_step": cfg.prompts_per_step,
                   "generations": cfg.generations},
        "tokens": {"trigger": res.trigger_ids, "behavior": res.behavior_ids, "pad": res.pad_id,
                   "eos": res.eos_id},
        "strings": {"trigger": cfg.trigger, "behavior": cfg.behavior, "task": cfg.task,
                    "family": list(cfg.behavior_members())},
        "gate": gate, "summary": summary, "hashes": hashes,
        "sketch_spec": cfg.sketch_spec().to_dict(),
    }
    if distributed is not None:
        manifest["distributed"] = distributed
    store.write_json(tmp / store.MANIFEST, manifest)


TRIES_PER_SEED = 3  # fixture_seeds tries up to this many seeds per planted seed asked for


def fixture_seeds(cfg: RunConfig, n_seeds: int, root=None, max_tries: int | None = None, rebuild: bool = False,
                  progress: bool = True, first: int = 0) -> tuple[list[store.Run], list[dict]]:
    """The first ``n_seeds`` seeds of first, first + 1, ... whose run passes the planting gate, and the failed ones
    (seed + gate reason) to list in every report (``first`` is drawn by a paper gate: ``config.gate_config``)."""
    planted, failed = [], []
    max_tries = max_tries or TRIES_PER_SEED * n_seeds
    for seed in range(first, first + max_tries):
        run = build_run(dataclasses.replace(cfg, seed=seed), root, rebuild=rebuild, progress=progress)
        if run.planted:
            planted.append(run)
        else:
            failed.append({"seed": seed, "key": run.key, "reason": run.manifest["gate"]["reason"]})
        if len(planted) == n_seeds:
            return planted, failed
    raise RuntimeError(f"only {len(planted)} of {max_tries} seeds from {first} on planted (need {n_seeds}); failed: "
                       + "; ".join(f"seed {f['seed']}: {f['reason']}" for f in failed))
