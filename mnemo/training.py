"""`mnemo.train` (files) and `mnemo.train_from_iterator` (documents): from inputs to a trained Tokenizer.

Phases: (1) count words -- worker processes pre-tokenize their share of the input and count
chunks in their own table (mnemo/count.py); the parent merges the tables; (2) learn merges
(mnemo/merge_loop.py, or the naive twin in mnemo/reference.py); (3) wrap them in a Tokenizer.

Workers: with seekable inputs (plain text and JSONL files, Parquet row groups) each worker reads
its own tasks; with streams (compressed files, in-memory documents) the parent reads and hands
out batches of documents through a bounded queue, so it never holds a corpus in memory.
"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, cast

from mnemo.count import WordCounter, packed_to_dict
from mnemo.errors import ArgumentTypeError, ConfigError, InputError
from mnemo.constants import PATTERNS
from mnemo.parallel import Progress, init_worker_signals, resolve_workers, worker_context
from mnemo.pretokenize import pattern_id
from mnemo.reference import train_merges_naive
from mnemo.tokenizer import DEFAULT_SPECIAL_TOKENS, Tokenizer, check_int, check_special_tokens, type_error
from mnemo import merge_loop, merge_loop_wide
from mnemo.constants import MAX_VOCAB
from mnemo.sources import (
    Task,
    check_inputs,
    documents_from_iterable,
    is_stdin,
    iter_task_documents,
    plan_tasks,
)

PathLike = Union[str, "os.PathLike[str]"]
#: The largest vocabulary mnemo trains (constants.MAX_VOCAB: ids in 21 bits).  Up to 65,535 ids
#: (merge_loop.MAX_IDS) the 16-bit trainer runs, above it the 32-bit one (merge_loop_wide).
MAX_TRAIN_VOCAB = MAX_VOCAB
#: Longest chunk a word count can hold (count.py keeps its length in 31 bits).
MAX_CHUNK_BYTES = (1 << 31) - 1
#: Documents handed to a worker at a time when the parent reads a stream.
BATCH_BYTES = 4 << 20


@dataclass
class CountStats:
    """What the counting phase saw."""

    n_bytes: int = 0
    n_chunks: int = 0
    n_skipped: int = 0
    seconds: float = 0.0



@dataclass(frozen=True)
class Documents:
    """In-memory documents (str or bytes) for the counter.  The wrapper says "documents" where a
    bare list could be paths: `train` reads files, `train_from_iterator` documents, and the
    counter never guesses."""

    docs: Iterable[str | bytes]


def _as_paths(inputs: object) -> list[PathLike] | None:
    """The inputs as a list of paths when they are a path or a list/tuple of paths, else None
    (an iterable of documents).  Only `count_words` guesses so; `train` does not."""
    if isinstance(inputs, (str, os.PathLike)):
        return [inputs]
    if isinstance(inputs, (list, tuple)) and all(isinstance(x, (str, os.PathLike)) for x in inputs):
        return list(inputs)
    return None


def check_vocab_size(vocab_size: object, n_specials: int = len(DEFAULT_SPECIAL_TOKENS)) -> int:
    """`vocab_size` checked: an int from 256 bytes + the special tokens up to MAX_TRAIN_VOCAB.
    Callers that write files before training (`mnemo demo`) check it first too."""
    size = check_int("vocab_size", vocab_size)
    least = 256 + n_specials
    if size < least:
        raise ConfigError(f"vocab_size must be >= {least} (256 bytes + {n_specials} special tokens), got {size}")
    if size > MAX_TRAIN_VOCAB:
        raise ConfigError(
            f"vocab_size must be <= {MAX_TRAIN_VOCAB:,} (constants.MAX_VOCAB: the encoder packs ids in 21 bits), got {size}"
        )
    return size


def check_count_args(
    inputs: object,
    pattern: object,
    special_tokens: object,
    max_chunk_bytes: object,
    workers: object,
    text_field: object,
    progress: object,
) -> tuple[int, list[str], int, int]:
    """The checks of every counting argument, done before a byte is read (a bad argument must
    not cost a training run): (pattern id, special tokens, max_chunk_bytes, workers).  A wrong
    type is an ArgumentTypeError (a TypeError) naming the argument, a bad value a ConfigError."""
    if not isinstance(inputs, Documents) and (
        isinstance(inputs, (bytes, bytearray, memoryview)) or not isinstance(inputs, (str, os.PathLike, Iterable))
    ):
        raise type_error("inputs", "a path, a list of paths, or an iterable of str/bytes documents", inputs)
    if not isinstance(pattern, str):
        raise type_error("pattern", "a str", pattern)
    if pattern not in PATTERNS:
        raise ConfigError(f"unknown pattern {pattern!r}; choose one of {', '.join(PATTERNS)}")
    specials = check_special_tokens(special_tokens)
    chunk = check_int("max_chunk_bytes", max_chunk_bytes)
    if chunk < 1:
        raise ConfigError(f"max_chunk_bytes must be >= 1, got {chunk}")
    if chunk > MAX_CHUNK_BYTES:
        raise ConfigError(f"max_chunk_bytes must be <= {MAX_CHUNK_BYTES}, got {chunk}")
    n_workers = resolve_workers(workers)
    if not isinstance(text_field, str):
        raise type_error("text_field", "a str", text_field)
    if not text_field:
        raise ConfigError("text_field must name a JSONL field / Parquet column, got ''")
    if progress is not None and not callable(progress):
        raise type_error("progress", "a callable progress(phase, done, total) or None", progress)
    return pattern_id(pattern), specials, chunk, n_workers


def _count_documents(docs: Iterable[bytes], pattern: int, max_chunk_bytes: int) -> WordCounter:
    counter = WordCounter(pattern, max_chunk_bytes)
    for doc in docs:
        counter.add(doc)
    return counter


def _worker(
    jobs: Any,
    results: Any,
    pattern: int,
    max_chunk_bytes: int,
    specials: Sequence[str],
    text_field: str,
    parent_pid: int,
) -> None:
    """A counting process: takes Tasks or lists of documents until None, then sends its table."""
    init_worker_signals(parent_pid)
    counter = WordCounter(pattern, max_chunk_bytes)
    try:
        while (job := jobs.get()) is not None:
            docs = iter_task_documents(job, text_field=text_field, specials=specials) if isinstance(job, Task) else job
            before = counter.n_bytes
            for doc in docs:
                counter.add(doc)
            results.put(("progress", counter.n_bytes - before))
        results.put(("done", (counter.to_packed(), counter.n_bytes, counter.n_chunks, counter.skipped)))
    except BaseException as exc:  # report, never hang the parent
        results.put(("error", exc if isinstance(exc, InputError) else InputError(f"{type(exc).__name__}: {exc}")))


def _batches(docs: Iterator[bytes]) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    size = 0
    for doc in docs:
        batch.append(doc)
        size += len(doc)
        if size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def count_words(
    inputs: PathLike | Sequence[PathLike] | Iterable[str | bytes],
    *,
    pattern: str = "mnemonic",
    special_tokens: Sequence[str] = (),
    max_chunk_bytes: int = 256,
    workers: int | None = None,
    text_field: str = "text",
    progress: Progress | None = None,
) -> tuple[dict[bytes, int], CountStats]:
    """Count the chunks of every document of the inputs (paths, or an iterable of str/bytes
    documents).  Special-token strings split documents and are never counted."""
    as_paths = _as_paths(inputs)
    (blob, meta), stats = _count_packed(
        as_paths if as_paths is not None else Documents(cast("Iterable[str | bytes]", inputs)),
        pattern=pattern,
        special_tokens=special_tokens,
        max_chunk_bytes=max_chunk_bytes,
        workers=workers,
        text_field=text_field,
        progress=progress,
    )
    return packed_to_dict(blob, meta), stats


def _count_packed(
    inputs: Sequence[PathLike] | Documents,
    *,
    pattern: str,
    special_tokens: Sequence[str],
    max_chunk_bytes: int,
    workers: int | None,
    text_field: str,
    progress: Progress | None,
) -> tuple[tuple[bytes, bytes], CountStats]:
    """count_words, with the counts packed as WordCounter.to_packed packs them (the trainer lays
    them out directly; a dict of every word is never built)."""
    pid, specials, max_chunk_bytes, n_workers = check_count_args(
        inputs, pattern, special_tokens, max_chunk_bytes, workers, text_field, progress
    )
    special_tokens = specials
    t0 = time.perf_counter()
    if progress is not None:
        progress("count", 0, 0)  # the phase starts: its rate is measured from here, like stats.seconds
    stats = CountStats()
    jobs: list[Task] | None = None
    stream: Iterator[bytes] | None = None
    if not isinstance(inputs, Documents):
        paths = check_inputs(inputs)
        tasks = plan_tasks(paths, n_workers=n_workers, specials=special_tokens)
        if any(t.sequential for t in tasks) and n_workers > 1:
            stream = (d for t in tasks for d in iter_task_documents(t, text_field=text_field, specials=special_tokens))
        else:
            jobs = tasks
    else:
        stream = documents_from_iterable(inputs.docs, special_tokens)

    if n_workers == 1:
        docs = stream if stream is not None else (
            d for t in jobs or [] for d in iter_task_documents(t, text_field=text_field, specials=special_tokens)
        )
        counter = WordCounter(pid, max_chunk_bytes)
        for doc in docs:
            counter.add(doc)
            if progress is not None:
                progress("count", counter.n_bytes, 0)
        words = counter.to_packed()
        stats.n_bytes, stats.n_chunks, stats.n_skipped = counter.n_bytes, counter.n_chunks, counter.skipped
    else:
        words = _count_in_workers(jobs, stream, n_workers, pid, max_chunk_bytes, special_tokens, text_field, stats, progress)
    stats.seconds = time.perf_counter() - t0
    return words, stats


def _count_in_workers(
    jobs: list[Task] | None,
    stream: Iterator[bytes] | None,
    n_workers: int,
    pid: int,
    max_chunk_bytes: int,
    specials: Sequence[str],
    text_field: str,
    stats: CountStats,
    progress: Progress | None,
) -> tuple[bytes, bytes]:
    ctx = worker_context()
    job_q: Any = ctx.Queue(maxsize=2 * n_workers)
    result_q: Any = ctx.Queue()
    procs = [
        ctx.Process(
            target=_worker,
            args=(job_q, result_q, pid, max_chunk_bytes, tuple(specials), text_field, os.getpid()),
            daemon=True,
        )
        for _ in range(n_workers)
    ]
    for p in procs:
        p.start()
    # The workers' tables are added up in one table here, each as it arrives (the first while
    # the others still count, on the core its worker has freed).
    words = WordCounter(pid, max_chunk_bytes)
    done = 0
    try:
        source: Iterable[Task | list[bytes]] = jobs if jobs is not None else _batches(stream or iter(()))
        for job in source:
            while True:  # put, but notice a worker's error while the queue is full
                try:
                    job_q.put(job, timeout=0.1)
                    break
                except queue.Full:
                    done = _drain(result_q, words, stats, progress, done, block=False)
            done = _drain(result_q, words, stats, progress, done, block=False)
        for _ in procs:
            job_q.put(None)
        while done < n_workers:
            before = done
            done = _drain(result_q, words, stats, progress, done, block=True)
            if done == before and result_q.empty() and not any(p.is_alive() for p in procs):
                codes = [p.exitcode for p in procs]
                raise InputError(f"a counting worker died without a result (exit codes {codes}); out of memory?")
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()
    return words.to_packed()


def _drain(result_q: Any, words: WordCounter, stats: CountStats, progress: Progress | None, done: int, block: bool) -> int:
    while True:
        try:
            kind, payload = result_q.get(timeout=1.0) if block else result_q.get_nowait()
        except queue.Empty:
            return done
        if kind == "error":
            raise payload
        if kind == "progress":
            stats.n_bytes += payload
            if progress is not None:
                progress("count", stats.n_bytes, 0)
        else:
            (blob, meta), _n_bytes, n_chunks, skipped = payload
            words.add_packed(blob, meta)
            stats.n_chunks += n_chunks
            stats.n_skipped += skipped
            done += 1
            if progress is not None:  # adding up the tables is counting time too, as in stats.seconds
                progress("count", stats.n_bytes, 0)
        if block:
            return done


# ---- train ------------------------------------------------------------------------------------

ALGORITHMS = ("fast", "naive")


@dataclass
class TrainStats:
    """What a training run did, for the CLI's summary and for benchmarks."""

    count: CountStats
    unique_words: int = 0
    merges: int = 0
    merge_seconds: float = 0.0
    #: The merges vocab_size asked for; `merges` is smaller when training stopped early.
    requested_merges: int = 0

    @property
    def stopped_early(self) -> bool:
        """Training ran out of pairs before vocab_size: after the last merge no adjacent pair
        occurs twice in the words (the only reason the trainers stop short), so the vocabulary
        is smaller than asked -- more text would give more merges."""
        return self.merges < self.requested_merges


