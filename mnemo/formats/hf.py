"""Hugging Face `tokenizer.json` holding byte-level BPE, in and out (docs/interop.md).  Its
model section is GPT-2's vocab.json and merges.txt in one JSON file (mnemo/formats/gpt2.py).

Plain Python (not compiled): parsing and checking whole files once.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mnemo.fileio import write_atomic
from mnemo.formats.common import PathLike
from mnemo.formats.gpt2 import gpt2_merges, gpt2_vocab
from mnemo.formats.hf_file import read_json_file
from mnemo.formats.hf_pipeline import HF_GPT2_REGEX, HFTokenizer, from_json
from mnemo.formats.hf_regex import regex_to_onig
from mnemo.patterns import regex_of
from mnemo.tokenizer import Tokenizer


__all__ = ["HF_GPT2_REGEX", "HFTokenizer", "from_hf_json", "load_hf", "save_hf", "to_hf_json"]


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
                    # spelt for Oniguruma, which reads cl100k's `\\p{N}{1,3}+` as a repeated group
                    "pattern": {"Regex": regex_to_onig(regex_of(tok.split_pattern, "a tokenizer.json"))},
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
            # the specials too, as tokenizers' trainer writes them: tokenizers numbers an added token
            # model.vocab lacks from the vocabulary's size on, whatever id the file gives it
            "vocab": vocab,
            "merges": [[a, b] for a, b in gpt2_merges(tok)],
        },
    }


def save_hf(tok: Tokenizer, path: PathLike) -> None:
    """Write a Hugging Face tokenizer.json."""
    write_atomic(path, json.dumps(to_hf_json(tok), ensure_ascii=False, indent=1).encode("utf-8"))


def from_hf_json(
    obj: Any, source: str = "<tokenizer.json>", *, add_special_tokens: bool = False
) -> Tokenizer | HFTokenizer:
    """A tokenizer from a parsed Hugging Face tokenizer.json of the byte-level BPE family: a
    plain Tokenizer when it holds all the file says, else an HFTokenizer (mnemo/formats/
    hf_pipeline.py), which encodes as `tokenizers` does.  FormatError names the key of anything
    mnemo does not reproduce (docs/interop.md lists them).  `add_special_tokens`: encode adds
    the post-processor template's tokens (tokenizers' add_special_tokens=True)."""
    return from_json(obj, source, add_special_tokens=add_special_tokens)


def load_hf(path: PathLike, *, add_special_tokens: bool = False) -> Tokenizer | HFTokenizer:
    """A tokenizer from a Hugging Face tokenizer.json of the byte-level BPE family (from_hf_json)."""
    obj, scanned = read_json_file(path, "tokenizer.json")
    return from_json(obj, os.fspath(path), add_special_tokens=add_special_tokens, scanned=scanned)
