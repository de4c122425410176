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
