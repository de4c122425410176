"""The fast BPE trainer (compiled with mypyc).  Same results as mnemo.reference.train_merges_naive,
merge for merge and count for count; the tie rule is written out in reference.TIE_RULE_DOC.

How it works
------------
* The words live in one librt `vec[i16]` token array: a separator SEP (0xFFFF, -1 as i16) before
  every word and after the last one.  `wcnt[p]` is the count of the word that owns position p
  (its tokens and the SEP after it), so that a merge reaches a word's count in one load (the
  word's index, then its count, was two dependent cache misses per occurrence: half of the time
  spent gathering them on 1 GB).  Words shorter than 2 bytes hold no pair and are left out.
* A pair (a, b) is the key a << 16 | b in an open-addressing table (`_Pairs`) that keeps, for
  every pair ever seen, its weighted count (sum of the counts of the words it occurs in, once
  per occurrence) and its number of occurrences in the array.
* Each merge: the asm pair scan (`kernels.pair_positions`) finds the occurrences, with cap = the
  pair's number of occurrences, which it cannot exceed.  Each word hit is rewritten in place, left
  to right, never overlapping, and squeezed to the left; the freed tail is filled with SEP, so a
  hole can never form a false pair (no pair contains 0xFFFF).  The pair counts change by exact
  deltas: every old pair touching a merged position is subtracted once, every new pair holding
  the new token is added.  Pairs containing the new token are the only ones whose count goes up,
  and only during the merge that creates it; they are pushed on the heap once, at the end of that
  merge.
* The next pair comes off a max-heap of (count, rank) with lazy deletion: on top, an entry whose
  count the table no longer has is pushed again with the table's count (or dropped below 2).
  For tie="id" the rank orders ties by the rule (rank = -key); for tie="bytes" every entry with
  the top count is popped and the winner chosen by comparing byte strings.
* Blocks (the skip index, `_Words`): the array is cut into blocks of about BLOCK tokens that end
  at word boundaries, so no pair crosses a block.  Per token id, a bit set records the blocks
  that may hold it.  Both tokens of a pair being in a block says little once tokens are common
  (on 1 GB of text, 6,100 tokens were scanned per occurrence found), so a second index records
  pairs: a Bloom filter per block, stored bit-sliced -- filter bit h of every block is one bit
  set over the blocks, `pf[h]`, the same shape as a token's -- so that a merge ANDs four bit
  sets, 64 blocks a word: token a's, token b's, and the pair's two filter slices.  A merge scans
  only the blocks left, joining candidate blocks at most GAP apart into one scan call.  Every
  pair that comes into a block sets its bits (only pairs holding the new token come in: the
  rewrite sets them); bits are only cleared when the index is rebuilt at compaction, so the
  index can say "maybe" wrongly but never "no".  The index merely says where not to look.
* Word lists (late, rare pairs): a pair is made by exactly one merge, the one that makes its
  later token (tokens are never removed, so two tokens become adjacent only when one is made).
  A merge of at most LOG_PER_BLOCK occurrences per block records, for every pair it makes, the
  starts of the words it made it in (`plog`; the pair table's fourth field points there).  When
  that pair is merged, only those words can hold it: they are read instead of the blocks (a
  block of 2,048 tokens was read whole for one occurrence of a late pair), and the occurrences
  found must be exactly the table's.  Compaction moves the recorded starts with their words.
* When the holes (SEP padding) exceed half of the array (COMPACT_AT), they are squeezed out in place
  (`_Words.n` is the array's length; what lies beyond it is stale).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from librt.strings import read_i32_le, read_i64_le
from librt.vecs import append, extend, vec
from mypy_extensions import i16, i32, i64

from mnemo.count import META_BYTES, filled64, filled16, pack_words
from mnemo.errors import ConfigError, VerificationError
from mnemo.checks import check_initial_merges, check_train_args, pair_total_error
from mnemo.constants import MAX_PAIR_TOTAL

EMPTY: Final[i64] = -1
EMPTY_BLOCK: Final[i64] = 1024  # _Pairs._alloc fills a new table this many empty slots at a time

#: `skip(bytes_a, bytes_b)` True: the token of that pair is never made (reference.SKIP_DOC).
Skip = Callable[[bytes, bytes], bool] | None

# ---- the id width: begin (tools/gen_merge_loop_wide.py writes mnemo/merge_loop_wide.py, the
# trainer of vocabularies above 65,535 ids, from this file with 32-bit tokens: every line that
# depends on the width of a token is here, or spells `vec[i16]`) ----
from mnemo import kernels

#: The largest vocabulary this trainer takes: ids 0..0xFFFE, and 0xFFFF separates words.
MAX_IDS: Final[i64] = 0xFFFF
SEP: Final[i64] = 0xFFFF
SEPT: Final[i16] = -1  # SEP as stored in the array
KEY_SHIFT: Final[i64] = 16  # pair (a, b) is the key a << KEY_SHIFT | b
KEY_MASK: Final[i64] = 0xFFFF
PAIR_MUL: Final[i64] = 0x9E3779B1  # _Pairs' hash: ((key * PAIR_MUL) >> PAIR_SHIFT) & mask
PAIR_SHIFT: Final[i64] = 7


def _id(x: i16) -> i64:
    """A token read from the array, as its id 0..65535."""
    return i64(x) & 0xFFFF


def _tok(x: i64) -> i16:
    """A token id 0..65535 as the i16 with the same bits."""
    if x >= 32768:
        return i16(x - 65536)
    return i16(x)


def _scan(toks: vec[i16], a: i64, b: i64, cap: i64, start: i64, stop: i64) -> bytes:
    """Positions of (a, b) in toks[start:stop], at most cap, as little-endian int64: the asm scan."""
    return kernels.pair_positions(toks, a, b, cap, start, stop)


#: The merges whose ids this trainer can hold; merge_loop_wide learns them here first (Seams.handoff).
NARROW_MERGES: Final[i64] = MAX_IDS - 256


def _start(
    blob: bytes,
    meta: bytes,
    n_merges: i64,
    tie: str,
    verify: bool,
    progress: Callable[[str, int, int], None] | None,
    forced: list[tuple[int, int]],
    skip: Skip,
) -> TrainState:
    """Where train_merges_packed starts: the words laid out, no merge learnt yet."""
    return _layout(blob, meta)


def _check_width(n_merges: i64) -> None:
    if 256 + n_merges > MAX_IDS:
        raise ConfigError(
            f"n_merges must be at most {MAX_IDS - 256} for the 16-bit trainer (0xFFFF separates words), "
            f"got {n_merges}; mnemo.train uses mnemo.merge_loop_wide above that"
        )


# ---- the id width: end ----


class _Pairs:
    """Open-addressing hash table: pair key -> (weighted count, occurrences).  Linear probing on
    a power-of-two table, load at most 1/2; a pair whose count falls to 0 keeps its slot (only
    stage 2 removes pairs, those below its theta: continue_state).  One packed vec[i64], 4
    fields per slot (key, count, occurrences, word list), so that an update touches one cache
    line; `slot()` returns the field offset of the
    key (count at +1, occurrences at +2, at +3 1 + the offset in _Words.plog of the pair's word
    list, 0 for none; during the merge that makes the pair, its index in _Words.touched)."""

    data: vec[i64]
    mask: i64
    used: i64

    def __init__(self, size_hint: i64) -> None:
        cap: i64 = 1024
        while cap < 2 * size_hint:
            cap *= 2
        self._alloc(cap)

    def _alloc(self, cap: i64) -> None:
        # a block of empty slots, then the table extended by it (`extend` copies a vec's buffer
        # at once; four `append`s a slot, under a boxed `range`, were 3-4 % of stage 2's loop)
        block = vec[i64](capacity=4 * EMPTY_BLOCK)
        while len(block) < 4 * EMPTY_BLOCK and len(block) < 4 * cap:
            block = append(block, EMPTY)
            block = append(block, 0)
            block = append(block, 0)
            block = append(block, 0)
        data = vec[i64](capacity=4 * cap)
        while len(block) > 0 and len(data) + len(block) <= 4 * cap:
            data = extend(data, block)
        while len(data) < 4 * cap:
            data = append(data, EMPTY)
            data = append(data, 0)
            data = append(data, 0)
            data = append(data, 0)
        self.data = data
        self.mask = cap - 1
        self.used = 0

    def slot(self, key: i64) -> i64:
        """The offset of `key`'s slot, inserted with zero counts if absent."""
        data = self.data
        mask = self.mask
        h = ((key * PAIR_MUL) >> PAIR_SHIFT) & mask
        while True:
            k = data[4 * h]
            if k == key:
                return 4 * h
            if k == EMPTY:
                break
            h = (h + 1) & mask
        if 2 * (self.used + 1) > mask + 1:
            self._grow()
            return self.slot(key)
        data[4 * h] = key
        self.used += 1
        return 4 * h

    def find(self, key: i64) -> i64:
        """The offset of `key`'s slot, or -1 if it was never inserted."""
        data = self.data
        mask = self.mask
        h = ((key * PAIR_MUL) >> PAIR_SHIFT) & mask
        while True:
            k = data[4 * h]
            if k == key:
                return 4 * h
            if k == EMPTY:
                return -1
            h = (h + 1) & mask

    def _grow(self) -> None:
        old = self.data
        self._alloc(2 * (self.mask + 1))
        for i in range(0, len(old), 4):
            k = old[i]
            if k != EMPTY:
                s = self.slot(k)
                self.data[s + 1] = old[i + 1]
                self.data[s + 2] = old[i + 2]
                self.data[s + 3] = old[i + 3]

    def count(self, key: i64) -> i64:
        s = self.find(key)
        return self.data[s + 1] if s >= 0 else 0

    def occurrences(self, key: i64) -> i64:
        s = self.find(key)
        return self.data[s + 2] if s >= 0 else 0

    def add(self, key: i64, dcnt: i64, docc: i64) -> i64:
        """Add to the pair's count and occurrences; return its count before."""
        s = self.slot(key)
        data = self.data
        before = data[s + 1]
        data[s + 1] = before + dcnt
        data[s + 2] += docc
        return before

    def sub(self, key: i64, wc: i64) -> None:
        """One occurrence of weight `wc` gone; nothing if the pair is absent (a pair dropped by
        `remove`, whose count can no longer matter)."""
        s = self.find(key)
        if s >= 0:
            data = self.data
            data[s + 1] -= wc
            data[s + 2] -= 1

    def remove(self, key: i64) -> None:
        """Drop `key` (present) by backward-shift deletion: each later entry of its probe run
        whose home slot is not between the hole and itself moves into the hole, so that every
        key stays reachable from its home slot with no tombstones."""
        data = self.data
        mask = self.mask
        h = ((key * PAIR_MUL) >> PAIR_SHIFT) & mask
        while data[4 * h] != key:
            h = (h + 1) & mask
        j = h
        while True:
            j = (j + 1) & mask
            k = data[4 * j]
            if k == EMPTY:
                break
            home = ((k * PAIR_MUL) >> PAIR_SHIFT) & mask
            if ((j - home) & mask) >= ((j - h) & mask):
                data[4 * h] = k
                data[4 * h + 1] = data[4 * j + 1]
                data[4 * h + 2] = data[4 * j + 2]
                data[4 * h + 3] = data[4 * j + 3]
                h = j
        data[4 * h] = EMPTY
        data[4 * h + 1] = 0
        data[4 * h + 2] = 0
        data[4 * h + 3] = 0
        self.used -= 1


