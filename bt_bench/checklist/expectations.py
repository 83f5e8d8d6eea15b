"""Expected outcomes of the built-in estimators and controls: one strict snapshot per fixture profile.

Every (profile, estimator, check) that a built-in runs has one declared label (``bt_bench.checklist.gate``: PASS, FAIL,
ERROR, NOT JUDGED, N/A) with the reason a reviewer would accept. ``pytest checks`` enforces it both ways: a built-in
that now passes a check it was declared to fail deviates as much as one that now fails a declared pass, and the
suite exits nonzero until this table is updated in a commit that says why. A user's estimator has no entry: its
cells gate its paper.

How the table was made: measured on the tiny default (3 seeds x 3 draws) with ``pytest checks -n 2 --bt-report
r.json``, then ``python -m bt_bench.checklist.expectations r.json`` prints the measured labels next to the declared ones.
Nothing here is tuned: a label records what the estimator does on the fixture, and the reason says why that is the
expected outcome (a control cannot beat itself; the paper's findings; ours).

Also declared per profile, before anything is scored: the ``norm_only`` variant that check 1
(gradient_norm_baseline) compares rollout-level estimators with (the spec: "the stronger on that fixture, fixed
before any estimator is scored, never chosen per seed"). Step-level estimators always meet ``norm_only_step``.
"""

from __future__ import annotations

import json
import sys

from bt_bench.checklist.expectations_bpe import BPE as _BPE
from bt_bench.checklist.expectations_bpe_family import BPE_FAMILY as _BPE_FAMILY
from bt_bench.checklist.expectations_counterfactual import COUNTERFACTUAL as _COUNTERFACTUAL
from bt_bench.checklist.expectations_lds import LDS as _LDS
from bt_bench.checklist.expectations_tiny_family import TINY_FAMILY as _TINY_FAMILY
from bt_bench.checklist.gate import ERROR, FAIL, NA, NOT_JUDGED, PASS
from bt_bench.checklist.registry import CHECKS as _REGISTRY

BUILTINS = ("random", "norm_only", "norm_only_step", "fluency", "advantage_only", "oracle", "tracincp", "gas",
            "gas_fixed_target", "trak", "tracin_adam", "local_buffer", "bm25", "repsim", "bm25_adv", "repsim_adv")
CHECKS = tuple(_REGISTRY)  # checklist order

# The norm_only variant check 1 uses is declared per profile (bt_bench.runs.config.Profile.norm_variant), measured
# once on the profile's first three planted seeds (overall precision@|GT|) and then fixed. tiny (seeds 0, 1, 2;
# chance 0.059/0.062/0.060): norm_only 0.188/0.167/0.175, norm_only_step 0.146/0.155/0.091 -> norm_only; the Llama
# toy: lift 3.4/3.1/3.1 vs 2.3/2.4/1.6, still norm_only. smoke never plants (code paths only); bpe (seeds 0, 1, 2:
# norm_only lift 2.0/1.9/1.8) and paper take the rollout-level variant.

_CONTROL = "a control, not an attribution method: the checklist compares estimators with it"
_NO_TARGET = "uses no target: its scores cannot change with it (target_dependence fails by construction)"
_RANDOM = "chance-level control: it must fail every check it takes part in"
_NO_TOKEN = "declares no token_sketches: the check cannot take part (N/A by declaration)"
_STEP_DRAW = "step-level: fresh candidates of a draw share one checkpoint (N/A by declaration)"
_STEP_ADV = "step-level: advantage_baseline is for rollout-level estimators (N/A by declaration)"
_PAPER_NORM = ("paper: a target-free gradient-norm ranking reached ~4x chance and matched the best targeted "
               "estimator")
_PAPER_FLU = "paper: at saturated checkpoints fluency predicted the label as well as any gradient method"
_PAPER_HEAD = "paper: headroom bounds what a step-level method can show; window gains did not clear it"
_PAPER_VAR = "paper: after fluency control, verdicts flipped across seeds and draws"
_ADV = ("ours: inside the window a positive advantage nearly implies the planted cause; no built-in beat "
        "advantage_only on the tiny default")
