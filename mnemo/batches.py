"""Token streams for language-model training: windows, train/validation split, batches with loss masks.

Everything here works on plain 1-D integer arrays -- in practice `np.memmap` views of .tok files --
and never copies a whole array: windows are strided views, batches gather only the rows they need.

Chat token files mark what the model should learn to produce with the loss-mask bit: MASKBIT
(0x8000, the top bit of a uint16 token) or, in uint32 files (vocabularies of 32,768 ids and more),
MASKBIT32 (bit 31).  A stream built with `masked=True` strips that bit from the ids it hands out
and returns the mask separately: `mask[b, t]` is True when target `targets[b, t]` carried the bit,
i.e. when the loss at that position counts.

Not compiled with mypyc: numpy does the work here, so compiling would only add a build step.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from mnemo.constants import MASKBIT, MASKBIT32, maskbit_for  # the loss-mask bits (of uint16 and uint32 files)
from mnemo.checks import check_maskbit
from mnemo.errors import ArgumentTypeError, ConfigError, InputError
from mnemo.shards import open_tok
from mnemo.tokfile import Stamp

ID_MASK: Final = MASKBIT - 1
"""`raw & ID_MASK` is the token id of a raw chat-file token of a uint16 file ONLY: in a uint32
file (a vocabulary of more than 32,768 ids) bit 15 is part of an id.  Use `id_mask_for(n_vocab)`,
or a stream's `id_mask`, which are right for both."""

ID_MASK32: Final = MASKBIT32 - 1
"""`raw & ID_MASK32` is the token id of a raw chat-file token of a uint32 file (bit 31 cleared)."""


def id_mask_for(n_vocab: int) -> int:
    """The mask that clears the loss-mask bit of a chat of this vocabulary (maskbit_for):
    ID_MASK for vocabularies of at most 32,768 ids (uint16 chat files), else ID_MASK32."""
    return maskbit_for(n_vocab) - 1

IntArray = NDArray[np.integer[Any]]
IdArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

_COUNT_CHUNK: Final = 1 << 22
"""Tokens counted per step in `TokenStream.token_counts`: bounds the temporary int64 copy to 32 MiB."""


def _check_stream(ids: IntArray, what: str = "ids") -> None:
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        shape = getattr(ids, "shape", None)
        dtype = getattr(ids, "dtype", type(ids).__name__)
        raise ConfigError(f"{what} must be a 1-D integer numpy array, got shape {shape} of {dtype}")


