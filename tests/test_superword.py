"""Superword tokens (mnemo/superword.py, mnemo/superbpe.py, docs/superword.md): the stage-2 rule
by hand and against its naive twin, the curriculum encoder against the naive encoder written from
the definition (the four corpora and hypothesis text), fast == naive training for both stages,
the cut of stage 2's words, files, streaming, linear time and the command line."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from librt.vecs import vec
from mypy_extensions import i64

import mnemo
from mnemo import Tokenizer
from mnemo import reference as naive_bpe
from mnemo import reference_superword as naive
from mnemo import superbpe
from mnemo.constants import PATTERNS
from mnemo.count import WordCounter, pack_words, packed_to_dict
from mnemo.errors import ConfigError, FormatError
from mnemo.patterns import for_counting, split
from mnemo.pretokenize import pattern_id
from mnemo.superword import (
    KIND_END, KIND_HARD, KIND_JOIN, RULE_SUPERWORD, SKETCH_MAX, CoarseCounter, CoarseCounts,
    coarse_of_packed, Stage2Words, SuperEncoder, add_both, add_coarse, chunk_kind, FILL_BLOCK, _filled16, _filled32, _filled64, _sorted_by,
    kind_in, split_coarse,
)
from mnemo.training import CountPart, CountStats, CountSum, TrainStats

MNEMO = str(Path(sys.executable).parent / "mnemo")
CORPORA = ("english", "code", "multilingual", "chat")

# text that exercises every kind: letters (Latin, CJK), numbers, spaces, line breaks, single and
# repeated punctuation, sentence ends and colons (ASCII and wide), apostrophes
ALPHABET = "ab Zé中文 \n\r\t.,:!?;'\"()-。：！？7٣ "
text_strategy = st.text(alphabet=ALPHABET, max_size=120)
ODD = b"a .,\n:'\xc3\xa9\xe4\xb8\xad\xff\x807!"  # letters, space, punctuation, UTF-8 pieces, invalid bytes
bytes_strategy = st.binary(max_size=80).map(lambda b: bytes(ODD[x % len(ODD)] for x in b))


def kind_of(chunk: str) -> int:
    raw = chunk.encode()
    return chunk_kind(raw, 0, len(raw))


# ---- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chunk, kind",
    [
        (" the", KIND_JOIN), ("The", KIND_JOIN), ("'s", KIND_JOIN), ("(foo", KIND_JOIN), (".b", KIND_JOIN),
        (",", KIND_JOIN), (" (", KIND_JOIN), ('"', KIND_JOIN), (" =", KIND_JOIN), ("中文", KIND_JOIN),
        (".", KIND_END), ("!", KIND_END), (" ?", KIND_END), (":", KIND_END), (" :", KIND_END), ("。", KIND_END),
        ("：", KIND_END), ("؟", KIND_END), ("।", KIND_END),
        ("...", KIND_HARD), ('")', KIND_HARD), ("::", KIND_HARD), ("42", KIND_HARD), ("٣", KIND_HARD),
        ("\n", KIND_HARD), (".\n", KIND_HARD), (" ", KIND_HARD), ("  ", KIND_HARD), ("\t", KIND_HARD),
    ],
)
def test_chunk_kinds_by_hand(chunk: str, kind: int) -> None:
    assert kind_of(chunk) == kind
    assert naive.kind(chunk.encode()) == kind


def test_coarse_chunks_worked_example() -> None:
    """docs/superword.md's example: words, a comma and an apostrophe join; the sentence end joins
    the chunk before it and ends the coarse chunk; a lone space before a number, the number, and
    the colon (which ends ' apples:') cut."""
    text = b"By the way, it's here. Then 42 apples: red\n\nNext...  line"
    assert split_coarse(text) == [
        b"By the way, it's here.", b" Then", b" ", b"42", b" apples:", b" red", b"\n\n", b"Next", b"...",
        b" ", b" line",
    ]
    assert [b"".join(c) for c in naive.coarse_chunks(text, "mnemonic")] == split_coarse(text)


@settings(max_examples=300, deadline=None)
@given(text=text_strategy, pattern=st.sampled_from(PATTERNS))
def test_coarse_split_matches_naive(text: str, pattern: str) -> None:
    data = text.encode()
    coarse = naive.coarse_chunks(data, pattern)
    assert [b"".join(c) for c in coarse] == split_coarse(data, pattern)
    # every coarse boundary is a stage-1 boundary, and a coarse chunk re-split alone gives the
    # stage-1 chunks it has inside the text: what training counts is what encoding sees
    for chunks in coarse:
        assert split(b"".join(chunks), pattern) == chunks
        # the shortcut for the shipped patterns' letter runs gives the kind read whole
        for c in chunks:
            assert kind_in(c, 0, len(c), pattern_id(pattern)) == chunk_kind(c, 0, len(c))


@settings(max_examples=200, deadline=None)
@given(data=bytes_strategy)
def test_coarse_split_of_any_bytes(data: bytes) -> None:
    """Invalid UTF-8 is one "other" character a byte, as in the pre-tokenizer."""
    assert [b"".join(c) for c in naive.coarse_chunks(data, "mnemonic")] == split_coarse(data)
    assert b"".join(split_coarse(data)) == data


def test_coarse_split_matches_naive_on_the_corpora(corpus_docs: Callable[..., list[str]]) -> None:
    for name in CORPORA:
        for doc in corpus_docs(name, max_bytes=100_000):
            data = doc.encode()
            coarse = naive.coarse_chunks(data, "mnemonic")
            assert [b"".join(c) for c in coarse] == split_coarse(data), name
            assert all(split(b"".join(c), "mnemonic") == c for c in coarse), name


@pytest.mark.parametrize("limit", [256, 12])
def test_coarse_counting_matches_naive(corpus_docs: Callable[..., list[str]], limit: int) -> None:
    """add_coarse against reference_superword.count_coarse, with the usual limit and one that
    cuts most coarse chunks into pieces (and skips longer stage-1 chunks)."""
    docs = [d.encode() for name in CORPORA for d in corpus_docs(name, max_bytes=40_000)]
    counter = CoarseCounter(pattern_id("mnemonic"), limit)
    for doc in docs:
        add_coarse(counter, doc, pattern_id("mnemonic"))
    want = naive.count_coarse(docs, "mnemonic", limit)
    assert counter.to_dict() == want
    assert counter.n_bytes == sum(map(len, docs)) and counter.n_chunks == sum(want.values())
    # a coarse chunk of one stage-1 chunk is its word's count less its other occurrences, a
    # longer one written out as it comes
    blob, meta = counter.to_packed()
    listed = [(w, c) for w, c in zip(split_packed(blob, meta), counts_of(meta))]
    assert {w: c for w, c in listed if len(split(w, "mnemonic")) == 1} == {
        w: c for w, c in want.items() if len(split(w, "mnemonic")) == 1
    }
    assert all(c == 1 for w, c in listed if len(split(w, "mnemonic")) > 1)
    assert len(listed) > len(want)  # some longer ones repeat
    # training's one pass counts stage 1's words as WordCounter.add does, and the same coarse chunks
    words, plain = WordCounter(pattern_id("mnemonic"), limit, track=True), WordCounter(pattern_id("mnemonic"), limit)
    coarse = CoarseCounter(pattern_id("mnemonic"), limit, words)
    for doc in docs:
        add_both(words, coarse, doc, pattern_id("mnemonic"))
        plain.add(doc)
    assert words.to_dict() == plain.to_dict() and coarse.to_dict() == want
    assert coarse.to_packed() == counter.to_packed()
    assert (words.n_bytes, words.n_chunks, words.skipped) == (plain.n_bytes, plain.n_chunks, plain.skipped)


def test_coarse_counting_of_many_distinct_short_chunks() -> None:
    """Coarse chunks of one stage-1 chunk are counted in CoarseCounter's word table, which grows
    on the way: 20,000 distinct words, one a line, some twice, against the naive count."""
    pid = pattern_id("mnemonic")
    words = ["".join(w) for w in itertools.islice(itertools.product("abcdefghij", repeat=5), 20_000)]
    docs = ["\n".join(words + words[::7]).encode(), b"ab\nab\nab", b"a"]
    counter = CoarseCounter(pid, 256)
    for doc in docs:
        add_coarse(counter, doc, pid)
    want = naive.count_coarse(docs, "mnemonic", 256)
    assert len(want) > 20_000
    assert counter.to_dict() == want


def split_packed(blob: bytes, meta: bytes) -> list[bytes]:
    out, pos = [], 0
    for m in range(0, len(meta), 16):
        n = int.from_bytes(meta[m : m + 8], "little")
        out.append(blob[pos : pos + n])
        pos += n
    return out


def counts_of(meta: bytes) -> list[int]:
    return [int.from_bytes(meta[m + 8 : m + 16], "little") for m in range(0, len(meta), 16)]


def test_coarse_chunks_written_out_at_the_end_of_a_document() -> None:
    """A longer coarse chunk is copied eight bytes at a time: one that ends the document, whose
    last eight bytes are not all there, and every length up to 40 at every place."""
    pid = pattern_id("mnemonic")
    for n in range(1, 40):
        text = b" ".join(b"abcde"[: i % 5 + 1] for i in range(n))  # letters: one coarse chunk
        for cut in range(len(text) + 1):
            doc = text[:cut]
            counter = CoarseCounter(pid, 256)
            add_coarse(counter, doc, pid)
            assert counter.to_dict() == naive.count_coarse([doc], "mnemonic", 256), (n, cut)


# ---- training ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def english(corpus_docs: Callable[..., list[str]]) -> list[str]:
    return corpus_docs("english", max_bytes=300_000)


@pytest.fixture(scope="module")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    """A small superword tokenizer of the four corpora."""
    docs = [d for name in CORPORA for d in corpus_docs(name, max_bytes=150_000)]
    return mnemo.train_from_iterator(docs, vocab_size=3000, superword=1800, workers=1)


@pytest.mark.parametrize("tie", ["id", "bytes"])
def test_fast_training_equals_naive(english: list[str], tie: str) -> None:
    """Both stages: the naive twin counts nothing differently, recounts every pair of every word
    for every merge, and builds stage 2's words from the definition (regex, naive BPE)."""
    docs = english[:25]
    fast = mnemo.train_from_iterator(docs, vocab_size=900, superword=600, workers=1, tie=tie)
    slow = mnemo.train_from_iterator(docs, vocab_size=900, superword=600, workers=1, tie=tie, algorithm="naive")
    assert fast.superword == slow.superword == 600
    assert fast.merges == slow.merges and fast.merge_counts == slow.merge_counts
    # stage 1 is the plain run of 600 ids
    plain = mnemo.train_from_iterator(docs, vocab_size=600 + 16, workers=1, tie=tie)
    assert fast.merges[: 600 - 256] == plain.merges


