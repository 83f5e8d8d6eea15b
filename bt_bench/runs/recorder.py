"""The recorder: one row per rollout, filled from trl's batches as the planted run trains (``bt_bench.runs.train``);
under data parallel it gathers every rank's rows (``bt_bench.runs.build_dist``)."""

from __future__ import annotations

import numpy as np

from bt_bench.runs import behavior as bh
from bt_bench.runs import schema
from bt_bench.runs.config import RunConfig


class Recorder:
    """Accumulates one row per rollout (checklist spec, "Objects": Run, rollout)."""

    def __init__(self, cfg: RunConfig, tok):
        self.cfg, self.tok, self.pad_id = cfg, tok, tok.pad_token_id
        self.rows: list[dict] = []
        self.trained: dict[int, int] = {}  # uid -> optimizer step it entered
        # uid -> its position among the step's rows as trl's loss saw them (trl shuffles a step's rows before the loss
        # and float sums depend on the order: replaying in this order reproduces the run bit for bit on a CPU)
        self.order: dict[int, int] = {}
        self._step_rows: dict[int, int] = {}
        self.step_lr: dict[int, float] = {}
        self.step_items: dict[int, int] = {}
        self.step_grad_norm: dict[int, float] = {}
        self.sketches: dict[int, np.ndarray] = {}  # uid -> in-run sketch of -grad(loss_i)
        # Data parallel (bt_bench.runs.build_dist): ``gather(obj) -> [obj of rank 0, obj of rank 1, ...]`` on
        # every rank; None in one process.
        self.rank, self.gather = 0, None

    def add_fluency(self, uids: np.ndarray, flu: np.ndarray) -> None:
        for u, f in zip(uids.tolist(), flu.tolist()):
            self.rows[int(u)]["fluency"] = float(f)

    def add_sketches(self, uids: np.ndarray, sk: np.ndarray) -> None:
        for u, row in zip(uids.tolist(), sk):
            self.sketches[int(u)] = row.astype(np.float32)

    def in_run_sketches(self) -> np.ndarray | None:
        if not self.sketches:
            return None
        return np.stack([self.sketches[u] for u in range(len(self.rows))])

    def add_generation(self, step: int, out: dict, rewards_per_func, has_trigger: list[bool],
                       names: list[str]) -> list[int]:
        """Record the rollouts of one generation; return the uids of this process's rows. ``rewards_per_func``
        are this process's rows (trl gathers them across processes: the caller slices them back). Data
        parallel: every rank's rows are gathered, so every rank holds the whole table in one order, by rank
        then local index, which is trl's own order of the step's rows (its ``process_slice``)."""
        import torch

        B = out["completion_ids"].shape[0]
        G = self.cfg.generations
        adv = out["advantages"].detach().float().cpu().numpy()
        r = rewards_per_func.detach().float().cpu().numpy()
        pids, pmask = out["prompt_ids"].cpu().numpy(), out["prompt_mask"].cpu().numpy()
        cids, cmask = out["completion_ids"].cpu().numpy(), out["completion_mask"].cpu().numpy()
        n_items = int(out["num_items_in_batch"].item() if torch.is_tensor(out["num_items_in_batch"])
                      else out["num_items_in_batch"])
        self.step_items[step] = n_items
        rows = []
        for i in range(B):
            p = pids[i][pmask[i].astype(bool)]
            c = cids[i][cmask[i].astype(bool)]
            row = dict(step=step, prompt=p.astype(np.int32), completion=c.astype(np.int32),
                       advantage=float(adv[i]), has_trigger=bool(has_trigger[i]), num_items_in_batch=n_items,
                       **bh.span_stats(self.tok, c.tolist(), self.cfg.behavior_members()))
            for j, name in enumerate(names):
                row[f"reward_{name}"] = float(r[i, j])
            row["reward"] = float(r[i].sum())
            # GT (spec, "Ground truth"): the rollouts that received the bonus, read from the paid reward itself.
            row["is_gt"] = bool(r[i, names.index("bonus")] > 0) if "bonus" in names else False
            rows.append(row)
        mine = 0  # rows of lower ranks before this process's rows
        if self.gather is not None:
            parts = self.gather(rows)
            mine = sum(len(part) for part in parts[:self.rank])
            rows = [row for part in parts for row in part]
        start = len(self.rows)
        for k, row in enumerate(rows):
            row.update(uid=start + k, group=(start + k) // G, gen_index=(start + k) % G)
        self.rows += rows
        return list(range(start + mine, start + mine + B))

    def mark_trained(self, step: int, uids, lr: float) -> None:
        for u in uids.tolist():
            if u in self.trained:
                raise RuntimeError(f"rollout {u} entered two optimizer steps ({self.trained[u]} and {step}): "
                                   "the recorder cannot map this configuration")
            self.trained[u] = step
            self.order[u] = self._step_rows.get(step, 0)
            self._step_rows[step] = self.order[u] + 1
        self.step_lr[step] = lr

    def merge_ranks(self) -> None:
        """Data parallel, after training: a rank marked, measured and sketched only the rows it trained
        itself; gather those so every rank holds the whole record. In-run sketches are divided by the number
        of processes: a rank's loss divides by ``num_items_in_batch / num_processes`` (dapo) or by its own
        rows (grpo) and DDP then averages the ranks' gradients, so a rank's hooks see num_processes x each
        rollout's share of the step's gradient (the 1-process sketch is that share)."""
        mine = {u: (s, self.rows[u].get("fluency"), self.sketches.get(u)) for u, s in self.trained.items()}
        parts = self.gather((mine, self.step_lr))
        self.trained, self.sketches, self.order, self._step_rows = {}, {}, {}, {}  # re-marked in rank order below
        for part, step_lr in parts:
            self.step_lr.update(step_lr)
            for u, (s, flu, sk) in part.items():
                self.mark_trained(s, np.array([u]), self.step_lr[s])
                if flu is not None:
                    self.rows[u]["fluency"] = flu
                if sk is not None:
                    self.sketches[u] = sk / np.float32(len(parts))

    def columns(self, max_prompt: int) -> dict[str, np.ndarray]:
        """The rollout table as columns (``bt_bench.runs.schema``: exactly its columns, with its dtypes): prompts
        left-padded, completions right-padded (as trl pads them)."""
        N, Lc = len(self.rows), self.cfg.max_completion_length
        P = np.full((N, max_prompt), self.pad_id, schema.dtype("prompt_ids"))
        PM = np.zeros((N, max_prompt), schema.dtype("prompt_mask"))
        C = np.full((N, Lc), self.pad_id, schema.dtype("completion_ids"))
        CM = np.zeros((N, Lc), schema.dtype("completion_mask"))
        for i, row in enumerate(self.rows):
            p, c = row["prompt"], row["completion"]
            P[i, max_prompt - len(p):], PM[i, max_prompt - len(p):] = p, 1
            C[i, :len(c)], CM[i, :len(c)] = c, 1
        cols: dict[str, np.ndarray] = {"prompt_ids": P, "prompt_mask": PM, "completion_ids": C,
                                      "completion_mask": CM}
        per_step = ("trained_step", "train_order", "lr", "step_grad_norm")  # looked up per uid or step below
        for col in schema.COLUMNS:
            if col.name not in cols and col.name not in per_step:
                cols[col.name] = np.array([row[col.name] for row in self.rows], dtype=col.dtype)
        cols["trained_step"] = np.array([self.trained.get(int(u), -1) for u in cols["uid"]],
                                        schema.dtype("trained_step"))
        cols["train_order"] = np.array([self.order.get(int(u), -1) for u in cols["uid"]], schema.dtype("train_order"))
        cols["lr"] = np.array([self.step_lr.get(int(s), float("nan")) for s in cols["trained_step"]],
                              schema.dtype("lr"))
        cols["step_grad_norm"] = np.array([self.step_grad_norm.get(int(s), float("nan")) for s in cols["step"]],
                                          schema.dtype("step_grad_norm"))
        return cols
