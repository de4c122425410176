"""Streaming decode (mnemo/decoding.py): the pieces add up to `decode` of the whole sequence,
for every split, and no piece shows U+FFFD for a character that is still arriving."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import mnemo
from mnemo import ArgumentTypeError, ConfigError, Tokenizer, UnknownTokenError
from mnemo.interop import load_gpt2

MNEMO = str(Path(sys.executable).parent / "mnemo")


@pytest.fixture(scope="module")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    docs = corpus_docs("multilingual", max_bytes=300_000)
    return mnemo.train_from_iterator(docs, vocab_size=1200, workers=1)


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> Tokenizer:
    """GPT-2 spells most CJK characters with two or three tokens: many split characters."""
    return load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")


@pytest.fixture(scope="module", params=["bytes", "trained", "gpt2"])
def tok(request: pytest.FixtureRequest) -> Tokenizer:
    if request.param == "bytes":
        return Tokenizer([], special_tokens=["<|end|>"])
    result: Tokenizer = request.getfixturevalue(request.param)
    return result


def samples(corpus_docs: Callable[..., list[str]]) -> list[str]:
    """Short documents of each corpus (multilingual first: the split characters live there)."""
    out: list[str] = []
    for name in ("multilingual", "chat", "code", "english"):
        out += [d[:3000] for d in corpus_docs(name, max_bytes=60_000)[:8]]
    return out


def test_worked_example() -> None:
    """'é' is C3 A9, '€' is E2 82 AC: one id per byte, nothing shown until a character is whole."""
    tok = Tokenizer([], special_tokens=[])
    d = tok.stream_decoder()
    pieces = [d.step(i) for i in "aé€".encode("utf-8")]
    assert pieces == ["a", "", "é", "", "", "€"]
    assert d.pending == b"" and d.finish() == ""
    assert d.step(0xE2) == "" and d.pending == b"\xe2"


def test_one_id_at_a_time_matches_decode(tok: Tokenizer, corpus_docs: Callable[..., list[str]]) -> None:
    """After each id, the text so far is a prefix of the whole decode (so it holds no U+FFFD
    the whole text does not hold at that place), and the pieces add up to it."""
    split_chars = 0
    for text in samples(corpus_docs):
        ids = tok.encode(text, allowed_special="all")
        full = tok.decode(ids)
        assert full == text
        d = tok.stream_decoder()
        pos = 0
        for i in ids:
            piece = d.step(i)
            assert full[pos : pos + len(piece)] == piece
            pos += len(piece)
            split_chars += bool(d.pending)
        assert pos + len(d.finish()) == len(full)
    if tok.n_vocab > 50000:  # GPT-2: the multilingual samples split characters between tokens
        assert split_chars > 100


def test_every_split_point(tok: Tokenizer, corpus_docs: Callable[..., list[str]]) -> None:
    """feed(ids[:k]) + feed(ids[k:]) + finish() == decode(ids) for every k of a sample."""
    text = next(t for t in samples(corpus_docs) if any(ord(c) > 0x2000 for c in t))[:600]
    ids = tok.encode(text)
    full = tok.decode(ids)
    for k in range(len(ids) + 1):
        d = tok.stream_decoder()
        first = d.feed(ids[:k])
        assert full.startswith(first)
        assert first + d.feed(ids[k:]) + d.finish() == full


def test_random_splits_of_token_soup(tok: Tokenizer) -> None:
    """Random ids (invalid UTF-8, truncated characters, specials) cut into random groups give
    decode's text with every error handler; with surrogateescape not a byte is lost."""
    rng = random.Random(19)
    multibyte = [i for i in range(tok.n_vocab) if any(c >= 0x80 for c in tok.token_bytes(i))]
    for n in range(300):
        pool = multibyte if n % 2 else range(tok.n_vocab)
        ids = [rng.choice(pool) for _ in range(rng.randint(0, 16))]
        for errors in ("replace", "ignore", "backslashreplace", "surrogateescape"):
            d = tok.stream_decoder(errors)
            out: list[str] = []
            k = 0
            while k < len(ids):
                step = rng.randint(1, 4)
                out.append(d.feed(ids[k : k + step]) if step > 1 else d.step(ids[k]))
                k += step
            out.append(d.finish())
            assert "".join(out) == tok.decode(ids, errors=errors)
            if errors == "surrogateescape":
                assert "".join(out).encode("utf-8", "surrogateescape") == tok.decode_bytes(ids)


