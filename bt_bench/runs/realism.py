"""Realism statistics of a planted run: how hard a fixture is, measured without looking at any estimator.

A planted fixture can be easy for reasons that have nothing to do with attributing training data:

- **The behavior's token shape.** If the behavior is one token that always opens the completion, every behavior
  rollout's gradient contains the gradient of that one token at that one position, the very gradient the
  in-context target is built from. Matching it then needs no attribution: the target and every behavior rollout
  share one term. ``tokens_per_occurrence`` and the spread of ``first_pos_*`` say how far a fixture is from that
  (1 token, 1 distinct position = the degenerate case).
- **The advantage alone.** Ground truth is "received the planting bonus". If the task reward has no variance
  inside trigger groups, a positive advantage nearly implies the bonus, so an advantage-only score finds GT
  without attributing anything (with a bonus-only reward the window AUC is 1.0 by construction).
  ``window_adv_auc_gt`` and ``window_gt_share_pos_adv`` measure that shortcut on the rollouts a window check
  ranks (steps < W, advantage != 0: a zero-advantage rollout has an exactly zero gradient);
  ``window_adv_auc_gt_trigger`` on the trigger rollouts alone (the trigger is in the visible prompt tokens, though
  the ``has_trigger`` flag itself is no longer handed over).
- **Fluency.** If behavior completions are simply more (or less) likely under the model, a fluency-only score
  separates them from their siblings (``fluency_auc``: the fixture stage records it at the saturated checkpoint).

The three ``behavior_*`` label columns are recorded by newer builds only; for older runs the stats that need
them are None. Numpy only: the run stage computes these at build time, the report only displays them.
"""

from __future__ import annotations

import numpy as np

# stat -> what it says (shown as help in `bt-bench show` and on the HTML page)
STATS = {
    "tokens_per_occurrence": "completion tokens per behavior occurrence (1: a single-token behavior)",
    "first_pos_distinct": "distinct completion positions of the first behavior token over GT rollouts "
                          "(1: the behavior always sits at the same place)",
    "first_pos_std": "std of the first behavior token's position over GT rollouts",
    "first_pos_min": "earliest first behavior token position over GT rollouts (0: opens the completion)",
    "first_pos_max": "latest first behavior token position over GT rollouts",
    "window_adv_auc_gt": "AUC of the advantage alone for GT in the window (steps < W, A != 0); 1.0: an "
                         "advantage-only score finds GT without attribution",
    "window_adv_auc_gt_trigger": "the same AUC over trigger rollouts only (the trigger is in the prompt "
                                 "tokens an estimator sees: A on trigger prompts is a score it can form)",
    "window_gt_share_pos_adv": "share of GT among window rollouts with A > 0 (high: A > 0 nearly implies GT)",
    "window_pos_adv_share_of_gt": "share of window GT rollouts with A > 0 (~1: the bonus raises the reward)",
    "fluency_auc_saturated": "within-group AUC of fluency (mean token log-prob) for the behavior, saturated "
                             "checkpoint draw 0 (0.5: fluency does not give the behavior away)",
    "saturated_step": "the saturated checkpoint that fluency AUC was measured at",
}
BEHAVIOR_COLUMNS = ("behavior_count", "behavior_tokens", "behavior_first_pos")


