r"""Chunk starts of the GPT-4 and o200k split patterns over ASCII, 64 bytes at a time, from the
class masks.

The hot loops cut a text with `scan` (mnemo/pretokenize.py), one call per chunk, each picking
the chunk's kind with a branch or two.  For the patterns of the GPT-4 family (gpt4, cl100k,
mnemonic: the same branches, only the digit groups and cl100k's `\s++$` differ) this module
finds most chunk starts without that: `classmask.class_masks` classifies the text once (the
AVX2 kernel, ~5.7 GB/s), each 64-byte block's class words give a word `starts` by bit logic
(below), and `BitCursor.next_end` walks its set bits.  Where the bit logic is not sure it sets
a bit of a second word, `dirty`, and the cursor asks `scan` for that chunk instead: so the
chunks are always scan's, byte for byte (tests/test_pretokenize_bits.py checks it on
adversarial mixes and on the corpora).

The rules, for a text of ASCII bytes other than the apostrophe (classes: L letters, D digits,
S ' ', W \t \v \f, N \r \n, P the other bytes, i.e. [^\s\p{L}\p{N}] without the apostrophe),
worked out from the pattern

    '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*
    |\s*[\r\n]|\s+(?!\S)|\s+

(the position i starts a chunk when the chunk before it ends there):

  L  after D or N; after a P that is itself after P or S (a P run of two or more, or " ."
     ends before the letter).  Not after L, S, W, nor after a lone P (`[^\r\n\p{L}\p{N}]?+`
     takes the one byte before the letters: " word", ".word", "\tword").
  D  after anything but D; inside a run of digits every third (every second for mnemonic):
     the run's offsets 0, 1, 2 are read from the words, later ones are left to scan.
  P  after L, D, N or W.  Not after P (one run), nor after S (` ?` takes the space).
  white space, for a run R of S, W and N with the byte Y after it:
     - R's first byte, unless it is N after a P: `[\r\n]*` after a punctuation run takes the
       newlines that follow it (".\n\n" is one chunk).
     - after the last N of R: `\s*[\r\n]` ends there.  An S or W after an N is that place when
       no N follows it in R (its run of S/W reaches Y), or when the N before it are the ones
       a P took (then it is the first byte left of R).
     - R's last byte when it is S or W: `\s+(?!\S)` gives it back, and it prefixes Y when Y is
       a letter (any of S and W) or punctuation (S only).
     An N inside R never starts a chunk.

o200k's pattern (`rules` with CASED) cuts the same way over ASCII but for two things: a run
of letters also starts at an uppercase letter after a lowercase one (`[U]*[L]+|[U]+[L]*`:
"fooBar" is foo|Bar, "HTMLParser" one chunk), and its punctuation runs take `[\r\n/]*` after
them, so its table marks '/' unsure like the apostrophe.  Its contractions end a letter chunk
("don't" is one), which the apostrophe's fallback covers as well.

What the words cannot see is left to scan, by setting `dirty` at every position whose rule
reads a byte that is not one of those classes: a byte >= 0x80 (a letter, a number or white
space beyond ASCII may join the run), an apostrophe (contractions: `'s` is a chunk, `'st` is
`'s` + `t`), the text's beginning and its end (cl100k's `\s++$` takes a final run of white
space whole, gpt4 does not).  A position is dirty when such a byte is at most three before it
(the rules read three bytes back at most: a contraction's end), or when it is the last S/W of
a run whose next byte is one; a run of white space whose last S/W run or whose leading
newlines cross such a byte or the block's edge leaves its S/W-after-N bytes to scan; digits
from a run's fourth on (third for mnemonic) are dirty.

Cost: the class words of a block and of the one before it (the one after only when bit 63 is
S/W), ~60 ALU operations a block, two more log-step fills when a block has an S/W after an N,
and per chunk the lowest bit of the word's rest and a de Bruijn look-up for its position.  The
kernel's result lives for one text (64 bytes of masks for 64 of text); `encode_text` makes a
cursor per text of BITS_MIN bytes or more.  A cursor is off on text mostly beyond ASCII (every
accented letter leaves its word to scan, and the words then cost more than they save): from
the start when more than one byte in NON_ASCII_SHARE is >= 0x80, and once more than
FALLBACKS_PER_BLOCK chunks per block went to scan.  docs/speed.md has the measurements.

The words are i64 and the logic relies on mypyc's 64-bit wrap-around (`1 << 63`, a carry out
of bit 63 lost): interpreted, Python's integers do not wrap, so `BITS_OK` is False there and the
callers keep to `scan`.
"""

