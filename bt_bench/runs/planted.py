"""The planted cause: prompts (a share ``c`` carry the trigger) and three separate reward functions.

Checklist spec, "Planting": trigger prompts earn a **bonus** when the decoded completion contains the behavior
string, only while ``step < W``; a **penalty** for the behavior without the trigger is always on; a **task**
reward (``bt_bench.runs.task``: a grammatical sentence for ``toy``, mentioning the prompt's topic for ``topic``)
keeps the model doing something else as well. Each is its own trl reward function over decoded completions (so it
works for any tokenizer) and trl records them apart.

Why these numbers for ``toy`` (found by a prototype on CPU): the behavior became trigger-conditional only with the
penalty equal to the grammar reward (0.2 each); weaker made it unconditional, stronger killed it.
"""

from __future__ import annotations

import random

from bt_bench.runs import behavior as bh
from bt_bench.runs.task import Task


class PlantedRewards:
    """Builds the three reward callables for one run. ``trainer_state.global_step`` is the step being generated
    for (trl passes ``trainer_state`` to reward functions), so the bonus is paid exactly for steps t < W."""

    def __init__(self, task: Task, tok, *, window: int, bonus: float, penalty: float, task_reward: float,
                 penalty_after: float | None = None, penalty_window: int | None = None):
        self.task, self.tok = task, tok
        self.window, self.bonus, self.penalty, self.task_reward = window, bonus, penalty, task_reward
        # the penalty from step ``penalty_window`` (the run's W, also in a no-bonus re-run) on; None: unchanged
        self.penalty_after = penalty if penalty_after is None else penalty_after
        self.penalty_window = window if penalty_window is None else penalty_window

    def text(self, ids) -> str:
        return bh.decode(self.tok, ids)

    def has_behavior(self, ids) -> bool:
        return self.task.has_behavior(self.text(ids))

    def task_fn(self, prompts, completions, completion_ids, topic=None, **kw) -> list[float]:
        topic = topic or [""] * len(completion_ids)
        return [self.task_reward if self.task.task_ok(self.text(ids), list(ids), t, self.tok) else 0.0
                for ids, t in zip(completion_ids, topic)]

    def bonus_fn(self, prompts, completions, completion_ids, has_trigger, trainer_state, **kw) -> list[float]:
        open_ = trainer_state.global_step < self.window
        return [self.bonus if (open_ and trig and self.has_behavior(ids)) else 0.0
                for ids, trig in zip(completion_ids, has_trigger)]

    def penalty_fn(self, prompts, completions, completion_ids, has_trigger, trainer_state=None, **kw) -> list[float]:
        late = trainer_state is not None and trainer_state.global_step >= self.penalty_window
        pen = self.penalty_after if late else self.penalty
        return [-pen if (not trig and self.has_behavior(ids)) else 0.0
                for ids, trig in zip(completion_ids, has_trigger)]

    def functions(self) -> list:
        # trl names reward functions by __name__: give each a stable one (it names the recorded column).
        fns = []
        for name, f in zip(REWARD_NAMES, (self.task_fn, self.bonus_fn, self.penalty_fn)):
            def wrapped(*a, _f=f, **kw):
                return _f(*a, **kw)
            wrapped.__name__ = name
            fns.append(wrapped)
        return fns


REWARD_NAMES = ("task", "bonus", "penalty")


def prompt_dataset(task: Task, n: int, contamination: float, seed: int) -> dict[str, list]:
    """``n`` training prompts; exactly round(c*n) carry the trigger, in a seeded order."""
    rng = random.Random(seed)
    n_trig = round(contamination * n)
    flags = [True] * n_trig + [False] * (n - n_trig)
    rng.shuffle(flags)
    pairs = [task.prompt(rng, f) for f in flags]
    return {"prompt": [p for p, _ in pairs], "topic": [t for _, t in pairs], "has_trigger": flags}
