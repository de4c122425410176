"""Naive twin vs fast trainer on the same words: the first 2 MB of the English corpus,
pre-tokenized with GPT-2's pattern (regex stand-in, see words_cache.py), 600 merges.

Run: .venv/bin/pytest bench/pytest/bench_trainer.py -p no:randomly --benchmark-columns=min,median,rounds
The naive run takes minutes, so it runs once; the last test prints the speed-up measured in
this same run (goal: fast at least 100 times faster).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from words_cache import corpus_words  # noqa: E402

from mnemo.reference import train_merges_naive  # noqa: E402
from mnemo.merge_loop import train_merges  # noqa: E402

N_MERGES = 600
MAX_BYTES = 2_000_000
_RESULTS: dict[str, tuple[float, tuple[list[tuple[int, int]], list[int]]]] = {}


@pytest.fixture(scope="module")
def words() -> dict[bytes, int]:
    try:
        return corpus_words("english", MAX_BYTES, "gpt2")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.benchmark(group="train 2 MB english, 600 merges")
def test_naive(benchmark: BenchmarkFixture, words: dict[bytes, int]) -> None:
    result = benchmark.pedantic(train_merges_naive, args=(words, N_MERGES), rounds=1, iterations=1)
    _RESULTS["naive"] = (benchmark.stats.stats.min, result)


@pytest.mark.benchmark(group="train 2 MB english, 600 merges")
def test_fast(benchmark: BenchmarkFixture, words: dict[bytes, int]) -> None:
    result = benchmark.pedantic(train_merges, args=(words, N_MERGES), rounds=5, iterations=1)
    _RESULTS["fast"] = (benchmark.stats.stats.min, result)


def test_speedup() -> None:
    if set(_RESULTS) != {"naive", "fast"}:
        pytest.skip("run the whole file: the ratio needs both timings from this run")
    naive_s, naive_result = _RESULTS["naive"]
    fast_s, fast_result = _RESULTS["fast"]
    assert fast_result == naive_result
    print(f"\nnaive {naive_s:.2f} s, fast {fast_s * 1000:.1f} ms: fast is {naive_s / fast_s:.0f}x faster")
