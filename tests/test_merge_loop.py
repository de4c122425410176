"""The BPE trainers: the fast one (mnemo.merge_loop, compiled) against its naive twin
(mnemo.reference), worked examples derived by hand, the CS336 reference run, and the self-check.

Word counts are made here with `regex.findall` of GPT-2's pattern (DESIGN.md), independently of
mnemo's own pre-tokenizer and counter, so that these tests isolate the merge loop; the pipeline
through mnemo's counter is tested in tests/test_training.py.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import kernels
from mnemo.errors import ConfigError, VerificationError
from mnemo.reference import merge_word, train_merges_naive
from mnemo import merge_loop
from mnemo.merge_loop import train_merges

Trainer = Callable[..., tuple[list[tuple[int, int]], list[int]]]
TRAINERS: dict[str, Trainer] = {"naive": train_merges_naive, "fast": train_merges}

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_GPT2_RE = regex.compile(GPT2_PATTERN)


def count_words(texts: list[str], special: str | None = None) -> dict[bytes, int]:
    """Word counts with GPT-2's pattern; `special` (if given) splits documents and is not text."""
    counts: Counter[bytes] = Counter()
    for text in texts:
        parts = text.split(special) if special else [text]
        for part in parts:
            counts.update(chunk.encode("utf-8") for chunk in _GPT2_RE.findall(part))
    return dict(counts)


