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
writes every number as JSON, rewritten after each rollout (a stopped run leaves its partial table; run again with
the same ``--out`` and it goes on from the rollouts already measured). The candidates alternate GT / non-GT, so a
partial table holds both halves. A candidate's replays start from the base replay's state (weights and AdamW
moments) after the steps before its own: those steps do not depend on its weight, and the restart is checked bit
for bit against the full replay once.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--until", type=int, default=None, help="the target's checkpoint c (default W)")
    ap.add_argument("--uids", type=int, nargs="*", default=None,
                    help="these training rollouts instead of the drawn ones (e.g. the worst ones again at a smaller eps)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)

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
    half = [rng.choice(pool[gt[pool]], a.n // 2, replace=False),
            rng.choice(pool[~gt[pool]], a.n - a.n // 2, replace=False)]
    cand = np.array([x for pair in zip(half[0], half[1]) for x in pair] + list(half[1][len(half[0]):]), np.int64)
    if a.uids:
        cand = np.asarray(a.uids, np.int64)
    rows = np.flatnonzero((step >= until) & (step < until + 10) & beh)[:32]
    t = {k: np.asarray(c[k])[rows] for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
    definition = TargetDefinition("sequence", **t, token_mask=t["completion_mask"], temperature=cfg.temperature)

    def loss_of(model) -> float:
        return sequence_loss64(model, definition)

    done: dict = {}
    if a.out and os.path.exists(a.out):
        with open(a.out) as f:
            prev = json.load(f)
        if prev.get("run") == run.key and prev.get("eps") == a.eps and prev.get("until") == until:
            done = prev
    # the metagradient (reverse mode)
    if "metagradient_all" in done:
        dw, mg_seconds = np.asarray(done["metagradient_all"]), done["metagradient_seconds"]
    else:
        traj = run_trajectory(run)
        t0 = time.perf_counter()
        dw = metagradient_of(traj, until, lambda m: target_loss(m, definition))
        mg_seconds = time.perf_counter() - t0
    print(f"metagradient: {mg_seconds:.1f} s", flush=True)

    # finite differences with trl's step, each candidate's replays restarted after the steps before its own
    rep = Replayer(run)
    n_all = len(c["uid"])
    want = {int(step[u]) for u in cand}
    snaps: dict[int, tuple] = {}

    def keep(s: int, model) -> None:
        if s in want:
            opt = rep.trainer.optimizer
            snaps[s] = ({k: p.detach().clone() for k, p in model.named_parameters()},
                        {p: {k: v.clone() for k, v in opt.state[p].items()} for p in opt.state})

    base = rep.replay(until=until, on_step=keep)
    replay_seconds, base_loss = base.seconds, loss_of(base.model)
    base_params = {k: p.detach().clone() for k, p in base.model.named_parameters()}
    first = min(s for s in want if s > 0)
    again = replay_from(rep, snaps, first, until, None)
    same = all(torch.equal(p, base_params[k]) for k, p in again.named_parameters())
    print(f"base replay {replay_seconds:.1f} s, loss {base_loss:.10f}; restart after {first} steps bit-equal: {same}",
          flush=True)
    if not same:
        raise SystemExit("the restarted replay differs from the full one: use full replays")

    fd, loo = dict(zip(done.get("uids", []), done.get("fd", []))), dict(zip(done.get("uids", []), done.get("loo", [])))
    t1 = time.perf_counter() - done.get("fd_seconds", 0.0)
    res: dict = {}
    for j, u in enumerate(cand):
        u = int(u)
        if u not in fd:
            vals = []
            for wv in (1 + a.eps, 1 - a.eps, 0.0):
                w = np.ones(n_all, np.float32)
                w[u] = wv
                vals.append(loss_of(replay_from(rep, snaps, int(step[u]), until, w)))
            fd[u] = (vals[0] - vals[1]) / (2 * a.eps)
            loo[u] = base_loss - vals[2]
        print(f"{j + 1}/{len(cand)} uid {u} step {step[u]} gt {int(gt[u])}: metagradient {dw[u]:+.4e} "
              f"fd {fd[u]:+.4e} loo {loo[u]:+.4e}", flush=True)
        res = summarize(a, run, cfg, until, rows, dw, cand[:j + 1], gt, fd, loo, mg_seconds, replay_seconds,
                        time.perf_counter() - t1, base_loss)
        if a.out:
            with open(a.out + ".tmp", "w") as f:
                json.dump(res, f, indent=1)
            os.replace(a.out + ".tmp", a.out)
    print_table(res)


def replay_from(rep, snaps: dict, s0: int, until: int, weight):
    """``rep.replay(until, weight).model``, its steps 0..s0-1 taken from ``snaps[s0]`` (the weight-1 replay's
    weights and AdamW state after s0 steps): trl's step for s0..until-1, as ``Replayer.replay`` takes it."""
    import torch

    from bt_bench.runs.replay import _batch
    from bt_bench.runs.runtime import set_determinism

    if s0 == 0:
        return rep.replay(until=until, weight=weight).model
    cfg, tr, model = rep.cfg, rep.trainer, rep.model
    params, state = snaps[s0]
    set_determinism(cfg.seed)
    with torch.no_grad():
        for k, p in model.named_parameters():
            p.copy_(params[k])
    model.train()
    tr.optimizer = None
    tr.create_optimizer()
    opt = tr.optimizer
    for p, st in state.items():
        opt.state[p] = {k: v.clone() for k, v in st.items()}
    ratio, W = cfg.lr_after_window / cfg.lr, cfg.window
    base_lrs = [g["lr"] for g in opt.param_groups]
    for s in range(s0, until):
        for g, lr in zip(opt.param_groups, base_lrs):  # as LambdaLR sets it: base lr times the step's factor
            g["lr"] = lr * (1.0 if s < W else ratio)
        loss = tr.compute_loss(model, _batch(rep.run, rep.rows[s], weight, model.device))
        tr.accelerator.backward(loss)
        if cfg.max_grad_norm is not None and cfg.max_grad_norm > 0:
            tr.accelerator.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
    model.eval()
    return model


def summarize(a, run, cfg, until, rows, dw, cand, gt, fd, loo, mg_seconds, replay_seconds, fd_seconds,
              base_loss) -> dict:
    from scipy.stats import pearsonr, spearmanr

    mg = dw[cand]
    f, lo = np.array([fd[int(u)] for u in cand]), np.array([loo[int(u)] for u in cand])
    g = gt[cand]

    def stats(ref: np.ndarray) -> dict:
        if len(ref) < 3:
            return {}
        return {"spearman": float(spearmanr(mg, ref)[0]), "pearson": float(pearsonr(mg, ref)[0]),
                "relative_error": float(np.linalg.norm(mg - ref) / np.linalg.norm(ref)),
                "median_rel_error": float(np.median(np.abs(mg - ref) / np.maximum(np.abs(ref), 1e-30))),
                "sign_agreement": float(np.mean(np.sign(mg) == np.sign(ref)))}

    def sp(x, y) -> float | None:
        return float(spearmanr(x, y)[0]) if len(x) >= 3 else None

    return {"profile": a.profile, "seed": a.seed, "run": run.key, "until": until, "eps": a.eps, "n": len(cand),
            "n_planned": a.n, "n_gt": int(g.sum()), "target_rows": len(rows), "base_loss": base_loss,
            "metagradient_seconds": mg_seconds, "replay_seconds": replay_seconds, "fd_seconds": fd_seconds,
            "train_seconds": run.manifest["summary"].get("train_seconds"), "steps": cfg.steps, "n_rollouts": len(dw),
            "vs_fd": stats(f), "vs_loo": stats(lo), "fd_vs_loo": {"spearman": sp(f, lo)},
            "vs_fd_gt": {"spearman": sp(mg[g], f[g])}, "vs_fd_not_gt": {"spearman": sp(mg[~g], f[~g])},
            "uids": [int(u) for u in cand], "metagradient": mg.tolist(), "fd": f.tolist(), "loo": lo.tolist(),
            "metagradient_all": dw.tolist()}


def print_table(res: dict) -> None:
    print(f"\n{res['profile']} seed {res['seed']}, target at c = {res['until']}, {res['n']} in-window rollouts "
          f"({res['n_gt']} GT), eps {res['eps']}")
    print("| reference | Spearman | Pearson | relative error | median per-rollout rel. error | sign agreement |")
    print("|---|---|---|---|---|---|")
    for name, key in ((f"central FD (w = 1 +/- {res['eps']})", "vs_fd"),
                      ("leave-one-out (L(1) - L(w_i = 0))", "vs_loo")):
        s = res[key]
        print(f"| {name} | {s['spearman']:.4f} | {s['pearson']:.4f} | {s['relative_error']:.4f} | "
              f"{s['median_rel_error']:.4f} | {s['sign_agreement']:.3f} |")
    def f4(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    print(f"Spearman vs FD within GT {f4(res['vs_fd_gt']['spearman'])}, within non-GT "
          f"{f4(res['vs_fd_not_gt']['spearman'])}; FD vs leave-one-out {f4(res['fd_vs_loo']['spearman'])}")
    print(f"seconds: metagradient (all {res['n_rollouts']} rollouts' derivatives, {res['until']} steps) "
          f"{res['metagradient_seconds']:.1f}; one replay {res['replay_seconds']:.1f} (ratio "
          f"{res['metagradient_seconds'] / res['replay_seconds']:.1f}); training run {res['train_seconds']} s for "
          f"{res['steps']} steps")


if __name__ == "__main__":
    main()
