"""Byte-class masks of a whole text, for pre-tokenizers that cut ASCII runs by reading bits.

The kernel `kernels.class_masks(data, table[, start, stop])` (asm/classmask_avx2.asm, its C twin in
asm/kernels_portable.c) classifies a text once: for each 64-byte block, eight uint64 masks,
mask p holding bit p of table[byte] for each of the block's bytes.  A scanner then finds where
a run of letters (or digits, or white space...) ends by reading one mask word per 64 bytes and
counting its trailing zeros, instead of a loop with a branch per byte; and it crosses into the
extension once per text, never per chunk (a call costs 25-50 ns from compiled code, more than a
short chunk).

GPT_TABLE gives the properties every pattern of the GPT family needs (gpt2, gpt4/cl100k,
o200k, and mnemo's own): its bits are the classes below.  ASCII punctuation is the byte
with none of the bits: `[^\\s\\p{L}\\p{N}]` over ASCII is "no bit but APOS", and the rest
(\\p{L} beyond ASCII, Unicode white space, ...) starts at a non-ASCII byte, where a scanner
goes back to decoding UTF-8.

  class_masks(data, table[, start, stop])
                                 the masks (of data[start:stop]): the kernel for long texts,
                                 compiled code for short ones (below SHORT bytes, where the call
                                 would cost more)
  class_masks_compiled(...)      the compiled twin of the kernel (same result)
  run_end(masks, bits, pos, end) the end of the run, from pos, of bytes having any of `bits`
"""

from __future__ import annotations

from typing import Final

from librt.strings import BytesWriter, read_i64_le, write_i64_le
from mypy_extensions import i64

from mnemo import _unicode_tables as _tables
from mnemo.kernels import class_masks as _kernel_class_masks

LOWER: Final[i64] = 1  # a-z
UPPER: Final[i64] = 2  # A-Z
DIGIT: Final[i64] = 4  # 0-9
SPACE: Final[i64] = 8  # ' ' (gpt2's and o200k's optional prefix is this byte only)
WHITE: Final[i64] = 16  # \t \v \f: white space, not CR/LF
NEWLINE: Final[i64] = 32  # \r \n
APOS: Final[i64] = 64  # '
NON_ASCII: Final[i64] = 128  # >= 0x80: a UTF-8 lead or continuation byte

LETTER: Final[i64] = LOWER | UPPER
ANY_WHITE: Final[i64] = SPACE | WHITE | NEWLINE


def _gpt_table() -> bytes:
    """The properties of each byte, from the pre-tokenizer's own ASCII classes (generated from
    `regex`: \\s over ASCII is \\t \\n \\v \\f \\r and ' ', not Python's isspace)."""
    out = bytearray(256)
    for b in range(256):
        cls = _tables.ASCII_CLASS[b] if b < 0x80 else -1
        if b >= 0x80:
            out[b] = NON_ASCII
        elif cls == 2:  # letter
            out[b] = LOWER if b >= 0x61 else UPPER
        elif cls == 3:
            out[b] = DIGIT
        elif cls == 4:
            out[b] = SPACE
        elif cls == 5:
            out[b] = WHITE
        elif cls == 6:
            out[b] = NEWLINE
        elif cls == 1:
            out[b] = APOS
    return bytes(out)


GPT_TABLE: Final[bytes] = _gpt_table()

# Below this many bytes the compiled loop is no slower than a call into the extension (a compiled
# caller saves the cost of its own call only on the compiled loop; bench/pytest/bench_kernels.py,
# group "class masks, short texts"; figures in docs/speed.md).
SHORT: Final[i64] = 16