_ALIGN = "paper: the trigger-token gradient aligns with the in_context target (+0.23/+0.11/+0.30)"
_RET_TINY = ("tiny cannot support it: BM25 ranks every draw perfectly (within-group AUC 1.00, the behavior is one "
             "token), so no ranking can beat it on a draw; 6 of each seed's 7 units are unsupported, more than a third, "
             "an error of the fixture (the tiny_family profile supports this check)")
_RETRIEVAL = "a retrieval control, not an attribution method: check 8 compares estimators with it"


def _ret(figure: str) -> tuple[str, str]:
    """tiny's check 8 label: an ERROR of the fixture, with the estimator's training-half figure (seed 0)."""
    return ERROR, _RET_TINY + f"; training half, seed 0, precision minus the best control's: {figure}"

_F, _P = FAIL, PASS
# test-only positive control (never in the default set): it passes every check it takes part in, on every unit that
# can support a verdict (a unit no ranking can pass is unsupported for everyone: docs/checklist.md, "The gate")
_ORACLE = {c: (_P, "the oracle reads the labels of the target's behavior: it must pass every check it takes part "
                   "in (target_dependence too: under a placebo target its labels are permuted), units no ranking can "
                   "pass left out") for c in CHECKS} | {"trigger_token_alignment": (NA, _NO_TOKEN)}
