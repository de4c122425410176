"""Kernel timings: the asm pair scan against its C twin and numpy on a 20 MB token array, and
memeq on short and long ranges against a bytes-slice comparison.  One group per operation, so
each table compares the variants measured in the same run (these machines are shared and noisy:
read the ratios, not the absolute times).

    make bench        # or: .venv/bin/pytest bench/bench_kernels.py
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from mnemo import kernels

N_TOKENS = 10_000_000  # 20 MB of uint16
A, B = 1234, 5678


@pytest.fixture(scope="module")
def tokens() -> np.ndarray:
    """Random ids below 8192 with 0xFFFF separators, and the pair (A, B) at 0.1 % of positions."""
    rng = np.random.default_rng(0)
    tok = rng.integers(0, 8192, size=N_TOKENS, dtype=np.uint16)
    tok[rng.random(N_TOKENS) < 0.15] = 0xFFFF
    hits = rng.choice(N_TOKENS - 1, size=N_TOKENS // 1000, replace=False)
    tok[hits], tok[hits + 1] = A, B
    return tok


@pytest.fixture
def use(request: pytest.FixtureRequest) -> Iterator[Callable[[str], None]]:
    before = kernels.backend()

    def switch(name: str) -> None:
        if name not in kernels.backends():
            pytest.skip(f"backend {name} is not available here")
        kernels.set_backend(name)

    yield switch
    kernels.set_backend(before)


def numpy_scan(tok: np.ndarray) -> np.ndarray:
    return np.flatnonzero((tok[:-1] == A) & (tok[1:] == B))


def split_scan(pool: ThreadPoolExecutor, tok: np.ndarray, parts: int) -> np.ndarray:
    """One scan cut into `parts` pieces scanned by threads at once (the shim releases the GIL).
    Part k owns the pair starts [s_k, s_k+1) and reads one token past its end, so a pair across a
    cut is found exactly once."""
    pairs = len(tok) - 1
    bounds = [pairs * k // parts for k in range(parts + 1)]

    def part(k: int) -> np.ndarray:
        s, e = bounds[k], bounds[k + 1]
        out = np.empty(e - s, dtype=np.int64)
        n = kernels.pair_scan(tok, A, B, out, s, e + 1)
        return out[:n]

    return np.concatenate(list(pool.map(part, range(parts))))


@pytest.mark.benchmark(group="pair scan, 20 MB")
@pytest.mark.parametrize("impl", ["avx2", "avx2-2threads", "c", "numpy"])
def bench_pair_scan(benchmark: Any, tokens: np.ndarray, use: Callable[[str], None], impl: str) -> None:
    expected = numpy_scan(tokens)
    if impl == "numpy":
        got = benchmark(numpy_scan, tokens)
    else:
        use(impl.split("-")[0])
        if impl.endswith("2threads"):
            with ThreadPoolExecutor(2) as pool:
                got = benchmark(split_scan, pool, tokens, 2)
        else:
            out = np.empty(len(expected) + 16, dtype=np.int64)
            n = benchmark(kernels.pair_scan, tokens, A, B, out, 0, -1)
            got = out[:n]
    assert np.array_equal(got, expected)


@pytest.mark.benchmark(group="memeq")
@pytest.mark.parametrize("n", [6, 4096])
@pytest.mark.parametrize("impl", ["avx2", "c", "bytes-slice"])
def bench_memeq(benchmark: Any, use: Callable[[str], None], impl: str, n: int) -> None:
    text = (b"the quick brown fox jumps over the lazy dog " * (2 * n // 44 + 2))[: 2 * n + 64]
    text = text[: n + 32] + text[32 : n + 32]  # the range at 32 repeats at n + 32

    def loop_memeq() -> bool:
        eq = True
        for _ in range(1000):
            eq = kernels.memeq(text, 32, text, n + 32, n) and eq
        return eq

    def loop_slices() -> bool:
        eq = True
        for _ in range(1000):
            eq = text[32 : n + 32] == text[n + 32 : 2 * n + 32] and eq
        return eq

    if impl == "bytes-slice":
        assert benchmark(loop_slices)
    else:
        use(impl)
        assert benchmark(loop_memeq)


@pytest.fixture(scope="module")
def english() -> bytes:
    from _corpus import documents

    return "".join(documents(5, "english")).encode("utf-8")


@pytest.mark.benchmark(group="class masks, 5 MB of English")
@pytest.mark.parametrize("impl", ["avx2", "c", "compiled"])
def bench_class_masks(benchmark: Any, english: bytes, use: Callable[[str], None], impl: str) -> None:
    """The kernel (asm and its C twin) and the compiled twin over a whole text: MB/s = 5.56 / the
    time.  Compare with chunk_count below, today's compiled pre-tokenizer loop on the same text."""
    from mnemo import classmask

    table = classmask.GPT_TABLE
    if impl == "compiled":
        got = benchmark(classmask.class_masks_compiled, english, table)
    else:
        use(impl)
        got = benchmark(kernels.class_masks, english, table)
    assert got == classmask.class_masks_compiled(english, table)


@pytest.mark.benchmark(group="class masks, 5 MB of English")
def bench_chunk_count_cl100k(benchmark: Any, english: bytes) -> None:
    from mnemo.patterns import chunk_count
    from mnemo.pretokenize import PATTERN_CL100K

    assert benchmark(chunk_count, english, PATTERN_CL100K) > 0


@pytest.mark.benchmark(group="class masks, short texts (1000 calls)")
@pytest.mark.parametrize("n", [16, 64, 256])
@pytest.mark.parametrize("impl", ["kernel", "compiled"])
def bench_class_masks_short(benchmark: Any, impl: str, n: int) -> None:
    """Where the compiled loop beats the call into the extension (classmask.SHORT)."""
    from mnemo import classmask

    text = (b"the quick brown fox jumps over the lazy dog " * 8)[:n]
    table = classmask.GPT_TABLE
    fn = kernels.class_masks if impl == "kernel" else classmask.class_masks_compiled

    def loop() -> bytes:
        out = b""
        for _ in range(1000):
            out = fn(text, table)
        return out

    assert benchmark(loop) == classmask.class_masks_compiled(text, table)