class _Heap:
    """Binary max-heap of (count, rank) entries; rank = -key for tie="id", 0 for tie="bytes"
    (the key then travels in `key`)."""

    cnt: vec[i64]
    rank: vec[i64]
    key: vec[i64]
    n: i64

    def __init__(self) -> None:
        self.cnt = vec[i64]()
        self.rank = vec[i64]()
        self.key = vec[i64]()
        self.n = 0

    def push(self, c: i64, r: i64, k: i64) -> None:
        i = self.n
        if i == len(self.cnt):
            self.cnt = append(self.cnt, c)
            self.rank = append(self.rank, r)
            self.key = append(self.key, k)
        self.n = i + 1
        cnt = self.cnt
        rank = self.rank
        key = self.key
        while i > 0:
            parent = (i - 1) >> 1
            pc = cnt[parent]
            if pc > c or (pc == c and rank[parent] >= r):
                break
            cnt[i] = pc
            rank[i] = rank[parent]
            key[i] = key[parent]
            i = parent
        cnt[i] = c
        rank[i] = r
        key[i] = k

    def pop(self) -> None:
        """Remove the top entry (read it first from cnt[0], rank[0], key[0])."""
        n = self.n - 1
        self.n = n
        if n == 0:
            return
        cnt = self.cnt
        rank = self.rank
        key = self.key
        c = cnt[n]
        r = rank[n]
        k = key[n]
        i: i64 = 0
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n:
                c1 = cnt[child]
                c2 = cnt[child + 1]
                if c2 > c1 or (c2 == c1 and rank[child + 1] > rank[child]):
                    child += 1
            cc = cnt[child]
            if cc < c or (cc == c and rank[child] <= r):
                break
            cnt[i] = cc
            rank[i] = rank[child]
            key[i] = key[child]
            i = child
        cnt[i] = c
        rank[i] = r
        key[i] = k


def _beats_bytes(k1: i64, k2: i64, token_bytes: list[bytes]) -> bool:
    """tie="bytes": whether pair k1 beats pair k2 (greater (bytes(a), bytes(b)))."""
    a1 = token_bytes[k1 >> KEY_SHIFT]
    a2 = token_bytes[k2 >> KEY_SHIFT]
    if a1 != a2:
        return a1 > a2
    return token_bytes[k1 & KEY_MASK] > token_bytes[k2 & KEY_MASK]


BLOCK: Final[i64] = 2048  # tokens per block of the skip index (blocks end at word boundaries)
GAP: Final[i64] = 4  # candidate blocks at most this far apart are scanned in one call
# A word visited from a word list costs about this many tokens of block scan (a cache miss on
# the word and a compiled loop over it, against the asm scan's stream).  See _train's choice.
LIST_COST: Final[i64] = 64
# A merge of at most this many occurrences per block records its new pairs' word lists (64
# and 8 measured alike while compaction moved every list; with only the live lists moved, 64
# measured faster: docs/speed.md, "Merge loop").
LOG_PER_BLOCK: Final[i64] = 64
# The holes are squeezed out when they are more than 1/COMPACT_AT of the array (2 measured faster
# than 4 once compaction was in place: fewer re-indexings, for scans over more holes).
COMPACT_AT: Final[i64] = 2
# The most tokens the words may hold for merges to keep word lists (their positions are i32).
MAX_LISTED: Final[i64] = (1 << 31) - 1


