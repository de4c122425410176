"""Hugging Face `tokenizer.json` holding byte-level BPE, in and out (docs/interop.md).  Its
model section is GPT-2's vocab.json and merges.txt in one JSON file (mnemo/formats/gpt2.py).

Plain Python (not compiled): parsing and checking whole files once.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

from mnemo.errors import FormatError
from mnemo.fileio import write_atomic
from mnemo.formats.common import PathLike, assemble, excerpt, load_json, string_to_token, token_to_string
from mnemo.formats.gpt2 import gpt2_merges, gpt2_vocab, vocab_from_json
from mnemo.pretokenize import PATTERN_REGEX
from mnemo.tokenizer import Tokenizer

HF_GPT2_REGEX: Final = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def to_hf_json(tok: Tokenizer) -> dict[str, Any]:
    """A Hugging Face `tokenizer.json` (as a dict) that encodes as `tok` does."""
    specials = {i: s for s, i in tok.special_tokens.items()}
    vocab = gpt2_vocab(tok)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": s,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i, s in sorted(specials.items())
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": PATTERN_REGEX[tok.pattern]},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {k: v for k, v in vocab.items() if v not in specials},
            "merges": [[a, b] for a, b in gpt2_merges(tok)],
        },
    }


def save_hf(tok: Tokenizer, path: PathLike) -> None:
    """Write a Hugging Face tokenizer.json."""
    write_atomic(path, json.dumps(to_hf_json(tok), ensure_ascii=False, indent=1).encode("utf-8"))


def _hf_pattern(pre: Any, source: str) -> str:
    """The mnemo pattern a byte-level pre-tokenizer runs, or a FormatError naming the key."""

    def not_byte_level(key: str, value: Any) -> FormatError:
        return FormatError(
            f"{source}: key {key!r} is {excerpt(value, 120)}: mnemo imports byte-level BPE only "
            f"(a Split on one of mnemo's patterns followed by ByteLevel without its regex, or GPT-2's ByteLevel)"
        )

    if not isinstance(pre, dict):
        raise not_byte_level("pre_tokenizer", pre)
    if pre.get("type") == "ByteLevel":
        if pre.get("use_regex", True) is not True or pre.get("add_prefix_space", False) is not False:
            raise not_byte_level("pre_tokenizer", pre)
        return "gpt2"
    steps = pre.get("pretokenizers")
    if pre.get("type") != "Sequence" or not isinstance(steps, list) or len(steps) != 2:
        raise not_byte_level("pre_tokenizer", pre)
    first, second = steps
    key = "pre_tokenizer.pretokenizers[0]"
    if not isinstance(first, dict) or first.get("type") != "Split":
        raise not_byte_level(key, first)
    regex = first.get("pattern", {}).get("Regex") if isinstance(first.get("pattern"), dict) else None
    if first.get("behavior") != "Isolated" or first.get("invert", False) is not False:
        raise not_byte_level(key, first)
    if (
        not isinstance(second, dict)
        or second.get("type") != "ByteLevel"
        or second.get("use_regex", True) is not False
        or second.get("add_prefix_space", False) is not False
    ):
        raise not_byte_level("pre_tokenizer.pretokenizers[1]", second)
    for name, text in PATTERN_REGEX.items():
        if regex == text:
            return name
    if regex == HF_GPT2_REGEX:
        return "gpt2"
    raise FormatError(
        f"{source}: key '{key}.pattern.Regex' is {regex!r}, which is none of mnemo's patterns "
        f"({', '.join(PATTERN_REGEX)}; docs/pretokenizer.md)"
    )


def from_hf_json(obj: Any, source: str = "<tokenizer.json>") -> Tokenizer:
    """A Tokenizer from a parsed Hugging Face tokenizer.json holding byte-level BPE."""
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: not a JSON object")
    model = obj.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        kind = model.get("type") if isinstance(model, dict) else model
        raise FormatError(f"{source}: key 'model.type' is {kind!r}: mnemo imports byte-level BPE only")
    if obj.get("normalizer") is not None:
        raise FormatError(f"{source}: key 'normalizer' is set: mnemo imports byte-level BPE without a normalizer")
    for key, ok in (
        ("dropout", None),
        ("continuing_subword_prefix", None),
        ("end_of_word_suffix", None),
    ):
        if model.get(key) not in (ok, ""):
            raise FormatError(f"{source}: key 'model.{key}' is {model.get(key)!r}; mnemo needs it unset")
    if model.get("byte_fallback", False) or model.get("ignore_merges", False):
        raise FormatError(f"{source}: keys 'model.byte_fallback' / 'model.ignore_merges' must be false")
    pattern = _hf_pattern(obj.get("pre_tokenizer"), source)
    decoder = obj.get("decoder")
    if not isinstance(decoder, dict) or decoder.get("type") != "ByteLevel":
        raise FormatError(f"{source}: key 'decoder' is {excerpt(decoder, 80)}: not a ByteLevel decoder")
    specials: dict[str, int] = {}
    added_tokens = obj.get("added_tokens")
    if added_tokens is None:
        added_tokens = []
    if not isinstance(added_tokens, list):
        raise FormatError(
            f"{source}: key 'added_tokens' is {excerpt(added_tokens, 80)}, not a list of {{'id', 'content'}} objects"
        )
    for j, added in enumerate(added_tokens):
        if not isinstance(added, dict) or not isinstance(added.get("content"), str) or not isinstance(added.get("id"), int):
            raise FormatError(f"{source}: key 'added_tokens[{j}]' needs a string 'content' and an integer 'id'")
        if added["content"] in specials:
            raise FormatError(f"{source}: key 'added_tokens[{j}]': the content {added['content']!r} is listed twice")
        specials[added["content"]] = added["id"]
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise FormatError(f"{source}: key 'model.vocab' should be an object mapping tokens to ids")
    plain: dict[str, Any] = {}
    for key, value in raw_vocab.items():
        if key in specials:
            if value != specials[key]:
                raise FormatError(
                    f"{source}: key 'model.vocab'[{key!r}] is id {value!r} but added_tokens gives it {specials[key]}"
                )
            continue
        plain[key] = value
    vocab = vocab_from_json(plain, source, "model.vocab.")
    raw_merges = model.get("merges")
    if not isinstance(raw_merges, list):
        raise FormatError(f"{source}: key 'model.merges' should be a list")
    merges: list[tuple[bytes, bytes]] = []
    for k, item in enumerate(raw_merges):
        where = f"{source}: key 'model.merges[{k}]'"
        if isinstance(item, str):
            parts: Any = item.split(" ")
        else:
            parts = item
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            raise FormatError(f"{where}: {item!r} should be two tokens")
        merges.append((string_to_token(parts[0], where), string_to_token(parts[1], where)))
    return assemble(
        source,
        vocab,
        merges,
        pattern=pattern,
        specials=specials,
        merge_where=lambda k: f"key 'model.merges[{k}]'",
        vocab_where=lambda raw: f"'model.vocab'[{token_to_string(raw)!r}]",
    )


def load_hf(path: PathLike) -> Tokenizer:
    """A Tokenizer from a Hugging Face tokenizer.json holding byte-level BPE."""
    return from_hf_json(load_json(path, "tokenizer.json"), os.fspath(path))
