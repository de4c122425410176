"""The pre-tokenizer (mnemo/pretokenize.py, the five named patterns compiled by
mnemo/regex_family.py) against the `regex` module running the same patterns.

The oracle is `regex.findall` with the patterns as DESIGN.md writes them, and tiktoken's
o200k_base and cl100k_base patterns as ../shared/fixtures/tiktoken/README.md writes them (copied
here, not read from mnemo).  The Unicode tables come from the same `regex` (tools/gen_unicode_tables.py), so
both sides hold one Unicode version; a test regenerates the tables and compares.  The family's own
tests (other regexes, presets, sequences, the regex engine) are in tests/test_patterns.py.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mnemo
from mnemo import _unicode_data as udata
from mnemo import _unicode_tables as tables
from mnemo import patterns as P
from mnemo import pretokenize as pt
from mnemo import pretokenize_named as named
from mnemo.constants import PATTERNS as PATTERNS_OF_MNEMO
from mnemo.errors import ConfigError, InputError

ROOT = Path(__file__).resolve().parents[1]

# The three patterns exactly as ../shared/DESIGN.md gives them.
DESIGN_PATTERNS = {
    "mnemonic": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
}
# tiktoken's two patterns exactly as the fixtures' README gives them (o200k: seven alternatives
# joined with "|").
O200K_ALTERNATIVES = [
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
]
TIKTOKEN_PATTERNS = {
    "o200k": "|".join(O200K_ALTERNATIVES),
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
}
ALL_PATTERNS = {**DESIGN_PATTERNS, **TIKTOKEN_PATTERNS}
ORACLE = {name: regex.compile(p) for name, p in ALL_PATTERNS.items()}
PATTERNS = tuple(ALL_PATTERNS)


def oracle_bytes(data: bytes, pattern: str) -> list[bytes]:
    """The oracle on any bytes.  surrogateescape turns each byte that is not part of a
    well-formed sequence into one lone surrogate (U+DC80..U+DCFF), which regex sees as one
    character that is neither letter, number nor space -- exactly mnemo's rule for invalid
    bytes -- and which never comes out of decoding valid UTF-8."""
    text = data.decode("utf-8", "surrogateescape")
    return [c.encode("utf-8", "surrogateescape") for c in ORACLE[pattern].findall(text)]


def check_text(text: str, pattern: str) -> None:
    expected = ORACLE[pattern].findall(text)
    assert P.split(text, pattern) == expected
    assert P.split(text.encode("utf-8"), pattern) == [c.encode("utf-8") for c in expected]


def boundaries(data: bytes, pid: int, end: int | None = None) -> list[int]:
    end = len(data) if end is None else end
    out = []
    pos = 0
    while pos < end:
        e = P.chunk_end(data, pos, end, pid)
        assert pos < e <= end
        out.append(e)
        pos = e
    return out


# ---- the API -------------------------------------------------------------------------------


def test_pattern_regex_is_the_design():
    assert pt.PATTERN_REGEX == ALL_PATTERNS


def test_pattern_ids_and_names():
    # the ids are stored in tokenizer.bin: the first three never move, new ones come after
    names = ("mnemonic", "gpt4", "gpt2", "o200k", "cl100k")
    assert [pt.pattern_id(n) for n in names] == [
        pt.PATTERN_MNEMONIC,
        pt.PATTERN_GPT4,
        pt.PATTERN_GPT2,
        pt.PATTERN_O200K,
        pt.PATTERN_CL100K,
    ] == [0, 1, 2, 3, 4]
    assert [pt.pattern_name(i) for i in range(5)] == list(names)
    assert PATTERNS_OF_MNEMO == names


def test_split_is_reexported():
    assert mnemo.split("don't", "gpt2") == ["don", "'t"]
    assert mnemo.split(b"don't") == [b"don", b"'t"]


def test_named_patterns_compile_into_the_scanner():
    """The five named patterns are ordinary family members: compiled, not run by `regex`, on
    mnemo's own Unicode table, with the ids tokenizer.bin v2 stores."""
    for k, name in enumerate(PATTERNS_OF_MNEMO):
        sp = P.compile_pattern(name)
        assert (sp.engine, sp.unicode, sp.id, sp.regex) == ("scanner", udata.DEFAULT, k, pt.PATTERN_REGEX[name])
        assert P.program_of(k) is sp.program


