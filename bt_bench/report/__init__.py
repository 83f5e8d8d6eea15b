"""The human side of the report (issue 5, item 4) and the ``replay`` command (item 5).

* :func:`format_table`: the terminal summary, a matrix checks x estimators whose cells carry the outcome
  (PASS / FAIL / ERROR / SKIP / FAIL (expected, paper) / XPASS) and the cell's key figure;
* :func:`render_html`: one self-contained page (plots embedded as base64 PNG) from a JSON report of schema
  ``bt-bench-report/1`` (written by ``bt_bench.plugin.write_report`` or by :func:`replay_main`);
  :func:`render_markdown` writes the same plots as PNG files next to a Markdown page;
* :func:`main` (``bt-bench report``) and :func:`replay_main` (``bt-bench replay``).

Plots read only what the checks record (``metrics.per_unit`` verdicts, ``metrics.series``, ``runs``), so a
replayed report and a fixture run render through the same code.  Matplotlib is imported lazily (Agg backend):
the pytest plugin imports this module for the table and must stay light.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import re
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

SCHEMA = "bt-bench-report/1"
LABELS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP",
          "xfail": "FAIL (expected)", "xpass": "PASS (xfail)"}  # pytest outcomes (fixture self-checks, counts)
# Which outcome names a cell that aggregates several tests (e.g. one per seed/draw): the most serious one.
SEVERITY = ("failed", "error", "xpass", "xfail", "passed", "skipped")
VERDICT_OUTCOME = {"pass": "passed", "fail": "failed", "error": "error", "skip": "skipped"}
CHECKS = ("gradient_norm_baseline", "fluency_confound", "headroom", "seed_draw_variance",
          "trigger_token_alignment", "advantage_baseline", "target_dependence")  # spec "The checks" order
FIXTURE = "(fixture)"  # the one column of fixture self-checks, which are not per estimator
# Cells are labelled by the gate (bt_bench.checklist.gate): PASS, FAIL, ERROR, NOT JUDGED, N/A.
COLORS = {"PASS": "#cdeccd", "FAIL": "#f6c6c6", "ERROR": "#f9ddb1", "NOT JUDGED": "#f9ddb1", "N/A": "#e8e8e8",
          "passed": "#cdeccd", "failed": "#f6c6c6", "error": "#f9ddb1", "skipped": "#e8e8e8"}
GATE_ORDER = ("FAIL", "ERROR", "NOT JUDGED", "PASS", "N/A")


# ------------------------------------------------------------------------------------------ cells
def cell_of(result: dict) -> tuple[str, str]:
    """(check, estimator) of one result: from ``metrics`` when recorded, else parsed from the node id
    (``checks/test_<check>.py::test_<check>[<estimator>-seed1-draw2]``); no estimator -> FIXTURE."""
    m = result.get("metrics") or {}
    test = result.get("nodeid", "").split("::")[-1]
    func, _, param = test.partition("[")
    check = m.get("check") or re.sub(r"^test_", "", func) or "?"
    est = m.get("estimator")
    if not est and param:
        est = re.sub(r"(-seed\d+|-draw\d+)+$", "", param.rstrip("]"))
    return check, est or FIXTURE


def _label(result: dict) -> str:
    """The gate label of one result; a fixture self-check (no verdict) by its pytest outcome."""
    from bt_bench.checklist import gate
    if not (result.get("metrics") or {}).get("verdict"):
        return {"passed": "PASS", "failed": "FAIL", "skipped": "NOT JUDGED"}.get(result.get("outcome"), "ERROR")
    return gate.unit_label(result)


def _cell_outcome(results: Sequence[dict]) -> tuple[str, dict]:
    """The gate label of a cell holding one or more results (every-seed rule, bt_bench.checklist.gate.aggregate) and the
    first result carrying that label (its key figure and reason describe the cell)."""
    from bt_bench.checklist import gate
    labels = [_label(r) for r in results]
    label = gate.aggregate(labels)
    return label, results[labels.index(label)]


def _cells(results: Iterable[dict]) -> tuple[list[str], list[str], dict]:
    """Ordered checks, ordered estimators (first seen), {(check, estimator): [results]}."""
    cells: dict[tuple[str, str], list[dict]] = {}
    ests: list[str] = []
    for r in results:
        c, e = cell_of(r)
        cells.setdefault((c, e), []).append(r)
        if e not in ests and e != FIXTURE:
            ests.append(e)
    checks = sorted({c for c, e in cells if e != FIXTURE},
                    key=lambda c: (CHECKS.index(c) if c in CHECKS else len(CHECKS), c))
    return checks, ests, cells


def cell_text(results: Sequence[dict]) -> tuple[str, str]:
    """(label, key figure) of a cell; several results show the count of the deciding outcome."""
    outcome, worst = _cell_outcome(results)
    label = outcome
    if len(results) > 1:
        label += f" {sum(_label(r) == outcome for r in results)}/{len(results)}"
    m = worst.get("metrics") or {}
    exp = m.get("expected")
    if exp:  # a built-in's declared outcome: say whether the cell matches it
        label += " (expected)" if exp.get("label") == outcome else f" (expected {exp.get('label')}!)"
    key = m.get("key_figure") or (key_figure(m["verdict"]) if m.get("verdict") else "")
    if not key and outcome in ("NOT JUDGED", "N/A", "ERROR") and worst.get("reason"):
        key = _short_reason(worst["reason"])
    return label, key


def _short_reason(reason: str, n: int = 44) -> str:
    """The innermost reason of a (possibly combined) verdict, shortened for a table cell."""
    r = re.sub(r"^.*?seed/draw\(s\): ", "", str(reason))
    r = re.sub(r"^[\w/]+: (pass|fail|error|skip): ", "", r)
    r = re.sub(r"^Skipped: ", "", r.strip().strip("()").split("', ")[-1].strip("'\""))
    return textwrap.shorten(r, n, placeholder=" …")


# ------------------------------------------------------------------------------------- key figures
def units(metrics: dict) -> list[dict]:
    """Per-unit verdicts of a result's metrics: ``per_unit`` when recorded, else split from the combined
    verdict, whose metric names carry the unit as prefix (``seed2/draw1/auc``, see verdicts.combine).
    Each unit: {seed, draw, outcome, metrics: {name: {value, ci_low, ci_high, ...}}}."""
    if metrics.get("per_unit"):
        return [{"seed": u.get("seed"), "draw": u.get("draw"), "outcome": u["verdict"].get("outcome"),
                 "metrics": u["verdict"].get("metrics", {})} for u in metrics["per_unit"]]
    verdict = metrics.get("verdict") or {}
    if "seed" in metrics:  # one cell per seed (and draw): the verdict is that unit's own
        return [{"seed": metrics["seed"], "draw": metrics.get("draw"), "outcome": verdict.get("outcome"),
                 "metrics": verdict.get("metrics", {})}]
    return units_of_verdict(verdict)


_UNIT = re.compile(r"^seed(-?\d+)(?:/draw(-?\d+))?/(.+)$")


def units_of_verdict(verdict: dict) -> list[dict]:
    """Split a combined Verdict.to_dict() into units by its metric prefixes; outcomes from its reason."""
    found: dict[tuple, dict] = {}
    plain = {}
    for name, m in (verdict.get("metrics") or {}).items():
        hit = _UNIT.match(name)
        if not hit:
            plain[name] = m
            continue
        s, d, rest = int(hit[1]), None if hit[2] is None else int(hit[2]), hit[3]
        found.setdefault((s, d), {})[rest] = m
    reason = verdict.get("reason", "")
    out = []
    for (s, d), ms in found.items():
        lab = f"seed{s}" + ("" if d is None else f"/draw{d}")
        hit = re.search(rf"(?:^|; |: ){re.escape(lab)}: (pass|fail|error|skip): ", reason)
        out.append({"seed": s, "draw": d, "outcome": hit[1] if hit else None, "metrics": ms})
    if plain:  # an uncombined verdict (one unit) or figures over all units (seed_draw_variance)
        out.append({"seed": None, "draw": None, "outcome": verdict.get("outcome"), "metrics": plain})
    return out


def _vals(us: list[dict], name: str, field: str = "value") -> list[float]:
    return [u["metrics"][name][field] for u in us
            if name in u["metrics"] and u["metrics"][name].get(field) is not None]


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _fig(name: str, us: list[dict], fmt: str = "{:.2f}", lo: bool = True) -> str | None:
    """'0.63 (lo 0.56)': the mean over units and the lowest CI lower bound; None when not recorded."""
    v = _vals(us, name)
    if not v:
        return None
    low = _vals(us, name, "ci_low")
    return fmt.format(_mean(v)) + (f" (lo {fmt.format(min(low))})" if lo and low else "")


def _lifts(us: list[dict]) -> tuple[list[float], list[float], list[float]]:
    """Per unit: lift of the estimator, of the stronger norm_only variant, and window lift."""
    lift, norm, win = [], [], []
    for u in us:
        m = u["metrics"]
        ch = (m.get("chance") or {}).get("value")
        if ch and (m.get("precision") or {}).get("value") is not None:
            lift.append(m["precision"]["value"] / ch)
            ns = [m[k]["value"] for k in ("norm_precision", "norm_only_precision", "norm_only_step_precision")
                  if (m.get(k) or {}).get("value") is not None]
            if ns:
                norm.append(max(ns) / ch)
        wc = (m.get("window_chance") or {}).get("value")
        if wc and (m.get("window_precision") or {}).get("value") is not None:
            win.append(m["window_precision"]["value"] / wc)
    return lift, norm, win


def key_figure(verdict: dict) -> str:
    """One short string for a table cell from a (combined) Verdict.to_dict(): means over seeds/draws and
    the lowest CI lower bound ('lo'), e.g. ``lift 4.3 vs norm 4.5; window lift 1.0``."""
    us = units_of_verdict(verdict)
    check = verdict.get("check")
    parts: list[str | None] = []
    if check == "gradient_norm_baseline":
        lift, norm, win = _lifts(us)
        if lift:
            parts.append(f"lift {_mean(lift):.1f}" + (f" vs norm {_mean(norm):.1f}" if norm else ""))
        if win:
            parts.append(f"window lift {_mean(win):.2f}")
    elif check == "fluency_confound":
        raw, flu = _fig("auc", us, lo=False), _fig("fluency_auc", us, lo=False)
        parts += [raw and f"AUC {raw}" + (f" vs fluency {flu}" if flu else ""),
                  (r := _fig("residualized_auc", us)) and f"resid {r}"]
    elif check == "headroom":
        g = _fig("window_normalized_gain", us)
        parts += [g and f"gain {g}", (a := _fig("unsaturated_auc", us)) and f"unsat AUC {a}"]
        if not g:
            parts.append((h := _fig("window_headroom", us, lo=False)) and f"headroom {h}")
    elif check == "seed_draw_variance":
        parts += [(r := _fig("residualized_auc_mean", us, lo=False)) and f"resid {r}",
                  (lo := _fig("residualized_auc_min_ci_low", us, lo=False)) and f"min lo {lo}",
                  (s := _fig("min_draw_spearman", us, lo=False)) and f"rho {s}",
                  (v := _fig("variance_share_seed", us, lo=False)) and f"seed share {v}"]
    elif check == "trigger_token_alignment":
        parts += [(d := _fig("in_context_minus_placebo", us, "{:+.2f}")) and f"ctx-placebo {d}",
                  (c := _fig("in_context_mean", us, "{:+.2f}")) and f"cos {c}",
                  (k := _fig("constructed_mean", us, "{:+.2f}", lo=False)) and f"constructed {k}"]
    elif check == "target_dependence":
        parts += [(p := _fig("precision_real_minus_placebo", us, "{:+.3f}")) and f"prec real-placebo {p}",
                  (a := _fig("auc_real_minus_placebo", us, "{:+.2f}")) and f"AUC real-placebo {a}"]
    elif check == "advantage_baseline":
        parts += [(a := _fig("precision_minus_advantage", us, "{:+.3f}")) and f"vs adv {a}",
                  (w := _fig("window_precision_minus_advantage", us, "{:+.3f}")) and f"window {w}"]
    text = ", ".join(p for p in parts if p)
    if not text and verdict.get("outcome") in ("skip", "error"):
        text = _short_reason(verdict.get("reason", ""))
    return text


# ------------------------------------------------------------------------------------------- table
def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _matrix(checks, ests, cells, w0: int, cw: int) -> list[str]:
    def row(parts: list[list[str]]) -> list[str]:
        h = max(len(p) for p in parts)
        return [" | ".join(f"{(p[i] if i < len(p) else ''):<{w}}" for p, w in zip(parts, [w0] + [cw] * len(ests)))
                .rstrip() for i in range(h)]

    sep = "-+-".join(["-" * w0] + ["-" * cw] * len(ests))
    lines = row([_wrap("check", w0)] + [_wrap(e, cw) for e in ests]) + [sep]
    for c in checks:
        parts = [_wrap(c, w0)]
        for e in ests:
            label, key = cell_text(cells[(c, e)]) if (c, e) in cells else ("-", "")
            parts.append(_wrap(label, cw) + (_wrap(key, cw) if key else []))
        lines += row(parts) + [sep]
    return lines


def _by_check(checks, ests, cells, width: int) -> list[str]:
    """One line per cell grouped by check, for matrices too wide for the terminal."""
    ew = max((len(e) for e in ests), default=8)
    lines = []
    for c in checks:
        lines.append(c)
        for e in ests:
            if (c, e) not in cells:
                continue
            label, key = cell_text(cells[(c, e)])
            head = f"  {e:<{ew}}  {label:<24}"
            wrapped = _wrap(key, max(20, width - len(head) - 1)) if key else [""]
            lines.append(f"{head} {wrapped[0]}".rstrip())
            lines += [" " * (len(head) + 1) + k for k in wrapped[1:]]
    return lines


def format_table(results: list[dict], width: int | None = None) -> str:
    """The terminal summary of a list of results (the report's ``results``): a matrix checks x estimators
    when it fits in ``width`` columns (default: the terminal's, clamped to 80-140), else one line per cell
    grouped by check; fixture self-checks follow in their own block; a count of cell outcomes ends it."""
    width = width or min(140, max(80, shutil.get_terminal_size((120, 24)).columns))
    checks, ests, cells = _cells(results)
    lines: list[str] = []
    if checks:
        w0 = min(24, max(len(c) for c in checks))
        natural = max((len(x) for c in checks for e in ests if (c, e) in cells for x in cell_text(cells[(c, e)])),
                      default=8)
        for cw in range(min(30, max(natural, 12)), 15, -1):
            if w0 + (cw + 3) * len(ests) <= width:
                lines = _matrix(checks, ests, cells, w0, cw)
                break
        else:
            lines = _by_check(checks, ests, cells, width)
    fixture = [(c, cell_text(rs)) for (c, e), rs in cells.items() if e == FIXTURE]
    if fixture:
        lines += ["", "fixture self-checks:"]
        fw = max(len(c) for c, _ in fixture)
        for c, (label, key) in fixture:
            head = f"  {c:<{fw}}  {label:<6}"
            wrapped = _wrap(key, max(20, width - len(head) - 1)) if key else [""]
            lines += [f"{head} {wrapped[0]}".rstrip()] + [" " * (len(head) + 1) + k for k in wrapped[1:]]
    counts: dict[str, int] = {}
    for rs in cells.values():
        o = _cell_outcome(rs)[0]
        counts[o] = counts.get(o, 0) + 1
    lines += ["", f"{len(cells)} cells: " + ", ".join(f"{counts[o]} {o}" for o in GATE_ORDER if o in counts)]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- plots
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
    return [r for r in report.get("results", []) if cell_of(r)[0] == check and (r.get("metrics") or {})]


def _per_estimator(report: dict, check: str) -> dict[str, list[dict]]:
    """{estimator: units} of one check (units of every result of the cell, e.g. one test per seed)."""
    out: dict[str, list[dict]] = {}
    for r in _results(report, check):
        out.setdefault(cell_of(r)[1], []).extend(units(r["metrics"]))
    return out


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
    (overall), and inside the planting window (gradient_norm_baseline's per-seed metrics)."""
    per = {e: [u for u in us if (u["metrics"].get("chance") or {}).get("value")]
           for e, us in _per_estimator(report, "gradient_norm_baseline").items()}
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
    return f"s{u['seed']}" + ("" if u.get("draw") is None else f"/d{u['draw']}")


def plot_auc(report: dict) -> bytes | None:
    """(b) Raw vs fluency-residualized vs fluency within-group AUC per (seed, draw), one panel per
    estimator (fluency_confound's per-unit metrics; seed_draw_variance's variance shares in the title)."""
    per = {e: [u for u in us if "auc" in u["metrics"]]
           for e, us in _per_estimator(report, "fluency_confound").items()}
    per = {e: sorted(us, key=lambda u: (str(u["seed"]), str(u["draw"]))) for e, us in per.items() if us}
    if not per:
        return None
    sdv = _per_estimator(report, "seed_draw_variance")
    labels = _labels(report, "fluency_confound")
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
        shares = [u["metrics"] for u in sdv.get(e, []) if "variance_share_seed" in u["metrics"]]
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
    targets (trigger_token_alignment's ``series``), one panel per estimator."""
    per, cells = {}, {}
    for r in _results(report, "trigger_token_alignment"):
        s = {k: v for k, v in (r["metrics"].get("series") or {}).items() if v}
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
    """{name: PNG bytes} of every plot the report has data for."""
    out = {}
    for name, _, _, fn in PLOTS:
        png = fn(report)
        if png:
            out[name] = png
    return out


# -------------------------------------------------------------------------------------------- HTML
def _esc(x) -> str:
    return html.escape(str(x))


def _kv_table(d: dict, helps: dict | None = None) -> str:
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(json.dumps(v) if isinstance(v, (list, dict)) else v)}</td>"
                   + (f"<td class=help>{_esc(helps.get(k, ''))}</td>" if helps else "") + "</tr>"
                   for k, v in d.items())
    return f"<table class=kv>{rows}</table>"


def _matrix_html(results: list[dict]) -> str:
    checks, ests, cells = _cells(results)
    if not checks:
        return "<p>No per-estimator results.</p>"
    head = "".join(f"<th>{_esc(e)}</th>" for e in ests)
    body = ""
    for c in checks:
        tds = ""
        for e in ests:
            if (c, e) not in cells:
                tds += "<td class=empty>–</td>"
                continue
            label, key = cell_text(cells[(c, e)])
            outcome, worst = _cell_outcome(cells[(c, e)])
            m = worst.get("metrics") or {}
            tip = m.get("expected_failure") or (m.get("verdict") or {}).get("reason") or worst.get("reason") or ""
            tds += (f"<td style='background:{COLORS.get(outcome, '#fff')}' title='{_esc(tip)}'><b>{_esc(label)}</b>"
                    f"<br><span class=key>{_esc(key)}</span></td>")
        body += f"<tr><th>{_esc(c)}</th>{tds}</tr>"
    return f"<table class=matrix><tr><th>check</th>{head}</tr>{body}</table>"


def _reasons_html(results: list[dict]) -> str:
    items = []
    for r in results:
        c, e = cell_of(r)
        m = r.get("metrics") or {}
        why = m.get("expected_failure")
        text = (m.get("verdict") or {}).get("reason") or r.get("reason") or ""
        if r["outcome"] == "passed" or not (text or why):
            continue
        items.append(f"<li><b>{_esc(c)} / {_esc(e)}</b> — {_esc(LABELS.get(r['outcome'], r['outcome']))}"
                     + (f" <i>(paper: {_esc(why)})</i>" if why else "") + f"<br><small>{_esc(text)}</small></li>")
    return f"<details><summary>Reasons of every non-passing cell ({len(items)})</summary><ul>{''.join(items)}</ul>" \
           "</details>" if items else ""


def _runs_html(report: dict) -> str:
    runs, failed = report.get("runs") or [], report.get("failed_seeds") or []
    out = ""
    if runs:
        keys = ["rollouts", "gt", "chance", "ceiling", "window_chance", "window_headroom", "final_trigger_rate",
                "final_no_trigger_rate"]
        head = "".join(f"<th>{k}</th>" for k in ["seed", "W", "steps", *keys, "chosen"])
        rows = "".join("<tr>" + "".join(f"<td>{_esc(_fmt(v))}</td>" for v in
                                        [r.get("seed"), r.get("window"), r.get("steps"),
                                         *[(r.get("summary") or {}).get(k) for k in keys],
                                         json.dumps(r.get("chosen") or {})]) + "</tr>" for r in runs)
        out += f"<table class=kv><tr>{head}</tr>{rows}</table>"
    if failed:
        out += "<h3>Failed seeds (not used)</h3><ul>" + "".join(
            f"<li>seed {_esc(f.get('seed'))} ({_esc(f.get('key', ''))}): {_esc(f.get('reason', ''))}</li>"
            for f in failed) + "</ul>"
    elif runs:
        out += "<p>Failed seeds: none.</p>"
    return out


def _fmt(v) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "" if v is None else str(v)


CSS = """body{font:14px/1.45 system-ui,sans-serif;max-width:1180px;margin:20px auto;padding:0 16px;color:#222}
h1{font-size:22px;margin-bottom:2px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:4px 7px;vertical-align:top}
p.warn{background:#f9ddb1;padding:6px 10px} ul.gates li{list-style:none;padding:3px 8px;margin:2px 0}
table.matrix td{min-width:120px;font-size:13px} table.matrix th{background:#f4f4f4;text-align:left}
.key{color:#333;font-size:12px} table.kv{font-size:12px} table.kv th{text-align:left;background:#f7f7f7}
.help{color:#666} .sub{color:#555} img{max-width:100%;display:block} .cap{color:#555;font-size:13px}
td.empty{color:#aaa;text-align:center} details{margin:8px 0} small{color:#444}
.row{display:flex;gap:40px;flex-wrap:wrap}"""


def _gates_html(report: dict) -> str:
    """The gate line of every estimator and, on every page, any threshold that is not the checklist's default."""
    out = ""
    mod = report.get("modified_thresholds") or {}
    if mod:
        out += ("<p class=warn><b>Modified thresholds</b> (not the checklist's defaults): " + _esc(", ".join(
            f"{k}={v.get('value')!r} (default {v.get('default')!r})" for k, v in mod.items())) + "</p>")
    gates = report.get("gates") or []
    if gates:
        out += "<h2>Gate</h2><ul class=gates>" + "".join(
            f"<li style='background:{COLORS['PASS' if g.get('ok') else 'FAIL']}'>{_esc(g.get('line', ''))}</li>"
            for g in gates) + "</ul>"
    return out


def render_html(report: dict, out_html: str | Path, plots: dict[str, bytes] | None = None) -> Path:
    """Write one self-contained HTML page of a report (PNG plots embedded as base64); returns its path.
    `plots`: the output of :func:`render_plots` when already computed."""
    out_html = Path(out_html)
    results = report.get("results", [])
    plots = render_plots(report) if plots is None else plots
    st = report.get("settings") or {}
    counts: dict[str, int] = {}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    summary = ", ".join(f"{n} {LABELS.get(o, o)}" for o, n in sorted(counts.items(), key=lambda x: x[0]))
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>bt-bench report</title><style>{CSS}</style>",
             "</head><body><h1>bt-bench checklist report</h1>",
             f"<p class=sub>schema {_esc(report.get('schema'))} · exit status {_esc(report.get('exit_status'))} · "
             f"profile {_esc(st.get('profile'))} · seeds {_esc(st.get('seeds'))} · draws {_esc(st.get('draws'))}"
             + (f" · evidence {_esc(st.get('evidence'))}" if st.get("evidence") else "")
             + (f"<br>source: {_esc(report['source'])}" if report.get("source") else "")
             + f"<br>{len(results)} results: {_esc(summary)}</p>",
             _gates_html(report),
             "<h2>Outcomes (checks x estimators)</h2>", _matrix_html(results),
             ("<p class=cap>Hover a cell for its full reason. Labels follow the every-seed rule (FAIL 1/3: one of "
              "three units failed, so the check fails). NOT JUDGED: skipped at run time, which fails the gate; N/A: "
              "excluded by what the estimator declared. (expected): a built-in's declared outcome "
              "(bt_bench/checklist/expectations.py); (expected X!): it deviates from it.</p>"),
             _reasons_html(results)]
    fixture = [r for r in results if cell_of(r)[1] == FIXTURE]
    if fixture:
        parts.append("<h2>Fixture self-checks</h2><table class=kv>" + "".join(
            f"<tr><th>{_esc(cell_of(r)[0])}</th><td style='background:{COLORS.get(r['outcome'], '#fff')}'>"
            f"{_esc(LABELS.get(r['outcome'], r['outcome']))}</td><td>{_esc(cell_text([r])[1])}</td></tr>"
            for r in fixture) + "</table>")
    for name, title, caption, _ in PLOTS:
        parts.append(f"<h2>{_esc(title)}</h2>")
        if name in plots:
            b64 = base64.b64encode(plots[name]).decode()
            parts.append(f"<img alt='{name}' src='data:image/png;base64,{b64}'><p class=cap>{_esc(caption)}</p>")
        else:
            parts.append("<p class=cap>No data in this report for this plot.</p>")
    parts += ["<h2>Runs</h2>", _runs_html(report) or "<p>No runs in this report (replayed evidence).</p>"]
    th = report.get("thresholds") or {}
    helps = {}
    if th:
        from bt_bench.checklist.verdicts import Thresholds

        helps = Thresholds.help()
    env = {**(report.get("versions") or {}), **(report.get("machine") or {})}
    parts += ["<div class=row><div><h2>Settings</h2>", _kv_table(st), "</div><div><h2>Versions and machine</h2>",
              _kv_table(env), "</div></div><h2>Thresholds</h2>",
              _kv_table(th, helps) if th else "<p>Not recorded.</p>", "</body></html>"]
    out_html.parent.mkdir(parents=True, exist_ok=True)
    out_html.write_text("\n".join(parts), encoding="utf-8")
    return out_html


