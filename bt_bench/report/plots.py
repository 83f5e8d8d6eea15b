"""The report's plots, each a function ``report -> PNG bytes`` (None without data); :data:`PLOTS` lists them with
title and caption for the pages.  They read only what the checks record (per-unit verdicts, ``cell.info.series``,
``runs``), so a replayed report and a fixture run render through the same code.  Matplotlib is imported lazily
(Agg backend): the pytest plugin imports the table and must stay light.  A report figure goes here.
"""

from __future__ import annotations

from collections.abc import Sequence

from .schema import normalized
from bt_bench.checklist.figures import cell_units
from bt_bench.checklist.gate import cell_of

from .table import cell_text


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
                         "axes.spines.right": False, "figure.dpi": 100})
    return plt


def _png(fig) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def _grid(n: int, ncols: int = 3, h: float = 3.0):
    plt = _plt()
    nc = min(n, ncols)
    nr = -(-n // nc)
    fig, axes = plt.subplots(nr, nc, figsize=(max(5.5, 11.0 * nc / ncols), h * nr), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _results(report: dict, check: str) -> list[dict]:
    return [r for r in report.get("results", []) if cell_of(r)[0] == check and r.get("cell")]


def _per_estimator(report: dict, check: str) -> dict[str, list[dict]]:
    """{estimator: units} of one check (units of every result of the cell, e.g. one test per seed)."""
    out: dict[str, list[dict]] = {}
    for r in _results(report, check):
        out.setdefault(cell_of(r)[1], []).extend(cell_units(r["cell"]))
    return out


def _fed_by(plot: str) -> str:
    """The check whose units a figure draws (``CheckSpec.plots`` in the registry)."""
    from bt_bench.checklist.registry import plotted

    (check,) = plotted(plot)
    return check


def _labels(report: dict, check: str) -> dict[str, str]:
    """{estimator: the cell's outcome label} of one check (as in the table)."""
    cells: dict[str, list[dict]] = {}
    for r in _results(report, check):
        cells.setdefault(cell_of(r)[1], []).append(r)
    return {e: cell_text(rs)[0] for e, rs in cells.items()}


def _seed_colors(seeds: Sequence) -> dict:
    plt = _plt()
    cmap = plt.get_cmap("tab10")
    return {s: cmap(i % 10) for i, s in enumerate(sorted(seeds, key=str))}


def _dots(ax, xs: list[float], ms: list[dict], color, *, scale: list[float] | None = None,
          filled: list[bool] | None = None, label: str | None = None, marker: str = "o") -> None:
    """Points with their CIs (metrics {value, ci_low, ci_high}, each divided by its `scale`), drawn with
    one errorbar and one scatter call (one artist per point is slow on small CPUs); hollow = not filled."""
    if not ms:
        return
    import numpy as np

    sc = np.asarray(scale if scale is not None else [1.0] * len(ms), float)
    v = np.array([m["value"] for m in ms], float) / sc
    lo = np.array([m["value"] if m.get("ci_low") is None else m["ci_low"] for m in ms], float) / sc
    hi = np.array([m["value"] if m.get("ci_high") is None else m["ci_high"] for m in ms], float) / sc
    ax.errorbar(xs, v, yerr=[np.maximum(v - lo, 0), np.maximum(hi - v, 0)], fmt="none", ecolor=color, capsize=2,
                lw=1)
    face = [color if f else "white" for f in (filled if filled is not None else [True] * len(ms))]
    ax.scatter(xs, v, s=30, marker=marker, facecolors=face, edgecolors=[color] * len(ms), zorder=3, label=label)


def plot_lift(report: dict) -> bytes | None:
    """(a) Lift over chance per seed with CIs, each estimator next to the stronger norm_only variant
    (overall), and inside the planting window (the per-seed metrics of the check that feeds "lift")."""
    per = {e: [u for u in us if (u["metrics"].get("chance") or {}).get("value")]
           for e, us in _per_estimator(report, _fed_by("lift")).items()}
    per = {e: us for e, us in per.items() if us}
    if not per:
        return None
    seeds = sorted({u["seed"] for us in per.values() for u in us}, key=str)
    col = _seed_colors(seeds)
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11.0, 3.8), gridspec_kw={"width_ratios": [1.4, 1]})
    names = ["norm_only (stronger)"] + list(per)
    off = {s: (i - (len(seeds) - 1) / 2) * min(0.12, 0.7 / max(len(seeds), 1)) for i, s in enumerate(seeds)}
    for s in seeds:
        pts: dict[str, list] = {"x": [], "m": [], "sc": [], "f": [], "wx": [], "wm": [], "wsc": [], "wf": []}
        norm = None
        for x, e in enumerate(per, start=1):
            for u in (u for u in per[e] if u["seed"] == s):
                m = u["metrics"]
                ch, ok = m["chance"]["value"], u.get("outcome") == "pass"
                if "precision" in m:
                    pts["x"].append(x + off[s]), pts["m"].append(m["precision"]), pts["sc"].append(ch)
                    pts["f"].append(ok)
                ns = [m[k]["value"] for k in ("norm_precision", "norm_only_precision", "norm_only_step_precision")
                      if k in m]
                norm = max(ns) / ch if ns and norm is None else norm
                if "window_precision" in m and (m.get("window_chance") or {}).get("value"):
                    pts["wx"].append(x - 1 + off[s]), pts["wm"].append(m["window_precision"])
                    pts["wsc"].append(m["window_chance"]["value"]), pts["wf"].append(ok)
        _dots(a1, pts["x"], pts["m"], col[s], scale=pts["sc"], filled=pts["f"])
        _dots(a2, pts["wx"], pts["wm"], col[s], scale=pts["wsc"], filled=pts["wf"])
        if norm is not None:
            a1.scatter([off[s]], [norm], marker="D", s=30, color=col[s], zorder=3)
    for ax, labels, title in ((a1, names, "overall: precision@|GT| / chance"),
                              (a2, list(per), "inside the window (steps < W, nonzero): / window chance")):
        ax.axhline(1.0, color="0.4", ls="--", lw=1)
        ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
        ax.set_xlim(-0.6, len(labels) - 0.4)
        ax.set_title(title)
        ax.set_ylabel("lift over chance")
        ax.set_ylim(bottom=0)
    handles = [plt.Line2D([], [], marker="o", ls="", color=col[s], label=f"seed {s}") for s in seeds]
    handles += [plt.Line2D([], [], marker="o", ls="", color="0.3", mfc="white", label="seed failed the check"),
                plt.Line2D([], [], marker="D", ls="", color="0.3", label="norm_only (stronger variant)"),
                plt.Line2D([], [], ls="--", color="0.4", label="chance")]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), frameon=False, bbox_to_anchor=(0.5, 1.06))
    fig.tight_layout()
    return _png(fig)