def test_unknown_pattern_name():
    with pytest.raises(ConfigError, match=r"unknown pre-tokenizer pattern 'gpt3'.*'mnemonic'"):
        pt.pattern_id("gpt3")
    with pytest.raises(ConfigError, match=r"unknown pattern 'cl100k_base': not a preset.*'o200k', 'cl100k'.*nor a split regex"):
        P.split("text", "cl100k_base")


def test_unknown_pattern_id():
    with pytest.raises(ConfigError, match=r"pattern id 7"):
        pt.pattern_name(7)
    with pytest.raises(ConfigError, match=r"pattern id 1000000"):
        P.chunk_end(b"abc", 0, 3, 1_000_000)
    with pytest.raises(ConfigError, match=r"pattern id -1"):
        P.chunk_end(b"abc", 0, 3, -1)


@pytest.mark.parametrize(
    "pos, end",
    [(3, 3), (-1, 2), (0, 4), (2, 1)],
)
def test_chunk_end_rejects_bad_ranges(pos, end):
    with pytest.raises(ConfigError, match=rf"pos={pos}, end={end}, len=3"):
        P.chunk_end(b"abc", pos, end, 0)


def test_lone_surrogate_in_str_is_an_input_error():
    with pytest.raises(InputError, match=r"lone surrogate U\+D800 at index 2.*surrogatepass"):
        P.split("ab\ud800c")


def test_empty_input():
    assert P.split("") == []
    assert P.split(b"", "gpt2") == []


def test_class_codes_agree_with_the_tables():
    """The hand-written scanner (pretokenize_named, the bench's baseline) and its tables."""
    pt = named
    assert (pt._OTHER, pt._APOS, pt._LETTER, pt._NUMBER, pt._SPACE, pt._WHITE, pt._NEWLINE) == (
        tables.OTHER,
        tables.APOS,
        tables.LETTER,
        tables.NUMBER,
        tables.SPACE,
        tables.WHITE,
        tables.NEWLINE,
    )
    assert pt.UNICODE_VERSION == tables.UNICODE_VERSION
    o_codes = (pt._O_OTHER, pt._O_APOS, pt._O_MARK, pt._O_UPPER, pt._O_BOTH, pt._O_LOWER)
    assert o_codes == (tables.O_OTHER, tables.O_APOS, tables.O_MARK, tables.O_UPPER, tables.O_BOTH, tables.O_LOWER)
    assert (pt._O_NUMBER, pt._O_SPACE, pt._O_WHITE, pt._O_NEWLINE) == (
        tables.O_NUMBER,
        tables.O_SPACE,
        tables.O_WHITE,
        tables.O_NEWLINE,
    )


# ---- worked examples -----------------------------------------------------------------------

# The seed cases of DESIGN.md for `mnemonic`, chunks joined by "|".
SEEDS = [
    ("Hello world", "Hello| world"),
    ("don't", "don|'t"),
    ("I'll WE'RE they've", "I|'ll| WE|'RE| they|'ve"),
    ("'sam", "'s|am"),
    ("123456", "12|34|56"),
    ("$9.99", "$|9|.|99"),
    ("  hello", " | hello"),
    ("hello!!!", "hello|!!!"),
    ("(test)", "(test|)"),
    ("a... b", "a|...| b"),
]


@pytest.mark.parametrize("text, chunks", SEEDS)
def test_design_seed_cases(text, chunks):
    assert P.split(text) == chunks.split("|")
    assert P.split(text.encode()) == [c.encode() for c in chunks.split("|")]
    assert ORACLE["mnemonic"].findall(text) == chunks.split("|")


