"""``bt-bench`` command line: build / runs / show planted runs, list estimators, run benchmarks and checks.

Every setting is validated (``RunConfig.__post_init__``) before any work starts; a bad one exits with code 2 and
a message that names the setting and its allowed values.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bt_bench.runs.options import add_run_args as _add_run_args
from bt_bench.runs.options import configs as _configs
from bt_bench.runs.options import summary_line as _summary_line


def checks_dir() -> Path:
    """The ``checks/`` folder shipped inside the package (``bt_bench/checks``), else the repo's ``checks/``."""
    here = Path(__file__).resolve().parent
    for cand in (here / "checks", here.parent / "checks"):
        if cand.is_dir() and any(cand.glob("test_*.py")):
            return cand
    raise FileNotFoundError("bt-bench: no checklist found (expected bt_bench/checks or ./checks)")



def cmd_replay(args) -> int:
    """``bt-bench replay [PATH | example] [options]``: no argument, or the word ``example`` in place of PATH,
    replays the built-in example (the vendored BehaviorTrace seed-2 rows, ``bt_bench.checklist.examples``)."""
    from bt_bench.checklist.examples import behaviortrace_seed2
    from bt_bench.report.replay import replay_main

    rest = list(args.rest)
    if not rest or rest[0] == "example":
        rest = [str(behaviortrace_seed2())] + rest[1:]
    return replay_main(rest)


def cmd_build(args) -> int:
    import time

    from bt_bench.runs.build import build_run

    cfgs = _configs(args)  # validate every seed's config before any work starts
    if args.num_processes != 1:  # data parallel through trl's own distributed path (bt_bench.runs.build_dist)
        from bt_bench.runs.build_dist import launch

        return launch(args, args.num_processes, args.launcher)
    for cfg in cfgs:
        t0 = time.perf_counter()
        run = build_run(cfg, args.cache_dir, rebuild=args.rebuild, progress=not args.quiet)
        print(_summary_line(run) + f" | this call {time.perf_counter() - t0:.1f}s", flush=True)
    return 0


def cmd_runs(args) -> int:
    from bt_bench.runs.store import list_runs

    runs = list_runs(args.cache_dir)
    if not runs:
        print("no cached runs (build one: bt-bench build --profile tiny --seeds 0)")
        return 0
    print(f"{'key':22} {'profile':8} {'seed':>4} {'planted':8} {'|GT|':>6} {'chance':>7} {'ceiling':>8} created")
    for r in runs:
        print(f"{r['key']:22} {r['profile']:8} {r['seed']:>4} {r['planted']!s:8} {r.get('gt', '?'):>6} "
              f"{r.get('chance', float('nan')):7.3f} {r.get('ceiling', float('nan')):8.3f} {r.get('created', '')}")
    return 0


def cmd_show(args) -> int:
    from bt_bench.runs.store import cache_root, load_run, run_dir

    root = cache_root(args.cache_dir)
    matches = [d for d in (root / "runs").glob(f"{args.run}*") if d.is_dir() and not d.name.startswith(".")]
    if len(matches) != 1:
        print(f"bt-bench show: {len(matches)} runs match {args.run!r} (use `bt-bench runs` to list keys)",
              file=sys.stderr)
        return 2
    run = load_run(run_dir(root, matches[0].name))
    print(_summary_line(run))
    print("gate:", run.manifest["gate"]["reason"])
    print(f"checkpoints ({len(run.checkpoints)}): {run.checkpoints}")
    print("learning curve (step: behavior rate with trigger / without):")
    W = run.config.window
    for c in run.curve():
        bar = "#" * int(round(40 * c["trigger_rate"]))
        mark = " <- W (window ends)" if c["step"] == W else ""
        print(f"  {c['step']:>6}: {c['trigger_rate']:.2f} / {c['no_trigger_rate']:.2f} {bar}{mark}")
    _print_realism(run, root)
    return 0


