"""pytest plugin for bt-bench (registered under ``pytest11`` as ``bt_bench.plugin``). Import-light: no torch at
module top.

- ``options``: the ``--bt-*`` option group and the validated ``Settings`` (command line > ``[tool.bt_bench]`` >
  defaults);
- ``fixtures``: the session fixtures the checks use (planted runs, derived fixtures, the ``Suite``) and their
  parametrization over estimators, seeds and draws;
- ``session``: the ``BtSession`` object that collects results, decides the gates, prints and writes the report;
- ``robust``: third-party robustness: ``--bt-timeout``, one terminal line per estimator error, xdist worker crashes;
- ``selection``: the checklist folder a session runs, ``--bt-paper-gate``'s refusal of any test selection, and the
  command line the report records (the expected grid itself is ``bt_bench.checklist.grid``);
- ``progress``: the progress lines of long work (building, deriving) on the terminal the user watches, also from
  xdist workers;
- ``glue``: the pytest side of a cell for the thin modules in ``checks/``: the skip/xfail/assert protocol of a
  verdict and the figures in ``user_properties``. The thin modules import it (``bt_bench.plugin.glue``) and
  nothing else of the plugin.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bt_bench.plugin.fixtures import bt_runs, bt_settings, bt_suite, generate_tests, settings_key
from bt_bench.plugin.options import SESSION_ENV, Settings, add_options, resolve_settings
from bt_bench.plugin.robust import Robustness
from bt_bench.plugin.session import BtSession

__all__ = ["BtSession", "Settings", "bt_runs", "bt_settings", "bt_suite", "settings_key"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    from bt_bench.plugin.glue import GLUE_KEY

    s = resolve_settings(config)
    if not hasattr(config, "workerinput"):  # the controller refuses; xdist workers only run what it accepted
        from bt_bench.plugin.selection import refuse_selection

        refuse_selection(config, s)
    config.stash[settings_key] = s
    _keep_temp_clean(config, s)
    from bt_bench.estimator import sealed  # numpy, no torch

    sealed.ISOLATION.mode = s.isolation
    # replayed evidence is nobody's built-in on a profile's fixture, and a gate's fresh fixtures are not the fixtures
    # the built-ins' outcomes were declared on: no declared outcome applies to either
    fresh = s.evidence or s.gate_seed is not None
    config.stash[GLUE_KEY] = {"profile": None if fresh else s.profile, "strict": s.strict, "lds": s.lds}
    config.pluginmanager.register(BtSession(config, s), "bt_bench_session")
    config.pluginmanager.register(Robustness(config, s), "bt_bench_robustness")
    from bt_bench.plugin.progress import ProgressRelay

    config.pluginmanager.register(ProgressRelay(config), "bt_bench_progress")


_INDUCTOR = "TORCHINDUCTOR_CACHE_DIR"
_CACHE = "BT_BENCH_CACHE"
_OLD_ENV_KEY = pytest.StashKey[dict]()


def _keep_temp_clean(config: pytest.Config, s) -> None:
    """Importing trl makes torch create ``$TMPDIR/torchinductor_<user>``, which would stay behind after every run;
    point torch's inductor cache into the run cache instead (a cache belongs there); a value the user set is kept.
    And ``--bt-cache-dir`` becomes ``$BT_BENCH_CACHE``, so every part of the stack that finds the cache by itself
    (the counterfactual replays of checks 9 and 10) uses the same one. And the session's id (the score cache's
    ``--bt-rescore`` reads only what this session stored). Set for this session only (the xdist workers
    inherit it); the old values come back at unconfigure."""
    from bt_bench.plugin.selection import runs_the_checklist

    if not runs_the_checklist(config):
        return  # a session of someone else's tests: leave its environment alone
    from bt_bench.runs.store import cache_root  # numpy, no torch

    config.stash[_OLD_ENV_KEY] = {k: os.environ.get(k) for k in (_INDUCTOR, _CACHE, SESSION_ENV)}
    if not hasattr(config, "workerinput"):  # one id per session: the controller's, which its workers inherit
        import uuid

        os.environ[SESSION_ENV] = uuid.uuid4().hex
    if s.cache_dir is not None:
        os.environ[_CACHE] = str(cache_root(s.cache_dir))
    if os.environ.get(_INDUCTOR) is None:
        os.environ[_INDUCTOR] = str(cache_root(s.cache_dir) / "torchinductor")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist: every worker builds the same fresh fixtures as the controller (the gate seed it drew)."""
    from bt_bench.plugin.options import GATE_SEED_KEY

    seed = node.config.stash[settings_key].gate_seed
    if seed is not None:
        node.workerinput[GATE_SEED_KEY] = seed


def pytest_unconfigure(config: pytest.Config) -> None:
    """Scoring processes and their files end with the session (also on an xdist worker, whose exit may skip atexit)."""
    import sys

    sealed = sys.modules.get("bt_bench.estimator.sealed")
    if sealed is not None:
        sealed.close_all()
    bootstrap = sys.modules.get("bt_bench.checklist.bootstrap")
    if bootstrap is not None:
        bootstrap.DISK_MEMO["folder"] = None
    for name, old in config.stash.get(_OLD_ENV_KEY, {}).items():
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
    if _OLD_ENV_KEY in config.stash and not hasattr(config, "workerinput"):  # a checklist session's controller
        _remove_basetemp(config)


def _remove_basetemp(config: pytest.Config) -> None:
    """pytest-xdist's controller always makes pytest's base temp folder ($TMPDIR/pytest-of-<user>/pytest-<N>: it
    hands each worker a folder below it) and pytest keeps the last three; a checklist session puts nothing there, so
    it goes at the end, with ``pytest-of-<user>`` when nothing else is left in it. Not when --basetemp was given
    (the user's folder) and never outside a checklist session (someone else's tests may want theirs kept)."""
    import shutil

    factory = getattr(config, "_tmp_path_factory", None)  # pytest's TempPathFactory; private, hence the guards
    base = getattr(factory, "_basetemp", None)
    if base is None or getattr(factory, "_given_basetemp", None) is not None:
        return
    base = Path(base)
    shutil.rmtree(base, ignore_errors=True)
    current = base.parent / "pytest-current"  # pytest's link to the newest numbered folder
    try:
        if current.is_symlink() and Path(os.readlink(current)).name == base.name:
            current.unlink()
        base.parent.rmdir()  # only when empty: other sessions' folders stay
    except OSError:
        pass


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate_tests(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Replaying evidence (--bt-evidence): only the replay cells run, nothing is built."""
    if config.stash[settings_key].evidence:
        keep = [i for i in items if "bt_replay_verdict" in getattr(i, "fixturenames", ())]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
