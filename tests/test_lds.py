"""Check 10, linear_datamodeling (LDS), and the fixture's LDS set (bt_bench.runs.counterfactual.lds_set): the
verdict's positive and negative controls on a synthetic linear datamodel, the rank correlation's bootstrap against
scipy, and the set's sharding, caching and integrity on a real smoke run with the replay replaced by a known
function of the removed rollouts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import spearmanr

from bt_bench.checklist.base import Thresholds
from bt_bench.checklist.bootstrap import paired_spearman_difference_bootstrap, spearman_bootstrap
from bt_bench.checklist.registry import CHECKS

SPEC = CHECKS["linear_datamodeling"]
TH = Thresholds(n_resamples=500)
N, S = 200, 120


def _world(seed: int = 0, noise: float = 0.5):
    """A linear datamodel: each rollout's true effect, S half-subsets, the measure of keeping each subset."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=N) * (rng.random(N) < 0.3)  # a third of the rollouts move the behavior
    kept = np.stack([np.sort(rng.choice(N, N // 2, replace=False)) for _ in range(S)])
    y = truth[kept].sum(1) + noise * rng.normal(size=S)
    return rng, truth, kept, y


def _controls(rng, truth, kept) -> dict:
    from bt_bench.checklist.lds import subset_sums

    return {"random": subset_sums(rng.random(N), kept),
            "norm_only": subset_sums(np.abs(truth) + rng.random(N), kept),  # magnitude, no direction
            "advantage_only": subset_sums((truth > 0) * rng.random(N), kept)}  # knows who was paid, not how much


def test_spearman_bootstrap_agrees_with_scipy_and_the_paired_difference_is_paired():
    rng = np.random.default_rng(1)
    x, z = rng.normal(size=60), rng.normal(size=60)
    y = x + rng.normal(size=60)
    r = spearman_bootstrap(x, y, n_resamples=300)
    assert r.estimate == pytest.approx(spearmanr(x, y).statistic)
    assert r.ci_low < r.estimate < r.ci_high
    d = paired_spearman_difference_bootstrap(x, z, y, n_resamples=300)
    assert d.estimate == pytest.approx(spearmanr(x, y).statistic - spearmanr(z, y).statistic)
    same = paired_spearman_difference_bootstrap(x, x, y, n_resamples=300)
    assert same.estimate == same.ci_low == same.ci_high == 0.0  # paired: every resample's difference is 0
    ties = spearman_bootstrap(np.repeat([1.0, 2.0], 5), np.arange(10.0), n_resamples=50)
    assert ties.estimate == pytest.approx(spearmanr(np.repeat([1.0, 2.0], 5), np.arange(10.0)).statistic)


def test_the_true_datamodel_passes_and_every_control_fails():
    from bt_bench.checklist.lds import subset_sums

    rng, truth, kept, y = _world()
    controls = _controls(rng, truth, kept)
    good = SPEC.judge(subset_sums(truth, kept), controls, y, thresholds=TH)
    assert good.outcome == "pass", good.reason
    assert good.metrics["lds"].value > 0.8 and good.metrics["lds_minus_best"].ci_low > 0
    for name, sums in controls.items():  # each control against the others and itself: never above the best
        v = SPEC.judge(sums, controls, y, thresholds=TH)
        assert v.outcome == "fail", (name, v.reason)
    flipped = SPEC.judge(subset_sums(-truth, kept), controls, y, thresholds=TH)
    assert flipped.outcome == "fail" and flipped.metrics["lds"].value < -0.8
    # a score that finds the movers but not their direction (a norm) fails; so does a constant score
    assert SPEC.judge(subset_sums(np.abs(truth), kept), controls, y, thresholds=TH).outcome == "fail"
    const = SPEC.judge(np.zeros(S), controls, y, thresholds=TH)
    assert const.outcome == "fail"


def test_a_margin_and_too_few_or_flat_replays():
    from bt_bench.checklist.lds import subset_sums

    rng, truth, kept, y = _world(noise=3.0)
    controls = _controls(rng, truth, kept)
    v = SPEC.judge(subset_sums(truth, kept), controls, y, thresholds=TH)
    high = Thresholds(n_resamples=500, lds_margin=v.metrics["lds_minus_best"].ci_low + 0.01)
    assert SPEC.judge(subset_sums(truth, kept), controls, y, thresholds=high).outcome == "fail"
    few = SPEC.judge(subset_sums(truth, kept)[:5], {}, y[:5], thresholds=TH)
    assert few.outcome == "error" and "cannot support" in few.reason
    flat = SPEC.judge(subset_sums(truth, kept), controls, np.ones(S), thresholds=TH)
    assert flat.outcome == "error" and "nothing to predict" in flat.reason
    with pytest.raises(ValueError, match="sums"):
        SPEC.judge(np.zeros(S - 1), controls, y, thresholds=TH)


@pytest.fixture
def fake_replays(smoke_run, fake_replays_in, tmp_path):
    """The counterfactual store of the smoke run in a temp cache, its replay a known function (conftest)."""
    return fake_replays_in(smoke_run, tmp_path, 3)


def test_the_lds_set_is_shardable_cached_and_sha256_checked(smoke_run, fake_replays, monkeypatch):
    from bt_bench.runs.store import IntegrityError

    cf, effect, calls = fake_replays
    win, _, _ = cf.window_pool(smoke_run)
    kept = cf.lds_subsets(smoke_run, 10)
    assert kept.shape == (10, len(win) // 2) and set(kept.ravel()) <= set(win)
    assert np.array_equal(kept[:6], cf.lds_subsets(smoke_run, 6))  # a larger set grows the same stream
    assert cf.lds_part(smoke_run, 10, 0, 2) == 5 and cf.lds_part(smoke_run, 10, 1, 2) == 5  # disjoint halves
    assert cf.lds_part(smoke_run, 10, 1, 2) == 0 and len(calls) == 10  # cached by the removed set
    got = cf.lds_set(smoke_run, 10)
    assert len(calls) == 10  # the set only read the parts' replays
    want = [-effect[np.setdiff1d(win, k)].sum() for k in kept]
    assert np.allclose(got["trigger_logp"], want) and np.array_equal(got["kept"], kept)
    assert cf.lds_set(smoke_run, 10)["S"] == 10 and len(calls) == 10
    # under xdist each worker takes its share before one publishes the set
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert cf._shard() == (1, 2)
    final = cf.root(smoke_run) / "lds-set-S10"
    np.save(final / "measures.npy", np.zeros(10), allow_pickle=False)
    with pytest.raises(IntegrityError, match="sha256"):
        cf.lds_set(smoke_run, 10)
    meta = json.loads((final / "lds.json").read_text())
    assert set(meta["hashes"]) == {"kept.npy", "measures.npy"} and meta["run"] == smoke_run.key
    with pytest.raises(ValueError, match="at least 4"):
        cf.lds_set(smoke_run, 3)
    with pytest.raises(ValueError, match="shard"):
        cf.lds_part(smoke_run, 10, 2, 2)


def test_the_check_is_not_applicable_unless_the_session_runs_it(smoke_run):
    from types import SimpleNamespace

    from bt_bench.checklist.suite import NotApplicable, Suite

    suite = Suite(fixtures=[SimpleNamespace(run=smoke_run, seed=0)], failed_seeds=[], thresholds=TH)
    with pytest.raises(NotApplicable, match="--bt-lds"):
        SPEC.cell(suite, "random", 0)
    assert Suite(fixtures=[], failed_seeds=[], thresholds=TH, lds_subsets=8).require_lds() == 8


def test_settings_and_declared_outcomes_follow_bt_lds():
    from bt_bench.checklist.expectations import LDS_NOT_RUN, expected_for
    from bt_bench.plugin.options import Settings, get_profile_lds

    assert get_profile_lds("tiny") > 0 and get_profile_lds("bpe") > 0
    assert get_profile_lds("tiny_family") == 0
    with pytest.raises(ValueError, match="lds: profile 'tiny_family' declares no LDS set size"):
        Settings(profile="tiny_family", lds=True)
    assert Settings(profile="tiny", lds=True).lds
    assert expected_for("tiny", "random", lds=False)["linear_datamodeling"] == LDS_NOT_RUN
    assert expected_for("tiny", "random", lds=True)["linear_datamodeling"][0] != "N/A"


def test_the_bench_reports_every_estimators_lds_from_the_set(smoke_run, monkeypatch):
    from types import SimpleNamespace

    from bt_bench.bench import counterfactual as bench
    from bt_bench.checklist.lds import CONTROLS
    from bt_bench.runs import counterfactual as cf

    rng, truth, kept, y = _world(noise=0.1)
    monkeypatch.setattr(cf, "lds_set", lambda run, S: {"kept": kept, "trigger_logp": y, "replay_seconds": 1.0})
    noise = {c: rng.random(N) for c in CONTROLS}
    scores = {"exact": truth, "flipped": -truth, **noise}
    suite = SimpleNamespace(fixtures=[SimpleNamespace(run=smoke_run, seed=0)], thresholds=TH,
                            training_scores=lambda est, i: scores[est])
    rows = {r["estimator"]: r for r in bench.lds(suite, ["exact", "flipped"], S=S)}
    assert rows["exact"]["outcome"] == "pass" and rows["exact"]["lds"] > 0.9
    assert rows["flipped"]["outcome"] == "fail" and rows["flipped"]["lds"] < -0.9
    assert set(rows["exact"]["control_lds"]) == set(CONTROLS) and 0 < rows["exact"]["ci_width"] < 0.2


def test_a_packs_profile_without_an_lds_size_is_refused_too():
    import dataclasses

    from bt_bench.plugin.options import Settings

    s = Settings(profile="tiny", lds=True, fixture="pack.tar")  # the pack's profile is read after this
    with pytest.raises(ValueError, match="tiny_family"):
        dataclasses.replace(s, profile="tiny_family")


def test_workers_split_a_batch_of_replays_and_never_replay_a_set_twice(smoke_run, fake_replays, monkeypatch):
    """Two processes (threads here: the file locks are per open file, as between processes) asking for the same
    removals at once: each takes its share first, then helps with the other's; a set one of them holds is waited
    for, not replayed again (``replay_pool``)."""
    import threading
    import time

    cf, effect, calls = fake_replays
    slow = cf._measure_without

    def measure_without(run, probe, uids):
        time.sleep(0.05)
        return slow(run, probe, uids)

    monkeypatch.setattr(cf, "_measure_without", measure_without)
    win, _, _ = cf.window_pool(smoke_run)
    sets = [np.setdiff1d(win, k) for k in cf.lds_subsets(smoke_run, 12)]
    done = {}
    threads = [threading.Thread(target=lambda i=i: done.__setitem__(i, cf.replay_pool(smoke_run, sets, "t",
                                                                                        shard=(i, 2))))
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 12 and done[0] + done[1] == 12 and min(done.values()) >= 4  # both worked, none twice
    assert cf.replay_pool(smoke_run, sets, "t") == 0
    for u in sets:
        assert cf.removal(smoke_run, u)["measure"]["trigger_logp"] == pytest.approx(-effect[u].sum())


def test_the_pool_progress_line_counts_what_every_worker_replayed(smoke_run, fake_replays, monkeypatch):
    """The workers replay disjoint halves of a pool, so a worker's progress line counts the pool's entries that
    exist, whoever replayed them: counting its own would read half the progress and double the ETA. Here the other
    worker's whole share lands while this one replays its first set."""
    cf, effect, calls = fake_replays
    win, _, _ = cf.window_pool(smoke_run)
    sets = [np.setdiff1d(win, k) for k in cf.lds_subsets(smoke_run, 12)]
    inner, ticks, other = cf._measure_without, [], []

    def measure_without(run, probe, uids):
        if not other:  # "the other worker": its share (shard 1 of 2) is replayed meanwhile
            other.append(True)
            for u in sets[1::2]:
                cf.removal(run, u)
        return inner(run, probe, uids)

    class Recorder(cf.Ticker):
        def __call__(self, done):
            ticks.append(done)

    monkeypatch.setattr(cf, "_measure_without", measure_without)
    monkeypatch.setattr(cf, "Ticker", Recorder)
    assert cf.replay_pool(smoke_run, sets, "t", shard=(0, 2)) == 6  # its own share; the rest was there
    assert ticks[:2] == [0, 7]  # after its first replay: 1 of its own + 6 of the other's
    assert ticks[-1] == 12 and ticks == sorted(ticks)


def test_the_counterfactual_baseline_reads_the_removals_the_workers_replayed(smoke_run, fake_replays, monkeypatch):
    """Check 9's baseline: GT and the 19 random control sets are removal entries any worker may replay; the
    publisher replays only what is left and the full replay (here a stand-in), then records them all."""
    from types import SimpleNamespace

    import bt_bench.runs.probe as probe_mod

    cf, effect, calls = fake_replays
    W = smoke_run.config.window
    monkeypatch.setattr(cf, "_replayer", lambda run: SimpleNamespace(
        replay=lambda compare=False: SimpleNamespace(model=None, fidelity={W: 2e-5})))
    monkeypatch.setattr(probe_mod, "measure", lambda model, probe: {"trigger_logp": 0.0})
    monkeypatch.setattr(type(smoke_run), "load_model", lambda self, step, device="cpu": None)
    sets = cf.baseline_sets(smoke_run)
    assert len(sets) == 1 + cf.REPLICATES and np.array_equal(sets[0], cf.window_pool(smoke_run)[1])
    assert cf.replay_pool(smoke_run, sets, "t", shard=(1, 2), only_share=True) == len(sets[1::2])
    b = cf.baseline(smoke_run)
    assert len(calls) == len(sets)  # the publisher replayed the other half only
    assert b["no_gt"]["trigger_logp"] == pytest.approx(-effect[sets[0]].sum())
    assert [r["measure"]["trigger_logp"] for r in b["random"]] == pytest.approx([-effect[u].sum() for u in sets[1:]])
    assert b["fidelity"]["at_W"] == 2e-5 and b["format"] == cf.FORMAT and b["run"] == smoke_run.key
    assert cf.baseline(smoke_run) == b and len(calls) == len(sets)  # published once