def _unit_label(u: dict) -> str:
    return (f"s{u['seed']}" + ("" if u.get("draw") is None else f"/d{u['draw']}")
            + ("" if u.get("sketch_seed") in (None, 0) else f"/k{u['sketch_seed']}"))


def plot_auc(report: dict) -> bytes | None:
    """(b) Raw vs fluency-residualized vs fluency within-group AUC per (seed, draw), one panel per
    estimator (the per-unit metrics of the check that feeds "auc_vs_fluency"; the variance shares of the one that
    feeds "variance_shares" in the title)."""
    per = {e: [u for u in us if "auc" in u["metrics"]]
           for e, us in _per_estimator(report, _fed_by("auc_vs_fluency")).items()}
    per = {e: sorted(us, key=lambda u: (str(u["seed"]), str(u["draw"]), str(u.get("sketch_seed"))))
           for e, us in per.items() if us}
    if not per:
        return None
    sdv = _per_estimator(report, _fed_by("variance_shares"))
    labels = _labels(report, _fed_by("auc_vs_fluency"))
    bar = (report.get("thresholds") or {}).get("residual_auc_bar", 0.5)
    fig, axes = _grid(len(per), ncols=2 if len(per) <= 4 else 3, h=3.1)
    series = (("auc", "raw", "C0", -0.22), ("residualized_auc", "residualized", "C1", 0.0),
              ("fluency_auc", "fluency", "0.45", 0.22))
    for ax, (e, us) in zip(axes, per.items()):
        for key, lab, c, dx in series:
            have = [(i, u["metrics"][key]) for i, u in enumerate(us)
                    if (u["metrics"].get(key) or {}).get("value") is not None]
            _dots(ax, [i + dx for i, _ in have], [m for _, m in have], c, label=lab)
        ax.axhline(bar, color="C3", ls="--", lw=1, label=f"bar {bar}")
        ax.set_xticks(range(len(us)), [_unit_label(u) for u in us], rotation=45 if len(us) > 6 else 0)
        ax.set_xlim(-0.6, len(us) - 0.4)
        title = f"{e}: {labels[e]}"
        # the shares are undefined (None in JSON) when the residualized AUC does not vary, e.g. fluency vs itself
        shares = [u["metrics"] for u in sdv.get(e, [])
                  if (u["metrics"].get("variance_share_seed") or {}).get("value") is not None
                  and (u["metrics"].get("variance_share_draw") or {}).get("value") is not None]
        if shares:
            title += (f"  (variance share seed {shares[0]['variance_share_seed']['value']:.2f} / draw "
                      f"{shares[0]['variance_share_draw']['value']:.2f})")
        ax.set_title(title)
        ax.set_ylabel("within-group AUC")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncol=4, frameon=False,
               bbox_to_anchor=(0.5, 1.04))
    ys = [ax.get_ylim() for ax in axes]
    for ax in axes:  # one scale for every panel, so estimators compare at a glance
        ax.set_ylim(min(y[0] for y in ys + [(0.4, 0)]), max(1.0, max(y[1] for y in ys)))
    fig.tight_layout()
    return _png(fig)


