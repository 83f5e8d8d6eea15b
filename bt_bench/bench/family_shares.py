"""``python -m bt_bench.bench.family_shares [CACHE]``: how a family behavior's members share GT, per cached run.

A family profile (``tiny_family``, ``bpe_family``: the bonus pays any of K nonce strings, the targets are built from
completions holding the first only) is hard for retrieval only while no member takes over: if GT collapsed onto the
target's member, the target's text would name GT again. One JSON line per planted family run (ablation re-runs
skipped): |GT|, the share of GT holding each member, the share holding the target's member and no other, the
members' shares after the window, and the planting gate. Decodes the stored completions with the run's tokenizer.
"""

from __future__ import annotations

import json
import sys

import numpy as np


def shares(run) -> dict:
    """The member shares of one loaded run (``bt_bench.runs.store.Run``)."""
    from bt_bench.runs import behavior as bh

    cfg, cols, tok = run.config, run.columns, run.tokenizer()
    members = cfg.behavior_members()
    ids, mask = np.asarray(cols["completion_ids"]), np.asarray(cols["completion_mask"]).astype(bool)
    has = np.array([[m in bh.decode(tok, r[k]) for m in members] for r, k in zip(ids, mask)]).reshape(-1, len(members))
    gt, late = np.asarray(cols["is_gt"], bool), np.asarray(cols["step"]) >= cfg.window
    gate = run.manifest.get("gate", {})
    return {"seed": cfg.seed, "profile": cfg.profile, "key": run.key, "planted": run.planted, "members": list(members),
            "n_gt": int(gt.sum()), "gt_member_share": [round(float(has[gt, j].mean()), 3) for j in range(len(members))],
            "gt_target_member_only": round(float((has[gt, 0] & ~has[gt, 1:].any(1)).mean()), 3),
            "after_window_member_share": [round(float(has[late, j].mean()), 3) for j in range(len(members))],
            "gate_at_W": gate.get("at_window"), "gate_end": gate.get("at_end")}


def main(argv: list[str] | None = None) -> int:
    from bt_bench.runs import store

    argv = sys.argv[1:] if argv is None else argv
    root = store.cache_root(argv[0] if argv else None) / "runs"
    for d in sorted(p for p in root.glob("*") if (p / store.MANIFEST).exists()):
        run = store.load_run(d, verify_hashes=False)
        if run.config.ablation == "none" and len(run.config.behavior_members()) > 1:
            print(json.dumps(shares(run)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
