"""Scoring sealed off from judging (bt_bench.estimator.sealed): every estimator is imported and run in a sandboxed
process of its own. On the smoke fixture (built here, seconds): the scores are the in-process scores; an estimator
that reads the run cache, the caller's frames or patches the judges gets nothing from it (and, as a control, does
get it when run beside the judge); errors keep their class across the wall; a hung or dying estimator costs its own
call; stdout cannot corrupt the protocol. The red-team runs through `pytest checks --bt-paper-gate` are in
tests/test_redteam.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from bt_bench.estimator import sealed, sandbox

HERE = Path(__file__).resolve().parent / "redteam"
pytestmark = pytest.mark.skipif(not sandbox.available()[0], reason=f"no Landlock here: {sandbox.available()[1]}")
BUILTINS = ("random", "norm_only", "norm_only_step", "fluency", "advantage_only", "tracincp", "gas",
            "gas_fixed_target", "local_buffer", "trak", "tracin_adam")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    cache = tmp_path_factory.mktemp("sealed_cache")
    return _smoke_fixture(cache), cache


@pytest.fixture
def mode(monkeypatch):
    """Set the isolation mode for one test; every scoring process is gone after it."""
    monkeypatch.syspath_prepend(str(HERE))  # the red-team modules are found by dotted path (never imported here)

    def set_mode(m: str) -> None:
        monkeypatch.setattr(sealed.ISOLATION, "mode", m)

    yield set_mode
    sealed.close_all()


def suite_of(fx):
    from bt_bench.checklist.base import Thresholds
    from bt_bench.checklist.suite import Suite

    return Suite(fixtures=[fx], failed_seeds=[], thresholds=Thresholds())


def _kind(fx) -> str:
    return "saturated" if fx.chosen("saturated") is not None else "unsaturated"


def _or_skip(fn):
    from bt_bench.checklist.suite import SkipCell

    try:
        return fn()
    except SkipCell as e:  # NOT JUDGED (an input the smoke fixture lacks) must be NOT JUDGED both ways
        return str(e)


def test_sealed_scores_equal_in_process_scores_for_every_builtin(smoke, mode):
    fx, _ = smoke
    out = {}
    for m in ("none", "sandbox"):
        mode(m)
        s = suite_of(fx)
        for n in BUILTINS:
            out[m, n, "train"] = _or_skip(lambda: s.training_scores(n, 0))
            if n != "norm_only_step":
                out[m, n, "draw"] = _or_skip(lambda: s.draw_scores(n, 0, _kind(fx), 0))
        sealed.close_all()
    assert sum(isinstance(v, np.ndarray) for v in out.values()) >= 30
    for (m, n, w), v in out.items():
        if m == "sandbox":
            ref = out["none", n, w]
            if isinstance(ref, str):
                assert v == ref
                continue
            # BLAS threads differ between the processes (one in the scoring process): summation order only
            np.testing.assert_allclose(v, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max(), err_msg=f"{n} {w}")


def test_the_judging_process_never_imports_an_estimator(smoke, mode):
    fx, _ = smoke
    mode("sandbox")
    before = set(sys.modules)
    s = suite_of(fx)
    s.training_scores("gas", 0)
    est = s.estimator("gas")
    assert type(est).__name__ == "SealedEstimator" and est.sandbox.startswith("Landlock ABI")
    assert not {m for m in set(sys.modules) - before if m.startswith("estimators")}


def _score_rt(fx, name: str):
    s = suite_of(fx)
    return s, s.training_scores(name, 0)


def test_cache_reader_is_refused_by_the_sandbox_and_succeeds_beside_the_judge(smoke, mode, monkeypatch):
    from bt_bench.estimator.errors import ScoringFailedError

    fx, cache = smoke
    monkeypatch.setenv("BT_BENCH_CACHE", str(cache))
    gt = np.asarray(fx.run.columns["is_gt"], float)
    mode("process")  # a separate process without the sandbox: the cache is readable (the control)
    _, y = _score_rt(fx, "rt_sealed:CacheReader")
    assert np.array_equal(y > 0.5, gt > 0.5)
    sealed.close_all()
    mode("sandbox")
    with pytest.raises(ScoringFailedError, match="PermissionError"):
        _score_rt(fx, "rt_sealed:CacheReader")


def _smoke_fixture(root: Path):
    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config

    run = build_run(make_config("smoke", seed=0), root, progress=False)
    return load_fixture(run, fixture_config("smoke", 2), root)


def test_a_scoring_process_cannot_write_the_files_it_is_handed(tmp_path, mode):
    """The stored sketches and checkpoints reach a scoring process as links to the cache's own files (no copy: a
    k = 4096 seed is 2.6 GB), so the sandbox must leave them read-only; the control, unsandboxed, shows the same
    write reaching the cache (its own smoke fixture: the control damages it)."""
    from bt_bench.estimator.errors import ScoringFailedError
    from bt_bench.runs.store import sha256_file

    fx = _smoke_fixture(tmp_path / "cache")
    stored = [*sorted((fx.folder / "train").glob("ckpt_*.npy")),
              *(fx.run.checkpoint_dir(c) / "model.safetensors" for c in fx.tracin_steps)]
    before = [sha256_file(p) for p in stored]
    mode("sandbox")
    with pytest.raises(ScoringFailedError, match="PermissionError"):
        _score_rt(fx, "rt_sealed:InputWriter")
    assert [sha256_file(p) for p in stored] == before
    sealed.close_all()
    mode("process")
    _score_rt(fx, "rt_sealed:InputWriter")
    after = [sha256_file(p) for p in stored]
    assert all(a != b for a, b in zip(after, before)), "the control wrote to every stored file it was handed"


def test_the_pool_links_a_stored_file_and_writes_anything_else(tmp_path):
    from bt_bench.estimator import wire

    f = tmp_path / "stored.npy"
    np.save(f, np.arange(12.0).reshape(3, 4))
    mapped = np.load(f, mmap_mode="r")
    pool = wire.Pool(tmp_path / "pool")
    assert wire.stored_file(mapped) == f and pool.file(mapped).stat().st_ino == f.stat().st_ino
    for other in (mapped[1:], mapped.T, np.array(mapped), np.load(f, mmap_mode="c")):
        assert wire.stored_file(other) is None
        out = pool.file(other)
        assert out.stat().st_ino != f.stat().st_ino and np.array_equal(np.load(out), other)


def test_frame_reader_finds_no_labels_in_its_own_process(smoke, mode):
    from bt_bench.estimator.errors import ScoringFailedError

    fx, _ = smoke
    mode("sandbox")
    with pytest.raises(ScoringFailedError, match="no score_estimator frame"):
        _score_rt(fx, "rt_sealed:FrameReader")


def test_frame_reader_reads_the_labels_beside_the_judge(smoke, tmp_path):
    """The control: in the judging process the same estimator returns the labels (run in a subprocess: a Suite of
    its own)."""
    fx, cache = smoke
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r})\n"
            "import numpy as np\nfrom bt_bench.estimator import sealed\nsealed.ISOLATION.mode = 'none'\n"
            "from bt_bench.fixture.reader import fixture_config, load_fixture\nfrom bt_bench.runs import store\n"
            "from bt_bench.checklist.suite import Suite\nfrom bt_bench.checklist.base import Thresholds\n"
            f"run = store.load_run(store.Path({str(fx.run.path)!r}))\n"
            f"fx = load_fixture(run, fixture_config('smoke', 2), store.Path({str(cache)!r}))\n"
            "s = Suite(fixtures=[fx], failed_seeds=[], thresholds=Thresholds())\n"
            "y = s.training_scores('rt_sealed:FrameReader', 0)\n"
            "print('LABELS', np.array_equal(y > 0.5, np.asarray(run.columns['is_gt']) > 0.5))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert "LABELS True" in p.stdout, p.stdout[-2000:] + p.stderr[-3000:]


def test_judge_patcher_patches_only_its_own_process(smoke, mode):
    from bt_bench.checklist import registry

    fx, _ = smoke
    mode("sandbox")
    originals = {(m, n): f for m in registry.MODULES for n, f in vars(m).items() if n.startswith("judge")}
    assert len(originals) >= len(registry.MODULES)
    _score_rt(fx, "rt_patcher:JudgePatcher")  # imported, and scored, in its scoring process
    assert all(vars(m)[n] is f for (m, n), f in originals.items())
    assert "rt_patcher" not in sys.modules


def test_errors_keep_their_class_across_the_wall(smoke, mode):
    from bt_bench.checklist.suite import SkipCell
    from bt_bench.estimator.errors import CapabilityError, ScoreShapeError

    fx, _ = smoke
    mode("sandbox")
    with pytest.raises(CapabilityError, match="in_run_sketches"):
        _score_rt(fx, "rt_behaviour:Undeclared")
    with pytest.raises(ScoreShapeError, match="real-valued"):
        _score_rt(fx, "rt_behaviour:ObjectScores")
    with pytest.raises(SkipCell, match="checkpoint"):  # MissingInputError -> NOT JUDGED, as in-process
        _score_rt(fx, "redteam_estimators:NeverScores")


def test_print_in_an_estimator_does_not_corrupt_the_protocol(smoke, mode):
    fx, _ = smoke
    mode("sandbox")
    _, y = _score_rt(fx, "rt_behaviour:Printer")
    assert np.allclose(y, fx.run.columns["advantage"] * 0 + y)  # scored; the fit ran too
    assert len(y) == len(fx.run.columns["uid"])


def test_a_dying_estimator_costs_its_call_and_the_next_call_restarts_it(smoke, mode):
    from bt_bench.estimator.errors import ScoringFailedError

    fx, _ = smoke
    mode("sandbox")
    with pytest.raises(ScoringFailedError, match="died .exit code 3"):
        _score_rt(fx, "rt_behaviour:Dies")
    _, y = _score_rt(fx, "norm_only")  # other estimators unaffected
    assert len(y)


def test_a_hung_estimator_is_killed_at_the_time_limit(smoke, mode, monkeypatch):
    from bt_bench.estimator.errors import CallTimeoutError
    from bt_bench.estimator.scoring import TIME_LIMIT

    fx, _ = smoke
    mode("sandbox")
    monkeypatch.setattr(TIME_LIMIT, "seconds", 3.0)
    s = suite_of(fx)
    with pytest.raises(CallTimeoutError, match="timed out after 3 s"):
        s.training_scores("rt_behaviour:Sleeper", 0)
    assert "rt_behaviour:Sleeper" not in sealed._processes  # killed, not left sleeping


def test_an_allowed_folder_holding_the_cache_is_carved(tmp_path):
    """A repository on PYTHONPATH whose .bt_cache holds the runs: the repository stays readable, the cache not."""
    repo = tmp_path / "repo"
    (repo / ".bt_cache" / "runs").mkdir(parents=True)
    (repo / "pkg").mkdir()
    (repo / "mod.py").write_text("")
    read, listable = sandbox.carve([str(repo)], [str(repo / ".bt_cache")])
    assert read == sorted([str(repo / "pkg"), str(repo / "mod.py")]) and listable == [str(repo)]
    read, listable = sandbox.carve([str(repo / "pkg")], [str(repo / ".bt_cache")])  # disjoint: untouched
    assert read == [str(repo / "pkg")] and listable == []


def test_sandboxed_process_cannot_read_outside_its_allow_list(tmp_path):
    secret = tmp_path / "cache" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("labels")
    (tmp_path / "code.py").write_text("x = 1")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    code = ("import sys\nfrom bt_bench.estimator import sandbox\n"
            f"r, ls = sandbox.carve([*sandbox.SYSTEM_READ, sys.prefix, sys.base_prefix, *sys.path, {str(tmp_path)!r}],"
            f" [{str(secret.parent)!r}])\n"
            f"sandbox.restrict(r, [{str(allowed)!r}], ls)\n"
            f"open({str(allowed / 'w.txt')!r}, 'w').write('ok')\n"
            f"open({str(tmp_path / 'code.py')!r}).read()\n"
            f"try:\n    open({str(secret)!r}).read(); print('READ')\nexcept PermissionError: print('DENIED')\n"
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=2); print('NET')\n"
            "except PermissionError: print('NONET')\nexcept OSError as e: print('NET', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert p.stdout.split() == ["DENIED", "NONET"], p.stdout + p.stderr[-2000:]
    assert (allowed / "w.txt").read_text() == "ok"


def test_paper_gate_refuses_an_unsealed_isolation(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = pytester.runpytest("--bt-paper-gate", "--bt-isolation", "none")
    assert r.ret != 0
    r.stderr.fnmatch_lines(["*--bt-paper-gate refuses --bt-isolation none*"])


def test_views_and_targets_cross_the_wall_unchanged(smoke, tmp_path):
    """Every field, sketch, checkpoint fact, objective entry and target part (definitions with their weight
    included) decodes to what was encoded; nothing is a pickle."""
    from bt_bench.estimator import Capability, handover, wire

    fx, _ = smoke
    data, targets = handover.draw_candidates(fx, _kind(fx), 0)

    class Everything:
        name, level = "everything", "rollout"
        capabilities = frozenset(Capability) - {Capability.LABELS}

        def score(self, candidates, target):
            return None

    view = data.view_for(Everything())
    target = next(iter(targets.values()))
    pool_dir, box_dir = tmp_path / "pool", tmp_path / "box"
    box_dir.mkdir()
    out = wire.Outbox(box_dir, wire.Pool(pool_dir))
    enc_v, enc_t = wire.encode_view(view, out), wire.encode_target(target, out)
    inbox = wire.Inbox(box_dir)
    back = wire.decode_view(enc_v, inbox, model_loader=None)
    t2 = wire.decode_target(enc_t, inbox)
    assert back.field_names == view.field_names and len(back) == len(view)
    for f in view.field_names:
        assert np.array_equal(getattr(back, f), getattr(view, f)), f
    assert set(back._sketches) == set(view._sketches) and back.checkpoints == view.checkpoints
    assert dict(back.objective) == dict(view.objective)
    for k, v in view._sketches.items():
        w = back._sketches[k]
        if isinstance(v, np.ndarray):
            assert np.array_equal(w, v), k
        else:
            assert set(v) == set(w) and all(np.array_equal(np.asarray(w[s]), np.asarray(v[s])) for s in v), k
    assert t2.kind == target.kind and t2.final_step == target.final_step and t2.draw == target.draw
    assert all(np.array_equal(t2.vectors[s], target.vectors[s]) for s in target.vectors)
    if target.definitions:
        for s, d in target.definitions.items():
            assert t2.definitions[s].weight == d.weight and t2.definitions[s].loss == d.loss
            assert np.array_equal(t2.definitions[s].completion_ids, d.completion_ids)
    for f in box_dir.glob("*.npy"):  # plain .npy only (model folders: config, tokenizer, safetensors)
        np.load(f, allow_pickle=False)
    assert {p.suffix for p in box_dir.glob("model*/*")} <= {".json", ".safetensors", ".jinja", ".txt", ""}


def test_scoring_folders_go_beside_a_cache_on_another_file_system(tmp_path, monkeypatch):
    """Links need one file system: with the cache on another one than the temporary folder, the scoring folders go
    into the cache (else every scoring process would get a copy of each seed's stored sketches)."""
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system (/dev/shm) here")
    monkeypatch.setenv("BT_BENCH_CACHE", str(tmp_path / "cache"))
    assert sealed._scratch_parent() is None  # same file system as the temporary folder: /tmp as before
    far = Path(tempfile.mkdtemp(dir=other))
    try:
        monkeypatch.setenv("BT_BENCH_CACHE", str(far))
        assert sealed._scratch_parent() == str(far / ".scoring")
    finally:
        shutil.rmtree(far, ignore_errors=True)
