"""Validate the metagradient estimator against finite-difference replays (trl's own step: bt_bench.runs.replay).

    BT_BENCH_CACHE=... python examples/validate_metagradient.py --profile tiny --seed 0 --n 64 --eps 0.1

For ``n`` in-window training rollouts of one run (half GT, half not, drawn with a fixed seed from the steps before
the target's checkpoint c = W), it compares dL/dw_i (estimators/metagradient.py, reverse mode through every step
before c) with (L(w_i = 1 + eps) - L(w_i = 1 - eps)) / (2 eps) and with the leave-one-out difference L(1) - L(w_i = 0)
(a first-order estimate of dL/dw_i), each from a ``Replayer`` replay of the run up to c. The target L is a
sequence-likelihood target like the fixture's ``in_context`` one: the mean -log p of the completions of 32 rollouts
that hold the behavior, generated in the ten steps from c on (so none of them was trained on before c), evaluated in
float64 at the replayed weights (the replays themselves are float32, as the run). Labels are read here (harness side) only to pick the rollouts and the target's rows.
Prints a table (Spearman, Pearson, relative error) and the seconds of the metagradient and of one replay; ``--out``
writes every number as JSON.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--until", type=int, default=None, help="the target's checkpoint c (default W)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    from scipy.stats import pearsonr, spearmanr

    from bt_bench.estimator.handover import run_trajectory
    from bt_bench.estimator.objective import TargetDefinition, target_loss
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config
    from bt_bench.runs.replay import Replayer
    from estimators.metagradient import metagradient_of, sequence_loss64

    run = build_run(make_config(a.profile, seed=a.seed), progress=False)
    cfg, c = run.config, run.columns
    until = cfg.window if a.until is None else a.until
    step, gt, beh = (np.asarray(c[k]) for k in ("step", "is_gt", "has_behavior"))
    rng = np.random.default_rng(a.seed)
    pool = np.flatnonzero(step < until)
    cand = np.concatenate([rng.choice(pool[gt[pool]], a.n // 2, replace=False),
                           rng.choice(pool[~gt[pool]], a.n - a.n // 2, replace=False)])
    rows = np.flatnonzero((step >= until) & (step < until + 10) & beh)[:32]
    t = {k: np.asarray(c[k])[rows] for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
    definition = TargetDefinition("sequence", **t, token_mask=t["completion_mask"], temperature=cfg.temperature)

    def loss_of(model) -> float:
        return sequence_loss64(model, definition)

    # the metagradient (reverse mode)
    traj = run_trajectory(run)
    t0 = time.perf_counter()
    dw = metagradient_of(traj, until, lambda m: target_loss(m, definition))
    mg_seconds = time.perf_counter() - t0

    # finite differences with trl's step
    rep = Replayer(run)
    n_all = len(c["uid"])
    base = rep.replay(until=until)
    replay_seconds, base_loss = base.seconds, loss_of(base.model)
    fd, loo = np.zeros(len(cand)), np.zeros(len(cand))
    t1 = time.perf_counter()
    for j, u in enumerate(cand):
        vals = []
        for wv in (1 + a.eps, 1 - a.eps, 0.0):
            w = np.ones(n_all, np.float32)
            w[u] = wv
            vals.append(loss_of(rep.replay(until=until, weight=w).model))
        fd[j] = (vals[0] - vals[1]) / (2 * a.eps)
        loo[j] = base_loss - vals[2]
        print(f"{j + 1}/{len(cand)} uid {u} step {step[u]} gt {int(gt[u])}: metagradient {dw[u]:+.4e} "
              f"fd {fd[j]:+.4e} loo {loo[j]:+.4e}", flush=True)
    fd_seconds = time.perf_counter() - t1
    mg = dw[cand]

    def stats(ref: np.ndarray) -> dict:
        return {"spearman": float(spearmanr(mg, ref)[0]), "pearson": float(pearsonr(mg, ref)[0]),
                "relative_error": float(np.linalg.norm(mg - ref) / np.linalg.norm(ref)),
                "median_rel_error": float(np.median(np.abs(mg - ref) / np.maximum(np.abs(ref), 1e-30))),
                "sign_agreement": float(np.mean(np.sign(mg) == np.sign(ref)))}

    res = {"profile": a.profile, "seed": a.seed, "run": run.key, "until": until, "eps": a.eps, "n": len(cand),
           "target_rows": len(rows), "metagradient_seconds": mg_seconds, "replay_seconds": replay_seconds,
           "fd_seconds": fd_seconds, "train_seconds": run.manifest["summary"].get("train_seconds"),
           "vs_fd": stats(fd), "vs_loo": stats(loo),
           "vs_fd_gt": {"spearman": float(spearmanr(mg[gt[cand]], fd[gt[cand]])[0])},
           "vs_fd_not_gt": {"spearman": float(spearmanr(mg[~gt[cand]], fd[~gt[cand]])[0])},
           "uids": cand.tolist(), "metagradient": mg.tolist(), "fd": fd.tolist(), "loo": loo.tolist()}
    print(f"\n{a.profile} seed {a.seed}, target at c = {until}, {len(cand)} in-window rollouts "
          f"({int(gt[cand].sum())} GT), eps {a.eps}")
    print("| reference | Spearman | Pearson | relative error | median per-rollout rel. error | sign agreement |")
    print("|---|---|---|---|---|---|")
    for name, key in ((f"central FD (w = 1 +/- {a.eps})", "vs_fd"), ("leave-one-out (L(1) - L(w_i = 0))", "vs_loo")):
        s = res[key]
        print(f"| {name} | {s['spearman']:.4f} | {s['pearson']:.4f} | {s['relative_error']:.4f} | "
              f"{s['median_rel_error']:.4f} | {s['sign_agreement']:.3f} |")
    print(f"Spearman vs FD within GT {res['vs_fd_gt']['spearman']:.4f}, within non-GT "
          f"{res['vs_fd_not_gt']['spearman']:.4f}")
    print(f"seconds: metagradient (all {traj.n} rollouts' derivatives, {until} steps) {mg_seconds:.1f}; one replay "
          f"{replay_seconds:.1f} (ratio {mg_seconds / replay_seconds:.1f}); training run "
          f"{res['train_seconds']} s for {cfg.steps} steps")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
