r"""The five named patterns as they were written by hand before the family compiler: the scanner
word counting cuts a named pattern's text with (count.WordCounter.add, superword's counting pass),
in fewer instructions than the compiled program of the same pattern (docs/speed.md, "1 GB again");
the baseline bench/compare/pretokenize_family_vs_scanner.py measures the compiled programs against;
and a second implementation tests/test_patterns.py and tests/test_family.py compare them with.

The text below is the module docstring the hand-written scanner had (then mnemo/pretokenize.py).

The pre-tokenizer: cuts text into chunks that BPE merges never cross.

Five patterns, each reproduced exactly as the `regex` module runs it (see PATTERN_REGEX):

    mnemonic  GPT-4's cl100k pattern with numbers in groups of 1 to 2 digits (the default)
    gpt4      GPT-4's cl100k_base pattern as published (groups of 1 to 3 digits)
    gpt2      GPT-2's pattern (the one Stanford CS336 uses)
    o200k     the o200k_base pattern (GPT-4o): letter runs split by case, contractions at
              their end
    cl100k    cl100k_base's pattern exactly as tiktoken spells it: gpt4 with \s++$ before
              the white-space branches (a white-space run that reaches the end of the text is
              one chunk: "a\n " is a|\n  where gpt4 gives a|\n| )

No regex engine runs here: each pattern is written out as branches over UTF-8 bytes, and the
classes \\p{L}, \\p{N} and \\s come from tables generated from `regex` itself
(mnemo/_unicode_tables.py, by tools/gen_unicode_tables.py), so they hold the same Unicode
version as the oracle the tests compare against.

Any bytes are valid input.  A byte that does not start a well-formed UTF-8 sequence (in the
strict sense of Python's decoder: no overlong forms, no surrogates, nothing above U+10FFFF,
and the whole sequence before `end`) is a one-byte character that is neither letter, number
nor space.  So the chunks always join back to the input, and nothing ever raises on content.

Two forms:
  split(text, pattern)               the user API: str -> list[str], bytes -> list[bytes]
  chunk_end(data, pos, end, pid)     the hot loops' form: the end of the chunk starting at
                                     `pos`; no allocation, a native call from compiled code.

How each pattern reads, branch by branch, as a chunk start sees them (c = the first
character, n = the next one); regex tries the alternatives in order and findall's chunks tile
the text, so the first branch that matches at a chunk start decides its end:

  mnemonic / gpt4   '(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,2}
                    | ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+
    1. c is ' and a contraction follows (case-insensitive, as regex folds case: 'ſ' counts
       as s)                                                   -> ' + contraction
    2. c is a letter                                           -> the letter run
       c is not CR/LF/letter/number and n is a letter          -> c + the letter run
    3. c is a number                                           -> up to 2 (3) numbers
    4. c is punctuation ("other": not space/letter/number)     -> the other-run, then CR/LF run
       c is ' ' and n is punctuation                           -> ' ' + that, same
    5-7. c is white space: take the maximal white-space run.  (cl100k: if it reaches the end
       of the text, all of it.)  If it holds CR or LF, the chunk ends after the last CR/LF in it (\\s*[\\r\\n] backtracks to there).  Else if the run
       reaches the end of the text, all of it; else if it has 2+ characters, all but its last
       (\\s+(?!\\S) backtracks one character, leaving the last to prefix what follows); else
       the single character (\\s+).
  gpt2              '(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
    The same without case folding, without the CR/LF branches, with an optional ' ' before
    letter, number and punctuation runs alike, and numbers unbounded.
  o200k             X?U*L+C?|X?U+L*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    with X = [^\r\n\p{L}\p{N}], U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], L = [\p{Ll}\p{Lm}\p{Lo}\p{M}],
    C = (?i:'s|'t|'re|'ve|'m|'ll|'d).  Nothing is possessive, so the letter branches backtrack;
    _cased works out where they stop.  Marks (\p{M}) are in U and L but not in \p{L}: a mark
    is a prefix X, punctuation, and a letter of both runs at once.
    1-2. c is a letter or a mark                               -> _cased(pos)
       c is not CR/LF/letter/number and _cased(after c) matches -> c + that
    3. c is a number                                           -> up to 3 numbers
    4. c is punctuation -> the punctuation run, then the run of CR, LF and '/'
       c is ' ' and n is punctuation                           -> ' ' + that, same
    5-7. white space as in gpt4 (\s*[\r\n]+ ends where \s*[\r\n] does: after the last
       CR/LF of the run).

Every branch scans at most its chunk plus the white-space run it looks past, and a run looked
past is never rescanned more than once more, so time is linear in the input.
"""

