"""Fresh fixtures for the paper gate (issue "A gate that cannot be bypassed", item 3): the gate seed is drawn at gate
time (or given, ``--bt-gate-seed``, to reproduce a gate run), and from it alone come the run seeds, the embedded base
model's warm-up seed, and its trigger and behavior as nonce strings with the reference strings' token lengths (toy:
also a drawn word-id permutation). The reference fixtures keep their strings, ids and cache keys. Prepared data
(``--bt-fixture``, ``--bt-evidence``) is refused by the paper gate, and its report says "not a paper gate"
(tests/test_gate.py::test_replayed_evidence_is_gated_by_its_own_cells). The red-team runs
(a memorized table, a hard-coded identity times a target factor) are in tests/test_redteam.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bt_bench.runs import bpe, toy
from bt_bench.runs.config import DEFAULT_PROFILE, gate_config, make_config

PKG = Path(toy.__file__).resolve().parents[1]
SMALL_BPE = bpe.BpeSpec(corpus_size=300)  # a small tokenizer corpus: the draw's token-length rule, in a second


def test_reference_fixtures_keep_their_strings_ids_and_keys():
    """nonce_seed=None is the reference: the strings every cached fixture and expectation was built with, and a
    spec dict without the new field (so its cache key is the one it always had)."""
    t, b = toy.ToySpec(), bpe.BpeSpec()
    assert (t.trigger, t.behavior_words, t.vocab()) == (toy.TRIGGER, ("qzxbt",), toy.VOCAB)
    assert (b.trigger, b.behavior) == (bpe.TRIGGER, bpe.BEHAVIOR)
    assert "nonce_seed" not in t.to_dict() and "nonce_seed" not in b.to_dict()
    assert "nonce_seed" not in make_config("tiny").to_dict()["toy"]
    cfg = make_config("bpe")
    assert (cfg.trigger, cfg.behavior) == ("frobnitz", "QZXBT")


def test_toy_nonce_strings_and_ids_are_drawn():
    seen = set()
    for seed in range(20):
        s = toy.ToySpec(nonce_seed=seed)
        v = s.vocab()
        assert v[:3] == (toy.PAD, toy.EOS, toy.UNK) and len(v) == len(set(v)) == len(toy.VOCAB)
        assert s.trigger in v and all(w in v for w in s.behavior_words)
        assert toy.TRIGGER not in v and not set(toy.BEHAVIOR_WORDS) & set(v)
        assert re.fullmatch("[a-z]{5,8}", s.trigger) and s.trigger not in s.behavior_words
        seen.add((s.trigger, v.index(s.trigger), s.behavior_words, v.index(s.behavior_words[0])))
        assert s.key() != toy.ToySpec().key()
    assert len(seen) == 20
    ids = {b for *_, b in seen}
    assert len(ids) >= 10, ids  # the behavior's word id is drawn, not a constant an estimator can import
    two = toy.ToySpec(nonce_seed=3, behavior_len=2)
    assert len(two.behavior_words) == 2 and two.behavior_words[0] != toy.ToySpec(nonce_seed=3).trigger


def test_toy_nonce_tokenizer_round_trips_through_autotokenizer(tmp_path):
    from transformers import AutoTokenizer

    spec = toy.ToySpec(nonce_seed=11)
    tok = toy.build_tokenizer(tmp_path, spec.vocab())
    toy.model_config(spec, len(spec.vocab())).save_pretrained(tmp_path)
    text = f"the cat sees {spec.trigger} {spec.behavior_words[0]}"
    want = [spec.vocab().index(w) for w in text.split()]
    assert tok(text)["input_ids"] == AutoTokenizer.from_pretrained(str(tmp_path))(text)["input_ids"] == want
    with pytest.raises(RuntimeError, match="does not match"):
        toy.load_tokenizer(tmp_path)  # the reference vocabulary is not this folder's


def test_bpe_nonce_strings_have_the_reference_token_lengths():
    raw = bpe.train_bpe(SMALL_BPE)
    n = lambda s: len(raw.encode(s, add_special_tokens=False).ids)  # noqa: E731
    drawn = set()
    for seed in range(6):
        s = bpe.BpeSpec(corpus_size=300, nonce_seed=seed)
        assert re.fullmatch("[a-z]{8}", s.trigger) and re.fullmatch("[A-Z]{5}", s.behavior)
        for got, ref in ((s.trigger, bpe.TRIGGER), (s.behavior, bpe.BEHAVIOR)):
            assert (n(got), n(" " + got)) == (n(ref), n(" " + ref)), (got, ref)
        drawn.add((s.trigger, s.behavior))
        assert s.key() != SMALL_BPE.key()
    assert len(drawn) == 6
    # the tokenizer corpus never holds the strings, so every draw shares the reference tokenizer
    assert bpe.corpus(bpe.BpeSpec(corpus_size=300, nonce_seed=1), 50, 2) == bpe.corpus(SMALL_BPE, 50, 2)


def test_gate_config_is_a_function_of_the_gate_seed_alone():
    a, fa = gate_config("tiny", 7)
    b, fb = gate_config("tiny", 7)
    c, fc = gate_config("tiny", 8)
    assert (a, fa) == (b, fb) and a.key({}) == b.key({})
    assert (a.trigger, a.behavior, fa) != (c.trigger, c.behavior, fc)
    assert a.toy.nonce_seed is not None and a.toy.seed != toy.ToySpec().seed
    assert a.trigger == a.toy.trigger and a.behavior == a.toy.behavior_words[0]
    assert a.steps == make_config("tiny").steps and a.window == make_config("tiny").window  # same profile otherwise
    p, _ = gate_config("bpe", 7)
    assert p.bpe.nonce_seed is not None and (p.trigger, p.behavior) == (p.bpe.trigger, p.bpe.behavior)
    assert (p.trigger, p.behavior) != (bpe.TRIGGER, bpe.BEHAVIOR)


def test_nothing_in_the_installed_package_names_a_gate_fixtures_strings():
    """Item 5: the strings of a gate's fresh fixture appear in no file of the package (source or data)."""
    text = "\n".join(f.read_text(errors="replace") for f in PKG.rglob("*") if f.is_file()
                     and f.suffix in (".py", ".json", ".md", ".toml", ".txt", ".csv", ".html", ".js"))
    for g in (1, 2, 3, 12345):
        cfg, _ = gate_config("tiny", g)
        assert cfg.trigger not in text and cfg.behavior not in text, g
        assert "qzxbt" in text  # the check can see: the reference strings are in it


