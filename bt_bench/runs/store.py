"""The run store: one folder per run, keyed by a hash of the full config, published atomically.

Layout of ``<cache>/runs/<key>/`` (fixture format ``FIXTURE_FORMAT``)::

    manifest.json            config, versions, counts, planting gate, summary figures, sha256 of every file
    rollouts/<column>.npy    the rollout table, one .npy per column (never pickle: allow_pickle=False on load)
    checkpoints/<step>/      model.safetensors (+ adam_v.safetensors: AdamW second moment), step = updates done
    curve.json               learning curve (behavior rate on held-out trigger / no-trigger prompts)
    model/                   config + tokenizer of the base model (weights = checkpoint 0)

Why atomic: a killed build must never leave a folder that looks complete. A build writes into
``runs/.tmp-<key>-<pid>``, fsyncs every file, then renames (atomic on one filesystem). Concurrent builders of one
key (pytest-xdist workers) serialize on a file lock; the second finds the published run and loads it. That
sequence is ``publish_once``, used by every writer of the cache (runs, toy models, derived data).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bt_bench.runs.config import FIXTURE_FORMAT, RunConfig

MANIFEST = "manifest.json"


class IntegrityError(RuntimeError):
    """A stored run is corrupted, mixed or incomplete. The message says how to rebuild it."""


def cache_path(path: str | os.PathLike | None = None) -> Path:
    """The cache folder, not created: ``path``, else ``$BT_BENCH_CACHE``, else ``$XDG_CACHE_HOME/bt-bench`` (default
    ``~/.cache/bt-bench``). The one rule; ``cache_root`` is the same folder, created."""
    if path is None:
        path = os.environ.get("BT_BENCH_CACHE") or Path(
            os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bt-bench"
    return Path(path).expanduser()


def cache_root(path: str | os.PathLike | None = None) -> Path:
    """The cache folder (``cache_path``), created if missing."""
    p = cache_path(path)
    p.mkdir(parents=True, exist_ok=True)
    return p


def versions() -> dict[str, str]:
    """Versions that shape a run (part of the cache key)."""
    from importlib.metadata import version

    import bt_bench

    out = {"bt_bench": bt_bench.__version__}
    for dist in ("torch", "trl", "transformers"):
        out[dist] = version(dist)
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_tree(root: Path) -> None:
    for dirpath, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fd = os.open(dirpath, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=1, sort_keys=True, default=_json_default))


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serializable: {type(o)}")


def load_checkpoint(model_dir: Path, weights: Path, device: str = "cpu"):
    """A fresh model built from ``model_dir``'s config with the weights file ``weights`` (a run's checkpoint; the
    scoring process's private copy of one): eval mode on ``device``, tied weights re-tied."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_config(cfg)
    missing, unexpected = model.load_state_dict(load_file(str(weights)), strict=False)
    tied = {k for k in missing if k.endswith("lm_head.weight")} if cfg.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise IntegrityError(f"weights do not fit the model: missing {sorted(set(missing) - tied)}, "
                             f"unexpected {unexpected}")
    model.tie_weights()
    return model.to(device).eval()


@dataclass
class Run:
    """A loaded, integrity-checked run. ``columns`` are read-only memory maps."""

    path: Path
    manifest: dict
    columns: dict[str, np.ndarray]

    @property
    def config(self) -> RunConfig:
        return RunConfig.from_dict(self.manifest["config"])

    @property
    def key(self) -> str:
        return self.manifest["key"]

    @property
    def planted(self) -> bool:
        return bool(self.manifest["gate"]["planted"])

    @property
    def checkpoints(self) -> list[int]:
        return list(self.manifest["checkpoints"])

    def checkpoint_dir(self, step: int) -> Path:
        return self.path / "checkpoints" / f"{step:06d}"

    def curve(self) -> list[dict]:
        return json.loads((self.path / "curve.json").read_text())

    def load_model(self, step: int, device: str = "cpu"):
        """A fresh model with the weights of checkpoint ``step`` (never the trainer's patched model)."""
        try:
            return load_checkpoint(self.path / "model", self.checkpoint_dir(step) / "model.safetensors", device)
        except IntegrityError as e:
            raise IntegrityError(f"checkpoint {step} of run {self.key}: {e}. {rebuild_hint(self.key)}") from None

    def tokenizer(self):
        from bt_bench.runs.runtime import load_tokenizer

        return load_tokenizer(self.path / "model", self.config.task_obj())


def rebuild_hint(key: str) -> str:
    return f"Delete it and rebuild: `bt-bench build --rebuild ...` (or remove the folder runs/{key} in the cache)."


def run_dir(root: Path, key: str) -> Path:
    return root / "runs" / key


def publish(tmp: Path, final: Path) -> None:
    """fsync everything, then rename: the final folder appears complete or not at all."""
    _fsync_tree(tmp)
    os.rename(tmp, final)
    fd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_columns(folder: Path, cols: dict[str, np.ndarray]) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    hashes = {}
    for name, arr in cols.items():
        p = folder / f"{name}.npy"
        np.save(p, np.ascontiguousarray(arr), allow_pickle=False)
        hashes[f"{folder.name}/{name}.npy"] = sha256_file(p)
    return hashes


def hash_tree(root: Path, sub: str) -> dict[str, str]:
    return {str(p.relative_to(root)): sha256_file(p) for p in sorted((root / sub).rglob("*")) if p.is_file()}


