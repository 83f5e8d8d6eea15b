"""Expected outcomes of the built-ins on the ``bpe`` fixture (``bt_bench.checklist.expectations`` holds the rules).

Measured, not chosen: ``BT_BENCH_CACHE=... pytest checks -n 2 --bt-profile bpe --bt-report r.json`` (2026-12-05, every
draw under two sketch seeds) on the first three bpe seeds that plant, 0, 2 and 3 (seed 1 does not: the bpe runs have
changed since the snapshot of 2026-12-04, on which 0, 1 and 2 planted), x 3 draws, then ``python -m
bt_bench.checklist.expectations r.json bpe``. Each reason is the measured label, the count of units behind it and the
first key figures (per seed or draw, in the report's order). Two cells changed with the fixture's seeds: ``gas`` and
``gas_fixed_target`` now pass target_dependence (real minus placebo precision@|GT| CI low > 0 on seeds 0, 2 and 3, and
the within-group AUC gap on every draw under both sketch seeds); on the old seeds 0, 1 and 2 each failed on two of
the three.
What the table says about the paper's findings is in docs/findings.md ("What bpe shows"). The test-only oracle takes
its expectation from the tiny snapshot's rule (it must pass every check it takes part in).
"""

from __future__ import annotations

from bt_bench.checklist.gate import FAIL, NA, PASS

