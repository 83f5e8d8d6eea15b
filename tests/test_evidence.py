"""Evidence replay: the published BehaviorTrace table (bt_bench/data/behaviortrace/README.md) is reproduced
from the vendored rows by bt_bench.checklist.bootstrap, the replayed verdicts are what that README says the
checklist should conclude, and native evidence round-trips."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from test_verdicts import TH, make_candidates, make_run, make_token_level

from bt_bench.checklist.base import Thresholds
from bt_bench.checklist.bootstrap import auc_bootstrap, mean_bootstrap, residualized_auc_bootstrap
from bt_bench.checklist.evidence_format import (
    VERSION,
    DrawEvidence,
    Evidence,
    RunEvidence,
    StabilityEvidence,
    TokenEvidence,
    evidence_from_dict,
    evidence_to_dict,
    load_evidence,
    read_minimal_pair_rows,
    read_token_level,
    write_evidence,
)
from bt_bench.checklist.examples import behaviortrace_seed2
from bt_bench.checklist.metrics import count_pairs, precision_at_k
from bt_bench.checklist.registry import CHECKS
from bt_bench.checklist.evidence_judging import declared_norm_variant
from bt_bench.checklist.replay import replay

# The paper's table for seed 2: field -> (raw AUC, raw CI, residualized AUC, residualized CI)
PUBLISHED = {
    "mp_centered": (0.6689, (0.6072, 0.7257), 0.6293, (0.5612, 0.6882)),
    "mp": (0.6519, (0.5912, 0.7109), 0.6077, (0.5484, 0.6703)),
    "norm": (0.7211, (0.6645, 0.7763), 0.7370, (0.6837, 0.7895)),
    "fluency": (0.7245, (0.6663, 0.7777), None, None),
}
BOOT = {"n_resamples": 5000, "seed": 0}  # the published CIs used 600 resamples of another stream


@pytest.fixture(scope="module")
def seed2():
    return behaviortrace_seed2()  # vendored in the package (bt_bench/data/behaviortrace): never skipped


@pytest.fixture(scope="module")
def rows(seed2):
    cols, meta = read_minimal_pair_rows(seed2 / "minimal_pair_rows_ckpt2_gen2.json")
    return cols, meta


@pytest.mark.parametrize("field", sorted(PUBLISHED))
def test_published_auc_table(rows, field):
    cols, _ = rows
    raw_pub, raw_ci, res_pub, res_ci = PUBLISHED[field]
    raw = auc_bootstrap(cols[field], cols["has_behavior"], cols["group"], **BOOT)
    assert raw.n == 882
    assert raw.estimate == pytest.approx(raw_pub, abs=5e-4)
    assert (raw.ci_low, raw.ci_high) == pytest.approx(raw_ci, abs=0.01)
    if res_pub is not None:
        res = residualized_auc_bootstrap(cols[field], cols["fluency"], cols["has_behavior"], cols["group"],
                                         **BOOT)
        assert res.estimate == pytest.approx(res_pub, abs=5e-4)
        assert (res.ci_low, res.ci_high) == pytest.approx(res_ci, abs=0.01)


def test_published_rows_shape(rows):
    cols, meta = rows
    assert (meta["checkpoint_step"], meta["n"], len(cols["group"])) == (100, 1248, 1248)
    assert len(np.unique(cols["group"])) == 156 and count_pairs(cols["has_behavior"], cols["group"]) == 882


def test_published_token_level(seed2):
    t = read_token_level(seed2 / "token_level_cos_temp0.9.json")
    assert {k: len(v) for k, v in t.items()} == {"vs_ctx": 160, "vs_cont": 160, "cos_full": 160}
    ctx = mean_bootstrap(t["vs_ctx"], **BOOT)
    assert ctx.estimate == pytest.approx(0.295, abs=5e-4) and ctx.ci_low > 0.05
    assert t["vs_cont"].mean() == pytest.approx(-0.11, abs=0.01)
    assert t["cos_full"].mean() == pytest.approx(-0.13, abs=0.01)


def test_replay_reaches_the_published_conclusions(seed2):
    got = {(v.estimator, v.check): v for v in replay(seed2)}
    fc = {name: got[(name, "fluency_confound")] for name in ("mp_centered", "mp", "mp_bal_centered", "norm_only")}
    # fluency's raw AUC is at least every gradient score's: fluency_confound fails GAS_centered and C1_plain
    for name, v in fc.items():
        assert v.outcome == "fail", (name, v.reason)
        m = v.metrics["seed2/draw2/auc"].value, v.metrics["seed2/draw2/fluency_auc"].value
        assert m[0] <= m[1]
    assert fc["mp_centered"].metrics["seed2/draw2/auc"].value == pytest.approx(0.6689, abs=5e-4)
    # GAS_centered's residualized AUC (0.629) is below norm_only's (0.737)
    res = {k: fc[k].metrics["seed2/draw2/residualized_auc"].value for k in ("mp_centered", "norm_only")}
    assert res["mp_centered"] == pytest.approx(0.6293, abs=5e-4) and res["norm_only"] == pytest.approx(0.7370,
                                                                                                        abs=5e-4)
    # token level: in-context alignment holds, the constructed target does not align; no placebo -> skip
    tok = got[("sketch_cosine", "trigger_token_alignment")]
    assert tok.outcome == "skip" and "no placebo" in tok.reason
    assert tok.metrics["seed2/in_context_mean"].ci_low > 0.05
    assert tok.metrics["seed2/constructed_mean"].ci_high < 0.05
    # what the rows cannot support is skipped with a reason, never passed
    assert not any(v.outcome == "pass" for v in got.values())
    for (name, check), v in got.items():
        if check not in ("fluency_confound", "trigger_token_alignment") or name == "sketch_cosine" and \
                check == "fluency_confound":
            assert v.outcome == "skip" and v.reason, (name, check)


def test_single_published_files_load(seed2):
    ev = load_evidence(seed2 / "minimal_pair_rows_ckpt2_gen2.json")
    (d,) = ev.draws
    assert (d.seed, d.draw, d.checkpoint_kind(Thresholds())) == (2, 2, "saturated")
    assert set(d.scores) == {"mp", "mp_centered", "mp_bal_centered", "norm_only"}
    (t,) = load_evidence(seed2 / "token_level_cos_temp0.9.json").token_level
    assert (t.seed, t.estimator, t.placebo) == (2, "sketch_cosine", None)


# ------------------------------------------------------------------------------------ native format
def _synthetic_evidence() -> Evidence:
    runs, draws, tokens, stab = [], [], [], []
    for seed in range(3):
        r = make_run(seed)
        runs.append(RunEvidence(seed=seed, W=r["W"], step=r["step"], group=r["group"], is_gt=r["is_gt"],
                                nonzero=r["nonzero"], advantage=r["advantage"],
                                scores={k: r[k] for k in ("planted", "random", "norm_only",
                                                          "norm_only_step")}))
        for draw in range(3):
            c = make_candidates(10 * seed + draw)
            draws.append(DrawEvidence(seed=seed, draw=draw, group=c["group"], has_behavior=c["has_behavior"],
                                      fluency=c["fluency"], scores={k: c[k] for k in ("planted", "random")},
                                      checkpoint_step=40, kind="saturated"))
        c = make_candidates(100 + seed, rate=0.4)
        draws.append(DrawEvidence(seed=seed, draw=0, group=c["group"], has_behavior=c["has_behavior"],
                                  fluency=c["fluency"], scores={k: c[k] for k in ("planted", "random")},
                                  checkpoint_step=10, behavior_rate=0.4))
        t = make_token_level(seed)
        tokens.append(TokenEvidence(seed=seed, estimator="planted", cosine_scale=True, **t))
        rng = np.random.default_rng(seed)
        base = rng.normal(size=200)
        stab.append(StabilityEvidence(seed=seed, estimator="planted", draws=np.arange(3),
                                      scores=base + rng.normal(0, 0.3, (3, 200))))
    return Evidence(runs=runs, draws=draws, token_level=tokens, stability=stab, source="synthetic test")


@pytest.fixture(scope="module")
def synthetic():
    return _synthetic_evidence()


@pytest.mark.parametrize("name", ["ev.json", "ev.json.gz"])
def test_native_round_trip(synthetic, tmp_path, name):
    path = write_evidence(tmp_path / name, synthetic)
    back = load_evidence(path)
    assert evidence_to_dict(back) == evidence_to_dict(synthetic)
    r0, b0 = synthetic.runs[0], back.runs[0]
    assert np.array_equal(r0.scores["planted"], b0.scores["planted"]) and b0.is_gt.dtype == bool
    assert b0.step.dtype.kind == "i" and b0.rollout_level == {"planted": True, "random": True,
                                                              "norm_only": True, "norm_only_step": False}
    assert back.draws[-1].checkpoint_kind(Thresholds()) == "unsaturated"
    assert back.stability[0].scores.shape == (3, 200) and back.source == "synthetic test"
    if name.endswith(".json"):
        assert json.loads(path.read_text())["version"] == VERSION


def test_replay_native_planted_passes_random_fails(synthetic, tmp_path):
    got = {(v.estimator, v.check): v for v in replay(write_evidence(tmp_path / "ev.json", synthetic), TH)}
    for check in ("gradient_norm_baseline", "fluency_confound", "headroom", "seed_draw_variance",
                  "trigger_token_alignment", "advantage_baseline"):
        assert got[("planted", check)].outcome == "pass", (check, got[("planted", check)].reason)
    for check in ("gradient_norm_baseline", "fluency_confound", "headroom", "advantage_baseline"):
        assert got[("random", check)].outcome == "fail", (check, got[("random", check)].reason)
    assert got[("random", "trigger_token_alignment")].outcome == "skip"
    assert got[("norm_only", "gradient_norm_baseline")].outcome == "skip"
    assert got[("norm_only_step", "advantage_baseline")].outcome == "skip"  # step-level
    assert set(got[("planted", "gradient_norm_baseline")].metrics) >= {"seed0/precision", "seed2/window_chance"}


def test_replay_verdicts_carry_their_units(synthetic):
    """Every replayed verdict carries its seeds/draws as data (Verdict.units), in checklist (registry) order."""
    got = [v for v in replay(synthetic, TH) if v.estimator == "planted"]
    assert [v.check for v in got] == [n for n, s in CHECKS.items() if s.replay]
    units = {v.check: [(u["seed"], u["draw"]) for u in v.units] for v in got}
    per_draw = [(s, d) for s in range(3) for d in range(3)]
    assert units["gradient_norm_baseline"] == units["advantage_baseline"] == [(s, None) for s in range(3)]
    assert units["trigger_token_alignment"] == [(s, None) for s in range(3)]
    assert units["fluency_confound"] == units["seed_draw_variance"] == per_draw
    assert units["headroom"] == [(s, 0) for s in range(3)]
    for v in got:
        assert all(u["outcome"] in ("pass", "fail") and u["metrics"] for u in v.units), v.check
    sdv = next(v for v in got if v.check == "seed_draw_variance")
    assert "residualized_auc" in sdv.units[0]["metrics"] and "residualized_auc_mean" in sdv.metrics


def test_declared_norm_variant_is_fixed_per_evidence(synthetic):
    """One variant for the whole evidence, from the norm_only scores alone (spec, check 1)."""
    p = {v: np.mean([precision_at_k(r.scores[v], r.is_gt) for r in synthetic.runs])
         for v in ("norm_only", "norm_only_step")}
    declared = declared_norm_variant(synthetic)
    assert declared == max(p, key=p.get)
    got = {(v.estimator, v.check): v for v in replay(synthetic, TH)}
    v = got[("planted", "gradient_norm_baseline")]
    assert v.reason.count(f"declared {declared} ") == len(synthetic.runs)
    assert v.metrics["seed0/norm_precision"].value == pytest.approx(
        precision_at_k(synthetic.runs[0].scores[declared], synthetic.runs[0].is_gt))
    # only one variant in the evidence: that one; none: the check is skipped with a reason
    only_step = replace(synthetic, runs=tuple(replace(r, scores={k: v for k, v in r.scores.items()
                                                                 if k != "norm_only"}, rollout_level={})
                                              for r in synthetic.runs))
    assert declared_norm_variant(only_step) == "norm_only_step"
    none = replace(synthetic, runs=tuple(replace(r, scores={"planted": r.scores["planted"]}, rollout_level={})
                                         for r in synthetic.runs))
    assert declared_norm_variant(none) is None
    v = replay(none, TH)[0]
    assert (v.check, v.outcome) == ("gradient_norm_baseline", "skip") and "no norm_only" in v.reason


def test_native_refusals(synthetic, tmp_path):
    doc = evidence_to_dict(synthetic)
    with pytest.raises(ValueError, match="^version: unsupported 2"):
        evidence_from_dict(doc | {"version": 2})
    with pytest.raises(ValueError, match="^format:"):
        evidence_from_dict(doc | {"format": "other"})
    with pytest.raises(ValueError, match="^evidence: malformed"):
        evidence_from_dict(doc | {"runs": [{"seed": 0}]})
    r = synthetic.runs[0]
    with pytest.raises(ValueError, match=r"^runs\[seed=0\]\.scores\[x\]: length 3 differs"):
        RunEvidence(seed=0, W=r.W, step=r.step, group=r.group, is_gt=r.is_gt, nonzero=r.nonzero,
                    scores={"x": [1.0, 2.0, 3.0]})
    bad = Evidence(token_level=[TokenEvidence(seed=0, estimator="x", cosine_scale=True,
                                              in_context=[0.1, np.inf])])
    with pytest.raises(ValueError, match="^evidence: holds a non-finite"):
        write_evidence(tmp_path / "bad.json", bad)
    assert not list(tmp_path.iterdir())
    (tmp_path / "junk.json").write_text("{}")
    with pytest.raises(ValueError, match="^path:"):
        load_evidence(tmp_path / "junk.json")
