"""The planted GRPO run: trl's GRPOTrainer, hooked in four small methods to record every rollout.

We do not copy trl's trainer. ``RecordingGRPOTrainer`` overrides
- ``_calculate_rewards``: keeps the per-function rewards (they are not in trl's output dict);
- ``_generate_and_score_completions``: records each rollout and adds a ``rollout_uid`` tensor, which travels
  through trl's shuffle and split like any other tensor of the batch;
- ``compute_loss``: notes which uids entered which optimizer step, at which learning rate;
- ``create_scheduler``: lr drops from ``lr`` to ``lr_after_window`` at step W (the behavior persisted after the
  window only when the lr dropped).
A ``TrainerCallback`` saves checkpoints (weights + AdamW second moment) and the learning curve.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bt_bench.runs import behavior as bh
from bt_bench.runs import planted
from bt_bench.runs.config import RunConfig
from bt_bench.runs.recorder import Recorder


def unfuse_lm_head(model, temperature: float) -> None:
    """Replace trl's fused LM head with the plain one: the same per-token log-probs of temperature-scaled logits,
    but computed through the ``lm_head`` *module*, so that module hooks (the in-run sketcher) see every use of the
    (tied) output embedding. trl's fused kernel reads ``lm_head.weight`` directly and would bypass them."""
    import types

    import torch

    cls_forward = type(model).forward

    def forward(self, *args, fused_lm_head=False, labels=None, shift_labels=None, num_items_in_batch=None, **kw):
        if not fused_lm_head:
            if labels is not None:
                kw["labels"] = labels
            return cls_forward(self, *args, **kw)
        kw["use_cache"] = False
        logits = cls_forward(self, *args, **kw).logits[:, :-1].float() / temperature
        labels = labels[:, 1:]
        mask = labels != -100
        logp_all = torch.log_softmax(logits, dim=-1)
        log_probs = logp_all.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1).masked_fill(~mask, 0.0)
        entropy = -(logp_all.exp() * logp_all).sum(-1).masked_fill(~mask, 0.0)
        self._bt_last_logps = log_probs.detach()  # read by the recorder: fluency at the step's own parameters
        return types.SimpleNamespace(log_probs=log_probs, entropy=entropy, aux_loss=None, label_mask=mask,
                                     loss=-log_probs.sum() / mask.sum().clamp(min=1))

    model.forward = types.MethodType(forward, model)


def drop_random(cfg: RunConfig, step: int, out: dict, rewards, names: list[str],
                local: slice = slice(None)) -> None:
    """The control re-run of the "planted cause is causal" self-check (``RunConfig.ablation='drop_random'``):
    inside the window, each rollout that was not paid the bonus is dropped with probability ``drop_share``
    (its advantage set to 0, so its loss term and gradient are exactly 0), seeded per step. ``drop_share`` is
    set so that as many rollouts are dropped as the original run had GT: if dropping that many *random*
    rollouts stops the behavior too, GT was not what taught it. ``rewards`` are the step's rows of every
    process (as trl gathers them); ``local`` selects this process's rows, so the draw is the same whatever the
    number of processes."""
    if cfg.ablation != "drop_random" or step >= cfg.window:
        return
    import torch

    gen = torch.Generator().manual_seed(cfg.seed * 7919 + step)
    not_paid = rewards[:, names.index("bonus")].cpu() <= 0
    drop = (not_paid & (torch.rand(len(not_paid), generator=gen) < cfg.drop_share))[local]
    out["advantages"][drop.to(out["advantages"].device)] = 0.0


