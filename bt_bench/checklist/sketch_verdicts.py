"""Fixture self-check "sketch ranking", stated on verdicts (docs/checklist.md, "Fixture self-checks"): the stored
sketches must never decide a draw-level verdict of a reference gradient method.

Why not on ranks. Until 2026-12-07 the self-check asked the stored sketches to rank a draw's candidates as exact
gradients do (median Spearman >= 0.95, within-group AUC within 0.03 on every draw). Those are proxies of what
matters, and they failed fixtures whose verdicts the sketch does not touch: on fresh tiny fixtures exact TracIn
separated the behavior perfectly (AUC 1.0 both ways) while the sketch reordered near-tied candidates inside a class
(Spearman 0.58-0.74); on tiny_family TracIn's AUC moved by up to 0.124, with every verdict failing by 0.5 either way
(docs/findings.md, "The sketch-ranking self-check on verdicts"). What a gate needs is that the instrument decides
nothing, so that is what is judged:

- the reference methods (``rank_fidelity.JUDGED``: TracIn's inner product, GAS's cosine; the built-ins' own maths)
  score every sampled draw from exact gradients and from the stored sketches under each sketch seed
  (``rank_fidelity.fixture_scores``);
- every draw-level statistic the checks judge from such scores is computed both ways, with the checks' own
  bootstrap and bars (:data:`STATISTICS`): check 2's AUC minus fluency's and residualized AUC (the latter also check
  4's units), check 3's unsaturated AUC, check 4's draw stability, check 7's AUC real minus placebo;
- a unit **agrees** when the verdict (CI low beyond the bar; a point figure for draw stability) is the same from
  exact gradients, from the stored sketches, and with the sketch's measured shift doubled (exact + 2 x (stored -
  exact)): the verdict holds with margin, not by a shift that happens to stop short of the bar. The factor 2 is the
  spread measured between the two sketch seeds of one draw (tiny_family: TracIn's AUC shift 0.077 under one, 0.124
  under the other).

The fixture passes when every unit agrees. Not covered (said in the report): check 5's token-level scores and check
8's difference to the retrieval controls (whose shift is the AUC's own, as for check 2's difference to fluency).
The rank figures (median Spearman, largest AUC gap) are still measured and reported.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np

from bt_bench.checklist import bootstrap, metrics
from bt_bench.checklist.base import Thresholds

DOUBLE = 2.0  # the verdict must hold with the sketch's measured shift multiplied by this (see module)

# (statistic, checkpoint kind, threshold field): what a unit compares; the checks that judge it are the ones that own
# the threshold (their CheckSpec.thresholds, :func:`judged_by`): check 2's two, check 4's two, check 7's, check 3's
STATISTICS = (
    ("auc_minus_fluency", "saturated", "fluency_margin"),
    ("residualized_auc", "saturated", "residual_auc_bar"),
    ("auc_real_minus_placebo", "saturated", "target_margin"),
    ("unsaturated_auc", "unsaturated", "auc_bar"),
    ("draw_stability", "saturated", "draw_spearman"),
)


def judged_by(field: str) -> str:
    """The checks that own threshold ``field`` (registry order), e.g. the two that judge the residualized AUC."""
    from bt_bench.checklist.registry import CHECKS

    return "/".join(name for name, spec in CHECKS.items() if field in spec.thresholds) or field
NOT_COVERED = ("check 5 (token-level scores)", "check 8's difference to the retrieval controls (the AUC's own shift, "
               "as for check 2's difference to fluency)")


def _statistic(name: str, scores: dict[str, list], entry: dict, th: Thresholds) -> float | None:
    """The CI low (or, for draw stability, the smallest pairwise Spearman) of ``name`` from one set of scores."""
    y, grp, flu = (np.asarray(entry[f]) for f in ("has_behavior", "group", "fluency"))
    if metrics.count_pairs(y, grp) < th.min_pairs:
        return None  # the check cannot support a verdict on this draw (an ERROR of the fixture there, for everyone)
    if "in_context" not in scores or (name == "auc_real_minus_placebo" and "no_behavior" not in scores):
        return None  # the draw holds no such target at this checkpoint
    real = np.asarray(scores["in_context"], float)
    if name == "auc_minus_fluency":
        r = bootstrap.paired_auc_difference_bootstrap(real, flu, y, grp, **th.bootstrap)
    elif name == "residualized_auc":
        r = bootstrap.residualized_auc_bootstrap(real, flu, y, grp, **th.bootstrap)
    elif name == "auc_real_minus_placebo":
        r = bootstrap.paired_auc_difference_bootstrap(real, np.asarray(scores["no_behavior"], float), y, grp,
                                                      **th.bootstrap)
    elif name == "unsaturated_auc":
        r = bootstrap.auc_bootstrap(real, y, grp, **th.bootstrap)
    else:
        raise KeyError(name)
    return None if r.ci_low is None or not math.isfinite(r.ci_low) else float(r.ci_low)


def _passes(name: str, value: float, bar: float) -> bool:
    return value >= bar if name == "draw_stability" else value > bar  # as the checks compare


def unit(check: str, name: str, bar: float, exact: float, stored: float, **where) -> dict:
    """One compared statistic: the verdict from exact gradients, from the stored sketches and with the shift doubled;
    ``agrees`` when all three are the same."""
    doubled = exact + DOUBLE * (stored - exact)
    e, s, d = (_passes(name, v, bar) for v in (exact, stored, doubled))
    return {**where, "check": check, "statistic": name, "bar": bar, "exact": exact, "stored": stored,
            "shift": stored - exact, "verdict_exact": e, "verdict_stored": s, "verdict_doubled": d,
            "agrees": e == s == d}


def _least_spearman(by_target: dict, method: str) -> float | None:
    """Check 4's draw stability of one scoring: the smallest Spearman between draw 0's scores under two targets;
    None when a target's scores are constant (a target whose gradient is exactly zero scores every candidate 0,
    from exact gradients and from a linear sketch alike), where no rank correlation is defined: like any statistic
    without a value (``_statistic``), the unit is not compared."""
    v = {d: np.asarray(x[method], float) for d, x in by_target.items()}
    if any(np.all(x == x[0]) for x in v.values()):
        return None
    return min(metrics.spearman(v[a], v[b]) for a, b in itertools.combinations(sorted(v), 2))


def fixture_units(scored: dict, th: Thresholds = Thresholds()) -> list[dict]:
    """Every compared unit of one fixture's ``rank_fidelity.fixture_scores`` report."""
    out: list[dict] = []
    bars = {name: getattr(th, field) for name, _, field in STATISTICS}
    checks = {name: judged_by(field) for name, _, field in STATISTICS}
    for entry in scored["draws"]:
        methods = list(entry["exact"].get("in_context", {}))
        for name, kind, _ in STATISTICS:
            check = checks[name]
            if kind != entry["kind"] or name == "draw_stability":
                continue
            for m in methods:
                ex = _statistic(name, {t: v[m] for t, v in entry["exact"].items()}, entry, th)
                for k, st_scores in entry["stored"].items():
                    st = _statistic(name, {t: v[m] for t, v in st_scores.items()}, entry, th)
                    if ex is None or st is None:
                        continue
                    out.append(unit(check, name, bars[name], ex, st, seed=scored["seed"], kind=kind,
                                    draw=entry["draw"], sketch_seed=k, method=m))
        stab = entry.get("stability")
        if stab:
            for m in methods:
                ex = _least_spearman(stab["exact"], m)
                for k, per in stab["stored"].items():
                    st = _least_spearman(per, m)
                    if ex is None or st is None:
                        continue
                    out.append(unit(checks["draw_stability"], "draw_stability", bars["draw_stability"], float(ex),
                                    float(st), seed=scored["seed"], kind="saturated", draw=0, sketch_seed=k, method=m))
    return out


