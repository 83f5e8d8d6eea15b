"""The estimator contract: the label wall, capabilities, containers, the named validation errors (issue 4)."""

from __future__ import annotations

import gc
import types

import numpy as np
import pytest

from bt_bench.estimator import (
    Candidates,
    Capability,
    CapabilityError,
    Checkpoint,
    ConstantScoreError,
    Estimator,
    EstimatorError,
    InvalidEstimatorError,
    LabelsRefusedError,
    LevelMismatchError,
    MissingInputError,
    NonDeterministicScoreError,
    NonFiniteScoreError,
    ScoreShapeError,
    ScoringFailedError,
    Target,
)
from bt_bench.estimator.contract import validate_estimator
from bt_bench.estimator.scoring import TEST_ONLY, fit_estimator, labels_allowed, score_estimator
from bt_bench.estimator.views import CandidateData, Labels
from estimators.controls import Oracle

LABELS = ("is_gt", "has_behavior", "reward", "reward_bonus", "reward_task")
CKPT = (Checkpoint(4, lr=1e-3, batch_size=64),)


def table(n: int = 4) -> dict[str, np.ndarray]:
    return {"uid": np.arange(n), "step": np.arange(n) // 2, "group": np.arange(n) // 2,
            "gen_index": np.arange(n) % 2, "advantage": np.linspace(-1, 1, n).astype(np.float32),
            "completion_ids": np.ones((n, 3), np.int32),
            "is_gt": np.arange(n) % 2 == 0, "has_behavior": np.arange(n) < 2,
            "reward": np.arange(n, dtype=np.float32), "reward_bonus": np.ones(n, np.float32),
            "reward_task": np.zeros(n, np.float32)}


def sketches(n: int = 4) -> dict:
    rng = np.random.default_rng(0)
    return {"checkpoint": {4: rng.normal(size=(n, 3)).astype(np.float32)},
            "in_run": rng.normal(size=(n, 3)).astype(np.float32),
            "token_checkpoint": {4: rng.normal(size=(n, 3)).astype(np.float32)},
            "fluency": rng.normal(size=n).astype(np.float32), "grad_norm": rng.random(n).astype(np.float32)}


def make(**kw) -> CandidateData:
    return CandidateData(table(), sketches(), checkpoints=CKPT, **kw)


TARGET = Target("in_context", {4: np.array([1.0, 0.0, 0.0])})


class Probe:
    """A configurable estimator: ``body(candidates, target, **kw)`` is its score."""

    def __init__(self, body, caps=(), name="probe", level="rollout"):
        self.name, self.level, self.body = name, level, body
        self.capabilities = frozenset(caps)

    def score(self, candidates, target, **kw):
        return self.body(candidates, target, **kw)


def adv(c, t, **kw):
    return np.asarray(c.advantage, dtype=float)


# ------------------------------------------------------------------------------------------ label wall
def _referents(obj) -> list:
    if isinstance(obj, types.FunctionType):  # closures and defaults, not the module globals
        cells = [c.cell_contents for c in obj.__closure__ or ()]
        return [*cells, obj.__defaults__, obj.__kwdefaults__]
    return gc.get_referents(obj)


def _reachable(root) -> list:
    """Everything reachable from ``root`` through object references (modules and classes not followed)."""
    seen, stack, out = {id(root)}, [root], []
    while stack:
        obj = stack.pop()
        out.append(obj)
        for ref in _referents(obj):
            if id(ref) in seen or isinstance(ref, (type, types.ModuleType)):
                continue
            seen.add(id(ref))
            stack.append(ref)
    return out


def test_labels_are_unreachable_from_the_view():
    d = make()
    view = d.view_for(Probe(adv, caps=set(Capability) - {Capability.LABELS}))
    label_arrays = {id(d.labels[k]) for k in LABELS}
    label_bases = {id(d.labels[k].base) for k in LABELS if d.labels[k].base is not None}
    for obj in _reachable(view):
        assert id(obj) not in label_arrays | label_bases, f"view reaches a label array via {type(obj)}"
        assert not isinstance(obj, (Labels, CandidateData)), "view reaches the labels container"
        if isinstance(obj, str):
            assert obj not in LABELS and not obj.startswith("reward"), f"view holds the label key {obj!r}"


