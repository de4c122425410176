"""tokenizer.bin: a trained vocabulary as one file (layout in docs/formats.md, little-endian).

The reader validates everything and raises FormatError naming the file, the offset and what to do;
no input makes it crash.  The layout is checked here; the vocabulary's rules (vocab.py) are the
ones `Tokenizer(...)` applies, with the offset of the offending entry.  Files are written through
`fileio.write_atomic`.

Version 3 is a header and tagged sections under one whole-file CRC-32 (the CRC field read as
zeros): versions 1 and 2 left header bytes 18 (pattern) and 19 (tie rule) outside their CRC,
so a flipped bit there loaded as another tokenizer (issue 28).  The writer writes version 3;
versions 1 and 2 are read as before (`_parse_legacy`).  The rules the whole file is checked
against are vectorized (numpy) and fall back to vocab.py's worded checks only to name the first
bad entry, so a valid file costs milliseconds, not a Python loop per merge.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from librt.vecs import vec
from mypy_extensions import i64

from mnemo.buildinfo import VERSION
from mnemo.constants import MAX_SPECIALS, MAX_TOKEN_ID, MAX_VOCAB, PATTERNS, TIES, VOCAB16
from mnemo.encode_chunk import TABLES_LAYOUT, spell_merges, tables_size
from mnemo.errors import ConfigError, FormatError, MnemoError
from mnemo.kernels import pair_list
from mnemo.patterns import SplitPattern, compile_pattern, key_of, label, pattern_from_dict, stored_id
from mnemo.superword import RULES
from mnemo.vocab import (
    MAX_SPECIAL_BYTES,
    TokenizerFields,
    check_id_map,
    check_merges,
    check_ranked,
    check_size,
    check_special_names,
    special_name_problem,
)

BIN_MAGIC: Final = b"MNEMOBPE"
BIN_VERSION: Final = 3
BIN_VERSIONS: Final = (1, 2, 3)
#: What this mnemo writes in the WRTR section; the CLI verifies a file another writer made
#: (docs/formats.md, "Trust").
WRITER: Final = f"mnemo {VERSION}"

# ---- version 3: a header, then tagged sections ----

#: magic, version, reserved (0), number of sections, file size, CRC-32, reserved (0): 32 bytes.
HEADER: Final = struct.Struct("<8sHHIQII")
CRC_AT: Final = 24
#: tag, flags, payload length: 16 bytes; the payload follows, then zeros to a multiple of 8, so
#: that every payload starts 8-aligned (numpy reads its arrays in place).
SECTION: Final = struct.Struct("<4sIQ")
ALIGN: Final = 8
#: Section flag bit 0: a reader that does not know the tag must refuse the file (the section
#: changes the ids a text gets); without it, an unknown section is skipped.  No other bit is used.
REQUIRED: Final = 1

MERGES: Final = b"MRGS"  # u32 id width W (2 or 4), u32 M, then M pairs of W-byte ids
SPECIALS: Final = b"SPEC"  # u32 S, then S x (u8 n, n bytes of UTF-8 name)
PATTERN: Final = b"PATN"  # u16 n, the pattern's label (a name or a regex), u16 m, its description ("": a named pattern on mnemo's own tables)
TIE: Final = b"TIER"  # u8 n, the tie rule's name
COUNTS: Final = b"CNTS"  # M x u64: each merge's count when it was chosen
ID_MAP: Final = b"IDMP"  # V x W-byte public ids, V = 256 + M + S
ENCODER: Final = b"ENCT"  # u32 layout, u32 M, the encoder's prebuilt tables (encode_chunk.export_tables)
WRITER_TAG: Final = b"WRTR"  # UTF-8: the program that wrote the file
RANK: Final = b"RANK"  # u32 flags (bit 0: ranked), u32 W, W x (u32 n, n bytes): a ranked vocabulary's whole tokens
STAGE2: Final = b"STG2"  # u32 transition T, u8 n, the stage-2 rule's name: a superword tokenizer (docs/superword.md)
RANKED: Final = 1
#: The most bytes a ranked vocabulary's whole tokens take together in a RANK section (Llama 3's
#: 256 are a few KB; the bound keeps the file-size bound finite).
MAX_WHOLE_BYTES: Final = 16 << 20

#: Every section this mnemo knows: whether it carries the required flag (a reader that does not
#: know it must refuse the file), and the most bytes its payload holds (the file-size bound below
#: is their sum).
KNOWN: Final[dict[bytes, tuple[bool, int]]] = {
    MERGES: (True, 8 + 8 * MAX_VOCAB),
    SPECIALS: (True, 4 + (1 + MAX_SPECIAL_BYTES) * MAX_SPECIALS),
    PATTERN: (True, 4 + 2 * 0xFFFF),
    TIE: (True, 1 + 255),
    COUNTS: (False, 8 * MAX_VOCAB),
    ID_MAP: (False, 4 * MAX_VOCAB),
    ENCODER: (False, 8 + MAX_VOCAB),
    WRITER_TAG: (False, 255),
    RANK: (True, 8 + 4 * MAX_VOCAB + MAX_WHOLE_BYTES),  # only in a ranked vocabulary's file
    STAGE2: (True, 4 + 1 + 255),  # only in a superword tokenizer's file
}
#: The sections every file has.
MANDATORY: Final = (MERGES, SPECIALS, PATTERN, TIE)


def _padded(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


# ---- versions 1 and 2 (read; written only when a test asks for them) ----

#: Version 1 stores ids as uint16; version 2 (same header) as uint32.  Header bytes 18 and 19 are
#: outside their CRC: read, never written by default.
LEGACY_HEADER: Final = struct.Struct("<8sHHIHBBIII")  # 32 bytes
BIN_FLAG_COUNTS: Final = 1
BIN_FLAG_ID_MAP: Final = 2  # imported vocabularies: public id of each id (docs/interop.md)
#: The largest version-2 file: the header, then with m merges and s specials (256 + m + s <=
#: MAX_VOCAB, s <= MAX_SPECIALS) 8 bytes a merge, at most 1 + 255 bytes a special, 8 bytes a merge
#: count and 4 bytes an id of the id map (a bound: specials take the place of merges).
MAX_LEGACY_BYTES: Final = 32 + 16 * MAX_VOCAB + (1 + MAX_SPECIAL_BYTES) * MAX_SPECIALS + 4 * MAX_VOCAB
#: The largest valid tokenizer.bin of any version this mnemo reads: the header and every known
#: section at its largest (a bound: merges and specials share MAX_VOCAB ids).  Loaders read at
#: most one byte more.
MAX_BIN_BYTES: Final = max(
    MAX_LEGACY_BYTES, HEADER.size + sum(SECTION.size + _padded(most) for _, most in KNOWN.values())
)


def id_width(n_vocab: int, id_map: Sequence[int] | None) -> int:
    """2 (uint16) when every id, mnemo's and public, fits in 16 bits and the id map has no holes;
    else 4.  The fingerprint hashes ids at this width too (docs/formats.md)."""
    if n_vocab > VOCAB16:
        return 4
    if id_map is not None and (max(id_map, default=0) >= n_vocab):
        return 4
    return 2


def encode_tokenizer_bin(
    merges: Sequence[tuple[int, int]],
    pattern: str | SplitPattern,
    special_tokens: Sequence[str],
    tie: str,
    merge_counts: Sequence[int] | None,
    id_map: Sequence[int] | None = None,
    version: int | None = None,
    encoder_tables: bytes | None = None,
    whole_tokens: Sequence[bytes] | None = None,
    superword: tuple[int, str] | None = None,
) -> bytes:
    """Serialize without validating (Tokenizer validated; tests build bad files through this).
    `version` None: version 3; 1 or 2 write the old layouts (tests of old files).
    `encoder_tables`: encode_chunk.export_tables of the tokenizer's encoder, or None.
    `whole_tokens`: a ranked vocabulary's (its RANK section, required), or None.
    `superword`: a superword tokenizer's (transition, stage-2 rule) (its STG2 section,
    required), or None."""
    if version in (1, 2):
        assert isinstance(pattern, str), "versions 1 and 2 hold a pattern name"
        return _encode_legacy(merges, pattern, special_tokens, tie, merge_counts, id_map, version)
    n_vocab = 256 + len(merges) + len(whole_tokens or ()) + len(special_tokens)
    width = id_width(n_vocab, id_map)
    id_type = "<u2" if width == 2 else "<u4"
    names = [s.encode("utf-8") for s in special_tokens]
    # A named pattern on mnemo's own tables is its name, as versions 1 and 2 stored it; any
    # other pattern is its label and, in the second string, the JSON of its steps and Unicode
    # version (patterns.SplitPattern.to_dict), which makes it again whatever the presets become.
    sp = compile_pattern(pattern)
    raw_pattern = label(sp).encode("utf-8")
    engine = b"" if stored_id(sp) is not None else key_of(sp).encode("utf-8")
    if len(raw_pattern) > 0xFFFF or len(engine) > 0xFFFF:  # PATN's u16 lengths
        raise ConfigError(f"the pattern {sp.describe()} takes more than the 65,535 bytes tokenizer.bin's PATN holds")
    sections: list[tuple[bytes, bytes]] = [
        (MERGES, struct.pack("<II", width, len(merges)) + np.asarray(merges, dtype=id_type).reshape(-1).tobytes()),
        (SPECIALS, struct.pack("<I", len(names)) + b"".join(bytes([len(n)]) + n for n in names)),
        (PATTERN, struct.pack("<H", len(raw_pattern)) + raw_pattern + struct.pack("<H", len(engine)) + engine),
        (TIE, bytes([len(tie)]) + tie.encode("ascii")),
    ]
    if whole_tokens is not None:
        whole = b"".join(struct.pack("<I", len(raw)) + raw for raw in whole_tokens)
        sections.append((RANK, struct.pack("<II", RANKED, len(whole_tokens)) + whole))
    if superword is not None:
        rule = superword[1].encode("ascii")
        sections.append((STAGE2, struct.pack("<I", superword[0]) + bytes([len(rule)]) + rule))
    if merge_counts is not None:
        sections.append((COUNTS, np.asarray(merge_counts, dtype="<u8").tobytes()))
    if id_map is not None:
        sections.append((ID_MAP, np.asarray(id_map, dtype=id_type).tobytes()))
    if encoder_tables is not None:
        sections.append((ENCODER, struct.pack("<II", TABLES_LAYOUT, len(merges)) + encoder_tables))
    sections.append((WRITER_TAG, WRITER.encode("utf-8")))
    parts: list[bytes] = []
    for tag, payload in sections:
        flags = REQUIRED if KNOWN[tag][0] else 0
        parts.append(SECTION.pack(tag, flags, len(payload)) + payload + bytes(_padded(len(payload)) - len(payload)))
    body = b"".join(parts)
    size = HEADER.size + len(body)
    image = HEADER.pack(BIN_MAGIC, BIN_VERSION, 0, len(sections), size, 0, 0) + body
    return image[:CRC_AT] + struct.pack("<I", file_crc(image)) + image[CRC_AT + 4 :]


def file_crc(data: bytes) -> int:
    """CRC-32 (zlib) of a whole version-3 image read with its CRC field (offsets 24-27) as zeros."""
    view = memoryview(data)
    return zlib.crc32(view[CRC_AT + 4 :], zlib.crc32(bytes(4), zlib.crc32(view[:CRC_AT])))


def parse_tokenizer_bin(data: bytes, source: str) -> TokenizerFields:
    """Validate a whole tokenizer.bin image and return its fields.  `source` names it in errors."""

    def fail(offset: int, what: str) -> MnemoError:
        return FormatError(f"{source}: offset {offset}: {what}")

    size = len(data)
    if size < HEADER.size:
        raise fail(size, f"truncated: the file has {size} bytes, the header alone needs {HEADER.size}")
    if data[:8] != BIN_MAGIC:
        raise fail(0, f"bad magic {data[:8]!r} (expected {BIN_MAGIC!r}): not a mnemo tokenizer.bin")
    version = int.from_bytes(data[8:10], "little")
    if version in (1, 2):
        return _parse_legacy(data, fail)
    if version != BIN_VERSION:
        raise fail(8, f"format version {version} is not supported (this mnemo reads versions 1 to {BIN_VERSION})")
    _, _, reserved, n_sections, announced, crc, reserved2 = HEADER.unpack_from(data, 0)
    if size < announced:
        raise fail(size, f"truncated: the header announces {announced} bytes, the file has {size}")
    if size > announced:
        raise fail(announced, f"{size - announced} trailing bytes after the end announced by the header")
    actual = file_crc(data)
    if actual != crc:
        raise fail(CRC_AT, f"checksum mismatch (stored 0x{crc:08x}, computed 0x{actual:08x}): the file is damaged")
    # Past the checksum the bytes are the writer's: what follows finds files no mnemo writes.
    if reserved != 0 or reserved2 != 0:
        raise fail(10 if reserved else 28, "reserved header field is not 0")
    sections = _walk_sections(data, n_sections, fail)
    for tag, (at, _, flags) in sections.items():
        known = KNOWN.get(tag)
        if known is None:
            if flags & REQUIRED:
                raise fail(
                    at - SECTION.size,
                    f"section {tag!r} is not known to this mnemo and changes how ids are made: a newer mnemo "
                    "wrote this file; upgrade mnemo to read it",
                )
            continue
        if bool(flags & REQUIRED) != known[0]:
            raise fail(at - SECTION.size + 4, f"section {tag!r} has flags 0x{flags:x}, expected 0x{int(known[0]):x}")
    for tag in MANDATORY:
        if tag not in sections:
            raise fail(HEADER.size, f"the required section {tag!r} is missing")
    return _read_sections(data, sections, fail)


def _walk_sections(data: bytes, count: int, fail: Callable[[int, str], MnemoError]) -> dict[bytes, tuple[int, int, int]]:
    """Each section's tag -> (payload offset, payload length, flags), the layout checked."""
    found: dict[bytes, tuple[int, int, int]] = {}
    pos = HEADER.size
    size = len(data)
    for j in range(count):
        if pos + SECTION.size > size:
            raise fail(pos, f"section {j} of {count} starts past the end of the file")
        tag, flags, length = SECTION.unpack_from(data, pos)
        if flags & ~REQUIRED:
            raise fail(pos + 4, f"section {tag!r} has unknown flags 0x{flags:x}")
        at = pos + SECTION.size
        end = at + _padded(length)
        if end > size:
            raise fail(pos + 8, f"section {tag!r} ({length} bytes) runs past the end of the file")
        if any(data[at + length : end]):
            raise fail(at + length, f"the padding after section {tag!r} is not zeros")
        if tag in found:
            raise fail(pos, f"section {tag!r} appears twice")
        found[tag] = (at, length, flags)
        pos = end
    if pos != size:
        raise fail(pos, f"{size - pos} bytes after the last of the {count} sections")
    return found


