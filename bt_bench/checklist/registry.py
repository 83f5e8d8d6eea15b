"""The one check registry: a :class:`CheckSpec` per checklist item, in checklist order (docs/checklist.md, "The
checks"). Every list of checks in the checklist stage (``expectations.CHECKS``, evidence replay's, the thin
modules in ``checks/``) comes from :data:`CHECKS`.

Adding a check: a pure verdict function (``bt_bench.checklist.judges``), its cell (``bt_bench.checklist.cells``) and
key figure (``bt_bench.checklist.figures``), one :class:`CheckSpec` here, and one thin ``checks/test_<name>.py`` that
takes ``SPEC = CHECKS["<name>"]``. ``tests/test_checklist_registry.py`` keeps the registry and ``checks/`` in step.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from bt_bench.checklist import cells, figures

UNITS = ("seed", "seed_draw", "all")
REFERENCES = ("norm_only", "fluency", "advantage_only")
# fixture self-checks: once per session, not per estimator (checks/test_planted_cause.py, test_fixture_planting.py,
# test_sketch_fidelity.py, test_fixture_integrity.py), in the order docs/checklist.md lists them
FIXTURE_CHECKS = ("planted_cause", "planting_gate", "sketch_fidelity", "integrity")


@dataclass(frozen=True)
class CheckSpec:
    """One checklist item.

    unit: what one test cell judges: ``seed`` (one cell per seed), ``seed_draw`` (per seed and draw) or ``all``
    (one cell over every seed and draw). reference: the control the check compares an estimator with (None when
    it compares with none). cell: the function of ``bt_bench.checklist.cells`` that computes the cell's verdict.
    key_figure: ``Verdict.to_dict() -> str``, the figure a table cell shows. replay: whether evidence replay
    (``bt_bench.checklist.replay``) can judge the check from recorded rows.
    """

    name: str
    order: int
    unit: str
    title: str
    finding: str
    reference: str | None
    cell: Callable
    key_figure: Callable[[dict], str]
    replay: bool

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"unit: must be one of {UNITS}, got {self.unit!r}")
        if self.reference is not None and self.reference not in REFERENCES:
            raise ValueError(f"reference: must be one of {REFERENCES} or None, got {self.reference!r}")


def _spec(order: int, name: str, unit: str, title: str, finding: str, reference: str | None = None, *,
          replay: bool = True) -> CheckSpec:
    return CheckSpec(name, order, unit, title, finding, reference, getattr(cells, name), figures.FIGURES[name], replay)


_SPECS = (
    _spec(1, "gradient_norm_baseline", "seed", "beats the declared norm_only variant, and chance in the window",
          "A target-free gradient-norm ranking reached ~4x chance and matched the best targeted estimator; inside "
          "the window every method was within ~0.03 of chance.", "norm_only"),
    _spec(2, "fluency_confound", "seed_draw", "beats fluency at a saturated checkpoint, also after residualization",
          "At saturation fluency (mean token log-prob) predicted the behavior label (AUC 0.72-0.80) as well as any "
          "gradient method.", "fluency"),
    _spec(3, "headroom", "seed_draw", "normalized window gain and unsaturated within-group AUC above chance",
          "Headroom (ceiling - chance) bounds what any step-level method can show; window gains did not clear it."),
    _spec(4, "seed_draw_variance", "all", "no verdict flip across seeds and draws, stable under other draws' targets",
          "After fluency control, per-rollout verdicts flipped across seeds and generation draws."),
    _spec(5, "trigger_token_alignment", "seed", "the behavior-token gradient aligns with the in_context target",
          "Only the trigger-token gradient aligned with a target built where the behavior occurs (+0.230 / +0.114 / "
          "+0.295 on three seeds; ~0 or negative for the constructed target)."),
    _spec(6, "advantage_baseline", "seed", "beats advantage_only, overall and in the window (ours)",
          "Inside the window a positive advantage nearly implies the planted cause, so a score that tracks the "
          "advantage finds GT without attributing anything.", "advantage_only"),
    _spec(7, "target_dependence", "seed", "ranks worse under a placebo target than under the real one (ours)",
          "A sanity test (Hanawa et al. 2021, Adebayo et al. 2018): a score that ignores the target (every control, "
          "anything read from labels, files or the process) fails it by construction.", replay=False),
)
CHECKS: dict[str, CheckSpec] = {s.name: s for s in sorted(_SPECS, key=lambda s: s.order)}


def get_check(name: str) -> CheckSpec:
    """The CheckSpec of ``name``; an unknown name raises a KeyError that says what it may have meant."""
    try:
        return CHECKS[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), list(CHECKS), n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise KeyError(f"unknown check {name!r}{hint} (checks: {', '.join(CHECKS)})") from None


__all__ = ["CHECKS", "FIXTURE_CHECKS", "REFERENCES", "UNITS", "CheckSpec", "get_check"]
