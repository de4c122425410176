"""The kernels (asm/*.asm and their C twins) against a plain numpy/Python oracle, on every
backend this machine can run, including runs that end exactly at a PROT_NONE guard page."""

from __future__ import annotations

import ctypes
import mmap
import random
from collections.abc import Iterator

import numpy as np
import pytest

from mnemo import kernels

SEP = 0xFFFF  # the trainer's word separator


def oracle_pairs(tok: np.ndarray, a: int, b: int) -> list[int]:
    if len(tok) < 2:
        return []
    return [int(i) for i in np.flatnonzero((tok[:-1] == a) & (tok[1:] == b))]


def scan_all(tok: np.ndarray, a: int, b: int) -> list[int]:
    out = np.full(max(len(tok), 1), -7, dtype=np.int64)
    n = kernels.pair_scan(tok, a, b, out)
    assert (out[n:] == -7).all(), "kernel wrote past the hits it reported"
    return [int(x) for x in out[:n]]


# ---- pair scan: every length, every alignment ----------------------------------------------


def random_tokens(rng: random.Random, n: int, a: int, b: int) -> np.ndarray:
    alphabet = [a, b, a, b, 7, SEP, 0, 1]
    tok = np.array([rng.choice(alphabet) for _ in range(n)], dtype=np.uint16)
    if n >= 2 and rng.random() < 0.5:  # hits at the very first and the very last position
        tok[0], tok[1] = a, b
        tok[n - 2], tok[n - 1] = a, b
    return tok


@pytest.mark.parametrize("n", range(0, 301))
def test_pair_scan_every_length_and_alignment(backend: str, n: int) -> None:
    rng = random.Random(n)
    raw = bytearray(2 * n + 64)
    for align in range(32):  # byte offsets 0..31: every position relative to a 32-byte vector
        a, b = rng.choice([(1, 2), (2, 2), (SEP, 1), (0, SEP), (0x8000, 0x7FFF)])
        tok = np.frombuffer(raw, dtype=np.uint16, count=n, offset=align)
        tok[:] = random_tokens(rng, n, a, b)
        assert scan_all(tok, a, b) == oracle_pairs(tok, a, b), (n, align, a, b)


def test_pair_scan_overlapping_runs(backend: str) -> None:
    """A run `a a a a` holds the pair (a, a) at every position but the last: the scan reports
    occurrences, not a non-overlapping choice (that is the trainer's job)."""
    tok = np.array([5] * 40 + [6] + [5, 5], dtype=np.uint16)
    assert scan_all(tok, 5, 5) == list(range(39)) + [41]


def test_pair_scan_cap_and_resume(backend: str) -> None:
    rng = random.Random(1)
    tok = random_tokens(rng, 5000, 1, 2)
    expected = oracle_pairs(tok, 1, 2)
    assert len(expected) > 100
    got: list[int] = []
    start = 0
    out = np.zeros(37, dtype=np.int64)
    while True:
        n = kernels.pair_scan(tok, 1, 2, out, start)
        got += [int(x) for x in out[:n]]
        if n < len(out):
            break
        start = int(out[n - 1]) + 1
    assert got == expected


def test_pair_scan_start_stop_are_absolute(backend: str) -> None:
    tok = np.array([1, 2, 1, 2, 1, 2, 1, 2], dtype=np.uint16)
    out = np.zeros(8, dtype=np.int64)
    n = kernels.pair_scan(tok, 1, 2, out, 1, 6)  # pair starts 1..4; the pair at 4 ends at 5 < 6
    assert list(out[:n]) == [2, 4]
    n = kernels.pair_scan(tok, 1, 2, out, 1, 5)  # stop cuts the pair at 4 (its second token is 5)
    assert list(out[:n]) == [2]


def test_pair_positions_matches_pair_scan(backend: str) -> None:
    rng = random.Random(2)
    tok = random_tokens(rng, 3001, 2, 2)
    expected = oracle_pairs(tok, 2, 2)
    packed = kernels.pair_positions(tok, 2, 2, 10**9)
    assert np.frombuffer(packed, dtype="<i8").tolist() == expected
    assert np.frombuffer(kernels.pair_positions(tok, 2, 2, 5), dtype="<i8").tolist() == expected[:5]
    assert kernels.pair_positions(tok, 2, 2, 0) == b""


def test_pair_scan_threads_equal_one_thread(backend: str) -> None:
    """Two to eight threads cut the array into parts; pairs across every cut are found once."""
    rng = np.random.default_rng(3)
    tok = rng.choice(np.array([1, 2, SEP], dtype=np.uint16), size=4_000_003)
    expected = kernels.pair_positions(tok, 1, 2, 10**9)
    for threads in (2, 3, 8):
        assert kernels.pair_positions(tok, 1, 2, 10**9, 0, -1, threads) == expected
    capped = kernels.pair_positions(tok, 1, 2, 1000, 0, -1, 4)
    assert capped == expected[: 1000 * 8]


def test_pair_scan_accepts_librt_vec_buffer(backend: str) -> None:
    """The trainer's token store is a librt vec[i16]; its read-only buffer is scanned in place."""
    from librt.vecs import vec
    from mypy_extensions import i16

    v = vec[i16]([1, 2, -1, 1, 2, 3, -1, 1, 2])
    assert scan_all(np.asarray(memoryview(v)), 1, 2) == [0, 3, 7]
    assert np.frombuffer(kernels.pair_positions(v, 1, 2, 10), dtype="<i8").tolist() == [0, 3, 7]


