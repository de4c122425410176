"""`mnemo.train` (files) and `mnemo.train_from_iterator` (documents): from inputs to a trained Tokenizer.

Phases: (1) count words -- each task (a byte range, a row group, a batch of documents) is
pre-tokenized and counted in a table of its own (mnemo/count.py), and the tables are added up as
they arrive, by the work engine (mnemo/work.py: map_combine); (2) learn merges
(mnemo/merge_loop.py, or the naive twin in mnemo/reference.py); (3) wrap them in a Tokenizer.

Workers: with seekable inputs (plain text and JSONL files, Parquet row groups) each worker reads
its own tasks; with streams (compressed files, in-memory documents) the parent reads and hands
out batches of documents, a few at a time, so it never holds a corpus in memory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any, Union, cast

from librt.vecs import vec
from mypy_extensions import i64

from mnemo.count import PackedCounts, WordCounter, packed_to_dict
from mnemo.superword import CoarseCounter, CoarseCounts, add_both, renumber
from mnemo.checks import check_int, check_pattern, check_tie, check_train_args, type_error
from mnemo.errors import ArgumentTypeError, ConfigError, InputError
from mnemo.workers import resolve_workers
from mnemo.patterns import SplitPattern, for_counting, handle, stored_id
from mnemo.prune import PruneStats, Skip, check_prune, learn_pruned, refusing_also
from mnemo.superbpe import Stage2Stats, check_superword, learn_stage2, too_many_words
from mnemo.reference import train_merges_naive
from mnemo.tokenizer import Tokenizer
from mnemo.vocab import DEFAULT_SPECIAL_TOKENS, check_special_tokens
from mnemo import merge_loop, merge_loop_wide
from mnemo.constants import MAX_VOCAB, PATTERNS
from mnemo.defaults import DEFAULT_MAX_CHUNK_BYTES, DEFAULT_PATTERN, DEFAULT_TEXT_FIELD, DEFAULT_TIE, DEFAULT_VOCAB_SIZE
from mnemo.location import location
from mnemo.work import Progress, map_combine, shared_executor
from mnemo.work_ray import RayOptions, check_ray_option
from mnemo.sources import Task, documents_from_iterable, iter_task_documents, plan_tasks

PathLike = Union[str, "os.PathLike[str]"]
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
    #: Superword training: the coarse chunks' counts, read in the same pass (docs/superword.md).
    coarse: CoarseCounts | None = None



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
    """`vocab_size` checked: an int from 256 bytes + the special tokens up to constants.MAX_VOCAB.
    Callers that write files before training (`mnemo demo`) check it first too."""
    return _vocab_size_in_range(check_int("vocab_size", vocab_size), n_specials)


def _vocab_size_in_range(size: int, n_specials: int) -> int:
    """check_vocab_size of an int."""
    least = 256 + n_specials
    if size < least:
        raise ConfigError(f"vocab_size must be >= {least} (256 bytes + {n_specials} special tokens), got {size}")
    if size > MAX_VOCAB:
        raise ConfigError(
            f"vocab_size must be <= {MAX_VOCAB:,} (constants.MAX_VOCAB: the encoder packs ids in 21 bits), got {size}"
        )
    return size


def _check_chunk(max_chunk_bytes: object) -> int:
    """`max_chunk_bytes` checked: an int from 1 to MAX_CHUNK_BYTES."""
    chunk = check_int("max_chunk_bytes", max_chunk_bytes)
    if chunk < 1:
        raise ConfigError(f"max_chunk_bytes must be >= 1, got {chunk}")
    if chunk > MAX_CHUNK_BYTES:
        raise ConfigError(f"max_chunk_bytes must be <= {MAX_CHUNK_BYTES}, got {chunk}")
    return chunk


def _check_plain(inputs: object, text_field: object, progress: object) -> tuple[str, Progress | None]:
    """The counting arguments this module checks by itself: the inputs' type, the text field, the
    progress callable (the last two returned)."""
    if not isinstance(inputs, Documents) and (
        isinstance(inputs, (bytes, bytearray, memoryview)) or not isinstance(inputs, (str, os.PathLike, Iterable))
    ):
        raise type_error("inputs", "a path, a list of paths, or an iterable of str/bytes documents", inputs)
    if not isinstance(text_field, str):
        raise type_error("text_field", "a str", text_field)
    if not text_field:
        raise ConfigError("text_field must name a JSONL field / Parquet column, got ''")
    if progress is not None and not callable(progress):
        raise type_error("progress", "a callable progress(phase, done, total) or None", progress)
    return text_field, cast("Progress | None", progress)


@dataclass(frozen=True)
class CountRun:
    """A counting run's arguments, checked and resolved once, before a byte is read: the
    compiled pattern and what the counting phase needs of it (its key for the workers, whether
    inputs may be cut at word gaps), the special tokens, the workers.  Everything after reads
    these; nothing asks patterns, vocab or workers again."""

    pattern: SplitPattern
    key: str  # patterns.key_of(pattern): how the pattern travels to workers
    whole_documents: bool  # the pattern may not cut at word gaps: keep documents whole
    specials: list[str]
    max_chunk_bytes: int
    n_workers: int
    text_field: str
    progress: Progress | None


def _count_run(
    pattern: str | SplitPattern,
    special_tokens: object,
    max_chunk_bytes: int,
    workers: object,
    text_field: str,
    progress: Progress | None,
) -> CountRun:
    """The CountRun of arguments whose plain checks are done (check_count_args): the pattern
    compiled (a str passed checks.check_pattern), the special tokens and the workers checked."""
    split_pattern, key, cuts = for_counting(pattern)
    specials = check_special_tokens(special_tokens)
    n_workers = resolve_workers(workers)
    return CountRun(split_pattern, key, not cuts, specials, max_chunk_bytes, n_workers, text_field, progress)


def check_count_args(
    inputs: object,
    pattern: object,
    special_tokens: object,
    max_chunk_bytes: object,
    workers: object,
    text_field: object,
    progress: object,
) -> CountRun:
    """The checks of every counting argument, done before a byte is read (a bad argument must
    not cost a training run), and what they resolve to.  A wrong type is an ArgumentTypeError
    (a TypeError) naming the argument, a bad value a ConfigError."""
    field, reporter = _check_plain(inputs, text_field, progress)
    checked = pattern if isinstance(pattern, SplitPattern) else check_pattern(pattern)
    chunk = _check_chunk(max_chunk_bytes)
    return _count_run(checked, special_tokens, chunk, workers, field, reporter)


@dataclass(frozen=True)
class CountSettings:
    """What every counting task needs besides its documents (plain data: it travels to workers).
    `pattern` is the pattern's JSON (patterns.key_of): a worker compiles it (patterns.handle)."""

    pattern: str
    max_chunk_bytes: int
    specials: tuple[str, ...]
    text_field: str
    whole_documents: bool = False  # the pattern may not cut at word gaps: keep documents whole
    #: Superword training: also count stage 2's coarse chunks (mnemo/superword.py), in a table of
    #: their own, from the same reading of the documents (a named pattern's: its handle is its id).
    coarse: bool = False


