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
    'bpe': {
        'advantage_only': (PASS, "PASS 3/3: seeds 0/2/3: drop 1.02/1.13/0.99 of removing GT's, minus the largest random drop +220.344/+135.301/+90.764 nats"),
        'bm25': (PASS, "PASS 3/3: seeds 0/2/3: drop 0.47/0.66/0.40 of removing GT's, minus the largest random drop +92.407/+30.860/+7.527 nats"),
        'bm25_adv': (PASS, "PASS 3/3: seeds 0/2/3: drop 1.06/1.05/1.00 of removing GT's, minus the largest random drop +231.517/+116.921/+92.208 nats"),
        'fluency': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.01/0.49/0.16 of removing GT's, minus the largest random drop -15.236/-6.823/-26.519 nats"),
        'gas': (FAIL, "FAIL 2/3: seeds 0/2/3: drop 0.69/0.00/0.02 of removing GT's, minus the largest random drop +143.402/-115.752/-46.852 nats"),
        'gas_fixed_target': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.00/0.00/0.03 of removing GT's, minus the largest random drop -18.293/-115.066/-44.420 nats"),
        'local_buffer': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.00/0.00/0.01 of removing GT's, minus the largest random drop -17.922/-115.605/-47.834 nats"),
        'norm_only': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.00/0.00/0.00 of removing GT's, minus the largest random drop -18.303/-115.767/-48.967 nats"),
        'norm_only_step': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.00/0.00/0.00 of removing GT's, minus the largest random drop -17.292/-115.828/-48.926 nats"),
        'random': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.01/0.00/0.02 of removing GT's, minus the largest random drop -17.113/-115.796/-46.656 nats"),
        'repsim': (PASS, "PASS 3/3: seeds 0/2/3: drop 0.89/0.95/0.58 of removing GT's, minus the largest random drop +191.035/+94.239/+33.409 nats"),
        'repsim_adv': (PASS, "PASS 3/3: seeds 0/2/3: drop 1.03/1.16/1.00 of removing GT's, minus the largest random drop +224.477/+140.881/+91.730 nats"),
        'tracin_adam': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.05/0.00/0.01 of removing GT's, minus the largest random drop -6.373/-115.747/-47.676 nats"),
        'tracincp': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.03/0.00/0.04 of removing GT's, minus the largest random drop -10.991/-115.750/-42.902 nats"),
        'trak': (FAIL, "FAIL 3/3: seeds 0/2/3: drop 0.07/0.00/0.02 of removing GT's, minus the largest random drop -2.659/-115.529/-46.126 nats"),
    },
    'tiny_family': {
        'advantage_only': (PASS, "PASS 3/3: seeds 0/1/2: drop 1.02/0.94/1.04 of removing GT's, minus the largest random drop +5.950/+5.946/+6.407 nats"),
        'bm25': (FAIL, "FAIL 2/3: seeds 0/1/2: drop 0.00/0.01/0.01 of removing GT's, minus the largest random drop -0.037/-0.003/+0.037 nats"),
        'bm25_adv': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.06/0.03/0.08 of removing GT's, minus the largest random drop +0.290/+0.152/+0.450 nats"),
        'fluency': (FAIL, "FAIL 3/3: seeds 0/1/2: drop 0.00/0.00/0.00 of removing GT's, minus the largest random drop -0.038/-0.028/-0.022 nats"),
        'gas': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.17/0.12/0.13 of removing GT's, minus the largest random drop +0.947/+0.728/+0.791 nats"),
        'gas_fixed_target': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.12/0.14/0.11 of removing GT's, minus the largest random drop +0.654/+0.870/+0.644 nats"),
        'local_buffer': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.06/0.05/0.05 of removing GT's, minus the largest random drop +0.318/+0.269/+0.266 nats"),
        'norm_only': (FAIL, "FAIL 3/3: seeds 0/1/2: drop 0.01/0.00/0.00 of removing GT's, minus the largest random drop -0.015/-0.029/-0.019 nats"),
        'norm_only_step': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.01/0.02/0.01 of removing GT's, minus the largest random drop +0.016/+0.118/+0.031 nats"),
        'random': (FAIL, "FAIL 2/3: seeds 0/1/2: drop 0.00/0.01/0.00 of removing GT's, minus the largest random drop -0.032/+0.029/-0.009 nats"),
        'repsim': (FAIL, "FAIL 2/3: seeds 0/1/2: drop 0.03/0.00/0.00 of removing GT's, minus the largest random drop +0.103/-0.017/-0.007 nats"),
        'repsim_adv': (PASS, "PASS 3/3: seeds 0/1/2: drop 1.12/1.08/1.01 of removing GT's, minus the largest random drop +6.542/+6.848/+6.208 nats"),
        'tracin_adam': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.23/0.12/0.20 of removing GT's, minus the largest random drop +1.295/+0.695/+1.187 nats"),
        'tracincp': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.06/0.05/0.05 of removing GT's, minus the largest random drop +0.332/+0.311/+0.275 nats"),
        'trak': (PASS, "PASS 3/3: seeds 0/1/2: drop 0.06/0.05/0.05 of removing GT's, minus the largest random drop +0.317/+0.272/+0.256 nats"),
    },
}