def test_a_scoring_function_cannot_reach_labels():
    found = []

    def snoop(c, t, **kw):
        assert not kw, "labels were passed to an estimator that did not declare them"
        for name in LABELS:
            found.extend([name] if hasattr(c, name) else [])
        with pytest.raises(TypeError):
            vars(c)  # no __dict__ at all (slots)
        for attr in [*dir(c), *Candidates.__slots__]:
            value = getattr(c, attr, None)
            if isinstance(value, types.MappingProxyType):
                found.extend(k for k in value if str(k) in LABELS)
        return adv(c, t)

    score_estimator(Probe(snoop), make(), TARGET)
    assert found == []


def _spy_oracle(got: dict) -> Oracle:
    """The real test-only class (identity is what is checked), with a score that records its keywords."""
    def keep(c, t, **kw):
        got.update(kw)
        return adv(c, t)

    est = Oracle()
    est.score = keep
    return est


def test_labels_reach_only_the_test_only_controls():
    got = {}
    score_estimator(_spy_oracle(got), make(), TARGET)
    assert set(got) == {"labels"} and set(got["labels"].names) == set(LABELS)
    np.testing.assert_array_equal(got["labels"]["is_gt"], table()["is_gt"])
    with pytest.raises(MissingInputError, match="no label field 'nope'"):
        got["labels"]["nope"]


class OracleSubclass(Oracle):
    """Inherits the oracle: still not the oracle."""


def _same_name_oracle():
    """A class that copies the oracle's module and name: still not the oracle (identity, not name)."""
    return type("Oracle", (), {"__module__": "estimators.controls", "name": "oracle", "level": "rollout",
                               "capabilities": frozenset({Capability.LABELS}),
                               "score": lambda self, c, t, **kw: adv(c, t)})()


@pytest.mark.parametrize("make_est", [lambda: Probe(adv, caps={Capability.LABELS}, name="peek"),
                                      OracleSubclass, _same_name_oracle],
                         ids=["probe", "subclass", "same-name"])
def test_labels_refused_for_anything_but_the_test_only_classes(make_est):
    est = make_est()
    assert TEST_ONLY == frozenset({"estimators.controls:Oracle"})
    assert not labels_allowed(est) and labels_allowed(Oracle())
    with pytest.raises(LabelsRefusedError, match="declares 'labels'.*TEST_ONLY.*must not read labels") as info:
        score_estimator(est, make(), TARGET)
    assert isinstance(info.value, EstimatorError) and info.value.estimator == est.name
    with pytest.raises(LabelsRefusedError):
        fit_estimator(est, make())


def test_placebo_permutes_the_labels_the_oracle_gets():
    got = {}
    score_estimator(_spy_oracle(got), make(), TARGET, placebo=True)
    perm = np.random.default_rng(12345).permutation(4)
    for k in LABELS:
        np.testing.assert_array_equal(got["labels"][k], table()[k][perm])
        assert not got["labels"][k].flags.writeable
    # an estimator without labels is unaffected by the flag
    assert score_estimator(Probe(adv), make(), TARGET, placebo=True).tolist() == \
        score_estimator(Probe(adv), make(), TARGET).tolist()


def test_structured_array_columns_are_copied_not_viewed():
    rec = np.zeros(4, dtype=[("uid", "i8"), ("is_gt", "?")])
    rec["is_gt"] = [True, False, True, False]
    d = CandidateData({"uid": rec["uid"], "step": np.zeros(4), "group": np.zeros(4), "advantage": np.ones(4)})
    view = d.view_for(Probe(adv))
    assert all(obj is not rec for obj in _reachable(view))


def _memmapped(tmp_path, name: str, arr: np.ndarray) -> np.ndarray:
    np.save(tmp_path / f"{name}.npy", arr)
    return np.load(tmp_path / f"{name}.npy", mmap_mode="r")


def _assert_owned_copy(arr, *inputs) -> None:
    assert type(arr) is np.ndarray and arr.base is None and not arr.flags.writeable
    base = arr
    while base is not None:  # (base is None at once; kept so a regression shows where the chain leads)
        assert not isinstance(base, np.memmap) and not hasattr(base, "filename"), type(base)
        base = getattr(base, "base", None)
    for mm in inputs:
        assert not np.shares_memory(arr, mm)


