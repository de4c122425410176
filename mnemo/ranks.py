"""tiktoken's rank files, compiled: the lines of a `.tiktoken` file, and the merge behind each token.

mnemo/formats/tiktoken.py is the policy around this module (presets, checksums, errors), and its
Python `parse_tiktoken` and `_split_by_ranks` are the twins these functions are tested against.
The Python loop (a `_split_by_ranks` per token, with a bytes slice and a dict lookup per
candidate pair) loaded o200k_base many times slower than tiktoken builds its Encoding
(docs/speed.md, "Loading a vocabulary").

The fast path never words an error: on anything but the plain case (a line that is not
`BASE64 RANK`, a repeated token or rank, a gap, a missing byte) it returns None and the Python
path runs on the same input and raises the error it always raised, with its line number.  A
ranked vocabulary (Llama 3's: tokens no merge makes, parts ranked after their token) is a plain
case: merges_of_ranks builds it as vocab.from_ranks does.

Finding the merge behind token t is tiktoken's own merge of t's bytes (vocab.ranked_pairs): repeatedly
glue the adjacent pair whose concatenation has the lowest rank, the leftmost of equals; when it
ends in two parts, they are t's merge, else t is whole.  The concatenations looked up are
substrings of t, so each is found by its polynomial hash (prefix hashes of t: O(1) a lookup) in
an open-addressing table of every token, and confirmed byte by byte: no bytes object is made per
lookup.  Tokens under LONG_TOKEN bytes use an array of pair ranks (a scan per step); longer ones
a binary heap of (rank, position) with stale entries skipped, as `_split_by_ranks` does, so a
49,152-byte token stays O(n log n).

A file that lists every pair of tokens that spells each token (a tokenizer.json converted from
ranks) needs no such merge for most tokens: `PairSplits` picks each token's pair among the
listed ones by a walk down the two parts' own merges, and merges the bytes of the few it cannot
settle that way (its docstring; tokenizer_json.converted_vocab feeds it), over the ranks of
their substrings (`SubstringRanks`) instead of a table of every token when the caller has them.
"""

from __future__ import annotations

from typing import Final, cast

from librt.strings import BytesWriter, write_i32_le
from librt.vecs import append, vec
from mypy_extensions import i32, i64, u8

from mnemo.encode_chunk import heap_push, same_bytes, sift_down, tables_from_ranks
from mnemo.kernels import pair_list, untrack_atoms


#: Base64 digit values; 64 for '=', 255 for every byte no base64 text holds.
B64: Final = bytes(
    [
        (c - 65 if 65 <= c <= 90 else c - 71 if 97 <= c <= 122 else c + 4 if 48 <= c <= 57 else 62 if c == 43 else 63 if c == 47 else 64 if c == 61 else 255)
        for c in range(256)
    ]
)
MAX_RANK_DIGITS: Final = 18
#: Tokens shorter than this are merged with an array of pair ranks; longer ones with a heap.
LONG_TOKEN: Final = 64
#: Ranks and positions in a token are packed 21 bits each in heap keys: a file with more ranks,
#: or a token of more bytes, goes to the Python path.
ID_BITS: Final = 21
IMPROPER: Final = 1 << 50  # a flag beside the two 21-bit ranks of a split's result
FIELD: Final = 1 << ID_BITS
M21: Final = FIELD - 1
NONE: Final = -1
HASH_MUL: Final = 0x100000001B3  # FNV's 64-bit prime, odd: a polynomial base for the prefix hashes
#: Hashes are kept to 62 bits, so that an interpreted build (Python's unbounded ints) computes
#: the same values as the compiled one (i64 arithmetic wraps); a larger Final int would be boxed.
M62: Final = (1 << 62) - 1
#: Tokens of at most this many bytes are kept in their table entry (7 bytes and the length).
SHORT: Final = 7
#: Tokens of 3 to this many bytes are kept in a table keyed by their bytes (small_key: 40 bits
#: of bytes, 2 of length, beside a 21-bit rank in one word).
SMALL: Final = 5
MIX: Final = 0x2545F4914F6CDD1D
M32: Final = 0xFFFFFFFF
#: The hash tables are filled to at most LOAD_NUM / LOAD_DEN.
LOAD_NUM: Final = 4
LOAD_DEN: Final = 5


