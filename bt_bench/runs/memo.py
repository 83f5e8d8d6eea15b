"""Results that are a pure function of their inputs and of this code, kept on disk: the digest that names the code
(``environment_digest``) and a content-keyed JSON memo (``json_memo``). The score cache
(``bt_bench.checklist.score_cache``), the bootstrap's resample values and the sketch-ranking self-check use them."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

FORMAT = 1


def _hash_py_files(folder: Path, h) -> None:
    for p in sorted(folder.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        h.update(str(p.relative_to(folder)).encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())


@functools.lru_cache(maxsize=1)
def environment_digest() -> str:
    """sha256 of bt-bench's own sources, every installed distribution's name and version, Python and machine."""
    from importlib import metadata

    import bt_bench

    h = hashlib.sha256(f"format {FORMAT}\0{sys.version}\0{platform.machine()}\0".encode())
    _hash_py_files(Path(bt_bench.__file__).parent, h)
    dists = sorted({f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()
                    if d.metadata and d.metadata["Name"]})
    h.update("\n".join(dists).encode())
    return h.hexdigest()


def json_memo(folder: str | os.PathLike | None, name: str, key: dict, compute: Callable[[], dict]) -> dict:
    """``compute()`` stored as ``<folder>/<name>-<sha256 of key>.json`` and read back when the same key asks again
    (``folder`` None: computed, nothing stored). ``key`` must name everything the result depends on besides this
    code (put ``environment_digest()`` in the folder's name or in the key). Written atomically; an unreadable file is
    computed again."""
    from bt_bench.runs.store import write_json

    if folder is None:
        return compute()
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:32]
    path = Path(folder) / f"{name}-{digest}.json"
    try:
        doc = json.loads(path.read_text())
        if doc.get("key") == json.loads(json.dumps(key, sort_keys=True, default=str)):
            return doc["value"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.json")
    write_json(tmp, {"format": FORMAT, "key": key, "value": value})
    os.replace(tmp, path)
    return value
