"""TracIn family: TracInCP (Pruthi et al. 2020) and its optimizer-aware cosine variant for AdamW.

The sketches are of each rollout's update direction -grad(loss_i) (schema.md), so a positive product with the
target gradient means "this rollout pushed the target up".
"""

from __future__ import annotations

import numpy as np

from bt_bench.estimator import Candidates, Capability, Target
from estimators._math import checkpoint_sum, cosine, inner


class TracInCP:
    """TracInCP: score_i = sum_c eta_c * <g_target^c, g_i^c> over saved checkpoints c.

    Pruthi et al., "Estimating Training Data Influence by Tracing Gradient Descent", NeurIPS 2020: TracInCP,
    the checkpoint approximation of TracIn. eta_c is the learning rate at checkpoint c. A zero gradient
    scores 0.
    """

    name = "tracincp"
    description = "TracInCP (Pruthi+ 2020): sum_c eta_c <g_target^c, g_i^c>"
    capabilities = frozenset({Capability.CHECKPOINT_SKETCHES, Capability.TOKEN_SKETCHES})
    level = "rollout"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        return checkpoint_sum(self.name, candidates, candidates.checkpoint_sketches(),
                              target.at, inner, lambda ck: ck.lr)


class TracInAdam:
    """Optimizer-aware cosine: score_i = sum_c eta_c * cos(P_c g_target^c, P_c g_i^c), P_c = 1/(sqrt(v_c)+eps).

    v_c is AdamW's second moment at checkpoint c (GRPO trains with AdamW, whose step is g/sqrt(v), not g).
    LESS (Xia et al., ICML 2024) sums eta_c-weighted cosines with the Adam-preconditioned training
    gradient; TrackStar (Chang et al., ICLR 2025) unit-normalizes after dividing both sides by sqrt(v).
    The division cannot happen after a random projection, so this estimator reads *preconditioned* sketches
    (``optimizer_state``): derive sketches g/(sqrt(v_c)+eps) per candidate with the run's own sketch, v_c the
    bias-corrected second moment saved with checkpoint c (AdamW's own denominator; eps 1e-8;
    ``bt_bench.sketch.precondition``), and puts the same of each target into ``Target.preconditioned``. With ``precondition_target=False`` the target is the plain gradient
    (LESS's asymmetric form). A zero gradient scores 0. No token-level support: the sketcher provides no
    token-restricted preconditioned sketches.
    """

    name = "tracin_adam"
    description = "LESS/TrackStar: sum_c eta_c cos of g / (sqrt(v_c) + eps) (AdamW-preconditioned)"
    capabilities = frozenset({Capability.OPTIMIZER_STATE})
    level = "rollout"

    def __init__(self, precondition_target: bool = True):
        self.precondition_target = bool(precondition_target)

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        target_at = target.preconditioned_at if self.precondition_target else target.at
        return checkpoint_sum(self.name, candidates, candidates.preconditioned_sketches(),
                              target_at, cosine, lambda ck: ck.lr)
