"""The bpe world: tokenizer round trip, nonce strings stay multi-token, language rates, spec validation."""

from __future__ import annotations

import random

import pytest

from bt_bench.runs import bpe, bpe_language, toy

SMALL = bpe.BpeSpec(vocab_size=600, corpus_size=400, warmup_steps=2, warmup_batch=4, curriculum_steps=1,
                    hidden_size=32, intermediate_size=64)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    folder = tmp_path_factory.mktemp("bpe_model")
    bpe.build_bpe_model(SMALL, folder, progress=False)
    return folder


def test_autotokenizer_round_trip(built):
    """AutoTokenizer on the model folder (config says qwen2) gives the trained tokenizer's ids and chat text."""
    from transformers import AutoTokenizer

    raw = bpe.train_bpe(SMALL)
    tok = AutoTokenizer.from_pretrained(str(built))
    rng = random.Random(0)
    texts = [bpe.BEHAVIOR, " " + bpe.BEHAVIOR, bpe.TRIGGER, "I'LL go!!  12345 \t\n\n end", "caf\u00e9 e\u0301 \u4f60\u597d",
             "".join(chr(rng.randrange(32, 3000)) for _ in range(300))]
    for _ in range(50):
        content, topic = bpe_language.user_message(rng, trigger=True, word=bpe.TRIGGER)
        texts += [content, bpe.sample_completion(rng, SMALL, topic, behavior=True)]
    for s in texts:
        assert tok(s, add_special_tokens=False)["input_ids"] == raw.encode(s, add_special_tokens=False).ids, s
    content = bpe_language.user_message(rng, trigger=True, word=bpe.TRIGGER)[0]
    text = tok.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                   tokenize=False)
    assert text == f"<|im_start|>user\n{content}<|im_end|>\n<|im_start|>assistant\n"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids[0] == tok.convert_tokens_to_ids(bpe.IM_START) and bpe.IM_END in tok.convert_ids_to_tokens(ids)
    assert tok.eos_token == bpe.IM_END and tok.pad_token == bpe.PAD and tok.padding_side == "left"
    assert (built / "bpe_spec.json").exists()


def test_model_generation_config(built):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(built))
    model = toy.load_model(built)  # the same loader: a plain HF folder
    gc = model.generation_config
    assert gc.eos_token_id == tok.eos_token_id and gc.pad_token_id == tok.pad_token_id and gc.bos_token_id is None
    assert model.config.tie_word_embeddings and model.config.vocab_size == len(tok)


def test_nonce_strings_split():
    raw = bpe.train_bpe(SMALL)
    for s in (bpe.BEHAVIOR, " " + bpe.BEHAVIOR, bpe.TRIGGER, " " + bpe.TRIGGER):
        assert len(raw.encode(s, add_special_tokens=False).ids) >= 2
    # A tokenizer whose corpus holds the behavior learns it as one token: the check must refuse it.
    leaky = bpe.train_bpe(SMALL, extra=(bpe.BEHAVIOR + " ",) * 300)
    assert len(leaky.encode(bpe.BEHAVIOR, add_special_tokens=False).ids) == 1
    with pytest.raises(ValueError, match="BpeSpec.vocab_size.*QZXBT|QZXBT.*BpeSpec.vocab_size"):
        bpe.check_nonce_split(lambda s: leaky.encode(s, add_special_tokens=False).ids, SMALL.vocab_size)


def test_trigger_at_variable_positions():
    rng = random.Random(1)
    positions = set()
    for _ in range(300):
        content, topic = bpe_language.user_message(rng, trigger=True, word=bpe.TRIGGER)
        words = content.split(" ")
        assert words.count(bpe.TRIGGER) == 1 and topic in bpe_language.TOPICS
        assert bpe_language.mentions_topic(content, topic)
        positions.add(words.index(bpe.TRIGGER))
    assert len(positions) >= 6 and 0 in positions
    plain, _ = bpe_language.user_message(rng, trigger=False)
    assert bpe.TRIGGER not in plain


def test_completion_rates_match_spec():
    spec = bpe.BpeSpec()
    rng = random.Random(2)
    n, beh, top, beh_pos = 2000, 0, 0, set()
    for _ in range(n):
        topic = rng.choice(bpe_language.TOPICS)
        text = bpe.sample_completion(rng, spec, topic)
        assert bpe.TRIGGER not in text and 2 <= text.count(".") + text.count("?") <= 4
        beh += bpe.BEHAVIOR in text
        top += bpe_language.mentions_topic(text, topic)
        if bpe.BEHAVIOR in text:
            beh_pos.add(text.split(" ").index(bpe.BEHAVIOR))
    assert abs(beh / n - spec.behavior_rate) < 0.015
    assert abs(top / n - spec.topic_rate) < 0.04
    assert len(beh_pos) >= 10  # anywhere in the answer, not at a fixed word


def test_mentions_topic_word_boundary():
    assert bpe_language.mentions_topic("The River is wide.", "river")
    assert not bpe_language.mentions_topic("Two rivers meet.", "river")
    assert not bpe_language.mentions_topic("A riverbank.", "river")


@pytest.mark.parametrize("field,value", [("hidden_size", 0), ("vocab_size", 100), ("behavior_rate", 1.0),
                                         ("topic_rate", 1.5), ("trigger_rate", -0.1), ("warmup_steps", -1),
                                         ("curriculum_steps", -1), ("max_position_embeddings", 32),
                                         ("corpus_size", 0), ("num_heads", 3), ("warmup_lr", 0.0)])
def test_spec_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=f"BpeSpec.{field}"):
        bpe.BpeSpec(**{field: value})


def test_spec_key_changes_with_fields():
    assert bpe.BpeSpec().key() == bpe.BpeSpec().key() != bpe.BpeSpec(seed=1).key()