class RankVocab:
    """A rank file's vocabulary in mnemo's numbering (vocab.from_ranks'): bytes are ids 0..255,
    the k-th token with a pair (by rank) is id 256 + k, made by merges[k], and the tokens without
    one (`whole`, by rank) follow; public[i] is the rank of id i (the id tiktoken gives it).
    `ranked`: the vocabulary needs tiktoken's rule (a whole token, or a merge of a part that
    comes after it; docs/formats.md, "Rank semantics").  `proper`: every step of tiktoken's
    merge of every token's bytes glued two parts into a token whose own merge they are -- then
    mnemo's BPE of each token's bytes takes the same steps and ends in the token itself;
    cl100k_base and o200k_base both are.  Only an ordinary vocabulary is ever called proper.
    `spelled[i]`: the bytes of id i, for i below 256 + len(merges) -- what
    encode_chunk.spell_merges would make of the merges, given to the encoder so that it spells
    none (the file's own bytes objects: o200k's 200,000 cost 28 ms to spell).  `tables`: the
    encoder's tables as far as the same argument shows them token by token
    (encode_chunk.tables_from_ranks): known for every token whose own merge had no improper
    step, in a ranked vocabulary too; the encoder runs the BPE of the others' bytes."""

    merges: list[tuple[int, int]]
    public: list[int]
    proper: bool
    whole: list[bytes]
    ranked: bool
    spelled: list[bytes]
    tables: bytes

    def __init__(
        self,
        merges: list[tuple[int, int]],
        public: list[int],
        proper: bool,
        whole: list[bytes],
        ranked: bool,
        spelled: list[bytes],
        tables: bytes,
    ) -> None:
        self.merges = merges
        self.public = public
        self.proper = proper
        self.whole = whole
        self.ranked = ranked
        self.spelled = spelled
        self.tables = tables


def parse_rank_lines(data: bytes) -> list[bytes] | None:
    """The tokens of a `.tiktoken` file by rank, or None when the file is not the plain case.

    Plain: every non-empty line (trailing CRs stripped) is base64 of a non-empty token, one
    space, and 1 to MAX_RANK_DIGITS ASCII digits; no rank repeats; the ranks are 0..n-1.  A token
    listed twice is left to merges_of_ranks, whose table of every token finds it.  The base64 accepted is what `base64.b64decode(validate=True)` accepts and decodes
    to the same bytes (a multiple of 4 digits, at most two '=' at the end)."""
    n: i64 = len(data)
    # append(u8(...)): mypyc's native BytesWriter.append takes a u8; given an int it calls the
    # method by name, which took half of the parse (o200k: 42 ms against 20)
    blob = BytesWriter()
    starts: vec[i64] = vec[i64]()
    line_ranks: vec[i64] = vec[i64]()
    pos: i64 = 0
    while pos < n:
        end: i64 = pos
        while end < n and data[end] != 10:
            end += 1
        stop: i64 = end
        while stop > pos and data[stop - 1] == 13:
            stop -= 1
        if stop > pos:
            space: i64 = pos
            while space < stop and data[space] != 32:
                space += 1
            size: i64 = space - pos
            if space == stop or size == 0 or size & 3 != 0:
                return None
            starts = append(starts, len(blob))
            q: i64 = pos
            while q < space:
                a: i64 = i64(B64[data[q]])
                b: i64 = i64(B64[data[q + 1]])
                c: i64 = i64(B64[data[q + 2]])
                d: i64 = i64(B64[data[q + 3]])
                if a > 63 or b > 63:
                    return None
                blob.append(u8((a << 2) | (b >> 4)))
                if c == 64:
                    if d != 64 or q + 4 != space:
                        return None
                elif c > 63:
                    return None
                else:
                    blob.append(u8(((b & 15) << 4) | (c >> 2)))
                    if d == 64:
                        if q + 4 != space:
                            return None
                    elif d > 63:
                        return None
                    else:
                        blob.append(u8(((c & 3) << 6) | d))
                q += 4
            digits: i64 = stop - space - 1
            if digits < 1 or digits > MAX_RANK_DIGITS:
                return None
            rank: i64 = 0
            q = space + 1
            while q < stop:
                digit: i64 = i64(data[q]) - 48
                if digit < 0 or digit > 9:
                    return None
                rank = rank * 10 + digit
                q += 1
            line_ranks = append(line_ranks, rank)
        pos = end + 1
    count: i64 = len(line_ranks)
    if count == 0 or count >= FIELD:
        return None
    starts = append(starts, len(blob))
    raw = blob.getvalue()
    tokens: list[bytes] = [b""] * count
    seen: vec[i64] = vec[i64]([0] * count)
    j: i64 = 0
    while j < count:
        r: i64 = line_ranks[j]
        if r >= count or seen[r] != 0:
            return None  # a rank repeated, or one past the count: a gap somewhere (Python names it)
        seen[r] = 1
        tokens[r] = raw[starts[j] : starts[j + 1]]
        j += 1
    return tokens