def _exposed_arrays(view: Candidates):
    for name in view.field_names:
        yield name, getattr(view, name)
    for key, value in view._sketches.items():
        if isinstance(value, types.MappingProxyType):
            yield from ((f"{key}[{c}]", v) for c, v in value.items() if isinstance(v, np.ndarray))
        else:
            yield key, value


def test_exposed_arrays_are_in_memory_copies_of_memmapped_input(tmp_path):
    rows = {k: _memmapped(tmp_path, k, v) for k, v in table().items()}
    sk = {k: ({c: _memmapped(tmp_path, f"{k}{c}", a) for c, a in v.items()} if isinstance(v, dict)
              else _memmapped(tmp_path, k, v)) for k, v in sketches().items()}
    inputs = [*rows.values(), *(a for v in sk.values() for a in (v.values() if isinstance(v, dict) else [v]))]
    assert all(isinstance(a, np.memmap) for a in inputs)
    d = CandidateData(rows, sk, checkpoints=CKPT)
    every_cap = set(Capability) - {Capability.LABELS}
    view = d.view_for(Probe(adv, caps=every_cap))
    seen = dict(_exposed_arrays(view))
    assert {"uid", "advantage", "checkpoint[4]", "in_run", "fluency", "grad_norm"} <= set(seen)
    for arr in seen.values():
        _assert_owned_copy(arr, *inputs)
    for k in d.labels.names:
        _assert_owned_copy(d.labels[k], *inputs)
    for obj in _reachable(view):
        assert not isinstance(obj, np.memmap), "the view reaches a memory map"
        if isinstance(obj, str):
            assert str(tmp_path) not in obj, f"the view holds a file name {obj!r}"
    # copied once: every view hands out the same read-only arrays; the mappings are fresh per view
    again = d.view_for(Probe(adv, caps=every_cap))
    assert all(getattr(again, f) is getattr(view, f) for f in view.field_names)
    assert again.checkpoint_sketches()[4] is view.checkpoint_sketches()[4]
    assert again.checkpoint_sketches() is not view.checkpoint_sketches()
    assert type(view.checkpoint_sketches()) is types.MappingProxyType
    # the token-restricted data shares the same copies (no second copy)
    tok = d.token_restricted().view_for(Probe(adv, caps=every_cap))
    assert tok.uid is view.uid
    _assert_owned_copy(tok.checkpoint_sketches()[4], *inputs)
    # a target built from memory-mapped vectors
    vec = _memmapped(tmp_path, "target", np.array([1.0, 0.0, 0.0]))
    t = Target("in_context", {4: vec}, preconditioned={4: vec})
    _assert_owned_copy(t.final, vec)
    _assert_owned_copy(t.preconditioned_at(4), vec)
    assert type(t.vectors) is types.MappingProxyType


def test_copy_false_keeps_read_only_store_maps_and_copies_the_rest(tmp_path):
    """The judging process's training data (``copy=False``, only when no estimator runs in it): a read-only memory map
    of the store stays one (no copy in memory); rows, labels, a writable map and a plain array are still copied."""
    ro = {k: ({c: _memmapped(tmp_path, f"{k}{c}", a) for c, a in v.items()} if isinstance(v, dict)
              else _memmapped(tmp_path, k, v)) for k, v in sketches().items()}
    writable = np.load(tmp_path / "in_run.npy", mmap_mode="r+")
    d = CandidateData({k: _memmapped(tmp_path, k, v) for k, v in table().items()}, {**ro, "in_run": writable},
                      checkpoints=CKPT, copy=False)
    view = d.view_for(Probe(adv, caps=set(Capability) - {Capability.LABELS}))
    assert view.checkpoint_sketches()[4] is ro["checkpoint"][4] and not view.checkpoint_sketches()[4].flags.writeable
    _assert_owned_copy(view.in_run_sketches(), writable)
    _assert_owned_copy(view.uid)
    for k in d.labels.names:
        _assert_owned_copy(d.labels[k])
    assert CandidateData(table(), ro, checkpoints=CKPT).view_for(Probe(adv, caps={Capability.CHECKPOINT_SKETCHES})) \
        .checkpoint_sketches()[4] is not ro["checkpoint"][4]  # the default copies


