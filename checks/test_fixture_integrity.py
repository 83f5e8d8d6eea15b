"""Fixture self-check (spec, "integrity"): rollout count = steps x P x G; each rollout belongs to exactly one
optimizer step; the stored files match their hashes (a resumed or mixed run is refused). Runs once."""

import numpy as np

from bt_bench.plugin.glue import record
from bt_bench.runs.store import load_run


def test_integrity(bt_runs, request):
    for run in bt_runs["runs"]:
        again = load_run(run.path, verify_hashes=True)  # re-hash every file, recheck counts and step membership
        c = again.columns
        cfg = again.config
        assert len(c["uid"]) == cfg.steps * cfg.prompts_per_step * cfg.generations
        assert np.array_equal(c["trained_step"], c["step"])
        assert len(np.unique(c["uid"])) == len(c["uid"])
    record(request, check="integrity", runs=[r.key for r in bt_runs["runs"]],
           key_figure=f"{len(bt_runs['runs'])} runs, hashes and counts ok")
