"""An example third-party estimator for bt-bench. It inherits from nothing: the protocol is structural."""

from __future__ import annotations

import numpy as np


class LastCheckpointCosine:
    """Cosine with the target at the last checkpoint C: score_i = cos(g_target^C, g_i^C)."""

    name = "my_cosine"  # must equal the entry-point name in pyproject.toml
    # What it reads: checkpoint sketches; it can also score token-restricted sketches (checklist item 5).
    capabilities = frozenset({"checkpoint_sketches", "token_sketches"})
    level = "rollout"  # one score per rollout ("step" if every rollout of a step shares its score)
    cosine_scale = True  # optional: scores are plain cosines, so the checklist's cosine bar applies

    def score(self, candidates, target) -> np.ndarray:
        sketches = candidates.checkpoint_sketches()  # {checkpoint step: [M, k]}
        last = max(sketches)
        g = np.asarray(sketches[last], dtype=np.float64)
        t = np.asarray(target.at(last), dtype=np.float64)
        norms = np.linalg.norm(g, axis=1) * np.linalg.norm(t)
        # Zero gradients are common (zero advantage): define their cosine as 0, never NaN.
        return np.divide(g @ t, norms, out=np.zeros(len(g)), where=norms > 0)