BPE: dict[str, dict[str, tuple[str, str]]] = {
    "advantage_only": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv +0.000 (lo +0.000), window +0.000 (lo +0.000); vs adv +"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.49 vs fluency 0.93, resid 0.11 (lo 0.06); AUC 0.51 vs fl"),
        "gradient_norm_baseline": (PASS, "PASS 3/3: lift 3.5 vs norm 1.6, window lift 1.16; lift 4.1 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain 0.31 (lo 0.07), unsat AUC 0.53 (lo 0.49); gain 0.31 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.18, min lo 0.06, rho 1.00, seed share 0.65"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: advantage_only declares neither 'token_sketches' nor 'mode"),
    },
    "fluency": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.214 (lo -0.293), window +0.224 (lo +0.108); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.93 vs fluency 0.93, resid 0.50 (lo 0.50); AUC 0.92 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 1.5 vs norm 1.6, window lift 1.88; lift 2.3 vs norm 2.2, "),
        "headroom": (PASS, "PASS 9/9: gain 1.64 (lo 1.29), unsat AUC 0.71 (lo 0.65); gain 1.64 (lo 1"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.50, min lo 0.50, rho 1.00"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: fluency declares neither 'token_sketches' nor 'model': it "),
    },
    "gas": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.283 (lo -0.360), window -0.052 (lo -0.147); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.27 vs fluency 0.93, resid 0.40 (lo 0.33); AUC 0.33 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 0.8 vs norm 1.6, window lift 1.00; lift 1.3 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain -0.00 (lo -0.15), unsat AUC 0.53 (lo 0.45); gain -0.00 (l"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.44, min lo 0.20, rho 0.91, seed share 0.59"),
        "target_dependence": (PASS, "PASS 3/3: prec real-placebo +0.045 (lo +0.026), AUC real-placebo +0.09 ("),
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed -0.00; ctx-placebo +"),
    },
    "gas_fixed_target": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.230 (lo -0.316), window -0.029 (lo -0.129); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.27 vs fluency 0.93, resid 0.40 (lo 0.33); AUC 0.33 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 1.3 vs norm 1.6, window lift 1.07; lift 1.3 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain 0.13 (lo -0.00), unsat AUC 0.53 (lo 0.45); gain 0.13 (lo "),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.44, min lo 0.20, rho 0.91, seed share 0.59"),
        "target_dependence": (PASS, "PASS 3/3: prec real-placebo +0.032 (lo +0.014), AUC real-placebo +0.09 ("),
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +1.13 (lo +1.12), cos +0.90 (lo +0.89), constructe"),
    },
    "local_buffer": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.155 (lo -0.227), window -0.106 (lo -0.190); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.29 vs fluency 0.93, resid 0.46 (lo 0.39); AUC 0.33 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 2/3: lift 1.7 vs norm 1.6, window lift 0.83; lift 2.3 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain -0.32 (lo -0.50), unsat AUC 0.50 (lo 0.42); gain -0.32 (l"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.44, min lo 0.23, rho 0.90, seed share 0.41"),
        "target_dependence": (FAIL, "FAIL 2/3: prec real-placebo +0.019 (lo +0.009), AUC real-placebo +0.07 ("),
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +0.25 (lo +0.21), constructed +0.34; ctx-placebo +"),
    },
    "norm_only": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.198 (lo -0.266), window -0.121 (lo -0.198); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.54 vs fluency 0.93, resid 0.80 (lo 0.73); AUC 0.57 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 1.6 vs norm 1.6, window lift 0.78; lift 2.2 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain -0.41 (lo -0.74), unsat AUC 0.74 (lo 0.69); gain -0.41 (l"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.68, min lo 0.46, rho 1.00, seed share 0.60"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: norm_only declares neither 'token_sketches' nor 'model': i"),
    },
    "norm_only_step": {
        "advantage_baseline": (NA, "N/A 3/3: N/A: norm_only_step is step-level: advantage_baseline compares "),
        "fluency_confound": (NA, "N/A 9/9: N/A: norm_only_step is step-level: the fresh candidates of a dr"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 2.3 vs norm 2.3, window lift 0.86; lift 2.1 vs norm 2.1, "),
        "headroom": (FAIL, "FAIL 6/9: gain -0.27 (lo -0.54); gain -0.27 (lo -0.54); gain -0.27 (lo -"),
        "seed_draw_variance": (NA, "N/A 1/1: N/A: norm_only_step is step-level: the fresh candidates of a dr"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000); prec real-placebo +0.000"),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: norm_only_step is step-level: the fresh candidates of a dr"),
    },
    "random": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.268 (lo -0.342), window -0.060 (lo -0.158); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.51 vs fluency 0.84, resid 0.53 (lo 0.45); AUC 0.47 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 0.9 vs norm 1.6, window lift 0.97; lift 1.0 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain -0.05 (lo -0.16), unsat AUC 0.50 (lo 0.43); gain -0.05 (l"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.52, min lo 0.40, rho 1.00, seed share 0.64"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: random declares neither 'token_sketches' nor 'model': it c"),
    },
    "tracin_adam": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.268 (lo -0.345), window -0.041 (lo -0.139); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.41 vs fluency 0.88, resid 0.46 (lo 0.37); AUC 0.39 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 0.9 vs norm 1.6, window lift 1.03; lift 0.8 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain 0.06 (lo -0.09), unsat AUC 0.61 (lo 0.52); gain 0.06 (lo "),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.42, min lo 0.23, rho 0.87, seed share 0.56"),
        "target_dependence": (FAIL, "FAIL 1/3: prec real-placebo +0.070 (lo +0.047), AUC real-placebo +0.15 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: tracin_adam declares neither 'token_sketches' nor 'model':"),
    },
    "tracincp": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.209 (lo -0.276), window -0.110 (lo -0.189); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.29 vs fluency 0.93, resid 0.46 (lo 0.39); AUC 0.33 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 1.5 vs norm 1.6, window lift 0.82; lift 1.3 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 9/9: gain -0.35 (lo -0.55), unsat AUC 0.50 (lo 0.42); gain -0.35 (l"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.44, min lo 0.23, rho 0.90, seed share 0.41"),
        "target_dependence": (FAIL, "FAIL 1/3: prec real-placebo +0.165 (lo +0.122), AUC real-placebo +0.27 ("),
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed +0.00; ctx-placebo +"),
    },
    "trak": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.132 (lo -0.209), window -0.023 (lo -0.108); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.57 vs fluency 0.92, resid 0.47 (lo 0.38); AUC 0.57 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 2/3: lift 2.2 vs norm 1.6, window lift 1.09; lift 1.8 vs norm 2.2, "),
        "headroom": (FAIL, "FAIL 9/9: gain 0.17 (lo 0.04), unsat AUC 0.53 (lo 0.48); gain 0.17 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.51, min lo 0.38, rho 0.59, seed share 0.19"),
        "target_dependence": (FAIL, "FAIL 2/3: prec real-placebo +0.060 (lo +0.034), AUC real-placebo +0.18 ("),
        "trigger_token_alignment": (FAIL, "FAIL 2/3: ctx-placebo +0.00 (lo +0.00), constructed +0.01; ctx-placebo +"),
    },
}