def fixture_verdicts(fx, th: Thresholds = Thresholds(), cfg=None) -> dict[str, Any]:
    """The self-check's report of one fixture: its compared units and the rank figures (reported, not judged)."""
    from bt_bench.fixture import rank_fidelity as R

    cfg = cfg or R.RankConfig()
    scored = R.fixture_scores(fx, cfg)
    out = {"seed": fx.seed, "not_applicable": scored["not_applicable"], "checkpoints": scored.get("checkpoints"),
           "missing": scored.get("missing"), "seconds": scored.get("seconds"), "sketch": scored.get("sketch")}
    if scored["not_applicable"]:
        return {**out, "units": [], "ranks": []}
    ranks = []
    for e in scored["draws"]:
        if e["kind"] != "saturated" or "in_context" not in e["exact"]:
            continue
        for k, st in e["stored"].items():
            per = R.compare_draw({m: np.asarray(v) for m, v in st["in_context"].items()},
                                 {m: np.asarray(v) for m, v in e["exact"]["in_context"].items()},
                                 np.asarray(e["has_behavior"]), np.asarray(e["group"]), methods=tuple(st["in_context"]))
            ranks.append({"draw": e["draw"], "sketch_seed": k, "methods": per})
    return {**out, "units": fixture_units(scored, th), "ranks": ranks}


