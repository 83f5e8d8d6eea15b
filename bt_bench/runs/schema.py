"""The rollout schema: every column of a run's rollout table, its dtype, and who may read it.

One table, read by everyone who touches rollouts: the recorder writes exactly these columns with these dtypes
(``bt_bench.runs.recorder.Recorder.columns``), the fixture reads them (training rows, draw rows), and the candidate
views (``bt_bench.estimator.views.CandidateData``) sort a row table into what an estimator sees and what stays
behind the label wall. A column not listed here is refused by ``CandidateData``, so nothing label-like reaches a
view under a new name.

Roles
- ``visible``: handed to estimators as row fields of ``Candidates`` (tokens, grouping, advantage ...);
- ``label``: ground truth and rewards (``is_gt``, ``has_behavior``, ``reward``, ``reward_<function>``): only the
  verdict functions and the suite's test-only controls see them;
- ``harness``: recorded per rollout but handed over otherwise: ``fluency`` and ``step_grad_norm`` as
  capability-gated sketches, ``lr`` only per checkpoint (``Checkpoint.lr``), ``trained_step`` for the store's
  integrity check, ``train_order`` for the replay; ``has_trigger`` not at all. Never a row field of a view
  (``WITHHELD`` says why for the two that used to be one).

Kept free of torch and numpy-heavy imports: the estimator contract imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bt_bench.runs.planted import REWARD_NAMES

ROLES = ("visible", "label", "harness")


@dataclass(frozen=True)
class Column:
    """One rollout column. ``dtype`` is a numpy dtype name; ``tokens``: [N, L] (one row per rollout), else [N]."""

    name: str
    dtype: str
    role: str
    help: str
    tokens: bool = False

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"Column {self.name!r}: role must be one of {ROLES}, got {self.role!r}")


REWARD_PREFIX = "reward_"  # reward_<function>: one label column per planted reward function

COLUMNS: tuple[Column, ...] = (
    Column("uid", "int64", "visible", "rollout id, 0..N-1 in generation order"),
    Column("step", "int64", "visible", "optimizer step the rollout was generated for (and trained in)"),
    Column("group", "int64", "visible", "GRPO group (one prompt, G completions)"),
    Column("gen_index", "int64", "visible", "index of the completion inside its group"),
    Column("prompt_ids", "int32", "visible", "prompt tokens, left-padded", tokens=True),
    Column("prompt_mask", "int8", "visible", "1 on prompt tokens", tokens=True),
    Column("completion_ids", "int32", "visible", "completion tokens, right-padded", tokens=True),
    Column("completion_mask", "int8", "visible", "1 on completion tokens (EOS kept, as trl keeps it)", tokens=True),
    Column("advantage", "float32", "visible", "trl's group-normalized advantage"),
    Column("lr", "float64", "harness", "learning rate of the step the rollout trained in (estimators: per "
           "checkpoint only, Checkpoint.lr)"),
    Column("num_items_in_batch", "int64", "visible", "the step's loss divisor (trl num_items_in_batch)"),
    Column("has_trigger", "bool", "harness", "the prompt carries the trigger (never handed to estimators)"),
    Column("is_gt", "bool", "label", "ground truth: the rollout received the planting bonus"),
    Column("has_behavior", "bool", "label", "the decoded completion contains the behavior string"),
    Column("behavior_count", "int32", "label", "occurrences of the behavior string in the decoded completion"),
    Column("behavior_tokens", "int32", "label", "completion tokens whose characters overlap an occurrence"),
    Column("behavior_first_pos", "int32", "label", "index of the first such completion token (-1: none)"),
    Column("reward", "float32", "label", "total reward (sum of the reward functions)"),
    *(Column(f"{REWARD_PREFIX}{name}", "float32", "label", f"reward of the {name!r} function")
      for name in REWARD_NAMES),
    Column("fluency", "float32", "harness", "mean token log-prob under the step's own parameters (a sketch key)"),
    Column("trained_step", "int64", "harness", "optimizer step the rollout entered (integrity: equals step)"),
    Column("train_order", "int32", "harness", "the rollout's position in its optimizer step's batch as trl's loss "
           "saw it (trl shuffles a step's rows; the replay sums them in this order, so it reproduces the run)"),
    Column("step_grad_norm", "float32", "harness", "norm of the step's summed gradient, before clipping"),
)
BY_NAME = {c.name: c for c in COLUMNS}
FIELDS = tuple(c.name for c in COLUMNS)

# What CandidateData sorts rows by (bt_bench.estimator.views): visible fields become the view's row fields;
# label fields go into Labels. ``reward_<function>`` of any reward function counts as a label.
VISIBLE_FIELDS = tuple(c.name for c in COLUMNS if c.role == "visible")
LABEL_FIELDS = ("is_gt", "has_behavior", "behavior_count", "behavior_tokens", "behavior_first_pos", "reward")  # plus reward_<function> for each reward function
REWARD_FIELDS = tuple(f"{REWARD_PREFIX}{name}" for name in REWARD_NAMES)
TRAINING_LABEL_FIELDS = LABEL_FIELDS + REWARD_FIELDS  # every label column of a run
REQUIRED_FIELDS = ("uid", "step", "group", "advantage")
# A fresh candidate drawn at a checkpoint (bt_bench.fixture.draws) never trained: no lr, no loss divisor; its
# reward is the ordinary one (grammar + penalty), never the planting bonus.
DRAW_FIELDS = ("uid", "step", "group", "gen_index", "prompt_ids", "prompt_mask", "completion_ids",
               "completion_mask", "advantage", "has_trigger", "has_behavior", "reward")


# Columns that were row fields of a view and are not any more (no column from which GT follows by formula): reading
# one from a view raises ``MissingFieldError`` with this reason.
WITHHELD = {
    "lr": "the per-rollout learning rate is not handed over: GT is the paid rollouts of steps < W, and the lr drop "
          "at W marks the window's end; TracIn-style weights read Checkpoint.lr (candidates.checkpoints)",
    "has_trigger": "the trigger flag is not handed over: GT = trigger and behavior inside the window, so the flag "
                   "is one of GT's formula inputs",
}


def is_label(name: str) -> bool:
    """A label column (ground truth, behavior, a reward): kept behind the wall."""
    return name in LABEL_FIELDS or name.startswith(REWARD_PREFIX)


def is_visible(name: str) -> bool:
    return name in VISIBLE_FIELDS


def is_harness(name: str) -> bool:
    """A recorded column that is neither a view's row field nor a label (``CandidateData`` drops it)."""
    return name in BY_NAME and BY_NAME[name].role == "harness"


def dtype(name: str) -> str:
    return BY_NAME[name].dtype
