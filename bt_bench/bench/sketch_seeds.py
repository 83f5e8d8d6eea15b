"""How much does the sketch move a draw-level verdict? Exact TracIn against sketched TracIn on one draw.

``bt-bench bench sketch-seeds [--profile tiny] [--seed 0 ...] [--draw 0 ... | --all-draws] [--draws 3]
[--sketch-seeds 4] [--spec NAME:FIELD=V,...] [--json PATH]``

On fresh draws at the saturated checkpoint, TracIn's score of candidate i is <g_target, g_i> at that
checkpoint (``rollout_losses`` of the draw, ``Target.loss`` of the in-context target). The same gradients are
sketched under several specs (the default factorized sketch with sketch seeds 0..n-1, ``large``, ``first_stage``,
a dense Gaussian) and under the ``exact`` preset, whose factors are identities: its inner products are the
unsketched ones. Each row reports the least-squares slope and Spearman rank correlation against exact, and the two
figures the fluency check (2) judges: the within-group AUC of the behavior label and the AUC of the fluency residual;
and the sketch's output size and the seconds it took. Over every draw scored, :func:`summarize` gives each spec's
agreement with exact (median and lowest Spearman, the largest within-group AUC gap) against :data:`AGREEMENT`, and
``default_vs_exact_auc_gap``: the largest AUC gap of the stored default sketch (``default``, seed 0).

Why: the sketch-fidelity self-check bounds each sketched inner product's error by its JL bound; a within-group
ranking compares siblings whose gradients differ little, so an error inside that bound can still reorder them. The
captum adapter (captum_tracincp) measured exact TracIn at a within-group AUC of 0.64 on tiny seed 0 draw 0 where
the sketched built-in reads 0.87.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

# The agreement bar, the scorings and their maths are the sketch-ranking self-check's (one definition).
from bt_bench.fixture.rank_fidelity import AGREEMENT, METHODS, method_scores
from bt_bench.runs.config import DEFAULT_PROFILE

STORED = "default (seed 0)"  # the spec the fixtures' sketches are derived with

PROBE = type("SketchSeedProbe", (), {"name": "sketch_seeds", "level": "rollout", "capabilities": frozenset({"model"})})


def default_specs(n_seeds: int) -> dict:
    from bt_bench.sketch.spec import preset

    return {"exact": preset("exact"), **{f"default (seed {s})": preset("default", s) for s in range(n_seeds)},
            "compact (seed 0)": preset("compact"), "large": preset("large"), "first_stage (seed 0)": preset("first_stage"),
            "dense k=1024": preset("dense")}


def parse_spec(text: str) -> tuple[str, object]:
    """'NAME:field=v,field=v' -> (NAME, SketchSpec) (fields of ``bt_bench.sketch.spec.SketchSpec``; 'none' is None,
    integers are ints); a ValueError names what is wrong."""
    from bt_bench.sketch.spec import SketchSpec

    name, sep, body = text.partition(":")
    if not sep or not name or not body:
        raise ValueError(f"{text!r}: expected NAME:FIELD=VALUE,... (e.g. x64:k_in=64,k_out=64,k=4096)")
    fields = {}
    for item in body.split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"{item!r} in {text!r}: expected FIELD=VALUE")
        v = value.strip()
        fields[key.strip()] = None if v.lower() == "none" else int(v) if v.lstrip("-").isdigit() else v
    return name, SketchSpec.from_dict(fields)


def compare(fixture, kind: str = "saturated", draw: int = 0, specs: dict | None = None,
            n_resamples: int = 1000) -> list[dict]:
    """One row per spec: slope and Spearman against the ``exact`` row, within-group AUC and residualized AUC.

    ``specs`` must hold an ``"exact"`` entry (identity factors: the flat gradient); it is the reference."""
    import torch
    from scipy.stats import spearmanr

    from bt_bench.checklist.bootstrap import auc_bootstrap, residualized_auc_bootstrap
    from bt_bench.estimator import rollout_batch
    from bt_bench.estimator.handover import draw_candidates
    from bt_bench.estimator.objective import candidate_terms, target_terms_fn
    from bt_bench.sketch import Sketcher

    specs = specs or default_specs(4)
    if "exact" not in specs:
        raise ValueError("specs: needs an 'exact' entry (bt_bench.sketch.spec.preset('exact')), the reference")
    data, targets = draw_candidates(fixture, kind, draw)
    view = data.view_for(PROBE())
    c = view.checkpoints[-1].step
    defn = targets["in_context"].definition(c)
    labels = fixture.draw_rows(kind, draw)
    hb, group, fluency = labels["has_behavior"], labels["group"], labels["fluency"]
    model = view.model(c)
    model.set_attn_implementation("eager")  # the dense spec vmaps per-row gradients; SDPA's mask path cannot
    ref, cfg = specs["exact"], model.config
    widest = max(cfg.vocab_size, cfg.hidden_size, getattr(cfg, "intermediate_size", 0) or 0)
    if ref.kind != "factorized" or ref.k is not None or widest > min(ref.k_in, ref.k_out, ref.k_vocab):
        raise ValueError(f"specs['exact']: its factors must be identities for this model (k=None, factor dims >= "
                         f"{widest}, the widest of vocab, hidden and intermediate sizes); got {ref}")
    batch, tbatch = rollout_batch(view), defn.batch()
    scores, cost = {}, {}
    for name, spec in specs.items():
        t0 = time.perf_counter()
        with torch.enable_grad():
            sk = Sketcher(model, spec)
            g = np.asarray(sk.sketch(batch, candidate_terms), dtype=np.float64)
            gt = np.asarray(sk.sketch(tbatch, target_terms_fn(defn.loss)), dtype=np.float64).mean(0)
        scores[name], cost[name] = method_scores(g, gt), (time.perf_counter() - t0, g.shape[1])

    def figures(s: np.ndarray, ex: np.ndarray) -> dict:
        auc = auc_bootstrap(s, hb, group, n_resamples=n_resamples)
        res = residualized_auc_bootstrap(s, fluency, hb, group, n_resamples=n_resamples)
        return {"slope": float(s @ ex / (ex @ ex)), "spearman": float(spearmanr(s, ex)[0]), "auc": auc.estimate,
                "auc_ci": [auc.ci_low, auc.ci_high], "residualized_auc": res.estimate,
                "residualized_ci": [res.ci_low, res.ci_high], "scores": s.tolist()}

    ex = scores["exact"]
    return [{"spec": name, "sketch": dataclasses.asdict(specs[name]), **figures(s["tracin"], ex["tracin"]),
             "methods": {m: figures(s[m], ex[m]) for m in METHODS if m != "tracin"},
             "seconds": cost[name][0], "dim": int(cost[name][1])} for name, s in scores.items()]


def summarize(draws: list[dict], agreement: dict | None = None) -> dict:
    """Agreement of every spec with exact over the draws scored (``draws``: ``[{seed, draw, rows}]`` as
    :func:`compare` gives rows): per spec and scoring (``METHODS``; a row without ``methods`` is TracIn alone) its
    median and lowest Spearman and its largest within-group AUC gap (``|AUC - AUC(exact)|`` on the same draw); the
    spec's figures are its worst scoring's, with its mean seconds and output size, and it ``agrees`` when every
    scoring meets ``agreement`` (default :data:`AGREEMENT`); ``default_vs_exact_auc_gap``: the stored default
    sketch's largest gap (None when it was not scored)."""
    crit = agreement or AGREEMENT
    if not draws:
        raise ValueError("draws: empty; score at least one draw")
    per: dict[str, dict] = {}
    for d in draws:
        ex = next((r for r in d["rows"] if r["spec"] == "exact"), None)
        if ex is None:
            raise ValueError(f"draws: seed {d.get('seed')} draw {d.get('draw')} has no 'exact' row")
        for r in d["rows"]:
            p = per.setdefault(r["spec"], {"by": {}, "seconds": [], "dim": r.get("dim")})
            p["seconds"].append(r.get("seconds") or 0.0)
            for m, fig, ref in [("tracin", r, ex), *((m, f, ex["methods"][m]) for m, f in r.get("methods", {}).items())]:
                b = p["by"].setdefault(m, {"spearman": [], "gap": []})
                b["spearman"].append(fig["spearman"]), b["gap"].append(abs(fig["auc"] - ref["auc"]))
    table = []
    for name, p in per.items():
        by = {m: {"median_spearman": float(np.median(b["spearman"])), "min_spearman": float(min(b["spearman"])),
                  "max_auc_gap": float(max(b["gap"]))} for m, b in p["by"].items()}
        ok = {m: f["median_spearman"] >= crit["median_spearman"] and f["max_auc_gap"] <= crit["max_auc_gap"]
              for m, f in by.items()}
        table.append({"spec": name, "draws": len(p["seconds"]),
                      "median_spearman": min(f["median_spearman"] for f in by.values()),
                      "min_spearman": min(f["min_spearman"] for f in by.values()),
                      "max_auc_gap": max(f["max_auc_gap"] for f in by.values()),
                      "seconds": float(np.mean(p["seconds"])), "dim": p["dim"], "by_method": by,
                      "agrees": all(ok.values()), "disagreeing": sorted(m for m, v in ok.items() if not v)})
    stored = per.get(STORED)
    return {"criteria": dict(crit), "table": table,
            "default_vs_exact_auc_gap": None if stored is None else float(max(stored["by"]["tracin"]["gap"]))}


