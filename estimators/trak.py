"""TRAK-style whitened gradient kernel over projected features, ensembled over checkpoints."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bt_bench.estimator import Candidates, Capability, MissingInputError, Target
from bt_bench.fixture.kernels import Whitener
from estimators._math import check_dims


class TRAK:
    """TRAK-style kernel: score_i = (1/|C|) sum_c g_target^c^T (Phi_c^T Phi_c + lam_c I)^-1 g_i^c.

    Park et al., "TRAK: Attributing Model Behavior at Scale", ICML 2023: their score
    tau(z) = phi(z)^T (Phi^T Phi)^-1 Phi^T Q on randomly projected gradient features Phi. Phi_c holds the
    training rollouts' sketches at checkpoint c, taken from ``fit(run)``; without ``fit`` the candidates' own
    sketches stand in (the same thing when the candidates are the training rollouts).
    lam_c = damping * ||Phi_c||_F^2 / k (relative to the mean eigenvalue of Phi^T Phi) unless
    ``relative_damping=False``, then lam_c = damping; it keeps the inverse defined when k exceeds the number
    of non-zero gradients.

    Departures from TRAK: (1) no Q term. For classification TRAK multiplies by Q = diag(1 - p_i), the
    derivative of the logistic loss w.r.t. the model output; here the output function is the rollout's own
    GRPO loss term, whose gradient already carries the advantage weight, so Q = I. (2) The ensemble averages
    over the checkpoints of one run, not over independently trained models. (3) The sketch is the random
    projection; no soft-thresholding. A zero gradient scores exactly 0.
    """

    name = "trak"
    description = "TRAK-style (Park+ 2023): mean_c g_target^c' (Phi_c'Phi_c + lam I)^-1 g_i^c"
    capabilities = frozenset({Capability.CHECKPOINT_SKETCHES, Capability.TOKEN_SKETCHES})
    level = "rollout"

    def __init__(self, damping: float = 1e-2, relative_damping: bool = True):
        if not damping > 0:
            raise ValueError(f"TRAK.damping must be > 0, got {damping!r}")
        self.damping, self.relative_damping = float(damping), bool(relative_damping)
        self._fitted: dict[int, Whitener] | None = None

    def _whitener(self, phi: np.ndarray) -> Whitener:
        phi = np.asarray(phi, dtype=np.float64)
        lam = self.damping
        if self.relative_damping:
            mean_eig = float(np.sum(phi * phi)) / phi.shape[1]
            lam = self.damping * mean_eig if mean_eig > 0 else self.damping
        return Whitener.of(phi, lam)

    def fit(self, run_view: Candidates) -> None:
        """Whitening per checkpoint from the training rollouts' sketches (no labels involved)."""
        self._fitted = {c: self._whitener(phi) for c, phi in run_view.checkpoint_sketches().items()}

    def _whiteners(self, sketches: Mapping[int, np.ndarray]) -> Mapping[int, Whitener]:
        if self._fitted is None:
            return {c: self._whitener(phi) for c, phi in sketches.items()}
        missing = sorted(set(sketches) - set(self._fitted))
        if missing:
            raise MissingInputError(self.name, f"fitted at checkpoints {sorted(self._fitted)}, "
                                               f"not at {missing}")
        return self._fitted

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        sketches = candidates.checkpoint_sketches()
        if not sketches:
            raise MissingInputError(self.name, "the view holds sketches at no checkpoint")
        whiteners = self._whiteners(sketches)
        total = np.zeros(len(candidates), dtype=np.float64)
        for c, rows in sketches.items():
            t = np.asarray(target.at(c, self.name), dtype=np.float64)
            check_dims(self.name, rows, t)
            total += np.asarray(rows, dtype=np.float64) @ whiteners[c].apply(t)
        return total / len(sketches)
