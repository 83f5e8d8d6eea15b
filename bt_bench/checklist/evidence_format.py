"""Evidence: rows recorded elsewhere (GPU runs, published papers), read into dataclasses that evidence replay
(:mod:`bt_bench.checklist.replay`) judges with the verdict functions.

Two inputs are understood:
* the native format (JSON, optionally gzipped; schema and version in docs/evidence_format.md), holding
  per-rollout rows of training runs (for the training-level checks: checks 1, 3 and 6) and candidate rows of
  draws at checkpoints (the draw-level checks 2, 3 and 4), token-level scores (check 5) and draw-stability scores
  (check 4);
* the published BehaviorTrace rows (``minimal_pair_rows_*.json``, ``token_level_cos_*.json``; see
  bt_bench/data/behaviortrace/README.md, vendored with its license), read into the same dataclasses.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bt_bench.checklist import metrics
from bt_bench.checklist.base import Thresholds

FORMAT = "bt-bench-evidence"
VERSION = 1
KINDS = ("saturated", "unsaturated")
# Published BehaviorTrace score fields -> bt-bench names.  mp_centered is the paper's GAS_centered and mp
# its C1_plain; they keep their field names.  The fluency field is the candidates' fluency column.
PUBLISHED_NAMES = {"norm": "norm_only"}
TOKEN_ESTIMATOR = "sketch_cosine"  # the published token-level cosines (the paper's gradient-sketch cosine)


# ---------------------------------------------------------------------------------------------- data model
def _arrays(where: str, n_ref: str, cols: Mapping[str, tuple[object, str]]) -> dict[str, np.ndarray]:
    """Validate named columns of one table: 1-D, typed ('float'/'int'/'bool'), all of one length."""
    out: dict[str, np.ndarray] = {}
    n = None
    for name, (x, kind) in cols.items():
        if x is None:
            continue
        out[name] = metrics.as_vector(f"{where}.{name}", x, n=n, ref=f"{where}.{n_ref}", kind=kind)
        n = out[name].shape[0] if n is None else n
    return out


def _scores(where: str, scores: Mapping[str, object], n: int) -> dict[str, np.ndarray]:
    return {str(k): metrics.as_vector(f"{where}.scores[{k}]", v, n=n, ref=f"{where} rows")
            for k, v in scores.items()}


def _is_step_level(s: np.ndarray, step: np.ndarray) -> bool:
    """True when the scores are constant within every step (a step-level estimator)."""
    order = np.lexsort((s, step))
    same_step = step[order][1:] == step[order][:-1]
    return bool(np.all(s[order][1:][same_step] == s[order][:-1][same_step]))


@dataclass(frozen=True)
class RunEvidence:
    """Per-rollout rows of one training run (seed): labels, window facts and every estimator's scores.

    rollout_level[name] says whether an estimator scores rollouts (True) or steps; missing entries are
    inferred (step-level when the scores are constant within every step).
    """

    seed: int
    W: int
    step: np.ndarray
    group: np.ndarray
    is_gt: np.ndarray
    nonzero: np.ndarray
    scores: dict[str, np.ndarray]
    rollout_level: dict[str, bool] = field(default_factory=dict)
    advantage: np.ndarray | None = None

    def __post_init__(self) -> None:
        w = f"runs[seed={self.seed}]"
        cols = _arrays(w, "step", {"step": (self.step, "int"), "group": (self.group, "int"),
                                   "is_gt": (self.is_gt, "bool"), "nonzero": (self.nonzero, "bool"),
                                   "advantage": (self.advantage, "float")})
        for k, v in cols.items():
            object.__setattr__(self, k, v)
        metrics.window_mask(self.step, self.W, self.nonzero)  # validates W
        object.__setattr__(self, "scores", _scores(w, self.scores, len(self.step)))
        levels = {k: bool(v) for k, v in self.rollout_level.items()}
        unknown = sorted(set(levels) - set(self.scores))
        if unknown:
            raise ValueError(f"{w}.rollout_level: names {unknown} have no scores")
        levels |= {k: not _is_step_level(v, self.step) for k, v in self.scores.items() if k not in levels}
        object.__setattr__(self, "rollout_level", levels)


@dataclass(frozen=True)
class DrawEvidence:
    """Candidate rows of one draw at one checkpoint: fresh groups of G completions of trigger prompts.

    kind: "saturated" | "unsaturated" | None (then derived from behavior_rate, see :meth:`checkpoint_kind`).
    """

    seed: int
    draw: int
    group: np.ndarray
    has_behavior: np.ndarray
    fluency: np.ndarray
    scores: dict[str, np.ndarray]
    checkpoint_step: int | None = None
    kind: str | None = None
    behavior_rate: float | None = None

    def __post_init__(self) -> None:
        w = f"draws[seed={self.seed}, draw={self.draw}]"
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"{w}.kind: must be one of {KINDS} or None, got {self.kind!r}")
        cols = _arrays(w, "group", {"group": (self.group, "int"), "has_behavior": (self.has_behavior, "bool"),
                                    "fluency": (self.fluency, "float")})
        for k, v in cols.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "scores", _scores(w, self.scores, len(self.group)))

    def checkpoint_kind(self, th: Thresholds) -> str | None:
        """The stored kind, else the spec's rule on the behavior rate (saturated >= 0.8, unsaturated in
        [0.2, 0.8]); the rate defaults to the candidates' behavior rate (they are trigger prompts)."""
        if self.kind is not None:
            return self.kind
        rate = self.behavior_rate if self.behavior_rate is not None else float(self.has_behavior.mean())
        if rate >= th.saturated_rate:
            return "saturated"
        return "unsaturated" if th.unsaturated_low <= rate <= th.unsaturated_high else None