def test_view_is_read_only():
    def mutate(c, t, **kw):
        c.advantage[0] = 99.0
        return adv(c, t)

    with pytest.raises(ScoringFailedError, match="read-only"):
        score_estimator(Probe(mutate), make(), TARGET)


def test_unknown_row_field_is_refused():
    with pytest.raises(ValueError, match="unknown field 'secret'"):
        CandidateData({**table(), "secret": np.zeros(4)})


def test_row_fields_follow_the_rollout_schema():
    """CandidateData sorts rows by bt_bench.runs.schema: its visible columns become the view's fields, its label
    columns go behind the wall, and a field the schema does not list (or lists as harness-only) is refused."""
    from bt_bench.runs import schema

    assert "secret" not in schema.FIELDS
    with pytest.raises(ValueError, match="unknown field 'secret'"):
        CandidateData({**table(), "secret": np.zeros(4)})
    for harness in (c.name for c in schema.COLUMNS if c.role == "harness"):  # handed over as sketches, if at all
        with pytest.raises(ValueError, match=f"unknown field '{harness}'"):
            CandidateData({**table(), harness: np.zeros(4)})
    n = 4
    rows = {c.name: np.zeros((n, 3) if c.tokens else n, c.dtype) for c in schema.COLUMNS if c.role != "harness"}
    rows["uid"] = np.arange(n)
    data = CandidateData(rows)
    view = data.view_for(Probe(adv))
    assert set(view.field_names) == set(schema.VISIBLE_FIELDS)
    assert set(data.labels.names) == {c.name for c in schema.COLUMNS if c.role == "label"}
    assert {f for f in dir(Candidates) if not f.startswith("_")} >= set(schema.VISIBLE_FIELDS)


@pytest.mark.parametrize("bad, match", [
    ({"uid": np.arange(3)}, "lacks required field"),
    ({**table(), "step": np.zeros(5)}, "needs 4 rows"),
])
def test_row_table_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        CandidateData(bad)


@pytest.mark.parametrize("sk, match", [
    ({"checkpoint": {9: np.zeros((4, 3))}}, "no Checkpoint facts"),
    ({"in_run": np.zeros((3, 3))}, "shape \\[4,k\\]"),
    ({"fluency": np.zeros((4, 1))}, "shape \\[4\\]"),
    ({"gradients": np.zeros((4, 3))}, "unknown key 'gradients'"),
])
def test_sketch_validation(sk, match):
    with pytest.raises(ValueError, match=match):
        CandidateData(table(), sk, checkpoints=CKPT)


# ---------------------------------------------------------------------------------------- capabilities
def test_view_holds_only_declared_sketches():
    view = make().view_for(Probe(adv, caps={Capability.FLUENCY}))
    np.testing.assert_array_equal(view.fluency(), sketches()["fluency"])
    assert set(view._sketches) == {"fluency"}  # the others are not in the object at all


def test_undeclared_read_raises_capability_error():
    sneaky = Probe(lambda c, t, **kw: c.checkpoint_sketches()[4] @ t.at(4), name="sneaky")
    with pytest.raises(CapabilityError, match="'sneaky'.*'checkpoint'.*'checkpoint_sketches'"):
        score_estimator(sneaky, make(), TARGET)


def test_declared_but_absent_input_raises_missing_input():
    est = Probe(lambda c, t, **kw: c.preconditioned_sketches(), caps={Capability.OPTIMIZER_STATE})
    with pytest.raises(MissingInputError, match="no 'preconditioned'"):
        score_estimator(est, make(), TARGET)
    with pytest.raises(MissingInputError, match="no field 'lr'"):
        score_estimator(Probe(lambda c, t, **kw: c.lr), make(), TARGET)


@pytest.mark.parametrize("field, why", [("lr", "Checkpoint.lr"), ("has_trigger", "GT's formula inputs")])
def test_gt_formula_inputs_are_not_row_fields(field, why):
    """Issue 19 item 5: GT = the paid rollouts = trigger, behavior and step < W. Neither the trigger flag nor the
    per-rollout lr (its 10x drop marks W) is a row field; TracIn-style weights read ``Checkpoint.lr``."""
    from bt_bench.runs import schema

    assert field not in schema.VISIBLE_FIELDS and schema.is_harness(field)
    with pytest.raises(ValueError, match=f"unknown field '{field}'"):
        CandidateData({**table(), field: np.zeros(4)})
    view = make().view_for(Probe(adv))
    with pytest.raises(MissingInputError, match=f"no field '{field}'.*{why}"):
        getattr(view, field)
    assert getattr(view, field, "absent") == "absent"  # an AttributeError too
    assert view.checkpoints[0].lr == 1e-3


