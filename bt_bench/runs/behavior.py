"""The planted behavior as a string, detected on decoded text, and its token span.

The paper counted the behavior as "the nonce string occurs in the completion" (its "QZXBT"), whatever tokens the
model used to write it. So:
- ``has_behavior(text)``: the behavior string occurs in the decoded completion (special tokens skipped);
- the behavior's **token span**: the completion tokens whose character range overlaps an occurrence. The token
  views and the trigger-token alignment check use this span.

Why character ranges come from decoding prefixes, not from re-encoding the text with ``return_offsets_mapping``:
a sampled completion need not be the canonical encoding of its own text (a BPE model can write "QZ"+"XBT" where
the tokenizer would encode "Q"+"ZX"+"BT"), so offsets of the re-encoded text could point at tokens the model
never produced. Decoding ids[:i] for every i gives each *sampled* token its own characters. For byte-level BPE on
ASCII text and for word-level tokenizers decoding is prefix-stable; where it is not (a token ending inside a
multi-byte character), ranges are clamped to stay monotone, which can only widen a span by one token.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Behavior = str | Sequence[str]  # one string, or a family of strings (any member counts: ``members``)


def members(behavior: Behavior) -> tuple[str, ...]:
    """The strings that count as the behavior: ``behavior`` itself, or each member of a family (a profile whose
    bonus pays any of K nonce strings: ``ToySpec.family``)."""
    return (behavior,) if isinstance(behavior, str) else tuple(behavior)


def decode(tok, ids: Sequence[int]) -> str:
    """The completion text as the paper read it: special tokens (EOS, pad, chat markers) skipped."""
    return tok.decode([int(i) for i in ids], skip_special_tokens=True, clean_up_tokenization_spaces=False)


def occurrences(text: str, behavior: Behavior) -> list[tuple[int, int]]:
    """Character ranges [start, end) of the non-overlapping occurrences of ``behavior`` in ``text`` (of each
    member of a family, sorted)."""
    out = []
    for b in members(behavior):
        i = text.find(b)
        while i >= 0:
            out.append((i, i + len(b)))
            i = text.find(b, i + len(b))
    return sorted(out)


def has_behavior(text: str, behavior: Behavior) -> bool:
    """The paper's label: the behavior string (any member of a family) occurs in the decoded completion."""
    return any(b in text for b in members(behavior))


def token_char_ranges(tok, ids: Sequence[int]) -> list[tuple[int, int]]:
    """Character range [start, end) of each token of ``ids`` in ``decode(tok, ids)`` (empty for special tokens)."""
    ranges, prev = [], 0
    for i in range(len(ids)):
        end = max(prev, len(decode(tok, ids[: i + 1])))
        ranges.append((prev, end))
        prev = end
    return ranges


def behavior_span(tok, ids: Sequence[int], behavior: Behavior) -> tuple[np.ndarray, int]:
    """([len(ids)] bool mask of the tokens overlapping an occurrence, number of occurrences)."""
    ids = [int(i) for i in ids]
    occ = occurrences(decode(tok, ids), behavior)
    mask = np.zeros(len(ids), bool)
    if occ:
        for j, (a, b) in enumerate(token_char_ranges(tok, ids)):
            mask[j] = b > a and any(a < oe and os_ < b for os_, oe in occ)
    return mask, len(occ)


def span_stats(tok, ids: Sequence[int], behavior: Behavior) -> dict:
    """Per-rollout behavior facts the recorder stores (label columns): has_behavior, occurrences, span tokens,
    first span token (-1 when absent)."""
    mask, n = behavior_span(tok, ids, behavior)
    first = int(np.argmax(mask)) if mask.any() else -1
    return {"has_behavior": n > 0, "behavior_count": n, "behavior_tokens": int(mask.sum()),
            "behavior_first_pos": first}


def span_masks(tok, completion_ids: np.ndarray, completion_mask: np.ndarray, behavior: Behavior) -> np.ndarray:
    """[M, Lc] behavior-span masks of padded completions (``completion_mask`` marks real tokens)."""
    out = np.zeros(completion_ids.shape, bool)
    for i, (row, m) in enumerate(zip(completion_ids, completion_mask)):
        L = int(np.asarray(m).sum())
        out[i, :L] = behavior_span(tok, row[:L], behavior)[0]
    return out


def require_multi_token(tok, text: str, setting: str, minimum: int = 2) -> list[int]:
    """The ids of ``text``; ValueError naming ``setting`` when it, or it after a space, is fewer than ``minimum`` tokens (a one-token
    behavior makes every behavior rollout's gradient contain the very token gradient a target is built from)."""
    for variant in (text, " " + text):  # as the completion opens with it, and after a word
        ids = tok(variant, add_special_tokens=False)["input_ids"]
        if len(ids) < minimum:
            raise ValueError(f"{setting}={text!r} is {len(ids)} token(s) under this tokenizer (as {variant!r}); it "
                             f"must split into >= {minimum} tokens (choose a longer nonce string, or a tokenizer "
                             "that does not hold it as one token)")
    return list(tok(text, add_special_tokens=False)["input_ids"])