def _read_sections(
    data: bytes, sections: dict[bytes, tuple[int, int, int]], fail: Callable[[int, str], MnemoError]
) -> TokenizerFields:
    at, length, _ = sections[MERGES]
    if length < 8:
        raise fail(at, f"the merges section has {length} bytes, fewer than its 8-byte head")
    width, n_merges = struct.unpack_from("<II", data, at)
    if width not in (2, 4):
        raise fail(at, f"id width {width} (expected 2 or 4)")
    if length != 8 + 2 * width * n_merges:
        raise fail(at + 4, f"{n_merges} merges of {width}-byte ids need {8 + 2 * width * n_merges} bytes, the section has {length}")
    merges_at = at + 8
    id_type = "<u2" if width == 2 else "<u4"

    whole: list[bytes] = []
    ranked = RANK in sections
    if ranked:
        whole = _read_whole(data, *sections[RANK][:2], fail)

    at, length, _ = sections[SPECIALS]
    if length < 4:
        raise fail(at, f"the specials section has {length} bytes, fewer than its 4-byte count")
    (n_specials,) = struct.unpack_from("<I", data, at)
    n_vocab = check_size(n_merges + len(whole), n_specials, lambda what: fail(at, what), VOCAB16 if width == 2 else MAX_VOCAB)
    specials = _read_specials(data, at + 4, at + length, n_specials, fail)

    pairs = np.frombuffer(data, dtype=id_type, count=2 * n_merges, offset=merges_at).reshape(-1, 2)
    merges = _checked_merges(pairs, lambda k, what: fail(merges_at + 2 * width * k, what), ranked)
    if ranked and not _plainly_ranked(pairs, whole):
        # a merge made of itself through later ones, two tokens spelling the same bytes: named, at RANK
        check_ranked(merges, whole, lambda i, what: fail(sections[RANK][0], what))

    at, length, _ = sections[PATTERN]
    pattern, pattern_at, end = _read_string(data, at, at + length, 2, "pattern", fail)
    engine_tag, engine_at, end = _read_string(data, end, at + length, 2, "engine tag", fail)
    if end != at + length:
        raise fail(end, f"{at + length - end} unused bytes at the end of the pattern section")
    split_pattern: str | SplitPattern = pattern
    if not engine_tag:
        if pattern not in PATTERNS:
            raise fail(pattern_at, f"unknown pattern {pattern!r} (known: {', '.join(PATTERNS)}; any other has a description)")
    else:
        try:
            split_pattern = pattern_from_dict(json.loads(engine_tag), "its description")
        except (ValueError, RecursionError, ConfigError) as exc:
            raise fail(engine_at, f"the pattern's description is not a split pattern this mnemo can build: {exc}") from None
        if label(split_pattern) != pattern or stored_id(split_pattern) is not None:
            raise fail(pattern_at, f"the pattern {pattern!r} does not match its description ({split_pattern.describe()})")

    at, length, _ = sections[TIE]
    tie, tie_at, end = _read_string(data, at, at + length, 1, "tie rule", fail)
    if end != at + length:
        raise fail(end, f"{at + length - end} unused bytes at the end of the tie rule section")
    if tie not in TIES:
        raise fail(tie_at, f"unknown tie rule {tie!r} (known: {', '.join(TIES)})")

    counts: list[int] | None = None
    if COUNTS in sections:
        at, length, _ = sections[COUNTS]
        if length != 8 * n_merges:
            raise fail(at, f"{length} bytes of merge counts for {n_merges} merges (expected {8 * n_merges})")
        counts = np.frombuffer(data, dtype="<u8", count=n_merges, offset=at).tolist()

    id_map: list[int] | None = None
    if ID_MAP in sections:
        at, length, _ = sections[ID_MAP]
        if length != width * n_vocab:
            raise fail(at, f"{length} bytes of id map for {n_vocab} ids of {width} bytes (expected {width * n_vocab})")
        ids = np.frombuffer(data, dtype=id_type, count=n_vocab, offset=at)
        # Width 2 maps ids onto 0..n_vocab-1 (id_width); width 4 may leave holes.
        top = n_vocab - 1 if width == 2 else MAX_TOKEN_ID
        id_map = _checked_id_map(ids, n_vocab, top, lambda i, what: fail(at + width * i, what))
    if id_width(n_vocab, id_map) != width:
        raise fail(sections[MERGES][0], f"ids are stored in {width} bytes, but this vocabulary needs {id_width(n_vocab, id_map)}")

    tables: bytes | None = None
    if ENCODER in sections:
        at, length, _ = sections[ENCODER]
        if length < 8:
            raise fail(at, f"the encoder tables section has {length} bytes, fewer than its 8-byte head")
        layout, tables_merges = struct.unpack_from("<II", data, at)
        # Tables of another layout (another mnemo's encoder) are left unused: the encoder builds
        # its own from the merges, as for a file without them.
        if layout == TABLES_LAYOUT:
            if tables_merges != n_merges or length != 8 + tables_size(n_merges):
                raise fail(at, f"encoder tables for {tables_merges} merges in {length - 8} bytes; the file has {n_merges} merges")
            tables = data[at + 8 : at + length]

    superword: int | None = None
    stage2: str | None = None
    if STAGE2 in sections:
        superword, stage2 = _read_stage2(data, *sections[STAGE2][:2], n_merges, fail)
        if ranked or id_map is not None:
            raise fail(sections[STAGE2][0], "a superword tokenizer has no whole tokens and no id map, and this file has a RANK or IDMP section beside STG2")
        if engine_tag:
            raise fail(sections[STAGE2][0], f"a superword tokenizer runs on one of the named patterns ({', '.join(PATTERNS)}), not {pattern!r}")

    writer: str | None = None
    if WRITER_TAG in sections:
        at, length, _ = sections[WRITER_TAG]
        try:
            writer = data[at : at + length].decode("utf-8")
        except UnicodeDecodeError:
            raise fail(at, "the writer's name is not valid UTF-8") from None
    return TokenizerFields(
        merges,
        split_pattern,
        specials,
        tie,
        counts,
        id_map,
        whole_tokens=whole,
        ranked=ranked,
        encoder_tables=tables,
        writer=writer,
        superword=superword,
        stage2=stage2,
    )


