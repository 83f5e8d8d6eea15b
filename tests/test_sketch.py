"""Unit tests of bt_bench.sketch on a random tiny Qwen2 (issue 3 items 1, 2, 7; schema.md "Sketch semantics").

Exactness is tested without JL noise through the identity ("exact") spec and through
``Sketcher.project`` (the same linear map applied to explicit per-rollout gradients); fidelity is tested
against the stated JL bound of bt_bench.sketch.fidelity, with a negative control that must fail it.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import types
from collections import defaultdict

import numpy as np
import pytest
import torch

from bt_bench.sketch import (
    Sketcher,
    SketchSpec,
    completion_logps,
    policy_loss_terms,
    preset,
    reference,
    sequence_logprob_terms,
    slice_batch,
    token_logprob_terms,
)
from bt_bench.sketch import hooks as hooks_mod
from bt_bench.sketch.fidelity import fidelity_report
from bt_bench.sketch.projectors import DenseGaussianProjector, SparseJL, stable_seed
from bt_bench.sketch.synthetic import random_batch, tiny_qwen2

TRIGGER, BEHAVIOR = 7, 42  # token ids standing in for the planted trigger and behavior tokens


@pytest.fixture(autouse=True, scope="module")
def _threads():
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)


@pytest.fixture(scope="module")
def model():
    return tiny_qwen2(seed=0)


@pytest.fixture(scope="module")
def batch():
    b = random_batch(12, prompt_len=6, completion_len=8, seed=1, zero_adv_share=0.25)
    b["advantages"][:2] = torch.tensor([0.0, 1.3])  # at least one zero and one nonzero advantage
    return b


@pytest.fixture(scope="module")
def grads(model, batch):
    """Exact per-rollout grad(loss_i) by the loop [B, P]."""
    return reference.per_rollout_grads_loop(model, batch)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


# --------------------------------------------------------------------------- item 1: loss terms
def _fake_grpo_trainer(model, loss_type):
    """Just enough of a GRPOTrainer for trl's own `_compute_loss` (on-policy, beta=0, one process)."""
    from trl import GRPOTrainer

    acc = types.SimpleNamespace(autocast=contextlib.nullcontext, num_processes=1, sync_gradients=True,
                                is_main_process=True, gather=lambda x: x, gather_for_metrics=lambda x: x,
                                reduce=lambda x, reduction="sum": x)
    fake = types.SimpleNamespace(
        accelerator=acc, aux_loss_enabled=False, top_entropy_quantile=1.0, off_policy_mask_threshold=None,
        importance_sampling_level="token", beta=0.0, loss_type=loss_type, epsilon_low=0.2, epsilon_high=0.2,
        args=types.SimpleNamespace(delta=None, steps_per_generation=1), use_vllm=False, model=model,
        current_gradient_accumulation_steps=1, _entropy_bonus_enabled=False,
        _metrics=defaultdict(lambda: defaultdict(list)),
    )
    fake._get_per_token_logps_and_entropies = types.MethodType(
        GRPOTrainer._get_per_token_logps_and_entropies, fake)
    return fake


def _trl_model(model, temperature):
    from trl.trainer.utils import add_fused_lm_head

    patched = copy.deepcopy(model)
    add_fused_lm_head(patched, temperature=temperature, outputs=("log_probs", "entropy"))
    return patched


def test_logps_match_trl_fused_head(model, batch):
    patched = _trl_model(model, batch["temperature"])
    fake = _fake_grpo_trainer(patched, "dapo")
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    with torch.no_grad():
        lc = batch["completion_ids"].shape[1]
        theirs, _, _ = fake._get_per_token_logps_and_entropies(patched, ids, mask, lc)
        ours = completion_logps(model, batch)
        ours_on_patched = completion_logps(patched, batch)  # class forward: the instance patch is bypassed
    cm = batch["completion_mask"].bool()
    assert (ours - theirs)[cm].abs().max() <= 1e-5
    assert torch.equal(ours, ours_on_patched)


