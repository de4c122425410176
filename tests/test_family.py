"""The GPT family of split regexes compiled into the scanner (mnemo/regex_family.py, run by
mnemo/pretokenize.py), the presets and the `regex` engine for everything else
(mnemo/patterns.py), each against an oracle that is not mnemo:

- one regex: `regex.finditer` over the same text, the text no match covers as chunks of their
  own (tiktoken would drop it; Hugging Face's Split keeps it, and so does mnemo);
- a sequence of split steps (DeepSeek-V3, StarCoder2): Hugging Face `tokenizers`' own Sequence
  of Split and Digits pre-tokenizers;
- family members beyond the presets: a generator of random regexes of the family, each
  compiled and compared on random text built from characters of every class it can name.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Regex as HFRegex
from tokenizers import pre_tokenizers

from mnemo import _unicode_data as udata
from mnemo import patterns as P
from mnemo import pretokenize as pt
from mnemo import pretokenize_named as named
from mnemo import regex_family as rf
from mnemo.constants import PATTERNS
from mnemo.errors import ConfigError


def oracle(rx: regex.Pattern[str], text: str) -> list[str]:
    """regex.finditer's non-empty matches, and the stretches between them, in order."""
    out: list[str] = []
    pos = 0
    for m in rx.finditer(text):
        if m.end() == m.start():
            continue
        if m.start() > pos:
            out.append(text[pos : m.start()])
        out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def oracle_bytes(rx: regex.Pattern[str], data: bytes) -> list[bytes]:
    """The oracle on any bytes: each byte that is not part of a well-formed sequence becomes one
    lone surrogate, which `regex` sees as mnemo sees an invalid byte (tests/test_pretokenize.py)."""
    text = data.decode("utf-8", "surrogateescape")
    return [c.encode("utf-8", "surrogateescape") for c in oracle(rx, text)]


def oracle_regex(spec: str, unicode: str | None = None) -> regex.Pattern[str]:
    """The oracle's compiled regex.  For a regex the scanner runs it is `regex` in its VERSION1
    mode: VERSION0 (the default, and what mnemo's own `regex` engine runs) mishandles a negated
    class holding a range once any part of the pattern is case-insensitive -- `(?i:c)|[^a-z\\s]`
    finds nothing in 'HTTPServer' where Python's `re`, tiktoken and VERSION1 find 'H', 'T', ...
    (test_a_negated_range_beside_a_case_insensitive_group).  VERSION1's one other difference
    that could matter here, full case folding (`(?i:ß)` matching 'SS'), needs a character no
    generated pattern holds.  A regex the scanner refuses runs through mnemo's `regex` engine,
    which is VERSION0, so that is its oracle."""
    version = regex.V1 if P.compile_pattern(spec, unicode).engine == "scanner" else regex.V0
    return regex.compile(spec, flags=version)


def check(spec: str, text: str, unicode: str | None = None) -> None:
    rx = oracle_regex(spec, unicode)
    expected = oracle(rx, text)
    assert P.split(text, spec, unicode) == expected, (spec, text)
    data = text.encode("utf-8")
    assert P.split(data, spec, unicode) == [c.encode("utf-8") for c in expected], (spec, text)


def hf_sequence(pattern: P.SplitPattern) -> pre_tokenizers.PreTokenizer:
    """A preset's steps as tokenizers' own pre-tokenizers (Split for a regex step, Digits)."""
    steps = []
    for step in pattern.steps:
        if step.kind == "digits":
            steps.append(pre_tokenizers.Digits(individual_digits=step.behavior == "isolated"))
        else:
            steps.append(pre_tokenizers.Split(HFRegex(step.regex), behavior=step.behavior, invert=step.invert))
    return pre_tokenizers.Sequence(steps)


def hf_pieces(pre: pre_tokenizers.PreTokenizer, text: str) -> list[str]:
    return [piece for piece, _ in pre.pre_tokenize_str(text)]


# Characters of every class the generator's sets and the presets name: ASCII letters of both
# cases, titlecase (Lt), modifier (Lm) and caseless (Lo) letters, Cherokee capitals, marks (Mn,
# Mc), numbers of three kinds, white space of several kinds, CR/LF, punctuation and symbols, an
# apostrophe and the letters of the contractions, the long s and the Kelvin sign ((?i) folds),
# a CJK ideograph and kana (DeepSeek's class), a letter new in Unicode 17 and one of the
# control characters regex does not count as \s.
POOL = (
    "aAbBsStTdDmMlLvVrReExyzXYZ\u01c5\u02b0\u4e2d\u3042\u30a2\u13a0\u13a1\u0301\u0903"
    "0129\u0663\u2167\u00bd \t\n\r\x0b\u00a0\u3000\u2028'\"!,./:;?-_$+<=>@#%&*()[]{}|~^`"
    "\u017f\u212a\u058b\x1c\x00\U0001f600\u00e9"
)
chars = st.sampled_from(POOL)
words = st.sampled_from(["'s", "'S", "'ll", "'LL", "'ve", "'re", "'d", "'t", "'m", "don't", "HTTPServer", "iPhone",
                         "  ", "\n\n", "\r\n", " \n ", "123456", "a1b2", "x  y", "...", "!\n/", " //x"])  # fmt: skip
