"""The local-buffer baseline of LDA-ORL: each rollout against the target at its own round only."""

from __future__ import annotations

import numpy as np

from bt_bench.estimator import Candidates, Capability, EstimatorError, Target
from estimators._math import check_dims, inner


class LocalBuffer:
    """Local buffer: score_i = <g_target^c(s_i), g_i^s_i>, c(s) the last target checkpoint at or before step s.

    Hu et al., "A Snapshot of Influence: A Local Data Attribution Framework for Online Reinforcement Learning",
    NeurIPS 2025 (LDA-ORL): a record of the round-k buffer is scored by the inner product of its training-loss
    gradient with the target's gradient, both at theta^(k), the parameters that round trained from (TracIn
    restricted to one round). Here g_i^s_i is the rollout's in-run sketch (at the parameters of its own step
    s_i) and the target is the one at the nearest TracIn checkpoint at or before s_i; a rollout whose step
    precedes the first target checkpoint is scored against that first checkpoint. A plain inner product, as in
    LDA-ORL's code (``compute_TracIn_surrogate_ghost.py``), not a cosine, and unweighted: inside one buffer
    eta_k is a common factor. For a drawn candidate every row shares the draw's checkpoint (its in-run sketch is
    taken there). A zero gradient scores 0. The BehaviorTrace paper reports this baseline at 0 at step level:
    its local window misses the early GT rollouts.
    """

    name = "local_buffer"
    description = "LDA-ORL local buffer (Hu+ 2025): <g_target^c(s_i), g_i> at the rollout's own round"
    capabilities = frozenset({Capability.IN_RUN_SKETCHES, Capability.TOKEN_SKETCHES})
    level = "rollout"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        rows = np.asarray(candidates.in_run_sketches(), dtype=np.float64)
        steps = np.asarray(candidates.step, dtype=np.int64)
        if candidates.source == "draw":
            # a draw's candidates were all generated at one checkpoint: one target, whatever the row steps say
            if len(candidates.checkpoints) != 1:
                raise EstimatorError(self.name, f"a draw must hold one checkpoint, got "
                                                f"{[c.step for c in candidates.checkpoints]}")
            steps = np.full(len(rows), candidates.checkpoints[0].step, np.int64)
        ckpts = np.array(sorted(target.vectors), dtype=np.int64)
        # last checkpoint <= step; index -1 (before the first checkpoint) falls back to the first one
        which = np.maximum(np.searchsorted(ckpts, steps, side="right") - 1, 0)
        out = np.zeros(len(rows), dtype=np.float64)
        for j in np.unique(which):
            vec = target.at(int(ckpts[j]), self.name)
            check_dims(self.name, rows, vec)
            mine = which == j
            out[mine] = inner(rows[mine], vec)
        return out
