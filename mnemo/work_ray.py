"""The Ray executor: counting and tokenizing on a Ray cluster (docs/ray.md).

Ray is an optional extra (`pip install 'mnemo[ray]'`) and is imported here only, when a caller
asks for it.  What runs where:

- counting: each task counts its input pieces on a node and leaves its packed table in the
  object store; tables are added up by combine tasks, `fan_in` at a time, as they arrive -- a
  tree on the cluster -- so the driver receives one table, the total, and runs only the merge
  loop.  The table is the one a local run adds up (addition of counts does not depend on the
  order), so the tokenizer.bin is byte for byte a local run's;
- tokenizing: each task writes its own .tok shard where it runs (mnemo/shards.py), through a
  temporary name and a rename, so a task Ray retries after a node died cannot leave half a
  shard; only counts cross the network.

Inputs are read by the nodes themselves: they must be on a filesystem every node sees, under the
same absolute path (paths are made absolute on the driver).
"""

from __future__ import annotations

import importlib
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from mnemo.errors import ArgumentTypeError, ClusterError, ConfigError, InputError, MnemoError
from mnemo.sources import Task, check_inputs, display_name, is_stream, iter_task_documents, kind_of, plan_tasks

if TYPE_CHECKING:
    from mnemo.tokenizer import Tokenizer

Progress = Callable[[str, int, int], None]

#: What to install for Ray, named in the error when it is missing.
RAY_EXTRA: Final = "pip install 'mnemo[ray]'"
#: Tables added up by one combine task: depth log_4(tasks) (64 tasks: 3 levels), and each combine
#: holds at most 4 tables and their sum.
DEFAULT_FAN_IN: Final = 4
#: Input bytes per tokenize shard: big enough that a shard's start-up (a task, a tokenizer from
#: the object store) is noise, small enough that a retried shard costs seconds.
DEFAULT_SHARD_BYTES: Final = 64 << 20
#: Tasks a run keeps submitted per cluster CPU: enough that no CPU waits for the driver, few
#: enough that a run of millions of tasks does not queue them all at once.
IN_FLIGHT_PER_CPU: Final = 2


@dataclass(frozen=True)
class RayOptions:
    """How to run on Ray (the `ray=` argument of mnemo.train and tokenize_files; `ray=True` or
    `ray="HOST:PORT"` are short for RayOptions() and RayOptions(address=...)).

    `address`: the cluster to connect to; None: the one RAY_ADDRESS names, else a new local
    cluster (Ray's own rule for `ray.init()`).  `tasks_per_node`: counting tasks per node (None:
    sized by mnemo's planner, about 16 per CPU and at least 16 MB each).  `fan_in`: count tables
    added up by one combine task.  `shard_bytes`: input bytes per tokenize shard."""

    address: str | None = None
    tasks_per_node: int | None = None
    fan_in: int = DEFAULT_FAN_IN
    shard_bytes: int = DEFAULT_SHARD_BYTES


def check_ray_option(ray: object) -> RayOptions | None:
    """The `ray` argument of the library: None/False (run here), True (Ray, address from the
    environment or a local cluster), an address str, or RayOptions."""
    if ray is None or ray is False:
        return None
    if ray is True:
        return RayOptions()
    if isinstance(ray, str):
        return RayOptions(address=ray or None)
    if not isinstance(ray, RayOptions):
        raise ArgumentTypeError(f"ray must be None, a bool, an address str or mnemo.RayOptions, got {type(ray).__name__}")
    for name in ("tasks_per_node", "fan_in", "shard_bytes"):
        value = getattr(ray, name)
        if value is None and name == "tasks_per_node":
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(f"RayOptions.{name} must be an int, got {type(value).__name__}")
    if ray.tasks_per_node is not None and ray.tasks_per_node < 1:
        raise ConfigError(f"RayOptions.tasks_per_node must be >= 1, got {ray.tasks_per_node}")
    if ray.fan_in < 2:
        raise ConfigError(f"RayOptions.fan_in must be >= 2 (tables added up per combine task), got {ray.fan_in}")
    if ray.shard_bytes < 1:
        raise ConfigError(f"RayOptions.shard_bytes must be >= 1, got {ray.shard_bytes}")
    if ray.address is not None and not isinstance(ray.address, str):
        raise ArgumentTypeError(f"RayOptions.address must be a str or None, got {type(ray.address).__name__}")
    return ray


