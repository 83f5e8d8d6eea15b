"""Scoring: the one call the checks make (``score_estimator``), the optional ``fit``, and every validation of a
score vector, each failure a named ``EstimatorError`` (that estimator's error, never a crash of the suite).

Labels (a PASS must never come from them): only the suite's own test-only controls (``TEST_ONLY``, checked by class
identity in ``labels_allowed``) may declare ``labels``; they receive them as ``score(candidates, target,
labels=...)``, and for a placebo target a seeded permutation of them (uninformative). Any other estimator that
declares ``labels`` is refused (``LabelsRefusedError``).

Time limit (a hanging estimator costs its own cells, not the run): every single ``fit`` or ``score`` call runs under
``TIME_LIMIT`` (the plugin sets it from ``--bt-timeout``; 0 = none, the default outside pytest). It is a SIGALRM
timer, so it works only in the main thread of a process that has ``signal.setitimer`` (elsewhere calls run unlimited,
with one warning), and Python runs the handler only between bytecodes: a long C call (a big matmul, a blocking read)
is interrupted when it returns to Python, not during it. An estimator that catches ``BaseException`` can swallow the
interrupt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from bt_bench.estimator.contract import Capability, Estimator, Target, validate_estimator
from bt_bench.estimator.errors import (
    CallTimeoutError,
    ConstantScoreError,
    EstimatorError,
    LabelsRefusedError,
    LevelMismatchError,
    NonDeterministicScoreError,
    NonFiniteScoreError,
    ScoreShapeError,
    ScoringFailedError,
)
from bt_bench.estimator.views import CandidateData, Labels

# The suite's own test-only controls, by import path: the only estimators that may declare ``labels``. Matched
# by class identity (``type(est) is <the class at that path>``), never by name and never for a subclass.
TEST_ONLY: frozenset[str] = frozenset({"estimators.controls:Oracle"})
# Seed of the one permutation that makes labels uninformative for a placebo target (see ``score_estimator``).
PLACEBO_SEED = 12345


def import_dotted(path: str) -> Any:
    """The object at ``"package.module:Name.attr"`` (the registry's dotted paths and ``TEST_ONLY``)."""
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def labels_allowed(estimator: Any) -> bool:
    """True only when ``type(estimator)`` is exactly one of the classes at the ``TEST_ONLY`` import paths."""
    for path in TEST_ONLY:
        try:
            cls = import_dotted(path)
        except (ImportError, AttributeError, OSError):  # not importable (or not readable) here: it allows nothing
            continue
        if type(estimator) is cls:
            return True
    return False


def check_labels(estimator: Any) -> None:
    """Raise ``LabelsRefusedError`` if ``estimator`` declares ``labels`` and is not a ``TEST_ONLY`` control."""
    if Capability.LABELS in getattr(estimator, "capabilities", ()) and not labels_allowed(estimator):
        raise LabelsRefusedError(str(getattr(estimator, "name", type(estimator).__name__)))


def validate_scores(name: str, scores: Any, n: int) -> np.ndarray:
    """The scores as float64[n], or the named error for what is wrong with them."""
    arr = np.asarray(scores)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) \
            or np.iscomplexobj(arr):
        raise ScoreShapeError(name, f"a real-valued array of shape ({n},)", f"dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ScoreShapeError(name, f"shape ({n},) (one score per candidate)", f"shape {arr.shape}")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = np.flatnonzero(bad)
        raise NonFiniteScoreError(name, "finite scores", f"{idx.size} non-finite of {n} "
                                                         f"(first at index {idx[0]}: {arr[idx[0]]})")
    if n > 1 and np.all(arr == arr[0]):
        raise ConstantScoreError(name, "scores that rank the candidates",
                                 f"all {n} scores equal to {arr[0]!r}")
    return arr


def check_deterministic(name: str, first: np.ndarray, second: np.ndarray, rtol: float = 1e-6) -> None:
    """Two identical calls must agree to ``rtol`` of the score scale (room for GPU reduction order only)."""
    scale = float(np.max(np.abs(first))) if first.size else 0.0
    diff = np.abs(first - second)
    if np.any(diff > rtol * scale):
        i = int(np.argmax(diff))
        raise NonDeterministicScoreError(name, f"identical scores from two identical calls (rtol {rtol})",
                                         f"max difference {diff[i]:.3g} at index {i} "
                                         f"({first[i]!r} then {second[i]!r})")


@dataclasses.dataclass
class TimeLimit:
    seconds: float = 0.0  # per fit/score call; 0: no limit
    where: str = ""  # the cell now running, named in a timeout's message (the plugin sets it per test)


TIME_LIMIT = TimeLimit()
_warned_unlimited = False


class _Alarm(BaseException):
    """Raised by our SIGALRM handler. A BaseException, so an estimator's ``except Exception`` cannot eat it."""


@contextlib.contextmanager
def time_limit(name: str, what: str) -> Iterator[None]:
    """Interrupt the body with ``CallTimeoutError`` after ``TIME_LIMIT.seconds``; restores any earlier SIGALRM
    handler and timer (re-armed with what is left of it)."""
    global _warned_unlimited
    limit = TIME_LIMIT.seconds
    if not limit or limit <= 0:
        yield
        return
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        if not _warned_unlimited:  # say it once per process, not once per call
            _warned_unlimited = True
            warnings.warn("bt-bench: --bt-timeout is not enforced here (no SIGALRM, or not the main thread): "
                          "estimator calls run without a time limit", RuntimeWarning, stacklevel=3)
        yield
        return
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    if left and left <= limit:  # someone else's timer fires first anyway: leave it in charge, untouched
        yield
        return

    def on_alarm(signum, frame):
        raise _Alarm()

    old = signal.signal(signal.SIGALRM, on_alarm)
    start = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    except _Alarm as alarm:  # chained: the traceback (JSON report, -v) shows where the estimator was stuck
        raise CallTimeoutError(name, what, limit, TIME_LIMIT.where) from alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if left:  # an outer timer was running: give it back what remains (fire at once if that is spent)
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - start), 1e-6), interval)


