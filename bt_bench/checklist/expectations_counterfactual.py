"""Expected outcomes of check 9 (counterfactual_removal) for the built-ins, per profile, measured (the oracle keeps the
rule of ``expectations._ORACLE``: it must pass). Merged into ``expectations.EXPECTED``.

How measured: ``pytest checks/test_replay_fidelity.py checks/test_counterfactual_removal.py -n 2 --bt-estimator ...``
(every built-in and the oracle) on the profile's cached fixtures, then the rows written from the report's units.
A reason gives per seed the drop of the behavior measure at W without the estimator's top |GT|, as a fraction of
removing GT itself, and the drop minus the largest of the 19 random removals' (the verdict: > 0 on every seed).
What the figures say: docs/findings.md, "Counterfactual replay".
"""

from __future__ import annotations

from bt_bench.checklist.gate import FAIL, PASS

COUNTERFACTUAL: dict[str, dict[str, tuple[str, str]]] = {
    'tiny': {
        'advantage_only': (PASS, "PASS 3/3: seeds 0/1/2: drop 1.04/1.15/1.23 of removing GT's, minus the largest random drop +6.191/+6.415/+6.750 nats"),
        'bm25': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.47/0.52/0.59 of removing GT's, minus the largest random drop +2.750/+2.850/+3.177 nats"),
        'bm25_adv': (PASS, "PASS 3/3: seeds 0/1/2: drop 1.02/1.20/1.09 of removing GT's, minus the largest random drop +6.060/+6.681/+5.947 nats"),
        'fluency': (FAIL, "FAIL 3/3: seeds 0/1/2: drop 0.00/0.00/0.00 of removing GT's, minus the largest random drop -0.073/-0.030/-0.059 nats"),
        'gas': (FAIL, "FAIL 1/3: seeds 0/1/2: drop 0.01/0.01/0.02 of removing GT's, minus the largest random drop -0.034/+0.008/+0.035 nats"),
        'gas_fixed_target': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.53/0.75/0.67 of removing GT's, minus the largest random drop +3.085/+4.165/+3.667 nats"),
        'local_buffer': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.29/0.43/0.45 of removing GT's, minus the largest random drop +1.661/+2.399/+2.450 nats"),
        'norm_only': (FAIL, "FAIL 3/3: seeds 0/1/2: drop 0.00/-0.00/0.00 of removing GT's, minus the largest random drop -0.061/-0.044/-0.055 nats"),
        'norm_only_step': (FAIL, "FAIL 2/3: seeds 0/1/2: drop 0.01/0.02/0.01 of removing GT's, minus the largest random drop -0.049/+0.093/-0.015 nats"),
        'random': (FAIL, "FAIL 3/3: seeds 0/1/2: drop 0.00/0.00/0.01 of removing GT's, minus the largest random drop -0.070/-0.033/-0.029 nats"),
        'repsim': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.01/0.05/0.15 of removing GT's, minus the largest random drop +0.007/+0.216/+0.789 nats"),
        'repsim_adv': (PASS, "PASS 3/3: seeds 0/1/2: drop 1.05/1.13/1.23 of removing GT's, minus the largest random drop +6.212/+6.316/+6.733 nats"),
        'tracin_adam': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.02/0.01/0.04 of removing GT's, minus the largest random drop +0.065/+0.009/+0.166 nats"),
        'tracincp': (FAIL, "FAIL 1/3: seeds 0/1/2: drop 0.01/0.01/0.10 of removing GT's, minus the largest random drop -0.039/+0.016/+0.514 nats"),
        'trak': (FAIL, "FAIL 1/3: seeds 0/1/2: drop 0.01/0.01/0.01 of removing GT's, minus the largest random drop -0.031/+0.005/+0.011 nats"),
    },
}
