"""Expected outcomes of the built-ins on the ``bpe`` fixture (``bt_bench.checklist.expectations`` holds the rules).

Measured, not chosen: ``BT_BENCH_CACHE=... pytest checks -n 2 --bt-profile bpe --bt-report r.json`` (2026-12-06, the
profile at W = 150 of 300 with lr 1.5e-5 after W; every draw under two sketch seeds) on the first three bpe seeds that
plant, 0, 1 and 2, x 3 draws, then ``python -m bt_bench.checklist.expectations --emit BPE r.json`` (check 9's rows went
to ``expectations_counterfactual.py``; check 10's, measured with ``--bt-lds``, are in ``expectations_lds.py``). Each
reason is the measured label, the count of units behind it and the first key figures (per seed or draw, in the
report's order). Against the snapshot with lr 5e-5 after W (the same seeds, built on another machine, whose runs
differ in the window too) seven cells moved: gradient_norm_baseline now passes for advantage_only and fails for gas
(3 of 3 seeds: lift 1.3-1.4 against the norm's 1.2-1.3); target_dependence now fails for bm25 (1 of 3), repsim and
repsim_adv (2 of 3) and tracin_adam (2 of 3); fluency_confound fails for repsim on one of 9 draws. Check 8 stays an
ERROR of the fixture for every rollout-level estimator (BM25 ranks the draws all but perfectly: the behavior is a
literal string). The test-only oracle takes its expectation from the tiny snapshot's rule (it must pass every check
it takes part in).
"""

from __future__ import annotations

from bt_bench.checklist.gate import ERROR, FAIL, NA, PASS

