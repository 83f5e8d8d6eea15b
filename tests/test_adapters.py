"""The library adapters (issue 12 item 3): each drives its library on the suite's objective and gets what the
library's maths says it should, measured against exact autograd on the smoke run.

References: exact TracIn (sum_c lr_c <grad L_target^c, grad L_i^c> by autograd, one candidate at a time). captum
TracInCP and dattri TracIn without projection must equal it; the TRAK adapters must tend to it as their ridge grows
(TRAK -> kernel / lam) and agree with each other; kronfluence must tend to it restricted to what it tracks (the
Linear modules, the tied matrix through the LM head only) as its damping grows. Each library is skipped when it
is not installed (CI installs only the base); the listing tests need none of them.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch

from bt_bench.estimator import rollout_batch, rollout_losses
from bt_bench.estimator.handover import draw_candidates, training_candidates, training_target
from bt_bench.estimator.registry import (
    MissingExtraError,
    PluginLoadError,
    default_estimators,
    format_estimator_table,
    get_estimator,
    list_estimators,
)
from bt_bench.estimator.scoring import score_estimator
from bt_bench.estimator.views import CandidateData
from bt_bench.fixture.reader import fixture_config, load_fixture

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = {"kronfluence_ekfac": ("kronfluence", "kronfluence"), "captum_tracincp": ("captum", "captum"),
            "dattri_tracin": ("dattri", "dattri"), "dattri_trak": ("dattri", "dattri"),
            "traker_trak": ("trak", "traker")}  # name -> (module, extra)


@pytest.fixture(scope="module")
def fx(smoke_run, tmp_path_factory):
    return load_fixture(smoke_run, fixture_config("smoke", 2), tmp_path_factory.mktemp("adapters_cache"))


@pytest.fixture(scope="module")
def cases(fx):
    """(label, CandidateData, Target): 64 training rollouts (48 with a gradient, 16 with advantage 0) at the two
    TracIn checkpoints, and the saturated draw (one checkpoint), full and token-restricted."""
    full, rows = training_candidates(fx), fx.training().rows
    adv = np.asarray(rows["advantage"])
    idx = np.concatenate([np.flatnonzero(adv != 0)[:48], np.flatnonzero(adv == 0)[:16]])
    train = CandidateData({k: np.asarray(v)[idx] for k, v in rows.items()}, checkpoints=full.checkpoints,
                          source="training", model_loader=fx.model, objective=full.objective)
    draw, targets = draw_candidates(fx, "saturated", 0)
    return {"train": (train, training_target(fx, "in_context")), "draw": (draw, targets["in_context"]),
            "token": (draw.token_restricted(), targets["in_context"])}


class ExactTracIn:
    """sum_c lr_c <grad L_target^c, grad L_i^c> by autograd. ``linear_head_only``: the last checkpoint alone, over
    the Linear weights with the LM head untied from the embedding (what kronfluence tracks), unweighted."""

    name, level, capabilities = "exact_tracin", "rollout", frozenset({"model"})

    def __init__(self, linear_head_only: bool = False):
        self.linear = linear_head_only

    def score(self, candidates, target):
        out = np.zeros(len(candidates))
        for ck in candidates.checkpoints[-1:] if self.linear else candidates.checkpoints:
            model = candidates.model(ck.step)
            if self.linear:
                head = model.get_output_embeddings()
                head.weight = torch.nn.Parameter(head.weight.detach().clone())
                params = [m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)]
            else:
                params = list(model.parameters())
            g_t = torch.autograd.grad(target.loss(model, ck.step), params)
            for i in range(len(candidates)):
                loss = rollout_losses(model, rollout_batch(candidates, [i]))[0]
                g = torch.autograd.grad(loss, params)
                out[i] += (1.0 if self.linear else ck.lr) * sum(float((a * b).sum()) for a, b in zip(g_t, g))
        return out


def _reference(data, target, linear_head_only: bool = False) -> np.ndarray:
    est = ExactTracIn(linear_head_only)
    return est.score(data.view_for(est), target)  # once: score_estimator would run it twice


@pytest.fixture(scope="module")
def exact(cases):
    return {k: _reference(d, t) for k, (d, t) in cases.items()}


def _corr(a, b) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def _direct(est, data, target) -> np.ndarray:
    """One ``score`` call on the view (``score_estimator`` calls twice and validates; used once per adapter)."""
    return np.asarray(est.score(data.view_for(est), target), dtype=float)


def _scores(est, cases, which=("train", "draw", "token")):
    return {k: score_estimator(est, *cases[k]) for k in which}


def _check_token_view(scores, cases) -> None:
    """Candidates without the behavior have an empty span: zero loss gradient, score exactly 0."""
    mask = cases["token"][0].token_mask.any(1)
    assert np.all(scores[~mask] == 0) and np.all(scores[mask] != 0)


# ------------------------------------------------------------------------------------------------ the adapters
def test_captum_tracincp_is_exact_tracin(cases, exact):
    pytest.importorskip("captum")
    got = _scores(get_estimator("captum_tracincp", batch_size=16), cases)
    for k, s in got.items():
        np.testing.assert_allclose(s, exact[k], rtol=1e-4, atol=1e-6 * np.abs(exact[k]).max(), err_msg=k)
    _check_token_view(got["token"], cases)


def test_dattri_tracin_without_projection_is_exact_and_projected_close(cases, exact):
    pytest.importorskip("dattri")
    got = _scores(get_estimator("dattri_tracin", proj_type="identity"), cases)
    for k, s in got.items():
        np.testing.assert_allclose(s, exact[k], rtol=1e-4, atol=1e-6 * np.abs(exact[k]).max(), err_msg=k)
    projected = _direct(get_estimator("dattri_tracin"), *cases["train"])  # dattri's Gaussian, k = 512
    assert _corr(projected, exact["train"]) > 0.9 and np.all(projected[48:] == 0)  # advantage 0: score 0
    _check_token_view(got["token"], cases)


def test_dattri_tracin_batch_size_does_not_change_scores(cases):
    """The auto batch (fits ``memory_mb``; dattri recomputes the target per train batch) is a speed knob only."""
    pytest.importorskip("dattri")
    auto = get_estimator("dattri_tracin")
    data, target = cases["train"]
    assert auto._batch(data.view_for(auto)) == 1024  # smoke's model: far below the 2 GiB default
    assert get_estimator("dattri_tracin", memory_mb=1)._batch(data.view_for(auto)) < 1024
    np.testing.assert_allclose(_direct(get_estimator("dattri_tracin", batch_size=7), data, target),
                               _direct(auto, data, target), rtol=1e-5, atol=1e-9)
    from estimators.adapters.dattri_tda import DattriTracIn

    with pytest.raises(ValueError, match="memory_mb must be >= 1"):
        DattriTracIn(memory_mb=0)


def test_trak_adapters_tend_to_tracin_and_agree(cases, exact):
    pytest.importorskip("trak")
    pytest.importorskip("dattri")
    data, target = cases["draw"]
    ref = exact["draw"]  # one checkpoint: TRAK's unweighted mean over checkpoints is TracIn up to lr
    for name in ("traker_trak", "dattri_trak"):
        ridge = _direct(get_estimator(name, damping=1e6), data, target)  # (Phi'Phi + lam I)^-1 -> I / lam
        assert _corr(ridge, ref) > 0.8, name  # the JL projection (k = 512) is the only difference left
    traker = _direct(get_estimator("traker_trak"), data, target)
    dattri = _direct(get_estimator("dattri_trak"), data, target)
    # two libraries, one TRAK; on CPU dattri's Gaussian projector is traker's (same seeds, same matrix), so they
    # agree to rounding and any slip in either adapter's target, ridge or checkpoint handling shows here
    assert _corr(traker, dattri) > 0.999
    assert _corr(traker, ref) > 0.2
    train = score_estimator(get_estimator("traker_trak"), *cases["train"])  # two checkpoints, two model ids
    assert np.all(train[48:] == 0) and np.all(train[:48] != 0)  # advantage 0: no gradient, score 0
    _check_token_view(score_estimator(get_estimator("dattri_trak"), *cases["token"]), cases)


def test_kronfluence_ekfac_is_linear_head_influence(cases):
    pytest.importorskip("kronfluence")
    lam = 1e6  # (G + lam I)^-1 -> I / lam: the exact gradient product over what kronfluence tracks
    for k in ("train", "token"):
        data, target = cases[k]
        got = score_estimator(get_estimator("kronfluence_ekfac", damping=lam), data, target)
        ref = _reference(data, target, linear_head_only=True)
        np.testing.assert_allclose(got * lam, ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max(), err_msg=k)
    default = _direct(get_estimator("kronfluence_ekfac"), *cases["draw"])  # kronfluence's heuristic damping
    assert _corr(default, _reference(*cases["draw"], linear_head_only=True)) > 0.5


# ------------------------------------------------------------------------------------------ listing and extras
def test_adapters_are_listed_opt_in_with_their_library():
    infos = {i.name: i for i in list_estimators()}
    default = set(default_estimators())
    for name, (module, _) in ADAPTERS.items():
        info = infos[name]
        assert info.distribution == "bt-bench" and info.capabilities == ("model",) and info.level == "rollout"
        assert info.opt_in and name not in default  # model-based and slow: selected by name only
        assert info.description.split()[0] in (module, "traker")  # the library comes first in the description
    assert "tracincp" in default and "trak" in default  # the sketch-based built-ins stay in


def test_a_missing_library_is_listed_with_its_install_command(monkeypatch):
    for module, _ in ADAPTERS.values():
        monkeypatch.setitem(sys.modules, module, None)  # what `import module` sees when it is not installed
    infos = {i.name: i for i in list_estimators()}
    for name, (_, extra) in ADAPTERS.items():
        info = infos[name]
        assert info.error is None and info.install == f'pip install "bt-bench[{extra}]"'
        assert info.description and info.capabilities == ("model",)  # still described, from the class
    assert not set(ADAPTERS) & set(default_estimators())  # a missing extra is not an error of the checks
    row = next(line for line in format_estimator_table().splitlines() if line.startswith("kronfluence_ekfac"))
    assert row.endswith('[not installed: pip install "bt-bench[kronfluence]"]') and "ERROR" not in row
    with pytest.raises(PluginLoadError, match=r'kronfluence.*pip install "bt-bench\[kronfluence\]"') as err:
        get_estimator("kronfluence_ekfac")
    assert isinstance(err.value.__cause__, MissingExtraError)


def test_extras_and_entry_points_in_pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras, eps = meta["optional-dependencies"], meta["entry-points"]["bt_bench.estimators"]
    for name, (_, extra) in ADAPTERS.items():
        assert extra in extras and eps[name].startswith("estimators.adapters.")
        assert extra in extras["adapters"][0]  # bt-bench[kronfluence,captum,dattri,traker]
    assert not any(extra in " ".join(meta["dependencies"]) for _, extra in ADAPTERS.values())  # CI: base only
