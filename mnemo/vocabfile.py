"""tokenizer.bin: a trained vocabulary as one file (layout in docs/formats.md, little-endian).

The reader validates everything and raises FormatError naming the file, the offset and what to do;
no input makes it crash.  Files are written through `fileio.write_atomic`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from mnemo.constants import MAX_SPECIALS, MAX_TOKEN_ID, MAX_VOCAB, PATTERNS, TIES, VOCAB16
from mnemo.errors import FormatError

BIN_MAGIC: Final = b"MNEMOBPE"
#: Version 1 stores ids as uint16; version 2 (same header) as uint32, for vocabularies with ids of
#: 65,536 and more or with holes in their id space (docs/formats.md).  The writer picks version 1
#: whenever it can hold the tokenizer, so those files stay readable by every earlier mnemo.
BIN_VERSION: Final = 2
BIN_VERSIONS: Final = (1, 2)
BIN_HEADER: Final = struct.Struct("<8sHHIHBBIII")  # 32 bytes
BIN_FLAG_COUNTS: Final = 1
BIN_FLAG_ID_MAP: Final = 2  # imported vocabularies: public id of each id (docs/interop.md)
MAX_SPECIAL_BYTES: Final = 255  # a special token's name: one length byte, then its UTF-8
#: The largest valid tokenizer.bin (version 2): the header, then with m merges and s specials
#: (256 + m + s <= MAX_VOCAB, s <= MAX_SPECIALS) 8 bytes a merge, at most 1 + 255 bytes a special,
#: 8 bytes a merge count and 4 bytes an id of the id map: 32 + 16 x 2,097,152 + 256 x 65,535 +
#: 4 x 2,097,152 = 58,720,032 bytes (a bound: specials take the place of merges).  Loaders read at
#: most one byte more.
MAX_BIN_BYTES: Final = 32 + 16 * MAX_VOCAB + (1 + MAX_SPECIAL_BYTES) * MAX_SPECIALS + 4 * MAX_VOCAB


@dataclass(frozen=True)
class TokenizerFields:
    """What a tokenizer.bin holds, validated."""

    merges: list[tuple[int, int]]
    pattern: str
    special_tokens: list[str]
    tie: str
    merge_counts: list[int] | None
    id_map: list[int] | None = None


def bin_version_for(n_vocab: int, id_map: Sequence[int] | None) -> int:
    """1 when every id, mnemo's and public, fits in 16 bits and the id map has no holes; else 2."""
    if n_vocab > VOCAB16:
        return 2
    if id_map is not None and (max(id_map, default=0) >= n_vocab):
        return 2
    return 1


def encode_tokenizer_bin(
    merges: Sequence[tuple[int, int]],
    pattern: str,
    special_tokens: Sequence[str],
    tie: str,
    merge_counts: Sequence[int] | None,
    id_map: Sequence[int] | None = None,
    version: int | None = None,
) -> bytes:
    """Serialize without validating (Tokenizer validated; tests build bad files through this).
    `version` None: the oldest version that holds these ids (bin_version_for)."""
    if version is None:
        version = bin_version_for(256 + len(merges) + len(special_tokens), id_map)
    id_type = "<u2" if version == 1 else "<u4"
    flat = np.asarray(merges, dtype=id_type).reshape(-1)
    body = [flat.tobytes()]
    specials = b"".join(bytes([len(s.encode("utf-8"))]) + s.encode("utf-8") for s in special_tokens)
    body.append(specials)
    flags = 0
    if merge_counts is not None:
        flags |= BIN_FLAG_COUNTS
        body.append(np.asarray(merge_counts, dtype="<u8").tobytes())
    if id_map is not None:
        flags |= BIN_FLAG_ID_MAP
        body.append(np.asarray(id_map, dtype=id_type).tobytes())
    payload = b"".join(body)
    header = BIN_HEADER.pack(
        BIN_MAGIC,
        version,
        flags,
        len(merges),
        len(special_tokens),
        PATTERNS.index(pattern),
        TIES.index(tie),
        len(specials),
        zlib.crc32(payload),
        0,
    )
    return header + payload


