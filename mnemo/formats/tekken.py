"""Mistral's tekken JSON (`tekken.json`, Mistral NeMo and later): ids as mistral-common's
Tekkenizer gives them (docs/interop.md, "tekken").

A tekken file is JSON:

    {"config": {"pattern": REGEX, "num_vocab_tokens": N, "default_vocab_size": V,
                "default_num_special_tokens": S, "version": "v3"},
     "vocab": [{"rank": 0, "token_bytes": BASE64, "token_str": ...}, ...],
     "special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": true}, ...],   (v7 on)
     "image": {...}, "audio": {...}, ...}

Ids: the S special tokens come first, ids 0..S-1 (special j is its `rank`, which is j); the
vocabulary's ranks follow them, rank r being id S + r, cut at V - S ranks (the file may list
more: Mistral NeMo's lists 150,000 and uses 131,072 - 1,000).  Ranks 0..255 are the 256 bytes in
byte order.  Files without `special_tokens` (versions up to v7) have mistral-common's twenty
names (DEFAULT_SPECIALS); then, as in mistral-common, every id up to S-1 not named is
`<SPECIAL_j>`.  The split pattern is the file's own regex (single digits, no contractions,
`[\\r\\n/]*`).

Tekkenizer.encode(text, bos, eos) is `[bos] + tok.encode_ordinary(text) + [eos]`: it encodes the
text of a special token as plain text, as `encode_ordinary` does (mnemo's `encode` holds
tiktoken's contract: special-token text is an error unless allowed).  The image, audio and model
settings sections are left as they are: they add no ids.

Plain Python (not compiled): a file is read and checked once.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any, Final

from mnemo.errors import ConfigError, FormatError
from mnemo.fileio import read_file
from mnemo.formats.common import (
    MAX_TEXT_FILE_BYTES,
    PathLike,
    excerpt,
    is_sentencepiece,
    load_json,
    pattern_for_regex,
    sentencepiece_error,
)
from mnemo.formats.tiktoken import from_mergeable_ranks
from mnemo.tokenizer import Tokenizer

#: The special tokens of a tekken file that lists none (versions up to v7), ids 0-19, as
#: mistral-common names them (its Tekkenizer.DEPRECATED_SPECIAL_TOKENS).
DEFAULT_SPECIALS: Final = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
    "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)  # fmt: skip

#: The names of ids that no special token of the file names.
FILLER: Final = "<SPECIAL_{}>"

#: From this version on, a file must list its special tokens (mistral-common refuses it otherwise).
LISTED_FROM: Final = 8

VOCAB_KEYS: Final = frozenset({"rank", "token_bytes", "token_str"})


def is_tekken(obj: object) -> bool:
    """Whether a parsed JSON value is a tekken file (for `mnemo.load`): an object with a "config"
    object that has a "pattern", and a "vocab" list.  A tokenizer.json has neither."""
    if not isinstance(obj, dict):
        return False
    config = obj.get("config")
    return isinstance(config, dict) and "pattern" in config and isinstance(obj.get("vocab"), list)


def _int(config: dict[str, Any], key: str, source: str) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FormatError(f"{source}: config.{key} is {excerpt(value, 40)}, not a non-negative integer")
    return value


def _version(config: dict[str, Any], source: str) -> int:
    value = config.get("version")
    if not (isinstance(value, str) and value[:1] == "v" and value[1:].isascii() and value[1:].isdigit()):
        raise FormatError(f"{source}: config.version is {excerpt(value, 40)}, not a version such as \"v3\" or \"v7\"")
    return int(value[1:])


def _ranks(vocab: list[Any], inner: int, source: str) -> dict[bytes, int]:
    """The first `inner` entries of "vocab" as ranks (rank = the entry's place), checked."""
    if len(vocab) < inner:
        raise FormatError(
            f"{source}: vocab lists {len(vocab)} tokens, fewer than the {inner} that config's "
            f"default_vocab_size - default_num_special_tokens asks for"
        )
    ranks: dict[bytes, int] = {}
    for i, entry in enumerate(vocab[:inner]):
        where = f"{source}: vocab[{i}]"
        if not isinstance(entry, dict) or not VOCAB_KEYS.issuperset(entry) or "token_bytes" not in entry:
            raise FormatError(f"{where} is {excerpt(entry, 80)}: expected {{\"rank\", \"token_bytes\", \"token_str\"}}")
        if entry.get("rank") != i or isinstance(entry.get("rank"), bool):
            raise FormatError(f"{where} has rank {excerpt(entry.get('rank'), 20)}, not {i}: ranks are the entries' places")
        text = entry["token_bytes"]
        try:
            raw = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
        except (binascii.Error, ValueError):
            raise FormatError(f"{where}: token_bytes {excerpt(text, 40)} is not valid base64") from None
        if not raw:
            raise FormatError(f"{where}: token_bytes {excerpt(text, 40)} is not the base64 of a token")
        if i < 256 and raw != bytes([i]):
            raise FormatError(f"{where} is {raw!r}: ranks 0-255 are the bytes 0x00-0xff in order")
        if raw in ranks:
            raise FormatError(f"{where} is {raw!r} again (first vocab[{ranks[raw]}])")
        ranks[raw] = i
    return ranks


def _specials(obj: dict[str, Any], version: int, count: int, source: str) -> list[str]:
    """The `count` special tokens' names, id order: the file's list (or the default one) and fillers."""
    listed = obj.get("special_tokens")
    if listed is None:
        if version >= LISTED_FROM:
            raise FormatError(f"{source}: a version-{version} tekken file must list its special_tokens (mistral-common refuses it too)")
        names = list(DEFAULT_SPECIALS)
    else:
        if not isinstance(listed, list):
            raise FormatError(f"{source}: special_tokens is {excerpt(listed, 60)}, not a list")
        names = []
        for j, entry in enumerate(listed):
            where = f"{source}: special_tokens[{j}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("token_str"), str) or not entry["token_str"]:
                raise FormatError(f"{where} is {excerpt(entry, 80)}: expected {{\"rank\", \"token_str\", \"is_control\"}}")
            if entry.get("rank") != j or isinstance(entry.get("rank"), bool):
                raise FormatError(f"{where} ({entry['token_str']!r}) has rank {excerpt(entry.get('rank'), 20)}, not {j}")
            names.append(entry["token_str"])
    if len(names) > count:
        raise FormatError(f"{source}: {len(names)} special tokens, more than config.default_num_special_tokens = {count}")
    names += [FILLER.format(j) for j in range(len(names), count)]
    seen: dict[str, int] = {}
    for j, name in enumerate(names):
        if name in seen:
            raise FormatError(f"{source}: special token {name!r} is id {seen[name]} and id {j}: names must be unique")
        seen[name] = j
    return names


def from_tekken_json(obj: Any, source: str = "<tekken>", *, name: str | None = None, unmatched: str = "refuse") -> Tokenizer:
    """A Tokenizer from a parsed tekken file (the module docstring's ids), named `name`.
    `unmatched`: text the file's pattern does not match (formats.tiktoken.from_mergeable_ranks):
    mistral-common drops it, mnemo refuses it by default, or keeps it with "keep"."""
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: a tekken file is a JSON object, not {excerpt(obj, 40)}")
    config = obj.get("config")
    if not isinstance(config, dict):
        raise FormatError(f"{source}: no \"config\" object: not a tekken file")
    vocab = obj.get("vocab")
    if not isinstance(vocab, list):
        raise FormatError(f"{source}: no \"vocab\" list: not a tekken file")
    pattern = config.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise FormatError(f"{source}: config.pattern is {excerpt(pattern, 40)}, not a regex")
    size = _int(config, "default_vocab_size", source)
    count = _int(config, "default_num_special_tokens", source)
    version = _version(config, source)
    if not count <= size <= len(vocab) + count or size - count < 256:
        raise FormatError(
            f"{source}: config.default_vocab_size = {size} with {count} special tokens leaves {size - count} "
            f"ranks: it needs 256 to {len(vocab)} (the 256 bytes and at most the listed vocab)"
        )
    ranks = _ranks(vocab, size - count, source)
    names = _specials(obj, version, count, source)
    public = {raw: count + rank for raw, rank in ranks.items()}
    try:
        tok = from_mergeable_ranks(
            public, pattern_for_regex(pattern), {n: j for j, n in enumerate(names)}, source,
            lambda raw: f"vocab[{ranks[raw]}]", "tiktoken", name=name, unmatched=unmatched,
        )  # fmt: skip  (mistral-common splits with tiktoken: its Unicode tables)
    except ConfigError as exc:
        raise FormatError(f"{source}: config.pattern: {exc}") from None
    return tok


def load_tekken(path: PathLike, *, unmatched: str = "refuse") -> Tokenizer:
    """A Tokenizer from a tekken JSON file, named as mistral-common names it (the file's name
    without .json).  A SentencePiece model (Mistral's older tokenizer.model.v1-v3) is a
    FormatError that says so.  `unmatched` as from_tekken_json says."""
    source = os.fspath(path)
    if is_sentencepiece(read_file(path, MAX_TEXT_FILE_BYTES, "tekken file")):
        raise sentencepiece_error(source, "a tekken JSON file")
    stem = os.path.basename(source)
    stem = stem[: -len(".json")] if stem.endswith(".json") else stem
    return from_tekken_json(load_json(path, "tekken file"), source, name=stem, unmatched=unmatched)
