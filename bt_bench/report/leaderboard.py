"""The leaderboard: every estimator's cells and gate line per fixture, from several reports, as one static HTML
page (no external asset, no network; a small inline script sorts a table by the column header clicked) and one
Markdown page.

Input: full JSON reports or slim result files (:mod:`.slim`), read by :func:`bt_bench.report.slim.load_any`.
:func:`merge` groups them by fixture (profile; fresh fixtures by gate seed too) and merges the reports of one
fixture in the order given: **the later report wins per estimator** (its cells, gate line and provenance replace
the earlier one's; the page says which report each estimator's row comes from and which it replaced), and the
fixture self-checks come from the last report that has any.  Every report's provenance is kept.  When one of those
self-checks failed or raised, no estimator's gate on that fixture counts (as in a session: ``gate.with_fixture``):
every gate reads FIXTURE FAILED, NOT JUDGED.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

from bt_bench.checklist import gate
from bt_bench.checklist.registry import CHECKS, FIXTURE_CHECKS  # checklist order; other names follow by name

from .slim import SLIM_SCHEMA, VERSIONS

RANK = {gate.PASS: 0, gate.FAIL: 1, gate.ERROR: 2, gate.NOT_JUDGED: 3, gate.INCOMPLETE: 4, gate.NA: 5}
COLORS = {gate.PASS: "#cdeccd", gate.FAIL: "#f6c6c6", gate.ERROR: "#f9ddb1", gate.NOT_JUDGED: "#f9ddb1",
          gate.INCOMPLETE: "#f6c6c6", gate.NA: "#e8e8e8"}
MERGE_RULE = "several reports of one fixture merge in the order given: the later report wins per estimator"


# ------------------------------------------------------------------------------------------------- merge
def _same(a: Mapping, b: Mapping) -> bool:
    keys = ("source", "date", "command_line", "exit_status")
    return all(a.get(k) == b.get(k) for k in keys)


def merge(slims: Iterable[Mapping]) -> dict[str, dict]:
    """{fixture: merged slim} of slim result files, in first-seen fixture order (see the module docstring). A
    report present twice (same file name, date, command line, exit status) is kept once, as read last."""
    out: dict[str, dict] = {}
    for s in slims:
        fx = s["fixture"]
        board = out.setdefault(fx, {"schema": SLIM_SCHEMA, "fixture": fx, "reports": [], "estimators": {},
                                    "fixture_checks": {}, "fixture_checks_from": None})
        index = []
        for rep in s["reports"]:
            hit = next((i for i, r in enumerate(board["reports"]) if _same(r, rep)), None)
            if hit is None:
                board["reports"].append(dict(rep))
                hit = len(board["reports"]) - 1
            else:  # the same report again: its later reading wins too
                board["reports"][hit] = dict(rep)
            index.append(hit)
        for name, est in s["estimators"].items():
            new = {**est, "from": index[est["from"]]}
            old = board["estimators"].get(name)
            replaced = list((old or {}).get("replaces") or []) + list(new.get("replaces") or [])
            if old is not None and old["from"] != new["from"]:
                replaced.append(old["from"])
            new["replaces"] = sorted(set(replaced) - {new["from"]})
            board["estimators"][name] = new
        if s.get("fixture_checks"):
            board["fixture_checks"] = dict(s["fixture_checks"])
            src = s.get("fixture_checks_from")
            board["fixture_checks_from"] = index[src] if isinstance(src, int) and 0 <= src < len(index) else None
    for board in out.values():
        board["estimators"] = dict(sorted(board["estimators"].items()))
        fixture = fixture_failures(board)
        for name, est in board["estimators"].items():
            if not est["replaces"]:
                del est["replaces"]
            if fixture and est.get("gate"):
                est["gate"] = not_judged(name, est["gate"], fixture)
    return out


def fixture_failures(board: Mapping) -> list[str]:
    """The board's fixture self-checks that failed or raised, worded as ``gate.fixture_problems`` words them."""
    fx = board.get("fixture_checks") or {}
    return [f"fixture self-check {c} {'FAILED' if v.get('label') == gate.FAIL else 'ERROR'}"
            for c, v in fx.items() if isinstance(v, Mapping) and v.get("label") in (gate.FAIL, gate.ERROR)]