def render_markdown(report: dict, out_dir: str | Path, plots: dict[str, bytes] | None = None) -> Path:
    """Write ``report.md`` and one PNG per plot into ``out_dir``; returns the Markdown path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = render_plots(report) if plots is None else plots
    mod = report.get("modified_thresholds") or {}
    lines = ["# bt-bench checklist report", ""]
    if mod:
        lines += ["**Modified thresholds** (not the checklist's defaults): " + ", ".join(
            f"{k}={v.get('value')!r} (default {v.get('default')!r})" for k, v in mod.items()), ""]
    lines += [f"- {g.get('line', '')}" for g in report.get("gates") or []]
    lines += ["", "```", format_table(report.get("results", []), width=120), "```"]
    for name, title, caption, _ in PLOTS:
        if name in plots:
            (out / f"{name}.png").write_bytes(plots[name])
            lines += ["", f"## {title}", "", f"![{name}]({name}.png)", "", caption]
    md = out / "report.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md


# ---------------------------------------------------------------------------------------------- CLI
def load_report(path: str | Path) -> dict:
    """Read a JSON report; ValueError (with the path) when absent, not JSON, or of another schema."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"report file not found: {p}")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{p} is not a JSON report ({e})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{p}: schema {got!r} is not {SCHEMA!r}")
    return doc