# Hand-derived: (pattern, text, chunks).  The reasoning for each is in its comment.
WORKED = [
    # 1-3 digits for gpt4, unbounded for gpt2 (and a space joins the digits there)
    ("gpt4", "1234567", ["123", "456", "7"]),
    ("gpt2", "x 1234567", ["x", " 1234567"]),
    ("mnemonic", "x 12", ["x", " ", "12"]),
    # contractions: case-insensitive in mnemonic/gpt4, not in gpt2
    ("mnemonic", "I'LL", ["I", "'LL"]),
    ("gpt2", "I'LL", ["I", "'", "LL"]),
    ("gpt2", "I'll", ["I", "'ll"]),
    ("mnemonic", "'Ve'rE", ["'Ve", "'rE"]),
    # regex's (?i) folds LATIN SMALL LETTER LONG S to s, but KELVIN SIGN is not one of sdmt
    ("mnemonic", "'\u017fam", ["'\u017f", "am"]),
    ("gpt2", "'\u017fam", ["'", "\u017fam"]),  # gpt2: no other+letters branch
    ("mnemonic", "'\u212aam", ["'\u212aam"]),
    # an apostrophe that starts no contraction prefixes the letters, or joins punctuation
    ("mnemonic", "'xyz", ["'xyz"]),
    ("mnemonic", "x'1", ["x", "'", "1"]),
    ("mnemonic", "!!'s", ["!!'", "s"]),
    # white space: \s+(?!\S) gives back the run's last character to what follows
    ("mnemonic", "x   y", ["x", "  ", " y"]),
    ("mnemonic", "x  \t!", ["x", "  ", "\t", "!"]),
    ("mnemonic", "x   ", ["x", "   "]),
    ("gpt2", "  5", [" ", " 5"]),
    ("mnemonic", "  5", [" ", " ", "5"]),
    # \s*[\r\n]: up to the last CR/LF of a white-space run, then what remains
    ("mnemonic", "a  \n\n b", ["a", "  \n\n", " b"]),
    ("mnemonic", "a\r\n\r\nb", ["a", "\r\n\r\n", "b"]),
    ("gpt2", "a\n\n b", ["a", "\n\n", " b"]),
    ("gpt2", "!!!\n\nx", ["!!!", "\n", "\n", "x"]),
    # punctuation takes the CR/LF run after it in mnemonic/gpt4
    ("mnemonic", "!!!\n\nx", ["!!!\n\n", "x"]),
    ("mnemonic", " ;\r\n", [" ;\r\n"]),
    # any non-CR/LF, non-letter, non-number character prefixes a letter run
    ("mnemonic", "a\u00a0b", ["a", "\u00a0b"]),
    ("mnemonic", "a\tb", ["a", "\tb"]),
    ("gpt2", "a\tb", ["a", "\t", "b"]),
    ("mnemonic", "a\u3000\u3000b", ["a", "\u3000", "\u3000b"]),
    # U+001C..U+001F are str.isspace() but not regex's \s: they are punctuation here
    ("mnemonic", "hello\x1cworld", ["hello", "\x1cworld"]),
    ("mnemonic", "1\x1f\x1f2", ["1", "\x1f\x1f", "2"]),
    # U+0085 and U+2028 are \s (but not [\r\n])
    ("mnemonic", "a\x85\x85b", ["a", "\x85", "\x85b"]),
    ("mnemonic", "a\u2028\nb", ["a", "\u2028\n", "b"]),
    # combining marks and emoji are neither letters nor numbers
    ("mnemonic", "e\u0301t\u00e9", ["e", "\u0301t\u00e9"]),
    ("mnemonic", "hi\U0001f600\U0001f600!", ["hi", "\U0001f600\U0001f600!"]),
    ("gpt2", " \U0001f600x", [" \U0001f600", "x"]),
    # numbers of other scripts: Arabic-Indic digits, circled digits, Roman numerals (Nl)
    ("mnemonic", "\u0661\u0662\u0663", ["\u0661\u0662", "\u0663"]),
    ("gpt4", "\u2460\u2160\u2161x", ["\u2460\u2160\u2161", "x"]),
    # cl100k as tiktoken spells it differs from gpt4 in one place: \s++$ comes before the other
    # white-space branches, so a white-space run that reaches the end of the text is one chunk
    ("cl100k", "a\n ", ["a", "\n "]),
    ("gpt4", "a\n ", ["a", "\n", " "]),
    ("cl100k", "x\n\n  ", ["x", "\n\n  "]),
    ("cl100k", "x\n\n  y", ["x", "\n\n", " ", " y"]),
    ("cl100k", "x  ", ["x", "  "]),
    ("cl100k", "1234567", ["123", "456", "7"]),
    # o200k: letter runs split by case.  U* L+ first: uppercase (and caseless) letters, then
    # lowercase ones; so a capital starts a word, and an all-caps run takes the lowercase after it
    ("o200k", "HelloWorld", ["Hello", "World"]),
    ("o200k", "iPhone", ["i", "Phone"]),
    ("o200k", "HTTPServer", ["HTTPServer"]),
    ("o200k", "HELLO world", ["HELLO", " world"]),
    # the ASCII shortcuts of chunk_end ("word", "Word", " word", " Word") and where they hand over
    ("o200k", " Word's x", [" Word's", " x"]),
    ("o200k", "word\u00e9'S", ["word\u00e9'S"]),
    ("o200k", "abcDEF", ["abc", "DEF"]),
    ("o200k", "Abc'", ["Abc", "'"]),
    ("o200k", "aB c", ["a", "B", " c"]),
    ("o200k", " A", [" A"]),
    ("o200k", " Ab", [" Ab"]),
    # titlecase (Lt) counts as upper; modifier letters and letters without case (Lm, Lo) are
    # in both runs, so U* gives back the last of them to L+ when no lowercase letter follows
    ("o200k", "\u01c5ungla", ["\u01c5ungla"]),
    ("o200k", "A\u02b0", ["A\u02b0"]),
    ("o200k", "\u02b0A", ["\u02b0", "A"]),
    ("o200k", "\u4e2d\u6587AB \u4e2d", ["\u4e2d\u6587", "AB", " \u4e2d"]),
    # combining marks are in both runs, but not \p{L}: a mark also prefixes and is punctuation
    ("o200k", "e\u0301t\u00e9", ["e\u0301t\u00e9"]),
    ("o200k", "E\u0301T", ["E\u0301", "T"]),
    ("o200k", "\u0301\u0301A", ["\u0301\u0301", "A"]),
    ("o200k", "!\u0301x", ["!\u0301x"]),
    ("o200k", "!!\u0301x", ["!!\u0301", "x"]),
    ("o200k", "1\u0301", ["1", "\u0301"]),
    # contractions attach to the end of a letter run, case-insensitively (\u017f folds to s)
    ("o200k", "don't", ["don't"]),
    ("o200k", "DON'T I'm", ["DON'T", " I'm"]),
    ("o200k", "they'reX", ["they're", "X"]),
    ("o200k", "it'sy", ["it's", "y"]),
    ("o200k", "it'\u017f", ["it'\u017f"]),
    ("o200k", "it'x", ["it", "'x"]),
    ("o200k", "'s", ["'s"]),
    ("o200k", "a''s", ["a", "''", "s"]),
    # punctuation takes CR, LF and '/' after it; a '/' or a space prefixes letters
    ("o200k", "x!/\n/y", ["x", "!/\n/", "y"]),
    ("o200k", "a/b", ["a", "/b"]),
    ("o200k", "a; //x", ["a", ";", " //", "x"]),
    ("o200k", " .\r\n", [" .\r\n"]),
    # numbers in groups of up to three, never with a prefix
    ("o200k", "x 12345", ["x", " ", "123", "45"]),
    # white space as in gpt4, with \s*[\r\n]+
    ("o200k", "a  \n\n b", ["a", "  \n\n", " b"]),
    ("o200k", "a\tB", ["a", "\tB"]),
    ("o200k", "x   ", ["x", "   "]),
]


