"""``bt-bench bench sketch-seeds``: its ``exact`` row is the unsketched TracIn (checked against a slow autograd loop),
the sketched rows are other rankings of the same draw, and bad arguments fail with the option named."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bt_bench.bench import sketch_seeds
from bt_bench.estimator import rollout_batch, rollout_losses
from bt_bench.estimator.handover import draw_candidates
from bt_bench.fixture.reader import fixture_config, load_fixture
from bt_bench.sketch.spec import preset


@pytest.fixture(scope="module")
def fx(smoke_run, tmp_path_factory):
    return load_fixture(smoke_run, fixture_config("smoke", 2), tmp_path_factory.mktemp("sketch_seeds_cache"))


def _autograd_tracin(fx, rows: list[int]) -> np.ndarray:
    """<grad target.loss, grad rollout_losses_i> at the draw's checkpoint, one candidate at a time."""
    data, targets = draw_candidates(fx, "saturated", 0)
    view = data.view_for(sketch_seeds.PROBE())
    c = view.checkpoints[-1].step
    model = view.model(c)
    params = [p for p in model.parameters() if p.requires_grad]
    g_t = torch.autograd.grad(targets["in_context"].loss(model, c), params, allow_unused=True)
    out = []
    for i in rows:
        g = torch.autograd.grad(rollout_losses(model, rollout_batch(view, [i]))[0], params, allow_unused=True)
        out.append(sum(float((a * b).sum()) for a, b in zip(g_t, g) if a is not None and b is not None))
    return np.asarray(out)


def test_exact_row_is_unsketched_tracin_and_sketches_reorder(fx):
    specs = {"exact": preset("exact"), "default": preset("default"), "small": preset("small", 3)}
    rows = {r["spec"]: r for r in sketch_seeds.compare(fx, "saturated", 0, specs, n_resamples=50)}
    exact = np.asarray(rows["exact"]["scores"])
    pick = [int(i) for i in np.argsort(-np.abs(exact))[:6]]  # the largest scores: a relative check means something
    np.testing.assert_allclose(exact[pick], _autograd_tracin(fx, pick), rtol=1e-4)
    assert rows["exact"]["slope"] == pytest.approx(1.0) and rows["exact"]["spearman"] == pytest.approx(1.0)
    for name in ("default", "small"):
        r = rows[name]
        assert np.all(np.isfinite(r["scores"])) and 0 <= r["auc"] <= 1 and 0 <= r["residualized_auc"] <= 1
        assert r["spearman"] < 0.9999, f"{name}: a JL sketch cannot rank exactly like the flat gradient"
    assert "exact" in sketch_seeds.format_rows(list(rows.values()))


def test_compare_needs_the_exact_reference(fx):
    with pytest.raises(ValueError, match="'exact' entry"):
        sketch_seeds.compare(fx, "saturated", 0, {"default": preset("default")})
    with pytest.raises(ValueError, match="must be identities"):  # a sketch passed off as the reference
        sketch_seeds.compare(fx, "saturated", 0, {"exact": preset("default")})


@pytest.mark.parametrize("argv, msg", [(["--sketch-seeds", "0"], "--sketch-seeds"),
                                       (["--draw", "3"], "--draw must be in 0..2"),
                                       (["--draw", "0", "5"], "got [5]"),
                                       (["--spec", "x64"], "--spec: 'x64': expected NAME:FIELD=VALUE"),
                                       (["--spec", "x:k_in=64,nope=1"], "unknown fields ['nope']")])
def test_bad_arguments_name_the_option(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        sketch_seeds.main(argv)
    assert e.value.code == 2 and msg in capsys.readouterr().err


def _row(spec, spearman, auc, dim=64, seconds=1.0):
    return {"spec": spec, "spearman": spearman, "auc": auc, "dim": dim, "seconds": seconds}


def test_summary_is_each_specs_agreement_with_exact_over_the_draws():
    """Hand-computed: the stored default's largest AUC gap is 0.05 (draw 1), so it does not agree; ``large`` has
    median Spearman 0.97 and gaps 0.01/0.02: it agrees. A gap is measured against exact on the same draw."""
    draws = [{"seed": 0, "draw": 0, "rows": [_row("exact", 1.0, 0.70), _row(sketch_seeds.STORED, 0.90, 0.72),
                                             _row("large", 0.97, 0.71)]},
             {"seed": 0, "draw": 1, "rows": [_row("exact", 1.0, 0.60), _row(sketch_seeds.STORED, 0.96, 0.65),
                                             _row("large", 0.98, 0.62)]},
             {"seed": 1, "draw": 0, "rows": [_row("exact", 1.0, 0.80), _row(sketch_seeds.STORED, 0.99, 0.79),
                                             _row("large", 0.96, 0.80)]}]
    out = sketch_seeds.summarize(draws)
    t = {r["spec"]: r for r in out["table"]}
    assert out["default_vs_exact_auc_gap"] == pytest.approx(0.05)
    assert t[sketch_seeds.STORED]["median_spearman"] == pytest.approx(0.96) and not t[sketch_seeds.STORED]["agrees"]
    assert t["large"]["max_auc_gap"] == pytest.approx(0.02) and t["large"]["agrees"]
    assert t["large"]["min_spearman"] == pytest.approx(0.96) and t["exact"]["agrees"] and t["exact"]["draws"] == 3
    assert not sketch_seeds.summarize(draws, {"median_spearman": 0.99, "max_auc_gap": 1.0})["table"][2]["agrees"]
    assert "default_vs_exact_auc_gap: 0.050" in sketch_seeds.format_summary(out)
    with pytest.raises(ValueError, match="no 'exact' row"):
        sketch_seeds.summarize([{"seed": 0, "draw": 0, "rows": [_row("large", 0.9, 0.5)]}])


def test_compare_reports_each_specs_cost(fx):
    rows = {r["spec"]: r for r in sketch_seeds.compare(fx, "saturated", 0, {"exact": preset("exact"),
                                                                             "small": preset("small")},
                                                       n_resamples=20)}
    assert rows["small"]["dim"] < rows["exact"]["dim"] and rows["small"]["seconds"] > 0
    out = sketch_seeds.summarize([{"seed": 0, "draw": 0, "rows": list(rows.values())}])
    assert out["default_vs_exact_auc_gap"] is None  # the stored default was not among the specs


def test_a_candidate_spec_parses_into_a_sketch_spec():
    name, spec = sketch_seeds.parse_spec("x64:k_in=64,k_out=64,k_vocab=256,k_small=1024,k=none")
    assert name == "x64" and (spec.k_in, spec.k_vocab, spec.k) == (64, 256, None) and spec.kind == "factorized"
