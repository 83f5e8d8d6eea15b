"""The `model` capability and the objective as public functions (issue "Open the suite to any method", items 1-2).

What a model-based estimator differentiates must be exactly what the suite's sketches are of: the per-rollout loss
of a training rollout, the log-likelihood of a fresh draw, the behavior-span log-prob of a token view, and each
target's definition. Each test sketches ``-grad`` of the public function with the run's own sketch and compares
with the stored sketch, so a drift in rows, masks, loss kind, divisor or temperature fails here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bt_bench.estimator import Capability, CapabilityError, MissingInputError, rollout_batch, rollout_losses
from bt_bench.estimator.handover import draw_candidates, training_candidates, training_target
from bt_bench.estimator.objective import candidate_terms, target_terms_fn
from bt_bench.estimator.scoring import score_estimator
from bt_bench.fixture.reader import fixture_config, load_fixture
from bt_bench.fixture.targets import TARGET_KINDS, is_placebo
from bt_bench.sketch import Sketcher, completion_logps


@pytest.fixture(scope="module")
def fx(smoke_run, tmp_path_factory):
    """The smoke run's derived data: training targets at 2 TracIn checkpoints and 2 draws at step 0."""
    return load_fixture(smoke_run, fixture_config("smoke", 2), tmp_path_factory.mktemp("objective_cache"))


class ModelProbe:
    """A model-based estimator (declares only ``model``): mean token log-prob of each completion, from the
    checkpoint model and the public batch builder. It must reproduce the suite's ``fluency`` exactly."""

    name, level, capabilities = "model_fluency", "rollout", frozenset({"model"})

    def score(self, candidates, target):
        c = candidates.checkpoints[-1].step
        model = candidates.model(c)
        with torch.no_grad():
            b = rollout_batch(candidates)
            lp = completion_logps(model, b)
            m = b["completion_mask"].float()
            return ((lp * m).sum(1) / m.sum(1)).numpy()


class ExactTokenTracIn:
    """A model-based estimator for the token views: the exact (unsketched) inner product of the target gradient
    with each candidate's loss gradient at the candidate's checkpoint, by autograd, one candidate at a time."""

    name, level, capabilities = "exact_token_tracin", "rollout", frozenset({"model"})

    def score(self, candidates, target):
        c = candidates.checkpoints[-1].step
        model = candidates.model(c)
        params = [p for p in model.parameters() if p.requires_grad]
        g_t = torch.autograd.grad(target.loss(model, c), params, allow_unused=True)
        out = np.zeros(len(candidates))
        for i in range(len(candidates)):
            loss = rollout_losses(model, rollout_batch(candidates, [i]))[0]
            g = torch.autograd.grad(loss, params, allow_unused=True)
            out[i] = sum(float((a * b).sum()) for a, b in zip(g_t, g) if a is not None and b is not None)
        return out


def _sketch_mean(model, spec, definition, loss) -> np.ndarray:
    """The sketch of -grad target.loss: ``weight`` (1, or a placebo's norm-matching factor) x the rows' mean."""
    sk = Sketcher(model, spec)
    return sk.sketch(definition.batch(), target_terms_fn(loss)).mean(0) * definition.weight


def test_target_definitions_rebuild_every_stored_target(fx):
    """``target.loss`` sketches to the stored vector (a placebo's: at the handed norm, ``weight``; the vector it is
    handed is that one with its entries rearranged to the real target's, ``targets.disguise``)."""
    spec = fx.run.config.sketch_spec()
    checked = 0
    stored = fx.training_targets()
    for kind in TARGET_KINDS:
        t = training_target(fx, kind)
        for c in fx.tracin_steps:
            d = t.definition(c)
            want = stored[kind][c] * d.weight if is_placebo(kind) else t.at(c)
            if not len(d):
                assert not np.any(want), f"{kind}@{c}: no rows but a non-zero vector"
                continue
            got = _sketch_mean(fx.model(c), spec, d, d.loss)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * np.abs(want).max(),
                                       err_msg=f"training target {kind} at {c}")
            if is_placebo(kind):
                np.testing.assert_array_equal(np.sort(t.at(c)), np.sort(training_target(fx).at(c)))
            checked += 1
    _, targets = draw_candidates(fx, "saturated", 1)
    raw = fx.draw("saturated", 1).targets
    for kind, t in targets.items():
        c = t.final_step
        d = t.definition(c)
        want = raw[kind][c] * d.weight if is_placebo(kind) else t.at(c)
        if len(d):
            got = _sketch_mean(fx.model(c), spec, d, d.loss)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * np.abs(want).max(),
                                       err_msg=f"draw target {kind}")
            checked += 1
    assert checked >= 8


