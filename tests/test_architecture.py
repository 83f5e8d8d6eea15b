"""The package layout follows the data path (docs/architecture.md): a stage imports only earlier stages and itself,
no module is over 400 lines, there is no import cycle, and nothing in the repository points outside it.

Stages, in order: sketch (a leaf library: model + batch -> sketch; it imports nothing of bt_bench) < runs (planted
GRPO runs; the recorder captures in-run sketches with it) < fixture < estimator < checklist < report < plugin <
the command line and benchmarks on top.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "bt_bench"
STAGES = ["sketch", "runs", "fixture", "estimator", "checklist", "report", "plugin", "bench", "cli", "__init__",
          "__main__"]
TOP = {"bench": 7, "cli": 7, "__init__": 7, "__main__": 7}
MAX_LINES = 400


def stage_of(module: str) -> int:
    """bt_bench.fixture.derive -> index of 'fixture'."""
    part = module.split(".")[1] if "." in module else "__init__"
    part = part.removesuffix(".py")
    return TOP.get(part, STAGES.index(part) if part in STAGES else len(STAGES))


def modules() -> list[tuple[str, Path]]:
    out = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        out.append((".".join(rel.parts), p))
    return out


def imports_of(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("bt_bench")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the module's package
                base = module.split(".")[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name == "bt_bench":
                found |= {f"bt_bench.{a.name}" for a in node.names}
            elif name.startswith("bt_bench"):
                found.add(name)
                found |= {f"{name}.{a.name}" for a in node.names}  # a submodule (kept if it is one)
    return found


def test_every_module_imports_only_earlier_stages():
    bad = []
    for mod, path in modules():
        if mod.split(".")[1:2] == ["data"]:
            continue
        own = stage_of(mod)
        for imp in imports_of(path, mod):
            if imp.count(".") == 0:
                continue
            if stage_of(imp) > own:
                bad.append(f"{mod} imports {imp}")
    assert not bad, "back arrows:\n" + "\n".join(sorted(bad))


def test_no_stage_imports_an_estimator():
    """The built-in estimators (``estimators/``) are plug-ins like any third party's: the harness reaches them only
    through the registry (entry points, dotted paths), and no stage imports them, so nothing under ``bt_bench``
    depends on an estimator's code (docs/architecture.md). Maths they share with a stage lives in that stage (the
    reference kernels: ``bt_bench.fixture.kernels``)."""
    bad = []
    for mod, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            bad += [f"{mod}:{node.lineno} imports {n}" for n in names if n.split(".")[0] == "estimators"]
    assert not bad, bad


def test_the_checklist_imports_no_pytest():
    """pytest's protocol (skip, xfail, user_properties) is the plugin's (bt_bench.plugin.glue); the checklist judges
    plain arrays, so evidence replay and the report run it without pytest."""
    bad = []
    for mod, path in modules():
        if mod.split(".")[1:2] != ["checklist"]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{mod} imports {n}" for n in names if n.split(".")[0] in ("pytest", "_pytest")]
    assert not bad, bad


def test_no_module_over_the_line_budget():
    big = {m: n for m, p in modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, big


def test_no_re_export_only_module():
    """No module exists only to import names from elsewhere and hand them on (the facades a line cap once left
    behind). A package's ``__init__`` may: it is the package's front (``bt_bench.estimator`` is the plug-in
    author's API, ``bt_bench.sketch`` the sketch library's), and the harness itself imports from the submodules."""
    bad = []
    for mod, path in modules():
        if mod.endswith(".__init__"):
            continue
        body = ast.parse(path.read_text()).body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
            body = body[1:]  # the docstring
        imports = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
        rest = [n for n in body if not isinstance(n, (ast.Import, ast.ImportFrom))
                and not (isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == ["__all__"])]
        if any(isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("bt_bench"))
               for n in imports) and not rest:
            bad.append(mod)
    assert not bad, bad


def test_no_comment_cites_an_issue_number():
    """A reader of the code cannot see the issue tracker: comments and docstrings say the reason instead."""
    import re

    hits = [f"{p.relative_to(ROOT)}:{i}" for d in ("bt_bench", "estimators", "checks") for p in (ROOT / d).rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"(?i)\bissue ?#?\d+", line)]
    assert not hits, hits


def test_no_import_cycle():
    graph = {m: {i for i in imports_of(p, m) if i in dict(modules())} for m, p in modules()}
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for n in graph.get(m, ()):
            if state.get(n) == 1:
                pytest.fail("import cycle: " + " -> ".join(stack[stack.index(n):] + [n]))
            if not state.get(n):
                visit(n, stack + [n])
        state[m] = 2

    for m in graph:
        if not state.get(m):
            visit(m, [m])


# The plug-in author's API (docs/estimators.md): the protocol, the view, targets, the named errors, the objective.
PUBLIC_ESTIMATOR_API = [
    "Candidates", "Capability", "CapabilityError", "Checkpoint", "ConstantScoreError", "Estimator", "EstimatorError",
    "InvalidEstimatorError", "LabelsRefusedError", "LevelMismatchError", "MissingFieldError", "MissingInputError",
    "NonDeterministicScoreError", "NonFiniteScoreError", "OptimizerSettings", "ScoreShapeError", "ScoringFailedError",
    "Target", "TargetDefinition", "Trajectory", "rollout_batch", "rollout_losses", "target_loss",
]


def test_the_estimator_package_exports_the_author_api_only():
    """``bt_bench.estimator`` is what a plug-in author imports; the harness imports its internals (the scoring call,
    the handover builders, the label policy) from their own modules. Its namespace holds exactly ``__all__`` (plus
    the submodules Python binds on import), and nothing in it holds labels."""
    import types

    import bt_bench.estimator as api
    from bt_bench.estimator import views

    assert api.__all__ == PUBLIC_ESTIMATOR_API
    own = {n for n, v in vars(api).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert own - {"annotations"} == set(PUBLIC_ESTIMATOR_API)
    for holder in (views.CandidateData, views.Labels):
        assert holder.__name__ not in own and all(v is not holder for v in vars(api).values())
    harness = {"score_estimator", "fit_estimator", "training_candidates", "draw_candidates", "training_target",
               "labels_allowed", "TEST_ONLY", "PLACEBO_SEED", "LABEL_FIELDS", "validate_scores"}
    assert not harness & set(vars(api))


def test_repository_stands_alone():
    """No tracked file refers to a path outside the repository (the shared folder beside a checkout)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    needle = "../" + "shared"
    hits = [f for f in files if not f.startswith("bt_bench/data/") and (ROOT / f).is_file()
            and needle in (ROOT / f).read_text(errors="ignore")]
    assert not hits, hits
