"""A self-contained tiny Qwen2 and random GRPO-shaped batches, for the sketch tests and benchmark.

Independent of the planted runs (the toy grammar model lives elsewhere): random init, random tokens,
left-padded prompts, right-padded completions, a share of zero advantages as in real GRPO groups.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def tiny_qwen2(vocab: int = 96, hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2,
               intermediate: int | None = None, seed: int = 0, tied: bool = True) -> Qwen2ForCausalLM:
    """Random-init float32 Qwen2ForCausalLM with eager attention (deterministic given `seed`)."""
    config = Qwen2Config(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, intermediate_size=intermediate or 2 * hidden,
        tie_word_embeddings=tied, max_position_embeddings=256, attn_implementation="eager",
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config).float()


def random_batch(batch: int = 64, prompt_len: int = 8, completion_len: int = 12, vocab: int = 96,
                 seed: int = 0, loss_type: str = "dapo", temperature: float = 0.7,
                 zero_adv_share: float = 0.25, pad_id: int = 0) -> dict[str, Any]:
    """A batch in the sketcher's format: up to prompt_len/3 left pads, up to completion_len/3 right pads,
    Gaussian advantages with `zero_adv_share` of them exactly 0, num_items_in_batch = completion tokens."""
    gen = torch.Generator().manual_seed(seed)
    n_left = torch.randint(0, max(1, prompt_len // 3) + 1, (batch,), generator=gen)
    n_right = torch.randint(0, max(1, completion_len // 3) + 1, (batch,), generator=gen)
    prompt_mask = (torch.arange(prompt_len) >= n_left[:, None]).long()
    completion_mask = (torch.arange(completion_len) < completion_len - n_right[:, None]).long()
    prompt_ids = torch.randint(1, vocab, (batch, prompt_len), generator=gen)
    prompt_ids = prompt_ids.masked_fill(prompt_mask == 0, pad_id)
    completion_ids = torch.randint(1, vocab, (batch, completion_len), generator=gen)
    completion_ids = completion_ids.masked_fill(completion_mask == 0, pad_id)
    advantages = torch.randn(batch, generator=gen)
    advantages[torch.rand(batch, generator=gen) < zero_adv_share] = 0.0
    return {
        "prompt_ids": prompt_ids, "prompt_mask": prompt_mask,
        "completion_ids": completion_ids, "completion_mask": completion_mask,
        "advantages": advantages, "num_items_in_batch": completion_mask.sum(),
        "loss_type": loss_type, "temperature": temperature,
    }