@pytest.mark.parametrize("sketch_bits", [None, 4])
def test_the_cut_of_stage_two_is_exact(english: list[str], sketch_bits: int | None) -> None:
    """Stage2Words.pieces: the estimated threshold, the always-exact 2, one so high that the
    run falls back (halving down to one that holds: many runs) and one just above the last
    merge's count (one fallback) give the same merges, and a fallback says so; also with a
    sketch of one line (sketch_bits 4 is raised to 5: 32 counters), whose estimates are far
    above the counts (it cuts almost nowhere: longer pieces, the same merges)."""
    docs = english[:120]
    runs = []
    old = superbpe.SEAMS.theta, superbpe.SEAMS.sketch_bits
    try:
        first = mnemo.train_from_iterator(docs, vocab_size=2000, superword=1200, workers=1)
        assert first.merge_counts is not None
        above = first.merge_counts[-1] + 1
        superbpe.SEAMS.sketch_bits = sketch_bits
        for theta in (None, 2, 10**9, above):
            superbpe.SEAMS.theta = theta
            stats = TrainStats(CountStats())
            tok = mnemo.train_from_iterator(docs, vocab_size=2000, superword=1200, workers=1, stats=stats)
            runs.append((tok.merges, tok.merge_counts, stats.stage2))
    finally:
        superbpe.SEAMS.theta, superbpe.SEAMS.sketch_bits = old
    (m0, c0, s0), (m2, c2, s2), (mh, ch, sh), (ma, ca, sa) = runs
    assert m0 == m2 == mh == ma == first.merges and c0 == c2 == ch == ca == first.merge_counts
    assert s0 is not None and s2 is not None and sh is not None and sa is not None
    assert s0.theta >= 2 and not s0.fell_back and s0.runs == 1
    assert s0.piece_tokens <= s0.tokens and (sketch_bits is not None or s0.piece_tokens < s0.tokens)
    assert not s2.fell_back and s2.runs == 1
    assert sh.fell_back and sh.runs > 20 and 2 <= sh.theta < above
    assert sa.fell_back and sa.runs == 2 and sa.theta == max(2, above // 2) and sa.piece_tokens <= s2.piece_tokens
    if sketch_bits is None:
        assert sa.piece_tokens < s2.piece_tokens


def words_of(words: Stage2Words) -> Counter[tuple[int, ...]]:
    """Stage2Words' words (materialized) as a multiset of token tuples, equal words added up."""
    toks, ends, counts = words.materialized()
    got: Counter[tuple[int, ...]] = Counter()
    start = 0
    for end, count in zip(ends, counts):
        got[tuple(toks[start:end])] += count
        start = end
    assert len(ends) == words.n_words and start == words.n_tokens
    return got


def test_stage_two_pair_counts_against_naive(english: list[str]) -> None:
    """Stage2Words' pair counts against the pairs of the words built from the definition (regex
    split, naive BPE): the sketch never counts a pair below its count (nor below SKETCH_MAX when
    it is above: the last scale saturates counters), also when it is so small that every counter
    is shared (one line); pair_count's table is exact; count_at_rank is the ceil(2.906 k)-th
    largest counter; the pieces are the words cut before every pair whose estimate is below theta (a
    saturated counter never cuts), in the order of their first three ids."""
    docs = [d.encode() for d in english[:60]]
    merges = mnemo.train_from_iterator(english[:60], vocab_size=700 + 16, workers=1).merges
    ranks1 = naive_bpe.merge_ranks(merges)
    pid = pattern_id("mnemonic")
    counter = CoarseCounter(pid, 256)
    for doc in docs:
        add_coarse(counter, doc, pid)
    for scale in (1, 997, 50_021):
        table = {w: c * scale for w, c in counter.to_dict().items()}
        # the last scale puts counts past what a counter holds
        assert scale < 50_000 or max(table.values()) > SKETCH_MAX
        blob, meta = pack_words(table)
        enc = SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD)
        words = Stage2Words(enc, coarse_of_packed(blob, meta), pid)
        small = Stage2Words(enc, coarse_of_packed(blob, meta), pid, sketch_bits=3)  # raised to one line: 32 counters
        pairs: Counter[int] = Counter()
        seqs: list[tuple[list[int], int]] = []
        for word, count in table.items():
            ids = [t for c in naive.stage1_chunks(word, "mnemonic") for t in naive_bpe.encode_chunk_naive(c, ranks1)]
            seqs.append((ids, count))
            for a, b in zip(ids, ids[1:]):
                pairs[(a << 21) | b] += count
        want_words: Counter[tuple[int, ...]] = Counter()
        for ids, count in seqs:
            if len(ids) >= 2:
                want_words[tuple(ids)] += count
        assert words_of(words) == want_words
        assert all(words.pair_count(k) == small.pair_count(k) == c for k, c in pairs.items())
        assert words.n_pairs == small.n_pairs == len(pairs)
        for w in (words, small):
            assert all(w.estimate(k) >= min(c, SKETCH_MAX) for k, c in pairs.items())
            assert max(w.estimate(k) for k in pairs) <= SKETCH_MAX
        # the full-size sketch is exact here (few pairs share a counter); the small one is not
        assert sum(words.estimate(k) == min(c, SKETCH_MAX) for k, c in pairs.items()) > 0.95 * len(pairs)
        light = [(k, c) for k, c in pairs.items() if c < SKETCH_MAX]
        assert sum(small.estimate(k) > c for k, c in light) >= 0.5 * len(light)
        ranked = sorted(pairs.values(), reverse=True)
        # count_at_rank: the ceil(2.906 k)-th largest counter, 0 past the last non-zero one
        for w in (words, small):
            counters = sorted(w.sketch, reverse=True)
            for k in (1, 2, 10, 100, len(ranked) // 2, len(ranked)):
                at = (93 * k + 31) // 32  # ceil(2.906 k)
                want_c = counters[at - 1] if at <= len(counters) else 0
                assert w.count_at_rank(k) == want_c, k
        assert words.count_at_rank(len(words.sketch)) == 0
        for theta in (2, ranked[100], ranked[0], ranked[0] + 1, SKETCH_MAX + 1):
            for w in (words, small):
                # the pieces: the words cut before every pair whose estimate is below theta (a
                # saturated counter never cuts), equal ones added up
                lim = min(theta, SKETCH_MAX)
                want: Counter[bytes] = Counter()
                for ids, count in seqs:
                    cuts = [0] + [i for i in range(1, len(ids)) if w.estimate((ids[i - 1] << 21) | ids[i]) < lim] + [len(ids)]
                    for a, b in zip(cuts, cuts[1:]):
                        if b - a >= 2:
                            want[b"".join(t.to_bytes(4, "little") for t in ids[a:b])] += count
                pblob, pmeta = w.pieces(theta)
                assert packed_to_dict(pblob, pmeta) == dict(want), theta
                # in the order of their first three ids (a missing third as 0)
                heads = [(p + [0])[:3] for p in ([int.from_bytes(x[i : i + 4], "little") for i in range(0, len(x), 4)]
                                                 for x in split_packed(pblob, pmeta))]
                assert heads == sorted(heads), theta
    # the pair counts' bound: a word of three tokens or more counted 2**62 times passes it
    blob, meta = pack_words({b" the cat sat": 1, b" on the mat and": 2**62})
    with pytest.raises(ConfigError, match="would pass"):
        Stage2Words(SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD), coarse_of_packed(blob, meta), pid)


