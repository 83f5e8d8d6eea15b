"""Expected outcomes of the built-ins on the ``bpe`` fixture (``bt_bench.checklist.expectations`` holds the rules).

Measured, not chosen: ``BT_BENCH_CACHE=... pytest checks -n 2 --bt-profile bpe --bt-report r.json`` (2026-12-05, every
draw under two sketch seeds) on the first three bpe seeds that plant, 0, 2 and 3 (seed 1 does not: the bpe runs have
changed since the snapshot of 2026-12-04, on which 0, 1 and 2 planted), x 3 draws, then ``python -m
bt_bench.checklist.expectations r.json bpe``. Each reason is the measured label, the count of units behind it and the
first key figures (per seed or draw, in the report's order). Two cells changed with the fixture's seeds: ``gas`` and
``gas_fixed_target`` now pass target_dependence (real minus placebo precision@|GT| CI low > 0 on seeds 0, 2 and 3, and
the within-group AUC gap on every draw under both sketch seeds); on the old seeds 0, 1 and 2 each failed on two of
the three.
Re-measured the same way on 2026-12-05 (session of the retrieval controls; the rows of the four retrieval controls and of
check 8 are new; every earlier row kept its label, the figures are this run's): check 8 is an ERROR of the fixture for
every rollout-level estimator, as on tiny (BM25 ranks the draws all but perfectly: the behavior is a literal string).
What the table says about the paper's findings is in docs/findings.md ("What bpe shows"). The test-only oracle takes
its expectation from the tiny snapshot's rule (it must pass every check it takes part in).
"""

from __future__ import annotations

from bt_bench.checklist.gate import ERROR, FAIL, NA, PASS

