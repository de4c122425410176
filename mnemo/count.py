"""Word counting: pre-tokenize text and count every distinct chunk ("word").

One `WordCounter` per worker process.  Packed librt `vec[i64]` arrays hold two tables:

    short   words of up to 7 bytes (about 85 % of the chunks of English text):
            open addressing, two i64 per slot: key = the word's bytes, little-endian, | its
            length << 56 (0 = empty), then its 64-bit count.  The key IS the word, so counting
            one reads and writes one cache line, and `to_dict` rebuilds the bytes from the key.
    longer words (8 bytes and up):
      slots   open addressing, one i64 per slot: word_hash (32 bits) | (word index + 1) << 32,
              0 = empty.
      words   four i64 per word (32 bytes), in order of first appearance:
                key     = hash | chunk length << 32
                prefix  = the chunk's bytes 0-6, little-endian, zero-padded (7, not 8: bits 56-63
                          stay clear, so no shift ever reaches the sign bit of an i64)
                prefix2 = its bytes 7-13, the same way
                count   = 64-bit count
      A chunk of at most 14 bytes is identified by key and the two prefixes; longer chunks
      compare their remaining bytes with the stored word (`word_bytes`): inline below
      MEMEQ_MIN_BYTES, with the asm `memeq` from there on.  A call into the shim costs tens of
      ns from compiled code (boxing the offsets, acquiring two buffers) against ~1-3 ns per
      byte inline, so memeq pays for itself only on long chunks; see MEMEQ_MIN_BYTES.

The bytes of a chunk are read as two unaligned 8-byte loads (read_i64_le) masked to its length,
and hashed with two multiplies (word_hash), not byte by byte.

Tables leave a worker packed (`to_packed` gives a PackedCounts, whose layout this module owns)
and are added up in the parent with `add_packed`; the trainer lays the packed words out as they
are (merge_loop.train_merges_packed).  `to_dict` and `packed_to_dict` serve the callers that want
a dict (`mnemo.count_words`, tests).

Why two tables: a lookup in one table for all words reads a slot and then the word's record, two
dependent cache misses; the short table reads one (docs/measurements.md has the figures).

With `track` (superword training), every word also gets an id, 0, 1, 2, ... in order of first
appearance, which `count` returns and `to_packed` lists the words in: the counting pass hands
stage 2 each stage-1 chunk as that id, so that stage 2 never looks a chunk up again
(superword.CoarseCounter).  A short word's id sits in `sid`, a vec beside the table, at its
slot's index: its load does not wait for the slot's (keeping the id in the slot and the counts
in an array by id made the count's load wait for the slot's, and counting slower); a longer
word's id in `lid`, by its index.  Such a table counts through `count` only (`add` refuses it).
"""

from typing import Final, NamedTuple

from librt.strings import BytesWriter, read_i64_le, write_i64_le
from librt.vecs import append, extend, vec
from mypy_extensions import i16, i32, i64

from mnemo.constants import PATTERNS
from mnemo.defaults import DEFAULT_MAX_CHUNK_BYTES
from mnemo.errors import ConfigError
from mnemo.kernels import memeq
from mnemo.patterns import program_of
from mnemo.pretokenize import SplitProgram, scan
from mnemo.pretokenize_bits import BITS_MIN, BitCursor, rules_of
from mnemo.pretokenize_named import chunk_end

MASK32: Final[i64] = 0xFFFFFFFF
LOW7: Final[i64] = 0x00FFFFFFFFFFFFFF
# Odd multipliers for word_hash (below 2**62, so that mypyc keeps them C literals).
MUL1: Final[i64] = 0x2545F4914F6CDD1D
MUL2: Final[i64] = 0x1D8E4E27C47D124F
MUL3: Final[i64] = 0x3C6EF372FE94F82B
#: Chunks at least this long are compared with the asm memeq; shorter ones inline.  The crossover
#: lies between 64 and 128 bytes (bench/pytest/bench_count.py; figures in docs/speed.md).
MEMEQ_MIN_BYTES: Final[i64] = 96
INITIAL_SLOTS: Final[i64] = 1 << 16
PREFIX_BYTES: Final[i64] = 7