class TokenTable:
    """Every token, for finding the rank of a substring of a token without making a bytes
    object, in three tables by length: the two-byte tokens in a direct table of 65,536 ranks
    (the first step of every token); tokens of 3 to SMALL bytes in `small`, an open-addressing
    table of one word per entry, the bytes themselves as the key (small_key << 21 | rank); every
    other token in `entries`, by the polynomial hash of its bytes: 2-word entries [hash tag << 21
    | rank, the bytes], the bytes word holding a token of up to SHORT bytes itself (bytes << 8 |
    length), a longer one as offset << 21 | length into `blob` (every token, back to back), where
    they are compared.  Most substrings looked up are tokens (87 % of those of 3 or more bytes,
    the first 30,000 of cl100k), so no filter stands in front.

    Why the tables are small (docs/speed.md, "Loading a vocabulary"): a lookup is a random load,
    and on the VM measured a random load in 8 MB took about 10x one in 4 MB.  Three bytes of
    four looked up are 3 to 5 bytes long: one word an entry keeps them in under 1 MB for
    o200k_base; the tables are filled to at most LOAD_NUM / LOAD_DEN, of any size (a slot is
    the mixed hash scaled to the size, not masked to a power of two)."""

    blob: bytes
    offsets: vec[i64]
    entries: vec[i64]
    size: i64
    powers: vec[i64]
    pairs: vec[i32]
    small: vec[i64]
    small_size: i64
    sub: vec[i64]  # use_substrings: the ranks of one token's substrings, or empty
    span: i64

    def __init__(self, tokens: list[bytes]) -> None:
        count: i64 = len(tokens)
        self.sub = vec[i64]()
        self.span = 0
        self.pairs = vec[i32]([-1] * 65536)
        self.blob = b"".join(tokens)
        offsets: vec[i64] = vec[i64]([0] * (count + 1))
        longest: i64 = 1
        smalls: i64 = 0
        r: i64 = 0
        for t in tokens:
            size: i64 = len(t)
            offsets[r + 1] = offsets[r] + size
            if size > longest:
                longest = size
            if 3 <= size and size <= SMALL:
                smalls += 1
            r += 1
        self.offsets = offsets
        self.size = (count - smalls) * LOAD_DEN // LOAD_NUM + 1024
        self.entries = vec[i64]([NONE] * (2 * self.size))
        self.small_size = smalls * LOAD_DEN // LOAD_NUM + 1024
        self.small = vec[i64]([NONE] * self.small_size)
        powers: vec[i64] = vec[i64]([1] * (longest + 1))
        i: i64 = 1
        while i <= longest:
            powers[i] = (powers[i - 1] * HASH_MUL) & M62
            i += 1
        self.powers = powers

    def insert(self, rank: i64) -> bool:
        """Add token `rank`; False when an equal token is there already."""
        blob = self.blob
        offset: i64 = self.offsets[rank]
        size: i64 = self.offsets[rank + 1] - offset
        if size == 2:
            at: i64 = (i64(blob[offset]) << 8) | i64(blob[offset + 1])
            if self.pairs[at] != NONE:
                return False
            self.pairs[at] = i32(rank)
            return True
        if 3 <= size and size <= SMALL:
            key: i64 = small_key(blob, offset, size)
            small = self.small
            slot: i64 = self.small_slot(key)
            e: i64 = small[slot]
            while e != NONE:
                if e >> ID_BITS == key:
                    return False
                slot = slot + 1 if slot + 1 < self.small_size else 0
                e = small[slot]
            small[slot] = (key << ID_BITS) | rank
            return True
        h: i64 = 0
        i: i64 = 0
        while i < size:
            h = (h * HASH_MUL + i64(blob[offset + i]) + 1) & M62
            i += 1
        if self.find_hashed(blob, offset, size, h) != NONE:
            return False
        entries = self.entries
        slot = self.slot(h)
        while entries[slot << 1] != NONE:
            slot += 1
            if slot == self.size:
                slot = 0
        entries[slot << 1] = ((h >> ID_BITS) << ID_BITS) | rank
        entries[(slot << 1) + 1] = packed(blob, offset, size) if size <= SHORT else (offset << ID_BITS) | size
        return True

    def slot(self, h: i64) -> i64:
        """The home slot in `entries` of hash h: 32 mixed bits scaled to the size."""
        return (((((h ^ (h >> 29)) * MIX) >> 32) & M32) * self.size) >> 32

    def small_slot(self, key: i64) -> i64:
        """The home slot in `small` of a small_key."""
        return ((((key * MIX) >> 32) & M32) * self.small_size) >> 32

    def use_substrings(self, sub: vec[i64], span: i64) -> None:
        """Answer `find` from sub[start * span + end] instead of the tables (SubstringRanks.fill
        wrote it for the one token merged next); span 0: from the tables again."""
        self.sub = sub
        self.span = span

    def find(self, raw: bytes, prefix: vec[i64], start: i64, end: i64) -> i64:
        """The rank of raw[start:end] (prefix: the prefix hashes of raw), or NONE."""
        if self.span > 0:
            return self.sub[start * self.span + end]
        size: i64 = end - start
        if size == 2:
            return i64(self.pairs[(i64(raw[start]) << 8) | i64(raw[start + 1])])
        if size <= SMALL:
            return self.find_small(raw, start, size)
        h: i64 = (prefix[end] - prefix[start] * self.powers[size]) & M62
        return self.find_hashed(raw, start, size, h)

    def find_small(self, raw: bytes, start: i64, size: i64) -> i64:
        """The rank of the token raw[start:start + size] (3 to SMALL bytes), or NONE."""
        key: i64 = small_key(raw, start, size)
        small = self.small
        slot: i64 = self.small_slot(key)
        while True:
            e: i64 = small[slot]
            if e == NONE:
                return NONE
            if e >> ID_BITS == key:
                return e & M21
            slot += 1
            if slot == self.small_size:
                slot = 0

    def find_hashed(self, raw: bytes, start: i64, size: i64, h: i64) -> i64:
        """The rank of the token raw[start:start + size] (1 byte, or more than SMALL) whose hash
        is h, or NONE."""
        entries = self.entries
        tag: i64 = h >> ID_BITS
        short: i64 = packed(raw, start, size) if size <= SHORT else NONE
        slot: i64 = self.slot(h)
        while True:
            e: i64 = entries[slot << 1]
            if e == NONE:
                return NONE
            if e >> ID_BITS == tag:
                where: i64 = entries[(slot << 1) + 1]
                if size <= SHORT:
                    if where == short:
                        return e & M21
                elif where & M21 == size and same_bytes(self.blob, where >> ID_BITS, raw, start, size):
                    return e & M21
            slot += 1
            if slot == self.size:
                slot = 0