def test_target_loss_is_the_mean_of_its_rows(fx):
    t = training_target(fx, "in_context")
    c = t.final_step
    model = fx.model(c)
    d = t.definition(c)
    loss = t.loss(model, c)
    terms = target_terms_fn(d.loss)(completion_logps(model, d.batch()), d.batch())
    assert torch.allclose(loss, terms.mean(), rtol=1e-6)
    assert loss.requires_grad


def test_rollout_losses_rebuild_the_training_checkpoint_sketches(fx):
    probe = type("P", (), {"name": "p", "level": "rollout", "capabilities": frozenset({"model"})})()
    view = training_candidates(fx).view_for(probe)
    assert view.objective["loss"] == "policy"
    c = fx.tracin_steps[-1]
    stored = np.asarray(fx.training().sketches["checkpoint"][c])
    idx = np.flatnonzero(np.asarray(view.advantage) != 0)[:48]
    got = Sketcher(view.model(c), fx.run.config.sketch_spec()).sketch(rollout_batch(view, idx), candidate_terms)
    np.testing.assert_allclose(got, stored[idx], rtol=1e-4, atol=1e-5 * np.abs(stored[idx]).max())


def test_draw_likelihood_and_token_losses_rebuild_the_draw_sketches(fx):
    data, _ = draw_candidates(fx, "saturated", 0)
    est = ExactTokenTracIn()
    spec = fx.run.config.sketch_spec()
    view = data.view_for(est)
    c = view.checkpoints[-1].step
    assert view.objective["loss"] == "likelihood"
    with pytest.raises(MissingInputError, match="token-restricted"):
        view.token_mask()  # a full view never carries the behavior span
    got = Sketcher(view.model(c), spec).sketch(rollout_batch(view), candidate_terms)
    stored = np.asarray(fx.draw("saturated", 0).sketches["checkpoint"][c])
    np.testing.assert_allclose(got, stored, rtol=1e-4, atol=1e-5 * np.abs(stored).max())
    tview = data.token_restricted().view_for(est)
    assert tview.objective["loss"] == "token"
    mask = tview.token_mask()
    beh = np.asarray(fx.draw_rows("saturated", 0)["has_behavior"])
    assert np.array_equal(mask.any(1), beh)  # zero rows exactly for the candidates without the behavior
    got = Sketcher(tview.model(c), spec).sketch(rollout_batch(tview), candidate_terms)
    stored = np.asarray(fx.draw("saturated", 0).sketches["token_checkpoint"][c])
    np.testing.assert_allclose(got, stored, rtol=1e-4, atol=1e-5 * np.abs(stored).max())


def test_a_model_estimator_reproduces_fluency_exactly(fx):
    data, targets = draw_candidates(fx, "saturated", 0)
    scores = score_estimator(ModelProbe(), data, targets["in_context"])
    np.testing.assert_allclose(scores, np.asarray(fx.draw("saturated", 0).sketches["fluency"]), atol=1e-5)