def test_invalid_byte_is_replaced_at_once() -> None:
    """A byte that can neither start nor continue a character is U+FFFD now, not later; a
    character cut off by a byte that cannot continue it is one U+FFFD (as decode)."""
    tok = Tokenizer([], special_tokens=[])
    d = tok.stream_decoder()
    assert d.step(0xFF) == "\ufffd"
    assert d.step(0xE2) == "" and d.step(0x82) == ""
    assert d.step(ord("A")) == "\ufffdA"
    assert d.step(0xC3) == "" and d.finish() == "\ufffd"
    assert d.step(ord("b")) == "b"  # finish() left it empty: a new stream
    assert tok.decode([0xFF, 0xE2, 0x82, ord("A"), 0xC3]) == "\ufffd\ufffdA\ufffd"


def test_strict_raises_and_reset() -> None:
    tok = Tokenizer([], special_tokens=[])
    d = tok.stream_decoder("strict")
    assert d.step(0xC3) == ""
    with pytest.raises(UnicodeDecodeError):
        d.step(ord("x"))
    d.reset()
    assert d.pending == b"" and d.step(ord("x")) == "x"


def test_bad_arguments() -> None:
    tok = Tokenizer([], special_tokens=["<|end|>"])
    with pytest.raises(ConfigError, match="errors='nope' is not a codec error handler"):
        tok.stream_decoder("nope")
    with pytest.raises(ArgumentTypeError, match="errors must be a str"):
        tok.stream_decoder(3)  # type: ignore[arg-type]
    d = tok.stream_decoder()
    with pytest.raises(UnknownTokenError, match="token id 257 is not in the vocabulary"):
        d.step(257)
    with pytest.raises(ArgumentTypeError, match="token must be an int"):
        d.step("a")  # type: ignore[arg-type]
    assert d.step(256) == "<|end|>"


# ---- ids that are no token (issue 28 item 6) ----


def _every_decoder(tok: Tokenizer, ids: list[int], masked: bool) -> list[str]:
    """What each decoder gives for `ids`: decode, decode_bytes, the batches, and a stream
    decoder fed all at once and one id at a time."""
    d = tok.stream_decoder(masked=masked)
    fed = d.feed(ids) + d.finish()
    stepped = "".join(d.step(t) for t in ids) + d.finish()
    return [
        tok.decode(ids, masked=masked),
        tok.decode_bytes(ids, masked=masked).decode("utf-8", "replace"),
        tok.decode_batch([ids], masked=masked)[0],
        tok.decode_bytes_batch([ids], masked=masked)[0].decode("utf-8", "replace"),
        fed,
        stepped,
    ]


def _each_decoder_raises(tok: Tokenizer, ids: list[int], match: str) -> None:
    calls: list[Callable[[], object]] = [
        lambda: tok.decode(ids),
        lambda: tok.decode_bytes(ids),
        lambda: tok.decode_batch([ids]),
        lambda: tok.decode_bytes_batch([ids]),
        lambda: tok.stream_decoder().feed(ids),
        lambda: [tok.stream_decoder().step(t) for t in ids],
    ]
    for call in calls:
        with pytest.raises(UnknownTokenError, match=match):
            call()


