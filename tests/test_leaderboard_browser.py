"""The leaderboard page in a real browser (headless Chromium, as tests/test_report_browser.py): clicking a column
header sorts the rows by that column (a second click reverses), the page logs nothing to the console and loads
nothing from the network. Skips, saying why, where no Chromium is installed."""

from __future__ import annotations

import re

import pytest
from test_leaderboard import GN, report
from test_report_browser import BROWSER, WHY, chromium, console_messages

from bt_bench.report import leaderboard as L
from bt_bench.report.slim import slim_of

pytestmark = pytest.mark.skipif(BROWSER is None, reason=f"no headless browser: {WHY} (Debian: apt-get install -y "
                                "chromium; .ci/run installs it and says so when it cannot)")

# Record the row order (first cell of each body row) before any click, after one click on the header named by
# data-col and after a second one, into data attributes of <body>, which --dump-dom shows.
CLICK = """<script>
function order(){return Array.prototype.map.call(document.querySelectorAll('table.board tbody tr'),
  function(r){return r.cells[0].dataset.sort;}).join(',');}
var th=Array.prototype.find.call(document.querySelectorAll('table.board th'),
  function(h){return h.textContent.replace(/\\u200b/g,'').trim()===document.body.dataset.col;});
document.body.dataset.before=order(); th.click(); document.body.dataset.once=order();
th.click(); document.body.dataset.twice=order();
</script>"""


def page_orders(tmp_path, col: str) -> dict[str, list[str]]:
    cells = {"zeta": {GN: ["pass"] * 3, "headroom": ["pass"] * 3},
             "alpha": {GN: ["fail", "pass", "pass"], "headroom": ["fail"] * 3},
             "mid": {GN: ["pass"] * 3, "headroom": ["fail"] * 3}}
    html = L.render_html(L.merge([slim_of(report(cells))]))
    page = tmp_path / f"board-{col}.html"
    page.write_text(html.replace("<body>", f"<body data-col='{col}'>", 1).replace("</body>", CLICK + "</body>"))
    res = chromium(tmp_path, page, "--dump-dom")
    assert not console_messages(res.stderr), console_messages(res.stderr)
    body = re.search(r"<body([^>]*)>", res.stdout)
    assert body, f"no DOM dumped (exit {res.returncode}): {res.stderr[-3000:]}"
    got = dict(re.findall(r'data-(\w+)="([^"]*)"', body[1]))
    assert {"before", "once", "twice"} <= set(got), body[1]
    return {k: got[k].split(",") for k in ("before", "once", "twice")}


def test_clicking_the_estimator_header_sorts_by_name(tmp_path):
    o = page_orders(tmp_path, "estimator")
    assert o["before"] == ["zeta", "mid", "alpha"]  # most PASS cells first
    assert o["once"] == ["alpha", "mid", "zeta"]
    assert o["twice"] == ["zeta", "mid", "alpha"]


def test_clicking_a_check_header_sorts_by_its_label(tmp_path):
    o = page_orders(tmp_path, "headroom")
    assert o["once"][0] == "zeta" and set(o["once"][1:]) == {"alpha", "mid"}  # PASS before FAIL
    assert o["twice"][-1] == "zeta"