def _read_stage2(
    data: bytes, at: int, length: int, n_merges: int, fail: Callable[[int, str], MnemoError]
) -> tuple[int, str]:
    """A STG2 section: (transition T, stage-2 rule), T in 256..256 + n_merges and a rule this
    mnemo knows (mnemo.superword.RULES)."""
    if length < 5:
        raise fail(at, f"the stage-2 section has {length} bytes, fewer than its 5-byte head")
    (transition,) = struct.unpack_from("<I", data, at)
    rule, rule_at, end = _read_string(data, at + 4, at + length, 1, "stage-2 rule", fail)
    if end != at + length:
        raise fail(end, f"{at + length - end} unused bytes at the end of the stage-2 section")
    if not 256 <= transition <= 256 + n_merges:
        raise fail(at, f"transition {transition} is outside 256..{256 + n_merges} (256 + the merges)")
    if rule not in RULES:
        raise fail(rule_at, f"unknown stage-2 rule {rule!r} (known: {', '.join(RULES)})")
    return transition, rule


def _plainly_ranked(pairs: npt.NDArray[np.unsignedinteger], whole: list[bytes]) -> bool:
    """Whether a ranked vocabulary keeps vocab.check_ranked's rules beyond its merges' parts,
    found in compiled code and C sets (the Python check took 1 s of a 128,000-id file's load):
    no merge spells itself through a chain of parts, every whole token has 2 bytes or more, and
    no two tokens spell the same bytes.  False sends the file to check_ranked, which names what
    is wrong."""
    try:
        spelled = spell_merges(vec[i64](pairs[:, 0].tolist()), vec[i64](pairs[:, 1].tolist()))
    except ConfigError:
        return False
    tokens = spelled[256:] + whole
    return all(len(raw) >= 2 for raw in whole) and len(set(tokens)) == len(tokens)


