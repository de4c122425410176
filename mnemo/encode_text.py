"""Whole texts through the pre-tokenizer and the encoder: the one place where chunks are cut.

Kept apart from encode_chunk.py so that the encoder core stands on its own (tests drive it with chunk
lists) and this module alone depends on the pre-tokenizer.  Both are compiled in the same mypyc
group, so `scan` is a native call (~1 ns) and no chunk is ever copied on the fast path.
"""

from __future__ import annotations

from librt.strings import BytesWriter
from mypy_extensions import i64

from mnemo.encode_chunk import Encoder, emit
from mnemo.patterns import program_of
from mnemo.pretokenize import scan
from mnemo.pretokenize_bits import BITS_MIN, BitCursor, rules_of
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
        cur = BitCursor(prog, data, start, end, rules)
        while pos < end:
            e: i64 = cur.next_end(pos)
            if e < 0:
                break  # mostly beyond ASCII: scan, below
            enc.encode_span(data, pos, e, dst)
            pos = e
    while pos < end:
        e2: i64 = scan(prog, data, pos, end)
        enc.encode_span(data, pos, e2, dst)
        pos = e2


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
        while pos < end and pos < stop:
            e: i64 = cur.next_end(pos)
            if e < 0:
                break
            enc.encode_span(data, pos, e, dst)
            pos = e
    if rules == 0 or pos < stop:  # (at least one chunk, as before: a budget of 0 gives one)
        while pos < end:
            e2: i64 = scan(prog, data, pos, end)
            enc.encode_span(data, pos, e2, dst)
            pos = e2
            if pos >= stop:
                break
    if enc.huge_after >= 0:
        enc.before_text(pos - start)
    return pos