def small_key(data: bytes, start: i64, size: i64) -> i64:
    """data[start:start + size] (3 to SMALL bytes) as a key of 42 bits: the bytes
    little-endian << 2 | size - 3 (below 2**63 with a rank beside it, for an interpreted build)."""
    word: i64 = 0
    i: i64 = size - 1
    while i >= 0:
        word = (word << 8) | i64(data[start + i])
        i -= 1
    return (word << 2) | (size - 3)


def packed(data: bytes, start: i64, size: i64) -> i64:
    """data[start:start + size] (size <= SHORT) as one word: the bytes little-endian << 8 | size."""
    word: i64 = 0
    i: i64 = size - 1
    while i >= 0:
        word = (word << 8) | i64(data[start + i])
        i -= 1
    return (word << 8) | size


def merges_of_ranks(tokens: list[bytes]) -> RankVocab | None:
    """The merges behind tokens given by rank (tokens[r] has rank r), in mnemo's numbering --
    vocab.ranked_pairs' rule: the last pair tiktoken's merge of a token's bytes glues, every rank
    allowed, or none (a whole token) when that merge never comes down to two parts -- or None
    when they are not the plain case: a repeated or empty token, or a byte with no token.

    An ordinary vocabulary (each token's pair of lower rank) comes out as it did when only
    ranks below the token's own were allowed: while more than two parts are left, the merge of
    the token's bytes always had a pair below its rank to glue, which the lowest of all pairs
    then is too."""
    count: i64 = len(tokens)
    byte_rank = byte_ranks(tokens)
    if len(byte_rank) == 0:
        return None
    table = TokenTable(tokens)
    r: i64 = 0
    while r < count:
        if not table.insert(r):
            return None
        r += 1
    merger = Merger(table, byte_rank)
    splits: vec[i64] = vec[i64]([NONE] * count)  # each token's pair, as split_short gives it
    improper: vec[u8] = vec[u8]([0] * count)  # a step of the token's merge was improper
    r = 0
    while r < count:
        if len(tokens[r]) > 1:
            split = merger.split(tokens[r], r)
            if split != NONE:
                if split & IMPROPER:
                    improper[r] = 1
                splits[r] = split & ~IMPROPER
        r += 1
    return rank_vocab(tokens, byte_rank, splits, improper)


def byte_ranks(tokens: list[bytes]) -> vec[i64]:
    """The rank of each byte's token, or an empty vec when `tokens` are not merges_of_ranks'
    plain case as far as each token alone shows it: too many, an empty or too long one, or a
    byte with no token (repeats are the TokenTable's to find)."""
    count: i64 = len(tokens)
    none = vec[i64]()
    if count >= FIELD:
        return none
    byte_rank: vec[i64] = vec[i64]([NONE] * 256)
    r: i64 = 0
    while r < count:
        raw = tokens[r]
        size: i64 = len(raw)
        if size == 0 or size >= FIELD:
            return none
        if size == 1:  # every byte is an id before any merge, whatever its rank
            if byte_rank[raw[0]] != NONE:
                return none
            byte_rank[raw[0]] = r
        r += 1
    b: i64 = 0
    while b < 256:
        if byte_rank[b] == NONE:
            return none
        b += 1
    return byte_rank


