"""GPT-2's files: `vocab.json` (encoder.json) and `merges.txt` (vocab.bpe), in and out
(docs/interop.md).  Tokens are spelt in GPT-2's printable byte alphabet (mnemo/formats/common.py).

Plain Python (not compiled): parsing and checking whole files once.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mnemo.defaults import DEFAULT_GPT2_PATTERN
from mnemo.errors import ConfigError, FormatError
from mnemo.fileio import write_atomic
from mnemo.checks import check_pattern
from mnemo.patterns import compile_pattern
from mnemo.formats.common import PathLike, assemble, load_json, read_text, refuse_superword, string_to_token, token_bytes, token_to_string
from mnemo.tokenizer import Tokenizer


def vocab_from_json(obj: Any, source: str, where: str = "") -> dict[bytes, int]:
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: {where or 'the file'} should be a JSON object mapping tokens to ids")
    vocab: dict[bytes, int] = {}
    for key, value in obj.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise FormatError(f"{source}: key {where}{key!r}: the id {value!r} is not an integer")
        raw = token_bytes(key)
        if raw is None:
            raw = string_to_token(key, f"{source}: key {where}{key!r}")  # words the error
        vocab[raw] = value
    return vocab


def parse_merges_txt(text: str, source: str) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    """merges.txt as byte pairs, with the 1-based line of each (a `#version` first line is skipped)."""
    merges: list[tuple[bytes, bytes]] = []
    lines: list[int] = []
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line or (n == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise FormatError(f"{source}: line {n}: {line!r} should be two tokens separated by one space")
        where = f"{source}: line {n}"
        merges.append((string_to_token(parts[0], where), string_to_token(parts[1], where)))
        lines.append(n)
    return merges, lines


def load_gpt2(
    vocab_path: PathLike, merges_path: PathLike, *, pattern: str = DEFAULT_GPT2_PATTERN, unicode: str | None = None
) -> Tokenizer:
    """A Tokenizer from GPT-2's `vocab.json` (encoder.json) and `merges.txt` (vocab.bpe).

    Vocabulary entries that no merge makes (`<|endoftext|>`) become special tokens with their ids.
    `unicode`: the Unicode version the pattern's classes follow -- "tokenizers" for the ids
    Hugging Face tokenizers gives on every code point; None: the pattern's default, mnemo's own
    for the named patterns (docs/pretokenizer.md, 'Unicode versions').
    """
    vsource, msource = os.fspath(vocab_path), os.fspath(merges_path)
    vocab = vocab_from_json(load_json(vocab_path, "vocab.json"), vsource)
    merges, lines = parse_merges_txt(read_text(merges_path, "merges.txt"), msource)
    return assemble(
        f"{vsource} + {msource}",
        vocab,
        merges,
        pattern=compile_pattern(check_pattern(pattern), unicode),
        merge_where=lambda k: f"{msource}: line {lines[k]}",
        leftover_name=token_to_string,  # the vocab.json key itself
    )


def gpt2_vocab(tok: Tokenizer) -> dict[str, int]:
    """The vocab.json mapping: GPT-2-alphabet token -> id; special tokens under their names."""
    refuse_superword(tok, "GPT-2's vocab.json + merges.txt (and Hugging Face's tokenizer.json)")
    specials = {i: s for s, i in tok.special_tokens.items()}
    out: dict[str, int] = {}
    for i, raw in tok.vocab.items():  # no holes
        key = specials.get(i)
        if key is None:
            key = token_to_string(raw)
        if key in out:
            raise ConfigError(f"ids {out[key]} and {i} are both {key!r}: a vocab.json cannot hold both")
        out[key] = i
    return out


def gpt2_merges(tok: Tokenizer) -> list[tuple[str, str]]:
    """The merges in priority order, spelt in GPT-2's alphabet.  A ranked tokenizer (tiktoken's
    rule, docs/formats.md "Rank semantics") has none that GPT-2's rule would read the same way:
    ConfigError."""
    if tok.ranked:
        raise ConfigError(
            f"this tokenizer is ranked (tiktoken's rule: {len(tok.whole_tokens)} tokens no merge makes, or merges "
            f"that use later ones), which merges.txt and tokenizer.json without ignore_merges cannot express: "
            f"export it with save_tiktoken"
        )
    refuse_superword(tok, "GPT-2's merges.txt")
    return [(token_to_string(a), token_to_string(b)) for a, b in tok.merge_pairs]


def save_gpt2(tok: Tokenizer, vocab_path: PathLike, merges_path: PathLike) -> None:
    """Write vocab.json and merges.txt (with OpenAI's `#version: 0.2` first line)."""
    vocab = json.dumps(gpt2_vocab(tok), ensure_ascii=False)
    lines = ["#version: 0.2", *(f"{a} {b}" for a, b in gpt2_merges(tok))]
    write_atomic(vocab_path, vocab.encode("utf-8"))
    write_atomic(merges_path, ("\n".join(lines) + "\n").encode("utf-8"))