def test_stage_two_rank_from_the_sketch(english: list[str]) -> None:
    """count_at_rank reads the k-th largest count off the sketch (its ceil(2.906 k)-th largest
    counter):
    on real text, near the exact count for the ranks training asks (here within -25 % / +5 %:
    a low estimate costs longer pieces, a high one a second run)."""
    docs = english[:200]
    merges = mnemo.train_from_iterator(docs, vocab_size=700 + 16, workers=1).merges
    pid = pattern_id("mnemonic")
    counter = CoarseCounter(pid, 256)
    for doc in docs:
        add_coarse(counter, doc.encode(), pid)
    blob, meta = pack_words(counter.to_dict())
    words = Stage2Words(SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD), coarse_of_packed(blob, meta), pid)
    words.pair_count(0)
    ranked = sorted((words.pairs[i + 1] for i in range(0, len(words.pairs), 2) if words.pairs[i] != -1), reverse=True)
    assert len(ranked) == words.n_pairs > 10_000
    for k in (100, 300, 1000):
        assert 0.75 * ranked[k - 1] <= words.count_at_rank(k) <= 1.05 * ranked[k - 1], (k, words.count_at_rank(k), ranked[k - 1])


def test_stage_two_words_by_id_equal_words_by_bytes(english: list[str]) -> None:
    """Stage2Words from the counting pass's ids (each stage-1 chunk's tokens taken by its id,
    no re-split) counts the same pairs and cuts the same pieces as from the coarse chunks'
    bytes, and so do two workers' tables added up (training.CountSum renumbers the ids of the
    second as the sum numbers its words)."""
    docs = [d.encode() for d in english[:80]]
    merges = mnemo.train_from_iterator(english[:80], vocab_size=700 + 16, workers=1).merges
    pid = pattern_id("mnemonic")
    total = CountSum(for_counting("mnemonic")[1], 256, coarse=True)
    for half in (docs[:40], docs[40:]):
        words = WordCounter(pid, 256, track=True)
        coarse = CoarseCounter(pid, 256, words)
        for doc in half:
            add_both(words, coarse, doc, pid)
        got = coarse.to_counts()
        total.add(CountPart(got.wblob, got.wmeta, 0, 0, 0, got.ids))
    s = total.result()
    summed = CoarseCounts(s.blob, s.meta, b"", b"", s.coarse_ids)
    one = CoarseCounter(pid, 256)
    for doc in docs:
        add_coarse(one, doc, pid)
    assert summed.to_dict() == one.to_dict() == naive.count_coarse(docs, "mnemonic", 256)
    assert packed_to_dict(s.blob, s.meta) == one.words.to_dict()
    enc = SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD)
    for counts in (one.to_counts(), summed):
        by_id = Stage2Words(enc, counts, pid)
        by_bytes = Stage2Words(enc, coarse_of_packed(*counts.to_packed()), pid)
        assert by_id.n_tokens == by_bytes.n_tokens and by_id.n_words == by_bytes.n_words
        # the same words, read from the id stream and the chunks' encodings (materialized)
        assert words_of(by_id) == words_of(by_bytes)
        for w in (by_id, by_bytes):
            w.pair_count(0)
        slots = [list(w.pairs) for w in (by_id, by_bytes)]
        got = [sorted((t[i], t[i + 1]) for i in range(0, len(t), 2) if t[i] != -1) for t in slots]
        assert got[0] == got[1] and len(got[0]) == by_id.n_pairs
        # the sketch's counters depend on the order the pairs come in (conservative update), so
        # the pieces are equal where both sketches cut alike: at every theta here
        assert sum(by_id.estimate(k) == c for k, c in got[0]) > 0.95 * len(got[0])
        for rank in (1, 50, 500):
            theta = by_id.count_at_rank(rank)
            assert all((by_id.estimate(k) < theta) == (by_bytes.estimate(k) < theta) for k, _ in got[0]), rank
            assert packed_to_dict(*by_id.pieces(theta)) == packed_to_dict(*by_bytes.pieces(theta)), rank
    with pytest.raises(ConfigError, match="ids"):
        CoarseCounter(pid, 256, WordCounter(pid, 256))
    with pytest.raises(ConfigError, match="own word table"):
        add_both(WordCounter(pid, 256, track=True), one, b"a b", pid)


