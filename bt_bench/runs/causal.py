"""Fixture self-check "planted cause is causal" (docs/checklist.md, "Fixture self-checks").

GT is the set of rollouts that were paid the bonus. That they *taught* the behavior is a claim, not a given: the
behavior might spread from its base rate through the task reward, or any large enough change to the batch might
move it. Two re-runs of the fixture's first seed test the claim, each identical to the run except for one thing:
- ``no_bonus``: the bonus is never paid (no GT exists). The trigger behavior rate at step W must stay near its
  base rate (the rate at step 0): nothing else in the run plants it;
- ``drop_random``: as many rollouts as the run had GT inside the window are dropped at random among those NOT paid
  (advantage 0, so their gradient is exactly 0). The behavior must still be learned (the planting gate's own
  threshold at W): removing that many *other* rollouts does not stop it, so it is GT, not the count, that matters.
Both re-runs stop at W, where the planting gate judges planting, and are cached like any run (their config, with
``ablation`` set, is their key).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from bt_bench.runs.config import RunConfig

BASE_MARGIN = 0.10  # no_bonus: trigger rate at W may exceed the base rate by at most this much


def ablation_configs(cfg: RunConfig, is_gt: np.ndarray, step: np.ndarray) -> dict[str, RunConfig]:
    """The two re-run configs for the run of ``cfg`` (``is_gt``/``step``: its rollout columns)."""
    win = np.asarray(step) < cfg.window
    gt = int(np.asarray(is_gt)[win].sum())
    unpaid = int((~np.asarray(is_gt, bool) & win).sum())
    if gt == 0 or unpaid == 0:
        raise ValueError(f"seed {cfg.seed}: {gt} GT and {unpaid} unpaid rollouts inside the window; the causal "
                         "self-check needs both")
    base = dataclasses.replace(cfg, steps=cfg.window, capture_in_run=False)
    return {"no_bonus": dataclasses.replace(base, ablation="no_bonus"),
            "drop_random": dataclasses.replace(base, ablation="drop_random",
                                               drop_share=round(min(1.0, gt / unpaid), 6))}


def verdict(base_rate: float, no_bonus_rate: float, drop_rate: float, gate_min: float,
            margin: float = BASE_MARGIN) -> tuple[bool, str]:
    """PASS when the no-bonus re-run ends within ``margin`` of the base rate and the random-drop re-run still
    reaches the planting gate's threshold; the reason names the failing half."""
    bad = []
    if no_bonus_rate > base_rate + margin:
        bad.append(f"without the bonus the trigger rate at W is {no_bonus_rate:.2f} > base {base_rate:.2f} + "
                   f"{margin}: something other than GT plants the behavior")
    if drop_rate < gate_min:
        bad.append(f"dropping as many random unpaid rollouts as GT leaves a trigger rate of {drop_rate:.2f} < "
                   f"{gate_min}: removing any rollouts that many stops planting, GT is not singled out")
    return not bad, "; ".join(bad) or (f"no bonus {no_bonus_rate:.2f} (base {base_rate:.2f}), random drop "
                                       f"{drop_rate:.2f} (>= {gate_min})")


def find_reruns(run, runs) -> dict:
    """{name: the run among ``runs`` whose config is that re-run's} of ``run`` (matched by config, not by key: a key
    also hashes the package versions, which differ on the machine that reads a pack). Missing ones are left out."""
    want = {n: c.to_dict() for n, c in ablation_configs(run.config, run.columns["is_gt"], run.columns["step"]).items()}
    return {n: r for r in runs for n, d in want.items() if r.config.to_dict() == d}


def rerun_keys(run, root=None) -> list[str]:
    """Keys of the cached re-runs of ``run`` (``bt-bench pack`` ships them with it, so ``--bt-fixture`` can judge
    the planted cause without training)."""
    from bt_bench.runs import store

    cands = [store.load_run(Path(r["path"]), verify_hashes=False) for r in store.list_runs(root)
             if r["seed"] == run.config.seed and r["profile"] == run.config.profile and r["key"] != run.key]
    return sorted(r.key for r in find_reruns(run, cands).values())


def causal_check(run, root=None, progress: bool = False, available=None) -> dict:
    """Build (or load) both re-runs of ``run`` and judge them; a plain dict for the report. With ``available`` (the
    runs of a pack) nothing is built: the re-runs must be among them (LookupError naming the missing one)."""
    from bt_bench.runs.build import build_run

    cfg = run.config
    base = run.curve()[0]
    out = {"seed": cfg.seed, "base_trigger_rate": base["trigger_rate"],
           "base_no_trigger_rate": base["no_trigger_rate"], "window": cfg.window}
    found = None if available is None else find_reruns(run, available)
    for name, c in ablation_configs(cfg, run.columns["is_gt"], run.columns["step"]).items():
        if found is not None and name not in found:
            raise LookupError(f"seed {cfg.seed}: the fixture pack holds no {name!r} re-run of run {run.key}; pack "
                              "it with the run (`bt-bench pack` adds cached re-runs) or run without --bt-fixture")
        r = build_run(c, root, progress=progress) if found is None else found[name]
        at_w = r.manifest["gate"]["at_window"]
        out[name] = {"key": r.key, "trigger_rate": at_w["trigger_rate"], "no_trigger_rate": at_w["no_trigger_rate"],
                     "gt": int(r.manifest["summary"]["gt"]), "drop_share": c.drop_share,
                     "train_seconds": r.manifest["summary"]["train_seconds"]}
    ok, reason = verdict(out["base_trigger_rate"], out["no_bonus"]["trigger_rate"],
                         out["drop_random"]["trigger_rate"], cfg.gate_trigger_min)
    out.update(passed=ok, reason=reason)
    return out
