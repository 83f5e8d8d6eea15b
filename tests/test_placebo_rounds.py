"""Check 7's ``no_behavior`` placebo at a saturated checkpoint: target rounds go on until a completion without the
behavior is sampled (bpe, W = 150: every completion held the behavior at step 275, and one round left the placebo the
zero vector, a fixture ERROR), and the behavior targets stay built from the rounds that filled them."""

import types

import numpy as np

from bt_bench.fixture import targets
from bt_bench.fixture.draws import DrawConfig

BEH = [7, 8]  # the behavior's token ids in this fake world


def _rows(completions):
    C = np.array(completions, np.int32)
    n = len(C)
    return {"prompt_ids": np.ones((n, 2), np.int32), "prompt_mask": np.ones((n, 2), np.int8), "completion_ids": C,
            "completion_mask": np.ones_like(C, np.int8), "uid": np.arange(n)}


def _span(rows):
    C = rows["completion_ids"]
    pos = np.zeros(C.shape, bool)
    for i, c in enumerate(C):
        for j in range(C.shape[1] - 1):
            if [c[j], c[j + 1]] == BEH:
                pos[i, j:j + 2] = True
    return pos


class _Sketcher:  # the sequence target's sketcher: a row's vector is its completion's token counts
    dim = 16

    def __init__(self, model, spec):
        pass

    def sketch(self, batch, fn):
        return np.stack([np.bincount(c, minlength=16)[:16] for c in batch["completion_ids"]]).astype(np.float32)


def _maker(rounds):
    """A DrawMaker stand-in whose target rounds return ``rounds`` in turn; a row's sketch is the count of each token
    id under its mask, so a target's vector tells which completions built it."""
    def sketch_rows(step, rows, mask=None, fn=None, precondition=None):
        m = rows["completion_mask"].astype(bool) if mask is None else np.asarray(mask, bool)
        return np.stack([np.bincount(c[k], minlength=16)[:16] for c, k in zip(rows["completion_ids"], m)]
                        ).astype(np.float32)

    calls = []

    def sample(model, tok, task, prompts, G, max_new, temperature, seed):
        calls.append(seed)
        return _rows(rounds[len(calls) - 1])

    task = types.SimpleNamespace(encode_prompts=lambda tok, prompts: [[1, 1]] * len(prompts))
    maker = types.SimpleNamespace(
        cfg=DrawConfig(target_min_behavior=2, target_max_rounds=len(rounds)), model=lambda step: None,
        tok=types.SimpleNamespace(pad_token_id=0),
        task=task, target_prompts=["p"], G=2, max_new=4, temperature=1.0, seed_for=lambda s, d, i: i,
        target_mask=_span, behavior_mask=_span, spec=types.SimpleNamespace(k=16), behavior_ids=BEH,
        sketch_rows=sketch_rows, batch_of=lambda rows, idx: {k: v[idx] for k, v in rows.items()})
    return maker, sample, calls


def _build(monkeypatch, rounds):
    maker, sample, calls = _maker(rounds)
    monkeypatch.setattr(targets, "sample_groups", sample)
    monkeypatch.setattr("bt_bench.sketch.Sketcher", _Sketcher)
    return targets.build_targets(maker, step=5, draw=0), calls


SATURATED = [[7, 8, 3, 3], [3, 7, 8, 3]]  # every completion holds the behavior
FREE = [[4, 4, 4, 4], [7, 8, 5, 5]]  # one completion without it (tokens 4), one with it (token 5)


def test_rounds_go_on_until_the_placebo_has_a_completion(monkeypatch):
    out, calls = _build(monkeypatch, [SATURATED, SATURATED, FREE])
    assert len(calls) == 3  # the behavior targets were full after round 0; rounds 1 and 2 looked for a free one
    assert np.count_nonzero(out["no_behavior"]) and out["no_behavior"][4] > 0  # built from the [4, 4, 4, 4] row
    assert out["definitions"]["no_behavior"]["completion_ids"].tolist() == [[4, 4, 4, 4]] * 2  # n rows = n_b
    assert int(out["n_behavior_samples"]) == 2  # the behavior targets: round 0 only
    assert out["definitions"]["in_context"]["completion_ids"].tolist() == SATURATED
    assert out["sequence"][5] == 0  # round 2's behavior completion (token 5) did not join them


def test_without_any_free_completion_the_placebo_stays_zero(monkeypatch):
    out, calls = _build(monkeypatch, [SATURATED] * 3)
    assert len(calls) == 3 and not np.count_nonzero(out["no_behavior"])
    assert out["definitions"]["no_behavior"]["completion_ids"].size == 0


def test_a_round_with_both_stops_at_once(monkeypatch):  # the rule as before: nothing more is sampled
    out, calls = _build(monkeypatch, [[[7, 8, 3, 3], [3, 7, 8, 3], [4, 4, 4, 4]], SATURATED])
    assert len(calls) == 1 and np.count_nonzero(out["no_behavior"])