def not_judged(name: str, g: Mapping, fixture: list[str]) -> dict:
    """A gate on fixtures that failed a self-check, as a session words it (``gate.with_fixture``): not ok, and
    'FIXTURE FAILED, NOT JUDGED' leads its line. A report written before sessions applied that rule (or a board whose
    self-checks come from another report of the same fixture) keeps its own line after 'as reported:'."""
    line = str(g.get("line") or "")
    if "FIXTURE FAILED, NOT JUDGED" not in line:
        line = (f"{name}: FIXTURE FAILED, NOT JUDGED: {'; '.join(fixture)}; no verdict on these fixtures counts; "
                f"as reported: {line or 'no gate line'}")
    return {**g, "ok": False, "fixture": list(fixture), "line": line}


# --------------------------------------------------------------------------------------------- content
def checks_of(board: Mapping) -> list[str]:
    found = {c for e in board["estimators"].values() for c in e["cells"]}
    return [c for c in CHECKS if c in found] + sorted(found - set(CHECKS))


def passes(est: Mapping) -> int:
    return sum(c.get("label") == gate.PASS for c in est["cells"].values())


def rows(board: Mapping) -> list[str]:
    """Estimators in leaderboard order: most PASS cells first, then by name."""
    return sorted(board["estimators"], key=lambda e: (-passes(board["estimators"][e]), e))


def label_text(cell: Mapping) -> str:
    """'FAIL 1/3', 'PASS 8/9, 1 unsupported', 'N/A'; a built-in that deviates from its declared label says so."""
    lab, count = cell.get("label") or "?", cell.get("count") or ""
    text = lab if (lab == gate.NA or not count or count.endswith("/1")) else f"{lab} {count}"
    exp = cell.get("expected")
    return text + (f" (expected {exp}!)" if exp and not gate.as_declared(lab, exp) else "")


def gate_head(est: Mapping) -> str:
    """The gate line's verdict: 'AS EXPECTED', 'DEVIATES FROM EXPECTED', 'GATE PASS', 'GATE FAIL', 'FIXTURE FAILED,
    NOT JUDGED' ('' without a gate), as ``bt_bench.checklist.gate.Gate.line`` words it."""
    g = est.get("gate") or {}
    if g.get("ok") is None:
        return ""
    if g.get("fixture"):
        return "FIXTURE FAILED, NOT JUDGED"
    if g.get("expected"):
        return "AS EXPECTED" if g["ok"] else "DEVIATES FROM EXPECTED"
    return "GATE PASS" if g["ok"] else "GATE FAIL"


def report_name(board: Mapping, i) -> str:
    reps = board["reports"]
    return f"report {i + 1} ({reps[i].get('source')})" if isinstance(i, int) and 0 <= i < len(reps) else "?"


def merge_notes(board: Mapping) -> list[str]:
    """One line per estimator whose row replaced an earlier report's."""
    return [f"{name}: from {report_name(board, e['from'])}, replacing "
            + ", ".join(report_name(board, i) for i in e["replaces"])
            for name, e in board["estimators"].items() if e.get("replaces")]


def provenance_lines(board: Mapping) -> list[tuple[str, str]]:
    """(report name, one line of its provenance) per report."""
    out = []
    for i, r in enumerate(board["reports"]):
        vers = ", ".join(f"{k} {(r.get('versions') or {}).get(k) or '?'}" for k in VERSIONS)
        seeds = ", ".join(map(str, r.get("run_seeds") or [])) or "none recorded"
        tried = r.get("tried_seeds") or []
        parts = [f"date {r.get('date') or 'unknown'}", vers,
                 f"run seeds {seeds}" + (f" (tried {', '.join(map(str, tried))})" if tried and tried != r.get(
                     "run_seeds") else "") + f"; {r.get('seeds')} seeds x {r.get('draws')} draws"]
        if r.get("gate_seed") is not None:
            parts.append(f"gate seed {r['gate_seed']}")
        mod = r.get("modified_thresholds") or {}
        parts.append("thresholds: " + (", ".join(f"{k}={v.get('value')!r} (default {v.get('default')!r})"
                                                 for k, v in mod.items()) if mod else "the defaults"))
        parts.append(f"exit status {r.get('exit_status')}")
        parts.append(f"command: {r.get('command_line') or 'not recorded'}")
        out.append((report_name(board, i), "; ".join(parts)))
    return out


