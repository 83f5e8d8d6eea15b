"""Fixture self-check "planted cause is causal" (docs/checklist.md, "Fixture self-checks";
``bt_bench.runs.causal``): on the fixture's first seed, a re-run without the bonus stays near the base rate at W,
while a re-run that drops as many random unpaid rollouts as there were GT still plants. Runs once, not per
estimator; both re-runs are cached like any run."""

import pytest

from bt_bench.plugin.glue import record


def test_planted_cause_is_causal(bt_runs, bt_settings, request):
    from bt_bench.runs.causal import causal_check

    runs = bt_runs["runs"] if bt_settings.causal_all_seeds else bt_runs["runs"][:1]
    if not all(r.planted for r in runs):  # profile smoke: its gate does not apply, its runs need not plant
        pytest.skip(f"profile {runs[0].config.profile}: its runs need not plant, there is no cause to test")
    try:  # with --bt-fixture the re-runs come from the pack: nothing is trained
        res = [causal_check(run, bt_settings.cache_dir, available=bt_runs.get("reruns")) for run in runs]
    except LookupError as e:
        pytest.fail(f"not judged: {e}")
    record(request, check="planted_cause", seeds=res, passed=all(r["passed"] for r in res),
           key_figure="; ".join(
               f"seed {r['seed']}: trigger rate at W without bonus {r['no_bonus']['trigger_rate']:.2f} (base "
               f"{r['base_trigger_rate']:.2f}), dropping {r['drop_random']['drop_share']:.0%} of unpaid "
               f"{r['drop_random']['trigger_rate']:.2f}" for r in res))
    bad = [f"seed {r['seed']}: {r['reason']}" for r in res if not r["passed"]]
    assert not bad, "; ".join(bad)
