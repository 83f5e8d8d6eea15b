"""pytest plugin for bt-bench (registered under ``pytest11``). Import-light: no torch at module top.

It adds the ``bt_bench`` option group (``--bt-*``; the same keys are read from ``[tool.bt_bench]`` in the
rootdir's pyproject.toml), keeps its settings in ``config.stash``, provides the session fixtures the checks use
(planted runs, built once even under ``pytest -n 2`` thanks to the store's lock), collects each check's metrics
from ``user_properties`` (they travel from xdist workers), prints a summary table and writes the JSON report
once, on the controller.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPORT_SCHEMA = "bt-bench-report/1"


@dataclasses.dataclass(frozen=True)
class Settings:
    """Resolved ``--bt-*`` settings (command line > ``[tool.bt_bench]`` > defaults)."""

    estimators: tuple[str, ...] = ()
    profile: str = "tiny"
    seeds: int = 3
    draws: int = 3
    cache_dir: str | None = None
    rebuild: bool = False
    report: str | None = None
    evidence: str | None = None
    strict: bool = False


settings_key = pytest.StashKey[Settings]()
results_key = pytest.StashKey[list]()

_OPTIONS = {  # name: (type, help)
    "estimator": (str, "estimator name or pkg.module:Class (repeatable; default: every registered estimator "
                       "except test-only ones)"),
    "profile": (str, "fixture profile: tiny (default), smoke, paper"),
    "seeds": (int, "number of planted seeds (default 3)"),
    "draws": (int, "number of generation draws per checkpoint (default 3)"),
    "cache-dir": (str, "run store root (default $BT_BENCH_CACHE or ~/.cache/bt-bench)"),
    "rebuild": (bool, "rebuild the fixtures even if cached"),
    "report": (str, "write the JSON report to this path"),
    "evidence": (str, "replay recorded evidence from this folder instead of building fixtures"),
    "strict": (bool, "expected (paper) failures count as failures"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bt_bench", "bt-bench checklist")
    for name, (typ, help_) in _OPTIONS.items():
        dest = "bt_" + name.replace("-", "_")
        if typ is bool:
            group.addoption(f"--bt-{name}", action="store_true", default=None, dest=dest, help=help_)
        elif name == "estimator":
            group.addoption(f"--bt-{name}", action="append", default=None, dest=dest, help=help_)
        else:
            group.addoption(f"--bt-{name}", type=typ, default=None, dest=dest, help=help_)


def _pyproject_settings(rootdir: Path) -> dict[str, Any]:
    import tomllib

    p = rootdir / "pyproject.toml"
    if not p.exists():
        return {}
    with open(p, "rb") as f:
        return tomllib.load(f).get("tool", {}).get("bt_bench", {})


def resolve_settings(config: pytest.Config) -> Settings:
    file = _pyproject_settings(Path(str(config.rootpath)))
    known = {f.name for f in dataclasses.fields(Settings)} | {"estimator"}
    unknown = sorted(set(file) - known)
    if unknown:
        raise pytest.UsageError(f"[tool.bt_bench] has unknown key(s) {unknown}; known: {sorted(known)}")
    vals: dict[str, Any] = {}
    for name in _OPTIONS:
        field = name.replace("-", "_")
        cli = config.getoption("bt_" + field)
        fkey = "estimators" if field == "estimator" else field
        v = cli if cli is not None else file.get(field, file.get(fkey))
        if v is not None:
            vals[fkey] = tuple([v] if isinstance(v, str) else v) if fkey == "estimators" else v
    s = Settings(**vals)
    if s.seeds < 1 or s.draws < 1:
        raise pytest.UsageError(f"--bt-seeds and --bt-draws must be >= 1 (got {s.seeds}, {s.draws})")
    from bt_bench.config import PROFILES

    if s.profile not in PROFILES:
        raise pytest.UsageError(f"--bt-profile {s.profile!r} is unknown: allowed {sorted(PROFILES)}")
    return s


def pytest_configure(config: pytest.Config) -> None:
    config.stash[settings_key] = resolve_settings(config)
    config.stash[results_key] = []


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _worker_index(config: pytest.Config) -> int:
    wid = getattr(config, "workerinput", {}).get("workerid", "gw0")
    return int(wid[2:]) if wid.startswith("gw") and wid[2:].isdigit() else 0


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def bt_settings(pytestconfig) -> Settings:
    return pytestconfig.stash[settings_key]


@pytest.fixture(scope="session")
def bt_runs(pytestconfig, bt_settings):
    """The planted runs: the first ``--bt-seeds`` seeds of 0, 1, 2, ... that pass the planting gate, and the failed
    ones. Workers build in a rotated order so two xdist workers build two seeds at once; the store's lock makes
    each run build exactly once."""
    from bt_bench.build import build_run, fixture_seeds
    from bt_bench.config import make_config

    cfg = make_config(bt_settings.profile)
    n = bt_settings.seeds
    order = list(range(n))
    r = _worker_index(pytestconfig) % n
    for seed in order[r:] + order[:r]:  # warm the cache in parallel across workers
        build_run(dataclasses.replace(cfg, seed=seed), bt_settings.cache_dir, rebuild=bt_settings.rebuild,
                  progress=False)
    runs, failed = fixture_seeds(cfg, n, bt_settings.cache_dir, progress=False)
    return {"runs": runs, "failed": failed}


def record(request, **metrics) -> None:
    """Attach metrics to the current test's report (they travel from xdist workers to the controller)."""
    request.node.user_properties.append(("bt_bench", json.dumps(metrics, default=_json_default)))


