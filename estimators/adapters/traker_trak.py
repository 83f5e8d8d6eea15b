"""traker's TRAKer (MadryLab) with its own projector, one model id per checkpoint."""

from __future__ import annotations

import tempfile

import numpy as np

from bt_bench.estimator import Candidates, Target
from estimators.adapters._common import Adapter


def _output_class():
    """traker's model-output interface for the suite's objective (built lazily: it subclasses a traker class)."""
    import torch
    from trak.modelout_functions import AbstractModelOutput

    class NegLoss(AbstractModelOutput):
        """f(z) = -loss(z): the candidate's ``-rollout_losses`` term, or ``-target.loss`` for the target row. The
        training loss is -f, so the out-to-loss gradient Q is 1 (TRAK's 1 - p for a logistic loss)."""

        def __init__(self) -> None:
            pass

        def get_output(self, model, weights, buffers, idx):  # IterativeGradientComputer passes (model, None, None, *batch)
            return -model(idx)

        def get_out_to_loss_grad(self, model, weights, buffers, batch):
            return torch.ones(len(batch[0]), 1)

    return NegLoss


def _relative_ridge(damping: float):
    """traker's BasicScoreComputer with its ridge ``lambda_reg`` set per checkpoint to damping x the mean
    eigenvalue of X^T X (X the projected training features), as the built-in ``trak`` does: an absolute ridge
    would mean something else on every view (policy gradients are ~1e3 smaller than likelihood ones)."""
    from trak.score_computers import BasicScoreComputer

    class RelativeRidge(BasicScoreComputer):
        def get_x_xtx_inv(self, grads, xtx):
            mean_eig = float(xtx.diagonal().sum()) / xtx.shape[0]
            self.lambda_reg = damping * mean_eig if mean_eig > 0 else damping
            return super().get_x_xtx_inv(grads, xtx)

    return RelativeRidge


class TrakerTRAK(Adapter):
    """traker TRAK: score_i = mean_c phi_target^c' (Phi_c'Phi_c + lam_c I)^-1 phi_i^c, phi = P grad(-loss).

    Library: traker 0.3.2 (Park et al. 2023). API: ``trak.TRAKer(model, task, train_set_size, save_dir,
    device, gradient_computer=IterativeGradientComputer, proj_dim, use_half_precision=False, score_computer,
    lambda_reg)``, then per checkpoint ``load_checkpoint(state, model_id)`` + ``featurize(batch, num_samples)``,
    ``finalize_features()``, ``start_scoring_checkpoint(exp, state, model_id, num_targets=1)`` + ``score``, and
    ``finalize_scores(exp)`` -> [n, 1]. The projector is traker's own: ``BasicProjector`` (Gaussian) on CPU,
    ``CudaProjector`` (fast_jl) on a GPU where fast_jl is installed. Model output function: f = -loss (``NegLoss``
    above: ``-rollout_losses`` for a candidate, ``-target.loss`` for the one target row), Q = 1. The ensemble is
    the view's checkpoints (one traker model id each, averaged with equal weight), not independently trained
    models. The ridge is relative (``damping`` x mean eigenvalue of X'X, through traker's ``score_computer`` hook);
    traker also rescales (X'X)^-1 by its mean |entry|, a constant factor.

    Causal LM: yes with ``IterativeGradientComputer`` (per-example ``autograd.grad`` on the plain module); traker's
    default ``FunctionalGradientComputer`` (torch.func vmap) is not used: HF's SDPA mask has data-dependent
    control flow vmap refuses. Tied embeddings: one parameter, gradient of both uses (``parameters()``). Token
    views: the candidates' loss is the behavior-span loss.

    Cost: one backward per candidate and checkpoint, one projection of the full gradient (n x params x
    proj_dim multiply-adds; traker's CPU projector regenerates the Gaussian matrix in blocks on every batch).
    """

    name = "traker_trak"
    description = "traker 0.3 TRAKer (own projector): mean_c phi_t' (Phi'Phi + lam I)^-1 phi_i, f = -loss, Q = 1"
    module, extra = "trak", "traker"

    def __init__(self, proj_dim: int = 512, damping: float = 1e-2, batch_size: int = 64, seed: int = 0):
        super().__init__(batch_size)
        if not damping > 0:
            raise ValueError(f"TrakerTRAK.damping must be > 0, got {damping!r}")
        self.proj_dim, self.damping, self.seed = int(proj_dim), float(damping), int(seed)

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        import logging

        from trak import TRAKer
        from trak.gradient_computers import IterativeGradientComputer

        from estimators.adapters._model import RowObjective, as_scores, batches, target_row

        steps, n = self._steps(candidates), len(candidates)
        objective = RowObjective(candidates, target, steps)
        device = str(objective.device)
        # a fresh folder per call: traker keeps its features there (load_from_save_dir=False breaks its
        # experiments file in 0.3.2, so the default True reads this empty folder instead)
        with tempfile.TemporaryDirectory() as tmp:
            traker = TRAKer(objective, _output_class()(), train_set_size=n, save_dir=tmp,
                            device=device, gradient_computer=IterativeGradientComputer, proj_dim=self.proj_dim,
                            use_half_precision=False, score_computer=_relative_ridge(self.damping),
                            projector_seed=self.seed, logging_level=logging.WARNING)
            for model_id, step in enumerate(steps):
                traker.load_checkpoint(objective.state(step), model_id=model_id)
                objective.step = step  # traker loaded the weights itself; the target row must use this step
                for b in batches(n, self.batch_size):
                    traker.featurize(batch=[b.to(device)], num_samples=len(b))
            traker.finalize_features()
            for model_id, step in enumerate(steps):
                traker.start_scoring_checkpoint("target", objective.state(step), model_id=model_id, num_targets=1)
                objective.step = step
                traker.score(batch=[target_row().to(device)], num_samples=1)
            scores = traker.finalize_scores("target")
            return as_scores(np.array(scores)[:, 0], n)
