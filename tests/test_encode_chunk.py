"""The compiled encoder (mnemo/encode_chunk.py) against hand-worked examples and the naive twin.

These tests drive the encoder with chunk lists they cut themselves, so they do not depend on the
pre-tokenizer.  Paths: the tables and caches (chunks <= CACHE_MAX_BYTES), the short rank-array path (< 64 bytes,
`encode_uncached`), the heap path (`encode_long`, any length) and the bucket path (`encode_huge`,
any length; encode_long takes it from HUGE_CHUNK bytes); all must equal the twin.
"""

from __future__ import annotations

import base64
import json
import random
import time
from itertools import accumulate
from collections.abc import Callable
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from librt.strings import BytesWriter

from mnemo.errors import ConfigError
from mnemo.idmap import remap_in_place
from mnemo.encode_chunk import (
    BYPASS_CHUNKS, BYPASS_ON, CACHE_MAX_BYTES, LONG_CHUNK, LONG_WORD_MAX, PIECES_GAIN, PIECES_OFF, PIECES_SKIP, RUN_BYTES,
    SMALL_MAX_BYTES, Encoder, export_tables, ids_of, lists_of, put, same_bytes,
)
from mnemo.interop import bytes_to_unicode, load_gpt2
from mnemo.ranks import merges_of_ranks
from mnemo.reference import bpe_naive, encode_chunk_naive, encode_chunks_naive, merge_ranks

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def long_ids(enc: Encoder, data: bytes) -> list[int]:
    dst = BytesWriter()
    enc.encode_long(data, 0, len(data), dst)
    return ids_of(dst.getvalue(), enc.wide)


def huge_ids(enc: Encoder, data: bytes) -> list[int]:
    dst = BytesWriter()
    assert enc.encode_huge(data, 0, len(data), dst)  # declines only a ranked vocabulary's chunks
    return ids_of(dst.getvalue(), enc.wide)


def runs_ids(enc: Encoder, data: bytes) -> list[int] | None:
    """The ids by the run-length path, or None when it declines the chunk (having written nothing)."""
    dst = BytesWriter()
    if not enc.encode_runs(data, 0, len(data), dst):
        assert len(dst) == 0
        return None
    return ids_of(dst.getvalue(), enc.wide)


def all_paths(enc: Encoder, data: bytes) -> list[list[int]]:
    """The ids of one chunk by every path that accepts it."""
    results = [enc.encode_chunks([data]), enc.encode_chunks_uncached([data]), long_ids(enc, data), huge_ids(enc, data)]
    runs = runs_ids(enc, data)
    if runs is not None:
        results.append(runs)
    if len(data) < LONG_CHUNK:
        dst = BytesWriter()
        enc.encode_short(data, 0, len(data), dst)
        results.append(ids_of(dst.getvalue(), enc.wide))
    return results


def test_ids_packed_as_uint16_round_trip() -> None:
    """The encoder writes ids as little-endian uint16 through librt's i16 writer: every id
    0..65535 comes back, and the bytes are numpy's uint16 layout."""
    import numpy as np

    dst = BytesWriter()
    for x in range(65536):
        put(dst, x)
    packed = dst.getvalue()
    assert ids_of(packed, False) == list(range(65536))
    # the pre-made int objects: the same list, for every id an encoder can write
    assert Encoder([(0, 0)] * (65536 - 256)).ids_list(packed) == list(range(65536))
    assert np.frombuffer(packed, dtype="<u2").tolist() == list(range(65536))


# ---- worked examples ----

# a=97 b=98 c=99.  Merges: 0: (a, b) -> 256 "ab";  1: (256, c) -> 257 "abc";  2: (b, c) -> 258 "bc".
ABC = [(97, 98), (256, 99), (98, 99)]


def test_worked_example_lowest_merge_first() -> None:
    """'abcbc' = [a b c b c]: pairs ab(0) bc(2) cb(-) bc(2); lowest is 0 -> [256 c b c];
    then 256c(1) cb(-) bc(2) -> 1 -> [257 b c]; then 257b(-) bc(2) -> [257 258]."""
    enc = Encoder(ABC)
    for ids in all_paths(enc, b"abcbc"):
        assert ids == [257, 258]
    assert encode_chunk_naive(b"abcbc", merge_ranks(ABC)) == [257, 258]


def test_worked_example_every_occurrence_left_to_right() -> None:
    """Merge 0 = (a, a) -> 256, merge 1 = (256, 256) -> 257.
    'aaaaa': merge 0 left to right without overlap gives [256 256 a]; then merge 1 -> [257 a]."""
    merges = [(97, 97), (256, 256)]
    enc = Encoder(merges)
    for ids in all_paths(enc, b"aaaaa"):
        assert ids == [257, 97]
    assert encode_chunk_naive(b"aaaaa", merge_ranks(merges)) == [257, 97]


def test_worked_example_merge_order_beats_position() -> None:
    """Merge 0 = (b, c) -> 256, merge 1 = (a, b) -> 257.  'abc': bc (merge 0) wins although ab is
    further left -> [a 256]; (a, 256) is no merge, so it stays [97, 256]."""
    enc = Encoder([(98, 99), (97, 98)])
    for ids in all_paths(enc, b"abc"):
        assert ids == [97, 256]


def test_no_merges_gives_bytes() -> None:
    enc = Encoder([])
    data = bytes(range(256)) * 2
    for ids in all_paths(enc, data):
        assert ids == list(data)
    assert enc.encode_chunks([b"", b"x"]) == [120]


def test_rank_every_merge_and_no_other_pair(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """rank() answers through the pair filter first: every merge must pass it (a filter bit
    missing would turn a merge into NO_RANK), and pairs that are no merge give NO_RANK."""
    from mnemo.encode_chunk import NO_RANK

    enc, merges = gpt2_encoder
    for k, (a, b) in enumerate(merges):
        assert enc.rank(a, b) == k
    ranks = merge_ranks(merges)
    rng = random.Random(11)
    top = 256 + len(merges)
    for _ in range(200_000):
        a, b = rng.randrange(top), rng.randrange(top)
        assert enc.rank(a, b) == ranks.get((a, b), NO_RANK)
    tiny = Encoder([(1, 2)])  # the smallest filter: one merge
    assert tiny.rank(1, 2) == 0 and tiny.rank(2, 1) == NO_RANK


def test_rank_table() -> None:
    enc = Encoder(ABC)
    assert enc.rank(97, 98) == 0
    assert enc.rank(256, 99) == 1
    assert enc.rank(98, 99) == 2
    assert enc.rank(99, 98) > 1 << 32


# ---- random merges against the twin ----


@st.composite
def merges_and_texts(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[bytes]]:
    alphabet = draw(st.lists(st.integers(0, 255), min_size=1, max_size=4, unique=True))
    n = draw(st.integers(0, 40))
    merges: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    tokens = list(alphabet)
    for _ in range(n):
        pair = (draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens)))
        if pair in seen:
            continue
        seen.add(pair)
        tokens.append(256 + len(merges))
        merges.append(pair)
    texts = draw(st.lists(st.lists(st.sampled_from(alphabet), max_size=150).map(bytes), max_size=6))
    return merges, texts


@settings(max_examples=300, deadline=None)
@given(merges_and_texts())
def test_every_path_equals_twin(case: tuple[list[tuple[int, int]], list[bytes]]) -> None:
    merges, texts = case
    enc = Encoder(merges)
    ranks = merge_ranks(merges)
    for text in texts:
        expected = encode_chunk_naive(text, ranks)
        for ids in all_paths(enc, text):
            assert ids == expected
    assert enc.encode_chunks(texts) == encode_chunks_naive(texts, merges)
    joined = b"".join(texts)
    assert enc.encode_ends(joined, list(accumulate(len(t) for t in texts))) == encode_chunks_naive(texts, merges)