def plot_alignment(report: dict) -> bytes | None:
    """(c) Token-level alignment distributions: scores against the in_context, placebo and constructed
    targets (the ``series`` of the check that feeds "alignment"), one panel per estimator."""
    per, cells = {}, {}
    for r in _results(report, _fed_by("alignment")):
        s = {k: v for k, v in ((r["cell"].get("info") or {}).get("series") or {}).items() if v}
        if s:
            per.setdefault(cell_of(r)[1], {}).update(s)
            cells.setdefault(cell_of(r)[1], []).append(r)
    if not per:
        return None
    fig, axes = _grid(len(per), ncols=3, h=3.2)
    order = ("in_context", "placebo", "constructed")
    colors = {"in_context": "C0", "placebo": "0.55", "constructed": "C1"}
    for ax, (e, s) in zip(axes, per.items()):
        names = [k for k in order if k in s] + sorted(k for k in s if k not in order)
        parts = ax.violinplot([s[k] for k in names], showextrema=False, widths=0.8)
        for body, k in zip(parts["bodies"], names):
            body.set_facecolor(colors.get(k, "C2"))
            body.set_alpha(0.55)
        for i, k in enumerate(names, start=1):
            mean = sum(s[k]) / len(s[k])
            ax.plot(i, mean, "k_", ms=18, mew=2)
            ax.annotate(f"mean {mean:+.3f}, n={len(s[k])}", (i, max(s[k])), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=8)
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(range(1, len(names) + 1), names)
        ax.set_xlim(0.4, len(names) + 0.6)
        ax.margins(y=0.12)
        label, key = cell_text(cells[e])
        ax.set_title(f"{e}: {label}\n{key}", fontsize=9)
        ax.set_ylabel("score vs target")
    fig.tight_layout()
    return _png(fig)


