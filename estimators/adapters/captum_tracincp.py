"""captum's TracInCP over the view's checkpoints."""

from __future__ import annotations

import numpy as np

from bt_bench.estimator import Candidates, Target
from estimators.adapters._common import Adapter


class CaptumTracInCP(Adapter):
    """captum TracInCP: score_i = sum_c lr_c <grad L_target^c, grad L_i^c>, exact per-example gradients.

    Library: captum 0.9.0. API: ``captum.influence.TracInCP(model, train_dataset, checkpoints,
    checkpoints_load_func, loss_fn=None, batch_size, sample_wise_grads_per_batch=False).influence((x, y))``,
    which returns [1, n] (Pruthi et al. 2020, TracInCP). Model output function: ``RowObjective`` (adapters/_model):
    a candidate row's output is its ``rollout_losses`` term, the test example is the sentinel row whose output is
    ``target.loss`` at the loaded checkpoint; ``loss_fn=None`` makes captum differentiate the output itself.
    ``checkpoints`` are the view's checkpoint steps; ``checkpoints_load_func`` loads one and returns its learning
    rate (``Checkpoint.lr``), captum's weight.

    Causal LM: yes, any module works on this path (captum calls ``torch.autograd.grad`` per example over
    ``model.parameters()``). Tied embeddings: counted once, with the gradient of both uses (``parameters()``
    yields the tied matrix once). Not used: captum's ``sample_wise_grads_per_batch`` trick (hooks for Linear and
    Conv2d only; the LM also has an Embedding and RMSNorm weights) and ``TracInCPFast`` (last layer only, for a
    2-D output; a causal LM's head outputs [B, T, V]). Token views: the candidates' ``rollout_losses`` is then
    the behavior-span loss, so captum scores the span (zero for candidates without it).

    Cost: one forward per batch and one backward per candidate and checkpoint (captum loops
    ``autograd.grad`` over the rows of a batch), plus reloading the checkpoint per batch and checkpoint.
    """

    name = "captum_tracincp"
    description = "captum 0.9 TracInCP: sum_c lr_c <grad L_target^c, grad L_i^c>, exact per-example autograd"
    module = extra = "captum"

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        from captum.influence import TracInCP
        from torch.utils.data import TensorDataset

        from estimators.adapters._model import RowObjective, as_scores, rows, target_row

        steps = self._steps(candidates)
        objective = RowObjective(candidates, target, steps)
        lr = {str(c.step): float(c.lr) for c in candidates.checkpoints}

        def load(model: RowObjective, checkpoint: str) -> float:
            model.load(int(checkpoint))
            return lr[checkpoint]

        idx = rows(len(candidates))  # captum's batches are (inputs..., labels); the label is unused (loss_fn None)
        tracin = TracInCP(objective, TensorDataset(idx, idx), [str(s) for s in steps], checkpoints_load_func=load,
                          loss_fn=None, batch_size=self.batch_size, sample_wise_grads_per_batch=False)
        t = target_row()
        return as_scores(tracin.influence((t, t))[0], len(candidates))
