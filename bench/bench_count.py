"""Word counting: MB/s of the compiled counter on English (one process = one worker's share),
next to the pre-tokenizer alone and a `collections.Counter` over `split`, in the same run; and the
crossover between comparing a long chunk inline and calling the asm memeq.

    .venv/bin/pytest bench/bench_count.py --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import json
import lzma
from collections import Counter
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from mnemo.count import WordCounter
from mnemo.patterns import chunk_count, split
from mnemo.pretokenize import pattern_id

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "english.jsonl.xz"
MB = 20


@pytest.fixture(scope="module")
def english() -> list[bytes]:
    if not CORPUS.is_file():
        pytest.skip(f"{CORPUS} is absent")
    docs: list[bytes] = []
    size = 0
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line)["text"].encode("utf-8"))
            size += len(docs[-1])
            if size >= MB * 1_000_000:
                break
    return docs


def _mbps(benchmark: BenchmarkFixture, n_bytes: int) -> None:
    benchmark.extra_info["MB/s"] = round(n_bytes / 1e6 / benchmark.stats.stats.median, 1)


@pytest.mark.benchmark(group=f"count {MB} MB english (one worker)")
def bench_word_counter(benchmark: BenchmarkFixture, english: list[bytes]) -> None:
    def run() -> WordCounter:
        c = WordCounter(pattern_id("mnemonic"))
        for d in english:
            c.add(d)
        return c

    c = benchmark.pedantic(run, rounds=3, iterations=1)
    _mbps(benchmark, c.n_bytes)


@pytest.mark.benchmark(group=f"count {MB} MB english (one worker)")
def bench_pretokenizer_only(benchmark: BenchmarkFixture, english: list[bytes]) -> None:
    pid = pattern_id("mnemonic")
    benchmark.pedantic(lambda: [chunk_count(d, pid) for d in english], rounds=3, iterations=1)
    _mbps(benchmark, sum(map(len, english)))


@pytest.mark.benchmark(group=f"count {MB} MB english (one worker)")
def bench_counter_of_split(benchmark: BenchmarkFixture, english: list[bytes]) -> None:
    def run() -> Counter[bytes]:
        c: Counter[bytes] = Counter()
        for d in english:
            c.update(split(d))
        return c

    benchmark.pedantic(run, rounds=1, iterations=1)
    _mbps(benchmark, sum(map(len, english)))


@pytest.mark.benchmark(group="long chunks: inline compare vs asm memeq")
@pytest.mark.parametrize("length", [16, 32, 64, 96, 128, 256])
@pytest.mark.parametrize("compare", ["inline", "memeq"])
def bench_long_chunk_compare(benchmark: BenchmarkFixture, length: int, compare: str) -> None:
    """200,000 repeats of one `length`-byte chunk (after the first, every chunk is a table hit
    that compares the whole chunk): the time per chunk, inline loop against memeq."""
    word = b"".join(b"%c" % (97 + (i * 7) % 26) for i in range(length))
    text = b" ".join([word] * 200_000)
    threshold = 1 << 40 if compare == "inline" else 0

    def run() -> WordCounter:
        c = WordCounter(pattern_id("gpt2"), 1024)
        c.memeq_min_bytes = threshold  # the counter's seam for this bench (count.py)
        c.add(text)
        return c

    c = benchmark.pedantic(run, rounds=5, iterations=1)
    benchmark.extra_info["ns/chunk"] = round(benchmark.stats.stats.median / c.n_chunks * 1e9, 1)