def _read_whole(data: bytes, at: int, length: int, fail: Callable[[int, str], MnemoError]) -> list[bytes]:
    """A RANK section's whole tokens: flags (bit 0, ranked, set), a count, then each token as a
    u32 length and its bytes, filling the section exactly."""
    if length < 8:
        raise fail(at, f"the rank section has {length} bytes, fewer than its 8-byte head")
    flags, count = struct.unpack_from("<II", data, at)
    if flags != RANKED:
        raise fail(at, f"rank flags 0x{flags:x} (expected 0x{RANKED:x}: ranked)")
    whole: list[bytes] = []
    pos, end = at + 8, at + length
    for j in range(count):
        if pos + 4 > end:
            raise fail(pos, f"whole token {j} of {count} starts past the end of the rank section")
        (size,) = struct.unpack_from("<I", data, pos)
        if pos + 4 + size > end:
            raise fail(pos, f"whole token {j} ({size} bytes) runs past the end of the rank section")
        whole.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    if pos != end:
        raise fail(pos, f"{end - pos} unused bytes at the end of the rank section")
    return whole


def _read_string(
    data: bytes, at: int, end: int, size_bytes: int, what: str, fail: Callable[[int, str], MnemoError]
) -> tuple[str, int, int]:
    """A length-prefixed UTF-8 string inside data[at:end]: (text, where its bytes start, where it ends)."""
    if at + size_bytes > end:
        raise fail(at, f"the {what} runs past the end of its section")
    n = int.from_bytes(data[at : at + size_bytes], "little")
    start = at + size_bytes
    if start + n > end:
        raise fail(at, f"the {what} ({n} bytes) runs past the end of its section")
    try:
        return data[start : start + n].decode("utf-8"), start, start + n
    except UnicodeDecodeError:
        raise fail(start, f"the {what} is not valid UTF-8") from None


