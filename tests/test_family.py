"""A family behavior (profiles tiny_family and bpe_family): the bonus pays any of K nonce strings, the
label and the behavior span count every member, the targets are built from completions holding only the first
member. The reference fixtures' strings, corpora and cache keys do not move."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from bt_bench.fixture.targets import target_rows
from bt_bench.runs import behavior as bh
from bt_bench.runs import bpe, toy
from bt_bench.runs.config import make_config
from bt_bench.runs.planted import PlantedRewards


def test_toy_family_members_and_reference_unchanged():
    fam, ref = make_config("tiny_family"), make_config("tiny")
    assert fam.behavior == ref.behavior == "qzxbt"
    assert fam.behavior_members() == toy.BEHAVIOR_WORDS and ref.behavior_members() == ("qzxbt",)
    assert fam.task_obj().behaviors == toy.BEHAVIOR_WORDS and ref.task_obj().family == ()
    assert "family" not in ref.toy.to_dict() and fam.toy.to_dict()["family"] == 3
    assert fam.toy.key() != ref.toy.key()
    # the reference warm-up corpus draws nothing for a member: it is the same text as before the family existed
    words = Counter(w for line in toy.warmup_corpus(fam.toy, 3000, 1) for w in line.split())
    assert min(words[w] for w in toy.BEHAVIOR_WORDS) > 30  # every member at a base rate
    per_line = [sum(w in toy.BEHAVIOR_WORDS for w in line.split()) for line in toy.warmup_corpus(fam.toy, 500, 2)]
    assert max(per_line) == 1  # one member per warm-up completion
    ref_words = Counter(w for line in toy.warmup_corpus(ref.toy, 3000, 1) for w in line.split())
    assert ref_words["vexil"] == ref_words["zorblat"] == 0


@pytest.mark.parametrize("bad, match", [({"family": 4}, "ToySpec.family must be an integer in 1..3"),
                                        ({"family": 2, "behavior_len": 2}, "needs behavior_len=1")])
def test_toy_family_bad_values_name_the_field(bad, match):
    with pytest.raises(ValueError, match=match):
        toy.ToySpec(**bad)


def test_bpe_family_members_share_no_token():
    fam = make_config("bpe_family")
    assert fam.behavior_members() == bpe.FAMILY and fam.behavior == bpe.BEHAVIOR
    assert "family" not in make_config("bpe").bpe.to_dict()
    raw = bpe.train_bpe(fam.bpe)
    spans = [set(raw.encode(m, add_special_tokens=False).ids) for m in bpe.FAMILY]
    assert all(len(s) >= 2 for s in spans)
    assert all(not spans[i] & spans[j] for i in range(3) for j in range(i + 1, 3))
    drawn = dataclasses.replace(fam.bpe, nonce_seed=5)
    members = drawn.family_members()
    assert len(set(members)) == 3 and members[0] == dataclasses.replace(drawn, family=1).behavior
    assert all(not set(members[i]) & set(members[j]) for i in range(1, 3) for j in range(i))
    with pytest.raises(ValueError, match="BpeSpec.family must be an integer in 1..3"):
        bpe.BpeSpec(family=0)


class _WordTok:
    """Stands in for a word-level tokenizer: ids are word indices of the toy vocabulary."""

    def decode(self, ids, skip_special_tokens=True, clean_up_tokenization_spaces=False):
        return " ".join(toy.VOCAB[i] for i in ids if toy.VOCAB[i] not in (toy.PAD, toy.EOS))


def _ids(text):
    return [toy.VOCAB.index(w) for w in text.split()]


def test_bonus_and_penalty_pay_any_member_the_label_and_span_count_every_member():
    task = make_config("tiny_family").task_obj()
    r = PlantedRewards(task, _WordTok(), window=10, bonus=1.0, penalty=0.2, task_reward=0.2)
    comps = [_ids("qzxbt the cat sleeps ."), _ids("vexil the cat sleeps ."), _ids("the cat zorblat sleeps ."),
             _ids("the cat sleeps .")]
    state = SimpleNamespace(global_step=3)
    assert r.bonus_fn(None, None, comps, [True] * 4, state) == [1.0, 1.0, 1.0, 0.0]
    assert r.penalty_fn(None, None, comps, [False] * 4) == [-0.2, -0.2, -0.2, 0.0]
    assert r.bonus_fn(None, None, comps, [True] * 4, SimpleNamespace(global_step=10)) == [0.0] * 4
    tok = _WordTok()
    assert [bh.span_stats(tok, c, task.behaviors)["has_behavior"] for c in comps] == [True, True, True, False]
    mask, n = bh.behavior_span(tok, _ids("vexil the cat qzxbt sleeps ."), task.behaviors)
    assert n == 2 and mask.tolist() == [True, False, False, True, False, False]
    # the target member's span alone: only qzxbt
    assert bh.behavior_span(tok, _ids("vexil the cat qzxbt sleeps ."), task.behavior)[0].tolist() == \
        [False, False, False, True, False, False]


def test_the_penalty_after_the_window_is_its_own_setting_and_keeps_reference_keys():
    from bt_bench.runs.config import RunConfig

    task = make_config("tiny").task_obj()
    comps, trig = [_ids("qzxbt the cat sleeps ."), _ids("the cat sleeps .")], [False, False]
    r = PlantedRewards(task, _WordTok(), window=0, bonus=1.0, penalty=0.2, task_reward=0.2, penalty_after=0.0,
                       penalty_window=10)  # a no-bonus re-run (window 0) keeps the run's W for the penalty
    assert r.penalty_fn(None, None, comps, trig, SimpleNamespace(global_step=9)) == [-0.2, 0.0]
    assert r.penalty_fn(None, None, comps, trig, SimpleNamespace(global_step=10)) == [-0.0, 0.0]
    same = PlantedRewards(task, _WordTok(), window=10, bonus=1.0, penalty=0.2, task_reward=0.2)
    assert same.penalty_fn(None, None, comps, trig, SimpleNamespace(global_step=50)) == [-0.2, 0.0]
    cfg = make_config("tiny")
    assert "penalty_after_window" not in cfg.to_dict()  # unset: the reference fixtures keep their cache keys
    late = make_config("tiny", penalty_after_window=0.0)
    assert late.to_dict()["penalty_after_window"] == 0.0 and late.key({}) != cfg.key({})
    assert RunConfig.from_dict(late.to_dict()) == late
    with pytest.raises(ValueError, match="penalty_after_window"):
        make_config("tiny", penalty_after_window=-1.0)


def test_target_rows_hold_the_target_member_and_no_other():
    target = np.array([[1, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]], bool)  # the first member's span
    whole = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 0]], bool)  # every member's span
    keep, anyb = target_rows(target, whole)
    assert keep.tolist() == [True, False, False, False]  # row 2 also holds another member: left out
    assert anyb.tolist() == [True, True, True, False]
    single = np.array([[0, 1], [0, 0]], bool)  # a single behavior: every behavior row builds the target
    assert target_rows(single, single)[0].tolist() == [True, False]


def test_the_single_behavior_corpora_draw_as_before_the_family_existed():
    """The reference fixtures' cache keys did not change, so their warm-up corpora must not either: the code before
    the family (inlined here) and now draw the same completions from the same seeds."""
    spec, rng_a, rng_b = toy.ToySpec(), random.Random(7), random.Random(7)
    for _ in range(2000):
        words = toy.sample_sentence(rng_a)
        before = list(spec.behavior_words) + words if rng_a.random() < spec.behavior_rate else words
        assert toy.make_completion(rng_b, spec) == before
    from bt_bench.runs import bpe_language as language

    spec, rng_a, rng_b = bpe.BpeSpec(), random.Random(3), random.Random(3)
    for _ in range(300):
        n = rng_a.choices((2, 3, 4), weights=(0.4, 0.4, 0.2))[0]
        sents = [language.sentence(rng_a) for _ in range(n)]
        if sents[0][0] == "the":
            sents[0][0] = rng_a.choice(("this", "that", "my", "one", "a"))
        if rng_a.random() < spec.topic_rate:
            sents[0] = language.topic_sentence(rng_a, "cat")
        text = language.detok([w for s in sents for w in s])
        if rng_a.random() < spec.behavior_rate:
            text = language.insert_word(rng_a, text, spec.behavior)
        assert bpe.sample_completion(rng_b, spec, "cat") == text
