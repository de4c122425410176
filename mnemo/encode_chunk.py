"""The compiled BPE encoder: token ids for one pre-tokenized chunk at a time.

The rule (docs/formats.md, "Encoder choices"): a chunk starts as its bytes (ids 0..255) and repeats one step --
find the lowest-numbered merge whose pair occurs anywhere in the chunk, and apply it at every
occurrence, left to right.  Merge k glues (a, b) into id 256 + k, and both parts are < 256 + k, so
the new token takes part only in merges numbered above k: applying merge k everywhere in one
left-to-right pass gives the same result as applying it one occurrence at a time.

A vocabulary from ranks (tiktoken's rule, docs/formats.md "Rank semantics") adds two things: a
merge's part may come after it (Encoder.monotone is False), and tokens no merge makes, ids after
the merges (`whole`), which a chunk gets only when it is exactly their bytes (encode_span's first
step).  The rule is then tiktoken's: glue one occurrence at a time, the lowest merge number and
the leftmost of equals.  The rank-array and heap paths do exactly that for any merge order; the
run and bucket paths apply a merge everywhere in one pass and decline a chunk when a merge due
could make a pair of a lower number (Encoder.high); the word tables and caches hold BPE's ids,
so the whole-token step comes before them.  With every part before its merge and no whole
tokens, both rules give the same ids.

Paths, all with the same result (tests compare each with the naive twin in reference.py):

- the front cache: 32,768 direct-mapped entries (512 KB, half this machine's L2 cache) for
  chunks of 2 to 7 bytes, each the last chunk seen at its slot (at first the earliest 6,144
  words), keyed by the bytes themselves, so a hit is exact;
- the word tables: every token of 2 to 7 bytes that its own bytes encode to, filled once from the
  merges: most chunks of prose are one such token, and these tables never miss them; tokens of
  8 to 15 bytes likewise in a long-word table;
- the caches: chunks of 2 to 15 bytes that are no such token go into the word tables' own empty
  slots while they are under 3/4 full (up to 3 ids in the entry, more in an id pool), then
  chunks of 2 to 7 bytes with at most 3 ids into a small direct-mapped cache; every other chunk
  of up to CACHE_MAX_BYTES bytes into the chunk cache, an open-addressing index of 64-bit
  hashes over an arena of the chunks' bytes and ids (the way fastokens keeps its words), whose
  hits compare the bytes themselves: a hit is always exact;
- short chunks (< LONG_CHUNK bytes): token and pair-rank arrays; each step scans the ranks for the
  minimum, glues its leftmost place and moves the rest down one (quadratic in the chunk length,
  fastest when short);
- long chunks: a doubly linked list of tokens and a binary min-heap of candidate pairs keyed by
  (merge number, position).  Stale heap entries are skipped when popped (the tokens at a
  position only ever grow, so a pair that has changed never comes back); O(n log n) overall;
- huge chunks (>= HUGE_CHUNK bytes): the same linked list with one bucket of positions per
  merge number instead of the heap (encode_huge), linear in the chunk and in memory traffic.
Before the linked-list paths, a long chunk is tried two ways that skip them: as a few runs of
one byte, each one node with a count (encode_runs: 10 MB of one letter, of spaces, of `^`), then
cut at its safe places, where no token holds the byte before followed by the byte after, into
pieces that go through the tables and caches (encode_pieces: 10 MB of one CJK character).
The bypass: chunk lengths of 2 to 7 bytes that the tables and caches keep missing (random
bytes, base64) go straight to the rank arrays for a while, without the lookups (MISS_STEP).

The pair -> merge number table is open addressing in one `vec[i64]`: each slot holds
(a << 21 | b) << 21 | merge, or -1 when empty; ids fit in 21 bits (constants.MAX_VOCAB).  It
measured faster than `dict[int, int]` (no boxing of the key).  The caches pack ids 21 bits each
too, so one layout serves every vocabulary: a 16-bit one keeps its table and cache sizes.

Ids go out packed: little-endian uint16 while every id fits (`wide` False: the 16-bit token
files and their speed), uint32 when the vocabulary has ids of 65,536 and more.
"""

from __future__ import annotations

from typing import Final, cast

from librt.strings import BytesWriter, read_i16_le, read_i32_le, read_i64_le, write_i16_le, write_i32_le, write_i64_le
from librt.vecs import append, vec
from mypy_extensions import i16, i32, i64, u8

from mnemo.errors import ConfigError, InputError
from mnemo.kernels import align_offset, huge_pages, huge_pages_of, id_list, untrack_atoms, writer_in_place

# Whether kernels.id_list reads a BytesWriter where it is (writer_ids)
WRITER_IN_PLACE: Final = writer_in_place()

# The small cache, behind the word table once the word table has no room left for cached chunks:
# chunks of 2 to 7 bytes whose encoding has at most 3 ids, in 16-byte entries [bytes | length <<
# 56 | count << 59, ids packed 21 bits each], 65,536 of them direct-mapped (1 MB).
SMALL_SLOTS: Final = 65536
SMALL_MASK: Final = 65535
SMALL_MAX_BYTES: Final = 7
SMALL_MAX_IDS: Final = 3
# Slot = bits 44-59 of key * SMALL_MUL (wrapping): they depend on every byte of the key.
SMALL_MUL: Final = 0x9E3779B97F4A7C1
SMALL_SHIFT: Final = 44
# The word table, in front of the caches: every token of 2 to 7 bytes whose own bytes encode to
# it alone (87 % of English chunks are one token), keyed like the small cache, filled once from
# the merges.  Unlike the caches it never misses on such a chunk, however cold or crowded they
# are.  Load factor at most 1/2, linear probing; entries [key, id], key 0 = empty.
WORD_SHIFT: Final = 40
INT_OBJECTS: Final = 65536
# The front cache: FRONT_SLOTS direct-mapped entries [key | count << 59, ids or id] (512 KB, half
# the L2 cache of the machines measured) in front of the word table, for chunks of 2 to 7 bytes:
# the last chunk seen at each slot.  The word table misses L2 on most lookups (4 MB for cl100k); the
# front cache holds the chunks a text repeats.  It starts with the first HOT_WORDS words by id
# (the earliest merges: the most frequent words of the training text), each in its slot unless
# an earlier one took it.  512 KB rather than 256: warm passes 1-7 % faster, cold ones the same
# (its misses replayed over 2 MB of English: 4.0 % of a second pass's 2-7-byte chunks against
# 7.0 %; 128 KB was slower; docs/speed.md, fifteenth session).
HOT_WORDS: Final = 6144
FRONT_SLOTS: Final = 32768
FRONT_MASK: Final = 32767
# The long-word table: every token of 8 to 15 bytes whose own bytes encode to it alone (9 % of
# English chunks with 32,768 ids, most of the chunks of 8 bytes and more), filled once from the
# merges like the word table.  Without it they went to the 8 MB main cache (since replaced by the
# chunk cache), whose lookup missed
# the L2 cache on most of them, and through BPE on first sight (the benches start cold).
# Entries of 4 words [first 8 bytes, the rest | length << 56, id, 0]; key word 1 is never 0.
LONG_WORD_MIN: Final = 8
LONG_WORD_MAX: Final = 15
# The long-word table doubles (Encoder.grow_lwords) when its room for cached chunks runs out, up
# to LWORDS_GROWTH times its first size and at most LWORDS_GROWN_MAX words (8 MB): cl100k's 2 MB
# twice, o200k's 4 MB once, a 32,768-id vocabulary's 512 KB to 2 MB (its memory, which every
# worker holds, grows 1.5 MB, not 7.5).  Full, it is 3/4 loaded: a chunk of 8-15 bytes it does
# not hold walked ~8 slots before the chunk cache's own lookup, and the chunk cache took them all
# (cl100k's table is full after 2 MB of multilingual text; docs/speed.md).
LWORDS_GROWTH: Final = 4
LWORDS_GROWN_MAX: Final = 1 << 20
# Chunks at least this long take the heap path.  Below it the rank-array path is faster.
LONG_CHUNK: Final = 64
# Chunks at least this long take the bucket path (encode_huge): linear, but each call sets up
# and scans one bucket per merge, O(merges) -- small next to a chunk this long.
HUGE_CHUNK: Final = 1 << 16
# encode_runs: a chunk of at most len/RUN_BYTES runs of one byte (RUN_BYTES bytes a run on
# average), at most RUN_NODES runs at any step, and at most RUN_WORK node visits a byte;
# otherwise the linked-list paths (the work done so far is lost, at most RUN_WORK a byte).
RUN_BYTES: Final = 16
RUN_NODES: Final = 256
RUN_WORK: Final = 8
BYTES_8: Final = 0x0101010101010101
# The bypass (encode_span): a score a chunk length, 2 to SMALL_MAX_BYTES.  A chunk that every
# table and cache missed adds MISS_STEP, every chunk looked up takes 1 off: the score climbs only
# while at most half the chunks of that length are found (random bytes, base64: no chunk of 4 or
# more bytes is).  Past BYPASS_ON the next BYPASS_CHUNKS chunks of that length skip the lookups
# and the insert and go straight to short_bpe; then lookups resume at BYPASS_ON // 2, so that
# about BYPASS_ON // 2 more misses than finds are needed to skip again.  Not for longer chunks:
# those skipped are not inserted, so their repeats missed again at the next lookups and the
# skipping fed itself (more instructions on warm English: docs/speed.md).
MISS_STEP: Final = 2
BYPASS_ON: Final = 32
BYPASS_CHUNKS: Final = 1024
# pieces_bpe's switch: a chunk where the search for a safe place failed adds 1 to a score, one
# cut into pieces takes PIECES_GAIN off (not below 0).  Past PIECES_OFF, the next PIECES_SKIP
# chunks go to short_bpe without the search, then the score starts again at PIECES_OFF // 2.
# With cl100k most multilingual chunks have safe places (the score stays near 0); with o200k
# few do (8-22 %), and the failed searches cost more instructions than the pieces saved.
PIECES_GAIN: Final = 3
PIECES_OFF: Final = 64
PIECES_SKIP: Final = 1024
# encode_huge's positions are i32 (20 bytes of memory a byte of the chunk; i64 would take 40).
MAX_CHUNK: Final = (1 << 31) - 2
NO_RANK: Final = 1 << 40
UNSEEN: Final = -1
FNV_OFFSET: Final = 2166136261
FNV_PRIME: Final = 16777619
# Multiplicative hashing of the 42-bit pair key: the product wraps at 64 bits (the build uses
# -fwrapv), and its bits from 40 up (the slot, up to 2**22 of them) depend on every bit of the key
# below them.  Low bits of a product would cluster badly.  The constant is below 2**62: mypyc
# boxes larger Final ints, and unboxed this one on every lookup (seen in the generated C).
HASH_MUL: Final = 0x2545F4914F6CDD1D
HASH_SHIFT: Final = 40
# The pair filter in front of the pair table (Encoder.rank): two bits a merge in one 64-bit
# word, about 10 bits a merge (128 KB for cl100k's 100,000 merges, where the table is 2 MB and
# each probe missed the L2 cache).  Most lookups are of pairs no merge makes (random and base64
# text: 95-99 % of the short path's lookups), and the filter answers those alone.
FILTER_MUL: Final = 0x3C6EF372FE94F82B
FILTER_TOP: Final = 1 << 61
# The chunk cache: every chunk of up to CACHE_MAX_BYTES bytes the word tables and the small cache
# do not hold (any number of ids; chunks of 2-15 bytes near the end of a text, whose key words
# cannot be read whole, come here too), kept as fastokens keeps its words:
# an open-addressing index of (64-bit hash, arena offset | length << 32 | id count << 44) over
# an arena where each chunk's bytes (8 a word) and ids (3 a word) follow the last ones.  The
# index starts at CC_FIRST_SLOTS and doubles up to CC_SLOTS (3/4 full at most); when it or the
# arena (CC_WORDS) is full, the cache is emptied and fills again.
CACHE_MAX_BYTES: Final = 256
CC_FIRST_SLOTS: Final = 4096
CC_SLOTS: Final = 1 << 17
CC_WORDS: Final = 1 << 20
CC_MUL: Final = 0x2127599BF4325C37
CC_SHIFT: Final = 24
CC_LEN_MASK: Final = 0xFFF
ID_BITS: Final = 21  # bits of an id, and of a merge number, in the table and the caches
M32: Final = 0xFFFFFFFF
M56: Final = 0xFFFFFFFFFFFFFF
M16: Final = 0xFFFF
M21: Final = 0x1FFFFF
M59: Final = (1 << 59) - 1
M60: Final = (1 << 60) - 1
M30: Final = (1 << 30) - 1
# The tables' entries (16 bytes, 32 for the long-word table) start at an index whose address is
# a multiple of LINE bytes (Encoder.words_at and the like), so that no entry straddles two cache
# lines: a vec's items start 8 bytes past a multiple of 16, and one entry in four of the word
# table, the front cache and the small cache (half the long-word table's, for some
# addresses) cost two cache misses where one would do.
LINE: Final = 64
# Encoder.use_huge_pages: from a word table of this many words (2 MB, a huge page) on.  With
# fewer merges the tables mostly stay in the caches and their TLB reach, and asking for huge
# pages would take a 2 MB region of the heap for every small encoder (tests make thousands).
HUGE_WORDS: Final = 1 << 18
# ... and only once this many bytes of text have been encoded (Encoder.before_text).  The
# madvise copies each table's pages into huge pages: 5-65 ms of CPU for cl100k- to o200k-sized
# tables (more where memory is fragmented), which every load paid, for lookups 5-10 % faster
# (0.3-1.4 ms/MB); it pays back after 10-70 MB of text (docs/speed.md, "A load without the
# collapse"), so it waits for 16 MB.
HUGE_AFTER: Final = 1 << 24


