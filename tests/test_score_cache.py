"""The score cache (bt_bench.checklist.score_cache): a score is computed once and read back only when nothing it
could depend on changed: the estimator's package sources, the input (fixture, rollouts, target), the session when
--bt-rescore or --bt-paper-gate ask for fresh scores; a damaged entry is computed again; a failed call stores nothing.
On the smoke fixture through the Suite: a second session (and the other xdist worker) scores nothing again and gets
the same arrays."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from bt_bench.checklist import score_cache as sc


@pytest.fixture
def counted():
    calls = []

    def compute(value=1.0, n=5):
        def f():
            calls.append(value)
            return np.full(n, value)
        return f

    return compute, calls


def test_a_score_is_computed_once_and_read_back_by_another_session(tmp_path, counted):
    compute, calls = counted
    key = ["train", "run", "derived", "sha", "in_context", "fitted"]
    a = sc.ScoreCache(tmp_path, session="s1").get("random", key, compute(1.0))
    b = sc.ScoreCache(tmp_path, session="s2").get("random", key, compute(2.0))
    assert calls == [1.0] and np.array_equal(a, b)
    other = sc.ScoreCache(tmp_path, session="s2").get("random", key[:-1] + ["unfitted"], compute(3.0))
    assert calls == [1.0, 3.0] and other[0] == 3.0  # another input: computed


def test_fresh_reads_only_what_its_own_session_stored(tmp_path, counted):
    compute, calls = counted
    key = ["draw", "k"]
    sc.ScoreCache(tmp_path, session="old").get("random", key, compute(1.0))
    fresh = sc.ScoreCache(tmp_path, session="gate", fresh=True)
    assert fresh.get("random", key, compute(2.0))[0] == 2.0  # --bt-rescore / --bt-paper-gate: computed again
    assert fresh.get("random", key, compute(3.0))[0] == 2.0 and calls == [1.0, 2.0]  # its own entry: read
    with pytest.raises(ValueError, match="session"):
        sc.ScoreCache(tmp_path, fresh=True)


def test_a_damaged_entry_is_computed_again_and_a_failed_call_stores_nothing(tmp_path, counted):
    compute, calls = counted
    cache = sc.ScoreCache(tmp_path, session="s")
    cache.get("random", ["x"], compute(1.0))
    (npy,) = tmp_path.rglob("*.npy")
    np.save(npy, np.full(5, 9.0), allow_pickle=False)  # not the bytes its .json recorded
    assert cache.get("random", ["x"], compute(4.0))[0] == 4.0 and calls == [1.0, 4.0]

    def boom():
        raise RuntimeError("estimator failed")

    with pytest.raises(RuntimeError):
        cache.get("random", ["y"], boom)
    assert cache.get("random", ["y"], compute(5.0))[0] == 5.0


def test_the_estimators_identity_covers_its_whole_package_and_unknown_sources_store_nothing(tmp_path, monkeypatch,
                                                                                          counted):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "est.py").write_text("from mypkg._math import f\nclass E: pass\n")
    (pkg / "_math.py").write_text("def f(x): return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    sc.estimator_identity.cache_clear()
    first = sc.estimator_identity("mypkg.est:E")
    (pkg / "_math.py").write_text("def f(x): return 2 * x\n")  # a helper it imports, not its own module
    sc.estimator_identity.cache_clear()
    assert first is not None and sc.estimator_identity("mypkg.est:E") != first
    assert sc.estimator_identity("no_such_package_here.est:E") is None
    assert sc.estimator_identity("random") not in (None, sc.estimator_identity("fluency"))
    compute, calls = counted
    cache = sc.ScoreCache(tmp_path / "scores", session="s")
    cache.get("no_such_package_here.est:E", ["x"], compute(1.0))
    cache.get("no_such_package_here.est:E", ["x"], compute(1.0))
    assert calls == [1.0, 1.0] and not (tmp_path / "scores").exists()
    sys.modules.pop("mypkg", None)


def test_a_second_suite_reads_every_score_the_first_computed(tmp_path, monkeypatch):
    """Through the Suite, on the smoke fixture: the second session (a rerun, or the other worker) calls no estimator
    and gets the same arrays; a changed target kind is another input."""
    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.suite import Suite
    from bt_bench.estimator import sealed
    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config

    monkeypatch.setattr(sealed.ISOLATION, "mode", "none")
    run = build_run(make_config("smoke", seed=0), tmp_path, progress=False)
    fx = load_fixture(run, fixture_config("smoke", 2), tmp_path)
    kind = "saturated" if fx.chosen("saturated") is not None else "unsaturated"

    def suite(session):
        return Suite(fixtures=[fx], failed_seeds=[], thresholds=Thresholds(),
                     score_cache=sc.ScoreCache(tmp_path / "scores", session=session))

    s1 = suite("one")
    a = {n: s1.training_scores(n, 0) for n in ("random", "fluency")}
    a["draw"] = s1.draw_scores("fluency", 0, kind, 0)
    assert s1.score_cache.computed == 3 and s1.score_cache.hits == 0

    def refuse(*args, **kwargs):
        raise AssertionError("an estimator was called although its score was stored")

    monkeypatch.setattr(Suite, "estimator", refuse)
    s2 = suite("two")
    b = {n: s2.training_scores(n, 0) for n in ("random", "fluency")}
    b["draw"] = s2.draw_scores("fluency", 0, kind, 0)
    assert s2.score_cache.hits == 3 and all(np.array_equal(a[k], b[k]) for k in a)
    with pytest.raises(AssertionError, match="was called"):
        s2.training_scores("fluency", 0, "no_behavior")  # the placebo target: another input, computed


def test_the_bootstraps_resample_values_are_read_back_from_disk(tmp_path, monkeypatch):
    """precision@|GT|'s resample values (bootstrap.DISK_MEMO, set by the plugin): a second process (the memory memo
    emptied) reads them and gets the identical CI; a damaged file is computed again; unset, nothing is written."""
    from bt_bench.checklist import bootstrap as bs

    rng = np.random.default_rng(0)
    step, g, s = np.repeat(np.arange(40), 8), rng.random(320) < 0.1, rng.normal(size=320)
    monkeypatch.setattr(bs, "_PRECISION_CACHE", {})
    monkeypatch.setitem(bs.DISK_MEMO, "folder", None)
    plain = bs.precision_bootstrap(s, g, step, n_resamples=300)
    assert not any(tmp_path.iterdir())
    monkeypatch.setitem(bs.DISK_MEMO, "folder", tmp_path)
    monkeypatch.setattr(bs, "_PRECISION_CACHE", {})
    assert bs.precision_bootstrap(s, g, step, n_resamples=300) == plain
    (f,) = tmp_path.iterdir()
    monkeypatch.setattr(bs, "_PRECISION_CACHE", {})
    real = bs._resample_values
    monkeypatch.setattr(bs, "_resample_values", lambda *a, **k: pytest.fail("resampled although stored"))
    assert bs.precision_bootstrap(s, g, step, n_resamples=300) == plain
    f.write_bytes(b"damaged")
    monkeypatch.setattr(bs, "_PRECISION_CACHE", {})
    monkeypatch.setattr(bs, "_resample_values", real)
    assert bs.precision_bootstrap(s, g, step, n_resamples=300) == plain
    assert np.load(f, allow_pickle=False).shape == (301,)


def test_a_json_memo_is_read_back_only_for_the_same_key(tmp_path):
    """bt_bench.runs.memo.json_memo (the sketch-ranking self-check is kept with it): another key computes, a
    damaged file computes, no folder computes and stores nothing."""
    from bt_bench.runs.memo import json_memo

    calls = []

    def compute(v):
        return lambda: calls.append(v) or {"value": v, "nan": float("nan")}

    key = {"run": "r", "manifest_sha256": "a"}
    assert json_memo(tmp_path, "x", key, compute(1))["value"] == 1
    assert json_memo(tmp_path, "x", dict(key), compute(2))["value"] == 1 and calls == [1]
    assert json_memo(tmp_path, "x", {**key, "manifest_sha256": "b"}, compute(3))["value"] == 3
    for f in tmp_path.iterdir():
        f.write_text("{not json")
    assert json_memo(tmp_path, "x", key, compute(4))["value"] == 4
    assert json_memo(None, "x", key, compute(5))["value"] == 5 and calls == [1, 3, 4, 5]
    assert np.isnan(json_memo(tmp_path, "x", key, compute(6))["nan"])  # NaN survives the round trip


def test_the_paper_gate_reads_no_kept_statistics(tmp_path):
    """Under --bt-paper-gate nothing prepared beforehand stands in for a statistic (a resample-values file planted
    under a digest learned from an earlier run with the same --bt-gate-seed): no stats folder; otherwise one."""
    from bt_bench.checklist import bootstrap
    from bt_bench.plugin.fixtures import _stats_folder
    from bt_bench.plugin.options import Settings

    try:
        assert _stats_folder(Settings(cache_dir=str(tmp_path), paper_gate=True)) is None
        assert bootstrap.DISK_MEMO["folder"] is None
        assert _stats_folder(Settings(cache_dir=str(tmp_path))) is not None
    finally:
        bootstrap.DISK_MEMO["folder"] = None
