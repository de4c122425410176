"""Whole texts through the pre-tokenizer and the encoder: the one place where chunks are cut.

Kept apart from encode_chunk.py so that the encoder core stands on its own (tests drive it with chunk
lists) and this module alone depends on the pre-tokenizer.  Both are compiled in the same mypyc
group, so `scan` is a native call (~1 ns) and no chunk is ever copied on the fast path.
"""

from __future__ import annotations

from librt.strings import BytesWriter, read_i64_le, write_i16_le, write_i32_le
from mypy_extensions import i16, i32, i64

from mnemo.classmask import _DEBRUIJN, _DEBRUIJN_INDEX
from mnemo.encode_chunk import FRONT_MASK, M56, SMALL_MAX_BYTES, SMALL_MUL, WORD_SHIFT, Encoder, emit
from mnemo.patterns import program_of
from mnemo.pretokenize import SplitProgram, scan
from mnemo.pretokenize_bits import _NEG2, BITS_MIN, BitCursor, rules_of
from mnemo.superword import SuperEncoder


def encode_range_packed(enc: Encoder, data: bytes, start: i64, end: i64, pattern: i64, dst: BytesWriter) -> None:
    """Write the ids of data[start:end], split with `pattern`, to `dst` (little-endian uint16, or
    uint32 when the encoder is `wide`).

    The text seen by the pattern is data[start:end]: chunks start at `start` and the pattern's
    lookahead stops at `end` (a special token cuts the text there, as in tiktoken).
    """
    if enc.huge_after >= 0:
        enc.before_text(end - start)
    if isinstance(enc, SuperEncoder):  # a superword tokenizer: stage 2 inside coarse chunks
        enc.encode_coarse(data, start, end, pattern, dst)
        return
    prog = program_of(pattern)
    pos: i64 = start
    rules: i64 = rules_of(pattern) if end - start >= BITS_MIN else 0
    if rules != 0:
        # the GPT-4 family's (and o200k's) chunk starts over ASCII, 64 bytes at a time (pretokenize_bits):
        # the same chunks as scan's, with scan where the words are not sure
        pos = encode_walk(enc, BitCursor(prog, data, start, end, rules), data, pos, end, dst)
    if pos < end:
        encode_scanned(enc, prog, data, pos, end, end, dst)


def encode_walk(enc: Encoder, cur: BitCursor, data: bytes, pos: i64, stop: i64, dst: BytesWriter) -> i64:
    """Write the ids of the chunks of cur's text from the chunk start `pos` on, while pos < stop,
    with the chunk ends from the cursor's words; return where it stopped: at or past `stop`, or
    the chunk start where the cursor turned itself off (the caller goes on with `scan`).

    Two things are inline here that were calls a chunk (mypyc inlines no function; docs/speed.md,
    fifteenth session, "the walk and the front cache inline"):
    - BitCursor.next_end's walk, step for step (it stays the cursor's own for counting and the
      tests): the block's remaining stops in a local, where next_end read and wrote the cursor's
      attributes every chunk.  The cursor's state (block, stops, dirty, fallbacks, off) is kept
      as next_end keeps it; its `rest` and `last` are not, so a cursor walked here is not
      walked with next_end afterwards.
    - encode_span's first step, for the chunks it answers without a table of its own: a chunk
      of one byte, and a chunk of 2 to SMALL_MAX_BYTES bytes that the front cache holds with
      one id (most chunks of prose; the same key, slot and test as encode_span's, taken only
      where encode_span would take it: the chunk's length is not being bypassed).  Every other
      chunk, and every miss, goes to encode_span, which looks the front cache up again."""
    if cur.off:
        return pos
    base: i64 = cur.base
    nblocks: i64 = cur.nblocks
    cend: i64 = cur.end
    prog = cur.prog
    dlen: i64 = len(data)
    front = enc.front
    front_at: i64 = enc.front_at
    misses = enc.misses
    wide: bool = enc.wide
    k: i64 = 0
    w: i64 = 0  # the stops of block k above pos, when `synced`
    synced: bool = False
    while pos < stop:
        if not synced:
            r: i64 = pos - base
            k = r >> 6
            if k != cur.block and cur._load(k):
                return pos
            w = cur.stops & (_NEG2 << (r & 63))
        while w == 0:
            k += 1
            if k >= nblocks or cur._load(k):
                break
            w = cur.stops
        e: i64 = 0
        if w == 0:
            if k < nblocks:
                return pos  # off
            e = scan(prog, data, pos, cend)
            synced = False
        else:
            low: i64 = w & -w
            if (cur.dirty & low) != 0:
                cur.fallbacks += 1
                e = scan(prog, data, pos, cend)
                synced = False
            else:
                w ^= low
                e = base + (k << 6) + _DEBRUIJN_INDEX[((low * _DEBRUIJN) >> 58) & 63]
                synced = True
        n: i64 = e - pos
        if n == 1:
            if wide:
                write_i32_le(dst, i32(data[pos]))
            else:
                write_i16_le(dst, i16(data[pos]))
        elif n <= SMALL_MAX_BYTES and pos + 8 <= dlen and misses[n] == 0:
            key: i64 = (read_i64_le(data, pos) & (M56 >> ((SMALL_MAX_BYTES - n) << 3))) | (n << 56)
            fat: i64 = ((((key * SMALL_MUL) >> WORD_SHIFT) & FRONT_MASK) << 1) + front_at
            if front[fat] == key:
                if wide:
                    write_i32_le(dst, i32(front[fat + 1]))
                else:
                    write_i16_le(dst, i16((front[fat + 1] ^ 0x8000) - 0x8000))
            else:
                enc.encode_span(data, pos, e, dst)
        else:
            enc.encode_span(data, pos, e, dst)
        pos = e
    return pos


