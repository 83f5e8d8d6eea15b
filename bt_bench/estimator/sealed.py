"""Scoring sealed off from judging: every estimator's module is imported, and its ``fit``/``score`` run, only in a
scoring process of its own (``bt_bench.estimator.worker``), sandboxed by Landlock (``bt_bench.estimator.sandbox``)
so that it cannot read the run cache or the run folders, ptrace the judge, or open a socket. The judging process
keeps the labels, the fixtures and the verdict code; it hands each call the view and target as files
(``bt_bench.estimator.wire``) and reads back one score array (``allow_pickle=False``), which ``score_estimator``
then validates as before.

What this stops (docs/checklist.md, "Threat model"): an estimator that patches the judges or the gate on import, that
reads the caller's frames (the labels of ``score_estimator``, the placebo flag), or that opens the cache or the run
folders at scoring time. What it does not stop: an estimator that carries a table prepared beforehand (fresh
fixtures are the defense), and anything an estimator declaring ``model`` can compute from the model it is given.

``SealedEstimator`` stands in for the estimator in the judging process: it carries the metadata the estimator
declared (name, level, capabilities, ...) and forwards ``fit``/``score``. The suite's own test-only oracle (it reads
labels by design, and it is our code) is the only estimator that runs in the judging process.

Isolation modes (``ISOLATION``; the plugin sets it): ``sandbox`` (the default: a separate, Landlock-sandboxed
process; where Landlock is missing the process runs unsandboxed with one warning, and the paper gate refuses),
``process`` (separate process, no sandbox), ``none`` (in-process, for debugging an estimator with pdb; never under
the paper gate).
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from bt_bench.estimator.errors import EstimatorError, ScoringFailedError

MODES = ("sandbox", "process", "none")


@dataclasses.dataclass
class Isolation:
    mode: str = "sandbox"
    excluded: tuple[str, ...] = ()  # folders the sandbox must not be able to read (cache root, run folders)


ISOLATION = Isolation()
_warned = False
_session_dir: Path | None = None
_pool = None  # wire.Pool of this judging process
_processes: dict[str, ScoringProcess] = {}


def _scratch_parent() -> str | None:
    """Where this session's scoring folders go: the system's temporary folder, unless the run cache is on another
    file system; then a folder in the cache, so that the stored sketches can be linked there rather than copied
    (``wire.Pool``; the sandbox grants a scoring process its own folder wherever it lies)."""
    from bt_bench.runs.store import cache_root

    root = cache_root()
    try:
        if os.stat(tempfile.gettempdir()).st_dev == os.stat(root).st_dev:
            return None
        (root / ".scoring").mkdir(exist_ok=True)
    except OSError:
        return None
    return str(root / ".scoring")


def _tmp_root() -> Path:
    global _session_dir
    if _session_dir is None or not _session_dir.exists():
        _session_dir = Path(tempfile.mkdtemp(prefix="bt-bench-scoring-", dir=_scratch_parent()))
        atexit.register(close_all)
    return _session_dir


def _the_pool():
    global _pool
    from bt_bench.estimator.wire import Pool

    if _pool is None or _pool.folder.parent != _tmp_root():
        _pool = Pool(_tmp_root() / "pool")
    return _pool


def close_all() -> None:
    """Stop every scoring process and remove their private folders and the pool (also at exit)."""
    global _session_dir, _pool
    _pool = None
    for p in list(_processes.values()):
        p.close()
    _processes.clear()
    if _session_dir is not None:
        shutil.rmtree(_session_dir, ignore_errors=True)
        _session_dir = None


def _top_levels(name: str) -> list[str]:
    """Top-level modules the scoring process must import for ``name`` (found without importing anything)."""
    from bt_bench.estimator import registry

    tops = ["bt_bench"]
    if ":" in name:
        tops.append(name.partition(":")[0].split(".")[0])
    elif name != "*":
        ep = registry._entry_points().get(name)
        if ep is not None:
            tops.append(ep.value.partition(":")[0].split(".")[0])
    else:
        tops += sorted({ep.value.partition(":")[0].split(".")[0] for ep in registry._entry_points().values()})
    return list(dict.fromkeys(tops))


def _link_packages(folder: Path, tops: list[str]) -> list[str]:
    """Links in ``folder/pkgs`` to each top-level package (the process puts that folder first on its path), so it
    imports them without read access to the folders around them (a repository holding a cache, say)."""
    pkgs = folder / "pkgs"
    pkgs.mkdir()
    targets = []
    for top in tops:
        spec = importlib.util.find_spec(top)  # a top-level name: finds, executes nothing
        if spec is None:
            continue
        locs = list(spec.submodule_search_locations or [])
        if locs:
            src, dst = Path(locs[0]), pkgs / top
        elif spec.origin and os.path.isfile(spec.origin):
            src, dst = Path(spec.origin), pkgs / Path(spec.origin).name
        else:
            continue
        os.symlink(src, dst)
        targets.append(str(src.resolve()))
    return targets


class ScoringProcess:
    """One scoring process: started, sandboxed, and asked one request at a time."""

    def __init__(self, label: str, tops: list[str]):
        from bt_bench.estimator.wire import Outbox

        self.label = label
        self.folder = Path(tempfile.mkdtemp(dir=_tmp_root(), prefix="p"))
        links = _link_packages(self.folder, tops)
        from bt_bench.estimator.worker import WRITABLE

        for sub in WRITABLE:
            (self.folder / sub).mkdir()
        self.outbox = Outbox(self.folder, _the_pool())
        r_req, w_req = os.pipe()
        r_resp, w_resp = os.pipe()
        env = {**os.environ, "TMPDIR": str(self.folder / "tmp"), "HF_HOME": str(self.folder / "home" / "hf"),
               "TORCHINDUCTOR_CACHE_DIR": str(self.folder / "tmp" / "torchinductor"),  # not the run cache: unreadable
               "XDG_CACHE_HOME": str(self.folder / "home"), "MPLCONFIGDIR": str(self.folder / "home"),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join([str(self.folder / "pkgs"),
                                              *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.proc = subprocess.Popen([sys.executable, "-m", "bt_bench.estimator.worker", str(self.folder),
                                      str(r_req), str(w_resp)], pass_fds=(r_req, w_resp), cwd=self.folder,
                                     env=env, stdin=subprocess.DEVNULL)
        os.close(r_req), os.close(w_resp)
        self._wr, self._rd = os.fdopen(w_req, "w"), os.fdopen(r_resp, "r")
        sandbox = ISOLATION.mode == "sandbox" and sandbox_state()[0]
        from bt_bench.runs.store import cache_root

        # the default cache too: a listing or provenance process starts before any Suite names the run folders
        excluded = sorted({*ISOLATION.excluded, str(cache_root())})
        setup = {"sandbox": sandbox, "links": links, "excluded": excluded}
        first = self._send(setup, what="start")
        if "sandbox_error" in first:
            self.close()
            raise RuntimeError(f"the scoring process for {label} could not sandbox itself: {first['sandbox_error']}")
        self.sandbox = first["sandbox"]

    def _send(self, msg: dict, what: str, name: str | None = None) -> dict:
        try:
            self._wr.write(json.dumps(msg) + "\n")
            self._wr.flush()
            line = self._rd.readline()
        except BaseException:  # a timeout (SIGALRM) or ^C mid-call: the process's state is unknown, end it
            self.close()
            raise
        if not line:
            rc = self.proc.wait()
            self.close()
            raise ScoringFailedError(name or self.label, f"{what}: the scoring process died (exit code {rc}; os._exit, a "
                                                 "signal or out of memory)")
        return json.loads(line)

    def request(self, msg: dict, what: str, name: str | None = None) -> dict:
        resp = self._send(msg, what, name)
        if "error" in resp:
            raise _rebuild(name or self.label, what, resp)
        return resp

    def scores(self, resp: dict) -> np.ndarray:
        if "bad_scores" in resp:
            return np.array([resp["bad_scores"]], dtype=object)  # validate_scores names the problem
        return np.load(self.folder / "out" / Path(resp["scores"]).name, allow_pickle=False)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        for f in (getattr(self, "_wr", None), getattr(self, "_rd", None)):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        if _processes.get(self.label) is self:
            del _processes[self.label]


def _rebuild(label: str, what: str, resp: dict) -> EstimatorError:
    """The estimator's error as raised in its process: an ``EstimatorError`` class by name (so NOT JUDGED and
    ERROR stay what they were in-process), anything else a ``ScoringFailedError`` naming its type."""
    from bt_bench.estimator import errors

    cls = getattr(errors, resp["error"], None) if resp.get("estimator_error") else None
    if isinstance(cls, type) and issubclass(cls, EstimatorError):
        exc = cls.__new__(cls)
        Exception.__init__(exc, resp["message"])
        exc.estimator = resp.get("estimator") or label
    else:
        exc = ScoringFailedError(label, f"{what} raised {resp['error']}: {resp['message']}")
    if resp.get("traceback"):  # shown under -v and kept in the JSON report, like an in-process traceback
        exc.__cause__ = RemoteTraceback(resp["traceback"])
    return exc


class RemoteTraceback(Exception):
    """The traceback of an error raised in a scoring process (its text), chained as the cause of the judge's."""

    def __str__(self) -> str:
        return "\n\n(in the scoring process)\n" + str(self.args[0])


