"""What a session selects of the checklist (a gate is decided on the whole grid or not at all):

- :func:`checklist_args`: which arguments name a checklist folder (a folder of thin check modules
  ``test_<check>.py`` that take ``SPEC = CHECKS["<check>"]``) as a whole (the folder, or a folder right above it
  such as the repository root) and which name only part of it (a module, a node id, a subfolder). A session whose
  arguments touch a checklist is gated on the whole expected grid (``bt_bench.checklist.grid``): whatever it left
  out is INCOMPLETE;
- :func:`paper_gate_refusals`: everything ``--bt-paper-gate`` refuses at configure time, so a paper's gate is never
  decided on part of the grid: -k, -m, --deselect, --ignore, node ids and paths narrower than the checklist folder,
  fewer seeds or draws than the defaults, -x/--maxfail, --lf/--ff/--sw reruns;
- :func:`command_line`: the invocation, written into the JSON report.

Import-light: the registry is imported only when a folder is looked at.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest


def is_checklist_dir(d: Path) -> bool:
    """A folder holding at least one thin check module (``test_<check>.py`` with ``CHECKS["<check>"]``)."""
    from bt_bench.checklist.registry import CHECKS

    if not d.is_dir():
        return False
    for name in CHECKS:
        f = d / f"test_{name}.py"
        try:
            if f.is_file() and f'CHECKS["{name}"]' in f.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def _arg_path(config: pytest.Config, arg: str) -> tuple[Path, bool]:
    """(resolved path, whether it names a node inside a module) of a command-line argument."""
    path, sep, _ = str(arg).partition("::")
    p = Path(path)
    if not p.is_absolute():
        p = Path(config.invocation_params.dir) / p
    if not p.exists() and getattr(config.option, "pyargs", False):  # --pyargs bt_bench.checks
        import importlib.util

        try:
            spec = importlib.util.find_spec(path)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            locs = list(spec.submodule_search_locations or [])
            p = Path(locs[0]) if locs else Path(spec.origin or p)
    return p.resolve(), bool(sep)


def checklist_args(config: pytest.Config) -> list[tuple[str, Path, bool]]:
    """(argument, checklist folder, whole) for each argument that touches a checklist folder: ``whole`` when it is
    the folder or a folder right above it, False for a module, node id or subfolder inside it."""
    out = []
    for arg in config.args:
        p, node = _arg_path(config, arg)
        base = p if p.is_dir() else p.parent
        hit = next((d for d in (base, *base.parents) if is_checklist_dir(d)), None)
        if hit is not None:
            out.append((str(arg), hit, p == hit and not node))
        elif p.is_dir():
            try:
                children = sorted(c for c in p.iterdir() if c.is_dir())
            except OSError:
                children = []
            out += [(str(arg), c, True) for c in children if is_checklist_dir(c)]
    return out


def runs_the_checklist(config: pytest.Config) -> bool:
    """Whether the session is gated on the expected grid: its arguments touch a checklist folder."""
    return bool(checklist_args(config))


def module_path(config: pytest.Config, check: str) -> str:
    """The node-id path of ``checks/test_<check>.py`` of the session's checklist folder (relative to the rootdir,
    as pytest writes node ids)."""
    import os

    found = checklist_args(config)
    folder = found[0][1] if found else Path(config.rootpath) / "checks"
    rel = os.path.relpath(folder / f"test_{check}.py", Path(config.rootpath))
    return rel.replace(os.sep, "/")


def _defaults() -> dict:
    from bt_bench.plugin.options import Settings

    return {f.name: f.default for f in dataclasses.fields(Settings)}


def full_counts(settings) -> tuple[int, int]:
    """(seeds, draws) of the whole grid: the defaults (or more when asked); a ``--bt-fixture`` pack's own seeds."""
    d = _defaults()
    seeds = settings.seeds if settings.fixture else max(settings.seeds, d["seeds"])
    return seeds, max(settings.draws, d["draws"])


def paper_gate_refusals(config: pytest.Config, settings) -> list[str]:
    """Every test selection in the session's options and arguments (empty: nothing to refuse)."""
    opt, got = config.option, []
    if getattr(opt, "keyword", ""):
        got.append(f"-k {opt.keyword!r}")
    if getattr(opt, "markexpr", ""):
        got.append(f"-m {opt.markexpr!r}")
    got += [f"--deselect {d}" for d in getattr(opt, "deselect", None) or ()]
    got += [f"--ignore {d}" for d in getattr(opt, "ignore", None) or ()]
    got += [f"--ignore-glob {d}" for d in getattr(opt, "ignore_glob", None) or ()]
    maxfail = getattr(opt, "maxfail", 0) or 0
    if maxfail:
        got.append("-x" if maxfail == 1 else f"--maxfail {maxfail}")
    for dest, flag in (("lf", "--lf"), ("failedfirst", "--ff"), ("stepwise", "--sw"), ("stepwise_skip", "--sw-skip")):
        if getattr(opt, dest, False):
            got.append(flag)
    d = _defaults()
    if settings.evidence is None:
        for name in ("seeds", "draws"):
            n = getattr(settings, name)
            if n < d[name]:
                got.append(f"the pack's {n} planted seed(s) (fewer than {d[name]})" if name == "seeds" and
                           settings.fixture else f"--bt-{name} {n} (fewer than the default {d[name]})")
    found = checklist_args(config)
    got += [f"{a} (narrower than the checklist folder {f})" for a, f, whole in found if not whole]
    if not any(whole for _, _, whole in found):
        got.append(f"no checklist folder among the arguments {list(config.args)} (run `pytest checks`)")
    return got


def refuse_selection(config: pytest.Config, settings) -> None:
    """--bt-paper-gate: a one-line usage error naming every selection the session asked for."""
    if not settings.paper_gate:
        return
    got = paper_gate_refusals(config, settings)
    if got:
        raise pytest.UsageError("--bt-paper-gate refuses any test selection (the gate needs the whole grid of every "
                                "check, seed and draw): got " + "; ".join(got))


def command_line(config: pytest.Config) -> dict:
    """The invocation: ``argv`` of the process, the arguments pytest got and the folder it ran in."""
    return {"argv": list(sys.argv), "args": [str(a) for a in config.invocation_params.args],
            "dir": str(config.invocation_params.dir)}


__all__ = ["checklist_args", "command_line", "full_counts", "is_checklist_dir", "module_path",
           "paper_gate_refusals", "refuse_selection", "runs_the_checklist"]