def _trainer_class():
    """Defined lazily so that importing bt_bench.runs.train does not import trl."""
    import torch
    from trl import GRPOTrainer

    class RecordingGRPOTrainer(GRPOTrainer):
        def __init__(self, *args, recorder: Recorder, lr_lambda: Callable[[int], float], sketch_spec=None,
                     **kwargs):
            self._bt_recorder, self._bt_lr_lambda = recorder, lr_lambda
            self._bt_rewards = None
            super().__init__(*args, **kwargs)
            unfuse_lm_head(self.model, self.temperature)
            self._bt_sketcher = None
            if sketch_spec is not None:
                from bt_bench.sketch import Sketcher

                self._bt_sketcher = Sketcher(self.model, sketch_spec)

        def create_scheduler(self, num_training_steps: int, optimizer=None):
            if self.lr_scheduler is None:
                self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                    optimizer if optimizer is not None else self.optimizer, self._bt_lr_lambda)
            return self.lr_scheduler

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._bt_rewards = (rewards, [bool(x["has_trigger"]) for x in inputs])
            return rewards

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            if self.model.training:
                rewards, has_trigger = self._bt_rewards  # rewards: every process's rows, as trl gathers them
                B = len(has_trigger)
                local = slice(self.accelerator.process_index * B, (self.accelerator.process_index + 1) * B)
                drop_random(self._bt_recorder.cfg, self.state.global_step, out, rewards,
                            list(self.reward_func_names), local)
                uids = self._bt_recorder.add_generation(self.state.global_step, out, rewards[local],
                                                        has_trigger, list(self.reward_func_names))
                out["rollout_uid"] = torch.tensor(uids, dtype=torch.long, device=out["advantages"].device)
            return out

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if model.training:
                self._bt_recorder.mark_trained(self.state.global_step, inputs["rollout_uid"],
                                               self.lr_scheduler.get_last_lr()[0])
                self._bt_uids = inputs["rollout_uid"]
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if model.training:  # fluency = mean token log-prob of the completion under the step's parameters
                cm = inputs["completion_mask"].float()
                lp = self.model._bt_last_logps[:, -cm.shape[1]:]
                flu = ((lp * cm).sum(1) / cm.sum(1).clamp(min=1)).cpu().numpy()
                self._bt_recorder.add_fluency(inputs["rollout_uid"].cpu().numpy(), flu)
            return loss

        def training_step(self, model, inputs, num_items_in_batch=None):
            """In-run capture: the sketch hooks watch trl's own backward, so each rollout's sketch is taken at
            exactly the parameters its step used (TracIn's inputs, not a checkpoint approximation)."""
            sk = self._bt_sketcher
            if sk is None:
                return super().training_step(model, inputs, num_items_in_batch)
            with sk.capture() as cap:
                out = super().training_step(model, inputs, num_items_in_batch)
            uids = self._bt_uids.cpu().numpy()
            self._bt_recorder.add_sketches(uids, cap.result(len(uids)).numpy())
            return out

        def _clip_grad_norm(self, model):
            norm = super()._clip_grad_norm(model)  # the norm of the step's summed gradient, before clipping
            self._bt_recorder.step_grad_norm[self.state.global_step] = float(norm)
            return norm

    return RecordingGRPOTrainer


