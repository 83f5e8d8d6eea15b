"""``python -m bt_bench.bench.counterfactual {curve,lds} [options]``: what the counterfactual check does not pay for in
every checklist run, on a profile's cached fixtures (built and derived by ``pytest checks --bt-profile P`` first).

- ``curve``: per estimator and seed, the drop of the behavior measure at W after removing its top |GT|/4, |GT|/2
  and |GT| in-window rollouts (``bt_bench.runs.counterfactual``; every replay cached by its removed set), next to
  removing GT itself and the random control's mean and maximum.
- ``lds``: the linear datamodeling score (Park et al. 2023, TRAK): S random half-subsets of the in-window rollouts
  are each replayed once per fixture (stored under the counterfactual cache, keyed by S); an estimator's LDS on a
  seed is the Spearman correlation, over the subsets, between the behavior measure of the replay that *keeps* the
  subset and the sum of its scores over the kept rollouts, with a bootstrap CI over subsets. No replay per estimator.

One JSON line per (estimator, seed); ``--out`` also writes them as one JSON file. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


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


def lds_subsets(run, S: int, seed: int = 0) -> list[np.ndarray]:
    """The S half-subsets of the in-window rollouts each LDS replay keeps (reproducible from the run's seed)."""
    from bt_bench.runs import counterfactual as cf

    win, _, _ = cf.window_pool(run)
    rng = np.random.default_rng([int(run.config.seed), 13, int(seed)])
    return [np.sort(rng.choice(win, size=len(win) // 2, replace=False)) for _ in range(S)]


def lds_measures(run, S: int) -> dict:
    """The behavior measure of each of the S subset replays (kept: the subset; removed: the rest of the window),
    built once per fixture under ``<cache>/counterfactual/<run>/lds-S<S>/`` (``publish_once``)."""
    from bt_bench.runs import counterfactual as cf
    from bt_bench.runs.progress import Ticker
    from bt_bench.runs.store import publish_once, write_json

    def build(tmp):
        win, _, _ = cf.window_pool(run)
        ticker = Ticker(f"seed {run.config.seed}: LDS replays", S, unit="replay")
        out, t0 = [], time.perf_counter()
        for j, keep in enumerate(lds_subsets(run, S)):
            m = cf.removal(run, np.setdiff1d(win, keep))
            out.append(m["measure"]["trigger_logp"])
            ticker(j + 1)
        write_json(tmp / "lds.json", {"format": cf.FORMAT, "run": run.key, "S": S, "trigger_logp": out,
                                      "seconds": time.perf_counter() - t0})

    final = publish_once(cf.root(run) / f"lds-S{S}", build, marker="lds.json")
    return json.loads((final / "lds.json").read_text())


def lds(suite, estimators: list[str], S: int, n_resamples: int = 2000) -> list[dict]:
    from scipy.stats import spearmanr

    rows = []
    for i, fx in enumerate(suite.fixtures):
        y = np.asarray(lds_measures(fx.run, S)["trigger_logp"])
        subsets = lds_subsets(fx.run, S)
        rng = np.random.default_rng(0)
        boots = [rng.integers(0, S, S) for _ in range(n_resamples)]
        for est in estimators:
            s = np.asarray(suite.training_scores(est, i), dtype=np.float64)
            x = np.array([s[k].sum() for k in subsets])
            rho = float(spearmanr(x, y).statistic) if np.ptp(x) > 0 else float("nan")
            bs = [spearmanr(x[b], y[b]).statistic for b in boots if np.ptp(x[b]) > 0 and np.ptp(y[b]) > 0]
            bs = np.asarray([v for v in bs if np.isfinite(v)])
            lo, hi = (np.percentile(bs, [2.5, 97.5]) if len(bs) else (float("nan"), float("nan")))
            rows.append({"estimator": est, "seed": fx.seed, "S": S, "lds": round(rho, 4), "ci_low": round(float(lo), 4),
                         "ci_high": round(float(hi), 4), "measure_sd": round(float(y.std()), 5)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    import logging

    import torch

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    p = argparse.ArgumentParser(prog="python -m bt_bench.bench.counterfactual", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("curve", "lds"))
    p.add_argument("--profile", default="tiny")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--draws", type=int, default=3, help="the fixture's draws (its derived data's key)")
    p.add_argument("--estimator", action="append", required=True, help="repeat for several")
    p.add_argument("--subsets", type=int, default=50, help="lds: S, the number of half-subsets replayed per seed")
    p.add_argument("--out", help="also write every row to this JSON file")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    suite = _suite(a.profile, a.seeds, a.draws)
    rows = curve(suite, a.estimator) if a.what == "curve" else lds(suite, a.estimator, a.subsets)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"what": a.what, "profile": a.profile, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
