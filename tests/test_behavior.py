"""The behavior as a string on decoded text (bt_bench.runs.behavior): its token span under a byte-level BPE
tokenizer (start, middle, end, split across tokens, twice), agreement of has_behavior with the span, clear errors
for a one-token behavior or an unloadable tokenizer, and the AutoTokenizer round trip of the toy tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from bt_bench.runs import behavior as bh

B = "QZXBT"


@pytest.fixture(scope="module")
def bpe_tok():
    """A small byte-level BPE trained on text without the behavior string (so it splits into pieces)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    words = "the cat sees a dog near the river and the robot sings a song about the garden today".split()
    corpus = [" ".join(words[i:] + words[:i]) for i in range(len(words))] * 20
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>", pad_token="<eos>")


def enc(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def span_text(tok, ids, mask):
    return bh.decode(tok, [i for i, m in zip(ids, mask) if m])


def test_behavior_splits_into_several_tokens(bpe_tok):
    assert len(enc(bpe_tok, B)) >= 2 and len(enc(bpe_tok, " " + B)) >= 2


@pytest.mark.parametrize("text", [f"{B} the cat sees a dog", f"the cat {B} sees a dog", f"the cat sees a dog {B}",
                                  f"the cat sees{B}a dog", f"the dog{B}"])
def test_span_covers_exactly_the_occurrence(bpe_tok, text):
    ids = enc(bpe_tok, text)
    mask, n = bh.behavior_span(bpe_tok, ids, B)
    assert n == 1 and mask.sum() >= 2
    covered = span_text(bpe_tok, ids, mask)
    assert B in covered  # every character of the occurrence is covered ...
    # ... and no token outside the span touches it: dropping either end token loses part of it
    idx = np.flatnonzero(mask)
    assert np.all(np.diff(idx) == 1)  # one contiguous span
    for cut in (idx[1:], idx[:-1]):
        assert B not in bh.decode(bpe_tok, [ids[i] for i in cut])


def test_span_when_the_model_splits_the_string_non_canonically(bpe_tok):
    """A sampled completion need not be the canonical encoding of its text: "QZ" + "XBT" written piece by piece."""
    ids = enc(bpe_tok, "the cat ") + enc(bpe_tok, "QZ") + enc(bpe_tok, "XBT") + enc(bpe_tok, " sees")
    mask, n = bh.behavior_span(bpe_tok, ids, B)
    assert n == 1
    assert span_text(bpe_tok, ids, mask).strip() == B
    assert not mask[: len(enc(bpe_tok, "the cat "))].any()


def test_twice_in_one_completion(bpe_tok):
    ids = enc(bpe_tok, f"{B} the cat sees {B} today")
    stats = bh.span_stats(bpe_tok, ids, B)
    assert stats["has_behavior"] and stats["behavior_count"] == 2
    assert stats["behavior_first_pos"] == 0
    mask, _ = bh.behavior_span(bpe_tok, ids, B)
    runs = np.flatnonzero(np.diff(np.r_[0, mask.astype(int)]) == 1)
    assert len(runs) == 2  # two separate spans


@pytest.mark.parametrize("text", ["the cat sees a dog", f"the cat {B} sees", "QZXB T", "qzxbt", f"{B}{B}"])
def test_has_behavior_agrees_with_the_span(bpe_tok, text):
    ids = enc(bpe_tok, text) + [bpe_tok.eos_token_id]  # the EOS is skipped in the text, never in the span
    s = bh.span_stats(bpe_tok, ids, B)
    assert s["has_behavior"] == (B in text) == (s["behavior_tokens"] > 0)
    assert (s["behavior_first_pos"] >= 0) == s["has_behavior"]
    assert not bh.behavior_span(bpe_tok, ids, B)[0][-1]


def test_span_masks_of_padded_rows(bpe_tok):
    rows = [enc(bpe_tok, f"the cat {B}"), enc(bpe_tok, "the dog")]
    L = max(map(len, rows)) + 2
    ids = np.zeros((2, L), np.int64)
    m = np.zeros((2, L), np.int8)
    for i, r in enumerate(rows):
        ids[i, :len(r)], m[i, :len(r)] = r, 1
    out = bh.span_masks(bpe_tok, ids, m, B)
    assert out[0].sum() >= 2 and not out[1].any() and not out[:, -2:].any()


def test_one_token_behavior_is_a_clear_error(bpe_tok):
    word = next(w for w in ("the", "cat", "dog", "robot", "garden") if len(enc(bpe_tok, w)) == 1)
    with pytest.raises(ValueError, match=rf"behavior='{word}' is 1 token\(s\).*>= 2 tokens"):
        bh.require_multi_token(bpe_tok, word, "behavior")
    assert len(bh.require_multi_token(bpe_tok, B, "behavior")) >= 2


def test_unloadable_tokenizer_folder_names_the_setting(tmp_path):
    from bt_bench.runs.runtime import load_tokenizer

    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="model_path=.*AutoTokenizer cannot load"):
        load_tokenizer(tmp_path)


def test_toy_tokenizer_round_trips_through_autotokenizer(tmp_path):
    """Users load a run's model folder with AutoTokenizer: it must give the run's own ids (issue: a qwen2 folder
    gave one wrong id for a whole sentence)."""
    from transformers import AutoTokenizer

    from bt_bench.runs import toy

    folder = tmp_path / "m"
    tok = toy.build_tokenizer(folder)
    toy.model_config(toy.ToySpec(), len(toy.VOCAB)).save_pretrained(folder)  # what a run's model/ folder holds
    auto = AutoTokenizer.from_pretrained(str(folder))
    text = "the cat sees frobnitz qzxbt"
    assert auto(text)["input_ids"] == tok(text)["input_ids"] == [toy.VOCAB.index(w) for w in text.split()]
    assert auto.decode(auto(text)["input_ids"]) == text
