"""The fixture self-check "sketch fidelity" (bt_bench.fixture.fidelity, checks/test_sketch_fidelity.py): a positive
control that passes its verdict (``judge``) and negative controls that must fail it: sketches off by a 1.5x scale,
stored sketches that differ from the recomputed ones, a parameter tensor whose gradient never reaches the sketch
(matrix, the tied LM head's use of the embedding, small tensor), a tensor missing from the sketcher's rules, and a
tensor without gradient. On a random tiny Qwen2 (seconds); the same on the cached tiny fixture when the cache holds
it (nothing is built)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from bt_bench.fixture import fidelity as F
from bt_bench.sketch import Sketcher, policy_loss_terms, preset, slice_batch, token_logprob_terms
from bt_bench.sketch import fidelity as jl
from bt_bench.sketch import hooks as hooks_mod
from bt_bench.sketch.synthetic import random_batch, tiny_qwen2

CFG = F.FidelityConfig()


@pytest.fixture(autouse=True, scope="module")
def _threads():
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)


@pytest.fixture(scope="module")
def model():
    return tiny_qwen2(seed=0)


@pytest.fixture(scope="module")
def batches():
    """A GRPO batch (some zero advantages, as derive sees them) and a token-restricted batch of fresh rows."""
    b = random_batch(20, prompt_len=6, completion_len=8, seed=3, zero_adv_share=0.25)
    tok = random_batch(6, prompt_len=6, completion_len=8, seed=4)
    mask = torch.zeros_like(tok["completion_mask"])
    mask[:, 2:4] = 1
    tok["token_mask"] = mask * tok["completion_mask"]
    return b, tok


def _parts(sk: Sketcher, batches, scale: float = 1.0, stored_scale: float = 1.0) -> list[F.Rows]:
    """Rows as the check builds them; 'stored' = the sketches derive would store (one batched sketch of the whole
    chunk, then the rows picked), optionally scaled (negative controls)."""
    b, tok = batches
    nz = b["advantages"] != 0
    stored = sk.sketch(b)[nz.numpy()] * stored_scale
    train = F.measure(sk, slice_batch(b, nz), policy_loss_terms, "train", 0, stored)
    token = F.measure(sk, tok, token_logprob_terms, "token", 0, sk.sketch(tok, token_logprob_terms) * stored_scale)
    for p in (train, token):
        p.sketch = p.sketch * scale
    return [train, token]


def _report(sk: Sketcher, batches, **kw) -> dict:
    rep = F.evaluate(sk, _parts(sk, batches, **kw), CFG)
    rep["problems"] = F.judge(rep)
    return rep


def _without(sk: Sketcher, use: str) -> Sketcher:
    """A sketcher whose hook path skips module ``use`` (its tensors' gradients never reach the sketch)."""
    out = copy.copy(sk)
    out.rules = [r for r in sk.rules if r.use != use]
    assert len(out.rules) == len(sk.rules) - 1
    return out


# ----------------------------------------------------------------------------------------- the bound's arithmetic
def test_gram_form_equals_the_bounds_own(model, batches):
    for shape in [(6, 40, 16), (6, 16, 40), (1, 3, 5)]:
        a = torch.randn(*shape, dtype=torch.float64)
        assert torch.allclose(F.gram_sq(a), jl._gram_sq(a), rtol=1e-12, atol=0)
    sk = Sketcher(model, preset("default", seed=1))
    parts = _parts(sk, batches)
    g, s = parts[0].grads, parts[0].sketch
    plain = jl.fidelity_report(sk, g, s)
    original = jl._gram_sq
    with F.gram_form():
        fast = jl.fidelity_report(sk, g, s)
    assert jl._gram_sq is original  # restored
    for key in ("eps_bound_median", "eps_bound_max", "max_err_over_bound"):
        assert fast[key] == pytest.approx(plain[key], rel=1e-9)


# ----------------------------------------------------------------------------------------- positive control
@pytest.mark.parametrize("name", ["default", "small", "large"])
def test_real_sketches_pass(model, batches, name):
    sk = Sketcher(model, preset(name, seed=2))
    rep = _report(sk, batches)
    assert rep["problems"] == [], rep["problems"]
    cov = rep["coverage"]
    n = len({id(p) for p in model.parameters()})  # the tied LM head once
    assert cov["tensors"] == cov["covered"] == n and cov["names_match"]
    assert "lm_head.weight" not in cov["per_tensor"] and "model.embed_tokens.weight" in cov["per_tensor"]
    assert rep["recomputed"]["within_bound"] and rep["stored"]["within_bound"]
    assert rep["recomputed"]["max_err_over_bound"] < 1 and rep["recomputed"]["eps_bound_median"] < 1
    assert max(a["max_rel_diff"] for a in rep["agreement"].values()) <= 1e-5
    line = F.key_figure([{**rep, "seconds": 0.0}, {**rep, "seconds": 0.0}])
    assert line.startswith("max |err|/bound ") and "x 2 seeds" in line and f"{n}/{n} tensors covered" in line


# ----------------------------------------------------------------------------------------- negative controls
def test_scaled_sketches_fail(model, batches):
    sk = Sketcher(model, preset("default", seed=2))
    rep = _report(sk, batches, scale=1.5, stored_scale=1.5)
    assert not rep["recomputed"]["within_bound"] and not rep["stored"]["within_bound"]
    assert any("outside the JL bound" in p for p in rep["problems"])


def test_stored_differs_from_recomputed_fails(model, batches):
    sk = Sketcher(model, preset("default", seed=2))
    rep = _report(sk, batches, stored_scale=1.5)
    assert rep["recomputed"]["within_bound"]
    assert any("differ from the recomputed" in p for p in rep["problems"]), rep["problems"]
    tiny = _report(sk, batches, stored_scale=1 + 1e-3)  # far inside the JL bound, far outside rtol
    assert tiny["stored"]["within_bound"] and any("differ from the recomputed" in p for p in tiny["problems"])


@pytest.mark.parametrize("use, tensor", [
    ("model.layers.1.mlp.up_proj", "model.layers.1.mlp.up_proj.weight"),  # a matrix block
    ("lm_head", "model.embed_tokens.weight"),  # the output use of the tied embedding (e.g. a fused head bypassed)
    ("model.layers.0.post_attention_layernorm", "model.layers.0.post_attention_layernorm.weight"),  # small block
])
def test_a_tensor_missing_from_the_hook_path_fails(model, batches, use, tensor):
    sk = Sketcher(model, preset("default", seed=2))
    assert any(r.use == use for r in sk.rules)
    rep = _report(_without(sk, use), batches)
    cov = rep["coverage"]
    assert tensor in cov["not_reproduced"] and not cov["per_tensor"][tensor]["covered"]
    if not tensor.endswith("norm.weight"):
        assert cov["not_reproduced"] == [tensor]  # a matrix block is its tensor's own
    # (small tensors share one block: every one whose part is below the error is then uncertified)
    assert any("tensors covered" in p for p in rep["problems"])


def test_a_tensor_without_a_rule_fails(model, batches):
    sk = copy.copy(Sketcher(model, preset("default", seed=2)))
    sk._coverage = {k: v for k, v in sk._coverage.items() if k != "model.norm.weight"}
    rep = _report(sk, batches)
    assert rep["coverage"]["missing_rule"] == ["model.norm.weight"]
    assert any("differ from the model's parameters" in p for p in rep["problems"])


def test_a_tensor_without_gradient_is_not_covered(model, batches):
    sk = Sketcher(model, preset("default", seed=2))
    parts = _parts(sk, batches)
    start = 0
    for name, shape in zip(sk.names, sk.shapes):
        if name == "model.layers.0.self_attn.k_proj.bias":
            break
        start += int(np.prod(shape))
    for p in parts:  # as if nothing reached this bias: no evidence it is covered
        p.grads[:, start:start + int(np.prod(shape))] = 0
    rep = F.evaluate(sk, parts, CFG)
    assert "model.layers.0.self_attn.k_proj.bias" in rep["coverage"]["not_exercised"]
    assert F.judge(rep)


def test_judge_reads_only_the_report():
    ok = {"recomputed": {"within_bound": True, "max_err_over_bound": 0.4, "pairs": 10},
          "stored": {"within_bound": True, "max_err_over_bound": 0.4, "pairs": 10},
          "agreement": {"train": {"rows": 4, "max_rel_diff": 1e-7}}, "rtol": 1e-4, "same_map": True,
          "coverage": {"names_match": True, "covered": 3, "tensors": 3, "missing_rule": [], "not_exercised": [],
                       "not_reproduced": []}}
    assert F.judge(ok) == []
    assert F.judge({**ok, "stored": None})  # nothing stored compared: no pass
    assert F.judge({**ok, "same_map": False})
    assert F.judge({**ok, "agreement": {"in_run": {"rows": 4, "max_rel_diff": float("nan")}}})


# ----------------------------------------------------------------------------------------- the real fixture
def test_tiny_fixture_passes_and_a_scaled_store_fails(tiny_fixture):
    rep = F.fixture_fidelity(tiny_fixture)
    assert rep["problems"] == [], rep["problems"]
    assert rep["rows"]["train"] == CFG.train and rep["rows"].get("in_run") == CFG.in_run
    assert rep["coverage"]["covered"] == rep["coverage"]["tensors"]
    load = tiny_fixture._load
    # the stored checkpoint sketches off by 1.5x
    tiny_fixture._load = lambda rel: 1.5 * np.asarray(load(rel)) if rel.startswith("train/ckpt_") else load(rel)
    try:
        bad = F.fixture_fidelity(tiny_fixture)
    finally:
        del tiny_fixture._load
    assert any("stored train sketches differ" in p for p in bad["problems"]), bad["problems"]
    assert not bad["stored"]["within_bound"]


def test_hook_rules_are_what_the_controls_remove(model):
    """The negative controls remove whole rules; every rule kind used above exists on this model."""
    kinds = {type(r) for r in Sketcher(model, preset("default")).rules}
    assert {hooks_mod.LinearRule, hooks_mod.EmbeddingRule, hooks_mod.ScaleRule} <= kinds
