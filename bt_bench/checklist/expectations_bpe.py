"""Expected outcomes of the built-ins on the ``bpe`` fixture (``bt_bench.checklist.expectations`` holds the rules).

Measured, not chosen: ``BT_BENCH_CACHE=... pytest checks -n 2 --bt-profile bpe --bt-report r.json`` (2026-12-06, the
profile at W = 150 of 300; every draw under two sketch seeds) on the first three bpe seeds that plant, 0, 1 and 2,
x 3 draws, then ``python -m bt_bench.checklist.expectations --emit BPE r.json`` (check 9's rows went to
``expectations_counterfactual.py``; check 10 was not run: no bpe row until it is measured with ``--bt-lds``). Each
reason is the measured label, the count of units behind it and the first key figures (per seed or draw, in the
report's order). Against the W = 100 snapshot (seeds 0, 2, 3) eight cells moved: gradient_norm_baseline now passes
for gas, bm25 and repsim and fails for advantage_only (1 of 3 seeds); target_dependence now fails for gas (1 of 3)
and gas_fixed_target (2 of 3) and passes for tracin_adam; trigger_token_alignment fails for bm25 (1 of 3). Check 8
stays an ERROR of the fixture for every rollout-level estimator (BM25 ranks the draws all but perfectly: the behavior
is a literal string). The test-only oracle takes its expectation from the tiny snapshot's rule (it must pass every
check it takes part in).
"""

from __future__ import annotations

from bt_bench.checklist.gate import ERROR, FAIL, NA, PASS

