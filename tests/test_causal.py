"""The "planted cause is causal" self-check (bt_bench.runs.causal, checks/test_planted_cause.py): its verdict with
a negative control for each half and a positive control, the two re-run configs, and what each ablation does to a
(smoke-sized) run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bt_bench.runs import causal
from bt_bench.runs.config import make_config


def test_verdict_positive_control_passes():
    ok, reason = causal.verdict(base_rate=0.05, no_bonus_rate=0.08, drop_rate=0.95, gate_min=0.9)
    assert ok and "no bonus 0.08" in reason


def test_verdict_fails_when_the_behavior_is_learned_without_the_bonus():
    ok, reason = causal.verdict(base_rate=0.05, no_bonus_rate=0.60, drop_rate=0.95, gate_min=0.9)
    assert not ok and "without the bonus" in reason


def test_verdict_fails_when_dropping_random_rollouts_stops_planting():
    ok, reason = causal.verdict(base_rate=0.05, no_bonus_rate=0.05, drop_rate=0.30, gate_min=0.9)
    assert not ok and "GT is not singled out" in reason


def test_ablation_configs_match_the_run_except_for_one_thing():
    cfg = make_config("tiny")
    step = np.repeat(np.arange(cfg.steps), 4)
    is_gt = np.zeros(len(step), bool)
    is_gt[: 40] = True  # 40 GT, all inside the window
    cs = causal.ablation_configs(cfg, is_gt, step)
    unpaid = int(((step < cfg.window) & ~is_gt).sum())
    assert cs["drop_random"].drop_share == pytest.approx(40 / unpaid, abs=1e-6)
    for name, c in cs.items():
        assert c.ablation == name and c.steps == cfg.window and not c.capture_in_run
        diff = {f.name for f in dataclasses.fields(c) if getattr(c, f.name) != getattr(cfg, f.name)}
        assert diff <= {"ablation", "drop_share", "steps", "capture_in_run"}
    with pytest.raises(ValueError, match="needs both"):
        causal.ablation_configs(cfg, np.zeros(len(step), bool), step)


def test_ablation_settings_are_validated():
    with pytest.raises(ValueError, match="RunConfig.drop_share"):
        make_config("tiny", ablation="drop_random")  # drop_share 0 with drop_random
    with pytest.raises(ValueError, match="RunConfig.ablation"):
        make_config("tiny", ablation="nope")


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    from bt_bench.runs.build import build_run

    root = tmp_path_factory.mktemp("causal")
    base = make_config("smoke", steps=6, window=4, eval_every=2, ckpt_every=2, ckpt_window_every=2, eval_prompts=8,
                       capture_in_run=False)
    return {name: build_run(c, root, progress=False) for name, c in {
        "none": base, "no_bonus": dataclasses.replace(base, ablation="no_bonus"),
        "drop_random": dataclasses.replace(base, ablation="drop_random", drop_share=1.0)}.items()}


def test_no_bonus_pays_no_bonus(smoke_runs):
    assert not smoke_runs["no_bonus"].columns["is_gt"].any()
    assert not smoke_runs["no_bonus"].columns["reward_bonus"].any()


def test_drop_random_zeroes_exactly_the_unpaid_in_window_rollouts(smoke_runs):
    c, W = smoke_runs["drop_random"].columns, smoke_runs["drop_random"].config.window
    win = c["step"] < W
    assert np.all(c["advantage"][win & ~c["is_gt"]] == 0)  # drop_share 1: every unpaid in-window rollout
    after = ~win
    assert np.any(c["advantage"][after] != 0) or not np.any(c["reward"][after] != c["reward"][after][0])