def token_bytes_of(merges: list[tuple[int, int]]) -> list[bytes]:
    vocab = [bytes([i]) for i in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    return vocab


@pytest.fixture(params=sorted(TRAINERS))
def trainer(request: pytest.FixtureRequest) -> Trainer:
    return TRAINERS[request.param]


# ---- worked examples ------------------------------------------------------------------------

TEXTBOOK = {b"low": 5, b"lower": 2, b"newest": 6, b"widest": 3}


def test_textbook_toy_tie_id(trainer: Trainer) -> None:
    """The textbook toy corpus, tie="id" (the default).  By hand:

    pairs at the start: es 9 (newest 6 + widest 3), st 9, we 8 (lower 2 + newest 6), lo 7, ow 7,
    ne 6, ew 6, wi 3, id 3, de 3, er 2.  es and st tie at 9: tie="id" takes the smaller pair,
    (e=101, s=115) < (s=115, t=116), so `es` (9).  Then (es, t) has 9 and nothing more: `est`.
    Then lo 7 and ow 7 tie: (l=108, o) < (o=111, w): `lo` (7); then (lo, w) 7: `low`.  Then
    ew 6 and ne 6 tie ("we" fell to 2 when `es` took newest's e): (e, w) < (n, e): `ew` (6).
    So the first five merges are es, est, lo, low, ew -- exactly the textbook's order, which is
    therefore the tie="id" rule (tie="bytes" would take `st` first: b"s" > b"e").
    """
    merges, counts = trainer(TEXTBOOK, 5)
    vocab = token_bytes_of(merges)
    assert [vocab[256 + k] for k in range(5)] == [b"es", b"est", b"lo", b"low", b"ew"]
    assert counts == [9, 9, 7, 7, 6]
    assert merges[:2] == [(ord("e"), ord("s")), (256, ord("t"))]


def test_textbook_toy_tie_bytes(trainer: Trainer) -> None:
    """tie="bytes" on the same corpus.  By hand: es/st tie at 9, (b"s", b"t") > (b"e", b"s"):
    `st` (9).  Then (e, st) 9 beats we 8: `est`.  Then lo/ow tie at 7: b"o" > b"l": `ow` (7);
    then (l, ow) 7: `low`.  Then three pairs at 6, all from newest = n e w est: (n, e), (e, w),
    (w, est); the greatest byte strings are (b"w", b"est"): `west`."""
    merges, counts = trainer(TEXTBOOK, 5, tie="bytes")
    vocab = token_bytes_of(merges)
    assert [vocab[256 + k] for k in range(5)] == [b"st", b"est", b"ow", b"low", b"west"]
    assert counts == [9, 9, 7, 7, 6]


def test_overlapping_occurrences(trainer: Trainer) -> None:
    """"aaaaaaa" x3 and "aab" x2.  By hand: (a,a) occurs 6 times in the first word (overlaps all
    count) and once in the second: 6*3 + 2 = 20.  Left to right, never overlapping:
    aaaaaaa -> c c c a, aab -> c b (c = 256).  Now (c,c) 2*3 = 6: d = 257; c c c a -> d c a.
    Then (d,c) 3 and (c,a) 3 tie: (256, 97) < (257, 256): e = 258 = (c,a); d c a -> d e.
    Then (d,e) 3: 259.  Last (c,b) 2 -> 260.  Then nothing occurs twice: stop after 5."""
    merges, counts = trainer({b"aaaaaaa": 3, b"aab": 2}, 100)
    assert merges == [(97, 97), (256, 256), (256, 97), (257, 258), (256, 98)]
    assert counts == [20, 6, 3, 3, 2]


def test_stops_when_no_pair_occurs_twice(trainer: Trainer) -> None:
    """"aa" once: (a,a) has count 1, so no merge.  "aaa" once: (a,a) occurs twice (count 2):
    one merge, then (256, 97) has count 1: stop."""
    assert trainer({b"aa": 1, b"b": 7, b"": 3}, 10) == ([], [])
    assert trainer({b"aaa": 1}, 10) == ([(97, 97)], [2])
    assert trainer({}, 10) == ([], [])
    assert trainer(TEXTBOOK, 0) == ([], [])


def test_high_bytes(trainer: Trainer) -> None:
    """Bytes >= 0x80 (negative as i16 in the fast trainer's array) merge like any other; 0xFF
    is a byte, not the separator.  By hand: (ff, fe) 4+4 = 8, then (256, 80) 4, (80, ff) ... :
    ff fe 80 x4 and ff fe x4 -> first (255, 254) with 8, then (256, 128) with 4."""
    merges, counts = trainer({b"\xff\xfe\x80": 4, b"\xff\xfe": 4}, 10)
    assert merges == [(255, 254), (256, 128)]
    assert counts == [8, 4]


# ---- bad arguments ----------------------------------------------------------------------------


def test_bad_arguments(trainer: Trainer) -> None:
    with pytest.raises(ConfigError, match="unknown tie rule 'lex'"):
        trainer(TEXTBOOK, 5, tie="lex")
    with pytest.raises(ConfigError, match="n_merges must be >= 0, got -1"):
        trainer(TEXTBOOK, -1)
    with pytest.raises(ConfigError, match="n_merges must be at most 2096896"):
        trainer(TEXTBOOK, 2_096_897)
    if trainer is train_merges:  # 0xFFFF separates words: mnemo.train takes merge_loop_wide above
        with pytest.raises(ConfigError, match="n_merges must be at most 65279 for the 16-bit trainer"):
            trainer(TEXTBOOK, 65280)
    with pytest.raises(ConfigError, match=r"word b'low' has a negative count -2"):
        trainer({b"low": -2}, 5)


def train_with(
    words: dict[bytes, int], n_merges: int, *, tie: str = "id", verify: bool = True, **seams: int
) -> tuple[list[tuple[int, int]], list[int]]:
    """train_merges with merge_loop.SEAMS (block, gap, corrupt_at) set for this one call: the
    seams are module state, never arguments of the production signature."""
    with pytest.MonkeyPatch.context() as m:
        for name, value in seams.items():
            m.setattr(merge_loop.SEAMS, name, value)
        return train_merges(words, n_merges, tie=tie, verify=verify)


def test_no_knob_in_the_signatures() -> None:
    """Tests and benchmarks reach the loop through SEAMS; the public functions carry none."""
    import inspect

    for fn in (train_merges, merge_loop.train_merges_packed):
        params = inspect.signature(fn).parameters
        assert not [p for p in params if p.startswith("_")], (fn.__name__, list(params))


def test_bad_skip_index_seams() -> None:
    with pytest.raises(ConfigError, match="SEAMS.block must be >= 1 and SEAMS.gap >= 0, got 0 and 4"):
        train_with(TEXTBOOK, 5, block=0)


# ---- fast == naive ----------------------------------------------------------------------------

words_strategy = st.dictionaries(
    # a tiny alphabet (with bytes that are negative as i16) makes ties everywhere
    st.binary(min_size=0, max_size=12).map(lambda b: bytes(b"ab\x80\xff"[x % 4] for x in b)),
    st.integers(min_value=1, max_value=4),
    max_size=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=words_strategy,
    n_merges=st.integers(min_value=0, max_value=40),
    tie=st.sampled_from(["id", "bytes"]),
    block=st.sampled_from([1, 5, 2048]),
    gap=st.sampled_from([0, 1, 4]),
    list_cost=st.sampled_from([-1, 0, 64]),
)
def test_fast_matches_naive_on_small_corpora(
    backend: str, words: dict[bytes, int], n_merges: int, tie: str, block: int, gap: int, list_cost: int
) -> None:
    """Small blocks (the skip index's seams) put many blocks and gaps into tiny arrays; list_cost
    -1 finds every pair by block scans, 0 every pair it can from its later token's words."""
    fast = train_with(words, n_merges, tie=tie, block=block, gap=gap, list_cost=list_cost)
    assert fast == train_merges_naive(words, n_merges, tie=tie)


def test_fast_matches_naive_many_ties_and_compaction() -> None:
    """Many equal counts, long runs of one byte (overlaps), enough merges to squeeze the array
    several times."""
    rng = random.Random(4)
    words = {bytes(rng.choice(b"aab") for _ in range(rng.randint(1, 30))): rng.randint(1, 3) for _ in range(400)}
    for tie in ("id", "bytes"):
        naive = train_merges_naive(words, 500, tie=tie)
        assert train_merges(words, 500, tie=tie) == naive
        assert train_with(words, 500, tie=tie, block=16, gap=0) == naive
        assert train_with(words, 500, tie=tie, block=64, gap=2) == naive
        assert train_with(words, 500, tie=tie, block=16, gap=0, list_cost=0) == naive
        assert train_with(words, 500, tie=tie, block=16, gap=0, list_cost=-1) == naive


def test_bit_table() -> None:
    """The skip index's bit for block k of 64 (mypyc would shift a literal 1 as a 32-bit int)."""
    from mnemo.merge_loop import _bit_table

    assert list(_bit_table()) == [1 << k for k in range(63)] + [-(1 << 63)]


def test_pair_filter_skips_blocks_holding_both_tokens_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens a and b in every block but the pair (a, b) in the last one only: the per-token index
    alone would scan every block for the merge of (a, b); the pair filter leaves (nearly) only
    the block that holds it.  And the merges are still the naive twin's."""
    words: dict[bytes, int] = {b"xy": 1000}
    for i in range(4000):  # "a", two distinct high bytes, "b": a and b everywhere, never adjacent
        words[b"a" + bytes([0x80 + i % 128, 0x80 + i // 128]) + b"b"] = 1
    words[b"ab"] = 500  # laid out last: the last block
    scanned: list[tuple[int, int, int]] = []
    real_scan = kernels.pair_positions

    def spy(toks: object, a: int, b: int, cap: int, start: int, stop: int) -> bytes:
        scanned.append((a, b, stop - start))
        return real_scan(toks, a, b, cap, start, stop)

    monkeypatch.setattr(kernels, "pair_positions", spy)
    result = train_with(words, 2, block=16, gap=0)
    assert result == train_merges_naive(words, 2)
    assert result[0] == [(ord("x"), ord("y")), (ord("a"), ord("b"))]
    array_tokens = sum(len(w) + 1 for w in words)  # ~24,000
    ab_scanned = sum(n for a, b, n in scanned if (a, b) == (ord("a"), ord("b")))
    assert 0 < ab_scanned < array_tokens // 10, (ab_scanned, array_tokens)


def test_late_pair_found_from_its_words_without_a_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair holding a merged token is looked for only in the words the merge that made the token
    rewrote (its word list): merge 1, ("xy", "z"), reads the 20 words holding "xy" and no block,
    where a block scan reads the 20 blocks that hold them whole.  The merges are the naive
    twin's."""
    words: dict[bytes, int] = {}
    for i in range(4000):  # filler: every block holds z, none holds x and y adjacent
        words[bytes([0x80 + i % 128, 0x80 + i // 128]) + b"z"] = 1
        if i % 200 == 0:  # ~800 tokens apart: one block each
            words[b"xyz" + bytes([0x30 + i // 200])] = 50
    scanned: list[tuple[int, int, int]] = []
    real_scan = kernels.pair_positions

    def spy(toks: object, a: int, b: int, cap: int, start: int, stop: int) -> bytes:
        scanned.append((a, b, stop - start))
        return real_scan(toks, a, b, cap, start, stop)

    monkeypatch.setattr(kernels, "pair_positions", spy)
    result = train_with(words, 3, block=256, gap=0)
    assert result == train_merges_naive(words, 3)
    assert result[0][:2] == [(ord("x"), ord("y")), (256, ord("z"))]
    assert [s for s in scanned if (s[0], s[1]) == (256, ord("z"))] == []
    scanned.clear()
    assert train_with(words, 3, block=256, gap=0, list_cost=-1) == result  # the block scan, for contrast
    assert sum(s[2] for s in scanned if (s[0], s[1]) == (256, ord("z"))) >= 20 * 256


def _prefix(docs: list[str], max_bytes: int) -> list[str]:
    out: list[str] = []
    total = 0
    for doc in docs:
        if total >= max_bytes:
            break
        out.append(doc)
        total += len(doc.encode("utf-8"))
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["english", "multilingual", "code", "chat"])
def test_fast_matches_naive_on_corpus(
    name: str, corpus_docs: Callable[..., list[str]], full_corpus: bool, backend: str
) -> None:
    """Same merges and counts for 600 merges on the start of each corpus.  The naive twin needs
    minutes per corpus on 2 MB (it recounts ~0.2-0.8 M pairs per merge in plain Python), so the
    default run uses the first 50 KB; `--full-corpus` runs the issue's 2 MB."""
    max_bytes = 2_000_000 if full_corpus else 50_000
    key = (name, max_bytes)
    if key not in _NAIVE_CACHE:  # the naive run does not depend on the kernel backend
        words = count_words(_prefix(corpus_docs(name), max_bytes))
        _NAIVE_CACHE[key] = (words, train_merges_naive(words, 600))
    words, naive = _NAIVE_CACHE[key]
    fast = train_merges(words, 600)
    assert len(fast[0]) == 600
    assert fast == naive
    assert train_with(words, 600, block=64, gap=1) == naive  # hundreds of blocks
    assert train_with(words, 600, block=64, gap=1, list_cost=0) == naive  # every list it can


_NAIVE_CACHE: dict[tuple[str, int], tuple[dict[bytes, int], tuple[list[tuple[int, int]], list[int]]]] = {}


# ---- CS336 reference ----------------------------------------------------------------------------


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable alphabet, reversed: each byte is itself if printable (! to ~, ¡ to ¬,
    ® to ÿ) and otherwise the next character from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    decoder: dict[str, int] = {}
    extra = 0
    for byte in range(256):
        if byte in printable:
            decoder[chr(byte)] = byte
        else:
            decoder[chr(256 + extra)] = byte
            extra += 1
    return decoder


def test_gpt2_byte_decoder() -> None:
    dec = gpt2_byte_decoder()
    assert dec["Ġ"] == 0x20 and dec["Ċ"] == 0x0A and dec["!"] == 0x21 and len(set(dec.values())) == 256


@pytest.mark.parametrize("algorithm", ["fast", "naive"])
def test_cs336_reference_merges(cs336_dir: Path, algorithm: str) -> None:
    dec = gpt2_byte_decoder()
    expected = [
        tuple(bytes(dec[ch] for ch in part) for part in line.split(" "))
        for line in (cs336_dir / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines()
    ]
    assert len(expected) == 243
    start = time.perf_counter()
    text = (cs336_dir / "corpus.en").read_text(encoding="utf-8")
    words = count_words([text], special="<|endoftext|>")
    merges, counts = TRAINERS[algorithm](words, 500 - 256 - 1, tie="bytes")
    elapsed = time.perf_counter() - start
    vocab = token_bytes_of(merges)
    assert [(vocab[a], vocab[b]) for a, b in merges] == expected
    assert counts == sorted(counts, reverse=True)
    if algorithm == "fast":
        assert elapsed < 1.5, f"CS336 run took {elapsed:.2f} s"


# ---- ids above 32767 ------------------------------------------------------------------------------


def _segment(word: bytes, rank: dict[tuple[int, int], int]) -> list[int]:
    """`word` after applying merges in order = repeatedly merge the lowest-ranked pair present
    (later merges never recreate an earlier pair).  Independent of both trainers."""
    seq = list(word)
    while True:
        pairs = [(rank[p], p) for p in zip(seq, seq[1:]) if p in rank]
        if not pairs:
            return seq
        r, pair = min(pairs)
        seq = merge_word(seq, pair, 256 + r)


def test_ids_above_32767_checked_against_recount() -> None:
    """Enough merges that new ids pass 32767 (negative as i16 in the fast array), on an array
    of many blocks.  Checkpoints: segment every word with the first k merges (by rank,
    independent of both trainers), count the pairs, and require merge k to be the best pair
    by the rule with the count the trainer reported."""
    rng = random.Random(7)
    words = {bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 14))): rng.randint(2, 9)
             for _ in range(12_000)}
    merges, counts = train_merges(words, 40_000)
    assert len(merges) > 33_000, len(merges)
    for k in (0, 32_511, 32_512, 32_600, len(merges) - 1):
        rank = {p: i for i, p in enumerate(merges[:k])}
        pair_counts: Counter[tuple[int, int]] = Counter()
        for word, count in words.items():
            seq = _segment(word, rank)
            for p in zip(seq, seq[1:]):
                pair_counts[p] += count
        top = max(pair_counts.values())
        assert counts[k] == top
        assert merges[k] == min(p for p, c in pair_counts.items() if c == top)


# ---- the self-check -----------------------------------------------------------------------------


def test_verification_catches_a_corrupted_table() -> None:
    """The corrupt_at seam knocks one pair's count off by one after merge 3; the recount must see it
    and name the pair.  Without verify the same run returns quietly: the check is what catches it."""
    words = count_words(["the cat sat on the mat with the hat; that is that. " * 3])
    merges, _ = train_merges(words, 20)
    a, b = merges[3]
    with pytest.raises(VerificationError, match=rf"pair \({a}, {b}\) has count 1 .* but 0 .*recounted"):
        train_with(words, 20, corrupt_at=3)
    train_with(words, 20, verify=False, corrupt_at=3)


def test_backends_agree() -> None:
    words = count_words(["to be or not to be, that is the question " * 5, "whether 'tis nobler in the mind"])
    before = kernels.backend()
    try:
        results = []
        for name in kernels.backends():
            kernels.set_backend(name)
            results.append(train_merges(words, 60))
    finally:
        kernels.set_backend(before)
    assert all(r == results[0] for r in results)


# ---- counts at the edge of 64 bits ----

I64_MAX = (1 << 63) - 1


@pytest.mark.parametrize(
    "words",
    [
        {b"aaa": (1 << 62) - 1, b"ab": 1},  # (a, a) holds 2**63 - 2, the total 2**63 - 1
        {b"abab": I64_MAX // 3, b"ba": 1},  # (a, b) holds 2 * (2**63 - 1) // 3, then (ab, ab)
        {b"ab": I64_MAX},  # one pair with the largest count
        {b"xy": I64_MAX - 5, b"x": I64_MAX},  # a one-byte word holds no pair
    ],
)
def test_counts_up_to_the_limit_match_naive(words: dict[bytes, int]) -> None:
    """A total of pair counts (sum of count x (length - 1)) up to 2**63 - 1 trains exactly as
    the naive twin (Python ints) does: every pair count and every intermediate value of the fast
    trainer's table stays within it, so i64 cannot overflow."""
    fast = train_merges(words, 10)
    assert fast == train_merges_naive(words, 10)
    assert fast[1][0] > 0


@pytest.mark.parametrize("trainer", TRAINERS.values(), ids=TRAINERS.keys())
@pytest.mark.parametrize(
    "words",
    [
        {b"aaa": 1 << 62},  # (a, a) would hold 2**63: the fast trainer's i64 count went negative
        {b"ab": 1 << 63},
        {b"abc": 1 << 62},  # (a, b) and (b, c) each fit, their total does not
        {b"ab": I64_MAX, b"cd": 1},
        {b"x": 1 << 70},  # no pair, but no 64-bit count either
    ],
)
def test_counts_past_the_limit_are_refused(trainer: Trainer, words: dict[bytes, int]) -> None:
    """Past the limit both trainers refuse the counts, before any merge (the fast one used to
    wrap around silently and learn wrong merges, or none)."""
    with pytest.raises(ConfigError, match=r"more than 2\*\*63 - 1"):
        trainer(words, 10)


def test_counts_past_the_limit_are_refused_packed() -> None:
    from mnemo.count import pack_words
    from mnemo.merge_loop import train_merges_packed

    blob, meta = pack_words({b"aaa": 1 << 61, b"bbb": 1 << 61})  # each fits, the sum does not
    with pytest.raises(ConfigError, match=r"more than 2\*\*63 - 1"):
        train_merges_packed(blob, meta, 10)


@pytest.mark.parametrize("trainer", TRAINERS.values(), ids=TRAINERS.keys())
@pytest.mark.parametrize(
    ("words", "message"),
    [
        ({b"ab": 1.5}, r"count of word b'ab' must be an int, got float 1\.5"),
        ({"ab": 3}, "word 'ab' must be bytes, got str"),
    ],
)
def test_word_counts_of_a_wrong_type(trainer: Trainer, words: dict[object, object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        trainer(words, 10)