def test_stage_two_words_of_a_chunk_of_many_tokens(english: list[str]) -> None:
    """A stage-1 chunk of 65,535 tokens or more (max_chunk_bytes raised) keeps its number of
    tokens beside Stage2Words.edge's field: the same words and pieces by id as by bytes, alone
    and inside a coarse chunk."""
    merges = mnemo.train_from_iterator(english[:5], vocab_size=300 + 16, workers=1).merges
    pid = pattern_id("mnemonic")
    rng = random.Random(5)
    long_word = "".join(rng.choice("qxzjkvw") for _ in range(70_000))
    docs = [f"the {long_word} of it".encode(), f"{long_word}".encode(), b"the cat of it"]
    words = WordCounter(pid, 200_000, track=True)
    coarse = CoarseCounter(pid, 200_000, words)
    for doc in docs:
        add_both(words, coarse, doc, pid)
    counts = coarse.to_counts()
    enc = SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD)
    by_id = Stage2Words(enc, counts, pid)
    by_bytes = Stage2Words(enc, coarse_of_packed(*counts.to_packed()), pid)
    assert len(by_id.longs) == 2 and max(len(w) for w in words_of(by_id)) >= 65_535  # " qx..." and "qx..."
    assert words_of(by_id) == words_of(by_bytes)
    assert packed_to_dict(*by_id.pieces(2)) == packed_to_dict(*by_bytes.pieces(2))