def test_pair_scan_rejects_bad_arguments() -> None:
    tok = np.zeros(10, dtype=np.uint16)
    out = np.zeros(10, dtype=np.int64)
    with pytest.raises(TypeError, match="16-bit"):
        kernels.pair_scan(np.zeros(10, dtype=np.uint32), 1, 2, out)
    with pytest.raises(TypeError, match="64-bit"):
        kernels.pair_scan(tok, 1, 2, np.zeros(10, dtype=np.int32))
    with pytest.raises((TypeError, BufferError), match="writable|read-only"):
        kernels.pair_scan(tok, 1, 2, bytes(80))
    with pytest.raises(ValueError, match="0..65535"):
        kernels.pair_scan(tok, 70000, 2, out)
    with pytest.raises(ValueError, match="start=5 stop=3"):
        kernels.pair_scan(tok, 1, 2, out, 5, 3)
    with pytest.raises(ValueError, match="stop=11"):
        kernels.pair_scan(tok, 1, 2, out, 0, 11)
    with pytest.raises(ValueError, match="not available"):
        kernels.set_backend("sse9")


# ---- memeq ---------------------------------------------------------------------------------


def test_memeq_shift_goes_right_regression(backend: str) -> None:
    """The original bug: for a short range, the kernel loads the 8 bytes that END where the range
    ends and must shift RIGHT to drop the bytes before the range.  Shifting left kept those bytes,
    so " the" after "of" and " the" after "in" compared different."""
    a = b"a cup of the tea"
    b = b"a cup in the tea"
    assert a[8:12] == b[8:12] == b" the"
    assert kernels.memeq(a, 8, b, 8, 4)
    text = b"some of the time, most in the end"
    i, j = text.index(b" the"), text.rindex(b" the")
    assert kernels.memeq(text, i, text, j, 4)
    assert not kernels.memeq(text, i - 1, text, j - 1, 5)  # "f the" vs "n the"


def test_memeq_every_length_offset_and_difference(backend: str) -> None:
    rng = random.Random(4)
    for n in range(0, 80):
        for off in (0, 1, 3, 7, 8, 9, 15, 31, 33):
            base = bytes(rng.randrange(256) for _ in range(off + n + 40))
            other = bytearray(base)
            # bytes outside the range differ wildly; they must not matter
            for k in list(range(0, off)) + list(range(off + n, len(other))):
                other[k] ^= 0xA5
            assert kernels.memeq(base, off, bytes(other), off, n), (n, off)
            for k in range(off, off + n):
                flipped = bytearray(other)
                flipped[k] ^= 1 << rng.randrange(8)
                assert not kernels.memeq(base, off, bytes(flipped), off, n), (n, off, k)


def test_memeq_different_offsets(backend: str) -> None:
    text = b"xxhello world, hello world!!"
    assert kernels.memeq(text, 2, text, 15, 11)
    assert not kernels.memeq(text, 2, text, 15, 12)


def test_memeq_rejects_out_of_bounds() -> None:
    with pytest.raises(ValueError, match="out of bounds"):
        kernels.memeq(b"abc", 1, b"abc", 0, 3)
    with pytest.raises(ValueError, match="out of bounds"):
        kernels.memeq(b"abc", -1, b"abc", 0, 1)


# ---- guard pages: no kernel reads outside its ranges ------------------------------------------

PAGE = mmap.PAGESIZE
PROT_NONE = 0


class Guarded:
    """Three pages: [guard][data][guard].  Touching a guard page kills the process with SIGSEGV,
    so a kernel that reads one byte too far fails the run."""

    def __init__(self) -> None:
        self.mm = mmap.mmap(-1, 3 * PAGE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.mm))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for page in (0, 2):
            if libc.mprotect(self.addr + page * PAGE, PAGE, PROT_NONE) != 0:
                pytest.skip(f"mprotect failed (errno {ctypes.get_errno()})")
        self.data = np.frombuffer(self.mm, dtype=np.uint8, count=PAGE, offset=PAGE)


@pytest.fixture(scope="module")
def guarded() -> Iterator[Guarded]:
    yield Guarded()


def test_pair_scan_at_guard_pages(backend: str, guarded: Guarded) -> None:
    rng = np.random.default_rng(5)
    page_tokens = guarded.data.view(np.uint16)  # the whole data page as PAGE/2 tokens
    page_tokens[:] = rng.choice(np.array([1, 2, SEP], dtype=np.uint16), size=len(page_tokens))
    for n in list(range(0, 301)) + [len(page_tokens)]:
        at_end = page_tokens[len(page_tokens) - n :]  # ends exactly where the guard begins
        at_start = page_tokens[:n]  # starts right after the guard
        for tok in (at_end, at_start):
            assert scan_all(tok, 1, 2) == oracle_pairs(tok, 1, 2)
            assert scan_all(tok, 2, 2) == oracle_pairs(tok, 2, 2)


def test_memeq_at_guard_pages(backend: str, guarded: Guarded) -> None:
    data = guarded.data
    data[:] = np.frombuffer(bytes(range(256)) * (PAGE // 256), dtype=np.uint8)
    data[PAGE // 2 :] = data[: PAGE // 2]  # the second half repeats the first
    half = PAGE // 2
    for n in range(0, 300):
        # a range that ends exactly at the guard after the page, compared with its copy
        assert kernels.memeq(data, PAGE - n, data, half - n, n)
        # a range at the very start of the buffer: "the 8 bytes that end where the range ends"
        # would reach into the guard before it, so the kernel must compare byte by byte there
        assert kernels.memeq(data, 0, data, half, n)
        if n:
            assert not kernels.memeq(data, 0, data, 1, n)