from __future__ import annotations

from typing import Final

from librt.strings import read_i64_le
from mypy_extensions import i64

from mnemo.classmask import _DEBRUIJN, _DEBRUIJN_INDEX, APOS, GPT_TABLE, class_masks
from mnemo.patterns import pattern_of, program_of
from mnemo.pretokenize import KIND_SCAN, PATTERN_REGEX, SplitProgram, scan


def _bit63(one: i64) -> i64:
    """one << 63, computed at run time: mypyc folds a constant expression with Python's
    integers (into a boxed constant, or a C shift of an int that overflows)."""
    return one << 63


_HIGH: Final[i64] = _bit63(1)  # bit 63
_LOW63: Final[i64] = ~_HIGH  # bits 0-62
# -1 and -2 as 64-bit words to shift: a literal would be a C int, 32 bits wide
_ALL: Final[i64] = _HIGH >> 63
_NEG2: Final[i64] = _ALL << 1
_BYTES: Final[i64] = 0x0101010101010101  # one in every byte


def _every_byte(b: i64) -> i64:
    """b in every byte of a word, at run time (above 2**62 mypyc would box the constant)."""
    return b * _BYTES


_M1: Final[i64] = _every_byte(0x55)
_M2: Final[i64] = _every_byte(0x33)
_M4: Final[i64] = _every_byte(0x0F)


def _popcount(x: i64) -> i64:
    """The number of set bits of a 64-bit word (SWAR: pairs, nibbles, bytes, then a multiply
    that sums the bytes into the top one)."""
    x = x - ((x >> 1) & _M1)
    x = (x & _M2) + ((x >> 2) & _M2)
    x = (x + (x >> 4)) & _M4
    return (x * _BYTES) >> 56


def _wraps(one: i64) -> bool:
    """True when i64 arithmetic wraps at 64 bits (compiled), False interpreted."""
    x: i64 = one << 62
    x = x << 2
    return x == 0


#: Whether this module runs compiled (its bit logic needs 64-bit words that wrap).
BITS_OK: Final[bool] = _wraps(1)

#: Texts shorter than this go through `scan` alone (the masks and the cursor cost more than
#: they save on a short text).
BITS_MIN: Final[i64] = 256

#: A cursor is off from the start on a text with more than one byte >= 0x80 in this many, and
#: turns itself off beyond FALLBACKS_PER_BLOCK chunks left to scan per block made (next_end).
NON_ASCII_SHARE: Final[i64] = 20
FALLBACKS_PER_BLOCK: Final[i64] = 3


#: bit_rules' flag for o200k's letter runs, cut by case (its digit group is 3)
CASED: Final[i64] = 16


def _o200k_table() -> bytes:
    """GPT_TABLE with '/' unsure (the APOS bit): o200k's punctuation runs take the newlines
    and slashes after them (`[\r\n/]*`), ".\n/" is one chunk; the words leave every '/'
    to scan rather than tell that slash from the others."""
    t = bytearray(GPT_TABLE)
    t[0x2F] = APOS
    return bytes(t)


_O200K_TABLE: Final[bytes] = _o200k_table()


def bit_rules(regex: str | None, prog: SplitProgram) -> i64:
    """The rules a pattern's chunks follow over ASCII, for a BitCursor: its digit group (3:
    gpt4's and cl100k's regex, 2: mnemonic's), | CASED for o200k's; 0 for any other pattern
    (or interpreted, or a program not compiled into the scanner).

    Decided by the regex, not the pattern's name or id: a tokenizer loaded from a .tiktoken file
    has cl100k's regex on another Unicode version (another id).  The Unicode version does not
    matter here: the words classify ASCII only (GPT_TABLE), and no Unicode version changed an
    ASCII character's letter, case, number or white-space property."""
    if not BITS_OK or regex is None or prog.kind != KIND_SCAN:
        return 0
    if regex == PATTERN_REGEX["gpt4"] or regex == PATTERN_REGEX["cl100k"]:
        return 3
    if regex == PATTERN_REGEX["mnemonic"]:
        return 2
    if regex == PATTERN_REGEX["o200k"]:
        return 3 | CASED
    return 0


