"""What crosses the wall between the judging process and the scoring process: views, targets and scores as plain
JSON plus ``.npy`` files (``allow_pickle=False`` both ways), never a pickle and never a live object.

The judging side writes each array once (``Pool``; an array that maps a stored file whole, as the fixture's
sketches do, is linked instead of written) and links it into the private folder of each scoring process that needs
it (``Outbox``), referring to it by file name; the scoring side (``Inbox``) maps each file once, read-only. The
sandbox makes that folder read-only to the scoring process (it writes only ``out/``, ``tmp/`` and ``home/``), so
no estimator can change a file that the judge, another estimator or the run cache shares with it. A view is rebuilt there as the same ``Candidates`` class the estimator would get
in-process, with the same capability checks; a target as the same ``Target``. Model checkpoints travel as a
private folder per step (links to the run's files where the file system allows, else a copy).
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bt_bench.estimator.contract import SKETCH_KEYS, Checkpoint, Target, frozen_copy


class Pool:
    """Judging side: every array written once per judging process (by identity), into one folder; each scoring
    process gets a hard link in its own folder (no second write, and the page cache is shared)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._files: dict[int, tuple[Path, Any]] = {}  # id(array) -> (file, the array: kept alive, ids stay unique)

    def file(self, a: Any) -> Path:
        hit = self._files.get(id(a))
        if hit is None or hit[1] is not a:
            f = self.folder / f"a{len(self._files)}.npy"
            src = stored_file(a)
            if src is None or not _link(src, f):  # a stored file is linked, not copied: a k = 4096 seed is 2.6 GB
                np.save(f, np.asarray(a), allow_pickle=False)
            hit = self._files[id(a)] = (f, a)
        return hit[0]