@dataclass(frozen=True)
class CountPart:
    """A count table as it travels between processes (the two byte strings of a
    count.PackedCounts, as plain fields) and what was counted into it."""

    blob: bytes
    meta: bytes
    n_bytes: int
    n_chunks: int
    skipped: int
    #: The coarse chunks of two stage-1 chunks or more (CountSettings.coarse; superword.CoarseCounts'
    #: `ids`): the ids of their stage-1 chunks, which are the indices of `blob` / `meta`'s
    #: words; empty otherwise.
    coarse_ids: bytes = b""


def count_task(settings: CountSettings, state: object, job: Task | Iterable[bytes]) -> CountPart:
    """The counting map: one Task (read here, by whichever process runs this) or documents the
    caller read (a list when it goes to a worker), counted in a table of their own."""
    pid = handle(settings.pattern)
    # with coarse chunks, the words get ids (listed in their order) that the coarse chunks name
    counter = WordCounter(pid, settings.max_chunk_bytes, track=settings.coarse)
    docs = (
        iter_task_documents(
            job, text_field=settings.text_field, specials=settings.specials, whole_documents=settings.whole_documents
        )
        if isinstance(job, Task)
        else job
    )
    if not settings.coarse:
        for doc in docs:
            counter.add(doc)
        blob, meta = counter.to_packed()
        return CountPart(blob, meta, counter.n_bytes, counter.n_chunks, counter.skipped)
    coarse = CoarseCounter(pid, settings.max_chunk_bytes, counter)
    for doc in docs:
        add_both(counter, coarse, doc, pid)
    got = coarse.to_counts()  # counter.to_packed() as its wblob, wmeta
    return CountPart(got.wblob, got.wmeta, counter.n_bytes, counter.n_chunks, counter.skipped, got.ids)