def _train(
    inputs: Sequence[PathLike] | Documents,
    *,
    vocab_size: int = 32768,
    pattern: str = "mnemonic",
    special_tokens: Sequence[str] | None = None,
    tie: str = "id",
    algorithm: str = "fast",
    workers: int | None = None,
    max_chunk_bytes: int = 256,
    verify: bool = True,
    text_field: str = "text",
    progress: Progress | None = None,
    stats: TrainStats | None = None,
) -> Tokenizer:
    """`train` and `train_from_iterator` once their inputs are known to be paths or documents.

    Every argument is checked before the first byte is counted: a wrong type is an
    ArgumentTypeError (a TypeError) naming the argument, a bad value a ConfigError.
    """
    _, specials, _, _ = check_count_args(inputs, pattern, special_tokens, max_chunk_bytes, workers, text_field, progress)
    vocab_size = check_vocab_size(vocab_size, len(specials))
    if not isinstance(algorithm, str):
        raise type_error("algorithm", "a str", algorithm)
    if not isinstance(tie, str):
        raise type_error("tie", "a str", tie)
    if not isinstance(verify, bool):
        raise type_error("verify", "a bool", verify)
    if stats is not None and not isinstance(stats, TrainStats):
        raise type_error("stats", "a TrainStats or None", stats)
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    if tie not in ("id", "bytes"):
        raise ConfigError(f"unknown tie rule {tie!r}; choose 'id' or 'bytes'")
    (blob, meta), count_stats = _count_packed(
        inputs,
        pattern=pattern,
        special_tokens=specials,
        max_chunk_bytes=max_chunk_bytes,
        workers=workers,
        text_field=text_field,
        progress=progress,
    )
    if not meta:
        raise InputError(
            f"the training text is empty ({count_stats.n_bytes} bytes, no chunk of at most "
            f"{max_chunk_bytes} bytes); give it some text"
        )
    n_merges = vocab_size - 256 - len(specials)
    t0 = time.perf_counter()
    if algorithm == "naive":
        merges, counts = train_merges_naive(packed_to_dict(blob, meta), n_merges, tie, verify, progress)
    else:
        # The 16-bit trainer while every id fits beside its separator 0xFFFF: half the memory
        # traffic of 32-bit tokens, and the AVX2 pair scan.
        narrow = 256 + n_merges <= merge_loop.MAX_IDS
        fast = merge_loop.train_merges_packed if narrow else merge_loop_wide.train_merges_packed
        merges, counts = fast(blob, meta, n_merges, tie, verify, progress)
    if stats is not None:
        stats.count = count_stats
        stats.unique_words = len(meta) // 16
        stats.merges = len(merges)
        stats.requested_merges = n_merges
        stats.merge_seconds = time.perf_counter() - t0
    return Tokenizer(merges, pattern=pattern, special_tokens=specials, tie=tie, merge_counts=counts)