def stored_file(a: Any) -> Path | None:
    """The ``.npy`` file that ``a`` maps whole and read-only (``np.load(path, mmap_mode="r")``: the fixture's stored
    sketches), or None (an array in memory, a slice or any other view of a file)."""
    if not isinstance(a, np.memmap) or a.flags.writeable or not a.flags.c_contiguous or not a.filename:
        return None
    try:
        whole = np.load(a.filename, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    same = (whole.shape, whole.dtype, whole.offset) == (a.shape, a.dtype, a.offset)
    return Path(a.filename) if same else None


def _link(src: Path, dst: Path) -> bool:
    try:
        os.link(src, dst)
        return True
    except OSError:  # another file system: the caller writes a copy
        return False


class Outbox:
    """Judging side: arrays and checkpoint folders handed to one scoring process, in its private folder."""

    def __init__(self, folder: Path, pool: Pool):
        self.folder, self.pool = folder, pool
        self._sent: dict[Path, str] = {}
        self._models: dict[tuple, str] = {}

    def array(self, a: Any) -> str:
        src = self.pool.file(a)
        if src not in self._sent:
            name = src.name
            _link_or_copy(src, self.folder / name)
            self._sent[src] = name
        return self._sent[src]

    def model_folder(self, loader: Callable[[int], Any], step: int) -> str:
        """A private HF folder of checkpoint ``step``: the run's config, tokenizer and that step's weights."""
        owner = getattr(loader, "__self__", None)
        run = getattr(owner, "run", None)
        key = (id(owner) if owner is not None else id(loader), int(step))
        if key in self._models:
            return self._models[key]
        name = f"model{len(self._models)}"
        dest = self.folder / name
        dest.mkdir()
        if run is not None and hasattr(run, "checkpoint_dir"):
            files = [f for f in (run.path / "model").iterdir() if f.is_file() and not f.name.endswith(".safetensors")]
            files.append(run.checkpoint_dir(int(step)) / "model.safetensors")
            for f in files:
                _link_or_copy(f, dest / f.name)
        else:  # any other loader: the model it returns, saved
            loader(int(step)).save_pretrained(str(dest))
        self._models[key] = name
        return name


def _link_or_copy(src: Path, dst: Path) -> None:
    if not _link(src, dst):
        shutil.copy2(src, dst)


class Inbox:
    """Scoring side: maps each referenced file once, read-only (the pages are shared with every other scoring
    process of the same judging process; the mapping leads to nothing but this process's own folder)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._cache: dict[str, np.ndarray] = {}

    def array(self, name: str) -> np.ndarray:
        if name not in self._cache:
            a = np.asarray(np.load(self.folder / Path(name).name, mmap_mode="r", allow_pickle=False))
            self._cache[name] = a if a.ndim else frozen_copy(a)
        return self._cache[name]


# ------------------------------------------------------------------------------------------------ views
def encode_view(view: Any, out: Outbox) -> dict:
    """A ``Candidates`` view as JSON (arrays by file name). Only what the view holds: its capabilities already
    filtered the sketches; ``model`` folders are written only for a view that declares ``model``."""
    sketches = {}
    for key, v in view._sketches.items():
        if isinstance(v, Mapping):
            sketches[key] = {"map": [[int(s), out.array(x) if np.ndim(x) else float(x)] for s, x in v.items()]}
        else:
            sketches[key] = out.array(v)
    models = None
    if view._model_loader is not None:
        models = {str(c.step): out.model_folder(view._model_loader, c.step) for c in view._checkpoints}
    return {"estimator": view._estimator, "caps": sorted(view._caps),
            "fields": {k: out.array(v) for k, v in view._fields.items()}, "sketches": sketches,
            "checkpoints": [[c.step, c.lr, c.batch_size] for c in view._checkpoints], "source": view._source,
            "token_level": view._token_level, "objective": {k: v for k, v in view._objective.items() if k != "loss"},
            "token_mask": None if view._token_mask is None else out.array(view._token_mask), "models": models,
            "trajectory": None if view._trajectory is None else encode_trajectory(view._trajectory, out)}


def decode_view(d: Mapping, inbox: Inbox, model_loader: Callable[[str], Any] | None) -> Any:
    from bt_bench.estimator.views import Candidates

    sketches: dict[str, Any] = {}
    for key, v in d["sketches"].items():
        if key not in SKETCH_KEYS:
            raise ValueError(f"unknown sketch key {key!r}")
        if isinstance(v, Mapping):
            sketches[key] = {int(s): inbox.array(x) if isinstance(x, str) else float(x) for s, x in v["map"]}
        else:
            sketches[key] = inbox.array(v)
    loader = None
    if d["models"] is not None and model_loader is not None:
        folders = dict(d["models"])
        loader = lambda step: model_loader(folders[str(int(step))])  # noqa: E731
    return Candidates(d["estimator"], frozenset(d["caps"]), {k: inbox.array(v) for k, v in d["fields"].items()},
                      sketches, tuple(Checkpoint(int(s), float(lr), float(bs)) for s, lr, bs in d["checkpoints"]),
                      d["source"], bool(d["token_level"]), loader, d["objective"],
                      None if d["token_mask"] is None else inbox.array(d["token_mask"]),
                      None if d.get("trajectory") is None else decode_trajectory(d["trajectory"], inbox, model_loader))


def encode_trajectory(t: Any, out: Outbox) -> dict:
    """A ``Trajectory`` as JSON: its row arrays and the steps' uids (one array, cut at ``ends``) by file name, the
    step-0 weights as a model folder."""
    from dataclasses import asdict

    uids = [t.uids(s) for s in range(t.steps)]
    return {"rows": {k: out.array(v) for k, v in t.rows.items()},
            "uids": out.array(np.concatenate(uids) if uids else np.zeros(0, np.int64)),
            "ends": np.cumsum([len(u) for u in uids]).tolist(), "lr": out.array(t.lr),
            "optimizer": asdict(t.optimizer), "loss_type": t.loss_type, "temperature": t.temperature,
            "model": out.model_folder(t._initial, 0)}


def decode_trajectory(d: Mapping, inbox: Inbox, model_loader: Callable[[str], Any] | None) -> Any:
    from bt_bench.estimator.trajectory import OptimizerSettings, Trajectory

    if model_loader is None:
        raise ValueError("a trajectory needs a model loader for its step-0 weights")
    flat, ends = inbox.array(d["uids"]), [0, *d["ends"]]
    opt = dict(d["optimizer"])
    opt["betas"] = tuple(opt["betas"])
    folder = d["model"]
    return Trajectory({k: inbox.array(v) for k, v in d["rows"].items()},
                      [flat[a:b] for a, b in itertools.pairwise(ends)], inbox.array(d["lr"]),
                      OptimizerSettings(**opt), d["loss_type"], float(d["temperature"]),
                      lambda step: model_loader(folder))


# ------------------------------------------------------------------------------------------------ targets
def encode_target(t: Target, out: Outbox) -> dict:
    defs = None
    if t.definitions is not None:
        from bt_bench.estimator.objective import DEFINITION_FIELDS

        defs = {str(s): {"loss": x.loss, "temperature": float(x.temperature), "weight": float(x.weight),
                         **{f: out.array(getattr(x, f)) for f in DEFINITION_FIELDS}} for s, x in t.definitions.items()}
    pre = None if t.preconditioned is None else {str(s): out.array(v) for s, v in t.preconditioned.items()}
    return {"kind": t.kind, "vectors": {str(s): out.array(v) for s, v in t.vectors.items()},
            "final_step": t.final_step, "preconditioned": pre, "draw": t.draw, "definitions": defs}


def decode_target(d: Mapping, inbox: Inbox) -> Target:
    defs = None
    if d["definitions"] is not None:
        from bt_bench.estimator.objective import DEFINITION_FIELDS, TargetDefinition

        defs = {int(s): TargetDefinition(x["loss"], **{f: inbox.array(x[f]) for f in DEFINITION_FIELDS},
                                         temperature=float(x["temperature"]), weight=float(x["weight"]))
                for s, x in d["definitions"].items()}
    pre = None if d["preconditioned"] is None else {int(s): inbox.array(v) for s, v in d["preconditioned"].items()}
    return Target(d["kind"], {int(s): inbox.array(v) for s, v in d["vectors"].items()}, final_step=d["final_step"],
                  preconditioned=pre, draw=d["draw"], definitions=defs)