@pytest.mark.parametrize("n_merges", [40, 700, 3000])
def test_stage_two_words_from_stage_one_loop(english: list[str], n_merges: int) -> None:
    """Stage2Words given stage 1's words as its loop left them (Stage1Words) has the words and
    the pieces it has when it encodes every word: the loop's words are the words encoded, and
    the words it compacted away (one token each) are answered by their token.  Enough merges
    that the loop compacts (checked at 3,000), and fewer, where it has not."""
    from mnemo import merge_loop
    from mnemo.superword import Stage1Words

    pid = pattern_id("mnemonic")
    words = WordCounter(pid, 256, track=True)
    coarse = CoarseCounter(pid, 256, words)
    for doc in english[:200]:
        add_both(words, coarse, doc.encode(), pid)
    counts = coarse.to_counts()
    state = merge_loop.train_state(counts.wblob, counts.wmeta, n_merges, n_merges, "id", True, None, [], None)
    merges = [(int(a), int(b)) for a, b in state.merges]
    n_long = sum(1 for w, c in packed_to_dict(counts.wblob, counts.wmeta).items() if len(w) >= 2 and c > 0)
    n_left = sum(1 for i in range(1, state.n) if state.toks[i] == -1 and state.toks[i - 1] != -1)
    assert n_left <= n_long and (n_merges < 3000 or n_left < n_long)  # words compacted away
    enc = SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD)
    encoded = Stage2Words(enc, counts, pid)
    s1 = Stage1Words(state.toks, state.n, merges)
    read = Stage2Words(enc, counts, pid, stage1=s1)
    assert words_of(read) == words_of(encoded)
    assert (read.n_words, read.n_tokens) == (encoded.n_words, encoded.n_tokens)
    theta = max(2, encoded.count_at_rank(50))
    assert read.pieces(theta) == encoded.pieces(theta)
    assert all(state.toks[i] == -1 for i in range(s1.at, state.n))  # every word of the loop was read


