"""The library API as a new user meets it: the package docstring's example runs, the docstrings
point at files that exist, and the Tokenizer answers to tiktoken's names with tiktoken's meaning
-- checked against tiktoken itself on the same vocabulary (`interop.to_tiktoken`)."""

from __future__ import annotations

import doctest
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mnemo
from mnemo import InputError, MnemoError, Tokenizer, UnknownTokenError
from mnemo.interop import load_gpt2, to_tiktoken

REPO = Path(__file__).resolve().parents[1]
EOT = "<|endoftext|>"


# ---- help(mnemo) ----


def test_package_docstring_example_runs() -> None:
    """The example of `help(mnemo)` is a doctest: it trains, encodes, decodes, saves and loads."""
    doc = mnemo.__doc__
    assert doc is not None and "train_from_iterator" in doc
    test = doctest.DocTestParser().get_doctest(doc, {}, "mnemo", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out: list[str] = []
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)
    assert result.attempted >= 8


def test_docstrings_point_at_files_that_exist() -> None:
    """No docstring or comment of the package names a file the repository does not have
    (INTERFACES.md and DESIGN.md live outside it); every docs/*.md named exists."""
    for path in sorted((REPO / "mnemo").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "INTERFACES.md" not in source and "DESIGN.md" not in source, path.name
        for name in re.findall(r"docs/[\w.-]+\.md", source):
            assert (REPO / name).is_file(), f"{path.name} names {name}"
    assert "docs/tiktoken.md" in (Tokenizer.__doc__ or "")


# ---- tiktoken's names, against tiktoken ----


def need_tiktoken() -> Any:
    return pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")


@pytest.fixture(scope="module")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    """mnemo's own kind of vocabulary: mnemonic pattern, 16 default specials, no <|endoftext|>."""
    docs = corpus_docs("english", max_bytes=200_000) + corpus_docs("multilingual", max_bytes=200_000)
    return mnemo.train_from_iterator(docs, vocab_size=1500, workers=1)


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> Tokenizer:
    """GPT-2's vocabulary: an id map, and <|endoftext|> at 50256."""
    vocab, merges = cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt"
    if not vocab.exists() or not merges.exists():
        pytest.skip(f"GPT-2 fixture files absent in {cs336_dir}")
    return load_gpt2(vocab, merges)


@pytest.fixture(scope="module", params=["trained", "gpt2"])
def pair(request: pytest.FixtureRequest) -> tuple[Tokenizer, Any]:
    """(a mnemo Tokenizer, tiktoken's Encoding of the same vocabulary)."""
    need_tiktoken()
    tok: Tokenizer = request.getfixturevalue(request.param)
    return tok, to_tiktoken(tok)


@pytest.fixture(scope="module")
def texts(corpus_docs: Callable[..., list[str]]) -> list[str]:
    """Documents of every corpus (multi-byte characters, code, chat), an empty one, and text
    holding special-token strings."""
    docs = []
    for name in ("english", "multilingual", "code", "chat"):
        docs += corpus_docs(name, max_bytes=20_000)[:15]
    return docs + ["", "a", "héllo wörld ☃ 日本語 🎉", f"one{EOT}two <|bos|> three <|end|>"]


def test_sizes_and_special_tokens(pair: tuple[Tokenizer, Any]) -> None:
    tok, enc = pair
    assert tok.max_token_value == enc.max_token_value == tok.n_vocab - 1
    assert tok.n_vocab == enc.n_vocab
    assert tok.special_tokens_set == enc.special_tokens_set
    tok.special_tokens_set.add("<|changed|>")  # a copy: the tokenizer is unchanged
    assert tok.special_tokens_set == enc.special_tokens_set
    assert [tok.is_special_token(i) for i in range(tok.n_vocab)] == [enc.is_special_token(i) for i in range(enc.n_vocab)]
    assert tok.token_byte_values() == enc.token_byte_values()


def test_eot_token(pair: tuple[Tokenizer, Any]) -> None:
    tok, enc = pair
    if EOT in tok.special_tokens:
        assert tok.eot_token == enc.eot_token == 50256
        return
    with pytest.raises(KeyError):
        enc.eot_token
    with pytest.raises(KeyError) as info:  # the same exception type as tiktoken's ...
        tok.eot_token
    assert isinstance(info.value, UnknownTokenError) and isinstance(info.value, MnemoError)  # ... and a mnemo error
    assert str(info.value).startswith("this vocabulary has no '<|endoftext|>' token")
    assert "'<|bos|>'" in str(info.value)


def test_single_tokens_both_ways(pair: tuple[Tokenizer, Any]) -> None:
    tok, enc = pair
    for i in range(tok.n_vocab):
        raw = tok.decode_single_token_bytes(i)
        assert raw == enc.decode_single_token_bytes(i), i
        assert tok.encode_single_token(raw) == enc.encode_single_token(raw) == i
        assert tok.token_to_id(raw) == i
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert tok.encode_single_token(text) == enc.encode_single_token(text) == i
        assert tok.token_to_id(text) == i


@pytest.mark.parametrize("token", [b"\xff\xfe not one token", "not one token at all", "", b"", "<|nope|>"])
def test_encode_single_token_unknown(pair: tuple[Tokenizer, Any], token: str | bytes) -> None:
    tok, enc = pair
    with pytest.raises(KeyError):
        enc.encode_single_token(token)
    with pytest.raises(UnknownTokenError, match="is not a single token of this vocabulary") as info:
        tok.encode_single_token(token)
    assert isinstance(info.value, KeyError) and repr(token)[:20] in str(info.value)
    assert tok.token_to_id(token) is None


def test_unknown_ids(pair: tuple[Tokenizer, Any]) -> None:
    tok, enc = pair
    for bad in (tok.n_vocab, tok.n_vocab + 1000):
        with pytest.raises(KeyError):
            enc.decode_single_token_bytes(bad)
        with pytest.raises(UnknownTokenError, match=f"token id {bad} is not in the vocabulary"):
            tok.decode_single_token_bytes(bad)
        with pytest.raises(KeyError):
            enc.decode([1, bad])
        with pytest.raises(KeyError, match=f"token id {bad} is not in the vocabulary"):
            tok.decode([1, bad])
        with pytest.raises(KeyError):
            tok.decode_tokens_bytes([1, bad])
    # tiktoken: OverflowError for a negative id; mnemo: the same KeyError as for any unknown id
    with pytest.raises(UnknownTokenError):
        tok.decode_single_token_bytes(-1)
    # still an InputError, as token_bytes and decode always raised
    with pytest.raises(InputError):
        tok.token_bytes(tok.n_vocab)
    with pytest.raises(TypeError, match="token must be str or bytes, got int"):
        tok.encode_single_token(5)  # type: ignore[arg-type]


def test_decoding_texts(pair: tuple[Tokenizer, Any], texts: list[str]) -> None:
    tok, enc = pair
    batch = [tok.encode_ordinary(t) for t in texts]
    assert batch == [enc.encode_ordinary(t) for t in texts]
    assert tok.encode_ordinary_batch(texts) == enc.encode_ordinary_batch(texts) == batch
    assert tok.encode_ordinary_batch(texts, workers=1) == batch
    assert tok.decode_batch(batch) == enc.decode_batch(batch) == texts
    assert tok.decode_bytes_batch(batch) == enc.decode_bytes_batch(batch)
    for ids in batch:
        assert tok.decode_tokens_bytes(ids) == enc.decode_tokens_bytes(ids)
        assert tok.decode_with_offsets(ids) == enc.decode_with_offsets(ids)
    with_specials = tok.encode(texts[-1], allowed_special="all")
    assert with_specials == enc.encode(texts[-1], allowed_special="all")
    assert tok.decode_with_offsets(with_specials) == enc.decode_with_offsets(with_specials)


def test_decoding_token_soup(pair: tuple[Tokenizer, Any]) -> None:
    """Random id sequences: characters split between tokens, invalid UTF-8, special tokens."""
    tok, enc = pair
    rng = random.Random(12)
    multibyte = [i for i in range(tok.n_vocab) if any(c >= 0x80 for c in tok.token_bytes(i))]
    agreed = refused = 0
    for n in range(400):
        pool = multibyte if n % 2 else range(tok.n_vocab)
        ids = [rng.choice(pool) for _ in range(rng.randint(0, 12))]
        for errors in ("replace", "ignore", "backslashreplace"):
            assert tok.decode_batch([ids], errors=errors) == enc.decode_batch([ids], errors=errors)
        assert tok.decode_tokens_bytes(ids) == enc.decode_tokens_bytes(ids)
        try:
            expected = enc.decode_with_offsets(ids)
        except UnicodeDecodeError:
            with pytest.raises(InputError, match=r"the tokens decode to invalid UTF-8 \(byte \d+\)"):
                tok.decode_with_offsets(ids)
            refused += 1
        else:
            assert tok.decode_with_offsets(ids) == expected
            agreed += 1
    assert agreed > 100 and refused > 50


def test_offsets_worked_example() -> None:
    """'é' is 0xC3 0xA9; split between two tokens, both start at character 1 (tiktoken's rule:
    the first character that holds any of the token's bytes)."""
    tok = Tokenizer([], special_tokens=[])
    text, offsets = tok.decode_with_offsets(list("aé b".encode("utf-8")))
    assert text == "aé b" and offsets == [0, 1, 1, 2, 3]