@pytest.mark.parametrize("pattern, text, chunks", WORKED)
def test_worked_examples(pattern, text, chunks):
    assert P.split(text, pattern) == chunks
    assert named.split(text, pattern) == chunks
    assert ORACLE[pattern].findall(text) == chunks


# Invalid UTF-8: each offending byte is a one-byte "other" character.
INVALID = [
    (b"a\xffb", [b"a", b"\xffb"]),  # FF can never start a sequence; other + letters
    (b"\xe2\x82", [b"\xe2\x82"]),  # truncated 3-byte sequence: two others, one punctuation run
    # overlong '/': C0 and AF are two others; C0 is followed by AF, not a letter, so they form
    # a punctuation run, which stops at the letter
    (b"\xc0\xafx", [b"\xc0\xaf", b"x"]),
    (b"1\xed\xa0\x80 x", [b"1", b"\xed\xa0\x80", b" x"]),  # an encoded surrogate: three others
    (b"\xf4\x90\x80\x80", [b"\xf4\x90\x80\x80"]),  # above U+10FFFF
    (b"\xe2\x82\xac", [b"\xe2\x82\xac"]),  # the euro sign, valid: one character
    (b"x\xe2\x82 y", [b"x", b"\xe2\x82", b" y"]),
]


@pytest.mark.parametrize("data, chunks", INVALID)
def test_invalid_utf8_examples(data, chunks):
    assert P.split(data) == chunks
    assert oracle_bytes(data, "mnemonic") == chunks


