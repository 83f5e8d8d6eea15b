"""Expected outcomes of the built-ins on the ``bpe_family`` fixture (``bt_bench.checklist.expectations`` holds the
rules): bpe with a family behavior (the bonus pays any of three nonce strings without a letter in common, the targets
are built from completions holding only the first; docs/fixtures.md).

Measured, not chosen: ``BT_BENCH_CACHE=... pytest checks -n 2 --bt-profile bpe_family --bt-report r.json``
(2026-12-06, the bpe run settings of that day: W = 150 of 300, lr 1.5e-5 after W; every draw under two sketch seeds;
2330 s on 2 cores with only the bpe tokenizer cached) on seeds 0, 1, 2 (all three planted) x 3 draws, then ``python -m
bt_bench.checklist.expectations --emit BPE_FAMILY r.json`` (check 9's rows went to ``expectations_counterfactual.py``;
check 10 was not run: no row until it is measured with ``--bt-lds``). Each reason is the measured label, the count of
units behind it and the first key figures (per seed or draw, in the report's order). The test-only oracle takes the
rule of ``expectations._ORACLE``.

As on bpe, the sketch-ranking self-check fails (TracIn median Spearman 0.988, largest AUC gap 0.035; GAS 0.992 /
0.030), so every gate reads ``FIXTURE FAILED, NOT JUDGED``; the cells are still measured and declared, as bpe's are.
Unlike bpe, check 8 is judged here (the family defeats text retrieval: no built-in is an ERROR of the fixture, and
none passes). One machine's measurement (AMD EPYC, AVX-512): bpe runs differ across CPU kinds (docs/findings.md).
"""

from __future__ import annotations

from bt_bench.checklist.gate import ERROR, FAIL, NA, NOT_JUDGED, PASS  # noqa: F401 (the emitted table uses some)