BPE: dict[str, dict[str, tuple[str, str]]] = {
    'advantage_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv +0.000 (lo +0.000), window +0.000 (lo +0.000); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.50 vs fluency 0.96, resid 0.09 (lo 0.04); AUC 0.50 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 2.7 vs norm 1.2, window lift 1.38; lift 2.7 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 8/9: gain 0.74 (lo 0.36), unsat AUC 0.52 (lo 0.49); gain 0.74 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.122 (lo -0.251), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.16, min lo 0.04, rho 1.00, seed share 0.93'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: advantage_only declares neither 'token_sketches' nor 'mode"),
    },
    'bm25': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.181 (lo -0.226), window +0.458 (lo +0.407); vs adv -'),
        'fluency_confound': (PASS, 'PASS 9/9: AUC 0.99 vs fluency 0.96, resid 0.93 (lo 0.89); AUC 0.99 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 1.6 vs norm 1.2, window lift 2.77; lift 1.8 vs norm 1.3, '),
        'headroom': (PASS, 'PASS 9/9: gain 3.41 (lo 2.98), unsat AUC 1.00 (lo 1.00); gain 3.41 (lo 2'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.303 (lo -0.362), AUC vs best retrie'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.94, min lo 0.87, rho 1.00, seed share 0.15'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.193 (lo +0.142), AUC real-placebo +0.83 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 1/3: ctx-placebo +33.47 (lo +26.76), constructed +35.69; ctx-placeb'),
    },
    'bm25_adv': {
        'advantage_baseline': (PASS, 'PASS 3/3: vs adv +0.122 (lo +0.037), window +0.504 (lo +0.458); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.63 vs fluency 0.96, resid 0.32 (lo 0.21); AUC 0.66 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 3.5 vs norm 1.2, window lift 2.92; lift 4.3 vs norm 1.3, '),
        'headroom': (PASS, 'PASS 9/9: gain 3.68 (lo 3.28), unsat AUC 0.65 (lo 0.59); gain 3.68 (lo 3'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval +0.000 (lo +0.000), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.46, min lo 0.21, rho 1.00, seed share 0.47'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.117 (lo +0.032), AUC real-placebo +0.21 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.39 (lo -4.70), constructed +0.05; ctx-placebo +'),
    },
    'fluency': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.378 (lo -0.405), window +0.186 (lo +0.143); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.96 vs fluency 0.96, resid 0.50 (lo 0.50); AUC 0.96 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 0.4 vs norm 1.2, window lift 1.95; lift 1.5 vs norm 1.3, '),
        'headroom': (PASS, 'PASS 9/9: gain 1.82 (lo 1.60), unsat AUC 0.89 (lo 0.84); gain 1.82 (lo 1'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.500 (lo -0.575), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.50, min lo 0.50, rho 1.00'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: fluency declares neither 'token_sketches' nor 'model': it "),
    },
    'gas': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.211 (lo -0.233), window -0.122 (lo -0.163); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.70 vs fluency 0.96, resid 0.56 (lo 0.48); AUC 0.64 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.4 vs norm 1.2, window lift 1.01; lift 1.3 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.02 (lo -0.11), unsat AUC 0.63 (lo 0.55); gain 0.02 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.333 (lo -0.422), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.56, min lo 0.34, rho -0.66, seed share 0.37'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.174 (lo +0.144), AUC real-placebo +0.43 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed -0.00; ctx-placebo +'),
    },
    'gas_fixed_target': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.251 (lo -0.288), window -0.034 (lo -0.078); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.68 vs fluency 0.96, resid 0.55 (lo 0.48); AUC 0.49 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 1.2 vs norm 1.2, window lift 1.28; lift 1.5 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 4/9: gain 0.54 (lo 0.45), unsat AUC 0.63 (lo 0.55); gain 0.54 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.374 (lo -0.439), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.56, min lo 0.34, rho -0.66, seed share 0.37'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.002 (lo -0.025), AUC real-placebo +0.43 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.18 (lo +0.16), cos +0.12 (lo +0.09), constructe'),
    },
    'local_buffer': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.259 (lo -0.276), window -0.192 (lo -0.227); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.69 vs fluency 0.96, resid 0.55 (lo 0.47); AUC 0.63 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.2 vs norm 1.2, window lift 0.80; lift 1.5 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.39 (lo -0.47), unsat AUC 0.61 (lo 0.54); gain -0.39 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.382 (lo -0.464), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.55, min lo 0.33, rho -0.61, seed share 0.16'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.015 (lo +0.001), AUC real-placebo +0.39 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.89 (lo +0.50), constructed +16.47; ctx-placebo '),
    },
    'norm_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.247 (lo -0.263), window -0.203 (lo -0.235); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.44 vs fluency 0.96, resid 0.67 (lo 0.58); AUC 0.47 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.2 vs norm 1.2, window lift 0.77; lift 1.3 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.45 (lo -0.68), unsat AUC 0.64 (lo 0.58); gain -0.45 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.369 (lo -0.457), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.66, min lo 0.43, rho 1.00, seed share 0.92'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: norm_only declares neither 'token_sketches' nor 'model': i"),
    },
    'norm_only_step': {
        'advantage_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: advantage_baseline compares '),
        'fluency_confound': (NA, 'N/A 9/9: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.3 vs norm 1.3, window lift 0.70; lift 1.4 vs norm 1.4, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.80 (lo -1.08); gain -0.80 (lo -1.08); gain -0.80 (lo -'),
        'retrieval_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: retrieval_baseline compares '),
        'seed_draw_variance': (NA, 'N/A 1/1: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000); prec real-placebo +0.000'),
        'trigger_token_alignment': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
    },
    'random': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.286 (lo -0.309), window -0.124 (lo -0.170); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.50 vs fluency 0.96, resid 0.52 (lo 0.44); AUC 0.52 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.0 vs norm 1.2, window lift 1.01; lift 0.9 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.01 (lo -0.07), unsat AUC 0.49 (lo 0.43); gain 0.01 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.408 (lo -0.482), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.50, min lo 0.37, rho 1.00, seed share 0.14'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: random declares neither 'token_sketches' nor 'model': it c"),
    },
    'repsim': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.177 (lo -0.231), window +0.492 (lo +0.444); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 1/9: AUC 0.99 vs fluency 0.96, resid 0.79 (lo 0.73); AUC 1.00 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 1.7 vs norm 1.2, window lift 2.88; lift 1.9 vs norm 1.3, '),
        'headroom': (PASS, 'PASS 9/9: gain 3.61 (lo 3.17), unsat AUC 1.00 (lo 1.00); gain 3.61 (lo 3'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.299 (lo -0.355), AUC vs best retrie'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.81, min lo 0.68, rho 1.00, seed share 0.78'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo -0.034 (lo -0.085), AUC real-placebo +0.84 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.30 (lo -0.31), constructed +0.60; ctx-placebo -'),
    },
    'repsim_adv': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.132 (lo -0.144), window +0.000 (lo +0.000); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.62 vs fluency 0.96, resid 0.10 (lo 0.06); AUC 0.66 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 1.9 vs norm 1.2, window lift 1.38; lift 2.1 vs norm 1.3, '),
        'headroom': (PASS, 'PASS 9/9: gain 0.74 (lo 0.37), unsat AUC 0.65 (lo 0.59); gain 0.74 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.254 (lo -0.321), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.19, min lo 0.06, rho 1.00, seed share 0.96'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo -0.010 (lo -0.024), AUC real-placebo +0.25 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.00 (lo -0.00), constructed +0.00; ctx-placebo -'),
    },
    'tracin_adam': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.262 (lo -0.293), window -0.099 (lo -0.136); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.60 vs fluency 0.96, resid 0.51 (lo 0.43); AUC 0.57 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.1 vs norm 1.2, window lift 1.08; lift 1.0 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.16 (lo -0.10), unsat AUC 0.71 (lo 0.57); gain 0.16 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.384 (lo -0.466), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.56, min lo 0.35, rho -0.16, seed share 0.14'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.124 (lo +0.084), AUC real-placebo +0.35 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: tracin_adam declares neither 'token_sketches' nor 'model':"),
    },
    'tracincp': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.194 (lo -0.208), window -0.159 (lo -0.188); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.69 vs fluency 0.96, resid 0.55 (lo 0.47); AUC 0.63 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.5 vs norm 1.2, window lift 0.90; lift 0.8 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.20 (lo -0.37), unsat AUC 0.61 (lo 0.54); gain -0.20 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.317 (lo -0.407), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.55, min lo 0.33, rho -0.61, seed share 0.16'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.011 (lo -0.047), AUC real-placebo +0.39 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed +0.01; ctx-placebo +'),
    },
    'trak': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.241 (lo -0.258), window -0.184 (lo -0.232); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.50 vs fluency 0.96, resid 0.50 (lo 0.40); AUC 0.55 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.3 vs norm 1.2, window lift 0.82; lift 1.5 vs norm 1.3, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.34 (lo -0.47), unsat AUC 0.53 (lo 0.46); gain -0.34 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.363 (lo -0.453), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.51, min lo 0.39, rho -0.07, seed share 0.27'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.009 (lo -0.011), AUC real-placebo +0.11 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 1/3: ctx-placebo +0.00 (lo +0.00), constructed +0.02; ctx-placebo +'),
    },
}