def import_ray() -> Any:
    """The `ray` module, or a ConfigError naming the extra to install."""
    try:
        module: ModuleType = importlib.import_module("ray")
    except ImportError:
        raise ConfigError(f"Ray is not installed, and --ray / ray= needs it: {RAY_EXTRA}") from None
    return module


class _Session:
    """Ray connected for one call: shut down at the end when this call started it (a caller that
    ran ray.init itself keeps its connection)."""

    def __init__(self, options: RayOptions) -> None:
        self.ray = import_ray()
        self.owned = False
        if not self.ray.is_initialized():
            os.environ.setdefault("RAY_ENABLE_USAGE_STATS", "0")
            try:
                self.ray.init(address=options.address, logging_level="WARNING", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = options.address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
                raise ClusterError(f"cannot connect to the Ray cluster at {where}: {exc}; check the address (ray status)") from None
            self.owned = True
        self.exceptions = importlib.import_module("ray.exceptions")
        self._remotes: dict[str, Any] = {}

    def remote(self, fn: Callable[..., Any], **options: Any) -> Any:
        key = f"{fn.__name__}:{sorted(options.items())}"
        if key not in self._remotes:
            self._remotes[key] = self.ray.remote(**options)(fn) if options else self.ray.remote(fn)
        return self._remotes[key]

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def nodes(self) -> int:
        return max(1, sum(1 for n in self.ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0))

    def get(self, ref: Any) -> Any:
        """ray.get, with the task's own error: a mnemo error raised in a task arrives as that
        error (an InputError naming the file and offset); a bug arrives as Ray's RayTaskError
        (its traceback is the worker's); a node lost past Ray's retries is a ClusterError."""
        try:
            return self.ray.get(ref)
        except self.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, MnemoError):
                raise cause from None
            raise
        except self.exceptions.RayError as exc:
            raise ClusterError(
                f"the Ray cluster lost work past its retries ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                f"check the nodes (ray status) and run again"
            ) from None

    def wait(self, refs: list[Any]) -> tuple[list[Any], list[Any]]:
        done, rest = self.ray.wait(refs, num_returns=1)
        return list(done), list(rest)

    def cancel(self, refs: Sequence[Any]) -> None:
        for ref in refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # already finished or gone: nothing to cancel
                pass

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


