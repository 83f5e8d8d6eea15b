"""The supervised warm-up and the save shared by the embedded models (``toy.build_toy_model``,
``bpe.build_bpe_model``): each builds its own tokenizer, model and batches; the loop and the save are here.

A warmed model's cache key (``ToySpec.key``, ``BpeSpec.key``) holds its spec and a format number, not this code: a
change here that moves a random draw or a floating-point operation changes the models silently, so it must come
with a bump of ``TOY_FORMAT`` and ``BPE_FORMAT``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bt_bench.runs.progress import Ticker

WARMUP_RAMP = 50  # steps of linear learning-rate ramp before the linear decay
CLIP_NORM = 1.0


def supervised_warmup(model, next_batch: Callable[[int], tuple[Any, Any, Any]], steps: int, lr: float,
                      progress: bool = True) -> None:
    """Train ``model`` for ``steps`` steps of AdamW (no weight decay) on ``next_batch(step)`` -> (input_ids,
    attention_mask, labels), with the learning rate ramped up over ``WARMUP_RAMP`` steps, then decayed linearly
    to 5% of ``lr``, and the gradient norm clipped to ``CLIP_NORM``."""
    import torch

    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / WARMUP_RAMP) * max(0.05, 1 - s / max(1, steps)))
    todo = range(steps)
    ticker = Ticker("base model warm-up (supervised, built once per profile)", steps)
    if progress:
        from tqdm.auto import tqdm

        todo = tqdm(todo, desc="warm-up (SFT)", leave=False)
    for step in todo:
        ids, mask, labels = next_batch(step)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        ticker(step + 1)


def save_warm(model, tok, folder: Path, spec_file: str, spec_dict: dict) -> Path:
    """Save the warmed ``model`` (eval mode; generation stops at the tokenizer's EOS, pads with its pad, and has no
    BOS) as safetensors to ``folder``, with ``spec_dict`` as ``folder / spec_file``; returns ``folder``."""
    model.eval()
    gc = model.generation_config
    gc.pad_token_id, gc.eos_token_id, gc.bos_token_id = tok.pad_token_id, tok.eos_token_id, None
    model.save_pretrained(folder, safe_serialization=True)
    (folder / spec_file).write_text(json.dumps(spec_dict, indent=1, sort_keys=True))
    return folder
