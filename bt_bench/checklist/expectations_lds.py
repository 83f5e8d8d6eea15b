"""Expected outcomes of check 10 (linear_datamodeling) for the built-ins, per profile, measured with ``--bt-lds``
(without it every built-in's cell is N/A, not run: ``expectations.expected_for(..., lds=False)``). Merged into
``expectations.EXPECTED``; the oracle's row is measured too (the GT indicator is no LDS ceiling: the check's module
says why).

How measured: ``pytest checks/test_linear_datamodeling.py -n 2 --bt-lds --bt-estimator ...`` (every built-in and
the oracle) on the profile's cached fixtures and LDS sets, then the rows written from the report's units
(``python -m bt_bench.checklist.expectations --emit``). A reason gives the label, the units behind it and the key
figure: the mean LDS with the lowest CI lower bound over the seeds, and the difference to the best control.
What the figures say: docs/findings.md, "Counterfactual replay".
"""

from __future__ import annotations

from bt_bench.checklist.gate import ERROR, FAIL, PASS  # noqa: F401 (the emitted rows use them)

LDS: dict[str, dict[str, dict[str, tuple[str, str]]]] = {
}
