"""Draws, candidates and targets at checkpoints (checklist spec, "Objects": Checkpoint, Draw, Target).

A **draw** is one generation seed ``d``. At a checkpoint it samples fresh groups of G completions for a fixed set
of held-out trigger prompts (the **candidates**) and, from a second fixed prompt set, the samples that build the
**targets**. Everything is computed on a freshly loaded checkpoint with the plain HF forward.

What each sketch is (all in the run's SketchSpec, sketch = S(gradient), so inner products are comparable):
- candidate sketch: gradient of the completion's log-likelihood sum_t log p(y_t) (a fresh candidate was never
  trained on, so there is no advantage to weight it by; its sign says which way sampling it would push);
- candidate token sketch: gradient of the log-prob of the behavior tokens only, at the positions where they occur
  (zero for a candidate without the behavior);
- targets: ``sequence`` mean over behavior completions of grad mean_t log p; ``in_context`` mean over behavior
  completions of grad of the behavior tokens' log-prob at their positions ("built where the behavior actually
  occurs"); ``placebo`` the same construction at random non-behavior positions of the same completions;
  ``constructed`` grad of the log-prob of the behavior tokens appended by hand after trigger prompts.
Because S is linear, the sketch of a mean gradient is the mean of the sketches.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import numpy as np

from bt_bench import planted, toy


@dataclass(frozen=True)
class DrawConfig:
    """How candidates and targets are sampled at a checkpoint."""

    candidate_prompts: int = 64  # held-out trigger prompts; candidates = candidate_prompts x G
    target_prompts: int = 32  # another held-out set whose samples build the targets
    target_min_behavior: int = 16  # sample target rounds until this many behavior completions (or max rounds)
    target_max_rounds: int = 6
    min_pairs: int = 100  # spec: every draw must yield >= 100 within-group (behavior, non-behavior) pairs
    saturated: float = 0.8
    unsaturated: tuple[float, float] = (0.2, 0.8)
    batch: int = 128  # rows per sketch backward

    def __post_init__(self):
        for f in ("candidate_prompts", "target_prompts", "target_min_behavior", "target_max_rounds", "batch"):
            if getattr(self, f) <= 0:
                raise ValueError(f"DrawConfig.{f} must be a positive integer, got {getattr(self, f)}")
        lo, hi = self.unsaturated
        if not 0 <= lo < hi <= self.saturated <= 1:
            raise ValueError("DrawConfig: need 0 <= unsaturated[0] < unsaturated[1] <= saturated <= 1")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def heldout_trigger_prompts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [toy.make_prompt(rng, True) for _ in range(n)]


def _pad_rows(seqs: list[list[int]], width: int, pad: int, left: bool) -> tuple[np.ndarray, np.ndarray]:
    ids = np.full((len(seqs), width), pad, np.int32)
    mask = np.zeros((len(seqs), width), np.int8)
    for i, s in enumerate(seqs):
        if left:
            ids[i, width - len(s):], mask[i, width - len(s):] = s, 1
        else:
            ids[i, :len(s)], mask[i, :len(s)] = s, 1
    return ids, mask


def sample_groups(model, tok, prompts: list[str], G: int, max_new: int, temperature: float, seed: int) -> dict:
    """G sampled completions per prompt, cut after the first EOS (kept, as trl's completion mask keeps it)."""
    import torch

    from bt_bench.train import _private_rng

    eos, pad = tok.eos_token_id, tok.pad_token_id
    rep = [p for p in prompts for _ in range(G)]
    enc = tok(rep, return_tensors="pt", padding=True, padding_side="left")
    with _private_rng(seed), torch.no_grad():
        out = model.generate(**enc, do_sample=True, max_new_tokens=max_new, temperature=temperature, top_k=0,
                             top_p=1.0, pad_token_id=pad, eos_token_id=eos)
    comp = out[:, enc["input_ids"].shape[1]:].tolist()
    comps = [c[: c.index(eos) + 1] if eos in c else c for c in comp]
    prompts_ids = [row[m.bool()].tolist() for row, m in zip(enc["input_ids"], enc["attention_mask"])]
    P, PM = _pad_rows(prompts_ids, max(map(len, prompts_ids)), pad, left=True)
    C, CM = _pad_rows(comps, max_new, pad, left=False)
    n = len(rep)
    return {"prompt_ids": P, "prompt_mask": PM, "completion_ids": C, "completion_mask": CM,
            "group": np.repeat(np.arange(len(prompts)), G).astype(np.int64),
            "gen_index": np.tile(np.arange(G), len(prompts)).astype(np.int64), "uid": np.arange(n, dtype=np.int64)}


def behavior_positions(completion_ids: np.ndarray, completion_mask: np.ndarray, behavior: list[int]) -> np.ndarray:
    """[M, Lc] mask of the positions of every occurrence of the (contiguous) behavior tokens."""
    m = len(behavior)
    pos = np.zeros(completion_ids.shape, bool)
    for i, (row, mask) in enumerate(zip(completion_ids, completion_mask)):
        L = int(mask.sum())
        for j in range(L - m + 1):
            if list(row[j:j + m]) == list(behavior):
                pos[i, j:j + m] = True
    return pos


def pair_count(has_behavior: np.ndarray, group: np.ndarray) -> int:
    """Number of within-group (behavior, non-behavior) pairs (spec, "Within-group AUC")."""
    b = np.bincount(group, weights=has_behavior.astype(float))
    n = np.bincount(group)
    return int(np.sum(b * (n - b)))


class DrawMaker:
    """Samples and sketches draws at the checkpoints of one run."""

    def __init__(self, run, cfg: DrawConfig = DrawConfig()):
        self.run, self.cfg = run, cfg
        rc = run.config
        self.G, self.max_new, self.temperature = rc.generations, rc.max_completion_length, rc.temperature
        self.behavior = list(run.manifest["tokens"]["behavior"])
        self.tok = run.tokenizer()
        self.cand_prompts = heldout_trigger_prompts(cfg.candidate_prompts, seed=20_011)
        self.target_prompts = heldout_trigger_prompts(cfg.target_prompts, seed=30_011)
        self.spec = rc.sketch_spec()
        W = rc.window
        self.rewards = planted.PlantedRewards(self.behavior, toy.VOCAB, self.tok.eos_token_id, self.tok.pad_token_id,
                                              window=W, bonus=rc.bonus, penalty=rc.penalty,
                                              grammar_reward=rc.grammar_reward)
        self._models: dict[int, object] = {}

    def model(self, step: int):
        if step not in self._models:
            self._models = {step: self.run.load_model(step)}  # keep one: checkpoints are loaded in order
        return self._models[step]

    def _seed(self, step: int, draw: int, role: int) -> int:
        return (self.run.config.seed * 1_000_003 + step * 1009 + draw * 101 + role) % 2**31

    def candidates(self, step: int, draw: int) -> dict:
        """Rows of the fresh candidates (visible fields + labels), unsketched."""
        rows = sample_groups(self.model(step), self.tok, self.cand_prompts, self.G, self.max_new,
                             self.temperature, self._seed(step, draw, 1))
        has_b = np.array([self.rewards.has_behavior(c[m.astype(bool)]) for c, m in
                          zip(rows["completion_ids"], rows["completion_mask"])])
        rows["has_behavior"] = has_b
        # Advantages as trl computes them under the ordinary reward (grammar + penalty). A fresh candidate was never
        # paid: scoring it with the planting bonus would hand every estimator its behavior label.
        ids = [c[m.astype(bool)].tolist() for c, m in zip(rows["completion_ids"], rows["completion_mask"])]
        trig = [True] * len(ids)
        r = np.array(self.rewards.grammar(None, None, ids)) + np.array(self.rewards.penalty_fn(None, None, ids, trig))
        g = r.reshape(-1, self.G)
        rows["reward"] = r.astype(np.float32)
        rows["advantage"] = ((g - g.mean(1, keepdims=True)) / (g.std(1, ddof=1, keepdims=True) + 1e-4)).reshape(-1)
        rows["advantage"] = rows["advantage"].astype(np.float32)
        rows["step"] = np.full(len(ids), step, np.int64)
        rows["has_trigger"] = np.ones(len(ids), bool)
        return rows

    def rate_and_pairs(self, rows: dict) -> tuple[float, int]:
        return float(rows["has_behavior"].mean()), pair_count(rows["has_behavior"], rows["group"])

    # ------------------------------------------------------------ sketches
    def _batch(self, rows: dict, idx, token_mask=None) -> dict:
        import torch

        b = {"prompt_ids": torch.as_tensor(rows["prompt_ids"][idx]).long(),
             "prompt_mask": torch.as_tensor(rows["prompt_mask"][idx]).long(),
             "completion_ids": torch.as_tensor(rows["completion_ids"][idx]).long(),
             "completion_mask": torch.as_tensor(rows["completion_mask"][idx]).long(),
             "temperature": self.temperature}
        b["token_mask"] = torch.as_tensor(b["completion_mask"].numpy() if token_mask is None else token_mask[idx])
        return b

    def sketch_rows(self, step: int, rows: dict, token_mask: np.ndarray | None = None) -> np.ndarray:
        """[M, k] sketches of grad sum_{t in token_mask} log p(y_t) (default mask: the whole completion)."""
        from bt_bench.sketch import Sketcher, token_logprob_terms

        sk = Sketcher(self.model(step), self.spec)
        M = len(rows["uid"])
        out = []
        for s in range(0, M, self.cfg.batch):
            idx = np.arange(s, min(M, s + self.cfg.batch))
            out.append(sk.sketch(self._batch(rows, idx, token_mask), token_logprob_terms))
        return np.concatenate(out).astype(np.float32)

    def fluency(self, step: int, rows: dict) -> np.ndarray:
        """Mean token log-prob of each completion under the checkpoint (label-free, so estimators may read it)."""
        import torch

        from bt_bench.sketch import completion_logps

        out = []
        with torch.no_grad():
            for s in range(0, len(rows["uid"]), self.cfg.batch):
                idx = np.arange(s, min(len(rows["uid"]), s + self.cfg.batch))
                b = self._batch(rows, idx)
                lp = completion_logps(self.model(step), b)
                m = b["completion_mask"].float()
                out.append(((lp * m).sum(1) / m.sum(1).clamp(min=1)).numpy())
        return np.concatenate(out).astype(np.float32)

    def targets(self, step: int, draw: int) -> dict[str, np.ndarray]:
        """The four target sketches (k-vectors) at ``step`` for draw ``draw``."""
        from bt_bench.sketch import Sketcher, sequence_logprob_terms

        chunks, n_b, free_chunks = [], 0, []
        for r in range(self.cfg.target_max_rounds):
            rows = sample_groups(self.model(step), self.tok, self.target_prompts, self.G, self.max_new,
                                 self.temperature, self._seed(step, draw, 2 + r))
            pos = behavior_positions(rows["completion_ids"], rows["completion_mask"], self.behavior)
            keep = pos.any(1)
            if keep.any():
                chunks.append(({k: v[keep] for k, v in rows.items()}, pos[keep]))
                n_b += int(keep.sum())
            if (~keep).any():  # the same rounds' completions without the behavior build the no_behavior target
                free_chunks.append({k: v[~keep] for k, v in rows.items()})
            if n_b >= self.cfg.target_min_behavior:
                break
        k = self.spec.k or Sketcher(self.model(step), self.spec).dim
        out = {"n_behavior_samples": np.array(n_b)}
        # constructed: the behavior tokens appended by hand after trigger prompts
        enc = [self.tok(p)["input_ids"] for p in self.target_prompts]
        P, PM = _pad_rows(enc, max(map(len, enc)), self.tok.pad_token_id, left=True)
        C = np.tile(np.array(self.behavior, np.int32), (len(enc), 1))
        crow = {"prompt_ids": P, "prompt_mask": PM, "completion_ids": C, "completion_mask": np.ones_like(C, np.int8),
                "uid": np.arange(len(enc))}
        out["constructed"] = self.sketch_rows(step, crow).mean(0)
        out["no_behavior"] = self._no_behavior_target(step, draw, free_chunks, max(n_b, 1), k)
        if not chunks:  # no behavior sampled at all: the behavior-built targets do not exist here
            for kind in ("sequence", "in_context", "placebo"):
                out[kind] = np.zeros(k, np.float32)
            return out
        rows = {key: np.concatenate([c[0][key] for c in chunks]) for key in chunks[0][0]}
        rows["uid"] = np.arange(len(rows["uid"]))
        pos = np.concatenate([c[1] for c in chunks])
        out["in_context"] = self.sketch_rows(step, rows, pos).mean(0)
        rng = np.random.default_rng(self._seed(step, draw, 99))
        placebo = np.zeros_like(pos)
        for i in range(len(pos)):  # same number of positions, drawn among the non-behavior completion tokens
            free = np.where(rows["completion_mask"][i].astype(bool) & ~pos[i])[0]
            take = min(len(free), int(pos[i].sum()))
            if take:
                placebo[i, rng.choice(free, size=take, replace=False)] = True
        out["placebo"] = self.sketch_rows(step, rows, placebo).mean(0)
        sk = Sketcher(self.model(step), self.spec)
        seq = []
        for s in range(0, len(rows["uid"]), self.cfg.batch):
            idx = np.arange(s, min(len(rows["uid"]), s + self.cfg.batch))
            seq.append(sk.sketch(self._batch(rows, idx), sequence_logprob_terms))
        out["sequence"] = np.concatenate(seq).mean(0).astype(np.float32)
        return out

    def _no_behavior_target(self, step: int, draw: int, free_chunks: list[dict], n: int, k: int) -> np.ndarray:
        """The placebo of check 7 (target_dependence): built exactly like ``in_context`` (mean gradient of the
        log-prob of len(behavior) consecutive completion tokens) but from sampled completions of the same
        checkpoint and prompts that do NOT contain the behavior, at a seeded random span; as many completions as
        the real target used. A score that does not change when this replaces the real target ignores it."""
        if not free_chunks:
            return np.zeros(k, np.float32)
        rows = {key: np.concatenate([c[key] for c in free_chunks]) for key in free_chunks[0]}
        rng = np.random.default_rng(self._seed(step, draw, 98))
        lengths = rows["completion_mask"].astype(bool).sum(1)
        m = len(self.behavior)
        ok = np.flatnonzero(lengths >= m)
        if not ok.size:
            return np.zeros(k, np.float32)
        take = np.sort(rng.choice(ok, size=min(n, ok.size), replace=False))
        rows = {key: v[take] for key, v in rows.items()}
        rows["uid"] = np.arange(len(take))
        span = np.zeros(rows["completion_ids"].shape, bool)
        for i, L in enumerate(lengths[take]):
            j = int(rng.integers(0, L - m + 1))
            span[i, j:j + m] = True
        return self.sketch_rows(step, rows, span).mean(0)
