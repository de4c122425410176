"""Timing helpers of the side-by-side scripts: passes over documents in process CPU time, the
sides alternated round by round (a neighbour's burst of load hits each side alike)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any


def cpu_pass(fn: Callable[[str], Any], docs: Sequence[str]) -> float:
    """CPU seconds of one call of `fn` per document."""
    t0 = time.process_time()
    for doc in docs:
        fn(doc)
    return time.process_time() - t0


def best_alternated(sides: Sequence[Callable[[str], Any]], docs: Sequence[str], rounds: int) -> list[float]:
    """The best pass of each side over `rounds` rounds, the order reversed every other round."""
    best = [float("inf")] * len(sides)
    for r in range(rounds):
        order = range(len(sides)) if r % 2 == 0 else reversed(range(len(sides)))
        for k in order:
            best[k] = min(best[k], cpu_pass(sides[k], docs))
    return best