def rank_vocab(tokens: list[bytes], byte_rank: vec[i64], splits: vec[i64], improper: vec[u8]) -> RankVocab | None:
    """merges_of_ranks' vocabulary from each token's pair (splits[r]: the ranks of its two parts,
    left << 21 | right, or NONE: a byte, or a whole token) and whether a step of its merge was
    improper: ids are the bytes, the tokens with a pair by rank, then the whole ones; merges
    name their parts' ids."""
    count: i64 = len(tokens)
    own: vec[i64] = vec[i64]([NONE] * count)  # mnemo's id of each rank
    proper: bool = True
    b: i64 = 0
    while b < 256:
        own[byte_rank[b]] = b
        b += 1
    # One int object per value below `count`, which the ids (`public`) and the merges' parts
    # share (typed `object`, so that mypyc keeps each object instead of unboxing and boxing it
    # again): new ints for every merge's parts and every id were 12 MB of fresh memory for the
    # Llama-3-like ranks.  Lists of atoms that the cyclic GC need not walk, untracked before
    # they grow (kernels.untrack_atoms; pair_list makes the merges so).
    ints: list[object] = [k for k in range(count)]
    untrack_atoms(ints)
    public: list[object] = [ints[byte_rank[b]] for b in range(256)]
    spelled: list[bytes] = [tokens[byte_rank[b]] for b in range(256)]
    untrack_atoms(public)
    untrack_atoms(spelled)
    whole: list[bytes] = []
    whole_ranks = vec[i64]()
    merged = vec[i64]()  # the rank of each merge's token
    r: i64 = 0
    while r < count:
        if len(tokens[r]) > 1:
            if improper[r] != 0:
                proper = False
            if splits[r] == NONE:
                whole.append(tokens[r])
                whole_ranks = append(whole_ranks, r)
            else:
                own[r] = 256 + len(merged)
                merged = append(merged, r)
                public.append(ints[r])
                spelled.append(tokens[r])
        r += 1
    ranked: bool = len(whole) > 0
    unsure: vec[u8] = vec[u8]()  # unsure[k]: merge k's token had an improper step
    pairs = BytesWriter()  # the merges as int32 pairs, made into tuples at once by pair_list
    k: i64 = 0
    while k < len(merged):
        unsure = append(unsure, improper[merged[k]])
        split = splits[merged[k]]
        left: i64 = own[(split >> ID_BITS) & M21]
        right: i64 = own[split & M21]
        if left == NONE or right == NONE:
            return None  # cannot be: a part that is glued has a pair of its own (vocab.ranked_pairs)
        if left >= 256 + k or right >= 256 + k:
            ranked = True
        write_i32_le(pairs, i32(left))
        write_i32_le(pairs, i32(right))
        k += 1
    for t in whole_ranks:
        public.append(ints[t])
    merges: list[tuple[int, int]] = pair_list(pairs.getvalue(), cast(list[int], ints))
    return RankVocab(
        merges, cast(list[int], public), proper and not ranked, whole, ranked, spelled, tables_from_ranks(spelled, unsure)
    )


class Merger:
    """tiktoken's merge of one token's bytes at a time (split_short, split_long) over a
    TokenTable of every token, with the work arrays they share."""

    table: TokenTable
    byte_rank: vec[i64]
    prefix: vec[i64]
    starts: vec[i64]
    pair_ranks: vec[i64]
    part_ranks: vec[i64]

    def __init__(self, table: TokenTable, byte_rank: vec[i64]) -> None:
        self.table = table
        self.byte_rank = byte_rank
        # a table of one token's substrings has no powers (TokenTable([])): its tokens are short
        self.prefix = vec[i64]([0] * max(len(table.powers), LONG_TOKEN))
        self.starts = vec[i64]([0] * LONG_TOKEN)
        self.pair_ranks = vec[i64]([0] * LONG_TOKEN)
        self.part_ranks = vec[i64]([0] * LONG_TOKEN)

    def split(self, raw: bytes, rank: i64) -> i64:
        """split_short's (or split_long's) answer for token `rank` of bytes raw (2 bytes or more)."""
        prefix = self.prefix
        size: i64 = len(raw)
        i: i64 = 0
        while i < size:
            prefix[i + 1] = (prefix[i] * HASH_MUL + i64(raw[i]) + 1) & M62
            i += 1
        if size < LONG_TOKEN:
            return split_short(self.table, raw, prefix, self.byte_rank, rank, self.starts, self.pair_ranks, self.part_ranks)
        return split_long(self.table, raw, prefix, self.byte_rank, rank)


class SubstringRanks:
    """The ranks of the substrings of one token, for PairSplits' merges of the few tokens no
    offered pair settles (253 of a Llama-3-like file's 128,000), where building a TokenTable of
    every token first cost more than all of their merges (7 % of loading that file,
    docs/speed.md).  `fill` writes the rank of raw[i:j] at sub[i * span + j] for every
    0 <= i < j <= len(raw) with j - i >= 2, NONE where it is no token.  This class looks them up
    in a dict of `tokens` (the tests' reference); tokenizer_json.KeyRanks in the table of the
    file's keys that it has already built."""

    tokens: list[bytes]
    rank_of: dict[bytes, int] | None

    def __init__(self, tokens: list[bytes]) -> None:
        self.tokens = tokens
        self.rank_of = None

    def fill(self, rank: i64, raw: bytes, sub: vec[i64], span: i64) -> bool:
        """False when raw is not token `rank` as this lookup knows it (PairSplits then fails)."""
        rank_of = self.rank_of
        if rank_of is None:
            rank_of = {t: r for r, t in enumerate(self.tokens)}
            self.rank_of = rank_of
        n: i64 = len(raw)
        i: i64 = 0
        while i < n:
            j: i64 = i + 2
            while j <= n:
                sub[i * span + j] = rank_of.get(raw[i:j], NONE)
                j += 1
            i += 1
        return rank_of.get(raw, NONE) == rank


#: PairSplits' filter of pairs: 2**20 bits, from the top 20 of a pair's 32-bit slot hash.
SEEN_BYTES: Final = 1 << 17
SEEN_SHIFT: Final = 12
#: PairSplits' kinds of rank: a token no candidate has settled yet, a byte, a clean token.
OPEN: Final = 0
BYTE: Final = 1
CLEAN: Final = 2


