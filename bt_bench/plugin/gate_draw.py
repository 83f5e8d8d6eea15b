"""Fresh fixtures that can gate: a gate seed whose fixtures fail the sketch-ranking self-check or the oracle canary
is redrawn before any estimator is scored.

A gate seed draws the fixtures' nonce strings and word ids (``runs.config.gate_config``), and with them how far the
stored k = 4096 sketches resolve a draw's ranking. Measured on tiny (docs/running.md, "Fresh fixtures"): on gate
seed 1 the saturated draws are 80 % behavior rollouts whose exact TracIn scores differ by about the sketch's own
error, so the stored sketches rank them with Spearman 0.5-0.8 against exact gradients (the self-check's bar is
0.95), on every training seed; gate seed 2 passes with 0.90-0.996. A session on such fixtures
used to score every estimator and then read ``FIXTURE FAILED, NOT JUDGED``: the remedy was another gate seed, by
hand. Now the harness takes it, as the planting gate skips seeds that do not plant:

- the attempts are the drawn seed, then seeds derived from it (:func:`attempt_seeds`: a hash, so ``--bt-gate-seed
  S`` reproduces the whole sequence, and nothing about them can be chosen);
- each attempt's fixtures are built, derived and screened with the sketch-ranking self-check (``judge`` of
  ``bt_bench.checklist.sketch_verdicts``, the check's own code and bars), then with the oracle canary (oracle and
  random judged on every check it takes, ``bt_bench.checklist.canary_cells``: a fixture on which perfect attribution
  cannot pass gates nobody); the first that passes both is used;
- every rejected seed and its problems go into the report (``gate_seed.rejected``); when none of ``--bt-gate-attempts``
  passes, the session stops before scoring with all of them named.

What a verdict then means: a verdict on fixtures where the sketch resolves exact gradients' ranking, which is the
condition under which any draw-level verdict means something, on fixtures that perfect attribution passes and a
random ranking fails. Both self-checks still run in the session.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

SCREEN = "the screen before scoring (the sketch-ranking self-check or the oracle canary)"


def attempt_seeds(gate_seed: int, attempts: int) -> list[int]:
    """The drawn ``gate_seed``, then ``attempts - 1`` seeds derived from it (sha256 of "seed:attempt", in
    [0, 2**31)), all distinct."""
    out = [int(gate_seed)]
    i = 1
    while len(out) < attempts:
        h = hashlib.sha256(f"bt-bench gate redraw {gate_seed}:{i}".encode()).digest()
        s = int.from_bytes(h[:8], "big") % 2**31
        if s not in out:
            out.append(s)
        i += 1
    return out


def choose(gate_seed: int, attempts: int, prepare: Callable[[int], Any], screen: Callable[[Any], list[str]],
           note: Callable[[str], None] = lambda line: None) -> dict:
    """Try the attempts in order: ``prepare(seed)`` builds one gate seed's fixtures, ``screen(prepared)`` returns
    their problems (empty: usable). Returns {"drawn", "accepted" (None when every attempt failed), "rejected":
    [{"seed", "problems"}], "prepared" (the accepted one's, else None)}; ``note`` gets one progress line per
    rejection."""
    seeds = attempt_seeds(gate_seed, attempts)
    rejected: list[dict] = []
    for i, seed in enumerate(seeds):
        prepared = prepare(seed)
        problems = list(screen(prepared))
        if not problems:
            return {"drawn": int(gate_seed), "accepted": seed, "rejected": rejected, "prepared": prepared}
        rejected.append({"seed": seed, "problems": problems})
        nxt = f"; drawing gate seed {seeds[i + 1]} (attempt {i + 2} of {len(seeds)})" if i + 1 < len(seeds) else ""
        note(f"gate seed {seed}: its fixtures fail {SCREEN} ({'; '.join(problems)}){nxt}")
    return {"drawn": int(gate_seed), "accepted": None, "rejected": rejected, "prepared": None}


def none_passed(result: dict) -> str:
    """The message of a session that stops because no attempt's fixtures passed the screen."""
    tried = "; ".join(f"gate seed {r['seed']}: {' / '.join(r['problems'])}" for r in result["rejected"])
    return (f"no fresh fixtures that can gate: all {len(result['rejected'])} gate seeds drawn from "
            f"{result['drawn']} fail {SCREEN}, so no verdict on them would count ({tried}). "
            "Run again (a new gate seed is drawn) or raise --bt-gate-attempts")