def sandbox_state() -> tuple[bool, str]:
    """(True, "Landlock ABI N") where the sandbox can be applied, else (False, why not)."""
    from bt_bench.estimator.sandbox import available

    return available()


def _warn_unsandboxed() -> None:
    global _warned
    ok, why = sandbox_state()
    if ISOLATION.mode == "sandbox" and not ok and not _warned:
        _warned = True
        warnings.warn(f"bt-bench: estimators are scored in a separate process but NOT sandboxed ({why}); "
                      "--bt-paper-gate refuses to run like this", RuntimeWarning, stacklevel=3)


def process_for(name: str) -> ScoringProcess:
    p = _processes.get(name)
    if p is None or not p.alive:
        _warn_unsandboxed()
        p = _processes[name] = ScoringProcess(name, _top_levels(name))
    return p


_ids = itertools.count()


class SealedEstimator:
    """The judging process's stand-in for an estimator that lives in its scoring process."""

    def __init__(self, name: str, kwargs: dict | None = None):
        self._process_name, self._kwargs, self._fitted = name, kwargs or {}, False
        meta = self._load()
        from bt_bench.estimator.contract import Capability

        self.name, self.level = meta["name"], meta["level"]
        self.capabilities = frozenset(Capability(c) for c in meta["capabilities"])
        self.cosine_scale, self.test_only = meta["cosine_scale"], meta["test_only"]
        self.opt_in, self.description = meta["opt_in"], meta["description"]
        self.fit = self._fit if meta.get("has_fit") else None
        self.sandbox = self._proc.sandbox

    def _load(self) -> dict:
        self._proc, self._id = process_for(self._process_name), f"e{next(_ids)}"
        return self._proc.request({"op": "load", "id": self._id, "name": self._process_name,
                                   "kwargs": self._kwargs}, "load")["meta"]

    def _process(self) -> ScoringProcess:
        """Its process; after that process died (an earlier call), a fresh one, unless the lost state was fitted."""
        if self._proc.alive and _processes.get(self._process_name) is self._proc:
            return self._proc
        if self._fitted:
            raise ScoringFailedError(self.name, "its scoring process died in an earlier call, with the state its "
                                                "fit had built; not called again")
        self._load()
        return self._proc

    def _device(self, view: Any) -> str:
        run = getattr(getattr(view._model_loader, "__self__", None), "run", None)
        if run is None:
            return "cpu"
        from bt_bench.runs.runtime import pick_device

        return pick_device(run.config.device)

    def _fit(self, view: Any) -> None:
        from bt_bench.estimator.wire import encode_view

        p = self._process()
        self._fitted = True
        p.request({"op": "fit", "id": self._id, "view": encode_view(view, p.outbox), "device": self._device(view)},
                  "fit", self.name)

    def score(self, view: Any, target: Any, **kwargs: Any) -> np.ndarray:
        from bt_bench.estimator.wire import encode_target, encode_view

        if kwargs:  # labels: never sent to a scoring process
            raise ScoringFailedError(self.name, f"a sealed estimator takes no {sorted(kwargs)}")
        p = self._process()
        resp = p.request({"op": "score", "id": self._id, "view": encode_view(view, p.outbox),
                          "target": encode_target(target, p.outbox), "device": self._device(view)}, "score",
                         self.name)
        return p.scores(resp)