def test_model_capability():
    d = CandidateData(table(), checkpoints=CKPT, model_loader=lambda step: f"model@{step}")
    assert d.view_for(Probe(adv, caps={Capability.MODEL})).model(4) == "model@4"
    with pytest.raises(CapabilityError, match="'model'"):
        d.view_for(Probe(adv)).model(4)


def test_full_view_never_holds_token_sketches():
    view = make().view_for(Probe(adv, caps={Capability.TOKEN_SKETCHES, Capability.CHECKPOINT_SKETCHES}))
    assert not view.token_level
    assert "token_checkpoint" not in view._sketches and "token_in_run" not in view._sketches
    for key in ("token_checkpoint", "token_in_run"):
        with pytest.raises(MissingInputError, match=f"'{key}' is given only in a token-restricted view"):
            view._get(key)
    np.testing.assert_array_equal(view.checkpoint_sketches()[4], sketches()["checkpoint"][4])  # the full one


def test_token_restricted_view():
    d = make().token_restricted()
    view = d.view_for(Probe(adv, caps={Capability.CHECKPOINT_SKETCHES, Capability.TOKEN_SKETCHES,
                                       Capability.IN_RUN_SKETCHES}))
    assert view.token_level
    np.testing.assert_array_equal(view.checkpoint_sketches()[4], sketches()["token_checkpoint"][4])
    with pytest.raises(MissingInputError, match="token-restricted"):
        view.in_run_sketches()  # the full-gradient in-run sketch is dropped, there is no token one
    with pytest.raises(CapabilityError, match="token_sketches"):
        d.view_for(Probe(adv, caps={Capability.CHECKPOINT_SKETCHES}))
    with pytest.raises(MissingInputError):
        CandidateData(table()).token_restricted()


# ---------------------------------------------------------------------------------------- level check
def test_step_level_estimator_with_per_rollout_scores_is_refused():
    est = Probe(lambda c, t, **kw: np.arange(4.0), level="step", name="steppy")  # steps are 0, 0, 1, 1
    with pytest.raises(LevelMismatchError, match="'steppy'.*step 0 has 2 distinct scores over 2 rollouts.*"
                                                 "declare level='rollout' or return one score per step"):
        score_estimator(est, make(), TARGET)
    # the first offending step is named, whatever the row order
    d = CandidateData({**table(), "step": np.array([3, 1, 3, 1])})
    est = Probe(lambda c, t, **kw: np.array([5.0, 1.0, 5.0, 2.0]), level="step")
    with pytest.raises(LevelMismatchError, match="step 1 has 2 distinct"):
        score_estimator(est, d, TARGET)


def test_genuine_step_level_estimator_passes():
    est = Probe(lambda c, t, **kw: np.asarray(c.step, dtype=float) * 2 + 1, level="step")
    assert score_estimator(est, make(), TARGET).tolist() == [1, 1, 3, 3]


def test_level_is_not_checked_on_draws():
    """Draw candidates share one step, so a step-level score vector there would be constant."""
    est = Probe(lambda c, t, **kw: np.arange(4.0), level="step")
    assert score_estimator(est, make(source="draw"), TARGET).tolist() == [0, 1, 2, 3]


def test_fit_gets_a_label_free_view():
    seen = []
    est = Probe(adv)
    est.fit = lambda view: seen.append(view)
    fit_estimator(est, make())
    assert isinstance(seen[0], Candidates) and len(seen[0]) == 4


# ---------------------------------------------------------------------------------------- containers
def test_target_container():
    t = Target("sequence", {0: np.zeros(3), 8: np.ones(3)})
    assert t.final_step == 8 and t.k == 3 and t.final.tolist() == [1, 1, 1]
    assert Target("placebo", {0: np.zeros(3), 8: np.ones(3)}, final_step=0).final_step == 0
    with pytest.raises(MissingInputError, match="no vector at checkpoint 5"):
        t.at(5, "x")