def encode_scanned(enc: Encoder, prog: SplitProgram, data: bytes, pos: i64, end: i64, stop: i64, dst: BytesWriter) -> i64:
    """Write the ids of the chunks of data[:end] from the chunk start `pos` < end on, cut by
    `scan`, until one ends at or past `stop` (at least one chunk) or at `end`; return where it
    stopped.  The text's pattern is not one the cursor covers, the text is short or mostly
    beyond ASCII, or the cursor stopped.  encode_span's first step inline, as in encode_walk
    (the same lines: a call a chunk is what they save)."""
    dlen: i64 = len(data)
    front = enc.front
    front_at: i64 = enc.front_at
    misses = enc.misses
    wide: bool = enc.wide
    while True:
        e: i64 = scan(prog, data, pos, end)
        n: i64 = e - pos
        if n == 1:
            if wide:
                write_i32_le(dst, i32(data[pos]))
            else:
                write_i16_le(dst, i16(data[pos]))
        elif n <= SMALL_MAX_BYTES and pos + 8 <= dlen and misses[n] == 0:
            key: i64 = (read_i64_le(data, pos) & (M56 >> ((SMALL_MAX_BYTES - n) << 3))) | (n << 56)
            fat: i64 = ((((key * SMALL_MUL) >> WORD_SHIFT) & FRONT_MASK) << 1) + front_at
            if front[fat] == key:
                if wide:
                    write_i32_le(dst, i32(front[fat + 1]))
                else:
                    write_i16_le(dst, i16((front[fat + 1] ^ 0x8000) - 0x8000))
            else:
                enc.encode_span(data, pos, e, dst)
        else:
            enc.encode_span(data, pos, e, dst)
        pos = e
        if pos >= stop or pos >= end:
            return pos


def encode_range(enc: Encoder, data: bytes, start: i64, end: i64, pattern: i64, out: list[int]) -> None:
    """Append the ids of data[start:end], split with `pattern`, to `out` (see encode_range_packed)."""
    dst = BytesWriter()
    encode_range_packed(enc, data, start, end, pattern, dst)
    out.extend(enc.writer_ids(dst))


def encode_bytes(enc: Encoder, data: bytes, pattern: i64) -> list[int]:
    """The ids of a whole byte string, split with `pattern`."""
    dst = BytesWriter()
    encode_range_packed(enc, data, 0, len(data), pattern, dst)
    return enc.writer_ids(dst)


def encode_documents_packed(enc: Encoder, docs: list[bytes], pattern: i64, bos: i64, eos: i64) -> bytes:
    """The ids of every document, each preceded by `bos` and followed by `eos` (none when < 0),
    packed as little-endian uint16 (uint32 when the encoder is `wide`): the array a
    .tok file stores, without a list of every id of the block and its conversion to numpy
    (that conversion alone was a visible share of a worker's time: docs/speed.md).  The
    encoder writes the ids straight into the array: no id is ever a Python int on the way."""
    dst = BytesWriter()
    wide = enc.wide
    for data in docs:
        if bos >= 0:
            emit(dst, bos, wide)
        encode_range_packed(enc, data, 0, len(data), pattern, dst)
        if eos >= 0:
            emit(dst, eos, wide)
    return dst.getvalue()


def encode_some_packed(
    enc: Encoder, data: bytes, start: i64, end: i64, pattern: i64, budget: i64, dst: BytesWriter
) -> i64:
    """Write the ids of whole chunks of data[start:end] from `start` on until at least `budget`
    bytes are done (or the text is), and return where it stopped.

    `start` must be a chunk start of the text data[:end] and so is the result: the pattern
    sees the whole text up to `end`, so calls that pick up where the last one stopped give the
    ids of encode_range_packed.  Tokenizer._encode_long encodes long texts so: between calls
    Python runs its signal handlers (Ctrl-C), which compiled code never does."""
    if isinstance(enc, SuperEncoder):  # whole coarse chunks
        done: i64 = enc.encode_coarse_some(data, start, end, pattern, budget, dst)
        if enc.huge_after >= 0:
            enc.before_text(done - start)
        return done
    prog = program_of(pattern)
    pos: i64 = start
    stop: i64 = start + budget
    rules: i64 = rules_of(pattern) if end - start >= BITS_MIN and budget >= BITS_MIN else 0
    if rules != 0:
        # as encode_range_packed, with words for the budget's bytes only (and a block more for
        # the chunk that crosses it): the rest of a long text is not classified on every call
        cur = BitCursor(prog, data, start, end, rules, stop + 64 if budget < end - start - 64 else end)
        pos = encode_walk(enc, cur, data, pos, stop if stop < end else end, dst)
    if (rules == 0 or pos < stop) and pos < end:  # (at least one chunk, as before: a budget of 0 gives one)
        pos = encode_scanned(enc, prog, data, pos, end, stop, dst)
    if enc.huge_after >= 0:
        enc.before_text(pos - start)
    return pos
