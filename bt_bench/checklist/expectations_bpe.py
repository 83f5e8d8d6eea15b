"""Expected outcomes of the built-ins on the ``bpe`` fixture (``bt_bench.checklist.expectations`` holds the rules).

Measured, not chosen: ``BT_BENCH_CACHE=... pytest checks -n 2 --bt-profile bpe --bt-report r.json`` on bpe seeds 0, 1,
2 x 3 draws (all three plant), then ``python -m bt_bench.checklist.expectations r.json bpe``. Each reason is the
measured label, the count of units behind it and the first key figures (per seed or draw, in the report's order).
What the table says about the paper's findings is in docs/findings.md ("What bpe shows"). The test-only oracle takes
its expectation from the tiny snapshot's rule (it must pass every check it takes part in).
"""

from __future__ import annotations

from bt_bench.checklist.gate import FAIL, NA, PASS

BPE: dict[str, dict[str, tuple[str, str]]] = {
    "advantage_only": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv +0.000 (lo +0.000), window +0.000 (lo +0.000)"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.50 vs fluency 0.96, resid 0.09 (lo 0.04); AUC 0.50 vs fl"),
        "gradient_norm_baseline": (PASS, "PASS 3/3: lift 4.7 vs norm 2.0, window lift 1.57; lift 5.0 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 8/9: gain 0.59 (lo 0.25), unsat AUC 0.52 (lo 0.49); gain 0.59 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.16, min lo 0.04, rho 1.00, seed share 0.93"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: advantage_only declares neither 'token_sketches' nor 'mod"),
    },
    "fluency": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.183 (lo -0.300), window +0.250 (lo +0.130); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.96 vs fluency 0.96, resid 0.50 (lo 0.50); AUC 0.93 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 2.4 vs norm 2.0, window lift 2.59; lift 0.7 vs norm 1.9, "),
        "headroom": (PASS, "PASS 9/9: gain 1.65 (lo 1.42), unsat AUC 0.89 (lo 0.84); gain 1.65 (lo 1"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.50, min lo 0.50, rho 1.00"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: fluency declares neither 'token_sketches' nor 'model': it"),
    },
    "gas": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.119 (lo -0.235), window +0.133 (lo -0.003); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.66 vs fluency 0.96, resid 0.55 (lo 0.47); AUC 0.56 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 2/3: lift 3.2 vs norm 2.0, window lift 2.11; lift 1.5 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 6/9: gain 1.15 (lo 0.88), unsat AUC 0.59 (lo 0.53); gain 1.15 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.57, min lo 0.38, rho -0.16, seed share 0.47"),
        "target_dependence": (FAIL, "FAIL 2/3: prec real-placebo +0.201 (lo +0.147), AUC real-placebo +0.34 ("),
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed -0.00"),
    },
    "gas_fixed_target": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.338 (lo -0.431), window -0.024 (lo -0.119); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.66 vs fluency 0.96, resid 0.55 (lo 0.47); AUC 0.56 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 2/3: lift 0.5 vs norm 2.0, window lift 1.47; lift 1.7 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 2/9: gain 0.49 (lo 0.38), unsat AUC 0.59 (lo 0.53); gain 0.49 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.57, min lo 0.38, rho -0.16, seed share 0.47"),
        "target_dependence": (FAIL, "FAIL 2/3: prec real-placebo +0.008 (lo -0.014), AUC real-placebo +0.34 ("),
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +0.24 (lo +0.22), cos +0.16 (lo +0.13), constructe"),
    },
    "local_buffer": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.214 (lo -0.304), window -0.131 (lo -0.223); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.68 vs fluency 0.96, resid 0.55 (lo 0.47); AUC 0.56 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 2.1 vs norm 2.0, window lift 1.19; lift 2.3 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 6/9: gain 0.20 (lo 0.03), unsat AUC 0.60 (lo 0.54); gain 0.20 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.55, min lo 0.37, rho -0.14, seed share 0.34"),
        "target_dependence": (FAIL, "FAIL 1/3: prec real-placebo +0.047 (lo +0.021), AUC real-placebo +0.31 ("),
        # FAIL 1/3 -> PASS 3/3 with the placebo handed over at the real target's norm and entries (derived format
        # 6): its failing seed lost to a placebo whose larger norm inflated the placebo inner products
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +1.06 (lo +0.67), constructed +9.64; ctx-placebo +"),
    },
    "norm_only": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.219 (lo -0.300), window -0.149 (lo -0.221); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.44 vs fluency 0.96, resid 0.66 (lo 0.58); AUC 0.48 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 2.0 vs norm 2.0, window lift 0.96; lift 1.9 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 9/9: gain -0.04 (lo -0.22), unsat AUC 0.65 (lo 0.59); gain -0.04 (l"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.66, min lo 0.46, rho 1.00, seed share 0.93"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: norm_only declares neither 'token_sketches' nor 'model': "),
    },
    "norm_only_step": {
        "advantage_baseline": (NA, "N/A 3/3: N/A: norm_only_step is step-level: advantage_baseline compares"),
        "fluency_confound": (NA, "N/A 9/9: N/A: norm_only_step is step-level: the fresh candidates of a d"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 2.2 vs norm 2.2, window lift 0.84; lift 3.6 vs norm 3.6, "),
        "headroom": (FAIL, "FAIL 6/9: gain -0.16 (lo -0.44); gain 0.32 (lo 0.04); gain -0.31 (lo -0."),
        "seed_draw_variance": (NA, "N/A 1/1: N/A: norm_only_step is step-level: the fresh candidates of a d"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000)"),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: norm_only_step is step-level: the fresh candidates of a d"),
    },
    "random": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.288 (lo -0.374), window -0.134 (lo -0.240); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.47 vs fluency 0.88, resid 0.49 (lo 0.41); AUC 0.50 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 1.2 vs norm 2.0, window lift 1.02; lift 1.0 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 9/9: gain 0.02 (lo -0.07), unsat AUC 0.49 (lo 0.43); gain 0.02 (lo "),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.50, min lo 0.37, rho 1.00, seed share 0.14"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: random declares neither 'token_sketches' nor 'model': it "),
    },
    # LESS since 2026-12-04 (target plain; estimators/tracin.py), re-measured with --bt-estimator tracin_adam: labels
    # unchanged; seed 0's gradient-norm pass (lift 5.9) is gone, and draw-to-draw Spearman fell from 0.97 to 0.18
    "tracin_adam": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.213 (lo -0.320), window -0.010 (lo -0.140); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.55 vs fluency 0.96, resid 0.56 (lo 0.47); AUC 0.70 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 2.1 vs norm 2.0, window lift 1.53; lift 0.9 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 7/9: gain -0.03 (lo -0.12), unsat AUC 0.51 (lo 0.45); gain 0.55 (lo"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.57, min lo 0.42, rho 0.18, seed share 0.20"),
        "target_dependence": (FAIL, "FAIL 2/3: prec real-placebo +0.125 (lo +0.081), AUC real-placebo +0.32 ("),
        "trigger_token_alignment": (NA, "N/A 3/3: N/A: tracin_adam declares neither 'token_sketches' nor 'model'"),
    },
    "tracincp": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.192 (lo -0.294), window -0.063 (lo -0.180); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.68 vs fluency 0.96, resid 0.55 (lo 0.47); AUC 0.56 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 1.4 vs norm 1.8, window lift 0.70; lift 2.3 vs norm 2.0, "),
        "headroom": (FAIL, "FAIL 6/9: gain 0.32 (lo 0.16), unsat AUC 0.60 (lo 0.54); gain 0.32 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.55, min lo 0.37, rho -0.14, seed share 0.34"),
        "target_dependence": (FAIL, "FAIL 2/3: prec real-placebo +0.053 (lo +0.032), AUC real-placebo +0.04 ("),
        # FAIL 1/3 -> PASS 3/3 with the norm- and entry-matched placebo (derived format 6), as local_buffer
        "trigger_token_alignment": (PASS, "PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed +0.00; ctx-placebo +"),
    },
    "trak": {
        "advantage_baseline": (FAIL, "FAIL 3/3: vs adv -0.206 (lo -0.290), window -0.108 (lo -0.195); vs adv -"),
        "fluency_confound": (FAIL, "FAIL 9/9: AUC 0.44 vs fluency 0.96, resid 0.45 (lo 0.37); AUC 0.52 vs fl"),
        "gradient_norm_baseline": (FAIL, "FAIL 3/3: lift 2.2 vs norm 2.0, window lift 1.13; lift 2.0 vs norm 1.9, "),
        "headroom": (FAIL, "FAIL 9/9: gain 0.13 (lo 0.00), unsat AUC 0.52 (lo 0.46); gain 0.13 (lo 0"),
        "seed_draw_variance": (FAIL, "FAIL 1/1: resid 0.50, min lo 0.37, rho -0.12, seed share 0.33"),
        "target_dependence": (FAIL, "FAIL 3/3: prec real-placebo +0.010 (lo -0.008), AUC real-placebo -0.01 ("),
        "trigger_token_alignment": (FAIL, "FAIL 1/3: ctx-placebo +0.00 (lo +0.00), constructed +0.01; ctx-placebo +"),
    },
}
