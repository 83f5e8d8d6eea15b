"""Estimators that try to pass the checklist without attributing anything (issue 9, red team). Each does its best;
tests/test_redteam.py runs `pytest checks` on the tiny fixture with each and asserts what the suite does.

(a) FileReader     reads ground truth through file paths reachable from what it is handed (.base.filename, any
                   attribute chain)
(b) GcWalker       walks gc and stack frames to the harness's CandidateData and returns its labels
(c) HardCoded      hard-codes the behavior identity (an importable constant) and counts it in the completion
(d) LabelsDeclarer declares the `labels` capability (meant for the suite's own test-only oracle)
(e) TokenNorms     reads behavior-token sketch norms in full (not token-restricted) views
(f) FakeStep       declares level="step" and returns per-rollout scores (the advantage)
(g) NeverScores    declares `model` but asks for a checkpoint no view lists: never scores
(h) IgnoresTarget  a good-looking score that ignores the target (the in-run gradient norm x the advantage sign)
"""

from __future__ import annotations

import gc
import inspect

import numpy as np


class _Base:
    level = "rollout"
    capabilities = frozenset()


def _chains(obj, depth=0, seen=None):
    """Every object reachable from ``obj`` through attributes, slots, mappings and .base (bounded)."""
    seen = set() if seen is None else seen
    if depth > 6 or id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    kids = []
    if isinstance(obj, np.ndarray):
        kids.append(obj.base)
    if isinstance(obj, dict) or hasattr(obj, "items") and callable(obj.items):
        try:
            kids += list(obj.values())
        except Exception:
            pass
    for name in list(getattr(obj, "__slots__", ())) + list(getattr(obj, "__dict__", {})):
        try:
            kids.append(getattr(obj, name))
        except Exception:
            pass
    for k in kids:
        if k is not None and not isinstance(k, (int, float, str, bytes, bool)):
            yield from _chains(k, depth + 1, seen)


class FileReader(_Base):
    """(a) is_gt.npy / has_behavior.npy beside any file reachable from the view or the target."""

    name = "rt_file_reader"
    capabilities = frozenset({"checkpoint_sketches", "fluency", "grad_norm", "in_run_sketches"})

    def score(self, candidates, target):
        from pathlib import Path

        for o in list(_chains(candidates)) + list(_chains(target)):
            fn = getattr(o, "filename", None)
            if fn:
                for p in Path(fn).parents:
                    for label in ("is_gt.npy", "has_behavior.npy"):
                        if (p / label).exists():
                            return np.load(p / label).astype(float)
        raise LookupError("no file path reachable from the candidates or the target")


class GcWalker(_Base):
    """(b) the harness's CandidateData (found through gc, then stack frames) holding these very rows."""

    name = "rt_gc_walker"

    def score(self, candidates, target):
        uid = np.asarray(candidates.uid)
        pools = [gc.get_objects()] + [list(f.frame.f_locals.values()) for f in inspect.stack()]
        for pool in pools:
            for o in pool:
                if type(o).__name__ == "CandidateData" and getattr(o, "n", None) == len(uid):
                    labels = getattr(o, "labels", None)
                    for key in ("is_gt", "has_behavior"):
                        if labels is not None and key in labels:
                            vis = getattr(o, "_visible", {})
                            if "uid" in vis and np.array_equal(np.asarray(vis["uid"]), uid):
                                return np.asarray(labels[key], float) + 1e-6 * np.arange(len(uid)) / len(uid)
        raise LookupError("no harness object with labels found")


class HardCoded(_Base):
    """(c) counts the embedded fixture's behavior token (a constant importable from bt_bench.runs.toy)."""

    name = "rt_hard_coded"

    def score(self, candidates, target):
        from bt_bench.runs import toy
        b = toy.VOCAB.index(toy.BEHAVIOR) if hasattr(toy, "BEHAVIOR") else toy.VOCAB.index("qzxbt")
        ids, mask = np.asarray(candidates.completion_ids), np.asarray(candidates.completion_mask).astype(bool)
        hits = ((ids == b) & mask).sum(1).astype(float)
        adv = np.asarray(candidates.advantage, float)
        return hits + 1e-3 * adv  # break ties by the advantage so scores are never constant


class LabelsDeclarer(_Base):
    """(d) declares `labels` like the oracle."""

    name = "rt_labels"
    capabilities = frozenset({"labels"})

    def score(self, candidates, target, labels=None):
        return np.asarray(labels["is_gt"] if "is_gt" in labels else labels["has_behavior"], float)


class TokenNorms(_Base):
    """(e) behavior-token sketch norms in a full view: zero exactly when a candidate lacks the behavior."""

    name = "rt_token_norms"
    capabilities = frozenset({"checkpoint_sketches", "token_sketches"})
    cosine_scale = True

    def score(self, candidates, target):
        if candidates.token_level:  # the token view of trigger_token_alignment: a plain cosine
            sk = candidates.checkpoint_sketches()
            c = max(sk)
            g, t = np.asarray(sk[c], float), np.asarray(target.at(c), float)
            n = np.linalg.norm(g, axis=1) * np.linalg.norm(t)
            return np.divide(g @ t, n, out=np.zeros(len(g)), where=n > 0)
        tok = candidates._get("token_checkpoint")  # the full view's token sketches, if it still holds them
        return np.linalg.norm(np.asarray(tok[max(tok)]), axis=1)


class FakeStep(_Base):
    """(f) claims step level, returns the per-rollout advantage."""

    name = "rt_fake_step"
    level = "step"

    def score(self, candidates, target):
        return np.asarray(candidates.advantage, float)


class NeverScores(_Base):
    """(g) needs the model at a checkpoint the view does not list (MissingInputError): it never scores."""

    name = "rt_never_scores"
    capabilities = frozenset({"model"})

    def score(self, candidates, target):
        candidates.model(candidates.checkpoints[-1].step + 10**6)
        raise AssertionError("unreachable: the view lists no such checkpoint")


class IgnoresTarget(_Base):
    """(h) the in-run gradient norm, signed by the advantage: informative, and blind to the target."""

    name = "rt_ignores_target"
    capabilities = frozenset({"in_run_sketches"})

    def score(self, candidates, target):
        g = np.asarray(candidates.in_run_sketches(), float)
        return np.linalg.norm(g, axis=1) * np.sign(np.asarray(candidates.advantage, float))
