"""The class-mask chunk starts (mnemo/pretokenize_bits.py) against the scanner they stand in for.

The oracle is the loop over `pretokenize.scan` with the same compiled program (itself checked
against the `regex` module in tests/test_pretokenize.py): a BitCursor must give its chunks byte
for byte, on any bytes, any sub-range [start, end), for the four patterns it covers (gpt4,
cl100k, mnemonic, o200k).  The inputs aim at what the bit logic reads: the three bytes before a
position, the byte after a run of white space, newline runs after punctuation, digit runs,
apostrophes and bytes >= 0x80 (where it hands over to scan), and all of them across the edges
of the 64-byte blocks.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from librt.strings import BytesWriter

import mnemo
from mnemo import buildinfo, encode_text
from mnemo import pretokenize_bits as pb
from mnemo import pretokenize_named as named
from mnemo.patterns import pattern_of, program_of
from mnemo.pretokenize import scan

COVERED = {"mnemonic": 0, "gpt4": 1, "o200k": 3, "cl100k": 4}
RULES = {0: 2, 1: 3, 3: 3 | pb.CASED, 4: 3}


def scan_ends(pid: int, data: bytes, start: int, end: int) -> list[int]:
    prog = program_of(pid)
    out = []
    pos = start
    while pos < end:
        pos = scan(prog, data, pos, end)
        out.append(pos)
    return out


def bit_ends(pid: int, data: bytes, start: int, end: int) -> list[int]:
    return pb.chunk_ends(program_of(pid), data, start, end, RULES[pid])


def assert_same(pid: int, data: bytes, start: int = 0, end: int = -1) -> None:
    if end < 0:
        end = len(data)
    assert bit_ends(pid, data, start, end) == scan_ends(pid, data, start, end), (pid, data, start, end)


def test_compiled_build_uses_the_words() -> None:
    """The suite runs on the compiled build, where the 64-bit words wrap; interpreted, the
    module says so and the encoders keep to scan."""
    if not buildinfo.is_compiled():
        assert not pb.BITS_OK
        pytest.skip("interpreted build: the bit logic is off")
    assert pb.BITS_OK
    for pid, rules in RULES.items():
        assert pb.bit_rules(pattern_of(pid).regex, program_of(pid)) == rules
    assert pb.bit_rules(pattern_of(2).regex, program_of(2)) == 0  # gpt2: scan alone


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        # letters take one byte before them unless it is CR/LF: " word", ".word", "\tword"
        (b"Hi there, you.word\tx", [b"Hi", b" there", b",", b" you", b".word", b"\tx"]),
        # a punctuation run of two ends before the letters; " ." is one chunk (` ?`)
        (b"a..b c .d", [b"a", b"..", b"b", b" c", b" .", b"d"]),
        # newlines after punctuation join it; the spaces then go to the next word's prefix
        (b"{\n\n    return x", [b"{\n\n", b"   ", b" return", b" x"]),
        # white space: to the last newline, then all but the last space, then " word"
        (b"a \n \n   b", [b"a", b" \n \n", b"  ", b" b"]),
        # digits in threes (cl100k); a lone tab before digits is its own chunk
        (b"x 1234567\t89", [b"x", b" ", b"123", b"456", b"7", b"\t", b"89"]),
        # contractions and non-ASCII letters (scan decides them)
        (b"don't caf\xc3\xa9s ok", [b"don", b"'t", b" caf\xc3\xa9s", b" ok"]),
    ],
)
def test_worked_examples_cl100k(text: bytes, chunks: list[bytes]) -> None:
    """Chunks derived by hand from cl100k's pattern (padded past BITS_MIN-sized blocks, so the
    words decide them, not only the start's fallback)."""
    pad = b"word " * 30 + b"end\n"  # 154 bytes: their own chunks, then the example
    data = pad + text
    ends = bit_ends(4, data, 0, len(data))
    pieces = [data[a:b] for a, b in zip([0, *ends], ends)]
    assert pieces[-len(chunks) :] == chunks
    assert ends == scan_ends(4, data, 0, len(data))


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        # letter runs cut by case: U*L+ then U+L*
        (b"fooBar HTMLParser aBCd XY", [b"foo", b"Bar", b" HTMLParser", b" a", b"BCd", b" XY"]),
        # punctuation takes the newlines and slashes after it; contractions end a word
        (b"x.\n/y don't", [b"x", b".\n/", b"y", b" don't"]),
    ],
)
def test_worked_examples_o200k(text: bytes, chunks: list[bytes]) -> None:
    pad = b"word " * 30 + b"end\n"
    data = pad + text
    ends = bit_ends(3, data, 0, len(data))
    pieces = [data[a:b] for a, b in zip([0, *ends], ends)]
    assert pieces[-len(chunks) :] == chunks
    assert ends == scan_ends(3, data, 0, len(data))