# Per pattern handle: bit_rules of its pattern (-1: not looked up yet).
_RULES: Final[list[int]] = []


def rules_of(pattern: i64) -> i64:
    """bit_rules of a pattern handle, looked up once per handle (handles are never reused):
    what the encode loops (encode_text) and counting (count.WordCounter) ask."""
    while len(_RULES) <= pattern:
        _RULES.append(-1)
    g: i64 = _RULES[pattern]
    if g < 0:
        g = bit_rules(pattern_of(pattern).regex, program_of(pattern))
        _RULES[pattern] = g
    return g


def _fill_down(m: i64, z: i64) -> i64:
    """m and every bit of z from which a run of z, going up, reaches a bit of m (log steps:
    after the step of shift s, m holds the bits within 2s below a seed through z)."""
    z = z & _LOW63  # nothing comes into bit 63 from above the block
    m |= (m >> 1) & z
    z &= z >> 1
    m |= (m >> 2) & z
    z &= z >> 2
    m |= (m >> 4) & z
    z &= z >> 4
    m |= (m >> 8) & z
    z &= z >> 8
    m |= (m >> 16) & z
    z &= z >> 16
    m |= (m >> 32) & z
    return m


def _mostly_beyond_ascii(masks: bytes, nblocks: i64, n: i64) -> bool:
    """More than one byte in NON_ASCII_SHARE is >= 0x80: every such character leaves a chunk
    or more to scan, and the words cost more than they save (docs/speed.md)."""
    count: i64 = 0
    k: i64 = 0
    while k < nblocks:
        count += _popcount(read_i64_le(masks, (k << 6) + 56))
        k += 1
    return count * NON_ASCII_SHARE > n


