"""Built-in estimators against hand-computed answers on a 3-rollout x 2-checkpoint synthetic case (issue 4).

The case (k = 2). Checkpoints: c=0 (lr 0.1, batch 10) and c=2 (lr 0.05, batch 5). Rollout r2 has advantage 0,
hence an exactly zero gradient everywhere.
    checkpoint sketches   c0: r0 (2,0)  r1 (0,3)  r2 (0,0)      c2: r0 (0,1)  r1 (1,1)  r2 (0,0)
    in-run sketches       r0 (2,0) [step 0]   r1 (1,2) [step 1]   r2 (0,0) [step 2]
    target                t^0 = (1,0)   t^2 = (0,1) = final
Every expected number below is worked out in the comment next to it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from bt_bench.estimator import Capability, Checkpoint, ConstantScoreError, MissingInputError, Target
from bt_bench.estimator.contract import is_cosine_scale
from bt_bench.estimator.registry import get_estimator, list_estimators
from bt_bench.estimator.scoring import fit_estimator, score_estimator
from bt_bench.estimator.views import CandidateData
from estimators.controls import AdvantageOnly, Fluency, NormOnly, NormOnlyStep, Oracle, RandomEstimator
from estimators.gas import GAS, GASFixedTarget
from estimators.tracin import TracInAdam, TracInCP
from estimators.trak import TRAK

CKPTS = (Checkpoint(0, lr=0.1, batch_size=10), Checkpoint(2, lr=0.05, batch_size=5))
SKETCHES = {
    "checkpoint": {0: np.array([[2, 0], [0, 3], [0, 0]], np.float32),
                   2: np.array([[0, 1], [1, 1], [0, 0]], np.float32)},
    "in_run": np.array([[2, 0], [1, 2], [0, 0]], np.float32),
    "preconditioned": {0: np.array([[1, 1], [0, 2], [0, 0]], np.float32),
                       2: np.array([[0, 3], [1, 1], [0, 0]], np.float32)},
    "token_checkpoint": {0: np.array([[0, 1], [5, 0], [0, 0]], np.float32),
                         2: np.array([[0, 1], [0, 2], [0, 0]], np.float32)},
    "token_in_run": np.array([[0, 4], [3, 0], [0, 0]], np.float32),
    "fluency": np.array([-0.5, -2.0, -1.0], np.float32),
    "grad_norm": np.array([2.2, 3.1, 0.0], np.float32),
    "step_grad_norm": {0: 4.0, 1: 1.5, 2: 0.0},
}
TARGET = Target("sequence", {0: np.array([1.0, 0.0]), 2: np.array([0.0, 1.0])},
                preconditioned={0: np.array([0.0, 1.0]), 2: np.array([0.0, 1.0])})


def rows(n: int = 3, **over) -> dict[str, np.ndarray]:
    base = {"uid": np.arange(n), "step": np.arange(n), "group": np.zeros(n, np.int64),
            "advantage": np.array([1.0, 0.5, 0.0][:n] + [0.0] * max(0, n - 3), np.float32),
            "is_gt": np.array([True, False, False][:n] + [False] * max(0, n - 3)),
            "has_behavior": np.array([False, True, False][:n] + [False] * max(0, n - 3))}
    return {**base, **over}


def data(sketches=None, source="training", **over) -> CandidateData:
    return CandidateData(rows(**over), SKETCHES if sketches is None else sketches, checkpoints=CKPTS,
                         source=source)


def run(est, d=None, target=TARGET):
    return score_estimator(est, data() if d is None else d, target)


# ------------------------------------------------------------------------------------- targeted estimators
def test_tracincp_hand_computed():
    # r0: 0.1*<(1,0),(2,0)> + 0.05*<(0,1),(0,1)> = 0.2 + 0.05;  r1: 0.1*0 + 0.05*1;  r2: 0
    np.testing.assert_allclose(run(TracInCP()), [0.25, 0.05, 0.0])


def test_gas_hand_computed():
    # weights eta/b = 0.1/10 = 0.01 and 0.05/5 = 0.01.  r0: 0.01*cos 0 + 0.01*cos 0 = 0.02
    # r1: 0.01*cos((1,0),(0,3)) + 0.01*cos((0,1),(1,1)) = 0 + 0.01/sqrt(2);  r2: zero gradient -> 0
    np.testing.assert_allclose(run(GAS()), [0.02, 0.01 / math.sqrt(2), 0.0])


def test_gas_fixed_target_hand_computed():
    # final target (0,1) against in-run sketches: cos((2,0)) = 0, cos((1,2)) = 2/sqrt(5), zero -> 0
    np.testing.assert_allclose(run(GASFixedTarget()), [0.0, 2 / math.sqrt(5), 0.0])


def test_gas_and_fixed_target_rank_differently():
    """The case separates them: r0 pushed the target as it was at c0; the final target only sees r1."""
    gas, fixed = run(GAS()), run(GASFixedTarget())
    assert list(np.argsort(-gas)) == [0, 1, 2]
    assert list(np.argsort(-fixed, kind="stable")) == [1, 0, 2]


def test_trak_hand_computed_absolute_damping():
    # lam = 1.  c0: Phi^T Phi + I = diag(5, 10); u = (0.2, 0) -> scores (0.4, 0, 0)
    # c2: Phi^T Phi + I = [[2,1],[1,3]], inverse [[3,-1],[-1,2]]/5; u = (-1, 2)/5 -> (0.4, 0.2, 0)
    # mean over the two checkpoints: (0.4, 0.1, 0)
    np.testing.assert_allclose(run(TRAK(damping=1.0, relative_damping=False)), [0.4, 0.1, 0.0], atol=1e-12)


def test_trak_hand_computed_relative_damping():
    # c0: lam = 0.01 * (4 + 9) / 2 = 0.065 -> r0 = 2 / 4.065
    # c2: lam = 0.01 * (1 + 2) / 2 = 0.015; A = [[1.015,1],[1,2.015]], det = 1.015*2.015 - 1
    #     A^-1 (0,1) = (-1, 1.015)/det -> r0 = 1.015/det, r1 = (1.015 - 1)/det
    det = 1.015 * 2.015 - 1
    want = [(2 / 4.065 + 1.015 / det) / 2, (0.015 / det) / 2, 0.0]
    np.testing.assert_allclose(run(TRAK()), want, rtol=1e-9)


def test_trak_fit_uses_the_training_rollouts():
    est = TRAK(damping=1.0, relative_damping=False)
    fit_estimator(est, data())  # fitting on the candidates themselves changes nothing
    np.testing.assert_allclose(run(est), [0.4, 0.1, 0.0], atol=1e-12)
    # fit on a run with one more rollout (3,0) at c0: Phi^T Phi + I = diag(14, 10), so r0 at c0 = 2/14
    bigger = {**SKETCHES, "checkpoint": {c: np.vstack([v, [[3, 0]] if c == 0 else [[0, 0]]])
                                         for c, v in SKETCHES["checkpoint"].items()}}
    fit_estimator(est, CandidateData(rows(4), {"checkpoint": bigger["checkpoint"]}, checkpoints=CKPTS))
    np.testing.assert_allclose(run(est), [(2 / 14 + 0.4) / 2, 0.1, 0.0], atol=1e-12)
    only_c0 = CandidateData(rows(), {"checkpoint": {0: SKETCHES["checkpoint"][0]}}, checkpoints=CKPTS[:1])
    fit_estimator(est, only_c0)
    with pytest.raises(MissingInputError, match="fitted at checkpoints \\[0\\], not at \\[2\\]"):
        run(est)


@pytest.mark.parametrize("m, k", [(6, 10), (30, 4)])  # fewer non-zero rows than k (Woodbury form), more
def test_trak_matches_a_direct_solve(m, k):
    rng = np.random.default_rng(m)
    phi = rng.normal(size=(m, k))
    phi[::3] = 0  # zero gradients
    d = CandidateData(rows(m), {"checkpoint": {0: phi}}, checkpoints=CKPTS[:1])
    t = rng.normal(size=k)
    lam = 0.01 * np.sum(phi**2) / k
    want = phi @ np.linalg.solve(phi.T @ phi + lam * np.eye(k), t)
    np.testing.assert_allclose(score_estimator(TRAK(), d, Target("sequence", {0: t})), want, rtol=1e-9)


def test_tracin_adam_hand_computed():
    # preconditioned sketches  c0: r0 (1,1) r1 (0,2)   c2: r0 (0,3) r1 (1,1);  weights eta_c = 0.1, 0.05
    # LESS (plain target (1,0) at c0, (0,1) at c2): r0 = 0.1/sqrt(2) + 0.05;  r1 = 0 + 0.05/sqrt(2)
    np.testing.assert_allclose(run(TracInAdam()), [0.1 / math.sqrt(2) + 0.05, 0.05 / math.sqrt(2), 0])
    # symmetric (preconditioned target (0,1) at both): r0 = 0.1/sqrt(2) + 0.05;  r1 = 0.1 + 0.05/sqrt(2)
    np.testing.assert_allclose(run(TracInAdam(precondition_target=True)),
                               [0.1 / math.sqrt(2) + 0.05, 0.1 + 0.05 / math.sqrt(2), 0])


def test_tracin_adam_reads_the_plain_target():
    """LESS scores against the target's plain gradient (tests/test_less.py): a target without preconditioned
    vectors suffices; only the symmetric form needs them."""
    plain = Target("sequence", TARGET.vectors)
    np.testing.assert_allclose(run(TracInAdam(), target=plain), run(TracInAdam()))
    with pytest.raises(MissingInputError, match="tracin_adam.*preconditioned"):
        run(TracInAdam(precondition_target=True), target=plain)


# ----------------------------------------------------------------------------------------------- controls
def test_controls_hand_computed():
    np.testing.assert_allclose(run(AdvantageOnly()), [1.0, 0.5, 0.0])
    np.testing.assert_allclose(run(NormOnly()), [2.2, 3.1, 0.0], rtol=1e-6)
    np.testing.assert_allclose(run(NormOnlyStep()), [4.0, 1.5, 0.0])  # rollouts at steps 0, 1, 2
    np.testing.assert_allclose(run(Fluency()), [-0.5, -2.0, -1.0])


def test_norm_only_step_shares_the_step_score():
    d = data(step=np.array([0, 0, 1]))
    np.testing.assert_allclose(run(NormOnlyStep(), d), [4.0, 4.0, 1.5])  # passes the step-level check
    assert NormOnlyStep.level == "step"


def test_random_is_seeded_uniform_and_set_dependent():
    a, b = run(RandomEstimator(0)), run(RandomEstimator(1))
    assert np.all((a >= 0) & (a < 1)) and not np.array_equal(a, b)
    np.testing.assert_array_equal(a, run(RandomEstimator(0)))
    other = run(RandomEstimator(0), data(uid=np.array([10, 11, 12])))
    assert not np.array_equal(a, other)


def test_oracle_reads_gt_for_training_and_behavior_for_draws():
    np.testing.assert_array_equal(run(Oracle()), [1.0, 0.0, 0.0])  # is_gt
    np.testing.assert_array_equal(run(Oracle(), data(source="draw")), [0.0, 1.0, 0.0])  # has_behavior
    assert Oracle.test_only and Capability.LABELS in Oracle.capabilities


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    pos, neg = scores[y], scores[~y]
    return float(np.mean((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])))


@pytest.mark.parametrize("source, key", [("training", "is_gt"), ("draw", "has_behavior")])
def test_oracle_is_uninformative_for_a_placebo_target(source, key):
    """Checklist "Controls": the oracle is informative for a real target and not for a placebo one. The
    placebo target looks the same (same kind), only ``placebo=True`` tells the harness which is which."""
    n = 400
    y = np.random.default_rng(3).random(n) < 0.3
    d = CandidateData({"uid": np.arange(n), "step": np.arange(n) // 8, "group": np.arange(n) // 8,
                       "advantage": np.ones(n), "is_gt": y, "has_behavior": y}, source=source)
    target = Target("in_context", {0: np.ones(2)})
    real = score_estimator(Oracle(), d, target)
    placebo = score_estimator(Oracle(), d, target, placebo=True)
    assert _auc(real, y) == 1.0
    assert not np.array_equal(placebo, real) and np.unique(placebo).size == 2  # never constant
    assert abs(_auc(placebo, y) - 0.5) < 0.1, _auc(placebo, y)
    np.testing.assert_array_equal(placebo, y[np.random.default_rng(12345).permutation(n)])
    np.testing.assert_array_equal(score_estimator(Oracle(), d, target, placebo=True), placebo)  # seeded


# -------------------------------------------------------------------------- every built-in, by registry
BUILTINS = sorted(i.name for i in list_estimators() if i.distribution == "bt-bench" and not i.opt_in)
NO_GRADIENT = ("random", "fluency", "oracle")  # read neither the gradient nor the advantage
# the retrieval controls read the target's rows and the model, which these synthetic views lack: tests/test_retrieval.py
SYNTHETIC = [n for n in BUILTINS if n not in ("bm25", "repsim", "bm25_adv", "repsim_adv")]


def test_all_builtins_registered():
    assert BUILTINS == sorted(["random", "norm_only", "norm_only_step", "fluency", "advantage_only", "oracle",
                               "tracincp", "gas", "gas_fixed_target", "trak", "tracin_adam", "local_buffer", "bm25",
                               "repsim", "bm25_adv", "repsim_adv"])


@pytest.mark.parametrize("name", SYNTHETIC)
def test_zero_gradient_rollouts_score_exactly_zero(name):
    """~70% of rollouts have advantage 0, hence an exactly zero gradient: a defined score, never NaN."""
    est = get_estimator(name)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        scores = run(est)
    assert np.all(np.isfinite(scores))
    if name not in NO_GRADIENT:  # these do not look at the gradient or the advantage
        assert scores[2] == 0.0, f"{name} gave the zero-gradient rollout {scores[2]!r}"


@pytest.mark.parametrize("name", SYNTHETIC)
def test_all_zero_gradients_give_a_defined_error_not_nan(name):
    """If every gradient is zero a gradient estimator returns all zeros: a named ConstantScoreError."""
    est = get_estimator(name)
    zero = {k: ({c: np.zeros_like(v) for c, v in s.items()} if isinstance(s, dict) and k != "step_grad_norm"
                else np.zeros_like(s) if k not in ("fluency", "step_grad_norm") else s)
            for k, s in SKETCHES.items()}
    zero["step_grad_norm"] = {0: 0.0, 1: 0.0, 2: 0.0}
    d = data(zero, advantage=np.zeros(3, np.float32))
    if name in NO_GRADIENT:
        assert np.all(np.isfinite(run(est, d)))
    else:
        with pytest.raises(ConstantScoreError, match=name):
            run(est, d)


TOKEN_LEVEL = [n for n in BUILTINS if Capability.TOKEN_SKETCHES in get_estimator(n).capabilities]


@pytest.mark.parametrize("name", TOKEN_LEVEL)
def test_token_restricted_view_scores_the_token_sketches(name):
    """Scoring the token-restricted view equals scoring data whose full sketches are the token ones."""
    est = get_estimator(name)
    swapped = {"checkpoint": SKETCHES["token_checkpoint"], "in_run": SKETCHES["token_in_run"]}
    np.testing.assert_allclose(run(est, data().token_restricted()), run(est, data(swapped)))
    assert not np.allclose(run(est, data().token_restricted()), run(est))


@pytest.mark.parametrize("name", BUILTINS)
def test_docstring_states_formula(name):
    doc = type(get_estimator(name)).__doc__ or ""
    assert "score_i" in doc, f"{name}: the docstring must give the formula"


def test_only_plain_cosines_claim_cosine_scale():
    """Checklist item 5's cosine bar applies to plain cosines; weighted sums of cosines are not."""
    assert [n for n in BUILTINS if is_cosine_scale(get_estimator(n))] == ["gas_fixed_target"]
