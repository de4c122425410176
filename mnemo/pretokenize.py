r"""The pre-tokenizer's scanner: cuts text into the chunks BPE merges never cross, by running a
compiled split pattern (a SplitProgram) over UTF-8 bytes.  No regex engine runs here for the
GPT family of split regexes; mnemo/regex_family.py compiles those into the tables and item
records a SplitProgram holds, and mnemo/patterns.py turns a pattern name or regex into one.

Three kinds of program:

  KIND_SCAN      a family regex: class tables, branches, shortcuts.  scan() runs it.
  KIND_REGEX     any other regex, run by the `regex` module over the decoded text (exact, slower).
  KIND_SEQUENCE  split steps applied in order, each to the pieces of the one before (Hugging
                 Face's Sequence of Split / Digits pre-tokenizers: DeepSeek-V3, StarCoder2).

All take the hot loops' form

    pos = start
    while pos < end:
        e = scan(prog, data, pos, end)     # the end of the chunk that starts at pos
        ... data[pos:e] ...
        pos = e

where the text is data[start:end]: no lookahead reaches bytes from `end` on, and a UTF-8
sequence cut by `end` is invalid there.  Any bytes are valid input: a byte that does not start a
well-formed UTF-8 sequence (in the strict sense of Python's decoder: no overlong forms, no
surrogates, nothing above U+10FFFF, the whole sequence before `end`) is a one-byte character of
the class the `regex` module gives a lone surrogate -- which is what
`data.decode("utf-8", "surrogateescape")` turns it into.  So the chunks always join back to the
input, and nothing raises on content.

How a KIND_SCAN program matches (the `regex` module's semantics, which the compiler's family
rules make sure of): at a chunk start, the branches are tried in order and the first that
matches decides the chunk.  Within a branch, a greedy run takes all it can and gives characters
back one at a time while what follows fails; a possessive one never gives back.  When no branch
matches at the chunk start, the chunk is the gap up to the next position where one does (the
`regex` module's findall would skip it; tiktoken drops it; Hugging Face's Split keeps it as a
piece, and so does mnemo, since the chunks must join back to the text).

Speed: most chunks never reach the matcher.  The compiler works out, for the first character's
atom (and the second's), what the whole alternation does whenever those decide it: "the first
character alone", "the run of letters from here", "the run of lowercase letters from the
second character, unless an apostrophe follows" (pregex_family._Abstract).  scan() looks those up
(act1, act2) and runs a run loop, with the eight-bytes-at-a-time scan for ASCII letters when the
run's set holds exactly [A-Za-z] (or [a-z]) among ASCII.

KIND_REGEX and KIND_SEQUENCE programs keep a cursor per text they are scanning (the `regex`
iterator over the decoded text; the current piece of every step): a call whose `pos` is where the
last call on the same `data` and `end` stopped continues it, any other call starts the text at
`pos`.  Cursors are found again by (id(data), end), so threads scanning different texts do
not disturb each other's.
"""

from __future__ import annotations

from typing import Any, Final

from librt.strings import BytesWriter, read_i64_le
from librt.vecs import vec
from mypy_extensions import i64

from mnemo.constants import PATTERNS
from mnemo.errors import ConfigError, InputError

KIND_SCAN: Final[i64] = 0
KIND_REGEX: Final[i64] = 1
KIND_SEQUENCE: Final[i64] = 2
KIND_MARKS: Final[i64] = 3  # not a pattern: a table of marked characters (marks_program)

# Item records, assertions and shortcut actions: the same numbers as mnemo/regex_family.py (a
# test checks).  Written as literals so that mypyc folds them into the compiled comparisons.
ITEM_WORDS: Final[i64] = 6
ITEM_SET: Final[i64] = 1
ITEM_GROUP: Final[i64] = 2
POSSESSIVE: Final[i64] = 16
REST_AT_END: Final[i64] = 1
REST_ANYWHERE: Final[i64] = 2
ASSERT_NONE: Final[i64] = 0
ASSERT_NOT: Final[i64] = 1
ASSERT_IS: Final[i64] = 2
ASSERT_END: Final[i64] = 3
ACT_GENERIC: Final[i64] = 0
ACT_FIXED: Final[i64] = 1
ACT_RUN: Final[i64] = 2
ACT_RUN_CHECK: Final[i64] = 3
ACT_NEXT: Final[i64] = 4
FOLLOW_WIDE: Final[i64] = 1 << 53
FOLLOW_WORDS: Final[i64] = 4
ACT_WHITE: Final[i64] = 5
WHITE_WORDS: Final[i64] = 5
TAIL_END: Final[i64] = 1
TAIL_NEWLINE: Final[i64] = 2
TAIL_LOOKAHEAD: Final[i64] = 3
TAIL_RUN: Final[i64] = 4
TAIL_ONE: Final[i64] = 5
ACT_CASED: Final[i64] = 6
CASED_WORDS: Final[i64] = 5
SWAR_NONE: Final[i64] = 0
SWAR_LETTERS: Final[i64] = 1
SWAR_LOWER: Final[i64] = 2

# Split behaviors of a sequence step (Hugging Face's SplitDelimiterBehavior); INVERT swaps the
# roles of matches and gaps.
ISOLATED: Final[i64] = 0
CONTIGUOUS: Final[i64] = 1
MERGED_WITH_PREVIOUS: Final[i64] = 2
MERGED_WITH_NEXT: Final[i64] = 3
INVERT: Final[i64] = 16
# An isolated step whose gaps are an error (patterns.SplitStep.unmatched "refuse").
REFUSE_UNMATCHED: Final[i64] = 32

# A segment (match or gap) of a step is returned as its end, with this bit set for a match.
_MATCH: Final[i64] = 1 << 60
_END_BITS: Final[i64] = (1 << 60) - 1

# One in every byte of an i64, for the eight-bytes-at-a-time letter scans.
_ONES: Final[i64] = 0x0101010101010101
# Cursors kept per program (texts being scanned at once); the oldest goes beyond this.
_MAX_CURSORS: Final = 64

PATTERN_MNEMONIC: Final[i64] = 0
PATTERN_GPT4: Final[i64] = 1
PATTERN_GPT2: Final[i64] = 2
PATTERN_O200K: Final[i64] = 3
PATTERN_CL100K: Final[i64] = 4

# The named patterns (constants.PATTERNS: their ids are stored in tokenizer.bin v2), as the
# `regex` module spells them.  mnemo/patterns.py compiles them like any other family regex.
_O200K_LETTERS: Final[str] = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
)
PATTERN_REGEX: Final[dict[str, str]] = {
    "mnemonic": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
    ),
    "gpt4": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
    ),
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    # as tiktoken's o200k_base spells it (../shared/fixtures/tiktoken/README.md)
    "o200k": _O200K_LETTERS + r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # as tiktoken's cl100k_base spells it (the same README)
    "cl100k": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
}
assert tuple(PATTERN_REGEX) == PATTERNS


