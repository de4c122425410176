"""The special-token matcher (mnemo/special_match.py) against the `re` alternation the Tokenizer
used (longest name first), against its naive twin, and against a quadratic blow-up."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.errors import ConfigError
from mnemo.reference import find_specials_naive
from mnemo.special_match import FIRST_BYTE_TRIES, SpecialMatcher, lacks


def alternation(names: list[bytes]) -> re.Pattern[bytes]:
    """The Tokenizer's regex as it was built before the matcher (Tokenizer._specials_re)."""
    ordered = sorted(set(names), key=lambda b: (-len(b), b))
    return re.compile(b"|".join(re.escape(b) for b in ordered))


def by_regex(names: list[bytes], data: bytes) -> list[tuple[int, int, int]]:
    index: dict[bytes, int] = {}
    for k, name in enumerate(names):
        index.setdefault(name, k)
    return [(m.start(), m.end(), index[m.group()]) for m in alternation(names).finditer(data)]


# Few distinct bytes, so that names overlap, nest and share prefixes often.
small_bytes = st.binary(min_size=0, max_size=60).map(lambda b: bytes(x % 4 + 0x3C for x in b))
names_st = st.lists(st.binary(min_size=1, max_size=6).map(lambda b: bytes(x % 4 + 0x3C for x in b)), min_size=1, max_size=12)


@settings(max_examples=600, deadline=None)
@given(names=names_st, data=small_bytes)
def test_find_all_is_the_alternation(names: list[bytes], data: bytes) -> None:
    assert SpecialMatcher(names).find_all(data) == by_regex(names, data)


@settings(max_examples=300, deadline=None)
@given(names=names_st, data=small_bytes)
def test_find_all_is_the_naive_twin(names: list[bytes], data: bytes) -> None:
    assert SpecialMatcher(names).find_all(data) == find_specials_naive(names, data)


@settings(max_examples=300, deadline=None)
@given(names=names_st, data=small_bytes, pos=st.integers(0, 70), cut=st.integers(0, 70))
def test_find_is_the_alternation_search(names: list[bytes], data: bytes, pos: int, cut: int) -> None:
    """find(data, pos, end) is re's pattern.search(data, pos, end): leftmost, longest at that
    start, and no name running past `end`; search(data) gives the same as a Found."""
    end = min(len(data), max(pos, cut))
    pos = min(pos, end)
    m = alternation(names).search(data, pos, end)
    matcher = SpecialMatcher(names)
    got = matcher.find(data, pos, end)
    if m is None:
        assert got is None
    else:
        assert got is not None
        assert (got[0], got[1]) == (m.start(), m.end())
        assert names[got[2]] == m.group()
    whole, found = alternation(names).search(data), matcher.search(data)
    assert (whole is None) == (found is None)
    if whole is not None and found is not None:
        assert (found.start(), found.end(), found.group()) == (whole.start(), whole.end(), whole.group())
    assert [(f.start(), f.end(), f.group()) for f in matcher.finditer(data)] == [
        (w.start(), w.end(), w.group()) for w in alternation(names).finditer(data)
    ]


def test_worked_examples() -> None:
    """Names "<|a|>" (0), "<|a|>x" (1), "<|" (2), "|>" (3):
    "z<|a|>xy" -> "<|a|>x" at 1 (the longest at the leftmost start, over "<|a|>" and "<|");
    "<|<|a|>"  -> "<|" at 0 (leftmost wins over the longer name starting at 2), then "<|a|>" at 2;
    "|><|"     -> "|>" at 0, "<|" at 2.
    find from 2 in the first finds "|>" at 4; find up to 6 finds "<|a|>"."""
    m = SpecialMatcher([b"<|a|>", b"<|a|>x", b"<|", b"|>"])
    assert m.find_all(b"z<|a|>xy") == [(1, 7, 1)]
    assert m.find_all(b"<|<|a|>") == [(0, 2, 2), (2, 7, 0)]
    assert m.find_all(b"|><|") == [(0, 2, 3), (2, 4, 2)]
    assert m.find(b"z<|a|>xy", 2) == (4, 6, 3)  # from 2 on, the name that started at 1 is gone
    assert m.find(b"z<|a|>xy", 0, 6) == (1, 6, 0)  # "<|a|>x" would run past end=6
    assert m.find(b"abc") is None
    assert m.search(b"abc") is None
    assert m.find_all(b"") == []


def test_a_name_listed_twice_keeps_its_first_index() -> None:
    assert SpecialMatcher([b"ab", b"x", b"ab"]).find_all(b"abab") == [(0, 2, 0), (2, 4, 0)]


def test_empty_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="special token name 1 is empty"):
        SpecialMatcher([b"a", b""])


def test_find_range_is_checked() -> None:
    m = SpecialMatcher([b"a"])
    with pytest.raises(ConfigError, match="pos=3, end=2"):
        m.find(b"aaaa", 3, 2)
    with pytest.raises(ConfigError, match="end=9"):
        m.find(b"aaaa", 0, 9)
    assert m.find(b"aaaa", 4) is None


