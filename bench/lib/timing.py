"""Timing helpers of the side-by-side scripts: passes over documents in process CPU time, the
sides alternated round by round (a neighbour's burst of load hits each side alike)."""

from __future__ import annotations

import gc
import statistics
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


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call; the result is dropped and collected outside the timing."""
    gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    w1, c1 = time.perf_counter(), time.process_time()
    del result
    gc.collect()
    return w1 - w0, c1 - c0


def race_calls(
    forms: dict[str, Callable[[], Any]], rounds: int, indent: str = "  ", timer: Callable[[Callable[[], Any]], tuple[float, float]] = timed
) -> None:
    """Time each form once a round, the forms in turn, `rounds` rounds, and print the best wall and
    CPU seconds of each, their ratios to the first form's best (the reference), and the median
    of the rounds' own CPU ratios.  `timer` gives (wall, CPU) of one call of a form: `timed` by
    default; a form that times itself elsewhere (a child process) passes one that calls it."""
    names = list(forms)
    reference = names[0]
    best = {form: (float("inf"), float("inf")) for form in names}
    ratios: dict[str, list[float]] = {form: [] for form in names}
    for _ in range(rounds):
        times = {form: timer(fn) for form, fn in forms.items()}
        for form, (wall, cpu) in times.items():
            best[form] = (min(best[form][0], wall), min(best[form][1], cpu))
            ratios[form].append(cpu / times[reference][1])
    print(f"{indent}{'form':24s} {'wall s':>8s} {'CPU s':>8s}   to {reference}: best/best wall, CPU; median of rounds' CPU ratios")
    for form in names:
        wall, cpu = best[form]
        median = statistics.median(ratios[form])
        print(f"{indent}{form:24s} {wall:8.3f} {cpu:8.3f}   {wall / best[reference][0]:5.2f}  {cpu / best[reference][1]:5.2f}  {median:5.2f}")