class TableSum:
    """Count tables added into one, as they arrive.  A single table (one worker, one task) is
    the sum as it is: it is not unpacked and packed again.  With `track`, the sum lists its
    words in the order of their ids (count.WordCounter), and `add` says where each word of the
    table added went."""

    def __init__(self, pattern: str, max_chunk_bytes: int, track: bool = False) -> None:
        self.pattern = pattern
        self.max_chunk_bytes = max_chunk_bytes
        self.track = track
        self.only: tuple[bytes, bytes] | None = None
        self.words: WordCounter | None = None

    def add(self, blob: bytes, meta: bytes) -> vec[i64] | None:
        """Add a table; with `track`, the ids of its words in the sum (a vec, WordCounter.add_packed's
        answer), or None when they are the same (the first table)."""
        if self.words is None and self.only is None:
            self.only = (blob, meta)
            return None
        if self.words is None:
            self.words = WordCounter(handle(self.pattern), self.max_chunk_bytes, track=self.track)
            assert self.only is not None
            # into an empty table, its distinct words take ids 0, 1, 2, ... in their order: the
            # ids the first table's coarse chunks already use
            self.words.add_packed(*self.only)
            self.only = None
        return self.words.add_packed(blob, meta)

    def result(self) -> tuple[bytes, bytes]:
        if self.words is None:
            return self.only if self.only is not None else (b"", b"")
        blob, meta = self.words.to_packed()
        return blob, meta


class CountSum:
    """The counting combine: the parts' tables (words, and coarse chunks when counted) added up.
    The coarse chunks' ids of each part are renumbered as the sum numbers its words."""

    def __init__(self, pattern: str, max_chunk_bytes: int, coarse: bool = False) -> None:
        self.words = TableSum(pattern, max_chunk_bytes, track=coarse)
        self.ids: list[bytes] = []
        self.n_bytes = 0
        self.n_chunks = 0
        self.skipped = 0

    def add(self, part: CountPart) -> None:
        self.n_bytes += part.n_bytes
        self.n_chunks += part.n_chunks
        self.skipped += part.skipped
        remap = self.words.add(part.blob, part.meta)
        if part.coarse_ids:
            self.ids.append(part.coarse_ids if remap is None else renumber(part.coarse_ids, remap))

    def result(self) -> CountPart:
        blob, meta = self.words.result()
        ids = self.ids[0] if len(self.ids) == 1 else b"".join(self.ids)
        return CountPart(blob, meta, self.n_bytes, self.n_chunks, self.skipped, ids)


def _reporting(docs: Iterator[bytes], progress: Progress | None) -> Iterator[bytes]:
    """The documents, reporting the bytes of those before each one as it is taken (they have been
    counted by then)."""
    done = 0
    for doc in docs:
        yield doc
        done += len(doc)
        if progress is not None:
            progress("count", done, 0)


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
    pattern: str | SplitPattern = DEFAULT_PATTERN,
    special_tokens: Sequence[str] = (),
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    workers: int | None = None,
    text_field: str = DEFAULT_TEXT_FIELD,
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
    pattern: str | SplitPattern,
    special_tokens: Sequence[str],
    max_chunk_bytes: int,
    workers: int | None,
    text_field: str,
    progress: Progress | None,
    ray: RayOptions | None = None,
    coarse: bool = False,
) -> tuple[PackedCounts, CountStats]:
    """count_words, with the counts as a count.PackedCounts (the trainer lays them out
    directly; a dict of every word is never built).  With `ray`, counted and added up on a Ray
    cluster (mnemo/work_ray.py)."""
    run = check_count_args(inputs, pattern, special_tokens, max_chunk_bytes, workers, text_field, progress)
    return _count(inputs, run, ray, coarse)


