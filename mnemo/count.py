"""Word counting: pre-tokenize text and count every distinct chunk ("word").

One `WordCounter` per worker process.  Its table is open addressing over one librt `vec[i64]`
with four fields per slot (32 bytes, half a cache line):

    key    = FNV-1a hash (32 bits) | chunk length << 32     (0 = empty slot)
    prefix = the chunk's first 7 bytes, little-endian, zero-padded (7, not 8: bits 56-63 stay
             clear, so no shift ever reaches the sign bit of an i64)
    count  = 64-bit count
    word   = index + 1 into `words` (the chunk's bytes, kept only for chunks over 7 bytes)

A chunk of at most 7 bytes (most of them: English averages about 6) is fully identified by key and
prefix, so counting it touches one slot and nothing else -- no `bytes` object is made or read.
Longer chunks compare their remaining bytes with the stored word: inline below MEMEQ_MIN_BYTES,
with the asm `memeq` from there on.  A call into the shim costs ~50 ns from compiled code (boxing
the offsets, acquiring two buffers) against ~1 ns per byte inline, so memeq pays for itself only
on long chunks; bench/bench_count.py measures the crossover.
"""

from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

from mnemo.kernels import memeq
from mnemo.pretokenize import chunk_end

FNV_OFFSET: Final[i64] = 2166136261
FNV_PRIME: Final[i64] = 16777619
MASK32: Final[i64] = 0xFFFFFFFF
#: Chunks at least this long are compared with the asm memeq; shorter ones inline.
MEMEQ_MIN_BYTES: Final[i64] = 64
INITIAL_SLOTS: Final[i64] = 1 << 16
PREFIX_BYTES: Final[i64] = 7


KEY: Final[i64] = 0
PREFIX: Final[i64] = 1
COUNT: Final[i64] = 2
WORD: Final[i64] = 3
FIELDS: Final[i64] = 4


class WordCounter:
    """Counts the chunks of every text given to `add`; chunks longer than `max_chunk_bytes`
    (base64 blobs and the like) are left out of the table and counted in `skipped`."""

    pattern: i64
    max_chunk_bytes: i64
    slots: vec[i64]
    mask: i64
    n_words: i64
    words: list[bytes]
    n_bytes: i64
    n_chunks: i64
    skipped: i64

    def __init__(self, pattern: i64, max_chunk_bytes: i64 = 256) -> None:
        self.pattern = pattern
        self.max_chunk_bytes = max_chunk_bytes
        self.slots = vec[i64]([0] * (FIELDS * INITIAL_SLOTS))
        self.mask = INITIAL_SLOTS - 1
        self.n_words = 0
        self.words = []
        self.n_bytes = 0
        self.n_chunks = 0
        self.skipped = 0

    def add(self, data: bytes) -> None:
        """Count the chunks of one document (or of a piece of one cut where a chunk ends)."""
        end: i64 = len(data)
        pattern = self.pattern
        limit = self.max_chunk_bytes
        slots = self.slots
        mask = self.mask
        pos: i64 = 0
        n_chunks: i64 = 0
        while pos < end:
            e = chunk_end(data, pos, end, pattern)
            n = e - pos
            n_chunks += 1
            if n > limit:
                self.skipped += 1
                pos = e
                continue
            h: i64 = FNV_OFFSET
            prefix: i64 = 0
            i = pos
            while i < e:
                c: i64 = data[i]
                h = ((h ^ c) * FNV_PRIME) & MASK32
                if i - pos < PREFIX_BYTES:
                    prefix |= c << (8 * (i - pos))
                i += 1
            key = h | (n << 32)
            at = (h & mask) * FIELDS
            while True:
                k = slots[at + KEY]
                if k == key and slots[at + PREFIX] == prefix:
                    if n <= PREFIX_BYTES or self._rest_equal(data, pos, n, slots[at + WORD] - 1):
                        slots[at + COUNT] = slots[at + COUNT] + 1
                        break
                elif k == 0:
                    # a new word: the slow path, which may grow the table
                    self._insert(data, pos, e, key, prefix, at)
                    slots = self.slots
                    mask = self.mask
                    break
                at = (at + FIELDS) & (mask * FIELDS + FIELDS - 1)
            pos = e
        self.n_bytes += end
        self.n_chunks += n_chunks

    def _rest_equal(self, data: bytes, pos: i64, n: i64, w: i64) -> bool:
        """data[pos : pos + n] == words[w] when the first PREFIX_BYTES already matched."""
        word = self.words[w]
        if n >= MEMEQ_MIN_BYTES:
            return memeq(data, pos, word, 0, n)
        j: i64 = PREFIX_BYTES
        while j < n:
            if data[pos + j] != word[j]:
                return False
            j += 1
        return True

    def _insert(self, data: bytes, pos: i64, e: i64, key: i64, prefix: i64, at: i64) -> None:
        slots = self.slots
        slots[at + KEY] = key
        slots[at + PREFIX] = prefix
        slots[at + COUNT] = 1
        if e - pos > PREFIX_BYTES:
            self.words.append(data[pos:e])
            slots[at + WORD] = len(self.words)
        self.n_words += 1
        if 2 * self.n_words > self.mask:  # keep the load factor below one half
            self._grow()

    def _grow(self) -> None:
        size = 2 * (self.mask + 1)
        slots = vec[i64]([0] * (FIELDS * size))
        mask = size - 1
        old = self.slots
        i: i64 = 0
        while i < len(old):
            key = old[i + KEY]
            if key != 0:
                at = ((key & MASK32) & mask) * FIELDS
                while slots[at + KEY] != 0:
                    at = (at + FIELDS) & (mask * FIELDS + FIELDS - 1)
                f: i64 = 0
                while f < FIELDS:
                    slots[at + f] = old[i + f]
                    f += 1
            i += FIELDS
        self.slots = slots
        self.mask = mask

    def __len__(self) -> int:
        return self.n_words

    def to_dict(self) -> dict[bytes, int]:
        """The counts as a dict (word bytes -> count)."""
        result: dict[bytes, int] = {}
        slots = self.slots
        i: i64 = 0
        while i < len(slots):
            key = slots[i + KEY]
            if key != 0:
                w = slots[i + WORD]
                if w > 0:
                    word = self.words[w - 1]
                else:
                    word = _unpack_prefix(slots[i + PREFIX], key >> 32)
                result[word] = slots[i + COUNT]
            i += FIELDS
        return result


def _unpack_prefix(prefix: i64, n: i64) -> bytes:
    out = bytearray(n)
    j: i64 = 0
    while j < n:
        out[j] = (prefix >> (8 * j)) & 0xFF
        j += 1
    return bytes(out)


def merge_counts(total: dict[bytes, int], part: dict[bytes, int]) -> None:
    """Add the counts of `part` into `total` (merging the workers' tables)."""
    for word, c in part.items():
        total[word] = total.get(word, 0) + c