def fixture_verdicts_memo(fx, folder=None, th: Thresholds = Thresholds()) -> dict[str, Any]:
    """``fixture_verdicts``, kept in ``folder`` (the session's stats folder) and read back for the same fixture bytes
    (run, derived data's manifest sha256, sketch seeds) and thresholds; None: computed."""
    from bt_bench.runs import store
    from bt_bench.runs.memo import json_memo

    key = {"run": fx.run.key, "derived": Path(fx.folder).name,
           "manifest_sha256": store.sha256_file(Path(fx.folder) / store.MANIFEST),
           "sketch_seeds": list(getattr(fx, "sketch_seeds", None) or []), "thresholds": th.to_dict(),
           "double": DOUBLE}
    return json_memo(folder, "sketch-verdicts", key, lambda: fixture_verdicts(fx, th))


def judge(reports: list[dict[str, Any]]) -> list[str]:
    """The verdict over every fixture's report: one line per unit whose verdict the sketch decides (empty = PASS)."""
    if reports and all(r.get("not_applicable") for r in reports):
        return []
    units = [u for r in reports for u in r.get("units", [])]
    if not units:
        return ["no draw-level statistic could be compared"]
    return [f"{u['method']} {u['check']} {u['statistic']} on seed {u['seed']} {u['kind']} draw {u['draw']}, sketch "
            f"seed {u['sketch_seed']}: {u['exact']:+.3f} from exact gradients, {u['stored']:+.3f} from the stored "
            f"sketches (bar {u['bar']}): the sketch {'flips' if u['verdict_exact'] != u['verdict_stored'] else 'nearly flips'} "
            "the verdict" for u in units if not u["agrees"]]


def summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Units compared and agreeing, the largest shift per statistic, and the rank figures (reported)."""
    units = [u for r in reports for u in r.get("units", [])]
    by: dict[str, dict] = {}
    for u in units:
        b = by.setdefault(u["statistic"], {"units": 0, "agree": 0, "max_abs_shift": 0.0, "closest_to_bar": None})
        b["units"] += 1
        b["agree"] += int(u["agrees"])
        b["max_abs_shift"] = max(b["max_abs_shift"], abs(u["shift"]))
        gap = abs(u["exact"] - u["bar"])
        b["closest_to_bar"] = gap if b["closest_to_bar"] is None else min(b["closest_to_bar"], gap)
    ranks = [d for r in reports for d in r.get("ranks", [])]
    rank_fig = {}
    for m in sorted({m for d in ranks for m in d["methods"]}):
        rho = [d["methods"][m]["spearman"] for d in ranks if d["methods"][m]["spearman"] == d["methods"][m]["spearman"]]
        gaps = [d["methods"][m]["auc_gap"] for d in ranks if d["methods"][m]["auc_gap"] is not None]
        rank_fig[m] = {"median_spearman": float(np.median(rho)) if rho else None,
                       "max_auc_gap": float(max(gaps)) if gaps else None}
    return {"units": len(units), "agree": sum(u["agrees"] for u in units), "double": DOUBLE, "statistics": by,
            "ranks_reported": rank_fig, "not_covered": list(NOT_COVERED)}


def key_figure(reports: list[dict[str, Any]]) -> str:
    na = [r["not_applicable"] for r in reports if r.get("not_applicable")]
    if na and len(na) == len(reports):
        return f"not applicable: {na[0]}"
    s = summary(reports)
    shifts = ", ".join(f"{k} {v['max_abs_shift']:.3f}" for k, v in s["statistics"].items())
    ranks = "; ".join(f"{m} rho {f['median_spearman']:.3f}, AUC gap {f['max_auc_gap']:.3f}"
                      for m, f in s["ranks_reported"].items() if f["median_spearman"] is not None
                      and f["max_auc_gap"] is not None)
    return (f"{s['agree']}/{s['units']} draw-level verdicts of TracIn and GAS the same from exact gradients, stored "
            f"sketches and {DOUBLE:g}x the sketch's shift; largest shift: {shifts}; ranks (reported): {ranks}")
