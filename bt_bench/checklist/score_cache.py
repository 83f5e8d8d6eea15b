"""Scores kept across sessions and shared by the xdist workers: ``<cache>/scores/<estimator identity>/<input>.npy``.

Why: every score is computed twice (the determinism check, docs/checklist.md "The contract"), and the same score
(an estimator's training scores of one seed) is asked for by up to seven checks; under ``pytest -n 2`` the two
workers each computed it, and a rerun computed everything again. A score is now computed once, by the worker that
takes its lock first, and a rerun with nothing changed reads it.

When is a stored score the same score? Only when everything it could depend on is the same, so the key is:
- the **estimator's identity**: its name, the sha256 of every ``.py`` file of the top-level package that defines it
  (not only its own module: helpers it imports change its scores too), the sha256 of bt-bench's own ``.py`` files
  (the handover, the views, the scoring contract), and the name and version of every installed distribution (a
  library an adapter calls, numpy, torch), with the Python version and the machine;
- the **input**: the fixture (run key, derived-data key and the sha256 of its manifest, which lists every derived
  array's sha256), which rollouts (training or draw ``d`` of a checkpoint kind), which target (kind, draw, placebo),
  token-restricted or not, the sketch seed, the seed the estimator was fitted on, and where it ran (the isolation
  mode: an estimator beside the judge can read what a sealed one cannot).
An estimator that reads anything else (a file of its own, the clock, an environment variable) and wants its scores
recomputed passes ``--bt-rescore``. A failed call (an error of the estimator, a time-out) stores nothing.

The scoring process cannot read this folder (it is under the run cache, which the sandbox excludes), so an estimator
cannot see its own or another's stored scores. Each entry's ``.json`` records the ``.npy``'s sha256, checked on
every read; ``.npy`` only, no pickle.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bt_bench.runs.memo import _hash_py_files, environment_digest

FORMAT = 1


def _top_level_location(module: str) -> Path | None:
    """The folder of the top-level package that ``module`` belongs to (or the single module file), without
    importing it (``find_spec`` of a top-level name only locates it)."""
    import importlib.util

    spec = importlib.util.find_spec(module.partition(".")[0])
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin) if spec.origin else None


def entry_module(name: str) -> str:
    """The module an estimator name or ``pkg.module:Class`` path is loaded from, read from the registry's entry
    points without importing anything."""
    from bt_bench.estimator import registry

    if ":" in name:
        return name.partition(":")[0]
    if name in registry._BUILTIN_TEST_ONLY:
        return registry._BUILTIN_TEST_ONLY[name].partition(":")[0]
    ep = registry._entry_points().get(name)
    if ep is None:
        raise KeyError(name)
    return ep.value.partition(":")[0]


@functools.lru_cache(maxsize=None)
def estimator_identity(name: str) -> str | None:
    """sha256 over the estimator's name, its top-level package's sources and ``environment_digest``; None when its
    sources cannot be located (then nothing is stored for it)."""
    from bt_bench.estimator.errors import EstimatorError

    try:
        where = _top_level_location(entry_module(name))
    except (KeyError, ImportError, ValueError, OSError, EstimatorError):
        return None
    if where is None or not where.exists():
        return None
    h = hashlib.sha256(f"{name}\0{environment_digest()}\0".encode())
    if where.is_dir():
        _hash_py_files(where, h)
    else:
        h.update(hashlib.sha256(where.read_bytes()).digest())
    return h.hexdigest()


def fixture_identity(fx) -> list:
    """(run key, derived-data key, sha256 of the derived manifest) of a ``bt_bench.fixture.reader.Fixture``."""
    from bt_bench.runs.store import MANIFEST, sha256_file

    folder = Path(fx.folder)
    return [fx.run.key, folder.name, sha256_file(folder / MANIFEST)]


class ScoreCache:
    """Get-or-compute of one score vector, persisted under ``root`` (``<cache>/scores``). ``session``: this
    session's id (shared by its xdist workers); with ``fresh`` only entries this session wrote are read (``--bt-rescore``
    and ``--bt-paper-gate``: every score computed by the session that judges it, none prepared beforehand)."""

    def __init__(self, root: str | os.PathLike, session: str = "", fresh: bool = False) -> None:
        self.root, self.session, self.fresh = Path(root), str(session), bool(fresh)
        if self.fresh and not self.session:
            raise ValueError("ScoreCache: fresh=True needs the session id its workers share")
        self.hits = self.computed = 0

    def _paths(self, identity: str, key: list) -> tuple[Path, Path]:
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
        folder = self.root / identity[:32]
        return folder / f"{digest}.npy", folder / f"{digest}.json"

    def _read(self, npy: Path, meta: Path) -> np.ndarray | None:
        from bt_bench.runs.store import sha256_file

        if not meta.exists():
            return None
        m = json.loads(meta.read_text())
        if m.get("format") != FORMAT or not npy.exists() or sha256_file(npy) != m.get("sha256"):
            return None  # stale or damaged: computed again and replaced
        if self.fresh and m.get("session") != self.session:
            return None  # written before this session: computed again
        return np.load(npy, allow_pickle=False)

    def get(self, name: str, key: list, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The stored score of ``name`` on ``key`` (JSON-able), else ``compute()`` stored; computed without storing
        when the estimator's identity is unknown. Two processes asking at once: one computes, the other waits."""
        from filelock import FileLock

        from bt_bench.runs.store import sha256_file, write_json

        identity = estimator_identity(name)
        if identity is None:
            return compute()
        npy, meta = self._paths(identity, key)
        got = self._read(npy, meta)
        if got is None:
            npy.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(meta) + ".lock"):
                got = self._read(npy, meta)  # another process may have stored it meanwhile
                if got is None:
                    t0 = time.perf_counter()
                    got = np.asarray(compute(), dtype=np.float64)
                    tmp = npy.with_name(f".{npy.stem}.{os.getpid()}.npy")
                    np.save(tmp, got, allow_pickle=False)
                    os.replace(tmp, npy)
                    tmp = meta.with_name(f".{meta.stem}.{os.getpid()}.json")
                    write_json(tmp, {"format": FORMAT, "estimator": name, "identity": identity, "input": key,
                                     "sha256": sha256_file(npy), "seconds": time.perf_counter() - t0,
                                     "session": self.session})
                    os.replace(tmp, meta)
                    self.computed += 1
                    return got
        self.hits += 1
        return got