def test_invalid_byte_before_letters():
    # "'" then FF then "s": no contraction ("'" is followed by FF); "'" is punctuation followed
    # by FF, not a letter, so a punctuation run "'\xff" starts, and it stops at the letter s.
    assert P.split(b"'\xffs") == [b"'\xff", b"s"]
    assert oracle_bytes(b"'\xffs", "mnemonic") == [b"'\xff", b"s"]


def test_end_hides_the_bytes_after_it():
    data = "ab é".encode()  # 61 62 20 C3 A9
    pid = pt.pattern_id("mnemonic")
    chunk_end = P.chunk_end
    assert chunk_end(data, 0, 2, pid) == 2
    assert chunk_end(data, 0, 1, pid) == 1
    # the space can prefix only a letter that exists before `end`
    assert chunk_end(data, 2, 3, pid) == 3
    assert chunk_end(data, 2, 5, pid) == 5
    # C3 without its continuation byte is an invalid one-byte character
    assert chunk_end(data, 3, 4, pid) == 4
    # the contraction needs its letters before `end`
    assert chunk_end(b"'ll", 0, 2, pid) == 2  # "'l": punctuation + letter run
    assert chunk_end(b"'ll", 0, 3, pid) == 3
    # \s+(?!\S) looks ahead only as far as `end`
    assert chunk_end(b"  x", 0, 2, pid) == 2
    assert chunk_end(b"  x", 0, 3, pid) == 1


def _ascii_letters_end(data: bytes, i: int, end: int) -> int:
    while i < end and (0x41 <= data[i] <= 0x5A or 0x61 <= data[i] <= 0x7A):
        i += 1
    return i


def _ascii_lower_end(data: bytes, i: int, end: int) -> int:
    while i < end and 0x61 <= data[i] <= 0x7A:
        i += 1
    return i


def test_ascii_letter_scan_every_stop_byte_length_and_alignment():
    # ascii_letters_end reads eight bytes at a time (SWAR) while eight remain before `end`, then
    # byte by byte.  Every run length 0-19 at offsets 0-8, stopped by each of the 256 byte
    # values, with `end` anywhere from the run's start to past the stop byte: the result is the
    # first byte that is not [A-Za-z], or `end`.  Covers the lane arithmetic (no carry between
    # bytes), the first-mark count for every lane, and the block/tail hand-over.
    letters = b"azAZmnqrBYbyKLxw" * 2
    for run in range(20):
        for offset in range(9):
            for stop in range(256):
                data = b"." * offset + letters[:run] + bytes([stop]) + b"!" * 9
                for end in (offset, offset + run, offset + run + 1, len(data)):
                    got = pt.ascii_letters_end(data, offset, end)
                    assert got == _ascii_letters_end(data, offset, end), (run, offset, stop, end)
                    lower = pt.ascii_lower_end(data, offset, end)
                    assert lower == _ascii_lower_end(data, offset, end), (run, offset, stop, end)