def _print_realism(run, root: Path) -> None:
    """The realism block of ``show``: the run's stats (recorded by its build, else computed from its columns) and
    the fluency AUC of every derived fixture of the run (one per derived-data setting)."""
    import json

    from bt_bench.fixture.reader import Fixture
    from bt_bench.runs.realism import STATS, run_realism

    recorded = "realism" in run.manifest["summary"]
    print(f"realism ({'recorded by the build' if recorded else 'computed from the columns'}; None: undefined or "
          "not recorded by this run's build):")

    def line(k, v, note=""):
        val = f"{v:.3f}" if isinstance(v, float) else str(v)
        print(f"  {k:27} {val:>6}{note}  {STATS.get(k, '')}")

    rz = run_realism(run)
    for k in [k for k in STATS if k in rz] + [k for k in rz if k not in STATS]:
        line(k, rz[k])
    derived = 0
    for mf in sorted((root / "derived").glob("*/manifest.json")):
        try:
            if json.loads(mf.read_text()).get("run") == run.key:
                derived += 1
                r = Fixture(run, mf.parent, verify=False).realism()
                line("fluency_auc_saturated", r["fluency_auc_saturated"],
                     f" (derived {mf.parent.name}, step {r['saturated_step']})")
        except (OSError, ValueError, KeyError) as e:  # a derived folder being written or damaged: say so, go on
            print(f"  derived {mf.parent.name}: unreadable ({e})")
    if not derived:
        print("  fluency_auc_saturated: no derived data for this run yet (bt-bench check derives it)")


def cmd_pack(args) -> int:
    """``bt-bench pack`` and ``unpack``: the checks, the layout and the messages live in bt_bench.fixture.pack."""
    from bt_bench.fixture import pack

    try:
        if args.cmd == "pack":
            pack.pack(args.runs, args.output, args.cache_dir, derived=args.derived, progress=not args.quiet)
        else:
            pack.unpack(args.file, args.cache_dir, progress=not args.quiet)
    except pack.PackError as e:  # refused: the message names the member and the fault; no archive, cache as it was
        print(f"bt-bench {args.cmd}: refused: {e}", file=sys.stderr)
        return 1
    return 0


def cmd_derive(args) -> int:
    """``bt-bench derive``: sharded derive; the work, checks and messages live in bt_bench.fixture.shard."""
    from bt_bench.fixture import shard

    return shard.main(args.rest, prog="bt-bench derive")


def cmd_estimators(args) -> int:
    from bt_bench.estimator.registry import format_estimator_table

    print(format_estimator_table())
    return 0


def cmd_bench(args) -> int:
    if args.rest[:1] == ["capture"]:
        from bt_bench.bench import capture

        return int(capture.main(args.rest[1:]) or 0)
    if args.rest[:1] == ["sketch-seeds"]:
        from bt_bench.bench import sketch_seeds

        return int(sketch_seeds.main(args.rest[1:]) or 0)
    from bt_bench.bench import sketch

    return int(sketch.main(args.rest) or 0)