KEY: Final[i64] = 0
PREFIX: Final[i64] = 1
PREFIX2: Final[i64] = 2
COUNT: Final[i64] = 3
FIELDS: Final[i64] = 4
#: WordCounter._packed_by_id marks a short word's slot with this bit (a longer word's index has none).
SHORT_REF: Final[i64] = 0x4000000000000000


def word_hash(data: bytes, pos: i64, n: i64, prefix: i64, prefix2: i64) -> i64:
    """The 32-bit hash of the chunk data[pos : pos + n], whose first 14 bytes are packed in
    prefix and prefix2: two multiplies for the packed bytes (independent, so they overlap),
    a multiply a byte for the rest of a long chunk, and a final mix of the high bits down."""
    x = prefix * MUL1 + prefix2 * MUL2 + n
    if n > 2 * PREFIX_BYTES:
        i = pos + 2 * PREFIX_BYTES
        e = pos + n
        while i < e:
            x = (x ^ data[i]) * MUL1
            i += 1
    x ^= x >> 29
    return ((x * MUL3) >> 32) & MASK32


META_BYTES: Final[i64] = 16  # bytes of PackedCounts.meta per word: its length and its count


class PackedCounts(NamedTuple):
    """A count table as two flat byte strings: what workers send through a pipe and what the
    trainer lays out.  `blob` holds every word's bytes back to back; `meta` holds, per word,
    two little-endian i64: its length in bytes and its count (META_BYTES a word).  This module
    owns the layout (WordCounter.to_packed, add_packed, pack_words, packed_to_dict); other
    modules unpack it as (blob, meta) and ask for n_words.  (A tuple of two bytes objects
    rather than a dict: for the 1.6 M words of 1 GB a dict took ~0.9 s to build, ~0.9 s to
    pickle and ~1.1 s to unpickle in the parent.)"""

    blob: bytes
    meta: bytes

    @property
    def n_words(self) -> int:
        return len(self.meta) // META_BYTES


