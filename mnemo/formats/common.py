"""What the byte-level formats share (mnemo/formats/): GPT-2's printable byte alphabet, which
vocab.json, merges.txt and tokenizer.json spell tokens in and every importer's messages show them
in; the one assembler every importer goes through; and bounded reads of text and JSON files.

Plain Python (not compiled): parsing and checking whole files once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from mnemo.checks import check_pattern
from mnemo.constants import PATTERNS
from mnemo.errors import ConfigError, FormatError
from mnemo.fileio import read_file
from mnemo.patterns import SplitPattern, compile_pattern
from mnemo.pretokenize import PATTERN_REGEX
from mnemo.tokenizer import Tokenizer
from mnemo.vocab import TokenizerFields, as_format_error, check_size, check_special_tokens, from_byte_tokens

PathLike = str | os.PathLike[str]


def refuse_superword(tok: Tokenizer, what: str) -> None:
    """Other tools' files hold one pre-tokenizer and one merge list: a superword tokenizer's
    second stage (docs/superword.md) cannot be written into them, and the file would encode
    differently.  ConfigError instead of a silently different tokenizer."""
    if tok.superword is not None:
        raise ConfigError(
            f"{what} cannot hold a superword tokenizer (its merges from id {tok.superword} on apply inside "
            f"coarse chunks, which that format has no place for); keep it as a mnemo tokenizer.bin"
        )


# ---- GPT-2's printable byte alphabet ----


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable alphabet for the 256 bytes (its encoder.py): byte value -> character.

    Printable Latin-1 bytes stand for themselves; the other 68 (controls, space, 0x7f-0xa0,
    0xad) become chr(256), chr(257), ... in byte order, so every token is printable text.
    """
    printable = {*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    table: dict[int, str] = {}
    extra = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_CHAR: Final = bytes_to_unicode()
CHAR_TO_BYTE: Final = {c: b for b, c in BYTE_TO_CHAR.items()}
#: str.translate's table from GPT-2's alphabet to Latin-1: each of its characters becomes the
#: character of its byte's value, and each other character below 256 becomes U+FFFF, so that
#: encoding the result as Latin-1 fails for any string outside the alphabet (a character above
#: 255 that is not in it is left as it is, and fails the same way).
_TO_LATIN1: Final = {**{c: 0xFFFF for c in range(256)}, **{ord(c): b for c, b in CHAR_TO_BYTE.items()}}


def token_to_string(raw: bytes) -> str:
    """A token's bytes spelt in GPT-2's alphabet (b" the" -> "Ġthe")."""
    return "".join([BYTE_TO_CHAR[b] for b in raw])


def token_bytes(text: str) -> bytes | None:
    """The bytes a GPT-2-alphabet string stands for, or None when a character is not in the
    alphabet (string_to_token words the error).  One translate and one encode, not a lookup a
    character: a tokenizer.json holds 300,000 such strings (o200k)."""
    try:
        return text.translate(_TO_LATIN1).encode("latin-1")
    except UnicodeEncodeError:
        return None


def string_to_token(text: str, where: str | Callable[[], str]) -> bytes:
    """The bytes a GPT-2-alphabet string stands for; FormatError (naming `where`, or what it
    returns: callers in loops pass a function, so that the name is made only for an error)
    otherwise."""
    raw = token_bytes(text)
    if raw is not None:
        return raw
    bad = next(c for c in text if c not in CHAR_TO_BYTE)
    raise FormatError(
        f"{where if isinstance(where, str) else where()}: token {text!r} holds {bad!r}, which is not in GPT-2's "
        f"byte alphabet (this is not a byte-level BPE vocabulary)"
    )


# ---- the one assembler every importer goes through ----


def _show(raw: bytes) -> str:
    return repr(token_to_string(raw))


def assemble(
    source: str,
    vocab: Mapping[bytes, int],
    merges: Sequence[tuple[bytes, bytes]],
    *,
    pattern: str | SplitPattern,
    specials: Mapping[str, int] | None = None,
    merge_where: Callable[[int], str] = lambda k: f"merge {k}",
    vocab_where: Callable[[bytes], str] = _show,
    leftover_name: Callable[[bytes], str] | None = None,
) -> Tokenizer:
    """A Tokenizer from byte-level tokens with their ids (vocab.from_byte_tokens, tokens spelt in
    GPT-2's alphabet in messages); a vocabulary rule the source breaks is a FormatError."""
    fields = from_byte_tokens(
        source,
        vocab,
        merges,
        pattern=pattern,
        specials=specials,
        show=_show,
        merge_where=merge_where,
        vocab_where=vocab_where,
        leftover_name=leftover_name,
    )
    return tokenizer_of(source, fields, built=True)


def tokenizer_of(source: str, fields: TokenizerFields, *, built: bool = False) -> Tokenizer:
    """The Tokenizer of an importer's fields (a ranked vocabulary's too: vocab.from_ranks); a
    vocabulary rule the source breaks is a FormatError naming it.

    `built`: the fields are vocab.from_byte_tokens' (not ranked), whose merges glue bytes or
    earlier merges, each pair once, by construction, and whose ids check_public_ids checked; only
    the other rules (the pattern, the special names, the size) are checked here, not every merge
    and id again (that second pass was a quarter of loading cl100k_base's tokenizer.json)."""
    try:
        if built and not fields.ranked and not fields.whole_tokens:
            pattern = fields.pattern
            names = check_special_tokens(fields.special_tokens)
            check_size(len(fields.merges), len(names), ConfigError)
            compiled = compile_pattern(pattern if isinstance(pattern, SplitPattern) else check_pattern(pattern))
            return Tokenizer._from_checked(replace(fields, pattern=compiled, special_tokens=names))
        return Tokenizer(
            fields.merges,
            pattern=fields.pattern,
            special_tokens=fields.special_tokens,
            id_map=fields.id_map,
            whole_tokens=fields.whole_tokens,
            ranked=fields.ranked,
        )
    except ConfigError as exc:
        raise as_format_error(source, exc) from None


# ---- bounded reads of text and JSON files ----

#: The largest vocab.json, merges.txt, .tiktoken or tokenizer.json mnemo reads.  A vocabulary of
#: MAX_VOCAB = 65,536 ids makes files of a few MB (GPT-2's vocab.json is 1.0 MB, its merges.txt
#: 0.5 MB; cl100k_base.tiktoken, with 100,256 ids, 1.7 MB; Llama 3's tokenizer.json, 128,256 ids,
#: 9 MB): 64 MiB leaves room for long tokens, and bounds what a wrong path can cost.
MAX_TEXT_FILE_BYTES: Final = 64 << 20


def read_text(path: PathLike, what: str) -> str:
    return utf8_text(read_file(path, MAX_TEXT_FILE_BYTES, what), os.fspath(path))


def utf8_text(data: bytes, source: str) -> str:
    """The bytes of the file `source` as text: a FormatError at the first offset that is not
    UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{source}: offset {exc.start}: not valid UTF-8") from None


def excerpt(value: Any, limit: int) -> str:
    """The start of a parsed JSON value, for a message (a value nested deeper than json.dumps
    goes is described instead)."""
    try:
        return json.dumps(value)[:limit]
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} nested too deeply to show"


def load_json(path: PathLike, what: str) -> Any:
    return parse_json(read_text(path, what), os.fspath(path), what)


def parse_json(text: str, source: str, what: str) -> Any:
    """The JSON `text` of the file `source` (a `what`), each object's keys listed once: a
    FormatError naming the file and the place otherwise."""

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):  # then find the first key listed twice, for the message
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise FormatError(f"{source}: key {key!r} appears twice")
                seen.add(key)
        return out

    try:
        return json.loads(text, object_pairs_hook=no_repeats)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{source}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise FormatError(f"{source}: the JSON is nested too deeply to read: not a {what}") from None


# ---- what other tools' files say about themselves ----


def pattern_for_regex(pattern: str) -> str:
    """The mnemo pattern for a split regex a file or a caller gives (tiktoken's `pat_str`, a tekken
    file's `pattern`): a pattern's name as it is, the regex of one of mnemo's patterns as that
    name, any other regex as it is (the pattern check says whether this mnemo runs it)."""
    if pattern in PATTERNS:
        return pattern
    return next((name for name, regex in PATTERN_REGEX.items() if regex == pattern), pattern)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A protobuf varint at data[at:]: (value, offset after it); (-1, at) when there is none."""
    value = shift = 0
    while at < len(data) and shift < 64:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
    return -1, at


def is_sentencepiece(data: bytes) -> bool:
    """Whether `data` starts as a SentencePiece model does (`tokenizer.model` of Llama 2, Mistral's
    v1-v3, Gemma): a protobuf ModelProto whose first field is a SentencePiece message -- field 1,
    the piece (UTF-8), field 2, its score (a float), maybe field 3, its type -- ending where its
    length says."""
    if data[:1] != b"\x0a":
        return False
    size, at = _varint(data, 1)
    end = at + size
    if size < 7 or end > len(data) or data[at : at + 1] != b"\x0a":
        return False
    n, at = _varint(data, at + 1)
    if n < 0 or at + n + 5 > end:
        return False
    try:
        data[at : at + n].decode("utf-8")
    except UnicodeDecodeError:
        return False
    at += n
    if data[at : at + 1] != b"\x15":
        return False
    at += 5
    if at < end and data[at : at + 1] == b"\x18":
        _, at = _varint(data, at + 1)
    return at == end


def sentencepiece_error(source: str, what: str) -> FormatError:
    """The error for a SentencePiece model given where `what` was expected."""
    return FormatError(
        f"{source}: this is a SentencePiece model (a protobuf .model file), not {what}.  mnemo reads "
        f"byte-level BPE vocabularies (tiktoken ranks, tekken JSON, tokenizer.json, GPT-2 files); a "
        f"SentencePiece model's pieces are not byte-level and it has no such form: use the "
        f"`sentencepiece` package for it, or the model's tokenizer.json if it has one"
    )