class Seams:
    """The merge loop's seams for tests and benchmarks: set attributes of SEAMS (pytest's
    monkeypatch.setattr), never arguments of a production signature.

    corrupt_at = k knocks one pair's count off by one after merge k, so that tests see
    verification fail; block and gap set the skip index's block size (tokens) and the largest gap
    (blocks) scanned through in one call, so that small inputs exercise many blocks.
    handoff (merge_loop_wide only): a run of more merges than this learns its first `handoff`
    merges with merge_loop's 16-bit trainer and continues from its words (TrainState); 0 runs
    the 32-bit trainer alone.  Tests set it low to cross the handoff on small inputs.  The
    merges before the handoff run with merge_loop.SEAMS (its block, gap and corrupt_at), the
    rest with merge_loop_wide.SEAMS.
    list_cost: a merge reads its words from its pair's word list when the list's length times
    list_cost is at most the tokens a block scan would read (see LIST_COST); 0 takes the list
    whenever there is one, -1 never records one (tests force each path)."""

    corrupt_at: i64
    block: i64
    gap: i64
    handoff: i64
    list_cost: i64

    def __init__(self) -> None:
        self.corrupt_at = -1
        self.block = BLOCK
        self.gap = GAP
        self.handoff = NARROW_MERGES
        self.list_cost = LIST_COST


SEAMS: Final = Seams()
# Pair filter bits per block: FILTER_BITS_PER_TOKEN * block, rounded up to a power of two.  A
# block of n tokens holds fewer than n distinct pairs, so with two bits per pair the filter says
# "maybe" wrongly for at most ~5 % of absent pairs.  It costs one byte per token.  8 bits per
# token and blocks of 2,048 tokens: more bits or smaller blocks measured no faster (docs/speed.md).
FILTER_BITS_PER_TOKEN: Final[i64] = 8
# Two slices per pair from one multiply (constant < 2**62: mypyc boxes larger Final ints).
FILTER_MUL: Final[i64] = 0x2545F4914F6CDD1D


def _slice1(key: i64, fmask: i64) -> i64:
    """The first filter slice of pair `key` (fmask = slices - 1)."""
    return ((key * FILTER_MUL) >> 21) & fmask


def _slice2(key: i64, fmask: i64) -> i64:
    """The second filter slice of pair `key`."""
    return ((key * FILTER_MUL) >> 41) & fmask
#: _verify_dropped's bound on the pairs stage 2 dropped: 2 ** VERIFY_BITS sums (i32: 1 MB), a
#: pair's sum from the top bits of its key * VERIFY_MUL (< 2**62: mypyc boxes larger Final ints)
VERIFY_BITS: Final[i64] = 18
MAX_I32: Final[i64] = 0x7FFFFFFF
#: _verify_dropped's bits of the kept pairs' keys (a bit set of 2 ** VERIFY_FILTER_BITS, from
#: other bits of the same product)
VERIFY_FILTER_BITS: Final[i64] = 20
VERIFY_FILTER_SHIFT: Final[i64] = 20
VERIFY_MUL: Final[i64] = 0x2545F4914F6CDD1D
VERIFY_SHIFT: Final[i64] = 40
PROGRESS_EVERY: Final[i64] = 256  # merges between progress calls (a power of two)


def _bit_table() -> vec[i64]:
    """BITS[k] = the i64 with only bit k set, k = 0..63.  A table, not `1 << k`: mypyc emits an
    i64 variable holding 1 as the C literal 1, a 32-bit int, whose shift by 32 or more is undefined
    (the bits above 31 came out wrong).  Doubling wraps to bit 63 (the build uses -fwrapv)."""
    t = vec[i64]()
    b: i64 = 1
    for _ in range(64):
        t = append(t, b)
        b = b * 2
    return t


def _zeros(n: i64) -> vec[i64]:
    v = vec[i64](capacity=n)
    for _ in range(n):
        v = append(v, 0)
    return v


def _reuse(v: vec[i64], n: i64, dirty: i64) -> vec[i64]:
    """n zeros: `v` with its first `dirty` items cleared (the rest are zeros already) when it
    holds n, else a new vec."""
    if len(v) < n:
        return _zeros(n)
    for q in range(min(dirty, len(v))):
        v[q] = 0
    return v