# The 2- and 3-byte sequences that _run decodes inline (and those it leaves to _decode): each
# edge of the well-formed ranges, the overlong and surrogate forms, bad continuations, leads
# with no continuation, 4-byte characters.
_MULTIBYTE = [
    b"\xc2\x80", b"\xc2\xa0", b"\xc3\xa9", b"\xcf\x80", b"\xd0\xb0", b"\xdf\xbf",  # 2 bytes
    b"\xe0\xa0\x80", b"\xe0\xa4\x95", b"\xe0\xb8\x81", b"\xe1\x80\x80", b"\xe3\x81\x82",
    b"\xe4\xb8\xad", b"\xea\xb0\x80", b"\xec\x9f\xbf", b"\xed\x9f\xbf", b"\xee\x80\x80",
    b"\xef\xbf\xbd", b"\xef\xbc\xa1", b"\xe2\x80\x99", b"\xe3\x80\x80", b"\xcc\x81",  # 3 bytes, marks, spaces
    b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",  # overlong, surrogates
    b"\xc0\x80", b"\xc1\xbf", b"\xc3", b"\xc3\x41", b"\xc3\xc3\xa9", b"\xe4\xb8", b"\xe4\xb8\x41",
    b"\xe4\x41\xad", b"\x80", b"\xbf", b"\xf0\x9f\x98\x80", b"\xf4\x8f\xbf\xbf", b"\xf5\x80\x80\x80",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_runs_through_multibyte_characters(pattern):
    """Runs of letters that meet every sequence of _MULTIBYTE, alone, between letters of three
    scripts and cut by `end` at every byte: the chunks equal the regex's on the text
    surrogateescape decodes (the inline 2-/3-byte decoding of _run agrees with _decode)."""
    pid = pt.pattern_id(pattern)
    for seq in _MULTIBYTE:
        for before, after in ((b"abc", b"def"), ("\u0436\u0438".encode(), "\u4e2d\u6587".encode()), (b" x", b"1 ")):
            data = before + seq + after + seq + seq + b"z"
            assert P.split(data, pattern) == oracle_bytes(data, pattern), (pattern, data)
            for end in range(1, len(data)):
                got = [data[a:b] for a, b in zip([0, *boundaries(data, pid, end)], boundaries(data, pid, end))]
                assert got == oracle_bytes(data[:end], pattern), (pattern, data, end)


# What may end a run of ASCII letters: every ASCII character, non-ASCII letters (which continue
# the word), non-ASCII non-letters, and a combining mark.
_STOPS = [chr(c) for c in range(128)] + ["é", "ß", "中", "\u00a0", "\u2019", "\u0301", "ǅ", "😀"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_word_fast_path_every_length_and_stop(pattern):
    # scan's " word" / "word" shortcuts scan the first eight letters inline (one 64-bit load)
    # and hand longer words and non-ASCII stops on: every run length 0-19 (within, at and past
    # the first block), with and without the leading space, before each stop, with `end` right
    # after the stop or further on, agrees with the regex.
    pid = pt.pattern_id(pattern)
    letters = "azAZmnqrBYbyKLxw" * 2
    for run in range(20):
        for lead in ("", " "):
            for stop in _STOPS:
                for after in ("", "!x" * 6):
                    text = lead + letters[:run] + stop + after
                    data = text.encode("utf-8", "surrogatepass")
                    m = regex.match(pt.PATTERN_REGEX[pattern], text)
                    assert m is not None
                    assert P.chunk_end(data, 0, len(data), pid) == len(m.group().encode()), (pattern, text)


def test_chunk_count_counts_the_chunks():
    for pattern in PATTERNS:
        text = "Hello world, it's 2024!\n\n  Bye."
        assert P.chunk_count(text.encode(), pt.pattern_id(pattern)) == len(ORACLE[pattern].findall(text))


# ---- every code point ----------------------------------------------------------------------


def _all_chars() -> list[str]:
    return [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_code_point_in_context(pattern, full_corpus):
    """Each code point after an apostrophe (contraction folding) and before a letter and a
    digit, which exposes its class in every branch; in its 1- to 4-byte UTF-8 form.  Classes
    and decoding are the same for the first four patterns, so by default only `mnemonic` (the
    one with case folding) and `o200k` (which has a table of its own) take all code points, the
    others every 17th (all take all of them under --full-corpus).

    o200k's context tells its classes apart: after a lowercase letter (in L or not), after a
    capital (in U or not), before "Ab" (a lowercase letter ends L+, a caseless one is given
    back by U*, an uppercase one stays in U+), after "!!" (a mark is punctuation, a letter is
    not)."""
    chars = _all_chars()
    if pattern not in ("mnemonic", "o200k") and not full_corpus:
        chars = chars[::17]
    if pattern == "o200k":
        text = "".join(f"'{c}a{c}A {c}Ab!!{c}1" for c in chars)
    else:
        text = "".join(f"'{c}a{c}1" for c in chars)
    check_text(text, pattern)


# ---- the corpus ----------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["english", "multilingual", "code", "chat"])
def test_corpus_equals_regex(corpus_docs: Callable[..., list[str]], full_corpus: bool, name: str):
    docs = corpus_docs(name, max_bytes=500_000)
    assert docs
    for pattern in PATTERNS:
        oracle = ORACLE[pattern]
        for k, text in enumerate(docs):
            expected = oracle.findall(text)
            got = P.split(text, pattern)
            if got != expected:
                at = next(i for i, (g, e) in enumerate(zip(got + [None], expected + [None])) if g != e)
                pytest.fail(f"{name} document {k}, {pattern}: chunk {at}: {got[at:at + 3]} != {expected[at:at + 3]}")
            assert P.split(text.encode("utf-8"), pattern) == [c.encode("utf-8") for c in expected]
    if full_corpus:
        print(f"\n{name}: {len(docs)} documents compared for each of {', '.join(PATTERNS)}")


# ---- hypothesis ----------------------------------------------------------------------------

CONTRACTIONS = [
    "'" + a + b
    for a, b in [("s", ""), ("d", ""), ("m", ""), ("t", ""), ("l", "l"), ("v", "e"), ("r", "e")]
] + ["'", "\u2019s", "'\u017f", "'\u212a", "'x", "'1", "''"]
SPACES = [
    " ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f",
    "\x85", "\xa0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f",
    "\u3000", "\ufeff",
]  # fmt: skip


@st.composite
def case_variant(draw: st.DrawFn, s: str) -> str:
    return "".join(c.upper() if draw(st.booleans()) else c for c in s)


pieces = st.one_of(
    st.sampled_from(CONTRACTIONS).flatmap(case_variant),
    st.sampled_from(SPACES),
    st.text(st.sampled_from(" \t\n\r\xa0\u3000"), min_size=1, max_size=6),
    st.integers(0, 10**12).map(str),
    st.text(st.characters(categories=["Nd", "Nl", "No"]), min_size=1, max_size=5),
    st.text(st.characters(categories=["L"]), min_size=1, max_size=6),
    st.text(st.characters(categories=["Mn", "Mc", "Me"]), min_size=1, max_size=3),
    st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF),
    st.text(st.sampled_from("abcXYZ.,!?-_()$'\"#@"), min_size=1, max_size=4),
    # o200k: case transitions, titlecase, caseless letters, marks, '/' and CR/LF after punctuation
    st.text(st.sampled_from("aAzZ\u01c5\u02b0\u4e2d\u0301\u20dd'/!\n\r "), min_size=1, max_size=6),
    st.text(st.characters(categories=["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me"]), min_size=1, max_size=5),
    st.characters(exclude_categories=["Cs"]),
)
hard_text = st.lists(pieces, max_size=24).map("".join)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hard_text)
def test_hypothesis_hard_spots(pattern, text):
    check_text(text, pattern)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(exclude_categories=["Cs"]), max_size=40))
