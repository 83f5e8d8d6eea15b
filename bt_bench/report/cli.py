"""``bt-bench report out.json [--html report.html] [--png-dir DIR]``: print the table of a JSON report and
render its pages."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .html import write_outputs
from .schema import SCHEMA, load_report, normalized
from .table import format_table


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table of a JSON report and render it.  Exit 0 when rendered, 2 when the report is missing or
    not a bt-bench report."""
    ap = argparse.ArgumentParser(prog="bt-bench report", description="Render a bt-bench JSON report.")
    ap.add_argument("report", help=f"JSON report ({SCHEMA}), e.g. from pytest checks --bt-report out.json")
    ap.add_argument("--html", help="write a self-contained HTML page here")
    ap.add_argument("--png-dir", help="write report.md and the plots as PNG files into this folder")
    args = ap.parse_args(argv)
    try:
        doc = normalized(load_report(args.report))
    except ValueError as e:
        print(f"bt-bench report: error: {e}", file=sys.stderr)
        return 2
    print(format_table(doc["results"], order=(doc.get("settings") or {}).get("estimators") or (),
                       completeness=doc.get("completeness")))
    write_outputs(doc, args.html, args.png_dir)
    return 0