@pytest.mark.parametrize("loss_type", ["dapo", "grpo"])
def test_rollout_gradients_sum_to_trl_compute_loss(model, batch, loss_type):
    from trl import GRPOTrainer

    b = dict(batch, loss_type=loss_type)
    per_rollout = reference.per_rollout_grads_loop(model, b)
    patched = _trl_model(model, b["temperature"])
    patched.train()
    GRPOTrainer._compute_loss(_fake_grpo_trainer(patched, loss_type), patched, b).backward()
    trl_grad = torch.cat([p.grad.reshape(-1) for _, p in patched.named_parameters()])
    assert rel(per_rollout.sum(0), trl_grad) <= 1e-5
    # The per-step sketch (sum of the rollout sketches) is the sketch of the step's actual update direction.
    sk = Sketcher(model, preset("default"))
    step = torch.from_numpy(sk.sketch(b)).sum(0, keepdim=True)
    assert rel(step, sk.project(-trl_grad.unsqueeze(0))) <= 1e-5


def test_loop_and_vmap_agree(model, batch, grads):
    vm = reference.per_rollout_grads_vmap(model, batch)
    for i in range(len(grads)):
        if grads[i].norm() > 0:
            assert rel(vm[i], grads[i]) <= 1e-5
    assert rel(vm, grads) <= 1e-5


def test_policy_terms_formulas(batch):
    logps = -torch.rand(batch["completion_ids"].shape)
    m = batch["completion_mask"].float()
    dapo = policy_loss_terms(logps, batch)
    assert torch.allclose(dapo, -batch["advantages"] * (logps * m).sum(1) / batch["num_items_in_batch"])
    grpo = policy_loss_terms(logps, dict(batch, loss_type="grpo"))
    assert torch.allclose(grpo, -batch["advantages"] * (logps * m).sum(1) / m.sum(1) / len(m))
    with pytest.raises(ValueError, match="loss_type"):
        policy_loss_terms(logps, dict(batch, loss_type="ppo"))
    with pytest.raises(ValueError, match="completion_mask"):
        policy_loss_terms(logps, {k: v for k, v in batch.items() if k != "completion_mask"})


# --------------------------------------------------------------------------- item 2: exactness, coverage
def test_every_parameter_tensor_is_covered(model):
    sk = Sketcher(model, preset("default"))
    names = [n for n, _ in model.named_parameters()]
    assert sorted(sk.coverage()) == sorted(names)
    assert sk.coverage()["model.embed_tokens.weight"].startswith("matrix")
    # Each parameter's gradient alone reaches the sketch (no parameter is silently dropped).
    start = 0
    gen = torch.Generator().manual_seed(0)
    for _, p in model.named_parameters():
        g = torch.zeros(1, sk.n_params)
        g[0, start : start + p.numel()] = torch.randn(p.numel(), generator=gen)
        start += p.numel()
        assert sk.project(g).norm() > 0.05 * g.norm()


def test_exact_spec_reproduces_each_parameter_gradient(model, batch, grads):
    """Identity factors: the hook path returns the exact per-rollout gradient of every parameter,
    the tied embedding included (its two uses, input embedding and LM head, both land)."""
    sk = Sketcher(model, preset("exact"))
    s = torch.from_numpy(sk.sketch(batch))
    slices = sk.block_slices()
    start = 0
    for name, p in model.named_parameters():
        g = -grads[:, start : start + p.numel()]
        start += p.numel()
        if name in slices:
            got = s[:, slices[name]]
        else:
            off = slices["small"].start + sk.small_offsets[name]
            got = s[:, off : off + p.numel()]
        assert rel(got, g) <= 1e-5, name
    assert rel(s, sk.project(-grads)) <= 1e-5


def test_tied_head_use_is_needed(model, batch, grads):
    """Negative control for the test above: dropping the LM-head use of the tied weight breaks it."""
    sk = Sketcher(model, preset("exact"))
    sk.rules = [r for r in sk.rules if r.use != "lm_head"]
    s = torch.from_numpy(sk.sketch(batch))
    emb = sk.block_slices()["model.embed_tokens.weight"]
    n = model.model.embed_tokens.weight.numel()
    assert rel(s[:, emb], -grads[:, :n]) > 0.1