class Encoder:
    """The merge table of one tokenizer, with its chunk cache.

    `merges[k] = (a, b)` makes id 256 + k.  The caller (Tokenizer) has validated the merges.
    The cache and scratch arrays (tk, rk, kw) are shared by every call on one instance.  Threads
    may still share one under the GIL because the compiled code never re-enters the interpreter
    between writing them and reading them back: encode_span and what it calls use only C helpers
    (no call into interpreted code, no allocation of a GC-tracked object that could run a
    collection), so no other thread runs in between.  Keep it so (docs/pipelines.md, "Threads").
    An interpreted build (MNEMO_NO_MYPYC=1) or a free-threaded Python is not safe: there a thread
    switch mid-chunk corrupts tk (measured with 8 threads: wrong ids for 114 of 160 documents).
    """

    n_merges: i64
    left: vec[i64]
    right: vec[i64]
    table: vec[i64]
    table_mask: i64
    pair_filter: vec[i64]
    cross: vec[u8]
    filter_mask: i64
    byte_pairs: vec[i64]
    small: vec[i64]
    wide: bool
    tk: vec[i64]
    rk: vec[i64]
    misses: vec[i64]
    bypass: bool
    ints: list[object]
    id_objects: list[object]
    words: vec[i64]
    words_mask: i64
    lwords: vec[i64]
    lwords_mask: i64
    words_room: i64
    words_limit: i64
    lwords_room: i64
    lwords_limit: i64
    lwords_max: i64
    spells: vec[u8]
    spelled: list[bytes]
    monotone: bool
    high: vec[u8]
    n_whole: i64
    whole_table: vec[i64]
    whole_mask: i64
    whole_text: bytes
    whole_first: vec[u8]
    whole_lengths: i64
    pool: vec[i32]
    pool_n: i64
    front: vec[i64]
    front_seed: vec[i64]
    cc_index: vec[i64]
    cc_mask: i64
    huge_after: i64  # bytes of text to encode before use_huge_pages; -1: done, or tables too small
    cc_arena: vec[i64]
    cc_count: i64
    cc_ids: vec[i64]
    cc_max_slots: i64
    cc_max_words: i64
    pieces_score: i64
    words_at: i64
    lwords_at: i64
    front_at: i64
    small_at: i64

    def __init__(
        self,
        merges: list[tuple[int, int]],
        wide: bool = False,
        whole: list[bytes] | None = None,
        tables: bytes = b"",
        spelled: list[bytes] | None = None,
    ) -> None:
        """`wide`: write uint32 ids (the caller sets it when the vocabulary, specials included,
        has ids of 65,536 and more; merges alone would not say so).  `whole`: the tokens no
        merge makes (a vocabulary from ranks: docs/formats.md, "Rank semantics"), ids
        256 + len(merges) + j, each produced only when a chunk is exactly its bytes.  `tables`:
        export_tables of an encoder of the same merges (tokenizer.bin keeps them), which spares
        the BPE of every token's bytes that filling the word tables costs; b"": build them.
        `spelled`: spell_merges of these merges, when the caller has the tokens' bytes already
        (the rank-file loader); None: spelled here."""
        n: i64 = len(merges)
        whole_list: list[bytes] = [] if whole is None else whole
        n_whole: i64 = len(whole_list)
        self.n_merges = n
        self.wide = wide or n + n_whole + 256 > M16 + 1
        left: vec[i64] = vec[i64]([0] * n)
        right: vec[i64] = vec[i64]([0] * n)
        # Load factor at most 1/2: 512 KB for 32,768 ids.  (At most 1/4 the table was 1 MB and
        # its lookups missed the L2 cache more often: slower, docs/speed.md.)
        size: i64 = 1024
        while size < 2 * n:
            size *= 2
        table: vec[i64] = vec[i64]([-1] * size)
        fwords: i64 = 64
        while fwords * 8 < n:
            fwords *= 2
        pair_filter: vec[i64] = vec[i64]([0] * fwords)
        fmask: i64 = fwords - 1
        # The first step of every chunk looks up pairs of bytes: a direct 256 x 256 table.
        byte_pairs: vec[i64] = vec[i64]([NO_RANK] * 65536)
        mask: i64 = size - 1
        monotone: bool = True
        repeated: bool = False  # a pair listed twice (callers refuse it; fill_spells needs it not)
        k: i64 = 0
        for pair in merges:
            a: i64 = pair[0]
            b: i64 = pair[1]
            if a < 0 or b < 0 or a >= n + 256 or b >= n + 256:
                raise ConfigError(f"merge {k} is ({a}, {b}): both parts must be ids in 0..{n + 255}")
            if a >= 256 + k or b >= 256 + k:
                monotone = False
            left[k] = a
            right[k] = b
            key: i64 = (a << ID_BITS) | b
            h: i64 = ((key * HASH_MUL) >> HASH_SHIFT) & mask
            while table[h] != -1:
                if (table[h] >> ID_BITS) == key:
                    repeated = True
                h = (h + 1) & mask
            table[h] = (key << ID_BITS) | k
            fh: i64 = (key * FILTER_MUL) >> 34
            pair_filter[(fh >> 12) & fmask] |= filter_bits(fh)
            if a < 256 and b < 256:
                byte_pairs[(a << 8) | b] = k
            k += 1
        self.left = left
        self.right = right
        self.monotone = monotone
        # assigned here, not only in fill_whole: mypyc then knows it is always defined, and a
        # read is one load (else a check of a bitmap besides)
        self.n_whole = n_whole
        # high[k]: token 256 + k is a part of a merge numbered below k, so gluing it can make a
        # pair that comes before merges already due (only in a vocabulary from ranks, where a
        # part may rank after what it makes).  encode_runs and encode_huge apply one merge
        # number after another and decline a chunk when it reaches such a merge.
        high: vec[u8] = vec[u8]([0] * n)
        k = 0
        while k < n:
            if left[k] >= 256 + k:
                high[left[k] - 256] = 1
            if right[k] >= 256 + k:
                high[right[k] - 256] = 1
            k += 1
        self.high = high
        self.table = table
        self.table_mask = mask
        self.pair_filter = pair_filter
        self.filter_mask = fmask
        self.byte_pairs = byte_pairs
        self.small, self.small_at = line_aligned(SMALL_SLOTS * 2)
        # the word tables' placeholders, until fill_words and fill_long_words make them
        self.words = vec[i64]([0] * 2)
        self.words_at = 0
        self.words_mask = 0
        self.words_room = 0
        self.words_limit = 0
        self.lwords = vec[i64]([0] * 4)
        self.lwords_at = 0
        self.lwords_mask = 0
        self.lwords_room = 0
        self.lwords_limit = 0
        # the long-word table's bound, in words (fill_long_words sets it; tests change it)
        self.lwords_max = 0
        self.misses = vec[i64]([0] * (CACHE_MAX_BYTES + 1))
        self.pool = vec[i32]([0] * 1024)
        self.pool_n = 0
        self.front, self.front_at = line_aligned(2 * FRONT_SLOTS)
        self.front_seed = vec[i64]([0] * (2 * FRONT_SLOTS))
        self.cc_ids = vec[i64]([0] * (CACHE_MAX_BYTES + 1))
        # the chunk cache's bounds (tests make them small to reach them)
        self.cc_max_slots = CC_SLOTS
        self.cc_max_words = CC_WORDS
        self.pieces_score = 0
        self.cc_clear()
        # False: every chunk is looked up and inserted, however often its length misses (tests
        # of the tables' filling set it)
        self.bypass = True
        self.tk = vec[i64]([0] * LONG_CHUNK)
        self.rk = vec[i64]([0] * LONG_CHUNK)
        # One int object per id, made once: ids_list stores a new reference to the id's object
        # instead of making a new int (ids above 256 are not CPython's small ints: each cost a
        # malloc, and a free when the list died).  The list is typed `object` so that mypyc
        # keeps the objects as they are instead of unboxing and boxing them again.
        # At most INT_OBJECTS of them: the low ids are the frequent ones, and 200,000 objects
        # (o200k) spread over 6 MB crowded the encoder's own tables out of the cache.
        self.ints = [k for k in range(min(n + n_whole + 256, INT_OBJECTS))]
        untrack_atoms(self.ints)  # lists of atoms the cyclic GC need not walk (kernels.untrack_atoms)
        self.id_objects = self.ints
        self.spells = import_spells(tables, n)
        if spelled is None:
            spelled = spell_merges(left, right)
        # the bytes of every token, 256 + merges of them: the Tokenizer's vocabulary reuses the
        # list instead of spelling 200,000 tokens again (o200k)
        self.spelled = spelled
        untrack_atoms(spelled)
        if monotone and not repeated:
            self.fill_spells(spelled)
        self.fill_cross(spelled)
        self.fill_words(spelled)
        self.fill_long_words(spelled)
        self.fill_whole(whole_list)
        self.reset_front()
        self.huge_after = HUGE_AFTER if len(self.words) >= HUGE_WORDS else -1

    def before_text(self, n: i64) -> None:
        """Count n bytes of text about to be encoded; at HUGE_AFTER, use_huge_pages (the
        callers test huge_after >= 0 first: one load a text after that)."""
        self.huge_after -= n
        if self.huge_after < 0:
            self.huge_after = -1
            self.use_huge_pages()

    def use_huge_pages(self) -> None:
        """Put the tables every chunk reads at random, and the int objects of the id lists, on
        huge pages (kernels.huge_pages; a hint that changes nothing but speed).  Each chunk's
        lookups and each id's int object land on a different 4 KB page of ~10 MB (cl100k), and
        nearly every one of them missed the TLB as well as the L2 cache (docs/speed.md)."""
        if len(self.words) < HUGE_WORDS:
            return
        self.huge_after = -1
        huge_pages(self.words)
        huge_pages(self.lwords)
        huge_pages(self.table)
        huge_pages(self.pair_filter)
        huge_pages(self.byte_pairs)
        huge_pages(self.small)
        huge_pages(self.front)
        huge_pages_of(self.id_objects)

    def rank(self, a: i64, b: i64) -> i64:
        """The merge number of pair (a, b), or NO_RANK when no merge makes it."""
        key: i64 = (a << ID_BITS) | b
        fh: i64 = (key * FILTER_MUL) >> 34
        # filter_bits(fh), inline: this is the hot path of random text
        bits: i64 = (FILTER_TOP >> (((fh & 63) * 62) >> 6)) | (FILTER_TOP >> ((((fh >> 6) & 63) * 62) >> 6))
        if (self.pair_filter[(fh >> 12) & self.filter_mask] & bits) != bits:
            return NO_RANK
        table = self.table
        mask = self.table_mask
        h: i64 = ((key * HASH_MUL) >> HASH_SHIFT) & mask
        while True:
            e = table[h]
            if e == -1:
                return NO_RANK
            if (e >> ID_BITS) == key:
                return e & M21
            h = (h + 1) & mask

    def fill_words(self, spelled: list[bytes]) -> None:
        """Build the word table: the bytes of each merge's token (packed 8 to a word while they
        fit in 7), kept where BPE of those bytes gives that token alone (not every token does:
        two merges may spell the same bytes, and only one of them wins)."""
        n: i64 = self.n_merges
        # key of token t without its length bits: its bytes, little-endian; -1 when longer than 7
        bkey: vec[i64] = vec[i64]([0] * (n + 256))
        blen: vec[i64] = vec[i64]([1] * (n + 256))
        text = BytesWriter()
        count: i64 = 0
        k: i64 = 0
        while k < n:
            t: i64 = 256 + k
            word = spelled[t]
            ln: i64 = len(word)
            blen[t] = ln
            if ln <= SMALL_MAX_BYTES:
                bkey[t] = read_i64_le(word + bytes(8 - ln), 0)
                write_i64_le(text, bkey[t])
                count += 1
            else:
                bkey[t] = -1
                write_i64_le(text, 0)
            k += 1
        data = text.getvalue() + bytes(8)
        size: i64 = 1024
        while size < 2 * count:
            size *= 2
        words, wat0 = line_aligned(2 * size)
        mask: i64 = size - 1
        seed: vec[i64] = vec[i64]([0] * (2 * FRONT_SLOTS))
        n_hot: i64 = 0
        k = 0
        while k < n:
            t = 256 + k
            if bkey[t] >= 0 and self.spells_itself(k, data, k << 3, (k << 3) + blen[t]):
                key: i64 = bkey[t] | (blen[t] << 56)
                mixed: i64 = (key * SMALL_MUL) >> WORD_SHIFT
                if n_hot < HOT_WORDS:
                    n_hot += 1
                    fat: i64 = (mixed & FRONT_MASK) << 1
                    if seed[fat] == 0:
                        seed[fat] = key
                        seed[fat + 1] = t
                at: i64 = mixed & mask
                while words[(at << 1) + wat0] != 0:
                    at = (at + 1) & mask
                words[(at << 1) + wat0] = key
                words[(at << 1) + wat0 + 1] = t
            k += 1
        self.words = words
        self.words_at = wat0
        self.words_mask = mask
        self.front_seed = seed
        self.words_limit = max((3 * size) // 4 - count, 0)  # room for encode_span's cache entries
        self.words_room = self.words_limit

    def fill_long_words(self, spelled: list[bytes]) -> None:
        """Build the long-word table (tokens of LONG_WORD_MIN to LONG_WORD_MAX bytes that BPE of
        their own bytes gives alone), as fill_words does for the short ones."""
        n: i64 = self.n_merges
        count: i64 = 0
        t: i64 = 256
        while t < n + 256:
            ln: i64 = len(spelled[t])
            if ln >= LONG_WORD_MIN and ln <= LONG_WORD_MAX:
                count += 1
            t += 1
        size: i64 = 1024
        while size < 2 * count:
            size *= 2
        table, lat0 = line_aligned(4 * size)
        mask: i64 = size - 1
        t = 256
        while t < n + 256:
            word = spelled[t]
            ln = len(word)
            if ln >= LONG_WORD_MIN and ln <= LONG_WORD_MAX and self.spells_itself(t - 256, word, 0, ln):
                padded = word + bytes(16 - ln)
                k0: i64 = read_i64_le(padded, 0)
                k1: i64 = read_i64_le(padded, 8) | (ln << 56)
                at: i64 = ((((k0 * SMALL_MUL) ^ k1) * SMALL_MUL) >> WORD_SHIFT) & mask
                while table[(at << 2) + lat0 + 1] != 0:
                    at = (at + 1) & mask
                table[(at << 2) + lat0] = k0
                table[(at << 2) + lat0 + 1] = k1
                table[(at << 2) + lat0 + 2] = t
            t += 1
        self.lwords = table
        self.lwords_at = lat0
        self.lwords_mask = mask
        self.lwords_limit = max((3 * size) // 4 - count, 0)  # room for encode_span's cache entries
        self.lwords_room = self.lwords_limit
        self.lwords_max = min(LWORDS_GROWTH * 4 * size, LWORDS_GROWN_MAX)

    def grow_lwords(self) -> None:
        """The long-word table at twice its size (when that stays within lwords_max words), its
        entries hashed again: the tokens first, then the cached chunks, so that clear_cache,
        which zeroes the cached entries, still breaks no token's probe chain.  The room grows
        by the slots added (3/4 of them), and so does the limit clear_cache restores."""
        old = self.lwords
        old_at: i64 = self.lwords_at
        old_size: i64 = self.lwords_mask + 1
        size: i64 = old_size * 2
        if 4 * size > self.lwords_max:
            return
        table, lat0 = line_aligned(4 * size)
        mask: i64 = size - 1
        cached: i64 = 0
        while cached < 2:  # 0: the tokens, 1: the cached chunks
            slot: i64 = 0
            while slot < old_size:
                w: i64 = (slot << 2) + old_at
                k1: i64 = old[w + 1]
                if k1 != 0 and ((k1 >> 60) != 0) == (cached == 1):
                    k0: i64 = old[w]
                    at: i64 = ((((k0 * SMALL_MUL) ^ (k1 & M60)) * SMALL_MUL) >> WORD_SHIFT) & mask
                    while table[(at << 2) + lat0 + 1] != 0:
                        at = (at + 1) & mask
                    table[(at << 2) + lat0] = k0
                    table[(at << 2) + lat0 + 1] = k1
                    table[(at << 2) + lat0 + 2] = old[w + 2]
                slot += 1
            cached += 1
        self.lwords = table
        self.lwords_at = lat0
        self.lwords_mask = mask
        added: i64 = (3 * size) // 4 - (3 * old_size) // 4
        self.lwords_limit += added
        self.lwords_room += added
        if self.huge_after < 0 and len(self.words) >= HUGE_WORDS:
            huge_pages(table)  # the other tables are on huge pages already; else before_text's turn

    def spells_itself(self, k: i64, data: bytes, start: i64, end: i64) -> bool:
        """Whether BPE of merge k's bytes, data[start:end], gives its token alone: the answer
        import_spells gave, or one short_bpe, remembered for export_tables."""
        known: i64 = i64(self.spells[k])
        if known == SPELLS_UNKNOWN:
            known = SPELLS_NOT
            if self.short_bpe(data, start, end) == 1 and self.tk[0] == 256 + k:
                known = SPELLS_ITSELF
            self.spells[k] = u8(known)
        return known == SPELLS_ITSELF

    def fill_spells(self, spelled: list[bytes]) -> None:
        """Whether BPE of each token's bytes gives the token alone (spells: what fill_words and
        fill_long_words ask spells_itself), for the tokens of up to LONG_WORD_MAX bytes whose
        answer is still unknown, from the answers of its two parts instead of a BPE of its
        bytes: `spells_by_parts`.  Only for monotone merges (each merge's parts are made by
        lower-numbered merges) with no pair listed twice: the proof there needs both.  A few
        pair lookups a token where short_bpe ran a BPE of its bytes."""
        n: i64 = self.n_merges
        spells = self.spells
        right_spine: vec[i64] = vec[i64]([0] * (LONG_WORD_MAX + 1))
        left_spine: vec[i64] = vec[i64]([0] * (LONG_WORD_MAX + 1))
        k: i64 = 0
        while k < n:
            if spells[k] == SPELLS_UNKNOWN and len(spelled[256 + k]) <= LONG_WORD_MAX:
                spells[k] = u8(self.spells_by_parts(k, right_spine, left_spine))
            k += 1

    def spells_by_parts(self, k: i64, right_spine: vec[i64], left_spine: vec[i64]) -> i64:
        """SPELLS_ITSELF when BPE of merge k's bytes gives its token T alone, else SPELLS_NOT;
        the merges are monotone and the answers of T's parts a and b are known (they are
        shorter).  The spines: scratch of LONG_WORD_MAX + 1 ids each.

        BPE here glues the lowest-numbered pair that has a merge, its leftmost occurrence first
        (short_bpe).  Why the rule below is that BPE's answer:

        1. Locality.  When BPE of some bytes ends in tokens t1 .. tm, no glue of the run
           crossed a boundary between two of them (tokens only grow), so the glues inside t_i
           are the run on t_i's bytes alone: each was the lowest pair of the whole run, so the
           lowest among t_i's own pairs, which depend only on the tokens inside t_i (equal
           numbers: left to right in both); and the run stops with no merge left between any
           two tokens, so t_i's run stops at t_i too.
        2. T = 256 + k comes out of its bytes only through its own merge (a, b), so the run
           passes through [a, b] side by side, and by 1 BPE of a's bytes gives a and of b's
           gives b: if either part does not spell itself, T does not (SPELLS_NOT).
        3. Let both parts spell themselves.  By 2 and induction, a's run alone glues exactly
           the merges of a's tree, each when it is the lowest pair, so by increasing number (a
           merge's parts come from lower numbers).  On a's bytes then b's, the run is a's and
           b's runs interleaved by number -- unless a glue takes the pair across the seam.
           That pair is (the last token of a's side, the first of b's side).  The last token of
           a's side climbs a's right spine: x_0 = a's last byte, x_1, .., x_r = a, where x_i
           is the right part of x_(i+1) and is glued away at number p(x_i) = x_(i+1) - 256
           (p(a) = infinity); the first token of b's side climbs b's left spine y_0 .. y_s = b
           likewise, glued away at q(y_j).  While x_i and y_j stand side by side, their pair,
           if a merge numbered c makes it, is glued before x_i goes iff c < p(x_i) (at
           c = p(x_i) the occurrence that glues x_i away lies left of the seam and comes first)
           and before y_j goes iff c <= q(y_j) (at c = q(y_j) the seam is the leftmost).  Other
           glues in between change neither token, and c is above both tokens' numbers
           (monotone), so it was never due before they met.  A seam glue leaves no token ending
           at the seam, so T cannot be made: SPELLS_NOT.  Otherwise the next to go is the one
           of x_i, y_j with the lower p / q; at a tie (one merge glues both away, the left one
           first) a pair with a new token has a higher number than that merge (monotone), so
           none is due before both are gone: both climb.  Reaching (a, b), the pair is merge
           k's alone (no pair listed twice), and it glues them: SPELLS_ITSELF.

        tests/test_encode_chunk.py compares it with a BPE of every token's bytes on random
        merges (reference.bpe_naive), on GPT-2's merges and on cl100k_base's."""
        left = self.left
        right = self.right
        spells = self.spells
        a: i64 = left[k]
        b: i64 = right[k]
        if a >= 256 and i64(spells[a - 256]) != SPELLS_ITSELF:
            return SPELLS_NOT
        if b >= 256 and i64(spells[b - 256]) != SPELLS_ITSELF:
            return SPELLS_NOT
        i: i64 = spine(right, a, right_spine) - 1
        j: i64 = spine(left, b, left_spine) - 1
        while i > 0 or j > 0:
            x: i64 = right_spine[i]
            y: i64 = left_spine[j]
            px: i64 = right_spine[i - 1] - 256 if i > 0 else NO_RANK
            py: i64 = left_spine[j - 1] - 256 if j > 0 else NO_RANK
            c: i64 = self.byte_pairs[(x << 8) | y] if x < 256 and y < 256 else self.rank(x, y)
            if c != NO_RANK and c < px and c <= py:
                return SPELLS_NOT
            if px <= py:
                i -= 1
            if py <= px:
                j -= 1
        return SPELLS_ITSELF

    def fill_cross(self, spelled: list[bytes]) -> None:
        """cross[x << 8 | y] = 1 when some token BPE makes holds byte x followed by byte y, for
        encode_pieces.  A token's adjacent bytes are those of its two parts and the one pair
        where they meet, (last byte of the left part, first byte of the right), and its parts
        are bytes or tokens BPE makes: so the meeting places of the merges find them all."""
        n: i64 = self.n_merges
        left = self.left
        right = self.right
        # each token's first and last byte, read in order (the parts' objects, read at random,
        # missed the cache twice a merge), then looked up by part in tables that fit the cache
        first: vec[u8] = vec[u8]([0] * (n + 256))
        last: vec[u8] = vec[u8]([0] * (n + 256))
        t: i64 = 0
        while t < n + 256:
            word = spelled[t]
            first[t] = u8(word[0])
            last[t] = u8(word[len(word) - 1])
            t += 1
        cross: vec[u8] = vec[u8]([0] * 65536)
        k: i64 = 0
        while k < n:
            cross[(i64(last[left[k]]) << 8) | i64(first[right[k]])] = 1
            k += 1
        self.cross = cross

    def fill_whole(self, whole: list[bytes]) -> None:
        """The table of the tokens no merge makes (whole_find): open addressing keyed by the
        FNV-1a hash of the bytes, entries [hash << 30 | length, offset << ID_BITS | id] into
        whole_text, the tokens back to back; and two filters in front of it, the first two
        bytes of each (whole_first) and the lengths (whole_lengths, bit min(length, 63))."""
        n_whole: i64 = len(whole)
        size: i64 = 16
        while size < 2 * n_whole:
            size *= 2
        table: vec[i64] = vec[i64]([0] * (2 * size))
        mask: i64 = size - 1
        first: vec[u8] = vec[u8]([0] * 65536)
        lengths: i64 = 0
        text = BytesWriter()
        offset: i64 = 0
        j: i64 = 0
        while j < n_whole:
            word = whole[j]
            ln: i64 = len(word)
            if ln < 2 or ln > M30:
                raise ConfigError(f"whole token {j} has {ln} bytes: a token no merge makes has 2 to {M30} bytes")
            h: i64 = fnv_bytes(word, 0, ln)
            at: i64 = ((h * HASH_MUL) >> HASH_SHIFT) & mask
            while table[at << 1] != 0:
                at = (at + 1) & mask
            table[at << 1] = (h << 30) | ln
            table[(at << 1) + 1] = (offset << ID_BITS) | (256 + self.n_merges + j)
            first[(i64(word[0]) << 8) | word[1]] = 1
            lengths |= FILTER_TOP >> (61 - min(ln, 61))
            text.write(word)
            offset += ln
            j += 1
        self.n_whole = n_whole
        self.whole_table = table
        self.whole_mask = mask
        self.whole_text = text.getvalue()
        self.whole_first = first
        self.whole_lengths = lengths

    def whole_emit(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> bool:
        """When data[start:end] is a token no merge makes, write its id and return True."""
        found: i64 = self.whole_find(data, start, end)
        if found < 0:
            return False
        emit(dst, found, self.wide)
        return True

    def whole_find(self, data: bytes, start: i64, end: i64) -> i64:
        """The id of the token no merge makes whose bytes are data[start:end], or -1."""
        n: i64 = end - start
        if n < 2 or self.whole_first[(i64(data[start]) << 8) | data[start + 1]] == 0:
            return -1
        if (self.whole_lengths & (FILTER_TOP >> (61 - min(n, 61)))) == 0:
            return -1
        h: i64 = fnv_bytes(data, start, end)
        table = self.whole_table
        mask = self.whole_mask
        text = self.whole_text
        want: i64 = (h << 30) | n
        at: i64 = ((h * HASH_MUL) >> HASH_SHIFT) & mask
        while True:
            e: i64 = table[at << 1]
            if e == 0:
                return -1
            if e == want:
                v: i64 = table[(at << 1) + 1]
                if same_bytes(text, v >> ID_BITS, data, start, n):
                    return v & M21
            at = (at + 1) & mask

    def reset_front(self) -> None:
        """The front cache as at the start: the first HOT_WORDS words."""
        front = self.front
        seed = self.front_seed
        slot: i64 = 0
        at: i64 = self.front_at
        while slot < 2 * FRONT_SLOTS:
            front[slot + at] = seed[slot]
            slot += 1

    def clear_cache(self) -> None:
        words = self.words
        slot: i64 = self.words_at
        while slot + 1 < len(words):
            if words[slot] >> 59 != 0:
                words[slot] = 0
                words[slot + 1] = 0
            slot += 2
        self.words_room = self.words_limit
        lwords = self.lwords
        slot = self.lwords_at
        while slot + 3 < len(lwords):
            if lwords[slot + 1] >> 60 != 0:
                lwords[slot] = 0
                lwords[slot + 1] = 0
                lwords[slot + 2] = 0
            slot += 4
        self.lwords_room = self.lwords_limit
        small = self.small
        slot = 0
        while slot < SMALL_SLOTS:
            small[(slot << 1) + self.small_at] = 0  # no key is 0: a cached chunk has 2 to 7 bytes
            slot += 1
        self.pool_n = 0
        self.cc_clear()
        self.reset_front()
        misses = self.misses
        slot = 0
        while slot < len(misses):
            misses[slot] = 0
            slot += 1
        self.pieces_score = 0

    # ---- one chunk ----

    def encode_span(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> None:
        """Write the ids of chunk data[start:end] to `dst`, as little-endian uint16 or uint32 when
        `wide` (through the cache when short).  Ids go out packed, not as a list: a list of ids
        boxed every id above 256 into a new int object (with its malloc and free), which cost
        ~10 % of encoding.

        The chunk is a whole pre-token: when it is a token no merge makes, it is that token
        (tiktoken's rule, whole_emit).  That is looked up where a chunk missed every table and
        cache, before BPE and before its ids go into a cache, never on a hit: no table holds
        such a token (the word tables hold tokens BPE makes of their own bytes, the caches only
        what passed this look-up), so a hit is never one, and the hits pay nothing for it
        (checked first, it cost more instructions with cl100k: docs/speed.md).  encode_pieces,
        whose parts of a chunk must not take that step, goes around this method for a part that
        is such a token."""
        n: i64 = end - start
        wide = self.wide
        # The hits below write their id inline, not through emit(): mypyc does not inline a
        # function, and these paths are most chunks.
        if n <= 1:  # an empty chunk's key would be 0, the word table's empty slot
            if n == 1:
                if wide:
                    write_i32_le(dst, i32(data[start]))
                else:
                    write_i16_le(dst, i16(data[start]))
            return
        if n == 2 and self.n_whole == 0:
            # Two bytes are one token when their pair is merged, else the two bytes: the pair
            # table (256 x 256, 512 KB) answers directly, with no cache or word-table look-up.
            b0: i64 = data[start]
            b1: i64 = data[start + 1]
            k2: i64 = self.byte_pairs[(b0 << 8) | b1]
            if k2 != NO_RANK:
                if wide:
                    write_i32_le(dst, i32(k2 + 256))
                else:
                    write_i16_le(dst, i16(((k2 + 256) ^ 0x8000) - 0x8000))
            elif wide:
                write_i32_le(dst, i32(b0))
                write_i32_le(dst, i32(b1))
            else:
                write_i16_le(dst, i16(b0))
                write_i16_le(dst, i16(b1))
            return
        if n > CACHE_MAX_BYTES:
            self.encode_uncached(data, start, end, dst)
            return
        if n <= SMALL_MAX_BYTES and start + 8 <= len(data):
            # The bypass (see MISS_STEP): on text whose chunks no table holds, the lookups missed
            # to memory and cost more than the BPE they were to save.
            misses = self.misses
            score: i64 = misses[n]
            if score > 0:
                score -= 1
                if score >= BYPASS_ON:
                    misses[n] = BYPASS_ON // 2 if score == BYPASS_ON else score
                    if self.n_whole != 0 and self.whole_emit(data, start, end, dst):
                        return
                    self.encode_short(data, start, end, dst)
                    return
                misses[n] = score
            # Key = the bytes | length << 56, for the front cache, the word table, the small cache.
            # encode_text's loops (encode_walk, encode_scanned) repeat this key, the front
            # cache's slot and its one-id hit before they call here: change them together.
            key: i64 = (read_i64_le(data, start) & (M56 >> ((SMALL_MAX_BYTES - n) << 3))) | (n << 56)
            mixed: i64 = (key * SMALL_MUL) >> WORD_SHIFT
            front = self.front
            fat: i64 = ((mixed & FRONT_MASK) << 1) + self.front_at
            fkey: i64 = front[fat]
            if fkey == key:
                if wide:
                    write_i32_le(dst, i32(front[fat + 1]))
                else:
                    write_i16_le(dst, i16((front[fat + 1] ^ 0x8000) - 0x8000))
                return
            if (fkey & M59) == key:
                self.entry_emit(fkey >> 59, front[fat + 1], dst)
                return
            words = self.words
            wmask = self.words_mask
            wbase: i64 = self.words_at
            wat: i64 = mixed & wmask
            while True:
                wkey: i64 = words[(wat << 1) + wbase]
                if (wkey & M59) == key:
                    wv: i64 = words[(wat << 1) + wbase + 1]
                    front[fat] = wkey
                    front[fat + 1] = wv
                    if wkey == key:
                        if wide:
                            write_i32_le(dst, i32(wv))
                        else:
                            write_i16_le(dst, i16((wv ^ 0x8000) - 0x8000))
                        return
                    self.entry_emit(wkey >> 59, wv, dst)
                    return
                if wkey == 0:
                    break
                wat = (wat + 1) & wmask
            # Not in the tables: while the word table has room (up to 3/4 full), the chunk's ids
            # go into it at the empty slot where the probe ended, as [key | count << 59, ids],
            # so that the next time it is found by this probe instead of missing here and
            # again in the small cache (faster: docs/speed.md).  clear_cache takes them out
            # (word entries have count 0: a word's chain holds no entry added after it).
            if self.words_room > 0:
                if self.n_whole != 0 and self.whole_emit(data, start, end, dst):
                    return
                if self.bypass:
                    note_miss(misses, n)
                cn: i64 = self.short_bpe(data, start, end)
                ctk = self.tk
                cp: i64 = self.pack_ids(cn)
                words[(wat << 1) + wbase] = key | (cn << 59)
                words[(wat << 1) + wbase + 1] = cp
                self.words_room -= 1
                front[fat] = key | (cn << 59)
                front[fat + 1] = cp
                ct: i64 = 0
                while ct < cn:
                    emit(dst, ctk[ct], wide)
                    ct += 1
                return
            small = self.small
            at: i64 = ((((key * SMALL_MUL) >> SMALL_SHIFT) & SMALL_MASK) << 1) + self.small_at
            stored: i64 = small[at]
            if (stored & M59) == key:
                sp: i64 = small[at + 1]
                front[fat] = stored
                front[fat + 1] = sp
                self.entry_emit(stored >> 59, sp, dst)
                return
            if self.n_whole != 0 and self.whole_emit(data, start, end, dst):
                return
            if self.bypass:
                note_miss(misses, n)
            sn: i64 = self.short_bpe(data, start, end)
            stk = self.tk
            if sn <= SMALL_MAX_IDS:
                sp = self.pack_ids(sn)
                small[at] = key | (sn << 59)
                small[at + 1] = sp
                front[fat] = key | (sn << 59)
                front[fat + 1] = sp
            st: i64 = 0
            while st < sn:
                emit(dst, stk[st], wide)
                st += 1
            return
        if n <= LONG_WORD_MAX and start + 16 <= len(data):
            lk0: i64 = read_i64_le(data, start)
            lk1: i64 = (read_i64_le(data, start + 8) & (M56 >> ((LONG_WORD_MAX - n) << 3))) | (n << 56)
            lmix: i64 = (((lk0 * SMALL_MUL) ^ lk1) * SMALL_MUL) >> WORD_SHIFT
            lwords = self.lwords
            lmask = self.lwords_mask
            lbase: i64 = self.lwords_at
            lat: i64 = lmix & lmask
            while True:
                lkey: i64 = lwords[(lat << 2) + lbase + 1]
                if (lkey & M60) == lk1 and lwords[(lat << 2) + lbase] == lk0:
                    lv: i64 = lwords[(lat << 2) + lbase + 2]
                    if lkey == lk1:
                        if wide:
                            write_i32_le(dst, i32(lv))
                        else:
                            write_i16_le(dst, i16((lv ^ 0x8000) - 0x8000))
                        return
                    self.entry_emit((lkey >> 60) & 15, lv, dst)
                    return
                if lkey == 0:
                    break
                lat = (lat + 1) & lmask
            # As for the word table: while there is room, the chunk's ids go into the long-word
            # table at the empty slot where the probe ended, [k0, k1 | count << 60, ids or their
            # offset in the id pool], instead of the chunk cache (faster: docs/speed.md).
            if self.lwords_room > 0:
                if self.n_whole != 0 and self.whole_emit(data, start, end, dst):
                    return
                dn: i64 = self.pieces_bpe(data, start, end, dst)
                if dn >= 0:
                    # a piece of 8 bytes or more may have taken the slot where the probe ended,
                    # or grown the table (grow_lwords): then the chunk's slot is found anew there
                    if self.lwords_room <= 0:
                        return
                    if self.lwords_mask != lmask:
                        lwords = self.lwords
                        lmask = self.lwords_mask
                        lbase = self.lwords_at
                        lat = lmix & lmask
                    while lwords[(lat << 2) + lbase + 1] != 0:
                        lat = (lat + 1) & lmask
                else:
                    dn = self.short_bpe(data, start, end)
                    dtk = self.tk
                    dt: i64 = 0
                    while dt < dn:
                        emit(dst, dtk[dt], wide)
                        dt += 1
                dp: i64 = self.pack_ids(dn)
                lwords[(lat << 2) + lbase] = lk0
                lwords[(lat << 2) + lbase + 1] = lk1 | (dn << 60)
                lwords[(lat << 2) + lbase + 2] = dp
                self.lwords_room -= 1
                if self.lwords_room == 0:
                    self.grow_lwords()
                return
        self.cc_encode(data, start, end, dst)

    def cc_encode(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> None:
        """The chunk cache (CC_*): look data[start:end] up, or encode it and keep it."""
        n: i64 = end - start
        h: i64 = n * CC_MUL
        i: i64 = start
        while i + 8 <= end:
            h = (h + read_i64_le(data, i)) * CC_MUL
            i += 8
        if i < end:
            h = (h + tail_word(data, i, end)) * CC_MUL
        tag: i64 = (h ^ (h >> 29)) | 1
        index = self.cc_index
        mask: i64 = self.cc_mask
        at: i64 = (tag >> CC_SHIFT) & mask
        while True:
            e: i64 = index[at << 1]
            if e == 0:
                break
            if e == tag:
                v: i64 = index[(at << 1) + 1]
                if ((v >> 32) & CC_LEN_MASK) == n:
                    arena = self.cc_arena
                    off: i64 = v & M32
                    i = start
                    w: i64 = off
                    while i + 8 <= end and arena[w] == read_i64_le(data, i):
                        i += 8
                        w += 1
                    if i >= end or (i + 8 > end and arena[w] == tail_word(data, i, end)):
                        count: i64 = v >> 44
                        wide = self.wide
                        w = off + ((n + 7) >> 3)
                        t: i64 = 0
                        while t < count:
                            packed: i64 = arena[w]
                            emit(dst, packed & M21, wide)
                            if t + 1 < count:
                                emit(dst, (packed >> ID_BITS) & M21, wide)
                            if t + 2 < count:
                                emit(dst, (packed >> (2 * ID_BITS)) & M21, wide)
                            t += 3
                            w += 1
                        return
            at = (at + 1) & mask
        if self.n_whole != 0 and self.whole_emit(data, start, end, dst):
            return
        if n < LONG_CHUNK:
            count = self.pieces_bpe(data, start, end, dst)
            tk = self.tk
            if count < 0:
                count = self.short_bpe(data, start, end)
                tk = self.tk
                wide = self.wide
                t = 0
                while t < count:
                    emit(dst, tk[t], wide)
                    t += 1
            self.cc_insert(data, start, end, tag, tk, count)
            return
        # encode_long writes to dst (and may come back here for the pieces of the chunk, which
        # is why cc_insert probes again): its ids are read back from there
        mark: i64 = len(dst)
        self.encode_long(data, start, end, dst)
        got = self.cc_ids
        count = self.read_back(dst, mark, got)
        self.cc_insert(data, start, end, tag, got, count)

    def pieces_bpe(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> i64:
        """The ids of a chunk of LONG_WORD_MIN to LONG_CHUNK - 1 bytes that missed the tables and
        caches, by its pieces between safe places (encode_pieces), written to `dst` and copied
        into self.tk[:count]; returns count, or -1, having written nothing, when the chunk is
        shorter or has no safe place (the caller runs short_bpe).  Most chunks of scripts
        written without spaces have safe places (with cl100k, 79 % of the distinct multilingual
        chunks of 16-63 bytes, 34 % of those of 8-15 bytes), and their pieces are tokens the
        word tables hold, or chunks seen before: a few lookups instead of a BPE whose every
        step scans the chunk and looks up two pairs (docs/speed.md)."""
        if end - start < LONG_WORD_MIN:
            return -1
        score: i64 = self.pieces_score
        if score > PIECES_OFF:  # skipping: see PIECES_OFF
            self.pieces_score = PIECES_OFF // 2 if score == PIECES_OFF + 1 else score - 1
            return -1
        # Only a chunk with a byte >= 0x80: ASCII chunks seldom have a safe place (the letters
        # of most pairs meet in some token), and looking for one cost English 2 % more
        # instructions on first sight, for nothing (docs/speed.md).
        high: i64 = 0
        i: i64 = start
        while i + 8 <= end:
            high |= read_i64_le(data, i)
            i += 8
        if i < end:
            high |= tail_word(data, i, end)
        if (high >> 7) & BYTES_8 == 0:
            return -1
        mark: i64 = len(dst)
        # The pieces' misses do not count toward the bypass (see MISS_STEP): on first sight most
        # pieces miss, and counting them switched the lookups of whole chunks of their length off
        # for a while, whose ids were then neither found nor kept (more BPE on the next pass).
        bypass: bool = self.bypass
        self.bypass = False
        cut: bool = self.encode_pieces(data, start, end, dst)
        self.bypass = bypass
        if not cut:
            score += 1
            self.pieces_score = score if score <= PIECES_OFF else PIECES_OFF + PIECES_SKIP
            return -1
        self.pieces_score = max(score - PIECES_GAIN, 0)
        # the pieces' own BPE used self.tk: the chunk's ids are read back from dst
        return self.read_back(dst, mark, self.tk)

    def read_back(self, dst: BytesWriter, mark: i64, out: vec[i64]) -> i64:
        """The ids written to `dst` from offset `mark` on (uint16 or uint32, little-endian),
        copied into out[:count]; returns count."""
        wide = self.wide
        step: i64 = 4 if wide else 2
        count: i64 = (len(dst) - mark) // step
        t: i64 = 0
        while t < count:
            q: i64 = mark + t * step
            x: i64 = i64(dst[q]) | (i64(dst[q + 1]) << 8)
            if wide:
                x |= (i64(dst[q + 2]) << 16) | (i64(dst[q + 3]) << 24)
            out[t] = x
            t += 1
        return count

    def cc_insert(self, data: bytes, start: i64, end: i64, tag: i64, ids: vec[i64], count: i64) -> None:
        """Keep chunk data[start:end] (hash `tag`) and its ids[:count] in the chunk cache: its
        bytes and ids at the end of the arena, their place in the index.  The cache doubles its
        index while it may, and is emptied when it is full (so text of ever new chunks costs a
        bounded memory: cc_max_slots index slots and cc_max_words arena words)."""
        n: i64 = end - start
        need: i64 = ((n + 7) >> 3) + (count + 2) // 3
        if (self.cc_count + 1) * 4 > (self.cc_mask + 1) * 3:
            if self.cc_mask + 1 < self.cc_max_slots:
                self.cc_grow()
            else:
                self.cc_clear()
        if len(self.cc_arena) + need > self.cc_max_words:
            self.cc_clear()
        arena = self.cc_arena
        off: i64 = len(arena)
        i: i64 = start
        while i + 8 <= end:
            arena = append(arena, read_i64_le(data, i))
            i += 8
        if i < end:
            arena = append(arena, tail_word(data, i, end))
        t: i64 = 0
        while t < count:
            packed: i64 = ids[t]
            if t + 1 < count:
                packed |= ids[t + 1] << ID_BITS
            if t + 2 < count:
                packed |= ids[t + 2] << (2 * ID_BITS)
            arena = append(arena, packed)
            t += 3
        self.cc_arena = arena
        index = self.cc_index
        mask: i64 = self.cc_mask
        at: i64 = (tag >> CC_SHIFT) & mask
        while index[at << 1] != 0:
            at = (at + 1) & mask
        index[at << 1] = tag
        index[(at << 1) + 1] = off | (n << 32) | (count << 44)
        self.cc_count += 1

    def cc_grow(self) -> None:
        """Double the chunk cache's index (the arena stays)."""
        old = self.cc_index
        size: i64 = 2 * (self.cc_mask + 1)
        mask: i64 = size - 1
        index: vec[i64] = vec[i64]([0] * (2 * size))
        slot: i64 = 0
        while slot < len(old):
            tag: i64 = old[slot]
            if tag != 0:
                at: i64 = (tag >> CC_SHIFT) & mask
                while index[at << 1] != 0:
                    at = (at + 1) & mask
                index[at << 1] = tag
                index[(at << 1) + 1] = old[slot + 1]
            slot += 2
        self.cc_index = index
        self.cc_mask = mask

    def cc_clear(self) -> None:
        """Empty the chunk cache, back to its first size."""
        self.cc_index = vec[i64]([0] * (2 * CC_FIRST_SLOTS))
        self.cc_mask = CC_FIRST_SLOTS - 1
        self.cc_arena = vec[i64](capacity=CC_FIRST_SLOTS * 4)
        self.cc_count = 0

    def entry_emit(self, count: i64, v: i64, dst: BytesWriter) -> None:
        """Write the ids of a cached entry of the word tables: `count` (2 or more) ids packed in
        v when they are at most SMALL_MAX_IDS, else at offset v of the id pool."""
        if count > SMALL_MAX_IDS:
            self.pool_emit(v, count, dst)
            return
        wide = self.wide
        t: i64 = 0
        while t < count:
            emit(dst, (v >> (t * ID_BITS)) & M21, wide)
            t += 1

    def pack_ids(self, count: i64) -> i64:
        """The value of a word-table entry for the ids tk[:count] (entry_emit reads it): the ids
        packed ID_BITS each when they are at most SMALL_MAX_IDS, else their offset in the id
        pool, where they are copied."""
        tk = self.tk
        if count <= SMALL_MAX_IDS:
            packed: i64 = 0
            t: i64 = 0
            while t < count:
                packed |= tk[t] << (t * ID_BITS)
                t += 1
            return packed
        at: i64 = self.pool_n
        pool = self.pool
        while len(pool) < at + count:
            pool = append(pool, 0)
        i: i64 = 0
        while i < count:
            pool[at + i] = i32(tk[i])
            i += 1
        self.pool = pool
        self.pool_n = at + count
        return at

    def pool_emit(self, at: i64, count: i64, dst: BytesWriter) -> None:
        """Write the `count` ids at offset `at` of the id pool."""
        pool = self.pool
        wide = self.wide
        i: i64 = at
        while i < at + count:
            emit(dst, i64(pool[i]), wide)
            i += 1

    def encode_uncached(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> None:
        """The same ids as encode_span, without looking the chunk up in the caches (tests compare
        the two); a long chunk's pieces (encode_pieces) still go through encode_piece."""
        if self.n_whole != 0 and self.whole_emit(data, start, end, dst):
            return
        self.encode_bpe(data, start, end, dst)

    def encode_bpe(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> None:
        """BPE of data[start:end] without the caches: the rank arrays when short, else the
        linked-list paths."""
        if end - start < LONG_CHUNK:
            self.encode_short(data, start, end, dst)
        else:
            self.encode_long(data, start, end, dst)

    def encode_short(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> None:
        """Rank-array BPE for a chunk of fewer than LONG_CHUNK bytes."""
        count = self.short_bpe(data, start, end)
        tk = self.tk
        wide = self.wide
        t: i64 = 0
        while t < count:
            emit(dst, tk[t], wide)
            t += 1

    def short_bpe(self, data: bytes, start: i64, end: i64) -> i64:
        """BPE of a chunk of fewer than LONG_CHUNK bytes into self.tk; returns the id count.

        While it works, self.rk[i] holds token i and the merge number of the pair it starts, as
        one word: rank << ID_BITS | token (NO_RANK for the last token).  Each step finds the
        smallest word and its leftmost place -- the smallest merge number, since equal merge
        numbers are the same pair and so the same token --, glues that one pair and moves the
        rest down by one, then recomputes the two words next to the new token.  One occurrence a
        step, the leftmost first, is the same as every occurrence of the merge in one
        left-to-right pass: a pair holding the new token has a higher merge number, so the next
        step takes the next occurrence to the right that did not overlap.  One array, not a
        token array and a rank array: the scan reads half as much and each step moves one.
        (The rewrite of the whole arrays a step that this replaced mispredicted a branch at
        every token: random text and base64 are millions of chunks of a few bytes, each
        through here.)
        """
        tk = self.tk
        pk = self.rk
        byte_pairs = self.byte_pairs
        n: i64 = end - start
        if n <= 0:
            return 0
        a: i64 = data[start]
        i: i64 = 0
        while i < n - 1:
            b: i64 = data[start + i + 1]
            pk[i] = (byte_pairs[(a << 8) | b] << ID_BITS) | a
            a = b
            i += 1
        pk[n - 1] = (NO_RANK << ID_BITS) | a
        while n > 1:
            best: i64 = pk[0]
            at: i64 = 0
            i = 1
            while i < n - 1:
                v: i64 = pk[i]
                if v < best:
                    best = v
                    at = i
                i += 1
            merge: i64 = best >> ID_BITS
            if merge == NO_RANK:
                break
            new: i64 = 256 + merge
            n -= 1
            i = at + 1
            while i < n:
                pk[i] = pk[i + 1]
                i += 1
            if at < n - 1:
                pk[at] = (self.rank(new, pk[at + 1] & M21) << ID_BITS) | new
            else:
                pk[at] = (NO_RANK << ID_BITS) | new
            if at > 0:
                left: i64 = pk[at - 1] & M21
                pk[at - 1] = (self.rank(left, new) << ID_BITS) | left
        i = 0
        while i < n:
            tk[i] = pk[i] & M21
            i += 1
        return n

    def encode_long(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> None:
        """Linked list + min-heap BPE: O(n log n) for a chunk of any length; from HUGE_CHUNK
        bytes on, encode_huge (linear) unless it declines the chunk (a vocabulary from ranks,
        whose merges the chunk takes out of order: see Encoder.high).  The heap pops the lowest
        merge number and, among equals, the leftmost position: tiktoken's rule for any merge
        order."""
        n: i64 = end - start
        if n <= 0:
            return
        if self.encode_runs(data, start, end, dst):
            return
        if self.encode_pieces(data, start, end, dst):
            return
        if n >= HUGE_CHUNK and self.encode_huge(data, start, end, dst):
            return
        tok: vec[i64] = vec[i64](capacity=n)
        nxt: vec[i64] = vec[i64](capacity=n)
        prv: vec[i64] = vec[i64](capacity=n)
        i: i64 = 0
        while i < n:
            tok = append(tok, data[start + i])
            nxt = append(nxt, i + 1)
            prv = append(prv, i - 1)
            i += 1
        nxt[n - 1] = -1
        # Heap entries: merge number << 32 | left position.  Smallest first: the lowest merge,
        # and within a merge the leftmost position.
        heap: vec[i64] = vec[i64](capacity=n)
        i = 0
        while i < n - 1:
            r = self.rank(tok[i], tok[i + 1])
            if r != NO_RANK:
                heap = append(heap, (r << 32) | i)
            i += 1
        size: i64 = len(heap)
        i = size // 2 - 1
        while i >= 0:
            sift_down(heap, i, size)
            i -= 1
        left = self.left
        right = self.right
        while size > 0:
            top = heap[0]
            size -= 1
            if size > 0:
                heap[0] = heap[size]
                sift_down(heap, 0, size)
            r = top >> 32
            p: i64 = top & M32
            a = tok[p]
            if a != left[r]:
                continue
            q = nxt[p]
            if q == -1 or tok[q] != right[r]:
                continue
            new: i64 = 256 + r
            tok[p] = new
            tok[q] = -1
            nq = nxt[q]
            nxt[p] = nq
            if nq != -1:
                prv[nq] = p
            pp = prv[p]
            if pp != -1:
                r2 = self.rank(tok[pp], new)
                if r2 != NO_RANK:
                    heap, size = heap_push(heap, size, (r2 << 32) | pp)
            if nq != -1:
                r3 = self.rank(new, tok[nq])
                if r3 != NO_RANK:
                    heap, size = heap_push(heap, size, (r3 << 32) | p)
        wide = self.wide
        i = 0
        while i != -1:
            emit(dst, tok[i], wide)
            i = nxt[i]

    def encode_pieces(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> bool:
        """Encode a long chunk as the pieces between its safe places, or return False, having
        written nothing, when it has none.

        A place between bytes x and y is safe when no token holds x followed by y (fill_cross):
        no merge can then join the tokens on its two sides, so each side goes through the same
        merges, in the same order, as it would alone, and the chunk's ids are its pieces' ids
        one after the other.  Each piece goes through encode_span: a short one through the
        word tables and caches.  A piece is not a pre-token, so a piece that is a token no
        merge makes takes BPE (encode_bpe), not that token.  With cl100k, 10 MB of one CJK character is 3-byte pieces (no
        token holds the last byte of 中 followed by its first), and long chunks of Thai or
        Japanese have a safe place every few characters; a piece of LONG_CHUNK bytes or more
        comes back to encode_long, finds no safe place and takes the linked-list paths."""
        cross = self.cross
        i: i64 = start + 1
        while i < end and cross[(i64(data[i - 1]) << 8) | data[i]] != 0:
            i += 1
        if i >= end:
            return False
        p: i64 = start
        whole: bool = self.n_whole != 0
        while True:
            if whole and self.whole_find(data, p, i) >= 0:
                self.encode_bpe(data, p, i, dst)
            else:
                self.encode_span(data, p, i, dst)
            if i >= end:
                return True
            p = i
            i += 1
            while i < end and cross[(i64(data[i - 1]) << 8) | data[i]] != 0:
                i += 1

    def encode_runs(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> bool:
        """BPE of a chunk made of a few runs of one byte (10 MB of spaces, a line of 80 `-`),
        with each run as one node (token, count): returns False, having written nothing, when
        the chunk has too many runs for that (see RUN_BYTES, RUN_NODES, RUN_WORK) or reaches a
        high merge (below).

        The nodes are kept maximal (two neighbours never hold the same token), so a pair (x, x)
        occurs only inside a node, and the step's rule applies to whole nodes: merge (x, x)
        turns a node (x, c) into (xx, c // 2), then (x, 1) when c is odd -- left to right, as
        the rule says; a merge (a, b), a != b, takes one token from each side of every
        boundary a|b (two such boundaries never share a node: that node would be both a and
        b).  Each step is one merge, numbered above the last (docs of this module), and visits
        every node: 10 MB of one letter is a few nodes and a few steps instead of ten million
        positions.  A merge whose token is a part of a lower-numbered merge (Encoder.high: a
        vocabulary from ranks) could make a pair due before the rest of its own step, which
        one pass over every node cannot honour: the chunk is declined there."""
        n: i64 = end - start
        max_runs: i64 = n // RUN_BYTES
        if max_runs > RUN_NODES:
            max_runs = RUN_NODES
        # node = token << 32 | count (counts < 2**31: MAX_CHUNK)
        nodes: vec[i64] = vec[i64](capacity=max_runs + 1)
        i: i64 = start
        while i < end:
            c: i64 = data[i]
            j: i64 = i + 1
            # eight bytes a compare (a byte at a time was a tenth of 10 MB of one letter)
            eight: i64 = c * BYTES_8  # wraps for c >= 128, as read_i64_le's signed value does
            while j + 8 <= end and read_i64_le(data, j) == eight:
                j += 8
            while j < end and data[j] == c:
                j += 1
            if len(nodes) >= max_runs or j - i > MAX_CHUNK:
                return False
            nodes = append(nodes, (c << 32) | (j - i))
            i = j
        budget: i64 = RUN_WORK * n
        left = self.left
        right = self.right
        high = self.high
        while True:
            m: i64 = len(nodes)
            budget -= m
            if budget < 0 or m > RUN_NODES:
                return False
            best: i64 = NO_RANK
            k: i64 = 0
            while k < m:
                t: i64 = nodes[k] >> 32
                if (nodes[k] & M32) >= 2:
                    r: i64 = self.rank(t, t)
                    if r < best:
                        best = r
                if k + 1 < m:
                    r = self.rank(t, nodes[k + 1] >> 32)
                    if r < best:
                        best = r
                k += 1
            if best == NO_RANK:
                break
            if high[best] != 0:
                return False
            a: i64 = left[best]
            b: i64 = right[best]
            new: i64 = 256 + best
            out: vec[i64] = vec[i64](capacity=m + 2)
            taken: i64 = 0  # 1 when this node's first token went into the merge on its left
            k = 0
            while k < m:
                t = nodes[k] >> 32
                cnt: i64 = (nodes[k] & M32) - taken
                taken = 0
                if t == a and a == b:
                    out = run_push(out, new, cnt >> 1)
                    out = run_push(out, a, cnt & 1)
                elif t == a and k + 1 < m and (nodes[k + 1] >> 32) == b:
                    out = run_push(out, a, cnt - 1)
                    out = run_push(out, new, 1)
                    taken = 1
                else:
                    out = run_push(out, t, cnt)
                k += 1
            nodes = out
        wide = self.wide
        k = 0
        while k < len(nodes):
            t = nodes[k] >> 32
            cnt = nodes[k] & M32
            while cnt > 0:
                emit(dst, t, wide)
                cnt -= 1
            k += 1
        return True

    def encode_huge(self, data: bytes, start: i64, end: i64, dst: BytesWriter) -> bool:
        """Bucket-queue BPE for a chunk of any length: O(n + merges) time, 20 bytes of memory a
        byte of the chunk (plus 8 a merge of the vocabulary).  Returns False, having written
        nothing, when the chunk reaches a high merge (below).

        The heap's trouble at 10 MB was its memory traffic: an 80 MB heap walked at random,
        ~23 levels a pop (slow: docs/speed.md).  Here the lowest merge number present
        only ever grows (merge k makes id 256 + k, which only merges numbered above k use), so
        the pending pairs are kept in one bucket per merge number, visited in order by a
        cursor.  A bucket is a circular doubly linked list (bn/bp) with a sentinel node per merge
        (node k) and a node per position (node nm + p); each position is in the bucket of its
        pair (tok[p], tok[nxt[p]]), or in none (bp = -1), and moves when that pair changes:
        every entry popped is valid, and nothing is left behind.  Inside a run of one token x
        only the run's first pair (x, x) is filed: nothing but the merge (x, x) can touch the
        run's inside, and that merge takes the whole run (so 10 MB of one letter files a few
        pairs a level, not five million).  Occurrences of one merge must be applied left to right only where they
        overlap, in a run of one token x under merge (x, x): the first one popped walks back to
        the run's start, merges the whole run, then files the new pairs once (not after each
        merge of the run, whose right neighbour is about to change again).

        In a vocabulary from ranks a merge's part may come after it; the cursor's order then
        holds only until a merge whose token is a part of a lower-numbered merge (Encoder.high)
        is due: its pairs could come before the rest of its bucket, and the order within a
        bucket is not the positions' order.  The chunk is declined there (encode_long's heap
        takes it)."""
        n: i64 = end - start
        if n <= 0:
            return True
        if n > MAX_CHUNK:
            raise InputError(f"a single pre-tokenizer chunk of {n} bytes (at offset {start}) is longer than the "
                             f"encoder's limit of {MAX_CHUNK} bytes: split the text")
        nm: i64 = self.n_merges
        # Allocated at full size and written by index: appending cost a call into librt a
        # field a byte (perf: a third of this function's time at 10 MB).
        tok: vec[i32] = vec[i32]([0] * n)
        nxt: vec[i32] = vec[i32]([0] * n)
        prv: vec[i32] = vec[i32]([0] * n)
        # bucket nodes: merge k's sentinel is node k, position p is node nm + p
        bn: vec[i32] = vec[i32]([-1] * (n + nm))
        bp: vec[i32] = vec[i32]([-1] * (n + nm))
        i: i64 = 0
        while i < nm:
            bn[i] = i32(i)
            bp[i] = i32(i)
            i += 1
        byte_pairs = self.byte_pairs
        live: i64 = 0
        cursor: i64 = nm
        i = 0
        last_c: i64 = -1
        c: i64 = data[start]
        while i < n:
            tok[i] = i32(c)
            nxt[i] = i32(i + 1)
            prv[i] = i32(i - 1)
            if i + 1 < n:
                d: i64 = data[start + i + 1]
                r: i64 = byte_pairs[(c << 8) | d]
                # inside a run its first pair stands for the run
                if r != NO_RANK and not (c == d and c == last_c):
                    # filed last in bucket r as it is made: buckets start in position order
                    tail: i64 = i64(bp[r])
                    bn[nm + i] = i32(r)
                    bp[nm + i] = i32(tail)
                    bn[tail] = i32(nm + i)
                    bp[r] = i32(nm + i)
                    live += 1
                    if r < cursor:
                        cursor = r
                last_c = c
                c = d
            i += 1
        nxt[n - 1] = -1
        left = self.left
        right = self.right
        high = self.high
        guard: bool = not self.monotone
        run_of: i64 = -1  # the merge whose runs are merged, and the rank of (its id, its id)
        run_rank: i64 = UNSEEN
        while live > 0:
            node: i64 = i64(bn[cursor])
            if node == cursor:
                cursor += 1
                continue
            if guard and high[cursor] != 0:
                return False
            p: i64 = node - nm
            a: i64 = left[cursor]
            b: i64 = right[cursor]
            new: i64 = 256 + cursor
            if a != b:
                q: i64 = i64(nxt[p])
                live -= bucket_unlink(bn, bp, node) + bucket_unlink(bn, bp, nm + q)
                tok[p] = i32(new)
                nq: i64 = i64(nxt[q])
                nxt[p] = i32(nq)
                if nq != -1:
                    prv[nq] = i32(p)
                    # q may have stood for a run starting at nq: nq stands for it now
                    nn: i64 = i64(nxt[nq])
                    if nn != -1 and tok[nn] == tok[nq] and bp[nm + nq] == -1:
                        r5: i64 = self.rank(i64(tok[nq]), i64(tok[nq]))
                        if r5 != NO_RANK:
                            bucket_link(bn, bp, nm + nq, r5)
                            live += 1
                pp: i64 = i64(prv[p])
                if pp != -1:
                    live -= bucket_unlink(bn, bp, nm + pp)
                    r2: i64 = self.rank(i64(tok[pp]), new)
                    if r2 != NO_RANK:
                        bucket_link(bn, bp, nm + pp, r2)
                        live += 1
                if nq != -1:
                    r3: i64 = self.rank(new, i64(tok[nq]))
                    if r3 != NO_RANK:
                        bucket_link(bn, bp, node, r3)
                        live += 1
                continue
            # a run of a: back to its start, merge it left to right, then file the new pairs
            x: i64 = p
            while True:
                back: i64 = i64(prv[x])
                if back == -1 or i64(tok[back]) != a:
                    break
                x = back
            first: i64 = x
            last: i64 = x
            if cursor != run_of:
                run_of = cursor
                run_rank = UNSEEN
            while True:
                y: i64 = i64(nxt[x])
                if y == -1 or i64(tok[y]) != a:
                    break
                live -= bucket_unlink(bn, bp, nm + x) + bucket_unlink(bn, bp, nm + y)
                tok[x] = i32(new)
                ny: i64 = i64(nxt[y])
                nxt[x] = i32(ny)
                if ny != -1:
                    prv[ny] = i32(x)
                last = x
                if ny == -1 or i64(tok[ny]) != a:
                    break
                x = ny
            x = i64(prv[first])
            if x == -1:
                x = first
            # File the new pairs: the one before the run, the one after, and of the (new, new)
            # pairs between only the first, which stands for the run of new (nothing but the
            # merge (new, new) can touch its inside; a merge that takes its first token files
            # the next one, above).
            after_new: bool = False
            while True:
                y = i64(nxt[x])
                if y == -1:
                    break
                live -= bucket_unlink(bn, bp, nm + x)
                ta: i64 = i64(tok[x])
                tb: i64 = i64(tok[y])
                if ta == new and tb == new:
                    if not after_new:
                        after_new = True
                        if run_rank == UNSEEN:
                            run_rank = self.rank(new, new)
                        if run_rank != NO_RANK:
                            bucket_link(bn, bp, nm + x, run_rank)
                            live += 1
                else:
                    r4: i64 = self.rank(ta, tb)
                    if r4 != NO_RANK:
                        bucket_link(bn, bp, nm + x, r4)
                        live += 1
                if x == last:
                    break
                x = y
        wide = self.wide
        i = 0
        while i != -1:
            emit(dst, i64(tok[i]), wide)
            i = i64(nxt[i])
        return True

    def set_public(self, table: list[object]) -> None:
        """ids_list gives table[id] for every id: the public ids of an imported vocabulary
        (Tokenizer.id_map; `table` holds one entry per id, specials included).  The list is
        made of the table's own int objects in ONE pass: mapping the ids afterwards
        (idmap.remap_in_place) walked the list again, and every id of 65,536 or more
        (cl100k, o200k) was first made as a new int object, then thrown away.  The table's
        objects exist anyway (the Tokenizer keeps the map), so no memory is added."""
        self.id_objects = table
        if self.huge_after < 0 and len(self.words) >= HUGE_WORDS:
            huge_pages_of(table)  # the tables are on huge pages already (before_text); else later

    def ids_list(self, packed: bytes) -> list[int]:
        """ids_of(packed, self.wide), made of the pre-made int objects of self.id_objects (self.ints,
        or the public ids given to set_public).  kernels.id_list makes it: raising each id's
        object's reference count is a cache miss in megabytes of objects, and the C loop
        fetches them ahead where the compiled one (ids_from, its twin) waited for each in turn
        (docs/speed.md)."""
        return cast(list[int], id_list(packed, self.id_objects, self.wide))

    def writer_ids(self, dst: BytesWriter) -> list[int]:
        """ids_list of what `dst` holds, read in place: getvalue() would first copy every packed
        id into a new bytes object (4 bytes an id of fresh memory beside the list's 8)."""
        if WRITER_IN_PLACE:
            return cast(list[int], id_list(dst, self.id_objects, self.wide))
        return self.ids_list(dst.getvalue())

    # ---- many chunks ----

    def encode_chunks(self, chunks: list[bytes]) -> list[int]:
        """The ids of already-split chunks, concatenated (tests and other splitters use this)."""
        dst = BytesWriter()
        for c in chunks:
            self.encode_span(c, 0, len(c), dst)
        return self.writer_ids(dst)

    def encode_ends(self, data: bytes, ends: list[int]) -> list[int]:
        """The ids of data cut at `ends` (increasing chunk end offsets, the last = len(data))."""
        dst = BytesWriter()
        pos: i64 = 0
        for e in ends:
            end: i64 = e
            if end < pos or end > len(data):
                raise ConfigError(f"chunk end {end} is out of order (previous end {pos}, length {len(data)})")
            self.encode_span(data, pos, end, dst)
            pos = end
        return self.writer_ids(dst)

    def encode_chunks_uncached(self, chunks: list[bytes]) -> list[int]:
        dst = BytesWriter()
        for c in chunks:
            self.encode_uncached(c, 0, len(c), dst)
        return self.writer_ids(dst)


def line_aligned(n: i64) -> tuple[vec[i64], i64]:
    """A table of n zeroed words, and where it starts in the vec returned: the first index whose
    address is a multiple of LINE bytes (see LINE; the vec holds LINE // 8 words more)."""
    v: vec[i64] = vec[i64]([0] * (n + LINE // 8))
    return v, align_offset(v, LINE) >> 3


def same_bytes(a: bytes, a_at: i64, b: bytes, b_at: i64, n: i64) -> bool:
    """a[a_at:a_at + n] == b[b_at:b_at + n], without making either slice (both spans inside
    their bytes).  Eight bytes at a time: n >= 8 ends on the last eight bytes (overlapping the
    word before); a shorter span is one word of each, its first n bytes compared, when both
    bytes objects hold eight bytes from there -- else byte by byte."""
    if n >= 8:
        last: i64 = n - 8
        i: i64 = 0
        while i < last:
            if read_i64_le(a, a_at + i) != read_i64_le(b, b_at + i):
                return False
            i += 8
        return read_i64_le(a, a_at + last) == read_i64_le(b, b_at + last)
    if a_at + 8 <= len(a) and b_at + 8 <= len(b):
        # the bytes past the span shifted out (not a mask of `1 << 8n`: mypyc writes that
        # literal 1 as a C int, 32 bits wide)
        return n == 0 or (read_i64_le(a, a_at) ^ read_i64_le(b, b_at)) << ((8 - n) << 3) == 0
    j: i64 = 0
    while j < n and a[a_at + j] == b[b_at + j]:
        j += 1
    return j == n


def put(dst: BytesWriter, x: i64) -> None:
    """Write id x (0..65535) as a little-endian uint16.  librt writes i16 only: (x ^ 0x8000) -
    0x8000 is the i16 with the same 16 bits, without a branch."""
    write_i16_le(dst, i16((x ^ 0x8000) - 0x8000))


def put32(dst: BytesWriter, x: i64) -> None:
    """Write id x (0..2**31-1) as a little-endian uint32."""
    write_i32_le(dst, i32(x))


def emit(dst: BytesWriter, x: i64, wide: bool) -> None:
    """Write id x at the encoder's width (the branch is taken the same way for a whole run)."""
    if wide:
        write_i32_le(dst, i32(x))
    else:
        write_i16_le(dst, i16((x ^ 0x8000) - 0x8000))


def ids_of(packed: bytes, wide: bool) -> list[int]:
    """The ids written by the encoder (little-endian uint16, or uint32 when `wide`) as a list."""
    out: list[int] = []
    i: i64 = 0
    if wide:
        while i < len(packed):
            out.append(i64(read_i32_le(packed, i)))
            i += 4
        return out
    while i < len(packed):
        out.append(i64(read_i16_le(packed, i)) & M16)
        i += 2
    return out


def ids_from(objects: list[object], packed: bytes, wide: bool) -> list[int]:
    """kernels.id_list's compiled twin: the ids packed by the encoder (little-endian uint16, or
    uint32 when `wide`) as a list of objects[id] (a new int for an id past the objects), in a
    list allocated at its final size (filling it is faster than appending: docs/speed.md)."""
    ints = objects
    n_ints: i64 = len(ints)
    i: i64 = 0
    j: i64 = 0
    size: i64 = len(packed)
    if wide:
        out: list[object] = [None] * (size >> 2)
        while i < size:
            x: i64 = i64(read_i32_le(packed, i)) & M32
            if x < n_ints:
                out[j] = ints[x]
            else:
                out[j] = x
            i += 4
            j += 1
    else:
        out = [None] * (size >> 1)
        while i < size:
            y: i64 = i64(read_i16_le(packed, i)) & M16
            if y < n_ints:
                out[j] = ints[y]
            else:
                out[j] = y
            i += 2
            j += 1
    return cast(list[int], out)


def lists_of(ints: list[object], packed: bytes, wide: bool, lengths: bytes, out: list[list[int]]) -> None:
    """Append to `out` one list per document: `lengths` holds each one's id count (int64,
    little-endian) and `packed` all their ids back to back (uint16, or uint32 when `wide`).
    Ids below len(ints) are references to its pre-made int objects (Encoder.ints); others (a
    special token's public id, say) are made here.  The compiled twin of kernels.id_lists,
    which encode_batch's unpacking uses."""
    n_ints: i64 = len(ints)
    pos: i64 = 0
    k: i64 = 0
    nl: i64 = len(lengths)
    while k < nl:
        m: i64 = read_i64_le(lengths, k)
        if m < 0 or pos + (m << (2 if wide else 1)) > len(packed):
            raise ValueError(f"lists_of: a length of {m} ids at offset {k} is more than the packed ids hold")
        lst: list[object] = [None] * m
        j: i64 = 0
        while j < m:
            x: i64
            if wide:
                x = i64(read_i32_le(packed, pos)) & M32
                pos += 4
            else:
                x = i64(read_i16_le(packed, pos)) & M16
                pos += 2
            if x < n_ints:
                lst[j] = ints[x]
            else:
                lst[j] = x
            j += 1
        out.append(cast(list[int], lst))
        k += 8


def spell_merges(left: vec[i64], right: vec[i64]) -> list[bytes]:
    """The bytes of every id 0..255 + len(left): merge k spells its parts' bytes one after the
    other.  One pass when every part comes before the merge it makes; a part that comes after
    (a vocabulary from ranks) is spelled first, by a walk down its own parts.  A merge that uses
    itself, through any chain of parts, is a ConfigError (it would spell endless bytes)."""
    n: i64 = len(left)
    spelled: list[bytes] = [bytes([b]) for b in range(256)] + [b""] * n
    k: i64 = 0
    while k < n:
        if len(spelled[left[k]]) != 0 and len(spelled[right[k]]) != 0:
            spelled[256 + k] = spelled[left[k]] + spelled[right[k]]
        elif len(spelled[256 + k]) == 0:
            stack: list[int] = [256 + k]
            while stack:
                if len(stack) > n + 1:
                    raise ConfigError(f"merge {k} (id {256 + k}) is made of itself, through the parts of later merges")
                t: i64 = stack[len(stack) - 1]
                a: i64 = left[t - 256]
                c: i64 = right[t - 256]
                if len(spelled[a]) == 0:
                    stack.append(a)
                elif len(spelled[c]) == 0:
                    stack.append(c)
                else:
                    spelled[t] = spelled[a] + spelled[c]
                    stack.pop()
        k += 1
    return spelled


def spine(parts: vec[i64], t: i64, out: vec[i64]) -> i64:
    """Token t's spine, top-down, into out: t, then parts[t - 256] (its right part, or its left
    one) and so on down to a byte; returns how many."""
    n: i64 = 0
    while True:
        out[n] = t
        n += 1
        if t < 256:
            return n
        t = parts[t - 256]


def tail_word(data: bytes, i: i64, end: i64) -> i64:
    """The 1-7 bytes data[i:end] as a little-endian word, zero above them."""
    if i + 8 <= len(data):
        # Not `(1 << (n * 8)) - 1`: mypyc 2.4.1 emits the literal 1 as a C int, and a 32-bit
        # `1 << 32` is undefined (x86 gives 1, the mask became 0).
        return read_i64_le(data, i) & (M56 >> ((7 - (end - i)) << 3))
    word: i64 = 0
    shift: i64 = 0
    while i < end:
        word |= i64(data[i]) << shift
        shift += 8
        i += 1
    return word


def fnv_bytes(data: bytes, start: i64, end: i64) -> i64:
    """32-bit FNV-1a of data[start:end], a byte at a time (whole_find: the bytes of a token no
    merge makes)."""
    h: i64 = FNV_OFFSET
    i: i64 = start
    while i < end:
        h = ((h ^ data[i]) * FNV_PRIME) & M32
        i += 1
    return h


def sift_down(heap: vec[i64], i: i64, size: i64) -> None:
    x = heap[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= x:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = x


def heap_push(heap: vec[i64], size: i64, x: i64) -> tuple[vec[i64], i64]:
    if size < len(heap):
        heap[size] = x
    else:
        heap = append(heap, x)
    i = size
    size += 1
    while i > 0:
        parent = (i - 1) // 2
        if heap[parent] <= x:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = x
    return heap, size



def run_push(nodes: vec[i64], t: i64, count: i64) -> vec[i64]:
    """Add `count` tokens t after the last node of `nodes` (encode_runs), into it when it holds t."""
    if count <= 0:
        return nodes
    m: i64 = len(nodes)
    if m > 0 and (nodes[m - 1] >> 32) == t:
        nodes[m - 1] += count
        return nodes
    return append(nodes, (t << 32) | count)


def note_miss(misses: vec[i64], n: i64) -> None:
    """Every table and cache missed a chunk of n bytes: raise its length's score, and past
    BYPASS_ON start skipping the lookups for that length (Encoder.encode_span)."""
    score: i64 = misses[n] + MISS_STEP
    misses[n] = score if score < BYPASS_ON else BYPASS_ON + BYPASS_CHUNKS


def filter_bits(fh: i64) -> i64:
    """The two bits of a pair in its word of the pair filter, from bits 0-11 of its filter hash
    (bits 61 down to 0: FILTER_TOP >> s, as a literal 1 << s would be a C int in mypyc's C)."""
    return (FILTER_TOP >> (((fh & 63) * 62) >> 6)) | (FILTER_TOP >> ((((fh >> 6) & 63) * 62) >> 6))


def bucket_link(bn: vec[i32], bp: vec[i32], node: i64, sentinel: i64) -> None:
    """File a node last in the bucket whose sentinel is `sentinel` (encode_huge)."""
    tail: i64 = i64(bp[sentinel])
    bn[tail] = i32(node)
    bp[node] = i32(tail)
    bn[node] = i32(sentinel)
    bp[sentinel] = i32(node)


def bucket_unlink(bn: vec[i32], bp: vec[i32], p: i64) -> i64:
    """Take position p out of its bucket, if it is in one; returns the change in entries (0 or 1)."""
    pv: i64 = i64(bp[p])
    if pv == -1:
        return 0
    nx: i64 = i64(bn[p])
    bn[pv] = i32(nx)
    bp[nx] = i32(pv)
    bp[p] = -1
    return 1


# ---- the encoder's tables in tokenizer.bin (vocabfile.py's ENCT section) ----
#
# What a file keeps is what is slow to rebuild: whether each token of 2 to LONG_WORD_MAX bytes is
# what BPE makes of its own bytes (one short_bpe a token: 0.24 s of o200k's load).  The hash
# tables themselves are rebuilt from the merges at each load (docs/formats.md, "Trust").

#: The meaning of export_tables' bytes: bump it when they change, and files with another layout
#: are read without their tables (built again from the merges), never misread.
TABLES_LAYOUT: Final = 1
SPELLS_UNKNOWN: Final = 0
SPELLS_ITSELF: Final = 1
SPELLS_NOT: Final = 2


def tables_size(n_merges: i64) -> i64:
    """The size of export_tables' bytes for n_merges merges: one bit a merge."""
    return (n_merges + 7) >> 3


def export_tables(enc: Encoder) -> bytes:
    """Layout 1: bit k & 7 of byte k >> 3 is set when BPE of merge k's bytes gives its token
    alone (spells_itself); clear for tokens longer than LONG_WORD_MAX bytes, which no table
    holds."""
    return pack_spells(enc.spells, SPELLS_ITSELF)


def tables_from_ranks(spelled: list[bytes], unsure: vec[u8]) -> bytes:
    """export_tables of an encoder of a rank file's merges, as far as the loader has shown it
    (mnemo/ranks.py, merges_of_ranks): merge k's token (bytes spelled[256 + k]) is what BPE makes
    of its bytes unless unsure[k].  Where unsure[k] is 0, every step of tiktoken's merge of the
    token's bytes glued a token through that token's own merge: the pairs mnemo's BPE may glue
    (merges) are among the pairs tiktoken may (tokens), in the same order (ids follow ranks), so
    when tiktoken's lowest is a merge it is mnemo's lowest too, step by step, down to the
    token's own merge.  Where unsure[k] is set, the answer is left unknown (a second block of
    bits after the first, set for those: import_spells), and the encoder runs that token's BPE
    when it fills its tables.  Tokens longer than LONG_WORD_MAX bytes: no table holds them."""
    n: i64 = len(unsure)
    spells: vec[u8] = vec[u8]([SPELLS_NOT] * n)
    unknown: i64 = 0
    k: i64 = 0
    while k < n:
        if len(spelled[256 + k]) <= LONG_WORD_MAX:
            if unsure[k] != 0:
                spells[k] = SPELLS_UNKNOWN
                unknown += 1
            else:
                spells[k] = SPELLS_ITSELF
        k += 1
    known = pack_spells(spells, SPELLS_ITSELF)
    if unknown == 0:
        return known
    return known + pack_spells(spells, SPELLS_UNKNOWN)


def pack_spells(spells: vec[u8], value: i64) -> bytes:
    """One bit a merge, set where spells[k] is `value` (SPELLS_ITSELF: layout 1 of the tables)."""
    n: i64 = len(spells)
    out = BytesWriter()
    byte: i64 = 0
    k: i64 = 0
    while k < n:
        if i64(spells[k]) == value:
            byte |= 1 << (k & 7)
        if k & 7 == 7:
            out.append(byte)
            byte = 0
        k += 1
    if n & 7:
        out.append(byte)
    return out.getvalue()


def import_spells(tables: bytes, n: i64) -> vec[u8]:
    """Encoder.spells from export_tables' bytes: every answer known; all unknown when `tables`
    is empty or of another size.  Twice tables_size(n) bytes (tables_from_ranks): the second
    half's bit k set leaves merge k unknown."""
    spells: vec[u8] = vec[u8]([SPELLS_UNKNOWN] * n)
    size: i64 = tables_size(n)
    if n == 0 or (len(tables) != size and len(tables) != 2 * size):
        return spells
    partial: bool = len(tables) == 2 * size
    k: i64 = 0
    while k < n:
        unknown: bool = partial and (i64(tables[size + (k >> 3)]) >> (k & 7)) & 1 != 0
        if not unknown:  # (unknown: the encoder finds the answer by a BPE)
            if (i64(tables[k >> 3]) >> (k & 7)) & 1:
                spells[k] = SPELLS_ITSELF
            else:
                spells[k] = SPELLS_NOT
        k += 1
    return spells