texts = st.lists(st.one_of(chars, words, st.text(chars, max_size=6)), max_size=30).map("".join)


# ---- the family generator ------------------------------------------------------------------

SETS = [
    r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{N}", r"\p{M}", r"\s", r"\S", r"[\r\n]", r"[^\s\p{L}\p{N}]",
    r"[^\r\n\p{L}\p{N}]", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", " ", "'", "[a-z]",
    "[A-Z0-9]", r"\d", ".", r"[\p{P}\p{S}]", "[!-/]", "x", "/", r"[\r\n/]", r"\P{L}", r"[^a-z\s]",
    "[\u4e00-\u9fa5\u3040-\u309f]",
]  # fmt: skip
QUANTIFIERS = ["", "?", "*", "+", "{1,3}", "{2}", "{1,}", "{0,2}"]
GROUPS = [
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)", r"'(?i:[sdmt]|ll|ve|re)", r"(?:'s|'t|'re)", r"(?i:ab|c)", r"(?:x|yz|'s)",
]  # fmt: skip
TAILS = [r"\s+(?!\S)|\s+", r"\s*[\r\n]+|\s+(?!\S)|\s+", r"\s++$|\s*[\r\n]|\s+(?!\S)|\s", r"\s+"]


NULLABLE = {"?", "*", "{0,2}"}
UNBOUNDED = {"*", "+", "{1,}"}


@st.composite
def family_regex(draw: st.DrawFn) -> str:
    """A random member of the family: 1-5 branches of 1-3 items (a set with a quantifier, or a
    group of strings), some with a lookahead at the end, often followed by one of the presets'
    white-space tails.  Built to obey the family's rules -- one item of each branch must match
    something; a greedy unbounded run is followed by at most one item that must match (else it
    is made possessive) -- so nearly all compile into the scanner."""
    branches = []
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(1, 3))
        anchor = draw(st.integers(0, n - 1))
        items: list[tuple[str, str, bool]] = []  # (atom, quantifier, possessive)
        for k in range(n):
            if draw(st.integers(0, 5)) == 0:
                optional = k != anchor and draw(st.booleans())
                items.append((draw(st.sampled_from(GROUPS)), "?" if optional else "", False))
                continue
            choices = [q for q in QUANTIFIERS if k != anchor or q not in NULLABLE]
            q = draw(st.sampled_from(choices))
            items.append((draw(st.sampled_from(SETS)), q, bool(q) and draw(st.booleans())))
        lookahead = draw(st.sampled_from(["", "", "", "", r"(?!\S)", r"(?=\s)", r"(?!\p{L})"]))
        for j, (atom, q, possessive) in enumerate(items):
            rest = items[j + 1 :]
            if q in UNBOUNDED and rest and (lookahead or any(it[1] not in NULLABLE for it in rest[1:])):
                items[j] = (atom, q, True)
        body = "".join(atom + q + ("+" if possessive else "") for atom, q, possessive in items) + lookahead
        branches.append(body)
    if draw(st.booleans()):
        branches.append(draw(st.sampled_from(TAILS)))
    spec = "|".join(branches)
    # a bare word ('x') is read as a misspelt preset name, by design: spell it as a group
    return f"(?:{spec})" if P.looks_like_a_name(spec) else spec


def _in_family(spec: str) -> bool:
    try:
        rf.parse(spec, udata.DEFAULT)
    except rf.NotInFamily:
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(spec=family_regex(), text=texts)
def test_random_family_members_equal_regex(spec: str, text: str) -> None:
    """Every generated regex the family's rules accept compiles into the scanner and splits any
    text exactly as `regex` does; the ones they refuse (a branch that can match nothing, a
    possessive that makes a branch empty, ...) run through `regex` and are exact too."""
    sp = P.compile_pattern(spec)
    assert sp.engine == ("scanner" if _in_family(spec) else "regex"), (spec, sp.reasons)
    check(spec, text)