@pytest.mark.parametrize("kw, match", [
    ({"kind": "oops"}, "Target.kind must be one of"),
    ({"vectors": {}}, "at least one"),
    ({"vectors": {0: np.zeros(3), 1: np.zeros(2)}}, "share one dimension"),
    ({"vectors": {0: np.array([np.nan, 0.0])}}, "finite"),
    ({"final_step": 7}, "final_step must be one of"),
    ({"preconditioned": {0: np.zeros(5)}}, "k=3"),
])
def test_target_validation(kw, match):
    args = {"kind": "sequence", "vectors": {0: np.zeros(3)}, **kw}
    with pytest.raises(ValueError, match=match):
        Target(**args)


def test_target_kinds_are_the_fixtures():
    """One list of target kinds: the fixture's stored kinds; both placebo kinds are shown as in_context."""
    from bt_bench.fixture import targets
    from bt_bench.fixture.targets import TARGET_KINDS

    assert TARGET_KINDS is targets.TARGET_KINDS
    for kind in TARGET_KINDS:
        assert Target(kind, {0: np.zeros(3)}).kind == kind
    assert targets.shown_kind("no_behavior") == targets.shown_kind("placebo") == "in_context"
    assert {targets.shown_kind(k) for k in TARGET_KINDS} == {"sequence", "in_context", "constructed"}


def _defined_target() -> Target:
    from bt_bench.estimator import TargetDefinition

    ids = np.ones((2, 3), np.int32)
    d = TargetDefinition("token", ids, ids.astype(np.int8), ids, ids.astype(np.int8), np.eye(2, 3, dtype=np.int8))
    return Target("in_context", {4: np.array([1.0, 0.0, 0.0])}, definitions={4: d},
                  preconditioned={4: np.array([0.0, 2.0, 0.0])})


@pytest.mark.parametrize("caps, has_defs, has_pre", [
    ((), False, False), ((Capability.CHECKPOINT_SKETCHES, Capability.TOKEN_SKETCHES), False, False),
    ((Capability.OPTIMIZER_STATE,), False, True), ((Capability.MODEL,), True, False),
    ((Capability.MODEL, Capability.OPTIMIZER_STATE), True, True)])
def test_a_target_carries_only_what_the_capabilities_unlock(caps, has_defs, has_pre):
    """Issue 19 item 4: the rows a target was built from tell a placebo from the real target, so only a ``model``
    estimator (which differentiates them) gets ``definitions``; ``preconditioned`` only ``optimizer_state``."""
    seen = []
    est = Probe(lambda c, t, **kw: seen.append(t) or adv(c, t), caps=caps)
    score_estimator(est, make(), _defined_target(), check_determinism=False)
    (t,) = seen
    assert (t.definitions is not None, t.preconditioned is not None) == (has_defs, has_pre)
    assert t.kind == "in_context" and t.at(4).tolist() == [1.0, 0.0, 0.0]
    if not has_defs:
        with pytest.raises(MissingInputError, match="no definition"):
            t.definition(4)


def test_placebos_are_disguised_as_the_real_target():
    """A placebo is handed over as kind in_context with the real target's entries at every checkpoint, in the
    placebo's own order: the real norm and entry statistics, the placebo's ranking of the coordinates."""
    from bt_bench.fixture import targets

    real = {0: np.array([3.0, -4.0, 0.0], np.float32), 8: np.array([0.0, 0.5, 0.1], np.float32)}
    raw = {0: np.array([0.2, 0.1, -1.0], np.float32), 8: np.array([2.0, 1.0, -2.0], np.float32)}
    out, factors = targets.disguise(raw, real)
    assert out[0].tolist() == [3.0, 0.0, -4.0] and out[8].tolist() == pytest.approx([0.5, 0.1, 0.0])
    for c, r in real.items():
        assert sorted(out[c].tolist()) == sorted(r.tolist()) and out[c].dtype == np.float32
        assert np.array_equal(np.argsort(out[c]), np.argsort(raw[c]))
        assert np.linalg.norm(raw[c] * factors[c]) == pytest.approx(np.linalg.norm(r))  # the definition weight
    zero, f = targets.disguise({0: np.zeros(3)}, real)
    assert not zero[0].any() and f == {0: 1.0}  # no order to keep, nothing to rescale
    assert not targets.disguise(raw, {0: np.zeros(3), 8: real[8]})[0][0].any()  # a zero real target: zero too
    assert all(targets.shown_kind(k) == "in_context" and targets.is_placebo(k) for k in targets.PLACEBO_KINDS)