def _check_int(name: str, value: object) -> int:
    """An int argument (numpy's integers too, as an int), not a bool: a float or a str had failed
    deep inside numpy with a TypeError that named no argument, and True had been a context of 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _check_window(T: int, stride: int | None) -> int:
    T = _check_int("context length T", T)
    if stride is not None:
        stride = _check_int("stride", stride)
    if T < 1:
        raise ConfigError(f"context length T must be >= 1, got {T}")
    step = T if stride is None else stride
    if not 1 <= step <= T:
        raise ConfigError(
            f"stride must be between 1 and T={T}, got {step}: a stride above T would skip tokens "
            "that are never a target"
        )
    return step


def n_windows(length: int, T: int, stride: int | None = None) -> int:
    """How many windows of T + 1 ids `windows(ids, T, stride)` cuts from a stream of `length` ids."""
    step = _check_window(T, stride)
    if length < T + 1:
        return 0
    return (length - (T + 1)) // step + 1


def windows(ids: IntArray, T: int, stride: int | None = None) -> tuple[IntArray, IntArray]:
    """Cut a token stream into windows of T + 1 ids: `(inputs, targets)`, two `[n_windows, T]` arrays.

    Window k is `ids[k*stride : k*stride + T + 1]`; its inputs are the first T ids and its targets
    the last T, so `targets[k, t] == inputs[k, t + 1]` and the model at position t predicts the id
    that follows `inputs[k, t]`.  `stride` defaults to T: consecutive windows then share exactly one
    id (the last target of one is the first input of the next), so every id after the first is a
    target exactly once.  A smaller stride makes windows overlap (allowed: more, correlated
    examples); a stride above T is refused because ids would fall between windows.

    The last window is the last one that fits whole: it starts at `(n_windows - 1) * stride`, and
    the `(len(ids) - T - 1) % stride` ids after it are dropped -- never padded, never a short
    window, so every row is real data.  A stream shorter than T + 1 ids has no window at all and is
    a ConfigError naming both numbers.

    Split a stream into training and validation data BEFORE windowing (see `split_stream`), never
    the windows themselves: with stride < T, neighbouring windows share ids, so a random split of
    windows puts the same tokens -- and the same (input, target) pairs -- on both sides, and the
    validation loss measures memorisation instead of generalisation.  A split of the stream at one
    position leaks at most the single boundary pair.

    The arrays returned are read-only views into `ids` (no copy; a memmap stays on disk).
    """
    _check_stream(ids)
    step = _check_window(T, stride)
    if len(ids) < T + 1:
        raise ConfigError(
            f"token stream of {len(ids)} ids is shorter than one window of T + 1 = {T + 1} ids; "
            "use a smaller context length or more data"
        )
    rows = sliding_window_view(ids, T + 1)[::step]
    return rows[:, :-1], rows[:, 1:]


def split_stream(ids: IntArray, val_fraction: float) -> tuple[IntArray, IntArray]:
    """Split a stream into `(train, val)`: val is the last `val_fraction` of the ids, train the rest.

    The split is a single cut, so no id is on both sides (windows are cut afterwards; see
    `windows`).  The tail rather than a random sample: token files keep documents in order, and
    a contiguous tail keeps whole documents together.  Both parts are views (no copy).  The cut
    is `round(len(ids) * val_fraction)` ids from the end; both parts must be non-empty.
    """
    _check_stream(ids)
    if not 0.0 < val_fraction < 1.0:
        raise ConfigError(f"val_fraction must be strictly between 0 and 1, got {val_fraction}")
    n_val = int(round(len(ids) * val_fraction))
    if n_val < 1 or n_val >= len(ids):
        raise ConfigError(
            f"val_fraction {val_fraction} of a stream of {len(ids)} ids leaves "
            f"{n_val} validation and {len(ids) - n_val} training ids; both must be at least 1"
        )
    cut = len(ids) - n_val
    return ids[:cut], ids[cut:]


@dataclass(frozen=True)
class Batch:
    """A batch of windows: ids with MASKBIT stripped, and the loss mask (None when unmasked data)."""

    inputs: IdArray
    """[B, T] int64 ids the model reads."""
    targets: IdArray
    """[B, T] int64 ids the model must predict: the inputs shifted by one."""
    mask: BoolArray | None
    """[B, T]: True where the loss counts (the target carried MASKBIT); None means everywhere."""

    @property
    def n_positions(self) -> int:
        """Positions the loss counts: every one, or those the mask selects."""
        return int(self.targets.size if self.mask is None else np.count_nonzero(self.mask))


class TokenStream:
    """One or more 1-D token arrays, each its own stream: a window never crosses from one to the next.

    `masked=True` says the arrays are chat token files whose tokens carry MASKBIT; the bit is
    stripped from every id handed out and returned as the loss mask instead.  The arrays are kept
    as given (memmaps stay memmaps); nothing reads them whole except `token_counts`/`max_id`,
    which stream through them in chunks.
    """

    def __init__(self, arrays: Sequence[IntArray], *, masked: bool = False, maskbit: int | None = None) -> None:
        """`maskbit` (masked streams): the bit that marks learned tokens; by default the one a .tok
        of the arrays' dtype holds -- MASKBIT32 in uint32 arrays, else MASKBIT."""
        if len(arrays) == 0:
            raise ConfigError("a token stream needs at least one token array, got none")
        for i, a in enumerate(arrays):
            _check_stream(a, f"token array {i}")
        if maskbit is None:
            wide = {a.dtype == np.uint32 for a in arrays}
            if masked and len(wide) > 1:
                raise ConfigError(
                    "masked arrays of uint16 and uint32 mark learned tokens with different bits "
                    "(MASKBIT, MASKBIT32): pass maskbit=, or arrays of one dtype"
                )
            maskbit = MASKBIT32 if wide.pop() else MASKBIT
        maskbit = check_maskbit(maskbit)
        self.arrays: tuple[IntArray, ...] = tuple(arrays)
        self.masked: bool = masked
        self.maskbit: int = maskbit
        self.id_mask: int = maskbit - 1

    @classmethod
    def from_arrays(cls, *arrays: IntArray, masked: bool = False, maskbit: int | None = None) -> TokenStream:
        """The seam for file readers: build a stream from already opened (memory-mapped) arrays."""
        return cls(arrays, masked=masked, maskbit=maskbit)

    @classmethod
    def from_tok_files(cls, paths: Sequence[str | os.PathLike[str]], tokenizer: Stamp) -> TokenStream:
        """Memory-map .tok files written by `tokenizer` (mnemo.open_tok refuses any other's), or
        shard directories of `mnemo tokenize --ray`, each shard an array of its own (a window does
        not cross from one shard to the next, as it does not cross from one file to the next).

        All files must be of one kind: documents, or masked chats (of one tokenizer, so of one
        mask bit: MASKBIT in uint16 files, MASKBIT32 in uint32 ones)."""
        if not paths:
            raise ConfigError("no .tok files given")
        files = [open_tok(p, tokenizer) for p in paths]
        kinds = {f.header.masked for f in files}
        if len(kinds) > 1:
            names = ", ".join(f"{f.path} ({'masked chat' if f.header.masked else 'documents'})" for f in files)
            raise ConfigError(f"mixing masked chat files and document files in one stream: {names}")
        masked = kinds.pop()
        bits = {f.header.maskbit for f in files}
        if masked and len(bits) > 1:
            names = ", ".join(f"{f.path} (mask bit {f.header.maskbit:#x})" for f in files)
            raise ConfigError(f"masked chat files with different mask bits in one stream: {names}")
        # a shard directory (mnemo/shards.py) gives one memory-mapped array per shard, in input order
        return cls([a for f in files for a in f.parts], masked=masked, maskbit=files[0].header.maskbit if masked else None)

    @property
    def n_tokens(self) -> int:
        return sum(len(a) for a in self.arrays)

    def __repr__(self) -> str:
        return f"TokenStream({len(self.arrays)} arrays, {self.n_tokens} tokens, masked={self.masked})"

    def split(self, val_fraction: float) -> tuple[TokenStream, TokenStream]:
        """`(train, val)`: the tail `val_fraction` of every array is validation (see `split_stream`)."""
        train: list[IntArray] = []
        val: list[IntArray] = []
        for a in self.arrays:
            t, v = split_stream(a, val_fraction)
            train.append(t)
            val.append(v)
        return (
            TokenStream(train, masked=self.masked, maskbit=self.maskbit),
            TokenStream(val, masked=self.masked, maskbit=self.maskbit),
        )

    def token_counts(self, vocab_size: int) -> NDArray[np.int64]:
        """How often each id is a target: `counts[i]` over every id but each array's first.

        For masked streams only the ids that carry MASKBIT count (the positions the loss sees).
        Any id at or above `vocab_size` (each array's first included) is a ConfigError naming it.
        """
        counts = np.zeros(vocab_size, dtype=np.int64)
        for i, a in enumerate(self.arrays):
            for lo in range(0, len(a), _COUNT_CHUNK):
                raw = np.asarray(a[lo : lo + _COUNT_CHUNK], dtype=np.int64)
                ids = raw & self.id_mask if self.masked else raw
                self._check_ids(ids, vocab_size, i, lo)  # every id, learned or not, the first too
                if lo == 0:
                    raw, ids = raw[1:], ids[1:]  # an array's first id is never a target
                if self.masked:
                    ids = ids[(raw & self.maskbit) != 0]
                counts += np.bincount(ids, minlength=vocab_size)
        return counts

    def max_id(self) -> int:
        """The largest id in the stream (MASKBIT stripped), or -1 when it is empty."""
        best = -1
        for a in self.arrays:
            for lo in range(0, len(a), _COUNT_CHUNK):
                raw = np.asarray(a[lo : lo + _COUNT_CHUNK], dtype=np.int64)
                if self.masked:
                    raw = raw & self.id_mask
                if raw.size:
                    best = max(best, int(raw.max()))
        return best

    @staticmethod
    def _check_ids(ids: IdArray, vocab_size: int, array_index: int, offset: int) -> None:
        bad = (ids < 0) | (ids >= vocab_size)
        if bad.any():
            at = int(np.argmax(bad))
            # the data does not fit the vocabulary (another tokenizer made it): the input's fault
            raise InputError(
                f"token array {array_index} holds id {int(ids[at])} at token {offset + at}, outside "
                f"the vocabulary of {vocab_size} "
                "ids; was it made with another tokenizer (or is it a chat file read without masked=True)?"
            )


