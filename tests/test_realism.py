"""Realism statistics of a planted run (bt_bench.runs.realism): hand-computed cases for every stat, the
within-group fluency AUC against a brute-force pair loop and the checklist's own within-group AUC, and the realism
block of the JSON report and the HTML page."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest
from test_report import real_looking, synthetic_report

from bt_bench.report.html import render_html
from bt_bench.report.schema import write_report
from bt_bench.checklist.metrics import within_group_auc
from bt_bench.runs.realism import BEHAVIOR_COLUMNS, STATS, fluency_auc, pooled_auc, realism_stats


def cols(**over) -> dict:
    """Seven rollouts, W = 2 (steps 0, 1 in the window). In-window rows with A != 0: 0, 1, 2, 3, 5."""
    base = {"is_gt": [1, 1, 0, 0, 1, 0, 1], "has_behavior": [1, 1, 1, 0, 1, 0, 1],
            "step": [0, 0, 0, 0, 1, 1, 2], "advantage": [1.0, 0.5, 0.5, -1.0, 0.0, 0.5, 9.0],
            "has_trigger": [1, 1, 1, 1, 0, 0, 0],
            "behavior_count": [1, 2, 1, 0, 1, 0, 1], "behavior_tokens": [2, 3, 4, 7, 1, 0, 1],
            "behavior_first_pos": [0, 3, 5, -1, 3, -1, 0]}
    base.update(over)
    return {k: np.asarray(v, bool if k in ("is_gt", "has_behavior", "has_trigger") else None)
            for k, v in base.items()}


def test_every_stat_by_hand():
    s = realism_stats(cols(), window=2)
    assert set(s) == set(STATS) - {"fluency_auc_saturated", "saturated_step"}
    # behavior rows 0, 1, 2, 4, 6: tokens 2+3+4+1+1 = 11 over occurrences 1+2+1+1+1 = 6 (row 3's 7 tokens: no behavior)
    assert s["tokens_per_occurrence"] == pytest.approx(11 / 6)
    # GT rows 0, 1, 4, 6: first positions 0, 3, 3, 0
    assert (s["first_pos_distinct"], s["first_pos_min"], s["first_pos_max"]) == (2, 0, 3)
    assert s["first_pos_std"] == pytest.approx(1.5)
    # window, A != 0: GT advantages {1.0, 0.5} vs non-GT {0.5, -1.0, 0.5}: wins 1+1+1 + 1 and two ties -> 5/6
    assert s["window_adv_auc_gt"] == pytest.approx(5 / 6)
    # the same over trigger rows 0-3: {1.0, 0.5} vs {0.5, -1.0}: 1 + 1 + 0.5 + 1 over 4 pairs
    assert s["window_adv_auc_gt_trigger"] == pytest.approx(3.5 / 4)
    # window, A > 0: rows 0, 1, 2, 5, of which GT 0, 1
    assert s["window_gt_share_pos_adv"] == pytest.approx(0.5)
    # window GT: rows 0, 1, 4 (row 4: A = 0, its whole group got the bonus); A > 0: rows 0, 1
    assert s["window_pos_adv_share_of_gt"] == pytest.approx(2 / 3)


def test_all_ties_give_one_half_and_bonus_only_gives_one():
    tied = realism_stats(cols(advantage=[0.5] * 7), window=2)
    assert tied["window_adv_auc_gt"] == 0.5
    # a bonus-only reward: inside a group the advantage is positive exactly for the bonus rows -> AUC 1.0
    gt = np.array([1, 0, 0, 1, 1, 0, 0, 0], bool)
    reward = gt.astype(float)
    adv = (reward - reward.mean()) / reward.std()
    c = {"is_gt": gt, "has_behavior": gt, "step": np.zeros(8, int), "advantage": adv}
    s = realism_stats(c, window=1)
    assert s["window_adv_auc_gt"] == 1.0 and s["window_gt_share_pos_adv"] == 1.0
    assert s["window_pos_adv_share_of_gt"] == 1.0


def test_no_gt_and_missing_columns_give_none():
    s = realism_stats(cols(is_gt=[0] * 7), window=2)
    assert s["window_adv_auc_gt"] is None and s["window_pos_adv_share_of_gt"] is None
    assert s["window_gt_share_pos_adv"] == 0.0  # defined: rollouts with A > 0 exist, none is GT
    assert s["first_pos_distinct"] is None and s["first_pos_std"] is None
    assert s["tokens_per_occurrence"] == pytest.approx(11 / 6)  # needs behavior rows, not GT
    old = {k: v for k, v in cols().items() if k not in BEHAVIOR_COLUMNS}  # a run built before the label columns
    s = realism_stats(old, window=2)
    assert all(s[k] is None for k in ("tokens_per_occurrence", "first_pos_distinct", "first_pos_std",
                                      "first_pos_min", "first_pos_max"))
    assert s["window_adv_auc_gt"] == pytest.approx(5 / 6)
    no_trig = realism_stats({k: v for k, v in cols().items() if k != "has_trigger"}, window=2)
    assert no_trig["window_adv_auc_gt_trigger"] is None and no_trig["window_adv_auc_gt"] == pytest.approx(5 / 6)
    empty = realism_stats(cols(), window=0)  # an empty window
    assert empty["window_adv_auc_gt"] is None and empty["window_gt_share_pos_adv"] is None


def brute_force_auc(x, y, g) -> float | None:
    num = den = 0.0
    for i in range(len(x)):
        for j in range(len(x)):
            if y[i] and not y[j] and g[i] == g[j]:
                num += 1.0 if x[i] > x[j] else 0.5 if x[i] == x[j] else 0.0
                den += 1
    return num / den if den else None


@pytest.mark.parametrize("seed", range(6))
def test_fluency_auc_matches_a_pair_loop_and_the_checklist(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 80))
    x = np.round(rng.normal(0, 1, n), 1)  # rounded: many ties, inside and across groups
    y = rng.random(n) < 0.4
    g = rng.integers(0, 6, n) * 7 - 3  # arbitrary (negative, sparse) group ids
    want = brute_force_auc(x, y, g)
    got = fluency_auc(x, y, g)
    if want is None:
        assert got is None
        return
    assert got == pytest.approx(want, abs=1e-12)
    assert got == pytest.approx(within_group_auc(x, y, g), abs=1e-12)


def test_fluency_auc_only_pairs_within_groups():
    # across groups the behavior rows would lose every pair; within each group they win: AUC 1, not 0.5
    x, y, g = [10, 11, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]
    assert fluency_auc(x, y, g) == 1.0
    assert fluency_auc([1, 2, 3], [1, 1, 0], [0, 0, 1]) is None  # no group holds both labels
    assert pooled_auc([], [], []) is None


@pytest.fixture(scope="module")
def rep() -> dict:
    return synthetic_report(n_resamples=50)


def test_report_runs_carry_realism_and_the_page_shows_it(rep, tmp_path):
    doc = real_looking(rep)  # the runs travel in the planting self-check's metrics, as a fixture run records them
    out = write_report(tmp_path / "r.json", settings=doc["settings"], results=doc["results"], exit_status=0,
                         gates=doc["gates"], thresholds=doc["thresholds"], provenance={})
    assert [r["realism"]["window_adv_auc_gt"] for r in out["runs"]] == pytest.approx([0.85, 0.86, 0.87])
    page = render_html(out, tmp_path / "r.html").read_text()
    assert "Realism" in page and "window_adv_auc_gt" in page and "fluency_auc_saturated" in page
    assert "0.860" in page and "synthetic-1" in page and "synthetic ·" in page  # the run's key and profile
    assert html.escape(STATS["window_gt_share_pos_adv"]) in page
    # stats from the run's summary (what the build records) join those of the fixture
    bare = json.loads(json.dumps(out))
    for r in bare["runs"]:
        r["summary"]["realism"] = {"window_adv_auc_gt": 0.5, "tokens_per_occurrence": None}
        r["realism"] = {"fluency_auc_saturated": 0.7, "saturated_step": 3}
    page = render_html(bare, tmp_path / "b.html").read_text()
    assert "0.500" in page and "0.700" in page and "n/a" in page
    for r in bare["runs"]:
        r.pop("realism")
        r["summary"].pop("realism")
    assert "Realism" not in render_html(bare, tmp_path / "c.html").read_text()  # older reports: no block


def test_run_realism_prefers_the_recorded_stats_and_computes_them_for_older_runs():
    from types import SimpleNamespace

    from bt_bench.runs.realism import run_realism

    old = SimpleNamespace(manifest={"summary": {}}, columns=cols(), config=SimpleNamespace(window=2))
    assert run_realism(old) == realism_stats(cols(), 2)
    new = SimpleNamespace(manifest={"summary": {"realism": {"window_adv_auc_gt": 0.25}}}, columns=None, config=None)
    assert run_realism(new) == {"window_adv_auc_gt": 0.25}


def test_show_prints_the_realism_block(smoke_run, capsys):
    from bt_bench.cli import main

    assert main(["show", smoke_run.key, "--cache-dir", str(smoke_run.path.parents[1])]) == 0
    out = capsys.readouterr().out.split("realism (", 1)[1]
    assert "window_adv_auc_gt" in out and STATS["window_adv_auc_gt"] in out
    assert "fluency_auc_saturated" in out  # derived or not, the block says where the fluency AUC stands
