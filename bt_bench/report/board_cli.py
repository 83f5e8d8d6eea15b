"""``bt-bench leaderboard`` and ``bt-bench results``: the leaderboard pages, the slim result files and the generated
docs (:mod:`.leaderboard`, :mod:`.slim`, :mod:`.docgen`).

* ``bt-bench leaderboard FILE... [--out DIR] [--slim DIR]``: FILE is a full JSON report or a slim result file;
  writes ``DIR/leaderboard.html`` and ``DIR/leaderboard.md`` (default: the current folder), and with ``--slim``
  one slim result file per fixture into that folder. The later FILE wins per estimator.
* ``bt-bench results import REPORT... [--root DIR]``: merge the reports into ``docs/results/<fixture>.json``
  (the file already there first, so the reports win per estimator) and regenerate ``docs/results.md`` and every
  generated block of ``README.md`` and ``docs/*.md``.
* ``bt-bench results docs [--root DIR] [--check]``: regenerate the docs from ``docs/results/*.json`` only;
  ``--check`` writes nothing and exits 1 when a file differs.

Exit 2 with one line ``bt-bench ...: error: ...`` for a missing, malformed or unknown-version file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import docgen
from . import leaderboard as L
from .slim import load_any


def _fail(prog: str, e: Exception) -> int:
    print(f"{prog}: error: {e}", file=sys.stderr)
    return 2


def leaderboard_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bt-bench leaderboard", description="One static HTML page and one Markdown "
                                 "page of every estimator's cells and gate line per fixture, from several reports.")
    ap.add_argument("files", nargs="+", metavar="REPORT.json", help="full JSON reports or slim result files; "
                    f"{L.MERGE_RULE}")
    ap.add_argument("--out", default=".", help="folder for leaderboard.html and leaderboard.md (default: .)")
    ap.add_argument("--slim", metavar="DIR", help="also write one slim result file per fixture into DIR")
    args = ap.parse_args(argv)
    try:
        boards = L.merge(load_any(p) for p in args.files)
    except ValueError as e:
        return _fail(ap.prog, e)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "leaderboard.html").write_text(L.render_html(boards), encoding="utf-8")
    (out / "leaderboard.md").write_text(L.render_markdown(boards), encoding="utf-8")
    print(f"wrote {out / 'leaderboard.html'} and {out / 'leaderboard.md'} ({len(boards)} fixture(s): "
          f"{', '.join(boards)})")
    if args.slim:
        for p in docgen.write_slims(boards, args.slim):
            print(f"wrote {p} ({p.stat().st_size / 1024:.1f} KiB)")
    return 0


def results_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bt-bench results", description="The slim result files in docs/results/ and "
                                 "the docs generated from them.")
    sub = ap.add_subparsers(dest="what", required=True)
    imp = sub.add_parser("import", help="merge reports into docs/results/<fixture>.json, then regenerate the docs")
    imp.add_argument("reports", nargs="+", metavar="REPORT.json")
    docs = sub.add_parser("docs", help="regenerate docs/results.md and the generated blocks of the docs")
    docs.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file differs")
    for p in (imp, docs):
        p.add_argument("--root", default=".", help="the repository root (default: .)")
    args = ap.parse_args(argv)
    prog = f"{ap.prog} {args.what}"
    root = Path(args.root)
    try:
        if args.what == "import":
            written, changed = docgen.import_reports(root, args.reports)
            for p in written:
                print(f"wrote {p} ({p.stat().st_size / 1024:.1f} KiB)")
        else:
            changed = docgen.regenerate(root, check=args.check)
    except ValueError as e:
        return _fail(prog, e)
    verb = "differ from their generated text" if getattr(args, "check", False) else "regenerated"
    print(f"{len(changed)} doc file(s) {verb}" + "".join(f"\n  {p}" for p in changed))
    return 1 if getattr(args, "check", False) and changed else 0