class _Words:
    """The token array and its skip index, and the in-place rewriting of words."""

    toks: vec[i16]
    wcnt: vec[i64]
    n: i64  # the words are toks[:n] (compaction squeezes in place: what lies beyond is stale)
    holes: i64
    n_ids: i64
    bstart: vec[i64]  # block k is toks[bstart[k]:bstart[k + 1]]; bstart[-1] == n
    gc: vec[i64]  # rewrite's scratch: the count of each occurrence's word
    masks: vec[i64]  # token t's blocks: bit k % 64 of masks[t * mw + k // 64]
    pf: vec[i64]  # pair filter slice h: bit k % 64 of pf[h * mw + k // 64] (block k may hold a pair hashing to h)
    fmask: i64  # filter slices - 1
    mw: i64
    bits: vec[i64]  # _bit_table()
    touched: vec[i64]  # pairs holding the new token, counted up during this merge
    pv: vec[i64]  # rewrite's input: the position of each occurrence (of the first one per word)
    # word lists: per pair, -(n + 2) then the starts of the n words it was made in; i32 (the
    # lists took 146 MB as i64 on the 1 GB run's words): positions below 2**31, see _train
    plog: vec[i32]
    nj: vec[i64]  # this merge's new pairs' occurrences: the pair's index in touched ...
    np: vec[i64]  # ... and its word's start
    keep: vec[i64]  # _move_lists' scratch: the positions compaction keeps (a bit set) ...
    pre: vec[i64]  # ... and the number kept before each of its words
    m55: i64
    logging: bool  # whether this merge records word lists for its new pairs
    a: i64
    b: i64
    c: i64
    block: i64
    nfill: i64

    def __init__(self, toks: vec[i16], wcnt: vec[i64], n: i64, n_ids: i64, block: i64) -> None:
        self.block = block
        self.n = n
        self.masks = vec[i64]()
        self.pf = vec[i64]()
        self.mw = 0
        self.pv = vec[i64]()
        self.plog = vec[i32]()
        self.nj = vec[i64]()
        self.np = vec[i64]()
        self.keep = vec[i64]()
        self.pre = vec[i64]()
        m55: i64 = 0
        for _ in range(32):
            m55 = m55 * 4 + 1
        self.m55 = m55
        self.logging = False
        self.bits = _bit_table()
        self.toks = toks
        self.wcnt = wcnt
        self.holes = 0
        self.n_ids = n_ids
        self.gc = vec[i64]()
        self.touched = vec[i64]()
        self.a = self.b = self.c = 0
        self.nfill = 0
        self.index_blocks()

    def index_blocks(self) -> None:
        """Cut the array into blocks at word boundaries and record which tokens each holds.
        The bit sets of the index before are cleared and reused: allocated afresh at every
        compaction, their pages' first touch (the kernel zeroing them) took ~10 % of the 1 GB
        loop."""
        toks = self.toks
        n = self.n
        bstart = vec[i64]()
        bstart = append(bstart, 0)
        begin: i64 = 0
        block = self.block
        for i in range(n):
            if toks[i] == SEPT and i - begin >= block:
                bstart = append(bstart, i)
                begin = i
        bstart = append(bstart, n)
        nb: i64 = len(bstart) - 1
        mw = (nb + 63) >> 6
        slices: i64 = 64
        while slices < FILTER_BITS_PER_TOKEN * block:
            slices *= 2
        fmask = slices - 1
        # only tokens made so far have bits (rows of the old width mw); pf's every slice may
        masks = _reuse(self.masks, self.n_ids * mw, (max(self.c, 255) + 1) * self.mw)
        pf = _reuse(self.pf, slices * mw, slices * self.mw)
        bits = self.bits
        for k in range(nb):
            word: i64 = k >> 6
            bit: i64 = bits[k & 63]
            prev: i64 = SEP
            for i in range(bstart[k], bstart[k + 1]):
                x = _id(toks[i])
                if x != SEP:
                    masks[x * mw + word] |= bit
                    if prev != SEP:
                        key = (prev << KEY_SHIFT) | x
                        pf[_slice1(key, fmask) * mw + word] |= bit
                        pf[_slice2(key, fmask) * mw + word] |= bit
                prev = x
        self.bstart = bstart
        self.masks = masks
        self.pf = pf
        self.fmask = fmask
        self.mw = mw

    def begin_merge(self, a: i64, b: i64, c: i64, logging: bool) -> None:
        self.a = a
        self.b = b
        self.c = c
        self.touched = vec[i64]()
        self.logging = logging
        self.nj = vec[i64]()
        self.np = vec[i64]()

    def end_merge(self, table: _Pairs) -> None:
        """Append the word lists of the merge's new pairs to plog (a counting sort of the
        occurrences by pair: each list keeps the words' order) and record where each starts."""
        if not self.logging:
            return
        touched = self.touched
        nt: i64 = len(touched)
        nj = self.nj
        npos = self.np
        ne: i64 = len(nj)
        plog = self.plog
        base: i64 = len(plog)
        fill = _zeros(nt)
        for e in range(ne):
            fill[nj[e]] += 1
        off: i64 = base
        for j in range(nt):
            n = fill[j]
            plog = append(plog, i32(-(n + 2)))
            for _ in range(n):
                plog = append(plog, i32(-1))
            fill[j] = off + 1
            table.data[table.find(touched[j]) + 3] = off + 1
            off += n + 1
        for e in range(ne):
            j = nj[e]
            plog[fill[j]] = i32(npos[e])
            fill[j] += 1
        self.plog = plog

    def gather(self, pos: bytes, nh: i64) -> None:
        """pv[h] = occurrence h's position and gc[h] = its word's count, in a pass of loads that
        do not depend on each other, so that the CPU overlaps their cache misses (wcnt is far
        larger than the caches; inline in rewrite's loop each miss was waited for in turn: ~2/3
        of its time on 1 GB)."""
        if len(self.gc) < nh:
            self.gc = _zeros(2 * nh)
            self.pv = _zeros(2 * nh)
        wcnt = self.wcnt
        gc = self.gc
        pv = self.pv
        for h in range(nh):
            p = read_i64_le(pos, h * 8)
            pv[h] = p
            gc[h] = wcnt[p]

    def from_list(self, lo: i64, hi: i64) -> i64:
        """Fill pv and gc (as gather does) from the words plog[lo:hi], the words the pair was
        made in: the first occurrence of (a, b) in each word that still holds it.  Returns the
        number of occurrences found (overlapping ones included, as the table counts them); the
        words filled are nfill."""
        toks = self.toks
        wcnt = self.wcnt
        plog = self.plog
        a = self.a
        b = self.b
        if len(self.gc) < hi - lo:
            self.gc = _zeros(2 * (hi - lo))
            self.pv = _zeros(2 * (hi - lo))
        gc = self.gc
        pv = self.pv
        nh: i64 = 0
        found: i64 = 0
        prev: i64 = -1
        for e in range(lo, hi):
            i = i64(plog[e])
            if i < 0 or i == prev:
                continue  # left out at a compaction (one token: no pair), or the same word again
            prev = i
            first: i64 = -1
            while True:
                x = _id(toks[i])
                if x == SEP:
                    break
                if x == a and _id(toks[i + 1]) == b:
                    found += 1
                    if first < 0:
                        first = i
                i += 1
            if first >= 0:
                pv[nh] = first
                gc[nh] = wcnt[first]
                nh += 1
        self.nfill = nh
        return found

    def block_of(self, p: i64) -> i64:
        """The block holding position p (binary search of bstart)."""
        bstart = self.bstart
        lo: i64 = 0
        hi: i64 = len(bstart) - 1
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if bstart[mid] <= p:
                lo = mid
            else:
                hi = mid
        return lo

    def rewrite(self, nh: i64, table: _Pairs, first_block: i64) -> None:
        """Rewrite every word holding one of the `nh` occurrences pv[:nh] (positions, increasing,
        all in blocks first_block and after; their words' counts in gc): merge (a, b) -> c left
        to right, never overlapping, squeeze the word left, fill its freed tail with SEP, apply
        the exact pair-count deltas to `table`, and log the word's start for token c."""
        toks = self.toks
        gc = self.gc
        pv = self.pv
        logging = self.logging
        nj = self.nj
        npos = self.np
        nb: i64 = len(self.bstart) - 1
        bstart = self.bstart
        blk: i64 = first_block
        a = self.a
        b = self.b
        c = self.c
        ct = _tok(c)
        best = (a << KEY_SHIFT) | b
        touched = self.touched
        masks = self.masks
        pf = self.pf
        fmask = self.fmask
        mw = self.mw
        holes = self.holes
        bits = self.bits
        word_end: i64 = -1  # the SEP after the last word rewritten
        gone: i64 = 0
        gone_occ: i64 = 0
        for h in range(nh):
            p = pv[h]
            if p < word_end:
                continue  # the word was rewritten whole at its first occurrence
            wc = gc[h]
            if bstart[blk + 1] <= p:
                # occurrences from a word list can lie far apart: search beyond a few blocks
                if blk + 8 < nb and bstart[blk + 8] <= p:
                    blk = self.block_of(p)
                else:
                    while bstart[blk + 1] <= p:
                        blk += 1
            s: i64 = p
            if logging:
                while toks[s - 1] != SEPT:
                    s -= 1
            bw = blk >> 6
            bit = bits[blk & 63]
            masks[c * mw + bw] |= bit
            i: i64 = p
            o: i64 = p
            left = _id(toks[p - 1])  # the last token written (SEP at the word's start)
            left_merged = False  # whether the old position i - 1 was part of a merge
            while True:
                xt = toks[i]
                x = _id(xt)
                if x == SEP:
                    break
                if x == a and _id(toks[i + 1]) == b:
                    # old pairs touching positions i and i + 1 go, each exactly once
                    if left != SEP and not left_merged:
                        table.sub((left << KEY_SHIFT) | a, wc)
                    gone += wc  # (a, b) itself: applied once, after the loop
                    gone_occ += 1
                    z = _id(toks[i + 2])
                    if z != SEP:
                        table.sub((b << KEY_SHIFT) | z, wc)
                    # the new pair on the left
                    if left != SEP:
                        nk = (left << KEY_SHIFT) | c
                        pf[_slice1(nk, fmask) * mw + bw] |= bit
                        pf[_slice2(nk, fmask) * mw + bw] |= bit
                        if logging:
                            sl = table.slot(nk)
                            td = table.data
                            if td[sl + 1] == 0:
                                td[sl + 3] = len(touched)
                                touched = append(touched, nk)
                            td[sl + 1] += wc
                            td[sl + 2] += 1
                            nj = append(nj, td[sl + 3])
                            npos = append(npos, s)
                        elif table.add(nk, wc, 1) == 0:
                            touched = append(touched, nk)
                    toks[o] = ct
                    left = c
                    left_merged = True
                    i += 2
                else:
                    if left == c:
                        nk = (c << KEY_SHIFT) | x
                        pf[_slice1(nk, fmask) * mw + bw] |= bit
                        pf[_slice2(nk, fmask) * mw + bw] |= bit
                        if logging:
                            sl = table.slot(nk)
                            td = table.data
                            if td[sl + 1] == 0:
                                td[sl + 3] = len(touched)
                                touched = append(touched, nk)
                            td[sl + 1] += wc
                            td[sl + 2] += 1
                            nj = append(nj, td[sl + 3])
                            npos = append(npos, s)
                        elif table.add(nk, wc, 1) == 0:
                            touched = append(touched, nk)
                    toks[o] = xt
                    left = x
                    left_merged = False
                    i += 1
                o += 1
            holes += i - o
            word_end = i
            while o < i:
                toks[o] = SEPT
                o += 1
        table.add(best, -gone, -gone_occ)
        self.touched = touched
        self.holes = holes
        self.nj = nj
        self.np = npos

    def compact(self, table: _Pairs) -> None:
        """Squeeze the holes out, in place: every run of SEP becomes one SEP; words that shrank
        to one token (they hold no pair any more) are left out.  Then re-index the blocks,
        which also drops the stale bits of tokens merged away.  The word lists that may still
        be read move with their words (see _move_lists).  In place, because a new array per
        compaction, appended to token by token, cost a call per token and a first touch of
        every page; it also keeps the peak memory at one array."""
        toks = self.toks
        wcnt = self.wcnt
        n = self.n
        if len(self.plog) > 0:
            self._move_lists(table)
        o: i64 = 1
        i: i64 = 1
        while i < n:
            if toks[i] == SEPT:
                i += 1
                continue
            j = i
            while toks[j] != SEPT:
                j += 1
            if j - i >= 2:
                wc = wcnt[j]  # the SEP after the word: not written yet (o <= i)
                for q in range(i, j):
                    toks[o] = toks[q]
                    wcnt[o] = wc
                    o += 1
                toks[o] = SEPT
                wcnt[o] = wc
                o += 1
            i = j
        self.n = o
        self.holes = 0
        self.index_blocks()

    def _move_lists(self, table: _Pairs) -> None:
        """Before compaction moves the words: the word lists that may still be read (pairs of
        count at least 2: a pair's count never goes up once it is made), each start moved to
        where compaction will put its word, the words it leaves out dropped; the other lists
        are dropped (they held most of the lists' memory).  A word's new start is the number
        of positions kept before it, from a bit set of the kept positions and its prefix
        counts (5 MB on the 1 GB run's words: cache hits): a new start per old one, stored in
        the array, cost a cache miss per logged word, ~12 % of the 1 GB loop."""
        toks = self.toks
        n = self.n
        bits = self.bits
        nw: i64 = (n >> 6) + 1
        keep = _reuse(self.keep, nw, nw)
        self.keep = keep
        keep[0] = 1  # position 0, the first SEP
        i: i64 = 1
        while i < n:
            if toks[i] == SEPT:
                i += 1
                continue
            j = i
            while toks[j] != SEPT:
                j += 1
            if j - i >= 2:
                _set_range(keep, i, j + 1, bits)  # the word and the SEP after it
            i = j
        pre = _reuse(self.pre, nw, 0)  # every item is written below
        self.pre = pre
        m55 = self.m55
        run: i64 = 0
        for w in range(nw):
            pre[w] = run
            run += _popcount(keep[w], m55)
        old = self.plog
        plog = vec[i32]()
        data = table.data
        for s in range(0, len(data), 4):
            wl = data[s + 3]
            if wl <= 0:
                continue
            if data[s + 1] < 2:
                data[s + 3] = 0
                continue
            nl = -i64(old[wl - 1]) - 2
            head: i64 = len(plog)
            plog = append(plog, i32(-2))
            for e in range(wl, wl + nl):
                q = i64(old[e])
                if q < 0:
                    continue
                w = q >> 6
                bit = bits[q & 63]
                kw = keep[w]
                if kw & bit != 0:
                    plog = append(plog, i32(pre[w] + _popcount(kw & (bit - 1), m55)))
            plog[head] = i32(-(len(plog) - head - 1 + 2))
            data[s + 3] = head + 1
        self.plog = plog