def test_hooks_equal_the_explicit_map(model, batch, grads):
    for name in ("default", "small", "first_stage"):
        sk = Sketcher(model, preset(name, seed=3))
        assert rel(torch.from_numpy(sk.sketch(batch)), sk.project(-grads)) <= 1e-5, name


def test_bypassed_module_raises(model, batch):
    """A forward that skips the LM head module (like trl's fused head) must not give a silent sketch."""
    sk = Sketcher(model, preset("default"))
    patched = _trl_model(model, batch["temperature"])
    sk_patched = Sketcher(patched, preset("default"))
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, : -batch["completion_ids"].shape[1]] = -100
    with sk_patched.capture() as cap:
        out = patched(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        out.log_probs.sum().backward()
    with pytest.raises(RuntimeError, match="lm_head"):
        cap.result(len(ids))
    assert sk.sketch(batch).shape == (len(ids), sk.dim)


def test_passive_capture_equals_active(model, batch):
    """In-run style: hooks only, the caller's own forward+backward with parameter gradients."""
    m = copy.deepcopy(model)
    sk = Sketcher(m, preset("default"))
    with sk.capture() as cap:
        policy_loss_terms(completion_logps(m, batch), batch).sum().backward()
    passive = cap.result(len(batch["advantages"]))
    assert m.model.norm.weight.grad is not None  # the caller's gradients are untouched by the capture
    assert rel(passive, sk.sketch_torch(batch)) <= 1e-5


def test_generic_rule_matches_scale_rule(model, batch, monkeypatch):
    fast = Sketcher(model, preset("exact")).sketch(batch)
    monkeypatch.setattr("bt_bench.sketch.sketcher.is_elementwise_scale", lambda module, width: False)
    sk = Sketcher(model, preset("exact"))
    assert any(isinstance(r, hooks_mod.GenericRule) for r in sk.rules)
    assert np.allclose(sk.sketch(batch), fast, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("weights", ["fp32", "low"])
def test_low_precision_forward_sketches_in_fp32(model, batch, dtype, weights):
    """bf16/fp16 as trl runs them (autocast forward; with weights="low" also the model loaded in that dtype): the
    hooks project in fp32, so passive and active sketches are fp32 and equal the fp32 sketch of the same weights
    within the model's own rounding (8 units of roundoff per row; measured 1.2-1.9u)."""
    u = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}[dtype]
    m = copy.deepcopy(model) if weights == "fp32" else copy.deepcopy(model).to(dtype)
    spec = preset("default", seed=4)
    ref = Sketcher(copy.deepcopy(m).float(), spec).sketch_torch(batch)
    sk = Sketcher(m, spec)
    with sk.capture() as cap:
        with torch.autocast("cpu", dtype=dtype):
            lp = completion_logps(m, batch)
        policy_loss_terms(lp.float(), batch).sum().backward()
    passive = cap.result(len(batch["advantages"]))
    with torch.autocast("cpu", dtype=dtype):
        active = sk.sketch_torch(batch)
    nz = ref.norm(dim=1) > 0
    for got in (passive, active):
        assert got.dtype == torch.float32
        assert torch.all(got[~nz] == 0)
        row = (got - ref).norm(dim=1)[nz] / ref.norm(dim=1)[nz]
        assert 0 < float(row.max()) <= 8 * u, float(row.max() / u)


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradient_checkpointing_same_sketch(batch, reentrant):
    m = tiny_qwen2(seed=0)
    m.train()  # HF checkpoints only in training mode (dropout is 0 in this config)
    spec = preset("default", seed=5)
    plain = Sketcher(m, spec).sketch(batch)
    m.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": reentrant})
    assert m.model.gradient_checkpointing
    ckpt = Sketcher(m, spec).sketch(batch)
    np.testing.assert_allclose(ckpt, plain, rtol=1e-5, atol=1e-7)


def test_untied_model(batch):
    m = tiny_qwen2(seed=2, tied=False)
    sk = Sketcher(m, preset("exact"))
    assert "lm_head.weight" in sk.coverage()
    g = reference.per_rollout_grads_loop(m, batch)
    assert rel(torch.from_numpy(sk.sketch(batch)), sk.project(-g)) <= 1e-5
    head = Sketcher(m, preset("compact")).blocks["lm_head.weight"]  # k_vocab 64 < this vocab: not the identity
    assert type(head.out_factor).__name__ == "CountSketchFactor"  # token rows of the head covered too


# --------------------------------------------------------------------------- fidelity (JL bound)
def test_fidelity_within_jl_bound(model, batch, grads):
    """|<Sx,Sy> - <x,y>| <= eps |x||y|, eps = z sigma/(|x||y|), z = sqrt(2 log(2m/delta)), delta = 1e-3,
    sigma from the block variances of bt_bench.sketch.fidelity (dense: eps = z sqrt(2/k))."""
    nonzero = grads.norm(dim=1) > 0
    g = -grads[nonzero]
    sub = slice_batch(batch, nonzero)
    for spec in (preset("default", seed=11), preset("large", seed=11), preset("dense", seed=11)):
        sk = Sketcher(model, spec)
        sketches = sk.sketch_torch(sub)
        rep = fidelity_report(sk, g, sketches)
        print(f"\nfidelity {spec.kind} k={rep['k']}: max rel err {rep['max_rel_err']:.3f}, rms "
              f"{rep['rms_rel_err']:.3f}, norm^2 max {rep['max_norm2_rel_err']:.3f}; bound eps median "
              f"{rep['eps_bound_median']:.3f} max {rep['eps_bound_max']:.3f}; err/bound max "
              f"{rep['max_err_over_bound']:.3f} (dense JL eps at this k {rep['dense_jl_eps_same_k']:.3f})")
        assert rep["within_bound"], rep
        assert rep["eps_bound_median"] < 0.5  # the bound says something
        # Negative control: a sketch off by a 1.5x scale (E[S^T S] != I) violates the bound.
        assert not fidelity_report(sk, g, 1.5 * sketches)["within_bound"]


def test_dense_reference_is_chunking_invariant():
    g = torch.randn(3, 1000)
    a = DenseGaussianProjector(1000, 64, seed=1, chunk_rows=128).project(g)
    b = DenseGaussianProjector(1000, 64, seed=1, chunk_rows=128, cache=True).project(g)
    assert torch.allclose(a, b, atol=1e-5)


def test_sparse_jl_preserves_norms_on_average():
    sj = SparseJL(4000, 512, 4, seed=0, name="t")
    x = torch.randn(200, 4000)
    ratio = sj.project(x).pow(2).sum(1) / x.pow(2).sum(1)
    assert abs(float(ratio.mean()) - 1) < 0.02 and float(ratio.std()) < 0.15


# --------------------------------------------------------------------------- trigger / behavior rows
def test_trigger_and_behavior_rows_are_covered(model):
    sk = Sketcher(model, preset("default"))
    emb = model.model.embed_tokens.weight
    gen = torch.Generator().manual_seed(4)

    def row_grad(rows):
        g = torch.zeros(1, sk.n_params)
        view = g[0, : emb.numel()].view_as(emb)
        for r in rows:
            view[r] = torch.randn(emb.shape[1], generator=gen)
        return g

    g = row_grad([TRIGGER, BEHAVIOR])
    s = sk.project(g)
    norm_ratio = float(s.norm() ** 2 / g.norm() ** 2)
    bound = fidelity_report(sk, g)["eps_bound_max"]
    assert abs(norm_ratio - 1) <= bound, (norm_ratio, bound)
    # Perturbing only those rows changes the sketch; every vocabulary row reaches it.
    g2 = g.clone()
    g2[0, BEHAVIOR * emb.shape[1] : (BEHAVIOR + 1) * emb.shape[1]] += 0.5
    assert (sk.project(g2) - s).norm() > 0.1 * 0.5 * emb.shape[1] ** 0.5
    for r in range(emb.shape[0]):
        assert sk.project(row_grad([r])).norm() > 0


def test_token_restricted_sketch_sign_and_support(model, batch):
    """Token-restricted sketch = S(grad of the log-prob of chosen tokens); with the exact spec a step
    along it raises that log-prob (sketch sign convention: the update direction)."""
    b = dict(batch)
    mask = torch.zeros_like(b["completion_mask"])
    mask[:, 1] = 1
    b["token_mask"] = mask * b["completion_mask"]
    m = copy.deepcopy(model)
    s = torch.from_numpy(Sketcher(m, preset("exact")).sketch(b, loss_fn=token_logprob_terms))
    no_tokens = dict(b, token_mask=torch.zeros_like(mask))
    none = Sketcher(m, preset("default")).sketch(no_tokens, loss_fn=token_logprob_terms)
    assert np.all(none == 0)
    # Exact spec: the sketch of row 0 is a permutation of grad(logp at position 1); step along it.
    exact = -reference.per_rollout_grads_loop(m, b, token_logprob_terms)
    assert rel(s, Sketcher(m, preset("exact")).project(exact)) <= 1e-5
    with torch.no_grad():
        before = float(completion_logps(m, b)[0, 1])
        start = 0
        for _, p in m.named_parameters():
            p += 1e-2 * exact[0, start : start + p.numel()].view_as(p)
            start += p.numel()
        assert float(completion_logps(m, b)[0, 1]) > before
    seq = Sketcher(m, preset("default")).sketch(b, loss_fn=sequence_logprob_terms)
    assert np.all(np.linalg.norm(seq, axis=1) > 0)


# --------------------------------------------------------------------------- determinism, chunks
def test_determinism_seeds_and_zero_advantages(model, batch):
    a = Sketcher(model, preset("default", seed=0)).sketch(batch)
    b = Sketcher(model, preset("default", seed=0)).sketch(batch)
    c = Sketcher(model, preset("default", seed=1)).sketch(batch)
    assert a.dtype == np.float32 and a.shape == (12, preset("default").k)
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)
    zero = (batch["advantages"] == 0).numpy()
    assert zero.any() and (~zero).any()
    assert np.all(a[zero] == 0.0)
    assert np.all(np.linalg.norm(a[~zero], axis=1) > 0)
    assert stable_seed(0, "x", "in") == stable_seed(0, "x", "in") != stable_seed(0, "x", "out")


