"""kronfluence's EK-FAC influence at the view's last checkpoint."""

from __future__ import annotations

import tempfile

import numpy as np

from bt_bench.estimator import Candidates, Target
from estimators.adapters._common import Adapter


def _task(candidates: Candidates, definition, lm):
    """kronfluence's ``Task`` for the suite's objective (built lazily: it subclasses a kronfluence class).

    Datasets are row indices: candidates ``i >= 0`` (train), target rows ``-1 - r`` (query)."""
    import torch
    from kronfluence.task import Task

    from bt_bench.estimator import rollout_batch, rollout_losses
    from bt_bench.estimator.objective import target_terms

    device = next(lm.parameters()).device
    head = next(n for n, m in lm.named_modules() if m is lm.get_output_embeddings())
    linears = [n for n, m in lm.named_modules() if isinstance(m, torch.nn.Linear)]

    def train_batch(idx, likelihood=False):
        b = rollout_batch(candidates, idx.cpu().numpy(), device=device)
        if likelihood:  # -sum log p of the rollout's own completion (see compute_train_loss)
            b = {**b, "loss": "likelihood"}
        return b

    class Objective(Task):
        def compute_train_loss(self, batch, model, sample=False):
            # sample=True is the Fisher's loss: kronfluence wants labels drawn from the model. A rollout's
            # completion *was* drawn from the policy (at its own step; a draw at this checkpoint), so its
            # likelihood loss is that sample: no re-sampling, no advantage weight.
            return rollout_losses(model, train_batch(batch, likelihood=sample)).sum()

        def compute_measurement(self, batch, model):
            b = definition.batch((-1 - batch).cpu().numpy(), device=device)
            return target_terms(model, b, definition.loss).sum()

        def get_attention_mask(self, batch):
            # padding must not count in the activation covariances; the LM head sees only the last Lc+1
            # positions (completion_logps' logits_to_keep), the other Linear modules all of them
            b = train_batch(batch) if bool((batch >= 0).all()) else definition.batch((-1 - batch).cpu().numpy(),
                                                                                       device=device)
            mask = torch.cat([b["prompt_mask"], b["completion_mask"]], dim=1)
            tail = mask[:, -(b["completion_ids"].shape[1] + 1):]
            return {n: tail if n == head else mask for n in linears}

    return Objective()


class _Rows:
    """A map-style dataset of row indices (``len`` and ``[]`` are all kronfluence's DataLoader needs)."""

    def __init__(self, idx):
        self.idx = idx

    def __len__(self) -> int:
        return len(self.idx)

    def __getitem__(self, i):
        return self.idx[i]


class KronfluenceEKFAC(Adapter):
    """kronfluence EK-FAC influence: score_i = mean_r grad f_r' (G + lam I)^-1 grad L_i at the last checkpoint.

    Library: kronfluence 1.0.1 (Grosse et al. 2023). API: ``kronfluence.prepare_model(model, task)``,
    ``Analyzer(name, model, task, cpu, output_dir).fit_all_factors(name, dataset, per_device_batch_size,
    factor_args=FactorArguments(strategy="ekfac"))`` and ``compute_pairwise_scores(name, factors_name,
    query_dataset, train_dataset, ..., score_args=ScoreArguments(damping_factor))``, read with
    ``load_pairwise_scores(name)["all_modules"]`` -> [R, n], averaged over the R target rows (the target is
    their mean; the score is linear in the query gradient). Task (``_task``): train loss = ``rollout_losses``
    summed; measurement = ``target_terms`` of the target rows (the mean of which is ``target.loss``);
    Fisher's "sampled" loss = the likelihood of each rollout's own completion (it was sampled from the
    policy); attention masks exclude padding. Factors are fit on the candidates themselves.
    ``damping=None`` is kronfluence's heuristic (0.1 x mean eigenvalue).

    Causal LM: yes (kronfluence tracks every ``nn.Linear`` through hooks, batch-wise). Tied embeddings: only
    partly. kronfluence supports ``nn.Linear``/``nn.Conv2d`` only, so the tied matrix enters through the LM
    head alone (its Embedding use is not tracked), and the embedding's and the RMSNorm weights' gradients are
    left out entirely. One checkpoint: influence functions linearize at one parameter vector, here the view's
    last (``checkpoints[-1]``; a draw's only one). Token views: the candidates' loss is the behavior-span loss.
    kronfluence's per-token scores (``compute_per_token_scores``) are not used: they split a training sequence's
    score over the positions of the layers' activations, not over its loss tokens, and need one sequence length
    for every module while the LM head sees only the completion.

    Cost: three passes over the candidates (covariances, eigenvalue correction, scores), each one batched
    forward and backward; the eigendecomposition of two d x d factors per Linear module.
    """

    name = "kronfluence_ekfac"
    description = ("kronfluence 1.0 EK-FAC influence at the last checkpoint (Linear modules only: the tied "
                   "embedding enters as the LM head alone)")
    module = extra = "kronfluence"

    def __init__(self, damping: float | None = None, batch_size: int = 64):
        super().__init__(batch_size)
        if damping is not None and not damping > 0:
            raise ValueError(f"KronfluenceEKFAC.damping must be > 0 or None, got {damping!r}")
        self.damping = damping

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        import logging

        import torch
        from kronfluence import Analyzer, prepare_model
        from kronfluence.arguments import FactorArguments, ScoreArguments

        from estimators.adapters._model import as_scores

        step = self._steps(candidates)[-1]
        definition = target.definition(step, self.name)
        if not len(definition):  # the zero target: no query rows, every influence is 0
            return np.zeros(len(candidates))
        lm = candidates.model(step)
        task = _task(candidates, definition, lm)
        model = prepare_model(lm, task)
        train = _Rows(torch.arange(len(candidates)))
        query = _Rows(-1 - torch.arange(len(definition)))
        with tempfile.TemporaryDirectory() as tmp:  # kronfluence writes factors and scores to disk
            analyzer = Analyzer("bt_bench", model, task, cpu=next(lm.parameters()).device.type == "cpu",
                                log_level=logging.WARNING, disable_tqdm=True, output_dir=tmp)
            analyzer.fit_all_factors("ekfac", train, per_device_batch_size=self.batch_size,
                                     factor_args=FactorArguments(strategy="ekfac"))
            analyzer.compute_pairwise_scores("target", "ekfac", query, train,
                                             per_device_query_batch_size=len(definition),
                                             per_device_train_batch_size=self.batch_size,
                                             score_args=ScoreArguments(damping_factor=self.damping))
            scores = analyzer.load_pairwise_scores("target")["all_modules"]
        return as_scores(scores.double().mean(0), len(candidates))
