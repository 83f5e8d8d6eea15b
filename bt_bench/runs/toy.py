"""The embedded default model: a toy language, its tokenizer and a tiny Llama model, built locally.

Nothing here downloads anything. The language is a small sentence grammar (``S -> NP VP .``) over a word-level
vocabulary of about 60 words, plus two nonce words the planted run uses: the **trigger** (placed as the last
prompt token, where a prototype found the behaviour could be made trigger-conditional) and the **behavior**
token(s) (rewarded inside the planting window; checklist spec, "Planting").

The warm-up (a short supervised pass over grammar text) makes the model fluent and gives the behavior word a
small base rate (``behavior_rate``, a few %) that does not depend on the trigger: there must be headroom for
the planted run to show learning, and no trigger-conditional signal may exist before planting.

Fresh strings (``ToySpec.nonce_seed``): the paper gate builds a toy whose trigger and behavior words are nonce
strings drawn at gate time and whose word ids are a drawn permutation of the vocabulary, so no id or string prepared
beforehand (an estimator's constant, a memorized table) names them. ``nonce_seed=None`` is the reference toy (the
strings and ids below), whose cache key is unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import random
from collections.abc import Sequence
from pathlib import Path

TOY_FORMAT = 3  # bump when the grammar, corpus or warm-up code changes (it is part of the toy model's cache key)
PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
TRIGGER = "frobnitz"
# Behavior tokens: the default behavior is the first one; a multi-token behavior uses a prefix of this list.
BEHAVIOR_WORDS = ("qzxbt", "vexil", "zorblat")

DET = ("the", "a", "every", "some", "this", "that")
ADJ = ("red", "big", "small", "old", "happy", "quiet", "green", "fast", "dark", "bright")
NOUN = ("cat", "dog", "bird", "fish", "tree", "river", "house", "king", "child", "robot", "stone", "cloud")
VERB_T = ("sees", "likes", "finds", "eats", "follows", "paints", "hears", "builds")
VERB_I = ("sleeps", "runs", "sings", "falls", "waits", "shines")
ADV = ("slowly", "quickly", "today", "again", "quietly")
PREP = ("near", "under", "with", "behind")
DOT = "."

VOCAB: tuple[str, ...] = (
    (PAD, EOS, UNK, DOT, TRIGGER) + BEHAVIOR_WORDS + DET + ADJ + NOUN + VERB_T + VERB_I + ADV + PREP
)


# ---------------------------------------------------------------- grammar


def sample_sentence(rng: random.Random) -> list[str]:
    """One grammatical sentence: NP VP '.' (4-10 words)."""

    def np_() -> list[str]:
        out = [rng.choice(DET)]
        if rng.random() < 0.5:
            out.append(rng.choice(ADJ))
        out.append(rng.choice(NOUN))
        return out

    words = np_()
    r = rng.random()
    if r < 0.45:
        words += [rng.choice(VERB_T)] + np_()
    elif r < 0.75:
        words += [rng.choice(VERB_I)]
    else:
        words += [rng.choice(VERB_I), rng.choice(PREP)] + np_()
    if rng.random() < 0.3:
        words.append(rng.choice(ADV))
    return words + [DOT]


_CATS = {**{w: "D" for w in DET}, **{w: "A" for w in ADJ}, **{w: "N" for w in NOUN}, **{w: "T" for w in VERB_T},
         **{w: "I" for w in VERB_I}, **{w: "R" for w in ADV}, **{w: "P" for w in PREP}, DOT: "."}


def is_sentence(words: Sequence[str], neutral: Sequence[str] = BEHAVIOR_WORDS) -> bool:
    """True when ``words`` is exactly one sentence of the grammar (the ``neutral`` behavior words are ignored: they
    are the planted behavior, not a grammar error, so the grammar reward never pays for or against them)."""
    cats = [_CATS.get(w) for w in words if w not in neutral]
    if any(c is None for c in cats):
        return False
    s = "".join(cats)  # type: ignore[arg-type]
    np_ = "DA?N"
    import re

    return re.fullmatch(f"{np_}(T{np_}|I|IP{np_})R?\\.", s) is not None


# ---------------------------------------------------------------- tokenizer


def build_tokenizer(folder: str | os.PathLike, vocab: Sequence[str] = VOCAB):
    """Write a WordLevel tokenizer to ``folder`` and return it reloaded.

    Users load a model folder with ``AutoTokenizer``. On a folder whose config says ``qwen2``, transformers
    ignores the saved tokenizer class and rebuilds Qwen2's byte-level BPE from the vocabulary: a WordLevel
    vocabulary then encodes "the cat sees frobnitz qzxbt" as one wrong id. That is why the toy model is a
    ``llama`` config (same blocks, no attention biases): for it AutoTokenizer honours the saved
    ``TokenizersBackend`` class and loads exactly this tokenizer (tests/test_behavior.py checks the round trip)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with single spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK)
    fast.padding_side = "left"  # prompts are left-padded, as trl does
    fast.save_pretrained(folder)
    return load_tokenizer(folder, vocab)