def _set_range(keep: vec[i64], lo: i64, hi: i64, bits: vec[i64]) -> None:
    """Set bits lo .. hi - 1 of the bit set `keep` (bits from _bit_table: -bits[k] has bits k
    and up set)."""
    w = lo >> 6
    last = (hi - 1) >> 6
    lomask = -bits[lo & 63]
    r = hi & 63
    himask: i64 = bits[r] - 1 if r != 0 else -1
    if w == last:
        keep[w] |= lomask & himask
        return
    keep[w] |= lomask
    for x in range(w + 1, last):
        keep[x] = -1
    keep[last] |= himask


def _popcount(x: i64, m55: i64) -> i64:
    """The number of bits set in x (m55 = 0x5555555555555555, passed in: mypyc boxes an int
    constant of 2**62 or more)."""
    x = x - ((x >> 1) & m55)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (x * 0x0101010101010101) >> 56


def _count_pairs(toks: vec[i16], wcnt: vec[i64], n: i64, table: _Pairs) -> None:
    """Add every adjacent pair of every word in `toks[:n]` to `table`."""
    prev: i64 = SEP
    for i in range(n):
        x = _id(toks[i])
        if x != SEP and prev != SEP:
            table.add((prev << KEY_SHIFT) | x, wcnt[i], 1)
        prev = x