def load_run(path: Path, verify_hashes: bool = True) -> Run:
    """Load and check a published run (spec, "Fixture self-checks": integrity). Raises IntegrityError."""
    path = Path(path)
    mf = path / MANIFEST
    if not mf.exists():
        raise IntegrityError(f"{path} has no manifest: not a complete run. {rebuild_hint(path.name)}")
    try:
        manifest = json.loads(mf.read_text())
    except json.JSONDecodeError as e:
        raise IntegrityError(f"manifest of {path} is not valid JSON ({e}). {rebuild_hint(path.name)}") from e
    key = manifest.get("key", path.name)
    if manifest.get("format") != FIXTURE_FORMAT:
        raise IntegrityError(f"run {key} has fixture format {manifest.get('format')}, this bt-bench reads "
                             f"{FIXTURE_FORMAT}. {rebuild_hint(key)}")
    if verify_hashes:
        for rel, digest in manifest["hashes"].items():
            f = path / rel
            if not f.exists():
                raise IntegrityError(f"run {key}: file {rel} is missing. {rebuild_hint(key)}")
            if sha256_file(f) != digest:
                raise IntegrityError(f"run {key}: file {rel} does not match its recorded sha256 (modified or "
                                     f"mixed with another run). {rebuild_hint(key)}")
    cols = {p.stem: np.load(p, mmap_mode="r", allow_pickle=False) for p in sorted((path / "rollouts").glob("*.npy"))}
    check_integrity(cols, manifest)
    return Run(path=path, manifest=manifest, columns=cols)


def check_integrity(cols: dict[str, np.ndarray], manifest: dict) -> None:
    """Counts = steps x P x G; every uid once; every rollout in exactly the optimizer step it was generated for."""
    c = manifest["config"]
    key = manifest.get("key", "?")
    expected = c["steps"] * c["prompts_per_step"] * c["generations"]
    n = len(cols["uid"])
    if n != expected or manifest["counts"]["rollouts"] != n:
        raise IntegrityError(f"run {key}: {n} rollouts stored, expected steps x P x G = {expected} (a resumed, "
                             f"truncated or mixed run). {rebuild_hint(key)}")
    if not np.array_equal(np.asarray(cols["uid"]), np.arange(n)):
        raise IntegrityError(f"run {key}: uids are not 0..N-1 in order (duplicated or mixed rows). {rebuild_hint(key)}")
    if not np.array_equal(np.asarray(cols["trained_step"]), np.asarray(cols["step"])):
        bad = int(np.sum(np.asarray(cols["trained_step"]) != np.asarray(cols["step"])))
        raise IntegrityError(f"run {key}: {bad} rollouts did not train in exactly the step they were generated "
                             f"for. {rebuild_hint(key)}")
    per_step = np.bincount(np.asarray(cols["step"]), minlength=c["steps"])
    if not np.all(per_step == c["prompts_per_step"] * c["generations"]):
        raise IntegrityError(f"run {key}: steps hold unequal rollout counts. {rebuild_hint(key)}")
    # each step's train_order is a permutation of 0..rows-1 (the order its loss summed them in; the replay's order)
    step, order = np.asarray(cols["step"]), np.asarray(cols["train_order"], np.int64)
    rows = c["prompts_per_step"] * c["generations"]
    if order.min(initial=0) < 0 or order.max(initial=0) >= rows or \
            len(np.unique(step.astype(np.int64) * rows + order)) != n:
        raise IntegrityError(f"run {key}: train_order is not a permutation of each step's rows. {rebuild_hint(key)}")


def list_runs(root: Path | None = None) -> list[dict]:
    root = cache_root(root)
    out = []
    for d in sorted((root / "runs").glob("*")):
        if d.name.startswith(".") or not (d / MANIFEST).exists():
            continue
        try:
            m = json.loads((d / MANIFEST).read_text())
        except json.JSONDecodeError:
            continue
        out.append({"key": d.name, "path": str(d), **m.get("summary", {}), "seed": m["config"]["seed"],
                    "profile": m["config"]["profile"], "planted": m["gate"]["planted"],
                    "created": m.get("created")})
    return out


def publish_once(final: Path, build_fn: Callable[[Path], None], *, marker: str = MANIFEST,
                 rebuild: bool = False) -> Path:
    """Build ``final`` exactly once, whoever asks, and publish it atomically; return ``final``.

    The sequence every writer of the cache uses (runs, toy models, derived data): if ``final/marker`` exists
    (and not ``rebuild``) return at once; else take ``final``'s file lock, check again (a concurrent builder may
    have published meanwhile), remove the temp folders of killed builds (``.tmp-<name>-*``), call
    ``build_fn(tmp)`` on a fresh empty ``.tmp-<name>-<pid>`` folder beside ``final`` and publish it by rename
    (``publish``). ``rebuild`` deletes a published ``final`` under the lock first. A build that raises leaves
    its temp folder for the next builder to remove; nothing half-built ever appears under ``final``."""
    from filelock import FileLock

    final = Path(final)
    done = final / marker
    if not rebuild and done.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if done.exists():
            if not rebuild:
                return final
            shutil.rmtree(final)
        for d in final.parent.glob(f".tmp-{final.name}-*"):
            shutil.rmtree(d, ignore_errors=True)
        tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
        tmp.mkdir()
        build_fn(tmp)
        publish(tmp, final)
    return final


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