def test_hypothesis_any_text(pattern, text):
    check_text(text, pattern)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=64))
def test_hypothesis_any_bytes(pattern, data):
    chunks = P.split(data, pattern)
    assert b"".join(chunks) == data
    assert all(chunks)
    assert P.split(data, pattern) == chunks  # stable
    assert boundaries(data, pt.pattern_id(pattern)) == list(_accumulate(len(c) for c in chunks))
    assert chunks == oracle_bytes(data, pattern)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.binary(max_size=4), pieces.map(lambda s: s.encode("utf-8"))), max_size=16))
def test_hypothesis_text_with_invalid_bytes(pattern, parts):
    data = b"".join(parts)
    chunks = P.split(data, pattern)
    assert b"".join(chunks) == data
    assert chunks == oracle_bytes(data, pattern)


def _accumulate(lengths):
    total = 0
    for n in lengths:
        total += n
        yield total


# ---- linear time ---------------------------------------------------------------------------

RUNS = ["a", "7", " ", "\n", "\r\n", ".", "'", "\U0001f600", "\u0301", "\u3000", " a", "'s", " \n"]
RUNS += ["A", "Ab", "a'", "\u4e2dA", "/", "!\n/", "a\n "]  # o200k's case runs, cl100k's \s++$


def _seconds(data: bytes, pid: int) -> float:
    """CPU seconds, best of 2: a wall clock on a shared machine counts the time the process
    waited for a core (at load 7 on 2 cores, a 10 MB run took 4x its CPU time)."""
    best = float("inf")
    for _ in range(2):
        t = time.process_time()
        P.chunk_count(data, pid)
        best = min(best, time.process_time() - t)
    return best


