"""The encode loops of whole texts (mnemo/encode_text.py: encode_walk, encode_scanned) against
the naive twin on the chunks `scan` cuts.

encode_walk walks the cursor's chunk starts inline (BitCursor.next_end's steps) and answers a
chunk of one byte and a front-cache hit of one id itself; encode_scanned does the latter on
scan's chunks.  Everything else goes to encode_span.  So the cases aim at what those inline
steps decide: which cache entries they may answer (one id, not a cached chunk of several; not a
chunk length the bypass is skipping), the last bytes of a text (no 8-byte key there), the
cursor's blocks, its fallbacks to scan and its turning off mid-text, the bounded cursor of
encode_some_packed, texts around BITS_MIN, and both id widths.  The twin (reference.py) knows
nothing of caches, so every path the caches take must give its ids, cold and warm.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from librt.strings import BytesWriter

from mnemo import buildinfo, encode_text
from mnemo import pretokenize_bits as pb
from mnemo.encode_chunk import BYPASS_ON, SMALL_MAX_BYTES, Encoder, ids_of
from mnemo.interop import load_gpt2
from mnemo.patterns import program_of
from mnemo.pretokenize import scan
from mnemo.reference import encode_chunk_naive, merge_ranks

# pattern handles of the patterns the cursor covers, and their bit rules
COVERED = {"mnemonic": 0, "gpt4": 1, "o200k": 3, "cl100k": 4}
RULES = {0: 2, 1: 3, 3: 3 | pb.CASED, 4: 3}
CL100K = 4


class Twin:
    """The naive twin's ids of the chunks scan cuts, each chunk's BPE remembered."""

    def __init__(self, merges: list[tuple[int, int]]) -> None:
        self.ranks = merge_ranks(merges)
        self.memo: dict[bytes, list[int]] = {}

    def ids(self, pid: int, data: bytes, start: int = 0, end: int = -1) -> list[int]:
        end = len(data) if end < 0 else end
        prog = program_of(pid)
        out: list[int] = []
        pos = start
        while pos < end:
            e = scan(prog, data, pos, end)
            chunk = data[pos:e]
            if chunk not in self.memo:
                self.memo[chunk] = encode_chunk_naive(chunk, self.ranks)
            out.extend(self.memo[chunk])
            pos = e
        return out


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> tuple[list[tuple[int, int]], Twin]:
    merges = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt").merges
    return merges, Twin(merges)


@pytest.fixture(scope="module")
def gpt2_encoders(gpt2: tuple[list[tuple[int, int]], Twin]) -> list[Encoder]:
    """GPT-2's merges writing uint16 ids and the same writing uint32 (made once: the examples
    of a hypothesis test share them, caches and all)."""
    return [Encoder(gpt2[0]), Encoder(gpt2[0], wide=True)]


def range_ids(enc: Encoder, pid: int, data: bytes, start: int = 0, end: int = -1) -> list[int]:
    end = len(data) if end < 0 else end
    dst = BytesWriter()
    encode_text.encode_range_packed(enc, data, start, end, pid, dst)
    return ids_of(dst.getvalue(), enc.wide)


def some_ids(enc: Encoder, pid: int, data: bytes, budget: int, start: int = 0) -> list[int]:
    """encode_some_packed from `start` to the end, `budget` bytes a call."""
    dst = BytesWriter()
    pos = start
    while pos < len(data):
        pos = encode_text.encode_some_packed(enc, data, pos, len(data), pid, budget, dst)
    return ids_of(dst.getvalue(), enc.wide)


def walked(pid: int, data: bytes) -> bool:
    """Whether encode_range_packed takes the cursor's chunk starts for this text (at its start)."""
    rules = pb.rules_of(pid)
    return rules != 0 and len(data) >= pb.BITS_MIN and not pb.BitCursor(program_of(pid), data, 0, len(data), rules).off


def test_compiled_build_walks() -> None:
    """The loops under test are the compiled ones: interpreted, the cursor is off and only
    encode_scanned runs (the other tests still hold there)."""
    if not buildinfo.is_compiled():
        pytest.skip("interpreted build: the bit logic is off")
    assert walked(CL100K, b"The quick brown fox jumps over the lazy dog. " * 10)


@pytest.mark.corpus
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("name", ["english", "code", "multilingual"])
def test_corpus_cold_warm_and_in_pieces(
    name: str, wide: bool, corpus_docs: Callable[..., list[str]], gpt2: tuple[list[tuple[int, int]], Twin]
) -> None:
    """Every document, with each covered pattern: cold (caches emptied), warm (the same text
    again: most chunks are then front-cache hits), and in pieces (encode_some_packed's bounded
    cursor) -- all equal the twin.  For English and code most documents are walked."""
    merges, twin = gpt2
    enc = Encoder(merges, wide=wide)
    docs = [d.encode("utf-8") for d in corpus_docs(name, max_bytes=120_000)]
    assert docs
    for pattern, pid in COVERED.items():
        enc.clear_cache()
        n_walked = 0
        for data in docs:
            want = twin.ids(pid, data)
            assert range_ids(enc, pid, data) == want, (pattern, data[:80])
            assert range_ids(enc, pid, data) == want, (pattern, data[:80])
            assert some_ids(enc, pid, data, 300) == want, (pattern, data[:80])
            n_walked += walked(pid, data)
        if name != "multilingual" and buildinfo.is_compiled():
            assert n_walked > len(docs) // 2, (pattern, n_walked, len(docs))


