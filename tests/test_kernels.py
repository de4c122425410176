"""The kernels (asm/*.asm and their C twins) against a plain numpy/Python oracle, on every
backend this machine can run, including runs that end exactly at a PROT_NONE guard page."""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import random
from collections.abc import Iterator
from pathlib import Path

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


def test_pair_scan_takes_no_threads_argument() -> None:
    """The shim stays thin: splitting a scan across threads is the caller's (the bench does it
    with Python threads while the GIL is released); a seventh argument is refused."""
    tok = np.array([1, 2, 1, 2], dtype=np.uint16)
    with pytest.raises(TypeError, match="takes 4 to 6 positional arguments, got 7"):
        kernels.pair_positions(tok, 1, 2, 10, 0, -1, 2)  # type: ignore[call-arg]


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


# ---- class masks ---------------------------------------------------------------------------


def oracle_masks(data: bytes, table: bytes) -> bytes:
    """Eight little-endian uint64 per 64-byte block: mask p bit j = bit p of table[data[64k + j]]."""
    out = bytearray()
    for base in range(0, len(data), 64):
        block = data[base : base + 64]
        for p in range(8):
            m = sum(((table[b] >> p) & 1) << j for j, b in enumerate(block))
            out += m.to_bytes(8, "little")
    return bytes(out)


def random_table(rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(256))


