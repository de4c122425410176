"""Superword tokens (SuperBPE's second stage; docs/superword.md): the stage-2 rule, the
curriculum encoder and the counting of coarse chunks.  Compiled with mypyc.

The stage-2 rule works on stage 1's chunks: a coarse chunk is a maximal run of consecutive
stage-1 chunks in which each one may join the one before it.  What a chunk may do follows from
its characters alone (`chunk_kind`):

  HARD  it holds a line break (CR, LF), a number, only white space (or white space beyond one
        leading space), or two or more punctuation characters: a coarse chunk of its own;
  END   one sentence end (. ! ? and the CJK, Arabic and Devanagari ones) or a colon, with or
        without a leading space: joins the chunk before it, never the one after;
  JOIN  anything else -- letters after at most one other character, or one punctuation
        character -- joins both ways.

Encoding (SuperEncoder, an Encoder of the stage-1 merges that also holds the stage-2 ones): each
stage-1 chunk is encoded with the stage-1 merges (the ordinary encoder, its tables and caches),
then in each coarse chunk the stage-2 merges are applied to the concatenated tokens: the
lowest-numbered merge whose pair occurs, at every occurrence, left to right, until none applies
(docs/formats.md's rule over token ids).  A short coarse chunk keeps a rank per pair and rescans
them; a long one (>= LONG_COARSE tokens) a binary heap of (merge number, position) over a linked
list, O(n log n).  mnemo/reference_superword.py has the naive twins.
"""

from __future__ import annotations

import sys
from typing import Final

from librt.strings import BytesWriter, read_i32_le, read_i64_le, write_i32_le, write_i64_le
from librt.vecs import append, extend, vec
from mypy_extensions import i16, i32, i64

from mnemo import _unicode_tables
from mnemo.constants import MAX_PAIR_TOTAL
from mnemo.count import FILL_BLOCK, MASK32, META_BYTES, PackedCounts, WordCounter, packed_to_dict
from mnemo.count import filled16 as _filled16
from mnemo.count import filled32 as _filled32
from mnemo.count import filled64 as _filled64
from mnemo.encode_chunk import FILTER_MUL, NO_RANK, Encoder, emit, filter_bits, heap_push, sift_down
from mnemo.errors import ConfigError
from mnemo.pretokenize_bits import BITS_MIN, BitCursor
from mnemo.pretokenize_named import _char, chunk_end, pattern_id

#: The stage-2 rules a tokenizer can name (tokenizer.bin stores the index).
RULES: Final = ("superword",)
RULE_SUPERWORD: Final[i64] = 0

KIND_HARD: Final[i64] = 0
KIND_END: Final[i64] = 1
KIND_JOIN: Final[i64] = 2

# pretokenize's character classes (_char packs class | length << 3)
_OTHER: Final[i64] = 0
_APOS: Final[i64] = 1
_LETTER: Final[i64] = 2
_NUMBER: Final[i64] = 3
_SPACE: Final[i64] = 4
_NEWLINE: Final[i64] = 6

_ASCII: Final[bytes] = _unicode_tables.ASCII_CLASS

#: Coarse chunks of at least this many stage-1 tokens take the heap path.
LONG_COARSE: Final[i64] = 48
ID_BITS: Final[i64] = 21
HASH_MUL: Final[i64] = 0x2545F4914F6CDD1D
HASH_SHIFT: Final[i64] = 40
PIECE_MUL: Final[i64] = 0x3C6EF372FE94F82B
PIECE_FIELDS: Final[i64] = 4
#: Stage2Words' count-min sketch: 2 ** SKETCH_BITS i16 counters (2 MB), saturating at
#: SKETCH_MAX, in lines of 2 ** LINE_BITS (64 bytes); a pair counts in three counters of one
#: line (100 MB of English: 2 ** 19 left 1.3 % of the occurrences of pairs below theta uncut,
#: 2 ** 20 0.28 %, 2 ** 21 0.08 %: docs/superword.md).
SKETCH_BITS: Final[i64] = 20
SKETCH_MAX: Final[i64] = 32767
LINE_BITS: Final[i64] = 5
LINE_MASK: Final[i64] = 31
#: Stage2Words.add_batch's pairs at a time.
SKETCH_BATCH: Final[i64] = 16
#: a token id's bits in Stage2Words.body
ID_MASK: Final[i64] = 0x1FFFFF
#: the number of a chunk's tokens in Stage2Words.body (N_LONG: that many or more,
#: the number in Stage2Words.longs: a chunk of 65,535 tokens needs max_chunk_bytes above 65,534)
N_MASK: Final[i64] = 0xFFFF
N_LONG: Final[i64] = 0xFFFF
#: Stage1Words: the separator of merge_loop's 16-bit token array (0xFFFF, -1 as i16), and a
#: token's bits there
S1_SEP: Final[i16] = -1
S1_MASK: Final[i64] = 0xFFFF
#: Stage2Words' buffer of a word's tokens from Stage1Words (grown for a longer word)
MAX_WORD_TOKENS: Final[i64] = 1024
#: Stage2Words.pieces reads coarse chunks into a buffer of about this many tokens.
PIECE_BUF: Final[i64] = 1 << 14
#: Stage2Words.pieces hands PieceTable this many pieces at a time (add_batch).
PIECE_BATCH: Final[i64] = 16
#: PieceTable.packed sorts 16 bits a pass.
RADIX: Final[i64] = 1 << 16
#: PieceTable.packed hands its vecs' buffers on as the little-endian bytes of PackedCounts.
_LITTLE: Final = sys.byteorder == "little"


def rule_id(name: str) -> i64:
    """The id of a stage-2 rule name (its index in RULES)."""
    if name in RULES:
        return RULES.index(name)
    raise ConfigError(f"unknown stage-2 rule {name!r}; use one of {', '.join(repr(r) for r in RULES)}")


def _is_end(data: bytes, i: i64, n: i64) -> bool:
    """Whether the n-byte character at i is a sentence end or a colon (KIND_END)."""
    b: i64 = data[i]
    if n == 1:
        return b == 0x2E or b == 0x21 or b == 0x3F or b == 0x3A  # . ! ? :
    b1: i64 = data[i + 1]
    if n == 2:
        # U+061F ARABIC QUESTION MARK d8 9f, U+06D4 ARABIC FULL STOP db 94
        return (b == 0xD8 and b1 == 0x9F) or (b == 0xDB and b1 == 0x94)
    if n == 3:
        b2: i64 = data[i + 2]
        if b == 0xE3 and b1 == 0x80 and b2 == 0x82:  # U+3002 IDEOGRAPHIC FULL STOP
            return True
        if b == 0xE0 and b1 == 0xA5 and (b2 == 0xA4 or b2 == 0xA5):  # U+0964/0965 DEVANAGARI DANDA
            return True
        # U+FF01 ! U+FF1F ? U+FF1A : (fullwidth)
        return b == 0xEF and b1 == 0xBC and (b2 == 0x81 or b2 == 0x9F or b2 == 0x9A)
    return False


def chunk_kind(data: bytes, start: i64, end: i64) -> i64:
    """KIND_HARD, KIND_END or KIND_JOIN of the stage-1 chunk data[start:end] (module docstring)."""
    letters: i64 = 0
    others: i64 = 0
    other_at: i64 = -1
    other_len: i64 = 0
    i: i64 = start
    while i < end:
        b: i64 = data[i]
        cls: i64
        n: i64
        if b < 0x80:
            cls = _ASCII[b]
            n = 1
        else:
            v = _char(data, i, end)
            cls = v & 7
            n = v >> 3
        if cls == _LETTER:
            letters += 1
        elif cls == _OTHER or cls == _APOS:
            others += 1
            other_at = i
            other_len = n
        elif cls == _NUMBER or cls == _NEWLINE:
            return KIND_HARD
        elif not (cls == _SPACE and i == start):
            return KIND_HARD  # white space beyond one leading space
        i += n
    if letters > 0:
        return KIND_JOIN
    if others != 1:
        return KIND_HARD  # only white space, or a run of punctuation
    if _is_end(data, other_at, other_len):
        return KIND_END
    return KIND_JOIN


#: The shipped patterns (pretokenize's ids 0..4): a chunk of theirs that starts with a letter, or
#: with one space and a letter, is a letter run (with o200k's contraction at its end) -- JOIN
#: without reading the rest (tests/test_superword.py checks it against chunk_kind).
KNOWN_PATTERNS: Final[i64] = 4


def kind_in(data: bytes, start: i64, end: i64, pattern: i64) -> i64:
    """chunk_kind of a chunk that `pattern` cut: the letter runs of the shipped patterns known
    from their first one or two bytes (most chunks of prose), any other chunk read whole."""
    if pattern <= KNOWN_PATTERNS:
        b: i64 = data[start]
        if b < 0x80 and _ASCII[b] == _LETTER:
            return KIND_JOIN
        if b == 0x20 and start + 1 < end:
            b1: i64 = data[start + 1]
            if b1 < 0x80 and _ASCII[b1] == _LETTER:
                return KIND_JOIN
    return chunk_kind(data, start, end)