@pytest.mark.slow
@pytest.mark.parametrize("pattern", PATTERNS)
def test_linear_time_on_long_runs(pattern):
    """10 MB runs of one character of each class take about 10x the time of 1 MB runs; the
    bound (20x plus slack, for a shared machine) still catches anything quadratic (100x)."""
    pid = pt.pattern_id(pattern)
    for unit in RUNS:
        u = unit.encode("utf-8")
        small = u * (1_000_000 // len(u))
        large = u * (10_000_000 // len(u))
        t_small = _seconds(small, pid)
        t_large = _seconds(large, pid)
        assert t_large < 20 * t_small + 0.25, f"{unit!r}: {t_large:.3f} s for 10 MB vs {t_small:.3f} s for 1 MB"


# ---- the generated tables ------------------------------------------------------------------


def _generator():
    path = ROOT / "tools" / "gen_unicode_tables.py"
    if not path.is_file():
        pytest.skip(f"{path} is absent (the tests run from an installed package without its tools/)")
    spec = importlib.util.spec_from_file_location("gen_unicode_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_unicode_tables"] = module
    spec.loader.exec_module(module)
    return module


def test_tables_regenerate_identically():
    gen = _generator()
    installed = gen.regex_unicode_version()
    if installed != tables.UNICODE_VERSION:
        pytest.skip(
            f"regex {regex.__version__} holds Unicode {installed}, the tables Unicode {tables.UNICODE_VERSION} "
            f"(from regex {tables.REGEX_VERSION}); install that version or rerun tools/gen_unicode_tables.py"
        )
    committed = (ROOT / "mnemo" / "_unicode_tables.py").read_text(encoding="utf-8")
    assert gen.render() == committed
    assert Path(tables.__file__).read_text(encoding="utf-8") == committed  # the installed copy


def test_table_lookup_worked_examples():
    def cls(cp: int) -> int:
        return tables.STAGE2[(tables.STAGE1[cp >> tables.BLOCK_SHIFT] << tables.BLOCK_SHIFT) | (cp & tables.BLOCK_MASK)]

    assert cls(ord("a")) == tables.LETTER
    assert cls(0x4E2D) == tables.LETTER  # 中
    assert cls(0x0661) == tables.NUMBER  # ARABIC-INDIC DIGIT ONE
    assert cls(0x2160) == tables.NUMBER  # ROMAN NUMERAL ONE (Nl)
    assert cls(0x3000) == tables.WHITE
    assert cls(0x0301) == tables.OTHER  # combining acute accent
    assert cls(0x1F600) == tables.OTHER  # emoji
    assert cls(0x1C) == tables.OTHER  # not regex's \s, though str.isspace() says so
    assert [cls(c) for c in (0x20, 0x0A, 0x0D, 0x27)] == [tables.SPACE, tables.NEWLINE, tables.NEWLINE, tables.APOS]
    assert tables.ASCII_CLASS[:128] == bytes(cls(c) for c in range(128))
    assert tables.FOLD_CPS == (0x17F,) and tables.FOLD_LETTERS == b"s"


def test_o200k_table_lookup_worked_examples():
    def cls(cp: int) -> int:
        return tables.O200K_STAGE2[(tables.O200K_STAGE1[cp >> tables.BLOCK_SHIFT] << tables.BLOCK_SHIFT) | (cp & tables.BLOCK_MASK)]

    assert [cls(ord(c)) for c in "aZ1 \n'!"] == [
        tables.O_LOWER, tables.O_UPPER, tables.O_NUMBER, tables.O_SPACE, tables.O_NEWLINE, tables.O_APOS, tables.O_OTHER,
    ]  # fmt: skip
    assert cls(0x01C5) == tables.O_UPPER  # Lt: DZ with caron, titlecase
    assert cls(0x02B0) == tables.O_BOTH  # Lm: modifier letter small h
    assert cls(0x4E2D) == tables.O_BOTH  # Lo: 中
    assert cls(0x0301) == tables.O_MARK  # Mn: combining acute accent
    assert cls(0x0903) == tables.O_MARK  # Mc: Devanagari sign visarga
    assert cls(0x20DD) == tables.O_MARK  # Me: combining enclosing circle
    assert cls(0x1F600) == tables.O_OTHER
    assert cls(0x3000) == tables.O_WHITE
    assert cls(0xDC80) == tables.O_OTHER  # a lone surrogate: how the oracle sees an invalid byte
    assert tables.O200K_ASCII_CLASS[:128] == bytes(cls(c) for c in range(128))
