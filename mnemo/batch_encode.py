"""Tokenizer.encode_batch and encode_batch_to_numpy: a batch of texts encoded in this process or
by the work engine's worker processes (mnemo/work.py), ids back as lists or as one flat array.

Small batches (less than BATCH_PARALLEL_BYTES of text) are encoded in this process.  Larger ones
go to the engine's persistent worker processes in blocks of about the same amount of text
(`_blocks`; started on first use, kept for the next calls; forked when no other thread
runs, else fresh interpreters that never run the caller's script again, so a script without an
`if __name__ == "__main__":` guard is safe).  `workers`: how many (default: every CPU, or 1 in a
process that multiprocessing started -- a datasets.map or DataLoader worker -- whose siblings use
the other CPUs); workers=1 always encodes in this process.  docs/pipelines.md tells the rule.

The functions take the Tokenizer whose methods delegate to them; this module sits below
tokenizer.py and names the class for types only (workers rebuild it with `type(tok).from_bytes`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

import numpy as np
import numpy.typing as npt

from mnemo.checks import text_type_error, type_error
from mnemo.constants import VOCAB16
from mnemo.errors import ArgumentTypeError, ConfigError
from mnemo.kernels import id_lists
from mnemo.packing import encode_flat, encode_flat_block
from mnemo.workers import resolve_workers
from mnemo.streaming import text_bytes

if TYPE_CHECKING:
    from mnemo.tokenizer import AllOr, Tokenizer
    from mnemo.work import Shared

#: Batches with at least this much text (characters) go to worker processes, in blocks.
BATCH_PARALLEL_BYTES: Final = 4_000_000
#: A block holds at most BATCH_BLOCK texts (its task message lists their offsets) and about
#: 1/BLOCKS_PER_WORKER of a worker's share of the batch's text, between BLOCK_TEXT_MIN and
#: BLOCK_TEXT_MAX characters: blocks of equal text keep every worker busy to the end (blocks of
#: equal counts of texts left one worker with twice the other's text), and a small last block
#: leaves the caller little to unpack after the workers are done.
BATCH_BLOCK: Final = 1024
BLOCKS_PER_WORKER: Final = 4
BLOCK_TEXT_MIN: Final = 1 << 16
BLOCK_TEXT_MAX: Final = 1 << 20
#: Blocks queued per worker: one it works on, one waiting in its socket.
BATCH_DEPTH: Final = 2


def encode_batch(
    tok: Tokenizer, texts: Sequence[str], allowed_special: AllOr, disallowed_special: AllOr, workers: int | None
) -> list[list[int]]:
    """Tokenizer.encode_batch: `encode` of each text, in order."""
    checked, allowed, disallowed, n_workers = _check_batch(tok, texts, allowed_special, disallowed_special, workers)
    wide = tok.n_vocab > VOCAB16
    if n_workers == 1 and wide:
        return [tok._encode_data(text_bytes(t), allowed, disallowed) for t in checked]
    ints = tok._encoder.ints
    if n_workers == 1:
        # The flat form's packed ids, then one list per text from the pre-made int objects:
        # faster than a loop of encode, which makes each text's list on its own.
        lengths, flat = encode_flat(tok, checked, allowed, disallowed)
        with _collector_paused():
            return _lists(ints, flat, False, lengths)

    result = cast("list[list[int]]", [None] * len(checked))  # each block's lists at their place

    def unpack(first: int, part: tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]) -> None:
        # here, as each block arrives, while the workers encode the next ones
        lists = _lists(ints, part[1], wide, part[0])
        result[first : first + len(lists)] = lists

    with _collector_paused():
        _batch_in_workers(tok, checked, allowed, disallowed, n_workers, unpack)
    return result


def _lists(
    ints: list[object], ids: npt.NDArray[np.unsignedinteger], wide: bool, lengths: npt.NDArray[np.int64]
) -> list[list[int]]:
    """One list per text, made of the pre-made int objects (kernels.id_lists; its compiled twin
    is encode_chunk.lists_of): the flat form's ids read where they are, no copy."""
    packed = np.ascontiguousarray(ids, dtype="<u4" if wide else "<u2").data
    counts = np.ascontiguousarray(lengths, dtype=np.int64).data
    return cast("list[list[int]]", id_lists(packed, ints, wide, counts))