class BatchLoader:
    """Batches of windows from a TokenStream: random (seeded) or sequential.

    The windows are those of `windows(array, context, stride)` for every array of the stream,
    numbered array after array; no window spans two arrays.  Arrays shorter than context + 1 ids
    give no window; a stream with no window at all is a ConfigError.

    order="random": each `next_batch()` draws batch_size windows uniformly, with replacement, from
    a `np.random.Generator` seeded with `seed` -- the same seed gives the same batches.
    order="sequential": `next_batch()` walks the windows in order and wraps around at the end.
    Iterating the loader (`for batch in loader`) is always one sequential pass over every window
    once, the last batch possibly smaller: that is what evaluation uses.
    """

    def __init__(
        self,
        stream: TokenStream,
        *,
        context: int,
        batch_size: int,
        stride: int | None = None,
        order: Literal["random", "sequential"] = "random",
        seed: int = 0,
    ) -> None:
        self.stride: int = _check_window(context, stride)
        context = int(context)
        batch_size = _check_int("batch_size", batch_size)
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if order not in ("random", "sequential"):
            raise ConfigError(f"order must be 'random' or 'sequential', got {order!r}")
        self.stream: TokenStream = stream
        self.context: int = context
        self.batch_size: int = batch_size
        self.order: str = order
        per_array = np.array([n_windows(len(a), context, self.stride) for a in stream.arrays], dtype=np.int64)
        self._ends: IdArray = np.cumsum(per_array)
        self.n_windows: int = int(self._ends[-1])
        if self.n_windows == 0:
            longest = max(len(a) for a in stream.arrays)
            raise ConfigError(
                f"no window of context + 1 = {context + 1} ids fits: the longest of the stream's "
                f"{len(stream.arrays)} token arrays has {longest} ids; use a smaller context or more data"
            )
        self._rng: np.random.Generator = np.random.default_rng(seed)
        self._cursor: int = 0

    def __len__(self) -> int:
        """Batches in one sequential pass."""
        return -(-self.n_windows // self.batch_size)

    def get(self, indices: NDArray[np.integer[Any]] | Sequence[int]) -> Batch:
        """The batch made of the windows with these numbers (0 <= k < n_windows), in that order."""
        ks = np.asarray(indices, dtype=np.int64)
        if ks.ndim != 1 or ks.size == 0:
            raise ConfigError(f"window indices must be a non-empty 1-D sequence, got shape {ks.shape}")
        if ks.min() < 0 or ks.max() >= self.n_windows:
            bad = int(ks[(ks < 0) | (ks >= self.n_windows)][0])
            raise ConfigError(f"window {bad} does not exist: the loader has {self.n_windows} windows")
        which = np.searchsorted(self._ends, ks, side="right")
        first = np.concatenate(([0], self._ends[:-1]))
        starts = (ks - first[which]) * self.stride
        offsets = np.arange(self.context + 1, dtype=np.int64)
        rows = np.empty((ks.size, self.context + 1), dtype=np.int64)
        for a in np.unique(which):
            sel = which == a
            # Fancy indexing reads only these rows; on a memmap the rest of the file stays on disk.
            rows[sel] = self.stream.arrays[int(a)][starts[sel, None] + offsets]
        mask: BoolArray | None = None
        if self.stream.masked:
            mask = (rows[:, 1:] & self.stream.maskbit) != 0
            rows &= self.stream.id_mask
        # Copies, not the column slices of `rows`: those are strided, and torch's
        # `from_numpy(targets).view(-1)` (what a loss over flattened logits does) refuses them.
        return Batch(inputs=np.ascontiguousarray(rows[:, :-1]), targets=np.ascontiguousarray(rows[:, 1:]), mask=mask)

    def next_batch(self) -> Batch:
        """The next training batch: random windows, or the next ones in order (wrapping around)."""
        if self.order == "random":
            return self.get(self._rng.integers(0, self.n_windows, size=self.batch_size))
        ks = (self._cursor + np.arange(self.batch_size, dtype=np.int64)) % self.n_windows
        self._cursor = int((self._cursor + self.batch_size) % self.n_windows)
        return self.get(ks)

    def __iter__(self) -> Iterator[Batch]:
        for lo in range(0, self.n_windows, self.batch_size):
            yield self.get(np.arange(lo, min(lo + self.batch_size, self.n_windows), dtype=np.int64))


#: The version of `BatchIterator.state_dict()`'s layout.
ITERATOR_STATE_VERSION: Final = 1


def _check_index(name: str, value: object, low: int, high: int | None = None, of: str = "") -> int:
    value = _check_int(name, value)
    if value < low or (high is not None and value >= high):
        bound = f"between {low} and {high - 1}" if high is not None else f">= {low}"
        raise ConfigError(f"{name} must be {bound}{of}, got {value}")
    return value


class BatchIterator:
    """Endless training batches for a loop or a DataLoader: seeded, resumable and sharded.

    The windows (those `BatchLoader` numbers) are visited epoch after epoch, each epoch in the
    order of its own permutation, drawn from `np.random.default_rng([seed, epoch])`: every window
    once per epoch, a new order each epoch, the same order for the same seed.  Batches are cut
    from that endless sequence, so every batch has `batch_size` rows; the one that reaches the
    end of an epoch takes its last rows from the next (as a training loop counting steps, not
    epochs, wants).

    Sharding: the shard `rank * num_workers + worker` of `world_size * num_workers` takes every
    n-th window of each epoch's permutation (`perm[shard::n]`).  The shards of one epoch are
    disjoint, together they are the epoch, and their sizes differ by at most one window.  `rank`
    and `world_size` are the distributed process's (`torch.distributed.get_rank()`); `worker` and
    `num_workers` the DataLoader worker's (`torch.utils.data.get_worker_info()`), so that each
    worker process of each rank draws its own windows and no batch is seen twice.

    `state_dict()` is a plain dict of ints (JSON as it is; no pickle) saying how far the
    iterator has gone; `load_state_dict(state)` on a new iterator of the same configuration
    continues exactly where that one stopped.  A state of another configuration (other windows,
    batch size or shard) is a ConfigError rather than a silently different stream.
    """

    def __init__(
        self,
        stream: TokenStream,
        *,
        context: int,
        batch_size: int,
        stride: int | None = None,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        worker: int = 0,
        num_workers: int = 1,
    ) -> None:
        self._loader: BatchLoader = BatchLoader(stream, context=context, batch_size=batch_size, stride=stride, order="sequential")
        self.seed: int = _check_index("seed", seed, 0)
        self.world_size: int = _check_index("world_size", world_size, 1)
        self.rank: int = _check_index("rank", rank, 0, world_size, f" (world_size is {world_size})")
        self.num_workers: int = _check_index("num_workers", num_workers, 1)
        self.worker: int = _check_index("worker", worker, 0, num_workers, f" (num_workers is {num_workers})")
        self.context: int = self._loader.context
        self.stride: int = self._loader.stride
        self.batch_size: int = self._loader.batch_size
        self.n_windows: int = self._loader.n_windows
        self.shard: int = self.rank * self.num_workers + self.worker
        self.n_shards: int = self.world_size * self.num_workers
        if self.n_windows < self.n_shards:
            raise ConfigError(
                f"{self.n_windows} windows cannot be shared by {self.n_shards} shards "
                f"(world_size {world_size} x num_workers {num_workers}): every shard needs at least one; "
                "use fewer workers or ranks, or more data"
            )
        #: Windows of one epoch that this shard draws.
        self.windows_per_epoch: int = len(range(self.shard, self.n_windows, self.n_shards))
        self._position: int = 0  # windows of this shard drawn so far, over all epochs
        self._epoch: int = -1
        self._order: IdArray = np.zeros(0, dtype=np.int64)

    def __iter__(self) -> BatchIterator:
        return self

    def _windows_of_epoch(self, epoch: int) -> IdArray:
        if epoch != self._epoch:
            perm = np.random.default_rng([self.seed, epoch]).permutation(self.n_windows)
            self._order, self._epoch = perm[self.shard :: self.n_shards], epoch
        return self._order

    def __next__(self) -> Batch:
        ks = np.empty(self.batch_size, dtype=np.int64)
        filled = 0
        while filled < self.batch_size:
            epoch, at = divmod(self._position, self.windows_per_epoch)
            take = min(self.batch_size - filled, self.windows_per_epoch - at)
            ks[filled : filled + take] = self._windows_of_epoch(epoch)[at : at + take]
            filled += take
            self._position += take
        return self._loader.get(ks)

    @property
    def epoch(self) -> int:
        """The epoch the next batch starts in (0 first)."""
        return self._position // self.windows_per_epoch

    def _config(self) -> dict[str, int]:
        return {
            "n_windows": self.n_windows,
            "context": self.context,
            "stride": self.stride,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "shard": self.shard,
            "n_shards": self.n_shards,
        }

    def state_dict(self) -> dict[str, int]:
        """How far the iterator has gone, with what identifies its configuration: plain ints."""
        return {"version": ITERATOR_STATE_VERSION, **self._config(), "position": self._position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state` (a `state_dict()` of an iterator of this configuration)."""
        if not isinstance(state, dict):
            raise ArgumentTypeError(f"state must be a dict from state_dict(), got {type(state).__name__}")
        if state.get("version") != ITERATOR_STATE_VERSION:
            raise ConfigError(
                f"iterator state of version {state.get('version')!r}; this mnemo reads version {ITERATOR_STATE_VERSION}"
            )
        differ = [f"{k} {state.get(k)!r} (here {v})" for k, v in self._config().items() if state.get(k) != v]
        if differ:
            raise ConfigError(
                "iterator state of another configuration: " + ", ".join(differ)
                + "; restore it into an iterator built with the same token files, context, stride, "
                "batch_size, seed, rank and worker"
            )
        position = state.get("position")
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise ConfigError(f"iterator state: position must be an int >= 0, got {position!r}")
        self._position = position
