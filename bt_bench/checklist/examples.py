"""Built-in example data shipped with the package.

The published per-rollout rows of the BehaviorTrace paper (one seed, Qwen2.5-1.5B) are vendored unchanged in
``bt_bench/data/behaviortrace/`` (origin, license and checksums in its ``SOURCE.md``), so the evidence-replay tests
and ``bt-bench replay example`` work on a fresh clone and from an installed wheel.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_SEED2 = "data/behaviortrace/seed2"


def behaviortrace_seed2() -> Path:
    """Folder of the vendored BehaviorTrace seed-2 rows (``minimal_pair_rows_ckpt2_gen2.json`` and
    ``token_level_cos_temp0.9.json``), as accepted by ``bt_bench.checklist.evidence_format.load_evidence`` /
    ``bt-bench replay``.

    Resolved through :mod:`importlib.resources` (the installed package), falling back to the folder next to this
    file. Raises FileNotFoundError when neither exists (a broken install)."""
    try:
        p = Path(str(resources.files("bt_bench") / _SEED2))
        if p.is_dir():
            return p
    except (ModuleNotFoundError, TypeError, NotImplementedError):
        pass
    p = Path(__file__).resolve().parents[1] / _SEED2
    if p.is_dir():
        return p
    raise FileNotFoundError(f"built-in BehaviorTrace example missing: {p} (bt_bench/{_SEED2} not installed)")
