"""local_buffer (LDA-ORL's local-buffer baseline) against hand-computed scores (issue 12 item 4).

Main case (k = 2): rollouts at steps 0, 3, 5, 7, 9; target checkpoints 0, 5, 10.
    targets    t^0 = (1,0)   t^5 = (0,2)   t^10 = (3,3)
    in-run     r0 (2,1) s0   r1 (1,-1) s3   r2 (4,1) s5   r3 (0,0) s7   r4 (2,3) s9
Rule: the last checkpoint at or before the step, so r0, r1 -> t^0; r2, r3, r4 -> t^5; t^10 is never used.
r1 and r4 tell it apart from "nearest checkpoint" (3 is nearer 5, 9 nearer 10), r2 from a cosine.
"""

from __future__ import annotations

import numpy as np
import pytest

from bt_bench.estimator import Checkpoint, EstimatorError, Target
from bt_bench.estimator.registry import get_estimator
from bt_bench.estimator.scoring import score_estimator
from bt_bench.estimator.views import CandidateData
from estimators.local_buffer import LocalBuffer


def _rows(steps: list[int]) -> dict[str, np.ndarray]:
    n = len(steps)
    return {"uid": np.arange(n), "step": np.array(steps, np.int64), "group": np.zeros(n, np.int64),
            "advantage": np.ones(n, np.float32)}


def _ckpts(*steps: int) -> list[Checkpoint]:
    return [Checkpoint(s, lr=0.1, batch_size=4) for s in steps]


def _score(steps, in_run, vectors, source="training", ckpts=None, token_in_run=None):
    sketches = {"in_run": np.array(in_run, np.float32)}
    if token_in_run is not None:
        sketches["token_in_run"] = np.array(token_in_run, np.float32)
    ckpts = _ckpts(*vectors) if ckpts is None else ckpts
    data = CandidateData(_rows(steps), sketches, checkpoints=ckpts, source=source)
    target = Target("sequence", {c: np.array(v, float) for c, v in vectors.items()})
    return data, target


MAIN = {"steps": [0, 3, 5, 7, 9], "in_run": [[2, 1], [1, -1], [4, 1], [0, 0], [2, 3]],
        "vectors": {0: [1, 0], 5: [0, 2], 10: [3, 3]}}


def test_hand_computed_own_round():
    # r0: <(1,0),(2,1)> = 2   r1: <(1,0),(1,-1)> = 1   r2: <(0,2),(4,1)> = 2   r3: zero gradient -> 0
    # r4: <(0,2),(2,3)> = 6   (nearest-checkpoint would give r1 -2 and r4 15; a cosine would give r2 1/sqrt(17))
    data, target = _score(**MAIN)
    np.testing.assert_array_equal(score_estimator(LocalBuffer(), data, target), [2.0, 1.0, 2.0, 0.0, 6.0])


def test_registered_and_same_as_class():
    data, target = _score(**MAIN)
    est = get_estimator("local_buffer")
    assert type(est) is LocalBuffer and est.level == "rollout"
    np.testing.assert_array_equal(score_estimator(est, data, target), [2.0, 1.0, 2.0, 0.0, 6.0])


def test_steps_before_first_checkpoint_use_the_first():
    # checkpoints 4 and 8: t^4 = (1,2), t^8 = (-1,1). Steps 0 and 2 precede checkpoint 4 -> t^4.
    # s0 (1,0) -> 1   s2 (0,1) -> 2   s4 (1,1) -> 3   s9 (2,1) -> <(-1,1),(2,1)> = -1
    data, target = _score([0, 2, 4, 9], [[1, 0], [0, 1], [1, 1], [2, 1]], {4: [1, 2], 8: [-1, 1]})
    np.testing.assert_array_equal(score_estimator(LocalBuffer(), data, target), [1.0, 2.0, 3.0, -1.0])


def test_draw_shares_the_draw_checkpoint():
    # a draw at checkpoint 6: every candidate against t^6 = (1,-1), even with other target checkpoints around
    # (3,1) -> 2   (0,2) -> -2   (1,1) -> 0
    vectors = {0: [5, 5], 6: [1, -1], 9: [7, 0]}
    data, target = _score([6, 6, 6], [[3, 1], [0, 2], [1, 1]], vectors, source="draw", ckpts=_ckpts(6))
    np.testing.assert_array_equal(score_estimator(LocalBuffer(), data, target), [2.0, -2.0, 0.0])
    two, target = _score([6, 6, 6], [[3, 1], [0, 2], [1, 1]], vectors, source="draw", ckpts=_ckpts(0, 6))
    with pytest.raises(EstimatorError, match="one checkpoint"):
        score_estimator(LocalBuffer(), two, target)


def test_token_restricted_view_reads_the_token_sketches():
    # full in-run (1,0) s0 -> 1, (1,0) s5 -> <(0,2),(1,0)> = 0; token in-run (5,0) s0 -> 5, (0,1) s5 -> 2
    data, target = _score([0, 5], [[1, 0], [1, 0]], {0: [1, 0], 5: [0, 2]}, token_in_run=[[5, 0], [0, 1]])
    np.testing.assert_array_equal(score_estimator(LocalBuffer(), data, target), [1.0, 0.0])
    np.testing.assert_array_equal(score_estimator(LocalBuffer(), data.token_restricted(), target), [5.0, 2.0])


def test_missing_target_dimension_is_a_named_error():
    data, _ = _score(**MAIN)
    bad = Target("sequence", {0: np.ones(3), 5: np.ones(3)})
    with pytest.raises(EstimatorError, match="dimension mismatch"):
        score_estimator(LocalBuffer(), data, bad)