def test_stage_one_words_leave_a_shared_token_to_the_encoder() -> None:
    """Stage1Words.next: a word at the cursor whose tokens spell the word asked is read; a word
    asked that is not there is one token -- its token when one token has its bytes, -1 (encode
    it) when two tokens have them, as two merges can make ((a, bc) and (ab, c))."""
    from librt.vecs import vec as v
    from mypy_extensions import i16

    from mnemo.superword import Stage1Words

    a, b, c = ord("a"), ord("b"), ord("c")
    merges = [(a, b), (b, c), (256, c), (a, 257), (a, a)]  # ab=256, bc=257, abc=258 and 259, aa=260
    toks = v[i16]([-1, 260, a, -1, -1, a, c, -1])  # "aaa" as (aa, a), then "ac"
    s1 = Stage1Words(toks, len(toks), merges)
    tk = v[i64]([0] * 8)
    data = b"aaaabcabac"
    assert s1.next(data, 0, 3, tk) == 2 and list(tk[:2]) == [260, a]
    assert s1.next(data, 4, 6, tk) == 1 and tk[0] == 257  # "bc": gone, token 257
    assert s1.next(data, 3, 6, tk) == -1  # "abc": gone, and two tokens have its bytes
    assert s1.next(data, 8, 10, tk) == 2 and list(tk[:2]) == [a, c]
    assert s1.next(data, 6, 8, tk) == 1 and tk[0] == 256  # past the last word: "ab", token 256


def test_radix_sort_of_the_pieces() -> None:
    """superword._sorted_by: values in the order of their keys, equal keys in their first order
    (keys of every 16-bit digit, up to 2**63 - 1, and many repeats)."""
    rng = random.Random(30)
    keys = [rng.choice([0, 1, 2**16 - 1, 2**16, 2**62 + 5, 2**63 - 1, rng.randrange(2**63), rng.randrange(50)])
            for _ in range(5000)]
    got = _sorted_by(vec[i64](keys), vec[i64](range(len(keys))))
    assert list(got) == sorted(range(len(keys)), key=lambda i: keys[i])
    assert list(_sorted_by(vec[i64](), vec[i64]())) == []


def test_four_word_limit_and_superwords_exist(trained: Tokenizer) -> None:
    n1 = trained.superword
    assert n1 is not None and 256 < n1 < trained.n_vocab
    made = [trained.token_bytes(i) for i in range(n1, 256 + len(trained.merges))]
    assert all(sum(1 for w in raw.split(b" ") if w) <= superbpe.MAX_WORDS for raw in made)
    bridged = [raw for raw in made if len(split(raw, trained.pattern)) > 1]
    assert len(bridged) > 100 and b" of the" in made


def test_wide_stage_two_continues_the_narrow_one(english: list[str]) -> None:
    """Above 65,535 ids stage 2 runs on the 32-bit trainer; with the same words it learns what
    the 16-bit one learns, as far as that one goes (a longer run's merges start with a shorter's;
    this text runs out of pairs long before either size)."""
    docs = english[:40]
    narrow = mnemo.train_from_iterator(docs, vocab_size=20_000, superword=700, workers=1)
    wide = mnemo.train_from_iterator(docs, vocab_size=70_000, superword=700, workers=1)
    assert len(narrow.merges) < 20_000 - 272
    assert wide.merges == narrow.merges and wide.merge_counts == narrow.merge_counts


