r"""A regex outside the compiled family on a reference engine's Unicode tables
(mnemo/regex_tables.py; issue 26 item 7: ids equal the reference implementation's on every code
point).

The `regex` module runs such a regex on its own tables (Unicode 18.0); tiktoken and tokenizers
hold 16.0.  regex_tables rewrites the sets whose members differ, and the native regex keeps
every text that holds none of the code points where they do (the marks).  Oracles: tiktoken
itself (an Encoding built with the regex) and, in tests/formats/test_hf_families.py, tokenizers.

- each set alone, rewritten, matches what tiktoken's engine matches on every code point (and the
  set as written does not, where the tables differ);
- whole tokenizers: cl100k's ranks with two regexes outside the family give tiktoken's ids on
  every mark in four contexts and on a sample of the other code points;
- what cannot be carried to another table is refused by name.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import regex

from mnemo import ConfigError, Tokenizer
from mnemo import _unicode_data as udata
from mnemo import patterns as P
from mnemo import pretokenize as pt
from mnemo import regex_tables as rt
from mnemo.formats.openai import encoding
from mnemo.formats.tiktoken import from_mergeable_ranks, load_tiktoken

REF = udata.ENGINES["tiktoken"]

#: cl100k's regex with a word boundary and a case-insensitive "in" (U+0130 is `regex`'s (?i:i),
#: not tiktoken's), and with a lookbehind: both outside the family, as bench/compare's
WITH_B = r"""'(?i:[sdmt]|ll|ve|re)|(?i:in)\b|[^\r\n\p{L}\p{N}]?+\p{L}+\b|\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
LOOKBEHIND = r"""(?<=\s)\p{L}+|'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""

ALL_TEXT = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def need_tiktoken() -> Any:
    return pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")


@pytest.fixture(scope="module")
def cl100k_ranks(tiktoken_ranks: Callable[[str], dict[bytes, int]]) -> dict[bytes, int]:
    return tiktoken_ranks("cl100k_base")


def tiktoken_members(pattern: str) -> set[int]:
    """The code points tiktoken's engine matches with `pattern` (it drops the rest): an
    Encoding whose ranks are the 256 bytes, as tools/gen_unicode_tables.py probes it."""
    tiktoken = need_tiktoken()
    enc = tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={})
    return {ord(c) for c in enc.decode_bytes(enc.encode_ordinary(ALL_TEXT)).decode("utf-8")}


def regex_members(pattern: str) -> set[int]:
    return {ord(m) for m in regex.findall(pattern, ALL_TEXT)}


SETS = [
    r"\w", r"\W", r"\d", r"\s", r"\p{L}", r"\P{Lu}", r"\p{^Nd}", r"\p{Letter}", r"[^\s\p{L}\p{N}]",
    r"[\p{Lo}\p{Mn}x-z\u0300-\u036f]", r"[^\W\d]", r"(?i:[a-z])", r"(?i:i)",
]  # fmt: skip


@pytest.mark.parametrize("pattern", SETS)
def test_each_set_matches_as_tiktoken_on_every_code_point(pattern: str) -> None:
    """The rewritten set holds exactly tiktoken's members, over all 1,112,064 code points; the set
    as written holds others wherever the two tables differ (all but \\s)."""
    want = tiktoken_members(pattern)
    followed = rt.follow(pattern, REF)
    got = regex_members(followed.text)
    assert got == want, f"{pattern}: {sorted(got - want)[:8]} too many, {sorted(want - got)[:8]} missing"
    native = regex_members(pattern)
    assert (native == want) == (followed.text == pattern) == (not followed.marks), pattern
    assert set(followed.marks) == native ^ want, pattern


@pytest.mark.parametrize("pattern", [WITH_B, LOOKBEHIND])
def test_cl100k_ranks_with_a_regex_outside_the_family_give_tiktokens_ids(pattern: str, cl100k_ranks: dict[bytes, int]) -> None:
    """tiktoken's Encoding(pat_str=...) against mnemo's drop-in of it (openai.encoding, which takes
    tiktoken's tables) and from_mergeable_ranks(unicode="tiktoken"): every mark in four contexts,
    and 2,000 other code points; from_mergeable_ranks without `unicode` takes tiktoken's tables
    for a regex of one's own too.  mnemo on the `regex` module's own tables (unicode="regex")
    gives other ids there: the walk can fail."""
    tiktoken = need_tiktoken()
    theirs = tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks=cl100k_ranks, special_tokens={})
    ours = encoding("probe", pat_str=pattern, mergeable_ranks=cl100k_ranks, special_tokens={})
    assert ours.split_pattern.engine == "regex" and ours.split_pattern.unicode == REF
    assert ours.split_pattern.describe().endswith(f"Unicode {REF}")
    same = from_mergeable_ranks(cl100k_ranks, pattern, {}, unicode="tiktoken")
    by_default = from_mergeable_ranks(cl100k_ranks, pattern, {})
    assert by_default.fingerprint == same.fingerprint and by_default.split_pattern.unicode == REF
    newer = from_mergeable_ranks(cl100k_ranks, pattern, {}, unicode="regex")
    assert newer.split_pattern.unicode == udata.DEFAULT
    marks = rt.follow(pattern, REF).marks
    assert len(marks) > 17_000
    marked = set(marks)
    others = random.Random(26).sample([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and c not in marked], 2000)
    differ = 0
    for cp in [*marks, *others]:
        c = chr(cp)
        # "U+058B/U": a letter new since 16.0 before punctuation and a letter (docs/tiktoken.md)
        for text in (f"a{c}b", f" {c}1", f"{c}/U", f"\u0130{c}in x"):
            want = theirs.encode_ordinary(text)
            assert ours.encode_ordinary(text) == want, f"U+{cp:04X} in {text!r}"
            assert same.encode_ordinary(text) == want, f"U+{cp:04X} in {text!r}"
            differ += newer.encode_ordinary(text) != want
    assert differ > 10_000


def test_tokenizer_bin_keeps_the_table(cl100k_ranks: dict[bytes, int], tmp_path: Path) -> None:
    """tokenizer.bin's pattern description holds the regex and its Unicode version (PATN,
    docs/formats.md): loaded back, a regex outside the family follows tiktoken's tables again."""
    tok = from_mergeable_ranks(cl100k_ranks, LOOKBEHIND, {}, unicode="tiktoken")
    tok.save(tmp_path / "t.bin")
    again = Tokenizer.load(tmp_path / "t.bin")
    assert again.split_pattern.unicode == REF and again.split_pattern.engine == "regex"
    assert again.fingerprint == tok.fingerprint
    for text in ("\u058b/U", "a\u058bb \u0130in"):
        assert again.encode_ordinary(text) == tok.encode_ordinary(text)
    newer = from_mergeable_ranks(cl100k_ranks, LOOKBEHIND, {}, unicode="regex")
    assert tok.encode_ordinary("\u058b/U") != newer.encode_ordinary("\u058b/U")


