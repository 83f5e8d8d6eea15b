"""The HTML report in a real browser (headless Chromium): the page of a real-looking report renders (a screenshot
that is not blank), logs nothing to the console, and does not scroll sideways, even with 16 estimators.

Skips, saying why, where no Chromium is installed (Debian package ``chromium``; ``.ci/run`` installs it).  Set
``BT_BENCH_CHROMIUM`` to a browser binary to use another one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from test_report import real_looking, synthetic_report, wide_report

from bt_bench.report.html import render_html

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1280, 2000


def _browser() -> str | None:
    env = os.environ.get("BT_BENCH_CHROMIUM")
    if env:
        return shutil.which(env) or (env if os.access(env, os.X_OK) else None)
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


BROWSER = _browser()
WHY = (f"BT_BENCH_CHROMIUM={os.environ['BT_BENCH_CHROMIUM']!r} is not an executable"
       if os.environ.get("BT_BENCH_CHROMIUM") else "none of " + ", ".join(CANDIDATES) + " is on PATH")
pytestmark = pytest.mark.skipif(BROWSER is None, reason=f"no headless browser: {WHY} (Debian: apt-get install -y "
                                "chromium; .ci/run installs it and says so when it cannot)")


def chromium(tmp_path, page, *args: str) -> subprocess.CompletedProcess:
    """Run the browser headless on a local page (own profile folder, so parallel workers do not collide)."""
    cmd = [BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
           f"--window-size={WIDTH},{HEIGHT}", *args, page.resolve().as_uri()]
    try:
        return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{BROWSER} did not finish in 180 s: {(e.stderr or b'')[-2000:]!r}")


def console_messages(stderr: str) -> list[str]:
    """Console output of the page (Chromium logs every level, console.error and uncaught exceptions included, as
    ``...:CONSOLE...] "message", source: ...``). The report page has no script, so any line is a fault."""
    return [line for line in stderr.splitlines() if re.search(r":CONSOLE\b|Uncaught", line)]


def screenshot(tmp_path, page) -> tuple[np.ndarray, list[str]]:
    png = tmp_path / (page.stem + ".png")
    res = chromium(tmp_path, page, f"--screenshot={png}")
    assert png.is_file() and png.stat().st_size > 0, f"no screenshot (exit {res.returncode}): {res.stderr[-3000:]}"
    import matplotlib.image

    return matplotlib.image.imread(str(png)), console_messages(res.stderr)


def test_console_check_sees_errors(tmp_path):
    """The console check itself: a page that logs an error and throws is caught (so a silent page means one)."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><p>x</p><script>console.error('boom'); missingFunction();</script>")
    _, msgs = screenshot(tmp_path, page)
    assert any("boom" in m for m in msgs) and any("Uncaught" in m for m in msgs), msgs


def test_report_page_renders_in_a_browser(tmp_path):
    page = render_html(real_looking(synthetic_report()), tmp_path / "report.html")
    img, msgs = screenshot(tmp_path, page)
    assert not msgs, msgs
    assert img.shape[:2] == (HEIGHT, WIDTH)
    rgb = (img[..., :3] * 255).round().astype(np.uint8).reshape(-1, 3)
    colors = len(np.unique(rgb, axis=0))
    ink = float(np.mean(rgb.min(axis=1) < 245))
    assert colors > 200, f"only {colors} distinct colors: a blank or unstyled page?"
    assert ink > 0.05, f"only {ink:.1%} of the pixels are not white"
    for hue in ((0xcd, 0xec, 0xcd), (0xf6, 0xc6, 0xc6)):  # the PASS and FAIL cell colors of the matrix
        assert (np.abs(rgb.astype(int) - hue).sum(axis=1) <= 3).sum() > 500, f"no cell of color {hue}"


MEASURE = ("<script>const m = document.querySelector('table.matrix').getBoundingClientRect();"
           "document.body.dataset.scroll = document.documentElement.scrollWidth;"
           "document.body.dataset.inner = window.innerWidth;"
           "document.body.dataset.matrixRight = Math.ceil(m.right);"
           "document.body.dataset.matrixRows = document.querySelectorAll('table.matrix tr').length;</script>")


@pytest.mark.parametrize("kind", ["wide", "real"])
def test_page_does_not_scroll_sideways(tmp_path, kind):
    """16 estimators (transposed matrix) and the real-looking page: nothing wider than the window."""
    doc = wide_report(16) if kind == "wide" else real_looking(synthetic_report())
    page = render_html(doc, tmp_path / f"{kind}.html")
    page.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    res = chromium(tmp_path, page, "--dump-dom")
    assert not console_messages(res.stderr), console_messages(res.stderr)
    body = re.search(r"<body([^>]*)>", res.stdout)
    assert body, f"no DOM dumped (exit {res.returncode}): {res.stderr[-3000:]}"
    got = dict(re.findall(r'data-([\w-]+)="(\d+)"', body[1]))
    assert set(got) >= {"scroll", "inner", "matrix-right", "matrix-rows"}, body[1]
    assert int(got["scroll"]) <= int(got["inner"]), f"page scrolls sideways: {got}"
    assert int(got["matrix-right"]) <= int(got["inner"]), f"matrix wider than the window: {got}"
    if kind == "wide":
        assert int(got["matrix-rows"]) == 17  # a header and one row per estimator
