"""A placebo that looks like a target (issue 19 item 4), measured on the tiny fixture.

For an estimator that does not declare ``model``, the placebo targets (check 7's ``no_behavior``, check 5's
``placebo``) must be indistinguishable from the real ``in_context`` target by anything it can compute from the
target alone: its kind, k, checkpoints, whether rows or preconditioned vectors come with it, the row count if any is
visible, and statistics of every vector (norm, moments, extremes, sparsity, shape, the cosine between its
checkpoints, the cosine with its preconditioned twin). Each (seed, checkpoint or draw) gives a real target and its
placebos, taken exactly as ``score_estimator`` hands them to a probe declaring every capability but ``model`` and
``labels``. Classifiers: every single feature's AUC (two-sided: max(AUC, 1 - AUC)), and leave-one-unit-out logistic
regression and nearest centroid on all features. The bar is AUC <= 0.6.

Measured on tiny seeds 0-2 (42 real, 42 placebo vectors): every feature 0.50, logistic 0.50, centroid 0.50. A norm
match alone gave 0.91-0.96 (kurtosis alone 0.86-1.00: the real target's entries are heavy-tailed), hence the
rearrangement of ``targets.disguise``. Negative control, so the test can fail: the same features of the old
hand-over (the raw stored placebo, its rows handed over, check 5's placebo as kind ``placebo``) separate real from
placebo with AUC 0.99-1.00.

What is left (printed, not judged; docs/checklist.md, "Threat model"): the direction. The real target is the
behavior's gradient, a placebo is not; comparing a target with its preconditioned twin gives 0.54-0.66, and a
classifier that learns the direction from other targets of the fixture separates them perfectly. Process isolation
and fresh fixtures, not the interface, are what stop an estimator from learning it.
"""

from __future__ import annotations

import numpy as np
import pytest

from bt_bench.estimator import Capability, Checkpoint, Target
from bt_bench.estimator.scoring import score_estimator
from bt_bench.estimator.views import CandidateData
from bt_bench.fixture.targets import PLACEBO_KINDS

pytestmark = pytest.mark.slow
BAR = 0.6
# everything an estimator may declare except model (it gets the rows and can recompute anything) and labels
NON_MODEL = frozenset(c.value for c in Capability) - {Capability.MODEL.value, Capability.LABELS.value}


class Recorder:
    """A non-model probe: records the target it is handed, scores nothing of interest."""

    name, level, capabilities = "placebo_probe", "rollout", NON_MODEL

    def __init__(self) -> None:
        self.seen: list[Target] = []

    def score(self, candidates, target):
        self.seen.append(target)
        return np.arange(len(candidates), dtype=float)


def handed(target: Target, placebo: bool) -> Target:
    """``target`` as ``score_estimator`` hands it to a non-model estimator."""
    rec = Recorder()
    steps = sorted(target.vectors)
    data = CandidateData({"uid": np.arange(2), "step": np.zeros(2), "group": np.zeros(2), "advantage": np.ones(2)},
                         checkpoints=[Checkpoint(s, lr=1e-3, batch_size=1) for s in steps])
    score_estimator(rec, data, target, check_determinism=False, placebo=placebo)
    return rec.seen[0]


def _moments(v: np.ndarray) -> dict[str, float]:
    v = np.asarray(v, np.float64)
    n = float(np.linalg.norm(v))
    sd = float(v.std())
    z = (v - v.mean()) / sd if sd > 0 else np.zeros_like(v)
    mx = float(np.abs(v).max())
    return {"norm": n, "mean": float(v.mean()), "std": sd, "max": float(v.max()), "min": float(v.min()),
            "max_abs": mx, "max_abs_over_norm": mx / n if n else 0.0,
            "l1_over_l2": float(np.abs(v).sum()) / (n * np.sqrt(v.size)) if n else 0.0,
            "skew": float((z ** 3).mean()), "kurtosis": float((z ** 4).mean()),
            "frac_small": float(np.mean(np.abs(v) < 1e-3 * mx)) if mx else 1.0,
            "frac_zero": float(np.mean(v == 0)), "frac_positive": float(np.mean(v > 0))}


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / n) if n else 0.0