def _count(
    inputs: Sequence[PathLike] | Documents, run: CountRun, ray: RayOptions | None, coarse: bool
) -> tuple[PackedCounts, CountStats]:
    """_count_packed of checked arguments (`run`); `coarse`: count stage 2's coarse chunks too."""
    progress, special_tokens, whole = run.progress, run.specials, run.whole_documents
    t0 = time.perf_counter()
    if progress is not None:
        progress("count", 0, 0)  # the phase starts: its rate is measured from here, like stats.seconds
    stats = CountStats()

    def on_part(part: CountPart) -> None:
        stats.n_bytes += part.n_bytes
        if progress is not None:
            progress("count", stats.n_bytes, 0)

    settings = CountSettings(run.key, run.max_chunk_bytes, tuple(special_tokens), run.text_field, whole, coarse)
    combine = partial(CountSum, run.key, run.max_chunk_bytes, coarse)
    if ray is not None:
        from mnemo.work_ray import plan_count_tasks, ray_executor

        if isinstance(inputs, Documents):
            raise ConfigError("documents held in memory cannot be counted on Ray; write them to files every node can read")
        with ray_executor(ray) as on_ray:  # its map_combine adds the tables up in a tree on the cluster
            total = map_combine(
                plan_count_tasks(inputs, ray, on_ray, special_tokens, whole),
                partial(count_task, settings),
                combine,
                executor=on_ray,
                on_part=on_part,
            )
    else:
        docs: Iterator[bytes]
        jobs: Iterable[Task | Iterable[bytes]]
        if isinstance(inputs, Documents):
            docs = documents_from_iterable(inputs.docs, special_tokens)
        else:
            tasks = plan_tasks(inputs, n_workers=run.n_workers, specials=special_tokens, whole_documents=whole, check=True)
            docs = (
                d
                for t in tasks
                for d in iter_task_documents(t, text_field=run.text_field, specials=special_tokens, whole_documents=whole)
            )
        if run.n_workers == 1:
            # Nothing travels: the whole input is one task, counted into one table as it is read
            # (each document before the next is taken), progress at every document.
            jobs = [_reporting(docs, progress)]
        elif not isinstance(inputs, Documents) and not any(t.sequential for t in tasks):
            jobs = tasks  # each worker reads its own byte ranges and row groups
        else:
            jobs = _batches(docs)  # a compressed file or a stream is read here, once, and handed out
        with shared_executor(run.n_workers) as executor:
            total = map_combine(jobs, partial(count_task, settings), combine, executor=executor, on_part=on_part)
    stats.n_bytes, stats.n_chunks, stats.n_skipped = total.n_bytes, total.n_chunks, total.skipped
    stats.seconds = time.perf_counter() - t0
    if coarse:
        stats.coarse = CoarseCounts(total.blob, total.meta, b"", b"", total.coarse_ids)
    return PackedCounts(total.blob, total.meta), stats


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
    #: With prune="intermediate": the runs and the tokens removed (mnemo/prune.py).
    prune: PruneStats | None = None
    #: With superword=T: stage 2's words and its cut (mnemo/superbpe.py).
    stage2: Stage2Stats | None = None

    @property
    def stopped_early(self) -> bool:
        """Training ran out of pairs before vocab_size: after the last merge no adjacent pair
        occurs twice in the words (the only reason the trainers stop short), so the vocabulary
        is smaller than asked -- more text would give more merges."""
        return self.merges < self.requested_merges


@dataclass(frozen=True)
class TrainOptions:
    """The keywords `train` and `train_from_iterator` take, with their defaults: written once,
    here.  The two public functions spell them out in their signatures, so that help() and type
    checkers show them (tests/test_training.py checks that those signatures match this class),
    and hand them over with `_options(locals())`."""

    vocab_size: int = DEFAULT_VOCAB_SIZE
    pattern: str | SplitPattern | None = None
    special_tokens: Sequence[str] | None = None
    tie: str | None = None
    algorithm: str = "fast"
    workers: int | None = None
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES
    verify: bool = True
    text_field: str = DEFAULT_TEXT_FIELD
    progress: Progress | None = None
    stats: TrainStats | None = None
    base: Tokenizer | None = None
    ray: object = None
    prune: object = None
    superword: object = None


