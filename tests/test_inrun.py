"""In-run capture (issue 3 item 3): the sketches captured from trl's own backward are exactly the sketches of each
rollout's loss term at the parameters its step used, recomputed on a freshly loaded checkpoint of that step."""

from __future__ import annotations

import numpy as np



def test_in_run_sketches_equal_recomputed_at_the_steps_checkpoint(smoke_run):
    from bt_bench.fixture.derive import train_batch
    from bt_bench.sketch import Sketcher

    S = np.load(smoke_run.path / "sketches" / "in_run.npy")
    c, cfg = smoke_run.columns, smoke_run.config
    assert S.shape[0] == len(c["uid"]) and S.dtype == np.float32
    zero = np.asarray(c["advantage"]) == 0
    assert np.all(S[zero] == 0) and np.all(np.abs(S[~zero]).sum(1) > 0)  # zero advantage <=> zero gradient
    checked = 0
    for step in smoke_run.checkpoints:  # checkpoint `step` = the parameters step `step` trained with
        idx = np.flatnonzero((np.asarray(c["step"]) == step) & ~zero)
        if step >= cfg.steps or len(idx) == 0:
            continue
        batch = train_batch(c, idx)
        keep = batch["completion_mask"].sum(0) > 0
        batch["completion_ids"], batch["completion_mask"] = (batch["completion_ids"][:, keep],
                                                             batch["completion_mask"][:, keep])
        batch.update(loss_type=cfg.loss_type, temperature=cfg.temperature)
        again = Sketcher(smoke_run.load_model(step), cfg.sketch_spec()).sketch(batch)
        err = np.linalg.norm(again - S[idx]) / np.linalg.norm(S[idx])
        assert err < 1e-5, (step, err)
        # the per-step sketch (sum over the step's rollouts) is the sketch of the step's gradient: linearity
        assert np.allclose(again.sum(0), S[np.asarray(c["step"]) == step].sum(0), rtol=1e-4, atol=1e-6)
        checked += 1
    assert checked >= 2



def test_training_fluency_recorded_in_run(smoke_run):
    import torch

    from bt_bench.fixture.derive import train_batch
    from bt_bench.sketch import completion_logps

    c = smoke_run.columns
    step = smoke_run.checkpoints[1]
    idx = np.flatnonzero(np.asarray(c["step"]) == step)[:16]
    batch = train_batch(c, idx)
    batch["temperature"] = smoke_run.config.temperature
    with torch.no_grad():
        lp = completion_logps(smoke_run.load_model(step), batch)
    m = batch["completion_mask"].float()
    flu = ((lp * m).sum(1) / m.sum(1)).numpy()
    assert np.allclose(flu, np.asarray(c["fluency"])[idx], atol=1e-4)