def _json_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)
    return str(o)


# ---------------------------------------------------------------- collection of results and the report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    cfg = _CONFIG.get("config")
    if cfg is None or _is_worker(cfg):
        return
    metrics = {}
    for k, v in report.user_properties:
        if k == "bt_bench":
            metrics.update(json.loads(v))
    if not metrics and "checks" not in report.nodeid.replace("\\", "/").split("/")[0:1]:
        return
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xpass" if report.passed else "xfail"
    elif report.when == "setup" and report.failed:
        outcome = "error"
    cfg.stash[results_key].append({"nodeid": report.nodeid, "outcome": outcome, "metrics": metrics,
                                   "duration_s": round(report.duration, 3),
                                   "reason": (str(report.longrepr)[-400:] if report.skipped else None)})


_CONFIG: dict[str, Any] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG["config"] = session.config


def _rows(results: list[dict]) -> list[dict]:
    return [r for r in results if r["metrics"]]


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    rows = _rows(config.stash.get(results_key, []))
    if not rows:
        return
    tr = terminalreporter
    tr.section("bt-bench checklist")
    label = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP", "xfail": "FAIL (expected, paper)",
             "xpass": "XPASS"}
    width = max(len(r["nodeid"].split("::")[-1]) for r in rows)
    for r in rows:
        key = r["metrics"].get("key_figure", "")
        tr.write_line(f"{r['nodeid'].split('::')[-1]:<{width}}  {label.get(r['outcome'], r['outcome']):<24} {key}")


def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
    config = session.config
    s = config.stash.get(settings_key, None)
    if _is_worker(config) or s is None or not s.report:
        return
    write_report(Path(s.report), s, config.stash.get(results_key, []), int(exitstatus))


def write_report(path: Path, s: Settings, results: list[dict], exitstatus: int) -> None:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    vers = {}
    for dist in ("bt-bench", "torch", "trl", "transformers", "numpy", "scipy"):
        try:
            vers[dist] = version(dist)
        except PackageNotFoundError:
            vers[dist] = None
    doc = {"schema": REPORT_SCHEMA, "exit_status": exitstatus, "settings": dataclasses.asdict(s),
           "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "cpus": os.cpu_count()},
           "versions": vers, "results": results}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=_json_default))
    os.replace(tmp, path)