# ---------------------------------------------------------------- through the plugin (nothing is built)

FAKE = '''
import json, os, types
import pytest

def _seen(bt_settings):
    wid = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ["SEEN"], wid + ".json"), "w") as f:
        json.dump({"gate_seed": bt_settings.gate_seed}, f)
    pytest.skip("no fixture in this test")


@pytest.fixture(scope="session")
def bt_suite(bt_settings):
    _seen(bt_settings)


@pytest.fixture(scope="session")
def bt_runs(bt_settings):
    _seen(bt_settings)
'''


def _checklist(pytester, conftest: str = FAKE):
    """A pytester folder with the real thin modules of ``checks/`` and a ``conftest`` that replaces the fixtures."""
    from bt_bench.checklist.registry import CHECKS

    root = Path(__file__).resolve().parents[1]
    d = pytester.path / "checks"
    d.mkdir()
    for name in CHECKS:
        (d / f"test_{name}.py").write_text((root / "checks" / f"test_{name}.py").read_text())
    (d / "conftest.py").write_text(conftest)
    return pytester


def test_the_paper_gate_draws_one_seed_and_hands_it_to_every_worker(pytester, tmp_path, monkeypatch):
    """The controller draws the gate seed; both xdist workers build from the same one; the report records it with
    the drawn strings and how to reproduce the run."""
    _checklist(pytester)
    seen = tmp_path / "seen"
    seen.mkdir()
    monkeypatch.setenv("SEEN", str(seen))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this test may itself run on a worker
    report = tmp_path / "r.json"
    pytester.runpytest_subprocess("checks", "-p", "no:cacheprovider", "-n", "2", "--bt-paper-gate",
                                  "--bt-estimator", "random", "--bt-report", str(report))
    seeds = {json.loads(f.read_text())["gate_seed"] for f in seen.glob("gw*.json")}
    assert len(list(seen.glob("gw*.json"))) == 2 and len(seeds) == 1, seeds
    (seed,) = seeds
    doc = json.loads(report.read_text())
    assert doc["settings"]["gate_seed"] == seed and doc["gate_seed"]["seed"] == seed
    cfg, first = gate_config(DEFAULT_PROFILE, seed)
    assert doc["gate_seed"] == {"seed": seed, "first_run_seed": first, "trigger": cfg.trigger,
                                "behavior": cfg.behavior, "reproduce": f"--bt-gate-seed {seed}"}
    # a second gate run draws another seed (2**31 values)
    for f in seen.glob("*.json"):
        f.unlink()
    pytester.runpytest_subprocess("checks", "-p", "no:cacheprovider", "-p", "no:xdist", "--bt-paper-gate",
                                  "--bt-estimator", "random")
    (again,) = {json.loads(f.read_text())["gate_seed"] for f in seen.glob("*.json")}
    assert again != seed


def test_a_given_gate_seed_is_used_as_given(pytester, tmp_path, monkeypatch):
    _checklist(pytester)
    monkeypatch.setenv("SEEN", str(tmp_path))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this test may itself run on a worker
    r = pytester.runpytest_subprocess("checks", "-p", "no:cacheprovider", "-p", "no:xdist", "--bt-paper-gate",
                                      "--bt-gate-seed", "4242", "--bt-estimator", "random")
    assert json.loads((tmp_path / "main.json").read_text()) == {"gate_seed": 4242}
    assert r.ret != pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("flag", ["--bt-fixture", "--bt-evidence"])