def _absolute_inputs(inputs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The inputs as absolute paths (the nodes' working folders are not the driver's); standard
    input and pipes, which only this process can read, are refused."""
    paths = check_inputs(inputs)
    for p in paths:
        if is_stream(p):
            raise ConfigError(
                f"{display_name(p)}: a stream (standard input or a pipe) cannot be read by the nodes of a Ray "
                f"cluster; write it to a file on a filesystem every node sees"
            )
    return [p.absolute() for p in paths]


# ---- counting ------------------------------------------------------------------------------------

CountResult = tuple[bytes, bytes]
CountStatsTuple = tuple[int, int, int]


def _count_task(
    tasks: list[Task], pattern: int, max_chunk_bytes: int, specials: list[str], text_field: str
) -> tuple[CountResult, CountStatsTuple]:
    """On a node: count the chunks of `tasks`; (packed table, (bytes, chunks, skipped))."""
    from mnemo.count import WordCounter

    counter = WordCounter(pattern, max_chunk_bytes)
    for task in tasks:
        for doc in iter_task_documents(task, text_field=text_field, specials=specials):
            counter.add(doc)
    return counter.to_packed(), (counter.n_bytes, counter.n_chunks, counter.skipped)


def _combine_task(pattern: int, max_chunk_bytes: int, *tables: CountResult) -> tuple[CountResult, tuple[int, float]]:
    """On a node: add up packed tables; (the sum, packed; (its words, seconds spent adding))."""
    from mnemo.count import WordCounter

    t0 = time.perf_counter()
    total = WordCounter(pattern, max_chunk_bytes)
    for blob, meta in tables:
        total.add_packed(blob, meta)
    packed = total.to_packed()
    return packed, (len(packed[1]) // 16, time.perf_counter() - t0)


@dataclass
class RayCountStats:
    """What a counting run on Ray did (bench/bench_ray.py prints it)."""

    n_bytes: int = 0
    n_chunks: int = 0
    n_skipped: int = 0
    n_tasks: int = 0
    n_combines: int = 0
    #: levels of the combine tree
    depth: int = 0
    #: from the first task submitted to the last count table ready
    map_seconds: float = 0.0
    #: from the last count table ready to the total on the driver: the part of the tree that
    #: does not overlap counting
    tail_seconds: float = 0.0
    #: adding up, summed over every combine task
    combine_seconds: float = 0.0


def count_packed_on_ray(
    inputs: Sequence[str | os.PathLike[str]],
    options: RayOptions,
    *,
    pattern: int,
    max_chunk_bytes: int,
    specials: Sequence[str],
    text_field: str,
    progress: Progress | None = None,
    stats: RayCountStats | None = None,
) -> CountResult:
    """The packed count table of every chunk of the inputs, counted and added up on the cluster."""
    paths = _absolute_inputs(inputs)
    stats = stats if stats is not None else RayCountStats()
    session = _Session(options)
    try:
        nodes, cpus = session.nodes(), session.cpus()
        if options.tasks_per_node is not None:
            # exactly sized: about tasks_per_node x nodes tasks of equal size
            n_tasks = options.tasks_per_node * nodes
            total = sum(p.stat().st_size for p in paths)
            size = max(1, -(-total // n_tasks))
            planned = plan_tasks(paths, n_workers=n_tasks, specials=specials, min_task_bytes=size, max_task_bytes=size)
        else:
            planned = plan_tasks(paths, n_workers=cpus, specials=specials)
        work = deque([[t] for t in planned])
        stats.n_tasks = len(work)
        count = session.remote(_count_task, num_returns=2)
        combine = session.remote(_combine_task, num_returns=2)
        specials_list = list(specials)
        max_in_flight = IN_FLIGHT_PER_CPU * cpus
        # in flight: the small second return of each task, waited on; its table stays on the cluster
        in_flight: dict[Any, tuple[Any, int]] = {}  # stats ref -> (table ref, tree level)
        ready: list[tuple[Any, int]] = []  # finished tables not yet added up: (ref, level)
        t0 = time.perf_counter()
        maps_left = len(work)
        try:
            while work or in_flight or len(ready) > 1:
                while work and len(in_flight) < max_in_flight:
                    table, small = count.remote(work.popleft(), pattern, max_chunk_bytes, specials_list, text_field)
                    in_flight[small] = (table, 0)
                # Add up as soon as fan_in tables are ready; at the end, whatever is left.
                while len(ready) >= options.fan_in or (ready and len(ready) > 1 and not work and not in_flight):
                    group, ready = ready[: options.fan_in], ready[options.fan_in :]
                    level = max(lv for _, lv in group) + 1
                    table, small = combine.remote(pattern, max_chunk_bytes, *[ref for ref, _ in group])
                    in_flight[small] = (table, level)
                    stats.n_combines += 1
                    stats.depth = max(stats.depth, level)
                if not in_flight:
                    break
                done, _ = session.wait(list(in_flight))
                for small in done:
                    table, level = in_flight.pop(small)
                    result = session.get(small)
                    if level > 0:
                        stats.combine_seconds += result[1]
                    else:
                        maps_left -= 1
                        if maps_left == 0:
                            stats.map_seconds = time.perf_counter() - t0
                        n_bytes, n_chunks, skipped = result
                        stats.n_bytes += n_bytes
                        stats.n_chunks += n_chunks
                        stats.n_skipped += skipped
                        if progress is not None:
                            progress("count", stats.n_bytes, 0)
                    ready.append((table, level))
        except BaseException:
            session.cancel([ref for pair in in_flight.items() for ref in (pair[0], pair[1][0])])
            raise
        if not ready:
            return b"", b""
        final: CountResult = session.get(ready[0][0])
        stats.tail_seconds = time.perf_counter() - t0 - stats.map_seconds
        return final
    finally:
        session.close()


# ---- tokenizing ----------------------------------------------------------------------------------


@dataclass
class RayTokenizeStats:
    n_docs: int = 0
    n_tokens: int = 0
    n_bytes: int = 0
    n_shards: int = 0
    n_skipped: int = 0


def tokenize_on_ray(
    inputs: Sequence[str | os.PathLike[str]],
    tokenizer: Tokenizer,
    output: str | os.PathLike[str],
    options: RayOptions,
    *,
    chat: bool,
    text_field: str,
    bos: int | None,
    eos: int | None,
    progress: Progress | None = None,
) -> RayTokenizeStats:
    """Encode the inputs into the shard directory `output`, one shard per task on the cluster;
    shards a previous run of the same arguments completed are kept (see mnemo/shards.py)."""
    from mnemo import shards as sh

    paths = _absolute_inputs(inputs)
    folder = Path(output).absolute()
    if chat:
        for p in paths:
            if kind_of(p) != "jsonl":
                raise InputError(f"{p}: --chat reads JSON Lines records with a 'messages' list; this is {kind_of(p)}")
        tasks = [Task(str(p), "jsonl", sequential=True) for p in paths]  # a chat file is read whole
    else:
        tasks = plan_tasks(
            paths, n_workers=1, min_task_bytes=options.shard_bytes, max_task_bytes=options.shard_bytes, whole_documents=True
        )
    groups = sh.plan_shards(tasks, options.shard_bytes)
    run = {
        "inputs": [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in paths],
        "text_field": text_field,
        "chat": chat,
        "bos": bos,
        "eos": eos,
        "shard_bytes": options.shard_bytes,
    }
    shards = [sh.Shard(sh.shard_name(i), group) for i, group in enumerate(groups)]
    manifest = sh.Manifest(tokenizer.fingerprint, tokenizer.n_vocab, chat, run, tuple(shards), False)
    kept = _resume(folder, manifest)
    stats = RayTokenizeStats(n_shards=len(shards), n_skipped=len(kept))
    for h in kept.values():
        stats.n_docs += h[0]
        stats.n_tokens += h[1]
    shards = [sh.Shard(s.name, s.tasks, *kept[s.name]) if s.name in kept else s for s in shards]
    todo = deque(i for i, s in enumerate(shards) if s.name not in kept)
    session = _Session(options)  # connected (or refused) before anything is written
    try:
        folder.mkdir(parents=True, exist_ok=True)
        sh.remove_temporaries(folder)
        sh.write_manifest(folder, sh.Manifest(tokenizer.fingerprint, tokenizer.n_vocab, chat, run, tuple(shards), False))
        image = session.ray.put(tokenizer.to_bytes())
        write = session.remote(sh.write_shard)
        max_in_flight = IN_FLIGHT_PER_CPU * session.cpus()
        in_flight: dict[Any, int] = {}
        if progress is not None:
            progress("tokenize", 0, 0)
        try:
            while todo or in_flight:
                while todo and len(in_flight) < max_in_flight:
                    i = todo.popleft()
                    ref = write.remote(image, list(shards[i].tasks), str(folder / shards[i].name), text_field, chat, bos, eos)
                    in_flight[ref] = i
                done, _ = session.wait(list(in_flight))
                for ref in done:
                    i = in_flight.pop(ref)
                    n_docs, n_tokens, n_bytes = session.get(ref)
                    shards[i] = sh.Shard(shards[i].name, shards[i].tasks, n_docs, n_tokens)
                    stats.n_docs += n_docs
                    stats.n_tokens += n_tokens
                    stats.n_bytes += n_bytes
                    if progress is not None:
                        progress("tokenize", stats.n_bytes, 0)
        except BaseException:
            session.cancel(list(in_flight))
            raise
    finally:
        session.close()
    sh.remove_temporaries(folder)
    sh.write_manifest(folder, sh.Manifest(tokenizer.fingerprint, tokenizer.n_vocab, chat, run, tuple(shards), True))
    return stats


def _resume(folder: Path, manifest: Any) -> dict[str, tuple[int, int]]:
    """The shards of `manifest` already complete in `folder`: {name: (documents, tokens)}.  A
    folder holding another run (other inputs, options or tokenizer) is refused, never mixed."""
    from mnemo import shards as sh

    if not folder.exists():
        return {}
    if not folder.is_dir():
        raise ConfigError(f"{folder}: is a file; with --ray the output is a folder of shards (created if missing)")
    if not sh.is_shard_dir(folder):
        if any(folder.iterdir()):
            raise ConfigError(
                f"{folder}: is a folder holding files and no {sh.MANIFEST_NAME}; with --ray the output is a "
                f"folder of shards: give an empty or new folder"
            )
        return {}
    old = sh.read_manifest(folder)
    same = (
        old.fingerprint == manifest.fingerprint
        and old.chat == manifest.chat
        and old.run == manifest.run
        and [s.tasks for s in old.shards] == [s.tasks for s in manifest.shards]
    )
    if not same:
        raise ConfigError(
            f"{folder}: holds the shards of another run (other inputs, options or tokenizer); remove it "
            f"or choose another output folder"
        )
    kept: dict[str, tuple[int, int]] = {}
    for s in manifest.shards:
        header = sh.finished_shard(folder, s, manifest.fingerprint)
        if header is not None:
            kept[s.name] = (header.n_docs, header.n_tokens)
    return kept
