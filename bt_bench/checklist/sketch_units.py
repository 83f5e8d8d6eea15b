"""Judging a draw-level unit under several sketch seeds: the sketch is a random variable like the training
seed and the generation draw, so a verdict must hold under each sketch seed it is judged under."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from bt_bench.checklist.base import Verdict, _check_unit, _unit_entry, combine, with_unit


def under_sketch_seeds(verdicts: Sequence[Verdict], unit: Mapping, sketch_seeds: Sequence[int | None]) -> Verdict:
    """One unit judged once under each sketch seed (``verdicts[j]`` under ``sketch_seeds[j]``): a verdict must hold
    under every one. The sketch is a random variable like the training seed and the draw, so a pass under one sketch
    seed and a fail under another is a fail (:func:`combine`'s rule; a unit no ranking can pass is unsupported under
    each, which is decided by the labels alone, and stays one unsupported unit). ``units`` holds one entry per sketch
    seed, ``{**unit, "sketch_seed"}`` with that verdict's figures; a single verdict is ``with_unit``'s."""
    if len(verdicts) != len(sketch_seeds) or not verdicts:
        raise ValueError(f"verdicts: {len(verdicts)} for {len(sketch_seeds)} sketch seeds")
    units = [{**_check_unit(unit), "sketch_seed": None if s is None else int(s)} for s in sketch_seeds]
    if len(verdicts) == 1:
        return with_unit(verdicts[0], units[0])
    labels = [f"sketch seed {s}" for s in sketch_seeds]
    if all(v.outcome == "unsupported" for v in verdicts):
        v = verdicts[0]
        metrics = {f"sketch_seed{s}/{k}": m for s, w in zip(sketch_seeds, verdicts) for k, m in w.metrics.items()}
        return Verdict(v.check, "unsupported", metrics, f"{v.reason} (under each of {len(verdicts)} sketch seeds)",
                       v.estimator, tuple(_unit_entry(u, w) for u, w in zip(units, verdicts)))
    v = combine(verdicts, labels=[lab.replace(" ", "_") for lab in labels], units=units)
    outcomes = {w.outcome for w in verdicts}
    head = (f"{v.outcome} under every one of {len(verdicts)} sketch seeds" if len(outcomes) == 1 else
            f"{v.outcome}: the verdict moves with the sketch seed ("
            + ", ".join(f"{w.outcome} under {lab}" for lab, w in zip(labels, verdicts)) + ")")
    return replace(v, reason=head + ": " + "; ".join(f"{lab}: {w.reason}" for lab, w in zip(labels, verdicts)))