class PairSplits:
    """merges_of_ranks' splits found from candidate pairs instead of each token's merge: for a
    file that lists, by its token's rank, every pair of tokens that spells a token (a
    tokenizer.json converted from ranks).  The caller offers each listed pair, settles every
    rank in order, and takes `vocab()`: merges_of_ranks' RankVocab, equal field for field.

    A candidate pair (a, b) of token T is T's pair exactly when tiktoken's merge of T's bytes
    comes down to a and b, i.e. when no step glues across the place between them first.  While
    a's bytes merge, the part that ends at that place runs up a's right spine (a's right part,
    its right part, ... its last byte), each node living from its own rank (a byte: from the
    start) to its parent's; b's part that starts there runs up b's left spine.  Given that each
    step glues the lowest pair, hence a token of a higher rank than the last step's when every
    part is clean (below), a step glues across exactly when some two nodes x, y that live at
    the same time make a token u = (x, y) -- a token whose own pair that is: a step that makes a
    token glues its own merge (split_short's docstring) -- of a rank below x's end and at most
    y's end (the leftmost of equal pairs goes first: x's parent is to the left, y's to the
    right).  `compatible` walks the two spines from the top down, always to the child of the
    node born last, one lookup of the pair table (every settled token's pair) a step.

    A token is clean when its pair was found that way with both parts bytes or clean tokens of
    lower ranks: then its merge takes no improper step (merges_of_ranks' flag) and each step
    glues a token of a higher rank than the step before.  The first such candidate is the one
    (the merge of T's bytes ends one way: no other can pass).  A token with none is merged as
    merges_of_ranks does (`Merger`, the TokenTable built on the first need), and is not clean;
    its pair must then be among those offered (else `vocab` is None).  cl100k_base and o200k_base have every token
    clean; the tests' Llama-3-like ranks all but 253 of 128,000 (docs/speed.md).  With
    `substrings`, a short token is merged over its substrings' ranks that it gives
    (`_merged`), and no table of every token is built."""

    tokens: list[bytes]
    byte_rank: vec[i64]
    kind: vec[u8]
    splits: vec[i64]
    improper: vec[u8]
    keys: vec[i64]  # the pair table: ((left << 21 | right) << 21 | token), or NONE
    mask: i64
    seen: vec[u8]  # a bit per hash of the pairs in `keys` (128 KB): most pairs looked up are none
    merger: Merger | None  # over a TokenTable of every token
    substrings: SubstringRanks | None
    sub_merger: Merger | None  # over the substrings of one token at a time
    current: i64  # the token whose candidates are being offered
    found: i64  # its pair once a clean candidate passed (left << 21 | right), or NONE
    offered: vec[i64]  # every pair offered for it: the first n_offered (at most a split per byte)
    n_offered: i64
    settled: i64  # every rank below this is settled
    failed: bool  # a merged token's pair was not among its offers, or a token repeats

    def __init__(self, tokens: list[bytes], byte_rank: vec[i64], substrings: SubstringRanks | None = None) -> None:
        """byte_rank: byte_ranks(tokens), not empty.  substrings: where the ranks of a token's
        substrings are found when its bytes are merged; None: a TokenTable of every token (its
        insert also shows that no token repeats, which `substrings` must guarantee)."""
        count: i64 = len(tokens)
        self.tokens = tokens
        self.substrings = substrings
        self.sub_merger = None
        self.byte_rank = byte_rank
        self.kind = vec[u8]([OPEN] * count)
        b: i64 = 0
        while b < 256:
            self.kind[byte_rank[b]] = BYTE
            b += 1
        self.splits = vec[i64]([NONE] * count)
        self.improper = vec[u8]([0] * count)
        size: i64 = 1024
        while size < 2 * count:
            size *= 2
        self.keys = vec[i64]([NONE] * size)
        self.mask = size - 1
        self.seen = vec[u8]([0] * SEEN_BYTES)
        self.merger = None
        self.current = NONE
        self.found = NONE
        longest: i64 = 1
        for raw in tokens:
            if len(raw) > longest:
                longest = len(raw)
        self.offered = vec[i64]([0] * longest)
        self.n_offered = 0
        self.settled = 0
        self.failed = False

    def offer(self, token: i64, left: i64, right: i64) -> bool:
        """A listed pair (left, right) of token `token` (ranks; token at least the last one
        offered, every rank below it settled first); False when the offers are out of order."""
        if token != self.current:
            if token < self.current or token < self.settled:
                return False
            self.current = token
            self.found = NONE
            self.n_offered = 0
        pair: i64 = (left << ID_BITS) | right
        if self.n_offered == len(self.offered):
            return False  # more pairs than places to split the token: one is listed twice
        self.offered[self.n_offered] = pair
        self.n_offered += 1
        if self.found == NONE and self._part(left) and self._part(right) and self.compatible(left, right):
            self.found = pair  # the one: the merge of the token's bytes ends one way
        return True

    def _part(self, part: i64) -> bool:
        """Whether `part` may be a clean token's part: a byte, or a clean token (ranked below
        the token: one ranked after it is not settled yet)."""
        k: i64 = i64(self.kind[part])
        return k == BYTE or k == CLEAN

    def settle_below(self, stop: i64) -> None:
        """Settle every rank below `stop` (each token's pair from its offers, or its merge)."""
        r: i64 = self.settled
        while r < stop:
            if self.kind[r] == OPEN:
                self._settle(r)
            r += 1
        if stop > self.settled:
            self.settled = stop

    def _settle(self, r: i64) -> None:
        if r == self.current and self.found != NONE:
            self.splits[r] = self.found
            self.kind[r] = CLEAN
            self._remember(self.found, r)
            return
        split: i64 = self._merged(r)
        if split == NONE:
            return
        if split & IMPROPER:
            self.improper[r] = 1
        split &= ~IMPROPER
        self.splits[r] = split
        self._remember(split, r)
        if r != self.current or not _among(split, self.offered, self.n_offered):
            self.failed = True

    def _merged(self, r: i64) -> i64:
        """Merger.split of token r: over its substrings' ranks from `substrings` when there is
        one and the token is short (a table of one token's substrings), else over a TokenTable
        of every token, built on the first need."""
        raw = self.tokens[r]
        found = self.substrings
        if found is not None and len(raw) < LONG_TOKEN:
            merger = self.sub_merger
            if merger is None:
                merger = Merger(TokenTable([]), self.byte_rank)
                self.sub_merger = merger
            span: i64 = len(raw) + 1
            sub = vec[i64]([NONE] * (span * span))
            if not found.fill(r, raw, sub, span):
                self.failed = True
                return NONE
            merger.table.use_substrings(sub, span)
            return merger.split(raw, r)
        merger = self.merger
        if merger is None:
            table = TokenTable(self.tokens)
            k: i64 = 0
            while k < len(self.tokens):
                if not table.insert(k):
                    self.failed = True
                k += 1
            merger = Merger(table, self.byte_rank)
            self.merger = merger
        return merger.split(raw, r)

    def _remember(self, pair: i64, token: i64) -> None:
        keys = self.keys
        h: i64 = _pair_slot(pair)
        bit: i64 = h >> SEEN_SHIFT
        self.seen[bit >> 3] |= u8(1 << (bit & 7))
        at: i64 = h & self.mask
        while keys[at] != NONE:
            at = (at + 1) & self.mask
        keys[at] = (pair << ID_BITS) | token

    def made_by(self, left: i64, right: i64) -> i64:
        """The settled token whose pair is (left, right), or NONE."""
        pair: i64 = (left << ID_BITS) | right
        h: i64 = _pair_slot(pair)
        bit: i64 = h >> SEEN_SHIFT
        if (i64(self.seen[bit >> 3]) >> (bit & 7)) & 1 == 0:
            return NONE
        keys = self.keys
        at: i64 = h & self.mask
        while True:
            e: i64 = keys[at]
            if e == NONE:
                return NONE
            if e >> ID_BITS == pair:
                return e & M21
            at = (at + 1) & self.mask

    def compatible(self, a: i64, b: i64) -> bool:
        """Whether tiktoken's merge of a's and b's bytes together comes down to a and b (both
        bytes or clean tokens): the class docstring's walk down the two spines."""
        kind = self.kind
        splits = self.splits
        x: i64 = a
        y: i64 = b
        x_end: i64 = FIELD  # when x's parent glues it (a: never, before a and b are there)
        y_end: i64 = FIELD
        while True:
            x_byte: bool = kind[x] == BYTE
            y_byte: bool = kind[y] == BYTE
            if x_byte and y_byte:
                return True
            # down from the node born last (a byte: at the start; of two equal tokens, y's is
            # the right one, glued after x's)
            if y_byte or (not x_byte and x > y):
                x_end = x
                x = splits[x] & M21
            else:
                y_end = y
                y = (splits[y] >> ID_BITS) & M21
            u: i64 = self.made_by(x, y)
            if u != NONE and u < x_end and u <= y_end:
                return False

    def vocab(self) -> RankVocab | None:
        """merges_of_ranks' RankVocab, once every rank is settled; None when a token's pair was
        not offered, or they are not the plain case."""
        self.settle_below(len(self.tokens))
        if self.failed:
            return None
        return rank_vocab(self.tokens, self.byte_rank, self.splits, self.improper)