def test_cached_chunks_of_several_ids(gpt2: tuple[list[tuple[int, int]], Twin]) -> None:
    """Chunks of 2-7 bytes that are no token are kept in the word table and the front cache
    with their ids (a count above 0): the inline step must leave them to encode_span.  Texts
    of such chunks repeated, walked and scanned, cold and warm, one id width and the other."""
    merges, twin = gpt2
    rng = random.Random(5)
    odd = [b" qzx", b" zzq", b"xqj", b" kqvw", b" jjjq", b"qqq", b" wxyzq"]
    for wide in (False, True):
        enc = Encoder(merges, wide=wide)
        for n_words in (3, 40, 400):  # under BITS_MIN (scanned) and over (walked)
            data = b"".join(rng.choice(odd) + rng.choice([b" the", b" of", b".", b" a"]) for _ in range(n_words))
            want = twin.ids(CL100K, data)
            assert any(len(twin.memo[c]) > 1 for c in odd if c in twin.memo)
            for _ in range(3):
                assert range_ids(enc, CL100K, data) == want


def test_bypassed_lengths_go_to_encode_span(gpt2: tuple[list[tuple[int, int]], Twin]) -> None:
    """Base64 of random bytes sends the scores of its chunk lengths past BYPASS_ON (those
    lengths then skip the lookups), and English after it in the same walked texts meets the
    inline step with those lengths bypassed: the ids equal the twin's throughout."""
    merges, twin = gpt2
    enc = Encoder(merges)
    rng = random.Random(11)
    english = b"The people of the government would have something about their work, and they said so. "
    noise = [base64.b64encode(rng.randbytes(3000)) + b" " for _ in range(30)]
    for block in noise:
        assert range_ids(enc, CL100K, block) == twin.ids(CL100K, block)
    assert any(enc.misses[n] > BYPASS_ON for n in range(2, SMALL_MAX_BYTES + 1))
    mixed = english * 20 + noise[0] + english * 20
    for _ in range(3):
        assert range_ids(enc, CL100K, mixed) == twin.ids(CL100K, mixed)
        assert some_ids(enc, CL100K, mixed, 256) == twin.ids(CL100K, mixed)


def test_cursor_turns_off_mid_text(gpt2: tuple[list[tuple[int, int]], Twin]) -> None:
    """A text that starts as ASCII prose and goes on mostly beyond ASCII: the cursor is on at
    the start, turns itself off part way (too many chunks left to scan), and scan finishes the
    text; the ids are the twin's, from any start."""
    merges, twin = gpt2
    enc = Encoder(merges)
    # apostrophes: ASCII (the gate at the start lets the text through), but every chunk near
    # one is left to scan
    data = b"Plain English words to start with, and a few more of them. " * 8 + b"it's I'll we're don't " * 200
    if not buildinfo.is_compiled():
        pytest.skip("interpreted build: the bit logic is off")
    assert walked(CL100K, data)
    cur = pb.BitCursor(program_of(CL100K), data, 0, len(data), RULES[CL100K])
    pos = 0
    while pos < len(data):
        e = cur.next_end(pos)
        if e < 0:
            break
        pos = e
    assert cur.off and 480 < pos < len(data) - 1000  # off part way: the rest is scan's
    for start in (0, 1, 7, 480):
        want = twin.ids(CL100K, data, start)
        assert range_ids(enc, CL100K, data, start) == want
        assert some_ids(enc, CL100K, data, 1000, start) == want


lengths_near_bits_min = st.integers(pb.BITS_MIN - 9, pb.BITS_MIN + 70)
prose_pieces = st.sampled_from(
    [b"a", b"the", b" the", b" of", b"Word", b" qzx", b" zzq", b"x", b" ", b"  ", b"\n", b"\n\n", b".", b",", b"...",
     b"12", b"2026", b"'s", b"'ll", b"\xc3\xa9", b"\xe2\x80\x94", b"\t", b"-", b"(", b")", b" something", b" government"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(prose_pieces, min_size=0, max_size=200), size=lengths_near_bits_min, cut=st.integers(0, 12))
def test_texts_near_bits_min_and_their_last_bytes(
    gpt2: tuple[list[tuple[int, int]], Twin], gpt2_encoders: list[Encoder], pieces: list[bytes], size: int, cut: int
) -> None:
    """Texts cut to lengths around BITS_MIN (scanned below it, walked from it), from a start
    inside the first chunks: the last chunks have fewer than 8 bytes after them (encode_span's
    key is not read there, nor the inline step's), and a chunk ends on every block edge over
    the examples.  Twice each, so the second run meets the front cache's entries."""
    twin = gpt2[1]
    data = (b"".join(pieces) * 8)[:size]
    start = min(cut, len(data))
    want = twin.ids(CL100K, data, start)
    for enc in gpt2_encoders:
        for _ in range(2):
            assert range_ids(enc, CL100K, data, start) == want
        assert some_ids(enc, CL100K, data, 64, start) == want
