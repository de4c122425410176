"""The JSON Lines fast path (mnemo/jsonfield.py) against json.loads.

`string_field(line, key)` may decline (None) whenever it is not sure; when it answers, the answer
must be what sources.py's json.loads path yields for the line: json.loads(line)[field] as UTF-8,
each lone surrogate as U+FFFD (sources.str_to_utf8, Tokenizer.encode's rule).  Lines with a lone
surrogate anywhere are declined, and the json.loads path applies the rule.  The tests check both halves: it never
answers wrongly (generated records, mutated bytes, hand-picked edge cases, the real corpus) and it
does answer for the plain shape -- an object of string members, as strict UTF-8 -- so a version
that always declined would fail.
"""

from __future__ import annotations

import json
import lzma
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mnemo.sources
from mnemo.jsonfield import string_field, string_fields
from mnemo.sources import iter_documents, str_to_utf8


def via_json(line: bytes, field: str) -> bytes | None:
    """What sources.py's json.loads path yields for `line`, or None where it raises."""
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict):
        return None
    text = record.get(field)
    if not isinstance(text, str):
        return None
    return str_to_utf8(text)


def has_lone_surrogate(line: bytes) -> bool:
    """Whether a key or string value of the JSON object `line` holds a lone surrogate."""
    strings: list[str] = []

    def collect(pairs: list[tuple[str, object]]) -> dict[str, object]:
        for k, v in pairs:
            strings.append(k)
            if isinstance(v, str):
                strings.append(v)
        return dict(pairs)

    try:
        json.loads(line, object_pairs_hook=collect)
    except (ValueError, UnicodeDecodeError):
        return False
    return any(not s.isascii() and any("\ud800" <= c <= "\udfff" for c in s) for s in strings)


def fast(line: bytes, field: str) -> bytes | None:
    """string_field's answer, checked to be None or exactly the json.loads path's."""
    got = string_field(line, field.encode("utf-8", "surrogatepass"))
    if got is not None:
        assert got == via_json(line, field), (line, field)
    return got


def is_strict_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ---- hand-picked cases ----------------------------------------------------------------------

ANSWERED = [
    (rb'{"text":""}', b""),
    (rb'{"text":"plain"}', b"plain"),
    (rb'{"text":"\"\\\/\b\f\n\r\t"}', b'"\\/\x08\x0c\n\r\t'),
    (rb'{"text":"\\u0041"}', b"\\u0041"),  # an escaped backslash, then plain "u0041"
    (rb'{"text":"\u0041\u00e9\u00E9\u20ac\u20AC\uFFFF"}', "Aéé€€\uffff".encode()),
    (rb'{"text":"\u0000"}', b"\x00"),
    (rb'{"text":"\ud83d\ude00"}', "\U0001f600".encode()),  # a surrogate pair is one code point
    (rb'{"text":"\uD83D\uDE00"}', "\U0001f600".encode()),
    (rb'{"text":"\udbff\udfff"}', "\U0010ffff".encode()),
    (rb'{"text":"a\/b"}', b"a/b"),
    (b'{"text":"\x7f"}', b"\x7f"),  # DEL is not a control character for JSON
    ('{"text":"héllo € ܐ ¢ \U0001f600"}'.encode(), "héllo € ܐ ¢ \U0001f600".encode()),
    (rb'{"text":"a","text":"b"}', b"b"),  # duplicate keys: the last wins
    (rb'{"text":"a","te\u0078t":"b"}', b"b"),  # ... also when spelled with an escape
    (rb'{"te\u0078t":"a","text":"b","source":"c"}', b"b"),
    (rb'{"source":"x","text":"y","lang":"z"}', b"y"),
    (b' \t\r\n{ \t"text"\r\n:\n "y" \t,\r"a":"b"\n} \t\r\n', b"y"),  # JSON white space anywhere
    (b'{"text":"a\\"b"}\r', b'a"b'),
]

#: Lone surrogates (escaped): declined, and what sources.py reads instead -- U+FFFD for each, as
#: Tokenizer.encode gives it (they were once learned as the three bytes of the surrogate).
FFFD = "\ufffd".encode()
LONE_SURROGATES = [
    (rb'{"text":"\ud800"}', FFFD),  # lone high surrogate
    (rb'{"text":"\udc00"}', FFFD),  # lone low surrogate
    (rb'{"text":"\udc00\ud800"}', FFFD + FFFD),  # low then high: two lone ones
    (rb'{"text":"\ud800\u0041"}', FFFD + b"A"),
    (rb'{"text":"\ud800\ud800"}', FFFD + FFFD),
    (rb'{"text":"\ud800\ud800\udc00"}', FFFD + b"\xf0\x90\x80\x80"),
    (rb'{"text":"\ud800\n"}', FFFD + b"\n"),
    (rb'{"text":"\ud800\\u"}', FFFD + b"\\u"),
    (rb'{"text":"\ud800x"}', FFFD + b"x"),
    (rb'{"text":"ok","other":"\ud800"}', b"ok"),  # in another member: declined all the same
    (rb'{"\ud800":"x","text":"ok"}', b"ok"),  # in a key
]


