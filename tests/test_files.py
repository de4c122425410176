"""tokenizer.bin and .tok: exact layouts, validation of every field, fuzzing, atomic writes."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import ArgumentTypeError, ConfigError, FingerprintError, FormatError, Tokenizer, open_tok
from mnemo.constants import MASKBIT, MAX_SPECIALS, MAX_VOCAB, VOCAB16
from mnemo.tokfile import TokWriter, read_tok_header
from mnemo.buildinfo import VERSION
from mnemo.vocabfile import MAX_BIN_BYTES, MAX_LEGACY_BYTES, encode_tokenizer_bin, file_crc, parse_tokenizer_bin

# ---- tokenizer.bin ----


def section(tag: bytes, flags: int, payload: bytes) -> bytes:
    """One version-3 section: tag, flags, length, the payload, zeros to a multiple of 8."""
    return tag + struct.pack("<IQ", flags, len(payload)) + payload + bytes(-len(payload) % 8)


def image(*sections: bytes, count: int | None = None) -> bytes:
    """A version-3 image of these sections, its header and CRC computed as docs/formats.md says:
    CRC-32 of the whole file with the CRC field (offsets 24-27) read as zeros."""
    body = b"".join(sections)
    head = b"MNEMOBPE" + struct.pack("<HHIQ", 3, 0, len(sections) if count is None else count, 32 + len(body))
    crc = zlib.crc32(head + bytes(4) + bytes(4) + body)
    return head + struct.pack("<I", crc) + bytes(4) + body


def test_tokenizer_bin_layout() -> None:
    """Two merges, one special, counts: every byte derived by hand from docs/formats.md."""
    tok = Tokenizer([(104, 105), (256, 33)], pattern="gpt2", special_tokens=["<|e|>"], merge_counts=[7, 3])
    data = tok.to_bytes()
    sections = [
        # width 2, 2 merges: (104, 105), (256, 33) as uint16 LE
        section(b"MRGS", 1, struct.pack("<II", 2, 2) + bytes([104, 0, 105, 0, 0, 1, 33, 0])),
        section(b"SPEC", 1, struct.pack("<I", 1) + bytes([5]) + b"<|e|>"),
        section(b"PATN", 1, struct.pack("<H", 4) + b"gpt2" + struct.pack("<H", 0)),
        section(b"TIER", 1, bytes([2]) + b"id"),
        section(b"CNTS", 0, struct.pack("<QQ", 7, 3)),
        # layout 1 of 2 merges: "hi" and "hi!" are each what BPE makes of their bytes: bits 0 and 1
        section(b"ENCT", 0, struct.pack("<II", 1, 2) + bytes([0b11])),
        section(b"WRTR", 0, f"mnemo {VERSION}".encode()),
    ]
    assert [len(s) for s in sections] == [32, 32, 24, 24, 32, 32, 32]
    head = b"MNEMOBPE" + struct.pack("<HHIQ", 3, 0, 7, 32 + 208)
    body = b"".join(sections)
    crc = zlib.crc32(head + bytes(4) + bytes(4) + body)  # the CRC field read as zeros, then reserved
    assert data == head + struct.pack("<I", crc) + bytes(4) + body
    assert data == image(*sections)
    assert Tokenizer.from_bytes(data) == tok


def test_version_1_layout_still_loads() -> None:
    """The layout mnemo wrote before version 3, every byte by hand: it loads as it did."""
    merges = bytes([104, 0, 105, 0, 0, 1, 33, 0])  # (104, 105), (256, 33) as uint16 LE
    specials = bytes([5]) + b"<|e|>"
    counts = (7).to_bytes(8, "little") + (3).to_bytes(8, "little")
    payload = merges + specials + counts
    header = (
        b"MNEMOBPE"
        + (1).to_bytes(2, "little")  # version
        + (1).to_bytes(2, "little")  # flags: merge counts present
        + (2).to_bytes(4, "little")  # merges
        + (1).to_bytes(2, "little")  # specials
        + bytes([2, 0])  # pattern gpt2, tie "id"
        + (6).to_bytes(4, "little")  # specials section size
        + zlib.crc32(payload).to_bytes(4, "little")
        + bytes(4)  # reserved
    )
    tok = Tokenizer([(104, 105), (256, 33)], pattern="gpt2", special_tokens=["<|e|>"], merge_counts=[7, 3])
    assert encode_tokenizer_bin(tok.merges, "gpt2", ["<|e|>"], "id", [7, 3], version=1) == header + payload
    assert Tokenizer.from_bytes(header + payload) == tok


def good_bin() -> bytes:
    merges = [(97, 97), (256, 97), (98, 99), (256, 258)]
    return Tokenizer(merges, special_tokens=["<|a|>", "<|bb|>"], merge_counts=[9, 8, 7, 6]).to_bytes()


# good_bin's layout: header 0-31; MRGS 32 (payload 48: width 52, merges 56-71); SPEC 72 (payload 88:
# count, then [5]<|a|> at 92, [6]<|bb|> at 98); PATN 112 (payload 128); TIER 144 (payload 160);
# CNTS 168 (payload 184); ENCT 216 (payload 232); WRTR 248 (payload 264); 280 bytes.


def with_crc(data: bytes) -> bytes:
    """Fix the checksum after editing, so that the checks behind it are the ones that fire."""
    return data[:24] + struct.pack("<I", file_crc(data)) + data[28:]


def legacy_crc(data: bytes) -> bytes:
    """with_crc for versions 1 and 2: the CRC of every byte after the 32-byte header."""
    return data[:24] + struct.pack("<I", zlib.crc32(data[32:])) + data[28:]


def tok_crc(data: bytes) -> bytes:
    """A .tok image with its header CRC-32 (bytes 60-63, of bytes 0-59) computed again, so that
    a test reaches the check of the field it changed."""
    return data[:60] + zlib.crc32(data[:60]).to_bytes(4, "little") + data[64:]


def patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new) :]


def test_good_bin_layout() -> None:
    data = good_bin()
    assert len(data) == 280
    assert [data[at : at + 4] for at in (32, 72, 112, 144, 168, 216, 248)] == [
        b"MRGS", b"SPEC", b"PATN", b"TIER", b"CNTS", b"ENCT", b"WRTR"
    ]
    assert data[92:98] == b"\x05<|a|>" and data[98:105] == b"\x06<|bb|>"


MRGS = section(b"MRGS", 1, struct.pack("<II", 2, 1) + struct.pack("<HH", 97, 98))
SPEC = section(b"SPEC", 1, struct.pack("<I", 0))
PATN = section(b"PATN", 1, struct.pack("<H", 8) + b"mnemonic" + struct.pack("<H", 0))
TIER = section(b"TIER", 1, bytes([2]) + b"id")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d[:31], r"offset 31: truncated: the file has 31 bytes, the header alone needs 32"),
        (lambda d: b"MNEMOXXX" + d[8:], r"offset 0: bad magic b'MNEMOXXX'"),
        (lambda d: patch(d, 8, b"\x04\x00"), r"offset 8: format version 4 is not supported \(this mnemo reads versions 1 to 3\)"),
        (lambda d: d[:-1], r"offset 279: truncated: the header announces 280 bytes, the file has 279"),
        (lambda d: d + b"\0\0", r"offset 280: 2 trailing bytes"),
        # every byte is under the checksum: the header's own (pattern, tie, counts: issue 28) too
        (lambda d: patch(d, 10, b"\x01"), r"offset 24: checksum mismatch"),
        (lambda d: patch(d, 28, b"\x01"), r"offset 24: checksum mismatch"),
        (lambda d: patch(d, 129, b"\x02"), r"offset 24: checksum mismatch"),
        (lambda d: patch(d, 161, b"b"), r"offset 24: checksum mismatch"),
        (lambda d: patch(d, 264, b"M"), r"offset 24: checksum mismatch"),
        # behind a good checksum: what a mnemo writer never writes
        (lambda d: with_crc(patch(d, 10, b"\x01")), r"offset 10: reserved header field is not 0"),
        (lambda d: with_crc(patch(d, 12, b"\x08")), r"offset 280: section 7 of 8 starts past the end"),
        (lambda d: with_crc(patch(d, 12, b"\x06")), r"offset 248: 32 bytes after the last of the 6 sections"),
        (lambda d: with_crc(patch(d, 36, b"\x03")), r"offset 36: section b'MRGS' has unknown flags 0x3"),
        (lambda d: with_crc(patch(d, 36, b"\x00")), r"offset 36: section b'MRGS' has flags 0x0, expected 0x1"),
        (lambda d: with_crc(patch(d, 40, b"\x19")), r"offset 73: the padding after section b'MRGS' is not zeros"),
        (lambda d: with_crc(patch(d, 256, b"\x30")), r"offset 256: section b'WRTR' \(48 bytes\) runs past the end of the file"),
        (lambda d: with_crc(patch(d, 275, b"\x01")), r"offset 275: the padding after section b'WRTR' is not zeros"),
        (lambda d: with_crc(patch(d, 248, b"CNTS")), r"offset 248: section b'CNTS' appears twice"),
        (lambda d: with_crc(patch(d, 248, b"XTRA\x01")), r"offset 248: section b'XTRA' is not known to this mnemo and changes how ids"),
        (lambda d: with_crc(patch(d, 144, b"TIEX")), r"offset 144: section b'TIEX' is not known to this mnemo and changes how ids"),
        (lambda d: with_crc(patch(d, 144, b"TIEX\x00")), r"offset 32: the required section b'TIER' is missing"),
        (lambda d: with_crc(patch(d, 48, b"\x03")), r"offset 48: id width 3 \(expected 2 or 4\)"),
        (lambda d: with_crc(patch(d, 52, b"\x03")), r"offset 52: 3 merges of 2-byte ids need 20 bytes, the section has 24"),
        (lambda d: with_crc(patch(d, 48, b"\x04")), r"offset 52: 4 merges of 4-byte ids need 40 bytes, the section has 24"),
        # merge 2 (id 258) = (98, 99) -> (98, 300): part from the future
        (lambda d: with_crc(patch(d, 56 + 8, struct.pack("<HH", 98, 300))),
         r"offset 64: merge 2 \(id 258\) is \(98, 300\): token 300 does not exist yet"),
        (lambda d: with_crc(patch(d, 56 + 8, struct.pack("<HH", 97, 97))),
         r"offset 64: merge 2 repeats the pair \(97, 97\) of merge 0"),
        (lambda d: with_crc(patch(d, 88, struct.pack("<I", 70000))), r"offset 88: 4 merges \+ 70000 specials give 70,260 ids"),
        (lambda d: with_crc(patch(d, 92, b"\x00")), r"offset 92: special token 0 is '', not a non-empty string"),
        (lambda d: with_crc(patch(d, 92, b"\x0d")), r"offset 92: special token 0 \(13 bytes\) runs past"),
        (lambda d: with_crc(patch(d, 92, b"\x0c")), r"offset 105: special token 1 of 2 starts past the end"),
        (lambda d: with_crc(patch(d, 92, b"\x04")), r"offset 97: special token 1 \(62 bytes\) runs past"),
        (lambda d: with_crc(patch(d, 93, b"\xff")), r"offset 93: special token 0 name .* is not valid UTF-8"),
        (lambda d: with_crc(patch(d, 88, b"\x01")), r"offset 98: 7 unused bytes at the end of the specials section"),
        (lambda d: with_crc(patch(d, 130, b"x")), r"offset 130: unknown pattern 'xnemonic' \(known: mnemonic, gpt4"),
        (lambda d: with_crc(patch(d, 128, b"\x0b")), r"offset 128: the pattern \(11 bytes\) runs past the end"),
        (lambda d: with_crc(patch(d, 131, b"\xff")), r"offset 130: the pattern is not valid UTF-8"),
        (lambda d: with_crc(patch(d, 128, b"\x07")), r"offset 137: the engine tag \(99 bytes\) runs past"),
        (lambda d: with_crc(patch(d, 161, b"ix")), r"offset 161: unknown tie rule 'ix'"),
        (lambda d: with_crc(patch(d, 160, b"\x01")), r"offset 162: 1 unused bytes at the end of the tie rule section"),
        (lambda d: with_crc(patch(d, 236, b"\x05")), r"offset 232: encoder tables for 5 merges in 1 bytes; the file has 4"),
        (lambda d: with_crc(patch(d, 264, b"\xff")), r"offset 264: the writer's name is not valid UTF-8"),
    ],
)
def test_bad_tokenizer_bin(edit: object, message: str, tmp_path: Path) -> None:
    data = edit(good_bin())  # type: ignore[operator]
    path = tmp_path / "tok.bin"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=message):
        Tokenizer.load(path)


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        ((MRGS, SPEC, TIER), r"offset 32: the required section b'PATN' is missing"),
        ((MRGS, SPEC, section(b"PATN", 1, struct.pack("<H", 8) + b"mnemonic" + struct.pack("<H", 3) + b"re2"), TIER),
         r"offset 116: the pattern's description is not a split pattern this mnemo can build"),
        ((MRGS, SPEC, section(b"PATN", 1, struct.pack("<H", 8) + b"mnemonic" + struct.pack("<H", 0) + b"!"), TIER),
         r"offset 116: 1 unused bytes at the end of the pattern section"),
        ((section(b"MRGS", 1, struct.pack("<II", 4, 1) + struct.pack("<II", 97, 98)), SPEC, PATN, TIER),
         r"offset 48: ids are stored in 4 bytes, but this vocabulary needs 2"),
        ((MRGS, SPEC, PATN, TIER, section(b"IDMP", 0, struct.pack("<257H", *range(1, 257), 0)[:-2])),
         r"offset 160: 512 bytes of id map for 257 ids of 2 bytes \(expected 514\)"),
        ((MRGS, SPEC, PATN, TIER, section(b"IDMP", 0, struct.pack("<257H", 300, *range(1, 257)))),
         r"offset 160: id_map\[0\] = 300 is outside 0..256"),
        ((MRGS, SPEC, PATN, TIER, section(b"IDMP", 0, struct.pack("<257H", 1, *range(1, 257)))),
         r"offset 162: id_map gives id 1 to both 0 and 1"),
        ((section(b"MRGS", 1, b"\x02"), SPEC, PATN, TIER), r"offset 48: the merges section has 1 bytes"),
        ((MRGS, section(b"SPEC", 1, b""), PATN, TIER), r"offset 80: the specials section has 0 bytes"),
        ((MRGS, SPEC, PATN, section(b"TIER", 1, b"")), r"offset 136: the tie rule runs past the end of its section"),
        ((MRGS, SPEC, PATN, TIER, section(b"CNTS", 0, bytes(16))), r"offset 160: 16 bytes of merge counts for 1 merges \(expected 8\)"),
        ((MRGS, SPEC, PATN, TIER, section(b"ENCT", 0, b"\x01")), r"offset 160: the encoder tables section has 1 bytes"),
    ],
)
def test_bad_sections(sections: tuple[bytes, ...], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        parse_tokenizer_bin(image(*sections), "t.bin")


def rank(*whole: bytes, flags: int = 1) -> bytes:
    return section(b"RANK", 1, struct.pack("<II", flags, len(whole)) + b"".join(struct.pack("<I", len(w)) + w for w in whole))


@pytest.mark.parametrize(
    ("merges", "whole", "message"),
    [
        ([(97, 98)], [b"a"], r"offset 160: whole token 0 is b'a', not bytes of length 2 or more"),
        ([(97, 98)], [b"ab"], r"offset 160: whole token 0 b'ab' spells the same bytes as id 256"),
        ([(257, 97), (256, 98)], [], r"offset 160: merge \d \(id 25[67]\) is made of itself"),
        ([(97, 257), (97, 97), (257, 97)], [], r"offset 168: merges 0 and 2 both spell b'aaa'"),
        ([(97, 256)], [], r"offset 56: merge 0 \(id 256\) is \(97, 256\): token 256 is not a byte or another merge"),
    ],
)
def test_bad_ranked_files(merges: list[tuple[int, int]], whole: list[bytes], message: str) -> None:
    """A ranked vocabulary's rules (vocab.check_ranked), checked at load: the fast checks find
    the breach, the worded check names it."""
    mrgs = section(b"MRGS", 1, struct.pack("<II", 2, len(merges)) + b"".join(struct.pack("<HH", a, b) for a, b in merges))
    with pytest.raises(FormatError, match=message):
        parse_tokenizer_bin(image(mrgs, SPEC, PATN, TIER, rank(*whole)), "t.bin")


def test_ranked_file_layout() -> None:
    tok = Tokenizer([(97, 257), (98, 99)], whole_tokens=[b"xyz"], ranked=True, special_tokens=[])
    data = tok.to_bytes()
    at = data.index(b"RANK")
    assert data[at : at + 16 + 16] == b"RANK" + struct.pack("<IQ", 1, 15) + struct.pack("<III", 1, 1, 3) + b"xyz" + bytes(1)
    back = parse_tokenizer_bin(data, "t")
    assert back.ranked and back.whole_tokens == [b"xyz"] and back.merges == [(97, 257), (98, 99)]
    with pytest.raises(FormatError, match=r"rank flags 0x2 \(expected 0x1: ranked\)"):
        parse_tokenizer_bin(image(MRGS, SPEC, PATN, TIER, rank(flags=2)), "t.bin")


def test_unknown_optional_sections_and_other_table_layouts_are_skipped() -> None:
    """A section without the required bit that this mnemo does not know is skipped (a newer
    mnemo's extra); encoder tables of another layout are left unused and built again, so that a
    change of the encoder's tables never makes another build misread a file."""
    base = Tokenizer([(97, 98)], special_tokens=[])
    extra = section(b"XTRA", 0, b"anything")
    other_layout = section(b"ENCT", 0, struct.pack("<II", 999, 1) + b"\xff" * 40)
    for sections in ((MRGS, SPEC, PATN, TIER, extra), (extra, TIER, PATN, SPEC, MRGS), (MRGS, SPEC, PATN, TIER, other_layout)):
        fields = parse_tokenizer_bin(image(*sections), "t.bin")
        assert fields.encoder_tables is None and fields.writer is None
        assert Tokenizer.from_bytes(image(*sections)) == base


def forged(writer: str = f"mnemo {VERSION}") -> bytes:
    """A tokenizer.bin whose encoder tables lie about one token, behind a good checksum: "abc"
    (id 258 = (257, 99)) is not what BPE makes of its bytes -- (b, c) is merged first, giving
    [97, 256] -- but the forged bit says it is.  Only a writer that means it can do this: any
    damage fails the CRC."""
    tok = Tokenizer([(98, 99), (97, 98), (257, 99)], special_tokens=[])
    assert tok.encode_ordinary("abc" + "!" * 8) == [97, 256] + [33] * 8
    data = bytearray(tok.to_bytes())
    at = data.index(b"ENCT") + 16 + 8
    assert data[at] == 0b011  # "bc" and "ab" spell themselves, "abc" does not
    data[at] |= 0b100
    writer_at = data.index(b"WRTR") + 16
    data[writer_at : writer_at + len(writer)] = writer.encode()
    return with_crc(bytes(data))


def test_trust_rule() -> None:
    """docs/formats.md, "Trust": a file this mnemo wrote is loaded with its encoder tables as
    they are; a forged bit can only make one token's own bytes encode as that token (an id of
    the vocabulary, which decodes to the same bytes): never a crash, a hang or an id outside the
    vocabulary.  verify() (mnemo info --verify) rebuilds the tables and names the token; a file
    another program wrote is verified when it is loaded."""
    text = "abc" + "!" * 8  # the word table is looked up with 8 readable bytes: "abc" before more text
    trusted = Tokenizer.from_bytes(forged(), "forged.bin")
    assert trusted.encode_ordinary(text) == [258] + [33] * 8 and trusted.decode([258]) == "abc"
    message = r"forged.bin: its encoder tables say that token 258 \(b'abc'\) is what BPE makes of its own bytes, and its merges say the opposite"
    with pytest.raises(FormatError, match=message):
        trusted.verify()
    with pytest.raises(FormatError, match=message):
        Tokenizer.from_bytes(forged(), "forged.bin", verify=True)
    with pytest.raises(FormatError, match=message.replace("forged.bin", "other.bin")):
        Tokenizer.from_bytes(forged("other 0.1.0"), "other.bin")
    assert Tokenizer.from_bytes(forged("other 0.1.0"), verify=False).encode_ordinary(text)[0] == 258
    # the same file with true tables: verified and loaded, whoever wrote it
    honest = Tokenizer([(98, 99), (97, 98), (257, 99)], special_tokens=[])
    data = bytearray(honest.to_bytes())
    writer_at = data.index(b"WRTR") + 16
    data[writer_at : writer_at + 11] = b"other 0.1.0"
    loaded = Tokenizer.from_bytes(with_crc(bytes(data)), verify=None)
    loaded.verify()
    assert loaded.encode_ordinary(text) == [97, 256] + [33] * 8 and loaded == honest
    with pytest.raises(ArgumentTypeError, match="verify"):
        Tokenizer.from_bytes(bytes(data), verify="yes")  # type: ignore[arg-type]


def test_info_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mnemo info --verify` runs verify(); without it, the CLI loads as the library does: it
    trusts the tables of a file this mnemo wrote and checks those of any other writer's file."""
    from mnemo.cli import main

    good = tmp_path / "good.bin"
    Tokenizer([(98, 99), (97, 98), (257, 99)], special_tokens=[]).save(good)
    assert main(["info", "--verify", str(good)]) == 0
    assert "verified     the encoder tables agree with the merges" in capsys.readouterr().out
    mine, other = tmp_path / "mine.bin", tmp_path / "other.bin"
    mine.write_bytes(forged())
    other.write_bytes(forged("other 0.1.0"))
    assert main(["info", str(mine)]) == 0
    assert "verified" not in capsys.readouterr().out
    for argv in (["info", "--verify", str(mine)], ["info", str(other)]):
        assert main(argv) == 1
        assert "token 258 (b'abc') is what BPE makes of its own bytes, and its merges say the opposite" in capsys.readouterr().err


def test_legacy_files_are_checked_as_before(tmp_path: Path) -> None:
    """Version 1 and 2 images: the header fields outside their CRC are still range-checked, and
    everything the CRC covers is damage."""
    legacy = encode_tokenizer_bin([(97, 97), (256, 97)], "mnemonic", ["<|a|>"], "id", [3, 2], version=1)
    cases = [
        (patch(legacy, 10, b"\x04\x00"), r"offset 10: unknown flags 0x0004"),
        (patch(legacy, 18, b"\x07"), r"offset 18: unknown pattern id 7"),
        (patch(legacy, 19, b"\x05"), r"offset 19: unknown tie rule id 5"),
        (patch(legacy, 28, b"\x01"), r"offset 28: reserved field is 1"),
        (patch(legacy, 12, struct.pack("<I", 70000)), r"offset 12: 70000 merges \+ 1 specials"),
        (legacy[:-1], r"offset 61: truncated: the header announces 62 bytes, the file has 61"),
        (patch(legacy, 40, b"\x63"), r"offset 24: checksum mismatch"),
        (legacy_crc(patch(legacy, 36, struct.pack("<HH", 98, 300))), r"offset 36: merge 1 \(id 257\) is \(98, 300\)"),
    ]
    for data, message in cases:
        with pytest.raises(FormatError, match=message):
            parse_tokenizer_bin(data, "old.bin")


def test_specials_duplicate_and_slack() -> None:
    dup = encode_tokenizer_bin([(97, 97)], "mnemonic", ["<|a|>", "<|a|>"], "id", None)
    with pytest.raises(FormatError, match=r"x: offset 90: special token 1 '<\|a\|>' is listed twice"):
        parse_tokenizer_bin(dup, "x")
    # Announce one special but leave the second one's bytes in the section.
    data = bytearray(encode_tokenizer_bin([(97, 97)], "mnemonic", ["<|a|>", "<|b|>"], "id", None))
    data[80:84] = struct.pack("<I", 1)
    with pytest.raises(FormatError, match=r"offset 90: 6 unused bytes at the end of the specials section"):
        parse_tokenizer_bin(with_crc(bytes(data)), "x")


def largest_bin() -> bytes:
    """A largest valid tokenizer.bin of 16-bit ids: no merges, 65,280 specials of 255 bytes, an id map."""
    n = VOCAB16 - 256
    names = [f"<|{j:05d}|>".ljust(255, "x") for j in range(n)]
    return encode_tokenizer_bin([], "mnemonic", names, "id", [], list(range(VOCAB16))[::-1])


def test_the_size_bound_bounds_every_valid_file(tmp_path: Path) -> None:
    """MAX_BIN_BYTES is computed from the layouts: the largest version-2 file (MAX_VOCAB ids of a
    merge, its count and an id map entry, and MAX_SPECIALS specials of 255 bytes), or the header
    and every known version-3 section at its largest, whichever is more.  A file of 65,280
    specials of 255 bytes loads, in time linear in its size (a list's `in` for repeated specials
    once made 65,280 of them take 45 s at 446 KB, 129 s at this size), and one byte more than the
    bound is refused before it is parsed."""
    import threading

    data = largest_bin()
    # header 32; MRGS 16 + 8; SPEC 16 + 4 + 65,280 x 256 (+ 4 padding); PATN 16 + 16; TIER 16 + 8;
    # CNTS 16 + 0; IDMP 16 + 2 x 65,536; WRTR 16 + 16
    assert len(data) == 32 + 24 + 16 + 16_711_688 + 32 + 24 + 16 + 16 + 131_072 + 32 == 16_842_952
    assert MAX_LEGACY_BYTES == 32 + (8 + 8 + 4) * MAX_VOCAB + 256 * MAX_SPECIALS == 58_720_032
    sections_most = (8 + 8 * MAX_VOCAB) + (4 + 256 * MAX_SPECIALS + 4) + (4 + 2 * 0xFFFF + 6) + 256 + 8 * MAX_VOCAB
    sections_most += 4 * MAX_VOCAB + (8 + MAX_VOCAB) + 256 + (8 + 4 * MAX_VOCAB + (16 << 20))  # ..., RANK
    sections_most += 4 + 1 + 255 + 4  # STG2, padded to 8
    assert MAX_BIN_BYTES == 32 + 10 * 16 + sections_most == 86_115_056
    assert len(encode_tokenizer_bin(*largest_args(), version=2)) <= MAX_BIN_BYTES
    path = tmp_path / "largest.bin"
    path.write_bytes(data)
    loaded: list[Tokenizer] = []
    t = threading.Thread(target=lambda: loaded.append(Tokenizer.load(path)), daemon=True)
    t.start()
    t.join(30)
    assert loaded, "loading the largest tokenizer.bin took more than 30 s"
    assert loaded[0].n_vocab == VOCAB16
    with open(path, "wb") as f:
        f.truncate(MAX_BIN_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(FormatError, match=rf"{path}: larger than 86,115,056 bytes, the most mnemo reads as a tokenizer.bin"):
        Tokenizer.load(path)


def largest_args() -> tuple[list[tuple[int, int]], str, list[str], str, list[int], list[int]]:
    """A small stand-in for the bound's arithmetic: merges with counts and an id map."""
    merges = [(97, 98)] + [(256 + k, 97) for k in range(99)]
    return merges, "mnemonic", ["<|x|>"], "id", [1] * 100, list(range(357))[::-1]


def test_many_short_specials_load_fast() -> None:
    """The issue's 446 KB file: 65,280 short specials."""
    import time

    names = [f"<|{j}|>" for j in range(VOCAB16 - 256)]
    data = encode_tokenizer_bin([], "mnemonic", names, "id", None)
    t0 = time.perf_counter()
    fields = parse_tokenizer_bin(data, "x")
    assert time.perf_counter() - t0 < 5 and len(fields.special_tokens) == len(names)


def test_an_endless_input_is_read_to_the_bound_only(tmp_path: Path) -> None:
    """`-t /dev/zero` once read without end.  In a child with 1 GiB of address space and a
    time limit: a FormatError naming the bound, not an out-of-memory death or a hang."""
    code = textwrap.dedent(
        """
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from mnemo import FormatError, Tokenizer
        try:
            Tokenizer.load("/dev/zero")
        except FormatError as exc:
            print(exc)
        """
    )
    # cwd: away from the checkout, whose mnemo/ would shadow the installed package
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("/dev/zero: larger than 86,115,056 bytes")


def test_every_truncation_is_a_format_error() -> None:
    data = good_bin()
    for n in range(len(data)):
        with pytest.raises(FormatError):
            parse_tokenizer_bin(data[:n], "t")
    assert parse_tokenizer_bin(data, "t").special_tokens == ["<|a|>", "<|bb|>"]


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_fuzzed_tokenizer_bin(data: st.DataObject) -> None:
    """Random edits, with and without a repaired checksum, of the current layout and of version
    1's: a Tokenizer or a FormatError, nothing else."""
    legacy = data.draw(st.booleans())
    raw = bytearray(encode_tokenizer_bin([(97, 97), (256, 97)], "gpt2", ["<|a|>"], "id", [2, 1], version=1) if legacy else good_bin())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = bytearray(legacy_crc(bytes(raw)) if legacy else with_crc(bytes(raw)))
    try:
        tok = Tokenizer.from_bytes(bytes(raw), "fuzz")
    except FormatError:
        return
    assert Tokenizer.from_bytes(tok.to_bytes()) == tok


# ---- .tok ----


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer([(97, 97), (256, 97)], special_tokens=["<|bos|>", "<|end|>"])


def test_tok_round_trip_and_layout(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([258, 257, 98])
        w.write_doc(np.array([258, 256], dtype=np.int64))
    raw = path.read_bytes()
    assert len(raw) == 64 + 2 * 5
    assert raw[:8] == b"MNEMOTOK"
    assert struct.unpack_from("<HHIQQ", raw, 8) == (2, 2, 0, 5, 2)  # version, width, flags, tokens, docs
    assert raw[32:48].hex() == tok.fingerprint
    assert struct.unpack_from("<I", raw, 48) == (tok.n_vocab,)
    # version 2: the tokens' CRC-32, the origin (0: not a shard), the CRC-32 of bytes 0-59
    assert struct.unpack_from("<III", raw, 52) == (zlib.crc32(raw[64:]), 0, zlib.crc32(raw[:60]))
    assert raw[64:] == struct.pack("<5H", 258, 257, 98, 258, 256)
    opened = open_tok(path, tok)
    assert opened.tokens.tolist() == [258, 257, 98, 258, 256]
    assert opened.tokens.dtype == np.dtype("<u2")
    assert isinstance(opened.tokens, np.memmap)
    assert (opened.header.n_docs, opened.header.chat, len(opened)) == (2, False, 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.tok"]


def test_tok_chat_flags_and_empty(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "chat.tok"
    with TokWriter(path, tok, chat=True) as w:
        w.write([258, 97 | MASKBIT], n_docs=1)
    opened = open_tok(path, tok)
    assert opened.header.chat and opened.header.masked and opened.header.maskbit == MASKBIT
    assert opened.tokens.tolist() == [258, 97 | 0x8000]
    empty = tmp_path / "empty.tok"
    with TokWriter(empty, tok):
        pass
    assert len(open_tok(empty, tok)) == 0


def test_tok_writer_refuses_ids_that_do_not_fit(tmp_path: Path, tok: Tokenizer) -> None:
    """Ids a caller passes that do not fit the file's width are the caller's bug, a ConfigError
    naming the id (it was an InputError, the class for unreadable input); no file is left."""
    path = tmp_path / "data.tok"
    for bad in ([1, 70000], [-1, 2]):
        with pytest.raises(ConfigError, match=f"token id {min(bad) if min(bad) < 0 else max(bad)} does not fit a 2-byte .tok"):
            with TokWriter(path, tok) as w:
                w.write(bad)
    assert list(tmp_path.iterdir()) == []


def test_tok_foreign_fingerprint(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([1, 2])
    other = Tokenizer([(97, 98)])
    with pytest.raises(FingerprintError, match=f"fingerprint {tok.fingerprint}.*this one \\({other.fingerprint}\\)"):
        open_tok(path, other)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d[:-1], r"the header announces 3 tokens of 2 bytes \(70 bytes in all\), but the file has 69"),
        (lambda d: d + b"\0", r"but the file has 71 bytes"),
        (lambda d: d[:40], r"offset 40: truncated: the file has 40 bytes"),
        (lambda d: b"MNEMOBPE" + d[8:], r"offset 0: bad magic b'MNEMOBPE'"),
        (lambda d: patch(d, 8, b"\x09\x00"), r"offset 8: format version 9"),
        (lambda d: patch(d, 12, b"\x08"), r"offset 60: header CRC-32 .* does not match"),
        (lambda d: tok_crc(patch(d, 10, b"\x03\x00")), r"offset 10: token width 3 bytes"),
        (lambda d: tok_crc(patch(d, 12, b"\x08")), r"offset 12: unknown flags 0x00000008"),
        (lambda d: tok_crc(patch(d, 16, struct.pack("<Q", 1 << 62))), r"announces 4611686018427387904 tokens"),
    ],
)
def test_bad_tok(edit: object, message: str, tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([1, 2, 3])
    path.write_bytes(edit(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(FormatError, match=message):
        open_tok(path, tok)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_tok(data: st.DataObject, tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "fuzz.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([1, 2, 3, 4])
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    path.write_bytes(bytes(raw[:cut]))
    try:
        opened = open_tok(path, tok)
    except FormatError:
        return
    assert len(opened.tokens) == opened.header.n_tokens


def test_writer_exception_leaves_nothing(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with pytest.raises(RuntimeError, match="boom"), TokWriter(path, tok) as w:
        w.write_doc([1, 2, 3])
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_killed_writer_leaves_no_output(tmp_path: Path, tok: Tokenizer) -> None:
    """SIGKILL in the middle of a write: the final name never appears."""
    bin_path = tmp_path / "tokenizer.bin"
    tok.save(bin_path)
    out = tmp_path / "out.tok"
    script = textwrap.dedent(
        f"""
        import sys
        from mnemo import Tokenizer
        from mnemo.tokfile import TokWriter
        tok = Tokenizer.load({str(bin_path)!r})
        with TokWriter({str(out)!r}, tok) as w:
            w.write_doc([1, 2, 3])
            print("writing", flush=True)
            sys.stdin.read()  # wait to be killed
        """
    )
    # cwd=tmp_path: `python -c` puts the working folder first on sys.path, and the checkout's
    # uncompiled mnemo/ must not shadow the installed package
    with subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"writing\n"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not out.exists()
    with pytest.raises(FormatError):
        read_tok_header(next(tmp_path.glob(".out.tok.tmp-*")))  # the unfinished temporary: still invalid
