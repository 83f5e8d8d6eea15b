"""Sketch arrays on disk: float32 ``.npy`` files opened as memmaps, listed in ``sketches.json``.

Issue 3 item 7. One directory (a slot of the run store, e.g. ``<run>/sketches/<spec hash>/``) holds
arrays of one spec; the manifest records for each array its file, shape, dtype, row count, the spec
dict and free metadata (checkpoint step, draw, kind of target...). Writing is atomic: rows stream into
``<name>.npy.tmp-<pid>``, which is flushed, fsynced and renamed only when complete; the manifest is
rewritten by rename under a file lock. A reader never sees a partial array, and opening with a
different spec raises, so sketches of different specs never mix. Nothing of size parameters x k is
stored: projection factors are regenerated from the spec seed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Self

import numpy as np
from filelock import FileLock

from bt_bench.sketch.spec import SketchSpec

MANIFEST = "sketches.json"
FORMAT = 1


def spec_key(spec: SketchSpec) -> str:
    """Short stable hash of the spec dict: a directory name for the store."""
    text = json.dumps(spec.to_dict(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "_-." for c in name) or name.startswith("."):
        raise ValueError(f"sketch array name={name!r}: use letters, digits, '_', '-', '.'")


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    if not path.exists():
        return {"format": FORMAT, "arrays": {}}
    with open(path) as fh:
        return json.load(fh)


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class SketchWriter:
    """Stream [n_rows, dim] float32 rows into a new array; `close()` publishes it atomically.

    Use as a context manager: an exception inside the block discards the temporary file."""

    def __init__(self, directory: str | Path, name: str, n_rows: int, dim: int, spec: SketchSpec,
                 meta: dict[str, Any] | None = None) -> None:
        _check_name(name)
        if n_rows < 0 or dim < 1:
            raise ValueError(f"SketchWriter: n_rows={n_rows}, dim={dim}: need n_rows >= 0 and dim >= 1")
        self.directory, self.name, self.spec = Path(directory), name, spec
        self.meta = dict(meta or {})
        self.directory.mkdir(parents=True, exist_ok=True)
        self.final = self.directory / f"{name}.npy"
        self.tmp = self.directory / f"{name}.npy.tmp-{os.getpid()}"
        self.shape = (n_rows, dim)
        self.array = np.lib.format.open_memmap(self.tmp, mode="w+", dtype=np.float32, shape=self.shape)
        self.written = np.zeros(n_rows, dtype=bool)

    def write(self, start: int, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[1] != self.array.shape[1] or start + len(rows) > len(self.array):
            raise ValueError(f"SketchWriter.write: rows {rows.shape} at {start} do not fit {self.shape}")
        self.array[start : start + len(rows)] = rows
        self.written[start : start + len(rows)] = True

    def close(self) -> Path:
        if not self.written.all():
            missing = int((~self.written).sum())
            raise ValueError(f"SketchWriter({self.name}): {missing} rows never written; not published")
        self.array.flush()
        del self.array
        with open(self.tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        with FileLock(str(self.directory / f"{MANIFEST}.lock")):
            manifest = read_manifest(self.directory)
            os.replace(self.tmp, self.final)
            manifest["arrays"][self.name] = {
                "file": self.final.name, "shape": list(self.shape), "dtype": "float32",
                "count": self.shape[0], "spec": self.spec.to_dict(), "meta": self.meta,
            }
            _write_json_atomic(self.directory / MANIFEST, manifest)
        return self.final

    def abort(self) -> None:
        if hasattr(self, "array"):
            del self.array
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_sketches(directory: str | Path, name: str, sketches: np.ndarray, spec: SketchSpec,
                   meta: dict[str, Any] | None = None) -> Path:
    """Write a whole [n, k] array at once (atomic)."""
    sketches = np.asarray(sketches, dtype=np.float32)
    with SketchWriter(directory, name, sketches.shape[0], sketches.shape[1], spec, meta) as writer:
        writer.write(0, sketches)
    return writer.final


def open_sketches(directory: str | Path, name: str, spec: SketchSpec) -> np.memmap:
    """Read-only memmap of a published array; raises if it was made under another spec."""
    entry = read_manifest(directory)["arrays"].get(name)
    if entry is None:
        raise KeyError(f"no sketch array {name!r} in {Path(directory) / MANIFEST}")
    if entry["spec"] != spec.to_dict():
        raise ValueError(f"sketch array {name!r} was made with spec {entry['spec']}, not {spec.to_dict()}")
    array = np.load(Path(directory) / entry["file"], mmap_mode="r")
    if list(array.shape) != entry["shape"] or array.dtype != np.float32:
        raise ValueError(f"sketch array {name!r}: file shape {array.shape} != manifest {entry['shape']}")
    return array