def test_a_rank_file_with_a_regex_follows_tiktokens_tables(cl100k_ranks: dict[bytes, int], tmp_path: Path) -> None:
    """load_tiktoken (and mnemo.load) of a rank file with a split regex of one's own and no
    `unicode`: the file's reference engine is tiktoken, so its tables, as an encoding by name has
    them.  A regex that cannot follow them (a script property) still loads, on the `regex`
    module's own tables, and its description says why; asked for explicitly, it is refused."""
    import mnemo

    tiktoken = need_tiktoken()
    path = tmp_path / "ranks.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in cl100k_ranks.items()))
    theirs = tiktoken.Encoding("probe", pat_str=LOOKBEHIND, mergeable_ranks=cl100k_ranks, special_tokens={})
    for tok in (load_tiktoken(path, LOOKBEHIND), mnemo.load(path, pattern=LOOKBEHIND)):
        assert tok.split_pattern.unicode == REF
        for text in ("\u058b/U", "a\u058bb \u0130in", "x\U00031350y 12"):
            assert tok.encode_ordinary(text) == theirs.encode_ordinary(text), text
    script = r"\p{Han}+|[^\p{Han}]+"
    tok = load_tiktoken(path, script)
    assert tok.split_pattern.engine == "regex" and "Han" in tok.split_pattern.describe()
    with pytest.raises(ConfigError, match="Han"):
        load_tiktoken(path, script, unicode="tiktoken")