def test_parallel_counting_gives_the_same_tokenizer(tmp_path: Path, english: list[str]) -> None:
    src = tmp_path / "en.txt"
    src.write_text("\n".join(english[:200]), encoding="utf-8")
    one = mnemo.train(src, vocab_size=1500, superword=1000, workers=1)
    two = mnemo.train(src, vocab_size=1500, superword=1000, workers=2)
    assert one.to_bytes() == two.to_bytes()
    docs = mnemo.train_from_iterator(iter(english[:200]), vocab_size=1500, superword=1000, workers=2)
    assert docs.superword == one.superword


def test_bad_superword_values() -> None:
    docs = ["the cat sat on the mat " * 30]
    with pytest.raises(ConfigError, match=r"superword=256: the transition must be in 257\.\.1008"):
        mnemo.train_from_iterator(docs, vocab_size=1024, superword=256)
    with pytest.raises(ConfigError, match=r"superword=1009"):
        mnemo.train_from_iterator(docs, vocab_size=1024, superword=1009)
    base = mnemo.train_from_iterator(docs, vocab_size=300, workers=1)
    with pytest.raises(ConfigError, match="starts from no base"):
        mnemo.train_from_iterator(docs, vocab_size=600, superword=400, base=base)
    with pytest.raises(TypeError, match="superword"):
        mnemo.train_from_iterator(docs, vocab_size=600, superword="400")  # type: ignore[arg-type]


# ---- encoding ------------------------------------------------------------------------------


def test_encoding_matches_naive_on_the_corpora(trained: Tokenizer, corpus_docs: Callable[..., list[str]]) -> None:
    assert trained.superword is not None
    for name in CORPORA:
        docs = corpus_docs(name, max_bytes=60_000)
        for doc in docs:
            data = doc.encode()
            ids = trained.encode_bytes(data)
            assert ids == naive.encode_superword(data, trained.merges, trained.superword, trained.pattern), name
            assert trained.decode_bytes(ids) == data
        # the packed paths (documents, numpy) agree with the list path
        arrays = trained.encode_documents([d.encode() for d in docs[:50]])
        assert arrays.tolist() == [i for d in docs[:50] for i in trained.encode_bytes(d.encode())]


@settings(max_examples=150, deadline=None)
@given(text=text_strategy)
def test_encoding_matches_naive_on_any_text(trained: Tokenizer, text: str) -> None:
    assert trained.superword is not None
    data = text.encode()
    assert trained.encode_bytes(data) == naive.encode_superword(data, trained.merges, trained.superword, trained.pattern)
    assert trained.decode(trained.encode_ordinary(text)) == text


@settings(max_examples=100, deadline=None)
@given(data=bytes_strategy)
def test_encoding_matches_naive_on_any_bytes(trained: Tokenizer, data: bytes) -> None:
    assert trained.superword is not None
    assert trained.encode_bytes(data) == naive.encode_superword(data, trained.merges, trained.superword, trained.pattern)


def test_long_coarse_chunks_take_the_heap_path(trained: Tokenizer, english: list[str]) -> None:
    """A coarse chunk of thousands of tokens (words and commas, no sentence end) against the
    naive encoder: the heap path (>= LONG_COARSE tokens) and the rank-array path agree with it."""
    assert trained.superword is not None
    words = [w for w in " ".join(english[:20]).split() if w.isalpha()][:3000]
    data = " ".join(w + ("," if k % 7 == 6 else "") for k, w in enumerate(words)).encode()
    assert len(split_coarse(data)) == 1 and len(words) == 3000
    assert trained.encode_bytes(data) == naive.encode_superword(data, trained.merges, trained.superword, trained.pattern)


def test_encoding_is_linear(trained: Tokenizer) -> None:
    """One coarse chunk of 40,000 and of 400,000 words: ten times the text, about ten times the
    time (allowed: 20x, a busy machine's noise; a quadratic encoder takes ~100x)."""
    small = b" the way of the cat and" * 8_000
    big = small * 10

    def best(data: bytes) -> float:
        times = []
        for _ in range(3):
            t0 = time.process_time()
            trained.encode_bytes(data)
            times.append(time.process_time() - t0)
        return min(times)

    assert len(split_coarse(small)) == 1
    ratio = best(big) / max(best(small), 1e-4)
    assert ratio < 20, ratio


def test_streaming_cuts_at_coarse_boundaries(trained: Tokenizer, english: list[str]) -> None:
    text = "".join(english[:20])
    pieces = [text[i : i + 97] for i in range(0, len(text), 97)]
    assert list(trained.encode_iterable(pieces)) == trained.encode_ordinary(text)


# ---- files ---------------------------------------------------------------------------------


def test_save_and_load(tmp_path: Path, trained: Tokenizer) -> None:
    trained.save(tmp_path / "sw.bin")
    back = Tokenizer.load(tmp_path / "sw.bin")
    assert back == trained and back.superword == trained.superword and back.stage2 == "superword"
    assert back.fingerprint == trained.fingerprint
    # the same merges without the curriculum encode differently, so they are another tokenizer
    plain = Tokenizer(trained.merges, special_tokens=list(trained.special_tokens), merge_counts=trained.merge_counts)
    assert plain.fingerprint != trained.fingerprint
    assert trained.with_special_tokens(["<|x|>"]).superword == trained.superword
    import pickle

    assert pickle.loads(pickle.dumps(trained)).encode_ordinary("by the way") == trained.encode_ordinary("by the way")