class WordCounter:
    """Counts the chunks of every text given to `add`; chunks longer than `max_chunk_bytes`
    (base64 blobs and the like) are left out of the table and counted in `skipped`."""

    pattern: i64
    #: The pattern's program, looked up once (patterns.program_of): `add` scans with it, unless
    #: the pattern is one of the five named ones (see `named`).
    program: SplitProgram
    #: A named pattern's id (a handle below len(PATTERNS)), else -1.  `add` cuts a named
    #: pattern's text with its hand-written scanner (pretokenize_named.chunk_end), as superword
    #: training's counting pass does: the same chunks (tests/test_family.py, test_count.py) in
    #: fewer instructions than the compiled program, which had made plain training's counting
    #: slower (docs/speed.md, "1 GB again").
    named: i64
    #: pretokenize_bits.bit_rules of the pattern: not 0 when `add` takes a text's chunk ends
    #: over ASCII from the class masks (pretokenize_bits.BitCursor), 64 bytes at a time
    rules: i64
    max_chunk_bytes: i64
    memeq_min_bytes: i64
    short: vec[i64]
    short_mask: i64
    n_short: i64
    slots: vec[i64]
    mask: i64
    words: vec[i64]
    word_bytes: list[bytes]
    n_bytes: i64
    n_chunks: i64
    skipped: i64
    #: ids of first appearance (module docstring): sid per short slot, lid per longer word
    track: bool
    sid: vec[i64]
    lid: vec[i64]
    n_ids: i64

    def __init__(self, pattern: i64, max_chunk_bytes: i64 = DEFAULT_MAX_CHUNK_BYTES, track: bool = False) -> None:
        self.pattern = pattern
        self.program = program_of(pattern)
        self.named = pattern if 0 <= pattern < len(PATTERNS) else -1
        self.rules = rules_of(pattern)
        self.max_chunk_bytes = max_chunk_bytes
        # An attribute rather than the Final constant only so that bench/pytest/bench_count.py can
        # set it on a counter to measure the crossover (reading it costs the same as a constant here).
        self.memeq_min_bytes = MEMEQ_MIN_BYTES
        self.short = vec[i64]([0] * (2 * INITIAL_SLOTS))
        self.short_mask = INITIAL_SLOTS - 1
        self.n_short = 0
        self.slots = vec[i64]([0] * INITIAL_SLOTS)
        self.mask = INITIAL_SLOTS - 1
        self.words = vec[i64]()
        self.word_bytes = []
        self.n_bytes = 0
        self.n_chunks = 0
        self.skipped = 0
        self.track = track
        self.sid = vec[i64]([-1] * INITIAL_SLOTS) if track else vec[i64]()
        self.lid = vec[i64]()
        self.n_ids = 0

    def add(self, data: bytes) -> None:
        """Count the chunks of one document (or of a piece of one cut where a chunk ends)."""
        if self.track:
            raise ConfigError("a WordCounter with ids counts through count(), not add()")
        end: i64 = len(data)
        prog = self.program
        named = self.named
        limit = self.max_chunk_bytes
        short = self.short
        short_mask = self.short_mask
        slots = self.slots
        mask = self.mask
        words = self.words
        pos: i64 = 0
        n_chunks: i64 = 0
        bits = self.rules != 0 and end >= BITS_MIN
        cur = BitCursor(prog, data, 0, end, self.rules) if bits else None
        while pos < end:
            e: i64 = -1
            if cur is not None:
                e = cur.next_end(pos)
                if e < 0:  # mostly beyond ASCII: the scanner from here on
                    cur = None
            if e < 0:
                e = chunk_end(data, pos, end, named) if named >= 0 else scan(prog, data, pos, end)
            n = e - pos
            n_chunks += 1
            if n > limit:
                self.skipped += 1
                pos = e
                continue
            prefix: i64 = 0
            prefix2: i64 = 0
            if pos + 2 * PREFIX_BYTES + 1 <= end:
                # Two unaligned 8-byte loads, masked to the chunk.  Not `(1 << (8 * n)) - 1`:
                # mypyc 2.4.1 emits the literal 1 as a 32-bit C int (see encode_chunk.py).
                w0 = read_i64_le(data, pos)
                if n <= PREFIX_BYTES:
                    prefix = w0 & (LOW7 >> ((PREFIX_BYTES - n) * 8))
                else:
                    prefix = w0 & LOW7
                    m = n - PREFIX_BYTES
                    w1 = read_i64_le(data, pos + PREFIX_BYTES)
                    prefix2 = w1 & (LOW7 >> ((PREFIX_BYTES - m) * 8)) if m < PREFIX_BYTES else w1 & LOW7
            else:  # the last 15 bytes of the text: byte by byte
                i = pos
                while i < e:
                    c: i64 = data[i]
                    k = i - pos
                    if k < PREFIX_BYTES:
                        prefix |= c << (8 * k)
                    elif k < 2 * PREFIX_BYTES:
                        prefix2 |= c << (8 * (k - PREFIX_BYTES))
                    i += 1
            if n <= 2 * PREFIX_BYTES:
                # word_hash inline for the chunks its prefixes hold whole (nearly all): the
                # call cost as much as the hashing.  Must stay word_hash's arithmetic
                # (tests/test_count.py compares add with count on every word).
                x = prefix * MUL1 + prefix2 * MUL2 + n
                x ^= x >> 29
                h = ((x * MUL3) >> 32) & MASK32
            else:
                h = word_hash(data, pos, n, prefix, prefix2)
            if n <= PREFIX_BYTES:
                # A short word: its key holds all of it, and its count sits beside the key, so
                # counting it touches one cache line of one table.
                skey = prefix | (n << 56)
                at = (h & short_mask) << 1
                while True:
                    s = short[at]
                    if s == skey:
                        short[at + 1] = short[at + 1] + 1
                        break
                    if s == 0:
                        short[at] = skey
                        short[at + 1] = 1
                        self.n_short += 1
                        if 2 * self.n_short > short_mask:  # keep the load factor below one half
                            self._grow_short()
                            short = self.short
                            short_mask = self.short_mask
                        break
                    at = (at + 2) & (2 * short_mask + 1)
                pos = e
                continue
            key = h | (n << 32)
            at = h & mask
            while True:
                s = slots[at]
                if s == 0:
                    # a new word: the slow path, which may grow the table
                    self._insert(data, pos, e, key, prefix, prefix2, at, 1)
                    slots = self.slots
                    mask = self.mask
                    words = self.words
                    break
                if (s & MASK32) == h:
                    base = ((s >> 32) - 1) * FIELDS
                    if words[base + KEY] == key and words[base + PREFIX] == prefix and words[base + PREFIX2] == prefix2:
                        if n <= 2 * PREFIX_BYTES or self._rest_equal(data, pos, n, (s >> 32) - 1):
                            words[base + COUNT] = words[base + COUNT] + 1
                            break
                at = (at + 1) & mask
            pos = e
        self.n_bytes += end
        self.n_chunks += n_chunks

    def count(self, data: bytes, pos: i64, e: i64, times: i64) -> i64:
        """Add `times` to the count of the word data[pos:e] (not empty) and return its id (with
        `track`; -1 without): what `add` does for each chunk, used to merge the workers' tables
        (add_packed) and by superword training's counting pass.  `add` keeps its own inline copy
        of these lookups: calling this method for every chunk made counting slower
        (docs/speed.md).  tests/test_count.py checks that the
        two agree on every word."""
        n = e - pos
        prefix: i64 = 0
        prefix2: i64 = 0
        if pos + 2 * PREFIX_BYTES + 1 <= len(data):
            # Two unaligned 8-byte loads, masked to the chunk.  Not `(1 << (8 * n)) - 1`:
            # mypyc 2.4.1 emits the literal 1 as a 32-bit C int (see encode_chunk.py).
            w0 = read_i64_le(data, pos)
            if n <= PREFIX_BYTES:
                prefix = w0 & (LOW7 >> ((PREFIX_BYTES - n) * 8))
            else:
                prefix = w0 & LOW7
                m = n - PREFIX_BYTES
                w1 = read_i64_le(data, pos + PREFIX_BYTES)
                prefix2 = w1 & (LOW7 >> ((PREFIX_BYTES - m) * 8)) if m < PREFIX_BYTES else w1 & LOW7
        else:  # the last 15 bytes of the text: byte by byte
            i = pos
            while i < e:
                c: i64 = data[i]
                k = i - pos
                if k < PREFIX_BYTES:
                    prefix |= c << (8 * k)
                elif k < 2 * PREFIX_BYTES:
                    prefix2 |= c << (8 * (k - PREFIX_BYTES))
                i += 1
        h = word_hash(data, pos, n, prefix, prefix2)
        if n <= PREFIX_BYTES:
            # A short word: its key holds all of it, and its count sits beside the key, so
            # counting it touches one cache line of one table.
            short = self.short
            short_mask = self.short_mask
            skey = prefix | (n << 56)
            at = (h & short_mask) << 1
            while True:
                s = short[at]
                if s == skey:
                    short[at + 1] = short[at + 1] + times
                    if self.track:
                        return self.sid[at >> 1]
                    return -1
                if s == 0:
                    short[at] = skey
                    short[at + 1] = times
                    self.n_short += 1
                    new: i64 = -1
                    if self.track:
                        new = self.n_ids
                        self.sid[at >> 1] = new
                        self.n_ids += 1
                    if 2 * self.n_short > short_mask:  # keep the load factor below one half
                        self._grow_short()
                    return new
                at = (at + 2) & (2 * short_mask + 1)
        key = h | (n << 32)
        slots = self.slots
        mask = self.mask
        words = self.words
        at = h & mask
        while True:
            s = slots[at]
            if s == 0:
                # a new word: the slow path, which may grow the table
                return self._insert(data, pos, e, key, prefix, prefix2, at, times)
            if (s & MASK32) == h:
                base = ((s >> 32) - 1) * FIELDS
                if words[base + KEY] == key and words[base + PREFIX] == prefix and words[base + PREFIX2] == prefix2:
                    if n <= 2 * PREFIX_BYTES or self._rest_equal(data, pos, n, (s >> 32) - 1):
                        words[base + COUNT] = words[base + COUNT] + times
                        if self.track:
                            return self.lid[(s >> 32) - 1]
                        return -1
            at = (at + 1) & mask

    def _rest_equal(self, data: bytes, pos: i64, n: i64, w: i64) -> bool:
        """data[pos : pos + n] == word_bytes[w] when the first 2 * PREFIX_BYTES already matched."""
        word = self.word_bytes[w]
        if n >= self.memeq_min_bytes:
            return memeq(data, pos, word, 0, n)
        j: i64 = 2 * PREFIX_BYTES
        while j < n:
            if data[pos + j] != word[j]:
                return False
            j += 1
        return True

    def _insert(self, data: bytes, pos: i64, e: i64, key: i64, prefix: i64, prefix2: i64, at: i64, times: i64) -> i64:
        """Add a longer word at its empty slot `at`; its id (-1 without `track`)."""
        w: i64 = len(self.word_bytes)
        self.word_bytes.append(data[pos:e])
        base = w * FIELDS
        if base + FIELDS > len(self.words):
            self.words = _doubled(self.words, base, FIELDS * 1024)
        new: i64 = -1
        if self.track:
            if w >= len(self.lid):
                self.lid = _doubled(self.lid, w, 1024)
            new = self.n_ids
            self.lid[w] = new
            self.n_ids += 1
        words = self.words
        words[base + KEY] = key
        words[base + PREFIX] = prefix
        words[base + PREFIX2] = prefix2
        words[base + COUNT] = times
        self.slots[at] = (key & MASK32) | ((w + 1) << 32)
        if 2 * (w + 1) > self.mask:  # keep the load factor below one half
            self._grow()
        return new

    def _grow(self) -> None:
        size = 2 * (self.mask + 1)
        slots = vec[i64]([0] * size)
        mask = size - 1
        for s in self.slots:
            if s != 0:
                at = (s & MASK32) & mask
                while slots[at] != 0:
                    at = (at + 1) & mask
                slots[at] = s
        self.slots = slots
        self.mask = mask

    def _grow_short(self) -> None:
        size = 2 * (self.short_mask + 1)
        table = vec[i64]([0] * (2 * size))
        track = self.track
        sid = vec[i64]([-1] * size) if track else self.sid
        old_sid = self.sid
        mask = size - 1
        old = self.short
        i: i64 = 0
        while i < len(old):
            key = old[i]
            if key != 0:
                n = key >> 56
                at = (word_hash(b"", 0, n, key & LOW7, 0) & mask) << 1
                while table[at] != 0:
                    at = (at + 2) & (2 * mask + 1)
                table[at] = key
                table[at + 1] = old[i + 1]
                if track:
                    sid[at >> 1] = old_sid[i >> 1]
            i += 2
        self.sid = sid
        self.short = table
        self.short_mask = mask

    def __len__(self) -> int:
        return self.n_short + len(self.word_bytes)

    def to_dict(self) -> dict[bytes, int]:
        """The counts as a dict (word bytes -> count): the short words in table order, then the
        longer ones in order of first appearance (to_packed's order)."""
        blob, meta = self.to_packed()
        return packed_to_dict(blob, meta)

    def to_packed(self) -> PackedCounts:
        """The counts as a PackedCounts, in to_dict's order; with `track`, in the order of the
        words' ids (the i-th word listed has id i)."""
        if self.track:
            return self._packed_by_id()
        blob = BytesWriter()
        meta = BytesWriter()
        short = self.short
        i: i64 = 0
        while i < len(short):
            key = short[i]
            if key != 0:
                n = key >> 56
                write_i64_le(blob, key & LOW7)
                blob.truncate(len(blob) - 8 + n)
                write_i64_le(meta, n)
                write_i64_le(meta, short[i + 1])
            i += 2
        words = self.words
        base: i64 = 0
        for word in self.word_bytes:
            blob.write(word)
            write_i64_le(meta, len(word))
            write_i64_le(meta, words[base + COUNT])
            base += FIELDS
        return PackedCounts(blob.getvalue(), meta.getvalue())

    def _packed_by_id(self) -> PackedCounts:
        """to_packed of a tracking table: each word where its id says."""
        ref = vec[i64](capacity=self.n_ids)
        k: i64 = 0
        while k < self.n_ids:
            ref = append(ref, -1)
            k += 1
        short = self.short
        sid = self.sid
        i: i64 = 0
        while i < len(short):
            if short[i] != 0:
                ref[sid[i >> 1]] = SHORT_REF | i
            i += 2
        lid = self.lid
        w: i64 = 0
        while w < len(self.word_bytes):
            ref[lid[w]] = w
            w += 1
        blob = BytesWriter()
        meta = BytesWriter()
        words = self.words
        k = 0
        while k < len(ref):
            r = ref[k]
            if r >= SHORT_REF:
                i = r - SHORT_REF
                key = short[i]
                n = key >> 56
                write_i64_le(blob, key & LOW7)
                blob.truncate(len(blob) - 8 + n)
                write_i64_le(meta, n)
                write_i64_le(meta, short[i + 1])
            else:
                word = self.word_bytes[r]
                blob.write(word)
                write_i64_le(meta, len(word))
                write_i64_le(meta, words[r * FIELDS + COUNT])
            k += 1
        return PackedCounts(blob.getvalue(), meta.getvalue())

    def add_packed(self, blob: bytes, meta: bytes) -> vec[i64]:
        """Add counts made by to_packed (another worker's table) to this table.  With `track`,
        the id here of each word listed there, in its order (empty without)."""
        ids = vec[i64]()
        track = self.track
        pos: i64 = 0
        m: i64 = 0
        while m < len(meta):
            n = read_i64_le(meta, m)
            got = self.count(blob, pos, pos + n, read_i64_le(meta, m + 8))
            if track:
                ids = append(ids, got)
            pos += n
            m += META_BYTES
        return ids


