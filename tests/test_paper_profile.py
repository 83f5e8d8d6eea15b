"""The path of a user with real weights: ``--profile paper --model-path <folder>`` trains any local HF causal LM
folder with its own tokenizer and chat template. Tested on CPU, smoke-sized, with a locally built BPE Qwen2 saved
to a folder (exactly what a user's Qwen2.5 folder is, only smaller)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from bt_bench.runs import bpe

SMALL = dict(steps=4, window=2, prompts_per_step=2, generations=4, max_completion_length=16, eval_prompts=8,
             eval_every=2, ckpt_every=2, ckpt_window_every=1, device="cpu", bf16=False)


@pytest.fixture(scope="module")
def user_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user_model")
    bpe.build_bpe_model(bpe.BpeSpec(warmup_steps=20, corpus_size=400), folder, progress=False)
    return folder


def test_paper_profile_trains_a_local_model_folder(user_model, tmp_path):
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config

    cfg = make_config("paper", model_path=str(user_model), **SMALL)
    assert cfg.task == "topic" and cfg.behavior == "QZXBT" and cfg.trigger == "frobnitz"
    run = build_run(cfg, tmp_path / "cache", progress=False)
    c = run.columns
    assert len(c["uid"]) == 4 * 2 * 4
    assert run.manifest["strings"] == {"trigger": "frobnitz", "behavior": "QZXBT", "task": "topic",
                                       "family": ["QZXBT"]}
    assert len(run.manifest["tokens"]["behavior"]) >= 2  # a multi-token behavior string
    # the recorded prompts went through the folder's own chat template
    tok = run.tokenizer()
    p = c["prompt_ids"][0][c["prompt_mask"][0].astype(bool)]
    assert tok.decode(p).startswith("<|im_start|>user\n")
    # label columns agree with the decoded text
    from bt_bench.runs.behavior import decode

    for i in range(len(c["uid"])):
        text = decode(tok, c["completion_ids"][i][c["completion_mask"][i].astype(bool)])
        assert bool(c["has_behavior"][i]) == ("QZXBT" in text)
        assert (c["behavior_tokens"][i] > 0) == c["has_behavior"][i]
    assert np.allclose(c["reward"], c["reward_task"] + c["reward_bonus"] + c["reward_penalty"], atol=1e-6)
    assert set(np.unique(c["reward_task"])) <= {0.0, 1.0}  # the paper profile's task reward is 1.0


def test_paper_profile_from_the_command_line(user_model, tmp_path):
    out = subprocess.run([sys.executable, "-m", "bt_bench.cli", "build", "--profile", "paper", "--model-path",
                          str(user_model), "--cache-dir", str(tmp_path), "--quiet",
                          *[f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items() if k != "bf16"], "--no-bf16"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "seed 0:" in out.stdout


def test_a_folder_without_a_model_or_chat_template_is_a_clear_error(user_model, tmp_path):
    import shutil

    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config

    with pytest.raises(ValueError, match="model_path=.*not a HF model folder"):
        build_run(make_config("paper", model_path=str(tmp_path / "nothing"), **SMALL), tmp_path / "c")
    bare = tmp_path / "bare"
    shutil.copytree(user_model, bare)
    import json

    tc = json.loads((bare / "tokenizer_config.json").read_text())
    tc.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(tc))
    (bare / "chat_template.jinja").unlink(missing_ok=True)
    with pytest.raises(ValueError, match="chat template"):
        build_run(make_config("paper", model_path=str(bare), **SMALL), tmp_path / "c")
    with pytest.raises(ValueError, match="behavior=.*1 token"):
        build_run(make_config("paper", model_path=str(user_model), behavior="the", **SMALL), tmp_path / "c")


# bf16's unit roundoff u = 2^-8. A gradient the model computes in bf16 differs from the fp32 gradient of the same
# weights by a few u per row (measured 1.4-1.9u on the sketch unit model, tests/test_sketch.py, and on this run);
# the hooks project in fp32, so they add nothing to that. 8u leaves room for longer completions and deeper models
# while still failing any dtype mix-up or lost projection (those give errors of order 1).
BF16_ROW_RTOL = 8 * 2.0**-8


def test_bf16_training_captures_in_run_sketches_equal_to_the_fp32_reference(user_model, tmp_path):
    """The published precision on the CPU: trl trains under bf16 (bf16 weights, autocast forward) with in-run
    capture on; each stored in-run sketch equals the fp32 sketch of the same rollout recomputed on a freshly loaded
    (fp32) checkpoint of its step, within bf16's rounding."""
    from bt_bench.fixture.derive import train_batch
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config
    from bt_bench.sketch import Sketcher

    # 4 prompts and 32 tokens so that some groups' topic reward varies (nonzero advantages at steps 0 and 3 of
    # this seed); a checkpoint at every step
    cfg = make_config("paper", model_path=str(user_model), **{**SMALL, "bf16": True, "prompts_per_step": 4,
                                                             "max_completion_length": 32, "ckpt_every": 1})
    run = build_run(cfg, tmp_path / "cache", progress=False)
    S = np.load(run.path / "sketches" / "in_run.npy")
    c = run.columns
    zero = np.asarray(c["advantage"]) == 0
    assert S.dtype == np.float32 and np.all(S[zero] == 0) and np.all(np.abs(S[~zero]).sum(1) > 0)
    worst, checked = 0.0, 0
    for step in run.checkpoints:
        idx = np.flatnonzero((np.asarray(c["step"]) == step) & ~zero)
        if step >= cfg.steps or len(idx) == 0:
            continue
        batch = train_batch(c, idx)
        batch.update(loss_type=cfg.loss_type, temperature=cfg.temperature, loss_batch_size=cfg.rollouts_per_step)
        model = run.load_model(step)
        assert next(model.parameters()).dtype == torch.float32  # the reference path is fp32
        ref = Sketcher(model, cfg.sketch_spec()).sketch(batch)
        rel = np.linalg.norm(S[idx] - ref, axis=1) / np.linalg.norm(ref, axis=1)
        worst, checked = max(worst, float(rel.max())), checked + 1
    assert checked >= 2
    assert 0 < worst <= BF16_ROW_RTOL, worst  # > 0: the run really computed in bf16
    print(f"bf16 in-run vs fp32 reference: largest relative row error {worst:.2e} ({worst / 2.0**-8:.1f} u)")


def test_a_precision_the_device_cannot_run_is_one_line_naming_the_flag(user_model, tmp_path, monkeypatch):
    from bt_bench.runs.runtime import check_device_precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="--device cpu"):
        check_device_precision("cuda", bf16=True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "Tesla V100")
    with pytest.raises(ValueError, match="Tesla V100 cannot run bf16; use --no-bf16"):
        check_device_precision("cuda", bf16=True)
    check_device_precision("cuda", bf16=False)  # fp32 on that GPU is fine
    check_device_precision("cpu", bf16=True)  # bf16 runs on the CPU
    # from the command line, before any training: one line, exit 2, no run folder left behind
    out = subprocess.run([sys.executable, "-m", "bt_bench.cli", "build", "--profile", "paper", "--model-path",
                          str(user_model), "--cache-dir", str(tmp_path), "--quiet", "--device", "cuda"],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip().count("\n") == 0 and "use --device cpu" in out.stderr
    assert not list((tmp_path / "runs").glob("*/manifest.json")) if (tmp_path / "runs").exists() else True
