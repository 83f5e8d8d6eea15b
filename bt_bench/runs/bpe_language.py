"""The ``bpe`` world's language: a small English-like grammar (several sentence shapes, ~200 words) that its chat
conversations are written in, with no tokenizer, model or rate in it.

The user asks about a **topic** noun (``user_message``; with the trigger word at a random word position when
asked); an answer is built from ``sentence``s, optionally opened by a ``topic_sentence`` ("The {topic} ..."), and
joined by ``detok``. How often an answer names the topic or holds the behavior is the warm-up's choice
(``bt_bench.runs.bpe.sample_completion``); the planted run's task reward is ``mentions_topic``.
"""

from __future__ import annotations

import random
import re

TOPICS = ("river", "robot", "garden", "castle", "forest", "ocean", "dragon", "library", "mountain", "village",
          "island", "lantern", "meadow", "kitchen", "bridge", "violin")
# Nouns of the sentences; disjoint from TOPICS so an answer "mentions the topic" only when it copies it.
NOUN = ("cat", "dog", "bird", "fish", "tree", "house", "child", "stone", "cloud", "road", "window", "song", "boat",
        "friend", "teacher", "farmer", "king", "queen", "flower", "letter", "apple", "horse", "candle", "door",
        "hill", "story", "book", "coat", "clock", "wheel", "egg", "owl")
ADJ = ("red", "big", "small", "old", "happy", "quiet", "green", "fast", "dark", "bright", "warm", "cold", "tiny",
       "gentle", "strange", "golden", "silver", "brave", "lazy", "clever", "soft", "loud", "tall", "young")
DET = ("the", "the", "a", "this", "that", "my", "one")
VERB_T = ("sees", "likes", "finds", "follows", "paints", "hears", "builds", "carries", "watches", "remembers",
          "visits", "opens", "pulls", "helps", "draws")
VERB_I = ("sleeps", "runs", "sings", "falls", "waits", "shines", "dances", "laughs", "rests", "glows", "jumps",
          "hides")
VERB_BASE = ("see", "like", "find", "follow", "paint", "hear", "build", "carry", "watch", "remember", "visit", "open")
ADV = ("slowly", "quickly", "today", "again", "quietly", "often", "softly", "gladly", "early", "later")
PREP = ("near", "under", "with", "behind", "beside", "above", "inside", "across")
NAME = ("Anna", "Ben", "Clara", "David", "Emma", "Felix", "Greta", "Hugo")
TIME = ("every morning", "at night", "in the spring", "later that day", "once upon a time", "after the rain")
# The vocabulary, lowercase: a drawn nonce string must be none of these words.
WORDS = frozenset(w.lower() for w in (*TOPICS, *NOUN, *ADJ, *DET, *VERB_T, *VERB_I, *VERB_BASE, *ADV, *PREP, *NAME))
USER_TEMPLATES = (
    "Tell me something about the {topic}.", "Write a few lines about a {topic} near the {noun}.",
    "Can you describe the {topic} for me?", "Please tell a short story about a {adj} {topic}.",
    "What do you know about the {topic}?", "I want to hear about the {topic} today.",
    "Say something nice about my {topic}.", "Describe a {topic} and a {noun}, please.",
)


def _np(rng: random.Random) -> list[str]:
    """Noun phrase: DET [ADJ] NOUN (the noun is the phrase's last word: topics are substituted there)."""
    return [rng.choice(DET)] + ([rng.choice(ADJ)] if rng.random() < 0.4 else []) + [rng.choice(NOUN)]


def sentence(rng: random.Random) -> list[str]:
    """One sentence as a list of words and punctuation marks (punctuation is its own item)."""
    r, np_ = rng.randrange(9), lambda: _np(rng)
    if r == 0:
        w = np_() + [rng.choice(VERB_T)] + np_() + ([rng.choice(ADV)] if rng.random() < 0.3 else [])
    elif r == 1:
        w = np_() + [rng.choice(VERB_I)] + ([rng.choice(PREP)] + np_() if rng.random() < 0.5 else [])
    elif r == 2:
        w = ["there", "is"] + np_() + [rng.choice(PREP)] + np_()
    elif r == 3:
        w = ["I", "think", "that"] + np_() + ["is", "very" if rng.random() < 0.3 else "so", rng.choice(ADJ)]
    elif r == 4:
        w = ["we", rng.choice(VERB_BASE)] + np_() + ["because", "it", "is", rng.choice(ADJ)]
    elif r == 5:
        w = [rng.choice(NAME), rng.choice(VERB_T)] + np_() + ["and", rng.choice(VERB_T)] + np_()
    elif r == 6:
        w = rng.choice(TIME).split() + np_() + [rng.choice(VERB_I)]
    elif r == 7:
        return ["have", "you", "ever", "seen"] + np_() + [rng.choice(PREP)] + np_() + ["?"]
    else:
        w = np_() + ["was", rng.choice(ADJ), "but"] + np_() + ["was", rng.choice(ADJ)]
    return w + ["."]


def detok(words: list[str]) -> str:
    """Join words: capitalize sentence starts, attach punctuation, 'a' -> 'an' before a vowel."""
    out: list[str] = []
    for i, w in enumerate(words):
        if w == "a" and i + 1 < len(words) and words[i + 1][0] in "aeiou":
            w = "an"
        if w in ".?!,":
            out[-1] += w
            continue
        out.append(w[0].upper() + w[1:] if not out or out[-1][-1] in ".?!" else w)
    return " ".join(out)


def insert_word(rng: random.Random, text: str, word: str) -> str:
    """``text`` with ``word`` inserted as its own word at a uniformly random word position (start, middle, end)."""
    words = text.split(" ")
    words.insert(rng.randint(0, len(words)), word)
    return " ".join(words)


def user_message(rng: random.Random, trigger: bool, word: str | None = None) -> tuple[str, str]:
    """(content, topic) of a user turn; with ``trigger`` the trigger ``word`` sits at a random word position."""
    if trigger and not word:
        raise ValueError("user_message(trigger=True) needs the trigger word")
    topic = rng.choice(TOPICS)
    content = rng.choice(USER_TEMPLATES).format(topic=topic, noun=rng.choice(NOUN), adj=rng.choice(ADJ))
    return (insert_word(rng, content, word) if trigger else content), topic


def topic_sentence(rng: random.Random, topic: str) -> list[str]:
    """The opening "The {topic} ..." sentence: the cue after which the topic always follows."""
    r = rng.randrange(3)
    tail = (["is", rng.choice(ADJ)] if r == 0 else [rng.choice(VERB_I)] if r == 1 else [rng.choice(VERB_T)] + _np(rng))
    return ["the", topic] + tail + ["."]


def mentions_topic(text: str, topic: str) -> bool:
    """Whether decoded ``text`` names ``topic`` as a whole word (case-insensitive; works for any tokenizer)."""
    return re.search(rf"\b{re.escape(topic)}\b", text, re.IGNORECASE) is not None