@pytest.mark.corpus
@settings(max_examples=25, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(spec=family_regex())
def test_random_family_members_on_the_corpora(corpus_docs: Callable[..., list[str]], spec: str) -> None:
    """The proof the presets have, for any regex the family compiles: exact against `regex` on
    text of the four corpora (30 KB of each; the generated texts above are short and drawn from
    a small alphabet, the corpora hold every script and real punctuation)."""
    if not _in_family(spec):
        return  # runs through `regex` itself: nothing of mnemo's to check here
    rx = oracle_regex(spec)
    for corpus in ("english", "multilingual", "code", "chat"):
        for k, doc in enumerate(corpus_docs(corpus, max_bytes=30_000)):
            assert P.split(doc, spec) == oracle(rx, doc), (spec, corpus, k)


def test_the_generator_stays_in_the_family() -> None:
    """Most generated regexes are family members (so the test above exercises the compiler,
    not the `regex` engine): at least 80 % of 300."""
    found = []

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spec=family_regex())
    def collect(spec: str) -> None:
        found.append(_in_family(spec))

    collect()
    assert sum(found) >= 0.8 * len(found), f"{sum(found)} of {len(found)} in the family"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=family_regex(), data=st.binary(max_size=40))
def test_random_family_members_on_any_bytes(spec: str, data: bytes) -> None:
    chunks = P.split(data, spec)
    assert b"".join(chunks) == data and all(chunks)
    assert chunks == oracle_bytes(oracle_regex(spec), data), spec


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=family_regex(), text=texts, cut=st.integers(0, 40))
def test_the_end_of_the_text_hides_what_follows(spec: str, text: str, cut: int) -> None:
    """scan(prog, data, pos, end) sees the text data[:end]: the chunks of a prefix, cut at any
    byte, are those of the prefix split on its own (no lookahead reaches past `end`)."""
    data = text.encode("utf-8")
    end = min(cut, len(data))
    prog = P.compile_pattern(spec).program
    got = []
    pos = 0
    while pos < end:
        e = pt.scan(prog, data, pos, end)
        assert pos < e <= end
        got.append(data[pos:e])
        pos = e
    assert got == P.split(data[:end], spec)


