"""Extending a vocabulary (mnemo/extend.py): special tokens added at the top, and training that
continues from an existing tokenizer -- its merges first, fast and naive trainers alike."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import mnemo
from mnemo import ArgumentTypeError, ConfigError, FingerprintError, Tokenizer, open_tok
from mnemo.interop import load_gpt2
from mnemo.merge_loop import train_merges
from mnemo.reference import train_merges_naive
from mnemo.tokfile import TokWriter

MNEMO = str(Path(sys.executable).parent / "mnemo")


@pytest.fixture(scope="module")
def english(corpus_docs: Callable[..., list[str]]) -> list[str]:
    return corpus_docs("english", max_bytes=150_000)


@pytest.fixture(scope="module")
def code(corpus_docs: Callable[..., list[str]]) -> list[str]:
    return corpus_docs("code", max_bytes=150_000)


@pytest.fixture(scope="module")
def base(english: list[str]) -> Tokenizer:
    return mnemo.train_from_iterator(english, vocab_size=600, workers=1)


WORDS = {b"the cat": 9, b"the hat": 7, b"that": 5, b"aaaa": 4, b"cat hat": 3, b"at": 2, b"x": 8}


# ---- the trainers, given initial merges ----


@pytest.mark.parametrize("tie", ["id", "bytes"])
def test_trainers_agree_when_continuing(tie: str) -> None:
    """Initial merges from other words (and one these words never hold), then free merges:
    fast == naive, merge for merge and count for count; the initial ones come first."""
    other, _ = train_merges_naive({b"hello there": 5, b"ther": 3, b"zz": 2}, 6, tie)
    initial = other + [(ord("q"), ord("q"))]
    fast = train_merges(WORDS, 20, tie, initial_merges=initial)
    naive = train_merges_naive(WORDS, 20, tie, initial_merges=initial)
    assert fast == naive
    merges, counts = fast
    assert merges[: len(initial)] == initial
    assert counts[len(initial) - 1] == 0  # (q, q) never occurs
    assert len(merges) > len(initial) + 3


@pytest.mark.parametrize("tie", ["id", "bytes"])
def test_continuing_from_own_merges_is_training_on(tie: str) -> None:
    """Continuing from the first k merges learned on the same words gives exactly the merges
    and counts of one run (k = 0, 1, 5 and all of them)."""
    full = train_merges(WORDS, 25, tie)
    for k in (0, 1, 5, len(full[0])):
        assert train_merges(WORDS, 25, tie, initial_merges=full[0][:k]) == full
        assert train_merges_naive(WORDS, 25, tie, initial_merges=full[0][:k]) == full


def test_trainer_checks_initial_merges() -> None:
    with pytest.raises(ConfigError, match=r"initial merge 1 \(id 257\) is \(257, 97\): both parts must be in 0..256"):
        train_merges(WORDS, 5, initial_merges=[(97, 98), (257, 97)])
    with pytest.raises(ConfigError, match=r"n_merges \(1\) counts the initial merges too, and there are 2"):
        train_merges_naive(WORDS, 1, initial_merges=[(97, 98), (98, 99)])
    with pytest.raises(ArgumentTypeError, match="initial merge 0 is"):
        train_merges(WORDS, 5, initial_merges=[[97, 98]])  # type: ignore[list-item]


# ---- mnemo.train(base=...) ----


def test_continue_training_keeps_old_merges(base: Tokenizer, code: list[str], english: list[str]) -> None:
    """New text (code) after the English base: the old merges are a prefix, fast == naive, and
    English text the new merges do not touch encodes as before."""
    fast = mnemo.train_from_iterator(code, vocab_size=900, workers=1, base=base)
    naive = mnemo.train_from_iterator(code, vocab_size=900, workers=1, base=base, algorithm="naive")
    assert fast == naive
    assert fast.merges[: len(base.merges)] == base.merges
    assert len(fast.merges) == 900 - 256 - 16
    assert fast.pattern == base.pattern and list(fast.special_tokens) == list(base.special_tokens)
    assert fast.fingerprint != base.fingerprint
    # every id below the old specials means what it meant
    for i in range(256 + len(base.merges)):
        assert fast.token_bytes(i) == base.token_bytes(i)
    # a chunk that no new merge applies to is encoded as before
    same = 0
    for word in " ".join(english[:20]).split(" "):
        ids = base.encode_ordinary(word)
        if all(i < 256 + len(base.merges) for i in fast.encode_ordinary(word)):
            assert fast.encode_ordinary(word) == ids
            same += 1
    assert same > 100


def test_old_token_files_are_refused(base: Tokenizer, code: list[str], tmp_path: Path) -> None:
    """A .tok written with the old tokenizer names its fingerprint; both kinds of extension
    change the fingerprint, so open_tok refuses the file with the new tokenizer."""
    path = tmp_path / "old.tok"
    with TokWriter(path, base) as w:
        w.write_doc(base.encode("the old text"))
    assert len(open_tok(path, base)) > 0
    continued = mnemo.train_from_iterator(code, vocab_size=700, workers=1, base=base)
    extra = base.with_special_tokens(["<|tool|>"])
    for new in (continued, extra):
        with pytest.raises(FingerprintError, match=f"fingerprint {base.fingerprint}"):
            open_tok(path, new)


def test_continue_training_errors(base: Tokenizer, code: list[str], cs336_dir: Path) -> None:
    with pytest.raises(ConfigError, match="pattern 'gpt2' differs from the pattern 'mnemonic'"):
        mnemo.train_from_iterator(code, vocab_size=900, workers=1, base=base, pattern="gpt2")
    with pytest.raises(ConfigError, match="vocab_size 500 is smaller than the tokenizer continued from"):
        mnemo.train_from_iterator(code, vocab_size=500, workers=1, base=base)
    with pytest.raises(ArgumentTypeError, match="base must be a Tokenizer"):
        mnemo.train_from_iterator(code, vocab_size=900, workers=1, base="tokenizer.bin")  # type: ignore[arg-type]
    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    with pytest.raises(ConfigError, match="an imported vocabulary .* Train a new tokenizer on the text instead"):
        mnemo.train_from_iterator(code, vocab_size=60000, workers=1, base=gpt2)


def test_cli_train_from(base: Tokenizer, code: list[str], tmp_path: Path) -> None:
    (tmp_path / "code.txt").write_text("<|endoftext|>".join(code), encoding="utf-8")
    base.save(tmp_path / "base.bin")
    run = subprocess.run(
        [MNEMO, "train", str(tmp_path / "code.txt"), "-o", str(tmp_path / "new.bin"),
         "--vocab-size", "800", "--from", str(tmp_path / "base.bin"), "--workers", "1"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    assert f"the first {len(base.merges)} from" in run.stdout
    new = Tokenizer.load(tmp_path / "new.bin")
    assert new.merges[: len(base.merges)] == base.merges and new.n_vocab == 800
    run = subprocess.run(
        [MNEMO, "train", str(tmp_path / "code.txt"), "-o", str(tmp_path / "x.bin"),
         "--from", str(tmp_path / "base.bin"), "--pattern", "gpt4", "--vocab-size", "800"],
        capture_output=True, text=True,
    )
    assert run.returncode == 1 and "differs from the pattern 'mnemonic'" in run.stderr
    assert not (tmp_path / "x.bin").exists()


# ---- special tokens ----


def test_with_special_tokens(base: Tokenizer) -> None:
    new = base.with_special_tokens(["<|tool|>", "<|image|>"])
    assert new.n_vocab == base.n_vocab + 2
    assert new.special_tokens == {**base.special_tokens, "<|tool|>": base.n_vocab, "<|image|>": base.n_vocab + 1}
    assert new.merges == base.merges and new.merge_counts == base.merge_counts
    assert new.fingerprint != base.fingerprint
    text = "call <|tool|> then <|end|>"
    expected = [*base.encode("call "), base.n_vocab, *base.encode(" then "), base.special_tokens["<|end|>"]]
    assert new.encode(text, allowed_special="all") == expected
    assert Tokenizer.from_bytes(new.to_bytes()) == new
    with pytest.raises(ConfigError, match=r"'<\|end\|>' is already a special token of this tokenizer \(id \d+\)"):
        base.with_special_tokens(["<|end|>"])
    with pytest.raises(ArgumentTypeError, match="special_tokens must be a list of str"):
        base.with_special_tokens("<|tool|>")  # type: ignore[arg-type]


def test_with_special_tokens_gpt2(cs336_dir: Path) -> None:
    """An imported vocabulary (GPT-2: id map, <|endoftext|> at 50256): the new token is 50257."""
    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    new = gpt2.with_special_tokens(["<|im_start|>"])
    assert new.special_tokens == {"<|endoftext|>": 50256, "<|im_start|>": 50257}
    text = "Hello world<|endoftext|><|im_start|>"
    assert new.encode(text, allowed_special="all") == gpt2.encode("Hello world<|endoftext|>", allowed_special="all") + [50257]
    assert new.decode([50257, 15496]) == "<|im_start|>Hello"