# {profile: {estimator: {check: (label, reason)}}}, measured on the tiny default (seeds 0, 1, 2 x 3 draws) with the
# commit that introduced this table; the figure after each reason is the measured one. Re-measured when the toy
# model became a Llama config (so that AutoTokenizer loads a run's tokenizer with the run's own ids): the labels
# that changed say "Llama toy" and carry the new figures; the others kept their label (figures from the Qwen2 toy).
# Since units no ranking can pass are left out (they support no verdict), fluency_confound's seed 2 draw 1 on tiny is
# unsupported for every estimator (fluency's AUC 0.9918, CI up to 1.0000): the draw counts in the fluency reasons
# below were measured over all 9 draws before that; every built-in failed that draw, and no label moved (re-measured
# with `pytest checks -n 2`: every built-in AS EXPECTED, fluency cells FAIL 8/9 or 7/9, 1 unsupported).
EXPECTED: dict[str, dict[str, dict[str, tuple[str, str]]]] = {"tiny": {
    "random": {c: (_F, _RANDOM) for c in CHECKS} | {"trigger_token_alignment": (NA, _NO_TOKEN),
                                                     "retrieval_baseline": _ret("-0.373 (CI low -0.444)")},
    "norm_only": {
        "gradient_norm_baseline": (_F, _CONTROL + " (it is the declared norm variant: difference 0)"),
        "fluency_confound": (_F, _CONTROL + " (within-group AUC 0.15: behavior candidates have smaller norms)"),
        "headroom": (_F, _CONTROL + " (window gain 0.03, CI low -0.13)"),
        "seed_draw_variance": (_F, "draw-stable by construction (Spearman 1.00), but its residualized AUC (0.76) "
                                   "has CI low 0.49 on 1 of 9 draws under the default sketch since 2026-12-04 (its "
                                   "norm is the sketch's; the compact sketch gave 0.78, lowest CI low 0.51: PASS)"),
        "trigger_token_alignment": (NA, _NO_TOKEN),
        "advantage_baseline": (_F, _CONTROL + " (precision 0.37 below advantage_only)"),
        "target_dependence": (_F, _NO_TARGET),
        "retrieval_baseline": _ret("-0.215 (CI low -0.288)")},
    "norm_only_step": {
        "gradient_norm_baseline": (_F, _CONTROL + " (step-level: compared with itself, difference 0)"),
        "headroom": (_F, _CONTROL + " (window gain -0.20)"),
        "target_dependence": (_F, _NO_TARGET),
        "fluency_confound": (NA, _STEP_DRAW), "seed_draw_variance": (NA, _STEP_DRAW),
        "trigger_token_alignment": (NA, _STEP_DRAW), "advantage_baseline": (NA, _STEP_ADV),
        "retrieval_baseline": (NA, "step-level: retrieval_baseline is for rollout-level estimators (N/A by declaration)")},
    "fluency": {
        "gradient_norm_baseline": (_F, _CONTROL + " (lift 0.9 vs norm 3.2)"),
        "fluency_confound": (_F, "fluency against itself: paired difference 0 and residualized AUC 0.5"),
        "headroom": (_P, "on the tiny toy fluency is informative in the window (gain 1.45, CI low 1.22) and at the "
                         "unsaturated checkpoint (AUC 0.63, CI low 0.58): the behavior word changes the "
                         "completion's log-prob; the paper's finding that fluency predicts the label, at work"),
        "seed_draw_variance": (_F, "fluency against itself: residualized AUC 0.5 everywhere"),
        "trigger_token_alignment": (NA, _NO_TOKEN),
        "advantage_baseline": (_F, _CONTROL + " (precision 0.51 below advantage_only)"),
        "target_dependence": (_F, _NO_TARGET),
        "retrieval_baseline": _ret("-0.374 (CI low -0.456)")},
    "advantage_only": {
        "gradient_norm_baseline": (_P, "ours: inside the window a positive advantage nearly implies GT (the bonus "
                                       "dominates the reward): lift 9.5 vs norm 3.2; this is why check 6 exists"),
        "fluency_confound": (_F, _CONTROL + " (fresh candidates' advantages use the ordinary reward: AUC 0.68 vs "
                                 "fluency 0.98)"),
        "headroom": (_F, _CONTROL + " (window gain 1.80, but unsaturated AUC 0.50: no bonus is paid to fresh "
                                    "candidates)"),
        "seed_draw_variance": (_F, _CONTROL + " (residualized AUC 0.34)"),
        "trigger_token_alignment": (NA, _NO_TOKEN),
        "advantage_baseline": (_F, "compared with itself: difference 0"),
        "target_dependence": (_F, _NO_TARGET),
        "retrieval_baseline": _ret("+0.093 (CI low +0.033), the one training half that beats retrieval (its draw AUC: -0.45)")},
    "gas_fixed_target": {
        "gradient_norm_baseline": (_P, "lift 4.3/4.3/4.8 vs norm 3.5/3.2/3.2, CI above it on every seed under the "
                                       "default sketch since 2026-12-04 (the compact sketch: lift 4.0/4.0/4.4 vs norm "
                                       "3.4/3.1/3.1, CI including 0 on seed 0: FAIL); the paper's finding 1 (the norm "
                                       "matches the best targeted estimator) does not hold for it on the toy"),
        "fluency_confound": (_F, _PAPER_FLU + " (Llama toy: AUC 0.84-0.99 vs fluency 0.94-0.99; passes only 1 of 9 "
                                 "draws)"),
        "headroom": (_P, "window gain 1.03 (CI low 0.80), unsaturated AUC 1.00"),
        "seed_draw_variance": (_F, "residualized AUC 0.70, CI low 0.46 on 1 of 9 draws (Spearman 0.99) under the "
                                   "default sketch since 2026-12-04; the compact sketch's PASS (0.84, lowest CI low "
                                   "0.70) was that sketch's distortion (docs/findings.md, choosing the default sketch)"),
        "trigger_token_alignment": (_P, _ALIGN + "; here cosine 0.96"),
        "advantage_baseline": (_F, _ADV + " (precision 0.26 below it)"),
        "target_dependence": (_P, "scores follow the target: precision +0.17/+0.21/+0.22, AUC +0.82 to +0.98 over "
                                  "the placebo (disguised as the real target: as many rows, the same norm)"),
        "retrieval_baseline": _ret("-0.161 (CI low -0.219)")},
    "tracincp": {
        "gradient_norm_baseline": (_F, _PAPER_NORM + " (lift 3.6 vs norm 3.2: difference CI includes 0)"),
        "fluency_confound": (_F, _PAPER_FLU + " (fails 4 of 9 draws: paired difference with fluency straddles 0)"),
        "headroom": (_F, _PAPER_HEAD + " (window gain 0.51, CI low -0.27)"),
        "seed_draw_variance": (_F, "residualized AUC 0.68, CI low > 0.5 on 4 of 9 draws under sketch seed 0 and 6 "
                                   "of 9 under sketch seed 1 (lowest 0.38) with the default sketch since 2026-12-04, "
                                   "as exact TracIn (4 of 9); the compact sketch's PASS (0.85, lowest CI low 0.72) "
                                   "was that sketch's distortion: finding 3 reproduces"),
        "trigger_token_alignment": (_P, _ALIGN),
        "advantage_baseline": (_F, _ADV + " (precision 0.35 below it)"),
        "target_dependence": (_F, "Llama toy: the draw AUC follows the target (+0.83 to +0.98) but training "
                                  "precision does not beat the placebo target (-0.143/+0.019/+0.032; the "
                                  "placebo disguised as the real target)"),
        "retrieval_baseline": _ret("-0.368 (CI low -0.438)")},
    "gas": {
        "gradient_norm_baseline": (_F, _PAPER_NORM + " (canonical GAS: lift 0.2; the negative-advantage siblings of "
                                        "GT rollouts also push the behavior up and rank above GT)"),
        "fluency_confound": (_F, _PAPER_FLU + " (Llama toy: same draw scores as gas_fixed_target, passes 1 of 9 "
                                 "draws)"),
        "headroom": (_F, _PAPER_HEAD + " (window gain -0.30)"),
        "seed_draw_variance": (_F, "residualized AUC 0.70, CI low 0.46 on 1 of 9 draws (Spearman 0.99) under the "
                                   "default sketch since 2026-12-04 (compact sketch: 0.84, PASS)"),
        "trigger_token_alignment": (_P, _ALIGN),
        "advantage_baseline": (_F, _ADV + " (precision 0.55 below it)"),
        "target_dependence": (_F, "over the training rollouts canonical GAS barely changes with the target "
                                  "(precision -0.116/+0.009/+0.009, CI low <= 0 on every seed), although the draw "
                                  "AUC does (+0.82 to +0.98; the placebo disguised as the real target)"),
        "retrieval_baseline": _ret("-0.393 (CI low -0.459)")},
    "trak": {
        "gradient_norm_baseline": (_F, _PAPER_NORM + " (lift 3.1 vs norm 3.2)"),
        "fluency_confound": (_F, _PAPER_FLU + " (AUC 0.88 vs fluency 0.98)"),
        "headroom": (_F, _PAPER_HEAD + " (window gain 0.25, CI low -0.25)"),
        "seed_draw_variance": (_F, "residualized AUC 0.58, CI low > 0.5 on 4 of 9 draws under sketch seed 0 and 7 "
                                   "of 9 under sketch seed 1 (lowest 0.48), draw Spearman 0.68, under the default "
                                   "sketch since 2026-12-04 (compact sketch: 0.72, lowest CI low 0.56: PASS)"),
        "trigger_token_alignment": (_F, "against a placebo at the real target's norm the whitened "
                                        "in_context-minus-placebo difference (+0.002-0.003) has CI low -0.002 to "
                                        "-0.003 on every seed; the earlier pass (CI low +0.0005 to +0.0014) came "
                                        "from the placebo's smaller norm (the raw placebo still passes)"),
        "advantage_baseline": (_F, _ADV + " (precision 0.38 below it)"),
        "target_dependence": (_F, "training precision below the placebo target's on every seed "
                                  "(-0.105/-0.043/-0.043); draw AUC +0.24 to +0.50"),
        "retrieval_baseline": _ret("-0.382 (CI low -0.449)")},
    # LESS since 2026-12-04 (the rollout preconditioned, the target plain; estimators/tracin.py), re-measured: the same
    # labels as the earlier both-sides form, figures within a few hundredths. The below-chance ranking is not the
    # preconditioner's: on seed 0 at checkpoint 50 every gradient score ranks the in-window GT below chance (AUC
    # 0.08 for the plain cosine, LESS and the symmetric form alike; 0.12 for the plain dot product)
    "tracin_adam": {
        "gradient_norm_baseline": (_F, _PAPER_NORM + " (lift 0.3-0.4, below chance, vs norm 3.1-3.4)"),
        "fluency_confound": (_F, _PAPER_FLU + " (AUC 0.24-0.70 vs fluency 0.94-0.98)"),
        "headroom": (_F, _PAPER_HEAD + " (window gain -1.26 to -1.41)"),
        "seed_draw_variance": (_F, "residualized AUC 0.50, lowest CI low 0.26: no better than fluency"),
        "trigger_token_alignment": (NA, _NO_TOKEN),
        "advantage_baseline": (_F, _ADV + " (precision 0.50 below it)"),
        "target_dependence": (_F, "training precision real minus placebo -0.146/+0.004/+0.009 (CI low -0.176/"
                                  "-0.009/-0.001): no seed clears the placebo; draw AUC +0.11 to +0.63, CI low > 0 "
                                  "on all 9 draws"),
        "retrieval_baseline": _ret("-0.403 (CI low -0.470)")},
    "local_buffer": {  # LDA-ORL's local buffer: <g_target^c(s), g_i> at the rollout's own round
        "gradient_norm_baseline": (_F, _PAPER_NORM + " (lift 3.7/4.2/4.4 vs norm 3.4/3.1/3.1; the CI does not "
                                                     "clear norm_only on 1 of 3 seeds)"),
        "fluency_confound": (_F, _PAPER_FLU + " (AUC 0.85-0.99 vs fluency 0.94-0.99; 9 of 9 draws)"),
        "headroom": (_F, "window gain 0.38/-0.04/0.19 (CI low 0.18/-0.18/-0.02) under the default sketch since "
                         "2026-12-04, so 6 of 9 units fail (its in-run sketches are the run's; the compact sketch: "
                         "gain 0.17/0.33/0.49, CI low >= 0.04, PASS)"),
        "seed_draw_variance": (_F, "residualized AUC 0.68, CI low > 0.5 on 4 of 9 draws under sketch seed 0 and 6 "
                                   "of 9 under sketch seed 1 (lowest 0.38) with the default sketch since 2026-12-04 "
                                   "(compact sketch: 0.75, lowest CI low 0.52: PASS)"),
        "trigger_token_alignment": (_P, "in_context minus placebo +16 to +109 (dot products, the placebo at the "
                                        "real target's norm), CI above 0"),
        "advantage_baseline": (_F, _ADV + " (precision 0.23-0.30 below it)"),
        "target_dependence": (_P, "precision real minus placebo +0.12/+0.18/+0.16 (CI low >= 0.05), AUC +0.83 to "
                                  "+0.98"),
        "retrieval_baseline": _ret("-0.220 (CI low -0.277)")},
    # test-only positive control (never in the default set): tests/test_controls.py runs it on every check
    "oracle": _ORACLE | {"fluency_confound": (_P, _ORACLE["fluency_confound"][1] + "; tiny: PASS 8/9, 1 "
                                              "unsupported (seed 2 draw 1: fluency's AUC 0.9918, CI up to 1.0000, so "
                                              "even the labels' paired difference has CI low 0.0000)"),
                         "retrieval_baseline": (ERROR, _RET_TINY + "; the oracle too: its draw units are the "
                                                "unsupported ones (it passes on tiny_family)")},
    # the retrieval controls (estimators/retrieval.py), measured on the tiny default, 2026-12-05 (seeds 0, 1, 2)
    "bm25": {
        "gradient_norm_baseline": (_F, _RETRIEVAL + " (lift 2.1-3.0 vs norm 3.2-3.5: a text match also ranks the "
                                                    "unpaid behavior rollouts after the window high; window precision "
                                                    "0.96-0.97)"),
        "fluency_confound": (_P, "retrieval passes where gradients fail: within-group AUC 1.00 against fluency's "
                                 "0.94-0.98 on 8 of 9 draws (1 unsupported): the one-token behavior names itself"),
        "headroom": (_P, "window gain 3.6-3.9 (CI low >= 3.15), unsaturated AUC 1.00"),
        "seed_draw_variance": (_P, "residualized AUC 0.96, lowest CI low 0.87: text matching does not flip across "
                                   "seeds and draws"),
        "trigger_token_alignment": (_P, "in_context minus placebo +2.4 to +14.6 (CI low > 0): the behavior span's "
                                        "tokens are the target's query"),
        "advantage_baseline": (_F, _RETRIEVAL + " (precision 0.34-0.44 below advantage_only)"),
        "target_dependence": (_P, "precision real minus placebo +0.07 to +0.14, AUC +0.50 to +0.52: it reads the "
                                  "target's rows, and the placebo's are other tokens"),
        "retrieval_baseline": _ret("-0.245 (CI low -0.316; compared with itself 0, with bm25_adv below)")},
    "repsim": {
        "gradient_norm_baseline": (_F, _RETRIEVAL + " (lift 2.3-2.9 vs norm 3.2-3.5; window precision 0.87-0.89)"),
        "fluency_confound": (_F, "within-group AUC 0.95-0.99 vs fluency 0.94-0.99: the paired difference is not "
                                 "above 0 on every draw"),
        "headroom": (_P, "window gain 3.1-3.3 (CI low >= 2.72), unsaturated AUC 0.98-0.99"),
        "seed_draw_variance": (_P, "residualized AUC 0.77, lowest CI low 0.64"),
        "trigger_token_alignment": (_F, "in_context minus placebo -0.16 to -0.23: the mean hidden state of the "
                                        "behavior span is no closer to the real target's than to the placebo's"),
        "advantage_baseline": (_F, _RETRIEVAL + " (precision 0.34-0.42 below advantage_only)"),
        "target_dependence": (_P, "precision real minus placebo +0.09 to +0.18, AUC +0.42 to +0.63"),
        "retrieval_baseline": _ret("-0.251 (CI low -0.322)")},
    "bm25_adv": {
        "gradient_norm_baseline": (_P, "a retrieval control passes the paper's finding-1 check: lift 6.9/6.9/8.3 vs "
                                       "norm 3.5/3.2/3.2 (window lift 3.1-3.4)"),
        "fluency_confound": (_F, "fresh candidates' advantages use the ordinary reward: AUC 0.69-0.71 vs fluency "
                                 "0.94-0.98"),
        "headroom": (_P, "window gain 3.7-3.9 (CI low >= 3.29), unsaturated AUC 0.53-0.60 (CI low > 0.5)"),
        "seed_draw_variance": (_F, "residualized AUC 0.18, lowest CI low 0.04"),
        "trigger_token_alignment": (_F, "in_context minus placebo -1.53/+0.57/-0.73: passes 1 of 3 seeds"),
        "advantage_baseline": (_F, _RETRIEVAL + " (precision 0.07-0.09 below advantage_only; window +0.36 to +0.39)"),
        "target_dependence": (_P, "precision real minus placebo +0.15 to +0.18, AUC +0.15 to +0.17"),
        "retrieval_baseline": _ret("+0.000 against itself, the strongest control on the training rollouts")},
    "repsim_adv": {
        "gradient_norm_baseline": (_P, "a retrieval control passes the paper's finding-1 check: lift 6.6/6.1/7.2 vs "
                                       "norm 3.5/3.2/3.2"),
        "fluency_confound": (_F, "AUC 0.70-0.75 vs fluency 0.94-0.98"),
        "headroom": (_P, "window gain 1.5-1.6 (CI low >= 1.11), unsaturated AUC 0.54-0.60 (CI low > 0.5)"),
        "seed_draw_variance": (_F, "residualized AUC 0.19, lowest CI low 0.06"),
        "trigger_token_alignment": (_F, "in_context minus placebo -0.01: no token-level alignment"),
        "advantage_baseline": (_F, _RETRIEVAL + " (precision 0.11-0.14 below advantage_only)"),
        "target_dependence": (_P, "precision real minus placebo +0.03 to +0.09, AUC +0.14 to +0.20"),
        "retrieval_baseline": _ret("-0.019 (CI low -0.061; bm25_adv is stronger)")},
}}


