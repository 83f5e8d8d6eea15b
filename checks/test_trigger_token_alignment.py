"""Check 5, trigger_token_alignment (spec, "The checks" 5): for candidates that contain the behavior, the estimator
scores the gradient restricted to the behavior tokens against the in_context target and against a placebo target
(same construction at random non-behavior positions); the mean paired difference has CI lower bound > 0 on every
seed; for cosine-scale estimators the mean cosine with in_context also has CI lower bound > 0.05. Candidates of
every draw at the saturated checkpoint are pooled per seed (each response is its own bootstrap cluster).
Published: +0.230 / +0.114 / +0.295 on three seeds; ~0 or negative for the constructed target."""

import numpy as np
import pytest

from bt_bench import verdicts
from bt_bench.estimator import is_cosine_scale
from bt_bench.pytest_plugin import FixtureCannotSupport, cell, run_cell


@pytest.fixture
def token_scores(bt_suite, bt_estimator, bt_seed, bt_settings):
    why = bt_suite.has_draw(bt_seed, "saturated")
    if why:
        raise FixtureCannotSupport(why)
    out = {"in_context": [], "placebo": [], "constructed": [], "response": []}
    for d in range(bt_settings.draws):
        beh = bt_suite.draw(bt_seed, "saturated", d)["has_behavior"]
        for kind in ("in_context", "placebo", "constructed"):
            s = cell(bt_suite.draw_scores, bt_estimator, bt_seed, "saturated", d, target_kind=kind, token=True)
            out[kind].append(s[beh])
        out["response"].append(d * 100_000 + np.flatnonzero(beh))
    return {k: np.concatenate(v) for k, v in out.items()}


def test_trigger_token_alignment(bt_suite, bt_estimator, bt_seed, token_scores, request):
    t = token_scores
    v = verdicts.trigger_token_alignment(t["in_context"], t["placebo"], response=t["response"],
                                         constructed=t["constructed"],
                                         cosine_scale=is_cosine_scale(bt_suite.estimator(bt_estimator)),
                                         thresholds=bt_suite.thresholds)
    run_cell(request, "trigger_token_alignment", bt_estimator, v, seed=bt_suite.fixtures[bt_seed].seed,
             series={k: [float(x) for x in t[k]] for k in ("in_context", "placebo", "constructed")})