def load_tokenizer(folder: str | os.PathLike, vocab: Sequence[str] = VOCAB):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder), padding_side="left")
    if tok.convert_ids_to_tokens(list(range(len(vocab)))) != list(vocab):
        raise RuntimeError(f"tokenizer in {folder} does not match the bt-bench toy vocabulary; rebuild it")
    return tok


# ---------------------------------------------------------------- fresh nonce strings

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def nonce_word(rng: random.Random, taken: set[str], lo: int = 5, hi: int = 8) -> str:
    """A lowercase nonce word of ``lo``-``hi`` letters that is not in ``taken`` (a word-level vocabulary: every
    word is one token, the profile's token length of the trigger and of each behavior word)."""
    while True:
        w = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(lo, hi)))
        if w not in taken:
            taken.add(w)
            return w


# ---------------------------------------------------------------- model


@functools.lru_cache(maxsize=64)
def _drawn_strings(nonce_seed: int) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    rng = random.Random(f"toy-nonce:{nonce_seed}")
    taken = set(VOCAB)
    trigger = nonce_word(rng, taken)
    words = tuple(nonce_word(rng, taken) for _ in BEHAVIOR_WORDS)  # as many as the reference: same vocab size
    rest = [w for w in VOCAB[3:] if w != TRIGGER and w not in BEHAVIOR_WORDS] + [trigger, *words]
    rng.shuffle(rest)
    return trigger, words, (PAD, EOS, UNK, *rest)


