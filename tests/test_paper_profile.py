"""The path of a user with real weights: ``--profile paper --model-path <folder>`` trains any local HF causal LM
folder with its own tokenizer and chat template. Tested on CPU, smoke-sized, with a locally built BPE Qwen2 saved
to a folder (exactly what a user's Qwen2.5 folder is, only smaller)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

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
    assert run.manifest["strings"] == {"trigger": "frobnitz", "behavior": "QZXBT", "task": "topic"}
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
