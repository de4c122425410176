"""Imported vocabularies keep their own ids (Tokenizer.id_map, docs/interop.md): in .tok files,
in tokenizer.bin, in the fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo import ConfigError, FormatError, Tokenizer, open_tok
from mnemo.vocabfile import encode_tokenizer_bin

EOT = "<|endoftext|>"


def test_imported_vocabulary_in_a_tok_file_has_its_own_ids(gpt2: Tokenizer, tmp_path: Path) -> None:
    """`mnemo tokenize` (Tokenizer.encode_documents) writes the public ids, as encode_ordinary
    returns them: GPT-2's "!" is 0, not mnemo's byte id 33.  (It once wrote mnemo's ids.)"""
    from mnemo.tokenizing import tokenize_files

    docs = ["Hello world!", "caf\u00e9 \u2603 <|endoftext|> plain text", "!!!"]
    eot = gpt2.special_tokens[EOT]
    ids = gpt2.encode_documents([d.encode() for d in docs], bos=eot)
    assert ids.tolist() == [i for d in docs for i in [eot, *gpt2.encode_ordinary(d)]]
    assert gpt2.encode_ordinary("!") == [0]
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    tokenize_files([src], gpt2, tmp_path / "a.tok", workers=2)
    # no <|bos|> in GPT-2's specials: each document ends with <|endoftext|> (docs/cli.md)
    assert open_tok(tmp_path / "a.tok", gpt2).tokens.tolist() == [i for d in docs for i in [*gpt2.encode_ordinary(d), eot]]
    with pytest.raises(ConfigError, match="bos=99999 is not an id"):
        gpt2.encode_documents([b"x"], bos=99999)


def test_id_map_saved_and_loaded(gpt2: Tokenizer, tmp_path: Path) -> None:
    gpt2.save(tmp_path / "gpt2.bin")
    back = Tokenizer.load(tmp_path / "gpt2.bin")
    assert back == gpt2 and back.id_map == gpt2.id_map and back.special_tokens == {EOT: 50256}
    assert back.encode("Hello world!") == gpt2.encode("Hello world!")


def test_id_map_in_fingerprint() -> None:
    merges = [(97, 98)]
    plain = Tokenizer(merges, special_tokens=["<s>"])
    identity = Tokenizer(merges, special_tokens=["<s>"], id_map=list(range(258)))
    assert identity.id_map is None and identity.fingerprint == plain.fingerprint
    swapped = list(range(258))
    swapped[97], swapped[257] = 257, 97  # "a" <-> "<s>"
    renamed = Tokenizer(merges, special_tokens=["<s>"], id_map=swapped)
    assert renamed.fingerprint != plain.fingerprint
    assert renamed.special_tokens == {"<s>": 97}
    assert renamed.encode("ab a<s>", allowed_special="all") == [256, 32, 257, 97]
    assert renamed.decode([257, 97, 256]) == "a<s>ab"
    assert renamed.token_bytes(257) == b"a"
    assert renamed.vocab[97] == b"<s>"


def test_id_map_rejected() -> None:
    with pytest.raises(ConfigError, match="id_map has 3 entries"):
        Tokenizer([], special_tokens=[], id_map=[0, 1, 2])
    with pytest.raises(ConfigError, match="gives id 0 to both 0 and 1"):
        Tokenizer([], special_tokens=[], id_map=[0, 0, *range(2, 256)])


def test_damaged_id_map_section(tmp_path: Path) -> None:
    bad = [1, 1, *range(2, 256)]
    image = encode_tokenizer_bin([], "gpt2", [], "id", None, bad)
    with pytest.raises(FormatError, match=r"offset 146: id_map gives id 1 to both 0 and 1"):
        Tokenizer.from_bytes(image)
