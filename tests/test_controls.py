"""Controls that prove each check can fail and can pass, on the tiny fixtures (issue 5 item 6).

They run the same cell functions (``CheckSpec.cell`` of ``bt_bench.checklist.registry``) the checklist runs, over
every seed and draw, combined as the checklist combines them (a check passes only if it passes everywhere). A check that a control contradicts is
a bug in the check. The positive and negative controls of ``trigger_token_alignment`` (no built-in control has
token-level scores) are unit tests of its verdict function in tests/test_verdicts.py.

These need the three planted tiny seeds; CI builds them in the main job (``pytest checks``) first and shares the
cache (BT_BENCH_CACHE), so here they load in seconds.
"""

from __future__ import annotations

import pytest

from bt_bench.checklist.base import combine
from bt_bench.checklist.registry import CHECKS

pytestmark = pytest.mark.slow
DRAWS = 3
TRAINING_CHECKS = ("gradient_norm_baseline", "advantage_baseline", "headroom")
ALL = TRAINING_CHECKS + ("fluency_confound", "seed_draw_variance", "target_dependence")


@pytest.fixture(scope="module")
def suite(shared_cache):
    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.suite import Suite
    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import fixture_seeds
    from bt_bench.runs.config import DEFAULT_PROFILE, make_config

    runs, failed = fixture_seeds(make_config(DEFAULT_PROFILE), 3, shared_cache, progress=False)
    fixtures = [load_fixture(r, fixture_config(DEFAULT_PROFILE, DRAWS), shared_cache) for r in runs]
    from bt_bench.runs.config import DEFAULT_PROFILE, get_profile

    return Suite(fixtures=fixtures, failed_seeds=failed, thresholds=Thresholds(),
                 norm_variant=get_profile(DEFAULT_PROFILE).norm_variant)


def judge(suite, check: str, est: str):
    """The check over every seed and draw, as the checklist runs its cells (``CheckSpec.unit``), combined."""
    spec = CHECKS[check]
    n = suite.n_seeds
    if spec.unit == "all":
        return spec.cell(suite, est, DRAWS)[0]
    if check == "target_dependence":  # per seed, every draw inside the cell
        return combine([spec.cell(suite, est, i, DRAWS) for i in range(n)])
    if spec.unit == "seed":
        vs = [spec.cell(suite, est, i) for i in range(n)]
    else:
        vs = [spec.cell(suite, est, i, d) for i in range(n) for d in range(DRAWS)]
    return combine(vs)


@pytest.mark.parametrize("check", ALL)
def test_oracle_passes(suite, check):
    """The positive control passes every check it takes part in. A unit no ranking can pass (e.g. a draw where
    fluency's within-group AUC CI reaches 1, so AUC - AUC(fluency) cannot have CI low > 0) is unsupported and left
    out, as for every estimator; more than a third of them would make the check an error of the fixture."""
    v = judge(suite, check, "oracle")
    assert v.outcome == "pass", v.reason


@pytest.mark.parametrize("check", ("fluency_confound", "headroom", "gradient_norm_baseline", "advantage_baseline"))
def test_unsupported_units_are_the_fixtures_not_the_estimators(suite, check):
    """Whether a unit can support a verdict depends on the fixture and the reference only: the same units are
    unsupported for the oracle, random and the check's own control."""
    spec = CHECKS[check]
    units = [(i,) if spec.unit == "seed" else (i, d) for i in range(suite.n_seeds) for d in range(DRAWS)
             if spec.unit == "seed_draw" or d == 0]
    seen = {est: [u for u in units if spec.cell(suite, est, *u).outcome == "unsupported"]
            for est in ("oracle", "random", spec.reference or "norm_only")}
    assert len({tuple(x) for x in seen.values()}) == 1, seen


@pytest.mark.parametrize("check", ALL)
def test_random_fails(suite, check):
    v = judge(suite, check, "random")
    assert v.outcome == "fail", v.reason


@pytest.mark.parametrize("est, check", [("norm_only", "gradient_norm_baseline"), ("norm_only_step", "gradient_norm_baseline"),
                                        ("fluency", "fluency_confound"), ("advantage_only", "advantage_baseline"),
                                        ("norm_only", "target_dependence"), ("advantage_only", "target_dependence")])
def test_control_fails_its_own_check(suite, est, check):
    v = judge(suite, check, est)
    assert v.outcome == "fail", v.reason