def test_a_bad_stage2_section_is_a_format_error(trained: Tokenizer) -> None:
    """tokenizer.bin's STG2 section (docs/formats.md): the transition in range, a rule this mnemo
    knows, no id map or whole tokens beside it, and the section's required flag (an older reader
    refuses the file instead of encoding it as plain BPE).  Every other byte: test_mutations."""
    from mnemo.vocabfile import KNOWN, STAGE2, encode_tokenizer_bin

    def image(superword: tuple[int, str], id_map: list[int] | None = None) -> bytes:
        return encode_tokenizer_bin(
            trained.merges, trained.pattern, list(trained.special_tokens), trained.tie, None, id_map, superword=superword
        )

    assert Tokenizer.from_bytes(image((trained.superword or 0, "superword"))).fingerprint == trained.fingerprint
    n = len(trained.merges)
    cases = [
        (image((9, "superword")), "transition 9 is outside 256"),
        (image((257 + n, "superword")), f"transition {257 + n} is outside 256"),
        (image((300, "words")), "unknown stage-2 rule 'words'"),
        (image((300, "superword"), id_map=[*range(1, 256 + n + len(trained.special_tokens)), 0]), "no whole tokens and no id map"),
    ]
    for data, message in cases:
        with pytest.raises(FormatError, match=message):
            Tokenizer.from_bytes(data, "sw.bin")
    assert KNOWN[STAGE2][0], "STG2 changes ids: a reader that does not know it must refuse the file"


def test_cli_train_and_eval(tmp_path: Path, english: list[str]) -> None:
    src = tmp_path / "en.txt"
    src.write_text("\n".join(english[:150]), encoding="utf-8")
    out = subprocess.run([MNEMO, "train", str(src), "-o", str(tmp_path / "sw.bin"), "--vocab-size", "2048",
                          "--superword", "1500", "-q"], capture_output=True, text=True, check=True).stdout
    assert "superword: merges making ids 1500.. are stage 2's" in out
    subprocess.run([MNEMO, "train", str(src), "-o", str(tmp_path / "plain.bin"), "--vocab-size", "2048", "-q"],
                   check=True, capture_output=True)
    table = subprocess.run([MNEMO, "eval", f"plain={tmp_path / 'plain.bin'}", f"super={tmp_path / 'sw.bin'}",
                            "--corpus", str(src)], capture_output=True, text=True, check=True).stdout
    lines = table.splitlines()
    share = lines[lines.index(next(x for x in lines if x.startswith("superword tokens"))) + 2:][:2]
    assert share[0].split()[-1] == "0.0%" and float(share[1].split()[-1].rstrip("%")) > 5


def test_other_tools_files_refuse_a_superword_tokenizer(tmp_path: Path, trained: Tokenizer) -> None:
    """GPT-2, tiktoken and Hugging Face files hold one pre-tokenizer and one merge list: writing
    a superword tokenizer there would encode differently, so it is an error, not a file."""
    from mnemo import interop

    for write in (
        lambda: interop.save_gpt2(trained, tmp_path / "v.json", tmp_path / "m.txt"),
        lambda: interop.save_hf(trained, tmp_path / "tokenizer.json"),
        lambda: interop.save_tiktoken(trained, tmp_path / "t.tiktoken"),
        lambda: interop.to_hf_json(trained),
    ):
        with pytest.raises(ConfigError, match="cannot hold a superword tokenizer"):
            write()
    assert not list(tmp_path.iterdir())
    with pytest.raises(ConfigError, match="is a superword tokenizer"):
        mnemo.train_from_iterator(["a b c " * 50], vocab_size=trained.n_vocab + 10, base=trained)


@pytest.mark.parametrize("n", [0, 1, 7, FILL_BLOCK - 1, FILL_BLOCK, FILL_BLOCK + 1, 3 * FILL_BLOCK + 5])
def test_filled_vecs_of_every_length(n: int) -> None:
    """_filled64 / _filled32 / _filled16 give n copies of the value for every n, 0 included (an
    empty block once extended the result forever: a training whose cut had no pieces hung)."""
    assert list(_filled64(n, -3)) == [-3] * n
    assert list(_filled32(n, 7)) == [7] * n
    assert list(_filled16(n, -5)) == [-5] * n


def test_sorted_by_no_pieces_and_some() -> None:
    """No pieces to sort gives an empty vec at once; some are put in the order of their keys,
    equal keys in their order."""
    assert list(_sorted_by(vec[i64](), vec[i64]())) == []
    keys = [5, 1 << 40, 0, 5, 3]
    assert list(_sorted_by(vec[i64](keys), vec[i64]([10, 11, 12, 13, 14]))) == [12, 14, 10, 13, 11]