# ctz by a de Bruijn sequence: mypyc has no count-trailing-zeros.  The constant stays below
# 2**62, so mypyc keeps it an unboxed C literal.
_DEBRUIJN: Final[i64] = 0x022FDD63CC95386D
_DEBRUIJN_INDEX: Final[bytes] = bytes(
    [0, 1, 2, 53, 3, 7, 54, 27, 4, 38, 41, 8, 34, 55, 48, 28, 62, 5, 39, 46, 44, 42, 22, 9, 24, 35, 59, 56, 49, 18, 29, 11,
     63, 52, 6, 26, 37, 40, 33, 47, 61, 45, 43, 21, 23, 58, 17, 10, 51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12]
)


def ctz(x: i64) -> i64:
    """The number of trailing zero bits of x != 0."""
    low: i64 = x & -x
    return _DEBRUIJN_INDEX[((low * _DEBRUIJN) >> 58) & 63]


def class_masks_compiled(data: bytes, table: bytes, start: i64 = 0, stop: i64 = -1) -> bytes:
    """The kernel's result, computed in compiled code (its twin; faster for short texts)."""
    n: i64 = len(data) if stop < 0 else stop
    dst = BytesWriter()
    base: i64 = start
    while base < n:
        block_end: i64 = base + 64 if base + 64 <= n else n
        m0: i64 = 0
        m1: i64 = 0
        m2: i64 = 0
        m3: i64 = 0
        m4: i64 = 0
        m5: i64 = 0
        m6: i64 = 0
        m7: i64 = 0
        j: i64 = 0
        i: i64 = base
        while i < block_end:
            p: i64 = table[data[i]]
            if p != 0:
                bit: i64 = 1
                bit = bit << j
                if p & 1:
                    m0 |= bit
                if p & 2:
                    m1 |= bit
                if p & 4:
                    m2 |= bit
                if p & 8:
                    m3 |= bit
                if p & 16:
                    m4 |= bit
                if p & 32:
                    m5 |= bit
                if p & 64:
                    m6 |= bit
                if p & 128:
                    m7 |= bit
            i += 1
            j += 1
        write_i64_le(dst, m0)
        write_i64_le(dst, m1)
        write_i64_le(dst, m2)
        write_i64_le(dst, m3)
        write_i64_le(dst, m4)
        write_i64_le(dst, m5)
        write_i64_le(dst, m6)
        write_i64_le(dst, m7)
        base += 64
    return dst.getvalue()


def class_masks(data: bytes, table: bytes, start: i64 = 0, stop: i64 = -1) -> bytes:
    """The masks of data[start:stop] (stop < 0: to the end) under `table` (256 bytes): the
    kernel, or compiled code below SHORT bytes.  A range instead of a slice: a piece of a long
    text is classified where it lies, not copied first (docs/speed.md, worst case)."""
    if stop < 0:
        stop = len(data)
    if stop - start < SHORT and 0 <= start <= stop <= len(data):
        if len(table) != 256:
            return _kernel_class_masks(data, table, start, stop)  # raises the kernel's ValueError
        return class_masks_compiled(data, table, start, stop)
    return _kernel_class_masks(data, table, start, stop)  # (a bad range: the kernel's ValueError)


def _word(masks: bytes, block: i64, bits: i64) -> i64:
    """The OR of the masks of `bits` (property bits) in one block."""
    w: i64 = 0
    at: i64 = block * 64
    p: i64 = 0
    while bits != 0:
        if bits & 1:
            w |= read_i64_le(masks, at + p * 8)
        bits = bits >> 1
        p += 1
    return w


def run_end(masks: bytes, bits: i64, pos: i64, end: i64) -> i64:
    """The end of the run of bytes that have one of the property bits `bits`, starting at pos
    (pos itself if that byte has none), at most `end`.  `masks` is class_masks(data, table) and
    end <= len(data)."""
    block: i64 = pos >> 6
    off: i64 = pos & 63
    while block * 64 < end:
        stops = ~_word(masks, block, bits) >> off
        if stops != 0:
            e: i64 = block * 64 + off + ctz(stops)
            return e if e < end else end
        block += 1
        off = 0
    return end
