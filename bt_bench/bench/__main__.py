"""``python -m bt_bench.bench sketch|ladder|scale|capture|sketch-seeds ...``: the same as ``bt-bench bench ...``."""

import sys

from bt_bench.cli import main

raise SystemExit(main(["bench", *sys.argv[1:]]))
