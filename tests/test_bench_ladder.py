"""The benchmark's size ladder (bt_bench.bench.ladder) and scale table (bt_bench.bench.scale): the ladder
machinery on two tiny sizes with 1 round, a skip by the (deterministic) memory estimate, the PASS/FAIL logic, and
the scale table's arithmetic checked by hand. No timing asserts: speed is measured by the benchmark, never in tests."""

from __future__ import annotations

import importlib.util

import json

import pytest

from bt_bench.bench import ladder as L
from bt_bench.bench import scale
from bt_bench.bench import sketch as bench
from bt_bench.bench.ladder import Size

TINY = (Size("a", 32, 16, 1, 2, 1, 32, rollouts=3, rounds=1),  # 2,896 parameters
        Size("b", 64, 32, 1, 2, 1, 64, rollouts=3, rounds=1, speed_target=False))  # 11,424


def in_process(argv: list[str]) -> dict:
    return bench.bench_sketch(bench.build_parser().parse_args(argv))


def test_parameter_count_matches_torch():
    from bt_bench.sketch.synthetic import tiny_qwen2

    for s in (*TINY, L.SIZES[0], L.Size("x", 10, 4, 1, 2, 1, 8, 1, 1)):
        model = tiny_qwen2(vocab=s.vocab, hidden=s.hidden, layers=s.layers, heads=s.heads, kv_heads=s.kv_heads,
                           intermediate=s.intermediate)
        assert s.n_params == sum(p.numel() for p in model.parameters())
    assert scale.qwen2_params(**scale.QWEN25_15B) == 1_543_714_304  # Qwen2.5-1.5B(-Instruct), tied embeddings
    assert [round(s.n_params / 1e6) for s in L.SIZES[1:]] == [5, 21, 104]


def test_ladder_on_two_tiny_sizes():
    # est. peak of loop/vmap_dense: 2 x 3 x P x 4 B + the cached [P, 512] matrix = 2072 P bytes: 6.0 MB at size
    # a, 23.7 MB at b; traker: 424 P = 4.8 MB at b. A 10 MiB budget skips exactly loop and vmap at size b.
    extra = ["--preset", "small", "--skip", "dattri_random", "--max-mem-gib", str(10 / 1024), "--slow-s", "0"]
    out = L.run_ladder(TINY, (4,), extra, runner=in_process, progress=False)
    a, b = out["rows"]
    # traker is optional (the `traker` extra; CI installs the base only): without it traker_basic is not measured
    has_traker = importlib.util.find_spec("trak") is not None
    base = [n for n in L.BASELINES if has_traker or n != "traker_basic"]
    assert (a["size"], a["n_params"], a["completion_len"], a["rollouts"]) == ("a", 2896, 4, 3)
    for name in base:
        assert a[name]["measured"] and a[name]["rounds"] == 1 and a[name]["x_ours"] > 0
    assert a["ours_vs_floor"] > 0 and set(a["peak_bytes"]) >= {"floor", "bt_bench", *base}
    assert set(a["targets"]) == {"ours_vs_floor", "vs_loop_dense", "vs_traker_basic"}
    assert set(a["targets"].values()) <= ({"PASS", "FAIL"} if has_traker else {"PASS", "FAIL", "N/A"})
    for name in ("loop_dense", "vmap_dense"):
        assert not b[name]["measured"] and b[name]["reason"].startswith("skipped: est. peak")
        assert b[name]["x_ours"] > 0 and b[name]["est_peak_bytes"] == 2072 * 11424
    assert b["traker_basic"]["measured"] == has_traker
    assert b["targets"]["vs_loop_dense"] == b["targets"]["vs_traker_basic"] == "INFO"  # no speed target at b
    assert out["overall"]["vs_loop_dense"]["rows"] == [f"a/4: {a['targets']['vs_loop_dense']}"]
    assert [r["argv"][:3] for r in out["runs"]] == [["sketch", "--vocab", "32"], ["sketch", "--vocab", "64"]]
    json.dumps(out)  # every figure goes to the JSON