def _doubled(old: vec[i64], used: i64, extra: i64) -> vec[i64]:
    """A vec of twice old's length plus `extra`, zeros, with old[:used] copied in.  (librt's
    `append` measured O(n) per call on a table's records -- quadratic over a run -- so they are
    preallocated this way and overwritten instead.)"""
    bigger = vec[i64]([0] * (2 * len(old) + extra))
    i: i64 = 0
    while i < used:
        bigger[i] = old[i]
        i += 1
    return bigger


def pack_words(words: dict[bytes, int]) -> PackedCounts:
    """Word counts from a dict, packed as WordCounter.to_packed packs them."""
    blob = BytesWriter()
    meta = BytesWriter()
    for word, c in words.items():
        blob.write(word)
        write_i64_le(meta, len(word))
        write_i64_le(meta, c)
    return PackedCounts(blob.getvalue(), meta.getvalue())


def packed_to_dict(blob: bytes, meta: bytes) -> dict[bytes, int]:
    """Packed counts as a dict (word bytes -> count), the counts of a word listed more than
    once added up (to_packed lists each once; superword.CoarseCounter's may repeat)."""
    result: dict[bytes, int] = {}
    pos: i64 = 0
    m: i64 = 0
    while m < len(meta):
        n = read_i64_le(meta, m)
        w = blob[pos : pos + n]
        result[w] = result.get(w, 0) + read_i64_le(meta, m + 8)
        pos += n
        m += META_BYTES
    return result