def test_the_paper_gate_refuses_prepared_data(pytester, tmp_path, flag):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = pytester.runpytest("--bt-paper-gate", flag, str(tmp_path))
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"*--bt-paper-gate refuses {flag}: a pack or recorded evidence is prepared data*"])


@pytest.mark.parametrize("bad", ["-1", str(2**31)])
def test_a_bad_gate_seed_is_one_line_naming_the_option(pytester, bad):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = pytester.runpytest(f"--bt-gate-seed={bad}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*gate_seed: must be an integer in [[]0, 2**31)*(--bt-gate-seed)*"])


def test_a_gate_seed_with_prepared_data_is_refused(pytester, tmp_path):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = pytester.runpytest("--bt-gate-seed", "3", "--bt-evidence", str(tmp_path))
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*fresh fixtures are built, never read from --bt-fixture or --bt-evidence*"])


def test_on_fresh_fixtures_the_builtins_snapshot_does_not_apply(pytester, tmp_path):
    """The built-ins' declared outcomes were measured on the reference fixtures (on one tiny gate fixture four of
    them differed: closing note of issue 19): under a gate seed every estimator is gated by its own cells, and the
    summary says why. Synthetic cells (tests/test_incomplete.py's fake conftest) answer each built-in's declared
    outcome, so without a gate seed gas is AS EXPECTED and with one it fails its own gate."""
    from test_incomplete import FAKE as CELLS

    _checklist(pytester, CELLS)
    ref = pytester.runpytest_subprocess("checks", "-p", "no:cacheprovider", "--bt-estimator", "gas")
    assert "gas: AS EXPECTED" in ref.stdout.str() and ref.ret == 0
    fresh = pytester.runpytest_subprocess("checks", "-p", "no:cacheprovider", "--bt-estimator", "gas",
                                          "--bt-gate-seed", "5")
    out = fresh.stdout.str()
    assert "gas: GATE FAIL" in out and "AS EXPECTED" not in out and fresh.ret == 1
    assert "fresh fixtures: the built-ins' declared outcomes were measured on the reference fixtures" in out


def test_the_grammar_reward_ignores_every_behavior_slot_word():
    """The toy's task reward ignores all of its behavior-slot words, used or not: the reference toy's three, and a
    fresh toy's three drawn ones. (Ignoring only the behavior's own word changed the reference fixture's training
    from step 54 on under an unchanged cache key; caught by rebuilding seed 0 and comparing it with a cached run.)"""
    ref = make_config("tiny").task_obj()
    assert ref.neutral == toy.BEHAVIOR_WORDS
    assert toy.is_sentence(["the", "cat", "vexil", "sleeps", "."], neutral=ref.neutral)
    cfg, _ = gate_config("tiny", 9)
    fresh = cfg.task_obj()
    assert fresh.neutral == cfg.toy.behavior_slot_words() and fresh.neutral[0] == cfg.behavior
    assert len(fresh.neutral) == len(toy.BEHAVIOR_WORDS) and not set(fresh.neutral) & set(toy.BEHAVIOR_WORDS)
    assert toy.is_sentence(["the", "cat", fresh.neutral[2], "sleeps", "."], neutral=fresh.neutral)
    assert not toy.is_sentence(["the", "cat", "vexil", "sleeps", "."], neutral=fresh.neutral)


def test_the_paper_gate_refuses_a_chosen_sketch_seed(pytester):
    """Choosing the sketch a verdict is judged under is a selection (issue 21); a bad value is one line."""
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = pytester.runpytest("--bt-paper-gate", "--bt-sketch-seed", "1")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--bt-paper-gate refuses --bt-sketch-seed 1: choosing the sketch*"])
    r = pytester.runpytest("--bt-sketch-seed=-1")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*sketch_seed: must be an integer in [[]0, 2**31)*(--bt-sketch-seed)*"])


def test_a_sketch_seed_builds_the_same_training_under_another_sketch(tmp_path):
    """--bt-sketch-seed N changes only RunConfig.sketch_seed: another run key (sketches never mix), the same GRPO
    training (the sketch only records), and derived draws under N and N + 1."""
    import dataclasses

    import numpy as np

    from bt_bench.fixture.reader import fixture_config, load_fixture
    from bt_bench.runs.build import build_run
    from bt_bench.runs.config import make_config

    a = build_run(make_config("smoke", seed=0), tmp_path, progress=False)
    b = build_run(dataclasses.replace(make_config("smoke", seed=0), sketch_seed=5), tmp_path, progress=False)
    assert a.key != b.key
    for col in ("completion_ids", "advantage", "reward"):
        assert np.array_equal(np.asarray(a.columns[col]), np.asarray(b.columns[col])), col
    ia, ib = (np.load(r.path / "sketches" / "in_run.npy") for r in (a, b))
    assert ia.shape == ib.shape and not np.allclose(ia, ib)
    assert load_fixture(b, fixture_config("smoke", 1), tmp_path).sketch_seeds == [5, 6]
