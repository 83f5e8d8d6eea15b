"""Expected failures, declared in one place: (estimator, check) -> the reason a reviewer would accept.

The built-in estimators reproduce the BehaviorTrace paper, whose finding is that they fail some checks, and the
controls are not attribution methods (the checks compare estimators *with* them). ``pytest checks`` marks these
cells ``xfail(strict=False)`` so the main job ends green while the table still shows each as
"FAIL (expected, paper)"; a declared cell that passes shows as XPASS (the estimator did better than the paper
found); ``--bt-strict`` turns them back into failures. Only a failed verdict is expected: an estimator that errors,
or a fixture that cannot support a check, is still an error.

Nothing here is declared for a third-party estimator: its cells gate its paper.
"""

from __future__ import annotations

TARGETED = ("tracincp", "gas", "gas_fixed_target", "trak", "tracin_adam")
CONTROLS = ("random", "norm_only", "norm_only_step", "fluency", "advantage_only")
ALL_CHECKS = ("gradient_norm_baseline", "fluency_confound", "headroom", "seed_draw_variance",
              "trigger_token_alignment", "advantage_baseline")

PAPER = {
    "gradient_norm_baseline": "paper: a target-free gradient-norm ranking reached ~4x chance and matched the best "
                              "targeted estimator; inside the window every method was within ~0.03 of chance",
    "fluency_confound": "paper: at saturated checkpoints fluency predicted the behavior label (AUC 0.72-0.80) as "
                        "well as any gradient method",
    "headroom": "paper: headroom (ceiling - chance) bounds what any step-level method can show; its estimators' "
                "window gains did not clear it",
    "seed_draw_variance": "paper: after fluency control, per-rollout verdicts flipped across seeds and draws",
    "advantage_baseline": "measured on the tiny default: inside the window a positive advantage nearly implies the "
                          "planted cause (advantage_only lift ~9x chance); no built-in estimator beat it",
}
CONTROL = "a control, not an attribution method: the checklist compares estimators with it"

KNOWN: dict[tuple[str, str], str] = {}
for _check, _why in PAPER.items():
    for _est in TARGETED:
        KNOWN[(_est, _check)] = _why
for _est in CONTROLS:
    for _check in ALL_CHECKS:
        if _check != "trigger_token_alignment":  # no control has token-level scores: it skips, nothing to expect
            KNOWN[(_est, _check)] = CONTROL
for _check in ALL_CHECKS:
    KNOWN[("random", _check)] = "chance-level control: it must fail every check (spec, Controls)"


def expected_failure(estimator: str, check: str) -> str | None:
    return KNOWN.get((estimator, check))