# bpe (the subword-tokenizer fixture): measured on bpe seeds 0, 1, 2 x 3 draws; the oracle keeps its rule
EXPECTED["bpe"] = {**_BPE, "oracle": _ORACLE}
# tiny_family (a behavior retrieval cannot find by its text): measured on its seeds 0, 1, 2 x 3 draws
EXPECTED["tiny_family"] = {**_TINY_FAMILY, "oracle": _ORACLE}
# bpe_family (bpe with a family behavior): measured on its seeds 0, 1, 2 x 3 draws
EXPECTED["bpe_family"] = {**_BPE_FAMILY, "oracle": _ORACLE}


# check 9's rows, measured per profile (expectations_counterfactual.py); a profile not measured yet has none
for _profile, _rows in _COUNTERFACTUAL.items():
    for _est, _row in _rows.items():
        EXPECTED[_profile][_est] = {**EXPECTED[_profile][_est], "counterfactual_removal": _row}
# check 10's rows, measured per profile with --bt-lds (expectations_lds.py), the oracle's too
for _profile, _rows in _LDS.items():
    for _est, _row in _rows.items():
        EXPECTED[_profile][_est] = {**EXPECTED[_profile][_est], "linear_datamodeling": _row}


LDS_NOT_RUN = (NA, "not run in this session (--bt-lds runs it)")