def _among(x: i64, xs: vec[i64], n: i64) -> bool:
    """Whether x is among xs[:n]."""
    i: i64 = 0
    while i < n:
        if xs[i] == x:
            return True
        i += 1
    return False


def _pair_slot(pair: i64) -> i64:
    """A slot of PairSplits' table for a pair (42 bits): mixed bits 32..63 of the product."""
    return ((pair * MIX) >> 32) & M32


def split_short(
    table: TokenTable,
    raw: bytes,
    prefix: vec[i64],
    byte_rank: vec[i64],
    rank: i64,
    starts: vec[i64],
    pair_ranks: vec[i64],
    part_ranks: vec[i64],
) -> i64:
    """tiktoken's merge of raw (fewer than LONG_TOKEN bytes, the token of rank `rank`), every
    rank allowed: the ranks of the two parts it ends in, as left << 21 | right, with IMPROPER set
    when a step glued two parts that are not the glued token's own merge, or NONE when it does
    not end in two parts that are tokens.  starts[i] is where part i starts, part_ranks[i] its
    rank; pair_ranks[i] the rank of parts i and i + 1 glued (NONE: no token).  Once two parts
    are left, their pair (raw itself) is not looked up.

    A step is improper exactly when it glues a token of a rank above `rank`, which
    merges_of_ranks has not split yet (it goes by rank).  A step that makes a token C of a lower
    rank glues C's own merge: C's bytes are a run of raw's that ends as one part, so no step
    glued across its ends; each step inside it glued the lowest pair of all, hence the lowest
    (and leftmost of equals) inside C -- the steps inside C are the merge of C's own bytes, whose
    last step made C from its own merge.  So no lookup of C's merge is needed (it cost a cache
    miss a step)."""
    n: i64 = len(raw)
    i: i64 = 0
    while i < n:
        starts[i] = i
        part_ranks[i] = byte_rank[raw[i]]
        i += 1
    i = 0
    while i < n - 1:
        pair_ranks[i] = table.find(raw, prefix, i, i + 2)
        i += 1
    parts: i64 = n
    improper: i64 = 0
    while parts > 2:
        best: i64 = NONE
        at: i64 = -1
        i = 0
        while i < parts - 1:
            pr: i64 = pair_ranks[i]
            if pr != NONE and (best == NONE or pr < best):
                best = pr
                at = i
            i += 1
        if at < 0:
            return NONE
        parts -= 1
        if best > rank:
            improper = IMPROPER
        part_ranks[at] = best
        i = at + 1
        while i < parts:
            starts[i] = starts[i + 1]
            part_ranks[i] = part_ranks[i + 1]
            pair_ranks[i] = pair_ranks[i + 1]
            i += 1
        if parts == 2:
            break  # the pair of the last two parts is the token itself: no lookup
        if at < parts - 1:
            end2: i64 = starts[at + 2] if at + 2 < parts else n
            pair_ranks[at] = table.find(raw, prefix, starts[at], end2)
        if at > 0:
            end: i64 = starts[at + 1] if at + 1 < parts else n
            pair_ranks[at - 1] = table.find(raw, prefix, starts[at - 1], end)
    if parts != 2 or part_ranks[0] == NONE or part_ranks[1] == NONE:
        return NONE
    return improper | (part_ranks[0] << ID_BITS) | part_ranks[1]


