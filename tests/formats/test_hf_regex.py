"""Split regexes between Oniguruma (what `tokenizers` runs) and the `regex` module
(mnemo/formats/hf_regex.py).  Oracle: a `tokenizers` Split pre-tokenizer on the Oniguruma
spelling, against the `regex` module on the other spelling, both ways."""

from __future__ import annotations

from typing import Any

import pytest
import regex

from mnemo.formats.hf_regex import UnsupportedRegex, onig_to_regex, regex_to_onig
from mnemo.pretokenize import PATTERN_REGEX

TEXTS = [
    "1234567 89 1",
    "aaaaa",
    "ab  \n cd  ",
    "  x\n  y\n",
    "a\nb",
    "xx0fgy",
    "xABx aBc",
    "a\na",
    "AAB",
    "]a]b",
    "aab",
    "I'll 12345 don't  \n\n  x  ",
    "\u00e9t\u00e9 2\u00b2 \u0661\u0662\u0663\u0664 \u65e5\u672c",
    "x\r\n\r\n  \t\u3000y",
]

#: Oniguruma spellings with what they mean, read the same way by `tokenizers` and, rewritten, `regex`
ONIG = [
    r"\p{N}{1,3}+",  # the interval repeated, not possessive
    r"\p{N}{1,3}",
    r"a{2}?",  # optional, not lazy
    r"a{1,3}?",
    r"a{,2}",
    r"\s+$",  # end of a line
    r"^\s+",
    r"(?m)a.b",  # Ruby's m: dot matches a newline
    r"\h+",
    r"[\h]+",
    r"\H+",
    r"(?i)ab",
    r"(?i:ab)c",
    r"a\Z",
    r"a\z",
    r"\x41+",
    r"\u0041\x{42}",
    r"[]a]+",
    r"a(?#comment)+",
    r"(?<name>a)+b",
    r"\p{^L}+",
    r"[^\r\n\p{L}\p{N}]?+\p{L}++",
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
]


def hf_split(pattern: str, text: str) -> list[str]:
    tokenizers = pytest.importorskip("tokenizers")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="isolated")
    return [piece for piece, _ in split.pre_tokenize_str(text)]


def regex_split(pattern: str, text: str) -> list[str]:
    out: list[str] = []
    prev = 0
    for m in regex.finditer(pattern, text):
        if m.start() > prev:
            out.append(text[prev : m.start()])
        if m.end() > m.start():
            out.append(m.group())
        prev = m.end()
    if prev < len(text):
        out.append(text[prev:])
    return out


@pytest.mark.parametrize("pattern", ONIG)
def test_import_reads_as_oniguruma_does(pattern: str) -> None:
    translated = onig_to_regex(pattern)
    for text in TEXTS:
        assert regex_split(translated, text) == hf_split(pattern, text), (pattern, translated, text)


@pytest.mark.parametrize("pattern", [*PATTERN_REGEX.values(), r"\p{N}{1,3}+x", r"a{2}?", r"\s+$", r"^ ", r"a\Z"])
def test_export_reads_in_oniguruma_as_regex_does(pattern: str) -> None:
    onig = regex_to_onig(pattern)
    for text in TEXTS:
        assert hf_split(onig, text) == regex_split(pattern, text), (pattern, onig, text)


def test_the_possessive_interval_is_the_issues_bug() -> None:
    """cl100k's `\\p{N}{1,3}+` reads as a repeated group in Oniguruma (issue 26 item 6): a run
    of digits is one piece there, groups of three in `regex`; the export spells it atomic."""
    assert hf_split(r"\p{N}{1,3}+", "1234567") == ["1234567"]
    assert regex_split(r"\p{N}{1,3}+", "1234567") == ["123", "456", "7"]
    assert regex_to_onig(r"\p{N}{1,3}+") == r"(?>\p{N}{1,3})"
    assert onig_to_regex(r"\p{N}{1,3}+") == r"(?:\p{N}{1,3})+"


REFUSED: list[tuple[str, str, Any]] = [
    (r"\w+", r"the escape \\w", onig_to_regex),
    (r"a\b", r"the escape \\b", onig_to_regex),
    (r"(a)\1", r"the escape \\1", onig_to_regex),
    (r"[a-z&&[^aeiou]]", r"a nested class|intersection", onig_to_regex),
    (r"[[:alpha:]]", r"a nested class", onig_to_regex),
    (r"a(?i)b", r"inline flags after the start", onig_to_regex),
    (r"(?x) a", r"the inline flag 'x'", onig_to_regex),
    (r"\Ka", r"the escape \\K", onig_to_regex),
    (r"(?(1)a|b)", r"the group", onig_to_regex),
    (r"*a", r"nothing to repeat", onig_to_regex),
    (r"(a", r"never closed", onig_to_regex),
    (r"a)", r"unbalanced", onig_to_regex),
    (r"(?m)^a", r"the inline flag 'm'", regex_to_onig),
    (r"\w", r"the escape \\w", regex_to_onig),
]


@pytest.mark.parametrize(("pattern", "message", "fn"), REFUSED, ids=[f"{f.__name__}:{p}" for p, _, f in REFUSED])
def test_what_the_engines_read_otherwise_is_refused(pattern: str, message: str, fn: Any) -> None:
    with pytest.raises(UnsupportedRegex, match=message):
        fn(pattern)


def test_class_characters_regex_would_read_literally_are_escaped_for_oniguruma() -> None:
    assert regex_to_onig(r"[a[b]") == r"[a\[b]"
    assert regex_to_onig(r"[&&x]") == r"[\&\&x]"
    assert hf_split(regex_to_onig(r"[a[]+"), "x[a[ay") == ["x", "[a[a", "y"]