def _kinds(prefix: bytes) -> bytes:
    """chunk_kind of prefix + each ASCII byte, by the byte."""
    out = bytearray(128)
    for b in range(128):
        chunk = prefix + bytes([b])
        out[b] = chunk_kind(chunk, 0, len(chunk))
    return bytes(out)


#: chunk_kind of the one-byte ASCII chunks and of a space and one ASCII byte (add_both).
_KIND1: Final[bytes] = _kinds(b"")
_KIND2: Final[bytes] = _kinds(b" ")


def coarse_end(data: bytes, pos: i64, end: i64, pattern: i64) -> i64:
    """The end of the coarse chunk that starts at `pos` (a stage-1 chunk start) in data[:end]."""
    e = chunk_end(data, pos, end, pattern)
    if kind_in(data, pos, e, pattern) != KIND_JOIN:
        return e
    while e < end:
        e2 = chunk_end(data, e, end, pattern)
        k = kind_in(data, e, e2, pattern)
        if k == KIND_HARD:
            return e
        e = e2
        if k == KIND_END:
            return e
    return e


def split_coarse(text: bytes, pattern: str = "mnemonic") -> list[bytes]:
    """The coarse chunks of `text` under stage-1 pattern `pattern` (they join back to it)."""
    pid = pattern_id(pattern)
    out: list[bytes] = []
    pos: i64 = 0
    end: i64 = len(text)
    while pos < end:
        e = coarse_end(text, pos, end, pid)
        out.append(text[pos:e])
        pos = e
    return out


#: CoarseCounts.ids: the end of a coarse chunk.
END_OF_COARSE: Final[i64] = -1