def parse_tokenizer_bin(data: bytes, source: str) -> TokenizerFields:
    """Validate a whole tokenizer.bin image and return its fields.  `source` names it in errors."""

    def fail(offset: int, what: str) -> FormatError:
        return FormatError(f"{source}: offset {offset}: {what}")

    size = len(data)
    if size < BIN_HEADER.size:
        raise fail(size, f"truncated: the file has {size} bytes, the header alone needs {BIN_HEADER.size}")
    magic, version, flags, n_merges, n_specials, pattern_id, tie_id, specials_size, crc, reserved = (
        BIN_HEADER.unpack_from(data, 0)
    )
    if magic != BIN_MAGIC:
        raise fail(0, f"bad magic {magic!r} (expected {BIN_MAGIC!r}): not a mnemo tokenizer.bin")
    if version not in BIN_VERSIONS:
        raise fail(8, f"format version {version} is not supported (this mnemo reads versions 1 and {BIN_VERSION})")
    id_size = 2 if version == 1 else 4
    id_type = "<u2" if version == 1 else "<u4"
    if flags & ~(BIN_FLAG_COUNTS | BIN_FLAG_ID_MAP):
        raise fail(10, f"unknown flags 0x{flags:04x} (a newer mnemo wrote this file?)")
    if pattern_id >= len(PATTERNS):
        raise fail(18, f"unknown pattern id {pattern_id} (known: {', '.join(PATTERNS)})")
    if tie_id >= len(TIES):
        raise fail(19, f"unknown tie rule id {tie_id} (known: {', '.join(TIES)})")
    if reserved != 0:
        raise fail(28, f"reserved field is {reserved}, expected 0")
    n_vocab = 256 + n_merges + n_specials
    most = VOCAB16 if version == 1 else MAX_VOCAB
    if n_vocab > most:
        raise fail(12, f"{n_merges} merges + {n_specials} specials give {n_vocab} ids, more than {most} (version {version})")
    has_counts = bool(flags & BIN_FLAG_COUNTS)
    has_map = bool(flags & BIN_FLAG_ID_MAP)
    merges_at = BIN_HEADER.size
    specials_at = merges_at + 2 * id_size * n_merges
    counts_at = specials_at + specials_size
    map_at = counts_at + (8 * n_merges if has_counts else 0)
    expected = map_at + (id_size * n_vocab if has_map else 0)
    if size < expected:
        raise fail(size, f"truncated: the header announces {expected} bytes, the file has {size}")
    if size > expected:
        raise fail(expected, f"{size - expected} trailing bytes after the end announced by the header")
    actual_crc = zlib.crc32(memoryview(data)[BIN_HEADER.size :])
    if actual_crc != crc:
        raise fail(24, f"checksum mismatch (stored 0x{crc:08x}, computed 0x{actual_crc:08x}): the file is damaged")

    pairs = np.frombuffer(data, dtype=id_type, count=2 * n_merges, offset=merges_at).reshape(-1, 2)
    merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in pairs.tolist()]
    seen: dict[tuple[int, int], int] = {}
    for k, pair in enumerate(merges):
        own = 256 + k
        for part in pair:
            if part >= own:
                raise fail(
                    merges_at + 2 * id_size * k,
                    f"merge {k} (id {own}) uses token {part}, which does not exist yet (parts must be < {own})",
                )
        first = seen.setdefault(pair, k)
        if first != k:
            raise fail(merges_at + 2 * id_size * k, f"merge {k} repeats the pair {pair} of merge {first}")

    specials: list[str] = []
    listed: dict[str, int] = {}  # name -> index: a list's `in` made 65,280 specials take 45 s
    pos = specials_at
    for j in range(n_specials):
        if pos >= counts_at:
            raise fail(pos, f"special token {j} of {n_specials} starts past the end of the specials section")
        length = data[pos]
        if length == 0:
            raise fail(pos, f"special token {j} has an empty name")
        if pos + 1 + length > counts_at:
            raise fail(pos, f"special token {j} ({length} bytes) runs past the end of the specials section")
        raw = data[pos + 1 : pos + 1 + length]
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise fail(pos + 1, f"special token {j} name {raw!r} is not valid UTF-8") from None
        first_j = listed.setdefault(name, j)
        if first_j != j:
            raise fail(pos, f"special token {j} {name!r} is listed twice (first as special token {first_j})")
        specials.append(name)
        pos += 1 + length
    if pos != counts_at:
        raise fail(pos, f"{counts_at - pos} unused bytes at the end of the specials section")

    counts: list[int] | None = None
    if has_counts:
        counts = [int(c) for c in np.frombuffer(data, dtype="<u8", count=n_merges, offset=counts_at).tolist()]
    id_map: list[int] | None = None
    if has_map:
        id_map = [int(i) for i in np.frombuffer(data, dtype=id_type, count=n_vocab, offset=map_at).tolist()]
        # Version 1 maps ids onto 0..n_vocab-1; version 2 may leave holes (cl100k_base's unused ids).
        top = n_vocab - 1 if version == 1 else MAX_TOKEN_ID
        owner: dict[int, int] = {}
        for i, public in enumerate(id_map):
            if public > top:
                raise fail(map_at + id_size * i, f"id map: id {i} is renumbered {public}, outside 0..{top}")
            first = owner.setdefault(public, i)
            if first != i:
                raise fail(map_at + id_size * i, f"id map: ids {first} and {i} are both renumbered {public}")
    return TokenizerFields(merges, PATTERNS[pattern_id], specials, TIES[tie_id], counts, id_map)


assert BIN_HEADER.size == 32, "header layout changed"