def cmd_check(args) -> int:
    """Run the installed checklist from any folder (for users who installed from a wheel)."""
    import pytest


    return int(pytest.main([str(checks_dir()), *args.rest]))  # the plugin loads through its pytest11 entry point


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bt-bench", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build planted runs (cached by config hash)")
    _add_run_args(b)
    b.add_argument("--quiet", action="store_true", help="no progress bars")
    b.add_argument("--num-processes", type=int, default=1,
                   help="data-parallel build over N local processes (trl's distributed GRPO; bt_bench.runs.build_dist)")
    b.add_argument("--launcher", choices=("torchrun", "accelerate"), default="torchrun",
                   help="how --num-processes starts the processes")
    b.set_defaults(func=cmd_build)
    r = sub.add_parser("runs", help="list cached runs")
    r.add_argument("--cache-dir", default=None)
    r.set_defaults(func=cmd_runs)
    s = sub.add_parser("show", help="summary and learning curve of one run (key or key prefix)")
    s.add_argument("run")
    s.add_argument("--cache-dir", default=None)
    s.set_defaults(func=cmd_show)
    pk = sub.add_parser("pack", help="write runs (keys or key prefixes) and their derived data to one checked "
                        "archive: `bt-bench pack KEY... -o fixtures.tar[.gz]`")
    pk.add_argument("runs", nargs="+", metavar="RUN_KEY")
    pk.add_argument("-o", "--output", required=True, help="archive to write (.tar, or .tar.gz/.tgz: gzip)")
    pk.add_argument("--derived", nargs="+", default=None, metavar="DERIVED_KEY",
                    help="only these derived folders (keys or prefixes; default: every one of each run)")
    up = sub.add_parser("unpack", help="check a pack completely, then add its runs and derived data to the cache")
    up.add_argument("file")
    for p in (pk, up):
        p.add_argument("--cache-dir", "--cache", dest="cache_dir", default=None)
        p.add_argument("--quiet", action="store_true", help="no progress lines")
        p.set_defaults(func=cmd_pack)
    d = sub.add_parser("derive", help="derive a run's fixture data in parts: `bt-bench derive RUN --shard I/N` "
                       "(under torchrun/accelerate launch: RANK/WORLD_SIZE), then `bt-bench derive RUN --merge N`",
                       add_help=False, prefix_chars="+")  # every option goes to shard.main
    d.add_argument("rest", nargs=argparse.REMAINDER)
    d.set_defaults(func=cmd_derive)
    e = sub.add_parser("estimators", help="list registered estimators")
    e.set_defaults(func=cmd_estimators)
    # add_help=False + prefix_chars="+": every argument (options included) passes through untouched
    be = sub.add_parser("bench", help="benchmarks, e.g. `bt-bench bench sketch --json out.json`", add_help=False,
                        prefix_chars="+")
    be.add_argument("rest", nargs=argparse.REMAINDER)
    be.set_defaults(func=cmd_bench)
    c = sub.add_parser("check", help="run the installed checklist (pytest) with --bt-* options", add_help=False,
                       prefix_chars="+")
    c.add_argument("rest", nargs=argparse.REMAINDER)
    c.set_defaults(func=cmd_check)
    rp = sub.add_parser("report", help="table + HTML page of a JSON report: `bt-bench report out.json --html r.html`",
                        add_help=False, prefix_chars="+")  # every -option goes to report.main
    rp.add_argument("rest", nargs=argparse.REMAINDER)
    rp.set_defaults(func=lambda a: __import__("bt_bench.report.cli", fromlist=["main"]).main(a.rest))
    rl = sub.add_parser("replay", help="judge recorded evidence: `bt-bench replay DIR [--report out.json]`; "
                        "no argument or `example` replays the built-in BehaviorTrace seed-2 rows "
                        "(exit 0 pass/skip, 1 fail/error, 2 unreadable)", add_help=False, prefix_chars="+")
    rl.add_argument("rest", nargs=argparse.REMAINDER)
    rl.set_defaults(func=cmd_replay)
    for name, fn, text in (("leaderboard", "leaderboard_main", "one HTML + one Markdown page of several reports: "
                            "`bt-bench leaderboard A.json B.json --out DIR` (the later report wins per estimator)"),
                           ("results", "results_main", "slim result files and generated docs: `bt-bench results "
                            "import REPORT.json` / `bt-bench results docs [--check]`")):
        lb = sub.add_parser(name, help=text, add_help=False, prefix_chars="+")  # every -option goes to board_cli
        lb.add_argument("rest", nargs=argparse.REMAINDER)
        lb.set_defaults(func=lambda a, fn=fn: getattr(__import__("bt_bench.report.board_cli", fromlist=[fn]), fn)(a.rest))
    args = ap.parse_args(argv)
    old = _inductor_into_cache(args)
    try:
        return args.func(args)
    except ValueError as e:  # configuration errors: name the setting and the allowed values
        print(f"bt-bench {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    finally:
        if old is not _KEEP:
            os.environ.pop(_INDUCTOR, None)


_INDUCTOR, _KEEP = "TORCHINDUCTOR_CACHE_DIR", object()


def _inductor_into_cache(args):
    """Importing trl makes torch create ``$TMPDIR/torchinductor_<user>``, which would stay behind after every
    command: point it into the run cache, as the pytest plugin does (``bt_bench.plugin._keep_temp_clean``). A value
    the user set is kept, and ``check`` is left to the plugin. Returns ``_KEEP`` when nothing was set."""
    if os.environ.get(_INDUCTOR) is not None or args.cmd == "check":
        return _KEEP
    from bt_bench.runs.store import cache_path

    # cache_path, not cache_root: `bt-bench estimators` creates no cache folder
    os.environ[_INDUCTOR] = str(cache_path(getattr(args, "cache_dir", None) or None) / "torchinductor")
    return None


if __name__ == "__main__":
    sys.exit(main())
