"""Pruning (mnemo/prune.py, docs/superword.md): the trainers' `skip` (fast == naive, both
widths, both tie rules), `prune="intermediate"` leaves no intermediate-only token and keeps the
vocabulary size, and the command line's `--prune`."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mnemo
from mnemo import merge_loop, merge_loop_wide
from mnemo.errors import ConfigError
from mnemo.inspect_vocab import inspect
from mnemo.prune import Learn, PruneStats, Skip, intermediate_merges, learn_pruned, rarest_users, token_bytes_of
from mnemo.reference import train_merges_naive
from mnemo.training import CountStats, TrainStats

MNEMO = str(Path(sys.executable).parent / "mnemo")

words_strategy = st.dictionaries(
    st.binary(min_size=0, max_size=12).map(lambda b: bytes(b"ab\x80\xff"[x % 4] for x in b)),
    st.integers(min_value=1, max_value=4),
    max_size=25,
)
banned_strategy = st.sets(
    st.binary(min_size=2, max_size=4).map(lambda b: bytes(b"ab\x80\xff"[x % 4] for x in b)), max_size=6
)


def _made(merges: list[tuple[int, int]]) -> list[bytes]:
    return token_bytes_of(merges)[256:]


def test_skip_worked_example() -> None:
    """The textbook toy (low x5, lower x2, newest x6, widest x3) learns es, est, lo, low, ew under
    tie="id" (docs/training.md).  Refusing `est`: es (9, tie with st, e < s); then (es, t) at 9
    is refused; (l, o) and (o, w) tie at 7, l < o: lo, then low (7); then (n, e), (e, w) and
    (w, es) tie at 6 and e is the smallest first id: ew; then (n, ew) and (ew, es) at 6, n < ew:
    new.  So es, lo, low, ew, new with counts 9, 7, 7, 6, 6."""
    words = {b"low": 5, b"lower": 2, b"newest": 6, b"widest": 3}
    plain, _ = train_merges_naive(words, 5)
    assert _made(plain) == [b"es", b"est", b"lo", b"low", b"ew"]
    skip = lambda a, b: a + b == b"est"  # noqa: E731
    naive = train_merges_naive(words, 5, skip=skip)
    assert _made(naive[0]) == [b"es", b"lo", b"low", b"ew", b"new"] and naive[1] == [9, 7, 7, 6, 6]
    assert merge_loop.train_merges(words, 5, skip=skip) == naive
    assert merge_loop_wide.train_merges(words, 5, skip=skip) == naive


@settings(max_examples=200, deadline=None)
@given(words=words_strategy, banned=banned_strategy, n_merges=st.integers(min_value=0, max_value=40),
       tie=st.sampled_from(["id", "bytes"]))
def test_skip_fast_matches_naive(words: dict[bytes, int], banned: set[bytes], n_merges: int, tie: str) -> None:
    skip = lambda a, b: a + b in banned  # noqa: E731
    naive = train_merges_naive(words, n_merges, tie=tie, skip=skip)
    assert merge_loop.train_merges(words, n_merges, tie=tie, skip=skip) == naive
    assert merge_loop_wide.train_merges(words, n_merges, tie=tie, skip=skip) == naive
    assert not set(_made(naive[0])) & banned


def test_skip_never_refuses_initial_merges() -> None:
    words = {b"abab": 3, b"ab": 2}
    forced = [(ord("a"), ord("b"))]
    skip = lambda a, b: True  # noqa: E731  (refuses every free merge)
    for trainer in (train_merges_naive, merge_loop.train_merges, merge_loop_wide.train_merges):
        assert trainer(words, 3, initial_merges=forced, skip=skip) == ([(97, 98)], [8])


def test_skip_on_real_text_in_both_widths(corpus_docs: Callable[..., list[str]]) -> None:
    """English words, the tokens of the first 300 merges' every third one refused: the fast
    trainer (16-bit, and 32-bit through its handoff seam) equals the naive one."""
    from mnemo.count import WordCounter

    counter = WordCounter(0)
    for doc in corpus_docs("english", max_bytes=60_000):
        counter.add(doc.encode())
    words = counter.to_dict()
    plain, _ = merge_loop.train_merges(words, 300)
    banned = set(_made(plain)[::3])
    skip = lambda a, b: a + b in banned  # noqa: E731
    naive = train_merges_naive(words, 300, skip=skip)
    assert merge_loop.train_merges(words, 300, skip=skip) == naive
    old = merge_loop_wide.SEAMS.handoff
    try:
        for handoff in (0, 100):
            merge_loop_wide.SEAMS.handoff = handoff
            assert merge_loop_wide.train_merges(words, 300, skip=skip) == naive
    finally:
        merge_loop_wide.SEAMS.handoff = old


def _learner(trainer: Callable[..., tuple[list[tuple[int, int]], list[int]]], words: dict[bytes, int],
             n_merges: int) -> Learn:
    def learn(skip: Skip | None) -> tuple[list[tuple[int, int]], list[int]]:
        return trainer(words, n_merges, skip=skip)
    return learn


def test_pruning_worked_example() -> None:
    """Words abc x5, abd x3, xy x2, three merges.  Plain BPE: ab (8), abc (5), abd (3); ab is
    intermediate only (5 + 3 of its 8 consumed).  Its least frequent user abd is refused: ab (8),
    abc (5), then (ab, d) is refused and xy (2) comes next; ab keeps 3, none is intermediate only,
    two runs.  The rule before refused ab itself and went down a chain: bc, abc, bd (bc
    intermediate), then bd, abd, xy (bd intermediate), then xy alone: the pair table had nothing
    else left, and the vocabulary came out two merges short."""
    words = {b"abc": 5, b"abd": 3, b"xy": 2}
    for trainer in (train_merges_naive, merge_loop.train_merges, merge_loop_wide.train_merges):
        stats = PruneStats()
        merges, counts = learn_pruned(_learner(trainer, words, 3), 0, stats)
        assert _made(merges) == [b"ab", b"abc", b"xy"] and counts == [8, 5, 2]
        assert stats.rounds == 2 and stats.per_round == [1, 0] and stats.removed == [b"abd"]
        assert intermediate_merges(merges, counts) == []


def test_rarest_user_ties_go_to_the_later_merge() -> None:
    """ab is used by abc and abd, 4 each (counts 8, 4, 4): the later merge, abd, is refused; a
    user of smaller count goes first whatever its place."""
    merges = [(97, 98), (256, 99), (256, 100)]
    assert rarest_users(merges, [8, 4, 4], [0]) == [2]
    assert rarest_users(merges, [8, 3, 5], [0]) == [1]


@pytest.fixture(scope="module")
def english(corpus_docs: Callable[..., list[str]]) -> list[str]:
    return corpus_docs("english", max_bytes=400_000)


def test_pruned_vocabulary_has_no_intermediate_only_token(english: list[str]) -> None:
    """The plain vocabulary has intermediate-only tokens; the pruned one, of the same size, none
    (as mnemo inspect reports them), and none of the refused tokens is in it.  The first run's
    are kept: their least frequent users are refused instead."""
    plain = mnemo.train_from_iterator(english, vocab_size=4096, workers=1)
    stats = TrainStats(CountStats())
    pruned = mnemo.train_from_iterator(english, vocab_size=4096, workers=1, prune="intermediate", stats=stats)
    before = inspect(plain).intermediate
    after = inspect(pruned).intermediate
    assert before is not None and len(before) > 10
    assert after == []
    assert pruned.n_vocab == plain.n_vocab == 4096 and len(pruned.merges) == len(plain.merges)
    assert stats.prune is not None and stats.prune.per_round[-1] == 0 and stats.prune.rounds >= 2
    assert 0 < len(stats.prune.removed) <= sum(stats.prune.per_round)
    assert stats.prune.per_round[0] == len(before)
    # each intermediate-only token of the plain run has its least frequent user refused ...
    plain_raw = _made(plain.merges)
    assert plain.merge_counts is not None
    found = [f.id - 256 for f in before]
    users = {plain_raw[j] for j in rarest_users(plain.merges, plain.merge_counts, found)}
    assert users <= set(stats.prune.removed)
    assert not set(stats.prune.removed) & set(_made(pruned.merges))
    # ... and most of them stay in the vocabulary, no longer intermediate only
    kept = {f.raw for f in before} & set(_made(pruned.merges))
    assert len(kept) > len(before) // 2
    assert pruned.merge_counts is not None
    assert intermediate_merges(pruned.merges, pruned.merge_counts) == []
    # the tokens before the first removed one are the plain run's own
    first = min(k for k, raw in enumerate(_made(plain.merges)) if raw in set(stats.prune.removed))
    assert pruned.merges[:first] == plain.merges[:first]
    # an ordinary tokenizer: the same text round-trips, and it saves and loads as any other
    text = english[0]
    assert pruned.decode(pruned.encode_ordinary(text)) == text


def test_pruning_fast_equals_naive(english: list[str]) -> None:
    docs = english[:40]
    fast = mnemo.train_from_iterator(docs, vocab_size=600, workers=1, prune="intermediate")
    naive = mnemo.train_from_iterator(docs, vocab_size=600, workers=1, prune="intermediate", algorithm="naive")
    assert fast.merges == naive.merges and fast.merge_counts == naive.merge_counts
    assert inspect(fast).intermediate == []


def test_pruning_keeps_a_base_as_it_is(english: list[str]) -> None:
    """Continuing from a tokenizer: its merges stay first and untouched, intermediate or not;
    only the learnt ones are pruned."""
    base = mnemo.train_from_iterator(english[:60], vocab_size=700, workers=1)
    grown = mnemo.train_from_iterator(english[60:160], vocab_size=1200, workers=1, base=base, prune="intermediate")
    assert grown.merges[: len(base.merges)] == base.merges
    assert grown.merge_counts is not None
    assert intermediate_merges(grown.merges, grown.merge_counts, len(base.merges)) == []


def test_bad_prune_value() -> None:
    with pytest.raises(ConfigError, match="prune must be one of none, intermediate"):
        mnemo.train_from_iterator(["a b c"], vocab_size=300, prune="everything")
    # "none" and None train the plain vocabulary
    docs = ["the cat sat on the mat " * 20]
    plain = mnemo.train_from_iterator(docs, vocab_size=300, workers=1)
    assert mnemo.train_from_iterator(docs, vocab_size=300, workers=1, prune="none").merges == plain.merges


def test_cli_prune(tmp_path: Path, english: list[str]) -> None:
    src = tmp_path / "en.txt"
    src.write_text("\n".join(english[:200]), encoding="utf-8")
    out = subprocess.run([MNEMO, "train", str(src), "-o", str(tmp_path / "p.bin"), "--vocab-size", "2048",
                          "--prune", "intermediate", "-q"], capture_output=True, text=True, check=True).stdout
    assert "pruned: " in out and "tokens refused (the least frequent user of each intermediate-only token" in out
    report = subprocess.run([MNEMO, "inspect", str(tmp_path / "p.bin")], capture_output=True, text=True, check=True).stdout
    assert "intermediate only (every occurrence consumed by later merges in training): 0" in report


def test_random_words_converge() -> None:
    """Many ties and overlaps: the rounds end with none left, in both trainers alike."""
    rng = random.Random(7)
    docs = [" ".join("".join(rng.choice("aab") for _ in range(rng.randint(1, 9))) for _ in range(50)) for _ in range(30)]
    fast = mnemo.train_from_iterator(docs, vocab_size=420, workers=1, prune="intermediate", special_tokens=[])
    naive = mnemo.train_from_iterator(docs, vocab_size=420, workers=1, prune="intermediate", special_tokens=[],
                                      algorithm="naive")
    assert fast.merges == naive.merges
    assert fast.merge_counts is not None and intermediate_merges(fast.merges, fast.merge_counts) == []


def test_continuing_from_a_base_whose_pairs_the_new_text_lacks(english: list[str]) -> None:
    """Regression: an initial merge whose pair never occurs in the new words has no slot in the
    pair table, and the fast trainer read slot -1's fields -- another pair's occurrences and word
    list -- and stopped with "pair (274, 343) occurs 0 times in the words it was made in but the
    table says 1" (this very run, before the fix).  Now it equals the naive twin."""
    from mnemo.count import WordCounter

    base = mnemo.train_from_iterator(english[:60], vocab_size=700, workers=1)
    counter = WordCounter(0)
    for doc in english[60:160]:
        counter.add(doc.encode())
    words = counter.to_dict()
    fast = merge_loop.train_merges(words, 1200 - 256 - 16, initial_merges=list(base.merges))
    assert fast[0][: len(base.merges)] == base.merges
    assert 0 in fast[1][: len(base.merges)]  # some base pair is absent from the new words
    naive = train_merges_naive(words, 1200 - 256 - 16, initial_merges=list(base.merges))
    assert fast == naive


def test_pruned_superword_vocabulary(english: list[str]) -> None:
    """With superword=T a stage-1 token that stage 2 consumes whole is intermediate too: it is
    refused in both stages of the next run, so none is left (the unpruned run has some); the
    stages keep their sizes, and the fast and naive trainers agree."""
    docs = english[:150]
    plain = mnemo.train_from_iterator(docs, vocab_size=2000, superword=1500, workers=1)
    pruned = mnemo.train_from_iterator(docs, vocab_size=2000, superword=1500, workers=1, prune="intermediate")
    before = inspect(plain).intermediate
    assert before is not None and len(before) > 5
    assert inspect(pruned).intermediate == []
    assert pruned.superword == 1500 and len(pruned.merges) == len(plain.merges)
    docs = english[:12]
    fast = mnemo.train_from_iterator(docs, vocab_size=600, superword=450, workers=1, prune="intermediate")
    slow = mnemo.train_from_iterator(docs, vocab_size=600, superword=450, workers=1, prune="intermediate",
                                     algorithm="naive")
    assert fast.merges == slow.merges and fast.superword == slow.superword