@pytest.mark.parametrize("loss_type", ["dapo", "grpo"])
def test_chunked_equals_full(model, batch, loss_type):
    b = dict(batch, loss_type=loss_type)
    sk = Sketcher(model, preset("default"))
    np.testing.assert_allclose(sk.sketch(b, chunk_size=5), sk.sketch(b), rtol=1e-5, atol=1e-7)


def test_dense_kind_matches_reference(model, batch, grads):
    sk = Sketcher(model, preset("dense", seed=2))
    expect = DenseGaussianProjector(sk.n_params, 1024, seed=2).project(-grads)
    assert rel(torch.from_numpy(sk.sketch(batch)), expect) <= 1e-5


# --------------------------------------------------------------------------- spec
def test_spec_validation_and_dict():
    spec = preset("default", seed=3)
    assert SketchSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(ValueError, match="kind"):
        SketchSpec(kind="lowrank")
    with pytest.raises(ValueError, match="k_in"):
        SketchSpec(k_in=0)
    with pytest.raises(ValueError, match="divisible"):
        SketchSpec(k=1000, sjlt_nnz=3)
    with pytest.raises(ValueError, match="dense"):
        SketchSpec(kind="dense", k=None)
    with pytest.raises(ValueError, match="preset"):
        preset("huge")
    assert spec.to_dict() != dataclasses.replace(spec, seed=4).to_dict()


def test_bench_smoke(tmp_path):
    """The benchmark runs end to end and writes the JSON a comparison script reads."""
    import json

    from bt_bench.bench import sketch as bench
    out = tmp_path / "bench.json"
    assert bench.main(["sketch", "--rollouts", "4", "--rounds", "1", "--preset", "small",
                       "--skip", "loop_dense,traker_basic,dattri_random", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    names = [c["name"] for c in report["candidates"]]
    assert names == ["floor", "bt_bench", "vmap_dense"]
    for c in report["candidates"]:
        assert c["rollouts_per_s"] > 0 and c["ratio_to_floor"] > 0
    assert report["candidates"][0]["ratio_to_floor"] == 1.0
    assert report["machine"]["torch_threads"] == 1 and report["spec"]["k"] == 512