def _read_specials(data: bytes, pos: int, end: int, n_specials: int, fail: Callable[[int, str], MnemoError]) -> list[str]:
    """The special tokens' names in data[pos:end]: n_specials of (u8 length, UTF-8 name), which
    must fill the range exactly."""
    specials: list[str] = []
    starts: list[int] = []
    for j in range(n_specials):
        if pos >= end:
            raise fail(pos, f"special token {j} of {n_specials} starts past the end of the specials section")
        length = data[pos]
        if pos + 1 + length > end:
            raise fail(pos, f"special token {j} ({length} bytes) runs past the end of the specials section")
        raw = data[pos + 1 : pos + 1 + length]
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise fail(pos + 1, f"special token {j} name {raw!r} is not valid UTF-8") from None
        problem = special_name_problem(j, name)  # here, before the next name is parsed from a bad length
        if problem is not None:
            raise fail(pos, problem)
        specials.append(name)
        starts.append(pos)
        pos += 1 + length
    if pos != end:
        raise fail(pos, f"{end - pos} unused bytes at the end of the specials section")
    check_special_names(specials, lambda j, what: fail(starts[j], what))
    return specials


def _checked_merges(
    pairs: npt.NDArray[np.unsignedinteger], fail: Callable[[int, str], MnemoError], ranked: bool = False
) -> list[tuple[int, int]]:
    """The merges as a list of pairs, checked against vocab.check_merges' rules with numpy (a
    sort finds repeated pairs); only a broken rule runs the worded check, to name the first.
    `ranked`: a part may be any byte or merge but the merge itself (check_merges(ranked=True))."""
    n = len(pairs)
    if n:
        own = np.arange(256, 256 + n, dtype=np.int64)[:, None]
        parts_ok = bool((pairs < 256 + n).all() and (pairs != own).all()) if ranked else bool((pairs < own).all())
        keys = np.sort((pairs[:, 0].astype(np.int64) << 32) | pairs[:, 1])
        if not parts_ok or bool((keys[1:] == keys[:-1]).any()):
            check_merges(list(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist())), fail, ranked)
    # every part is below 256 + n now: int32.  Tuples the cyclic GC does not track, made with
    # no collection in between (kernels.pair_list: list(zip(...)) of o200k's 199,742 pairs
    # started 285 collections, 17 ms of a 150 ms load), their parts one int object per id
    # (two new ints a merge were 12.8 MB for o200k's merges)
    return pair_list(np.ascontiguousarray(pairs, dtype=np.int32).data, list(range(256 + n)))