def test_out_of_vocabulary_ids_raise_in_every_decoder(gpt2: Tokenizer) -> None:
    """Before: the mask bit was stripped from any id past the end, so 40000 on a 32,768-id
    vocabulary decoded as 40000 & 0x7FFF and 65535 as a special token, with no error."""
    tok = Tokenizer(gpt2.merges[: 32768 - 256 - 16], pattern="gpt2")  # mnemo's 16 specials on top
    assert tok.n_vocab == 32768
    for bad in (40000, 65535, 32768):
        _each_decoder_raises(tok, [104, bad], f"token id {bad} is not in the vocabulary")
    # gpt2 (50,257 ids): its chat mask bit is bit 31, and bit 15 is part of an id
    _each_decoder_raises(gpt2, [50257], "token id 50257 is not in the vocabulary")
    _each_decoder_raises(gpt2, [0x80000000 | 71], "decode them with masked=True")
    # the message says the way out when the id is a chat's id with the mask bit
    with pytest.raises(UnknownTokenError, match=r"0x8000\), decode them with masked=True"):
        tok.decode([0x8000 | 104])


def test_masked_ids_decode_only_when_asked(gpt2: Tokenizer) -> None:
    tok = Tokenizer([(104, 105)])
    ids = tok.render_conversation([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hi hi"}])
    plain = [t & 0x7FFF for t in ids]
    assert any(t & 0x8000 for t in ids)
    expected = tok.decode(plain)
    assert _every_decoder(tok, ids, masked=True) == [expected] * 6
    assert _every_decoder(tok, plain, masked=True) == [expected] * 6  # plain ids pass as they are
    _each_decoder_raises(tok, ids, "masked=True")
    wide = gpt2.render_conversation([{"role": "assistant", "content": "hello there"}])
    assert _every_decoder(gpt2, wide, masked=True) == [gpt2.decode([t & 0x7FFFFFFF for t in wide])] * 6
    with pytest.raises(UnknownTokenError, match="token id 40000 is not"):
        tok.decode([40000], masked=True)  # 40000 & 0x7FFF = 7232: no token of 259 ids either
    with pytest.raises(ArgumentTypeError, match="masked must be a bool"):
        tok.decode([104], masked=1)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="masked must be a bool"):
        tok.stream_decoder(masked="yes")  # type: ignore[arg-type]


# ---- character offsets ----


def spans_oracle(text: str, parts: list[bytes]) -> list[tuple[int, int]]:
    """From the text's own characters: the byte range of each token, mapped to the characters
    holding its first and last byte."""
    char_of_byte: list[int] = []
    for c, ch in enumerate(text):
        char_of_byte += [c] * len(ch.encode("utf-8", "replace"))
    out = []
    pos = 0
    for raw in parts:
        out.append((char_of_byte[pos], char_of_byte[pos + len(raw) - 1] + 1))
        pos += len(raw)
    return out


def test_offsets_worked_example() -> None:
    """'é' is C3 A9 split over two tokens: both get the span of the whole 'é', (1, 2)."""
    tok = Tokenizer([], special_tokens=[])
    ids, spans = tok.encode_with_offsets("aé b")
    assert ids == list("aé b".encode("utf-8"))
    assert spans == [(0, 1), (1, 2), (1, 2), (2, 3), (3, 4)]
    assert tok.decode_with_offsets(ids, spans=True) == ("aé b", spans)
    assert tok.decode_with_offsets(ids) == ("aé b", [0, 1, 1, 2, 3])
    # a token that ends inside a character and starts a new one: 'a' + C3, then A9
    merged = Tokenizer([(ord("a"), 0xC3)], special_tokens=[])
    assert merged.encode_with_offsets("aé")[1] == [(0, 2), (1, 2)]


def test_offsets_against_tiktoken(tok: Tokenizer, corpus_docs: Callable[..., list[str]]) -> None:
    """Starts equal tiktoken's decode_with_offsets on the corpus samples (GPT-2's vocabulary as a
    tiktoken Encoding built offline from its files, and a trained one); ends by the oracle."""
    tiktoken = pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")
    from mnemo.interop import to_tiktoken

    enc = to_tiktoken(tok)
    assert isinstance(enc, tiktoken.Encoding)
    split = 0
    for text in samples(corpus_docs):
        ids, spans = tok.encode_with_offsets(text, allowed_special="all")
        assert ids == enc.encode(text, allowed_special="all")
        expected_text, starts = enc.decode_with_offsets(ids)
        assert expected_text == text
        assert [s for s, _ in spans] == starts
        parts = tok.decode_tokens_bytes(ids)
        assert spans == spans_oracle(text, parts)
        assert tok.decode_with_offsets(ids, spans=True) == (text, spans)
        for (s, e), raw in zip(spans, parts):
            assert raw in text[s:e].encode("utf-8")
            split += e - s == 1 and len(text[s].encode("utf-8")) > len(raw)
    if tok.n_vocab > 50000:
        assert split > 50


def test_offsets_of_lone_surrogate_and_specials() -> None:
    """A lone surrogate is one character of the text and one U+FFFD of the ids: spans stay
    indices into the text given.  A special token spans its name."""
    tok = Tokenizer([], special_tokens=["<|end|>"])
    ids, spans = tok.encode_with_offsets("a\ud800b<|end|>c", allowed_special="all")
    assert ids == [ord("a"), 0xEF, 0xBF, 0xBD, ord("b"), 256, ord("c")]
    assert spans == [(0, 1), (1, 2), (1, 2), (1, 2), (2, 3), (3, 10), (10, 11)]


def test_offsets_after_surrogate_pairs_index_the_callers_string(gpt2: Tokenizer) -> None:
    """Encoding joins a surrogate pair into one character; the spans index the string given,
    where the pair is two code points (before: ' hello' got (1, 7), '\\ude00 hell')."""
    text = "\ud83d\ude00 hello world"
    ids, spans = gpt2.encode_with_offsets(text)
    pieces = [text[s:e] for s, e in spans]
    assert pieces[-2:] == [" hello", " world"]
    assert spans[-2:] == [(2, 8), (8, 14)]
    assert all(s <= 2 for s, _ in spans[:-2]) and spans[0][0] == 0  # the emoji's tokens: (0, 2)
    # every shape: pairs, lone halves, a pair split by nothing else, at the start, middle and end
    rng = random.Random(28)
    alphabet = ["a", " ", "é", "中", "\ud83d\ude00", "\U0001F600", "\ud800", "\udc00", "\ud83d", "x y"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12)))
        ids, spans = gpt2.encode_with_offsets(text)
        assert len(spans) == len(ids)
        for (s, e), raw in zip(spans, gpt2.decode_tokens_bytes(ids)):
            piece = text[s:e].encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
            assert raw in piece, (text, s, e, raw)  # the span holds the token's bytes ...
            assert 0 <= s < e <= len(text)
        # ... and the spans cover the text, in order
        assert spans[0][0] == 0 and spans[-1][1] == len(text), (text, spans)


def test_decode_with_offsets_refuses_invalid_utf8() -> None:
    tok = Tokenizer([], special_tokens=[])
    with pytest.raises(mnemo.InputError, match=r"invalid UTF-8 \(byte 1\)"):
        tok.decode_with_offsets([ord("a"), 0xC3], spans=True)


def test_tokshow_offsets(tmp_path: Path) -> None:
    """`mnemo tokshow --offsets`: each token's span after it; both halves of 'é' span it."""
    Tokenizer([], special_tokens=[]).save(tmp_path / "bytes.bin")
    run = subprocess.run(
        [MNEMO, "tokshow", "-t", str(tmp_path / "bytes.bin"), "--offsets", "--no-color", "aé b"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "a@0:1|<0xC3>@1:2|<0xA9>@1:2| @2:3|b@3:4|"
