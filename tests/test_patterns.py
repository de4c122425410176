"""The properties other modules assume of EVERY pre-tokenizer pattern (constants.PATTERN_PROPERTIES),
checked for each name in constants.PATTERNS against the `regex` module running the pattern's own
regular expression (pretokenize.PATTERN_REGEX).  Adding a pattern to constants.PATTERNS runs it
through every check here; a pattern that breaks a property fails, naming the property, instead of
giving wrong chunks silently where the shortcut is taken:

- "ascii_fast_path": the hand-written twin pretokenize_named.chunk_end (the bench's baseline) cuts
  four ASCII cases inline before it looks at the pattern at all;
- "cut_before_space_letter": sources._WORD_GAP cuts input files into tasks before a space followed by an ASCII letter and preceded by a printable
  ASCII character that is not white space (after white space, cl100k's end-of-text branch differs).

The compiled family itself (any split regex, the presets, sequences, the regex engine) is tested in
tests/test_family.py.
"""

from __future__ import annotations

import string
from collections.abc import Callable

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo import patterns, pretokenize, sources
from mnemo.constants import OWN_ASCII_SHORTCUTS, PATTERN_PROPERTIES, PATTERNS

LETTERS = ["a", "Z", "word", "Ab", "x" * 40]
# what may follow the case's chunk: the end, white space, digits, marks, contractions, non-ASCII
FOLLOW = ["", " ", "  ", "\n", "\r\n", "\t", "1", "12", "!", "?!", ".", "'", "'s", "'LL", "é", "中文", "é1",
          "\u00a0", " a", "a"]
MARKS = [c for c in string.punctuation if c != "'"] + ["\x00", "\x1b", "\x7f"]


def first_chunk(pattern: str, text: str) -> str:
    m = regex.match(pretokenize.PATTERN_REGEX[pattern], text)
    assert m is not None, (pattern, text)
    return str(m.group())


def letter_run(text: str) -> str:
    m = regex.match(r"\p{L}+", text)
    return "" if m is None else str(m.group())


def check_ascii_fast_path(pattern: str) -> None:
    """The four cases pretokenize.chunk_end decides before looking at the pattern."""
    for letters in LETTERS:
        for follow in FOLLOW:
            # " word": a space before an ASCII letter opens a chunk of the space and the letters
            text = " " + letters + follow
            assert first_chunk(pattern, text) == " " + letter_run(letters + follow), (pattern, text)
            # "word": ASCII letters run as far as the letters go
            text = letters + follow
            assert first_chunk(pattern, text) == letter_run(text), (pattern, text)
    for mark in MARKS:
        for follow in FOLLOW:
            # ", ": one mark before a space is a chunk of its own
            text = mark + " " + follow
            assert first_chunk(pattern, text) == mark, (pattern, text)
    for newline in ("\n", "\r"):
        for nxt in ["a", "Z", "7", "'", *MARKS]:
            # a line break before a letter, digit or mark is a chunk of its own
            text = newline + nxt + "tail"
            assert first_chunk(pattern, text) == newline, (pattern, text)


PIECES = ["", " ", "  ", "\n", "\n\n", "\r\n", "\t", " \n ", "a", "Ab", "word", " word", "'s", "1", "123",
          "!!", "(", ", ", "é", "中文", "\u00a0", "\u3000", "x" * 40, " " * 40, "\n" * 3 + " " * 5, "\n\n\n     1"]
SPACE_LETTER = regex.compile(r"(?<=[!-~]) [A-Za-z]")  # a space between a printable non-space and a letter


def check_cut_before_space_letter(pattern: str, text: str) -> None:
    """Before every space between a printable non-space ASCII character and an ASCII letter lies a chunk boundary, and the text before
    it, split on its own, gives the same chunks (its last chunk's lookahead sees the end of the
    text instead of the space)."""
    chunks = regex.findall(pretokenize.PATTERN_REGEX[pattern], text)
    bounds = {0}
    pos = 0
    for chunk in chunks:
        pos += len(chunk)
        bounds.add(pos)
    for m in SPACE_LETTER.finditer(text):
        cut = m.start()
        assert cut in bounds, (pattern, text, cut)
        before = regex.findall(pretokenize.PATTERN_REGEX[pattern], text[:cut])
        assert before == chunks[: len(before)] and "".join(before) == text[:cut], (pattern, text, cut)


CHECKS: dict[str, Callable[[str], None]] = {
    "ascii_fast_path": check_ascii_fast_path,
    "cut_before_space_letter": lambda pattern: check_cut_before_space_letter(
        pattern, "it's a word, then 12 more\n\nwords  and\tx y!! (z) é b \u00a0c"
    ),
}


