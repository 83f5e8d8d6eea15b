"""Estimators that misbehave as processes (tests/test_sealed.py): they print, sleep, die, or raise."""

from __future__ import annotations

import os
import time

import numpy as np


class _Base:
    level = "rollout"
    capabilities = frozenset({"grad_norm"})

    def _norm(self, candidates):
        return np.asarray(candidates.grad_norm(), float)


class Printer(_Base):
    """prints to stdout on every call: the protocol must not care"""

    name = "rt_printer"

    def fit(self, run):
        print("fitting", len(run.uid), flush=True)

    def score(self, candidates, target):
        print("scoring", len(candidates.uid), "{\"scores\": \"x\"}", flush=True)
        return self._norm(candidates)


class Sleeper(_Base):
    """never returns in time"""

    name = "rt_sleeper"

    def score(self, candidates, target):
        time.sleep(600)
        return self._norm(candidates)


class Dies(_Base):
    """ends its process mid-call"""

    name = "rt_dies"

    def score(self, candidates, target):
        os._exit(3)


class Undeclared(_Base):
    """reads a sketch it did not declare (CapabilityError), or a missing one (MissingInputError)"""

    name = "rt_undeclared"

    def score(self, candidates, target):
        return np.linalg.norm(np.asarray(candidates.in_run_sketches()), axis=1)


class ObjectScores(_Base):
    name = "rt_object_scores"

    def score(self, candidates, target):
        return np.array(["a"] * len(candidates.uid), dtype=object)
