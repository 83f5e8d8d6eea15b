"""Adapters for the TDA libraries researchers already use: kronfluence, captum, dattri, traker.

Each module is one registered estimator (or two) that drives its library's own API on the suite's model and
objective (``bt_bench.estimator.rollout_losses`` for the candidates, ``target.loss`` / ``target_terms`` for the
target); none rebuilds the library's maths. Each library is an optional extra of bt-bench
(``pip install "bt-bench[kronfluence]"``, or ``bt-bench[adapters]`` for all of them); without it the estimator is
listed with the install command (``bt_bench.estimator.registry.require_extra``). They are ``opt_in``: model-based
and slow, selected by name (``--bt-estimator kronfluence_ekfac``), never part of the default set.
"""