def train(
    files: PathLike | Iterable[PathLike],
    *,
    vocab_size: int = 32768,
    pattern: str = "mnemonic",
    special_tokens: Sequence[str] | None = None,
    tie: str = "id",
    algorithm: str = "fast",
    workers: int | None = None,
    max_chunk_bytes: int = 256,
    verify: bool = True,
    text_field: str = "text",
    progress: Progress | None = None,
    stats: TrainStats | None = None,
) -> Tokenizer:
    """Learn a byte-level BPE vocabulary of `vocab_size` ids from files.

    `files`: a path (str or os.PathLike) or an iterable of paths: .txt, .jsonl, .parquet,
    optionally compressed with xz, gzip or zstd.  A str is always a path here; documents held in
    memory go to `train_from_iterator` (Hugging Face's split: `train(files)` and
    `train_from_iterator(iterator)`), so a list of texts is never read as file names.

    The vocabulary counts the 256 bytes, the merges and the special tokens (default: the 16 of
    DEFAULT_SPECIAL_TOKENS, at the top).  Special-token strings in the text split documents and
    are never learned.  Training stops early when no pair occurs twice.  `workers` processes
    count (default: every CPU); `stats`, when given, is filled with what the run did.
    """
    return _train(
        _file_paths(files),
        vocab_size=vocab_size,
        pattern=pattern,
        special_tokens=special_tokens,
        tie=tie,
        algorithm=algorithm,
        workers=workers,
        max_chunk_bytes=max_chunk_bytes,
        verify=verify,
        text_field=text_field,
        progress=progress,
        stats=stats,
    )