def pooled_auc(score, label, group) -> float | None:
    """P(score of a positive > score of a negative) + 0.5 P(tie), over (positive, negative) pairs of the same
    group, pooled over groups; None if there is no such pair. Mann-Whitney on within-group midranks: for a group,
    (sum of the positives' midranks - n_pos (n_pos + 1) / 2) counts its wins + ties / 2, and is 0 for a group of
    one class, so groups without a pair drop out by themselves."""
    x, y, g = np.asarray(score, np.float64), np.asarray(label, bool), np.asarray(group)
    n = x.shape[0]
    if n == 0:
        return None
    o = np.lexsort((x, g))
    xs, gs, ys = x[o], g[o], y[o]
    new_grp = np.r_[True, gs[1:] != gs[:-1]]
    new_blk = new_grp | np.r_[True, xs[1:] != xs[:-1]]  # a tie block: equal scores inside one group
    idx = np.arange(n)
    pos_in_grp = idx - np.maximum.accumulate(np.where(new_grp, idx, 0))
    blk = np.cumsum(new_blk) - 1
    midrank = pos_in_grp[new_blk][blk] + (np.bincount(blk)[blk] + 1) / 2  # 1-based, ties share their mean rank
    gid = np.cumsum(new_grp) - 1
    n_pos, n_all = np.bincount(gid, weights=ys), np.bincount(gid)
    pairs = float((n_pos * (n_all - n_pos)).sum())
    if pairs == 0:
        return None
    wins = np.bincount(gid, weights=np.where(ys, midrank, 0.0)) - n_pos * (n_pos + 1) / 2
    return float(wins.sum() / pairs)


def fluency_auc(fluency, has_behavior, group) -> float | None:
    """Within-group AUC of fluency for the behavior label (same pairs and ties as the checklist's
    ``within_group_auc``); None if no group holds both a behavior and a non-behavior rollout."""
    return pooled_auc(fluency, has_behavior, group)


def _share(num_mask: np.ndarray, den_mask: np.ndarray) -> float | None:
    d = int(den_mask.sum())
    return float((num_mask & den_mask).sum() / d) if d else None


def realism_stats(cols: dict[str, np.ndarray], window: int) -> dict:
    """The realism stats of one run's rollout columns (``STATS`` says what each means); a stat is None where
    it is undefined (no GT, an empty window) or its columns are missing (runs built before ``BEHAVIOR_COLUMNS``)."""
    gt, beh = np.asarray(cols["is_gt"], bool), np.asarray(cols["has_behavior"], bool)
    step, adv = np.asarray(cols["step"]), np.asarray(cols["advantage"], np.float64)
    out: dict = dict.fromkeys(k for k in STATS if k not in ("fluency_auc_saturated", "saturated_step"))
    if all(c in cols for c in BEHAVIOR_COLUMNS):
        count, toks = np.asarray(cols["behavior_count"]), np.asarray(cols["behavior_tokens"])
        n_occ = int(count[beh].sum())
        out["tokens_per_occurrence"] = float(toks[beh].sum() / n_occ) if n_occ else None
        fp = np.asarray(cols["behavior_first_pos"])[gt]
        fp = fp[fp >= 0]  # a GT rollout has the behavior; -1 would be a labelling slip, not a position
        if fp.size:
            out.update(first_pos_distinct=int(np.unique(fp).size), first_pos_std=float(fp.std()),
                       first_pos_min=int(fp.min()), first_pos_max=int(fp.max()))
    win = step < window
    ranked = win & (adv != 0)  # what a window check ranks: a zero advantage means an exactly zero gradient

    def adv_auc(m: np.ndarray) -> float | None:  # one pool: an advantage-only score ranks the whole window
        return pooled_auc(adv[m], gt[m], np.zeros(int(m.sum()), np.int64))

    out["window_adv_auc_gt"] = adv_auc(ranked)
    if "has_trigger" in cols:  # GT needs the trigger, so the shortcut may be sharper on trigger prompts alone
        out["window_adv_auc_gt_trigger"] = adv_auc(ranked & np.asarray(cols["has_trigger"], bool))
    out["window_gt_share_pos_adv"] = _share(gt, win & (adv > 0))
    out["window_pos_adv_share_of_gt"] = _share(adv > 0, win & gt)
    return out


def run_realism(run) -> dict:
    """The realism stats of a loaded run: what its build recorded (``manifest["summary"]["realism"]``), else
    computed now from its columns (runs built before the build recorded them)."""
    rec = (run.manifest.get("summary") or {}).get("realism")
    return dict(rec) if rec is not None else realism_stats(run.columns, run.config.window)