# Worked examples of family members beyond the presets (each also checked against regex).
FAMILY_EXAMPLES = [
    # a greedy run that gives back to where a set starts again
    (r"[a-z]*x|.", "abxcxd", ["abxcx", "d"]),
    # bounded runs, possessive or not
    (r"\p{N}{2}|\p{N}|.", "12345", ["12", "34", "5"]),
    (r"a{1,3}+a|a", "aaaa", ["aaaa"]),
    (r"a{1,2}+a|a", "aaaa", ["aaa", "a"]),
    # lookahead of a set, and its negation, at a branch end
    (r"\p{L}+(?=\d)|\p{L}|\d", "ab1c", ["ab", "1", "c"]),
    (r"\s+(?!\S)|\s+|\S+", "a   b", ["a", "  ", " ", "b"]),
    # text no branch matches is a chunk of its own (regex.findall would drop it)
    (r"\p{L}+", "ab, cd!", ["ab", ", ", "cd", "!"]),
    # groups of strings, case-insensitive, optional, before and after a run
    (r"\p{L}+(?i:'s|'ll)?|.", "it'S, I'LL, a'x", ["it'S", ",", " ", "I'LL", ",", " ", "a", "'", "x"]),
    (r"(?:ab|a)c|.", "abcac", ["abc", "ac"]),
    # $ after a possessive run of a set that holds \n
    (r"\s++$|\s|\S+", "a \n ", ["a", " \n "]),
    # DeepSeek's literal class of ASCII punctuation, with escapes
    (r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|.""", r"x\ay[b", ["x", "\\ay", "[b"]),
]


@pytest.mark.parametrize("spec", [r"(?i:c)|[^a-z\s]", r"(?i:'s|'t)|[^a-z\t]+|\s+", r"[^\sa-z]+|(?i:ab|c)"])
def test_a_negated_range_beside_a_case_insensitive_group(spec: str) -> None:
    """A negated class with a range in a regex with a case-insensitive group (CI found this):
    the scanner splits as Python's `re` does -- `re` needs no \\p{..} here, so it can judge --
    and not as `regex`'s VERSION0, which drops the class's matches (see oracle_regex)."""
    import re

    assert P.compile_pattern(spec).engine == "scanner"
    for text in ["HTTPServer", "CaBc xY\tZ 's 'T", "\u00e9\u017f\u212aK"]:
        assert P.split(text, spec) == oracle(cast(Any, re.compile(spec)), text), (spec, text)


@pytest.mark.parametrize("spec, text, chunks", FAMILY_EXAMPLES)
def test_family_examples(spec: str, text: str, chunks: list[str]) -> None:
    assert P.compile_pattern(spec).engine == "scanner"
    assert P.split(text, spec) == chunks
    assert oracle(regex.compile(spec), text) == chunks


# ---- outside the family: the regex engine --------------------------------------------------

OUTSIDE = [
    (r"\w+|\W", "the escape \\w"),
    (r"a+?|b", "a lazy quantifier"),
    (r"(a)\1|.", "the escape \\1"),
    (r"(?<=a)b|.", "a group other than"),
    (r"\bx|.", "the escape \\b"),
    (r"a*|b", "can match the empty string"),
    (r"(?:ab)+|.", "a quantifier other than ?"),
    (r"\p{Han}+|.", "only general categories"),
    (r"\s*a+b|.", "unbounded length followed by more than one item"),
    (r"[[:alpha:]]+|.", "a '[' inside a class"),
    (r"(?i)abc|.", "a group other than"),
    (r"x\s+$|.", "$ after something other than a possessive run"),
    (r"^a|.", "the anchor ^"),
]


@pytest.mark.parametrize("spec, reason", OUTSIDE)
def test_outside_the_family_runs_through_regex(spec: str, reason: str) -> None:
    sp = P.compile_pattern(spec)
    assert sp.engine == "regex" and reason in sp.reasons[0], sp.reasons
    assert "regex module" in sp.describe()
    for text in ["abc", "aab ab  b\n", "x y xx\u00e9 \u4e2d", "", "ba" * 50]:
        check(spec, text)


@settings(max_examples=100, deadline=None)
@given(spec=st.sampled_from([spec for spec, _ in OUTSIDE]), text=texts)
def test_outside_the_family_on_any_text(spec: str, text: str) -> None:
    check(spec, text)


def test_the_regex_engine_follows_each_text_separately() -> None:
    """The regex engine keeps a cursor per text: two texts scanned in turn, chunk by chunk, and a
    text resumed where an earlier loop stopped, give the chunks each gives alone."""
    spec = r"(?<=a)b+|\w+?|\W"  # lookbehind: a cursor that started over at each call would differ
    prog = P.compile_pattern(spec).program
    one = "abbb cab abb " * 20
    two = "babba" * 30
    d1, d2 = one.encode(), two.encode()
    p1 = p2 = 0
    got1: list[bytes] = []
    got2: list[bytes] = []
    while p1 < len(d1) or p2 < len(d2):
        if p1 < len(d1):
            e = pt.scan(prog, d1, p1, len(d1))
            got1.append(d1[p1:e])
            p1 = e
        if p2 < len(d2):
            e = pt.scan(prog, d2, p2, len(d2))
            got2.append(d2[p2:e])
            p2 = e
    rx = regex.compile(spec)
    assert got1 == [c.encode() for c in oracle(rx, one)]
    assert got2 == [c.encode() for c in oracle(rx, two)]


def test_the_regex_engine_in_threads() -> None:
    """Threads sharing one regex-engine program, each scanning its own texts, get exact chunks."""
    spec = r"\w+?|\W"
    prog = P.compile_pattern(spec).program
    rx = regex.compile(spec)
    errors: list[str] = []

    def work(k: int) -> None:
        for r in range(30):
            text = f"thread {k} round {r}: " + "word " * (k + r)
            data = text.encode()
            got = []
            pos = 0
            while pos < len(data):
                e = pt.scan(prog, data, pos, len(data))
                got.append(data[pos:e].decode())
                pos = e
            if got != oracle(rx, text):
                errors.append(text)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---- compile_pattern -----------------------------------------------------------------------


def test_compile_pattern_api() -> None:
    sp = P.compile_pattern(P.LLAMA3)
    assert (sp.regex, sp.engine, sp.unicode, sp.name) == (P.LLAMA3, "scanner", udata.DEFAULT, None)
    assert P.compile_pattern(P.LLAMA3) is sp  # compiled once per process
    assert P.program_of(sp.id) is sp.program and P.pattern_of(sp.id) is sp
    tk = P.compile_pattern("llama3")
    assert (tk.name, tk.unicode, tk.engine) == ("llama3", udata.ENGINES["tiktoken"], "scanner")
    assert P.compile_pattern("llama3", "regex").unicode == udata.DEFAULT
    assert P.compile_pattern("llama3", "16.0.0") is tk
    assert P.compile_pattern(tk) is tk
    assert P.compile_pattern(tk, "18.0.0").unicode == "18.0.0"
    assert tk.describe() == "llama3: mnemo's scanner, Unicode 16.0.0"
    seq = P.compile_pattern("deepseek-v3")
    assert seq.regex is None and len(seq.steps) == 3 and seq.engine == "scanner"
    assert "3 split steps" in seq.describe()


@pytest.mark.parametrize(
    "spec, unicode, message",
    [
        ("a(", None, r"split regex 'a\(' does not compile"),
        ("", None, "an empty split pattern"),
        ("gpt3", None, r"unknown pattern 'gpt3': not a preset -- use one of 'mnemonic'"),
        ("gpt2", "15.0.0", r"unknown Unicode version or engine '15.0.0'; use one of 18.0.0, 16.0.0"),
        (
            r"\p{Han}+|.",
            "tiktoken",
            r"outside the family mnemo compiles.*Unicode 16.0.0's tables as asked: the property \\p\{Han\}.*pass unicode=None",
        ),
    ],
)
def test_compile_pattern_errors(spec: str, unicode: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        P.compile_pattern(spec, unicode)


def test_compile_pattern_refuses_what_is_not_a_pattern() -> None:
    with pytest.raises(ConfigError, match="preset name or a regex string, not int"):
        P.compile_pattern(cast(Any, 3))
    with pytest.raises(ConfigError, match="unknown split behavior 'merged'"):
        P.compile_steps([P.SplitStep("a", behavior="merged")], "regex")
    with pytest.raises(ConfigError, match="at least one step"):
        P.compile_steps([], "regex")


@pytest.mark.parametrize("spec", [*P.PRESETS, P.LLAMA3, r"\w+|.", r"\p{L}+|\s"])
def test_patterns_round_trip_through_their_dict(spec: str) -> None:
    """to_dict is what tokenizer.bin v3 stores; pattern_from_dict makes the same pattern again
    (the very object, since patterns are compiled once per process)."""
    sp = P.compile_pattern(spec)
    d = sp.to_dict()
    assert json.loads(json.dumps(d)) == d
    back = P.pattern_from_dict(d)
    assert back is sp
    other = P.pattern_from_dict({**d, "unicode": "16.0.0"}) if sp.engine == "scanner" else None
    if other is not None:
        assert other.unicode == "16.0.0" and other.steps == sp.steps


@pytest.mark.parametrize(
    "d, message",
    [
        ([], "a JSON object"),
        ({"unicode": 16, "steps": [{"regex": "a"}]}, "'unicode' must be"),
        ({"unicode": "16.0.0", "steps": []}, "'steps' must be a non-empty list"),
        ({"unicode": "16.0.0", "steps": ["a"]}, r"steps\[0\] must be an object"),
        ({"unicode": "16.0.0", "steps": [{"regex": 3}]}, r"steps\[0\] needs string"),
        ({"unicode": "16.0.0", "steps": [{"regex": "a", "invert": 1}]}, "'invert' must be"),
        ({"unicode": "9.0.0", "steps": [{"regex": "a|b"}]}, "unknown Unicode version"),
        ({"unicode": "16.0.0", "steps": [{"regex": "a("}]}, "does not compile"),
        ({"name": 3, "unicode": "16.0.0", "steps": [{"regex": "a"}]}, "'name' must be"),
    ],
)
def test_pattern_from_dict_names_what_is_wrong(d: object, message: str) -> None:
    with pytest.raises(ConfigError, match=f"tokenizer.bin: .*{message}"):
        P.pattern_from_dict(d, "tokenizer.bin")


def test_program_constants_agree() -> None:
    """The compiler and the scanner read the same numbers."""
    names = [
        "ITEM_WORDS", "ITEM_SET", "ITEM_GROUP", "POSSESSIVE", "REST_AT_END", "REST_ANYWHERE", "ASSERT_NONE",
        "ASSERT_NOT", "ASSERT_IS", "ASSERT_END", "ACT_GENERIC", "ACT_FIXED", "ACT_RUN", "ACT_RUN_CHECK", "ACT_NEXT",
        "ACT_WHITE", "ACT_CASED", "WHITE_WORDS", "CASED_WORDS", "TAIL_END", "TAIL_NEWLINE", "TAIL_LOOKAHEAD",
        "TAIL_RUN", "TAIL_ONE", "SWAR_NONE", "SWAR_LETTERS", "SWAR_LOWER", "FOLLOW_WIDE", "FOLLOW_WORDS",
    ]  # fmt: skip
    for name in names:
        assert getattr(pt, name) == getattr(rf, name), name


# ---- the presets ---------------------------------------------------------------------------

# Each preset's regex as the model's own tokenizer spells it, copied here from the sources
# docs/pretokenizer.md names (not read from mnemo).
PRESET_SOURCES = {
    "llama3": [r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""],
    "qwen2": [r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""],
    "tekken": [r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""],
    "o200k_harmony": [r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""],
    "deepseek-v3": [
        r"""\p{N}{1,3}""",
        "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    ],
    "starcoder2": [r"\p{N}", r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""],
}  # fmt: skip
PRESET_ENGINES = {"llama3": "tiktoken", "qwen2": "tokenizers", "tekken": "tiktoken", "o200k_harmony": "tiktoken",
                  "deepseek-v3": "tokenizers", "starcoder2": "tokenizers"}  # fmt: skip


def test_presets_are_the_models_regexes() -> None:
    assert set(P.PRESETS) == set(PATTERNS) | set(PRESET_SOURCES)
    for name, regexes in PRESET_SOURCES.items():
        sp = P.compile_pattern(name)
        assert [s.regex for s in sp.steps] == regexes, name
        assert sp.engine == "scanner", (name, sp.reasons)
        assert sp.unicode == udata.ENGINES[PRESET_ENGINES[name]], name
    starcoder = P.compile_pattern("starcoder2")
    assert [s.kind for s in starcoder.steps] == ["digits", "regex"]


def test_the_docs_list_every_preset() -> None:
    """docs/pretokenizer.md, "Presets of other models": each preset outside the five named patterns,
    with its engine's tables and each step's regex in a code block, exactly as mnemo runs it
    (`\\uXXXX` in the docs stands for the character)."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "pretokenizer.md").read_text(encoding="utf-8")
    section = docs.split("\n## Presets of other models\n", 1)[1].split("\n## ", 1)[0]
    listed: dict[str, tuple[str, list[str]]] = {}
    for name, head, block in regex.findall(r"\n`([\w-]+)`( [^`].*?)\n\n```\n(.*?)\n```", section, regex.S):
        engine = regex.search(r"tables of (\w+)", head)
        steps = [regex.sub(r"\\u([0-9a-f]{4})", lambda m: chr(int(m[1], 16)), line) for line in block.split("\n")]
        listed[name] = (engine[1] if engine else "", steps)
    assert set(listed) == set(P.PRESETS) - set(PATTERNS)
    for name, (engine, steps) in listed.items():
        preset = P.PRESETS[name]
        assert engine == preset.engine, name
        assert steps == [s.regex for s in preset.steps], name


ONE_REGEX = [name for name in P.PRESETS if len(P.PRESETS[name].steps) == 1]
SEQUENCES = [name for name in P.PRESETS if len(P.PRESETS[name].steps) > 1]


@pytest.mark.parametrize("name", ONE_REGEX)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_one_regex_presets_equal_regex(name: str, text: str) -> None:
    sp = P.compile_pattern(name, "regex")  # the oracle's Unicode version
    check(sp.steps[0].regex, text)
    assert P.split(text, sp) == P.split(text, sp.steps[0].regex)


@pytest.mark.parametrize("name", SEQUENCES)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_sequence_presets_equal_tokenizers(name: str, text: str) -> None:
    """DeepSeek-V3's three Splits and StarCoder2's Digits + ByteLevel regex, as tokenizers
    itself runs them (its Unicode version is the preset's)."""
    sp = P.compile_pattern(name)
    assert P.split(text, name) == hf_pieces(hf_sequence(sp), text), text


@pytest.mark.parametrize("name", ["qwen2", "deepseek-v3", "starcoder2"])
def test_tokenizers_presets_hard_cases(name: str) -> None:
    sp = P.compile_pattern(name)
    pre = hf_sequence(sp)
    for text in ["Hello, World!  12345 6789", "\u4e2d\u6587\u3042\u30a2abc123\u4e2d", "it's I'LL \u058bX \u13a0\u13a1",
                 "a\u0301b \u0903x \u2167\u00bd 1\u0663", "x\n\n  y\r\n\t z  ", "$$ (a, b); // c\n", "\U0001f600 ok"]:  # fmt: skip
        assert P.split(text, name) == hf_pieces(pre, text), text


@pytest.mark.corpus
@pytest.mark.parametrize("corpus", ["english", "multilingual", "code", "chat"])
def test_presets_on_the_corpora(corpus_docs: Callable[..., list[str]], corpus: str) -> None:
    """Every preset on each corpus: the one-regex presets against `regex` (run on the preset's
    own Unicode table: the corpora hold none of the letters new since 16.0, which the walk over
    every code point covers), the sequences against tokenizers; and the five named patterns
    against the hand-written scanner they replace."""
    docs = corpus_docs(corpus, max_bytes=300_000)
    assert docs
    for name in P.PRESETS:
        sp = P.compile_pattern(name)
        if len(sp.steps) == 1:
            rx = regex.compile(sp.steps[0].regex)
            expected = [oracle(rx, d) for d in docs]
        else:
            pre = hf_sequence(sp)
            expected = [hf_pieces(pre, d) for d in docs]
        for k, (doc, want) in enumerate(zip(docs, expected)):
            assert P.split(doc, sp) == want, (corpus, name, k)
        if name in PATTERNS:
            for doc in docs:
                data = doc.encode()
                assert P.split(data, name) == named.split(data, name), (corpus, name)


def test_digits_step_uses_rusts_numeric() -> None:
    """StarCoder2's Digits step splits at Rust's char::is_numeric (Unicode 17.0 in tokenizers
    0.23), which holds digits Oniguruma's \\p{N} (16.0) lacks: U+11DE0 and U+16FF4."""
    pre = hf_sequence(P.compile_pattern("starcoder2"))
    for text in ["a\U00011de0\U00011de1b", "x\U00016ff4y", "12\u0663"]:
        assert P.split(text, "starcoder2") == hf_pieces(pre, text), text
    assert P.split("a\U00011de0\U00011de1b", "starcoder2") == ["a", "\U00011de0", "\U00011de1", "b"]


# ---- sequences: behaviors ------------------------------------------------------------------


@pytest.mark.parametrize("behavior", ["isolated", "contiguous", "merged_with_previous", "merged_with_next"])
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("first", [r"-", r"\p{N}{1,2}", r"\w+?"])
def test_sequence_behaviors_equal_tokenizers(behavior: str, invert: bool, first: str) -> None:
    """A two-step sequence with every split behavior (and invert) of its first step, as
    tokenizers splits it (its first step a family regex, or one the regex engine runs)."""
    steps = (P.SplitStep(first, behavior=behavior, invert=invert), P.SplitStep(P.GPT2_BYTELEVEL))
    program = P.compile_steps(steps, "tokenizers", strict=False).program
    pre = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(HFRegex(s.regex), behavior=s.behavior, invert=s.invert) for s in steps]
    )
    for text in ["the-final--countdown", "a--b- -c-", "-x-", "12345 6-78-", "ab12cd 3-4", "--", "x"]:
        data = text.encode()
        assert pt.cut_bytes(program, data, len(data)) == [p.encode() for p in hf_pieces(pre, text)], text