def _checked_id_map(
    ids: npt.NDArray[np.unsignedinteger], n_vocab: int, top: int, fail: Callable[[int, str], MnemoError]
) -> list[int]:
    """The id map as a list, checked against vocab.check_id_map's rules with numpy; only a
    broken rule runs the worded check, to name the first entry that breaks it."""
    id_map: list[int] = ids.tolist()
    ordered = np.sort(ids)
    if len(ids) and (int(ordered[-1]) > top or bool((ordered[1:] == ordered[:-1]).any())):
        check_id_map(id_map, n_vocab, fail, top)
    return id_map


# ---- versions 1 and 2 ----


def _encode_legacy(
    merges: Sequence[tuple[int, int]],
    pattern: str,
    special_tokens: Sequence[str],
    tie: str,
    merge_counts: Sequence[int] | None,
    id_map: Sequence[int] | None,
    version: int,
) -> bytes:
    """A version-1 or version-2 image, as mnemo wrote them before version 3."""
    id_type = "<u2" if version == 1 else "<u4"
    body = [np.asarray(merges, dtype=id_type).reshape(-1).tobytes()]
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
    header = LEGACY_HEADER.pack(
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


def _parse_legacy(data: bytes, fail: Callable[[int, str], MnemoError]) -> TokenizerFields:
    """A version-1 or version-2 image (docs/formats.md, "Versions 1 and 2")."""
    size = len(data)
    magic, version, flags, n_merges, n_specials, pattern_id, tie_id, specials_size, crc, reserved = (
        LEGACY_HEADER.unpack_from(data, 0)
    )
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
    n_vocab = check_size(n_merges, n_specials, lambda what: fail(12, what), VOCAB16 if version == 1 else MAX_VOCAB)
    has_counts = bool(flags & BIN_FLAG_COUNTS)
    has_map = bool(flags & BIN_FLAG_ID_MAP)
    merges_at = LEGACY_HEADER.size
    specials_at = merges_at + 2 * id_size * n_merges
    counts_at = specials_at + specials_size
    map_at = counts_at + (8 * n_merges if has_counts else 0)
    expected = map_at + (id_size * n_vocab if has_map else 0)
    if size < expected:
        raise fail(size, f"truncated: the header announces {expected} bytes, the file has {size}")
    if size > expected:
        raise fail(expected, f"{size - expected} trailing bytes after the end announced by the header")
    actual_crc = zlib.crc32(memoryview(data)[LEGACY_HEADER.size :])
    if actual_crc != crc:
        raise fail(24, f"checksum mismatch (stored 0x{crc:08x}, computed 0x{actual_crc:08x}): the file is damaged")

    pairs = np.frombuffer(data, dtype=id_type, count=2 * n_merges, offset=merges_at).reshape(-1, 2)
    merges = _checked_merges(pairs, lambda k, what: fail(merges_at + 2 * id_size * k, what))
    specials = _read_specials(data, specials_at, counts_at, n_specials, fail)

    counts: list[int] | None = None
    if has_counts:
        counts = np.frombuffer(data, dtype="<u8", count=n_merges, offset=counts_at).tolist()
    id_map: list[int] | None = None
    if has_map:
        # Version 1 maps ids onto 0..n_vocab-1; version 2 may leave holes (cl100k_base's unused ids).
        top = n_vocab - 1 if version == 1 else MAX_TOKEN_ID
        ids = np.frombuffer(data, dtype=id_type, count=n_vocab, offset=map_at)
        id_map = _checked_id_map(ids, n_vocab, top, lambda i, what: fail(map_at + id_size * i, what))
    return TokenizerFields(merges, PATTERNS[pattern_id], specials, TIES[tie_id], counts, id_map)


assert HEADER.size == 32 and LEGACY_HEADER.size == 32 and SECTION.size == 16, "header layout changed"
