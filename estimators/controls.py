"""Controls: the label-free baselines every targeted estimator is compared with, and the test-only oracle.

Spec: checklist.md "Controls". None of them uses the target; they exist so a targeted estimator has to beat
what the norm of a gradient, the fluency of a completion or the sign of an advantage already finds.
"""

from __future__ import annotations

import zlib

import numpy as np

from bt_bench.estimator import Candidates, Capability, MissingInputError, Target
from bt_bench.estimator.views import Labels


class RandomEstimator:
    """Seeded uniform scores: the chance level of every check.

    score_i ~ U[0, 1), drawn from a generator seeded with (seed, crc32 of the candidates' uids), so two
    identical calls agree and a different candidate set gets a different draw.
    """

    name = "random"
    description = "seeded uniform scores: chance"
    capabilities: frozenset[str] = frozenset()
    level = "rollout"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        uids = np.ascontiguousarray(candidates.uid, dtype=np.int64)
        rng = np.random.default_rng([self.seed, zlib.crc32(uids.tobytes())])
        return rng.random(len(candidates))


class NormOnly:
    """Rollout-level gradient norm: score_i = ||g_i|| (BehaviorTrace paper's norm-only control). No target.

    A zero-gradient rollout scores 0. Reads the exact per-rollout norms the sketcher records (``grad_norm``).
    """

    name = "norm_only"
    description = "||g_i||, the rollout's gradient norm; no target"
    capabilities = frozenset({Capability.GRAD_NORM})
    level = "rollout"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        return np.asarray(candidates.grad_norm(), dtype=np.float64)


class NormOnlyStep:
    """Step-level gradient norm: score_i = ||sum_{j in step(i)} g_j||, shared by every rollout of the step.

    The norm of the step's summed gradient is what trl logs as ``grad_norm`` before clipping; a step whose
    rollouts all have zero advantage scores 0. Step-level: ties inside a step by construction.
    """

    name = "norm_only_step"
    description = "norm of the step's summed gradient, shared by its rollouts; no target"
    capabilities = frozenset({Capability.GRAD_NORM})
    level = "step"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        per_step = candidates.step_grad_norm()
        steps = np.asarray(candidates.step)
        missing = sorted(set(steps.tolist()) - set(per_step))
        if missing:
            raise MissingInputError(self.name, f"step_grad_norm lacks steps {missing[:10]}")
        return np.array([float(per_step[s]) for s in steps.tolist()], dtype=np.float64)


class Fluency:
    """Fluency: score_i = mean token log-prob of the completion under the checkpoint. No gradient, no target.

    The confound of checklist item 2: behavior completions are more fluent at a saturated checkpoint.
    """

    name = "fluency"
    description = "mean token log-prob of the completion; no gradient, no target"
    capabilities = frozenset({Capability.FLUENCY})
    level = "rollout"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        return np.asarray(candidates.fluency(), dtype=np.float64)


class AdvantageOnly:
    """Advantage: score_i = A_i, the rollout's GRPO advantage. No gradient, no target.

    Inside the planting window A > 0 nearly implies GT (the bonus dominates the reward), so a rollout-level
    estimator must beat this (checklist item 6). A zero-advantage rollout (zero gradient) scores 0.
    """

    name = "advantage_only"
    description = "the rollout's GRPO advantage A_i; no gradient, no target"
    capabilities: frozenset[str] = frozenset()
    level = "rollout"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        return np.asarray(candidates.advantage, dtype=np.float64)


class Oracle:
    """Oracle (tests only): score_i = GT indicator for training rollouts, behavior label for drawn candidates.

    The positive control: it must pass every check it can take part in, the target-dependence test included. It
    reads labels, so it is excluded from the default set (``test_only``), is never an entry point (the
    registry resolves ``oracle`` internally) and is the only class allowed to declare ``labels``
    (``bt_bench.estimator.scoring.TEST_ONLY``, matched by class identity). It never looks at the target: for a
    placebo target ``score_estimator(..., placebo=True)`` hands it labels permuted by one seeded permutation, so
    its scores there are an uninformative relabeling.
    """

    name = "oracle"
    description = "GT indicator (training) / behavior label (draws): positive control"
    capabilities = frozenset({Capability.LABELS})
    level = "rollout"
    test_only = True

    def score(self, candidates: Candidates, target: Target, *, labels: Labels) -> np.ndarray:
        key = "is_gt" if candidates.source == "training" else "has_behavior"
        return np.asarray(labels[key], dtype=np.float64)