def train_merges(
    words: dict[bytes, int],
    n_merges: int,
    tie: str = "id",
    verify: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    initial_merges: list[tuple[int, int]] | None = None,
    skip: Skip = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Learn up to `n_merges` merges from word counts; return (merges, counts).

    Same contract and results as mnemo.reference.train_merges_naive.  `verify` recounts every
    pair from scratch at the end and requires the maintained table to match exactly, and checks
    that the winning count never goes up; a failure raises VerificationError naming the pair.
    `progress("merge", done, n_merges)` is called every PROGRESS_EVERY merges and at the end.
    Tests and benchmarks reach the loop's internals through SEAMS.
    """
    check_train_args(words, n_merges, tie)
    blob, meta = pack_words(words)
    return train_merges_packed(blob, meta, n_merges, tie, verify, progress, initial_merges, skip)


def train_merges_packed(
    blob: bytes,
    meta: bytes,
    n_merges: int,
    tie: str = "id",
    verify: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    initial_merges: list[tuple[int, int]] | None = None,
    skip: Skip = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """train_merges on word counts packed as count.PackedCounts (what mnemo.train passes: no
    dict of every word is built on the way).

    `initial_merges` (continuing from an existing tokenizer; reference.train_merges_naive has
    the contract): merge k < len(initial_merges) is initial_merges[k], taken instead of the
    heap's top and applied by the same scan and rewrite as any merge, so the words and the
    counts are exactly those the naive twin has when the free merges start.  `skip`
    (reference.SKIP_DOC): pairs whose token must never be made, whatever their count."""
    check_train_args({}, n_merges, tie)
    _check_width(n_merges)
    forced = check_initial_merges(initial_merges, n_merges)
    state = _start(blob, meta, n_merges, tie, verify, progress, forced, skip)
    _train(state, n_merges, n_merges, tie, verify, progress, forced, skip)
    if progress is not None:
        progress("merge", len(state.merges), n_merges)
    return state.merges, state.counts


class TrainState:
    """The merge loop between two runs: the words as the merges so far left them (`toks[:n]`
    and `wcnt[:n]` as _Words holds them) and those merges with their counts.  The pair
    counts and the heap are not kept: recounting them from the words is one pass, and a heap
    built from exact counts picks the same pairs as a lazy one (whose stale entries only ever
    overstate a count).  merge_loop hands one to merge_loop_wide after the merges whose ids
    fit in 16 bits (NARROW_MERGES): faster than the 32-bit trainer on those (docs/speed.md)."""

    toks: vec[i16]
    wcnt: vec[i64]
    n: i64
    merges: list[tuple[int, int]]
    counts: list[int]

    def __init__(self, toks: vec[i16], wcnt: vec[i64]) -> None:
        self.toks = toks
        self.wcnt = wcnt
        self.n = len(toks)
        self.merges = []
        self.counts = []


def train_state(
    blob: bytes,
    meta: bytes,
    stop: int,
    n_merges: int,
    tie: str,
    verify: bool,
    progress: Callable[[str, int, int], None] | None,
    forced: list[tuple[int, int]],
    skip: Skip = None,
) -> TrainState:
    """The first `stop` merges of train_merges_packed(blob, meta, n_merges, ...) (fewer if no
    pair is left), and the words as they are then: what a trainer of wider ids continues from.
    `forced` is check_initial_merges' list; progress counts toward n_merges."""
    _check_width(stop)
    state = _layout(blob, meta)
    _train(state, stop, n_merges, tie, verify, progress, forced, skip)
    return state


def continue_state(
    state: TrainState,
    n_merges: int,
    tie: str = "id",
    verify: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    skip: Skip = None,
    theta: int = 0,
) -> None:
    """Learn merges len(state.merges) .. n_merges - 1 into `state`, whose words the caller laid
    out as tokens (SEP, word, SEP, ..., SEP; `wcnt` the count of each position's word, 0 at
    the first SEP) and whose merges so far made those tokens.  Those merges are taken as given:
    their counts follow no order, so the first merge learnt here is not checked against them
    (superword training continues so from stage 1: mnemo/superbpe.py).

    `theta` > 0: only merges of count >= theta are wanted (stage 2 on words cut at theta): a
    pair made with a count below theta is dropped from the pair table at once (a pair's
    occurrences all appear in the merge that makes its later token, so its count can only fall
    from there: it can never be learnt), and learning stops, short of n_merges, at the first
    merge whose count would be below theta.  The table then holds the pairs that may still be
    learnt, and stays small enough for the caches."""
    check_train_args({}, n_merges, tie)
    _check_width(n_merges)
    _train(state, n_merges, n_merges, tie, verify, progress, list(state.merges), skip, theta)


def _array(total: i64) -> tuple[vec[i16], vec[i64]]:
    """An empty token array for `total` positions: its first SEP, with count 0."""
    toks = vec[i16](capacity=total)
    wcnt = vec[i64](capacity=total)
    toks = append(toks, SEPT)
    wcnt = append(wcnt, 0)
    return toks, wcnt


def _layout(blob: bytes, meta: bytes) -> TrainState:
    """The words of a PackedCounts as the token array: SEP, word, SEP, word, ..., SEP."""
    toks, wcnt = _array(len(blob) + len(meta) // META_BYTES + 1)
    bpos: i64 = 0
    m: i64 = 0
    # bounds every count the table will hold: see constants.MAX_PAIR_TOTAL
    pair_total: i64 = 0
    limit: i64 = MAX_PAIR_TOTAL
    while m < len(meta):
        wlen = read_i64_le(meta, m)
        word_count = read_i64_le(meta, m + 8)
        m += META_BYTES
        if word_count < 0:
            raise ConfigError(f"word {blob[bpos : bpos + wlen]!r} has a negative count {word_count}; counts must be >= 0")
        if wlen < 2 or word_count == 0:
            bpos += wlen
            continue
        if word_count > (limit - pair_total) // (wlen - 1):
            raise ConfigError(pair_total_error(blob[bpos : bpos + wlen]))
        pair_total += word_count * (wlen - 1)
        for q in range(bpos, bpos + wlen):
            toks = append(toks, _tok(blob[q]))
            wcnt = append(wcnt, word_count)
        toks = append(toks, SEPT)
        wcnt = append(wcnt, word_count)
        bpos += wlen
    return TrainState(toks, wcnt)


def layout_ids(ids: bytes, meta: bytes, merges: list[tuple[int, int]], counts: list[int]) -> TrainState:
    """The words of packed counts (count.PackedCounts' layout) whose words are token ids, four
    bytes each (little-endian), as the token array, with the merges (and their counts) that made
    those tokens: where continue_state starts (superword training's second stage,
    mnemo/superbpe.py).  Every word holds two ids or more."""
    # every position's item stored, in arrays filled a block at a time (an append an item was
    # two calls a token: 4.4 M tokens on 100 MB of English); the separators are there already
    total: i64 = len(ids) // 4 + len(meta) // META_BYTES + 1
    toks = filled16(total, SEPT)
    wcnt = filled64(total, 0)
    p: i64 = 1
    bpos: i64 = 0
    m: i64 = 0
    while m < len(meta):
        wlen = read_i64_le(meta, m)
        word_count = read_i64_le(meta, m + 8)
        m += META_BYTES
        q: i64 = bpos
        while q < bpos + wlen:
            toks[p] = _tok(i64(read_i32_le(ids, q)))
            wcnt[p] = word_count
            p += 1
            q += 4
        wcnt[p] = word_count  # its SEP's
        p += 1
        bpos += wlen
    state = TrainState(toks, wcnt)
    state.merges = list(merges)
    state.counts = list(counts)
    return state


def _train(
    state: TrainState,
    stop: i64,
    n_merges: i64,
    tie: str,
    verify: bool,
    progress: Callable[[str, int, int], None] | None,
    initial: list[tuple[int, int]],
    skip: Skip = None,
    theta: i64 = 0,
) -> None:
    """Learn merges len(state.merges) .. stop - 1 into `state` (fewer if no pair occurs twice;
    with theta > 0, fewer if the next merge's count is below theta: see continue_state).
    A pair `skip` refuses is dropped from the heap when it reaches the top with a valid count,
    for good: a pair is made by one merge, so from then on its count can only fall."""
    forced = vec[i64]()
    for fa, fb in initial:
        forced = append(forced, (i64(fa) << KEY_SHIFT) | i64(fb))
    n_forced: i64 = len(forced)
    block: i64 = SEAMS.block
    gap: i64 = SEAMS.gap
    list_cost: i64 = SEAMS.list_cost
    corrupt_at: i64 = SEAMS.corrupt_at
    if block < 1 or gap < 0:
        raise ConfigError(f"SEAMS.block must be >= 1 and SEAMS.gap >= 0, got {block} and {gap}")
    by_id = tie == "id"
    arr = _Words(state.toks, state.wcnt, state.n, 256 + n_merges, block)
    if arr.n > MAX_LISTED:
        list_cost = -1  # word lists hold positions as i32

    # at the start only byte pairs exist (at most 65,536): a small table stays in cache; it grows
    # as merges add pairs
    table = _Pairs(1 << 15)
    _count_pairs(arr.toks, arr.wcnt, arr.n, table)
    if theta > 0:
        # a pair below theta now can only fall: dropped at once, as _after_merge drops those
        # that merges make (stage 2's words cut by an estimate hold some: superword.Stage2Words)
        dead = vec[i64]()
        data = table.data
        for s in range(0, len(data), 4):
            if data[s] != EMPTY and data[s + 1] < theta:
                dead = append(dead, data[s])
        for s in range(len(dead)):
            table.remove(dead[s])
    heap = _Heap()
    data = table.data
    for s in range(0, len(data), 4):
        k = data[s]
        if k != EMPTY and data[s + 1] >= 2:
            heap.push(data[s + 1], -k if by_id else 0, k)

    merges = state.merges
    counts = state.counts
    token_bytes: list[bytes] = [bytes([i]) for i in range(256)]
    for ma_, mb_ in merges:
        token_bytes.append(token_bytes[ma_] + token_bytes[mb_])
    ties = vec[i64]()
    first: i64 = len(merges)
    # the count of the last free merge: a free merge's count never goes above it
    prev_best: i64 = counts[-1] if first > n_forced else -1

    for step in range(first, stop):
        # ---- the next pair off the heap ----------------------------------------------------
        best: i64 = -1
        best_cnt: i64 = 0
        while step >= n_forced and heap.n > 0:
            hc = heap.cnt[0]
            hr = heap.rank[0]
            hk = heap.key[0]
            cur = table.count(hk)
            if cur == hc:
                if skip is not None and skip(token_bytes[hk >> KEY_SHIFT], token_bytes[hk & KEY_MASK]):
                    heap.pop()
                    continue
                best = hk
                best_cnt = hc
                break
            heap.pop()
            if cur > hc:
                raise VerificationError(
                    f"fast trainer: pair ({hk >> KEY_SHIFT}, {hk & KEY_MASK}) has count {cur} in the table "
                    f"but only {hc} on the heap; a count went up without a push"
                )
            if cur >= 2:
                heap.push(cur, hr, hk)
        if step < n_forced:
            best = forced[step]  # left on the heap: its entry goes stale, and lazy deletion drops it
            best_cnt = table.count(best)
        elif best < 0 or best_cnt < theta:
            break  # (below theta: pairs dropped as dead may count more than the best kept)
        else:
            heap.pop()
        if not by_id and step >= n_forced:
            # every valid entry with the top count is a candidate: choose by the bytes rule
            ties = vec[i64]()
            while heap.n > 0 and heap.cnt[0] == best_cnt:
                hk = heap.key[0]
                hr = heap.rank[0]
                cur = table.count(hk)
                heap.pop()
                if cur == best_cnt:
                    if skip is None or not skip(token_bytes[hk >> KEY_SHIFT], token_bytes[hk & KEY_MASK]):
                        ties = append(ties, hk)
                elif cur >= 2:
                    heap.push(cur, hr, hk)
            for t in range(len(ties)):
                hk = ties[t]
                if _beats_bytes(hk, best, token_bytes):
                    heap.push(best_cnt, 0, best)
                    best = hk
                else:
                    heap.push(best_cnt, 0, hk)
        if verify and prev_best >= 0 and best_cnt > prev_best:
            raise VerificationError(
                f"fast trainer: merge {step} of pair ({best >> KEY_SHIFT}, {best & KEY_MASK}) has count "
                f"{best_cnt}, more than the previous merge's {prev_best}"
            )
        if step >= n_forced:  # initial merges' counts follow no order
            prev_best = best_cnt
        a: i64 = best >> KEY_SHIFT
        b: i64 = best & KEY_MASK
        c: i64 = 256 + step
        merges.append((int(a), int(b)))
        counts.append(int(best_cnt))
        token_bytes.append(token_bytes[a] + token_bytes[b])
        if progress is not None and (step & (PROGRESS_EVERY - 1)) == 0:
            progress("merge", step, n_merges)

        # ---- find and rewrite the words holding (a, b) ----------------------------------
        # an initial merge whose pair the words never held has no slot: it finds nothing (reading
        # slot -1's fields took another pair's occurrences and word list: a VerificationError, or
        # an IndexError, when continuing from a base on text without one of its pairs)
        bs = table.find(best)
        occ: i64 = table.data[bs + 2] if bs >= 0 else 0
        wl: i64 = table.data[bs + 3] if bs >= 0 else 0
        nbk: i64 = len(arr.bstart) - 1
        # Word lists for the pairs this merge makes, when it is rare enough that they may be
        # merged from their lists (bounds their memory: late merges are the rare ones).
        arr.begin_merge(a, b, c, list_cost >= 0 and occ <= nbk * LOG_PER_BLOCK)
        # A pair is made by one merge (the one making its later token), which recorded the words
        # it made it in when it was rare: only those words can hold it.  A late, rare pair is
        # found in far fewer tokens there than in the blocks the index leaves (each read whole
        # for one occurrence).
        nl: i64 = -i64(arr.plog[wl - 1]) - 2 if wl > 0 else 0
        if wl > 0 and nl * list_cost <= min(occ, nbk) * block:
            found_l = arr.from_list(wl, wl + nl)
            if found_l != occ:
                raise VerificationError(
                    f"fast trainer: pair ({a}, {b}) occurs {found_l} times in the words it was made in "
                    f"but the table says {occ}; please report this as a bug"
                )
            if arr.nfill > 0:
                arr.rewrite(arr.nfill, table, arr.block_of(arr.pv[0]))
            _after_merge(arr, table, heap, by_id, theta)
            if step == corrupt_at:
                table.data[table.find(best) + 1] += 1  # test hook: a count the words do not have
            if arr.holes * COMPACT_AT > arr.n:
                arr.compact(table)
            continue
        bstart = arr.bstart
        masks = arr.masks
        pf = arr.pf
        mw = arr.mw
        nb: i64 = len(bstart) - 1
        ma = a * mw
        mb = b * mw
        m1 = _slice1(best, arr.fmask) * mw
        m2 = _slice2(best, arr.fmask) * mw
        found: i64 = 0
        run: i64 = -1  # first block of the current run of candidate blocks
        last: i64 = -1  # last candidate block of the run
        j: i64 = 0
        while j <= nb:
            if j < nb:
                jw = j >> 6
                bits = masks[ma + jw] & masks[mb + jw] & pf[m1 + jw] & pf[m2 + jw]
                if bits == 0:
                    j = min((j | 63) + 1, nb)  # none of the rest of these 64 blocks holds the pair
                    continue
                if ((bits >> (j & 63)) & 1) == 0:
                    j += 1
                    continue
                if run < 0:
                    run = j
                    last = j
                    j += 1
                    continue
                if j - last <= gap:
                    last = j  # scanning a short gap costs less than another call
                    j += 1
                    continue
            elif run < 0:
                break
            # blocks [run, last] may hold the pair: one scan over them (no pair crosses a block)
            pos = _scan(arr.toks, a, b, occ - found + 1, bstart[run], bstart[last + 1])
            nh: i64 = len(pos) // 8
            found += nh
            if found > occ:
                raise VerificationError(
                    f"fast trainer: pair ({a}, {b}) occurs at least {found} times in the words "
                    f"but the table says {occ}"
                )
            arr.gather(pos, nh)
            arr.rewrite(nh, table, run)
            if j == nb:
                break
            run = j
            last = j
            j += 1
        _after_merge(arr, table, heap, by_id, theta)

        if step == corrupt_at:
            table.data[table.find(best) + 1] += 1  # test hook: a count the words do not have

        # ---- squeeze the holes out --------------------------------------------------------
        if arr.holes * COMPACT_AT > arr.n:
            arr.compact(table)

    if verify:
        _verify(arr.toks, arr.wcnt, arr.n, table, theta)
    state.toks = arr.toks
    state.wcnt = arr.wcnt
    state.n = arr.n


def _after_merge(arr: _Words, table: _Pairs, heap: _Heap, by_id: bool, theta: i64) -> None:
    """Close the merge's word list and push the pairs holding its new token; with theta > 0,
    drop those of count below theta instead (see continue_state)."""
    arr.end_merge(table)
    touched = arr.touched
    for t in range(len(touched)):
        nk = touched[t]
        cur = table.count(nk)
        if cur < theta:
            table.remove(nk)
        elif cur >= 2:
            heap.push(cur, -nk if by_id else 0, nk)


def _verify(toks: vec[i16], wcnt: vec[i64], n: i64, table: _Pairs, theta: i64) -> None:
    """Recount every pair from scratch; the maintained table must match it exactly, but for
    the pairs of count below theta it dropped (continue_state: _verify_dropped)."""
    if theta > 0:
        _verify_dropped(toks, wcnt, n, table, theta)
        return
    fresh = _Pairs(table.used)
    _count_pairs(toks, wcnt, n, fresh)
    _check_recount(table, fresh)
    _check_missing(table, fresh, theta)


def _verify_dropped(toks: vec[i16], wcnt: vec[i64], n: i64, table: _Pairs, theta: i64) -> None:
    """_verify when the table dropped the pairs below theta (stage 2's), as strict: every pair
    the table holds is recounted exactly and must match it, and every pair it lacks must count
    less than theta.  The pairs the table holds are few (those that may still be learnt), the
    pairs it lacks most of the words' (683 k distinct pairs in stage 2's final words on 100 MB
    of English), and their counts are only bounded: each occurrence of a pair the table lacks
    adds its weight to one of 2 ** VERIFY_BITS sums (i32, each held at theta once it reaches
    it), chosen by the pair's hash, and a pair counts no more than its sum.  The pairs of a sum
    that reaches theta are counted exactly in a second pass.  A table of every pair (what
    theta = 0 recounts into) missed the caches at every occurrence; the sums (1 MB) and the
    kept pairs' keys (8 bytes a slot, their counts apart) mostly stay in the second-level one."""
    if theta > MAX_I32:
        fresh = _Pairs(table.used)
        _count_pairs(toks, wcnt, n, fresh)
        _check_recount(table, fresh)
        _check_missing(table, fresh, theta)
        return
    # the kept pairs' keys (8 bytes a slot; their counts and occurrences beside them), and a bit
    # a kept key (2 ** VERIFY_FILTER_BITS bits, 128 KB), so that most occurrences -- of pairs
    # the table lacks -- probe no slot
    cap: i64 = 1024
    while cap < 2 * table.used:
        cap *= 2
    kmask: i64 = cap - 1
    kkeys = filled64(cap, EMPTY)
    kcnt = filled64(cap, 0)
    kocc = filled64(cap, 0)
    fmask: i64 = (1 << VERIFY_FILTER_BITS) - 1
    fil = filled64(1 << (VERIFY_FILTER_BITS - 6), 0)
    bits = _bit_table()
    data = table.data
    for s in range(0, len(data), 4):
        k = data[s]
        if k != EMPTY:
            kkeys[_probe(kkeys, kmask, k)] = k
            f = ((k * VERIFY_MUL) >> VERIFY_FILTER_SHIFT) & fmask
            fil[f >> 6] |= bits[f & 63]
    nsum: i64 = 1 << VERIFY_BITS
    smask: i64 = nsum - 1
    sums = vec[i32](capacity=nsum)
    q = 0
    while q < nsum:
        sums = append(sums, 0)
        q += 1
    prev: i64 = SEP
    for i in range(n):
        x = _id(toks[i])
        if x != SEP and prev != SEP:
            key = (prev << KEY_SHIFT) | x
            g: i64 = key * VERIFY_MUL
            f = (g >> VERIFY_FILTER_SHIFT) & fmask
            if (fil[f >> 6] & bits[f & 63]) != 0:
                h = _probe(kkeys, kmask, key)
                if kkeys[h] == key:
                    kcnt[h] += wcnt[i]
                    kocc[h] += 1
                    prev = x
                    continue
            b = (g >> VERIFY_SHIFT) & smask
            t: i64 = i64(sums[b]) + wcnt[i]
            sums[b] = i32(theta if t > theta else t)
        prev = x
    for s in range(0, len(data), 4):
        k = data[s]
        if k != EMPTY:
            h = _probe(kkeys, kmask, k)
            if kcnt[h] != data[s + 1] or kocc[h] != data[s + 2]:
                _recount_error(k, data[s + 1], data[s + 2], kcnt[h], kocc[h])
    # the sums that reach theta: their pairs counted exactly
    hot = filled64(nsum >> 6, 0)
    n_hot: i64 = 0
    for b in range(nsum):
        if i64(sums[b]) >= theta:
            hot[b >> 6] |= bits[b & 63]
            n_hot += 1
    if n_hot == 0:
        return
    fresh = _Pairs(n_hot)
    prev = SEP
    for i in range(n):
        x = _id(toks[i])
        if x != SEP and prev != SEP:
            key = (prev << KEY_SHIFT) | x
            b = ((key * VERIFY_MUL) >> VERIFY_SHIFT) & smask
            if (hot[b >> 6] & bits[b & 63]) != 0 and kkeys[_probe(kkeys, kmask, key)] == EMPTY:
                fresh.add(key, wcnt[i], 1)
        prev = x
    _check_missing(table, fresh, theta)


def _probe(keys: vec[i64], mask: i64, key: i64) -> i64:
    """The slot of `key` in _verify_dropped's kept keys (linear probing from _Pairs' hash), or
    the empty slot where it would go."""
    h = ((key * PAIR_MUL) >> PAIR_SHIFT) & mask
    while keys[h] != key and keys[h] != EMPTY:
        h = (h + 1) & mask
    return h


def _recount_error(k: i64, cnt: i64, occ: i64, fc: i64, fo: i64) -> None:
    raise VerificationError(
        f"fast trainer: pair ({k >> KEY_SHIFT}, {k & KEY_MASK}) has count {cnt} ({occ} occurrences) "
        f"in the maintained table but {fc} ({fo}) when recounted from scratch; please report this as a bug"
    )


def _check_recount(table: _Pairs, fresh: _Pairs) -> None:
    """Every pair of `table` has the count and occurrences `fresh` recounted."""
    data = table.data
    for s in range(0, len(data), 4):
        k = data[s]
        if k == EMPTY:
            continue
        fc = fresh.count(k)
        fo = fresh.occurrences(k)
        if fc != data[s + 1] or fo != data[s + 2]:
            _recount_error(k, data[s + 1], data[s + 2], fc, fo)


def _check_missing(table: _Pairs, fresh: _Pairs, theta: i64) -> None:
    """Every pair `fresh` recounted with a count of theta or more is in `table`."""
    fdata = fresh.data
    for s in range(0, len(fdata), 4):
        k = fdata[s]
        if k != EMPTY and fdata[s + 1] >= theta and table.find(k) < 0:
            raise VerificationError(
                f"fast trainer: pair ({k >> KEY_SHIFT}, {k & KEY_MASK}) occurs {fdata[s + 2]} times "
                f"(count {fdata[s + 1]}) but is missing from the maintained table; please report "
                f"this as a bug"
            )
