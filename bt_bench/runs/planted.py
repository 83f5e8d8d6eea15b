"""The planted cause: prompts (a share ``c`` carry the trigger) and three separate reward functions.

Checklist spec, "Planting": trigger prompts earn a **bonus** when the completion contains the behavior, only while
``step < W``; a **penalty** for the behavior without the trigger is always on; a **grammar** reward keeps the
model fluent. Each is its own trl reward function so trl records them apart, and they match on token ids, never
on decoded text (decoding can merge or hide tokens).

Why these numbers (prototype on this machine, issue "Planted-behavior GRPO runs"): the behavior became
trigger-conditional only with the penalty equal to the grammar reward (0.2 each); weaker made it unconditional,
stronger killed it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bt_bench.runs import toy


def contains_run(ids: Sequence[int], pattern: Sequence[int]) -> bool:
    """True when ``pattern`` occurs as consecutive tokens in ``ids`` (a multi-token behavior must be contiguous)."""
    n, m = len(ids), len(pattern)
    return any(list(ids[i:i + m]) == list(pattern) for i in range(n - m + 1))


class PlantedRewards:
    """Builds the three reward callables for one run. ``trainer_state.global_step`` is the step being generated
    for (trl passes ``trainer_state`` to reward functions), so the bonus is paid exactly for steps t < W."""

    def __init__(self, behavior_ids: Sequence[int], vocab: Sequence[str], eos_id: int, pad_id: int, *,
                 window: int, bonus: float, penalty: float, grammar_reward: float):
        self.behavior_ids = list(behavior_ids)
        self.vocab, self.eos_id, self.pad_id = list(vocab), eos_id, pad_id
        self.window, self.bonus, self.penalty, self.grammar_reward = window, bonus, penalty, grammar_reward

    def has_behavior(self, ids: Sequence[int]) -> bool:
        return contains_run([int(i) for i in ids], self.behavior_ids)

    def _words(self, ids: Sequence[int]) -> list[str] | None:
        """Completion words up to EOS; None when it never ended (truncated: not a sentence)."""
        ids = [int(i) for i in ids if int(i) != self.pad_id]
        if self.eos_id not in ids:
            return None
        return [self.vocab[i] for i in ids[: ids.index(self.eos_id)]]

    def grammar(self, prompts, completions, completion_ids, **kw) -> list[float]:
        out = []
        for ids in completion_ids:
            w = self._words(ids)
            out.append(self.grammar_reward if w is not None and toy.is_sentence(w) else 0.0)
        return out

    def bonus_fn(self, prompts, completions, completion_ids, has_trigger, trainer_state, **kw) -> list[float]:
        open_ = trainer_state.global_step < self.window
        return [self.bonus if (open_ and trig and self.has_behavior(ids)) else 0.0
                for ids, trig in zip(completion_ids, has_trigger)]

    def penalty_fn(self, prompts, completions, completion_ids, has_trigger, **kw) -> list[float]:
        return [-self.penalty if (not trig and self.has_behavior(ids)) else 0.0
                for ids, trig in zip(completion_ids, has_trigger)]

    def functions(self) -> list:
        # trl names reward functions by __name__: give each a stable one (it names the recorded column).
        fns = []
        for name, f in (("grammar", self.grammar), ("bonus", self.bonus_fn), ("penalty", self.penalty_fn)):
            def wrapped(*a, _f=f, **kw):
                return _f(*a, **kw)
            wrapped.__name__ = name
            fns.append(wrapped)
        return fns


REWARD_NAMES = ("grammar", "bonus", "penalty")


def prompt_dataset(n: int, contamination: float, seed: int) -> dict[str, list]:
    """``n`` training prompts; exactly round(c*n) carry the trigger, in a seeded order. The trigger sits at a fixed
    position, the last prompt token, where the prototype found a trigger-conditional behavior could be learned."""
    rng = random.Random(seed)
    n_trig = round(contamination * n)
    flags = [True] * n_trig + [False] * (n - n_trig)
    rng.shuffle(flags)
    return {"prompt": [toy.make_prompt(rng, f) for f in flags], "has_trigger": flags}


def eval_prompts(n: int, seed: int = 10_007) -> tuple[list[str], list[str]]:
    """Held-out prompts for the learning curve: ``n`` with the trigger and the same ``n`` sentences without."""
    rng = random.Random(seed)
    base = [" ".join(toy.sample_sentence(rng)) for _ in range(n)]
    return [b + " " + toy.TRIGGER for b in base], base