def _hash(est: Mapping) -> str:
    h = est.get("source_sha256")
    return h[:12] if h else "not recorded"


# ------------------------------------------------------------------------------------------------ Markdown
def _md(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def markdown_table(board: Mapping) -> list[str]:
    """The fixture's cells as a Markdown table: one row per estimator (leaderboard order), one column per check;
    a cell is its label and key figure."""
    checks = checks_of(board)
    out = ["| estimator | gate | " + " | ".join(checks) + " |", "|---" * (len(checks) + 2) + "|"]
    for name in rows(board):
        est = board["estimators"][name]
        cells = []
        for c in checks:
            cell = est["cells"].get(c)
            cells.append("–" if cell is None else label_text(cell) + (f": {cell['key']}" if cell.get("key") else ""))
        out.append(f"| {_md(name)} | {_md(gate_head(est))} | " + " | ".join(map(_md, cells)) + " |")
    return out




def fixture_line(board: Mapping) -> str:
    got = board.get("fixture_checks") or {}
    fx = {c: got[c] for c in [*(c for c in FIXTURE_CHECKS if c in got), *sorted(set(got) - set(FIXTURE_CHECKS))]}
    if not fx:
        return "Fixture self-checks: not in these reports."
    return "Fixture self-checks: " + "; ".join(f"{c} {v['label']}" + (f": {v['key']}" if v.get("key") else "")
                                               for c, v in fx.items()) + "."


def markdown_board(board: Mapping, level: int = 2) -> list[str]:
    """A fixture's section of the Markdown page."""
    h = "#" * level
    lines = [f"{h} {board['fixture']}", "", *markdown_table(board), "", fixture_line(board), "",
             f"{h}# Gate lines", ""]
    lines += [f"- `{_md((e.get('gate') or {}).get('line') or n + ': no gate line in the report')}`"
              for n, e in board["estimators"].items()]
    lines += ["", f"{h}# Provenance", ""]
    lines += [f"- {name}: {_md(text)}" for name, text in provenance_lines(board)]
    lines += [f"- {_md(n)}: {_md(e.get('distribution') or '?')} {_md(e.get('version') or '?')}, source sha256 "
              f"{_hash(e)}, from {report_name(board, e['from'])}" for n, e in board["estimators"].items()]
    notes = merge_notes(board)
    if len(board["reports"]) > 1:
        lines += ["", f"Merged: {MERGE_RULE}." + (" " + "; ".join(notes) + "." if notes else "")]
    return lines + [""]


def render_markdown(boards: Mapping[str, Mapping], intro: Iterable[str] = ()) -> str:
    lines = ["# bt-bench leaderboard", "", *intro]
    if intro:
        lines.append("")
    lines += ["Cells: label by the every-seed rule (`FAIL 1/3`: one of three units failed) and the key figure (means "
              "over every unit of the cell, `lo`: the lowest CI lower bound) after the colon; `(expected X!)`: a built-in that "
              "deviates from its declared outcome. Rows: most PASS cells first.", ""]
    for board in boards.values():
        lines += markdown_board(board)
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------------- HTML
def _e(x) -> str:
    return html.escape(str(x), quote=True)


CSS = """body{font:14px/1.45 system-ui,sans-serif;max-width:1280px;margin:20px auto;padding:0 16px;color:#222}
h1{font-size:22px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd} h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:4px 7px;vertical-align:top}
table.board{table-layout:fixed;width:100%} table.board td{font-size:13px;overflow-wrap:anywhere}
table.board th{background:#f4f4f4;text-align:left;cursor:pointer;overflow-wrap:anywhere}
table.board th:after{content:" \\2195";color:#999} .key{color:#333;font-size:12px} .sub{color:#555}
ul.gates li{list-style:none;padding:3px 8px;margin:2px 0;font-family:monospace;font-size:12px}
table.prov{font-size:12px} table.prov th{text-align:left;background:#f7f7f7} code{font-size:12px}"""

# Sort the table whose header was clicked by that column's data-sort values (numbers numerically); a second
# click reverses. Inline, no library: the page works from a file with no network.
SCRIPT = """document.querySelectorAll('table.board').forEach(function(t){
 t.querySelectorAll('th').forEach(function(th,col){th.addEventListener('click',function(){
  var body=t.tBodies[0], rs=Array.prototype.slice.call(body.rows), dir=th.dataset.dir==='asc'?-1:1;
  t.querySelectorAll('th').forEach(function(h){delete h.dataset.dir;}); th.dataset.dir=dir===1?'asc':'desc';
  function v(r){var s=r.cells[col].dataset.sort; var n=parseFloat(s); return isNaN(n)?s:n;}
  rs.sort(function(a,b){var x=v(a),y=v(b); return (x<y?-1:x>y?1:0)*dir;});
  rs.forEach(function(r){body.appendChild(r);});});});});"""


def html_board(board: Mapping, n: int) -> str:
    checks = checks_of(board)
    head = "".join(f"<th>{_e(h).replace('_', '_<wbr>')}</th>" for h in ["estimator", "passes", "gate", *checks])
    body = ""
    for name in rows(board):
        est = board["estimators"][name]
        g = est.get("gate") or {}
        tds = (f"<td data-sort='{_e(name)}'><b>{_e(name)}</b><br><span class=key>{_e(est.get('version') or '')} "
               f"{_e(_hash(est))}</span></td><td data-sort='{-passes(est)}'>{passes(est)}</td>"
               f"<td data-sort='{0 if g.get('ok') else 1}' style='background:{COLORS[gate.PASS if g.get('ok') else gate.FAIL] if g else '#fff'}'>"
               f"{_e(gate_head(est))}</td>")
        for c in checks:
            cell = est["cells"].get(c)
            if cell is None:
                tds += "<td data-sort='9'>–</td>"
                continue
            lab = cell.get("label")
            tds += (f"<td data-sort='{RANK.get(lab, 8)}' style='background:{COLORS.get(lab, '#fff')}'>"
                    f"<b>{_e(label_text(cell))}</b><br><span class=key>{_e(cell.get('key') or '')}</span></td>")
        body += f"<tr>{tds}</tr>"
    gates = "".join(f"<li style='background:{COLORS[gate.PASS if (e.get('gate') or {}).get('ok') else gate.FAIL]}'>"
                    f"{_e((e.get('gate') or {}).get('line') or n + ': no gate line')}</li>"
                    for n, e in board["estimators"].items())
    prov = "".join(f"<tr><th>{_e(name)}</th><td>{_e(text)}</td></tr>" for name, text in provenance_lines(board))
    thr = "".join(f"<details><summary>thresholds of {_e(report_name(board, i))}</summary><code>"
                  f"{_e(', '.join(f'{k}={v}' for k, v in sorted((r.get('thresholds') or {}).items())))}</code></details>"
                  for i, r in enumerate(board["reports"]))
    notes = merge_notes(board)
    merged = (f"<p class=sub>Merged: {_e(MERGE_RULE)}." + (" " + _e("; ".join(notes)) + "." if notes else "")
              + "</p>") if len(board["reports"]) > 1 else ""
    cols = "<colgroup><col style='width:12%'><col style='width:6%'><col style='width:9%'></colgroup>"
    return (f"<h2 id='fixture-{n}'>{_e(board['fixture'])}</h2><table class=board id='board-{n}'>{cols}<thead><tr>{head}"
            f"</tr></thead><tbody>{body}</tbody></table><p class=sub>{_e(fixture_line(board))}</p>{merged}"
            f"<h3>Gate lines</h3><ul class=gates>{gates}</ul><h3>Provenance</h3><table class=prov>{prov}</table>{thr}")


def render_html(boards: Mapping[str, Mapping]) -> str:
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>bt-bench leaderboard</title><style>{CSS}"
             "</style></head><body><h1>bt-bench leaderboard</h1><p class=sub>Cells: label by the every-seed rule "
             "and key figure (means over every unit, lo: lowest CI lower bound). Click a column header to sort by it; "
             "click again to reverse. Rows start with the most PASS cells. " + _e(MERGE_RULE[0].upper() + MERGE_RULE[1:])
             + ".</p>"]
    parts += [html_board(b, i) for i, b in enumerate(boards.values())]
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"