class CoarseCounts:
    """Stage 2's coarse chunks as the counting pass hands them on (this module owns the layout):

      words   a count.PackedCounts (wblob, wmeta) of stage-1 chunks, listed in the order of their
              ids: training's own stage-1 table (WordCounter with `track`), which `ids` names
      ids     every coarse chunk (or piece of one) of two stage-1 chunks or more, once per
              occurrence, as the ids in `words` of its stage-1 chunks, four bytes each
              (little-endian), then END_OF_COARSE
      single  a PackedCounts (sblob, smeta) of coarse chunks given as bytes, each re-split when
              read (coarse_of_packed; the counting pass leaves it empty)

    The coarse chunks of one stage-1 chunk (two of three occurrences on English) are not listed:
    every stage-1 chunk counted in `words` is in exactly one coarse chunk (or piece), so a
    word's count less its occurrences in `ids` is its count as a coarse chunk of its own.

    Why ids: stage 2 takes each stage-1 chunk's tokens by its id, with no look-up and no
    re-split -- the counting pass found every chunk in its table already -- where looking each
    of the 17 M chunk occurrences of 100 MB of English up again (the encoder's cache, or a table
    of the distinct chunks) cost what the counting did; and the counting pass needs no second
    table for the single ones.  The workers' ids are renumbered where their tables are added up
    (training.CountSum, `renumber`)."""

    wblob: bytes
    wmeta: bytes
    sblob: bytes
    smeta: bytes
    ids: bytes

    def __init__(self, wblob: bytes, wmeta: bytes, sblob: bytes, smeta: bytes, ids: bytes) -> None:
        self.wblob = wblob
        self.wmeta = wmeta
        self.sblob = sblob
        self.smeta = smeta
        self.ids = ids

    def alone(self) -> vec[i64]:
        """Each word's count as a coarse chunk of its own: its count less its occurrences in `ids`."""
        wmeta = self.wmeta
        alone = vec[i64](capacity=len(wmeta) // META_BYTES)
        m: i64 = 0
        while m < len(wmeta):
            alone = append(alone, read_i64_le(wmeta, m + 8))
            m += META_BYTES
        ids = self.ids
        p: i64 = 0
        while p < len(ids):
            x: i64 = i64(read_i32_le(ids, p))
            if x != END_OF_COARSE:
                alone[x] -= 1
            p += 4
        return alone

    def to_packed(self) -> PackedCounts:
        """Every coarse chunk as its bytes (count.PackedCounts; words may repeat): those given
        as bytes, the stage-1 chunks that are coarse chunks alone, then each longer one, count 1
        (the naive twin's and the tests' view)."""
        starts = word_starts(self.wmeta)
        wblob = self.wblob
        blob = BytesWriter()
        meta = BytesWriter()
        blob.write(self.sblob)
        meta.write(self.smeta)
        alone = self.alone()
        x: i64 = 0
        while x < len(alone):
            if alone[x] > 0:
                blob.write(wblob[starts[x] : starts[x + 1]])
                write_i64_le(meta, starts[x + 1] - starts[x])
                write_i64_le(meta, alone[x])
            x += 1
        ids = self.ids
        n: i64 = 0
        p: i64 = 0
        while p < len(ids):
            x = i64(read_i32_le(ids, p))
            p += 4
            if x == END_OF_COARSE:
                write_i64_le(meta, n)
                write_i64_le(meta, 1)
                n = 0
            else:
                blob.write(wblob[starts[x] : starts[x + 1]])
                n += starts[x + 1] - starts[x]
        return PackedCounts(blob.getvalue(), meta.getvalue())

    def to_dict(self) -> dict[bytes, int]:
        """The counts as a dict (coarse chunk bytes -> count), equal chunks added up."""
        blob, meta = self.to_packed()
        return packed_to_dict(blob, meta)


def coarse_of_packed(blob: bytes, meta: bytes) -> CoarseCounts:
    """CoarseCounts of coarse chunks given as bytes with their counts (all in `single`)."""
    return CoarseCounts(b"", b"", blob, meta, b"")


def word_starts(meta: bytes) -> vec[i64]:
    """Where each word of packed counts starts in its blob, and the blob's end after them."""
    starts = vec[i64](capacity=len(meta) // META_BYTES + 1)
    pos: i64 = 0
    m: i64 = 0
    while m < len(meta):
        starts = append(starts, pos)
        pos += read_i64_le(meta, m)
        m += META_BYTES
    return append(starts, pos)


def renumber(ids: bytes, remap: vec[i64]) -> bytes:
    """CoarseCounts.ids with each id x replaced by remap[x] (a worker's ids as the table they are
    added to numbers its words: WordCounter.add_packed's answer)."""
    out = BytesWriter()
    p: i64 = 0
    while p < len(ids):
        x: i64 = i64(read_i32_le(ids, p))
        if x != END_OF_COARSE:  # not a conditional expression: mypyc would box its value
            x = remap[x]
        write_i32_le(out, i32(x))
        p += 4
    return out.getvalue()


class CoarseCounter:
    """Stage 2's coarse chunks as the counting pass finds them (CoarseCounts): a coarse chunk of
    one stage-1 chunk (two of three on English: " the", ",") is that chunk's count in `words`,
    nothing more; a longer one is written out as it comes, once per occurrence, not looked up,
    as the ids of its stage-1 chunks in `words` -- most occur once (100 MB of English: 2.27 M
    occurrences, 1.80 M distinct), and nothing downstream needs them distinct: Stage2Words adds
    up its pairs and PieceTable its pieces.

    `words` is the tracking WordCounter that gives the ids: training's stage-1 table, counted in
    the same pass (add_both), or a table of its own.  `to_counts` hands all of it on."""

    words: WordCounter
    #: the id stream (CoarseCounts.ids) as it is written
    ids: BytesWriter
    max_chunk_bytes: i64
    n_bytes: i64
    n_chunks: i64
    skipped: i64

    def __init__(self, pattern: i64, max_chunk_bytes: i64, words: WordCounter | None = None) -> None:
        if words is None:
            words = WordCounter(pattern, max_chunk_bytes, track=True)
        elif not words.track or words.max_chunk_bytes != max_chunk_bytes:
            raise ConfigError(
                "the coarse chunks' word table must give ids (WordCounter(track=True)) and skip the same "
                f"chunks (max_chunk_bytes {words.max_chunk_bytes}, here {max_chunk_bytes})"
            )
        self.words = words
        self.ids = BytesWriter()
        self.max_chunk_bytes = max_chunk_bytes
        self.n_bytes = 0
        self.n_chunks = 0
        self.skipped = 0

    def to_counts(self) -> CoarseCounts:
        wblob, wmeta = self.words.to_packed()
        return CoarseCounts(wblob, wmeta, b"", b"", self.ids.getvalue())

    def to_packed(self) -> PackedCounts:
        """The coarse chunks as bytes (CoarseCounts.to_packed)."""
        return self.to_counts().to_packed()

    def to_dict(self) -> dict[bytes, int]:
        """The counts as a dict (word bytes -> count), equal words added up."""
        return self.to_counts().to_dict()


def add_coarse(counter: CoarseCounter, data: bytes, pattern: i64) -> None:
    """Count the coarse chunks of one document in `counter` (stage 2's words).  A coarse chunk
    longer than counter.max_chunk_bytes is counted in pieces cut at the last stage-1 boundary
    that fits; a stage-1 chunk longer than that alone is skipped (counted in `skipped`), as in
    stage 1."""
    add_both(None, counter, data, pattern)


def add_both(words: WordCounter | None, coarse: CoarseCounter, data: bytes, pattern: i64) -> None:
    """One pass over a document's stage-1 chunks: each counted in coarse.words (`words`, when
    given, must be that table: as WordCounter.add would count, the same skips of long chunks),
    and the coarse chunks they make in `coarse` (add_coarse's rule).  One walk instead of two:
    the chunk ends are found once, and each chunk's id comes from the one look-up that counts
    it.  Each id goes to the id stream as it comes and is taken back (truncated) when its
    coarse chunk ends with it alone, and the kind of the commonest chunks comes from their
    first bytes or a table, with no call (docs/superword.md, eighth round: the joining had
    cost about two thirds of what the look-ups did)."""
    table = coarse.words
    if words is not None and words is not table:
        raise ConfigError("add_both counts the words in the coarse counter's own word table (CoarseCounter(words=...))")
    limit: i64 = coarse.max_chunk_bytes
    end: i64 = len(data)
    n_fine: i64 = 0
    out = coarse.ids
    ascii_class = _ASCII
    kind1 = _KIND1
    kind2 = _KIND2
    known = pattern <= KNOWN_PATTERNS
    n_coarse: i64 = 0
    piece: i64 = 0  # the coarse chunk being counted starts here (a long one is counted in pieces)
    parts: i64 = 0  # ... and holds this many stage-1 chunks, whose ids end the id stream
    joinable = False  # it ends with a JOIN chunk
    pos: i64 = 0
    # the chunk ends over ASCII from the class masks, as WordCounter.add takes them
    bits = table.rules != 0 and table.pattern == pattern and end >= BITS_MIN
    cur = BitCursor(table.program, data, 0, end, table.rules) if bits else None
    while pos < end:
        e: i64 = -1
        if cur is not None:
            e = cur.next_end(pos)
            if e < 0:
                cur = None
        if e < 0:
            e = chunk_end(data, pos, end, pattern)
        n = e - pos
        n_fine += 1
        wid: i64 = -1
        if n > limit:
            table.skipped += 1
        else:
            wid = table.count(data, pos, e, 1)
        # kind_in inline: a letter run of a shipped pattern from its first one or two bytes, an
        # ASCII chunk of one byte or of a space and one byte from a table (chunk_kind's answers:
        # ",", ".", " (", "\n", "5" -- a third of English's chunks)
        k: i64 = KIND_HARD
        b: i64 = data[pos]
        if known and b < 0x80 and ascii_class[b] == _LETTER:
            k = KIND_JOIN
        elif n == 1 and b < 0x80:
            k = kind1[b]
        elif n == 2 and b == 0x20 and data[pos + 1] < 0x80:
            k = kind2[data[pos + 1]]
        elif known and b == 0x20 and n > 1 and data[pos + 1] < 0x80 and ascii_class[data[pos + 1]] == _LETTER:
            k = KIND_JOIN
        else:
            k = chunk_kind(data, pos, e)
        if not (joinable and k != KIND_HARD) or e - piece > limit:
            # a new coarse chunk (or piece of one: the piece cannot take this chunk) starts at
            # pos: end the last one -- one chunk alone is taken back, two or more get their end
            if pos > piece:
                if parts == 1:
                    out.truncate(len(out) - 4)
                else:
                    write_i32_le(out, i32(END_OF_COARSE))
                n_coarse += 1
            piece = pos
            parts = 0
            if n > limit:  # too long alone: skipped
                coarse.skipped += 1
                piece = e
        if piece != e:
            write_i32_le(out, i32(wid))
            parts += 1
        joinable = k == KIND_JOIN
        pos = e
    if end > piece:
        if parts == 1:
            out.truncate(len(out) - 4)
        else:
            write_i32_le(out, i32(END_OF_COARSE))
        n_coarse += 1
    coarse.n_bytes += end
    coarse.n_chunks += n_coarse
    table.n_bytes += end
    table.n_chunks += n_fine


class SuperEncoder(Encoder):
    """An Encoder of the stage-1 merges (merges[:transition - 256]) that also applies the
    stage-2 ones (the rest) inside coarse chunks: encode_text dispatches on the class."""

    transition: i64
    rule: i64
    n_total: i64
    full: Encoder
    first2: i64
    scratch: BytesWriter
    tk2: vec[i64]
    rk2: vec[i64]
    nx2: vec[i64]
    pv2: vec[i64]
    heap2: vec[i64]
    ahead: i64

    def __init__(self, merges: list[tuple[int, int]], transition: i64, rule: i64, wide: bool = False) -> None:
        first: i64 = transition - 256
        super().__init__(merges[:first], wide or len(merges) + 256 > 65536)
        n: i64 = len(merges)
        self.transition = transition
        self.rule = rule
        self.n_total = n
        self.first2 = first
        # A coarse chunk of one stage-1 chunk (two of three in English) is encoded by all the
        # merges at once: stage 1 then stage 2 is BPE in id order, because every stage-1 merge
        # comes before every stage-2 one and a stage-2 token never forms a stage-1 pair.  So it
        # takes the ordinary encoder's tables and caches (faster on English: docs/speed.md).
        self.full = Encoder(merges, self.wide)
        self.scratch = BytesWriter()
        self.tk2 = vec[i64]([0] * LONG_COARSE)
        self.rk2 = vec[i64]([0] * LONG_COARSE)
        self.nx2 = vec[i64]()
        self.pv2 = vec[i64]()
        self.heap2 = vec[i64]()
        self.ahead = -1
        # ids_list needs an int object for every id the output may hold, stage 2's included
        self.ints = [x for x in range(min(n + 256, 65536))]
        self.id_objects = self.ints

    def rank2(self, a: i64, b: i64) -> i64:
        """The merge number of stage-2 pair (a, b), or NO_RANK: the full encoder's table, which
        holds every merge, less the stage-1 ones (a stage-1 pair can meet across a stage-1
        boundary, where stage 1 never merges it)."""
        r = self.full.rank(a, b)
        return r if r >= self.first2 else NO_RANK

    # ---- one coarse chunk ----

    def load(self, sc: BytesWriter, base: i64) -> i64:
        """The ids written to `sc` from offset `base` on into tk2; their number."""
        size: i64 = len(sc)
        tk = self.tk2
        n: i64 = 0
        i: i64 = base
        wide = self.wide
        while i < size:
            x: i64 = i64(sc[i]) | (i64(sc[i + 1]) << 8)
            if wide:
                x |= (i64(sc[i + 2]) << 16) | (i64(sc[i + 3]) << 24)
                i += 4
            else:
                i += 2
            if n < len(tk):
                tk[n] = x
            else:
                tk = append(tk, x)
            n += 1
        self.tk2 = tk
        return n

    def bpe2(self, n: i64) -> i64:
        """Stage-2 BPE of tk2[:n] in place; the new length."""
        if n < 2:
            return n
        if n >= LONG_COARSE:
            return self.bpe2_long(n)
        tk = self.tk2
        rk = self.rk2
        filt = self.full.pair_filter
        fmask = self.full.filter_mask
        i: i64 = 0
        best: i64 = NO_RANK
        first: i64 = 0
        while i < n - 1:
            # the filter inline: most pairs are no stage-2 merge, and the call cost more than it
            key: i64 = (tk[i] << ID_BITS) | tk[i + 1]
            fh: i64 = (key * FILTER_MUL) >> 34
            bits = filter_bits(fh)
            if (filt[(fh >> 12) & fmask] & bits) != bits:
                rk[i] = NO_RANK
            else:
                r: i64 = self.rank2(tk[i], tk[i + 1])
                rk[i] = r
                if r < best:
                    best = r
                    first = i
            i += 1
        # One pass a merge: glue every occurrence of `best` from its first place on, left to
        # right; a pair of two old tokens keeps its rank (rk[i] moves down to rk[j], j <= i, read
        # before written), a pair touching the new token is looked up; the next merge's rank and
        # first place are found on the way (and in the unchanged prefix).
        while best != NO_RANK:
            c: i64 = 256 + best
            nbest: i64 = NO_RANK
            nfirst: i64 = 0
            k: i64 = 0
            while k < first - 1:
                if rk[k] < nbest:
                    nbest = rk[k]
                    nfirst = k
                k += 1
            j: i64 = first
            i = first
            prev_new = False
            while i < n:
                if i < n - 1 and rk[i] == best:
                    tk[j] = c
                    i += 2
                    if j > 0:
                        r2 = self.rank2(tk[j - 1], c)
                        rk[j - 1] = r2
                        if r2 < nbest:
                            nbest = r2
                            nfirst = j - 1
                    prev_new = True
                else:
                    tk[j] = tk[i]
                    rk[j] = rk[i]
                    i += 1
                    if j > 0:
                        r3: i64 = rk[j - 1]
                        if prev_new:
                            r3 = self.rank2(tk[j - 1], tk[j])
                            rk[j - 1] = r3
                        if r3 < nbest:
                            nbest = r3
                            nfirst = j - 1
                    prev_new = False
                j += 1
            n = j
            best = nbest
            first = nfirst
        return n

    def bpe2_long(self, n: i64) -> i64:
        """bpe2 for a long coarse chunk: a linked list and a min-heap of (merge number << 32 |
        position).  An entry is stale when its position is gone or holds another pair now; the
        pair (x, y) of merge k is made again only by merge k itself, so a stale entry never
        looks valid (the same argument as encode_chunk's long path)."""
        tk = self.tk2
        nx = self.nx2
        pv = self.pv2
        while len(nx) < n:
            nx = append(nx, 0)
            pv = append(pv, 0)
        heap = self.heap2
        size: i64 = 0
        i: i64 = 0
        while i < n:
            nx[i] = i + 1 if i + 1 < n else -1
            pv[i] = i - 1
            i += 1
        i = 0
        while i < n - 1:
            r = self.rank2(tk[i], tk[i + 1])
            if r != NO_RANK:
                heap, size = heap_push(heap, size, (r << 32) | i)
            i += 1
        while size > 0:
            top = heap[0]
            size -= 1
            if size > 0:
                heap[0] = heap[size]
                sift_down(heap, 0, size)
            r = top >> 32
            p: i64 = top & 0xFFFFFFFF
            q = nx[p]
            if tk[p] < 0 or q < 0 or self.rank2(tk[p], tk[q]) != r:
                continue
            tk[p] = 256 + r
            tk[q] = -1  # gone
            nq = nx[q]
            nx[p] = nq
            if nq >= 0:
                pv[nq] = p
                r2 = self.rank2(tk[p], tk[nq])
                if r2 != NO_RANK:
                    heap, size = heap_push(heap, size, (r2 << 32) | p)
            pp = pv[p]
            if pp >= 0:
                r3 = self.rank2(tk[pp], tk[p])
                if r3 != NO_RANK:
                    heap, size = heap_push(heap, size, (r3 << 32) | pp)
        self.nx2 = nx
        self.pv2 = pv
        self.heap2 = heap
        j: i64 = 0
        i = 0
        while i >= 0:
            tk[j] = tk[i]
            j += 1
            i = nx[i]
        return j

    def coarse(self, data: bytes, pos: i64, end: i64, pattern: i64, dst: BytesWriter, ahead: i64) -> i64:
        """Encode the coarse chunk starting at `pos` into dst; return its end.  `ahead`: the
        packed (end << 2 | kind) of the stage-1 chunk at `pos` when the last call found it while
        looking for its own end, else -1; this call leaves the same for the next in self.ahead."""
        self.ahead = -1
        e: i64
        k0: i64
        if ahead >= 0:
            e = ahead >> 2
            k0 = ahead & 3
        else:
            e = chunk_end(data, pos, end, pattern)
            k0 = kind_in(data, pos, e, pattern)
        if e >= end or k0 != KIND_JOIN:
            self.full.encode_span(data, pos, e, dst)
            return e
        e2 = chunk_end(data, e, end, pattern)
        k = kind_in(data, e, e2, pattern)
        if k == KIND_HARD:
            self.full.encode_span(data, pos, e, dst)
            self.ahead = (e2 << 2) | k
            return e
        # stage 1 straight into dst; read back, and rewritten only when stage 2 merged something
        base: i64 = len(dst)
        self.encode_span(data, pos, e, dst)
        self.encode_span(data, e, e2, dst)
        e = e2
        if k != KIND_END:
            while e < end:
                e2 = chunk_end(data, e, end, pattern)
                k = kind_in(data, e, e2, pattern)
                if k == KIND_HARD:
                    self.ahead = (e2 << 2) | k
                    break
                self.encode_span(data, e, e2, dst)
                e = e2
                if k == KIND_END:
                    break
        n0 = self.load(dst, base)
        n = self.bpe2(n0)
        if n == n0:
            return e
        dst.truncate(base)
        wide = self.wide
        tk = self.tk2
        i: i64 = 0
        while i < n:
            emit(dst, tk[i], wide)
            i += 1
        return e

    def encode_coarse(self, data: bytes, start: i64, end: i64, pattern: i64, dst: BytesWriter) -> None:
        """The ids of data[start:end] into dst (encode_text.encode_range_packed's contract)."""
        pos: i64 = start
        self.ahead = -1
        while pos < end:
            pos = self.coarse(data, pos, end, pattern, dst, self.ahead)

    def encode_coarse_some(
        self, data: bytes, start: i64, end: i64, pattern: i64, budget: i64, dst: BytesWriter
    ) -> i64:
        """Whole coarse chunks from `start` until `budget` bytes are done (encode_some_packed's
        contract, at coarse boundaries)."""
        pos: i64 = start
        stop: i64 = start + budget
        self.ahead = -1
        while pos < end:
            pos = self.coarse(data, pos, end, pattern, dst, self.ahead)
            if pos >= stop:
                break
        return pos

    def word_ids(self, data: bytes, start: i64, end: i64, pattern: i64) -> i64:
        """Stage 1 of the coarse chunk data[start:end] alone (each of its stage-1 chunks, re-split
        from `start` with `end` as the text's end), left in tk2: stage 2's training words."""
        sc = self.scratch
        sc.truncate(0)
        pos: i64 = start
        while pos < end:
            e = chunk_end(data, pos, end, pattern)
            self.encode_span(data, pos, e, sc)
            pos = e
        return self.load(sc, 0)


# ---- stage 2's training words ----


class Stage1Words:
    """Stage 1's words as its merge loop left them (merge_loop.TrainState of the 16-bit trainer:
    SEP, word, SEP, ..., each word of the words table with two bytes or more and a count, in
    the table's order, as its stage-1 tokens), read in that order by `next`: Stage2Words takes
    each word's stage-1 encoding from here instead of encoding it.  The loop applied every
    merge in order to every word, left to right, as BPE encodes (the naive twin's tests hold
    both to that), so its words are the words encoded.  But a word that became one token may
    be gone (the loop's compaction leaves out words of one token): when the word at the
    cursor is not the word asked for (its tokens' bytes differ), the word asked for is one
    token, the token whose bytes it is (`single`; a word whose bytes two tokens share, or none,
    is left to the encoder: `next` answers -1)."""

    toks: vec[i16]
    n: i64
    at: i64  # the position of the next word to read
    tbytes: bytes  # every token's bytes, token t's at toff[t] .. toff[t + 1]
    toff: vec[i64]
    single: dict[bytes, int]  # a token's bytes -> its id, -1 when two tokens have them

    def __init__(self, toks: vec[i16], n: i64, merges: list[tuple[int, int]]) -> None:
        self.toks = toks
        self.n = n
        self.at = 1  # past the first SEP
        parts: list[bytes] = [bytes([i]) for i in range(256)]
        for a, b in merges:
            parts.append(parts[a] + parts[b])
        toff = vec[i64]()
        off: i64 = 0
        single: dict[bytes, int] = {}
        for t in range(len(parts)):
            toff = append(toff, off)
            off += len(parts[t])
            single[parts[t]] = -1 if parts[t] in single else t
        self.toff = append(toff, off)
        self.tbytes = b"".join(parts)
        self.single = single

    def next(self, data: bytes, start: i64, end: i64, tk: vec[i64]) -> i64:
        """The stage-1 tokens of the word data[start:end] (the words table's next word of two
        bytes or more and a count) written to tk (room for end - start); their number, or -1
        when it must be encoded."""
        toks = self.toks
        n = self.n
        toff = self.toff
        tb = self.tbytes
        p: i64 = self.at
        while p < n and toks[p] == S1_SEP:
            p += 1
        j: i64 = p
        off: i64 = start
        same = True
        while j < n and toks[j] != S1_SEP:
            t: i64 = i64(toks[j]) & S1_MASK
            a: i64 = toff[t]
            b: i64 = toff[t + 1]
            if off + (b - a) > end:
                same = False
                break
            while a < b:
                if tb[a] != data[off]:
                    same = False
                    break
                a += 1
                off += 1
            if not same:
                break
            j += 1
        if same and off == end and j > p:
            q: i64 = 0
            while q < j - p:
                tk[q] = i64(toks[p + q]) & S1_MASK
                q += 1
            self.at = j
            return j - p
        t = self.single.get(data[start:end], -1)
        if t < 0:
            return -1
        tk[0] = t
        return 1




class Stage2Words:
    """Stage 2's words: each coarse chunk of a CoarseCounts as its stage-1 tokens (each stage-1
    chunk encoded alone, `SuperEncoder.word_ids`, once per distinct chunk), never written out
    as one array: `pieces` reads them from the id stream and the encodings of its chunks.

    `pieces(theta)` cuts the words where the pair of stage-1 tokens has a count below theta.
    Exact for every merge of count >= theta: a stage-2 token is made of stage-1 tokens in one
    fixed order, so wherever tokens X and Y meet, the last stage-1 token of X and the first of Y
    meet there too -- the count of (X, Y) is at most the count of that stage-1 pair, and a pair
    across a cut never reaches theta.  So pairs that can reach theta never cross a cut: their
    counts, hence every merge of count >= theta, are the uncut words' own.  theta = 2 is always
    exact (a merge needs a count of 2); superbpe.learn_stage2 tries a higher one first and falls
    back when the run goes below it.  Pieces of one token hold no pair and go; equal pieces are
    counted once with their counts added (the common phrases), so the merge loop reads far
    fewer tokens (docs/superword.md has the figures).

    The cut needs no exact count, only one that is never too low: a pair left uncut below theta
    makes a piece longer, still exact (the argument above holds for any cut at pairs of count
    below theta).  So the pairs are counted in a count-min sketch (`sketch`): 2 ** sketch_bits
    i16 counters (saturating at SKETCH_MAX) in lines of 32; a pair counts in three counters of
    one line (three fields of its hash), conservatively (each raised to the smallest of the
    three plus the weight, not each by the weight), its estimate the smallest of the three --
    never below its count (nor below SKETCH_MAX when its count is above it).  At the default
    size the sketch is 2 MB and a pair's update one line, where the exact count of every pair
    (2.45 M distinct pairs of 100 MB of English) took 136 MB of bucket entries and a second pass
    over the tokens; 0.28 % of the occurrences of pairs below theta there stay uncut (971,374
    pieces against the exact cut's 946,780; docs/superword.md).  A stage-1 chunk's own pairs are counted once per
    distinct chunk, weighted by its count (every occurrence of a chunk is in one coarse chunk);
    the id stream adds the pairs where two chunks meet, from each chunk's first and last token
    (one load a chunk occurrence, the constructor's `meet`).

    theta comes from the count of the (stage-2 merges)-th most frequent pair (`count_at_rank`),
    read off the sketch too: a pair of count c raises its counters to at least c, so about 2.906
    counters for each pair of count >= c are >= c (three fields of 32 counters name that many
    distinct ones on average), and the ceil(2.906 k)-th largest counter stands for the k-th
    largest count (100 MB of English: 183 for the exact 184 at k = 8,192; 25 MB, simulated with
    3k: 49 for 50 -- a little low, as pairs sharing counters lower it further: an error that
    way costs longer pieces, not a second run)."""

    #: the coarse chunks given as bytes, encoded: their tokens, ends and counts
    stoks: vec[i32]
    sends: vec[i64]
    scounts: vec[i64]
    #: the id stream, and each word (stage-1 chunk) by id: `body`, first token << 40 | last
    #: << 16 | number of tokens (n) for n <= 2, pool start << 16 | n for more (its tokens in
    #: `pool`; n >= N_LONG: N_LONG, the number in `longs`); `alone`, its count as a coarse
    #: chunk of its own
    cids: bytes
    body: vec[i64]
    longs: dict[int, int]
    pool: vec[i32]
    alone: vec[i64]
    #: the words (coarse chunks of two tokens or more) and their tokens
    n_words: i64
    n_tokens: i64
    #: the sketch: 2 ** sbits counters, a pair's three in the line `lshift` names
    sketch: vec[i16]
    sbits: i64
    lshift: i64
    lmask: i64
    #: add_batch's lines of a batch, and the sum of the counters it loaded ahead
    lines: vec[i64]
    touch: i64
    #: every pair's exact count, (key, count) slots (-1: empty), built by pair_count (the tests)
    pairs: vec[i64]
    pmask: i64
    n_pairs: i64

    def __init__(
        self,
        enc: SuperEncoder,
        coarse: CoarseCounts,
        pattern: i64,
        sketch_bits: i64 = SKETCH_BITS,
        stage1: Stage1Words | None = None,
    ) -> None:
        """`sketch_bits`: log2 of the sketch's counters (at least LINE_BITS: one line; the tests
        make it small, so that pairs share counters).  `stage1`: stage 1's words as its loop
        left them, which give the words' encodings (None: each word encoded by `enc`)."""
        if sketch_bits < LINE_BITS:
            sketch_bits = LINE_BITS
        self.sbits = sketch_bits
        # a pair's line: the top bits of key * HASH_MUL; its counters in the line: three
        # five-bit fields of key * PIECE_MUL (two may be one counter: the sketch stays sound)
        self.lshift = 64 - (sketch_bits - LINE_BITS)
        self.lmask = (1 << (sketch_bits - LINE_BITS)) - 1
        self.lines = _filled64(SKETCH_BATCH, 0)
        self.touch = 0
        self.sketch = _filled16(1 << sketch_bits, 0)
        self.pairs = vec[i64]()
        self.pmask = 0
        self.n_pairs = 0
        # the bound as a native int once: the constant is a Python int (2**63 - 1), whose
        # arithmetic mypyc would do on boxed objects for every word
        most: i64 = MAX_PAIR_TOTAL
        total: i64 = 0
        n_words: i64 = 0
        n_tokens: i64 = 0
        # the coarse chunks given as bytes: each re-split and encoded (they are counted: one call
        # a distinct chunk), kept as tokens
        stoks = vec[i32]()
        sends = vec[i64]()
        scounts = vec[i64]()
        blob = coarse.sblob
        meta = coarse.smeta
        bpos: i64 = 0
        m: i64 = 0
        while m < len(meta):
            wlen = read_i64_le(meta, m)
            wcount = read_i64_le(meta, m + 8)
            m += META_BYTES
            n = enc.word_ids(blob, bpos, bpos + wlen, pattern)
            if n >= 2 and wcount > 0:
                if wcount > (most - total) // (n - 1):
                    _too_many_pairs(blob[bpos : bpos + wlen])  # the slice only here, not a bytes object a word
                total += wcount * (n - 1)
                tk = enc.tk2
                stoks = append(stoks, i32(tk[0]))
                i: i64 = 1
                while i < n:
                    stoks = append(stoks, i32(tk[i]))
                    self.add(key_of(tk[i - 1], tk[i]), wcount)
                    i += 1
                sends = append(sends, len(stoks))
                scounts = append(scounts, wcount)
                n_words += 1
                n_tokens += n
            bpos += wlen
        self.stoks = stoks
        self.sends = sends
        self.scounts = scounts
        # every word of the table encoded, in order (its bytes read in order, not by the id
        # stream's random ids), its own pairs counted by its count
        wblob = coarse.wblob
        wmeta = coarse.wmeta
        n_ids: i64 = len(wmeta) // META_BYTES
        # `meet` (the id stream's pass only): two fields a word, in one cache line -- first
        # token << 40 | last << 16 | n, and its count, less one for each occurrence in the id
        # stream (its count alone at the end: no second pass over the stream, CoarseCounts.alone)
        meet = _filled64(2 * n_ids, 0)
        longs: dict[int, int] = {}
        body = _filled64(n_ids, 0)
        pool = vec[i32]()
        bpos = 0
        x: i64 = 0
        tk1 = _filled64(MAX_WORD_TOKENS, 0)
        while x < n_ids:
            wlen = read_i64_le(wmeta, x * META_BYTES)
            wcount = read_i64_le(wmeta, x * META_BYTES + 8)
            n = -1
            if stage1 is not None and wlen >= 2 and wcount > 0:
                if wlen > len(tk1):
                    tk1 = _filled64(wlen, 0)
                n = stage1.next(wblob, bpos, bpos + wlen, tk1)
            if n >= 0:
                tk = tk1
            else:
                n = enc.word_ids(wblob, bpos, bpos + wlen, pattern)
                tk = enc.tk2
            bpos += wlen
            meet[2 * x + 1] = wcount
            if n == 0:  # (an empty word: no token; the id stream never names one)
                x += 1
                continue
            nf: i64 = n
            if n >= N_LONG:
                nf = N_LONG
                longs[x] = n
            meet[2 * x] = (tk[0] << 40) | (tk[n - 1] << 16) | nf
            body[x] = meet[2 * x]
            if n >= 3:
                body[x] = (i64(len(pool)) << 16) | nf
                i = 0
                while i < n:
                    pool = append(pool, i32(tk[i]))
                    i += 1
            if n >= 2 and wcount > 0:
                if wcount > (most - total) // (n - 1):
                    _too_many_pairs(wblob[bpos - wlen : bpos])
                total += wcount * (n - 1)
                i = 1
                while i < n:
                    self.add(key_of(tk[i - 1], tk[i]), wcount)
                    i += 1
            x += 1
        # the id stream: the pairs where two chunks meet, a batch at a time (add_batch); each
        # coarse chunk holds two chunks or more, so two tokens or more
        batch = _filled64(SKETCH_BATCH, 0)
        nb: i64 = 0
        cids = coarse.ids
        last: i64 = -1  # the last token of the chunk before, in the coarse chunk being read
        p: i64 = 0
        while p < len(cids):
            x = i64(read_i32_le(cids, p))
            p += 4
            if x == END_OF_COARSE:
                last = -1
                n_words += 1
                continue
            e: i64 = meet[2 * x]
            meet[2 * x + 1] -= 1
            if last >= 0:
                batch[nb] = (last << ID_BITS) | (e >> 40)
                nb += 1
                if nb == SKETCH_BATCH:
                    self.add_batch(batch, nb)
                    nb = 0
                # one pair more than the chunks' own, counted above
                if total > most - 1:
                    _too_many_pairs(b"")
                total += 1
            last = (e >> 16) & ID_MASK
            n = e & N_MASK
            if n == N_LONG:
                n = longs[x]
            n_tokens += n
        self.add_batch(batch, nb)
        self.body = body
        self.longs = longs
        # the stage-1 chunks that are coarse chunks of their own, as often as they are
        alone = _filled64(n_ids, 0)
        x = 0
        while x < n_ids:
            alone[x] = meet[2 * x + 1]
            if alone[x] > 0 and (body[x] & N_MASK) >= 2:
                n_words += 1
                n_tokens += self.n_of(x)
            x += 1
        self.cids = cids
        self.pool = pool
        self.alone = alone
        self.n_words = n_words
        self.n_tokens = n_tokens

    def n_of(self, x: i64) -> i64:
        """The number of word x's tokens."""
        n: i64 = self.body[x] & N_MASK
        if n == N_LONG:
            n = self.longs[x]
        return n

    def word_tokens(self, x: i64, dst: vec[i32], q: i64) -> i64:
        """Word x's tokens written to dst[q:] (long enough); returns how many."""
        e = self.body[x]
        n: i64 = self.n_of(x)
        if n <= 2:
            dst[q] = i32(e >> 40)
            if n == 2:
                dst[q + 1] = i32((e >> 16) & ID_MASK)
            return n
        pool = self.pool
        j: i64 = e >> 16
        k: i64 = 0
        while k < n:
            dst[q + k] = pool[j + k]
            k += 1
        return n

    def materialized(self) -> tuple[vec[i32], vec[i64], vec[i64]]:
        """Every word as its tokens, (tokens, ends, counts): the chunks given as bytes, the
        coarse chunks of the id stream, then the chunks alone (the tests' view, and pair_count's)."""
        toks = _filled32(self.n_tokens + FILL_BLOCK, 0)
        ends = vec[i64]()
        counts = vec[i64]()
        q: i64 = 0
        while q < len(self.stoks):
            toks[q] = self.stoks[q]
            q += 1
        w: i64 = 0
        while w < len(self.sends):
            ends = append(ends, self.sends[w])
            counts = append(counts, self.scounts[w])
            w += 1
        cids = self.cids
        p: i64 = 0
        while p < len(cids):
            x: i64 = i64(read_i32_le(cids, p))
            p += 4
            if x == END_OF_COARSE:
                ends = append(ends, q)
                counts = append(counts, 1)
            else:
                q += self.word_tokens(x, toks, q)
        x = 0
        while x < len(self.alone):
            if self.alone[x] > 0 and (self.body[x] & N_MASK) >= 2:
                q += self.word_tokens(x, toks, q)
                ends = append(ends, q)
                counts = append(counts, self.alone[x])
            x += 1
        return toks, ends, counts

    def add(self, key: i64, weight: i64) -> None:
        """Count `weight` occurrences of pair `key` in the sketch.  (add_batch has the same
        update for a weight of 1, written out: a batch of weights, with `add` a batch of one,
        took 9 % more instructions in the constructor -- 3,679.7 M -> 4,004.7 M on 100 MB of
        English.)"""
        sk = self.sketch
        line: i64 = (((key * HASH_MUL) >> self.lshift) & self.lmask) << LINE_BITS
        g: i64 = key * PIECE_MUL
        i0: i64 = line | ((g >> 59) & LINE_MASK)
        i1: i64 = line | ((g >> 53) & LINE_MASK)
        i2: i64 = line | ((g >> 47) & LINE_MASK)
        c0: i64 = i64(sk[i0])
        c1: i64 = i64(sk[i1])
        c2: i64 = i64(sk[i2])
        low: i64 = c0
        if c1 < low:
            low = c1
        if c2 < low:
            low = c2
        if weight > SKETCH_MAX - low:
            low = SKETCH_MAX
        else:
            low += weight
        if c0 < low:
            sk[i0] = i16(low)
        if c1 < low:
            sk[i1] = i16(low)
        if c2 < low:
            sk[i2] = i16(low)

    def add_batch(self, keys: vec[i64], n: i64) -> None:
        """`add` of one occurrence of each of the first `n` pairs of `keys`: every pair's line of
        the sketch loaded first, then the counters raised, so that the loads that miss the
        second-level cache overlap (a counter's update branches on its loads, which held the
        next pair's loads back) -- PieceTable.add_batch's trick."""
        sk = self.sketch
        lshift = self.lshift
        lmask = self.lmask
        lines = self.lines
        touch: i64 = 0
        k: i64 = 0
        while k < n:
            line: i64 = (((keys[k] * HASH_MUL) >> lshift) & lmask) << LINE_BITS
            lines[k] = line
            touch += i64(sk[line])
            k += 1
        self.touch = touch
        k = 0
        while k < n:
            key = keys[k]
            line = lines[k]
            g: i64 = key * PIECE_MUL
            i0: i64 = line | ((g >> 59) & LINE_MASK)
            i1: i64 = line | ((g >> 53) & LINE_MASK)
            i2: i64 = line | ((g >> 47) & LINE_MASK)
            c0: i64 = i64(sk[i0])
            c1: i64 = i64(sk[i1])
            c2: i64 = i64(sk[i2])
            low: i64 = c0
            if c1 < low:
                low = c1
            if c2 < low:
                low = c2
            if low < SKETCH_MAX:
                low += 1
                if c0 < low:
                    sk[i0] = i16(low)
                if c1 < low:
                    sk[i1] = i16(low)
                if c2 < low:
                    sk[i2] = i16(low)
            k += 1

    def estimate(self, key: i64) -> i64:
        """The sketch's count of pair `key`: never below its count, or SKETCH_MAX when that is."""
        sk = self.sketch
        line: i64 = (((key * HASH_MUL) >> self.lshift) & self.lmask) << LINE_BITS
        g: i64 = key * PIECE_MUL
        low: i64 = i64(sk[line | ((g >> 59) & LINE_MASK)])
        c: i64 = i64(sk[line | ((g >> 53) & LINE_MASK)])
        if c < low:
            low = c
        c = i64(sk[line | ((g >> 47) & LINE_MASK)])
        if c < low:
            low = c
        return low

    def pair_count(self, key: i64) -> i64:
        """The exact count of pair `key` (0 when it never occurs): a table of every pair, built
        from the words on the first call (the tests' look-up; training reads the sketch)."""
        if len(self.pairs) == 0:
            size: i64 = 1024
            self.pairs = _filled64(2 * size, -1)
            self.pmask = size - 1
            ids, ends, counts = self.materialized()
            start: i64 = 0
            w: i64 = 0
            while w < len(ends):
                end = ends[w]
                i: i64 = start + 1
                while i < end:
                    self.count_pair(key_of(i64(ids[i - 1]), i64(ids[i])), counts[w])
                    i += 1
                start = end
                w += 1
        at = _slot(self.pairs, 2, self.pmask, key)
        return 0 if at < 0 else self.pairs[at + 1]

    def count_pair(self, key: i64, weight: i64) -> None:
        """Add `weight` to pair `key` in the table of pair_count."""
        table = self.pairs
        mask = self.pmask
        h: i64 = ((key * HASH_MUL) >> HASH_SHIFT) & mask
        while True:
            t = table[2 * h]
            if t == key:
                table[2 * h + 1] += weight
                return
            if t == -1:
                table[2 * h] = key
                table[2 * h + 1] = weight
                self.n_pairs += 1
                if 2 * self.n_pairs > mask:
                    self.pairs = _grow_pairs(table, 2 * (mask + 1))
                    self.pmask = 2 * mask + 1
                return
            h = (h + 1) & mask

    def count_at_rank(self, k: i64) -> i64:
        """An estimate of the k-th largest count of a distinct pair (1-based; k >= 1): the
        ceil(2.906 k)-th largest counter of the sketch (the class docstring), 0 when there are
        fewer non-zero counters.  A histogram of the counters (at most SKETCH_MAX + 1 values)."""
        sk = self.sketch
        hist = _filled64(SKETCH_MAX + 1, 0)
        i: i64 = 0
        while i < len(sk):
            hist[i64(sk[i])] += 1
            i += 1
        # three fields of 32 counters name 32 * (1 - (31 / 32) ** 3) = 2.906 distinct counters
        # on average (two fields may be one counter)
        left: i64 = (k * 93 + 31) // 32
        c: i64 = SKETCH_MAX
        while c > 0 and hist[c] < left:
            left -= hist[c]
            c -= 1
        return c

    def kept(self, theta: i64) -> vec[i64]:
        """The sketch as a bitmap: a counter's bit set when it is >= theta (or saturated), so
        that a pair is cut unless both its bits are set (64 KB at the default size: the cut's
        tests stay in the first-level cache)."""
        sk = self.sketch
        lim: i64 = theta
        if lim > SKETCH_MAX:
            lim = SKETCH_MAX
        bits = _filled64((len(sk) + 63) >> 6, 0)
        # each word from its bit 63 down, shifted up a bit at a time: not `1 << k`, which mypyc
        # emits with the literal 1 as a 32-bit C int (merge_loop._bit_table says more)
        w: i64 = 0
        while w < len(bits):
            acc: i64 = 0
            i: i64 = w * 64 + 63
            while i >= w * 64:
                acc = acc << 1
                if i < len(sk) and i64(sk[i]) >= lim:
                    acc |= 1
                i -= 1
            bits[w] = acc
            w += 1
        return bits

    def pieces(self, theta: i64) -> tuple[bytes, bytes]:
        """The words cut before every pair whose estimate is below theta, as packed counts
        (count.PackedCounts' layout) whose words are the pieces' ids, four bytes each
        (little-endian); equal pieces added up (PieceTable), pieces of one token left out.  The
        words are read as in `materialized`, a coarse chunk at a time into a small buffer."""
        cut = _Cutter(self.kept(theta), self.lshift, self.lmask, self.n_tokens // 4)
        buf = _filled32(PIECE_BUF + FILL_BLOCK, 0)
        stoks = self.stoks
        start: i64 = 0
        w: i64 = 0
        while w < len(self.sends):
            end = self.sends[w]
            if end - start > len(buf):
                buf = _room32(buf, end - start)
            q: i64 = 0
            while q < end - start:
                buf[q] = stoks[start + q]
                q += 1
            cut.span(buf, 0, q, self.scounts[w])
            cut.flush(buf)
            start = end
            w += 1
        body = self.body
        pool = self.pool
        cids = self.cids
        # the coarse chunks read into buf a buffer at a time (their ends in `bounds`), then cut:
        # the reading loop stays short, so that its loads by chunk id overlap
        bounds = _filled64(PIECE_BUF, 0)
        nc: i64 = 0
        q = 0
        p: i64 = 0
        while p < len(cids):
            x: i64 = i64(read_i32_le(cids, p))
            p += 4
            if x == END_OF_COARSE:
                bounds[nc] = q
                nc += 1
                if q > PIECE_BUF or nc == PIECE_BUF:
                    first: i64 = 0
                    c: i64 = 0
                    while c < nc:
                        cut.span(buf, first, bounds[c], 1)
                        first = bounds[c]
                        c += 1
                    cut.flush(buf)
                    q = 0
                    nc = 0
                continue
            e: i64 = body[x]
            n: i64 = e & N_MASK
            if n == N_LONG:
                n = self.n_of(x)
            if q + n > len(buf):
                buf = _room32(buf, q + n)
            if n == 1:
                buf[q] = i32(e >> 40)
                q += 1
            elif n == 2:
                buf[q] = i32(e >> 40)
                buf[q + 1] = i32((e >> 16) & ID_MASK)
                q += 2
            else:
                j: i64 = e >> 16
                stop: i64 = j + n
                while j < stop:
                    buf[q] = pool[j]
                    q += 1
                    j += 1
        first = 0
        c = 0
        while c < nc:
            cut.span(buf, first, bounds[c], 1)
            first = bounds[c]
            c += 1
        cut.flush(buf)
        q = 0
        alone = self.alone
        x = 0
        while x < len(alone):
            if alone[x] > 0 and (body[x] & N_MASK) >= 2:
                n = self.n_of(x)
                if q + n > len(buf):
                    buf = _room32(buf, q + n)
                self.word_tokens(x, buf, q)
                cut.span(buf, q, q + n, alone[x])
                q += n
                if q > PIECE_BUF:
                    cut.flush(buf)
                    q = 0
            x += 1
        cut.flush(buf)
        return cut.table.packed()


def key_of(a: i64, b: i64) -> i64:
    """The key of the pair (a, b) of stage-1 tokens."""
    return (a << ID_BITS) | b


class _Cutter:
    """Stage2Words.pieces' cut: spans of a buffer of tokens cut where the sketch's bitmap
    (Stage2Words.kept) says a pair is below theta, the pieces handed to a PieceTable
    PIECE_BATCH at a time (PieceTable.add_batch); a batch refers to the buffer, so the caller
    reuses the buffer's start only after `flush`."""

    bits: vec[i64]
    lshift: i64
    lmask: i64
    table: PieceTable
    bstarts: vec[i64]
    bends: vec[i64]
    bcounts: vec[i64]
    nb: i64

    def __init__(self, bits: vec[i64], lshift: i64, lmask: i64, ids_hint: i64) -> None:
        self.bits = bits
        self.lshift = lshift
        self.lmask = lmask
        self.table = PieceTable(ids_hint)
        self.bstarts = _filled64(PIECE_BATCH, 0)
        self.bends = _filled64(PIECE_BATCH, 0)
        self.bcounts = _filled64(PIECE_BATCH, 0)
        self.nb = 0

    def span(self, buf: vec[i32], start: i64, end: i64, count: i64) -> None:
        """Cut the word buf[start:end] (count `count`) and hand its pieces of two tokens or more on."""
        bits = self.bits
        lshift = self.lshift
        lmask = self.lmask
        nb = self.nb
        bstarts = self.bstarts
        bends = self.bends
        bcounts = self.bcounts
        piece: i64 = start
        i: i64 = start + 1
        while i <= end:
            cut = i == end
            if not cut:
                key: i64 = (i64(buf[i - 1]) << ID_BITS) | i64(buf[i])
                # the pair's three counters share a line, so one word of the bitmap
                line: i64 = (((key * HASH_MUL) >> lshift) & lmask) << LINE_BITS
                g: i64 = key * PIECE_MUL
                word: i64 = bits[line >> 6] >> (line & 63)
                both: i64 = (word >> ((g >> 59) & LINE_MASK)) & (word >> ((g >> 53) & LINE_MASK))
                cut = (both & (word >> ((g >> 47) & LINE_MASK)) & 1) == 0
            if cut:
                if i - piece >= 2:
                    bstarts[nb] = piece
                    bends[nb] = i
                    bcounts[nb] = count
                    nb += 1
                    if nb == PIECE_BATCH:
                        self.table.add_batch(buf, bstarts, bends, bcounts, nb)
                        nb = 0
                piece = i
            i += 1
        self.nb = nb

    def flush(self, buf: vec[i32]) -> None:
        """Hand the pending pieces on."""
        self.table.add_batch(buf, self.bstarts, self.bends, self.bcounts, self.nb)
        self.nb = 0


class PieceTable:
    """Stage 2's pieces added up: each distinct run of ids (a span of Stage2Words.ids) once, with
    its count.  Open addressing over the ids themselves, where packing every piece as bytes for
    a WordCounter cost a hash of its bytes and a bytes object per distinct piece (the cut of 100
    MB of English, in one process alternately: 0.91-1.03 s with the WordCounter, 0.72-0.92 s).  A slot is the
    piece's record: its first three ids packed (all of it for 2.1 M of the 2.9 M pieces of 100 MB
    of English), so that most lookups read one slot and nothing else.  A new piece's ids are
    copied to `store` (where its slot says), so that `packed` reads the distinct pieces from
    there -- 4.3-4.5 M ids of 100 MB of English, in order of first appearance -- not from
    wherever they first occurred in the words' 19.6 M (which missed the cache and the TLB on most
    pieces: 72 % of `packed`'s samples in the seventh round's profile)."""

    slots: vec[i64]  # PIECE_FIELDS a slot: hash (32 bits) | length << 32 (0 = empty), first ids, count, start in store
    mask: i64
    n: i64
    store: vec[i32]
    n_store: i64
    #: add_batch's hashes and first ids of a batch, and the sum of the slots it loaded ahead
    tags: vec[i64]
    heads: vec[i64]
    touch: i64

    def __init__(self, ids_hint: i64 = 0) -> None:
        """`ids_hint`: the ids the distinct pieces are expected to hold (the store's first size)."""
        self.slots = _filled64(PIECE_FIELDS * 65536, 0)
        self.mask = 65535
        self.n = 0
        self.store = _filled32(ids_hint + FILL_BLOCK, 0)
        self.n_store = 0
        self.tags = _filled64(PIECE_BATCH, 0)
        self.heads = _filled64(PIECE_BATCH, 0)
        self.touch = 0

    def add(self, ids: vec[i32], start: i64, end: i64, count: i64) -> None:
        """Add `count` to the piece ids[start:end] (two ids or more)."""
        head: i64 = _piece_head(ids, start, end)
        self.put(ids, start, end, count, _piece_tag(ids, start, end, head), head)

    def add_batch(self, ids: vec[i32], starts: vec[i64], ends: vec[i64], counts: vec[i64], n: i64) -> None:
        """`add` for the first `n` pieces of starts / ends / counts, their slots loaded first,
        all of them, then probed: the loads of a table of 64 MB miss the cache for most pieces,
        and loads that wait on nothing else overlap one another where a probe's own branches
        on its load would hold the next piece's load back."""
        tags = self.tags
        heads = self.heads
        slots = self.slots
        mask = self.mask
        touch: i64 = 0
        k: i64 = 0
        while k < n:
            start = starts[k]
            end = ends[k]
            head: i64 = _piece_head(ids, start, end)
            tag: i64 = _piece_tag(ids, start, end, head)
            heads[k] = head
            tags[k] = tag
            touch += slots[(tag & mask) * PIECE_FIELDS]
            k += 1
        self.touch = touch
        k = 0
        while k < n:
            self.put(ids, starts[k], ends[k], counts[k], tags[k], heads[k])
            k += 1

    def put(self, ids: vec[i32], start: i64, end: i64, count: i64, tag: i64, head: i64) -> None:
        """Add `count` to the piece ids[start:end] whose tag and head are given."""
        slots = self.slots
        mask = self.mask
        at: i64 = tag & mask
        while True:
            r: i64 = at * PIECE_FIELDS
            t = slots[r]
            if t == 0:
                slots[r] = tag
                slots[r + 1] = head
                slots[r + 2] = count
                pos: i64 = self.n_store
                slots[r + 3] = pos
                store = self.store
                if pos + (end - start) > len(store):
                    store = _room32(store, pos + (end - start))
                    self.store = store
                j0: i64 = start
                while j0 < end:
                    store[pos] = ids[j0]
                    pos += 1
                    j0 += 1
                self.n_store = pos
                self.n += 1
                if 2 * self.n > mask:
                    self.grow()
                return
            if t == tag and slots[r + 1] == head:
                store = self.store
                o: i64 = slots[r + 3] - start
                j: i64 = start + 3
                while j < end and ids[j] == store[j + o]:
                    j += 1
                if j >= end:
                    slots[r + 2] += count
                    return
            at = (at + 1) & mask

    def grow(self) -> None:
        size: i64 = 2 * (self.mask + 1)
        slots = _filled64(PIECE_FIELDS * size, 0)
        mask: i64 = size - 1
        old = self.slots
        r: i64 = 0
        while r < len(old):
            t = old[r]
            if t != 0:
                at = t & mask  # the low 32 bits are the hash
                while slots[at * PIECE_FIELDS] != 0:
                    at = (at + 1) & mask
                k: i64 = 0
                while k < PIECE_FIELDS:
                    slots[at * PIECE_FIELDS + k] = old[r + k]
                    k += 1
            r += PIECE_FIELDS
        self.slots = slots
        self.mask = mask

    def packed(self) -> tuple[bytes, bytes]:
        """The distinct pieces as packed counts (count.PackedCounts' layout), their ids four bytes
        each (little-endian), in the order of their first three ids.  Sorted so, the pieces that
        begin alike lie together, and the merge loop's block index (merge_loop._Words) skips
        more blocks: its stage-2 run on 100 MB of English took 1.55 s of CPU on sorted pieces
        against 1.99 s in table (hash) order, the same merges."""
        slots = self.slots
        ids = self.store
        keys = vec[i64](capacity=self.n)
        refs = vec[i64](capacity=self.n)
        r: i64 = 0
        while r < len(slots):
            if slots[r] != 0:
                head = slots[r + 1]
                # the first three ids, a missing third one as 0 (`add` packs two alone)
                keys = append(keys, head if (slots[r] >> 32) > 2 else head << ID_BITS)
                refs = append(refs, r)
            r += PIECE_FIELDS
        refs = _sorted_by(keys, refs)
        if not _LITTLE:
            blob = BytesWriter()
            meta = BytesWriter()
            k: i64 = 0
            while k < len(refs):
                r = refs[k]
                n = slots[r] >> 32
                write_i64_le(meta, 4 * n)
                write_i64_le(meta, slots[r + 2])
                _write_ids(blob, ids, slots[r + 3], n)
                k += 1
            return blob.getvalue(), meta.getvalue()
        # little-endian: the ids and the meta gathered in vecs (stores, not calls) and each
        # turned into bytes at once through its buffer
        total: i64 = 0
        k = 0
        while k < len(refs):
            total += slots[refs[k]] >> 32
            k += 1
        out = _filled32(total, 0)
        info = _filled64(2 * len(refs), 0)
        o: i64 = 0
        touch: i64 = 0
        k = 0
        while k < len(refs):
            if (k & (PIECE_BATCH - 1)) == 0:
                # the slot and store loads of the next PIECE_BATCH pieces issued first, all of
                # them (in this order each misses the cache), as PieceTable.add_batch does
                m: i64 = k
                while m < k + PIECE_BATCH and m < len(refs):
                    rm: i64 = refs[m]
                    if (slots[rm] >> 32) > 3:
                        touch += i64(ids[slots[rm + 3] + 3])
                    m += 1
            r = refs[k]
            n = slots[r] >> 32
            info[2 * k] = 4 * n
            info[2 * k + 1] = slots[r + 2]
            # the first three ids from the slot's head (loaded already), the rest from the store
            # (a miss a piece, in this order: a piece of three ids or fewer -- 30 % of them on
            # 100 MB of English -- reads none)
            head = slots[r + 1]
            if n == 2:
                out[o] = i32(head >> ID_BITS)
                out[o + 1] = i32(head & ID_MASK)
            else:
                out[o] = i32(head >> (2 * ID_BITS))
                out[o + 1] = i32((head >> ID_BITS) & ID_MASK)
                out[o + 2] = i32(head & ID_MASK)
                j: i64 = slots[r + 3] + 3
                stop: i64 = slots[r + 3] + n
                q: i64 = o + 3
                while j < stop:
                    out[q] = ids[j]
                    q += 1
                    j += 1
            o += n
            k += 1
        self.touch = touch
        return bytes(out), bytes(info)


def _piece_head(ids: vec[i32], start: i64, end: i64) -> i64:
    """A piece's first three ids packed (two for a piece of two)."""
    head: i64 = (i64(ids[start]) << ID_BITS) | i64(ids[start + 1])
    if end - start > 2:
        head = (head << ID_BITS) | i64(ids[start + 2])
    return head


def _piece_tag(ids: vec[i32], start: i64, end: i64, head: i64) -> i64:
    """A piece's slot tag: its hash (32 bits) | its length << 32."""
    n: i64 = end - start
    x: i64 = (head + n) * HASH_MUL
    j: i64 = start + 3
    while j < end:
        x = (x ^ i64(ids[j])) * HASH_MUL
        j += 1
    x ^= x >> 29
    return (((x * PIECE_MUL) >> 32) & MASK32) | (n << 32)


def _sorted_by(keys: vec[i64], values: vec[i64]) -> vec[i64]:
    """`values` in the order of their `keys` (each >= 0), equal keys in their order: a radix sort
    of four passes of 16 bits (a list of a million boxed ints to sort cost more)."""
    n: i64 = len(keys)
    k2 = _filled64(n, 0)
    v2 = _filled64(n, 0)
    i: i64 = 0
    shift: i64 = 0
    while shift < 64:
        at = _filled64(RADIX + 1, 0)
        d: i64 = 1
        i = 0
        while i < n:
            at[((keys[i] >> shift) & (RADIX - 1)) + 1] += 1
            i += 1
        d = 1
        while d <= RADIX:
            at[d] += at[d - 1]
            d += 1
        i = 0
        while i < n:
            d = (keys[i] >> shift) & (RADIX - 1)
            k2[at[d]] = keys[i]
            v2[at[d]] = values[i]
            at[d] += 1
            i += 1
        keys, k2 = k2, keys
        values, v2 = v2, values
        shift += 16
    return values


def _write_ids(dst: BytesWriter, ids: vec[i32], start: i64, n: i64) -> None:
    """ids[start : start + n] into dst, four bytes each (little-endian)."""
    j: i64 = start
    while j < start + n:
        write_i32_le(dst, ids[j])
        j += 1


def _grow_pairs(old: vec[i64], size: i64) -> vec[i64]:
    """A (key, count) table of `size` slots (-1: empty) holding the pairs of `old`
    (Stage2Words.pair_count's, hashed as `_slot` finds them)."""
    table = _filled64(2 * size, -1)
    mask: i64 = size - 1
    i: i64 = 0
    while i < len(old):
        key = old[i]
        if key != -1:
            h: i64 = ((key * HASH_MUL) >> HASH_SHIFT) & mask
            while table[2 * h] != -1:
                h = (h + 1) & mask
            table[2 * h] = key
            table[2 * h + 1] = old[i + 1]
        i += 2
    return table


def _slot(table: vec[i64], stride: i64, mask: i64, key: i64) -> i64:
    """Where `key` is in `table` (open addressing, `stride` i64 a slot with the key first, -1 an
    empty slot, mask + 1 slots), or -1."""
    h: i64 = ((key * HASH_MUL) >> HASH_SHIFT) & mask
    while True:
        k = table[stride * h]
        if k == key:
            return stride * h
        if k == -1:
            return -1
        h = (h + 1) & mask


def _too_many_pairs(word: bytes) -> None:
    raise ConfigError(f"stage 2's pair counts would pass {MAX_PAIR_TOTAL:,} at the coarse chunk {word[:40]!r}")


def _room32(v: vec[i32], need: i64) -> vec[i32]:
    """`v` lengthened (zeros) to at least `need` items, doubling."""
    size: i64 = 2 * len(v) + FILL_BLOCK
    while size < need:
        size *= 2
    return extend(v, _filled32(size - len(v), 0))