@pytest.mark.parametrize("n", list(range(0, 200)) + [255, 256, 257, 511, 512, 513, 4095, 4096, 4097])
def test_class_masks_every_length_and_alignment(backend: str, n: int) -> None:
    rng = random.Random(n)
    raw = bytes(rng.randrange(256) for _ in range(n + 40))
    for align in (0, 1, 7, 31, 33):
        table = random_table(rng)
        view = memoryview(raw)[align : align + n]
        data = bytes(view)
        got = kernels.class_masks(view, table)
        assert got == oracle_masks(data, table), (n, align)
        assert len(got) == 64 * ((n + 63) // 64)


def test_class_masks_gpt_table_worked_example(backend: str) -> None:
    """"It's 42\n" under GPT_TABLE: I upper; t s lower; ' apos; spaces at 4; 4 2 digits; \n at 7."""
    from mnemo import classmask

    m = kernels.class_masks(b"It's 42\n", classmask.GPT_TABLE)
    words = [int.from_bytes(m[8 * p : 8 * p + 8], "little") for p in range(8)]
    assert words[0] == 0b0000_1010  # LOWER: t, s
    assert words[1] == 0b0000_0001  # UPPER: I
    assert words[2] == 0b0110_0000  # DIGIT
    assert words[3] == 0b0001_0000  # SPACE
    assert words[4] == 0  # WHITE
    assert words[5] == 0b1000_0000  # NEWLINE
    assert words[6] == 0b0000_0100  # APOS
    assert words[7] == 0  # NON_ASCII


def test_class_masks_compiled_twin_and_short_path(backend: str) -> None:
    from mnemo import classmask

    rng = random.Random(9)
    for n in list(range(0, 130)) + [1000]:
        data = bytes(rng.randrange(256) for _ in range(n))
        table = random_table(rng)
        want = oracle_masks(data, table)
        assert classmask.class_masks_compiled(data, table) == want, n
        assert classmask.class_masks(data, table) == want, n


def test_class_masks_of_a_range_are_the_masks_of_its_slice(backend: str) -> None:
    """class_masks(data, table, start, stop) == class_masks(data[start:stop], table): the
    pre-tokenizer classifies a piece of a long text where it lies instead of copying it out
    (pretokenize_bits.BitCursor); the kernel, the compiled twin and the dispatcher agree."""
    from mnemo import classmask

    rng = random.Random(13)
    data = bytes(rng.randrange(256) for _ in range(5000))
    table = random_table(rng)
    cuts = [0, 1, 7, 63, 64, 65, 127, 128, 129, 1000, 4935, 4999, 5000]
    for start in cuts:
        for stop in cuts:
            if stop < start:
                continue
            want = oracle_masks(data[start:stop], table)
            assert kernels.class_masks(data, table, start, stop) == want, (start, stop)
            assert classmask.class_masks_compiled(data, table, start, stop) == want, (start, stop)
            assert classmask.class_masks(data, table, start, stop) == want, (start, stop)
    assert classmask.class_masks(data, table, 100) == oracle_masks(data[100:], table)  # stop < 0: the end
    with pytest.raises(ValueError, match="start 9 and stop 8"):
        classmask.class_masks(data[:20], table, 9, 8)  # the short path leaves a bad range to the kernel


def test_gpt_table_agrees_with_the_pretokenizer_classes() -> None:
    """Each ASCII byte's properties are its class in the pre-tokenizer's tables (generated from
    `regex`), with letters split by case; every byte from 0x80 is NON_ASCII alone."""
    from mnemo import _unicode_tables, classmask

    by_class = {0: 0, 1: classmask.APOS, 3: classmask.DIGIT, 4: classmask.SPACE, 5: classmask.WHITE,
                6: classmask.NEWLINE}
    for b in range(128):
        cls = _unicode_tables.ASCII_CLASS[b]
        want = (classmask.UPPER if chr(b).isupper() else classmask.LOWER) if cls == 2 else by_class[cls]
        assert classmask.GPT_TABLE[b] == want, hex(b)
    assert set(classmask.GPT_TABLE[128:]) == {classmask.NON_ASCII}


def test_run_end_against_a_byte_loop(backend: str) -> None:
    from mnemo import classmask

    rng = random.Random(11)
    alphabet = b"ab AB09'\n\t.,\xc3\xa9"
    for n in list(range(1, 140)) + [1000]:
        data = bytes(rng.choice(alphabet) for _ in range(n))
        masks = classmask.class_masks(data, classmask.GPT_TABLE)
        for bits in (classmask.LETTER, classmask.LOWER, classmask.DIGIT, classmask.ANY_WHITE, classmask.NON_ASCII, 255):
            for pos in range(n):
                for end in {n, min(n, pos + 1), min(n, pos + 5)}:
                    want = pos
                    while want < end and classmask.GPT_TABLE[data[want]] & bits:
                        want += 1
                    assert classmask.run_end(masks, bits, pos, end) == want, (n, bits, pos, end)


def test_class_masks_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="256 bytes.*got 255"):
        kernels.class_masks(b"abc", bytes(255))
    with pytest.raises(TypeError, match="data"):
        kernels.class_masks(None, bytes(256))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="table"):
        kernels.class_masks(b"abc", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes 2 or 4 positional arguments, got 3"):
        kernels.class_masks(b"abc", bytes(256), 0)
    for start, stop in ((2, 1), (-1, 2), (0, 4), (4, 4)):
        with pytest.raises(ValueError, match=f"start {start} and stop {stop} must satisfy"):
            kernels.class_masks(b"abc", bytes(256), start, stop)
    from mnemo import classmask

    with pytest.raises(ValueError, match="256 bytes"):
        classmask.class_masks(b"ab", bytes(3))  # the short path checks the table too


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


def test_class_masks_at_guard_pages(backend: str, guarded: Guarded) -> None:
    rng = random.Random(12)
    table = random_table(rng)
    guarded.data[:] = np.frombuffer(bytes(rng.randrange(256) for _ in range(PAGE)), dtype=np.uint8)
    page = bytes(guarded.data)
    for n in list(range(0, 200)) + [PAGE - 1, PAGE]:
        at_end = guarded.data[PAGE - n :]  # ends exactly where the guard begins
        at_start = guarded.data[:n]  # starts right after the guard
        assert kernels.class_masks(at_end, table) == oracle_masks(page[PAGE - n :], table), n
        assert kernels.class_masks(at_start, table) == oracle_masks(page[:n], table), n
        # a range of the whole page that ends at the guard, and one that starts at it
        assert kernels.class_masks(guarded.data, table, PAGE - n, PAGE) == oracle_masks(page[PAGE - n :], table), n
        assert kernels.class_masks(guarded.data, table, 0, n) == oracle_masks(page[:n], table), n


# ---- every argument at its extremes, in a child process ---------------------------------------
#
# An overflowing bounds check (`a_off + n > len` with a_off = 2**63 - 1) let memeq read far outside
# its buffers and kill the interpreter.  These calls run in a child so that a crash fails the test
# (naming the call) instead of killing pytest.  Each call must return the oracle's answer or raise
# TypeError/ValueError naming the argument.

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

EXTREMES = (0, 1, 2, 7, 8, 9, 15, 16, 17, -1, -2, 2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**63 - 1,
            -(2**63), 2**63, 2**64, -(2**63) - 1, 10**30)

_CHILD = r'''
import json, sys
import numpy as np
from mnemo import kernels
kernels.set_backend(sys.argv[1])
for line in sys.stdin:
    name, args = json.loads(line)
    tok = np.array([1, 2, 1, 2, 2, 1, 2, 0, 1, 2], dtype=np.uint16)
    real = {"tok": tok, "out": np.full(16, -7, dtype=np.int64), "a8": b"abcdefgh", "b8": b"abcdefgh",
            "x8": b"abcdefgX", "t256": bytes(range(256))}
    call = [real.get(x, x) if isinstance(x, str) else x for x in args]
    try:
        res = getattr(kernels, name)(*call)
        if isinstance(res, bytes):
            res = np.frombuffer(res, dtype="<i8").tolist()
        elif name == "pair_scan":
            out = call[3]
            assert (out[res:] == -7).all(), "wrote past its hits"
            res = out[:res].tolist()
        out_line = ["ok", res]
    except (TypeError, ValueError) as exc:
        out_line = [type(exc).__name__, str(exc)]
    except BaseException as exc:
        out_line = ["other", f"{type(exc).__name__}: {exc}"]
    print(json.dumps(out_line), flush=True)
'''


def _memeq_oracle(args: list[object]) -> object:
    data = {"a8": b"abcdefgh", "b8": b"abcdefgh", "x8": b"abcdefgX"}
    a, aoff, b, boff, n = args
    assert isinstance(a, str) and isinstance(b, str)
    assert isinstance(aoff, int) and isinstance(boff, int) and isinstance(n, int)
    la, lb = len(data[a]), len(data[b])
    if not (0 <= aoff <= la and 0 <= boff <= lb and 0 <= n <= la - aoff and n <= lb - boff):
        return None  # must be an error
    return data[a][aoff : aoff + n] == data[b][boff : boff + n]


TOK = [1, 2, 1, 2, 2, 1, 2, 0, 1, 2]


def _scan_oracle(name: str, args: list[object]) -> object:
    a, b, cap = args[1], args[2], args[3]
    start = args[4] if len(args) > 4 else 0
    stop = args[5] if len(args) > 5 else -1
    assert isinstance(a, int) and isinstance(b, int) and isinstance(start, int)
    assert isinstance(stop, int)
    if name == "pair_scan":
        cap = 16
    assert isinstance(cap, int)
    if stop == -1:
        stop = len(TOK)
    # cap is a limit: beyond 64 bits it means "no limit" (start, stop, a, b are
    # positions and ids: out of range there is an error)
    if not (0 <= a <= 0xFFFF and 0 <= b <= 0xFFFF and 0 <= start <= stop <= len(TOK) and cap >= 0):
        return None
    hits = [i for i in range(start, stop - 1) if TOK[i] == a and TOK[i + 1] == b]
    return hits[:cap]


def _extreme_calls() -> list[tuple[str, list[object]]]:
    calls: list[tuple[str, list[object]]] = []
    memeq_base: list[object] = ["a8", 0, "b8", 0, 8]
    for pos in (1, 3, 4):
        for v in EXTREMES:
            for base in (memeq_base, ["a8", 1, "b8", 1, 7], ["a8", 0, "x8", 0, 7]):
                args = list(base)
                args[pos] = v
                calls.append(("memeq", args))
    # the two calls of the issue, and both offsets at the end with n = 0
    calls += [("memeq", ["a8", 2**63 - 1, "b8", 0, 1]), ("memeq", ["a8", 1, "b8", 1, 2**63 - 1]),
              ("memeq", ["a8", 8, "b8", 8, 0]), ("memeq", ["a8", 2**63 - 1, "b8", 2**63 - 1, 2**63 - 1])]
    for name, fourth in (("pair_scan", "out"), ("pair_positions", 16)):
        base: list[object] = ["tok", 1, 2, fourth, 0, -1]
        for pos in (1, 2, 4, 5) + ((3,) if name == "pair_positions" else ()):
            for v in EXTREMES:
                args = list(base)
                args[pos] = v
                calls.append((name, args))
                if pos in (4, 5):  # also with the other end of the range set
                    args = list(base)
                    args[pos] = v
                    args[9 - pos] = 3 if pos == 4 else 10
                    calls.append((name, args))
    for pos in (2, 3):  # class_masks(data, table, start, stop)
        for v in EXTREMES:
            for base in (["a8", "t256", 0, 8], ["a8", "t256", 3, 5]):
                args = list(base)
                args[pos] = v
                calls.append(("class_masks", args))
    return calls


def _class_masks_oracle(args: list[object]) -> object:
    start, stop = args[2], args[3]
    assert isinstance(start, int) and isinstance(stop, int)
    if not 0 <= start <= stop <= 8:
        return None
    masks = oracle_masks(b"abcdefgh"[start:stop], bytes(range(256)))
    return np.frombuffer(masks, dtype="<i8").tolist()


def test_every_argument_at_its_extremes(backend: str, tmp_path: Path) -> None:
    calls = _extreme_calls()
    payload = "".join(json.dumps(c) + "\n" for c in calls)
    # -P and a scratch cwd: the child imports the installed mnemo, never this checkout's files
    proc = subprocess.run([sys.executable, "-P", "-c", _CHILD, backend], input=payload, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    if len(results) < len(calls):
        crashed = calls[len(results)]
        pytest.fail(f"the child died (exit {proc.returncode}) on {crashed[0]}{tuple(crashed[1])}: {proc.stderr[-500:]}")
    argnames = {"memeq": ["a", "a_off", "b", "b_off", "n"],
                "pair_scan": ["tokens", "a", "b", "out", "start", "stop", "threads"],
                "pair_positions": ["tokens", "a", "b", "cap", "start", "stop", "threads"],
                "class_masks": ["start", "stop"]}
    bad = []
    for (name, args), (kind, value) in zip(calls, results):
        if name == "memeq":
            want = _memeq_oracle(args)
        elif name == "class_masks":
            want = _class_masks_oracle(args)
        else:
            want = _scan_oracle(name, args)
        if want is None:
            # an error naming one of the arguments that is out of range
            named = any(f"{arg}=" in value or f"{arg} " in value for arg in argnames[name])
            if kind not in ("ValueError", "TypeError") or not named:
                bad.append((name, args, kind, value))
        elif kind != "ok" or value != want:
            bad.append((name, args, kind, value, want))
    assert not bad, "\n".join(map(str, bad[:20]))


def test_pair_scan_negative_stop_other_than_minus_one_is_an_error(backend: str) -> None:
    """-1 is the one documented "to the end" value of stop (it lets callers give `threads`
    positionally); every other negative stop used to be read as "the end" too."""
    tok = np.array([1, 2, 1, 2], dtype=np.uint16)
    out = np.zeros(4, dtype=np.int64)
    assert kernels.pair_scan(tok, 1, 2, out, 0, -1) == 2
    assert kernels.pair_positions(tok, 1, 2, 4, 0, -1) == np.array([0, 2], dtype="<i8").tobytes()
    for stop in (-2, -5, -(2**63)):
        with pytest.raises(ValueError, match=f"stop={stop}"):
            kernels.pair_scan(tok, 1, 2, out, 0, stop)
        with pytest.raises(ValueError, match=f"stop={stop}"):
            kernels.pair_positions(tok, 1, 2, 4, 0, stop)


def test_kernel_arguments_of_wrong_type_name_the_argument() -> None:
    tok = np.zeros(4, dtype=np.uint16)
    out = np.zeros(4, dtype=np.int64)
    with pytest.raises(TypeError, match="a_off"):
        kernels.memeq(b"ab", 1.5, b"ab", 0, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n "):
        kernels.memeq(b"ab", 0, b"ab", 0, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"\bb\b"):
        kernels.memeq(b"ab", 0, 5, 0, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stop"):
        kernels.pair_scan(tok, 1, 2, out, 0, "2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tokens"):
        kernels.pair_scan(None, 1, 2, out)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name"):
        kernels.set_backend(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not available"):
        kernels.set_backend("c\x00x")


# ---- huge pages: a hint, never a change to the memory ----------------------------------------


def test_huge_pages_leaves_the_memory_as_it_was() -> None:
    """huge_pages moves pages, never their bytes: a buffer of every size and alignment reads the
    same after it, and the result is 0 (nothing done, or not Linux) or whole 2 MB regions."""
    rng = random.Random(27)
    for n in (0, 1, 4095, 4096, 1 << 20, (2 << 20) + 3, 5 << 20):
        data = bytearray(rng.randbytes(n))
        before = bytes(data)
        done = kernels.huge_pages(data)
        assert done >= 0 and done % (2 << 20) == 0
        assert data == before
    view = memoryview(bytes(range(256)) * 40000)[3:-5]  # not page-aligned at either end
    assert kernels.huge_pages(view) % (2 << 20) == 0
    assert view[0] == 3


def test_huge_pages_of_a_list_leaves_its_objects_alone() -> None:
    ints = [k for k in range(200_000)]
    assert kernels.huge_pages_of(ints) % (2 << 20) == 0
    assert ints == list(range(200_000))
    assert kernels.huge_pages_of([]) == 0
    assert kernels.huge_pages_of(["a", 1.5, None]) % (2 << 20) == 0


def test_huge_pages_arguments_of_wrong_type() -> None:
    with pytest.raises(TypeError, match="memory must be a buffer"):
        kernels.huge_pages("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="objects must be a list"):
        kernels.huge_pages_of((1, 2))  # type: ignore[arg-type]


# ---- id lists: the C list builder against its compiled twin ----------------------------------


@pytest.mark.parametrize("wide", [False, True])
def test_id_list_against_the_compiled_twin(wide: bool) -> None:
    """Every length around the fetch-ahead distances, ids inside and past the objects (a new
    int for those), both widths."""
    from mnemo.encode_chunk import ids_from

    rng = random.Random(31)
    objects: list[object] = [k * 10 for k in range(1000)]
    top = 70_000 if wide else 1 << 16
    for n in list(range(0, 40)) + [100, 1000, 600_000]:  # 600,000: a 4.8 MB list, given huge pages
        ids = [rng.choice((rng.randrange(1000), rng.randrange(top))) for _ in range(n)]
        packed = np.array(ids, dtype=np.uint32 if wide else np.uint16).tobytes()
        want = [objects[x] if x < 1000 else x for x in ids]
        got = kernels.id_list(packed, objects, wide)
        assert got == want
        assert ids_from(objects, packed, wide) == want
        assert all(g is objects[x] for g, x in zip(got, ids) if x < 1000)  # the same objects


def test_id_list_keeps_reference_counts_right() -> None:
    import sys

    obj = object()
    before = sys.getrefcount(obj)
    lst = kernels.id_list(np.zeros(500, dtype=np.uint16).tobytes(), [obj], False)
    assert sys.getrefcount(obj) == before + 500
    del lst
    assert sys.getrefcount(obj) == before
    assert kernels.id_list(b"", [obj], True) == []
    assert kernels.id_list(np.array([5, 0], dtype=np.uint32).tobytes(), [], True) == [5, 0]


def test_id_list_at_guard_pages(guarded: Guarded) -> None:
    data = guarded.data
    data[:] = np.frombuffer(bytes(range(256)) * (PAGE // 256), dtype=np.uint8)
    objects: list[object] = list(range(1 << 16))
    page = bytes(data)
    for n in list(range(0, 80, 2)) + [PAGE]:
        for wide in (False, True):
            k = n - n % (4 if wide else 2)
            want = kernels.id_list(page[PAGE - k :], objects, wide)
            assert kernels.id_list(data[PAGE - k :], objects, wide) == want  # ends at the guard
            assert kernels.id_list(data[:k], objects, wide) == kernels.id_list(page[:k], objects, wide)


@pytest.mark.parametrize("wide", [False, True])
def test_id_list_reads_a_bytes_writer_in_place(wide: bool) -> None:
    """A BytesWriter gives the list its getvalue() copy would, at every length from the
    writer's embedded buffer (256 bytes) to a grown one, with writes after a truncate."""
    from librt.strings import BytesWriter

    assert kernels.writer_in_place()  # the librt this build pins: the in-place path is the one tested
    rng = random.Random(37)
    objects: list[object] = [k * 3 for k in range(500)]
    dst = BytesWriter()
    for n in [0, 1, 63, 64, 65, 127, 128, 129, 1000, 50_000, 7]:
        dst.truncate(0)
        ids = [rng.choice((rng.randrange(500), rng.randrange(70_000 if wide else 1 << 16))) for _ in range(n)]
        dst.write(np.array(ids, dtype=np.uint32 if wide else np.uint16).tobytes())
        want = kernels.id_list(dst.getvalue(), objects, wide)
        got = kernels.id_list(dst, objects, wide)
        assert got == want == [objects[x] if x < 500 else x for x in ids]
        assert all(g is objects[x] for g, x in zip(got, ids) if x < 500)
    dst.truncate(0)
    dst.write(b"abc")
    with pytest.raises(ValueError, match="3 bytes, not a whole number of 2-byte ids"):
        kernels.id_list(dst, objects, False)


@pytest.mark.parametrize("wide", [False, True])
def test_id_lists_against_the_compiled_twin(wide: bool) -> None:
    """encode_batch's unpacking: one list per length, as encode_chunk.lists_of makes them, from
    bytes, a numpy array or a BytesWriter; lengths past the ids are a ValueError."""
    from librt.strings import BytesWriter

    from mnemo.encode_chunk import lists_of

    rng = random.Random(41)
    objects: list[object] = list(range(300))
    for texts in [0, 1, 2, 7, 100]:
        lengths = [rng.choice((0, 1, rng.randrange(40), rng.randrange(500))) for _ in range(texts)]
        top = 70_000 if wide else 1 << 16
        ids = np.array([rng.choice((rng.randrange(300), rng.randrange(top))) for _ in range(sum(lengths))],
                       dtype=np.uint32 if wide else np.uint16)
        packed = ids.tobytes()
        want: list[list[int]] = []
        lists_of(objects, packed, wide, np.asarray(lengths, dtype="<i8").tobytes(), want)
        writer = BytesWriter()
        writer.write(packed)
        for source in (packed, ids, writer):
            got = kernels.id_lists(source, objects, wide, np.asarray(lengths, dtype=np.int64))
            assert got == want
            assert all(g is objects[x] for lst in got for g, x in zip(lst, lst) if x < 300)
    packed = np.arange(10, dtype=np.uint32 if wide else np.uint16).tobytes()
    with pytest.raises(ValueError, match="text 1's length of 99 ids is more than the packed ids hold"):
        kernels.id_lists(packed, objects, wide, np.array([1, 99], dtype=np.int64))
    with pytest.raises(ValueError, match="length of -1 ids"):
        kernels.id_lists(packed, objects, wide, np.array([-1], dtype=np.int64))
    with pytest.raises(ValueError, match="not a whole number of int64"):
        kernels.id_lists(packed, objects, wide, b"abc")
    with pytest.raises(TypeError, match="objects must be a list"):
        kernels.id_lists(packed, (1,), wide, b"")  # type: ignore[arg-type]


@pytest.mark.parametrize("wide", [False, True])
def test_id_array_against_numpys_take(wide: bool) -> None:
    """The public ids of packed ids, as numpy's take gives them (its twin): through a uint32 or
    a uint16 table, or widened to uint32 without one; from bytes or a BytesWriter read in
    place, at lengths around the writer's embedded buffer; the result a writable bytearray."""
    from librt.strings import BytesWriter

    rng = random.Random(43)
    top = 70_000 if wide else 1 << 16
    raw_type = np.uint32 if wide else np.uint16
    tables = [None, np.array([rng.randrange(1 << 32) for _ in range(top)], dtype=np.uint32),
              np.array([rng.randrange(1 << 16) for _ in range(top)], dtype=np.uint16)]
    dst = BytesWriter()
    for n in [0, 1, 2, 63, 64, 65, 128, 129, 1000, 50_000]:
        ids = np.array([rng.randrange(top) for _ in range(n)], dtype=raw_type)
        dst.truncate(0)
        dst.write(ids.tobytes())
        for table in tables:
            want = ids.astype(np.uint32) if table is None else table.take(ids)
            for source in (ids.tobytes(), dst):
                got = kernels.id_array(source, wide, None if table is None else table.data)
                assert isinstance(got, bytearray)
                assert np.array_equal(np.frombuffer(got, dtype=want.dtype), want)


def test_id_array_rejects_bad_arguments() -> None:
    table = np.arange(10, dtype=np.uint32)
    with pytest.raises(ValueError, match="id 10 at 1 is past the table's 10 entries"):
        kernels.id_array(np.array([3, 10], dtype=np.uint16).tobytes(), False, table)
    with pytest.raises(ValueError, match="whole number of 4-byte ids"):
        kernels.id_array(b"abcdef", True, None)
    with pytest.raises(TypeError, match="table must be a contiguous buffer of 16- or 32-bit unsigned"):
        kernels.id_array(b"", False, np.arange(3, dtype=np.int64))
    with pytest.raises(TypeError, match="table must be None or a contiguous buffer"):
        kernels.id_array(b"", False, "abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes 3 positional arguments"):
        kernels.id_array(b"", False)  # type: ignore[call-arg]


def test_id_list_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="whole number of 4-byte ids"):
        kernels.id_list(b"abcdef", [], True)
    with pytest.raises(ValueError, match="whole number of 2-byte ids"):
        kernels.id_list(b"abc", [], False)
    with pytest.raises(TypeError, match="objects must be a list"):
        kernels.id_list(b"", (1,), False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="packed must be a contiguous buffer or a BytesWriter"):
        kernels.id_list("ab", [], False)  # type: ignore[arg-type]


def test_align_offset() -> None:
    data = bytes(1000)
    addr = np.frombuffer(data, dtype=np.uint8).ctypes.data
    for align in (1, 2, 8, 16, 64, 4096):
        off = kernels.align_offset(data, align)
        assert 0 <= off < align and (addr + off) % align == 0
    view = memoryview(data)[3:]
    assert (addr + 3 + kernels.align_offset(view, 64)) % 64 == 0
    with pytest.raises(ValueError, match="power of two"):
        kernels.align_offset(data, 48)
    with pytest.raises(ValueError, match="power of two"):
        kernels.align_offset(data, 0)
    with pytest.raises(TypeError, match="memory must be a buffer"):
        kernels.align_offset(3, 64)  # type: ignore[arg-type]


def test_untrack_atoms_untracks_lists_of_atoms_only() -> None:
    """untrack_atoms untracks a list of ints, bytes, strings, None and tuples of those (the
    tuples too), and leaves a list holding anything the GC tracks as it was, its tuples too."""
    import gc

    gc.disable()  # a collection would untrack the new tuples itself (CPython's own rule)
    try:
        _untrack_atoms_cases()
    finally:
        gc.enable()


def _untrack_atoms_cases() -> None:
    import gc

    pairs = [(i, i + 1000) for i in range(300, 1300)]
    atoms: list[object] = [*range(1000, 2000), b"ab", "cd", None, 1.5, *pairs]
    assert gc.is_tracked(atoms) and all(gc.is_tracked(t) for t in pairs)
    assert kernels.untrack_atoms(atoms) is True
    assert not gc.is_tracked(atoms) and not any(gc.is_tracked(t) for t in pairs)
    assert kernels.untrack_atoms(atoms) is True  # already untracked: as it is
    assert atoms[1000:1004] == [b"ab", "cd", None, 1.5] and atoms[1004:] == pairs
    class Thing:
        pass

    # (an empty dict or a dict of atoms is one CPython itself does not track)
    for holder in ({"k": []}, [], (1, []), (1, (2, [])), Thing()):
        n = len(str(holder)) + 5000
        others = [(n, n + 1), 7, holder]  # a tuple made at run time: tracked
        assert kernels.untrack_atoms(others) is False
        assert gc.is_tracked(others) and gc.is_tracked(others[0])
    with pytest.raises(TypeError, match="objects must be a list"):
        kernels.untrack_atoms((1, 2))  # type: ignore[arg-type]


def test_untracked_lists_are_still_freed_and_collected_around() -> None:
    """An untracked list of atoms is freed by its reference count; a cycle through a tracked
    object that refers to it is still collected."""
    import gc
    import weakref

    class Box:
        pass

    box = Box()
    box.items = [(1000, 2000)] * 3  # type: ignore[attr-defined]
    kernels.untrack_atoms(box.items)  # type: ignore[attr-defined]
    box.me = box  # type: ignore[attr-defined]
    ref = weakref.ref(box)
    del box
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("n", [0, 1, 2, 699, 701, 5000])
def test_pair_list_equals_the_tuples_of_its_pairs(n: int) -> None:
    """pair_list against its twin (the list of tuples of the same int32 values, bytes, a numpy
    array, a BytesWriter), every tuple and the list untracked; an odd count is refused."""
    import gc

    from librt.strings import BytesWriter, write_i32_le

    rng = random.Random(n)
    values = [rng.choice([0, 1, 255, 256, 257, 65535, 65536, 2**31 - 1, -1, -(2**31)]) if k % 7 == 0
              else rng.randrange(2**31) for k in range(2 * n)]
    twin = [(values[2 * k], values[2 * k + 1]) for k in range(n)]
    packed = np.array(values, dtype=np.int32)
    w = BytesWriter()
    for v in values:
        write_i32_le(w, v)
    sources: list[object] = [packed.tobytes(), packed, w.getvalue()]
    if kernels.writer_in_place():
        sources.append(w)
    objects = [int(str(k)) for k in range(70000)]  # distinct objects, not CPython's small ints
    for src in sources:
        for objs in (None, objects, []):
            got = kernels.pair_list(src, objs)  # type: ignore[arg-type]
            assert got == twin
            assert all(type(t) is tuple and len(t) == 2 for t in got)
            assert not gc.is_tracked(got) and not any(gc.is_tracked(t) for t in got)
            if objs is objects:  # a value that indexes the list is its object, shared
                assert all(x is objects[x] for t in got for x in t if 0 <= x < 70000)
    three = objects[300]
    before = sys.getrefcount(three)
    got = kernels.pair_list(np.array([300, 300, 300, 5], dtype=np.int32), objects)
    during = sys.getrefcount(three)
    assert got == [(300, 300), (300, 5)] and got[0][0] is three
    del got
    after = sys.getrefcount(three)
    assert (during, after) == (before + 3, before)
    with pytest.raises(ValueError, match="not whole pairs"):
        kernels.pair_list(np.zeros(3, dtype=np.int32), None)
    with pytest.raises(ValueError):
        kernels.pair_list(b"\0" * 6, None)
    with pytest.raises(TypeError, match="objects must be a list or None"):
        kernels.pair_list(b"", (1, 2))  # type: ignore[arg-type]
    assert gc.isenabled()  # the pause inside is over


# ---- read_fd: a file's bytes read into the bytes object ----------------------------------------


def test_read_fd_reads_what_the_file_holds(tmp_path: Path) -> None:
    """Every size around the huge-page threshold (4 MB) and the 2 MB regions, from the file's
    position on, fewer bytes at its end, none past it; the descriptor's offset moves as read(2)'s
    does."""
    rng = random.Random(41)
    for n in (0, 1, 4095, (4 << 20) - 1, 4 << 20, (6 << 20) + 17):
        data = rng.randbytes(n)
        path = tmp_path / f"f{n}"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert kernels.read_fd(fd, n + 1) == data
            assert kernels.read_fd(fd, 10) == b""
            os.lseek(fd, n // 3, os.SEEK_SET)
            assert kernels.read_fd(fd, n // 2) == data[n // 3 : n // 3 + n // 2]
            assert os.lseek(fd, 0, os.SEEK_CUR) == n // 3 + n // 2
        finally:
            os.close(fd)


def test_read_fd_errors(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    fd = os.open(path, os.O_WRONLY)
    try:
        with pytest.raises(OSError) as info:
            kernels.read_fd(fd, 3)  # not open for reading
        assert info.value.errno == errno.EBADF
    finally:
        os.close(fd)
    with pytest.raises(ValueError, match="must be >= 0"):
        kernels.read_fd(-1, 3)
    with pytest.raises(ValueError, match="must be >= 0"):
        kernels.read_fd(0, -3)
    with pytest.raises(TypeError, match="fd must be an int"):
        kernels.read_fd("0", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="size=.* is out of range"):
        kernels.read_fd(0, 1 << 70)


# ---- utf8_of: the UTF-8 bytes of a text -------------------------------------------------------


def test_utf8_of_is_str_encode() -> None:
    """ASCII texts of every size around the huge-page threshold (4 MB) and the 2 MB regions, and
    texts of one-, two- and four-byte characters (CPython's own encoding), give str.encode's
    bytes; a lone surrogate is str.encode's UnicodeEncodeError; a str subclass is a str."""
    rng = random.Random(43)
    for n in (0, 1, 15, 4095, (4 << 20) - 1, 4 << 20, (6 << 20) + 17):
        text = "".join(rng.choice("ab \n~\x00\x7f") for _ in range(min(n, 4096))) * (n // 4096 + 1)
        text = text[:n]
        assert kernels.utf8_of(text) == text.encode("utf-8")
    for text in ("héllo wörld", "中文" * 1000, "\U0001f600 ok", "é" * (5 << 20)):
        assert kernels.utf8_of(text) == text.encode("utf-8")

    class Sub(str):
        pass

    assert kernels.utf8_of(Sub("abc")) == b"abc"
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        kernels.utf8_of("ok \ud800")
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        kernels.utf8_of(b"abc")  # type: ignore[arg-type]


def _transparent_huge_pages() -> str:
    try:
        modes = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "never"
    return modes.split("[")[1].split("]")[0] if "[" in modes else "never"


@pytest.mark.skipif(_transparent_huge_pages() == "never", reason="the kernel gives no transparent huge pages here")
def test_utf8_of_a_long_ascii_text_faults_in_huge_pages() -> None:
    """32 MB of ASCII are 8,192 pages of 4 KB: copied into huge pages they fault at most about
    1,040 times (up to 511 pages of 4 KB at each end, where no whole 2 MB region lies, and 16
    huge pages); str.encode's copy faults 8,193 times."""
    import resource

    text = "a" * (32 << 20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    data = kernels.utf8_of(text)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert data[:3] == b"aaa" and len(data) == 32 << 20
    assert faults < 8192 // 4, faults