def train_from_iterator(
    iterator: Iterable[str | bytes | Sequence[str | bytes]],
    *,
    vocab_size: int = 32768,
    pattern: str = "mnemonic",
    special_tokens: Sequence[str] | None = None,
    tie: str = "id",
    algorithm: str = "fast",
    workers: int | None = None,
    max_chunk_bytes: int = 256,
    verify: bool = True,
    progress: Progress | None = None,
    stats: TrainStats | None = None,
) -> Tokenizer:
    """Learn a byte-level BPE vocabulary of `vocab_size` ids from documents held in memory.

    `iterator`: any iterable (a list, a generator, a dataset column) of documents -- str or
    bytes -- or of batches of documents (lists or tuples of them, as Hugging Face's
    `train_from_iterator` takes).  It is read once, lazily: a generator is never gathered into a
    list, and with several workers the documents go to them in batches of about 4 MB.  The same
    documents in a file given to `train` give the identical tokenizer.  Options as in `train`.
    """
    return _train(
        Documents(_documents(iterator)),
        vocab_size=vocab_size,
        pattern=pattern,
        special_tokens=special_tokens,
        tie=tie,
        algorithm=algorithm,
        workers=workers,
        max_chunk_bytes=max_chunk_bytes,
        verify=verify,
        progress=progress,
        stats=stats,
    )


