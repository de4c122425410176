"""Stage 2's merge loop with a threshold (merge_loop.continue_state's `theta`,
docs/superword.md): pairs made with a count below theta are dropped from the pair table
(`_Pairs.remove`, backward-shift deletion) and learning stops at the first merge below theta;
the merges up to there are the unthresholded run's, with every pair recounted (`verify`)."""

from __future__ import annotations

import random
import re
import struct
from collections import Counter
from collections.abc import Callable
from types import ModuleType

import pytest

from mnemo import merge_loop, merge_loop_wide

LOOPS = [merge_loop, merge_loop_wide]


@pytest.fixture(scope="module")
def english(corpus_docs: Callable[..., list[str]]) -> list[str]:
    return corpus_docs("english", max_bytes=300_000)


@pytest.mark.parametrize("loop", LOOPS, ids=["narrow", "wide"])
def test_remove_keeps_every_other_key_reachable(loop: ModuleType) -> None:
    """Random inserts and removals in a table kept at its smallest size (long probe runs that
    wrap around its end) against a dict: every key present is found with its fields, every
    key removed is not."""
    rng = random.Random(30)
    table = loop._Pairs(1)
    want: dict[int, int] = {}
    for step in range(20_000):
        if want and (rng.random() < 0.45 or len(want) > 480):
            key = rng.choice(sorted(want))
            table.remove(key)
            del want[key]
        else:
            key = rng.randrange(1, 1 << 30)
            if key in want:
                continue
            s = table.slot(key)
            table.data[s + 1] = key % 977
            table.data[s + 2] = step
            table.data[s + 3] = key % 13
            want[key] = step
        if step % 997 == 0:
            assert table.used == len(want)
            for k, st in want.items():
                s = table.find(k)
                assert s >= 0 and list(table.data[s + 1 : s + 4]) == [k % 977, st, k % 13]
    assert len(table.data) == 4 * 1024  # never grew: removal freed the slots
    keys = {table.data[s] for s in range(0, len(table.data), 4)} - {merge_loop.EMPTY}
    assert keys == set(want)
    table.sub(12345678, 5)  # absent: nothing happens
    assert table.find(12345678) < 0


def _state(loop: ModuleType, words: Counter[bytes]) -> object:
    """The words as layout_ids takes them: each byte an id of four bytes, each word's length
    in those bytes."""
    ids = b"".join(struct.pack(f"<{len(w)}i", *w) for w in words)
    meta = b"".join(struct.pack("<qq", 4 * len(w), c) for w, c in words.items())
    return loop.layout_ids(ids, meta, [], [])


@pytest.mark.parametrize("loop", LOOPS, ids=["narrow", "wide"])
@pytest.mark.parametrize("tie", ["id", "bytes"])
def test_a_threshold_gives_the_same_merges_down_to_it(loop: ModuleType, tie: str, english: list[str]) -> None:
    """Words over bytes (longer than chunks: phrases, so that many pairs are made rare), learnt
    with no threshold and with several: each thresholded run learns the first merges of the
    unthresholded one, exactly those of count >= theta, and its recount finds every pair it
    kept exact and every pair it dropped below theta."""
    words = Counter(m.encode() for d in english[:60] for m in re.findall(r"[^.\n]+", d) if len(m) > 1)
    n = 3000
    full = _state(loop, words)
    loop.continue_state(full, n, tie, True)
    counts = full.counts
    assert len(full.merges) == n and counts[-1] >= 2
    for theta in (2, 3, counts[n // 4], counts[n // 2], counts[0], counts[0] + 1):
        cut = _state(loop, words)
        loop.continue_state(cut, n, tie, True, None, None, theta)
        k = sum(1 for c in counts if c >= theta)
        assert cut.merges == full.merges[:k] and cut.counts == counts[:k], theta


def _bucket(loop: ModuleType, key: int) -> int:
    """_verify_dropped's sum of pair `key` (the 64-bit product wraps, as in the compiled code)."""
    prod = (key * loop.VERIFY_MUL) & ((1 << 64) - 1)
    if prod >= 1 << 63:
        prod -= 1 << 64
    return (prod >> loop.VERIFY_SHIFT) & ((1 << loop.VERIFY_BITS) - 1)


@pytest.mark.parametrize("loop", LOOPS, ids=["narrow", "wide"])
def test_verify_with_theta_is_as_strict_as_a_full_recount(loop: ModuleType) -> None:
    """`_verify` with theta > 0 (`_verify_dropped`: the kept pairs recounted exactly, the dropped
    ones bounded by hashed sums, a sum that reaches theta counted exactly) raises exactly when a
    full recount finds a kept pair off, or a pair missing from the table with a count of theta
    or more.  Words over a few tokens, so that pairs repeat; tables kept right, one count off,
    a pair of count >= theta left out, and pairs below theta left out in sums made to collide
    (found by hashing) so that a sum reaches theta though no pair does."""
    from librt.vecs import vec
    from mypy_extensions import i16, i32, i64

    wide = loop is merge_loop_wide
    sep = -1
    shift = loop.KEY_SHIFT
    # two pairs in one sum, both below theta (their sum above it): the second pass must clear them
    first: dict[int, int] = {}
    twins: tuple[int, int] | None = None
    a = 1
    while twins is None:
        for b in range(1, 200):
            key = a << shift | b
            h = _bucket(loop, key)
            if h in first:
                twins = (first[h], key)
                break
            first[h] = key
        a += 1
    rng = random.Random(16)
    for trial in range(300):
        theta = rng.choice([2, 5, 20])
        words = [[rng.randrange(1, 6) for _ in range(rng.randrange(1, 6))] for _ in range(rng.randrange(1, 12))]
        counts = [rng.randrange(1, 9) for _ in words]
        if trial % 3 == 0:
            # the colliding pair twice, each below theta, together above it
            for key in twins:
                words.append([key >> shift, key & loop.KEY_MASK])
                counts.append(max(1, theta - 1))
        toks, wcnt = [sep], [0]
        for w, c in zip(words, counts):
            toks += w + [sep]
            wcnt += [c] * (len(w) + 1)
        fresh: Counter[int] = Counter()
        occ: Counter[int] = Counter()
        for i in range(1, len(toks)):
            if toks[i] != sep and toks[i - 1] != sep:
                fresh[toks[i - 1] << shift | toks[i]] += wcnt[i]
                occ[toks[i - 1] << shift | toks[i]] += 1
        kept = {k for k in fresh if fresh[k] >= theta or rng.random() < 0.5}
        fault = rng.choice(["none", "none", "count", "missing"])
        table = loop._Pairs(4)
        for k in sorted(kept):
            s = table.slot(k)
            table.data[s + 1] = fresh[k]
            table.data[s + 2] = occ[k]
        bad = False
        if fault == "count" and kept:
            k = rng.choice(sorted(kept))
            table.data[table.find(k) + 1] += 1
            bad = True
        if fault == "missing":
            heavy = sorted(k for k in kept if fresh[k] >= theta)
            if heavy:
                table.remove(heavy[0])
                bad = True
        vt = vec[i32]([x for x in toks]) if wide else vec[i16]([x for x in toks])
        vw = vec[i64](wcnt)
        if bad:
            with pytest.raises(loop.VerificationError, match="recounted from scratch|missing from the maintained"):
                loop._verify(vt, vw, len(toks), table, theta)
        else:
            loop._verify(vt, vw, len(toks), table, theta)