BPE: dict[str, dict[str, tuple[str, str]]] = {
    'advantage_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv +0.000 (lo +0.000), window +0.000 (lo +0.000); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.52 vs fluency 0.90, resid 0.17 (lo 0.11); AUC 0.52 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 2.6 vs norm 1.3, window lift 1.30; lift 2.1 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.73 (lo 0.28), unsat AUC 0.50 (lo 0.46); gain 0.73 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.298 (lo -0.382), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.16, min lo 0.07, rho 1.00, seed share 0.20'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: advantage_only declares neither 'token_sketches' nor 'mode"),
    },
    'bm25': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.122 (lo -0.229), window +0.455 (lo +0.386); vs adv +'),
        'fluency_confound': (PASS, 'PASS 9/9: AUC 1.00 vs fluency 0.90, resid 0.94 (lo 0.90); AUC 1.00 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 1.9 vs norm 1.3, window lift 2.58; lift 2.5 vs norm 1.6, '),
        'headroom': (PASS, 'PASS 9/9: gain 3.89 (lo 3.34), unsat AUC 1.00 (lo 1.00); gain 3.89 (lo 3'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.419 (lo -0.471), AUC vs best retrie'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.95, min lo 0.89, rho 1.00, seed share 0.00'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.183 (lo +0.136), AUC real-placebo +0.73 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 1/3: ctx-placebo +51.73 (lo +44.11), constructed +37.88; ctx-placeb'),
    },
    'bm25_adv': {
        'advantage_baseline': (PASS, 'PASS 3/3: vs adv +0.298 (lo +0.209), window +0.503 (lo +0.447); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.65 vs fluency 0.90, resid 0.39 (lo 0.27); AUC 0.73 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 4.3 vs norm 1.3, window lift 2.71; lift 5.5 vs norm 1.6, '),
        'headroom': (PASS, 'PASS 9/9: gain 4.22 (lo 3.70), unsat AUC 0.66 (lo 0.59); gain 4.22 (lo 3'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval +0.000 (lo +0.000), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.44, min lo 0.24, rho 1.00, seed share 0.09'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.582 (lo +0.511), AUC real-placebo +0.20 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo +1.82 (lo -3.30), constructed +0.43; ctx-placebo +'),
    },
    'fluency': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.206 (lo -0.277), window +0.130 (lo +0.060); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.90 vs fluency 0.90, resid 0.50 (lo 0.50); AUC 0.90 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.4 vs norm 1.3, window lift 1.66; lift 2.0 vs norm 1.6, '),
        'headroom': (PASS, 'PASS 9/9: gain 1.63 (lo 1.41), unsat AUC 0.82 (lo 0.78); gain 1.63 (lo 1'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.504 (lo -0.549), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.50, min lo 0.50, rho 1.00'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: fluency declares neither 'token_sketches' nor 'model': it "),
    },
    'gas': {
        'advantage_baseline': (FAIL, 'FAIL 2/3: vs adv -0.085 (lo -0.124), window -0.001 (lo -0.047); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.37 vs fluency 0.90, resid 0.41 (lo 0.33); AUC 0.36 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 2.1 vs norm 1.3, window lift 1.29; lift 4.1 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 4/9: gain 0.72 (lo 0.46), unsat AUC 0.28 (lo 0.22); gain 0.72 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.383 (lo -0.448), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.51, min lo 0.29, rho -0.34, seed share 0.92'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.295 (lo +0.244), AUC real-placebo +0.12 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed -0.00; ctx-placebo +'),
    },
    'gas_fixed_target': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.131 (lo -0.189), window -0.013 (lo -0.080); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.34 vs fluency 0.89, resid 0.37 (lo 0.29); AUC 0.52 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 1.9 vs norm 1.3, window lift 1.26; lift 2.1 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 4/9: gain 0.64 (lo 0.53), unsat AUC 0.28 (lo 0.22); gain 0.64 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.429 (lo -0.477), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.51, min lo 0.29, rho -0.34, seed share 0.92'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.104 (lo +0.075), AUC real-placebo +0.12 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.92 (lo +0.91), cos +0.78 (lo +0.77), constructe'),
    },
    'local_buffer': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.223 (lo -0.252), window -0.094 (lo -0.231); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.37 vs fluency 0.90, resid 0.41 (lo 0.32); AUC 0.36 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 1.3 vs norm 1.3, window lift 1.03; lift 1.9 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 8/9: gain 0.08 (lo -0.41), unsat AUC 0.29 (lo 0.22); gain 0.08 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.520 (lo -0.584), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.51, min lo 0.31, rho -0.40, seed share 0.94'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.005 (lo -0.025), AUC real-placebo +0.11 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.42 (lo +0.37), constructed +0.61; ctx-placebo +'),
    },
    'norm_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.228 (lo -0.268), window -0.191 (lo -0.246); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.55 vs fluency 0.90, resid 0.64 (lo 0.56); AUC 0.62 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.3 vs norm 1.3, window lift 0.76; lift 1.6 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.59 (lo -0.77), unsat AUC 0.75 (lo 0.69); gain -0.59 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.526 (lo -0.582), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.61, min lo 0.45, rho 1.00, seed share 0.52'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: norm_only declares neither 'token_sketches' nor 'model': i"),
    },
    'norm_only_step': {
        'advantage_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: advantage_baseline compares '),
        'fluency_confound': (NA, 'N/A 9/9: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 0.9 vs norm 0.9, window lift 0.50; lift 2.7 vs norm 2.7, '),
        'headroom': (FAIL, 'FAIL 3/9: gain -1.23 (lo -1.43); gain -1.23 (lo -1.43); gain -1.23 (lo -'),
        'retrieval_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: retrieval_baseline compares '),
        'seed_draw_variance': (NA, 'N/A 1/1: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000); prec real-placebo +0.000'),
        'trigger_token_alignment': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
    },
    'random': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.282 (lo -0.336), window -0.107 (lo -0.180); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.50 vs fluency 0.90, resid 0.52 (lo 0.45); AUC 0.51 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.0 vs norm 1.3, window lift 1.00; lift 1.0 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.01 (lo -0.10), unsat AUC 0.51 (lo 0.44); gain -0.01 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.499 (lo -0.590), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.50, min lo 0.40, rho 1.00, seed share 0.39'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: random declares neither 'token_sketches' nor 'model': it c"),
    },
    'repsim': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.122 (lo -0.215), window +0.463 (lo +0.396); vs adv +'),
        'fluency_confound': (PASS, 'PASS 9/9: AUC 0.98 vs fluency 0.90, resid 0.80 (lo 0.74); AUC 0.99 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 1.9 vs norm 1.3, window lift 2.60; lift 2.8 vs norm 1.6, '),
        'headroom': (PASS, 'PASS 9/9: gain 3.94 (lo 3.39), unsat AUC 1.00 (lo 1.00); gain 3.94 (lo 3'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.420 (lo -0.464), AUC vs best retrie'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.82, min lo 0.70, rho 1.00, seed share 0.56'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.216 (lo +0.147), AUC real-placebo +0.79 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.29 (lo -0.29), constructed +0.53; ctx-placebo -'),
    },
    'repsim_adv': {
        'advantage_baseline': (FAIL, 'FAIL 2/3: vs adv -0.062 (lo -0.103), window +0.000 (lo +0.000); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.64 vs fluency 0.90, resid 0.18 (lo 0.12); AUC 0.73 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 2.2 vs norm 1.3, window lift 1.30; lift 3.2 vs norm 1.6, '),
        'headroom': (PASS, 'PASS 9/9: gain 0.73 (lo 0.28), unsat AUC 0.66 (lo 0.59); gain 0.73 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.360 (lo -0.407), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.22, min lo 0.11, rho 1.00, seed share 0.28'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.121 (lo +0.076), AUC real-placebo +0.23 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.00 (lo -0.00), constructed +0.01; ctx-placebo +'),
    },
    'tracin_adam': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.154 (lo -0.193), window -0.047 (lo -0.087); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.48 vs fluency 0.90, resid 0.43 (lo 0.35); AUC 0.45 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 1.7 vs norm 1.3, window lift 1.17; lift 1.1 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 7/9: gain 0.41 (lo 0.05), unsat AUC 0.62 (lo 0.51); gain -0.15 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.451 (lo -0.523), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.53, min lo 0.30, rho -0.05, seed share 0.90'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.211 (lo +0.154), AUC real-placebo +0.17 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: tracin_adam declares neither 'token_sketches' nor 'model':"),
    },
    'tracincp': {
        'advantage_baseline': (FAIL, 'FAIL 2/3: vs adv -0.150 (lo -0.176), window -0.074 (lo -0.150); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.37 vs fluency 0.90, resid 0.41 (lo 0.32); AUC 0.36 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 1.8 vs norm 1.3, window lift 1.09; lift 2.8 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 5/9: gain 0.22 (lo -0.10), unsat AUC 0.59 (lo 0.49); gain 0.22 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.448 (lo -0.525), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.51, min lo 0.31, rho -0.40, seed share 0.94'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.110 (lo +0.067), AUC real-placebo +0.11 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed +0.00; ctx-placebo +'),
    },
    'trak': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.199 (lo -0.231), window -0.088 (lo -0.188); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.57 vs fluency 0.89, resid 0.53 (lo 0.45); AUC 0.53 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.5 vs norm 1.3, window lift 1.05; lift 1.7 vs norm 1.6, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.12 (lo -0.24), unsat AUC 0.50 (lo 0.42); gain 0.12 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.497 (lo -0.555), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.53, min lo 0.41, rho 0.43, seed share 0.78'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.054 (lo +0.034), AUC real-placebo +0.17 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo +0.00 (lo -0.00), constructed -0.04; ctx-placebo +'),
    },
}