def test_a_model_estimator_takes_part_in_trigger_token_alignment(fx):

    data, targets = draw_candidates(fx, "saturated", 0)
    tdata = data.token_restricted()
    beh = np.asarray(fx.draw_rows("saturated", 0)["has_behavior"])
    s_in = score_estimator(ExactTokenTracIn(), tdata, targets["in_context"])
    s_pl = score_estimator(ExactTokenTracIn(), tdata, targets["placebo"])
    assert np.all(s_in[~beh] == 0) and np.any(s_in[beh] != 0)
    assert not np.allclose(s_in[beh], s_pl[beh])  # the score moves with the target
    # exact inner products agree in sign with the sketched ones on most behavior candidates (JL: E<Sx,Sy>=<x,y>)
    c = targets["in_context"].final_step
    sk = np.asarray(fx.draw("saturated", 0).sketches["token_checkpoint"][c])[beh] @ targets["in_context"].at(c)
    assert np.corrcoef(sk, s_in[beh])[0, 1] > 0.8


def test_model_loader_contract(fx):
    data, targets = draw_candidates(fx, "saturated", 0)
    view = data.view_for(ModelProbe())
    c = view.checkpoints[-1].step
    m1, m2 = view.model(c), view.model(c)
    assert m1 is not m2 and not m1.training  # a fresh copy per call, eval mode
    assert "forward" not in vars(m1)  # no forward patched on the instance (trl patches the model it trains)
    with pytest.raises(MissingInputError, match="no checkpoint"):
        view.model(c + 10_000)  # only the checkpoints the view lists
    no_model = type("N", (), {"name": "n", "level": "rollout", "capabilities": frozenset()})()
    with pytest.raises(CapabilityError, match="model"):
        data.view_for(no_model).model(c)
    assert Capability.MODEL.value == "model"


def test_the_readme_model_estimator_runs_and_matches_the_exact_inner_products(fx):
    """The estimator guide's model-based example (< 30 lines; docs/estimators.md, linked from the README) is real
    code: run it on a draw's token view."""
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "estimators.md"
    block = next(b for b in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S) if "class ExactTracIn" in b)
    assert len(block.strip().splitlines()) < 30
    ns: dict = {}
    exec(compile(block, str(doc), "exec"), ns)
    data, targets = draw_candidates(fx, "saturated", 0)
    tdata = data.token_restricted()
    got = score_estimator(ns["ExactTracIn"](), tdata, targets["in_context"])
    np.testing.assert_allclose(got, score_estimator(ExactTokenTracIn(), tdata, targets["in_context"]), rtol=1e-6)


def test_tracin_adam_gets_its_preconditioned_inputs(fx):
    """Derive sketches g / (sqrt(v_hat_c) + eps) of every training rollout and target at each TracIn checkpoint
    (v the AdamW second moment saved with c), so tracin_adam is judged instead of NOT JUDGED."""
    from safetensors.torch import load_file

    from bt_bench.estimator.registry import get_estimator
    from bt_bench.sketch import adam_preconditioner

    data, target = training_candidates(fx), training_target(fx, "in_context")
    c = fx.tracin_steps[-1]
    pre = np.asarray(fx.training().sketches["preconditioned"][c])
    plain = np.asarray(fx.training().sketches["checkpoint"][c])
    idx = np.flatnonzero(np.abs(plain).sum(1) > 0)[:32]
    P = adam_preconditioner(load_file(str(fx.run.checkpoint_dir(c) / "adam_v.safetensors")), step=c)
    probe = type("P", (), {"name": "p", "level": "rollout", "capabilities": frozenset({"model"})})()
    view = data.view_for(probe)
    got = Sketcher(view.model(c), fx.run.config.sketch_spec()).sketch(rollout_batch(view, idx), candidate_terms,
                                                                      precondition=P)
    np.testing.assert_allclose(got, pre[idx], rtol=1e-4, atol=1e-5 * np.abs(pre[idx]).max())
    assert np.abs(pre[idx] / np.linalg.norm(pre[idx], axis=1, keepdims=True)
                  - plain[idx] / np.linalg.norm(plain[idx], axis=1, keepdims=True)).max() > 1e-2  # not the plain one
    assert set(target.preconditioned) == set(fx.tracin_steps)
    scores = score_estimator(get_estimator("tracin_adam"), data, target)
    assert np.isfinite(scores).all() and np.ptp(scores) > 0
