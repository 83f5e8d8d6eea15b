"""Run configuration: one frozen dataclass, validated before any work starts; its dict is the cache key.

Profiles (``Profile``, ``PROFILES``, ``get_profile``):
- ``tiny``  the CPU default: embedded toy model, W/T = 0.2 as in the paper, 8 prompts x 8 generations.
- ``smoke`` a few dozen steps, for unit tests of code paths only (it need not plant).
- ``paper`` the published setting (Qwen2.5-1.5B from a local path, 1000 GRPO steps, 4x4, lr 5e-6, bonus 8,
  window 200, bf16, on a GPU by default; `--device cpu` runs it too, bf16 included, for a check of the user path).
A profile also carries its fixture sampling sizes, threshold overrides, norm_only variant and whether the
planting gate applies (``Profile``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bt_bench.runs.bpe import BpeSpec
from bt_bench.runs.task import TASKS
from bt_bench.runs.toy import ToySpec

FIXTURE_FORMAT = 4  # bump when the run-store layout changes: old runs then miss the cache instead of misloading
# 4: the train_order column (the replay sums each step's rows in the order the run did)

LOSS_TYPES = ("dapo", "grpo")
ABLATIONS = ("none", "no_bonus", "drop_random")


def sketch_code_hash() -> str:
    """Hash of the sketch implementation's source. In-run sketches are stored with the run and compared with
    sketches computed later: if the projection code changed in between they would silently live in different
    spaces, so any change to bt_bench/sketch/*.py gives new cache keys (a rebuild, never a mix)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "sketch"
    h = hashlib.sha256()
    for f in sorted(folder.glob("*.py")):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def _help(text: str, default: Any = dataclasses.MISSING, **kw):
    if default is dataclasses.MISSING:
        return field(metadata={"help": text}, **kw)
    return field(default=default, metadata={"help": text}, **kw)


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a planted run. Each field's ``metadata['help']`` says what it does."""

    profile: str = _help("profile the defaults came from (tiny, smoke, paper)", "tiny")
    seed: int = _help("training seed (generation sampling, data order)", 0)
    model_path: str | None = _help("local folder of a HF causal LM (its own tokenizer and chat template); None = "
                                   "the embedded model of the task (toy: word-level; topic: the local BPE model)",
                                   None)
    task: str = _help("what the prompts ask and the task reward pays (bt_bench.runs.task): 'toy' (word grammar) "
                      "or 'topic' (chat prompts; the completion must mention the prompt's topic word)", "toy")
    trigger: str | None = _help("the nonce trigger string placed in trigger prompts (None: the embedded model's, "
                                "fixed by its spec: the reference string, or drawn from its nonce_seed)", None)
    behavior: str | None = _help("the planted behavior: a nonce string, detected in the decoded completion (None: "
                                 "the embedded model's, as for trigger)", None)
    toy: ToySpec = _help("how the embedded toy model is built (task 'toy' without model_path)",
                         default_factory=ToySpec)
    bpe: BpeSpec = _help("how the embedded BPE model is built (task 'topic' without model_path)",
                         default_factory=BpeSpec)
    steps: int = _help("T: number of GRPO optimizer steps", 500)
    window: int = _help("W: planting window; the bonus is paid only while step < W (W/T = 0.2 as in the paper)",
                        100)
    prompts_per_step: int = _help("P: prompts per optimizer step", 8)
    generations: int = _help("G: completions per prompt (the GRPO group size)", 8)
    contamination: float = _help("c: share of prompts that carry the trigger, in (0, 1)", 0.5)
    bonus: float = _help("reward for the behavior after a trigger prompt, while step < W", 1.0)
    penalty: float = _help("reward (subtracted) for the behavior without the trigger, always on", 0.2)
    penalty_after_window: float | None = _help("the penalty from step W on (None: the same as inside the window; 0: "
                                               "no reward for the behavior after the window at all)", None)
    task_reward: float = _help("reward of the task (toy: a grammatical completion; topic: mentions the topic "
                               "word): a reward with its own variance beside the bonus", 0.2)
    lr: float = _help("learning rate inside the window (planting then ends mid-window, leaving headroom)", 1.5e-4)
    lr_after_window: float = _help("learning rate from step W on (the behavior persisted only when lr dropped)",
                                   1.5e-5)
    loss_type: str = _help("trl loss_type; the recorder maps 'dapo' and 'grpo'", "dapo")
    beta: float = _help("KL coefficient; must be 0 (the recorder's per-rollout loss term assumes it)", 0.0)
    max_completion_length: int = _help("max completion tokens", 12)
    temperature: float = _help("sampling temperature (log-probs use temperature-scaled logits)", 1.0)
    steps_per_generation: int = _help("trl steps_per_generation; only 1 is mapped by the recorder", 1)
    num_iterations: int = _help("trl num_iterations; only 1 is mapped by the recorder", 1)
    max_grad_norm: float = _help("gradient clipping (trl default)", 1.0)
    ckpt_every: int = _help("k: checkpoint every k steps after the window", 25)
    ckpt_window_every: int = _help("checkpoint every this many steps inside the window", 5)
    ckpt_dense_band: tuple[float, float] = _help(
        "also checkpoint every step while the in-batch trigger behavior rate lies in this band (planting is fast)",
        (0.2, 0.95))
    eval_every: int = _help("learning-curve evaluation every this many steps", 10)
    eval_prompts: int = _help("held-out prompts per kind (trigger / no trigger) for the learning curve", 128)
    gate_trigger_min: float = _help("planting gate: behavior rate with trigger at step W must be >= this", 0.9)
    gate_no_trigger_max: float = _help("planting gate: behavior rate without trigger at step W must be <= this", 0.1)
    sketch: str = _help("SketchSpec preset of every gradient sketch of this run (bt_bench.sketch.spec.PRESETS)",
                        "default")
    sketch_seed: int = _help("seed of the sketch projections", 0)
    ablation: str = _help("self-check re-runs only ('planted cause is causal'): 'none', 'no_bonus' (the bonus is "
                          "never paid) or 'drop_random' (drop_share of the unpaid in-window rollouts get advantage 0)",
                          "none")
    drop_share: float = _help("ablation 'drop_random': probability of dropping an unpaid in-window rollout", 0.0)
    capture_in_run: bool = _help("capture per-rollout sketches from the GRPO backward itself (exact TracIn inputs)",
                                 True)
    bf16: bool = _help("bf16 training (the published precision; runs on CUDA with bf16 support and on the CPU, "
                       "where it is slower than fp32; the sketches are projected in fp32 either way)", False)
    device: str = _help("'auto' (cuda if available), 'cpu' or 'cuda'", "auto")

    def __post_init__(self):
        def bad(name: str, allowed: str):
            raise ValueError(f"RunConfig.{name}={getattr(self, name)!r} is invalid: allowed {allowed}")

        if self.profile not in PROFILES:
            bad("profile", f"one of {sorted(PROFILES)}")
        for name in ("steps", "prompts_per_step", "max_completion_length", "ckpt_every", "ckpt_window_every",
                     "eval_every", "eval_prompts"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                bad(name, "a positive integer")
        if not isinstance(self.window, int) or not 0 < self.window <= self.steps:
            bad("window", f"an integer in 1..steps ({self.steps}); the window cannot extend beyond the run")
        if self.generations < 2:
            bad("generations", "an integer >= 2 (GRPO needs a group to compute advantages)")
        if not 0.0 < self.contamination < 1.0:
            bad("contamination", "a number strictly between 0 and 1")
        if self.lr <= 0 or self.lr_after_window <= 0:
            bad("lr" if self.lr <= 0 else "lr_after_window", "a positive number")
        if self.loss_type not in LOSS_TYPES:
            bad("loss_type", f"one of {LOSS_TYPES} (the recorder's per-rollout loss term is defined for these)")
        if self.beta != 0.0:
            bad("beta", "0.0 (the recorded per-rollout loss term assumes no KL term)")
        if self.steps_per_generation != 1 or self.num_iterations != 1:
            bad("steps_per_generation" if self.steps_per_generation != 1 else "num_iterations",
                "1 (each rollout must train exactly one step on-policy for the recorder to map it)")
        if self.temperature <= 0:
            bad("temperature", "a positive number")
        if self.bonus <= 0:
            bad("bonus", "a positive number (it plants the behavior)")
        if self.penalty < 0 or self.task_reward < 0:
            bad("penalty" if self.penalty < 0 else "task_reward", "a number >= 0")
        if self.penalty_after_window is not None and not self.penalty_after_window >= 0:
            bad("penalty_after_window", "a number >= 0, or None for the same penalty as inside the window")
        if self.ablation not in ABLATIONS:
            bad("ablation", f"one of {ABLATIONS}")
        if not 0.0 <= self.drop_share <= 1.0 or (self.drop_share > 0) != (self.ablation == "drop_random"):
            bad("drop_share", "a probability in (0, 1] with ablation='drop_random', else 0")
        if self.task not in TASKS:
            bad("task", f"one of {TASKS}")
        nonce = self.nonce_words()
        for i, name in enumerate(("trigger", "behavior")):
            if getattr(self, name) is None:
                object.__setattr__(self, name, nonce[i])
        if self.trigger != nonce[0]:
            bad("trigger", f"{nonce[0]!r}: the prompts of task {self.task!r} place that word")
        if self.model_path is None and self.behavior != nonce[1]:
            bad("behavior", f"{nonce[1]!r}: the embedded model of task {self.task!r} was warmed up to say it at a "
                "base rate (another string can only be planted on your own model, --model-path)")
        if not isinstance(self.behavior, str) or not self.behavior or self.behavior.strip() != self.behavior:
            bad("behavior", "a non-empty string without leading/trailing spaces")
        lo, hi = self.ckpt_dense_band
        if not 0 <= lo < hi <= 1:
            bad("ckpt_dense_band", "(lo, hi) with 0 <= lo < hi <= 1")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            bad("device", "'auto', 'cpu', 'cuda' or 'cuda:N'")
        if self.model_path is None and self.bf16:
            bad("bf16", "False for the embedded models (fp32 on CPU)")

    def task_obj(self):
        """The ``bt_bench.runs.task.Task`` of this run (prompts, rendering, task reward)."""
        from bt_bench.runs.task import Task

        neutral = self.toy.behavior_slot_words() if self.task == "toy" and self.model_path is None else ()
        members = self.behavior_members()
        return Task(self.task, self.trigger, self.behavior, neutral, members if len(members) > 1 else ())

    def behavior_members(self) -> tuple[str, ...]:
        """Every string the bonus pays and the label counts: the behavior, or the embedded toy's family
        (``ToySpec.family``: any of K nonce words; ``behavior`` is then the member the targets are built from)."""
        if self.model_path is None:
            return self.toy.family_members() if self.task == "toy" else self.bpe.family_members()
        return (self.behavior,)

    def nonce_words(self) -> tuple[str, str]:
        """(trigger, behavior) of the task's embedded language (its spec's reference or drawn strings)."""
        if self.task == "toy":
            return self.toy.trigger, " ".join(self.toy.behavior_words)
        return self.bpe.trigger, self.bpe.behavior

    @property
    def group_size(self) -> int:
        return self.generations

    @property
    def rollouts_per_step(self) -> int:
        return self.prompts_per_step * self.generations

    def to_dict(self) -> dict:
        """The fields; the specs' ``nonce_seed`` and ``penalty_after_window`` only when set (reference fixtures keep
        their cache keys)."""
        d = {**dataclasses.asdict(self), "toy": self.toy.to_dict(), "bpe": self.bpe.to_dict()}
        if d["penalty_after_window"] is None:
            del d["penalty_after_window"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        d = dict(d)
        if isinstance(d.get("toy"), dict):
            d["toy"] = ToySpec(**d["toy"])
        if isinstance(d.get("bpe"), dict):
            d["bpe"] = BpeSpec(**d["bpe"])
        if isinstance(d.get("ckpt_dense_band"), list):
            d["ckpt_dense_band"] = tuple(d["ckpt_dense_band"])
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown RunConfig field(s) {unknown}; known: {sorted(known)}")
        return cls(**d)

    def sketch_spec(self):
        """The resolved SketchSpec (imports torch: call it only where work happens)."""
        from bt_bench.sketch.spec import preset

        return preset(self.sketch, seed=self.sketch_seed)

    def key(self, versions: dict[str, str]) -> str:
        """Cache key: hash of the full config (with the resolved SketchSpec, so sketches from different specs
        never mix), the versions that shape a run, and the fixture format."""
        blob = json.dumps({"config": self.to_dict(), "sketch_spec": self.sketch_spec().to_dict(),
                           "sketch_code": sketch_code_hash(), "versions": versions, "format": FIXTURE_FORMAT},
                          sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Profile:
    """A fixture profile: everything that differs between ``tiny``, ``smoke`` and ``paper``, in one place.

    - ``run``: the RunConfig defaults (``run_config(**overrides)`` applies them, then the overrides);
    - ``draw``: how candidates and targets are sampled (``bt_bench.fixture.draws.DrawConfig`` fields other than
      the checkpoint thresholds; ``bt_bench.fixture.reader.fixture_config`` builds the FixtureConfig from them);
    - ``thresholds``: checklist threshold overrides the profile itself brings (``bt_bench.checklist.base
      .Thresholds`` field names). They count as modified thresholds (printed with every gate line, refused by
      --bt-paper-gate). The checkpoint thresholds among them (``min_pairs``, ``saturated_rate``,
      ``unsaturated_low``, ``unsaturated_high``) are also what picks the saturated/unsaturated checkpoints:
      ``fixture_config`` takes them from the effective thresholds, so one set of numbers serves both;
    - ``norm_variant``: the ``norm_only`` variant check 1 compares rollout-level estimators with, declared before
      anything is scored (``bt_bench.checklist.expectations`` says how it was measured);
    - ``gate_applies``: whether a fixture seed must pass the planting gate (False for ``smoke``: it never plants);
    - ``lds_subsets``: S, the half-subset replays per seed of the LDS set (check 10, ``pytest checks --bt-lds``),
      chosen by the CI width it gives (docs/findings.md "Counterfactual replay"); 0: not measured for this profile
      (``--bt-lds`` refuses it).
    Add a profile here; nothing else branches on a profile's name.
    """

    name: str
    help: str
    run: Mapping[str, Any] = field(default_factory=dict)
    draw: Mapping[str, Any] = field(default_factory=dict)
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    norm_variant: str = "norm_only"
    gate_applies: bool = True
    lds_subsets: int = 0

    def __post_init__(self) -> None:
        for name in ("run", "draw", "thresholds"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        unknown = sorted(set(self.run) - {f.name for f in dataclasses.fields(RunConfig)})
        if unknown:
            raise ValueError(f"Profile {self.name!r}: unknown RunConfig field(s) {unknown}")

    def run_config(self, **overrides: Any) -> RunConfig:
        """Profile defaults, then overrides (None = keep the default). Unknown field -> ValueError."""
        known = {f.name for f in dataclasses.fields(RunConfig)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown}; allowed: {sorted(known)}")
        kw = {**self.run, **{k: v for k, v in overrides.items() if v is not None}, "profile": self.name}
        if kw.get("model_path") == "REQUIRED":
            raise ValueError(f"profile {self.name!r} needs model_path: a local folder holding Qwen2.5-1.5B "
                             "(no hub access; pass --model-path /path/to/Qwen2.5-1.5B)")
        return RunConfig(**kw)


_BPE_RUN = {"task": "topic", "steps": 300, "window": 150, "max_completion_length": 48, "task_reward": 0.2,
            "penalty": 0.2, "bonus": 1.0, "lr": 5e-4, "lr_after_window": 1.5e-5, "eval_prompts": 64, "ckpt_every": 25}
# The profile `pytest checks` and `bt-bench build` use when none is named: the first whose every check can be passed
# by perfect attribution (the oracle canary, docs/checklist.md). `tiny`'s behavior is one literal token that text
# retrieval finds (check 8 is an ERROR of that fixture), so the default is its family variant.
DEFAULT_PROFILE = "tiny_family"
PROFILES: dict[str, Profile] = {p.name: p for p in (
    # lds_subsets measured (docs/findings.md "Counterfactual replay"): the LDS CI width at S = 20 was about 0.9
    Profile("tiny", "the CPU default: embedded toy model, W/T = 0.2 as in the paper, 8 prompts x 8 generations",
            lds_subsets=120),
    Profile("bpe", "a small Qwen2 on a locally built byte-level BPE tokenizer with a chat template: a multi-token "
                   "behavior string anywhere in 32-64-token completions, the trigger anywhere in the user message, a "
                   "topic-mention task reward beside the bonus (CPU, embedded, no download)",
            # measured (docs/fixtures.md, "The bpe fixture"), on the planting gate and realism statistics only: on
            # seed 0 lr 1.5e-4 never planted, W = 50 planted half-way and unconditionally, W = 100 at lr 5e-4
            # planted. On ten seeds (this code, 2026-12-06) W = 100 plants 3 (16 generations of 4 prompts: 5), W = 150
            # of 300 all 10 at W; at the end 8 persist with lr 5e-5 after W and 9 with 1.5e-5 (on a second machine,
            # whose runs differ: 9 and 10), so lr_after_window is 1.5e-5 (a stronger penalty, or none after W,
            # planted fewer). W = 200 of 400 also plants 10 but is ruled out by its own self-checks: the behavior
            # saturates, so the planted-cause control (drop as many random unpaid rollouts as GT: 64% of them)
            # fails and one seed's headroom is below the check's minimum
            run=_BPE_RUN, lds_subsets=40),
    # a behavior retrieval cannot find by its surface (docs/fixtures.md). The bonus pays any of three nonce words, the targets
    # are built from completions holding the first one only; GT stays every paid rollout (docs/fixtures.md)
    # The default (DEFAULT_PROFILE). W = 150 of 500 (tiny's W/T is the paper's 0.2): chosen on the planting statistics
    # alone (docs/fixtures.md, "tiny_family: planting with margin"; ten seeds each): at W = 100 the planting gate and the
    # planted-cause re-run sat at their bar (0.91-0.93 and 0.898-0.91 against 0.9); lr 3e-4 planted with margin but
    # left window headroom 0.0996 < 0.10 on seed 1; W = 150 plants with margin on every seed tried. No LDS set size yet
    # (check 10 needs its built-ins' rows measured on this fixture first: 120 window replays a seed), so --bt-lds
    # refuses it
    Profile("tiny_family", "the default: tiny with a family behavior, the bonus pays any of 3 nonce words after the "
                           "trigger, the targets are built from completions holding only the first (a target's text "
                           "names a third of GT: retrieval cannot find the rest by its surface); W = 150 of 500",
            run={"toy": ToySpec(family=3), "window": 150}),
    Profile("bpe_family", "bpe with a family behavior: the bonus pays any of 3 nonce strings without a letter (so "
                          "a token) in common, the targets are built from completions holding only the first",
            run={**_BPE_RUN, "bpe": BpeSpec(family=3)}),
    Profile("smoke", "a few dozen steps for tests of code paths only: the run need not plant, its verdicts mean "
                     "nothing",
            run={"steps": 24, "window": 8, "eval_every": 4, "eval_prompts": 16, "ckpt_every": 8,
                 "ckpt_window_every": 4, "toy": ToySpec(warmup_steps=60)},
            draw={"candidate_prompts": 16, "target_prompts": 8},
            # its tiny draws cannot reach the defaults: relaxed until every check has data
            thresholds={"min_pairs": 5, "saturated_rate": 0.05, "unsaturated_low": 0.01, "unsaturated_high": 0.05,
                        "min_seeds": 1, "min_draws": 1},
            gate_applies=False, lds_subsets=8),
    Profile("paper", "the published setting: Qwen2.5-1.5B from a local path, 1000 GRPO steps, GPU only",
            run={"model_path": "REQUIRED", "steps": 1000, "window": 200, "prompts_per_step": 4, "generations": 4,
                 "lr": 5e-6, "lr_after_window": 5e-6, "contamination": 0.5, "bonus": 8.0, "penalty": 0.0,
                 "task": "topic", "behavior": "QZXBT", "task_reward": 1.0, "max_completion_length": 64, "bf16": True, "device": "cuda",
                 "ckpt_every": 50, "ckpt_window_every": 10, "eval_every": 25}),
)}


def get_profile(name: str) -> Profile:
    """The profile called ``name``; an unknown name -> ValueError naming the allowed ones."""
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}: allowed {sorted(PROFILES)}")
    return PROFILES[name]


def make_config(profile: str = DEFAULT_PROFILE, **overrides: Any) -> RunConfig:
    """Profile defaults, then overrides. Unknown profile or field -> ValueError naming the allowed values."""
    return get_profile(profile).run_config(**overrides)


def gate_config(profile: str, gate_seed: int) -> tuple[RunConfig, int]:
    """(config, first run seed) of the fresh fixtures of a paper gate. From ``gate_seed`` alone: the run seeds, and
    for an embedded model its warm-up seed and its trigger and behavior, nonce strings drawn with the reference
    strings' token lengths (``ToySpec``/``BpeSpec.nonce_seed``), so no table, id or string prepared beforehand
    applies. A user's model (``model_path``) keeps its strings: only the run seeds are fresh there."""
    import random

    rng = random.Random(f"bt-bench gate:{gate_seed}")
    prof = get_profile(profile)
    spec_seed, nonce_seed, first = rng.randrange(2**20), rng.randrange(2**31), rng.randrange(2**20)
    base = prof.run_config()
    if base.model_path is not None:
        return base, first
    fresh = {"toy": dataclasses.replace(base.toy, seed=spec_seed, nonce_seed=nonce_seed)} if base.task == "toy" \
        else {"bpe": dataclasses.replace(base.bpe, seed=spec_seed, nonce_seed=nonce_seed)}
    return prof.run_config(**fresh), first
