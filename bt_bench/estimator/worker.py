"""The scoring process: ``python -m bt_bench.estimator.worker FOLDER IN_FD OUT_FD``, started by
``bt_bench.estimator.sealed``. It sandboxes itself (``bt_bench.estimator.sandbox``) *before* it imports any
estimator, then answers one JSON request per line: load an estimator, fit it, score a view against a target, list
the registry, give an estimator's provenance. Views and targets arrive as files in FOLDER (``wire``), which the
sandbox leaves read-only; scores leave as a ``.npy`` file in FOLDER/out. Labels, the harness's state and the verdict code never exist in this process.

Standard output is redirected to standard error, so nothing an estimator prints can corrupt the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any


WRITABLE = ("out", "tmp", "home")  # the only parts of its folder a scoring process may write


def _allowed_read(links: list[str]) -> list[str]:
    from bt_bench.estimator.sandbox import SYSTEM_READ

    paths = [*SYSTEM_READ, sys.prefix, sys.base_prefix, sys.exec_prefix, *links]
    paths += [p for p in sys.path if p and os.path.exists(p)]
    return sorted({os.path.realpath(p) for p in paths})


def _sandbox(setup: dict, folder: Path) -> str:
    from bt_bench.estimator import sandbox

    if not setup.get("sandbox", True):
        return "off"
    read, listable = sandbox.carve(_allowed_read(setup.get("links", [])), setup.get("excluded", []))
    # its own folder read-only (the arrays and checkpoints in it are links that the judge, other scoring processes
    # and the run cache share), writable only where it puts scores and scratch
    writable = [str(folder / sub) for sub in WRITABLE]
    abi = sandbox.restrict([*read, str(folder)], [*writable, *sandbox.SYSTEM_WRITE], listable)
    return f"Landlock ABI {abi}"


class _Models:
    """Checkpoint folders -> models, each loaded once, a fresh copy per call (like ``Fixture.model``)."""

    def __init__(self, folder: Path, device: str):
        self.folder, self.device, self._cache = folder, device, {}

    def __call__(self, name: str) -> Any:
        import copy

        from bt_bench.runs.store import load_checkpoint

        if name not in self._cache:
            sub = self.folder / Path(name).name
            self._cache[name] = load_checkpoint(sub, sub / "model.safetensors", self.device)
        return copy.deepcopy(self._cache[name])


def _meta(est: Any) -> dict:
    from bt_bench.estimator.contract import describe, is_cosine_scale

    return {"name": est.name, "level": est.level, "capabilities": sorted(str(c) for c in est.capabilities),
            "cosine_scale": is_cosine_scale(est), "test_only": bool(getattr(est, "test_only", False)),
            "opt_in": bool(getattr(est, "opt_in", False)), "description": describe(est),
            "has_fit": getattr(est, "fit", None) is not None}


def _error(exc: BaseException) -> dict:
    from bt_bench.estimator.errors import EstimatorError

    return {"error": type(exc).__name__, "estimator_error": isinstance(exc, EstimatorError),
            "estimator": getattr(exc, "estimator", None), "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))}


def serve(folder: Path, rd, wr) -> None:
    import numpy as np

    from bt_bench.estimator import registry, wire

    inbox, out_n = wire.Inbox(folder), 0
    estimators: dict[str, Any] = {}
    models = None
    for line in rd:
        req = json.loads(line)
        op = req["op"]
        try:
            if op == "load":
                est = registry.get_estimator(req["name"], **req.get("kwargs", {}))
                if "torch" in sys.modules:  # one thread per process: the 2-core machines parallelize by process
                    sys.modules["torch"].set_num_threads(1)
                    sys.modules["torch"].set_flush_denormal(True)
                estimators[req["id"]] = est
                resp: dict = {"meta": _meta(est)}
            elif op in ("fit", "score"):
                if models is None:
                    models = _Models(folder, req.get("device", "cpu"))
                est = estimators[req["id"]]
                view = wire.decode_view(req["view"], inbox, models)
                if op == "fit":
                    est.fit(view)
                    resp = {"ok": True}
                else:
                    raw = est.score(view, wire.decode_target(req["target"], inbox))
                    arr = np.asarray(raw)
                    if arr.dtype == object:
                        resp = {"bad_scores": f"dtype {arr.dtype}"}
                    else:
                        out_n += 1
                        name = f"scores{out_n}.npy"
                        np.save(folder / "out" / name, arr, allow_pickle=False)
                        resp = {"scores": name}
            elif op == "drop":
                estimators.pop(req["id"], None)
                resp = {"ok": True}
            elif op == "list":
                resp = {"rows": [dict(vars(i)) for i in registry.list_estimators()]}
            elif op == "provenance":
                resp = {"provenance": registry.provenance(req["name"])}
            else:
                resp = {"error": "ValueError", "message": f"unknown op {op!r}", "estimator_error": False}
        except Exception as exc:  # noqa: BLE001 - every estimator failure goes back to the judge as data
            resp = _error(exc)
        wr.write(json.dumps(resp, default=str) + "\n")
        wr.flush()


def main(argv: list[str]) -> int:
    folder, in_fd, out_fd = Path(argv[0]), int(argv[1]), int(argv[2])
    rd, wr = os.fdopen(in_fd, "r"), os.fdopen(out_fd, "w")
    os.dup2(2, 1)  # an estimator's print() goes to stderr, never into the protocol
    setup = json.loads(rd.readline())
    try:
        state = _sandbox(setup, folder)
    except Exception as exc:  # noqa: BLE001 - the judge reports it (and refuses to score unsandboxed)
        wr.write(json.dumps({"sandbox_error": f"{type(exc).__name__}: {exc}"}) + "\n")
        wr.flush()
        return 1
    wr.write(json.dumps({"sandbox": state, "pid": os.getpid()}) + "\n")
    wr.flush()
    serve(folder, rd, wr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
