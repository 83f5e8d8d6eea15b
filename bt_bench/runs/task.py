"""The task a planted run trains on: prompts, how they are rendered, and the task reward beside the bonus.

Two tasks, one code path (rewards are plain trl reward functions over decoded completions: ``planted.py``):
- ``toy``: the word-level grammar of ``toy.py``; prompts are plain text ending in the trigger; the task reward is
  +r for a grammatical completion (checked on token ids, so a truncated completion never counts);
- ``topic``: chat prompts (a user message naming a topic word, the trigger at a random word position of half of
  them), rendered with the tokenizer's own chat template; the task reward is +r when the completion mentions the
  topic word. Why: the warmed model does that about half the time, independently of the behavior, so inside a
  trigger group the reward has variance of its own and a positive advantage no longer implies the planted cause
  (with the paper's bonus-only reward it implies it exactly). Works for any tokenizer with a chat template: the
  ``bpe`` profile's locally built one and a user's real model (profile ``paper``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TASKS = ("toy", "topic")


@dataclass(frozen=True)
class Task:
    name: str
    trigger: str
    behavior: str
    # toy: words the grammar reward ignores (every word of the toy's behavior slots, used or not: the reference
    # toy's three, or a fresh toy's three drawn ones); empty: the behavior's own words
    neutral: tuple[str, ...] = ()
    # every string the bonus pays (a family: ``ToySpec.family``); empty: ``behavior`` alone. ``behavior`` is then the
    # member the targets are built from (``bt_bench.fixture.targets``)
    family: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise ValueError(f"task={self.name!r} is unknown: allowed {TASKS}")
        if self.family and self.behavior not in self.family:
            raise ValueError(f"Task.family={self.family!r} must contain the behavior {self.behavior!r}")

    @property
    def behaviors(self) -> tuple[str, ...]:
        """Every string that counts as the behavior (the label, the bonus, the penalty, the behavior span)."""
        return self.family or (self.behavior,)

    def has_behavior(self, text: str) -> bool:
        return any(b in text for b in self.behaviors)

    @property
    def chat(self) -> bool:
        return self.name == "topic"

    def prompt(self, rng: random.Random, trigger: bool):
        """(prompt, topic): a plain string for ``toy``, a one-message conversation for ``topic``."""
        if self.name == "toy":
            from bt_bench.runs import toy

            return toy.make_prompt(rng, trigger, self.trigger), ""
        from bt_bench.runs import bpe_language

        content, topic = bpe_language.user_message(rng, trigger, self.trigger)
        return [{"role": "user", "content": content}], topic

    def render(self, tok, prompt) -> str:
        """The prompt as the model sees it (chat prompts through the tokenizer's own template, as trl does)."""
        if not self.chat:
            return prompt
        if not getattr(tok, "chat_template", None):
            raise ValueError("task='topic' needs a tokenizer with a chat template; this model folder has none "
                             "(add one to tokenizer_config.json, or use --profile tiny)")
        return tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)

    def encode_prompts(self, tok, prompts: list) -> list[list[int]]:
        return [tok(self.render(tok, p), add_special_tokens=not self.chat)["input_ids"] for p in prompts]

    def task_ok(self, text: str, ids: list[int], topic: str, tok) -> bool:
        """Did the completion do the task? ``toy``: a whole grammatical sentence ended by EOS; ``topic``: the
        decoded completion mentions the topic word."""
        if self.name == "toy":
            from bt_bench.runs import toy

            ids = [int(i) for i in ids if int(i) != tok.pad_token_id]
            if tok.eos_token_id not in ids:
                return False
            words = tok.convert_ids_to_tokens(ids[: ids.index(tok.eos_token_id)])
            return toy.is_sentence(words, neutral=self.neutral or tuple(self.behavior.split()))
        from bt_bench.runs import bpe_language

        return bpe_language.mentions_topic(text, topic)

    def held_out(self, n: int, seed: int, trigger: bool) -> tuple[list, list[str]]:
        """``n`` held-out prompts (and their topics) from a seeded stream disjoint from training prompts."""
        rng = random.Random(seed)
        pairs = [self.prompt(rng, trigger) for _ in range(n)]
        return [p for p, _ in pairs], [t for _, t in pairs]

    def eval_pairs(self, n: int, seed: int = 10_007) -> tuple[list, list]:
        """Learning-curve prompts: ``n`` with the trigger and ``n`` without (for ``toy`` the same sentences,
        with and without the trigger appended)."""
        if self.name == "toy":
            from bt_bench.runs import toy

            rng = random.Random(seed)
            base = [" ".join(toy.sample_sentence(rng)) for _ in range(n)]
            return [b + " " + self.trigger for b in base], base
        return self.held_out(n, seed, True)[0], self.held_out(n, seed + 1, False)[0]