def test_slow_candidates_skip_the_warm_up_and_later_rounds():
    calls: dict[str, int] = {}

    def cand(name: str, slow: bool) -> bench.Candidate:
        return bench.Candidate(name, lambda: calls.__setitem__(name, calls.get(name, 0) + 1), slow=slow)

    cands = [cand("floor", False), cand("bt_bench", False), cand("loop_dense", True)]
    bench.run_rounds(cands, rounds=3, slow_rounds=1)
    assert calls == {"floor": 4, "bt_bench": 4, "loop_dense": 1}  # warm-up + 3 rounds; slow: 1 round, no warm-up
    assert [len(c.wall) for c in cands] == [3, 3, 1]
    rows = bench.summarize(cands, rollouts=2, k=8)
    assert [r["rounds"] for r in rows] == [3, 3, 1]


def fake_report(ours_floor: float, x: dict[str, float], skipped: dict[str, float] | None = None) -> dict:
    cands = [{"name": "floor", "ratio_to_floor": 1.0, "ratio_to_floor_min": 1.0, "time_vs_bt_bench": 0.9,
              "seconds_median": 1.0, "peak_bytes": 1, "rounds": 3},
             {"name": "bt_bench", "ratio_to_floor": ours_floor, "ratio_to_floor_min": ours_floor,
              "time_vs_bt_bench": 1.0, "seconds_median": ours_floor, "peak_bytes": 2, "rounds": 3}]
    cands += [{"name": n, "ratio_to_floor": v * ours_floor, "ratio_to_floor_min": 1.0, "time_vs_bt_bench": v,
               "seconds_median": v, "peak_bytes": 3, "rounds": 1} for n, v in x.items()]
    return {"n_params": 5_000_000, "config": {"rollouts": 16, "rounds": 3}, "candidates": cands,
            "skipped": [{"name": n, "reason": f"skipped: est. {v:.0f} s/round", "est_seconds": v,
                         "est_peak_bytes": 9, "est_time_vs_bt_bench": v} for n, v in (skipped or {}).items()],
            "unavailable": []}


def test_pass_fail_logic():
    big, toy = L.SIZES[1], L.SIZES[0]
    ok = L.ladder_row(big, 12, fake_report(1.1, {"loop_dense": 40.0, "vmap_dense": 9.0, "traker_basic": 12.0}))
    assert ok["targets"] == {"ours_vs_floor": "PASS", "vs_loop_dense": "PASS", "vs_traker_basic": "PASS"}
    bad = L.ladder_row(big, 64, fake_report(1.3, {"loop_dense": 9.9, "traker_basic": 10.0}))
    assert bad["targets"] == {"ours_vs_floor": "FAIL", "vs_loop_dense": "FAIL", "vs_traker_basic": "PASS"}
    assert bad["vmap_dense"] == {"x_ours": None, "measured": False, "reason": "left out"}
    skip = L.ladder_row(big, 64, fake_report(1.25, {"vmap_dense": 3.0}, {"loop_dense": 300.0, "traker_basic": 5.0}))
    assert skip["targets"] == {"ours_vs_floor": "PASS", "vs_loop_dense": "SKIP", "vs_traker_basic": "SKIP"}
    assert skip["loop_dense"]["x_ours"] == 300.0 and skip["loop_dense"]["reason"] == "skipped: est. 300 s/round"
    small = L.ladder_row(toy, 12, fake_report(2.0, {"loop_dense": 5.0, "traker_basic": 20.0}))
    assert small["targets"] == {"ours_vs_floor": "FAIL", "vs_loop_dense": "INFO", "vs_traker_basic": "INFO"}

    o = L.overall([ok, small])
    assert o["ours_vs_floor"]["status"] == "FAIL"  # the floor target applies at every size, the toy too
    assert o["vs_loop_dense"] == {"status": "PASS", "rows": ["5M/12: PASS"]}  # the toy is not judged
    o = L.overall([ok, skip])
    assert [o[k]["status"] for k in o] == ["PASS", "PARTIAL", "PARTIAL"]
    assert L.overall([ok, bad])["vs_loop_dense"]["status"] == "FAIL"
    assert L.overall([small])["vs_loop_dense"]["status"] == "N/A"