# ---- hypothesis ---------------------------------------------------------------------------

# Pieces that exercise every rule: classes, the pairs and triples the rules read, contractions,
# white space around newlines, long runs, and bytes >= 0x80 (letters, punctuation, white space,
# a number, and bytes that are no UTF-8 at all).
PIECES = [
    b"a", b"Z", b"word", b"Word", b"WORD", b"wORd", b"s", b"t", b"ll", b"ve", b"re", b"LL", b"/", b"//",
    b"0", b"7", b"12", b"2026", b"1234567",
    b" ", b"  ", b"    ", b"\t", b"\x0b", b"\x0c", b"\n", b"\r\n", b"\n\n", b"\r",
    b" \n", b"\n ", b"\n    ", b"  \n  ",
    b".", b",", b"-", b"{", b"}", b"(", b"...", b"\x00", b"\x1f", b"\x7f",
    b"'", b"'s", b"'ll", b"'T",
    b"\xc3\xa9", b"\xce\xa9", b"\xe2\x80\x94", b"\xc2\xa0", b"\xe3\x80\x80", b"\xd9\xa3", b"\xc2\xb2",
    b"\xe2\x80\xa8", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\xe2\x80",
]

texts = st.lists(st.sampled_from(PIECES), min_size=0, max_size=120).map(b"".join)
# mostly ASCII prose-like text, where the words decide most chunks
ascii_pieces = st.sampled_from([p for p in PIECES if max(p, default=0) < 0x80 and b"'" not in p])
ascii_texts = st.lists(ascii_pieces, min_size=0, max_size=200).map(b"".join)


@pytest.mark.parametrize("pattern", sorted(COVERED))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=texts, cut=st.tuples(st.integers(0, 300), st.integers(0, 300)))
def test_hypothesis_mixed(pattern: str, data: bytes, cut: tuple[int, int]) -> None:
    pid = COVERED[pattern]
    start = min(cut[0], len(data))
    end = max(start, len(data) - cut[1])
    assert_same(pid, data, start, end)
    assert_same(pid, data)


@pytest.mark.parametrize("pattern", sorted(COVERED))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=ascii_texts, start=st.integers(0, 70))
def test_hypothesis_ascii(pattern: str, data: bytes, start: int) -> None:
    pid = COVERED[pattern]
    assert_same(pid, data)
    if start < len(data):
        assert_same(pid, data, start, len(data))


@pytest.mark.parametrize("pattern", sorted(COVERED))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
def test_hypothesis_any_bytes(pattern: str, data: bytes) -> None:
    assert_same(COVERED[pattern], data)


# ---- block edges --------------------------------------------------------------------------

EVENTS = [
    b"\n    \n    x", b".\n\n  y", b"{\n        \n        do", b"-\n\x0b\n\rB", b"  \n  ", b" \n",
    b"1234567", b"12 345", b"a 'll", b"x's", b"..a", b" .a", b"\t.a", b"\n.a", b"\xc3\xa9ab",
    b"  \xc2\xa0  x", b"ab\xe2\x80\x94\n\n  c", b"   ", b"\r\n\r\n", b"\n", b"a", b".", b"7",
]