def encode_batch_to_numpy(
    tok: Tokenizer, texts: Sequence[str], allowed_special: AllOr, disallowed_special: AllOr, workers: int | None
) -> tuple[npt.NDArray[np.unsignedinteger], npt.NDArray[np.int64]]:
    """Tokenizer.encode_batch_to_numpy: (ids, offsets), text i's ids at ids[offsets[i]:offsets[i + 1]]."""
    checked, allowed, disallowed, n_workers = _check_batch(tok, texts, allowed_special, disallowed_special, workers)
    dtype = np.uint16 if tok.n_vocab <= VOCAB16 else np.uint32
    lengths: npt.NDArray[np.int64]
    flat: npt.NDArray[np.unsignedinteger]
    if n_workers == 1:
        lengths, flat = encode_flat(tok, checked, allowed, disallowed)
    else:
        parts: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]] = {}
        _batch_in_workers(tok, checked, allowed, disallowed, n_workers, parts.__setitem__)
        in_order = [parts[first] for first in sorted(parts)]
        lengths = np.concatenate([p[0] for p in in_order]) if parts else np.zeros(0, dtype=np.int64)
        flat = np.concatenate([p[1] for p in in_order]).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)
    offsets = np.zeros(len(checked) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return flat, offsets


def _check_batch(
    tok: Tokenizer, texts: object, allowed_special: AllOr, disallowed_special: AllOr, workers: object
) -> tuple[Sequence[str], set[str], set[str], int]:
    """encode_batch's arguments checked: (texts, allowed, disallowed, workers to use)."""
    if isinstance(texts, (str, bytes, bytearray)) or not isinstance(texts, Sequence):
        raise type_error("texts", "a sequence of str", texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise text_type_error(f"texts[{i}]", t)
    allowed, disallowed = tok._resolve_specials(allowed_special, disallowed_special)
    n_workers = _batch_workers(workers)
    if sum(len(t) for t in texts) < BATCH_PARALLEL_BYTES:
        n_workers = 1
    return texts, allowed, disallowed, n_workers


def _batch_in_workers(
    tok: Tokenizer,
    texts: Sequence[str],
    allowed: set[str],
    disallowed: set[str],
    n_workers: int,
    sink: Callable[[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]], None],
) -> None:
    """`sink(first, (lengths, ids))` of each block of texts (`_blocks`; `first`: the index of its
    first text) from the engine's workers, the blocks with the most text first: a long text
    that came last would leave one worker encoding it alone while the other waits.

    Each block's UTF-8 is appended to bytes the workers share (Executor.share) as the engine
    reads the block's task, and the task is the block's byte offsets: small enough that each
    worker keeps BATCH_DEPTH of them queued and never waits for the caller between blocks
    (docs/speed.md, "Batches on two threads")."""
    from mnemo.work import map_ordered, setup_of, shared_executor

    fn = functools.partial(_encode_block, (tuple(sorted(allowed)), tuple(sorted(disallowed))))
    # the class's own loader rebuilds the tokenizer in each worker (shipped by name, as the map)
    setup = setup_of(type(tok)._from_worker_image, tok._for_workers(), tok)
    with shared_executor(n_workers, depth=BATCH_DEPTH) as executor, executor.share() as shared:

        order = sorted(_blocks(texts, n_workers), key=lambda block: -block[2])  # stable: ties keep their order
        firsts = iter([first for first, _, _ in order])

        def blocks() -> Iterator[TextBlock]:
            for first, stop, _ in order:
                datas = [text_bytes(t) for t in texts[first:stop]]
                start = shared.append(b"".join(datas))
                yield TextBlock(shared.ref, first, tuple(itertools.accumulate(map(len, datas), initial=start)))

        # map_ordered hands the results over in the order of the tasks
        map_ordered(blocks(), fn, lambda part: sink(next(firsts), part), executor=executor, setup=setup)


def _blocks(texts: Sequence[str], n_workers: int) -> Iterator[tuple[int, int, int]]:
    """(first, stop, characters) of each block of the batch, in order: consecutive texts, at
    most BATCH_BLOCK of them, closed once they hold the block's share of text (so a longer text
    closes the block it is in)."""
    total = sum(len(t) for t in texts)
    target = min(max(total // (n_workers * BLOCKS_PER_WORKER), BLOCK_TEXT_MIN), BLOCK_TEXT_MAX)
    first = size = 0
    for i, t in enumerate(texts):
        size += len(t)
        if size >= target or i + 1 - first == BATCH_BLOCK:
            yield first, i + 1, size
            first, size = i + 1, 0
    if first < len(texts):
        yield first, len(texts), size


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic collector off for the block, then as it was (also on errors).

    encode_batch builds its lists of ints inside: they cannot form cycles, but every full
    collection walked all of them and the growing result (profiled on 100,000 documents: most of
    the 0.95 s of unpacking).  Cyclic garbage other code makes meanwhile is collected at the
    first collection after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ---- encode_batch's map (module level: the work engine ships it to worker processes by name) ----


@dataclass(frozen=True)
class TextBlock:
    """A task of encode_batch: texts first .. first + len(bounds) - 2 of the batch, text k's
    UTF-8 at bytes bounds[k] .. bounds[k + 1] of the shared batch."""

    shared: Shared
    first: int
    bounds: tuple[int, ...]

    def describe(self) -> str:
        return f"texts {self.first}-{self.first + len(self.bounds) - 2} of the batch"


def _encode_block(
    specials: tuple[tuple[str, ...], tuple[str, ...]], tok: Tokenizer, block: TextBlock
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]:
    """encode_batch's map: (lengths, ids back to back) of a block of texts, two arrays in one
    message back."""
    from mnemo.work import read_shared

    start = block.bounds[0]
    data = read_shared(block.shared, start, block.bounds[-1])
    ends = [b - start for b in block.bounds[1:]]
    return encode_flat_block(tok, data, ends, set(specials[0]), set(specials[1]))


def threads_as_workers(workers: int | None, num_threads: object) -> int | None:
    """tiktoken's `num_threads=` of the batch methods, as mnemo's `workers`: at most that many
    worker processes (capped by the default: the CPUs, or 1 inside a multiprocessing child --
    tiktoken's default of 8 threads on a 2-core machine would be 8 processes fighting for 2).
    A bad value fails as tiktoken's ThreadPoolExecutor fails: TypeError or ValueError."""
    if num_threads is None:
        return workers
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise ArgumentTypeError(f"num_threads must be an int, got {type(num_threads).__name__} {num_threads!r:.40}")
    if num_threads < 1:
        raise ConfigError(f"num_threads must be at least 1, got {num_threads}")
    if workers is not None:
        raise ConfigError("give workers= (mnemo's processes) or num_threads= (tiktoken's name), not both")
    return min(num_threads, _batch_workers(None))


def _batch_workers(workers: object) -> int:
    """encode_batch's `workers`: as given, else every CPU -- but 1 in a process that
    multiprocessing (or `multiprocess`) started, such as a datasets.map(num_proc=...) or
    DataLoader worker: its siblings have the other CPUs, and nested pools would only fight over
    them."""
    if workers is None:
        import sys

        # multiprocessing's, and its dill-based twin `multiprocess`, which datasets.map uses
        for name in ("multiprocessing", "multiprocess"):
            module = sys.modules.get(name)
            parent = getattr(module, "parent_process", None)
            if callable(parent) and parent() is not None:
                return 1
    return resolve_workers(workers)