@pytest.mark.parametrize(("line", "expected"), LONE_SURROGATES)
def test_lone_surrogates_are_declined_and_read_as_fffd(tmp_path: Path, line: bytes, expected: bytes) -> None:
    assert string_field(line, b"text") is None
    assert via_json(line, "text") == expected
    p = tmp_path / "a.jsonl"
    p.write_bytes(line + b"\n")
    assert list(iter_documents([p])) == [expected]


DECLINED = [
    # not valid JSON strings
    rb'{"text":"\x"}',
    rb'{"text":"\'"}',
    rb'{"text":"\u12"}',
    rb'{"text":"\u12G4"}',
    rb'{"text":"\u"}',
    rb'{"text":"\u 123"}',
    rb'{"text":"\u+123"}',
    rb'{"text":"\ud800\u12"}',
    rb'{"text":"\ud800\uZZZZ"}',
    rb'{"text":"abc',
    rb'{"text":"abc\"}',
    rb'{"text":"abc\\',
    b'{"text":"a\x00b"}',
    b'{"text":"a\x1fb"}',
    b'{"text":"a\tb"}',
    b'{"text":"a\nb"}',
    b'{"te\x01xt":"a"}',
    # raw bytes that are not strict UTF-8
    b'{"text":"\xc0\x80"}',  # overlong
    b'{"text":"\xc1\xbf"}',
    b'{"text":"\xe0\x80\x80"}',
    b'{"text":"\xe0\x9f\xbf"}',
    b'{"text":"\xf0\x80\x80\x80"}',
    b'{"text":"\xf0\x8f\xbf\xbf"}',
    b'{"text":"\xed\xa0\x80"}',  # an encoded surrogate (json.loads accepts it; we decline)
    b'{"text":"\xed\xbf\xbf"}',
    b'{"text":"\xf4\x90\x80\x80"}',  # above U+10FFFF
    b'{"text":"\xf5\x80\x80\x80"}',
    b'{"text":"\xff"}',
    b'{"text":"\x80"}',  # a lone continuation byte
    b'{"text":"\xc3"}',  # truncated sequences
    b'{"text":"\xe2\x82"}',
    b'{"text":"\xf0\x9f\x98"}',
    b'{"text":"\xc3\x28"}',  # a lead byte, then no continuation byte where one must be
    b'{"text":"\xe2\x28\xa1"}',
    b'{"text":"\xe2\x82\x28"}',
    b'{"text":"\xf0\x28\x8c\xbc"}',
    b'{"text":"\xf0\x90\x28\xbc"}',
    b'{"text":"\xf0\x90\x8c\x28"}',
    b'{"text":"a","s":"\xff"}',  # bad bytes in another member
    b'{"\xff":"a","text":"b"}',
    # around the object
    b'\xef\xbb\xbf{"text":"a"}',  # a UTF-8 BOM (json.loads accepts it; we decline)
    b'x{"text":"a"}',
    b'\x0b{"text":"a"}',  # vertical tab is not JSON white space
    b'\xc2\xa0{"text":"a"}',
    b'{"text":"a"}x',
    b'{"text":"a"}}',
    b'{"text":"a"},',
    b'{"text":"a"} {}',
    b'{"text":"a"}\x00',
    b'{"text":"a"}\x0c',
    # other values
    b'{"text":"a","n":1}',
    b'{"text":"a","n":null}',
    b'{"text":"a","b":true}',
    b'{"text":"a","o":{}}',
    b'{"text":"a","o":{"text":"b"}}',
    b'{"text":"a","l":[]}',
    b'{"text":1}',
    b'{"text":null}',
    b'{"text":["a"]}',
    b'{"text":{"text":"a"}}',
    # structure
    b"",
    b" ",
    b"{}",
    b"{ }",
    b'{"a":"b"}',  # the key is absent
    b'{"Text":"a"}',
    b'{"text ":"a"}',
    b'{"text":"a",}',
    b'{"text" "a"}',
    b'{"text":"a" "b":"c"}',
    b'{"text"::"a"}',
    b'{,"text":"a"}',
    b"{'text':'a'}",
    b'["text"]',
    b'"text"',
    b"{",
    b'{"text"',
    b'{"text":',
    b'{"text":"a"',
    b'{"text":"a",',
    b'{"text":\x0c"a"}',
    b'{text:"a"}',
]