from typing import Final, overload

from librt.strings import read_i64_le
from mypy_extensions import i64

from mnemo import _unicode_tables as _tables
from mnemo.constants import PATTERNS
from mnemo.errors import ConfigError, InputError

PATTERN_MNEMONIC: Final[i64] = 0
PATTERN_GPT4: Final[i64] = 1
PATTERN_GPT2: Final[i64] = 2
PATTERN_O200K: Final[i64] = 3
PATTERN_CL100K: Final[i64] = 4

# The hot code compares these local ids; the names and their order (= ids, stored in tokenizer.bin:
# new patterns go at the end) live in constants.PATTERNS.
assert PATTERNS == ("mnemonic", "gpt4", "gpt2", "o200k", "cl100k")

# o200k_base's letter branches: [^\r\n\p{L}\p{N}]? + a run of "upper" letters and a run of
# "lower" ones (marks and letters without case in both), + an optional contraction.
_O200K_LETTERS: Final[str] = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
)

# The regular expressions each pattern reproduces, as the `regex` module spells them.
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

UNICODE_VERSION: Final[str] = _tables.UNICODE_VERSION

# Character classes (the same codes as mnemo/_unicode_tables.py; a test checks they agree).
# Written as literals so that mypyc folds them into the compiled comparisons.
_OTHER: Final[i64] = 0
_APOS: Final[i64] = 1
_LETTER: Final[i64] = 2
_NUMBER: Final[i64] = 3
_SPACE: Final[i64] = 4
_WHITE: Final[i64] = 5
_NEWLINE: Final[i64] = 6
# Classes below _SPACE are not white space; _OTHER and _APOS make up "punctuation", i.e.
# [^\s\p{L}\p{N}].

# The o200k pattern's own classes (a table of its own, so the others' lookups stay as they
# were).  Ranges: [^\s\p{L}\p{N}] is <= _O_MARK; the "upper" set is _O_MARK.._O_BOTH; the
# "lower" set is _O_MARK, _O_BOTH and _O_LOWER.
_O_OTHER: Final[i64] = 0
_O_APOS: Final[i64] = 1
_O_MARK: Final[i64] = 2
_O_UPPER: Final[i64] = 3
_O_BOTH: Final[i64] = 4
_O_LOWER: Final[i64] = 5
_O_NUMBER: Final[i64] = 6
_O_SPACE: Final[i64] = 7
_O_WHITE: Final[i64] = 8
_O_NEWLINE: Final[i64] = 9

_ASCII: Final[bytes] = _tables.ASCII_CLASS
_STAGE1: Final[bytes] = _tables.STAGE1
_STAGE2: Final[bytes] = _tables.STAGE2
_FOLD_CPS: Final[tuple[int, ...]] = _tables.FOLD_CPS
_FOLD_LETTERS: Final[bytes] = _tables.FOLD_LETTERS
_O_ASCII: Final[bytes] = _tables.O200K_ASCII_CLASS
_O_STAGE1: Final[bytes] = _tables.O200K_STAGE1
_O_STAGE2: Final[bytes] = _tables.O200K_STAGE2

# _decode packs a character as class | length << 3.
_ONE_OTHER: Final[i64] = _OTHER | (1 << 3)
# _decode_o packs an o200k class as class | length << 4.
_O_ONE_OTHER: Final[i64] = _O_OTHER | (1 << 4)

# One in every byte of an i64, for the eight-bytes-at-a-time letter scan (_ascii_letters).
_ONES: Final[i64] = 0x0101010101010101


