"""Derived fixture data: checkpoint sketches of the training rollouts, draws and targets, built once per run.

Data flows one way (architecture.md): this stage reads a published run, computes what the checks need, and
publishes it next to the run under ``<cache>/derived/<key>/`` with the store's atomic rename and lock. The checks
then only read (memory-mapped ``.npy``; nothing proportional to parameters x k is stored).

Checkpoint choice (checklist spec, "Checkpoint"): the **unsaturated** checkpoint is the earliest at which the
behavior rate of the candidates lies in [0.2, 0.8], the **saturated** one the earliest at >= 0.8, each only if
every draw there yields >= 100 within-group (behavior, non-behavior) pairs; otherwise the next checkpoint of that
kind. If none qualifies the fixture records why, and the checks that need it report an error, never a pass.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bt_bench import store
from bt_bench.draws import DrawConfig, DrawMaker

DERIVED_FORMAT = 2  # 2: the no_behavior target (check target_dependence); hashes verified on load
VISIBLE = ("uid", "step", "group", "gen_index", "prompt_ids", "prompt_mask", "completion_ids", "completion_mask",
           "advantage", "lr", "num_items_in_batch", "has_trigger")
TRAIN_LABELS = ("is_gt", "has_behavior", "reward", "reward_grammar", "reward_bonus", "reward_penalty")
# no_behavior: the placebo target of check 7 (target_dependence), see DrawMaker._no_behavior_target
TARGET_KINDS = ("sequence", "in_context", "constructed", "placebo", "no_behavior")


@dataclass(frozen=True)
class FixtureConfig:
    """What is derived from each run (part of the derived key)."""

    draws: int = field(default=3, metadata={"help": "independent generation seeds per chosen checkpoint"})
    tracin_checkpoints: int = field(default=2, metadata={"help": "checkpoints for TracInCP/GAS/TRAK sketches (W/2 and the end: each costs a sketch of every training rollout)"})
    draw: DrawConfig = field(default_factory=DrawConfig, metadata={"help": "candidate and target sampling"})

    def __post_init__(self):
        if self.draws < 1:
            raise ValueError(f"FixtureConfig.draws must be >= 1, got {self.draws}")
        if self.tracin_checkpoints < 1:
            raise ValueError(f"FixtureConfig.tracin_checkpoints must be >= 1, got {self.tracin_checkpoints}")

    def key(self, run_key: str) -> str:
        blob = json.dumps({"run": run_key, "cfg": dataclasses.asdict(self), "format": DERIVED_FORMAT},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]


def tracin_steps(run, n: int) -> list[int]:
    """``n`` saved checkpoints spread over the run from W/2 to the end. Checkpoint c holds the
    parameters *before* step c trains, so c = T (after the last step) is excluded from gradient use."""
    cfg = run.config
    saved = [c for c in run.checkpoints if 0 < c < cfg.steps]
    want = np.linspace(cfg.window / 2, cfg.steps - 1, n)
    out = sorted({min(saved, key=lambda c: abs(c - w)) for w in want})
    return out


def _train_batch(cols, idx):
    import torch

    keep_p = np.asarray(cols["prompt_mask"][idx]).sum(0) > 0  # trl pads each batch to its own max length
    return {"prompt_ids": torch.as_tensor(np.asarray(cols["prompt_ids"][idx])[:, keep_p]).long(),
            "prompt_mask": torch.as_tensor(np.asarray(cols["prompt_mask"][idx])[:, keep_p]).long(),
            "completion_ids": torch.as_tensor(np.asarray(cols["completion_ids"][idx])).long(),
            "completion_mask": torch.as_tensor(np.asarray(cols["completion_mask"][idx])).long(),
            "advantages": torch.as_tensor(np.asarray(cols["advantage"][idx])).float(),
            "num_items_in_batch": torch.as_tensor(np.asarray(cols["num_items_in_batch"][idx])).float(),
            }


def checkpoint_sketches(run, step: int, batch: int = 256) -> np.ndarray:
    """[N, k] sketches of every training rollout's loss term at checkpoint ``step`` (TracInCP inputs), with the
    rollout's recorded advantage and its step's normalizer. Zero-advantage rollouts are exactly 0 (skipped)."""
    from bt_bench.sketch import Sketcher

    cols, cfg = run.columns, run.config
    sk = Sketcher(run.load_model(step), cfg.sketch_spec())
    N = len(cols["uid"])
    out = np.zeros((N, sk.dim), np.float32)
    nz = np.flatnonzero(np.asarray(cols["advantage"]) != 0)
    for s in range(0, len(nz), batch):
        idx = nz[s:s + batch]
        b = _train_batch(cols, idx)
        b["loss_type"], b["temperature"] = cfg.loss_type, cfg.temperature
        out[idx] = sk.sketch(b)
    return out


def build_derived(run, fcfg: FixtureConfig, root=None, progress: bool = False) -> Path:
    """Compute and publish the derived data of ``run`` (idempotent; concurrent callers build it once)."""
    from filelock import FileLock

    from bt_bench.runtime import set_determinism

    root = store.cache_root(root)
    key = fcfg.key(run.key)
    final = root / "derived" / key
    if (final / store.MANIFEST).exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if (final / store.MANIFEST).exists():
            return final
        for d in final.parent.glob(f".tmp-{key}-*"):
            shutil.rmtree(d, ignore_errors=True)
        set_determinism(run.config.seed)
        tmp = final.parent / f".tmp-{key}-{os.getpid()}"
        tmp.mkdir()
        manifest = _derive(run, fcfg, tmp, progress)
        manifest.update(format=DERIVED_FORMAT, run=run.key, key=key, config=dataclasses.asdict(fcfg),
                        created=store.now())
        manifest["hashes"] = {str(p.relative_to(tmp)): store.sha256_file(p) for p in sorted(tmp.rglob("*.npy"))}
        store.write_json(tmp / store.MANIFEST, manifest)
        store.publish(tmp, final)
    return final


def _save(folder: Path, arrays: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, arr in arrays.items():
        np.save(folder / f"{name}.npy", np.ascontiguousarray(arr), allow_pickle=False)


def _derive(run, fcfg: FixtureConfig, out: Path, progress: bool) -> dict:
    maker = DrawMaker(run, fcfg.draw)
    steps = tracin_steps(run, fcfg.tracin_checkpoints)
    it = steps
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(steps, desc=f"checkpoint sketches seed {run.config.seed}", leave=False)
    for c in it:  # training rollouts at each TracIn checkpoint, and the training-level targets there (draw 0)
        _save(out / "train", {f"ckpt_{c}": checkpoint_sketches(run, c)})
        t = maker.targets(c, draw=0)
        _save(out / "train", {f"target_{kind}_{c}": t[kind] for kind in TARGET_KINDS})
    manifest: dict = {"tracin_steps": steps, "chosen": {}, "probe": [], "unsupported": {}}
    cands = [c for c in run.checkpoints if c <= run.config.steps]
    lo, hi = fcfg.draw.unsaturated
    probed: dict[int, dict] = {}  # draw 0 of each probed checkpoint, shared by both searches
    for kind, ok in (("unsaturated", lambda r: lo <= r <= hi), ("saturated", lambda r: r >= fcfg.draw.saturated)):
        chosen = None
        for c in cands:
            if c not in probed:
                probed[c] = maker.candidates(c, 0)
                rate, pairs = maker.rate_and_pairs(probed[c])
                manifest["probe"].append({"step": c, "rate": rate, "pairs": pairs})
            rows = probed[c]
            rate, pairs = maker.rate_and_pairs(rows)
            if not ok(rate) or pairs < fcfg.draw.min_pairs:
                continue
            draws = [rows] + [maker.candidates(c, d) for d in range(1, fcfg.draws)]
            per = [maker.rate_and_pairs(r) for r in draws]
            if all(p >= fcfg.draw.min_pairs for _, p in per):
                chosen = (c, draws, per)
                break
        if chosen is None:
            manifest["unsupported"][kind] = (f"no checkpoint with {kind} behavior rate where every one of "
                                             f"{fcfg.draws} draws yields >= {fcfg.draw.min_pairs} pairs; probed "
                                             + ", ".join(f"{p['step']}:{p['rate']:.2f}/{p['pairs']}"
                                                         for p in manifest["probe"][-12:]))
            continue
        c, draws, per = chosen
        manifest["chosen"][kind] = {"step": c, "rates": [r for r, _ in per], "pairs": [p for _, p in per]}
        for d, rows in enumerate(draws):
            folder = out / "draws" / kind / f"d{d}"
            pos = maker_positions(maker, rows)
            sk = maker.sketch_rows(c, rows)
            _save(folder, {**rows, "sketch": sk, "token_sketch": maker.sketch_rows(c, rows, pos),
                           "fluency": maker.fluency(c, rows), "grad_norm": np.linalg.norm(sk, axis=1)})
            t = maker.targets(c, d)
            _save(folder, {f"target_{kind_}": t[kind_] for kind_ in TARGET_KINDS})
            manifest["chosen"][kind].setdefault("target_behavior_samples", []).append(int(t["n_behavior_samples"]))
    return manifest


def maker_positions(maker: DrawMaker, rows: dict) -> np.ndarray:
    from bt_bench.draws import behavior_positions

    return behavior_positions(rows["completion_ids"], rows["completion_mask"], maker.behavior)


# ---------------------------------------------------------------- reading: what the checks get


class Fixture:
    """One planted run plus its derived data, as the checks read them."""

    def __init__(self, run, folder: Path, verify: bool = True):
        self.run, self.folder = run, Path(folder)
        self.manifest = json.loads((self.folder / store.MANIFEST).read_text())
        self.seed = run.config.seed
        if verify:
            self.verify()

    def verify(self) -> None:
        """Refuse derived data that is not exactly what was published for this run: the run key, the format,
        and the sha256 of every stored array (targets, sketches, draw labels), like the run store does."""
        m, where = self.manifest, self.folder
        hint = f"delete {where} (or pass --bt-rebuild) to derive it again"
        if m.get("format") != DERIVED_FORMAT or m.get("run") != self.run.key:
            raise store.IntegrityError(f"derived data {where} is for run {m.get('run')!r} format "
                                       f"{m.get('format')!r}, not run {self.run.key!r} format {DERIVED_FORMAT}; "
                                       + hint)
        files = {str(p.relative_to(where)) for p in where.rglob("*.npy")}
        hashes = m.get("hashes", {})
        if files != set(hashes):
            extra, missing = sorted(files - set(hashes)), sorted(set(hashes) - files)
            raise store.IntegrityError(f"derived data {where}: unlisted files {extra[:3]}, missing files "
                                       f"{missing[:3]}; " + hint)
        for rel, h in hashes.items():
            if store.sha256_file(where / rel) != h:
                raise store.IntegrityError(f"derived data {where}: {rel} does not match its sha256; " + hint)

    def _load(self, rel: str) -> np.ndarray:
        return np.load(self.folder / rel, mmap_mode="r", allow_pickle=False)

    def _checkpoint(self, step: int):
        from bt_bench.estimator import Checkpoint

        cols = self.run.columns
        i = int(np.searchsorted(np.asarray(cols["step"]), min(step, self.run.config.steps - 1)))
        return Checkpoint(step=step, lr=float(cols["lr"][i]), batch_size=float(cols["num_items_in_batch"][i]))

    # training rollouts (checks gradient_norm_baseline, headroom, advantage_baseline)
    def training(self):
        from bt_bench.estimator import CandidateData

        cols = self.run.columns
        rows = {k: np.asarray(cols[k]) for k in VISIBLE + TRAIN_LABELS}
        steps = self.manifest["tracin_steps"]
        sk: dict = {"checkpoint": {c: self._load(f"train/ckpt_{c}.npy") for c in steps}}
        in_run_path = self.run.path / "sketches" / "in_run.npy"
        if in_run_path.exists():
            in_run = np.load(in_run_path, mmap_mode="r", allow_pickle=False)
            sk["in_run"] = in_run
            step = np.asarray(cols["step"])
            starts = np.flatnonzero(np.r_[True, step[1:] != step[:-1]])
            summed = np.add.reduceat(np.asarray(in_run), starts, axis=0)
            sk["step"] = {int(step[s]): summed[i] for i, s in enumerate(starts)}
            sk["grad_norm"] = np.linalg.norm(np.asarray(in_run), axis=1)
        if "fluency" in cols:  # mean token log-prob under the parameters of the rollout's own step (recorded in-run)
            sk["fluency"] = np.asarray(cols["fluency"])
        gn = np.asarray(cols["step_grad_norm"])
        sk["step_grad_norm"] = {int(t): float(gn[np.searchsorted(np.asarray(cols["step"]), t)])
                                for t in np.unique(cols["step"])}
        return CandidateData(rows, sk, checkpoints=[self._checkpoint(c) for c in steps], source="training")

    def training_target(self, kind: str = "in_context"):
        from bt_bench.estimator import Target

        steps = self.manifest["tracin_steps"]
        return Target(_shown_kind(kind), {c: np.array(self._load(f"train/target_{kind}_{c}.npy")) for c in steps},
                      final_step=max(steps))

    # draws (checks fluency_confound, headroom (unsaturated AUC), seed_draw_variance, trigger_token_alignment)
    def chosen(self, kind: str) -> int | None:
        c = self.manifest["chosen"].get(kind)
        return None if c is None else int(c["step"])

    def unsupported(self, kind: str) -> str | None:
        return self.manifest["unsupported"].get(kind)

    def draw_rows(self, kind: str, d: int) -> dict[str, np.ndarray]:
        """The label-side arrays of draw ``d`` (for the verdict functions, never for estimators)."""
        f = f"draws/{kind}/d{d}/"
        return {k: np.asarray(self._load(f + f"{k}.npy")) for k in ("has_behavior", "group", "fluency", "uid")}

    def draw(self, kind: str, d: int):
        from bt_bench.estimator import CandidateData, Target

        c = self.chosen(kind)
        if c is None:
            raise LookupError(f"seed {self.seed}: no {kind} checkpoint: {self.unsupported(kind)}")
        f = f"draws/{kind}/d{d}/"
        rows = {k: np.asarray(self._load(f + f"{k}.npy")) for k in
                ("uid", "step", "group", "gen_index", "prompt_ids", "prompt_mask", "completion_ids",
                 "completion_mask", "advantage", "has_trigger", "has_behavior", "reward")}
        sk, tok = self._load(f + "sketch.npy"), self._load(f + "token_sketch.npy")
        sketches = {"checkpoint": {c: sk}, "in_run": sk, "token_checkpoint": {c: tok}, "token_in_run": tok,
                    "fluency": self._load(f + "fluency.npy"), "grad_norm": self._load(f + "grad_norm.npy")}
        data = CandidateData(rows, sketches, checkpoints=[self._checkpoint(c)], source="draw")
        targets = {k: Target(_shown_kind(k), {c: np.array(self._load(f + f"target_{k}.npy"))}, draw=d)
                   for k in TARGET_KINDS}
        return data, targets


def _shown_kind(kind: str) -> str:
    """The kind an estimator is told. The placebo of target_dependence is handed over as an ``in_context`` target,
    indistinguishable from the real one, so an estimator cannot pass that check by reading ``target.kind``."""
    return "in_context" if kind == "no_behavior" else kind


def fixture_config(profile: str, draws: int) -> FixtureConfig:
    """The derived-data settings of a profile. ``smoke`` exercises code paths only: its run does not plant, so
    its draw thresholds are relaxed until every check has data (its verdicts mean nothing)."""
    if profile == "smoke":
        return FixtureConfig(draws=draws, tracin_checkpoints=2, draw=DrawConfig(
            candidate_prompts=16, target_prompts=8, min_pairs=5, saturated=0.05, unsaturated=(0.01, 0.05)))
    return FixtureConfig(draws=draws)


def load_fixture(run, fcfg: FixtureConfig = FixtureConfig(), root=None, progress: bool = False) -> Fixture:
    return Fixture(run, build_derived(run, fcfg, root, progress))