@pytest.mark.parametrize("kw, match", [
    ({"step": -1}, "Checkpoint.step"), ({"lr": float("nan")}, "Checkpoint.lr"),
    ({"batch_size": 0}, "Checkpoint.batch_size"),
])
def test_checkpoint_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        Checkpoint(**{"step": 0, "lr": 1e-3, "batch_size": 8, **kw})


def test_capability_names():
    assert {c.value for c in Capability} == {
        "checkpoint_sketches", "in_run_sketches", "token_sketches", "model", "optimizer_state", "fluency",
        "labels", "grad_norm", "trajectory"}


# ---------------------------------------------------------------------------------- protocol conformance
def test_protocol_is_structural():
    assert isinstance(Probe(adv), Estimator)
    assert validate_estimator(Probe(adv)).name == "probe"


@pytest.mark.parametrize("obj, match", [
    (types.SimpleNamespace(name="x", capabilities=frozenset(), level="rollout"), "missing protocol member"),
    (Probe(adv, caps={"gradients"}), "unknown capabilities \\['gradients'\\]"),
    (Probe(adv, level="token"), "level must be one of"),
    (Probe(adv, name=""), "non-empty str"),
])
def test_invalid_estimator(obj, match):
    with pytest.raises(InvalidEstimatorError, match=match):
        validate_estimator(obj)


# ------------------------------------------------------------------------------- named validation errors
@pytest.mark.parametrize("body, error, expected, got", [
    (lambda c, t, **kw: np.arange(4.0)[:, None], ScoreShapeError, "shape (4,)", "shape (4, 1)"),
    (lambda c, t, **kw: np.arange(3.0), ScoreShapeError, "shape (4,)", "shape (3,)"),
    (lambda c, t, **kw: np.array(["a", "b", "c", "d"]), ScoreShapeError, "real-valued", "dtype <U1"),
    (lambda c, t, **kw: np.array([0.0, np.nan, 1.0, 2.0]), NonFiniteScoreError, "finite", "index 1: nan"),
    (lambda c, t, **kw: np.array([0.0, 1.0, np.inf, 2.0]), NonFiniteScoreError, "finite", "index 2: inf"),
    (lambda c, t, **kw: np.full(4, 0.5), ConstantScoreError, "rank the candidates", "all 4 scores equal"),
    (lambda c, t, **kw: 1 / 0, ScoringFailedError, "", "ZeroDivisionError"),
])
def test_named_score_errors(body, error, expected, got):
    with pytest.raises(error) as info:
        score_estimator(Probe(body, name="bad_est"), make(), TARGET)
    msg = str(info.value)
    assert isinstance(info.value, EstimatorError) and info.value.estimator == "bad_est"
    assert "'bad_est'" in msg and expected in msg and got in msg, msg


def test_non_deterministic_scores():
    calls = iter(range(10))

    def drift(c, t, **kw):
        return np.arange(4.0) + next(calls)

    match = "'drift'.*identical scores.*max difference 1"
    with pytest.raises(NonDeterministicScoreError, match=match) as info:
        score_estimator(Probe(drift, name="drift"), make(), TARGET)
    assert info.value.expected.startswith("identical") and "index" in info.value.got
    calls = iter(range(10))
    assert score_estimator(Probe(drift, name="drift"), make(), TARGET, check_determinism=False).tolist() == [
        0, 1, 2, 3]


def test_valid_scores_pass_and_come_back_as_float64():
    out = score_estimator(Probe(lambda c, t, **kw: np.arange(4, dtype=np.int32)), make(), TARGET)
    assert out.dtype == np.float64 and out.tolist() == [0, 1, 2, 3]
    one = CandidateData({k: v[:1] for k, v in table().items()})
    assert score_estimator(Probe(adv), one, TARGET).shape == (1,)  # a single candidate is not "all equal"