def format_summary(summary: dict) -> str:
    c = summary["criteria"]
    out = [(f"agreement with exact over the draws (median Spearman >= {c['median_spearman']}, AUC gap <= "
            f"{c['max_auc_gap']} on every draw; a spec's line is its worst of {', '.join(METHODS)}, one line each "
            "below)"),
           f"{'sketch':22s} {'draws':>5s} {'med rho':>7s} {'min rho':>7s} {'max gap':>7s} {'dim':>6s} {'s':>6s}  agrees"]
    for r in summary["table"]:
        why = "" if r["agrees"] else f" ({', '.join(r.get('disagreeing', []))})"
        out.append(f"{r['spec']:22s} {r['draws']:5d} {r['median_spearman']:7.3f} {r['min_spearman']:7.3f} "
                   f"{r['max_auc_gap']:7.3f} {r['dim'] or 0:6d} {r['seconds']:6.1f}  {'yes' if r['agrees'] else 'NO'}"
                   f"{why}")
        for m, f in sorted(r.get("by_method", {}).items()):
            out.append(f"  {m:20s} {'':5s} {f['median_spearman']:7.3f} {f['min_spearman']:7.3f} {f['max_auc_gap']:7.3f}")
    gap = summary["default_vs_exact_auc_gap"]
    out.append(f"default_vs_exact_auc_gap: {'n/a' if gap is None else f'{gap:.3f}'}")
    return "\n".join(out)