def _write_outputs(doc: dict, html_path: str | None, png_dir: str | None) -> None:
    plots = render_plots(doc) if html_path or png_dir else {}
    if html_path:
        print(f"wrote {render_html(doc, html_path, plots)}")
    if png_dir:
        print(f"wrote {render_markdown(doc, png_dir, plots)}")


def main(argv: Sequence[str] | None = None) -> int:
    """``bt-bench report out.json [--html report.html] [--png-dir DIR]``: print the table of a JSON report
    and render it.  Exit 0 when rendered, 2 when the report is missing or not a bt-bench report."""
    ap = argparse.ArgumentParser(prog="bt-bench report", description="Render a bt-bench JSON report.")
    ap.add_argument("report", help=f"JSON report ({SCHEMA}), e.g. from pytest checks --bt-report out.json")
    ap.add_argument("--html", help="write a self-contained HTML page here")
    ap.add_argument("--png-dir", help="write report.md and the plots as PNG files into this folder")
    args = ap.parse_args(argv)
    try:
        doc = load_report(args.report)
    except ValueError as e:
        print(f"bt-bench report: error: {e}", file=sys.stderr)
        return 2
    print(format_table(doc.get("results", [])))
    _write_outputs(doc, args.html, args.png_dir)
    return 0


def results_from_verdicts(verdicts, evidence=None) -> list[dict]:
    """Report results (schema ``results``) from replayed combined verdicts; token-level series come from
    the evidence when given (for the alignment plot)."""
    out = []
    for v in verdicts:
        d = v.to_dict()
        metrics = {"check": v.check, "estimator": v.estimator, "key_figure": key_figure(d), "expected_failure": None,
                   "verdict": d, "per_unit": [{"seed": u["seed"], "draw": u["draw"],
                                               "verdict": {"check": v.check, "estimator": v.estimator,
                                                           "outcome": u["outcome"], "metrics": u["metrics"]}}
                                              for u in units_of_verdict(d) if u["seed"] is not None]}
        if v.check == "trigger_token_alignment" and evidence is not None:
            series: dict[str, list[float]] = {}
            for t in evidence.token_level:
                if t.estimator == v.estimator:
                    for k in ("in_context", "placebo", "constructed"):
                        if getattr(t, k) is not None:
                            series.setdefault(k, []).extend(float(x) for x in getattr(t, k))
            if series:
                metrics["series"] = series
        out.append({"nodeid": f"replay::{v.check}[{v.estimator}]", "outcome": VERDICT_OUTCOME[v.outcome],
                    "duration_s": None, "reason": None if v.outcome == "pass" else v.reason, "metrics": metrics})
    return out