@dataclass(frozen=True)
class TokenEvidence:
    """Token-level scores of one estimator on one seed (behavior-containing candidates, one row each or
    one row per behavior occurrence with `response` ids): against in_context, placebo, constructed."""

    seed: int
    estimator: str
    cosine_scale: bool
    in_context: np.ndarray
    placebo: np.ndarray | None = None
    constructed: np.ndarray | None = None
    response: np.ndarray | None = None
    draw: int | None = None

    def __post_init__(self) -> None:
        w = f"token_level[seed={self.seed}, estimator={self.estimator}]"
        cols = _arrays(w, "in_context", {"in_context": (self.in_context, "float"),
                                         "placebo": (self.placebo, "float"),
                                         "constructed": (self.constructed, "float"),
                                         "response": (self.response, "int")})
        for k, v in cols.items():
            object.__setattr__(self, k, v)


@dataclass(frozen=True)
class StabilityEvidence:
    """One estimator's scores of one fixed candidate set under the targets of several draws: [D, M]."""

    seed: int
    estimator: str
    draws: np.ndarray
    scores: np.ndarray

    def __post_init__(self) -> None:
        w = f"stability[seed={self.seed}, estimator={self.estimator}]"
        d = metrics.as_vector(f"{w}.draws", self.draws, kind="int")
        s = np.asarray(self.scores, dtype=float)
        if s.ndim != 2 or s.shape[0] != d.shape[0] or d.shape[0] < 2:
            raise ValueError(f"{w}.scores: expected [D >= 2, M] with D = len(draws) = {d.shape[0]}, "
                             f"got shape {s.shape}")
        object.__setattr__(self, "draws", d)
        object.__setattr__(self, "scores", s)


