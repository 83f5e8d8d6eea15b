"""Evidence replay: judge rows recorded elsewhere (:mod:`bt_bench.checklist.evidence_format`) with the checks' own
verdict functions, so a published table and a fixture run are judged by one piece of code.

:func:`replay` runs every check of the registry that has a replay function (``CheckSpec.replay``) for every
estimator in the evidence; per-seed/draw verdicts are combined with :func:`bt_bench.checklist.base.combine` and
carry their units as data (``Verdict.units``), as the cells' do.
"""

from __future__ import annotations

import dataclasses
import os

from bt_bench.checklist.base import Thresholds, Verdict
from bt_bench.checklist.evidence_format import Evidence, load_evidence
from bt_bench.checklist.registry import replayed


def replay(path: str | os.PathLike | Evidence, thresholds: Thresholds | None = None) -> list[Verdict]:
    """Every check x every estimator in the evidence, one combined Verdict each (estimator-major order);
    thresholds default to the spec's (Thresholds())."""
    ev = path if isinstance(path, Evidence) else load_evidence(path)
    th = thresholds or Thresholds()
    return [dataclasses.replace(spec.replay(ev, name, th), estimator=name) for name in ev.estimators()
            for spec in replayed()]