#: filled64 copies a block of this many items at a time.
FILL_BLOCK: Final[i64] = 4096


def filled64(n: i64, x: i64) -> vec[i64]:
    """A vec of `n` copies of `x`, a block at a time (`extend` copies a vec's buffer at once,
    where `append` is a call through librt's table for every item); superword.py and
    merge_loop.py fill their arrays with it (filled16, filled32: the same at their widths)."""
    v = vec[i64](capacity=n)
    block = vec[i64](capacity=FILL_BLOCK)
    while len(block) < FILL_BLOCK and len(block) < n:
        block = append(block, x)
    # (n <= 0 leaves the block empty: extending by it would never end)
    while len(block) > 0 and len(v) + len(block) <= n:
        v = extend(v, block)
    while len(v) < n:
        v = append(v, x)
    return v


def filled16(n: i64, x: i16) -> vec[i16]:
    """filled64 for i16."""
    v = vec[i16](capacity=n)
    block = vec[i16](capacity=FILL_BLOCK)
    while len(block) < FILL_BLOCK and len(block) < n:
        block = append(block, x)
    while len(block) > 0 and len(v) + len(block) <= n:
        v = extend(v, block)
    while len(v) < n:
        v = append(v, x)
    return v


def filled32(n: i64, x: i32) -> vec[i32]:
    """filled64 for i32."""
    v = vec[i32](capacity=n)
    block = vec[i32](capacity=FILL_BLOCK)
    while len(block) < FILL_BLOCK and len(block) < n:
        block = append(block, x)
    while len(block) > 0 and len(v) + len(block) <= n:
        v = extend(v, block)
    while len(v) < n:
        v = append(v, x)
    return v
