"""Gradient Aggregated Similarity, canonical and the fixed-target variant (named apart on purpose)."""

from __future__ import annotations

import numpy as np

from bt_bench.estimator import Candidates, Capability, Target
from estimators._math import check_dims, checkpoint_sum, cosine


class GAS:
    """GAS: score_i = sum_c (eta_c / b_c) * cos(g_target^c, g_i^c), the target recomputed at each checkpoint.

    Hammoudeh & Lowd, "Identifying a Training-Set Attack's Target Using Renormalized Influence Estimation",
    CCS 2022 (GAS, the renormalized TracInCP). eta_c is the learning rate and b_c the batch size at c (here
    the divisor of that step's loss, ``Checkpoint.batch_size``). A zero gradient has cosine 0.
    """

    name = "gas"
    description = "GAS (Hammoudeh & Lowd 2022): sum_c eta_c / b_c cos(g_target^c, g_i^c)"
    capabilities = frozenset({Capability.CHECKPOINT_SKETCHES, Capability.TOKEN_SKETCHES})
    level = "rollout"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        return checkpoint_sum(self.name, candidates, candidates.checkpoint_sketches(),
                              target.at, cosine, lambda ck: ck.lr / ck.batch_size)


class GASFixedTarget:
    """Fixed-target GAS: score_i = sum over the in-run steps s of rollout i of cos(g_target^final, g_i^s).

    The variant the BehaviorTrace paper calls GAS: one target gradient at the final (fixed) checkpoint,
    unweighted, against each rollout's gradient at the parameters of its own step (one step per rollout in
    GRPO with one iteration, so one term). Unlike canonical GAS the target does not move with the parameters.
    For a drawn candidate the in-run sketch is the one at the checkpoint it was drawn from. Zero gradient: 0.
    """

    name = "gas_fixed_target"
    description = "BehaviorTrace's GAS: cos(g_target^final, g_i) at the rollout's own step"
    capabilities = frozenset({Capability.IN_RUN_SKETCHES, Capability.TOKEN_SKETCHES})
    level = "rollout"
    cosine_scale = True  # one unweighted cosine per rollout

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        rows = candidates.in_run_sketches()
        check_dims(self.name, rows, target.final)
        return cosine(rows, target.final)
