"""A superword tokenizer's file, until tokenizer.bin version 3 holds its two fields.

A superword tokenizer (docs/superword.md) is a tokenizer.bin image -- its merges, stage-1
pattern, special tokens, tie rule and merge counts -- plus what ordinary tokenizer.bin has no
field for: the stage-2 rule and the transition (the first id a stage-2 merge makes).  Version 1
and 2 readers refuse unknown flags and trailing bytes, so the two fields cannot ride along;
this container puts a small header before the image instead (docs/formats.md):

    offset  size  field
         0     8  magic MNEMOSWB
         8     2  container version, 1
        10     1  stage-2 rule: 0 superword (mnemo.superword.RULES)
        11     1  reserved, 0
        12     4  transition T: merges making ids >= T are stage 2's (256 <= T <= 256 + merges)
        16     4  length of the tokenizer.bin image that follows, to the end of the file
        20        the tokenizer.bin image (its own CRC covers it)

Plain tokenizers never use it: their files are byte for byte what they were.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

from mnemo.errors import FormatError
from mnemo.superword import RULES
from mnemo.vocab import TokenizerFields
from mnemo.vocabfile import encode_tokenizer_bin, parse_tokenizer_bin

SUPERWORD_MAGIC: Final = b"MNEMOSWB"
SUPERWORD_VERSION: Final = 1
SUPERWORD_HEADER: Final = struct.Struct("<8sHBBII")  # 20 bytes


def is_superword_bin(data: bytes) -> bool:
    return data[:8] == SUPERWORD_MAGIC


def encode_superword_bin(
    merges: Sequence[tuple[int, int]],
    pattern: str,
    special_tokens: Sequence[str],
    tie: str,
    merge_counts: Sequence[int] | None,
    transition: int,
    rule: str,
) -> bytes:
    inner = encode_tokenizer_bin(merges, pattern, special_tokens, tie, merge_counts)
    return SUPERWORD_HEADER.pack(SUPERWORD_MAGIC, SUPERWORD_VERSION, RULES.index(rule), 0, transition, len(inner)) + inner


def parse_superword_bin(data: bytes, source: str) -> tuple[TokenizerFields, int, str]:
    """(fields of the image, transition, stage-2 rule); FormatError naming the offset."""

    def fail(offset: int, what: str) -> FormatError:
        return FormatError(f"{source}: offset {offset}: {what}")

    if len(data) < SUPERWORD_HEADER.size:
        raise fail(len(data), f"truncated: a superword tokenizer's header needs {SUPERWORD_HEADER.size} bytes")
    magic, version, rule, reserved, transition, length = SUPERWORD_HEADER.unpack_from(data, 0)
    if magic != SUPERWORD_MAGIC:
        raise fail(0, f"bad magic {magic!r} (expected {SUPERWORD_MAGIC!r})")
    if version != SUPERWORD_VERSION:
        raise fail(8, f"superword container version {version} is not supported (this mnemo reads {SUPERWORD_VERSION})")
    if rule >= len(RULES):
        raise fail(10, f"unknown stage-2 rule id {rule} (known: {', '.join(RULES)})")
    if reserved != 0:
        raise fail(11, f"reserved field is {reserved}, expected 0")
    if length != len(data) - SUPERWORD_HEADER.size:
        raise fail(16, f"the header announces a {length}-byte image, the file holds {len(data) - SUPERWORD_HEADER.size}")
    fields = parse_tokenizer_bin(data[SUPERWORD_HEADER.size :], f"{source} (its tokenizer.bin image at offset {SUPERWORD_HEADER.size})")
    if not 256 <= transition <= 256 + len(fields.merges):
        raise fail(12, f"transition {transition} is outside 256..{256 + len(fields.merges)} (256 + the merges)")
    if fields.id_map is not None:
        raise fail(SUPERWORD_HEADER.size, "a superword tokenizer has no id map")
    return fields, transition, RULES[rule]