def expected_for(profile: str, estimator: str, lds: bool = True) -> dict[str, tuple[str, str]] | None:
    """The declared {check: (label, reason)} of a built-in on ``profile``; None for a user's estimator, or for a
    built-in on a profile without a snapshot (then it is reported but not enforced). ``lds``: whether the session
    runs check 10 (``--bt-lds``); without it every built-in's linear_datamodeling is declared N/A (not run)."""
    want = EXPECTED.get(profile, {}).get(estimator)
    if want is not None and not lds:
        want = {**want, "linear_datamodeling": LDS_NOT_RUN}
    return want


def has_snapshot(profile: str) -> bool:
    return bool(EXPECTED.get(profile))


def measured(doc: dict) -> dict[str, dict[str, tuple[str, str]]]:
    """{estimator: {check: (label, reason)}} of a report, each reason the measured label, the count of units behind
    it and the first key figures in the report's order (the form of the bpe and tiny_family snapshots). The
    test-only oracle is left out: it keeps the rule of ``_ORACLE``."""
    from bt_bench.checklist import gate

    figs: dict[tuple[str, str], list[str]] = {}
    for r in doc["results"]:
        c = r.get("cell") or {}
        if c.get("key_figure"):
            figs.setdefault((c["estimator"], c["check"]), []).append(c["key_figure"])
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for (est, check), r in sorted(gate.checks(doc["results"]).items()):
        if est != "oracle":
            why = f"{r.label} {r.count}: " + "; ".join(figs.get((est, check), []))
            out.setdefault(est, {})[check] = (r.label, why[:72])
    return out


