"""dattri's TracIn and TRAK attributors on the suite's objective (torch.func per-example gradients)."""

from __future__ import annotations

import numpy as np

from bt_bench.estimator import Candidates, Target
from estimators.adapters._common import Adapter

_TENSORS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "token_mask", "advantages",
            "num_items_in_batch")
_DEFINITION = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "token_mask")


class _Setup:
    """dattri's ``AttributionTask`` over the suite's objective, and the two loaders it attributes.

    dattri takes ``loss_func(params, data)`` / ``target_func(params, data)`` in ``torch.func`` style and vmaps
    their gradient over the rows of a batch, so each sees one row and must run the model functionally. The model
    is a copy switched to eager attention: HF's SDPA mask path has data-dependent control flow that vmap
    refuses (the maths is the same). Train rows are the candidates' ``rollout_batch`` tensors; the test data
    holds every checkpoint's target rows side by side ([R, C, ...], padded), and ``target_func`` takes the
    loaded checkpoint's slice with weight 1/R_c (0 on padding), so summing the test columns gives the target
    gradient of each checkpoint, whose definition may have other rows than the next checkpoint's."""

    def __init__(self, candidates: Candidates, target: Target, steps: list[int], batch_size: int):
        import torch
        from dattri.task import AttributionTask
        from torch.utils.data import DataLoader, TensorDataset

        from bt_bench.estimator import rollout_batch, rollout_losses
        from bt_bench.estimator.objective import target_terms

        states = {s: candidates.model(s).state_dict() for s in steps}
        lm = candidates.model(steps[-1])
        lm.set_attn_implementation("eager")
        self.device = device = next(lm.parameters()).device
        full = rollout_batch(candidates, slice(None), device=device)
        keys = [k for k in _TENSORS if k in full]
        static = {k: v for k, v in full.items() if k not in keys}
        defs = [target.definition(s) for s in steps]
        test, weight = _stack(defs, device)
        loaded = {"c": len(steps) - 1}

        class Terms(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lm = lm

            def forward(self, b):
                if "target_loss" in b:
                    return target_terms(self.lm, b, b["target_loss"])
                return rollout_losses(self.lm, b)

        model = Terms()

        def loss_func(params, data):
            b = {k: x.unsqueeze(0) for k, x in zip(keys, data, strict=True)}
            return torch.func.functional_call(model, params, ({**b, **static},))[0]

        def target_func(params, data):
            c = loaded["c"]
            b = {k: x[c].unsqueeze(0) for k, x in zip(_DEFINITION, data[:-1], strict=True)}
            b.update(target_loss=defs[c].loss, temperature=defs[c].temperature)
            return data[-1][c] * torch.func.functional_call(model, params, (b,))[0]

        def load(module, step):
            module.lm.load_state_dict(states[step])
            loaded["c"] = steps.index(step)
            return module

        self.task = AttributionTask(loss_func=loss_func, model=model, checkpoints=list(steps),
                                    target_func=target_func, checkpoints_load_func=load)
        self.train = DataLoader(TensorDataset(*(full[k] for k in keys)), batch_size=batch_size, shuffle=False)
        self.test = DataLoader(TensorDataset(*test, weight), batch_size=len(weight), shuffle=False)


def _stack(defs, device):
    """The checkpoints' target rows side by side: each field [R_max, C, L_max] (prompts left-padded,
    completions right-padded, masks 0 on padding) and the weights [R_max, C] (1/R_c, 0 on padding rows)."""
    import torch

    r = max(len(d) for d in defs)
    out = []
    for f in _DEFINITION:
        width = max(getattr(d, f).shape[1] for d in defs)
        arr = np.zeros((r, len(defs), width), dtype=np.int64)
        for c, d in enumerate(defs):
            a = np.asarray(getattr(d, f))
            cols = slice(width - a.shape[1], width) if f.startswith("prompt") else slice(0, a.shape[1])
            arr[: len(a), c, cols] = a
        out.append(torch.as_tensor(arr, device=device))
    w = np.zeros((r, len(defs)))
    for c, d in enumerate(defs):
        w[: len(d), c] = 1.0 / max(len(d), 1)
    return out, torch.as_tensor(w, dtype=torch.float32, device=device)


class _DattriAdapter(Adapter):
    module = extra = "dattri"

    def __init__(self, proj_dim: int = 512, proj_type: str = "normal", batch_size: int = 32, seed: int = 0):
        super().__init__(batch_size)
        self.proj_dim, self.proj_type, self.seed = int(proj_dim), str(proj_type), int(seed)

    def _projector(self, setup: _Setup) -> dict:
        # every key, every time: dattri 0.3 updates its module-level default dict in place
        return {"proj_dim": self.proj_dim, "proj_max_batch_size": 32, "proj_seed": self.seed,
                "device": str(setup.device), "proj_type": self.proj_type}


class DattriTracIn(_DattriAdapter):
    """dattri TracIn: score_i = sum_c lr_c <P grad L_target^c, P grad L_i^c>, P dattri's random projection.

    Library: dattri 0.3.0. API: ``dattri.task.AttributionTask(loss_func, model, checkpoints, target_func,
    checkpoints_load_func)`` and ``dattri.algorithm.tracin.TracInAttributor(task, weight_list=lr per checkpoint,
    normalized_grad=False, projector_kwargs).attribute(train_loader, test_loader)`` -> [n, R], summed over the
    test columns (``_Setup``: weighted target rows). Model output function: ``loss_func`` = the candidate's
    ``rollout_losses`` term, ``target_func`` = the target row's ``target_terms`` term / R_c; gradients by
    ``torch.func.vmap(grad(...))`` per row. ``proj_type="identity"`` gives exact TracIn.

    Causal LM: yes, with the copy switched to eager attention (``_Setup``). Tied embeddings: one parameter
    (``named_parameters`` yields it once; ``functional_call`` keeps it tied), gradient of both uses. Token views:
    the candidates' loss is the behavior-span loss.

    Cost: a vmapped per-row gradient (batch x params floats at once) and its projection, per checkpoint.
    dattri's ``attribute`` recomputes the test (target-row) gradients inside its loop over train batches, so
    each train batch costs ``batch + R_c`` row gradients: the train batch is what amortizes the target.
    ``batch_size=None`` (the default) takes the largest batch whose per-row gradients fit ``memory_mb``
    (capped at 1024). Measured on tiny seed 0 (512 training rollouts, 203/240 target rows, 2 cores): 4.8
    rollouts/s at batch 32, 21.5 at 512, 28.0 at 1024 (one process, an otherwise idle machine).
    """

    name = "dattri_tracin"
    description = "dattri 0.3 TracInAttributor: sum_c lr_c <P g_target^c, P g_i^c> (vmap per-row grads, eager attn)"

    def __init__(self, proj_dim: int = 512, proj_type: str = "normal", batch_size: int | None = None,
                 seed: int = 0, memory_mb: int = 2048):
        super().__init__(proj_dim, proj_type, 1 if batch_size is None else batch_size, seed)
        if int(memory_mb) < 1:
            raise ValueError(f"DattriTracIn.memory_mb must be >= 1 (MiB of per-row gradients), got {memory_mb!r}")
        self.auto_batch, self.memory_mb = batch_size is None, int(memory_mb)

    def _batch(self, candidates: Candidates) -> int:
        if not self.auto_batch:
            return self.batch_size
        n_params = sum(p.numel() for p in candidates.model(self._steps(candidates)[-1]).parameters())
        return int(max(1, min(1024, self.memory_mb * 2**20 // (4 * n_params))))

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        import torch
        from dattri.algorithm.tracin import TracInAttributor

        from estimators.adapters._model import as_scores

        setup = _Setup(candidates, target, self._steps(candidates), self._batch(candidates))
        lrs = torch.tensor([float(c.lr) for c in candidates.checkpoints])
        att = TracInAttributor(setup.task, weight_list=lrs, normalized_grad=False,
                               projector_kwargs=self._projector(setup), device=str(setup.device))
        return as_scores(att.attribute(setup.train, setup.test).sum(1), len(candidates))


class DattriTRAK(_DattriAdapter):
    """dattri TRAK: score_i = mean_c phi_target^c' (Phi_c'Phi_c + lam I)^-1 phi_i^c, Q = 1.

    Library: dattri 0.3.0. API: ``dattri.algorithm.trak.TRAKAttributor(task, correct_probability_func,
    projector_kwargs, regularization).cache(train_loader)`` then ``.attribute(test_loader)`` -> [n, R], summed
    over the test columns. Task and model output function as ``DattriTracIn`` (f = the loss terms; TRAK's sign
    is that of the product, the same for f and -f on both sides). ``correct_probability_func`` returns 0, so
    dattri's Q = 1 - p is 1: the loss is the model output itself (dattri's LM examples use p = exp(-loss), which
    exceeds 1 for a rollout with a negative advantage). The ensemble is the view's checkpoints, equally weighted.
    ``regularization`` (dattri's, absolute) is set to ``damping`` x the mean eigenvalue of Phi'Phi, estimated
    with dattri's own gradient function and projector on up to ``pilot`` rows spread over the candidates
    (an absolute default means something else on every view: policy gradients are ~1e3 smaller than
    likelihood ones).

    Causal LM, tied embeddings, token views: as ``DattriTracIn``. Cost: as ``DattriTracIn`` plus the pilot rows and
    a k x k solve per checkpoint.
    """

    name = "dattri_trak"
    description = "dattri 0.3 TRAKAttributor: mean_c phi_t' (Phi'Phi + lam I)^-1 phi_i, Q = 1 (vmap, eager attn)"

    def __init__(self, proj_dim: int = 512, damping: float = 1e-2, pilot: int = 256, batch_size: int = 32,
                 seed: int = 0):
        super().__init__(proj_dim, "normal", batch_size, seed)
        if not damping > 0:
            raise ValueError(f"DattriTRAK.damping must be > 0, got {damping!r}")
        self.damping, self.pilot = float(damping), int(pilot)

    def _regularization(self, setup: _Setup, att, n: int) -> float:
        import torch
        from dattri.func.projection import random_project

        params, _ = setup.task.get_param(ckpt_idx=0)
        pick = np.unique(np.linspace(0, n - 1, min(n, self.pilot)).astype(int))
        data = tuple(t[torch.as_tensor(pick)] for t in setup.train.dataset.tensors)
        g = torch.nan_to_num(setup.task.get_grad_loss_func(in_dims=(None, 0))(params, data)) / att.norm_scaler
        phi = random_project(g, len(pick), **self._projector(setup))(g, ensemble_id=0)
        mean_eig = float((phi.detach().double() ** 2).sum()) * n / len(pick) / self.proj_dim
        return self.damping * mean_eig if mean_eig > 0 else self.damping

    def score(self, candidates: Candidates, target: Target) -> np.ndarray:
        from dattri.algorithm.trak import TRAKAttributor

        from estimators.adapters._model import as_scores

        setup = _Setup(candidates, target, self._steps(candidates), self.batch_size)

        def never_right(params, data):  # p = 0 -> Q = 1 - p = 1
            return data[0].sum() * 0.0

        att = TRAKAttributor(setup.task, correct_probability_func=never_right,
                             projector_kwargs=self._projector(setup), device=str(setup.device))
        att.regularization = self._regularization(setup, att, len(candidates))
        att.cache(setup.train)
        return as_scores(att.attribute(setup.test).sum(1), len(candidates))