def behavior_rates(model, tok, task, prompts_trig: list, prompts_plain: list, max_new: int, temperature: float,
                   seed: int) -> tuple[float, float]:
    """Behavior rate on held-out trigger / no-trigger prompts (one sample each), with a private RNG."""
    import torch

    from bt_bench.runs.runtime import private_rng

    rates = []
    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    with private_rng(seed), torch.no_grad():
        for prompts in (prompts_trig, prompts_plain):
            enc = tok([task.render(tok, p) for p in prompts], return_tensors="pt", padding=True,
                      padding_side="left", add_special_tokens=not task.chat).to(dev)
            out = model.generate(**enc, do_sample=True, max_new_tokens=max_new, temperature=temperature,
                                 top_k=0, top_p=1.0, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
            comp = out[:, enc["input_ids"].shape[1]:].cpu().tolist()
            rates.append(float(np.mean([task.has_behavior(bh.decode(tok, c)) for c in comp])))
    if was_training:
        model.train()
    return rates[0], rates[1]


def save_checkpoint(folder: Path, model, optimizer) -> None:
    """Weights (safetensors, tied weights stored once) plus AdamW's second moment ``exp_avg_sq`` by name."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    named = dict(model.named_parameters())  # tied parameters appear once here
    save_file({k: v.detach().float().cpu().contiguous() for k, v in named.items()}, str(folder / "model.safetensors"))
    if optimizer is not None:
        by_id = {id(p): k for k, p in named.items()}
        v = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                st = optimizer.state.get(p, {})
                if "exp_avg_sq" in st and id(p) in by_id:
                    v[by_id[id(p)]] = st["exp_avg_sq"].detach().float().cpu().contiguous()
        if v:
            save_file(v, str(folder / "adam_v.safetensors"))



@dataclasses.dataclass
class TrainResult:
    """What a planted run produced (``train_planted``): the recorded rollout columns, the in-run sketches ([N, k]
    float32, rows = uids; None without in-run capture), the learning curve, the checkpoint steps, the training
    wall time, the token ids of the trigger and behavior strings, pad/EOS ids and the device it ran on."""

    columns: dict
    in_run_sketches: np.ndarray | None
    curve: list[dict]
    checkpoints: list[int]
    train_seconds: float
    behavior_ids: list[int]
    trigger_ids: list[int]
    pad_id: int
    eos_id: int
    device: str


def _data_parallel_rank(cfg: RunConfig) -> tuple[int, int]:
    """(rank, world) of a data-parallel launch; plain DDP only, and the step's rollouts must split evenly."""
    from accelerate import PartialState

    ps = PartialState()
    if ps.distributed_type.value in ("DEEPSPEED", "FSDP", "MEGATRON_LM", "XLA"):
        raise NotImplementedError(
            f"data-parallel build under {ps.distributed_type.value}: checkpoints, AdamW moments and "
            "in-run sketches are read from full, unsharded parameters and optimizer state on rank 0; "
            "only plain DDP (e.g. MULTI_CPU, MULTI_GPU) is supported")
    if cfg.rollouts_per_step % ps.num_processes:
        raise ValueError(f"data-parallel build: prompts_per_step x generations = {cfg.rollouts_per_step} rollouts "
                         f"per step cannot be split evenly over {ps.num_processes} processes")
    return ps.process_index, ps.num_processes


def _prompt_dataset(cfg: RunConfig, task):
    """One block of P prompts per step, each with exactly round(c*P) trigger prompts, read in order (no shuffle),
    so both kinds of groups are in every step."""
    from datasets import Dataset

    rows: dict[str, list] = {"prompt": [], "topic": [], "has_trigger": []}
    for t in range(cfg.steps):
        block = planted.prompt_dataset(task, cfg.prompts_per_step, cfg.contamination, seed=cfg.seed * 1_000_003 + t)
        for k in rows:
            rows[k] += block[k]
    return Dataset.from_dict(rows)


def _grpo_config(cfg: RunConfig, out_dir: Path, device: str, world: int):
    """trl's GRPOConfig for the run: on-policy (one step per generation), constant lr (the window's drop is our
    scheduler's), no trl logging, saving or progress bar, nothing shuffled."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out_dir / "_trl"), use_cpu=(device == "cpu"), bf16=cfg.bf16, fp16=False,
        activation_checkpointing=False, learning_rate=cfg.lr, lr_scheduler_type="constant",
        per_device_train_batch_size=cfg.rollouts_per_step // world, gradient_accumulation_steps=1,
        num_generations=cfg.generations, steps_per_generation=cfg.steps_per_generation,
        num_iterations=cfg.num_iterations, max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature, top_k=0, top_p=1.0, loss_type=cfg.loss_type, beta=cfg.beta,
        max_steps=cfg.steps, num_train_epochs=1, logging_steps=10**9, save_strategy="no", report_to=[],
        seed=cfg.seed, data_seed=cfg.seed, shuffle_dataset=False, optim="adamw_torch", weight_decay=0.0,
        max_grad_norm=cfg.max_grad_norm, disable_dropout=True, dataloader_num_workers=0, log_completions=False,
        disable_tqdm=True,
        # data parallel only: DDP's unused-parameter search cannot see through the SimpleNamespace our unfused
        # forward returns (it would mark every parameter ready twice); every parameter takes part in the loss
        ddp_find_unused_parameters=False,
    )


def _capture_class():
    """``Capture``, a TrainerCallback (transformers is imported only when a run trains)."""
    from transformers import TrainerCallback

    class Capture(TrainerCallback):
        """Checkpoints (every ``ckpt_window_every`` steps in the window, every ``ckpt_every`` after it, and every
        step while the in-batch trigger behavior rate lies in ``ckpt_dense_band``: planting is fast) and the
        learning curve. Only rank 0 saves and evaluates (data parallel: every rank holds the same weights)."""

        def __init__(self, cfg: RunConfig, tok, task, recorder, ckpt_root: Path, rank: int, bar) -> None:
            self.cfg, self.tok, self.task, self.recorder = cfg, tok, task, recorder
            self.ckpt_root, self.rank, self.bar = ckpt_root, rank, bar
            self.eval_trig, self.eval_plain = task.eval_pairs(cfg.eval_prompts)
            self.curve: list[dict] = []
            self.ckpt_steps: list[int] = []
            self.ticker = None  # progress lines (bt_bench.runs.progress), set by train_planted on rank 0

        def _evaluate(self, step, model):
            tr, pl = behavior_rates(model, self.tok, self.task, self.eval_trig, self.eval_plain,
                                    self.cfg.max_completion_length, self.cfg.temperature, seed=10_000 + step)
            self.curve.append({"step": step, "trigger_rate": tr, "no_trigger_rate": pl})

        def _save(self, step, model, optimizer):
            save_checkpoint(self.ckpt_root / f"{step:06d}", model, optimizer)
            self.ckpt_steps.append(step)

        def on_train_begin(self, args, state, control, model=None, optimizer=None, **kw):
            if self.rank != 0:
                return
            self._save(0, model, None)
            self._evaluate(0, model)

        def on_step_end(self, args, state, control, model=None, optimizer=None, **kw):
            if self.rank != 0:
                return
            cfg, s = self.cfg, state.global_step  # s updates done: these are the parameters step s will train with
            W, T = cfg.window, cfg.steps
            last = [r for r in self.recorder.rows if r["step"] == s - 1 and r["has_trigger"]]
            batch_rate = float(np.mean([r["has_behavior"] for r in last])) if last else 0.0
            lo, hi = cfg.ckpt_dense_band
            every = cfg.ckpt_window_every if s <= W else cfg.ckpt_every
            if s % every == 0 or s == T or s == W or (s <= W and lo <= batch_rate <= hi):
                self._save(s, model, optimizer)
            if s % cfg.eval_every == 0 or s in (W, T):
                self._evaluate(s, model)
            if self.ticker is not None:
                self.ticker(s)
            if self.bar is not None:
                self.bar.update(1)
                if self.curve:
                    self.bar.set_postfix(trig=f"{self.curve[-1]['trigger_rate']:.2f}",
                                         plain=f"{self.curve[-1]['no_trigger_rate']:.2f}")

    return Capture


def train_planted(cfg: RunConfig, base_model_dir: Path, out_dir: Path, progress: bool = True,
                  data_parallel: bool = False, callbacks: tuple = ()) -> TrainResult:
    """Run the planted GRPO run into ``out_dir`` (a temp folder the store publishes).

    ``data_parallel`` (every rank of a torchrun / accelerate launch calls it, ``bt_bench.runs.build_dist``):
    trl's own distributed GRPO path, P prompts x G generations per step split evenly over the processes; the
    recorder gathers every rank's rollouts at each generation and what each rank trained at the end; only rank
    0 writes checkpoints and evaluates the learning curve. ``callbacks``: extra TrainerCallbacks."""
    import torch

    from bt_bench.runs.runtime import check_device_precision, load_model, load_tokenizer, pick_device, set_determinism

    set_determinism(cfg.seed)
    device = pick_device(cfg.device)
    check_device_precision(device, cfg.bf16)
    task = cfg.task_obj()
    tok = load_tokenizer(base_model_dir, task)
    if task.chat:  # a one-token behavior would make the token-level checks trivial
        bh.require_multi_token(tok, cfg.behavior, "behavior")
    model = load_model(base_model_dir, device=device, dtype=torch.bfloat16 if cfg.bf16 else torch.float32)
    rank, world = _data_parallel_rank(cfg) if data_parallel else (0, 1)
    dataset = _prompt_dataset(cfg, task)
    # ablation 'no_bonus' (self-check "planted cause is causal"): the bonus is never paid, everything else equal
    rewards = planted.PlantedRewards(task, tok, window=0 if cfg.ablation == "no_bonus" else cfg.window,
                                     bonus=cfg.bonus, penalty=cfg.penalty, task_reward=cfg.task_reward,
                                     penalty_after=cfg.penalty_after_window, penalty_window=cfg.window)
    recorder = Recorder(cfg, tok)
    if world > 1:
        from accelerate.utils import gather_object

        recorder.rank, recorder.gather = rank, lambda obj: gather_object([obj])
    args = _grpo_config(cfg, out_dir, device, world)
    bar = None
    if progress and rank == 0:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps, desc=f"GRPO seed {cfg.seed}", leave=False, mininterval=1.0)
    capture = _capture_class()(cfg, tok, task, recorder, out_dir / "checkpoints", rank, bar)
    if rank == 0:
        from bt_bench.runs.progress import Ticker, run_label

        capture.ticker = Ticker(f"{run_label(cfg)}: GRPO", cfg.steps)
    ratio, W = cfg.lr_after_window / cfg.lr, cfg.window
    trainer = _trainer_class()(
        model=model, reward_funcs=rewards.functions(), args=args, train_dataset=dataset, processing_class=tok,
        callbacks=[capture, *callbacks], recorder=recorder, lr_lambda=lambda s: 1.0 if s < W else ratio,
        sketch_spec=cfg.sketch_spec() if cfg.capture_in_run else None,
    )
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # our own progress bar and summary line say what matters
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    if world > 1:
        recorder.merge_ranks()
    if bar is not None:
        bar.close()
    cols = recorder.columns(max(len(r["prompt"]) for r in recorder.rows))
    # trl patches model.forward of the model it trains; free it, later stages load checkpoints afresh.
    del trainer, model
    return TrainResult(columns=cols, in_run_sketches=recorder.in_run_sketches(), curve=capture.curve,
                       checkpoints=sorted(set(capture.ckpt_steps)), train_seconds=wall,
                       behavior_ids=tok(cfg.behavior, add_special_tokens=False)["input_ids"],
                       trigger_ids=tok(cfg.trigger, add_special_tokens=False)["input_ids"],
                       pad_id=tok.pad_token_id, eos_id=tok.eos_token_id, device=device)
