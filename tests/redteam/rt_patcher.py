"""(i) JudgePatcher: on import, every judge's verdict becomes "pass" and the gate reads every unit as PASS, in
whatever process imports this module (tests/redteam/rt_sealed.py has the other attacks on the judge)."""

from __future__ import annotations

import numpy as np


def _patch_judges() -> int:
    """Every public function of bt_bench.checklist.judges returns a passing verdict; the gate reads every unit as
    PASS."""
    import dataclasses

    from bt_bench.checklist import gate, judges

    patched = 0
    for name, fn in list(vars(judges).items()):
        if callable(fn) and not name.startswith("_") and getattr(fn, "__module__", "") == judges.__name__:
            def passing(*a, _fn=fn, **k):
                v = _fn(*a, **k)
                return dataclasses.replace(v, outcome="pass") if dataclasses.is_dataclass(v) else v
            setattr(judges, name, passing)
            patched += 1
    gate.unit_label = lambda result: gate.PASS
    return patched


PATCHED = _patch_judges()  # at import, wherever this module is imported


class JudgePatcher:
    """(i) random scores; the patch at import does the 'work'."""

    name = "rt_judge_patcher"
    level = "rollout"
    capabilities = frozenset()

    def score(self, candidates, target):
        return np.random.default_rng(0).random(len(candidates.uid))