@pytest.mark.parametrize("line, expected", ANSWERED)
def test_answered(line: bytes, expected: bytes) -> None:
    assert via_json(line, "text") == expected  # the table itself is right
    assert fast(line, "text") == expected


@pytest.mark.parametrize("line", DECLINED)
def test_declined(line: bytes) -> None:
    assert fast(line, "text") is None


def test_key_with_escapes_and_other_names() -> None:
    line = rb'{"a\"b":"1","\u00e9":"2","\ud83d\ude00":"3","":"5","a\\b":"6"}'
    for field, expected in [('a"b', b"1"), ("é", b"2"), ("\U0001f600", b"3"), ("", b"5"), ("a\\b", b"6")]:
        assert fast(line, field) == expected
    # a key that is a lone surrogate: declined (json.loads reads it, by its exact name)
    lone = rb'{"\ud800":"4","text":"x"}'
    assert fast(lone, "\ud800") is None and fast(lone, "\ufffd") is None and fast(lone, "text") is None
    assert via_json(lone, "\ud800") == b"4" and via_json(lone, "\ufffd") is None
    # the raw bytes of a key are not its name: "a\"b" is not the key 'a\\"b'
    assert fast(line, 'a\\"b') is None
    assert fast(line, "\\u00e9") is None


def test_special_byte_at_every_position() -> None:
    """The eight-bytes-at-a-time scan: one byte needing attention at each offset of strings of
    0 to 40 bytes, so every byte of a word (the top one included) holds it at some point."""
    specials = [
        (rb"\n", b"\n"),
        (rb"\"", b'"'),
        (rb"\\", b"\\"),
        (rb"\u00e9", "é".encode()),
        (rb"\ud83d\ude00", "\U0001f600".encode()),
        ("é".encode(), "é".encode()),
        ("ܐ".encode(), "ܐ".encode()),  # DC 90: its low seven bits in the lead byte are a backslash
        ("¢".encode(), "¢".encode()),  # C2 A2: ... and here a quote
        ("\U0001f600".encode(), "\U0001f600".encode()),
        (b"\x7f", b"\x7f"),
        (b"\x1f", None),
        (b"\x00", None),
        (b"\xa2", None),
        (b"\xdc", None),
    ]
    for length in range(41):
        for at in range(length + 1):
            for raw, decoded in specials:
                for prefix in (b'{"text":"', b'{"ab":"", "text":"'):  # two alignments
                    line = prefix + b"x" * at + raw + b"y" * (length - at) + b'"}'
                    expected = None if decoded is None else b"x" * at + decoded + b"y" * (length - at)
                    assert fast(line, "text") == expected, line


# ---- generated records ------------------------------------------------------------------------

# Every code point, lone surrogates included (st.characters() with no filter).
ANY_TEXT = st.text(st.characters(), max_size=40)
KEYS = st.one_of(st.sampled_from(["text", "source", "lang", "te\"xt", "t\u00e9xt", "\U0001f600", "", "\ud800"]), ANY_TEXT)
SPACE = st.text(st.sampled_from(" \t\r\n"), max_size=3)

SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def u_escape(cp: int, rng: random.Random) -> str:
    h = f"\\u{cp:04x}"
    return h.upper().replace("\\U", "\\u") if rng.random() < 0.5 else h


def json_string(s: str, rng: random.Random) -> str:
    """`s` as a JSON string literal, each character written in a randomly chosen valid way:
    raw where allowed, a short escape, \\uXXXX in either case, a surrogate pair."""
    out = ['"']
    for c in s:
        cp = ord(c)
        must = c in '"\\' or cp < 0x20
        if not must and rng.random() < 0.6:
            out.append(c)
        elif c in SHORT_ESCAPES and rng.random() < 0.5:
            out.append(SHORT_ESCAPES[c])
        elif c == "/" and rng.random() < 0.5:
            out.append("\\/")
        elif cp > 0xFFFF:
            cp -= 0x10000
            out.append(u_escape(0xD800 + (cp >> 10), rng) + u_escape(0xDC00 + (cp & 0x3FF), rng))
        else:
            out.append(u_escape(cp, rng))
    out.append('"')
    return "".join(out)