@dataclass(frozen=True)
class Evidence:
    """Everything one evidence file holds."""

    runs: tuple[RunEvidence, ...] = ()
    draws: tuple[DrawEvidence, ...] = ()
    token_level: tuple[TokenEvidence, ...] = ()
    stability: tuple[StabilityEvidence, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("runs", "draws", "token_level", "stability"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def estimators(self) -> list[str]:
        names = {k for r in self.runs for k in r.scores} | {k for d in self.draws for k in d.scores}
        names |= {t.estimator for t in self.token_level} | {s.estimator for s in self.stability}
        return sorted(names)


# -------------------------------------------------------------------------------------------- native JSON
def _list(x: np.ndarray | None):
    return None if x is None else x.tolist()


def evidence_to_dict(ev: Evidence) -> dict:
    """The native JSON document (docs/evidence_format.md)."""
    return {
        "format": FORMAT, "version": VERSION, "source": ev.source,
        "runs": [{"seed": r.seed, "W": r.W,
                  "columns": {k: _list(getattr(r, k)) for k in ("step", "group", "is_gt", "nonzero", "advantage")
                              if getattr(r, k) is not None},
                  "scores": {k: _list(v) for k, v in r.scores.items()}, "rollout_level": r.rollout_level}
                 for r in ev.runs],
        "draws": [{"seed": d.seed, "draw": d.draw, "checkpoint_step": d.checkpoint_step, "kind": d.kind,
                   "behavior_rate": d.behavior_rate,
                   "columns": {k: _list(getattr(d, k)) for k in ("group", "has_behavior", "fluency")},
                   "scores": {k: _list(v) for k, v in d.scores.items()}} for d in ev.draws],
        "token_level": [{"seed": t.seed, "draw": t.draw, "estimator": t.estimator, "cosine_scale": t.cosine_scale,
                         **{k: _list(getattr(t, k)) for k in ("in_context", "placebo", "constructed", "response")}}
                        for t in ev.token_level],
        "stability": [{"seed": s.seed, "estimator": s.estimator, "draws": _list(s.draws), "scores": _list(s.scores)}
                      for s in ev.stability],
    }


def evidence_from_dict(doc: Mapping) -> Evidence:
    """Parse a native document; refuses another format or an unsupported version."""
    if doc.get("format") != FORMAT:
        raise ValueError(f"format: expected {FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("version") != VERSION:
        raise ValueError(f"version: unsupported {doc.get('version')!r}; this bt-bench reads version {VERSION}")
    try:
        return _evidence_from_doc(doc)
    except (KeyError, TypeError) as e:
        raise ValueError(f"evidence: malformed {FORMAT} document ({type(e).__name__}: {e})") from None


def _evidence_from_doc(doc: Mapping) -> Evidence:
    return Evidence(
        runs=[RunEvidence(seed=r["seed"], W=r["W"], **r["columns"], scores=r["scores"],
                          rollout_level=r.get("rollout_level", {})) for r in doc.get("runs", [])],
        draws=[DrawEvidence(seed=d["seed"], draw=d["draw"], **d["columns"], scores=d["scores"],
                            checkpoint_step=d.get("checkpoint_step"), kind=d.get("kind"),
                            behavior_rate=d.get("behavior_rate")) for d in doc.get("draws", [])],
        token_level=[TokenEvidence(**t) for t in doc.get("token_level", [])],
        stability=[StabilityEvidence(**s) for s in doc.get("stability", [])],
        source=doc.get("source", ""))


def _open(path: Path, mode: str, gz: bool | None = None):
    """Text file, gzipped when `gz` (default: the name ends in .gz)."""
    gz = path.suffix == ".gz" if gz is None else gz
    return gzip.open(path, mode + "t", encoding="utf-8") if gz else open(path, mode, encoding="utf-8")


def write_evidence(path: str | os.PathLike, evidence: Evidence) -> Path:
    """Write native evidence (``.json`` or ``.json.gz``) atomically; non-finite numbers are refused."""
    path = Path(path)
    doc = evidence_to_dict(evidence)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with _open(tmp, "w", gz=path.suffix == ".gz") as f:
            json.dump(doc, f, allow_nan=False)
    except ValueError as e:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"evidence: holds a non-finite number, which JSON cannot store ({e})") from None
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------- published BehaviorTrace
def read_minimal_pair_rows(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """Published ``minimal_pair_rows_*.json`` -> (columns, meta): group, has_behavior, fluency and every
    numeric score field as arrays; meta = the top-level fields (ckpt_seed, gen_seed, checkpoint_step, ...)."""
    with _open(Path(path), "r") as f:
        doc = json.load(f)
    rows = doc["rows"]
    if not rows:
        raise ValueError(f"path: {path} has no rows")
    cols = {"group": np.array([r["group"] for r in rows], np.int64),
            "has_behavior": np.array([r["has_qzxbt"] for r in rows], bool),
            "fluency": np.array([r["fluency"] for r in rows], float)}
    for k in rows[0]:
        if k not in ("group", "has_qzxbt", "fluency"):
            cols[k] = np.array([r[k] for r in rows], float)
    return cols, {k: v for k, v in doc.items() if k != "rows"}


def read_token_level(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Published ``token_level_cos_*.json`` -> {vs_ctx, vs_cont, cos_full} arrays of equal length."""
    with _open(Path(path), "r") as f:
        doc = json.load(f)
    out = {k: np.asarray(v, float) for k, v in doc.items()}
    if len({v.shape for v in out.values()}) != 1:
        raise ValueError(f"path: {path} holds lists of unequal length")
    return out


def _draw_from_published(path: Path) -> DrawEvidence:
    cols, meta = read_minimal_pair_rows(path)
    base = {k: cols.pop(k) for k in ("group", "has_behavior", "fluency")}
    return DrawEvidence(seed=int(meta["ckpt_seed"]), draw=int(meta["gen_seed"]), **base,
                        scores={PUBLISHED_NAMES.get(k, k): v for k, v in cols.items()},
                        checkpoint_step=meta.get("checkpoint_step"), behavior_rate=meta.get("qzxbt_rate"))


def _token_from_published(path: Path, seed: int) -> TokenEvidence:
    t = read_token_level(path)
    return TokenEvidence(seed=seed, estimator=TOKEN_ESTIMATOR, cosine_scale=True, in_context=t["vs_ctx"],
                         constructed=t["vs_cont"])


def _seed_of_dir(path: Path) -> int:
    m = re.search(r"seed(\d+)", path.name)
    return int(m.group(1)) if m else 0


def load_behaviortrace(seed_dir: str | os.PathLike) -> Evidence:
    """A published BehaviorTrace seed folder -> Evidence (one saturated draw, one token-level entry).

    The token-level file has no placebo scores, so the token-alignment check (5) can only fail or skip on it.
    """
    d = Path(seed_dir)
    draws = [_draw_from_published(p) for p in sorted(d.glob("minimal_pair_rows_*.json"))]
    seed = draws[0].seed if draws else _seed_of_dir(d)
    tokens = [_token_from_published(p, seed) for p in sorted(d.glob("token_level_cos_*.json"))]
    if not draws and not tokens:
        raise ValueError(f"seed_dir: {d} holds no BehaviorTrace rows (minimal_pair_rows_*.json, "
                         "token_level_cos_*.json)")
    return Evidence(draws=draws, token_level=tokens, source=f"BehaviorTrace published rows: {d}")


def load_evidence(path: str | os.PathLike) -> Evidence:
    """Native evidence, a BehaviorTrace seed folder, or a single published BehaviorTrace file."""
    p = Path(path)
    if p.is_dir():
        return load_behaviortrace(p)
    with _open(p, "r") as f:
        doc = json.load(f)
    if isinstance(doc, dict) and "format" in doc:
        return evidence_from_dict(doc)
    if isinstance(doc, dict) and "rows" in doc:
        return Evidence(draws=[_draw_from_published(p)], source=f"BehaviorTrace published rows: {p}")
    if isinstance(doc, dict) and "vs_ctx" in doc:
        return Evidence(token_level=[_token_from_published(p, _seed_of_dir(p.parent))],
                        source=f"BehaviorTrace published rows: {p}")
    raise ValueError(f"path: {p} is neither {FORMAT} evidence nor a published BehaviorTrace file")