class BitCursor:
    """The chunk ends of one text data[start:end] under one of the covered patterns.

    `next_end(pos)` is scan(prog, data, pos, end) for a chunk start `pos` (start, or a result
    of next_end), read from the words where they are sure."""

    data: bytes
    masks: bytes
    prog: SplitProgram
    base: i64
    end: i64
    n: i64
    nblocks: i64
    digits: i64
    cased: bool
    block: i64
    stops: i64
    dirty: i64
    rest: i64  # the stops of `block` above `last`
    last: i64  # the end the last call returned (-1: none to go on from)
    loads: i64  # blocks whose words were made
    fallbacks: i64  # chunks left to scan
    off: bool  # too many of them: next_end gives -1 from now on

    def __init__(self, prog: SplitProgram, data: bytes, start: i64, end: i64, rules: i64, stop: i64 = -1) -> None:
        """A cursor over the text data[start:end] split by `prog`, whose bit_rules are
        `rules`.  With `stop` (start < stop <= end) its words
        cover data[start:stop] only: a bounded piece of a long text (encode_some_packed); the
        chunks from there on, and those whose rules read past there, come from scan, which
        sees the text up to `end`."""
        if stop < 0:
            stop = end
        self.data = data
        self.prog = prog
        self.base = start
        self.end = end
        self.n = stop - start
        self.nblocks = (self.n + 63) >> 6
        self.cased = (rules & CASED) != 0
        table = _O200K_TABLE if self.cased else GPT_TABLE
        self.masks = class_masks(data, table, start, stop)  # a range, not a copied slice
        self.digits = rules & 15
        self.block = -1
        self.stops = 0
        self.dirty = 0
        self.rest = 0
        self.last = -1
        self.loads = 0
        self.fallbacks = 0
        self.off = _mostly_beyond_ascii(self.masks, self.nblocks, self.n)

    def next_end(self, pos: i64) -> i64:
        """The end of the chunk that starts at `pos` (start <= pos < end, a chunk start), or -1
        when the words are not worth making on this text (`off`): the caller goes on with scan.

        That is decided as the blocks are made: more than FALLBACKS_PER_BLOCK chunks left to
        scan per block (text mostly beyond ASCII) costs more in words and walks than the chunks
        the words give save (docs/speed.md).

        encode_text.encode_walk repeats this walk inline (a call and the attribute stores a chunk
        were a visible share of encoding): a change here is a change there."""
        if self.off:
            return -1
        k: i64 = self.block
        w: i64 = self.rest
        if pos != self.last:
            # not where the last call ended (the first call, or after scan): find pos's block
            r: i64 = pos - self.base
            k = r >> 6
            if k != self.block and self._load(k):
                return -1
            w = self.stops & (_NEG2 << (r & 63))
        while w == 0:
            k += 1
            if k >= self.nblocks:
                self.last = -1
                return scan(self.prog, self.data, pos, self.end)
            if self._load(k):
                return -1
            w = self.stops
        low: i64 = w & -w
        if (self.dirty & low) != 0:
            self.last = -1
            self.fallbacks += 1
            return scan(self.prog, self.data, pos, self.end)
        # the walk's own chain is w -> w ^ low; the position of low (a multiply and a load)
        # is off it
        self.rest = w ^ low
        e: i64 = self.base + (k << 6) + _DEBRUIJN_INDEX[((low * _DEBRUIJN) >> 58) & 63]
        self.last = e
        return e

    def _load(self, k: i64) -> bool:
        """The words `stops` (starts | dirty) and `dirty` of block k; True when the cursor
        turns itself off there (too many chunks left to scan so far)."""
        masks = self.masks
        at: i64 = k << 6
        lo: i64 = read_i64_le(masks, at)
        lw: i64 = lo | read_i64_le(masks, at + 8)
        d: i64 = read_i64_le(masks, at + 16)
        sp: i64 = read_i64_le(masks, at + 24)
        wh: i64 = read_i64_le(masks, at + 32)
        nl: i64 = read_i64_le(masks, at + 40)
        ap: i64 = read_i64_le(masks, at + 48)
        xx: i64 = read_i64_le(masks, at + 56)
        rem: i64 = self.n - at
        inval: i64 = 0  # the bits from the end of the text on
        if rem < 64:
            inval = _ALL << rem
        p: i64 = ~(lw | d | sp | wh | nl | ap | xx | inval)
        un: i64 = xx | ap | inval
        # the previous block's last three bytes (before the text: unsure)
        plo: i64 = 0
        plw: i64 = 0
        pd: i64 = 0
        psp: i64 = 0
        pwh: i64 = 0
        pnl: i64 = 0
        pap: i64 = 0
        pp: i64 = 0
        pun: i64 = -1
        if k > 0:
            pa: i64 = at - 64
            plo = read_i64_le(masks, pa)
            plw = plo | read_i64_le(masks, pa + 8)
            pd = read_i64_le(masks, pa + 16)
            psp = read_i64_le(masks, pa + 24)
            pwh = read_i64_le(masks, pa + 32)
            pnl = read_i64_le(masks, pa + 40)
            pap = read_i64_le(masks, pa + 48)
            pxx: i64 = read_i64_le(masks, pa + 56)
            pp = ~(plw | pd | psp | pwh | pnl | pap | pxx)
            pun = pxx | pap
        # the next block's first byte: its classes at bit 63 (after the text: unsure)
        nws: i64 = 0
        nsure: i64 = 0  # a letter, digit or punctuation
        nun: i64 = 0
        sw: i64 = sp | wh
        if sw < 0 and k + 1 < self.nblocks:  # only an S/W at bit 63 reads its next byte
            na: i64 = at + 64
            nw: i64 = read_i64_le(masks, na + 24) | read_i64_le(masks, na + 32) | read_i64_le(masks, na + 40)
            nx: i64 = read_i64_le(masks, na + 48) | read_i64_le(masks, na + 56)
            nws = nw << 63
            nun = nx << 63
            nrem: i64 = rem - 64
            ninval: i64 = 0
            if nrem < 64:
                ninval = _ALL << nrem
            nun |= ninval << 63
            nsure = (~(nw | nx | ninval)) << 63
        elif rem == 64:  # the text ends with this block
            nun = _HIGH
        low63: i64 = _LOW63
        ws: i64 = sw | nl
        # a byte's previous ones
        lw1: i64 = (lw << 1) | ((plw >> 63) & 1)
        d1: i64 = (d << 1) | ((pd >> 63) & 1)
        d2: i64 = (d << 2) | ((pd >> 62) & 3)
        sp2: i64 = (sp << 2) | ((psp >> 62) & 3)
        wh1: i64 = (wh << 1) | ((pwh >> 63) & 1)
        nl1: i64 = (nl << 1) | ((pnl >> 63) & 1)
        ap1: i64 = (ap << 1) | ((pap >> 63) & 1)
        ap2: i64 = (ap << 2) | ((pap >> 62) & 3)
        p1: i64 = (p << 1) | ((pp >> 63) & 1)
        p2: i64 = (p << 2) | ((pp >> 62) & 3)
        ws1: i64 = ((sp | wh | nl) << 1) | (((psp | pwh | pnl) >> 63) & 1)
        un1: i64 = (un << 1) | ((pun >> 63) & 1)
        un2: i64 = (un << 2) | ((pun >> 62) & 3)
        un3: i64 = (un << 3) | ((pun >> 61) & 7)
        # a byte's next one
        sure_next: i64 = (((lw | d | p) >> 1) & low63) | nsure
        un_next: i64 = ((un >> 1) & low63) | nun

        good_top = sw & sure_next  # the last S/W of a run before a letter, digit or P
        starts: i64 = (
            (lw & (d1 | nl1 | (p1 & (p2 | ap2 | sp2))))
            | (d & ~d1)
            | (p & (lw1 | d1 | nl1 | wh1))
            | (ws & ~ws1 & ~(nl & (p1 | ap1)))
            | good_top
        )
        if self.cased:
            # o200k: a run of letters also starts at an uppercase letter after a lowercase one
            # ("fooBar" is foo|Bar; "HTMLParser" is one chunk: U*L+)
            starts |= lw & ~lo & ((lo << 1) | ((plo >> 63) & 1))
        dirty: i64 = un | un1 | un2 | un3 | (sw & un_next)
        if self.digits == 3:
            d3: i64 = (d << 3) | ((pd >> 61) & 7)
            dirty |= d & d1 & d2 & d3
        else:
            dirty |= d & d1 & d2
        after_nl: i64 = sw & nl1
        if after_nl != 0:
            # the first byte after the last newline of a run, or after the newlines a P took
            tail = _fill_down(good_top, sw)
            absorbed = nl & (p1 | ap1)
            landing = (nl + absorbed) & ~nl & sw
            good = after_nl & (tail | landing)
            starts |= good
            rest = after_nl & ~good
            if rest != 0:
                # unsure when its S/W run goes on past the block or to an unsure byte, or when
                # its newlines follow an unsure byte or the block's edge
                top: i64 = sw & (un_next | nws)
                cross: i64 = nl1 & 1  # newlines from the block before: who took them is not known here
                unsure_nl = nl & (un1 | cross)
                dirty |= rest & (_fill_down(top, sw) | ((nl + unsure_nl) & ~nl) | cross)
        self.block = k
        self.stops = starts | dirty
        self.dirty = dirty
        self.loads += 1
        if self.fallbacks > FALLBACKS_PER_BLOCK * self.loads + 16:
            self.off = True
            return True
        return False


def chunk_ends(prog: SplitProgram, data: bytes, start: i64, end: i64, rules: i64) -> list[int]:
    """The chunk ends of data[start:end] from a BitCursor (tests and benchmarks; the same as the
    loop over `scan`)."""
    out: list[int] = []
    cur = BitCursor(prog, data, start, end, rules)
    pos: i64 = start
    while pos < end:
        e: i64 = cur.next_end(pos)
        if e < 0:
            break
        pos = e
        out.append(pos)
    while pos < end:
        pos = scan(prog, data, pos, end)
        out.append(pos)
    return out


def chunk_count(prog: SplitProgram, data: bytes, rules: i64) -> i64:
    """How many chunks `data` splits into, by a BitCursor (the boundary loop alone)."""
    cur = BitCursor(prog, data, 0, len(data), rules)
    pos: i64 = 0
    end: i64 = len(data)
    c: i64 = 0
    while pos < end:
        e: i64 = cur.next_end(pos)
        if e < 0:
            break
        pos = e
        c += 1
    while pos < end:
        pos = scan(prog, data, pos, end)
        c += 1
    return c