def test_the_native_regex_runs_texts_without_a_mark() -> None:
    """TableRegex.pick and the compiled check: ASCII and text holding no mark take the regex as
    written; a mark anywhere (first, last, after invalid bytes) takes the rewritten one."""
    tr = rt.table_regex(r"\p{L}+|\s+|.", REF)
    assert tr.rewritten is not None and tr.marks is not None
    assert tr.pick("plain ascii") is tr.native and tr.pick("été ü 日本") is tr.native
    for text in ("\u058b", "ab\u058b", "\u058bab", "x \U000323b0"):
        assert tr.pick(text) is tr.rewritten, text
    marks = tr.marks
    mark = "\u058b".encode()
    for data in (mark, b"abc" + mark, b"\xff\xfe" + mark, "é".encode() + mark + b"z"):
        assert pt.marked(marks, data, 0, len(data)), data
    assert not pt.marked(marks, b"abc" + mark, 0, 3)
    assert not pt.marked(marks, mark[:1], 0, 1)  # a cut sequence is an invalid byte, never a mark
    assert not pt.marked(marks, "\u058a".encode(), 0, 2)  # the code point before the mark
    # a regex whose sets the tables agree on is kept as it is, with no marks
    kept = rt.follow(r"[a-z]+|\s+|[\u4e00-\u9fa5]|.", REF)
    assert kept.text == r"[a-z]+|\s+|[\u4e00-\u9fa5]|." and kept.marks == ()
    assert rt.follow(r"\p{L}+", udata.DEFAULT) == rt.Followed(r"\p{L}+", ())


def test_split_follows_the_table_through_the_pretokenizer() -> None:
    """compile_pattern(regex, "tiktoken") of a regex outside the family: the letter new in
    Unicode 17 (U+058B) is no letter there, so it starts a piece of its own, as tiktoken cuts it;
    the same regex on mnemo's own tables keeps it in the word."""
    spec = r"(?<=\s)\p{L}+|\p{L}+|[^\s\p{L}]+|\s+"
    on16 = P.compile_pattern(spec, "tiktoken")
    assert on16.engine == "regex" and on16.off_table == ("",)
    assert P.split("a\u058bb c\u058b", on16) == ["a", "\u058b", "b", " ", "c", "\u058b"]
    assert P.split("a\u058bb c\u058b", spec) == ["a\u058bb", " ", "c\u058b"]
    assert P.split(b"a\xd6\x8bb \xff", on16) == [b"a", b"\xd6\x8b", b"b", b" ", b"\xff"]
    again = P.pattern_from_dict(on16.to_dict())  # what tokenizer.bin stores: the regex and 16.0
    assert again is on16


@pytest.mark.parametrize(
    "pattern, message",
    [
        (r"\p{Han}+|.", r"the property \\p\{Han\}: only general categories"),
        (r"\p{Script=Latin}", r"the property"),
        (r"[[:alpha:]]+|.", "a POSIX class"),
        (r"\X", r"\\X"),
        (r"(?x) \p{L} + | .", "the inline flag 'x'"),
        (r"(?a)\w+|.", "the inline flag 'a'"),
        (r"(?V1)\w+|.", "the inline flag 'V'"),
        (r"a(?i)b|.", "a global flag group after the start"),
        (r"(?i)\p{Lu}+|.", r"the property \\p\{Lu\} under \(\?i\)"),
        (r"(?i:é)|.", "the cased character 'é' under"),
        (r"(?i:[à-ÿ])|.", "the cased characters"),
        (r"(\w)(?i:\1)", r"a backreference under \(\?i\)"),
        (r"(?:ab){e<=1}", "fuzzy matching"),
        (r"\mword", r"\\m"),
    ],
)
def test_what_cannot_follow_another_table_is_refused_by_name(pattern: str, message: str) -> None:
    regex.compile(pattern)  # each one is a regex the `regex` module runs
    with pytest.raises(rt.NotFollowed, match=message):
        rt.follow(pattern, REF)
    with pytest.raises(ConfigError, match=rf"cannot be made to match on Unicode {REF}'s tables as asked: .*unicode=None"):
        P.compile_pattern(pattern, "tiktoken")
    # without an explicit table it runs on the `regex` module's own, and says so
    loose = P.compile_steps([P.SplitStep(pattern)], "tiktoken", strict=False)
    assert loose.off_table[0] and f"Unicode {udata.DEFAULT}, not {REF}" in loose.describe()


def test_what_means_the_same_on_every_table_is_kept() -> None:
    """Literals, ranges, `.`, anchors, lookarounds, named groups, backreferences outside (?i),
    (?i) on ASCII letters that fold alike, (?s)/(?m): nothing to rewrite."""
    for pattern in (
        r"(?s)(?m)^a.b$|(?P<x>[a-z])(?P=x)|(?<=[0-9])x|\x41\u00e9\U0001f600|\N{EM DASH}|\t\n|(?#c)z{2,3}",
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|(?i:[sdmt])|(?-i:[A-Z])+",
        r"(?i)ab\.[0-9]|\s+",
    ):
        assert rt.follow(pattern, REF) == rt.Followed(pattern, ()), pattern