def pattern_id(name: str) -> i64:
    """The tokenizer.bin id of a named pattern: its index in constants.PATTERNS ("mnemonic" -> 0)."""
    if name in PATTERNS:
        return PATTERNS.index(name)
    raise ConfigError(
        f"unknown pre-tokenizer pattern {name!r}; use one of {', '.join(repr(p) for p in PATTERNS)} (default 'mnemonic')"
    )


def pattern_name(pid: i64) -> str:
    """The name of a named pattern's id (the inverse of pattern_id)."""
    if 0 <= pid < len(PATTERNS):
        return PATTERNS[pid]
    known = ", ".join(f"{i} ({name})" for i, name in enumerate(PATTERNS))
    raise ConfigError(f"unknown pre-tokenizer pattern id {pid}; use one of {known}")


# ---- programs and cursors ------------------------------------------------------------------


class _Cursor:
    """Where a stateful program stands in one text: data[.. end], next chunk at `next`."""

    data: bytes
    end: i64
    next: i64

    def __init__(self, data: bytes, start: i64, end: i64) -> None:
        self.data = data
        self.end = end
        self.next = start


class _RegexCursor(_Cursor):
    """The `regex` module's finditer over data[start:end], decoded with surrogateescape; gaps
    between its matches are segments too."""

    text: str
    it: Any
    is_ascii: bool
    cpos: i64  # character offset in text of `next`
    pend_s: i64  # a match found after a gap, waiting: its character span (-1: none)
    pend_e: i64
    # When the matches tile the text (no gaps, the common case), findall's strings are the
    # segments, taken in order from `k`: no match object per chunk (docs/speed.md has the figure).
    tiles: list[str] | None
    k: i64

    def __init__(self, p: SplitProgram, data: bytes, start: i64, end: i64) -> None:
        super().__init__(data, start, end)
        raw = data[start:end]
        self.text = raw.decode("utf-8", "surrogateescape")
        self.is_ascii = len(self.text) == len(raw)
        rx = p.rx
        marks = p.marks
        if marks is not None and not self.is_ascii and marked(marks, data, start, end):
            rx = p.rx_ref
        self.cpos = 0
        self.pend_s = -1
        self.pend_e = -1
        self.tiles = None
        self.k = 0
        if rx.groups == 0:  # findall gives the matches themselves (not groups)
            found: list[str] = rx.findall(self.text)
            total: i64 = 0
            for piece in found:
                total += len(piece)
            if total == len(self.text):  # in order and not overlapping: they tile the text
                self.tiles = found
        self.it = None if self.tiles is not None else rx.finditer(self.text)

    def _bytes(self, a: i64, b: i64) -> i64:
        if self.is_ascii:
            return b - a
        return len(self.text[a:b].encode("utf-8", "surrogateescape"))

    def segment(self) -> i64:
        """The next segment's end, with _MATCH set for a match (the cursor moves past it)."""
        tiles = self.tiles
        if tiles is not None:
            while self.k < len(tiles):
                piece = tiles[self.k]
                self.k += 1
                if piece:
                    if self.is_ascii or piece.isascii():
                        self.next += len(piece)
                    else:
                        self.next += len(piece.encode("utf-8", "surrogateescape"))
                    return self.next | _MATCH
            self.next = self.end
            return self.end
        if self.pend_s >= 0:
            s = self.pend_s
            e = self.pend_e
            self.pend_s = -1
            self.next += self._bytes(s, e)
            self.cpos = e
            return self.next | _MATCH
        n: i64 = len(self.text)
        while True:
            m = next(self.it, None)
            if m is None:
                if self.cpos >= n:
                    return self.end  # only reached by a caller past the end
                self.cpos = n
                self.next = self.end
                return self.end
            span = m.span()
            s = span[0]
            e = span[1]
            if e > s:
                break
        if s > self.cpos:
            self.pend_s = s
            self.pend_e = e
            self.next += self._bytes(self.cpos, s)
            self.cpos = s
            return self.next
        self.next += self._bytes(s, e)
        self.cpos = e
        return self.next | _MATCH


class _SeqCursor(_Cursor):
    """A sequence's state: for every step, the end of its current piece (-1: none yet), the
    regex cursor of its enclosing piece (regex steps), and one segment read ahead."""

    ends: vec[i64]
    subs: list[_RegexCursor | None]
    peek_at: vec[i64]
    peek: vec[i64]

    def __init__(self, data: bytes, start: i64, end: i64, levels: i64) -> None:
        super().__init__(data, start, end)
        self.ends = vec[i64]([-1] * levels)
        self.subs = [None] * levels
        self.peek_at = vec[i64]([-1] * levels)
        self.peek = vec[i64]([0] * levels)


class SplitProgram:
    """A compiled split pattern (mnemo/patterns.py builds them; see the module docstring)."""

    kind: i64
    # KIND_SCAN: the pattern's atoms (classes of characters) and branches (regex_family.Compiled)
    n_atoms: i64
    width: i64  # n_atoms + 1: the row length of act2 (the last column is "end of text")
    ascii: bytes
    table: bytes  # the two-stage table of atoms: stage 1 (one byte per block), then stage 2
    bmp: bytes  # the atom of each code point below 0x10000 (the table's, one load: _run)
    stage2_at: i64
    shift: i64
    low: i64
    invalid_atom: i64
    code: vec[i64]
    branch_at: vec[i64]
    cand_at: vec[i64]
    cands: vec[i64]
    masks: vec[i64]
    groups: vec[i64]
    act1: vec[i64]
    act2: vec[i64]
    act3: vec[i64]
    whites: vec[i64]
    follows: vec[i64]
    caseds: vec[i64]
    pair: bytes
    tri: bytes
    start_mask: i64
    cased_second: i64  # _cased_ends' second result
    # the last run the matcher scanned (branches that start with the same set scan it once):
    # its data, start, end, set and maximum, its end, count, the atom that stopped it (-1: none
    # read) and the start of its last character
    run_data: bytes
    run_pos: i64
    run_end: i64
    run_mask: i64
    run_max: i64
    run_q: i64
    run_cnt: i64
    run_stop: i64
    run_prev: i64
    # KIND_REGEX: the regex; the regex rewritten for a reference's Unicode tables and the
    # characters on which the two differ (a KIND_MARKS table), or None (regex_tables.py)
    rx: Any
    rx_ref: Any
    marks: SplitProgram | None
    # KIND_SEQUENCE
    steps: list[SplitProgram]
    behaviors: vec[i64]
    # cursors of KIND_REGEX and KIND_SEQUENCE
    last: _Cursor | None
    cursors: dict[tuple[int, int], _Cursor]

    def __init__(self, kind: i64) -> None:
        self.kind = kind
        self.n_atoms = 0
        self.width = 1
        self.ascii = b""
        self.table = b""
        self.bmp = b""
        self.stage2_at = 0
        self.shift = 7
        self.low = 127
        self.invalid_atom = 0
        self.code = vec[i64]()
        self.branch_at = vec[i64]()
        self.cand_at = vec[i64]()
        self.cands = vec[i64]()
        self.masks = vec[i64]()
        self.groups = vec[i64]()
        self.act1 = vec[i64]()
        self.act2 = vec[i64]()
        self.act3 = vec[i64]()
        self.whites = vec[i64]()
        self.follows = vec[i64]()
        self.caseds = vec[i64]()
        self.pair = b""
        self.tri = b""
        self.start_mask = 0
        self.cased_second = -1
        self.run_data = b""
        self.run_pos = -1
        self.run_end = -1
        self.run_mask = 0
        self.run_max = 0
        self.run_q = 0
        self.run_cnt = 0
        self.run_stop = -1
        self.run_prev = -1
        self.rx = None
        self.rx_ref = None
        self.marks = None
        self.steps = []
        self.behaviors = vec[i64]()
        self.last = None
        self.cursors = {}