def split_long(table: TokenTable, raw: bytes, prefix: vec[i64], byte_rank: vec[i64], rank: i64) -> i64:
    """split_short for a token of any length: a linked list of parts (nxt[i]: where the part
    starting at i ends, ranks[i] its rank) and a binary min-heap of keys rank << 42 | start << 21
    | end of the right part, stale ones skipped when popped -- the algorithm of
    formats/tiktoken.py's `_split_by_ranks` (the leftmost of equal ranks first: the start is the
    next key field)."""
    n: i64 = len(raw)
    nxt: vec[i64] = vec[i64]([0] * n)
    prv: vec[i64] = vec[i64]([0] * n)
    alive: vec[i64] = vec[i64]([1] * n)
    ranks: vec[i64] = vec[i64]([0] * n)
    i: i64 = 0
    while i < n:
        nxt[i] = i + 1
        prv[i] = i - 1
        ranks[i] = byte_rank[raw[i]]
        i += 1
    heap: vec[i64] = vec[i64]()
    size: i64 = 0
    i = 0
    while i < n - 1:
        key: i64 = pair_key(table, raw, prefix, nxt, i)
        if key != NONE:
            heap, size = heap_push(heap, size, key)
        i += 1
    parts: i64 = n
    improper: i64 = 0
    while size > 0 and parts > 2:  # two parts left: their pair is the token itself
        top: i64 = heap[0]
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            sift_down(heap, 0, size)
        a: i64 = (top >> ID_BITS) & M21
        end: i64 = top & M21
        if alive[a] == 0:
            continue
        b: i64 = nxt[a]
        if b >= n or nxt[b] != end:
            continue  # stale: one of the two parts has grown since
        alive[b] = 0
        nxt[a] = end
        if top >> 42 > rank:
            improper = IMPROPER
        ranks[a] = top >> 42
        if end < n:
            prv[end] = a
        parts -= 1
        if parts == 2:
            break
        key = pair_key(table, raw, prefix, nxt, a)
        if key != NONE:
            heap, size = heap_push(heap, size, key)
        if prv[a] >= 0:
            key = pair_key(table, raw, prefix, nxt, prv[a])
            if key != NONE:
                heap, size = heap_push(heap, size, key)
    second: i64 = nxt[0]
    if parts != 2 or ranks[0] == NONE or ranks[second] == NONE:
        return NONE
    return improper | (ranks[0] << ID_BITS) | ranks[second]


def pair_key(table: TokenTable, raw: bytes, prefix: vec[i64], nxt: vec[i64], a: i64) -> i64:
    """The heap key of the pair of parts starting at a, or NONE when it has no right neighbour
    or is no token."""
    b: i64 = nxt[a]
    if b >= len(raw):
        return NONE
    end: i64 = nxt[b]
    rank: i64 = table.find(raw, prefix, a, end)
    if rank == NONE:
        return NONE
    return (rank << 42) | (a << ID_BITS) | end