@st.composite
def records(draw: st.DrawFn) -> tuple[bytes, str]:
    """A JSON object line of string members (some of them `field`, duplicates included), in any
    order, with random JSON white space, written by json.dumps (ASCII-only or not) or by
    json_string; and the field to read."""
    field = draw(st.one_of(st.just("text"), KEYS))
    members = draw(st.lists(st.tuples(KEYS, ANY_TEXT), max_size=4))
    members += [(field, v) for v in draw(st.lists(ANY_TEXT, max_size=3))]
    members = draw(st.permutations(members))
    style = draw(st.sampled_from(["ascii", "raw", "mixed"]))
    rng = draw(st.randoms(use_true_random=False))

    def literal(s: str) -> str:
        if style == "mixed":
            return json_string(s, rng)
        return json.dumps(s, ensure_ascii=style == "ascii")

    parts = [draw(SPACE), "{", draw(SPACE)]
    for j, (k, v) in enumerate(members):
        if j:
            parts += [",", draw(SPACE)]
        parts += [literal(k), draw(SPACE), ":", draw(SPACE), literal(v), draw(SPACE)]
    parts += ["}", draw(SPACE)]
    # raw lone surrogates (style "raw") become encoded surrogates: json.loads accepts those
    # bytes, string_field declines them
    return "".join(parts).encode("utf-8", "surrogatepass"), field


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=records())
def test_generated_records(case: tuple[bytes, str]) -> None:
    line, field = case
    got = fast(line, field)
    expected = via_json(line, field)
    if expected is not None and is_strict_utf8(line) and not has_lone_surrogate(line):
        # the plain shape: string_field must answer, not leave it to json.loads
        assert got == expected, line


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=records(), data=st.data())
def test_mutated_records(case: tuple[bytes, str], data: st.DataObject) -> None:
    """Arbitrary bytes inserted into, or written over, a valid line: never an exception, never
    a wrong answer."""
    line, field = case
    at = data.draw(st.integers(0, len(line)))
    junk = data.draw(st.binary(min_size=1, max_size=4) | st.sampled_from([b'"', b"\\", b"\\u", b"{", b"}", b",", b":", b"\xed\xa0\x80"]))
    replace = data.draw(st.integers(0, 4))
    fast(line[:at] + junk + line[at + replace :], field)


@settings(max_examples=500, deadline=None)
@given(line=st.binary(max_size=48))
def test_any_bytes(line: bytes) -> None:
    fast(line, "text")
    fast(b'{"text":"' + line, "text")
    fast(b'{"text":"' + line + b'"}', "text")


# Bytes that make up raw UTF-8 (and fail to): whole characters, lead bytes of every kind,
# continuation bytes, ASCII letters, and a lead byte with the second bytes at the edges of its
# range (E0 9F is overlong, ED A0 a surrogate, F4 90 above U+10FFFF).
UTF8_PIECES = st.lists(
    st.one_of(
        st.characters(min_codepoint=0x80, exclude_categories=["Cs"]).map(lambda c: c.encode()),
        st.sampled_from([0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]).map(lambda b: bytes([b])),
        st.sampled_from([b"\xe0\x9f", b"\xe0\xa0", b"\xed\x9f", b"\xed\xa0", b"\xf0\x8f", b"\xf0\x90", b"\xf4\x8f", b"\xf4\x90"]),
    ),
    max_size=12,
).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(value=UTF8_PIECES)
def test_raw_utf8_inside_a_string(value: bytes) -> None:
    """Raw bytes from 0x80 are answered exactly when they are strict UTF-8 (Python's decoder
    is the oracle), else declined."""
    for line in (b'{"text":"' + value + b'"}', b'{"text":"' + value + b'\\n' + value + b'"}'):
        expected = line[9:-2].replace(b"\\n", b"\n") if is_strict_utf8(value) else None
        assert fast(line, "text") == expected, line


def test_every_byte_in_an_escape() -> None:
    """Every byte after a backslash, and at each place of a \\uXXXX escape (also of the second
    half of a surrogate pair): answered exactly where json.loads reads the line (the lines are
    otherwise plain), declined elsewhere."""
    for b in range(256):
        x = bytes([b])
        for line in (
            b'{"text":"a\\' + x + b'z"}',
            b'{"text":"\\u' + x + b'0e9"}',
            b'{"text":"\\u0' + x + b'e9"}',
            b'{"text":"\\u00e' + x + b'"}',
            b'{"text":"\\ud83d\\u' + x + b'e00"}',
            b'{"text":"\\ud83d\\ude0' + x + b'"}',
            b'{"text":"\\ud83d\\' + x + b'de00"}',
        ):
            expected = via_json(line, "text") if is_strict_utf8(line) and not has_lone_surrogate(line) else None
            assert fast(line, "text") == expected, line