def scan_program(
    n_atoms: i64,
    ascii_atoms: bytes,
    stage1: bytes,
    stage2: bytes,
    shift: i64,
    invalid_atom: i64,
    code: list[int],
    branch_at: list[int],
    cand_at: list[int],
    cands: list[int],
    masks: list[int],
    groups: list[int],
    act1: list[int],
    act2: list[int],
    act3: list[int],
    whites: list[int],
    follows: list[int],
    caseds: list[int],
    pair: bytes,
    tri: bytes,
    start_mask: i64,
) -> SplitProgram:
    """A KIND_SCAN program from the compiler's output (regex_family.Compiled's fields)."""
    p = SplitProgram(KIND_SCAN)
    p.n_atoms = n_atoms
    p.width = n_atoms + 1
    p.ascii = ascii_atoms
    p.table = stage1 + stage2
    p.stage2_at = len(stage1)
    p.shift = shift
    p.low = (1 << shift) - 1
    p.invalid_atom = invalid_atom
    p.bmp = _bmp_atoms(p)
    p.code = vec[i64](code)
    p.branch_at = vec[i64](branch_at)
    p.cand_at = vec[i64](cand_at)
    p.cands = vec[i64](cands)
    p.masks = vec[i64](masks)
    p.groups = vec[i64](groups)
    p.act1 = vec[i64](act1)
    p.act2 = vec[i64](act2)
    p.act3 = vec[i64](act3)
    p.whites = vec[i64](whites)
    p.follows = vec[i64](follows)
    p.caseds = vec[i64](caseds)
    p.pair = pair
    p.tri = tri
    p.start_mask = start_mask
    return p


def _bmp_atoms(p: SplitProgram) -> bytes:
    """The atom of every code point below 0x10000 from p's two-stage table, one byte each
    (64 KB): _run reads the atom of a valid 2- or 3-byte character with one load and no call
    (surrogates are never looked up here: their bytes are invalid, see _decode)."""
    out = BytesWriter()
    table = p.table
    shift = p.shift
    low = p.low
    at = p.stage2_at
    cp: i64 = 0
    while cp < 0x10000:
        out.append(table[at + ((table[cp >> shift] << shift) | (cp & low))])
        cp += 1
    return out.getvalue()


def regex_program(rx: Any, rx_ref: Any = None, marks: SplitProgram | None = None) -> SplitProgram:
    """A KIND_REGEX program: `rx` is a compiled `regex` pattern.  With `marks` (marks_program),
    a text holding a marked character runs `rx_ref` instead (mnemo/regex_tables.py)."""
    p = SplitProgram(KIND_REGEX)
    p.rx = rx
    if marks is not None:
        p.rx_ref = rx_ref
        p.marks = marks
    return p


def marks_program(stage1: bytes, stage2: bytes, shift: i64) -> SplitProgram:
    """A KIND_MARKS table: a two-stage table of one byte per code point, nonzero where marked
    (invalid bytes are not)."""
    p = SplitProgram(KIND_MARKS)
    p.table = stage1 + stage2
    p.stage2_at = len(stage1)
    p.shift = shift
    p.low = (1 << shift) - 1
    return p


def marked(t: SplitProgram, data: bytes, start: i64, end: i64) -> bool:
    """Does data[start:end] hold a character the KIND_MARKS table `t` marks?  One pass over the
    bytes, ASCII skipped (the check that keeps a regex on a reference's tables at the native
    regex's speed: docs/pretokenizer.md)."""
    i = start
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            i += 1
            continue
        r = _decode(t, data, i, end)
        if (r & 0xFF) != 0:
            return True
        i += r >> 8
    return False


def sequence_program(steps: list[SplitProgram], behaviors: list[int]) -> SplitProgram:
    """A KIND_SEQUENCE program: each step splits the pieces of the one before; behaviors[k] is
    step k's split behavior (ISOLATED, ..., | INVERT)."""
    if not steps or len(steps) != len(behaviors):
        raise ConfigError(f"a sequence needs one behavior per step, got {len(steps)} steps and {len(behaviors)}")
    for s in steps:
        if s.kind == KIND_SEQUENCE:
            raise ConfigError("a sequence step cannot be a sequence itself")
    p = SplitProgram(KIND_SEQUENCE)
    p.steps = steps
    p.behaviors = vec[i64](behaviors)
    return p


# ---- characters ----------------------------------------------------------------------------


def _decode(p: SplitProgram, data: bytes, i: i64, end: i64) -> i64:
    """Atom and byte length of the character at i, whose lead byte is >= 0x80, packed as
    atom | length << 8.  A byte that does not start a well-formed sequence ending by `end` is
    one character of one byte, of the invalid-byte atom."""
    b0: i64 = data[i]
    cp: i64
    n: i64
    if b0 < 0xE0:
        if b0 < 0xC2 or i + 1 >= end:
            return p.invalid_atom | (1 << 8)
        b1: i64 = data[i + 1]
        if (b1 & 0xC0) != 0x80:
            return p.invalid_atom | (1 << 8)
        cp = ((b0 & 0x1F) << 6) | (b1 & 0x3F)
        n = 2
    elif b0 < 0xF0:
        if i + 2 >= end:
            return p.invalid_atom | (1 << 8)
        b1 = data[i + 1]
        b2: i64 = data[i + 2]
        if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80:
            return p.invalid_atom | (1 << 8)
        if b0 == 0xE0 and b1 < 0xA0:  # overlong
            return p.invalid_atom | (1 << 8)
        if b0 == 0xED and b1 >= 0xA0:  # a surrogate
            return p.invalid_atom | (1 << 8)
        cp = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
        n = 3
    else:
        if b0 > 0xF4 or i + 3 >= end:
            return p.invalid_atom | (1 << 8)
        b1 = data[i + 1]
        b2 = data[i + 2]
        b3: i64 = data[i + 3]
        if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80:
            return p.invalid_atom | (1 << 8)
        if b0 == 0xF0 and b1 < 0x90:  # overlong
            return p.invalid_atom | (1 << 8)
        if b0 == 0xF4 and b1 >= 0x90:  # above U+10FFFF
            return p.invalid_atom | (1 << 8)
        cp = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
        n = 4
    shift = p.shift
    table = p.table
    atom: i64 = table[p.stage2_at + ((table[cp >> shift] << shift) | (cp & p.low))]
    return atom | (n << 8)