def features(t: Target, c: int) -> dict[str, float]:
    """What a non-model estimator can compute from target ``t`` at its checkpoint ``c``."""
    f = {"kind_in_context": float(t.kind == "in_context"), "kind_placebo": float(t.kind == "placebo"),
         "k": float(t.k), "n_checkpoints": float(len(t.vectors)), "is_final": float(c == t.final_step),
         "itemsize": float(t.at(c).dtype.itemsize), "has_definitions": float(t.definitions is not None),
         "has_preconditioned": float(t.preconditioned is not None), "has_draw": float(t.draw is not None)}
    d = t.definitions.get(c) if t.definitions is not None else None
    f["rows"] = float(len(d)) if d is not None else -1.0
    f["distinct_masked_ids"] = (float(np.unique(d.completion_ids[d.token_mask.astype(bool)]).size)
                                if d is not None and len(d) else -1.0)
    f["weight"] = float(getattr(d, "weight", 1.0)) if d is not None else -1.0
    f.update(_moments(t.at(c)))
    others = [s for s in t.vectors if s != c]
    f["cos_other_checkpoint"] = float(np.mean([_cos(t.at(c), t.at(s)) for s in others])) if others else 0.0
    f["norm_ratio_other_checkpoint"] = (float(np.mean([np.linalg.norm(t.at(s)) / np.linalg.norm(t.at(c))
                                                       for s in others])) if others and np.any(t.at(c)) else 0.0)
    if t.preconditioned is not None and c in t.preconditioned:
        p = t.preconditioned[c]
        f.update({f"pre_{k}": v for k, v in _moments(p).items()})
        f["cos_pre"] = _cos(t.at(c), p)
    return f


def _sig(x: np.ndarray, digits: int = 9) -> np.ndarray:
    """``x`` to ``digits`` significant digits: values equal up to float roundoff (a sum in another order) tie."""
    x = np.asarray(x, float)
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.where(x == 0, 1.0, np.abs(x)))))
    return np.round(x * scale) / scale