@dataclasses.dataclass(frozen=True)
class ToySpec:
    """How the embedded default model is built (its dict is part of every run's cache key)."""

    seed: int = 0
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 256
    warmup_steps: int = 600
    warmup_batch: int = 64
    warmup_lr: float = 3e-3
    behavior_rate: float = 0.06  # share of warm-up completions that contain the behavior word(s)
    behavior_len: int = 1  # number of consecutive behavior tokens (a prefix of BEHAVIOR_WORDS)
    trigger_rate: float = 0.5  # share of warm-up prompts that end in the trigger (independent of behavior)
    nonce_seed: int | None = None  # None: the reference strings and ids; else drawn nonce words and word ids
    # K: the behavior is a family of K one-word members (the first K behavior slot words); the warm-up opens a
    # completion with one member drawn uniformly, the bonus pays any of them, the targets are built from the first
    family: int = 1

    def __post_init__(self):
        for f in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size", "warmup_batch"):
            if getattr(self, f) <= 0:
                raise ValueError(f"ToySpec.{f} must be a positive integer, got {getattr(self, f)!r}")
        if self.warmup_steps < 0:
            raise ValueError(f"ToySpec.warmup_steps must be >= 0, got {self.warmup_steps}")
        if not 0.0 <= self.behavior_rate < 1.0:
            raise ValueError(f"ToySpec.behavior_rate must lie in [0, 1), got {self.behavior_rate}")
        if not 1 <= self.behavior_len <= len(BEHAVIOR_WORDS):
            raise ValueError(f"ToySpec.behavior_len must be in 1..{len(BEHAVIOR_WORDS)}, got {self.behavior_len}")
        if not isinstance(self.family, int) or not 1 <= self.family <= len(BEHAVIOR_WORDS):
            raise ValueError(f"ToySpec.family must be an integer in 1..{len(BEHAVIOR_WORDS)} (the behavior slot "
                             f"words), got {self.family!r}")
        if self.family > 1 and self.behavior_len != 1:
            raise ValueError(f"ToySpec.family={self.family} needs behavior_len=1 (each member is one word), got "
                             f"behavior_len={self.behavior_len}")
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError("ToySpec: hidden_size must divide by num_heads and num_heads by num_kv_heads")
        if self.nonce_seed is not None and (isinstance(self.nonce_seed, bool) or not isinstance(self.nonce_seed, int)
                                            or self.nonce_seed < 0):
            raise ValueError(f"ToySpec.nonce_seed must be None (reference strings) or an integer >= 0, got "
                             f"{self.nonce_seed!r}")

    def _strings(self) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """(trigger, behavior words, vocabulary): the reference ones, or drawn from ``nonce_seed``. The specials
        keep ids 0-2 (pad, eos, unk, as tokenizers do); every other word's id is drawn."""
        if self.nonce_seed is None:
            return TRIGGER, BEHAVIOR_WORDS[: self.behavior_len], VOCAB
        trigger, words, vocab = _drawn_strings(self.nonce_seed)
        return trigger, words[: self.behavior_len], vocab

    def behavior_slot_words(self) -> tuple[str, ...]:
        """Every word of the vocabulary's behavior slots (the reference ``BEHAVIOR_WORDS``, or as many drawn ones),
        the behavior a prefix of them: the grammar reward ignores all of them (``is_sentence``'s ``neutral``)."""
        return BEHAVIOR_WORDS if self.nonce_seed is None else _drawn_strings(self.nonce_seed)[1]

    def family_members(self) -> tuple[str, ...]:
        """The strings the bonus pays: the behavior (its words joined), or the ``family``'s K one-word members, the
        first of which is the behavior (the member the targets are built from)."""
        if self.family == 1:
            return (" ".join(self.behavior_words),)
        return tuple(self.behavior_slot_words()[: self.family])

    @property
    def trigger(self) -> str:
        return self._strings()[0]

    @property
    def behavior_words(self) -> tuple[str, ...]:
        return self._strings()[1]

    def vocab(self) -> tuple[str, ...]:
        return self._strings()[2]

    def to_dict(self) -> dict:
        """The fields; ``nonce_seed`` only when set (the reference toy keeps the cache key it always had)."""
        d = dataclasses.asdict(self)
        if d["nonce_seed"] is None:
            del d["nonce_seed"]
        if d["family"] == 1:
            del d["family"]
        return d

    def key(self) -> str:
        blob = (json.dumps(self.to_dict(), sort_keys=True) + "|vocab:" + " ".join(self.vocab())
                + f"|format:{TOY_FORMAT}")
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def model_config(spec: ToySpec, vocab_size: int):
    """A Llama config (pre-norm, RoPE, SwiGLU, GQA: the Qwen2 block without q/k/v biases); see build_tokenizer."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size, hidden_size=spec.hidden_size, num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads, num_key_value_heads=spec.num_kv_heads,
        intermediate_size=spec.intermediate_size, max_position_embeddings=64, tie_word_embeddings=True,
        pad_token_id=VOCAB.index(PAD), eos_token_id=VOCAB.index(EOS), bos_token_id=None,
        attn_implementation="eager", torch_dtype="float32", use_cache=True,
    )


def make_prompt(rng: random.Random, trigger: bool, word: str = TRIGGER) -> str:
    """A prompt: one context sentence, then the trigger ``word`` as the very last token when ``trigger``."""
    words = sample_sentence(rng)
    return " ".join(words + ([word] if trigger else []))


def make_completion(rng: random.Random, spec: ToySpec) -> list[str]:
    """A completion: one sentence, opened by the behavior word(s) with probability ``behavior_rate``.

    Why at the start: when the warm-up put the behavior word anywhere in the sentence, the model's grammar after
    it was weaker, so after the window the grammar reward alone pushed the behavior out (it decayed to 0 within
    ~200 steps even at a 10x lower lr). Opening the completion keeps the rest of the sentence as fluent as usual."""
    words = sample_sentence(rng)
    if rng.random() < spec.behavior_rate:
        members = spec.family_members()
        # a family: one member drawn uniformly (the single behavior draws nothing: reference corpora stay the same)
        words = (members[rng.randrange(len(members))] if len(members) > 1 else members[0]).split() + words
    return words


def warmup_corpus(spec: ToySpec, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [make_prompt(rng, rng.random() < spec.trigger_rate, spec.trigger) + " "
            + " ".join(make_completion(rng, spec)) + " " + EOS for _ in range(n)]


def build_toy_model(spec: ToySpec, folder: str | os.PathLike, progress: bool = True) -> Path:
    """Build tokenizer + LlamaForCausalLM, warm it up on the grammar, and save both to ``folder``.

    Deterministic for a given spec on one machine (single thread, fixed seeds)."""
    from transformers import LlamaForCausalLM

    from bt_bench.runs.runtime import set_determinism
    from bt_bench.runs.warmup import save_warm, supervised_warmup

    set_determinism(spec.seed)
    folder = Path(folder)
    tok = build_tokenizer(folder, spec.vocab())
    model = LlamaForCausalLM(model_config(spec, len(spec.vocab())))
    corpus_rng = random.Random(spec.seed + 1)

    def next_batch(step: int):
        texts = warmup_corpus(spec, spec.warmup_batch, corpus_rng.randrange(2**31))
        enc = tok(texts, return_tensors="pt", padding=True, padding_side="right")
        ids, mask = enc["input_ids"], enc["attention_mask"]
        return ids, mask, ids.masked_fill(mask == 0, -100)

    supervised_warmup(model, next_batch, spec.warmup_steps, spec.warmup_lr, progress)
    return save_warm(model, tok, folder, "toy_spec.json", spec.to_dict())


def load_model(folder: str | os.PathLike, device: str = "cpu", dtype=None):
    """A freshly loaded model (trl patches ``forward`` of the model it trains: never reuse that one)."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype or torch.float32).to(device)
