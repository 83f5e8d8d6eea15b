"""Derived fixture data (targets, sketches, draw labels) is hash-checked on load like the runs (issue 9 item 8):
a flipped byte, a missing file or data derived for another run is refused with a message that says how to rebuild."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from bt_bench.estimator.handover import training_target
from bt_bench.fixture.reader import Fixture, fixture_config, load_fixture
from bt_bench.runs.store import IntegrityError


@pytest.fixture(scope="module")
def derived(smoke_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("derived_cache")
    fx = load_fixture(smoke_run, fixture_config("smoke", 2), root)
    return smoke_run, fx.folder


def _copy(folder, tmp_path):
    dst = tmp_path / "d"
    shutil.copytree(folder, dst)
    return dst


def test_loads_and_has_the_no_behavior_target(derived):
    run, folder = derived
    fx = Fixture(run, folder)
    t = training_target(fx, "no_behavior")
    assert t.kind == "in_context"  # the placebo is handed over as an in_context target
    assert not np.array_equal(t.final, training_target(fx, "in_context").final)


def test_flipped_byte_is_refused(derived, tmp_path):
    run, folder = derived
    d = _copy(folder, tmp_path)
    victim = sorted(d.rglob("target_in_context*.npy"))[0]
    raw = bytearray(victim.read_bytes())
    raw[-1] ^= 0xFF
    victim.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError, match="does not match its sha256"):
        Fixture(run, d)


def test_missing_file_is_refused(derived, tmp_path):
    run, folder = derived
    d = _copy(folder, tmp_path)
    sorted(d.rglob("has_behavior.npy"))[0].unlink()
    with pytest.raises(IntegrityError, match="missing files"):
        Fixture(run, d)


def test_data_of_another_run_is_refused(derived, tmp_path):
    run, folder = derived
    d = _copy(folder, tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m["run"] = "0" * 20
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IntegrityError, match="not run"):
        Fixture(run, d)


def test_fixture_hands_plain_data_and_the_views_build_the_containers(derived):
    """The fixture stage returns plain arrays; bt_bench.estimator builds CandidateData and Targets from them."""
    from bt_bench.estimator import Target
    from bt_bench.estimator.handover import draw_candidates, training_candidates
    from bt_bench.estimator.views import CandidateData
    from bt_bench.fixture.reader import DrawData, TrainingData
    from bt_bench.fixture.targets import TARGET_KINDS
    from bt_bench.runs import schema

    run, folder = derived
    fx = Fixture(run, folder)
    tr = fx.training()
    assert isinstance(tr, TrainingData) and not isinstance(tr, CandidateData)
    assert list(tr.rows) == list(schema.VISIBLE_FIELDS + schema.TRAINING_LABEL_FIELDS)
    assert [c["step"] for c in tr.checkpoints] == fx.tracin_steps
    data = training_candidates(fx)
    assert data.source == "training" and data.n == len(run.columns["uid"])
    assert [c.step for c in data.checkpoints] == fx.tracin_steps
    assert set(data.labels.names) == set(schema.TRAINING_LABEL_FIELDS)
    vecs = fx.training_targets()
    assert set(vecs) == set(TARGET_KINDS) and all(set(v) == set(fx.tracin_steps) for v in vecs.values())
    t = training_target(fx, "sequence")
    assert t.kind == "sequence" and t.final_step == max(fx.tracin_steps)
    kind = "saturated" if fx.chosen("saturated") is not None else "unsaturated"
    dd = fx.draw(kind, 1)
    assert isinstance(dd, DrawData) and dd.draw == 1 and list(dd.rows) == list(schema.DRAW_FIELDS)
    cands, targets = draw_candidates(fx, kind, 1)
    assert cands.source == "draw" and set(targets) == set(TARGET_KINDS)
    assert all(isinstance(v, Target) and v.draw == 1 for v in targets.values())
    assert targets["no_behavior"].kind == targets["placebo"].kind == "in_context"  # both placebos disguised
    missing = next((k for k in ("saturated", "unsaturated") if fx.chosen(k) is None), None)
    if missing:
        with pytest.raises(LookupError, match=f"no {missing} checkpoint"):
            draw_candidates(fx, missing, 0)


def test_checkpoint_thresholds_are_the_checklists():
    """One set of numbers: the checkpoints the fixture picks follow the checklist's thresholds (defaults equal;
    a profile's overrides and a user's thresholds reach the DrawConfig)."""
    from bt_bench.checklist.base import Thresholds
    from bt_bench.fixture.draws import DrawConfig
    from bt_bench.runs.config import get_profile

    th, dc = Thresholds(), DrawConfig()
    assert (th.min_pairs, th.saturated_rate, (th.unsaturated_low, th.unsaturated_high)) == \
        (dc.min_pairs, dc.saturated, dc.unsaturated)
    assert fixture_config("tiny", 3) == fixture_config("tiny", 3, th)
    smoke = fixture_config("smoke", 2)
    assert smoke == fixture_config("smoke", 2, Thresholds.from_mapping(dict(get_profile("smoke").thresholds)))
    assert (smoke.draw.min_pairs, smoke.draw.saturated, smoke.draw.unsaturated) == (5, 0.05, (0.01, 0.05))
    assert (smoke.draw.candidate_prompts, smoke.draw.target_prompts) == (16, 8)
    user = fixture_config("tiny", 3, Thresholds(min_pairs=50, saturated_rate=0.9, unsaturated_high=0.7))
    assert (user.draw.min_pairs, user.draw.saturated, user.draw.unsaturated) == (50, 0.9, (0.2, 0.7))
    assert user.key("run") != fixture_config("tiny", 3).key("run")


def test_placebos_have_the_real_targets_rows_and_norm(derived):
    """Issue 19 item 4: each placebo is built from as many rows as the real in_context target and handed over with
    its entries (so its norm) at every checkpoint (``targets.disguise``), its kind ``in_context``."""
    from bt_bench.estimator.handover import draw_candidates
    from bt_bench.fixture.targets import PLACEBO_KINDS

    run, folder = derived
    fx = Fixture(run, folder)
    units = [{k: training_target(fx, k) for k in ("in_context", *PLACEBO_KINDS)}]
    for kind in ("saturated", "unsaturated"):
        if fx.chosen(kind) is not None:
            units += [draw_candidates(fx, kind, d)[1] for d in range(2)]
    checked = 0
    for ts in units:
        real = ts["in_context"]
        for p in PLACEBO_KINDS:
            t = ts[p]
            assert t.kind == "in_context"
            for c in real.vectors:
                if not len(real.definition(c)) or not np.any(t.at(c)):
                    continue
                assert len(t.definition(c)) == len(real.definition(c)), (p, c)
                assert np.array_equal(np.sort(t.at(c)), np.sort(real.at(c)))
                checked += 1
    assert checked >= 4


# ---------------------------------------------------------------- sketch seeds (issue 21 item 2)
def test_every_draw_is_sketched_under_each_sketch_seed(derived):
    """The same candidates and target definitions under a second, independent sketch: other sketch vectors of about
    the same norm (the sketch preserves norms, not coordinates), the norms recomputed from them; an unknown sketch seed
    is refused."""
    run, folder = derived
    fx = Fixture(run, folder)
    assert fx.sketch_seeds == [run.config.sketch_seed, run.config.sketch_seed + 1]
    kind = next(k for k in ("saturated", "unsaturated") if fx.chosen(k) is not None)
    c = fx.chosen(kind)
    a, b = fx.draw(kind, 0), fx.draw(kind, 0, sketch_seed=fx.sketch_seeds[1])
    for k in a.rows:
        assert np.array_equal(a.rows[k], b.rows[k])
    assert np.array_equal(a.token_mask, b.token_mask)
    sa, sb = np.asarray(a.sketches["in_run"]), np.asarray(b.sketches["in_run"])
    assert sa.shape == sb.shape and not np.allclose(sa, sb)
    na, nb = np.linalg.norm(sa, axis=1), np.linalg.norm(sb, axis=1)
    assert np.allclose(np.asarray(b.sketches["grad_norm"]), nb, rtol=1e-5)
    assert np.median(np.abs(nb / na - 1)) < 0.2
    for kind_ in a.targets:
        ta, tb = a.targets[kind_][c], b.targets[kind_][c]
        assert not np.allclose(ta, tb) and abs(np.linalg.norm(tb) / np.linalg.norm(ta) - 1) < 0.3, kind_
    assert np.array_equal(np.asarray(fx.draw(kind, 0, sketch_seed=fx.sketch_seeds[0]).sketches["in_run"]), sa)
    with pytest.raises(LookupError, match="sketch seeds"):
        fx.draw(kind, 0, sketch_seed=99)


def test_a_draw_resketched_under_its_own_seed_gives_the_stored_arrays(derived, tmp_path):
    """The further sketch seeds rebuild each target from its stored definition (no sampling): under the stored seed
    that gives the stored target vectors and sketches, so the two sketch seeds sketch the same gradients."""
    from bt_bench.fixture.derive import _resketch_draw
    from bt_bench.fixture.draws import DrawMaker
    from bt_bench.runs import schema

    run, folder = derived
    fx = Fixture(run, folder)
    kind = next(k for k in ("saturated", "unsaturated") if fx.chosen(k) is not None)
    c, data = fx.chosen(kind), fx.draw(kind, 0)
    rows = {k: np.asarray(data.rows[k]) for k in schema.DRAW_FIELDS}
    defs = {k: data.definitions[k][c] for k in data.definitions}
    _resketch_draw(DrawMaker(run, fixture_config("smoke", 2).draw), c, rows, np.asarray(data.token_mask, bool), defs,
                   tmp_path)
    stored = folder / "draws" / kind / "d0"
    for p in sorted(tmp_path.glob("*.npy")):
        assert np.allclose(np.load(p), np.load(stored / p.name), rtol=1e-4, atol=1e-6), p.name
    assert {p.name for p in tmp_path.glob("*.npy")} >= {"sketch.npy", "token_sketch.npy", "target_in_context.npy"}