def _atom(p: SplitProgram, data: bytes, i: i64, end: i64) -> i64:
    """atom | length << 8 of the character at i (any lead byte).  A well-formed 2- or 3-byte
    character is decoded here, as in _run (p.bmp), without the call to _decode."""
    b: i64 = data[i]
    if b < 0x80:
        a: i64 = p.ascii[b]
        return a | (1 << 8)
    if b >= 0xC2 and b < 0xF0 and i + 1 < end:
        b1: i64 = data[i + 1]
        if (b1 & 0xC0) == 0x80:
            if b < 0xE0:
                a2: i64 = p.bmp[((b & 0x1F) << 6) | (b1 & 0x3F)]
                return a2 | (2 << 8)
            if i + 2 < end:
                b2: i64 = data[i + 2]
                cp: i64 = ((b & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
                if (b2 & 0xC0) == 0x80 and cp >= 0x800 and (cp < 0xD800 or cp >= 0xE000):
                    a3: i64 = p.bmp[cp]
                    return a3 | (3 << 8)
    return _decode(p, data, i, end)


def _back(p: SplitProgram, data: bytes, lo: i64, q: i64) -> i64:
    """The start of the character that ends at q (> lo), where lo is a character start and the
    characters from lo to q were read forward: a lead byte always starts a character, so the
    character is the valid sequence of 2-4 bytes from a lead byte at or after lo ending exactly
    at q, or else the single byte before q."""
    b: i64 = data[q - 1]
    if b < 0x80 or b >= 0xC0:
        return q - 1
    k: i64 = 2
    while k <= 4:
        s = q - k
        if s < lo:
            return q - 1
        c: i64 = data[s]
        if (c & 0xC0) != 0x80:
            if c >= 0xC2 and (_decode(p, data, s, q) >> 8) == k:
                return s
            return q - 1
        k += 1
    return q - 1


# ---- runs ----------------------------------------------------------------------------------


def ascii_letters_end(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of ASCII letters [A-Za-z] starting at i.  It stops at any other byte,
    a non-ASCII lead byte included.

    Eight bytes at a time while eight remain before `end`: one 64-bit load, a handful of ALU
    operations that mark every byte that is not an ASCII letter, and the position of the first
    mark -- no branch per byte (docs/pretokenizer.md, "Speed").
    """
    # Not a Final: mypyc would fold _ONES << 7 (above 2**62) into a boxed constant, while a
    # local shift stays C arithmetic that gcc folds.  hi is 0x80 in every byte.
    seven: i64 = 7
    hi = _ONES << seven
    while i + 8 <= end:
        x = read_i64_le(data, i)
        # Per byte, with no carries between bytes (every sum stays below 0x100):
        #   y = the byte lowercased with its top bit cleared
        #   y + 0x1F reaches 0x80 iff y >= 'a';  y + 0x05 reaches 0x80 iff y > 'z'
        #   a letter also needs the original top bit clear (ASCII)
        y = (x | (_ONES * 0x20)) & ~hi
        m = ~((y + _ONES * 0x1F) & ~(y + _ONES * 0x05) & ~x) & hi
        if m != 0:
            # m & -m keeps the lowest mark, at bit 8k+7 for the first non-letter byte k.
            # Below it, bit 0 is set in bytes 0..k; multiplying by _ONES sums those k+1 ones
            # into the top byte.
            low = m & -m
            return i + ((((low - 1) & _ONES) * _ONES) >> 56) - 1
        i += 8
    while i < end:
        b: i64 = data[i]
        if b < 0x41 or b > 0x7A or (b > 0x5A and b < 0x61):
            return i
        i += 1
    return i


def ascii_lower_end(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of ASCII lowercase letters [a-z] starting at i: ascii_letters_end
    without its case fold (see there for the lane arithmetic)."""
    seven: i64 = 7
    hi = _ONES << seven
    while i + 8 <= end:
        x = read_i64_le(data, i)
        y = x & ~hi
        m = ~((y + _ONES * 0x1F) & ~(y + _ONES * 0x05) & ~x) & hi
        if m != 0:
            low = m & -m
            return i + ((((low - 1) & _ONES) * _ONES) >> 56) - 1
        i += 8
    while i < end:
        b: i64 = data[i]
        if b < 0x61 or b > 0x7A:
            return i
        i += 1
    return i


def _run(p: SplitProgram, data: bytes, i: i64, end: i64, act: i64) -> i64:
    """A shortcut's run: the end of the run of masks[act >> 8 & 0xFF] from i, at most
    act >> 24 characters (0: no limit)."""
    mask = p.masks[(act >> 8) & 0xFF]
    ascii = p.ascii
    limit: i64 = (act >> 24) & 0xFF
    swar: i64 = (act >> 6) & 3
    b: i64
    if swar == SWAR_LETTERS:
        i = ascii_letters_end(data, i, end)
        if i >= end or data[i] < 0x80:
            return i  # an ASCII byte that is not a letter: not in the set
    elif swar == SWAR_LOWER:
        i = ascii_lower_end(data, i, end)
        if i >= end or data[i] < 0x80:
            return i
    if limit == 0:
        bmp = p.bmp
        while i < end:
            b = data[i]
            if b < 0x80:
                if ((mask >> ascii[b]) & 1) == 0:
                    return i
                i += 1
                continue
            # _decode inline for the well-formed 2- and 3-byte characters (Cyrillic, Greek,
            # Arabic, CJK, Devanagari...): no call and one table load (bmp); any other lead
            # byte, a sequence cut by `end`, a bad continuation, an overlong form or a
            # surrogate goes to _decode, whose rules these are (docs/speed.md).
            if b >= 0xC2 and b < 0xF0 and i + 1 < end:
                b1: i64 = data[i + 1]
                if (b1 & 0xC0) == 0x80:
                    if b < 0xE0:
                        if ((mask >> bmp[((b & 0x1F) << 6) | (b1 & 0x3F)]) & 1) == 0:
                            return i
                        i += 2
                        continue
                    if i + 2 < end:
                        b2: i64 = data[i + 2]
                        cp: i64 = ((b & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
                        if (b2 & 0xC0) == 0x80 and cp >= 0x800 and (cp < 0xD800 or cp >= 0xE000):
                            if ((mask >> bmp[cp]) & 1) == 0:
                                return i
                            i += 3
                            continue
            v = _decode(p, data, i, end)
            if ((mask >> (v & 0xFF)) & 1) == 0:
                return i
            i += v >> 8
        return i
    while i < end and limit > 0:
        b = data[i]
        if b < 0x80:
            if ((mask >> ascii[b]) & 1) == 0:
                return i
            i += 1
        else:
            v = _decode(p, data, i, end)
            if ((mask >> (v & 0xFF)) & 1) == 0:
                return i
            i += v >> 8
        limit -= 1
    return i


# ---- the matcher ---------------------------------------------------------------------------


def _group_at(p: SplitProgram, data: bytes, end: i64, at: i64, pos: i64) -> i64:
    """Where the group alternative whose record starts at groups[at] ends when it matches at
    pos, or -1."""
    groups = p.groups
    n = groups[at]
    q = pos
    k: i64 = 1
    while k <= n:
        if q >= end:
            return -1
        v = _atom(p, data, q, end)
        if ((groups[at + k] >> (v & 0xFF)) & 1) == 0:
            return -1
        q += v >> 8
        k += 1
    return q


def _seq(p: SplitProgram, data: bytes, end: i64, base: i64, j: i64, n: i64, pos: i64, akind: i64, amask: i64) -> i64:
    """Match items j..n-1 of the branch whose item records start at code[base], from pos, and
    the branch's assertion; the match's end, or -1.  Backtracking as the `regex` module does:
    a greedy run gives back one character at a time, a possessive one never.  A greedy run
    gives back only to where what follows can start (its record's rest mask and flags): the
    positions skipped are ones where the rest fails at its first character."""
    code = p.code
    ascii = p.ascii
    while j < n:
        r = base + ITEM_WORDS * j
        op = code[r]
        mask = code[r + 1]
        mn = code[r + 2]
        mx = code[r + 3]
        if (op & 15) == ITEM_SET:
            greedy = (op & POSSESSIVE) == 0 and mn != mx
            rest = code[r + 4]
            flags = code[r + 5]
            q = pos
            cnt: i64 = 0
            a: i64 = -1  # the atom of the character that stops the run (-1: none read)
            last: i64 = -1  # the last place in the run where the rest could start
            last_cnt: i64 = 0
            if (
                p.run_pos == pos
                and p.run_mask == mask
                and p.run_max == mx
                and p.run_end == end
                and p.run_data is data
                and (not greedy or (mask & ~rest) == 0 or (mask & rest) == 0)
            ):
                # the run a branch before this one scanned: every character of it can start
                # the rest (the last one is where to give back to), or none can
                q = p.run_q
                cnt = p.run_cnt
                a = p.run_stop
                if greedy and (mask & rest) != 0 and cnt > mn:
                    last = p.run_prev
                    last_cnt = cnt - 1
            else:
                prev: i64 = -1
                while cnt != mx and q < end:
                    b: i64 = data[q]
                    w: i64 = 1
                    if b < 0x80:
                        a = ascii[b]
                    else:
                        v = _decode(p, data, q, end)
                        a = v & 0xFF
                        w = v >> 8
                    if ((mask >> a) & 1) == 0:
                        break
                    if greedy and cnt >= mn and ((rest >> a) & 1) != 0:
                        last = q
                        last_cnt = cnt
                    a = -1
                    prev = q
                    q += w
                    cnt += 1
                p.run_data = data
                p.run_pos = pos
                p.run_end = end
                p.run_mask = mask
                p.run_max = mx
                p.run_q = q
                p.run_cnt = cnt
                p.run_stop = a
                p.run_prev = prev
            if cnt < mn:
                return -1
            if not greedy or (flags & REST_ANYWHERE) != 0:
                pos = q
                j += 1
                continue
            # the run as long as it goes, if the rest can start there
            if q >= end:
                ok = (flags & REST_AT_END) != 0
            else:
                if a < 0:
                    a = _atom(p, data, q, end) & 0xFF
                ok = ((rest >> a) & 1) != 0
            if ok:
                e = _seq(p, data, end, base, j + 1, n, q, akind, amask)
                if e >= 0:
                    return e
            # then give back to the last place inside it where the rest can start, and so on
            q = last
            cnt = last_cnt
            while q >= 0:
                e = _seq(p, data, end, base, j + 1, n, q, akind, amask)
                if e >= 0:
                    return e
                while True:
                    if cnt == mn:
                        return -1
                    q = _back(p, data, pos, q)
                    cnt -= 1
                    if ((rest >> (_atom(p, data, q, end) & 0xFF)) & 1) != 0:
                        break
            return -1
        else:
            at = mask + 2
            n_alts = p.groups[mask]
            if pos >= end or ((p.groups[mask + 1] >> (_atom(p, data, pos, end) & 0xFF)) & 1) == 0:
                n_alts = 0  # no alternative starts with the character here
            k: i64 = 0
            matched = False
            while k < n_alts:
                q = _group_at(p, data, end, at, pos)
                if q >= 0:
                    if (op & POSSESSIVE) != 0:
                        matched = True
                        pos = q
                        break
                    e = _seq(p, data, end, base, j + 1, n, q, akind, amask)
                    if e >= 0:
                        return e
                at += p.groups[at] + 1
                k += 1
            if not matched and mn > 0:
                return -1
            j += 1
    if akind == ASSERT_NONE:
        return pos
    if akind == ASSERT_END:
        return pos if pos == end else -1
    inside = False
    if pos < end:
        inside = ((amask >> (_atom(p, data, pos, end) & 0xFF)) & 1) != 0
    if akind == ASSERT_NOT:
        return -1 if inside else pos
    return pos if inside else -1


def _match(p: SplitProgram, data: bytes, pos: i64, end: i64, atom: i64, first: i64) -> i64:
    """The end of the first branch from branch `first` on that matches at pos (whose first
    character has `atom`), or -1."""
    p.run_pos = -1
    k = p.cand_at[atom]
    stop = p.cand_at[atom + 1]
    e: i64 = -1
    while k < stop:
        b = p.cands[k]
        if b >= first:
            r = p.branch_at[b]
            e = _seq(p, data, end, r + ITEM_WORDS, 0, p.code[r], pos, p.code[r + 1], p.code[r + 2])
            if e >= 0:
                break
        k += 1
    p.run_pos = -1
    p.run_data = b""  # hold no reference to the text
    return e


def _gap_end(p: SplitProgram, data: bytes, i: i64, end: i64) -> i64:
    """The first position from i on where a branch matches (or `end`): where a gap ends."""
    while i < end:
        v = _atom(p, data, i, end)
        a = v & 0xFF
        if ((p.start_mask >> a) & 1) != 0 and _match(p, data, i, end, a, 0) >= 0:
            return i
        i += v >> 8
    return end


def _segment(p: SplitProgram, data: bytes, pos: i64, end: i64) -> i64:
    """A KIND_SCAN program's segment at pos: the match's end | _MATCH, or the gap's end."""
    v = _atom(p, data, pos, end)
    e = _match(p, data, pos, end, v & 0xFF, 0)
    if e >= 0:
        return e | _MATCH
    return _gap_end(p, data, pos + (v >> 8), end)


def scan(p: SplitProgram, data: bytes, pos: i64, end: i64) -> i64:
    """The end of the chunk that starts at `pos` in the text data[..end] (see the module
    docstring; pos < end <= len(data) is the caller's to ensure).

    The commonest chunks end first: two ASCII bytes whose pair action is a run (or a fixed
    length), a run of ASCII letters that ends within its first eight bytes at an ASCII byte
    that does not follow it ("word", " word", ", ").  Anything else goes on below, which
    decides every case from scratch."""
    if p.kind != KIND_SCAN:
        return _scan_stateful(p, data, pos, end)
    b: i64 = data[pos]
    i: i64 = pos + 1  # the ends of the first, second and third characters, as far as read
    j: i64 = i
    l: i64 = i
    act: i64 = 0
    v: i64
    if b < 0x80 and i < end:
        b1: i64 = data[i]
        if b1 < 0x80:
            act = read_i64_le(p.pair, ((b << 7) | b1) << 3)
            if act != 0:
                j = i + 1
                if (act & 15) == ACT_NEXT:  # the third character decides (act3)
                    b2: i64 = 0x80
                    if j < end:
                        b2 = data[j]
                    if b2 < 0x80:
                        act = read_i64_le(p.tri, ((((act >> 8) & 0xFFFFFF) << 7) | b2) << 3)
                        l = j + 1
                    else:
                        act = _third(p, data, j, end, act)
                        l = j + (act >> 54)
                        act &= (1 << 54) - 1
                    if (act & 15) == ACT_GENERIC:
                        return _general(p, data, pos, end, (act >> 8) & 0xFF)
                    if (act & 15) == ACT_WHITE:
                        return _white(p, data, pos, end, (act >> 8) & 0xFFFFFF)
                    if (act & 15) == ACT_CASED:
                        return _cased(p, data, pos, end, (act >> 8) & 0xFFFFFF)
    if act == 0:
        act = _shortcut(p, data, pos, end)
        if (act & 15) == ACT_GENERIC:
            return _general(p, data, pos, end, (act >> 8) & 0xFF)
        if (act & 15) == ACT_WHITE:
            return _white(p, data, pos, end, (act >> 8) & 0xFFFFFF)
        if (act & 15) == ACT_CASED:
            return _cased(p, data, pos, end, (act >> 8) & 0xFFFFFF)
        i = pos + ((act >> 54) & 7)
        j = i + ((act >> 57) & 7)
        l = j + ((act >> 60) & 7)
        act &= (1 << 54) - 1
    kind: i64 = act & 15
    if kind == ACT_WHITE:
        return _white(p, data, pos, end, (act >> 8) & 0xFFFFFF)
    if kind == ACT_CASED:
        return _cased(p, data, pos, end, (act >> 8) & 0xFFFFFF)
    if kind == ACT_FIXED:
        n: i64 = (act >> 4) & 15
        return i if n == 1 else (j if n == 2 else l)
    s: i64 = (act >> 4) & 3
    start = pos if s == 0 else (i if s == 1 else (j if s == 2 else l))
    q: i64
    if ((act >> 6) & 3) == SWAR_LETTERS and start + 8 <= end:
        # the first eight bytes of a letter run inline: most words end within them, and a call
        # costs about as much as the block (see ascii_letters_end for the lane arithmetic)
        seven: i64 = 7
        hi = _ONES << seven
        x = read_i64_le(data, start)
        y = (x | (_ONES * 0x20)) & ~hi
        m = ~((y + _ONES * 0x1F) & ~(y + _ONES * 0x05) & ~x) & hi
        if m != 0:
            low = m & -m
            q = start + ((((low - 1) & _ONES) * _ONES) >> 56) - 1
            if (x & low) != 0:  # the byte that ends the ASCII letters is from 0x80: go on
                q = _run(p, data, q, end, act & ~(3 << 6))
        else:
            q = _run(p, data, start + 8, end, act)
    elif ((act >> 6) & 3) == SWAR_LOWER and start + 8 <= end:
        seven2: i64 = 7
        hi2 = _ONES << seven2
        x = read_i64_le(data, start)
        y = x & ~hi2
        m = ~((y + _ONES * 0x1F) & ~(y + _ONES * 0x05) & ~x) & hi2
        if m != 0:
            low = m & -m
            q = start + ((((low - 1) & _ONES) * _ONES) >> 56) - 1
            if (x & low) != 0:
                q = _run(p, data, q, end, act & ~(3 << 6))
        else:
            q = _run(p, data, start + 8, end, act)
    else:
        q = _run(p, data, start, end, act)
    if kind == ACT_RUN or q >= end:
        return q
    c: i64 = data[q]
    if c < 0x80 and (act & FOLLOW_WIDE) == 0:
        # the follow set's ASCII bytes are in the action itself
        if c != (act >> 32) & 0x7F and c != (act >> 39) & 0x7F and c != (act >> 46) & 0x7F:
            return q
    elif not _follows(p, data, q, end, act):
        return q
    return _follow_end(p, data, q, end, (act >> 16) & 0xFF)


def _white(p: SplitProgram, data: bytes, pos: i64, end: i64, w: i64) -> i64:
    """The white-space tail program whites[w] at pos, whose first character is in its set S:
    one scan of the run of S, then the tail's branches in order (regex_family.ACT_WHITE)."""
    ws = p.whites
    r = w * WHITE_WORDS
    s_mask = ws[r]
    x_mask = ws[r + 1]
    a_mask = ws[r + 2]
    after = ws[r + 3]
    kinds = ws[r + 4]
    ascii = p.ascii
    q = pos
    n: i64 = 0
    prev: i64 = pos  # the start of the run's last character
    first_end: i64 = pos
    x_end: i64 = -1  # the end of the run's last character of X
    z: i64 = -1  # the atom that stops the run (-1: the end of the text)
    while q < end:
        b: i64 = data[q]
        width: i64 = 1
        a: i64
        if b < 0x80:
            a = ascii[b]
        else:
            v = _decode(p, data, q, end)
            a = v & 0xFF
            width = v >> 8
        if ((s_mask >> a) & 1) == 0:
            z = a
            break
        prev = q
        q += width
        n += 1
        if n == 1:
            first_end = q
        if ((x_mask >> a) & 1) != 0:
            x_end = q
    while kinds != 0:
        k = kinds & 15
        if k == TAIL_END:
            if q >= end:
                return q
        elif k == TAIL_NEWLINE:
            if x_end >= 0:
                return x_end
        elif k == TAIL_LOOKAHEAD:
            if z < 0 or ((a_mask >> z) & 1) == 0:
                return q
            if n >= 2:
                return prev
        elif k == TAIL_RUN:
            return q
        else:
            return first_end
        kinds >>= 4
    return _general(p, data, pos, end, after)


def _cased_ends(p: SplitProgram, data: bytes, q: i64, end: i64, a_mask: i64, b_mask: i64) -> i64:
    """A*B+ and A+B* from q: the end of the first (or -1); the second's (or -1) goes to
    p.cased_second (no thread runs between: see encode_chunk.Encoder).  A* takes the run of A; B+ then takes the run of B after it, or else A* gives
    back to the run's last character that is also in B, which B+ takes alone (what follows it
    in the run is not in B); A+B* is the run itself, B* taking nothing (what follows the run is
    not in B, or A*B+ would have matched)."""
    ascii = p.ascii
    i = q
    a: i64 = -1
    width: i64 = 1
    both_end: i64 = -1
    while i < end:
        b: i64 = data[i]
        width = 1
        if b < 0x80:
            a = ascii[b]
        else:
            v = _atom(p, data, i, end)
            a = v & 0xFF
            width = v >> 8
        if ((a_mask >> a) & 1) == 0:
            break
        i += width
        if ((b_mask >> a) & 1) != 0:
            both_end = i
        a = -1
    first: i64 = -1
    if a >= 0 and ((b_mask >> a) & 1) != 0:
        first = _run_set(p, data, i + width, end, b_mask)
    else:
        first = both_end
    p.cased_second = i if i > q else -1
    return first


def _run_set(p: SplitProgram, data: bytes, i: i64, end: i64, mask: i64) -> i64:
    """The end of the run of `mask` from i."""
    ascii = p.ascii
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            if ((mask >> ascii[b]) & 1) == 0:
                return i
            i += 1
        else:
            v = _decode(p, data, i, end)
            if ((mask >> (v & 0xFF)) & 1) == 0:
                return i
            i += v >> 8
    return i


def _cased(p: SplitProgram, data: bytes, pos: i64, end: i64, c: i64) -> i64:
    """The cased-word pair caseds[c] (regex_family.ACT_CASED) at pos: the alternatives in the
    regex's order -- the first branch with the prefix taken, then without it, then the second
    branch likewise -- then the optional group after the words; else the branches after it."""
    cs = p.caseds
    r = c * CASED_WORDS
    p_mask = cs[r]
    a_mask = cs[r + 1]
    b_mask = cs[r + 2]
    group = cs[r + 3]
    v = _atom(p, data, pos, end)
    one_with: i64 = -1  # A*B+ and A+B* after a prefix character
    two_with: i64 = -1
    if ((p_mask >> (v & 0xFF)) & 1) != 0:
        one_with = _cased_ends(p, data, pos + (v >> 8), end, a_mask, b_mask)
        two_with = p.cased_second
    e = one_with
    if e < 0:
        e = _cased_ends(p, data, pos, end, a_mask, b_mask)
        two_without = p.cased_second
        if e < 0:
            e = two_with if two_with >= 0 else two_without
            if e < 0:
                return _general(p, data, pos, end, cs[r + 4])
    if group >= 0 and e < end and ((p.groups[group + 1] >> (_atom(p, data, e, end) & 0xFF)) & 1) != 0:
        at = group + 2
        k: i64 = 0
        n_alts = p.groups[group]
        while k < n_alts:
            q = _group_at(p, data, end, at, e)
            if q >= 0:
                return q
            at += p.groups[at] + 1
            k += 1
    return e


def _follow_end(p: SplitProgram, data: bytes, q: i64, end: i64, k: i64) -> i64:
    """Where the optional item follows[k] ends when it starts at q, the end of a shortcut's
    run (q itself when it matches nothing): a group's first alternative that matches, or the
    run of a set (regex_family.FOLLOW_WORDS)."""
    fs = p.follows
    r = k * FOLLOW_WORDS
    if fs[r + 1] == ITEM_GROUP:
        g = fs[r + 2]
        at = g + 2
        n_alts = p.groups[g]
        j: i64 = 0
        while j < n_alts:
            e = _group_at(p, data, end, at, q)
            if e >= 0:
                return e
            at += p.groups[at] + 1
            j += 1
        return q
    mask = fs[r + 2]
    limit = fs[r + 3]
    n: i64 = 0
    while q < end and n != limit:
        v = _atom(p, data, q, end)
        if ((mask >> (v & 0xFF)) & 1) == 0:
            return q
        q += v >> 8
        n += 1
    return q


def _follows(p: SplitProgram, data: bytes, q: i64, end: i64, act: i64) -> bool:
    """Is the character at q (< end) in the follow set of an ACT_RUN_CHECK?"""
    follow = p.follows[((act >> 16) & 0xFF) * FOLLOW_WORDS]
    b: i64 = data[q]
    if b < 0x80:
        return ((follow >> p.ascii[b]) & 1) != 0
    return ((follow >> (_decode(p, data, q, end) & 0xFF)) & 1) != 0


def _third(p: SplitProgram, data: bytes, j: i64, end: i64, act: i64) -> i64:
    """Row (act >> 8) of act3 at the character at j (END at the end of the text), with that
    character's byte length in bits 32 and up."""
    a2: i64 = p.n_atoms
    n2: i64 = 0
    if j < end:
        b2: i64 = data[j]
        if b2 < 0x80:
            a2 = p.ascii[b2]
            n2 = 1
        else:
            v = _decode(p, data, j, end)
            a2 = v & 0xFF
            n2 = v >> 8
    return p.act3[((act >> 8) & 0xFFFFFF) * p.width + a2] | (n2 << 54)


def _shortcut(p: SplitProgram, data: bytes, pos: i64, end: i64) -> i64:
    """The shortcut action for the chunk at pos from act1, act2 and act3, with the byte lengths
    of the characters read packed above it: bits 54-56 the first's, 57-59 the second's, 60-62
    the third's."""
    v = _atom(p, data, pos, end)
    a0: i64 = v & 0xFF
    n0: i64 = v >> 8
    act = p.act1[a0]
    if (act & 15) != ACT_NEXT:
        return act | (n0 << 54)
    width = p.width
    i = pos + n0
    a1: i64 = p.n_atoms
    n1: i64 = 0
    if i < end:
        v = _atom(p, data, i, end)
        a1 = v & 0xFF
        n1 = v >> 8
    act = p.act2[a0 * width + a1]
    if (act & 15) != ACT_NEXT:
        return act | (n0 << 54) | (n1 << 57)
    j = i + n1
    a2: i64 = p.n_atoms
    n2: i64 = 0
    if j < end:
        v = _atom(p, data, j, end)
        a2 = v & 0xFF
        n2 = v >> 8
    act = p.act3[((act >> 8) & 0xFFFFFF) * width + a2]
    return act | (n0 << 54) | (n1 << 57) | (n2 << 60)


def _general(p: SplitProgram, data: bytes, pos: i64, end: i64, first: i64) -> i64:
    """The chunk at pos by the matcher: the first branch from branch `first` on that matches
    (the shortcut tables know the ones before it fail here), or the gap."""
    v = _atom(p, data, pos, end)
    e = _match(p, data, pos, end, v & 0xFF, first)
    if e >= 0:
        return e
    return _gap_end(p, data, pos + (v >> 8), end)


# ---- regex and sequence programs -----------------------------------------------------------


def _find_cursor(p: SplitProgram, data: bytes, pos: i64, end: i64) -> _Cursor | None:
    c = p.last
    if c is not None and c.data is data and c.end == end and c.next == pos:
        return c
    c = p.cursors.get((id(data), end))
    if c is not None and c.data is data and c.next == pos:
        p.last = c
        return c
    return None


def _keep_cursor(p: SplitProgram, c: _Cursor, data: bytes, end: i64) -> None:
    cursors = p.cursors
    if len(cursors) >= _MAX_CURSORS:
        del cursors[next(iter(cursors))]
    cursors[(id(data), end)] = c
    p.last = c


def _done(p: SplitProgram, c: _Cursor, data: bytes, end: i64) -> None:
    """The text is scanned to its end: forget its cursor."""
    key = (id(data), end)
    if p.cursors.get(key) is c:
        del p.cursors[key]
    if p.last is c:
        p.last = None


def _scan_stateful(p: SplitProgram, data: bytes, pos: i64, end: i64) -> i64:
    c = _find_cursor(p, data, pos, end)
    e: i64
    if p.kind == KIND_REGEX:
        rc: _RegexCursor
        if c is None or not isinstance(c, _RegexCursor):
            rc = _RegexCursor(p, data, pos, end)
            _keep_cursor(p, rc, data, end)
        else:
            rc = c
        e = rc.segment() & _END_BITS
        if e >= end:
            _done(p, rc, data, end)
        return e
    sc: _SeqCursor
    if c is None or not isinstance(c, _SeqCursor):
        sc = _SeqCursor(data, pos, end, len(p.steps))
        _keep_cursor(p, sc, data, end)
    else:
        sc = c
    e = _scan_sequence(p, sc, data, pos, end)
    sc.next = e
    if e >= end:
        _done(p, sc, data, end)
    return e


def _step_segment(step: SplitProgram, c: _SeqCursor, k: i64, data: bytes, pos: i64, lim: i64) -> i64:
    """Step k's segment at pos inside its enclosing piece, which ends at lim."""
    if c.peek_at[k] == pos:
        c.peek_at[k] = -1
        return c.peek[k]
    if step.kind == KIND_SCAN:
        return _segment(step, data, pos, lim)
    sub = c.subs[k]
    if sub is None or sub.next != pos or sub.end != lim:
        sub = _RegexCursor(step, data, pos, lim)
        c.subs[k] = sub
    return sub.segment()


def _piece_end(step: SplitProgram, behavior: i64, c: _SeqCursor, k: i64, data: bytes, pos: i64, lim: i64) -> i64:
    """The end of step k's piece that starts at pos (the segments joined as its behavior says)."""
    how = behavior & 15
    if (behavior & REFUSE_UNMATCHED) != 0:
        w = _step_segment(step, c, k, data, pos, lim)
        if (w & _MATCH) == 0:
            raise InputError(_unmatched(data, pos, w & _END_BITS))
        return w & _END_BITS
    if how == ISOLATED and step.kind == KIND_SCAN:
        return scan(step, data, pos, lim)
    inv: i64 = 0
    if (behavior & INVERT) != 0:
        inv = _MATCH
    v = _step_segment(step, c, k, data, pos, lim) ^ inv
    e = v & _END_BITS
    is_match = (v & _MATCH) != 0
    if how == ISOLATED or e >= lim:
        return e
    if how == MERGED_WITH_PREVIOUS and is_match:
        return e
    if how == MERGED_WITH_NEXT and not is_match:
        return e
    while e < lim:
        # CONTIGUOUS joins the segments that follow while they are what this one is (two gaps
        # follow each other only inverted); MERGED_WITH_PREVIOUS a gap with the match after it;
        # MERGED_WITH_NEXT a match with the gap after it
        w = _step_segment(step, c, k, data, e, lim)
        w_match = ((w ^ inv) & _MATCH) != 0
        if how == CONTIGUOUS:
            joins = w_match == is_match
        else:
            joins = w_match == (how == MERGED_WITH_PREVIOUS)
        if not joins:
            c.peek_at[k] = e
            c.peek[k] = w
            return e
        e = w & _END_BITS
        if how != CONTIGUOUS:
            return e
    return e


def _unmatched(data: bytes, pos: i64, e: i64) -> str:
    what = data[pos : min(e, pos + 40)]
    more = "..." if e > pos + 40 else ""
    return (
        f"the split pattern matches none of the text at byte {pos} of this piece ({what!r}{more}, {e - pos} bytes): "
        "this tokenizer follows tiktoken's rules, which drop such text, so its ids would not be the reference's, "
        "and mnemo does not drop text silently; load it with mnemo.load(..., unmatched='keep') to keep such text as pieces of "
        "their own (as Hugging Face's Split does), or use a pattern that matches every character "
        "(docs/pretokenizer.md, 'Text the pattern does not match')"
    )


def _scan_sequence(p: SplitProgram, c: _SeqCursor, data: bytes, pos: i64, end: i64) -> i64:
    levels: i64 = len(p.steps)
    lim = end
    k: i64 = 0
    while k < levels:
        e = c.ends[k]
        if e > pos:
            lim = e
            k += 1
            continue
        e = _piece_end(p.steps[k], p.behaviors[k], c, k, data, pos, lim)
        c.ends[k] = e
        d = k + 1
        while d < levels:  # the steps below start over inside the new piece
            c.ends[d] = -1
            c.subs[d] = None
            c.peek_at[d] = -1
            d += 1
        lim = e
        k += 1
    return lim


# ---- loops ---------------------------------------------------------------------------------


def count_chunks(p: SplitProgram, data: bytes) -> i64:
    """How many chunks `data` splits into (the boundary loop with nothing else in it)."""
    pos: i64 = 0
    end: i64 = len(data)
    n: i64 = 0
    while pos < end:
        pos = scan(p, data, pos, end)
        n += 1
    return n


def cut_bytes(p: SplitProgram, data: bytes, end: i64) -> list[bytes]:
    """The chunks of data[:end]."""
    out: list[bytes] = []
    pos: i64 = 0
    while pos < end:
        e = scan(p, data, pos, end)
        out.append(data[pos:e])
        pos = e
    return out


def cut_str(p: SplitProgram, text: str, data: bytes) -> list[str]:
    """The chunks of `text`, whose UTF-8 is `data`: chunks of valid UTF-8 start and end on
    character boundaries, so each is sliced from the str by counting its characters."""
    out: list[str] = []
    pos: i64 = 0
    end: i64 = len(data)
    if end == len(text):  # all ASCII: byte offsets are character offsets
        while pos < end:
            e = scan(p, data, pos, end)
            out.append(text[pos:e])
            pos = e
        return out
    cpos: i64 = 0
    while pos < end:
        e = scan(p, data, pos, end)
        k: i64 = pos
        nchars: i64 = 0
        while k < e:
            b: i64 = data[k]
            if (b & 0xC0) != 0x80:
                nchars += 1
            k += 1
        out.append(text[cpos : cpos + nchars])
        cpos += nchars
        pos = e
    return out