def auc(real: np.ndarray, placebo: np.ndarray) -> float:
    """P(score of a real sample > score of a placebo one), ties 1/2 (equal to 9 significant digits)."""
    real, placebo = _sig(real), _sig(placebo)
    diff = real[:, None] - placebo[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def two_sided(a: float) -> float:
    return max(a, 1.0 - a)


def _standardize(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu, sd = train.mean(0), train.std(0)
    keep = sd > 1e-12 * (np.abs(mu) + 1)
    return (train[:, keep] - mu[keep]) / sd[keep], (test[:, keep] - mu[keep]) / sd[keep]


def _logistic(X: np.ndarray, y: np.ndarray, lam: float = 1.0, iters: int = 50) -> np.ndarray:
    """L2-penalized logistic regression by Newton's method; returns [bias, weights]."""
    A = np.c_[np.ones(len(X)), X]
    w = np.zeros(A.shape[1])
    reg = lam * np.eye(A.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(A @ w, -30, 30)))
        g = A.T @ (p - y) + reg @ w
        H = (A * (p * (1 - p))[:, None]).T @ A + reg + 1e-9 * np.eye(A.shape[1])
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def loo_aucs(X: np.ndarray, y: np.ndarray, units: np.ndarray) -> dict[str, float]:
    """Leave-one-unit-out (a unit: a real target and its placebo) scores of logistic regression and nearest
    centroid on every feature; the AUC of the held-out scores for real (y = 1) vs placebo."""
    logit, centroid = np.zeros(len(y)), np.zeros(len(y))
    for u in np.unique(units):
        te = units == u
        tr, tst = _standardize(X[~te], X[te])
        if tr.shape[1] == 0:
            continue
        w = _logistic(tr, y[~te])
        logit[te] = np.c_[np.ones(te.sum()), tst] @ w
        mr, mp = tr[y[~te] == 1].mean(0), tr[y[~te] == 0].mean(0)
        centroid[te] = np.linalg.norm(tst - mp, axis=1) - np.linalg.norm(tst - mr, axis=1)
    # scores are in standardized units: below 1e-9 is roundoff (two equal centroids give 0 up to it), a tie
    logit, centroid = np.round(logit, 9), np.round(centroid, 9)
    return {"logistic": auc(logit[y == 1], logit[y == 0]), "centroid": auc(centroid[y == 1], centroid[y == 0])}


def separation(rows: list[dict], exclude: tuple[str, ...] = ()) -> dict:
    """{"features": {name: two-sided AUC}, "logistic", "centroid"} over ``rows`` ({"y", "unit", "f": features})."""
    names = sorted({k for r in rows for k in r["f"]} - set(exclude))
    X = np.array([[r["f"].get(k, 0.0) for k in names] for r in rows])
    y = np.array([r["y"] for r in rows], float)
    units = np.array([r["unit"] for r in rows])
    per = {k: two_sided(auc(X[y == 1, j], X[y == 0, j])) for j, k in enumerate(names)}
    return {"features": per, **loo_aucs(X, y, units), "n_real": int(y.sum()), "n_placebo": int((1 - y).sum())}


# ------------------------------------------------------------------------------------------- the tiny fixture
@pytest.fixture(scope="module")
def pairs(shared_cache):
    """[(comparison, unit, real Target, placebo Target, raw stored placebo Target)] over seeds 0-2: the training
    targets (both TracIn checkpoints) and every draw of every chosen checkpoint."""
    from bt_bench.estimator.handover import draw_candidates, training_target
    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import fixture_seeds
    from bt_bench.runs.config import DEFAULT_PROFILE, make_config

    runs, _ = fixture_seeds(make_config(DEFAULT_PROFILE), 3, shared_cache, progress=False)
    out = []
    for r in runs:
        fx = load_fixture(r, fixture_config(DEFAULT_PROFILE, 3), shared_cache)
        real = training_target(fx, "in_context")
        raw = fx.training_targets(("no_behavior",))["no_behavior"]
        old = Target("in_context", raw, final_step=real.final_step, definitions=_old_definitions(fx, "no_behavior"),
                     preconditioned=fx.training_preconditioned_targets(("no_behavior",))["no_behavior"] or None)
        out.append(("no_behavior", f"{fx.seed}/train", real, training_target(fx, "no_behavior"), old))
        for kind in ("unsaturated", "saturated"):
            if fx.chosen(kind) is None:
                continue
            for d in range(3):
                _, ts = draw_candidates(fx, kind, d)
                stored = fx.draw(kind, d)
                for p in PLACEBO_KINDS:
                    old = Target("placebo" if p == "placebo" else "in_context", stored.targets[p], draw=d,
                                 definitions=_definitions_of(stored.definitions[p]),
                                 preconditioned=(stored.preconditioned or {}).get(p))
                    out.append((p, f"{fx.seed}/{kind}/d{d}", ts["in_context"], ts[p], old))
    return out


def _definitions_of(defs: dict) -> dict:
    from bt_bench.estimator.objective import TargetDefinition

    return {int(c): TargetDefinition("token", **d) for c, d in defs.items()}


def _old_definitions(fx, kind: str) -> dict:
    return _definitions_of(fx.training_target_definitions((kind,))[kind])


def _rows(pairs, comparison: str | None, old: bool = False) -> list[dict]:
    rows = []
    for comp, unit, real, placebo, raw in pairs:
        if comparison is not None and comp != comparison:
            continue
        r_seen = real if old else handed(real, placebo=False)
        p_seen = raw if old else handed(placebo, placebo=True)
        for c in sorted(real.vectors):
            rows.append({"y": 1, "unit": f"{comp}/{unit}/{c}", "f": features(r_seen, c)})
            rows.append({"y": 0, "unit": f"{comp}/{unit}/{c}", "f": features(p_seen, c)})
    return rows


def _report(title: str, s: dict) -> str:
    top = sorted(s["features"].items(), key=lambda kv: -kv[1])[:6]
    return (f"{title}: {s['n_real']} real vs {s['n_placebo']} placebo; logistic {s['logistic']:.2f}, centroid "
            f"{s['centroid']:.2f}; top features " + ", ".join(f"{k} {v:.2f}" for k, v in top))


# Statistics that compare a target with itself at another checkpoint, or with its preconditioned twin: measured and
# printed, not part of the bar (the real target's direction is coherent, a placebo's is not; docs/checklist.md).
COHERENCE = ("cos_other_checkpoint", "cos_pre")


@pytest.mark.parametrize("comparison", [*PLACEBO_KINDS, None])
def test_placebo_cannot_be_told_from_the_real_target(pairs, comparison):
    rows = _rows(pairs, comparison)
    s = separation(rows, exclude=COHERENCE)
    print(_report(f"new {comparison or 'both'}", s))
    coherence = separation(rows)
    print("  with coherence: " + ", ".join(f"{k} {coherence['features'].get(k, 0.5):.2f}" for k in COHERENCE)
          + f"; logistic {coherence['logistic']:.2f}, centroid {coherence['centroid']:.2f}")
    bad = {k: v for k, v in s["features"].items() if v > BAR}
    assert not bad, (bad, _report("new", s))
    assert s["logistic"] <= BAR and s["centroid"] <= BAR, _report("new", s)
    exact = ("kind_in_context", "kind_placebo", "k", "n_checkpoints", "rows", "has_definitions", "norm",
             "has_preconditioned", "pre_norm", "itemsize", "weight")
    assert all(s["features"].get(k, 0.5) == 0.5 for k in exact), {k: s["features"].get(k) for k in exact}


@pytest.mark.parametrize("comparison", [*PLACEBO_KINDS, None])
def test_the_old_placebo_is_told_apart(pairs, comparison):
    """Negative control: the old hand-over (raw norm, rows handed over, check 5's placebo shown as ``placebo``)."""
    s = separation(_rows(pairs, comparison, old=True), exclude=COHERENCE)
    print(_report(f"old {comparison or 'both'}", s))
    assert max(s["features"].values()) >= 0.95 and max(s["logistic"], s["centroid"]) >= 0.9, _report("old", s)
