"""Evidence replay: judge rows recorded elsewhere (GPU runs, published papers) with the verdict functions.

One import path for two modules: :mod:`bt_bench.checklist.evidence_format` (the dataclasses, the native JSON format
of docs/evidence_format.md and the readers of the published BehaviorTrace rows) and :mod:`bt_bench.checklist.replay`
(:func:`replay`: every check the evidence supports for every estimator in it, the rest "skip" with a reason;
per-seed/draw verdicts combined with :func:`bt_bench.checklist.verdicts.combine`).
"""

from __future__ import annotations

from bt_bench.checklist.evidence_format import (
    FORMAT,
    KINDS,
    PUBLISHED_NAMES,
    TOKEN_ESTIMATOR,
    VERSION,
    DrawEvidence,
    Evidence,
    RunEvidence,
    StabilityEvidence,
    TokenEvidence,
    evidence_from_dict,
    evidence_to_dict,
    load_behaviortrace,
    load_evidence,
    read_minimal_pair_rows,
    read_token_level,
    write_evidence,
)
from bt_bench.checklist.replay import NORM_VARIANTS, REPLAYS, declared_norm_variant, replay

__all__ = [
    "FORMAT", "KINDS", "NORM_VARIANTS", "PUBLISHED_NAMES", "REPLAYS", "TOKEN_ESTIMATOR", "VERSION", "DrawEvidence",
    "Evidence", "RunEvidence", "StabilityEvidence", "TokenEvidence", "declared_norm_variant", "evidence_from_dict",
    "evidence_to_dict", "load_behaviortrace", "load_evidence", "read_minimal_pair_rows", "read_token_level", "replay",
    "write_evidence",
]