def load(name: str, **kwargs: Any) -> Any:
    """The estimator ``name`` as the judge should call it: a ``SealedEstimator`` (isolation ``sandbox`` or
    ``process``), or in-process for isolation ``none`` and for the suite's own test-only oracle."""
    from bt_bench.estimator import registry

    if ISOLATION.mode == "none" or name in registry._BUILTIN_TEST_ONLY:
        return registry.get_estimator(name, **kwargs)
    if ":" not in name and name not in registry._entry_points():
        registry.get_estimator(name)  # UnknownEstimatorError with "did you mean", importing nothing
    return SealedEstimator(name, kwargs)


def _one_shot(op: dict, tops_of: str) -> dict:
    if ISOLATION.mode == "none":
        raise RuntimeError("no scoring process in isolation mode 'none'")
    p = ScoringProcess(f"({op['op']})", _top_levels(tops_of))
    try:
        return p.request(op, op["op"])
    finally:
        p.close()


def default_estimators() -> list[str]:
    """``registry.default_estimators()``, computed in a scoring process (listing imports every plug-in)."""
    from bt_bench.estimator import registry

    if ISOLATION.mode == "none":
        return registry.default_estimators()
    rows = _one_shot({"op": "list"}, "*")["rows"]
    return [r["name"] for r in rows if not (r["test_only"] or r["opt_in"])]


def provenance(name: str) -> dict:
    """``registry.provenance(name)``, computed in a scoring process of its own."""
    from bt_bench.estimator import registry

    if ISOLATION.mode == "none" or name in registry._BUILTIN_TEST_ONLY:
        return registry.provenance(name)
    return _one_shot({"op": "provenance", "name": name}, name)["provenance"]