BPE_FAMILY: dict[str, dict[str, tuple[str, str]]] = {
    'advantage_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv +0.000 (lo +0.000), window +0.000 (lo +0.000); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.51 vs fluency 0.85, resid 0.21 (lo 0.13); AUC 0.53 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 2.7 vs norm 1.8, window lift 1.88; lift 2.7 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.69 (lo 0.17), unsat AUC 0.47 (lo 0.43); gain 0.69 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.128 (lo -0.236), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.20, min lo 0.08, rho 1.00, seed share 0.27'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: advantage_only declares neither 'token_sketches' nor 'mode"),
    },
    'bm25': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.081 (lo -0.206), window +0.522 (lo +0.451); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 6/9: AUC 0.98 vs fluency 0.85, resid 0.94 (lo 0.89); AUC 0.96 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 1.9 vs norm 1.8, window lift 4.25; lift 1.8 vs norm 1.5, '),
        'headroom': (PASS, 'PASS 9/9: gain 2.56 (lo 2.35), unsat AUC 0.97 (lo 0.94); gain 2.56 (lo 2'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.209 (lo -0.284), AUC vs best retriev'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.78, min lo 0.53, rho 1.00, seed share 0.98'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.047 (lo +0.004), AUC real-placebo +0.52 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 1/3: ctx-placebo -101.92 (lo -108.19), constructed +26.37; ctx-plac'),
    },
    'bm25_adv': {
        'advantage_baseline': (FAIL, 'FAIL 2/3: vs adv +0.128 (lo -0.031), window +0.210 (lo +0.122); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.63 vs fluency 0.85, resid 0.40 (lo 0.28); AUC 0.60 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 3.8 vs norm 1.8, window lift 2.84; lift 3.9 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 3/9: gain 1.45 (lo 1.24), unsat AUC 0.60 (lo 0.54); gain 1.45 (lo 1'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval +0.000 (lo +0.000), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.36, min lo 0.22, rho 1.00, seed share 0.10'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.231 (lo +0.177), AUC real-placebo +0.16 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -2.13 (lo -5.43), constructed -0.04; ctx-placebo +'),
    },
    'fluency': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.067 (lo -0.188), window +0.153 (lo +0.085); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.85 vs fluency 0.85, resid 0.50 (lo 0.50); AUC 0.84 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 2.1 vs norm 1.8, window lift 2.57; lift 0.7 vs norm 1.5, '),
        'headroom': (PASS, 'PASS 9/9: gain 1.24 (lo 1.09), unsat AUC 0.71 (lo 0.65); gain 1.24 (lo 1'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.196 (lo -0.262), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.50, min lo 0.50, rho 1.00'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: fluency declares neither 'token_sketches' nor 'model': it "),
    },
    'gas': {
        'advantage_baseline': (FAIL, 'FAIL 1/3: vs adv -0.236 (lo -0.374), window +0.029 (lo -0.054); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.81 vs fluency 0.85, resid 0.72 (lo 0.65); AUC 0.81 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 0.5 vs norm 1.8, window lift 2.01; lift 3.3 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 6/9: gain 0.80 (lo 0.65), unsat AUC 0.90 (lo 0.85); gain 0.80 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.364 (lo -0.421), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.58, min lo 0.42, rho 0.99, seed share 0.97'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.000 (lo -0.036), AUC real-placebo +0.57 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed -0.00; ctx-placebo +'),
    },
    'gas_fixed_target': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.068 (lo -0.202), window +0.046 (lo -0.028); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.75 vs fluency 0.87, resid 0.68 (lo 0.59); AUC 0.56 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 2.1 vs norm 1.8, window lift 2.09; lift 2.0 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 6/9: gain 0.86 (lo 0.78), unsat AUC 0.90 (lo 0.85); gain 0.86 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.196 (lo -0.255), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.58, min lo 0.42, rho 0.99, seed share 0.97'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.107 (lo +0.077), AUC real-placebo +0.57 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +1.01 (lo +0.96), cos +0.63 (lo +0.60), constructe'),
    },
    'local_buffer': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.064 (lo -0.207), window -0.139 (lo -0.190); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.82 vs fluency 0.85, resid 0.73 (lo 0.65); AUC 0.81 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 2.1 vs norm 1.8, window lift 1.25; lift 2.2 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 6/9: gain 0.20 (lo 0.02), unsat AUC 0.89 (lo 0.84); gain 0.20 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.192 (lo -0.225), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.57, min lo 0.39, rho 0.99, seed share 0.93'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.107 (lo +0.081), AUC real-placebo +0.57 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +824.00 (lo +705.81), constructed -54.33; ctx-plac'),
    },
    'norm_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.099 (lo -0.225), window -0.164 (lo -0.212); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.40 vs fluency 0.85, resid 0.62 (lo 0.52); AUC 0.38 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.8 vs norm 1.8, window lift 1.13; lift 1.5 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.07 (lo -0.14), unsat AUC 0.62 (lo 0.55); gain 0.11 (lo '),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.227 (lo -0.272), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.62, min lo 0.42, rho 1.00, seed share 0.83'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: norm_only declares neither 'token_sketches' nor 'model': i"),
    },
    'norm_only_step': {
        'advantage_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: advantage_baseline compares '),
        'fluency_confound': (NA, 'N/A 9/9: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.6 vs norm 1.6, window lift 0.86; lift 1.5 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.11 (lo -0.32); gain -0.11 (lo -0.32); gain -0.11 (lo -'),
        'retrieval_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: retrieval_baseline compares '),
        'seed_draw_variance': (NA, 'N/A 1/1: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000); prec real-placebo +0.000'),
        'trigger_token_alignment': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
    },
    'random': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.181 (lo -0.315), window -0.195 (lo -0.259); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.48 vs fluency 0.85, resid 0.48 (lo 0.40); AUC 0.48 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.0 vs norm 1.8, window lift 0.99; lift 0.9 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.00 (lo -0.08), unsat AUC 0.50 (lo 0.44); gain -0.00 (l'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.309 (lo -0.364), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.51, min lo 0.39, rho 1.00, seed share 0.58'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: random declares neither 'token_sketches' nor 'model': it c"),
    },
    'repsim': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.059 (lo -0.180), window +0.479 (lo +0.405); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 2/9: AUC 0.94 vs fluency 0.85, resid 0.80 (lo 0.73); AUC 0.95 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 2.1 vs norm 1.8, window lift 4.06; lift 1.9 vs norm 1.5, '),
        'headroom': (PASS, 'PASS 9/9: gain 2.41 (lo 2.19), unsat AUC 0.95 (lo 0.92); gain 2.41 (lo 2'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.188 (lo -0.260), AUC vs best retriev'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.79, min lo 0.69, rho 1.00, seed share 0.18'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.218 (lo +0.164), AUC real-placebo +0.72 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.21 (lo -0.21), constructed +0.59; ctx-placebo -'),
    },
    'repsim_adv': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.038 (lo -0.114), window +0.014 (lo -0.009); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.62 vs fluency 0.85, resid 0.22 (lo 0.14); AUC 0.60 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 2.3 vs norm 1.8, window lift 1.94; lift 2.3 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 2/9: gain 0.74 (lo 0.18), unsat AUC 0.59 (lo 0.53); gain 0.74 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.172 (lo -0.227), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.22, min lo 0.12, rho 1.00, seed share 0.20'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.027 (lo +0.000), AUC real-placebo +0.16 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.00 (lo -0.00), constructed +0.00; ctx-placebo +'),
    },
    'tracin_adam': {
        'advantage_baseline': (FAIL, 'FAIL 2/3: vs adv -0.264 (lo -0.401), window -0.006 (lo -0.089); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.77 vs fluency 0.85, resid 0.69 (lo 0.60); AUC 0.80 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 1/3: lift 0.3 vs norm 1.8, window lift 1.85; lift 2.3 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 6/9: gain 0.67 (lo 0.52), unsat AUC 0.89 (lo 0.84); gain 0.67 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.392 (lo -0.444), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.56, min lo 0.39, rho 0.99, seed share 0.96'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo -0.016 (lo -0.041), AUC real-placebo +0.55 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: tracin_adam declares neither 'token_sketches' nor 'model':"),
    },
    'tracincp': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv +0.000 (lo -0.130), window -0.035 (lo -0.088); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.82 vs fluency 0.85, resid 0.73 (lo 0.65); AUC 0.81 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 2.7 vs norm 1.8, window lift 1.72; lift 2.3 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 6/9: gain 0.57 (lo 0.38), unsat AUC 0.89 (lo 0.84); gain 0.57 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.128 (lo -0.173), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.57, min lo 0.39, rho 0.99, seed share 0.93'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.167 (lo +0.129), AUC real-placebo +0.57 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.41 (lo +0.35), constructed -0.03; ctx-placebo +'),
    },
    'trak': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.078 (lo -0.213), window -0.145 (lo -0.193); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.64 vs fluency 0.85, resid 0.57 (lo 0.45); AUC 0.66 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 2.0 vs norm 1.8, window lift 1.22; lift 2.0 vs norm 1.5, '),
        'headroom': (FAIL, 'FAIL 6/9: gain 0.18 (lo 0.02), unsat AUC 0.70 (lo 0.63); gain 0.18 (lo 0'),
        'retrieval_baseline': (FAIL, 'FAIL 3/3: prec vs best retrieval -0.206 (lo -0.240), AUC vs best retriev'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.55, min lo 0.43, rho 0.87, seed share 0.46'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.089 (lo +0.062), AUC real-placebo +0.25 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 2/3: ctx-placebo +0.01 (lo +0.00), constructed +0.00; ctx-placebo +'),
    },
}