def test_every_property_has_a_check() -> None:
    """constants.PATTERN_PROPERTIES and the checks here name the same properties."""
    assert sorted(CHECKS) == sorted(PATTERN_PROPERTIES)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_pattern_is_implemented(pattern: str) -> None:
    """A name in constants.PATTERNS has its regex (the oracle) and its id in the pre-tokenizer."""
    assert pattern in pretokenize.PATTERN_REGEX
    pid = pretokenize.pattern_id(pattern)
    assert pid == PATTERNS.index(pattern) and pretokenize.pattern_name(pid) == pattern
    text = "Hello world, it's 2026!\n  x"
    assert patterns.split(text, pattern) == regex.findall(pretokenize.PATTERN_REGEX[pattern], text)


ASSUMED = [
    (pattern, prop)
    for prop in PATTERN_PROPERTIES
    for pattern in PATTERNS
    if not (prop == "ascii_fast_path" and pattern in OWN_ASCII_SHORTCUTS)
]


@pytest.mark.parametrize(("pattern", "prop"), ASSUMED)
def test_pattern_property(pattern: str, prop: str) -> None:
    CHECKS[prop](pattern)


@pytest.mark.parametrize("pattern", OWN_ASCII_SHORTCUTS)
def test_patterns_with_own_shortcuts_do_break_the_shared_one(pattern: str) -> None:
    """OWN_ASCII_SHORTCUTS is not a way to silence the check: each listed pattern really cuts
    one of the shared fast path's cases otherwise (else it belongs under the property)."""
    with pytest.raises(AssertionError):
        check_ascii_fast_path(pattern)


def test_own_shortcuts_are_known_patterns() -> None:
    assert set(OWN_ASCII_SHORTCUTS) <= set(PATTERNS)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.sampled_from(PATTERNS))
def test_cut_before_space_letter_on_random_texts(parts: list[str], pattern: str) -> None:
    check_cut_before_space_letter(pattern, "".join(parts))


def test_the_shortcuts_cut_only_where_the_property_holds() -> None:
    """sources._WORD_GAP finds only spaces before an ASCII letter, the places
    "cut_before_space_letter" covers."""
    text = b"ab cd, e\n f  G\xc3\xa9 h1 i"
    gap = sources._word_gap(text)
    assert gap > 0 and SPACE_LETTER.match(text.decode(), len(text[:gap].decode()))


def test_a_pattern_breaking_a_property_fails() -> None:
    """The checks can fail: a pattern that keeps a mark with the space after it (", ") breaks
    ascii_fast_path, and one that glues a space to the word before it breaks
    cut_before_space_letter."""
    saved = dict(pretokenize.PATTERN_REGEX)
    try:
        pretokenize.PATTERN_REGEX["bad-mark"] = r"[^\s\p{L}\p{N}] |\p{L}+| ?\p{L}+|\s+|."
        with pytest.raises(AssertionError):
            check_ascii_fast_path("bad-mark")
        pretokenize.PATTERN_REGEX["bad-space"] = r"\p{L}+ ?|\s+|."
        with pytest.raises(AssertionError):
            check_cut_before_space_letter("bad-space", "ab cd")
    finally:
        pretokenize.PATTERN_REGEX.clear()
        pretokenize.PATTERN_REGEX.update(saved)


# ---- the presets: where training may cut documents -------------------------------------------


def check_cut_before_space_letter_split(name: str, text: str) -> None:
    """check_cut_before_space_letter for a preset, with mnemo's own split (which
    tests/test_family.py compares with regex and tokenizers) as the splitter."""
    chunks = patterns.split(text, name)
    bounds = {0}
    pos = 0
    for chunk in chunks:
        pos += len(chunk)
        bounds.add(pos)
    for m in SPACE_LETTER.finditer(text):
        cut = m.start()
        assert cut in bounds, (name, text, cut)
        before = patterns.split(text[:cut], name)
        assert before == chunks[: len(before)] and "".join(before) == text[:cut], (name, text, cut)


@pytest.mark.parametrize("name", list(patterns.PRESETS))
def test_presets_cut_at_word_gaps(name: str) -> None:
    """patterns.cuts_at_word_gaps says training may cut a preset's documents at a space between
    ASCII letters (sources._WORD_GAP); it holds for every preset."""
    assert patterns.cuts_at_word_gaps(patterns.compile_pattern(name))
    check_cut_before_space_letter_split(name, "it's a word, then 12 more\n\nwords  and\tx y!! (z) é b \u00a0c 中 文 x")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from(list(patterns.PRESETS)))
def test_presets_cut_at_word_gaps_on_random_texts(parts: list[str], name: str) -> None:
    check_cut_before_space_letter_split(name, "".join(parts))


def test_a_regex_of_ones_own_is_not_assumed_to_cut_at_word_gaps() -> None:
    assert not patterns.cuts_at_word_gaps(patterns.compile_pattern(r"\p{L}+ ?|\s+|."))