def test_a_failed_size_is_an_error_row_not_a_crash():
    def boom(argv):
        raise RuntimeError("exit -9 (killed: out of memory?)")

    out = L.run_ladder(TINY[:1], (4,), runner=boom, progress=False)
    assert out["rows"][0]["error"].startswith("exit -9")
    assert out["overall"]["ours_vs_floor"]["status"] == "FAIL"


def test_scale_table_arithmetic_by_hand():
    model = {"vocab": 10, "hidden": 4, "layers": 1, "heads": 2, "kv_heads": 1, "intermediate": 8}
    # N = q 4*4+4 + k,v 2*(4*2+2) + o 4*4 + mlp 3*4*8 + norms 2*4 + final norm 4 + embedding 10*4 = 204
    t = scale.scale_table(steps=10, prompts_per_step=2, group_size=3, k=8, checkpoints_saved=5, tracin_checkpoints=2,
                      floor_ratio=2.0, completion_tokens=6, prompt_tokens=4, model=model, peak_tflops=1e-9,
                      mfu=0.5)
    assert t["n_params"] == 204 and t["rollouts"] == 60 and t["bytes_per_sketch"] == 32
    assert t["store_bytes"] == {"in_run": 60 * 32, "tracin": 60 * 4 * 32, "every_saved": 60 * 5 * 32}
    assert t["flops_per_rollout"] == 6 * 204 * 10 + 12 * 1 * 4 * 10**2 == 17040
    assert t["gpu_flops_per_s"] == pytest.approx(500.0)  # 1e-9 TFLOP/s x 50%
    assert t["floor_s_per_rollout"] == pytest.approx(17040 / 500)
    assert t["sketch_s_per_checkpoint"] == pytest.approx(60 * 17040 / 500 * 2.0)
    assert t["sketch_s"] == pytest.approx({"tracin": 4 * 4089.6, "every_saved": 5 * 4089.6})
    assert any("= 4,090 s" in line or "= 4090 s" in line for line in t["arithmetic"])


def test_paper_setting_and_its_scale_table(tmp_path, capsys):
    assert scale.scheduled_checkpoints(10, 4, 2, 5) == [0, 2, 4, 5, 10]
    s = scale.paper_setting()
    assert (s["steps"], s["prompts_per_step"], s["group_size"], s["k"]) == (1000, 4, 4, 4096)
    # 0, every 10 steps to W = 200 (20), every 50 after it to T = 1000 (16)
    assert s["checkpoints_saved"] == 37 and s["tracin_checkpoints"] == 2 and s["completion_tokens"] == 64
    out = tmp_path / "scale.json"
    assert bench.main(["sketch", "--scale", "--floor-ratio", "1.1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no GPU on this machine" in printed and "16,000" in printed
    t = json.loads(out.read_text())["scale"]
    assert t["bytes_per_sketch"] == 4 * 4096 and t["rollouts"] == 16_000 and t["floor_ratio"] == 1.1
    assert t["store_bytes"]["in_run"] == 16_000 * 16384 and t["store_bytes"]["every_saved"] == 37 * 16_000 * 16384
    assert t["floor_ratio_source"] == "given by --floor-ratio"


def test_the_default_runner_is_a_subprocess_of_bench_sketch():
    argv = TINY[0].argv(4) + ["--preset", "small", "--skip", "loop_dense,vmap_dense,traker_basic,dattri_random"]
    report = L.run_subprocess(argv, timeout_s=600)
    assert report["n_params"] == 2896 and [c["name"] for c in report["candidates"]] == ["floor", "bt_bench"]
    with pytest.raises(RuntimeError, match="exit 2"):
        L.run_subprocess(["sketch", "--no-such-option"], timeout_s=600)