@pytest.mark.parametrize("pattern", sorted(COVERED))
@pytest.mark.parametrize("event", EVENTS)
def test_events_at_every_block_offset(pattern: str, event: bytes) -> None:
    """Each event placed so that it starts at offsets 50..70 of a text, after prose or after
    filler of one class, and the text ends right after it or 1..3 bytes later (texts that end
    mid-run), with start/end sub-ranges around the 64-byte edges."""
    pid = COVERED[pattern]
    for filler in (b"the cat sat on a mat. ", b"x", b" ", b"\n", b".", b"9"):
        for at in range(50, 71):
            head = (filler * (at // len(filler) + 1))[:at]
            for tail in (b"", b"z", b" q.", b"\n\n"):
                data = head + event + tail + b" and more words after it" * 4
                assert_same(pid, data)
                assert_same(pid, head + event + tail)
                for start in (1, 2, 63, 64, 65):
                    if start < len(data):
                        assert_same(pid, data, start, len(data))
                        if start < at + len(event):
                            assert_same(pid, data, start, at + len(event))


@pytest.mark.parametrize("pattern", sorted(COVERED))
def test_long_runs(pattern: str) -> None:
    """Runs of one class over many blocks, ending at the text's end or before each class."""
    pid = COVERED[pattern]
    for run in (b" ", b"\n", b"\t", b"7", b"a", b".", b" \n", b"\xc3\xa9"):
        for n in (63, 64, 65, 500):
            for after in (b"", b"x", b"5", b".", b"\n", b" ", b"'s"):
                assert_same(pid, b"go" + run * n + after)
                assert_same(pid, run * n + after)


# ---- the corpora --------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", ["english", "code", "multilingual"])
def test_corpus_documents(corpus: str, corpus_docs: Callable[..., list[str]]) -> None:
    """Every document of 1 MB of each corpus (skipped when ../shared/corpus is absent), on its
    own and all of them as one text, for each covered pattern; and the chunks equal the
    hand-written scanner's too."""
    docs = [d.encode("utf-8") for d in corpus_docs(corpus, 1_000_000)]
    whole = b"".join(docs)
    for pid in COVERED.values():
        for d in docs:
            assert bit_ends(pid, d, 0, len(d)) == scan_ends(pid, d, 0, len(d))
        ends = bit_ends(pid, whole, 0, len(whole))
        assert ends == scan_ends(pid, whole, 0, len(whole))
    pos = 0
    hand = []
    while pos < len(whole):
        pos = named.chunk_end(whole, pos, len(whole), 4)
        hand.append(pos)
    assert bit_ends(4, whole, 0, len(whole)) == hand


# ---- the encoders use it ------------------------------------------------------------------


@pytest.fixture(scope="module")
def cl100k() -> mnemo.Tokenizer:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "tiktoken" / "cl100k_base.tiktoken.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent (it lives in ../shared/fixtures beside the repo)")
    return mnemo.load_tiktoken(path, "cl100k_base")


def _ids_by_scan(tok: mnemo.Tokenizer, data: bytes, start: int, end: int) -> list[int]:
    enc = tok._encoder
    dst = BytesWriter()
    for a, b in zip([start, *scan_ends(4, data, start, end)], scan_ends(4, data, start, end)):
        enc.encode_span(data, a, b, dst)
    return enc.writer_ids(dst)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=texts, cut=st.integers(0, 40))
def test_encode_range_equals_chunks_by_scan(cl100k: mnemo.Tokenizer, data: bytes, cut: int) -> None:
    """encode_range_packed (the words above BITS_MIN bytes) gives the ids of encoding scan's
    chunks one by one; encode_some_packed in pieces gives them too."""
    data = data * 4
    start = min(cut, len(data))
    end = len(data)
    enc = cl100k._encoder
    dst = BytesWriter()
    encode_text.encode_range_packed(enc, data, start, end, 4, dst)
    want = _ids_by_scan(cl100k, data, start, end)
    assert enc.writer_ids(dst) == want
    for budget in (256, 300, 1000):
        dst = BytesWriter()
        pos = start
        while pos < end:
            pos = encode_text.encode_some_packed(enc, data, pos, end, 4, budget, dst)
        assert enc.writer_ids(dst) == want
