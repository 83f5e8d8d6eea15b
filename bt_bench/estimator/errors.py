"""The named errors of the estimator contract: every way an estimator can fail is an ``EstimatorError`` naming it.

The checks report an ``EstimatorError`` as an error of that estimator (the other estimators run on); a
``MissingInputError`` (a declared input the data lacks) leaves the cell NOT JUDGED.
"""

from __future__ import annotations


class EstimatorError(Exception):
    """An estimator could not produce valid scores. The checks report it as an error of that estimator."""

    def __init__(self, estimator: str, message: str):
        self.estimator = estimator
        super().__init__(f"estimator {estimator!r}: {message}")


class _ExpectedGot(EstimatorError):
    def __init__(self, estimator: str, expected: str, got: str):
        self.expected, self.got = expected, got
        super().__init__(estimator, f"expected {expected}, got {got}")


class ScoreShapeError(_ExpectedGot):
    """``score`` did not return a real-valued array with one entry per candidate."""


class NonFiniteScoreError(_ExpectedGot):
    """``score`` returned NaN or inf."""


class ConstantScoreError(_ExpectedGot):
    """Every candidate got the same score: the ranking is a tie and says nothing."""


class NonDeterministicScoreError(_ExpectedGot):
    """Two identical ``score`` calls disagreed."""


class ScoringFailedError(EstimatorError):
    """``score`` or ``fit`` raised; the original exception is chained as ``__cause__``."""


class InvalidEstimatorError(EstimatorError):
    """The object does not satisfy the estimator protocol (missing member, unknown capability or level)."""


class CapabilityError(EstimatorError):
    """The estimator read something it did not declare in ``capabilities``."""


class MissingInputError(EstimatorError):
    """The estimator declared an input that this data (or target) does not provide."""


class MissingFieldError(MissingInputError, AttributeError):
    """A row field this data lacks (an ``AttributeError`` too, so ``getattr(view, f, default)`` works)."""


class LabelsRefusedError(EstimatorError):
    """An estimator that is not one of the suite's test-only controls declared ``labels``."""

    def __init__(self, estimator: str, where: str = ""):
        super().__init__(estimator, f"{where}declares 'labels'; ground truth is given only to the suite's own "
                                    "test-only controls (bt_bench.estimator.scoring.TEST_ONLY); a real "
                                    "estimator must not read labels")


class LevelMismatchError(EstimatorError):
    """A ``level="step"`` estimator gave different scores to rollouts of the same step."""



class CallTimeoutError(EstimatorError):
    """One ``fit`` or ``score`` call ran past the time limit (``--bt-timeout``) and was interrupted; its result,
    if any, is discarded. ``where``: the cell that made the call; ``earlier``: this cell did not call the estimator,
    it reports a timeout of an earlier cell (a timed-out estimator is not called again, see ``Suite``)."""

    def __init__(self, estimator: str, call: str, limit_s: float, where: str = "", earlier: bool = False):
        self.call, self.limit_s, self.where, self.earlier = call, limit_s, where, earlier
        at = f" in {where}" if where else ""
        tail = ("; not called again after that" if earlier
                else "; the call was interrupted and its result discarded")
        super().__init__(estimator, f"{call} timed out after {limit_s:g} s (--bt-timeout {limit_s:g}){at}{tail}")


class WorkerCrashedError(EstimatorError):
    """The estimator killed a pytest-xdist worker process (``os._exit``, a segfault) in an earlier cell; the
    plug-in does not run its remaining cells, so one crashing estimator cannot use up xdist's worker restarts."""