def _call(name: str, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with time_limit(name, what):
        try:
            return fn(*args, **kwargs)
        except EstimatorError:
            raise
        except Exception as exc:  # an estimator bug is an error of that estimator, not a crash of the suite
            raise ScoringFailedError(name, f"{what} raised {type(exc).__name__}: {exc}") from exc


def check_step_level(name: str, scores: np.ndarray, step: np.ndarray) -> None:
    """A ``level="step"`` estimator shares one score across the rollouts of a step: exact float64 equality
    inside every step, else ``LevelMismatchError`` naming the first (lowest) offending step."""
    step = np.asarray(step)
    order = np.argsort(step, kind="stable")
    s, v = step[order], np.asarray(scores, dtype=np.float64)[order]
    bad = np.flatnonzero((s[1:] == s[:-1]) & (v[1:] != v[:-1]))
    if bad.size:
        first = s[bad[0] + 1]
        block = v[s == first]
        raise LevelMismatchError(name, f"declares level='step' but step {first.item()!r} has "
                                       f"{np.unique(block).size} distinct scores over {block.size} rollouts; "
                                       "declare level='rollout' or return one score per step")


def fit_estimator(estimator: Estimator, run_data: CandidateData) -> None:
    """Call the optional ``fit(run_view)`` with the label-free view of the run's training rollouts."""
    validate_estimator(estimator)
    check_labels(estimator)
    fit = getattr(estimator, "fit", None)
    if fit is not None:
        _call(estimator.name, "fit", fit, run_data.view_for(estimator))


def target_for(estimator: Estimator, target: Target) -> Target:
    """The ``target`` as ``estimator`` may see it: its definitions (the rows it was built from) only for a ``model``
    estimator, its preconditioned vectors only for an ``optimizer_state`` one. A placebo's rows give it away (the
    real target masks the behavior's tokens, a placebo other ones), so an estimator that cannot differentiate them
    never holds them."""
    caps = frozenset(estimator.capabilities)
    drop: dict[str, None] = {}
    if target.definitions is not None and Capability.MODEL not in caps:
        drop["definitions"] = None
    if target.preconditioned is not None and Capability.OPTIMIZER_STATE not in caps:
        drop["preconditioned"] = None
    return dataclasses.replace(target, **drop) if drop else target


def score_estimator(estimator: Estimator, data: CandidateData, target: Target, *,
                    check_determinism: bool = True, placebo: bool = False) -> np.ndarray:
    """Score ``data`` against ``target`` and validate the result; every failure is an ``EstimatorError``.

    ``placebo``: ``target`` is a placebo (the caller hands it over disguised as the real target: its kind and
    entries, ``bt_bench.estimator.handover``). Only the labels a test-only control receives change: every
    label array is permuted by one seeded permutation (``PLACEBO_SEED``), so the oracle's scores become a
    random relabeling, uninformative but never constant. An estimator declaring ``labels`` that is not a
    ``TEST_ONLY`` control raises ``LabelsRefusedError``. The estimator gets ``target_for(estimator, target)``.
    """
    validate_estimator(estimator)
    check_labels(estimator)
    name = estimator.name
    target = target_for(estimator, target)
    kwargs: dict[str, Labels] = {}
    if Capability.LABELS in estimator.capabilities:
        perm = np.random.default_rng(PLACEBO_SEED).permutation(data.n) if placebo else None
        kwargs["labels"] = data.labels if perm is None else data.labels.permuted(perm)

    def once() -> np.ndarray:
        raw = _call(name, "score", estimator.score, data.view_for(estimator), target, **kwargs)
        return validate_scores(name, raw, data.n)

    first = once()
    # Only training rollouts are checked: draw candidates all come from one checkpoint, i.e. one step, so
    # "one score per step" would make every step-level draw score vector constant (a ConstantScoreError);
    # a step-level estimator's scores on draws are per candidate by construction.
    if estimator.level == "step" and data.source == "training":
        check_step_level(name, first, data.step)
    if check_determinism:
        check_deterministic(name, first, once())
    return first