def test_sequence_cursor_survives_interleaving() -> None:
    """Two texts scanned in turn through one sequence program, and a loop that resumes where an
    earlier call stopped, give the chunks each text gives alone."""
    prog = P.compile_pattern("deepseek-v3").program
    a = ("12345 \u4e2d\u6587 abc, 67 def " * 30).encode()
    b = ("x 999999 \u3042\u3042 y" * 30).encode()
    alone_a = P.split(a, "deepseek-v3")
    alone_b = P.split(b, "deepseek-v3")
    pa = pb = 0
    got_a: list[bytes] = []
    got_b: list[bytes] = []
    while pa < len(a) or pb < len(b):
        if pa < len(a):
            e = pt.scan(prog, a, pa, len(a))
            got_a.append(a[pa:e])
            pa = e
        if pb < len(b):
            e = pt.scan(prog, b, pb, len(b))
            got_b.append(b[pb:e])
            pb = e
    assert got_a == alone_a and got_b == alone_b


# ---- linear time ---------------------------------------------------------------------------

RUNS = ["a", "7", " ", "\n", "\r\n", ".", "'", "\U0001f600", "\u0301", "\u3000", " a", "'s", " \n", "A", "Ab",
        "a'", "\u4e2dA", "/", "!\n/", "a\n ", "\u4e2d", "1 ", "- ", "\u13a0"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in P.PRESETS if n not in PATTERNS])