BPE: dict[str, dict[str, tuple[str, str]]] = {
    'advantage_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv +0.000 (lo +0.000), window +0.000 (lo +0.000); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.49 vs fluency 0.93, resid 0.11 (lo 0.06); AUC 0.51 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 3.5 vs norm 1.6, window lift 1.16; lift 4.1 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.31 (lo 0.07), unsat AUC 0.53 (lo 0.49); gain 0.31 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.180 (lo -0.256), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.18, min lo 0.06, rho 1.00, seed share 0.65'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: advantage_only declares neither 'token_sketches' nor 'mode"),
    },
    'bm25': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.201 (lo -0.291), window +0.424 (lo +0.324); vs adv -'),
        'fluency_confound': (PASS, 'PASS 9/9: AUC 0.99 vs fluency 0.93, resid 0.94 (lo 0.90); AUC 0.99 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 1.6 vs norm 1.6, window lift 2.51; lift 2.5 vs norm 2.2, '),
        'headroom': (PASS, 'PASS 9/9: gain 2.83 (lo 2.50), unsat AUC 1.00 (lo 1.00); gain 2.83 (lo 2'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.380 (lo -0.445), AUC vs best retrie'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.94, min lo 0.86, rho 1.00, seed share 0.34'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.190 (lo +0.145), AUC real-placebo +0.62 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +40.94 (lo +34.11), constructed +35.95; ctx-placeb'),
    },
    'bm25_adv': {
        'advantage_baseline': (PASS, 'PASS 3/3: vs adv +0.180 (lo +0.128), window +0.594 (lo +0.512); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.63 vs fluency 0.93, resid 0.36 (lo 0.25); AUC 0.66 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 5.2 vs norm 1.6, window lift 3.05; lift 6.3 vs norm 2.2, '),
        'headroom': (PASS, 'PASS 9/9: gain 3.85 (lo 3.43), unsat AUC 0.76 (lo 0.69); gain 3.85 (lo 3'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval +0.000 (lo +0.000), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.42, min lo 0.25, rho 1.00, seed share 0.61'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.273 (lo +0.242), AUC real-placebo +0.20 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.53 (lo -4.22), constructed +0.30; ctx-placebo -'),
    },
    'fluency': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.214 (lo -0.293), window +0.224 (lo +0.108); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.93 vs fluency 0.93, resid 0.50 (lo 0.50); AUC 0.92 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.5 vs norm 1.6, window lift 1.88; lift 2.3 vs norm 2.2, '),
        'headroom': (PASS, 'PASS 9/9: gain 1.64 (lo 1.29), unsat AUC 0.71 (lo 0.65); gain 1.64 (lo 1'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.531 (lo -0.588), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.50, min lo 0.50, rho 1.00'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: fluency declares neither 'token_sketches' nor 'model': it "),
    },
    'gas': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.283 (lo -0.360), window -0.052 (lo -0.147); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.27 vs fluency 0.93, resid 0.40 (lo 0.33); AUC 0.33 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 0.8 vs norm 1.6, window lift 1.00; lift 1.3 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.00 (lo -0.15), unsat AUC 0.53 (lo 0.45); gain -0.00 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.463 (lo -0.517), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.44, min lo 0.20, rho 0.91, seed share 0.59'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.045 (lo +0.026), AUC real-placebo +0.09 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed -0.00; ctx-placebo +'),
    },
    'gas_fixed_target': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.230 (lo -0.316), window -0.029 (lo -0.129); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.27 vs fluency 0.93, resid 0.40 (lo 0.33); AUC 0.33 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.3 vs norm 1.6, window lift 1.07; lift 1.3 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.51 (lo 0.39), unsat AUC 0.25 (lo 0.17); gain 0.13 (lo -'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.409 (lo -0.472), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.44, min lo 0.20, rho 0.91, seed share 0.59'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.032 (lo +0.014), AUC real-placebo +0.09 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +1.13 (lo +1.12), cos +0.90 (lo +0.89), constructe'),
    },
    'local_buffer': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.190 (lo -0.262), window -0.105 (lo -0.190); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.29 vs fluency 0.93, resid 0.46 (lo 0.39); AUC 0.33 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 1.7 vs norm 1.6, window lift 0.83; lift 2.3 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.32 (lo -0.50), unsat AUC 0.50 (lo 0.42); gain -0.32 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.369 (lo -0.421), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.44, min lo 0.23, rho 0.90, seed share 0.41'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.019 (lo +0.009), AUC real-placebo +0.07 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.25 (lo +0.21), constructed +0.34; ctx-placebo +'),
    },
    'norm_only': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.198 (lo -0.266), window -0.121 (lo -0.198); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.54 vs fluency 0.93, resid 0.80 (lo 0.73); AUC 0.57 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.6 vs norm 1.6, window lift 0.78; lift 2.2 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.41 (lo -0.74), unsat AUC 0.74 (lo 0.69); gain -0.41 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.377 (lo -0.428), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.68, min lo 0.46, rho 1.00, seed share 0.60'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: norm_only declares neither 'token_sketches' nor 'model': i"),
    },
    'norm_only_step': {
        'advantage_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: advantage_baseline compares '),
        'fluency_confound': (NA, 'N/A 9/9: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 2.3 vs norm 2.3, window lift 0.86; lift 2.1 vs norm 2.1, '),
        'headroom': (FAIL, 'FAIL 6/9: gain -0.27 (lo -0.54); gain -0.27 (lo -0.54); gain -0.27 (lo -'),
        'retrieval_baseline': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: retrieval_baseline compares '),
        'seed_draw_variance': (NA, 'N/A 1/1: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000); prec real-placebo +0.000'),
        'trigger_token_alignment': (NA, 'N/A 3/3: N/A: norm_only_step is step-level: the fresh candidates of a dr'),
    },
    'random': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.268 (lo -0.342), window -0.060 (lo -0.158); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.47 vs fluency 0.93, resid 0.47 (lo 0.40); AUC 0.50 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 0.9 vs norm 1.6, window lift 0.97; lift 1.0 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.05 (lo -0.16), unsat AUC 0.50 (lo 0.43); gain -0.05 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.447 (lo -0.501), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.52, min lo 0.40, rho 1.00, seed share 0.64'),
        'target_dependence': (FAIL, 'FAIL 3/3: prec real-placebo +0.000 (lo +0.000), AUC real-placebo +0.00 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: random declares neither 'token_sketches' nor 'model': it c"),
    },
    'repsim': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.174 (lo -0.270), window +0.481 (lo +0.386); vs adv -'),
        'fluency_confound': (PASS, 'PASS 9/9: AUC 0.98 vs fluency 0.93, resid 0.81 (lo 0.74); AUC 0.99 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 1.8 vs norm 1.6, window lift 2.69; lift 2.6 vs norm 2.2, '),
        'headroom': (PASS, 'PASS 9/9: gain 3.17 (lo 2.81), unsat AUC 1.00 (lo 1.00); gain 3.17 (lo 2'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.353 (lo -0.419), AUC vs best retrie'),
        'seed_draw_variance': (PASS, 'PASS 1/1: resid 0.88, min lo 0.74, rho 1.00, seed share 0.91'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.155 (lo +0.114), AUC real-placebo +0.78 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.24 (lo -0.24), constructed +0.63; ctx-placebo -'),
    },
    'repsim_adv': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.024 (lo -0.037), window +0.037 (lo +0.009); vs adv +'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.62 vs fluency 0.93, resid 0.14 (lo 0.08); AUC 0.66 vs fl'),
        'gradient_norm_baseline': (PASS, 'PASS 3/3: lift 3.9 vs norm 1.6, window lift 1.36; lift 4.5 vs norm 2.2, '),
        'headroom': (PASS, 'PASS 9/9: gain 0.67 (lo 0.41), unsat AUC 0.76 (lo 0.69); gain 0.67 (lo 0'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.135 (lo -0.202), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.21, min lo 0.08, rho 1.00, seed share 0.69'),
        'target_dependence': (PASS, 'PASS 3/3: prec real-placebo +0.119 (lo +0.066), AUC real-placebo +0.21 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 3/3: ctx-placebo -0.00 (lo -0.01), constructed +0.01; ctx-placebo -'),
    },
    'tracin_adam': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.268 (lo -0.345), window -0.041 (lo -0.139); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.32 vs fluency 0.93, resid 0.44 (lo 0.36); AUC 0.37 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 0.9 vs norm 1.6, window lift 1.03; lift 0.8 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.06 (lo -0.09), unsat AUC 0.61 (lo 0.52); gain 0.06 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.448 (lo -0.501), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.42, min lo 0.23, rho 0.87, seed share 0.56'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.070 (lo +0.047), AUC real-placebo +0.15 ('),
        'trigger_token_alignment': (NA, "N/A 3/3: N/A: tracin_adam declares neither 'token_sketches' nor 'model':"),
    },
    'tracincp': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.209 (lo -0.276), window -0.110 (lo -0.189); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.29 vs fluency 0.93, resid 0.46 (lo 0.39); AUC 0.33 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 3/3: lift 1.5 vs norm 1.6, window lift 0.82; lift 2.4 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain -0.35 (lo -0.55), unsat AUC 0.50 (lo 0.42); gain -0.35 (l'),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.528 (lo -0.585), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.44, min lo 0.23, rho 0.90, seed share 0.41'),
        'target_dependence': (FAIL, 'FAIL 1/3: prec real-placebo +0.035 (lo +0.015), AUC real-placebo +0.07 ('),
        'trigger_token_alignment': (PASS, 'PASS 3/3: ctx-placebo +0.00 (lo +0.00), constructed +0.00; ctx-placebo +'),
    },
    'trak': {
        'advantage_baseline': (FAIL, 'FAIL 3/3: vs adv -0.132 (lo -0.209), window -0.023 (lo -0.108); vs adv -'),
        'fluency_confound': (FAIL, 'FAIL 9/9: AUC 0.54 vs fluency 0.93, resid 0.47 (lo 0.39); AUC 0.57 vs fl'),
        'gradient_norm_baseline': (FAIL, 'FAIL 2/3: lift 2.2 vs norm 1.6, window lift 1.09; lift 1.8 vs norm 2.2, '),
        'headroom': (FAIL, 'FAIL 9/9: gain 0.17 (lo 0.04), unsat AUC 0.52 (lo 0.45); gain -0.22 (lo '),
        'retrieval_baseline': (ERROR, 'ERROR 3/3: prec vs best retrieval -0.311 (lo -0.361), AUC vs best retrie'),
        'seed_draw_variance': (FAIL, 'FAIL 1/1: resid 0.51, min lo 0.38, rho 0.59, seed share 0.19'),
        'target_dependence': (FAIL, 'FAIL 2/3: prec real-placebo +0.060 (lo +0.034), AUC real-placebo +0.18 ('),
        'trigger_token_alignment': (FAIL, 'FAIL 2/3: ctx-placebo +0.00 (lo +0.00), constructed +0.01; ctx-placebo +'),
    },
}