#: How much of a document an error message shows.
SHOW_CHARS = 40


def _shorten(text: str) -> str:
    return repr(text if len(text) <= SHOW_CHARS else text[:SHOW_CHARS] + "...")


def _looks_like_text(name: str) -> bool:
    """A string more likely a document than a file name: it holds white space, is longer than a
    file name can be (255 bytes on common file systems), or has neither a directory nor a
    suffix.  It only chooses the wording of the error (the command line's users see the plain
    `no such file` for a mistyped path): a str given to `train` is a path, whatever it looks like."""
    if len(name.encode("utf-8", "surrogatepass")) > 255 or any(c.isspace() for c in name):
        return True
    return os.sep not in name and "/" not in name and "." not in name


def _file_paths(files: object) -> list[PathLike]:
    """`train`'s inputs as a list of paths; documents passed by mistake are an error naming the
    first one and `train_from_iterator`."""
    hint = "to train on documents held in memory, call mnemo.train_from_iterator(documents) instead"
    if isinstance(files, (str, os.PathLike)):
        items: list[object] = [files]
    elif isinstance(files, (bytes, bytearray, memoryview)):
        raise ArgumentTypeError(f"files is a {type(files).__name__}; mnemo.train reads files (str or os.PathLike paths): {hint}")
    elif isinstance(files, Iterable):
        items = list(files)
    else:
        raise ArgumentTypeError(f"files is a {type(files).__name__}, not a path or an iterable of paths")
    for i, item in enumerate(items):
        if not isinstance(item, (str, os.PathLike)):
            raise ArgumentTypeError(f"files[{i}] is a {type(item).__name__}, not a path (str or os.PathLike): {hint}")
    for item in items:
        if isinstance(item, str) and not is_stdin(item) and not os.path.exists(item):
            if _looks_like_text(item):
                raise InputError(f"mnemo.train reads files, and {_shorten(item)} is not a file; {hint}")
            raise InputError(f"{item}: no such file; check the path")
    return cast("list[PathLike]", items)


def _documents(iterator: object) -> Iterator[str | bytes]:
    """The documents of `train_from_iterator`'s argument, batches flattened, one pass."""
    if isinstance(iterator, str):
        raise ArgumentTypeError(
            "train_from_iterator takes an iterable of documents and got a single str (it would train "
            "on its characters one by one); pass [text] for one document"
        )
    if isinstance(iterator, (bytes, bytearray, memoryview)):
        raise ArgumentTypeError("train_from_iterator takes an iterable of documents and got a single bytes; pass [data]")
    if isinstance(iterator, os.PathLike):
        raise ArgumentTypeError(f"train_from_iterator takes documents and got a path ({os.fspath(iterator)}); pass files to mnemo.train")
    if not isinstance(iterator, Iterable):
        raise ArgumentTypeError(f"train_from_iterator takes an iterable of documents, got a {type(iterator).__name__}")
    return _flatten(iterator)


def _flatten(iterator: Iterable[object]) -> Iterator[str | bytes]:
    for i, item in enumerate(iterator):
        if isinstance(item, (str, bytes)):
            yield item
        elif isinstance(item, (bytearray, memoryview)):
            yield bytes(item)
        elif isinstance(item, (list, tuple)):
            for j, doc in enumerate(item):
                if isinstance(doc, (str, bytes)):
                    yield doc
                elif isinstance(doc, (bytearray, memoryview)):
                    yield bytes(doc)
                else:
                    raise ArgumentTypeError(
                        f"train_from_iterator: item {i} (a batch), element {j} is a {type(doc).__name__}; "
                        f"documents are str or bytes"
                    )
        else:
            raise ArgumentTypeError(
                f"train_from_iterator: item {i} is a {type(item).__name__}; items are documents (str or "
                f"bytes) or batches of documents (lists or tuples)"
            )
