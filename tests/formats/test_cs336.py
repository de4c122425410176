"""The CS336 interface: (vocab, merges) in and out (mnemo/formats/cs336.py, Tokenizer.from_vocab_merges,
docs/interop.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mnemo import FormatError, SpecialTokenError, Tokenizer
from mnemo.formats.common import bytes_to_unicode
from mnemo.formats.cs336 import from_vocab_merges

EOT = "<|endoftext|>"


def test_cs336_worked_example() -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"ab"
    tok = Tokenizer.from_vocab_merges(vocab, [(b"a", b"b")], ["<|x|>"])
    assert tok.encode("abab<|x|>a", allowed_special="all") == [256, 256, 257, 97]
    assert tok.vocab[257] == b"<|x|>" and tok.merge_pairs == [(b"a", b"b")]


def test_cs336_round_trip(gpt2: Tokenizer) -> None:
    vocab, merges = gpt2.vocab, gpt2.merge_pairs
    assert isinstance(vocab, dict) and vocab[50256] == EOT.encode() and len(vocab) == 50257
    assert merges[0] == (b" ", b"t")
    assert Tokenizer.from_vocab_merges(vocab, merges, [EOT]) == gpt2
    # a special token not in the vocabulary gets the next id
    extra = Tokenizer.from_vocab_merges(vocab, merges, [EOT, "<|pad|>"])
    assert extra.special_tokens == {EOT: 50256, "<|pad|>": 50257}


def test_cs336_reference_vocab_with_special_at_id_0(cs336_dir: Path) -> None:
    """train-bpe-reference-vocab.json: the special is id 0, bytes 1..256, merges 257.. (a full map)."""
    raw = json.loads((cs336_dir / "train-bpe-reference-vocab.json").read_text(encoding="utf-8"))
    decode = {c: b for b, c in bytes_to_unicode().items()}
    vocab = {i: (s.encode() if s == EOT else bytes(decode[c] for c in s)) for s, i in raw.items()}
    lines = (cs336_dir / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [tuple(bytes(decode[c] for c in part) for part in line.split(" ")) for line in lines]
    tok = Tokenizer.from_vocab_merges(vocab, merges, [EOT])  # type: ignore[arg-type]
    assert tok.special_tokens == {EOT: 0}
    text = "the quick brown fox<|endoftext|> of the"
    ids = tok.encode(text, allowed_special="all")
    assert ids[ids.index(0) + 1] == raw["Ġof"] and 0 in ids
    assert tok.decode(ids) == text
    assert [tok.vocab[i] for i in ids] == [tok.token_bytes(i) for i in ids]


def cs336_vocab_merges(vocab_path: Path, merges_path: Path) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """GPT-2's files read the way CS336's test helper (`get_tokenizer_from_vocab_merges_path`)
    reads them with no special tokens: every vocab.json entry, `<|endoftext|>` included, becomes
    id -> bytes, each merges.txt line a pair of bytes."""
    decode = {c: b for b, c in bytes_to_unicode().items()}
    raw = json.loads(vocab_path.read_text(encoding="utf-8"))
    vocab = {i: bytes(decode[c] for c in s) for s, i in raw.items()}
    merges = []
    for line in merges_path.read_text(encoding="utf-8").splitlines():
        parts = line.rstrip().split(" ")
        if len(parts) == 2:
            merges.append((bytes(decode[c] for c in parts[0]), bytes(decode[c] for c in parts[1])))
    return vocab, merges


@pytest.mark.parametrize("entry", ["method", "function"])
def test_cs336_gpt2_files_without_special_tokens(
    entry: str,
    gpt2_paths: tuple[Path, Path],
    gpt2: Tokenizer,
    tiktoken_gpt2: Any,
    cs336_dir: Path,
    special_fixtures: dict[str, str],
) -> None:
    """Issue 12: `from_vocab_merges(gpt2_vocab, gpt2_merges)` with no special tokens, as CS336's
    tests build it.  `<|endoftext|>`, which no merge makes, is a special token with its own id."""
    vocab, merges = cs336_vocab_merges(*gpt2_paths)
    assert vocab[50256] == EOT.encode() and len(merges) == 50000
    build = Tokenizer.from_vocab_merges if entry == "method" else from_vocab_merges
    tok = build(vocab, merges)
    assert tok.special_tokens == {EOT: 50256}
    assert tok == gpt2  # what load_gpt2 makes of the same files
    assert tok.vocab == vocab
    for name, text in special_fixtures.items():
        ids = tok.encode(text, allowed_special="all")
        assert ids == tiktoken_gpt2.encode(text, allowed_special="all"), name
        assert tok.decode(ids) == text, name
        plain = tok.encode_ordinary(text)
        assert plain == tiktoken_gpt2.encode_ordinary(text) and tok.decode(plain) == text, name
    tiny = (cs336_dir / "tinystories_sample.txt").read_text(encoding="utf-8")
    assert tok.encode(tiny, allowed_special="all").count(50256) == tiny.count(EOT) == 5
    with pytest.raises(SpecialTokenError, match="<\\|endoftext\\|>"):
        tok.encode(tiny)  # tiktoken's contract, as for every special token
    # with special tokens as well: the leftover keeps its id, a new one comes after it
    more = build(vocab, merges, ["<|pad|>"])
    assert more.special_tokens == {EOT: 50256, "<|pad|>": 50257}
    assert more.encode("a<|pad|>b<|endoftext|>", allowed_special="all") == [64, 50257, 65, 50256]


def test_cs336_leftover_entries_keep_their_ids() -> None:
    """An entry no merge makes, anywhere in the ids (not only at the top), is a special token
    named by its UTF-8 text; one that is not UTF-8 cannot be named and is an error."""
    vocab = {i + 1: bytes([i]) for i in range(256)}
    vocab[0] = b"<|x|>"
    vocab[257] = b"ab"
    tok = Tokenizer.from_vocab_merges(vocab, [(b"a", b"b")])
    assert tok.special_tokens == {"<|x|>": 0} and tok.vocab == vocab
    assert tok.encode("ab<|x|>a", allowed_special="all") == [257, 0, 98]
    assert tok.decode([257, 0, 98]) == "ab<|x|>a"
    bad = {**{i: bytes([i]) for i in range(256)}, 256: b"\xff\xfe"}
    with pytest.raises(FormatError, match=r"vocab\[256\] b'\\xff\\xfe' is neither a byte nor made by a merge, and not UTF-8"):
        Tokenizer.from_vocab_merges(bad, [])


def test_cs336_malformed() -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    # tokens are shown as the Python bytes CS336's interface passes (not in GPT-2's alphabet)
    with pytest.raises(FormatError, match=r"merges\[0\]: token b'xy' is not in the vocabulary"):
        Tokenizer.from_vocab_merges(vocab, [(b"xy", b"z")])
    with pytest.raises(FormatError, match=r"vocab\[97\] and vocab\[300\] are both b'a'"):
        Tokenizer.from_vocab_merges({**vocab, 300: b"a"}, [])
    holey = Tokenizer.from_vocab_merges({**vocab, 300: b"ab"}, [(b"a", b"b")])  # holes 256..299 (issue 16)
    assert holey.n_vocab == 301 and holey.encode("ab") == [300]
