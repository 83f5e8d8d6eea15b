"""Estimators that attack the judge from inside their own process (issue "A gate that cannot be bypassed", item 2).
tests/test_redteam.py runs each through `pytest checks --bt-paper-gate` on the tiny fixture as a user would.

(i) JudgePatcher   on import, replaces every judge's outcome and the gate's unit label with "pass"
                   (tests/redteam/rt_patcher.py: a module of its own, since the patch hits whoever imports it)
(j) FrameReader    reads `data` and `placebo` from score_estimator's frame: the labels under a real target, permuted
                   labels under a placebo (what passed every oracle cell when estimators ran beside the judge)
(k) CacheReader    opens the run cache at scoring time and looks the candidates' labels up by uid and tokens
(l) InputWriter    writes into the array files and checkpoints it was handed (links the judge and the cache share)

Scored in a sandboxed process of its own, (i) patches a copy of the judges nobody uses, (j) finds no such frame, and
(k) and (l) are refused by the kernel: none of them gets a verdict it did not earn.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import numpy as np


class FrameReader:
    """(j) labels from the caller's frame, permuted under a placebo target."""

    name = "rt_frame_reader"
    level = "rollout"
    capabilities = frozenset()

    def score(self, candidates, target):
        for f in inspect.stack():
            loc = f.frame.f_locals
            if f.function == "score_estimator" and "data" in loc:
                lab = loc["data"].labels
                key = "is_gt" if "is_gt" in lab else "has_behavior"
                y = np.asarray(lab[key], float)
                if loc.get("placebo"):
                    y = y[np.random.default_rng(1).permutation(len(y))]
                return y + 1e-6 * np.arange(len(y)) / len(y)
        raise LookupError("no score_estimator frame with the labels")


class CacheReader:
    """(k) the labels from the run cache, matched by the candidates' uids and completion tokens."""

    name = "rt_cache_reader"
    level = "rollout"
    capabilities = frozenset()

    def score(self, candidates, target):
        root = Path(os.environ.get("BT_BENCH_CACHE") or Path.home() / ".cache" / "bt-bench")
        uid, ids = np.asarray(candidates.uid), np.asarray(candidates.completion_ids)
        os.listdir(root)  # rglob would skip an unreadable folder silently: say so (PermissionError) instead
        for col in ("is_gt", "has_behavior"):
            for f in sorted(root.rglob(f"{col}.npy")):
                u, c = f.parent / "uid.npy", f.parent / "completion_ids.npy"
                if u.exists() and c.exists():
                    uu, cc = np.load(u, mmap_mode="r"), np.load(c, mmap_mode="r")
                    if len(uu) == len(uid) and np.array_equal(uu, uid) and cc.shape == ids.shape \
                            and np.array_equal(cc, ids):
                        y = np.load(f).astype(float)
                        return y + 1e-6 * np.arange(len(y)) / len(y)
        raise LookupError(f"no cached run matched under {root}")


class InputWriter:
    """(l) writes into the files it was handed: its sketches and checkpoints are links that the judge, the other
    scoring processes and the run cache share, so a write there would change what every later verdict reads (norms
    that a control computes, say). Zeroes the last 8 bytes of every array file and checkpoint in its folder."""

    name = "rt_input_writer"
    level = "rollout"
    capabilities = frozenset({"checkpoint_sketches", "in_run_sketches", "model"})

    def score(self, candidates, target):
        files = sorted(Path.cwd().glob("*.npy")) + sorted(Path.cwd().glob("model*/model.safetensors"))
        if not files:
            raise LookupError("no input files in the working folder")
        for f in files:
            with open(f, "r+b") as fh:
                fh.seek(-8, os.SEEK_END)
                fh.write(b"\0" * 8)
        return np.arange(len(candidates.uid), dtype=float)