def plot_curves(report: dict) -> bytes | None:
    """(d) The learning curve of every run: behavior rate with / without the trigger, the planting window
    W shaded, every checkpoint marked, the chosen unsaturated (U) and saturated (S) checkpoints labelled."""
    runs = [r for r in report.get("runs", []) if r.get("curve")]
    if not runs:
        return None
    th = report.get("thresholds") or {}
    fig, axes = _grid(len(runs), ncols=3, h=2.9)
    for ax, run in zip(axes, runs):
        steps = [c["step"] for c in run["curve"]]
        trig = [c["trigger_rate"] for c in run["curve"]]
        ax.axvspan(min(steps + [0]), run.get("window", 0), color="C2", alpha=0.12, label="window (t < W)")
        ax.plot(steps, trig, "C0-", lw=1.6, label="with trigger")
        ax.plot(steps, [c["no_trigger_rate"] for c in run["curve"]], "C3--", lw=1.2, label="without")
        for y in {th.get("saturated_rate", 0.8), th.get("unsaturated_low", 0.2)}:
            ax.axhline(y, color="0.7", lw=0.7, ls=":")

        def at(step, steps=steps, trig=trig):  # the curve's value at a checkpoint (nearest recorded step)
            return trig[min(range(len(steps)), key=lambda i: abs(steps[i] - step))]

        cks = run.get("checkpoints") or []
        ax.plot(cks, [at(c) for c in cks], "|", color="k", ms=9, mew=1.2, label="checkpoints")
        for kind, mark in (("unsaturated", "U"), ("saturated", "S")):
            step = (run.get("chosen") or {}).get(kind)
            if step is not None:
                ax.plot(step, at(step), "o", mfc="none", mec="C1", ms=11, mew=1.6)
                ax.annotate(mark, (step, at(step)), xytext=(0, -15), textcoords="offset points", ha="center",
                            color="C1", fontweight="bold")
        planted = run.get("planted")
        ax.set_title(f"seed {run.get('seed')}, W = {run.get('window')}"
                     + (" (NOT planted)" if planted is False else ""))
        ax.set_ylim(-0.05, 1.08)
        ax.set_xlabel("step")
        ax.set_ylabel("behavior rate")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncol=4, frameon=False,
               bbox_to_anchor=(0.5, 1.07 if len(runs) <= 3 else 1.03))
    fig.tight_layout()
    return _png(fig)


PLOTS = (
    ("lift", "Lift over chance per seed",
     ("Precision@|GT| divided by chance, with the 95% cluster-bootstrap CI over steps, for each seed. Left: over the "
      "whole run, next to the stronger norm_only variant (diamonds): a targeted method should sit above them. "
      "Right: inside the planting window, where the published methods sit at chance (dashed). Hollow markers: "
      "that seed failed the check."), plot_lift),
    ("auc", "Within-group AUC: raw, residualized on fluency, and fluency alone",
     ("Per (seed, draw) at the saturated checkpoint, with 95% CIs over groups. The check wants raw AUC above "
      "fluency's and the residualized CI above the bar (red dashes) on every seed and draw."), plot_auc),
    ("alignment", "Token-level alignment",
     ("Scores of the behavior-token gradient against the in-context target, a placebo target at random "
      "non-behavior positions, and a hand-constructed target; bar = mean."), plot_alignment),
    ("curves", "Learning curves",
     ("Behavior rate on trigger / no-trigger prompts during training; the shaded span is the planting window; "
      "ticks are checkpoints; U / S the unsaturated / saturated checkpoints the checks used."), plot_curves))


def render_plots(report: dict) -> dict[str, bytes]:
    """{name: PNG bytes} of every plot the report has data for (read in canonical order, see
    ``schema.normalized``)."""
    report = normalized(report)
    out = {}
    for name, _, _, fn in PLOTS:
        png = fn(report)
        if png:
            out[name] = png
    return out
