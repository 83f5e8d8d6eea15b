"""``python -m bt_bench.bench.counterfactual {curve,lds} [options]``: what the counterfactual check does not pay for in
every checklist run, on a profile's cached fixtures (built and derived by ``pytest checks --bt-profile P`` first).

- ``curve``: per estimator and seed, the drop of the behavior measure at W after removing its top |GT|/4, |GT|/2
  and |GT| in-window rollouts (``bt_bench.runs.counterfactual``; every replay cached by its removed set), next to
  removing GT itself and the random control's mean and maximum.
- ``lds``: the linear datamodeling score (Park et al. 2023, TRAK) of check 10 for any estimators, with its CI width
  (what S is chosen by) and every control's LDS: the fixture's LDS set (``bt_bench.runs.counterfactual.lds_set``: S
  random half-subsets of the in-window rollouts, each replayed once) is built when missing.
- ``lds-part --shard I/N``: replay part I of N of every seed's LDS set and stop (N such processes, on machines that
  share the cache folder, split the replays; a later ``lds`` or ``pytest checks --bt-lds`` only reads them).

One JSON line per (estimator, seed); ``--out`` also writes them as one JSON file. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from bt_bench.runs.config import DEFAULT_PROFILE


def _suite(profile: str, seeds: int, draws: int):
    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.suite import Suite
    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import fixture_seeds
    from bt_bench.runs.config import get_profile, make_config

    runs, failed = fixture_seeds(make_config(profile), seeds, progress=False)
    th = Thresholds()
    fcfg = fixture_config(profile, draws, th)
    return Suite(fixtures=[load_fixture(r, fcfg) for r in runs], failed_seeds=failed, thresholds=th,
                 norm_variant=get_profile(profile).norm_variant)


def curve(suite, estimators: list[str], fractions=(0.25, 0.5, 1.0)) -> list[dict]:
    from bt_bench.runs import counterfactual as cf

    rows = []
    for i, fx in enumerate(suite.fixtures):
        b = cf.baseline(fx.run)
        full = b["full"]["trigger_logp"]
        rnd = [full - x["measure"]["trigger_logp"] for x in b["random"]]
        gt_drop = full - b["no_gt"]["trigger_logp"]
        for est in estimators:
            s = suite.training_scores(est, i)
            pts = {}
            for f in fractions:
                k = max(1, int(round(f * b["gt"])))
                m = cf.removal(fx.run, cf.top_in_window(fx.run, s, k=k))
                pts[f"{f:g}"] = round(full - m["measure"]["trigger_logp"], 5)
            rows.append({"estimator": est, "seed": fx.seed, "gt": b["gt"], "drop": pts, "gt_drop": round(gt_drop, 5),
                         "fraction_of_gt": {k: round(v / gt_drop, 4) for k, v in pts.items()},
                         "random_mean": round(float(np.mean(rnd)), 5), "random_max": round(float(np.max(rnd)), 5)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def lds(suite, estimators: list[str], S: int) -> list[dict]:
    """Every estimator's LDS on every seed from the fixture's LDS set (``bt_bench.runs.counterfactual.lds_set``,
    built here when missing), with check 10's figures (``bt_bench.checklist.lds``: against every control)."""
    from bt_bench.checklist.lds import CONTROLS, lds_figures, subset_sums, support_problem
    from scipy.stats import spearmanr
    from bt_bench.runs import counterfactual as cf

    rows = []
    for i, fx in enumerate(suite.fixtures):
        L = cf.lds_set(fx.run, S)
        kept, y = L["kept"], L["trigger_logp"]
        controls = {c: subset_sums(suite.training_scores(c, i), kept) for c in CONTROLS}
        why = support_problem(y)
        for est in estimators:
            m, _, oks = ({}, [], [False]) if why else lds_figures(subset_sums(suite.training_scores(est, i), kept),
                                                                  controls, y, thresholds=suite.thresholds)
            d = {k: x.to_dict() for k, x in m.items()}
            lds, best = d.get("lds", {}), d.get("lds_minus_best", {})
            rows.append({"estimator": est, "seed": fx.seed, "S": S, "outcome": why or ("pass" if all(oks) else "fail"),
                         "lds": lds.get("value"), "ci_low": lds.get("ci_low"), "ci_high": lds.get("ci_high"),
                         "ci_width": None if why else lds["ci_high"] - lds["ci_low"],
                         "minus_best_ci_low": best.get("ci_low"),
                         "control_lds": {c: float(spearmanr(v, y).statistic) for c, v in controls.items()},
                         "measure_sd": float(np.std(y)), "replay_seconds": L["replay_seconds"]})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    import logging

    import torch

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    p = argparse.ArgumentParser(prog="python -m bt_bench.bench.counterfactual", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("curve", "lds", "lds-part"))
    p.add_argument("--profile", default=DEFAULT_PROFILE)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--draws", type=int, default=3, help="the fixture's draws (its derived data's key)")
    p.add_argument("--estimator", action="append", default=[], help="repeat for several (curve, lds)")
    p.add_argument("--subsets", type=int, default=None,
                   help="lds, lds-part: S, the half-subsets replayed per seed (default: the profile's lds_subsets)")
    p.add_argument("--shard", default="0/1", help="lds-part: replay part I of N of every seed's set (I/N, from 0): "
                                                  "N processes, anywhere the cache is shared, split the replays")
    p.add_argument("--out", help="also write every row to this JSON file")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    from bt_bench.runs.config import get_profile

    S = a.subsets or get_profile(a.profile).lds_subsets
    if a.what != "curve" and not S:
        p.error(f"--subsets: profile {a.profile} declares no LDS set size; give one")
    if a.what != "lds-part" and not a.estimator:
        p.error("--estimator: give at least one")
    if a.what == "lds-part":
        from bt_bench.runs import counterfactual as cf
        from bt_bench.runs.build import fixture_seeds
        from bt_bench.runs.config import make_config

        try:
            i, n = (int(x) for x in a.shard.split("/"))
        except ValueError:
            p.error(f"--shard: I/N with integers, got {a.shard!r}")
        runs, _ = fixture_seeds(make_config(a.profile), a.seeds, progress=False)
        for run in runs:
            print(json.dumps({"seed": run.config.seed, "S": S, "shard": f"{i}/{n}",
                              "replayed": cf.lds_part(run, S, i, n)}), flush=True)
        return 0
    suite = _suite(a.profile, a.seeds, a.draws)
    rows = curve(suite, a.estimator) if a.what == "curve" else lds(suite, a.estimator, S)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"what": a.what, "profile": a.profile, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