@pytest.mark.parametrize("wide", [False, True])
def test_every_two_byte_chunk_equals_twin(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]], wide: bool) -> None:
    """encode_span answers a chunk of two bytes from the byte-pair table (their merge's token,
    or the two bytes), not through the caches: all 65,536 of them, twice (the second time the
    caches are warm), as the twin gives them; GPT-2's ids above 32,767 go through the narrow
    form's sign trick.  With tokens no merge makes (`whole`), such a chunk may be one of them,
    and goes the general way."""
    _, merges = gpt2_encoder
    enc = Encoder(merges, wide=wide)
    chunks = [bytes((a, b)) for a in range(256) for b in range(256)]
    data = b"".join(chunks)
    ends = list(range(2, len(data) + 1, 2))
    want = encode_chunks_naive(chunks, merges)
    assert max(want) > 32767
    assert enc.encode_ends(data, ends) == want
    assert enc.encode_ends(data, ends) == want
    # "\x00\x01" and "\xff\xfe" are pairs no merge makes: as whole tokens they are one id each
    from mnemo.reference import encode_chunks_ranked_naive

    whole = [b"\x00\x01", b"\xff\xfe"]
    enc_whole = Encoder(merges, wide=wide, whole=whole)
    got = enc_whole.encode_ends(data, ends)
    assert got == encode_chunks_ranked_naive(chunks, merges, whole)
    assert got[2] == 256 + len(merges) and got[-3] == 256 + len(merges) + 1  # after [0, 0]; before [255, 255]


def test_encode_ends_cache_keys() -> None:
    """Chunks of 2..20 bytes inside one buffer: keys are read 8 bytes at a time and masked to the
    chunk, so 'ab' at the start of 'abcd...' must not be taken for 'abcd' or anything else."""
    enc = Encoder([(97, 98), (99, 100)])
    rng = random.Random(3)
    for _ in range(2000):
        parts = [bytes(rng.choice(b"abcd\xc3\x81") for _ in range(rng.randint(1, 20))) for _ in range(6)]
        data = b"".join(parts)
        ends = list(accumulate(len(p) for p in parts))
        assert enc.encode_ends(data, ends) == enc.encode_chunks_uncached(parts)
    # ConfigError (a ValueError too): a caller's bad argument, in mnemo's one hierarchy.
    with pytest.raises(ConfigError, match="chunk end 3 is out of order"):
        enc.encode_ends(b"abcdef", [4, 3])


# ---- GPT-2's merges on real text ----


def load_gpt2_merges(cs336_dir: Path) -> list[tuple[int, int]]:
    """GPT-2's merges in mnemo's numbering (byte b is id b, merge k is 256 + k)."""
    return load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt").merges


@pytest.fixture(scope="module")
def gpt2_encoder(cs336_dir: Path) -> tuple[Encoder, list[tuple[int, int]]]:
    merges = load_gpt2_merges(cs336_dir)
    return Encoder(merges), merges


def gpt2_chunks(text: str) -> list[bytes]:
    return [c.encode("utf-8") for c in regex.findall(GPT2_PATTERN, text)]


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["english", "multilingual", "code", "chat"])
def test_corpus_equals_twin(
    name: str, corpus_docs: Callable[..., list[str]], gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]
) -> None:
    """Fast encoder == naive twin, and cached == uncached, on a sample of each corpus."""
    enc, merges = gpt2_encoder
    ranks = merge_ranks(merges)
    docs = corpus_docs(name, max_bytes=300_000)
    assert docs
    for doc in docs:
        chunks = gpt2_chunks(doc)
        fast = enc.encode_chunks(chunks)
        assert fast == enc.encode_chunks_uncached(chunks)
        # The same chunks cut out of the whole document (the cache then reads 8-byte words).
        assert enc.encode_ends(doc.encode("utf-8"), list(accumulate(len(c) for c in chunks))) == fast
        assert fast == [t for c in chunks for t in encode_chunk_naive(c, ranks)]


@pytest.mark.corpus
def test_cache_agrees_when_full(
    corpus_docs: Callable[..., list[str]], gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]
) -> None:
    """More distinct short chunks than cache slots: entries are replaced, answers never change."""
    enc, _ = gpt2_encoder
    chunks = [c for doc in corpus_docs("multilingual", max_bytes=1_500_000) for c in gpt2_chunks(doc)]
    short = [c for c in chunks if len(c) <= CACHE_MAX_BYTES]
    assert len(set(short)) > 20_000
    first = enc.encode_chunks(chunks)
    again = enc.encode_chunks(chunks)  # now mostly served by the cache
    assert first == again == enc.encode_chunks_uncached(chunks)


