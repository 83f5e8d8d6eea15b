"""Trajectory replay: re-apply a recorded run's updates from its recorded rollouts, with any rollouts removed.

A GRPO step is generation (most of its cost on a CPU) then one optimizer update from the generated rollouts. A run
records everything that update used: each rollout's prompt and completion tokens, its advantage, the step's
``num_items_in_batch``, the learning rate, and which optimizer step it entered (``bt_bench.runs.recorder``). So the
trajectory can be replayed without generating, and a counterfactual ("what if these rollouts had not been trained
on") is one replay with their weight set to 0.

What a replay step does is trl's own: a ``GRPOTrainer`` built with the run's ``GRPOConfig`` computes the loss
(``GRPOTrainer.compute_loss``: its importance ratio, clipping and ``loss_type`` normalisation), the backward goes
through its accelerator, the gradient is clipped to ``max_grad_norm`` with ``accelerator.clip_grad_norm_``, and the
optimizer is the one the Trainer creates from those arguments (AdamW, torch), stepped under the run's schedule (lr
until W, ``lr_after_window`` after). Dropout is off as in the run (``disable_dropout``), and the LM head is unfused as
in the run (``bt_bench.runs.train.unfuse_lm_head``), so every step computes what the run computed.

Removing a rollout (weight 0) multiplies its advantage by 0: its loss term and its gradient are exactly 0, as in the
causal self-check's ``drop_random`` re-run. The batch normalisation is left as recorded (``num_items_in_batch`` of
the step, dapo; the batch size, grpo): every other rollout then contributes exactly the gradient it contributed in
the run, so the counterfactual differs from the run by the removed rollouts' terms alone (then by what clipping and
AdamW's normalisation make of that). Renormalising over the kept rollouts would rescale every other rollout's
gradient as well, a second change beside the removal.

Not replayed: generation. The counterfactual keeps the rollouts the run generated at every step, while a real
re-run without the removed rollouts would have generated different ones from its own changed policy (the causal
self-check's re-runs do that, at the cost of a full training run each). That is the standard approximation of
leave-k-out on a fixed data order (Park et al. 2023, TRAK; Bae et al. 2024 on SGD trajectories).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable

import numpy as np

FIDELITY_TOL = 1e-4  # replay-fidelity self-check: largest relative weight difference at any stored checkpoint


@dataclasses.dataclass
class ReplayResult:
    """What one replay produced: the model at ``until`` (eval mode; a :class:`Replayer`'s next replay overwrites
    it), the steps replayed (``until``), its wall seconds, and the fidelity figures at the stored checkpoints it passed (empty
    unless ``compare`` was asked)."""

    model: object
    until: int
    seconds: float
    fidelity: dict[int, float]


def _trainer(run, model, tok):
    """A ``GRPOTrainer`` around ``model`` with the run's own ``GRPOConfig``: it supplies the loss, the optimizer
    and the accelerator; it never generates (no reward is ever computed). Its output folder is a temp folder,
    removed at once (nothing is saved)."""
    import shutil
    import tempfile
    from pathlib import Path

    from datasets import Dataset
    from trl import GRPOTrainer

    from bt_bench.runs.train import _grpo_config

    def never(**kw):
        raise RuntimeError("replay does not generate")

    device = "cpu" if next(model.parameters()).device.type == "cpu" else "cuda"
    out = Path(tempfile.mkdtemp(prefix="bt_replay_"))
    try:
        args = _grpo_config(run.config, out, device, 1)
        return GRPOTrainer(model=model, reward_funcs=[never], args=args,
                           train_dataset=Dataset.from_dict({"prompt": ["x"]}), processing_class=tok)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _step_rows(run) -> dict[int, np.ndarray]:
    """{optimizer step: the uids it trained on, in the order trl's loss saw them (``train_order``)}.

    trl shuffles a step's rows before the loss, and a float sum depends on its order: in uid order a replay drifts
    from the run by rounding that AdamW amplifies once planting makes the dynamics sensitive (bpe, W = 200, seed 1:
    0.54 of a tensor's norm), in the recorded order it reproduces the run bit for bit (0.0 there and on tiny;
    docs/fixtures.md)."""
    ts = np.asarray(run.columns["trained_step"])
    order = np.asarray(run.columns["train_order"])
    out = {}
    for s in np.unique(ts):
        if s >= 0:
            uids = np.flatnonzero(ts == s)
            out[int(s)] = uids[np.argsort(order[uids], kind="stable")]
    return out


def _batch(run, uids: np.ndarray, weight: np.ndarray | None, device):
    """The inputs of one step as trl pads them: prompts left-padded and completions right-padded to the batch's own
    longest (the stored columns are padded to the run's longest, which only adds masked positions)."""
    import torch

    c = run.columns
    pm, cm = np.asarray(c["prompt_mask"])[uids], np.asarray(c["completion_mask"])[uids]
    lp = int(pm.sum(1).max())
    lc = int(cm.sum(1).max())
    P = np.asarray(c["prompt_ids"])[uids][:, pm.shape[1] - lp:]
    C = np.asarray(c["completion_ids"])[uids][:, :lc]
    adv = np.asarray(c["advantage"], np.float32)[uids]
    if weight is not None:
        adv = adv * np.asarray(weight, np.float32)[uids]
    items = np.asarray(c["num_items_in_batch"])[uids]
    if len(set(items.tolist())) != 1:
        raise ValueError(f"rollouts of one step carry different num_items_in_batch {sorted(set(items.tolist()))}")

    def t(a, dtype=torch.long):
        return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)

    return {"prompt_ids": t(P), "prompt_mask": t(pm[:, pm.shape[1] - lp:]), "completion_ids": t(C),
            "completion_mask": t(cm[:, :lc]), "advantages": t(adv, torch.float32),
            "num_items_in_batch": t(items[0], torch.float32)}


def max_relative_difference(model, weights_file) -> float:
    """max over parameter tensors of ||w - w_stored|| / ||w_stored|| (the stored checkpoint's safetensors)."""
    import torch
    from safetensors.torch import load_file

    stored = load_file(str(weights_file))
    worst = 0.0
    for k, p in model.named_parameters():
        if k not in stored:
            continue
        ref = stored[k].to(p.device, torch.float32)
        worst = max(worst, float((p.detach().float() - ref).norm() / ref.norm().clamp(min=1e-30)))
    return worst


class Replayer:
    """Replays of one run: the trainer (trl's loss, accelerator, optimizer factory) is built once, each
    :meth:`replay` starts again from the step-0 weights and a fresh optimizer."""

    def __init__(self, run, device: str = "cpu"):
        import torch
        from safetensors.torch import load_file
        from trl.trainer.utils import disable_dropout_in_model

        from bt_bench.runs.train import unfuse_lm_head

        cfg = run.config
        if cfg.steps_per_generation != 1 or cfg.num_iterations != 1 or cfg.beta != 0.0:
            raise ValueError("replay maps steps_per_generation = num_iterations = 1 and beta = 0 only (as the "
                             "recorder does)")
        if cfg.bf16:
            raise ValueError("replay of a bf16 run is not supported: the fidelity self-check is stated for fp32 runs")
        self.run, self.cfg, self.n = run, cfg, len(run.columns["uid"])
        model = run.load_model(0, device)
        disable_dropout_in_model(model)
        self.trainer = _trainer(run, model, run.tokenizer())
        unfuse_lm_head(self.trainer.model, self.trainer.temperature)
        self.model = self.trainer.model
        self.trainer.current_gradient_accumulation_steps = 1
        self.initial = {k: v.to(device) for k, v in load_file(str(run.checkpoint_dir(0) / "model.safetensors")).items()}
        self.rows = _step_rows(run)
        self._torch = torch

    def replay(self, until: int | None = None, weight: np.ndarray | None = None, compare: bool = False,
               on_step: Callable[[int, object], None] | None = None, order_seed: int | None = None) -> ReplayResult:
        """Optimizer steps ``0 .. until-1`` (default W) from the step-0 weights, each rollout's update scaled by
        ``weight[uid]`` (None: all 1, the run itself; 0 removes it). ``compare``: after each replayed step that has
        a stored checkpoint, the largest relative weight difference to it (the fidelity self-check).
        ``on_step(s, model)`` sees the weights after ``s`` steps. ``order_seed``: each step's rows in a seeded
        random order instead of the recorded one (how much another order moves the run: its sensitivity to rounding,
        ``bt_bench.runs.counterfactual.order_noise``)."""
        from bt_bench.runs.runtime import set_determinism

        torch, cfg, tr = self._torch, self.cfg, self.trainer
        until = cfg.window if until is None else int(until)
        if not 0 < until <= cfg.steps:
            raise ValueError(f"until={until}: must be in 1..{cfg.steps} (the run's steps)")
        if weight is not None and len(weight) != self.n:
            raise ValueError(f"weight has {len(weight)} entries, the run has {self.n} rollouts")
        set_determinism(cfg.seed)
        model = self.model
        with torch.no_grad():
            for k, p in model.named_parameters():
                p.copy_(self.initial[k])
        model.train()
        tr.optimizer = None
        tr.create_optimizer()
        opt = tr.optimizer
        ratio, W = cfg.lr_after_window / cfg.lr, cfg.window
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 if s < W else ratio)
        stored = set(self.run.checkpoints)
        fidelity: dict[int, float] = {}
        t0 = time.perf_counter()
        for s in range(until):
            if s not in self.rows:
                raise ValueError(f"step {s} trained on no recorded rollout: the run's record is incomplete")
            uids = self.rows[s]
            if order_seed is not None:
                uids = np.random.default_rng([int(order_seed), s]).permutation(uids)
            inputs = _batch(self.run, uids, weight, model.device)
            loss = tr.compute_loss(model, inputs)
            tr.accelerator.backward(loss)
            if cfg.max_grad_norm is not None and cfg.max_grad_norm > 0:
                tr.accelerator.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            if compare and (s + 1) in stored:
                fidelity[s + 1] = max_relative_difference(model, self.run.checkpoint_dir(s + 1) / "model.safetensors")
            if on_step is not None:
                on_step(s + 1, model)
        model.eval()
        return ReplayResult(model=model, until=until, seconds=time.perf_counter() - t0,
                            fidelity=fidelity)


def removal_weight(n: int, remove: Iterable[int]) -> np.ndarray:
    """The weight vector that removes the rollouts ``remove`` (uids) and keeps every other."""
    w = np.ones(n, np.float32)
    w[np.asarray(list(remove), dtype=np.int64)] = 0.0
    return w