def test_every_byte_value() -> None:
    names = [bytes([b]) + b"\x00" for b in range(256)] + [b"\xff\xff\xff"]
    data = bytes(range(256)) + b"\x00\xff\xff\xff\x00"
    m = SpecialMatcher(names)
    assert m.find_all(data) == by_regex(names, data)


def many_names(n: int) -> list[bytes]:
    base = [b"<|endoftext|>", b"<|fim_prefix|>", b"<|fim_middle|>", b"<|fim_suffix|>", b"<|endofprompt|>"]
    return base + [f"<|reserved_special_token_{k}|>".encode() for k in range(n - len(base))]


def test_many_names_stay_linear() -> None:
    """The quadratic blow-up guard (issue: 1 MB of "<|" with 57,016 names took ~45 s through the
    regex alternation).  The bound is generous on purpose -- ~100x what the matcher takes on an
    idle machine -- so that it fails on an O(text x names) scan, not on a busy machine."""
    names = many_names(57_016)
    m = SpecialMatcher(names)
    data = b"<|" * 500_000 + b"<|endoftext|>"
    t = time.process_time()
    found = m.find_all(data)
    took = time.process_time() - t
    assert found == [(1_000_000, 1_000_013, 0)]
    assert took < 5.0, f"1 MB of '<|' with 57,016 names took {took:.2f} s of CPU"


def test_many_names_agree_with_the_alternation_on_a_short_text() -> None:
    names = many_names(2_000)
    data = b"x<|reserved_special_token_19|><|reserved_special_token_199|>" + b"<|" * 50 + b"<|reserved_special_token_1999|>|>"
    assert SpecialMatcher(names).find_all(data) == by_regex(names, data)


def test_tokenizer_with_57016_specials_stays_linear() -> None:
    """The Tokenizer finds specials through the matcher: 1 MB of "<|" with 57,016 specials took
    ~45 s through the re alternation.  Generous bound (the matcher's share is milliseconds; the
    rest is encoding 1,000,000 bytes without merges)."""
    from mnemo import SpecialTokenError, Tokenizer

    names = [n.decode() for n in many_names(57_016)]
    tok = Tokenizer([], special_tokens=names)
    text = "<|" * 500_000 + "<|reserved_special_token_123|>"
    t = time.process_time()
    ids = tok.encode(text, allowed_special="all")
    with pytest.raises(SpecialTokenError, match="'<\\|reserved_special_token_123\\|>' at byte 1000000"):
        tok.encode(text)
    took = time.process_time() - t
    assert ids[-1] == tok.special_tokens["<|reserved_special_token_123|>"]
    assert ids[:-1] == list(b"<|" * 500_000)
    assert took < 20.0, f"encoding 1 MB of '<|' with 57,016 specials took {took:.2f} s of CPU"


def test_tokenizer_specials_overlapping_names_keep_the_longest() -> None:
    """Where two specials start at one place the longer one wins, as with the alternation (its
    names were listed longest first); leftmost wins over longer."""
    from mnemo import Tokenizer

    tok = Tokenizer([], special_tokens=["<|a|>", "<|a|>x", "|><"])
    sp = tok.special_tokens
    assert tok.encode("<|a|>xy", allowed_special="all") == [sp["<|a|>x"], ord("y")]
    assert tok.encode("<|a|><", allowed_special="all") == [sp["<|a|>"], ord("<")]
    assert tok.encode("z|><|a|>", allowed_special="all") == [ord("z"), sp["|><"], *b"|a|>"]
    assert tok.encode("<|a|>x", allowed_special={"<|a|>"}, disallowed_special=()) == [sp["<|a|>"], ord("x")]


@settings(max_examples=800, deadline=None)
@given(prefix=st.binary(min_size=1, max_size=3).map(lambda b: bytes(x % 4 + 0x3C for x in b)), data=small_bytes)
def test_lacks_is_not_in(prefix: bytes, data: bytes) -> None:
    """lacks (the first byte by memchr, then the whole prefix) is `prefix not in data`, with
    texts where the first byte comes often without the rest (past FIRST_BYTE_TRIES of them)."""
    assert lacks(data, prefix) == (prefix not in data)


def test_lacks_past_its_tries() -> None:
    """The prefix after many places of its first byte alone, at the text's end or nowhere; and
    10 MB of the first byte alone, found or not, in bounded time."""
    for misses in (0, FIRST_BYTE_TRIES - 1, FIRST_BYTE_TRIES, FIRST_BYTE_TRIES + 1, 100):
        head = b"<a" * misses
        assert not lacks(head + b"<|x", b"<|")
        assert not lacks(head + b"<|", b"<|")
        assert lacks(head + b"|<", b"<|")
    hostile = b"<" * (10 << 20)
    start = time.perf_counter()
    assert lacks(hostile, b"<|") and not lacks(hostile + b"|", b"<|")
    assert time.perf_counter() - start < 5.0  # generous: a guard against a blow-up, not a speed test