def test_small_cache_agrees_when_full(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """The small cache (chunks of 2-7 bytes with at most 3 ids, read as one 8-byte word, so only
    for chunks cut out of a longer text) with 2x more distinct chunks than its 65,536 slots:
    entries are replaced, chunks of 4+ ids are never cached there, answers never change."""
    enc, merges = gpt2_encoder
    ranks = merge_ranks(merges)
    rng = random.Random(11)
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    distinct = {
        (" " if rng.random() < 0.5 else "") + "".join(rng.choice(letters) for _ in range(rng.randint(1, 6)))
        for _ in range(300_000)
    }
    chunks = [c.encode() for c in sorted(distinct) if 2 <= len(c.encode()) <= 7]
    assert len(chunks) > 2 * 65_536
    rng.shuffle(chunks)
    chunks += chunks[:50_000]  # repeats: hits, or misses where a slot was taken over
    data = b"".join(chunks) + b"."  # the last chunk too has 8 readable bytes
    ends = list(accumulate(len(c) for c in chunks))
    enc.bypass = False  # most of these chunks miss: the bypass would keep them out of the cache
    try:
        first = enc.encode_ends(data, ends)
        again = enc.encode_ends(data, ends)
    finally:
        enc.bypass = True
    assert first == again == enc.encode_chunks_uncached(chunks)
    sample = rng.sample(range(len(chunks)), 2000)
    expected = [encode_chunk_naive(chunks[i], ranks) for i in sample]
    assert any(len(ids) > 3 for ids in expected) and any(len(ids) <= 3 for ids in expected)
    per_chunk = [enc.encode_ends(data[e - len(chunks[i]) : e + 1], [len(chunks[i])]) for i in sample for e in [ends[i]]]
    assert per_chunk == expected



def test_bypass_switches_on_and_off_equal_twin(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """The bypass in one encoder, across segments of text: chunk lengths that keep missing every
    table (base64 of random bytes) skip the lookups, English turns them back on; the ids of
    every segment equal the twin's, and the scores the lookups and the misses leave are those
    of the rule (MISS_STEP, BYPASS_ON, BYPASS_CHUNKS)."""
    merges = gpt2_encoder[1]
    enc = Encoder(merges)
    rng = random.Random(17)
    common = [" the", " of", " and", " to", " in", " that", " is", " was", " for", " with", " as", " his",
              " they", " which", " from", " have", " this", " their", " would", " there", " about",
              " people", " because", " through", " another", " something", " government", " everything"]

    def english(k: int) -> list[bytes]:
        return [w.encode() for w in rng.choices(common, k=k)]

    def noise(k: int) -> list[bytes]:
        chunks = gpt2_chunks(base64.b64encode(rng.randbytes(3 * k)).decode())
        return [c for c in chunks if len(c) <= CACHE_MAX_BYTES]

    def encode(chunks: list[bytes]) -> list[int]:
        data = b"".join(chunks) + b" " * 8
        ends = [*accumulate(len(c) for c in chunks), len(data)]
        ids = enc.encode_ends(data, ends)
        assert ids == encode_chunks_naive([*chunks, b" " * 8], merges)
        return ids

    def bypassed() -> set[int]:
        return {n for n in range(2, CACHE_MAX_BYTES + 1) if enc.misses[n] > BYPASS_ON}

    encode(english(2000))
    assert bypassed() == set()  # every chunk found: the scores stay at 0
    assert [n for n in range(CACHE_MAX_BYTES + 1) if enc.misses[n] != 0] == []
    first = noise(20_000)
    encode(first)
    on = bypassed()
    assert {5, 6, 7} <= on  # no base64 chunk of these lengths is a GPT-2 token
    again = english(40_000)
    encode(again)
    lengths = [len(c) for c in again]
    for n in on:
        if lengths.count(n) > BYPASS_CHUNKS + BYPASS_ON:  # enough to end the skip and find words again
            assert enc.misses[n] <= BYPASS_ON // 2, n
    assert bypassed() & {n for n in on if lengths.count(n) > BYPASS_CHUNKS + BYPASS_ON} == set()
    encode(noise(20_000))
    assert {5, 6, 7} <= bypassed()  # and on again
    enc.clear_cache()
    assert bypassed() == set()
    assert encode(first) == encode_chunks_naive([*first, b" " * 8], merges)
    assert all(enc.misses[n] == 0 for n in range(SMALL_MAX_BYTES + 1, CACHE_MAX_BYTES + 1))  # 8 bytes and more: never


# ---- long chunks stay near-linear ----


def test_long_runs_equal_twin(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    enc, merges = gpt2_encoder
    ranks = merge_ranks(merges)
    rng = random.Random(5)
    cases = [b"a" * 3000, b" " * 2000, b"ab" * 1500, base64.b64encode(rng.randbytes(2000)), b"a" * 2999 + b"b",
             b"aab" * 700, "中".encode() * 900]
    for data in cases:
        expected = encode_chunk_naive(data, ranks)
        assert long_ids(enc, data) == expected
        assert huge_ids(enc, data) == expected
        assert enc.encode_chunks([data]) == expected


def test_huge_runs_overlap_left_to_right() -> None:
    """Merge 0 = (a, a), merge 1 = (256, a), merge 2 = (256, 256).  A run of five a's: merge 0
    left to right gives [256 256 a] (not [a 256 256]); merge 1 then finds (256, a) at the end:
    [256 257].  The bucket path pops occurrences in no particular order, so it must find the
    run's start itself.  Runs split by another byte are runs of their own."""
    enc = Encoder([(97, 97), (256, 97), (256, 256)])
    ranks = merge_ranks([(97, 97), (256, 97), (256, 256)])
    for data in [b"aaaaa", b"aaaa", b"aaaaaabaaa", b"baaaaaaab", b"a" * 20_000 + b"b" + b"a" * 20_001]:
        expected = encode_chunk_naive(data, ranks)
        assert huge_ids(enc, data) == long_ids(enc, data) == expected
    assert huge_ids(enc, b"aaaaa") == [256, 257]
    wide = Encoder([(97, 97), (256, 97), (256, 256)], wide=True)  # uint32 ids out
    assert huge_ids(wide, b"a" * 7_001) == encode_chunk_naive(b"a" * 7_001, ranks)


@st.composite
def run_merges_and_texts(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[bytes]]:
    """Merges over a, b, c and the tokens they make (pairs of a token with itself among them),
    and chunks made of a few runs of those bytes, long enough for the run-length path."""
    merges: list[tuple[int, int]] = []
    for _ in range(draw(st.integers(0, 24))):
        top = 256 + len(merges)
        ids = [97, 98, 99, *range(256, top)]
        a = draw(st.sampled_from(ids))
        b = a if draw(st.booleans()) else draw(st.sampled_from(ids))
        if (a, b) not in merges:
            merges.append((a, b))
    runs = draw(st.lists(st.tuples(st.sampled_from(b"abc"), st.integers(1, 200)), min_size=1, max_size=5))
    text = b"".join(bytes([c]) * k for c, k in runs)
    return merges, [text, text + b"a" * (RUN_BYTES * 6), b"b" * (RUN_BYTES * 5) + text]


@settings(max_examples=300, deadline=None)
@given(run_merges_and_texts())
def test_runs_path_equals_twin(case: tuple[list[tuple[int, int]], list[bytes]]) -> None:
    """The run-length path (Encoder.encode_runs) on chunks of a few runs, against the twin: it
    must take every chunk of at most len // RUN_BYTES runs (unless its work bound stops it,
    which these small merge lists never reach), and give the twin's ids."""
    merges, texts = case
    enc = Encoder(merges)
    ranks = merge_ranks(merges)
    for text in texts:
        n_runs = 1 + sum(text[i] != text[i + 1] for i in range(len(text) - 1))
        got = runs_ids(enc, text)
        if n_runs <= len(text) // RUN_BYTES:
            assert got is not None
        if got is not None:
            assert got == encode_chunk_naive(text, ranks)
        assert enc.encode_chunks([text]) == encode_chunk_naive(text, ranks)


def test_runs_path_worked_example() -> None:
    """Merges 0 = (a, a), 1 = (256, a), 2 = (256, 256), 3 = (b, 256).  'b' + 65 a's is two
    runs: merge 0 halves the run of a's, left to right: [b, 256 x 32, a]; merge 1 takes the
    last 256 with the a: [b, 256 x 31, 257]; merge 2 halves the 31: [b, 258 x 15, 256, 257];
    merge 3 never applies (b is next to 258 now)."""
    merges = [(97, 97), (256, 97), (256, 256), (98, 256)]
    enc = Encoder(merges)
    data = b"b" + b"a" * 65
    assert runs_ids(enc, data) == [98] + [258] * 15 + [256, 257]
    assert encode_chunk_naive(data, merge_ranks(merges)) == [98] + [258] * 15 + [256, 257]


def test_runs_path_thresholds(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """The run-length path takes a chunk of at most len // RUN_BYTES runs and declines one of
    more, writing nothing; encode_span sends it chunks from LONG_CHUNK bytes on.  Either way
    the ids are the twin's."""
    enc, merges = gpt2_encoder
    ranks = merge_ranks(merges)
    n = LONG_CHUNK  # 4 runs allowed at 64 bytes
    three = b"-" * (n - 20) + b"=" * 10 + b" " * 10
    four = b"-" * (n - 3) + b"=" + b" " + b"-"
    five = b"-" * (n - 4) + b"=" + b" " + b"-" + b"="
    assert runs_ids(enc, three) == encode_chunk_naive(three, ranks)
    assert runs_ids(enc, four) == encode_chunk_naive(four, ranks)  # 64 // 16 = 4 runs: the limit
    assert runs_ids(enc, five) is None
    for data in (three, four, five, b"-" * (n - 1), b"-" * n, b" " * 5_000_001, b"\xe4" * 70_000):
        assert enc.encode_chunks([data]) == encode_chunk_naive(data, ranks)
    wide = Encoder(merges, wide=True)  # uint32 ids out
    assert runs_ids(wide, b"=" * 1000) == encode_chunk_naive(b"=" * 1000, ranks)
    # runs are scanned eight bytes at a time: bytes with the top bit set (a negative word),
    # and runs ending at every offset of a word
    for c in (0x00, 0x7F, 0x80, 0xE4, 0xFF):
        for k in range(90, 99):
            data = bytes([c]) * k + b"-" * 50 + bytes([c]) * (k // 3)
            assert runs_ids(enc, data) == encode_chunk_naive(data, ranks)


def pieces_ids(enc: Encoder, data: bytes) -> list[int] | None:
    """The ids by the safe-places path, or None when the chunk has no safe place (nothing written)."""
    dst = BytesWriter()
    if not enc.encode_pieces(data, 0, len(data), dst):
        assert len(dst) == 0
        return None
    return ids_of(dst.getvalue(), enc.wide)


def test_pieces_worked_example() -> None:
    """Merges 0 = (b, c) -> 256 "bc", 1 = (a, 256) -> 257 "abc".  Tokens hold b|c, and a|b
    (where "a" meets "bc": the first byte of the right part, not its id), nowhere c|a or
    c|b.  So "abcabc" is safe between c and a: pieces "abc" "abc" -> [257, 257]; "abcb" is
    safe between c and b: pieces "abc" "b"."""
    merges = [(98, 99), (97, 256)]
    enc = Encoder(merges)
    assert pieces_ids(enc, b"abcabc") == [257, 257]
    assert pieces_ids(enc, b"abcb") == [257, 98]
    assert pieces_ids(enc, b"abc") is None  # a|b and b|c are both held by "abc"
    assert pieces_ids(enc, b"aaa") == [97, 97, 97]  # a|a: no token holds it


def test_pieces_equal_twin(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """Long chunks of scripts written without spaces (CJK, Japanese, Thai, Korean) and of
    random bytes, cut at their safe places, against the twin; and through encode_span."""
    enc, merges = gpt2_encoder
    ranks = merge_ranks(merges)
    rng = random.Random(21)
    texts = ["中" * 400, "日本語のテキストを分割する" * 30, "ภาษาไทยไม่มีช่องว่าง" * 20, "한국어텍스트" * 40]
    cases = [t.encode() for t in texts] + [rng.randbytes(500), bytes(rng.choice(b"ab\xe4\xb8\xad") for _ in range(3000))]
    for data in cases:
        expected = encode_chunk_naive(data, ranks)
        got = pieces_ids(enc, data)
        assert got is None or got == expected
        assert long_ids(enc, data) == huge_ids(enc, data) == enc.encode_chunks([data]) == expected


def test_huge_random_chunks_equal_twin(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """Chunks of a few bytes of prose, runs and marks, each with the full GPT-2 merge list (many
    buckets, runs next to other tokens, runs at either end)."""
    enc, merges = gpt2_encoder
    ranks = merge_ranks(merges)
    rng = random.Random(9)
    for _ in range(20):
        data = bytes(rng.choice(b"ab c-^\n") for _ in range(rng.randint(1, 3000)))
        assert huge_ids(enc, data) == encode_chunk_naive(data, ranks)


@pytest.mark.parametrize("unit", [b"a", b" ", b"-", "中".encode(), b"ab"])
def test_worst_case_chunks_are_linear(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]], unit: bytes) -> None:
    """One chunk of 4 MB of one character: at least 4 MB/s and at most 30x the time of 0.4 MB
    (linear is 10x, quadratic 100x), in process CPU time, best of 3.  The heap path ran at
    ~1.7 MB/s on such chunks (its 80 MB heap walked at random: 11 s for 16 MB of spaces); the
    bucket path at 12-20 MB/s on a loaded machine (bench/compare/worst_case_vs_peers.py).  Runs of one
    byte now take the run-length path (encode_runs); "ab" repeated has runs of one byte and,
    with GPT-2's merges, no safe place (a token holds a|b, one b|a): it takes the bucket path.
    The bounds leave room for a machine shared with other jobs, where even CPU time suffers."""
    enc, merges = gpt2_encoder
    big = unit * (4_000_000 // len(unit))
    small = big[: len(big) // 10]

    def best(data: bytes) -> float:
        times = []
        for _ in range(3):
            t0 = time.process_time()
            enc.encode_chunks([data])
            times.append(time.process_time() - t0)
        return min(times)

    t_small, t_big = best(small), best(big)
    assert len(big) / t_big > 4e6, f"{len(big) / t_big / 1e6:.1f} MB/s"
    assert t_big < 30 * max(t_small, 0.005), (t_small, t_big)
    vocab = vocab_of(merges)
    assert b"".join(vocab[i] for i in enc.encode_chunks([big])) == big


@pytest.mark.slow
def test_megabyte_chunks_are_not_quadratic(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """1 MB of one letter and a 1 MB base64 blob, each as a single chunk.  A quadratic rescan
    would take minutes; the heap path takes about a second even on a busy machine."""
    enc, merges = gpt2_encoder
    blob = base64.b64encode(random.Random(1).randbytes(750_000))
    for data in (b"a" * 1_000_000, blob):
        small = data[:100_000]
        t0 = time.perf_counter()
        ids_small = enc.encode_chunks([small])
        t_small = time.perf_counter() - t0
        t0 = time.perf_counter()
        ids = enc.encode_chunks([data])
        t_big = time.perf_counter() - t0
        assert t_big < 60, f"{len(data)} bytes took {t_big:.1f} s"
        # 10x the input: near-linear means far below the 100x of a quadratic algorithm.
        assert t_big < 40 * max(t_small, 0.01), (t_small, t_big)
        vocab = vocab_of(merges)
        assert b"".join(vocab[i] for i in ids) == data
        assert len(ids_small) <= len(ids)


def vocab_of(merges: list[tuple[int, int]]) -> list[bytes]:
    vocab = [bytes([i]) for i in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    return vocab


def test_gpt2_merges_fixture_matches_vocab(cs336_dir: Path) -> None:
    """GPT-2's vocab.json gives merge k the id 256 + k (so only the 256 byte ids need a remap)."""
    vocab = json.loads((cs336_dir / "gpt2_vocab.json").read_text(encoding="utf-8"))
    merges = load_gpt2_merges(cs336_dir)
    alphabet = bytes_to_unicode()
    to_string = {i: alphabet[i] for i in range(256)}
    tokens = vocab_of(merges)
    for k in (0, 1, 1000, len(merges) - 1):
        text = "".join(alphabet[x] for x in tokens[256 + k])
        assert vocab[text] == 256 + k
    assert sorted(vocab[to_string[i]] for i in range(256)) == list(range(256))
    assert [vocab[to_string[i]] for i in range(256)] != list(range(256))  # a permutation, not identity


@pytest.mark.parametrize("wide", [False, True])
def test_lists_of_splits_packed_ids(wide: bool) -> None:
    """encode_batch's unpacking: one list per length, the ids in order; ids the pre-made table
    does not hold (a special token's public id) come back as themselves."""
    import numpy as np

    ints: list[object] = list(range(300))
    ids = [0, 1, 299, 300, 65_535, 7, 256] + ([70_000, 2**31 - 1] if wide else [])
    lengths = [2, 0, 3, len(ids) - 5, 0]
    packed = np.asarray(ids, dtype="<u4" if wide else "<u2").tobytes()
    out: list[list[int]] = [[42]]
    lists_of(ints, packed, wide, np.asarray(lengths, dtype="<i8").tobytes(), out)
    starts = np.cumsum([0, *lengths]).tolist()
    assert out == [[42]] + [ids[a:b] for a, b in zip(starts, starts[1:])]
    assert out[1][0] is ints[0] and out[3][0] is ints[299]
    with pytest.raises(ValueError, match="a length of 99 ids at offset 8"):
        lists_of(ints, packed, wide, np.asarray([1, 99], dtype="<i8").tobytes(), [])


@pytest.mark.parametrize("wide", [False, True])
def test_set_public_lists_the_tables_objects(wide: bool) -> None:
    """An imported vocabulary's public ids come out of ids_list in one pass: every id is the
    table's own int object (a renumbering that is no identity, with ids of 65,536 and more when
    wide, where the pre-made ints stop)."""
    merges = [(97, 98), (256, 99), (32, 97), (258, 256)]
    n = 256 + len(merges)
    base = 70_000 if wide else 1_000
    table: list[object] = [base + (i * 7919) % n for i in range(n)]
    enc = Encoder(merges, wide=wide)
    chunks = [b"abc", b" abc", b" ab", b"a", b"\xff", b" abcab"]
    internal = encode_chunks_naive(chunks, merges)
    assert enc.encode_chunks(chunks) == internal
    enc.set_public(table)
    got = enc.encode_chunks(chunks)
    assert got == [table[i] for i in internal]
    assert all(x is table[i] for x, i in zip(got, internal))
    twin = list(internal)  # the two-pass form it replaced (mnemo/idmap.py) gives the same ids
    remap_in_place(twin, table)
    assert got == twin


def test_word_table_keeps_only_tokens_their_bytes_encode_to() -> None:
    """Two merges spell 'abc': 258 = a + bc and 259 = ab + c.  BPE of 'abc' merges 'ab' first
    (merge 0), then ab + c: 259.  The word table must not answer 258 for 'abc' (a table of every
    token's bytes would, 258 coming first); every path agrees with the naive twin."""
    merges = [(97, 98), (98, 99), (97, 257), (256, 99)]
    enc = Encoder(merges)
    assert encode_chunks_naive([b"abc"], merges) == [259]
    for data in [b"abc", b"ab", b"bc", b"abcabc", b"xabc", b"  abc"]:
        for _ in range(2):  # cold caches, then warm
            assert enc.encode_chunks([data]) == encode_chunks_naive([data], merges)
            # inside a longer text: the table is read with one 8-byte load there
            assert enc.encode_ends(data + b" " * 16, [len(data), len(data) + 16]) == encode_chunks_naive(
                [data, b" " * 16], merges
            )


def test_word_table_every_short_token(cs336_dir: Path) -> None:
    """GPT-2's merges: each token of 2 to 7 bytes as a chunk, through the word table, gives what
    the naive twin gives (itself, or its BPE when the token is unreachable)."""
    merges = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt").merges
    spelled = [bytes([b]) for b in range(256)]
    for a, b in merges:
        spelled.append(spelled[a] + spelled[b])
    short = [t for t in spelled[256:] if 2 <= len(t) <= 7]
    assert len(short) > 10_000
    padded = b"".join(short) + b" " * 8
    ends = [*accumulate(len(t) for t in short), len(padded)]
    assert Encoder(merges).encode_ends(padded, ends) == encode_chunks_naive([*short, b" " * 8], merges)


def spells_naive(merges: list[tuple[int, int]]) -> list[bool]:
    """For each merge: whether the naive BPE of its token's bytes gives that token alone (only
    for tokens of up to LONG_WORD_MAX bytes, the encoder's tables' answers; False beyond)."""
    ranks = merge_ranks(merges)
    spelled = vocab_of(merges)
    return [
        len(spelled[256 + k]) <= LONG_WORD_MAX and bpe_naive(list(spelled[256 + k]), ranks) == [256 + k]
        for k in range(len(merges))
    ]


def table_bits(enc: Encoder) -> list[bool]:
    """export_tables' bits, one a merge."""
    tables = export_tables(enc)
    return [bool(tables[k >> 3] >> (k & 7) & 1) for k in range(enc.n_merges)]


def test_spells_by_parts_worked_examples() -> None:
    """Encoder.spells_by_parts, case by case.  x y z: with merges yz (0), xy (1), xy+z (2), BPE
    of "xyz" glues yz first and ends at [x, yz]: token 258 is not its bytes' BPE (the seam pair
    (y, z) is glued, number 0, before x y is, number 1).  With xy first it is.  a a a: merges aa
    (0), a+aa (1): BPE of "aaa" glues the leftmost a a, the pair across the seam, and ends at
    [aa, a] (a tie with the glue that makes the right part aa, which lies to the right of the
    seam); with aa+a instead, the tie goes to the glue inside the left part, and it is."""
    x, y, z, a = b"xyza"
    assert table_bits(Encoder([(y, z), (x, y), (257, z)])) == [True, True, False]
    assert table_bits(Encoder([(x, y), (y, z), (256, z)])) == [True, True, True]
    assert table_bits(Encoder([(a, a), (a, 256)])) == [True, False]
    assert table_bits(Encoder([(a, a), (256, a)])) == [True, True]
    # aa+aa (number 1): BPE of "aaaa" glues both a a (number 0) left to right, then aa aa
    assert table_bits(Encoder([(a, a), (256, 256)])) == [True, True]
    # a part that does not spell itself: 259 = 258 + z, 258 = xy + z (not its bytes' BPE)
    assert table_bits(Encoder([(y, z), (x, y), (257, z), (258, z)])) == [True, True, False, False]
    # x + yz is what BPE makes of "xyz" when yz comes first
    assert table_bits(Encoder([(y, z), (x, y), (x, 256)])) == [True, True, True]
    for merges in ([(y, z), (x, y), (257, z)], [(a, a), (a, 256)], [(y, z), (x, y), (257, z), (258, z)]):
        assert table_bits(Encoder(merges)) == spells_naive(merges)


def random_monotone_merges(rng: random.Random) -> list[tuple[int, int]]:
    """Merges over one to four letters, each of two earlier ids (no pair twice): many tokens
    share substrings, and some spell the same bytes."""
    letters = list(b"abcd"[: rng.randint(1, 4)])
    merges: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for _ in range(rng.randint(1, 120)):
        ids = letters + list(range(256, 256 + len(merges)))
        pair = (rng.choice(ids), rng.choice(ids))
        if pair not in seen:
            seen.add(pair)
            merges.append(pair)
    return merges


def test_spells_by_parts_equals_bpe_on_random_merges() -> None:
    """The encoder's answer, from the parts' answers (spells_by_parts), is the naive BPE's for
    every token of random monotone merges."""
    rng = random.Random(27)
    itself = 0
    for _ in range(1500):
        merges = random_monotone_merges(rng)
        want = spells_naive(merges)
        assert table_bits(Encoder(merges)) == want, merges
        itself += sum(want)
    assert itself > 10_000


def test_spells_by_parts_on_real_vocabularies(cs336_dir: Path, tiktoken_ranks: Callable[[str], dict[bytes, int]]) -> None:
    """GPT-2's merges (some tokens are not their bytes' BPE): the naive BPE's answer for every
    token; cl100k_base's: the rank path's (tables_from_ranks, shown another way)."""
    merges = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt").merges
    want = spells_naive(merges)
    assert table_bits(Encoder(merges)) == want and not all(want)
    ranks = tiktoken_ranks("cl100k_base")
    vocab = merges_of_ranks(sorted(ranks, key=ranks.__getitem__))
    assert vocab is not None and vocab.proper
    assert export_tables(Encoder(vocab.merges, True)) == export_tables(Encoder(vocab.merges, True, tables=vocab.tables))


def test_long_word_table_keeps_only_tokens_their_bytes_encode_to() -> None:
    """Two merges spell 'abcdefgh': 264 = (a + bc) + defgh, which BPE never makes (ab comes
    first), and 265 = (ab + c) + defgh, which it does.  The long-word table (chunks of 8 to 15
    bytes) must answer 265, though 264 is the lower id; every path agrees with the naive twin,
    at the end of a text (no 16-byte load there) and inside one."""
    a, b, c, d, e, f, g, h = b"abcdefgh"
    merges = [(a, b), (b, c), (a, 257), (256, c), (d, e), (f, g), (261, h), (260, 262), (258, 263), (259, 263)]
    enc = Encoder(merges)
    assert encode_chunks_naive([b"abcdefgh"], merges) == [265]
    for data in [b"abcdefgh", b"abcdefg", b"abcdefghabcdefg", b"xabcdefgh", b"defghdefgh", b"abcdefgh" * 2]:
        for _ in range(2):  # cold caches, then warm
            assert enc.encode_chunks([data]) == encode_chunks_naive([data], merges)
            assert enc.encode_ends(data + b" " * 16, [len(data), len(data) + 16]) == encode_chunks_naive(
                [data, b" " * 16], merges
            )


def test_long_word_table_every_long_token(cs336_dir: Path) -> None:
    """GPT-2's merges: each token of 8 to 15 bytes as a chunk, through the long-word table,
    gives what the naive twin gives; so does each with its last byte cut (mostly not a token)."""
    merges = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt").merges
    spelled = [bytes([b]) for b in range(256)]
    for a, b in merges:
        spelled.append(spelled[a] + spelled[b])
    long = [t for t in spelled[256:] if 8 <= len(t) <= 15]
    assert len(long) > 5_000
    chunks = [*long, *(t[:-1] for t in long)]
    padded = b"".join(chunks) + b" " * 16
    ends = [*accumulate(len(t) for t in chunks), len(padded)]
    assert Encoder(merges).encode_ends(padded, ends) == encode_chunks_naive([*chunks, b" " * 16], merges)


def test_word_table_cache_entries_fill_and_clear(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """Chunks of 2-7 bytes that no word table holds are cached in the word table's empty slots
    while it is under 3/4 full, then in the small cache.  More distinct such chunks than that
    room: it fills, answers never change, the words stay found (their probe chains hold no cache
    entry added before them), and clear_cache empties the room again."""
    merges = gpt2_encoder[1][:2000]
    enc = Encoder(merges)
    enc.bypass = False  # most of these chunks miss: the bypass would skip their inserts
    ranks = merge_ranks(merges)
    room = enc.words_room
    assert room > 0
    rng = random.Random(5)
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    distinct = {" " + "".join(rng.choice(letters) for _ in range(rng.randint(3, 6))) for _ in range(4 * room)}
    spelled = [bytes([b]) for b in range(256)]
    for a, b in merges:
        spelled.append(spelled[a] + spelled[b])
    words = [t for t in spelled[256:] if 2 <= len(t) <= 7]
    chunks = [c.encode() for c in sorted(distinct)] + words
    rng.shuffle(chunks)
    data = b"".join(chunks) + b" " * 8
    ends = [*accumulate(len(c) for c in chunks), len(data)]
    expected = [i for c in [*chunks, b" " * 8] for i in encode_chunk_naive(c, ranks)]
    for _ in range(2):
        assert enc.encode_ends(data, ends) == expected  # cold: fills the room
        assert enc.words_room == 0
        assert enc.encode_ends(data, ends) == expected  # warm: found in the word table or the small cache
        enc.clear_cache()
        assert enc.words_room == room


def long_word_text(
    merges: list[tuple[int, int]], rng: random.Random, tries: int
) -> tuple[list[bytes], bytes, list[int], list[int]]:
    """(the tokens of 8-15 bytes, a text, its chunk ends, the twin's ids): the tokens and the
    distinct chunks of two tokens of 4-7 letters (mostly 2 or 3 ids) made in `tries` draws,
    shuffled, then 16 spaces (the long-word table is read 16 bytes at a time)."""
    ranks = merge_ranks(merges)
    spelled = [bytes([b]) for b in range(256)]
    for a, b in merges:
        spelled.append(spelled[a] + spelled[b])
    words = [t for t in spelled[256:] if 8 <= len(t) <= 15]
    parts = [t for t in spelled[256:] if 4 <= len(t) <= 7 and t.isalpha()]
    assert words and parts
    distinct = {rng.choice(parts) + rng.choice(parts) for _ in range(tries)}
    chunks = sorted(distinct) + words
    rng.shuffle(chunks)
    data = b"".join(chunks) + b" " * 16
    ends = [*accumulate(len(c) for c in chunks), len(data)]
    expected = [i for c in [*chunks, b" " * 16] for i in encode_chunk_naive(c, ranks)]
    return words, data, ends, expected


def test_long_word_table_cache_entries_fill_and_clear(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """As the word table, for chunks of 8-15 bytes: those that are no long word are cached in
    the long-word table's empty slots (at most 3 ids) while it is under 3/4 full, then in the
    main cache; answers never change, long words stay found, clear_cache empties the room."""
    merges = gpt2_encoder[1][:4000]
    enc = Encoder(merges)
    enc.bypass = False  # most of these chunks miss: the bypass would skip their inserts
    enc.lwords_max = 4 * (enc.lwords_mask + 1)  # no growth (test_long_word_table_grows)
    room = enc.lwords_room
    assert room > 0
    _, data, ends, expected = long_word_text(merges, random.Random(6), 6 * room)
    for _ in range(2):
        assert enc.encode_ends(data, ends) == expected
        assert enc.lwords_room == 0
        assert enc.encode_ends(data, ends) == expected
        enc.clear_cache()
        assert enc.lwords_room == room


def test_long_word_table_grows(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """When the long-word table's room for cached chunks runs out it doubles (grow_lwords),
    while it stays within lwords_max words: here twice, from 1,024 slots to 4,096, then it is
    full and the chunk cache takes the rest.  Every pass equals the twin, the long words and the
    cached chunks are found after each move (the warm pass takes no room), and clear_cache
    gives back the grown table's room, its size kept."""
    merges = gpt2_encoder[1][:4000]
    enc = Encoder(merges)
    enc.bypass = False
    ranks = merge_ranks(merges)
    size = enc.lwords_mask + 1
    assert enc.lwords_max == 4 * 4 * size  # LWORDS_GROWTH times its first size: two doublings
    room, limit = enc.lwords_room, enc.lwords_limit
    assert room == limit > 0
    # more chunks of 8-14 bytes than the room of the table at 4x its size
    words, data, ends, expected = long_word_text(merges, random.Random(31), 8 * size)
    assert len(ends) - 1 - len(words) > 3 * size  # the distinct chunks (ends: theirs, the words', the spaces')
    assert enc.encode_ends(data, ends) == expected  # cold: fills, grows twice, fills again
    assert enc.lwords_mask + 1 == 4 * size
    assert enc.lwords_room == 0 and enc.lwords_limit == limit + (3 * 4 * size) // 4 - (3 * size) // 4
    cached = enc.cc_count
    assert cached > 0  # what the full table could not take
    assert enc.encode_ends(data, ends) == expected  # warm: every chunk found where it was put
    assert enc.lwords_room == 0 and enc.cc_count == cached
    enc.clear_cache()
    assert enc.lwords_room == enc.lwords_limit and enc.lwords_mask + 1 == 4 * size
    assert enc.encode_ends(data, ends) == expected
    assert enc.encode_chunks(words) == [i for w in words for i in encode_chunk_naive(w, ranks)]


def test_long_word_table_grows_under_a_piece(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """A chunk of 8-15 bytes encoded by its pieces (pieces_bpe) whose piece of 8 bytes or more
    takes the table's last room: the table grows under the chunk's own insert, which then
    finds its slot in the grown table (not in the old one it had probed).  The chunk's ids equal
    the twin's, and the next lookup finds it without taking room."""
    merges = gpt2_encoder[1]
    ranks = merge_ranks(merges)
    probe = Encoder(merges)
    probe.bypass = False
    rng = random.Random(32)
    found = None
    pad = b" " * 16  # the table is read 16 bytes at a time from a chunk's start
    for _ in range(2000):
        # a CJK character, then letters no token crosses into from its last byte: a safe place
        c = rng.choice(["中", "文", "語"]).encode() + bytes(rng.choice(b"xqzjkvw") for _ in range(rng.randint(8, 12)))
        probe.clear_cache()
        before = probe.lwords_room
        probe.encode_ends(c + pad, [len(c), len(c) + len(pad)])
        if before - probe.lwords_room == 2:  # a piece and the chunk both went into the table
            found = c
            break
    assert found is not None
    enc = Encoder(merges)
    enc.bypass = False
    size = enc.lwords_mask + 1
    enc.lwords_room = 1  # the piece takes the last room
    data, ends = found + pad, [len(found), len(found) + len(pad)]
    want = encode_chunk_naive(found, ranks) + encode_chunk_naive(pad, ranks)
    assert enc.encode_ends(data, ends) == want
    assert enc.lwords_mask + 1 == 2 * size
    room = enc.lwords_room
    assert room == (3 * 2 * size) // 4 - (3 * size) // 4 - 1  # the chunk took one of the new slots
    assert enc.encode_ends(data, ends) == want
    assert enc.lwords_room == room


def test_word_tables_keep_chunks_of_many_ids(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """Chunks of 2-7 and 8-15 bytes of more than 3 ids (bytes no merge joins) are kept in the word
    tables' empty slots with their ids in the id pool: the second pass finds every one (no room
    taken, no id added to the pool), both passes equal the twin, and clear_cache empties the pool."""
    merges = gpt2_encoder[1][:3000]
    enc = Encoder(merges)
    enc.bypass = False
    ranks = merge_ranks(merges)
    rng = random.Random(21)
    chunks = list({bytes(rng.choice(b"\x01\x02\x03\x04\x05\x06\x07\x08q") for _ in range(rng.randint(4, 15)))
                   for _ in range(3000)})
    data = b"".join(chunks) + b" " * 16
    ends = [*accumulate(len(c) for c in chunks), len(data)]
    expected = [i for c in [*chunks, b" " * 16] for i in encode_chunk_naive(c, ranks)]
    assert sum(len(encode_chunk_naive(c, ranks)) > 3 for c in chunks) > 2000
    assert enc.encode_ends(data, ends) == expected
    used, room, lroom = enc.pool_n, enc.words_room, enc.lwords_room
    assert used > 2000 * 4 and room < enc.words_limit and lroom < enc.lwords_limit
    assert enc.encode_ends(data, ends) == expected
    assert (enc.pool_n, enc.words_room, enc.lwords_room) == (used, room, lroom)
    enc.clear_cache()
    assert enc.pool_n == 0 and enc.words_room == enc.words_limit
    assert enc.encode_ends(data, ends) == expected


@pytest.mark.parametrize("wide", [False, True])
def test_chunk_cache_grows_empties_and_agrees(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]], wide: bool) -> None:
    """The chunk cache (chunks of 16 to CACHE_MAX_BYTES bytes, any number of ids; longer ones are
    not kept) with its bounds made small: more distinct chunks than its index and its arena hold,
    so it doubles its index, then empties and fills again; chunks of LONG_CHUNK bytes and more
    (their ids read back from what encode_long wrote, some through encode_pieces, whose pieces
    come back to the cache) too.  Every pass equals the twin, cold and warm, 16- and 32-bit ids."""
    merges = gpt2_encoder[1][:5000]
    enc = Encoder(merges, wide=wide)
    enc.cc_max_slots = 8192
    enc.cc_max_words = 150_000
    ranks = merge_ranks(merges)
    rng = random.Random(23)
    words = [" the", " of", "and", "ing", "tion", "-", "中文", "日本", " a", "\u0e01\u0e32"]
    chunks = []
    for _ in range(7000):
        length = rng.choice([16, 17, 24, 40, 63, 64, 65, 100, 200, CACHE_MAX_BYTES, CACHE_MAX_BYTES + 1])
        text = "".join(rng.choice(words) for _ in range(length)).encode()
        chunks.append(text[:length])
    chunks += chunks[:2000]  # repeats
    data = b"".join(chunks) + b" " * 16
    ends = [*accumulate(len(c) for c in chunks), len(data)]
    expected = [i for c in [*chunks, b" " * 16] for i in encode_chunk_naive(c, ranks)]
    sizes = set()
    for _ in range(2):
        got = enc.encode_ends(data, ends)
        sizes.add(enc.cc_mask + 1)
        assert got == expected
        assert len(enc.cc_arena) <= enc.cc_max_words and (enc.cc_count + 1) * 4 <= (enc.cc_mask + 1) * 3 + 4
    assert len(set(chunks)) > 6000 and enc.cc_count < 6000  # more than it holds: it was emptied
    assert sizes == {8192}  # grown from CC_FIRST_SLOTS to its bound
    enc.clear_cache()
    assert enc.cc_count == 0 and len(enc.cc_arena) == 0
    assert enc.encode_chunks(chunks[:300]) == [i for c in chunks[:300] for i in encode_chunk_naive(c, ranks)]


def test_merges_out_of_order_and_whole_tokens() -> None:
    """Encoder(merges, whole=...): merge 0 = (257, 257) uses merge 1 = (97, 98), as a vocabulary
    from ranks may (tests/test_rank_semantics.py has tiktoken's rule at length); the whole token
    b"xyz" is id 258, for a chunk of exactly its bytes.  Bad parts and whole tokens are errors."""
    enc = Encoder([(257, 257), (97, 98)], whole=[b"xyz"])
    assert not enc.monotone and list(enc.high) == [0, 1]
    assert enc.encode_chunks([b"ababab", b"xyz", b"xyzxyz", b"ab"]) == [256, 257, 258, *b"xyzxyz", 257]
    assert enc.encode_chunks_uncached([b"xyz"]) == [258] and long_ids(enc, b"xyz") == list(b"xyz")
    assert Encoder([(97, 98)], wide=True, whole=[b"xyz"]).encode_chunks([b"xyz"]) == [257]
    with pytest.raises(ConfigError, match=r"merge 0 is \(97, 300\): both parts must be ids in 0\.\.256"):
        Encoder([(97, 300)])
    with pytest.raises(ConfigError, match=r"is made of itself, through the parts of later merges"):
        Encoder([(257, 97), (256, 98)])
    with pytest.raises(ConfigError, match=r"whole token 0 has 1 bytes: a token no merge makes has 2 to"):
        Encoder([], whole=[b"x"])


def pieces_bpe_ids(enc: Encoder, data: bytes) -> list[int] | None:
    """The ids by pieces_bpe, or None when it declines the chunk (too short, or no safe place:
    nothing written).  The ids it copies into enc.tk for the caches are those it wrote."""
    dst = BytesWriter()
    count = enc.pieces_bpe(data, 0, len(data), dst)
    if count < 0:
        assert count == -1 and len(dst) == 0
        return None
    got = ids_of(dst.getvalue(), enc.wide)
    assert list(enc.tk)[:count] == got
    return got


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("lwords_room", [None, 0])
def test_medium_chunks_by_their_pieces_equal_twin(
    gpt2_encoder: tuple[Encoder, list[tuple[int, int]]], wide: bool, lwords_room: int | None
) -> None:
    """Chunks of 8 to LONG_CHUNK - 1 bytes that miss every table and cache are encoded by their
    pieces between safe places when they have some (pieces_bpe), and kept: in the long-word
    table while it has room (8-15 bytes), else in the chunk cache.  Text of scripts written
    without spaces, cut at any byte: the path is taken for most chunks, each one's ids equal
    the twin's, and so do a cold pass and a warm one (the ids read back from the pieces into
    the caches).  lwords_room 0: no room, the chunk cache alone."""
    merges = gpt2_encoder[1]
    enc = Encoder(merges, wide=wide)
    enc.bypass = False
    ranks = merge_ranks(merges)
    rng = random.Random(27)
    alphabet = ["中", "文", "日本", "語", "の", "ภา", "ษา", "한국", " the", "ing", "é", "ß", "-", "Д", "да"]
    distinct: set[bytes] = set()
    while len(distinct) < 3000:
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(3, 25))).encode()
        if len(text) >= 8:
            distinct.add(text[: rng.randint(8, min(len(text), LONG_CHUNK - 1))])
    chunks = sorted(distinct)
    rng.shuffle(chunks)
    taken = 0
    for c in chunks[:1000]:
        got = pieces_bpe_ids(enc, c)
        if got is not None:
            taken += 1
            assert got == encode_chunk_naive(c, ranks)
    assert taken > 500
    assert pieces_bpe_ids(enc, "中文日".encode()[:7]) is None  # shorter than LONG_WORD_MIN
    enc.clear_cache()
    if lwords_room is not None:
        enc.lwords_room = lwords_room
    room = enc.lwords_room
    data = b"".join(chunks) + b" " * 16
    ends = [*accumulate(len(c) for c in chunks), len(data)]
    expected = [i for c in [*chunks, b" " * 16] for i in encode_chunk_naive(c, ranks)]
    assert enc.encode_ends(data, ends) == expected  # cold
    cached = enc.cc_count
    assert enc.encode_ends(data, ends) == expected  # warm
    assert enc.cc_count == cached > 0  # every chunk was kept the first time
    assert (enc.lwords_room < room) if room > 0 else enc.lwords_room == 0


def test_pieces_do_not_count_toward_the_bypass(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """The pieces of pieces_bpe are looked up without raising the bypass's miss scores: a cold
    pass over chunks of 8 bytes or more (which never count themselves) made of rare CJK
    characters, whose 3-byte pieces are no token and miss, leaves every score at 0 and the
    bypass on; before, their misses switched the lookups of all 3-byte chunks off for a while."""
    merges = gpt2_encoder[1]
    enc = Encoder(merges)
    ranks = merge_ranks(merges)
    rng = random.Random(28)
    chunks = ["".join(chr(rng.randint(0x5000, 0x9F00)) for _ in range(rng.randint(3, 20))).encode() for _ in range(3000)]
    assert sum(pieces_bpe_ids(enc, c) is not None for c in chunks[:200]) > 100
    enc.clear_cache()
    assert enc.bypass
    assert enc.encode_chunks(chunks) == [i for c in chunks for i in encode_chunk_naive(c, ranks)]
    assert enc.bypass and list(enc.misses) == [0] * len(enc.misses)


def test_pieces_bpe_worked_example() -> None:
    """pieces_bpe with the merges of test_pieces_worked_example ((b, c) -> 256, (a, 256) -> 257):
    "abcabcabc" has safe places (c|a) but only ASCII bytes, and is declined (-1, nothing
    written: ASCII chunks go straight to short_bpe); "abcabc中" (9 bytes, some >= 0x80) is cut
    into "abc" "abc" and the three bytes of 中, each its own piece (no token holds any pair of
    them): [257, 257, 0xE4, 0xB8, 0xAD]; "abc中" (6 bytes) is shorter than LONG_WORD_MIN."""
    enc = Encoder([(98, 99), (97, 256)])
    assert pieces_bpe_ids(enc, b"abcabcabc") is None
    assert pieces_bpe_ids(enc, "abcabc中".encode()) == [257, 257, 0xE4, 0xB8, 0xAD]
    assert pieces_bpe_ids(enc, "abc中".encode()) is None
    assert enc.encode_chunks([b"abcabcabc", "abcabc中".encode()]) == [257, 257, 257, 257, 257, 0xE4, 0xB8, 0xAD]


def test_pieces_switch_off_where_few_chunks_have_safe_places() -> None:
    """pieces_bpe's score (PIECES_*).  Merges (C3, A9) -> 256 "é", (256, 256) -> 257 "éé",
    (b, c) -> 258, (a, 258) -> 259 "abc": "éééé" (8 bytes) has no safe place (tokens hold C3|A9
    and, where "é" meets "é", A9|C3), and each such chunk adds 1; "abcabc中" is cut (c|a and
    every pair of 中's bytes are safe) into [259, 259, E4, B8, AD] and takes PIECES_GAIN off.
    Past PIECES_OFF the next PIECES_SKIP chunks skip the search (declined at once, even one
    with safe places), then the score starts again at PIECES_OFF // 2.  Ids equal the twin's."""
    merges = [(0xC3, 0xA9), (256, 256), (98, 99), (97, 258)]
    enc = Encoder(merges)
    fail, cut = "é".encode() * 4, "abcabc中".encode()
    pieces = [259, 259, 0xE4, 0xB8, 0xAD]
    for k in range(PIECES_OFF):
        assert pieces_bpe_ids(enc, fail) is None and enc.pieces_score == k + 1
    assert pieces_bpe_ids(enc, cut) == pieces and enc.pieces_score == PIECES_OFF - PIECES_GAIN
    for _ in range(PIECES_GAIN):
        assert pieces_bpe_ids(enc, fail) is None
    assert enc.pieces_score == PIECES_OFF
    assert pieces_bpe_ids(enc, fail) is None and enc.pieces_score == PIECES_OFF + PIECES_SKIP
    for _ in range(PIECES_SKIP):
        assert pieces_bpe_ids(enc, cut) is None
    assert enc.pieces_score == PIECES_OFF // 2
    assert pieces_bpe_ids(enc, cut) == pieces
    enc.clear_cache()
    assert enc.pieces_score == 0
    ranks = merge_ranks(merges)
    chunks = [fail + bytes([i, 0xC3]) for i in range(200)] + [cut + bytes([i % 256, i // 256]) for i in range(1500)]
    assert enc.encode_chunks(chunks) == [i for c in chunks for i in encode_chunk_naive(c, ranks)]


def test_tables_start_on_a_cache_line(gpt2_encoder: tuple[Encoder, list[tuple[int, int]]]) -> None:
    """The word tables, the front cache and the small cache start at a cache line inside their
    vecs (encode_chunk.LINE), so that no entry straddles two lines; the words before the start
    are never written."""
    import numpy as np

    from mnemo.encode_chunk import LINE

    enc = Encoder(gpt2_encoder[1][:3000])
    enc.bypass = False
    for table, at in (("words", enc.words_at), ("lwords", enc.lwords_at), ("front", enc.front_at), ("small", enc.small_at)):
        v = np.frombuffer(getattr(enc, table), dtype=np.int64)
        assert 0 <= at < LINE // 8 and (v.ctypes.data + 8 * at) % LINE == 0, table
    data = b" the cat sat on internationalization and encyclopedias again" * 40 + b" " * 16
    enc.encode_chunks([data[i : i + 11] for i in range(0, len(data), 11)])
    for table, at in (("words", enc.words_at), ("lwords", enc.lwords_at), ("front", enc.front_at), ("small", enc.small_at)):
        v = np.frombuffer(getattr(enc, table), dtype=np.int64)
        assert not v[:at].any(), table


def test_same_bytes_every_length_offset_and_difference() -> None:
    """same_bytes compares a word at a time (the last word overlapping, a short span masked when
    both bytes objects hold eight bytes from its start, else byte by byte): against slices, for
    spans of 0-20 bytes at every offset -- the ends of both objects included -- equal, and with
    one byte changed at each place."""
    rng = random.Random(7)
    base = bytes(rng.randrange(256) for _ in range(24))
    for n in range(21):
        for a_at in range(len(base) - n + 1):
            for b_at in (0, 1, 5, 9, 24 - n, max(0, 17 - n)):
                if b_at + n > 24:
                    continue
                b = bytearray(rng.randrange(256) for _ in range(24))
                b[b_at:b_at + n] = base[a_at:a_at + n]
                assert same_bytes(base, a_at, bytes(b), b_at, n)
                for k in range(n):
                    c = bytearray(b)
                    c[b_at + k] ^= 1 << rng.randrange(8)
                    assert not same_bytes(base, a_at, bytes(c), b_at, n), (n, a_at, b_at, k)