def test_utf8_sequences_exhaustively() -> None:
    """Every lead byte class, with second, third and fourth bytes at the edges of the ranges
    that matter (E0 needs A0-BF, ED 80-9F, F0 90-BF, F4 80-8F; continuation bytes are
    80-BF), alone and between valid characters: answered iff Python's decoder takes them."""
    leads = [0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
    seconds = [0x28, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0]
    tails = [b"", *(bytes([b]) for b in (0x28, 0x80, 0xBF, 0xC0)), *(bytes([b, c]) for b in (0x28, 0x80, 0xBF) for c in (0x28, 0x80, 0xBF, 0xC0))]
    answered = 0
    for lead in leads:
        for second in seconds:
            for tail in tails:
                seq = bytes([lead, second]) + tail
                for value in (seq, "é".encode() + seq + "€".encode()):
                    expected = value if is_strict_utf8(value) else None
                    assert fast(b'{"text":"' + value + b'"}', "text") == expected, value
                    answered += expected is not None
    assert answered > 100  # the table holds valid sequences too


# ---- through sources.py ----------------------------------------------------------------------


def test_sources_answers_plain_lines_and_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sources.py asks string_field first and runs json.loads for what it declines: the
    documents are json.loads's either way."""
    lines = [
        rb'{"text":"one\n","source":"s"}',
        b'{"text":"two","id":7}',  # declined: a number member
        b"",
        b'\xef\xbb\xbf{"text":"three"}',  # declined: the BOM (json.loads reads it)
        '{"text":"fou\\u0072 \U0001f600"}'.encode(),
        b'{"text":"\xed\xa0\x80"}',  # declined: an encoded surrogate (json.loads reads it, U+FFFD)
    ]
    p = tmp_path / "mixed.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    answers: list[bytes | None] = []
    in_place: list[bytes] = []

    def spy(line: bytes, key: bytes) -> bytes | None:
        answers.append(string_field(line, key))
        return answers[-1]

    def spy_block(data: bytes, at: int, key: bytes, out: list[bytes]) -> int:
        got: list[bytes] = []
        at = string_fields(data, at, key, got)
        in_place.extend(got)
        out.extend(got)
        return at

    monkeypatch.setattr(mnemo.sources, "string_field", spy)
    monkeypatch.setattr(mnemo.sources, "string_fields", spy_block)
    docs = list(iter_documents([p]))
    assert docs == [b"one\n", b"two", b"three", "four \U0001f600".encode(), "\ufffd".encode()]
    # the lines read in place from the block, then the declined ones line by line (the blank
    # line is skipped before any reader)
    assert in_place == [b"one\n", "four \U0001f600".encode()]
    assert answers == [None, None, None]


# ---- the corpus ---------------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["english", "multilingual", "code"])
def test_corpus_lines(name: str, corpus_path: Callable[[str], Path], full_corpus: bool) -> None:
    """Every line (the first 3,000 unless --full-corpus) of a corpus file: string_field answers,
    for "text" and for "source", exactly what json.loads gives."""
    limit = -1 if full_corpus else 3000
    n = 0
    with lzma.open(corpus_path(name), "rb") as f:
        for line in f:
            if n == limit:
                break
            line = line.rstrip(b"\n")  # as sources.py splits them
            record = json.loads(line)
            for field in ("text", "source"):
                got = string_field(line, field.encode())
                assert got == str_to_utf8(record[field]), f"{name}.jsonl.xz line {n + 1}, {field!r}"
            n += 1
    assert n > 0


def test_string_fields_reads_lines_in_place_and_stops_where_it_declines() -> None:
    """string_fields reads line after line of a block from `at`, one item per line, and
    returns the offset of the first line it declines or of the unfinished last one."""
    block = b'{"text":"a"}\n{"text":"b\\u00e9"}\r\n\n{"text":"c"}\n{"text":"d"'
    out: list[bytes] = []
    at = string_fields(block, 0, b"text", out)
    assert out == [b"a", "b\u00e9".encode()] and block[at:].startswith(b"\n{")  # the blank line
    at = string_fields(block, at + 1, b"text", out)
    assert out == [b"a", "b\u00e9".encode(), b"c"] and block[at:] == b'{"text":"d"'  # unfinished
    assert string_fields(block, len(block), b"text", out) == len(block) and len(out) == 3
    for cut in range(len(block)):  # each line read in place is string_field's answer on its slice
        got: list[bytes] = []
        end = string_fields(block[:cut], 0, b"text", got)
        lines = block[:end].split(b"\n")[:-1]
        assert got == [string_field(line, b"text") for line in lines]
