"""TracIn family: TracInCP (Pruthi et al. 2020) and LESS (Xia et al. 2024), its cosine form for Adam.

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
    """LESS: score_i = sum_c eta_c * cos(P_c g_i^c, g_target^c), P_c = 1/(sqrt(v_hat_c)+eps); target plain.

    Xia et al., "LESS: Selecting Influential Data for Targeted Instruction Tuning", ICML 2024 (arXiv
    2402.04333), section 3.1 "Extension to Adam": Inf_Adam(z, z') = sum_i eta_bar_i cos(grad l(z'; theta_i),
    Gamma(z, theta_i)), Gamma = m_{t+1} / (sqrt(v_{t+1}) + eps) the training example's Adam update direction,
    against the target's *plain* gradient. Their code (github.com/princeton-nlp/LESS) agrees: training
    gradients are collected with ``--gradient_type adam`` (less/data_selection/collect_grad_reps.py,
    ``obtain_gradients_with_adam``), validation ones always with ``sgd``
    (less/scripts/get_info/grad/get_eval_lora_grads.sh: "for validation data, we should always get gradients
    with sgd"), each projected, then unit-normalised (``merge_and_normalize_info``), and
    less/data_selection/matching.py sums the checkpoints' products weighted by each epoch's average learning
    rate, renormalised to sum 1 (a positive scale: no ranking changes). Until 2026-12-04 this estimator
    preconditioned the target too; ``precondition_target=True`` keeps that symmetric form (TrackStar's
    second-moment correction of both sides, Chang et al. ICLR 2025, without its curvature term).

    What the fixture can give, hence the approximations (docs/estimators.md, "tracin_adam"):
    - Gamma from the checkpoint's v alone. LESS first takes one Adam step on the example, m = b1 m_prev +
      (1-b1) g and v = b2 v_prev + (1-b2) g^2. The runs save AdamW's exp_avg_sq (v_c) but not exp_avg, so
      the b1 m_prev term is dropped, and v_c stands for the updated v (exact where (1-b2) g^2 is small beside
      b2 v_c; a rollout's gradient is one term of its step's loss). What is left,
      (1-b1)/(1-b1^t) g / (sqrt(v_hat_c)+eps), is the sketch derive stores up to that positive scalar, which
      a cosine ignores.
    - eps as AdamW and the paper place it, sqrt(v_hat) + 1e-8 with v bias-corrected; LESS's code computes
      m / sqrt(v + 1e-8) without bias correction, which floors the denominator at 1e-4.
    - eta_c is the learning rate at checkpoint c (``Checkpoint.lr``), not the average over the steps before
      it: the per-step learning rate is kept from estimators (its schedule marks the planting window).
    - the target is one vector per checkpoint, the gradient of the *mean* over the target's rows; LESS
      averages the cosines of its validation examples one by one (and takes the max over subtasks).
    A zero gradient scores 0. No token-level support: the sketcher provides no token-restricted preconditioned
    sketches.
    """

    name = "tracin_adam"
    description = "LESS (Xia+ 2024): sum_c eta_c cos(g_i / (sqrt(v_c) + eps), g_target^c), plain target"
    capabilities = frozenset({Capability.OPTIMIZER_STATE})
    level = "rollout"

    def __init__(self, precondition_target: bool = False):
        self.precondition_target = bool(precondition_target)

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        target_at = target.preconditioned_at if self.precondition_target else target.at
        return checkpoint_sum(self.name, candidates, candidates.preconditioned_sketches(),
                              target_at, cosine, lambda ck: ck.lr)