def replay_main(argv: Sequence[str] | None = None) -> int:
    """``bt-bench replay PATH [--report out.json] [--html report.html] [--png-dir DIR]``: judge recorded
    evidence (a BehaviorTrace seed folder, a published file, or native evidence JSON) with the checklist.

    Exit code (the gate): 0 when every replayed verdict passes or skips, 1 when any fails or errors (an
    error means the evidence cannot support a verdict, never a pass), 2 when the input cannot be read.
    """
    ap = argparse.ArgumentParser(prog="bt-bench replay", description=replay_main.__doc__.splitlines()[0])
    ap.add_argument("path", help="BehaviorTrace seed folder (e.g. the vendored bt_bench/data/behaviortrace/seed2), a published "
                                 "BehaviorTrace file, or native evidence (.json / .json.gz)")
    ap.add_argument("--report", help="write the JSON report (schema bt-bench-report/1, runs: []) here")
    ap.add_argument("--html", help="write a self-contained HTML page here")
    ap.add_argument("--png-dir", help="write report.md and the plots as PNG files into this folder")
    args = ap.parse_args(argv)
    from bt_bench.checklist import evidence as E
    from bt_bench.plugin import Settings, write_report
    from bt_bench.checklist.verdicts import Thresholds

    th = Thresholds()
    try:
        if not Path(args.path).exists():
            raise ValueError(f"evidence not found: {args.path}")
        ev = E.load_evidence(args.path)
        verdicts = E.replay(ev, th)
    except (ValueError, OSError) as e:
        print(f"bt-bench replay: error: {e}", file=sys.stderr)
        return 2
    results = results_from_verdicts(verdicts, ev)
    gate = 1 if any(v.outcome in ("fail", "error") for v in verdicts) else 0
    print(f"replayed {ev.source}")
    print(format_table(results))
    seeds = {x.seed for x in (*ev.runs, *ev.draws, *ev.token_level)}
    draws = max((len({d.draw for d in ev.draws if d.seed == s}) for s in seeds), default=0)
    settings = Settings(estimators=tuple(ev.estimators()), profile="replay", seeds=len(seeds), draws=draws,
                        report=args.report, evidence=str(args.path))
    with tempfile.TemporaryDirectory() as tmp:  # the plugin's writer: one schema for runs and replays
        path = Path(args.report) if args.report else Path(tmp) / "report.json"
        write_report(path, settings, results, gate)
        doc = json.loads(path.read_text(encoding="utf-8"))
        for k, v in (("thresholds", th.to_dict()), ("runs", []), ("failed_seeds", []), ("source", ev.source)):
            doc.setdefault(k, v)
        tmp_path = path.with_name(path.name + ".tmp")
        tmp_path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        tmp_path.replace(path)  # atomic, like write_report
    if args.report:
        print(f"wrote {args.report}")
    _write_outputs(doc, args.html, args.png_dir)
    print(f"exit {gate}: " + ("every replayed verdict passes or skips" if gate == 0 else
                              "at least one replayed verdict fails or cannot be judged (error)"))
    return gate
