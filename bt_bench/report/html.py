"""The pages: :func:`render_html` (one self-contained page, plots embedded as base64 PNG) and
:func:`render_markdown` (``report.md`` with the plots as PNG files beside it), from a JSON report of schema
``bt-bench-report/2`` (older ones are upgraded on load).  Both read the report through ``schema.normalized``: the page of a ``pytest -n 2`` run does
not depend on the order its results arrived in.  The outcome matrix has at most one column per check: with more
estimators than checks it is transposed (one row per estimator), so it never scrolls sideways.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from .plots import PLOTS, render_plots
from .schema import normalized
from bt_bench.checklist.gate import FIXTURE, cell_of

from .table import COLORS, LABELS, _cell_outcome, _cells, cell_label, cell_text, format_table, gaps


def _esc(x) -> str:
    return html.escape(str(x))


def _kv_table(d: dict, helps: dict | None = None) -> str:
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(json.dumps(v) if isinstance(v, (list, dict)) else v)}</td>"
                   + (f"<td class=help>{_esc(helps.get(k, ''))}</td>" if helps else "") + "</tr>"
                   for k, v in d.items())
    return f"<table class=kv>{rows}</table>"


def _name(x) -> str:
    """A check or estimator name for a header cell: it may break after each underscore."""
    return _esc(x).replace("_", "_<wbr>")


def _matrix_html(results: list[dict], order=(), completeness: dict | None = None) -> str:
    """The outcome matrix: rows = checks and columns = estimators, or transposed (rows = estimators, columns =
    checks) when there are more estimators than checks, so a page of many estimators stays as wide as the
    checks. A cell with units missing from ``completeness`` is INCOMPLETE."""
    checks, ests, cells = _cells(results, order, completeness)
    gap = gaps(completeness)
    if not checks:
        return "<p>No per-estimator results.</p>"
    transposed = len(ests) > len(checks)
    rows, cols = (ests, checks) if transposed else (checks, ests)
    head = "".join(f"<th>{_name(x)}</th>" for x in cols)
    body = ""
    for row in rows:
        tds = ""
        for col in cols:
            c, e = (col, row) if transposed else (row, col)
            if (c, e) not in cells:
                tds += "<td class=empty>–</td>"
                continue
            label, key = cell_text(cells[(c, e)], gap.get((c, e)))
            outcome = cell_label(cells[(c, e)], gap.get((c, e)))
            worst = _cell_outcome(cells[(c, e)])[1] if cells[(c, e)] else {}
            m = worst.get("cell") or {}
            tip = m.get("expected_failure") or m.get("reason") or worst.get("reason") or ""
            if outcome == "INCOMPLETE":
                tip = "units of the expected grid that did not run: see completeness.missing"
            tds += (f"<td style='background:{COLORS.get(outcome, '#fff')}' title='{_esc(tip)}'><b>{_esc(label)}</b>"
                    f"<br><span class=key>{_esc(key)}</span></td>")
        body += f"<tr><th>{_name(row)}</th>{tds}</tr>"
    corner, cls = ("estimator", "matrix transposed") if transposed else ("check", "matrix")
    return f"<table class='{cls}'><tr><th>{corner}</th>{head}</tr>{body}</table>"


def _reasons_html(results: list[dict]) -> str:
    items = []
    for r in results:
        c, e = cell_of(r)
        m = r.get("cell") or {}
        why = m.get("expected_failure")
        text = m.get("reason") or r.get("reason") or ""
        if r["outcome"] == "passed" or not (text or why):
            continue
        shown = "UNSUPPORTED" if m.get("outcome") == "unsupported" else \
            LABELS.get(r["outcome"], r["outcome"])  # a unit no ranking can pass: not a plain skip
        items.append(f"<li><b>{_esc(c)} / {_esc(e)}</b> — {_esc(shown)}"
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
        out += _realism_html(runs, (report.get("settings") or {}).get("profile"))
    if failed:
        out += "<h3>Failed seeds (not used)</h3><ul>" + "".join(
            f"<li>seed {_esc(f.get('seed'))} ({_esc(f.get('key', ''))}): {_esc(f.get('reason', ''))}</li>"
            for f in failed) + "</ul>"
    elif runs:
        out += "<p>Failed seeds: none.</p>"
    return out


def _realism_html(runs: list[dict], profile) -> str:
    """How hard each run's fixture is, judged without any estimator (``bt_bench.runs.realism``): one column per
    run (its fixture key and profile on top), one row per stat with what it says; '' when no run carries any."""
    from bt_bench.runs.realism import STATS

    stats = [{**((r.get("summary") or {}).get("realism") or {}), **(r.get("realism") or {})} for r in runs]
    if not any(stats):
        return ""
    names = list(STATS) + sorted({k for st in stats for k in st} - set(STATS))
    head = "".join(f"<th>seed {_esc(r.get('seed'))}<br><span class=key>{_esc(r.get('profile') or profile)} · "
                   f"{_esc(r.get('key'))}</span></th>" for r in runs)
    rows = "".join(f"<tr><th>{_esc(k)}</th>" + "".join(
        f"<td>{_esc(_fmt(st.get(k)) or 'n/a')}</td>" for st in stats) + f"<td class=help>{_esc(STATS.get(k, ''))}"
        "</td></tr>" for k in names)
    return ("<h3>Realism (how hard each fixture is, without any estimator)</h3><table class='kv realism'>"
            f"<tr><th>stat</th>{head}<th>what it says</th></tr>{rows}</table><p class=cap>n/a: undefined (e.g. no "
            "GT) or not recorded by the run's build (the behavior_* columns are newer than the run).</p>")


def _fmt(v) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "" if v is None else str(v)


CSS = """body{font:14px/1.45 system-ui,sans-serif;max-width:1180px;margin:20px auto;padding:0 16px;color:#222}
h1{font-size:22px;margin-bottom:2px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:4px 7px;vertical-align:top}
p.warn{background:#f9ddb1;padding:6px 10px} ul.gates li{list-style:none;padding:3px 8px;margin:2px 0}
table.matrix{table-layout:fixed;width:100%} table.matrix td{font-size:13px}
table.matrix th{background:#f4f4f4;text-align:left} table.matrix td,table.matrix th,table.kv td{overflow-wrap:anywhere}
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
    missing = (report.get("completeness") or {}).get("missing") or []
    if missing:
        out += (f"<p class=warn><b>Incomplete</b>: {len(missing)} unit(s) of the expected grid have no complete "
                "verdict, e.g. " + _esc(f"{missing[0].get('nodeid')} ({missing[0].get('why')})") + "</p>")
    cmd = report.get("command_line") or {}
    if cmd.get("argv"):
        out += f"<p class=sub>command line: <code>{_esc(' '.join(map(str, cmd['argv'])))}</code></p>"
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
    report = normalized(report)
    results = report["results"]
    order = (report.get("settings") or {}).get("estimators") or ()
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
             "<h2>Outcomes</h2>", _matrix_html(results, order, report.get("completeness")),
             ("<p class=cap>Hover a cell for its full reason. Labels follow the every-seed rule (FAIL 1/3: one of "
              "three units failed, so the check fails). NOT JUDGED: skipped at run time, which fails the gate; N/A: "
              "excluded by what the estimator declared; INCOMPLETE n/m missing: n of the m units of the expected "
              "grid did not run (deselected, -k, -x, fewer seeds, a crash), which fails the gate. PASS 8/9, 1 "
              "unsupported: one unit no ranking can pass (the comparison's ceiling is reached: even the labels fail "
              "it) is left out, for every estimator; more than a third of them make the check an ERROR of the "
              "fixture. (expected): a built-in's declared outcome "
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
        from bt_bench.checklist.registry import thresholds_help

        helps = thresholds_help()
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
    report = normalized(report)
    plots = render_plots(report) if plots is None else plots
    mod = report.get("modified_thresholds") or {}
    lines = ["# bt-bench checklist report", ""]
    if mod:
        lines += ["**Modified thresholds** (not the checklist's defaults): " + ", ".join(
            f"{k}={v.get('value')!r} (default {v.get('default')!r})" for k, v in mod.items()), ""]
    lines += [f"- {g.get('line', '')}" for g in report.get("gates") or []]
    lines += ["", "```", format_table(report["results"], width=120, completeness=report.get("completeness"),
                                      order=(report.get("settings") or {}).get("estimators") or ()), "```"]
    for name, title, caption, _ in PLOTS:
        if name in plots:
            (out / f"{name}.png").write_bytes(plots[name])
            lines += ["", f"## {title}", "", f"![{name}]({name}.png)", "", caption]
    md = out / "report.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md



def write_outputs(doc: dict, html_path: str | None, png_dir: str | None) -> None:
    """Render the HTML page and/or the Markdown folder of a report, printing where each went."""
    plots = render_plots(doc) if html_path or png_dir else {}
    if html_path:
        print(f"wrote {render_html(doc, html_path, plots)}")
    if png_dir:
        print(f"wrote {render_markdown(doc, png_dir, plots)}")