def format_rows(rows: list[dict]) -> str:
    out = [f"{'sketch':22s} {'slope':>6s} {'Spearman':>8s}  within-group AUC        residualized AUC"]
    for r in rows:
        out.append(f"{r['spec']:22s} {r['slope']:6.3f} {r['spearman']:8.3f}  {r['auc']:.3f} "
                   f"[{r['auc_ci'][0]:.2f}, {r['auc_ci'][1]:.2f}]   {r['residualized_auc']:.3f} "
                   f"[{r['residualized_ci'][0]:.2f}, {r['residualized_ci'][1]:.2f}]")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bt-bench bench sketch-seeds", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=DEFAULT_PROFILE,
                    help=f"run profile (default {DEFAULT_PROFILE}); built and derived if not cached")
    ap.add_argument("--seed", type=int, nargs="+", default=[0], help="training seed(s) of the runs (default 0)")
    ap.add_argument("--draw", type=int, nargs="+", default=[0],
                    help="draw index(es) at the saturated checkpoint (default 0)")
    ap.add_argument("--all-draws", action="store_true", help="every draw of --draws (instead of --draw)")
    ap.add_argument("--draws", type=int, default=3, help="draws per checkpoint, as --bt-draws (default 3): "
                    "the derived data of the checklist's own runs")
    ap.add_argument("--sketch-seeds", type=int, default=4, help="seeds of the default sketch to try (default 4)")
    ap.add_argument("--spec", action="append", default=[], metavar="NAME:FIELD=V,...",
                    help="score one more sketch as well, e.g. 'x64:k_in=64,k_out=64,k_vocab=256,k_small=1024,k=4096' "
                    "(SketchSpec fields; repeatable): candidates for the default, measured against exact")
    ap.add_argument("--json", default=None, help="write the rows of every draw (with every score) and the "
                    "agreement table, with default_vs_exact_auc_gap, as JSON here")
    args = ap.parse_args(argv)
    if args.sketch_seeds < 1:
        ap.error("--sketch-seeds must be >= 1")
    draws = list(range(args.draws)) if args.all_draws else args.draw
    bad = [d for d in draws if not 0 <= d < args.draws]
    if bad:
        ap.error(f"--draw must be in 0..{args.draws - 1} (--draws {args.draws}), got {bad}")

    import torch

    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config
    from bt_bench.runs.store import cache_root

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    specs = default_specs(args.sketch_seeds)
    try:
        specs.update(parse_spec(text) for text in args.spec)
    except ValueError as e:
        ap.error(f"--spec: {e}")
    scored = []
    for seed in args.seed:
        run = build_run(make_config(args.profile, seed=seed), cache_root(), progress=True)
        fx = load_fixture(run, fixture_config(args.profile, args.draws), cache_root())
        for d in draws:
            rows = compare(fx, "saturated", d, specs)
            print(f"TracIn on {args.profile} seed {seed}, saturated draw {d}: exact vs sketched", flush=True)
            print(format_rows(rows), flush=True)
            scored.append({"seed": seed, "draw": d, "rows": rows})
            if args.json:  # after every draw, so a long run interrupted keeps what it measured
                Path(args.json).write_text(json.dumps({"profile": args.profile, "draws": scored,
                                                       **summarize(scored)}, indent=1))
    print(format_summary(summarize(scored)))
    return 0