def pattern_id(name: str) -> i64:
    """The id of a pattern name: its index in constants.PATTERNS ("mnemonic" -> 0, ...)."""
    if name in PATTERNS:
        return PATTERNS.index(name)
    raise ConfigError(
        f"unknown pre-tokenizer pattern {name!r}; use one of {', '.join(repr(p) for p in PATTERNS)} (default 'mnemonic')"
    )


def pattern_name(pid: i64) -> str:
    """The name of a pattern id (the inverse of pattern_id)."""
    if 0 <= pid < len(PATTERNS):
        return PATTERNS[pid]
    known = ", ".join(f"{i} ({name})" for i, name in enumerate(PATTERNS))
    raise ConfigError(f"unknown pre-tokenizer pattern id {pid}; use one of {known}")


# ---- characters ----------------------------------------------------------------------------


def _class_of(cp: i64) -> i64:
    return _STAGE2[(_STAGE1[cp >> 7] << 7) | (cp & 127)]


def _decode(data: bytes, i: i64, end: i64) -> i64:
    """Class and byte length of the character at i, whose lead byte is >= 0x80, packed as
    class | length << 3.  A byte that does not start a well-formed sequence ending by `end`
    is one "other" character of one byte."""
    b0: i64 = data[i]
    if b0 < 0xE0:
        if b0 < 0xC2 or i + 1 >= end:
            return _ONE_OTHER
        b1: i64 = data[i + 1]
        if (b1 & 0xC0) != 0x80:
            return _ONE_OTHER
        return _class_of(((b0 & 0x1F) << 6) | (b1 & 0x3F)) | (2 << 3)
    if b0 < 0xF0:
        if i + 2 >= end:
            return _ONE_OTHER
        b1 = data[i + 1]
        b2: i64 = data[i + 2]
        if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80:
            return _ONE_OTHER
        if b0 == 0xE0 and b1 < 0xA0:  # overlong
            return _ONE_OTHER
        if b0 == 0xED and b1 >= 0xA0:  # a surrogate
            return _ONE_OTHER
        return _class_of(((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)) | (3 << 3)
    if b0 > 0xF4 or i + 3 >= end:
        return _ONE_OTHER
    b1 = data[i + 1]
    b2 = data[i + 2]
    b3: i64 = data[i + 3]
    if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80:
        return _ONE_OTHER
    if b0 == 0xF0 and b1 < 0x90:  # overlong
        return _ONE_OTHER
    if b0 == 0xF4 and b1 >= 0x90:  # above U+10FFFF
        return _ONE_OTHER
    cp = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
    return _class_of(cp) | (4 << 3)


def _char(data: bytes, i: i64, end: i64) -> i64:
    """class | length << 3 of the character at i (any lead byte)."""
    b: i64 = data[i]
    if b < 0x80:
        return _ASCII[b] | (1 << 3)
    return _decode(data, i, end)


def _folded_letter(data: bytes, i: i64, end: i64) -> i64:
    """For the case-insensitive contractions: the lowercase ASCII letter that the character
    at i matches under regex's (?i) (0 if none), packed as letter | length << 8."""
    b: i64 = data[i]
    if b < 0x80:
        if _ASCII[b] != _LETTER:
            return 0
        return (b | 0x20) | (1 << 8)
    # Rare: a non-ASCII character right after an apostrophe.  Decode it (only well-formed
    # sequences can fold) and look it up among the few that regex folds to s, d, m, t, ...
    v = _decode(data, i, end)
    if (v & 7) != _LETTER:
        return 0
    n: i64 = v >> 3
    cp: i64
    if n == 2:
        cp = ((b & 0x1F) << 6) | (data[i + 1] & 0x3F)
    elif n == 3:
        cp = ((b & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)
    else:
        cp = ((b & 0x07) << 18) | ((data[i + 1] & 0x3F) << 12) | ((data[i + 2] & 0x3F) << 6) | (data[i + 3] & 0x3F)
    k: i64 = 0
    while k < len(_FOLD_CPS):
        if _FOLD_CPS[k] == cp:
            return _FOLD_LETTERS[k] | (n << 8)
        k += 1
    return 0


def _contraction_end(data: bytes, i: i64, end: i64, fold: bool) -> i64:
    """After an apostrophe ending at i: the end of `(?:[sdmt]|ll|ve|re)` (case-insensitive
    when `fold`), or -1 when none follows."""
    if fold:
        f1 = _folded_letter(data, i, end)
    else:
        b: i64 = data[i]
        f1 = b | (1 << 8)
    l1: i64 = f1 & 0xFF
    j: i64 = i + (f1 >> 8)
    if l1 == 0x73 or l1 == 0x64 or l1 == 0x6D or l1 == 0x74:  # s d m t
        return j
    if (l1 == 0x6C or l1 == 0x76 or l1 == 0x72) and j < end:  # l v r
        if fold:
            f2 = _folded_letter(data, j, end)
        else:
            b2: i64 = data[j]
            f2 = b2 | (1 << 8)
        l2: i64 = f2 & 0xFF
        if (l1 == 0x6C and l2 == 0x6C) or (l1 != 0x6C and l2 == 0x65):  # ll, ve, re
            return j + (f2 >> 8)
    return -1


# ---- runs ----------------------------------------------------------------------------------


def _ascii_letters(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of ASCII letters [A-Za-z] starting at i.  It stops at any other byte,
    a non-ASCII lead byte included: the caller goes on from there when data[result] >= 0x80.

    Eight bytes at a time while eight remain before `end`: one 64-bit load, a handful of ALU
    operations that mark every byte that is not an ASCII letter, and the position of the first
    mark -- no branch per byte.  A byte loop ends a word with a mispredicted branch whose cost
    depends on the word's length; this one's single branch (`m != 0`) is nearly always taken
    on the first block, since English words are shorter than eight letters.
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
        if b >= 0x80 or _ASCII[b] != _LETTER:
            return i
        i += 1
    return i


def _letters(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of letters starting at i."""
    i = _ascii_letters(data, i, end)  # the common case: ASCII letters, eight at a time
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            if _ASCII[b] != _LETTER:
                return i
            i += 1
        else:
            v = _decode(data, i, end)
            if (v & 7) != _LETTER:
                return i
            i += v >> 3
    return i


def _numbers(data: bytes, i: i64, end: i64, count: i64) -> i64:
    """The end of at most `count` more numbers from i (count < 0: no limit)."""
    while i < end and count != 0:
        b: i64 = data[i]
        if b < 0x80:
            if _ASCII[b] != _NUMBER:
                return i
            i += 1
        else:
            v = _decode(data, i, end)
            if (v & 7) != _NUMBER:
                return i
            i += v >> 3
        count -= 1
    return i


def _punctuation(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of [^\\s\\p{L}\\p{N}] starting at i."""
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            if _ASCII[b] > _APOS:
                return i
            i += 1
        else:
            v = _decode(data, i, end)
            if (v & 7) > _APOS:
                return i
            i += v >> 3
    return i


def _newlines(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of CR and LF starting at i."""
    while i < end:
        b: i64 = data[i]
        if b != 0x0A and b != 0x0D:
            return i
        i += 1
    return i


def _white(data: bytes, pos: i64, end: i64, newline_branch: bool) -> i64:
    """The chunk of white space starting at pos, by branches \\s*[\\r\\n] (only when
    `newline_branch`), \\s+(?!\\S) and \\s+."""
    i: i64 = pos
    last: i64 = pos  # start of the run's last character
    after_newline: i64 = -1  # end of the run's last CR or LF
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            c: i64 = _ASCII[b]
            if c < _SPACE:
                break
            if c == _NEWLINE:
                after_newline = i + 1
            last = i
            i += 1
        else:
            v = _decode(data, i, end)
            if (v & 7) < _SPACE:
                break
            last = i
            i += v >> 3
    if newline_branch and after_newline >= 0:
        return after_newline
    if i < end and last > pos:
        return last
    return i


def _white_to_end(data: bytes, pos: i64, end: i64) -> i64:
    """cl100k's white-space chunk: \\s++$ first (a run that reaches the end of the text is one
    chunk), else gpt4's.  Kept apart from _white so that the other patterns' calls stay as they
    were; the rest of the run is scanned once more, only for cl100k."""
    e = _white(data, pos, end, True)
    i: i64 = e
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            if _ASCII[b] < _SPACE:
                return e
            i += 1
        else:
            v = _decode(data, i, end)
            if (v & 7) < _SPACE:
                return e
            i += v >> 3
    return end


# ---- the patterns --------------------------------------------------------------------------


def _end_gpt4(data: bytes, pos: i64, end: i64, max_digits: i64, to_end: bool) -> i64:
    b: i64 = data[pos]
    c: i64
    i: i64
    if b < 0x80:
        c = _ASCII[b]
        i = pos + 1
    else:
        v = _decode(data, pos, end)
        c = v & 7
        i = pos + (v >> 3)
    if c == _LETTER:
        return _letters(data, i, end)
    if c == _NUMBER:
        return _numbers(data, i, end, max_digits - 1)
    if c == _NEWLINE:
        return _white_to_end(data, pos, end) if to_end else _white(data, pos, end, True)
    if i >= end:
        return i  # one character at the end of the text: a chunk whatever its class
    if c == _APOS:
        j = _contraction_end(data, i, end, True)
        if j >= 0:
            return j
    # c is punctuation or white space other than CR/LF: [^\r\n\p{L}\p{N}]?+\p{L}+ comes first
    n = _char(data, i, end)
    nc: i64 = n & 7
    if nc == _LETTER:
        return _letters(data, i + (n >> 3), end)
    if c <= _APOS:
        return _newlines(data, _punctuation(data, i, end), end)
    if c == _SPACE and nc <= _APOS:
        return _newlines(data, _punctuation(data, i + (n >> 3), end), end)
    return _white_to_end(data, pos, end) if to_end else _white(data, pos, end, True)


def _end_gpt2(data: bytes, pos: i64, end: i64) -> i64:
    b: i64 = data[pos]
    c: i64
    i: i64
    if b < 0x80:
        c = _ASCII[b]
        i = pos + 1
    else:
        v = _decode(data, pos, end)
        c = v & 7
        i = pos + (v >> 3)
    if c == _LETTER:
        return _letters(data, i, end)
    if c == _NUMBER:
        return _numbers(data, i, end, -1)
    if i >= end:
        return i
    if c <= _APOS:
        if c == _APOS:
            j = _contraction_end(data, i, end, False)
            if j >= 0:
                return j
        return _punctuation(data, i, end)
    if c == _SPACE:
        n = _char(data, i, end)
        nc: i64 = n & 7
        if nc == _LETTER:
            return _letters(data, i + (n >> 3), end)
        if nc == _NUMBER:
            return _numbers(data, i + (n >> 3), end, -1)
        if nc <= _APOS:
            return _punctuation(data, i + (n >> 3), end)
    return _white(data, pos, end, False)


# ---- o200k ---------------------------------------------------------------------------------
# Its own table and decoder: the other patterns keep their 3-bit classes and their lookups.
# Numbers, punctuation and white space are the same classes in both tables, so o200k shares
# _numbers, _punctuation and _white with the others.


def _class_o(cp: i64) -> i64:
    return _O_STAGE2[(_O_STAGE1[cp >> 7] << 7) | (cp & 127)]


def _decode_o(data: bytes, i: i64, end: i64) -> i64:
    """_decode with o200k's classes, packed as class | length << 4 (the same UTF-8 rules;
    written twice so that the other patterns' decoder keeps its single table lookup)."""
    b0: i64 = data[i]
    if b0 < 0xE0:
        if b0 < 0xC2 or i + 1 >= end:
            return _O_ONE_OTHER
        b1: i64 = data[i + 1]
        if (b1 & 0xC0) != 0x80:
            return _O_ONE_OTHER
        return _class_o(((b0 & 0x1F) << 6) | (b1 & 0x3F)) | (2 << 4)
    if b0 < 0xF0:
        if i + 2 >= end:
            return _O_ONE_OTHER
        b1 = data[i + 1]
        b2: i64 = data[i + 2]
        if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80:
            return _O_ONE_OTHER
        if b0 == 0xE0 and b1 < 0xA0:  # overlong
            return _O_ONE_OTHER
        if b0 == 0xED and b1 >= 0xA0:  # a surrogate
            return _O_ONE_OTHER
        return _class_o(((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)) | (3 << 4)
    if b0 > 0xF4 or i + 3 >= end:
        return _O_ONE_OTHER
    b1 = data[i + 1]
    b2 = data[i + 2]
    b3: i64 = data[i + 3]
    if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80:
        return _O_ONE_OTHER
    if b0 == 0xF0 and b1 < 0x90:  # overlong
        return _O_ONE_OTHER
    if b0 == 0xF4 and b1 >= 0x90:  # above U+10FFFF
        return _O_ONE_OTHER
    cp = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
    return _class_o(cp) | (4 << 4)


def _ascii_lower(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of ASCII lowercase letters [a-z] starting at i: _ascii_letters
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


def _lower_run(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of [\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}] starting at i."""
    i = _ascii_lower(data, i, end)
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            if _O_ASCII[b] != _O_LOWER:
                return i
            i += 1
        else:
            v = _decode_o(data, i, end)
            c: i64 = v & 15
            if c < _O_MARK or c == _O_UPPER or c > _O_LOWER:
                return i
            i += v >> 4
    return i


def _cased(data: bytes, q: i64, end: i64) -> i64:
    """Where o200k's letter branches end when their optional prefix is taken (or there is
    none) and their runs start at q, or -1 when neither matches there.

    U*L+C? first: U* takes the whole run of U (upper, marks, letters without case).  If a
    lowercase letter follows it, L+ takes the run of L from there.  Else U* gives back one
    character at a time until L+ can start: at the run's last character that is also in L (a
    mark or a letter without case), and L+ then takes just that character (what follows it
    in the run is uppercase; what follows the run is not in L).  With no such character,
    U+L*C? takes the run itself when it is not empty (L* is empty: what follows is not in L).
    Then (?i:'s|'t|'re|'ve|'m|'ll|'d)? at the end."""
    i: i64 = q
    c: i64 = _O_OTHER
    n: i64 = 0
    both_end: i64 = -1  # end of the run's last character that is in L as well
    while i < end:
        b: i64 = data[i]
        if b < 0x80:
            c = _O_ASCII[b]
            n = 1
        else:
            v = _decode_o(data, i, end)
            c = v & 15
            n = v >> 4
        if c < _O_MARK or c > _O_BOTH:
            break
        i += n
        if c != _O_UPPER:
            both_end = i
    e: i64
    if i < end and c == _O_LOWER:
        e = _lower_run(data, i + n, end)
    elif both_end >= 0:
        e = both_end
    elif i > q:
        e = i
    else:
        return -1
    if e + 1 < end and data[e] == 0x27:
        j = _contraction_end(data, e + 1, end, True)
        if j >= 0:
            return j
    return e


def _newlines_slashes(data: bytes, i: i64, end: i64) -> i64:
    """The end of the run of CR, LF and '/' starting at i."""
    while i < end:
        b: i64 = data[i]
        if b != 0x0A and b != 0x0D and b != 0x2F:
            return i
        i += 1
    return i


def _end_o200k(data: bytes, pos: i64, end: i64) -> i64:
    b: i64 = data[pos]
    c: i64
    i: i64
    if b < 0x80:
        c = _O_ASCII[b]
        i = pos + 1
    else:
        v = _decode_o(data, pos, end)
        c = v & 15
        i = pos + (v >> 4)
    if c >= _O_MARK and c <= _O_LOWER:
        # A letter starts a run of U or of L.  A mark is a prefix X whose own runs are tried
        # first; when they fail, X? gives it back and it is a one-character L+ (U* empty):
        # both are what _cased(pos) finds, since the mark is itself a character of U and L.
        return _cased(data, pos, end)
    if c == _O_NUMBER:
        return _numbers(data, i, end, 2)
    if c == _O_NEWLINE:
        return _white(data, pos, end, True)
    if i >= end:
        return i  # one character at the end of the text: a chunk whatever its class
    # c is punctuation or white space other than CR/LF: a prefix X when letters follow
    j = _cased(data, i, end)
    if j >= 0:
        return j
    if c <= _O_APOS:
        return _newlines_slashes(data, _punctuation(data, i, end), end)
    if c == _O_SPACE:
        nb: i64 = data[i]
        nc: i64
        nn: i64 = 1
        if nb < 0x80:
            nc = _O_ASCII[nb]
        else:
            v = _decode_o(data, i, end)
            nc = v & 15
            nn = v >> 4
        if nc <= _O_APOS:  # not a mark: _cased would have taken it
            return _newlines_slashes(data, _punctuation(data, i + nn, end), end)
    return _white(data, pos, end, True)


def chunk_end(data: bytes, pos: i64, end: i64, pattern: i64) -> i64:
    """The end of the chunk that starts at `pos` in the text data[0:end] (> pos).

    `pos` must be a chunk start: 0 or the end of the previous chunk.  Bytes from `end` on do
    not exist for the pattern (no lookahead reaches them).  Hot loops use it as
        pos = start
        while pos < end:
            e = chunk_end(data, pos, end, pid)
            ... data[pos:e] ...
            pos = e
    """
    if pos < 0 or pos >= end or end > len(data):
        raise ConfigError(f"chunk_end needs 0 <= pos < end <= len(data), got pos={pos}, end={end}, len={len(data)}")
    if pattern < PATTERN_MNEMONIC or pattern > PATTERN_CL100K:
        raise ConfigError(
            f"unknown pre-tokenizer pattern id {pattern}; use 0 (mnemonic), 1 (gpt4), 2 (gpt2), 3 (o200k) or 4 (cl100k)"
        )
    b: i64 = data[pos]
    c: i64
    i: i64
    if pattern == PATTERN_O200K:
        # o200k cuts words by case, so it has shortcuts of its own (constants.OWN_ASCII_SHORTCUTS):
        # an ASCII word in lowercase or with one capital ("word", "Word"), after a space or not,
        # that ends at an ASCII byte other than an apostrophe (no contraction).  _end_o200k
        # decides the rest.
        if b < 0x80:
            c = _O_ASCII[b]
            i = pos + 1
            if c == _O_SPACE and i < end:
                b = data[i]
                if b < 0x80 and (_O_ASCII[b] == _O_LOWER or _O_ASCII[b] == _O_UPPER):
                    c = _O_ASCII[b]
                    i += 1
            if c == _O_UPPER and i < end:
                b = data[i]
                if b < 0x80 and _O_ASCII[b] == _O_LOWER:
                    c = _O_LOWER
                    i += 1
            if c == _O_LOWER:
                i = _ascii_lower(data, i, end)
                if i >= end:
                    return i
                b = data[i]
                if b < 0x80 and b != 0x27:
                    return i
        return _end_o200k(data, pos, end)
    # The commonest chunks of prose inline here: each call between compiled functions costs a
    # few ns, as much as the chunk's bytes (docs/pretokenizer.md: faster on English than calling
    # _end_gpt4 for everything).  Every pattern that gets here cuts these four cases alike
    # (cl100k's \s++$ cannot take a "\n" that a non-space follows): the pattern property "ascii_fast_path"
    # (constants.PATTERN_PROPERTIES), checked for each pattern by tests/test_patterns.py, so a new
    # pattern that cuts them otherwise fails there.  Anything else goes to
    # _end_gpt4 or _end_gpt2, which decide every case from scratch.
    if b < 0x80:
        c = _ASCII[b]
        i = pos + 1
        if i < end:
            b = data[i]
            if c == _SPACE:
                if b < 0x80 and _ASCII[b] == _LETTER:  # " word"
                    c = _LETTER
                    i += 1
            elif c == _OTHER:
                if b == 0x20:  # ", ": a one-character punctuation run (no CR/LF follows)
                    return i
            elif c == _NEWLINE:
                if b < 0x80 and _ASCII[b] < _SPACE:  # "\n" before a non-space: \s*[\r\n]
                    return i
        if c == _LETTER:  # "word", and " word" from above
            if i + 8 <= end:
                # _ascii_letters' first block inline: most words end within it, and the call
                # cost about as much as the block (cachegrind: docs/speed.md)
                seven: i64 = 7
                hi = _ONES << seven
                x = read_i64_le(data, i)
                y = (x | (_ONES * 0x20)) & ~hi
                m = ~((y + _ONES * 0x1F) & ~(y + _ONES * 0x05) & ~x) & hi
                if m != 0:
                    low = m & -m  # the top bit of the first byte that is not a letter
                    i += ((((low - 1) & _ONES) * _ONES) >> 56) - 1
                    if (x & low) != 0:  # that byte is from 0x80: a non-ASCII letter may go on
                        return _letters(data, i, end)
                    return i
                i += 8
            i = _ascii_letters(data, i, end)
            if i < end and data[i] >= 0x80:
                return _letters(data, i, end)
            return i
    if pattern == PATTERN_GPT2:
        return _end_gpt2(data, pos, end)
    if pattern == PATTERN_CL100K:
        return _end_gpt4(data, pos, end, 3, True)
    return _end_gpt4(data, pos, end, 2 if pattern == PATTERN_MNEMONIC else 3, False)


def chunk_count(data: bytes, pattern: i64) -> i64:
    """How many chunks `data` splits into (the boundary loop with nothing else in it)."""
    pos: i64 = 0
    end: i64 = len(data)
    n: i64 = 0
    while pos < end:
        pos = chunk_end(data, pos, end, pattern)
        n += 1
    return n


# ---- the user API --------------------------------------------------------------------------


def _split_bytes(data: bytes, pid: i64) -> list[bytes]:
    out: list[bytes] = []
    pos: i64 = 0
    end: i64 = len(data)
    while pos < end:
        e = chunk_end(data, pos, end, pid)
        out.append(data[pos:e])
        pos = e
    return out


def _split_str(text: str, pid: i64) -> list[str]:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(
            f"text holds the lone surrogate U+{ord(text[err.start]):04X} at index {err.start}, which "
            "UTF-8 cannot encode; split its bytes instead, e.g. split(text.encode('utf-8', 'surrogatepass'))"
        ) from None
    out: list[str] = []
    pos: i64 = 0
    end: i64 = len(data)
    if end == len(text):  # all ASCII: byte offsets are character offsets
        while pos < end:
            e = chunk_end(data, pos, end, pid)
            out.append(text[pos:e])
            pos = e
        return out
    # Chunks of valid UTF-8 start and end on character boundaries: count the characters of
    # each chunk (its bytes that are not continuation bytes) to slice the str itself.
    cpos: i64 = 0
    while pos < end:
        e = chunk_end(data, pos, end, pid)
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


@overload
def split(text: str, pattern: str = "mnemonic") -> list[str]: ...
@overload
def split(text: bytes, pattern: str = "mnemonic") -> list[bytes]: ...
def split(text: str | bytes, pattern: str = "mnemonic") -> list[str] | list[bytes]:
    """Cut text into pre-tokenizer chunks: str in, list of str out; bytes in, list of bytes out.

    `pattern` is "mnemonic" (the default), "gpt4", "gpt2", "o200k" or "cl100k" (see PATTERN_REGEX).  The chunks
    join back to `text`.  On valid UTF-8 they are exactly regex.findall(PATTERN_REGEX[pattern],
    text); invalid UTF-8 bytes are one-byte characters that are neither letter, number nor
    space.  A str holding a lone surrogate (which has no UTF-8 form) raises InputError.
    """
    pid = pattern_id(pattern)
    if isinstance(text, str):
        return _split_str(text, pid)
    return _split_bytes(text, pid)
