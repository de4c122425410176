"""Streaming encode (mnemo/streaming.py): `Tokenizer.encode_iterable` gives exactly `encode` of
the joined text, however the text is cut, with bounded memory.  The oracle is `encode` itself."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo import ArgumentTypeError, SpecialTokenError, Tokenizer
from mnemo import streaming
from mnemo.constants import PATTERNS
from mnemo.interop import load_gpt2

EOT = "<|endoftext|>"
CORPORA = ["english", "multilingual", "code", "chat"]


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> Tokenizer:
    vocab, merges = cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt"
    if not vocab.exists() or not merges.exists():
        pytest.skip(f"GPT-2 fixture files absent in {cs336_dir}")
    return load_gpt2(vocab, merges)


@pytest.fixture(scope="module")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    """A mnemo-trained vocabulary (mnemonic pattern, default specials): no id map."""
    import mnemo

    docs = corpus_docs("english", max_bytes=600_000) + corpus_docs("code", max_bytes=300_000)
    return mnemo.train_from_iterator(iter(docs), vocab_size=2048, workers=1)


def sample(corpus_docs: Callable[..., list[str]], name: str, max_bytes: int = 300_000) -> list[str]:
    return corpus_docs(name, max_bytes=max_bytes)


def test_text_bytes_replaces_lone_surrogates_only() -> None:
    assert streaming.text_bytes("a\ud800b") == "a\ufffdb".encode()
    assert streaming.text_bytes("\ud83d\ude00") == "\U0001f600".encode()  # a pair is its character
    assert streaming.text_bytes("plain") == b"plain"


def test_encode_iterable_non_str_piece_is_a_type_error() -> None:
    """A piece that is not a str is the caller's wrong type: ArgumentTypeError (a TypeError)
    naming the piece, not the ConfigError (a ValueError) it was when this lived in interop.py."""
    tok = Tokenizer([])
    with pytest.raises(ArgumentTypeError, match=r"texts\[1\] must be a str, got bytes"):
        list(tok.encode_iterable(["ok", b"bytes"]))  # type: ignore[list-item]


# ---- encode_iterable ----


def fixed_pieces(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def random_pieces(text: str, rng: random.Random) -> Iterator[str]:
    i = 0
    while i < len(text):
        n = rng.choice([1, 2, 3, 7, 50, 1000, 70_000])
        yield text[i : i + n]
        i += n


@pytest.mark.parametrize("block", [16, streaming.ITERABLE_BLOCK])
def test_encode_iterable_edges(gpt2: Tokenizer, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(streaming, "ITERABLE_BLOCK", block)
    cases = [
        ["hello <|endo", "ftext|> world"],
        ["a\n", "\nb"],
        ["x" * 40 + "\n", "\n", "\n", "  ", " y"],
        ["it'", "ll be", " ", " ", "fine   ", "\n"],
        ["\ud83d", "\ude00 smile", " \ud800 lone"],
        ["12", "34", "5 ", "<|endoftext|", "><|endoftext|>"],
    ] + [[c] for c in "padding so that cuts happen " * 3]
    for pieces in cases:
        whole = "".join(pieces)
        expected = gpt2.encode(whole, allowed_special="all")
        assert list(gpt2.encode_iterable(pieces, allowed_special="all")) == expected, pieces
        assert list(gpt2.encode_iterable(iter(whole), allowed_special="all")) == expected, whole


def test_encode_iterable_disallowed_special_split(gpt2: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "ITERABLE_BLOCK", 8)
    pieces = ["some text before it " * 3, "<|endof", "text|> after"]
    with pytest.raises(SpecialTokenError, match="endoftext"):
        list(gpt2.encode_iterable(pieces))
    assert list(gpt2.encode_iterable(pieces, disallowed_special=())) == gpt2.encode_ordinary("".join(pieces))


TRICKY = [" ", "  ", "\n", "\n\n", "\r\n", "\t", "'", "'ll", "'S", "a", "b", "ab", "x", "\u00e9", "7", "12", "!",
          "?!", "-", "\u00a0", "\u4e00", "<|x|>", "<|x|><|x|>", "<|", "|>", "\U0001f600",
          "A", "Ab", "\u0301", "/", "'s"]  # o200k's case runs, marks, '/' after punctuation


@settings(max_examples=150, deadline=None)
@given(
    words=st.lists(st.sampled_from(TRICKY), max_size=60),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    pattern=st.sampled_from(PATTERNS),
    allow=st.booleans(),
)
def test_encode_iterable_random_texts(words: list[str], cuts: list[int], pattern: str, allow: bool) -> None:
    """Tricky text (white-space runs, contractions, digits, a special and its halves) cut anywhere."""
    tok = Tokenizer([(97, 98), (32, 32), (10, 10), (256, 120)], pattern=pattern, special_tokens=["<|x|>", "<|x|><|x|>"])
    text = "".join(words)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    kwargs: dict[str, Any] = {"allowed_special": "all"} if allow else {"disallowed_special": ()}
    with pytest.MonkeyPatch.context() as m:
        m.setattr(streaming, "ITERABLE_BLOCK", 4)
        assert list(tok.encode_iterable(pieces, **kwargs)) == tok.encode(text, **kwargs)
        assert list(tok.encode_iterable(iter(text), **kwargs)) == tok.encode(text, **kwargs)


@pytest.mark.corpus
@pytest.mark.parametrize("which", ["gpt2", "trained"])
def test_encode_iterable_rechunkings(
    which: str, request: pytest.FixtureRequest, corpus_docs: Callable[..., list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tok: Tokenizer = request.getfixturevalue(which)
    rng = random.Random(7)
    for name in CORPORA:
        docs = sample(corpus_docs, name, 150_000)
        text = EOT.join(docs) if which == "gpt2" else "<|bos|>".join(docs)
        expected = tok.encode(text, allowed_special="all")
        assert list(tok.encode_iterable(text.splitlines(keepends=True), allowed_special="all")) == expected
        assert list(tok.encode_iterable(fixed_pieces(text, 4096), allowed_special="all")) == expected
        assert list(tok.encode_iterable(random_pieces(text, rng), allowed_special="all")) == expected
        short = text[:20_000]
        with monkeypatch.context() as m:
            m.setattr(streaming, "ITERABLE_BLOCK", 64)
            assert list(tok.encode_iterable(iter(short), allowed_special="all")) == tok.encode(
                short, allowed_special="all"
            )


@pytest.mark.corpus
@pytest.mark.slow
def test_encode_iterable_bounded_memory(gpt2: Tokenizer, corpus_docs: Callable[..., list[str]]) -> None:
    """~20 MB of text, one line at a time: the peak traced memory stays a few MB."""
    lines = "".join(sample(corpus_docs, "english", 1_000_000)).splitlines(keepends=True)
    target = 20_000_000

    def stream() -> Iterator[str]:
        sent = 0
        while sent < target:
            for line in lines:
                yield line
                sent += len(line)

    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        count = 0
        for _ in gpt2.encode_iterable(stream()):
            count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count > target // 8
    assert peak - before < 8_000_000, f"peak {peak - before} bytes for {target} bytes of text"
