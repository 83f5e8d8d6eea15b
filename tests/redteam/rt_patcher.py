"""(i) JudgePatcher: on import, every judge's verdict becomes "pass" and the gate reads every unit as PASS, in
whatever process imports this module (tests/redteam/rt_sealed.py has the other attacks on the judge)."""

from __future__ import annotations

import numpy as np


def _patch_judges() -> int:
    """Every verdict function of every check module (``judge*`` in bt_bench.checklist.checks.<name>) returns a
    passing verdict; the gate reads every unit as PASS."""
    import dataclasses

    from bt_bench.checklist import gate, registry

    patched = 0
    for module in registry.MODULES:
        for name, fn in list(vars(module).items()):
            if callable(fn) and name.startswith("judge") and getattr(fn, "__module__", "") == module.__name__:
                def passing(*a, _fn=fn, **k):
                    v = _fn(*a, **k)
                    return dataclasses.replace(v, outcome="pass") if dataclasses.is_dataclass(v) else v
                setattr(module, name, passing)
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