def _options(arguments: dict[str, Any]) -> TrainOptions:
    """The TrainOptions of a public function's arguments (its `locals()` before anything else is
    bound: its inputs and its keywords; a keyword it lacks keeps the class's default)."""
    names = [f.name for f in fields(TrainOptions)]
    return TrainOptions(**{name: arguments[name] for name in names if name in arguments})


def _train(inputs: Sequence[PathLike] | Documents, options: TrainOptions) -> Tokenizer:
    """`train` and `train_from_iterator` once their inputs are known to be paths or documents.

    Every argument is checked before the first byte is counted: a wrong type is an
    ArgumentTypeError (a TypeError) naming the argument, a bad value a ConfigError.
    """
    o = options
    pattern, special_tokens, tie = o.pattern, o.special_tokens, o.tie
    initial: list[tuple[int, int]] | None = None
    if o.base is not None:
        from mnemo.extend import continue_from

        pattern, special_tokens, tie, initial = continue_from(o.base, pattern, special_tokens, tie)
    pattern = DEFAULT_PATTERN if pattern is None else pattern
    tie = DEFAULT_TIE if tie is None else tie
    # The run's settings, resolved once and in one place, each module asked once: first what this
    # module checks itself, then the argument checks (checks.py), then what the pattern, the
    # special tokens and the workers resolve to (CountRun), then the Ray, prune and superword
    # options.  Counting and merging read the results.
    text_field, progress = _check_plain(inputs, o.text_field, o.progress)
    if not isinstance(o.algorithm, str):
        raise type_error("algorithm", "a str", o.algorithm)
    if not isinstance(o.verify, bool):
        raise type_error("verify", "a bool", o.verify)
    if o.stats is not None and not isinstance(o.stats, TrainStats):
        raise type_error("stats", "a TrainStats or None", o.stats)
    if o.algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {o.algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    checked = pattern if isinstance(pattern, SplitPattern) else check_pattern(pattern)
    chunk = _check_chunk(o.max_chunk_bytes)
    size = check_int("vocab_size", o.vocab_size)
    tie = check_tie(tie)
    run = _count_run(checked, special_tokens, chunk, o.workers, text_field, progress)
    specials = run.specials
    vocab_size = _vocab_size_in_range(size, len(specials))
    ray_options = check_ray_option(o.ray)
    prune_mode = check_prune(o.prune)
    transition: int | None = None
    named_pattern = ""  # superword training's pattern, by name
    if o.superword is not None:
        if o.base is not None:
            raise ConfigError("superword training starts from no base tokenizer (give base=None, or superword=None)")
        transition = check_superword(o.superword, vocab_size, len(specials))
        named = stored_id(run.pattern)
        if named is None:
            raise ConfigError(
                f"superword training runs on one of the five named patterns ({', '.join(PATTERNS)}) on mnemo's own "
                f"Unicode tables; {pattern!r} is another pattern (docs/superword.md)"
            )
        named_pattern = PATTERNS[named]
    if ray_options is not None and o.workers is not None:
        raise ConfigError(f"workers={o.workers} is for local runs; on Ray, size the tasks with RayOptions(tasks_per_node=...) (--tasks-per-node)")
    if ray_options is not None and not isinstance(inputs, Documents):
        # a Ray run plans its inputs once the cluster is up: a missing path is named before
        missing = _missing_file(inputs)
        if missing is not None:
            raise missing
    try:
        packed, count_stats = _count(inputs, run, ray_options, coarse=transition is not None)
    except InputError:
        # sources looks at the inputs, once; when an input of `train` is a str naming no file,
        # the error says so as `train` words it (a document passed by mistake, or a missing path)
        missing = None if isinstance(inputs, Documents) else _missing_file(inputs)
        if missing is None:
            raise
        raise missing from None
    blob, meta = packed
    if not meta:
        raise InputError(
            f"the training text is empty ({count_stats.n_bytes} bytes, no chunk of at most "
            f"{o.max_chunk_bytes} bytes); give it some text"
        )
    n_merges = vocab_size - 256 - len(specials)
    if initial is not None and n_merges < len(initial):
        raise ConfigError(
            f"vocab_size {vocab_size} is smaller than the tokenizer continued from: its {len(initial)} merges "
            f"and {len(specials)} special tokens need at least {256 + len(initial) + len(specials)}"
        )
    t0 = time.perf_counter()
    n_all = n_merges
    if transition is not None:
        n_merges = transition - 256  # stage 1: ordinary merges up to the transition

    def learn(skip: Skip | None) -> tuple[list[tuple[int, int]], list[int]]:
        if o.algorithm == "naive":
            return train_merges_naive(packed_to_dict(blob, meta), n_merges, tie, o.verify, o.progress, initial, skip)
        # The 16-bit trainer while every id fits beside its separator 0xFFFF: half the memory
        # traffic of 32-bit tokens, and the AVX2 pair scan.  Above that, merge_loop_wide still
        # learns the first 65,279 merges with it and continues from its words (SEAMS.handoff).
        narrow = 256 + n_merges <= merge_loop.MAX_IDS
        fast = merge_loop.train_merges_packed if narrow else merge_loop_wide.train_merges_packed
        return fast(blob, meta, n_merges, tie, o.verify, o.progress, initial_merges=initial, skip=skip)

    prune_stats = PruneStats() if prune_mode is not None else None
    learner = learn
    stage1_size = [0]
    if transition is not None:
        # stage 2 (mnemo/superbpe.py): from stage 1's merges, on the coarse chunks
        coarse = count_stats.coarse
        assert coarse is not None
        stage2_stats = Stage2Stats()
        if o.stats is not None:
            o.stats.stage2 = stage2_stats

        def learn_stage1(skip: Skip | None) -> tuple[tuple[list[tuple[int, int]], list[int]], merge_loop.TrainState | None]:
            """`learn`, and with the 16-bit trainer the words as it left them: stage 2 reads each
            word's stage-1 tokens there instead of encoding it (superword.Stage1Words)."""
            if o.algorithm == "naive" or 256 + n_merges > merge_loop.MAX_IDS:
                return learn(skip), None
            check_train_args({}, n_merges, tie)
            state = merge_loop.train_state(blob, meta, n_merges, n_merges, tie, o.verify, o.progress, [], skip)
            if o.progress is not None:
                o.progress("merge", len(state.merges), n_merges)
            return (state.merges, state.counts), state

        def learn_both(skip: Skip | None) -> tuple[list[tuple[int, int]], list[int]]:
            assert coarse is not None
            stage1, words1 = learn_stage1(skip)
            stage1_size[0] = len(stage1[0])  # fewer than asked when stage 1 ran out of pairs
            skip2 = too_many_words if skip is None else refusing_also(skip, too_many_words)
            return learn_stage2(
                stage1, coarse, n_all, named_pattern, tie, o.verify, o.progress, o.algorithm, skip2, stage2_stats, words1
            )

        learner = learn_both
    if prune_stats is None:
        merges, counts = learner(None)
    else:
        # superword: a stage-1 token that stage 2 consumes whole is intermediate too, and is
        # refused in both stages of the next run
        merges, counts = learn_pruned(learner, len(initial or ()), prune_stats)
    if transition is not None:
        transition = 256 + stage1_size[0]
        n_merges = n_all
    if o.stats is not None:
        o.stats.count = count_stats
        o.stats.unique_words = packed.n_words
        o.stats.merges = len(merges)
        o.stats.requested_merges = n_merges
        o.stats.merge_seconds = time.perf_counter() - t0
        o.stats.prune = prune_stats
    return Tokenizer(
        merges, pattern=pattern, special_tokens=specials, tie=tie, merge_counts=counts, superword=transition
    )


def train(
    files: PathLike | Iterable[PathLike],
    *,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    pattern: str | SplitPattern | None = None,
    special_tokens: Sequence[str] | None = None,
    tie: str | None = None,
    algorithm: str = "fast",
    workers: int | None = None,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    verify: bool = True,
    text_field: str = DEFAULT_TEXT_FIELD,
    progress: Progress | None = None,
    stats: TrainStats | None = None,
    base: Tokenizer | None = None,
    ray: bool | str | RayOptions | None = None,
    prune: str | None = None,
    superword: int | None = None,
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
    `pattern` defaults to "mnemonic" and `tie` to "id"; it is a preset name, a split regex or a
    SplitPattern (docs/pretokenizer.md).

    `base`: continue training from this tokenizer -- its merges are the first ones, in order,
    and new merges learned from `files` follow up to `vocab_size` (which counts them all);
    its pattern, tie rule and special tokens are the defaults (docs/extending.md).

    `ray`: count on a Ray cluster instead (docs/ray.md): True for the cluster RAY_ADDRESS names
    (else a new local one), "HOST:PORT" for that cluster, or a RayOptions.  The files must be
    readable by every node under the same path; the merge loop runs here, and the tokenizer is
    byte for byte the one a local run makes.

    `prune="intermediate"`: no token of the result is intermediate only (every occurrence
    consumed by later merges in training, as `mnemo inspect` lists them): for each one a run
    finds, the next run refuses its least frequent user, which leaves it occurrences of its own,
    and the merges after the refused ones fill the vocabulary to `vocab_size` (mnemo/prune.py,
    docs/superword.md).  Costs one more merge-loop run per round; the counting is done once.

    `superword=T`: a superword tokenizer (SuperBPE's curriculum, docs/superword.md): ordinary
    merges up to id T, then merges over coarse chunks -- runs of the pattern's chunks that a
    merge may bridge ("by the way") -- up to `vocab_size`.  Both stages are counted in the same
    pass, by the same workers (or Ray cluster).
    """
    return _train(_file_paths(files), _options(locals()))


def train_from_iterator(
    iterator: Iterable[str | bytes | Sequence[str | bytes]],
    *,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    pattern: str | SplitPattern | None = None,
    special_tokens: Sequence[str] | None = None,
    tie: str | None = None,
    algorithm: str = "fast",
    workers: int | None = None,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    verify: bool = True,
    progress: Progress | None = None,
    stats: TrainStats | None = None,
    base: Tokenizer | None = None,
    prune: str | None = None,
    superword: int | None = None,
) -> Tokenizer:
    """Learn a byte-level BPE vocabulary of `vocab_size` ids from documents held in memory.

    `iterator`: any iterable (a list, a generator, a dataset column) of documents -- str or
    bytes -- or of batches of documents (lists or tuples of them, as Hugging Face's
    `train_from_iterator` takes).  It is read once, lazily: a generator is never gathered into a
    list, and with several workers the documents go to them in batches of about 4 MB.  The same
    documents in a file given to `train` give the identical tokenizer.  Options as in `train`.
    """
    return _train(Documents(_documents(iterator)), _options(locals()))


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


_DOCUMENTS_HINT = "to train on documents held in memory, call mnemo.train_from_iterator(documents) instead"


def _file_paths(files: object) -> list[PathLike]:
    """`train`'s inputs as a list of paths; documents passed by mistake are an error naming the
    first one and `train_from_iterator` (a str that names no file: when the inputs are looked
    at, _missing_file)."""
    hint = _DOCUMENTS_HINT
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
    return cast("list[PathLike]", items)


def _missing_file(files: Sequence[PathLike]) -> InputError | None:
    """The error for the first of `train`'s inputs that is a str naming no local file (a URL is
    looked up when it is read, standard input never is), or None: "not a file" with the hint
    towards train_from_iterator when it looks like a document, else "no such file"."""
    for item in files:
        if isinstance(item, str) and not (where := location(item)).remote and not where.stdin and not os.path.exists(item):
            if _looks_like_text(item):
                return InputError(f"mnemo.train reads files, and {_shorten(item)} is not a file; {_DOCUMENTS_HINT}")
            return InputError(f"{item}: no such file; check the path")
    return None


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