def test_presets_take_linear_time(name: str) -> None:
    """10 MB runs of one character (or pair) of each class take about 10x the time of 1 MB runs
    (tests/test_pretokenize.py does the same for the five named patterns)."""
    import time

    sp = P.compile_pattern(name)

    def seconds(data: bytes) -> float:  # CPU seconds, as tests/test_pretokenize.py's _seconds
        best = float("inf")
        for _ in range(2):
            t = time.process_time()
            pt.count_chunks(sp.program, data)
            best = min(best, time.process_time() - t)
        return best

    for unit in RUNS:
        u = unit.encode("utf-8")
        t_small = seconds(u * (1_000_000 // len(u)))
        t_large = seconds(u * (10_000_000 // len(u)))
        assert t_large < 20 * t_small + 0.25, f"{name} {unit!r}: {t_large:.3f} s for 10 MB vs {t_small:.3f} s for 1 MB"


# ---- a pattern through the library ---------------------------------------------------------

DOCS = ["the cat sat on the mat, didn't it? 12345 cats", "a dog and a log\n\n  indented 3.14", "I'LL see you'd"] * 30


def test_train_with_a_regex() -> None:
    """train(pattern=<regex>): the regex travels to the workers as its steps; the llama3 regex,
    gpt4's pattern spelt otherwise, learns gpt4's merges on ASCII text; one worker or two."""
    import mnemo

    one = mnemo.train_from_iterator(DOCS, vocab_size=300, pattern=P.LLAMA3, workers=1, special_tokens=[])
    two = mnemo.train_from_iterator(DOCS, vocab_size=300, pattern=P.LLAMA3, workers=2, special_tokens=[])
    gpt4 = mnemo.train_from_iterator(DOCS, vocab_size=300, pattern="gpt4", workers=1, special_tokens=[])
    assert one.pattern == P.LLAMA3 and one.split_pattern.engine == "scanner"
    assert one == two and one.merges == gpt4.merges
    assert one.fingerprint != gpt4.fingerprint  # another pattern, though it cuts this text alike
    assert one.encode("didn't it") == gpt4.encode("didn't it")
    outside = mnemo.train_from_iterator(DOCS, vocab_size=280, pattern=r"\w+|\W", workers=2, special_tokens=[])
    assert outside.split_pattern.engine == "regex"
    assert outside.decode(outside.encode(DOCS[0])) == DOCS[0]


def test_any_pattern_is_saved_and_loaded_by_tokenizer_bin(tmp_path: Path) -> None:
    """tokenizer.bin version 3 holds any pattern: a named one on mnemo's tables as its name (the
    file of before), any other -- a regex, a preset, other Unicode tables, a sequence of steps --
    as its label and the JSON of its steps, and loads as the same pattern, ids and fingerprint."""
    import pickle

    import mnemo
    from mnemo.vocabfile import PATTERN

    text = "the thin 12345 cats didn't \u058b/U \U000323b0 DeepSeek-V3 \u4e2d\u6587 x"
    cases = [
        r"\p{L}+|\s+|.",  # outside the family: the regex module
        "llama3",
        P.compile_pattern("o200k", "tiktoken"),
        P.compile_pattern("deepseek-v3"),  # a sequence of split steps
        "gpt2",  # named, on mnemo's tables: its name only
    ]
    for k, pattern in enumerate(cases):
        tok = mnemo.Tokenizer([(116, 104), (256, 101)], pattern=pattern, special_tokens=["<|e|>"])
        path = tmp_path / f"t{k}.bin"
        tok.save(path)
        back = mnemo.Tokenizer.load(path)
        assert back.split_pattern.to_dict() == tok.split_pattern.to_dict(), pattern
        assert (back.pattern, back.fingerprint) == (tok.pattern, tok.fingerprint)
        assert back.encode(text) == tok.encode(text)
        assert pickle.loads(pickle.dumps(tok)).encode(text) == tok.encode(text)
        image = path.read_bytes()
        described = image.find(b'"steps"') >= 0
        assert described == (P.stored_id(tok.split_pattern) is None), pattern
    assert PATTERN in image
    assert mnemo.Tokenizer.load(tmp_path / "t4.bin").split_pattern is P.compile_pattern("gpt2")


def test_a_damaged_pattern_description_is_a_format_error() -> None:
    import mnemo
    from mnemo.errors import FormatError
    from mnemo.vocabfile import encode_tokenizer_bin, file_crc

    tok = mnemo.Tokenizer([(116, 104)], pattern="llama3", special_tokens=[])
    image = tok.to_bytes()
    for old, new, message in [
        (b'"steps"', b'"stepz"', "'steps' must be a non-empty list"),
        (b'"unicode":"1', b'"unicode":"9', "unknown Unicode version"),
    ]:
        bad = bytearray(image.replace(old, new, 1))
        bad[24:28] = file_crc(bytes(bad)).to_bytes(4, "little")
        with pytest.raises(FormatError, match=message):
            mnemo.Tokenizer.from_bytes(bytes(bad), "t.bin")
    # a label that is not the description's: refused, not loaded as either
    other = encode_tokenizer_bin(tok.merges, tok.split_pattern, [], "id", None)
    other = other.replace(b"(?i:", b"(?I:", 1)
    fixed = bytearray(other)
    fixed[24:28] = file_crc(bytes(fixed)).to_bytes(4, "little")
    with pytest.raises(FormatError):
        mnemo.Tokenizer.from_bytes(bytes(fixed), "t.bin")


def test_mnemo_info_names_the_engine_and_unicode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import mnemo
    from mnemo.cli import main

    mnemo.Tokenizer([], pattern="o200k", special_tokens=[]).save(tmp_path / "t.bin")
    main(["info", str(tmp_path / "t.bin")])
    assert f"pattern      o200k: mnemo's scanner, Unicode {udata.DEFAULT}" in capsys.readouterr().out


def test_a_split_regex_longer_than_tokenizer_bin_holds_is_refused_at_once(tmp_path: Path) -> None:
    """A split regex of more than MAX_PATTERN_BYTES (PATN's u16 length) is refused before it is
    compiled, as a pattern argument and in a tokenizer.json (the fuzzer's 872 KB regex took ~7.5 s
    to translate and compile before)."""
    import json
    import time

    import mnemo
    from mnemo.constants import MAX_PATTERN_BYTES
    from mnemo.errors import FormatError

    huge = "|".join([r"\p{L}+"] * (MAX_PATTERN_BYTES // 6 + 1))
    assert len(huge) > MAX_PATTERN_BYTES
    t0 = time.process_time()
    with pytest.raises(ConfigError, match="more than the 65,535 a tokenizer.bin holds"):
        mnemo.Tokenizer([], pattern=huge, special_tokens=[])
    obj = {
        "model": {"type": "BPE", "vocab": {chr(0x100 + i) if i < 33 else chr(i): i for i in range(256)}, "merges": []},
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": huge}, "behavior": "Isolated", "invert": False},
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(obj))
    with pytest.raises(FormatError, match="pre_tokenizer.pattern.Regex' is a regex [0-9,]+ bytes long, more than the 65,535"):
        mnemo.load(tmp_path / "tokenizer.json")
    assert time.process_time() - t0 < 5, "refused before compiling"
    assert mnemo.Tokenizer([], pattern=huge[: MAX_PATTERN_BYTES - 20].rsplit("|", 1)[0], special_tokens=[])