def emit(doc: dict, name: str) -> str:
    """The Python text of a snapshot dict called ``name`` measured from a report (``--emit``)."""
    lines = [f"{name}: dict[str, dict[str, tuple[str, str]]] = {{"]
    for est, checks in measured(doc).items():
        lines.append(f"    {est!r}: {{")
        lines += [f"        {c!r}: ({_CONST[lab]}, {why!r})," for c, (lab, why) in checks.items()]
        lines.append("    },")
    return "\n".join(lines + ["}"]) + "\n"


_CONST = {PASS: "PASS", FAIL: "FAIL", ERROR: "ERROR", NA: "NA", NOT_JUDGED: "NOT_JUDGED"}


def main(argv: list[str] | None = None) -> int:
    """``python -m bt_bench.checklist.expectations REPORT.json [PROFILE]``: measured labels next to the declared ones.
    ``--emit NAME REPORT.json``: print a snapshot dict called NAME measured from the report (the form of
    ``expectations_bpe.py``), to paste into a snapshot module in a commit that says why."""
    from bt_bench.checklist import gate
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(main.__doc__)
        return 2
    if argv[0] == "--emit":
        print(emit(json.loads(open(argv[2]).read()), argv[1]), end="")
        return 0
    doc = json.loads(open(argv[0]).read())
    profile = argv[1] if len(argv) > 1 else doc.get("settings", {}).get("profile", "tiny")
    for (est, check), r in sorted(gate.checks(doc["results"]).items()):
        want = (expected_for(profile, est) or {}).get(check)
        mark = "" if want and gate.as_declared(r.label, want[0]) else "  <-- differs" if want else "  (none declared)"
        print(f"{est:18} {check:24} measured {r.label:10} {r.count:5} declared {want[0] if want else '-':10}{mark}")
    return 0


__all__ = ["BUILTINS", "CHECKS", "EXPECTED", "expected_for", "has_snapshot", "PASS", "FAIL", "NA",
           "NOT_JUDGED"]

if __name__ == "__main__":
    raise SystemExit(main())
