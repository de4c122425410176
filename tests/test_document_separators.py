"""Documents stay apart in .tok files (issue 12 item 5): <|bos|> before each document when the
vocabulary has it, else <|endoftext|> after each one (GPT-2's convention), or the tokens the
caller names; a warning when there is neither.  Checked with GPT-2's own files and with mnemo's
default vocabulary, with 1 and 2 workers, against the ids `encode_ordinary` gives each document."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from mnemo import Tokenizer, open_tok
from mnemo.tokenizing import document_separators, tokenize_files
from mnemo.errors import ConfigError
from mnemo.interop import load_gpt2
from mnemo.training import train_from_iterator

DOCS = ["first doc", "second doc\n", "a third, longer document with some words in it."]


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> Tokenizer:
    return load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")


@pytest.fixture(scope="module")
def mnemo_tok() -> Tokenizer:
    return train_from_iterator([" ".join(DOCS) * 20], vocab_size=300, workers=1)


def _corpus(tmp_path: Path) -> Path:
    src = tmp_path / "docs.txt"
    src.write_text("<|endoftext|>".join(DOCS))
    return src


def _tokens(tok: Tokenizer, src: Path, out: Path, workers: int, bos: str | None = "auto", eos: str | None = "auto") -> list[int]:
    stats = tokenize_files([src], tok, out, workers=workers, bos=bos, eos=eos)
    f = open_tok(out, tok)
    assert stats.n_docs == f.header.n_docs == len(DOCS)
    return [int(t) for t in f.tokens]


def test_gpt2_documents_end_with_endoftext(gpt2: Tokenizer, tmp_path: Path) -> None:
    """The issue's case: `first doc<|endoftext|>second doc` gave [11085, 2205, 12227, 2205, 198],
    the documents run together.  Now each ends with <|endoftext|> = 50256, with 1 and 2
    workers, and the two files are identical byte for byte."""
    assert "<|bos|>" not in gpt2.special_tokens
    eot = gpt2.special_tokens["<|endoftext|>"]
    assert eot == 50256
    src = _corpus(tmp_path)
    expected = [i for d in DOCS for i in [*gpt2.encode_ordinary(d), eot]]
    assert expected[:3] == [11085, 2205, 50256]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a vocabulary with <|endoftext|> does not warn
        one = _tokens(gpt2, src, tmp_path / "1.tok", 1)
        two = _tokens(gpt2, src, tmp_path / "2.tok", 2)
    assert one == two == expected
    assert (tmp_path / "1.tok").read_bytes() == (tmp_path / "2.tok").read_bytes()


def test_mnemo_default_vocabulary_keeps_bos_before(mnemo_tok: Tokenizer, tmp_path: Path) -> None:
    bos = mnemo_tok.special_tokens["<|bos|>"]
    src = _corpus(tmp_path)
    expected = [i for d in DOCS for i in [bos, *mnemo_tok.encode_ordinary(d)]]
    one = _tokens(mnemo_tok, src, tmp_path / "1.tok", 1)
    two = _tokens(mnemo_tok, src, tmp_path / "2.tok", 2)
    assert one == two == expected
    assert (tmp_path / "1.tok").read_bytes() == (tmp_path / "2.tok").read_bytes()


@pytest.mark.parametrize("workers", [1, 2])
def test_explicit_bos_and_eos(gpt2: Tokenizer, mnemo_tok: Tokenizer, tmp_path: Path, workers: int) -> None:
    """Naming either token replaces the default rule; the other one is then none."""
    src = _corpus(tmp_path)
    eot = gpt2.special_tokens["<|endoftext|>"]
    got = _tokens(gpt2, src, tmp_path / "a.tok", workers, bos="<|endoftext|>")
    assert got == [i for d in DOCS for i in [eot, *gpt2.encode_ordinary(d)]]
    got = _tokens(gpt2, src, tmp_path / "b.tok", workers, bos="<|endoftext|>", eos="<|endoftext|>")
    assert got == [i for d in DOCS for i in [eot, *gpt2.encode_ordinary(d), eot]]
    got = _tokens(gpt2, src, tmp_path / "c.tok", workers, bos=None, eos=None)
    assert got == [i for d in DOCS for i in gpt2.encode_ordinary(d)]
    s = mnemo_tok.special_tokens
    got = _tokens(mnemo_tok, src, tmp_path / "d.tok", workers, bos="<|bos|>", eos="<|end|>")
    assert got == [i for d in DOCS for i in [s["<|bos|>"], *mnemo_tok.encode_ordinary(d), s["<|end|>"]]]
    got = _tokens(mnemo_tok, src, tmp_path / "e.tok", workers, eos="<|end|>")
    assert got == [i for d in DOCS for i in [*mnemo_tok.encode_ordinary(d), s["<|end|>"]]]


def test_unknown_separator_names_the_token_and_the_choices(gpt2: Tokenizer, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"bos '<\|bos\|>' is not a special token of this vocabulary \(it has: <\|endoftext\|>\)"):
        tokenize_files([_corpus(tmp_path)], gpt2, tmp_path / "x.tok", bos="<|bos|>")
    assert not (tmp_path / "x.tok").exists()


def test_no_separator_at_all_warns_once(tmp_path: Path) -> None:
    tok = train_from_iterator([" ".join(DOCS) * 20], vocab_size=300, workers=1, special_tokens=["<|user|>"])
    assert document_separators(tok) == (None, None)
    with pytest.warns(UserWarning, match="neither <\\|bos\\|> nor <\\|endoftext\\|>") as caught:
        got = _tokens(tok, _corpus(tmp_path), tmp_path / "w.tok", 2)
    assert len(caught) == 1
    assert got == [i for d in DOCS for i in tok.encode_ordinary(d)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an explicit choice of none does not warn
        _tokens(tok, _corpus(tmp_path), tmp_path / "n.tok", 1, bos=None, eos=None)


def test_encode_documents_eos_with_an_id_map(gpt2: Tokenizer) -> None:
    """encode_documents takes public ids for bos and eos (GPT-2's vocabulary has an id map)."""
    docs = [d.encode() for d in DOCS]
    eot = gpt2.special_tokens["<|endoftext|>"]
    got = gpt2.encode_documents(docs, eos=eot)
    assert got.tolist() == [i for d in DOCS for i in [*gpt2.encode_ordinary(d), eot]]
    both = gpt2.encode_documents(docs, bos=eot, eos=eot)
    assert np.array_equal(both, [i for d in DOCS for i in [eot, *gpt2.encode_ordinary(d), eot]])
    with pytest.raises(ConfigError, match="eos=99999 is not an id"):
        gpt2.encode_documents(docs, eos=99999)
