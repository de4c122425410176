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

import contextlib
import dataclasses
import importlib
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from mnemo.defaults import DEFAULT_SHARD_BYTES
from mnemo.errors import ArgumentTypeError, ClusterError, ConfigError, InputError, MnemoError, VerificationError, WorkerError
from mnemo.location import PathArg, location
from mnemo.sources import Task, check_inputs, kind_of, plan_tasks
from mnemo.work import (
    KEPT_STATES,
    Combiner,
    Executor,
    P,
    Progress,
    R,
    RemoteTraceback,
    Setup,
    SharedWriter,
    describe,
    map_ordered,
    setup_of,
)

if TYPE_CHECKING:
    from mnemo.tokenizer import Tokenizer

#: What to install for Ray, named in the error when it is missing.
RAY_EXTRA: Final = "pip install 'mnemo[ray]'"
#: Tables added up by one combine task: depth log_4(tasks) (64 tasks: 3 levels), and each combine
#: holds at most 4 tables and their sum.
DEFAULT_FAN_IN: Final = 4
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


def _refused_authentication(address: str) -> str | None:
    """Ray's own words when the cluster at `address` (a reachable GCS) refuses this process's
    authentication, else None.  `ray.init` reports every failure as "Failed to connect"; a GCS
    client answers an authentication failure at once, naming it.  Asked only after ray.init
    failed, and only of an address that accepts TCP connections (a GCS client waits ~40 s for
    one that does not)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
            pass
    except (OSError, ValueError):
        return None
    try:
        raylet = importlib.import_module("ray._raylet")
        exceptions = importlib.import_module("ray.exceptions")
    except ImportError:
        return None
    try:
        raylet.GcsClient(address=address)
    except exceptions.AuthenticationError as exc:
        return str(exc).split(". ", 1)[0]
    except Exception:  # any other answer: not an authentication failure
        return None
    return None


def _connection_error(address: str | None, exc: BaseException) -> ClusterError:
    """The ClusterError for a failed ray.init: authentication named when that is the cause
    (Ray 2.60 turns token authentication on for clusters started where ~/.ray/auth_token
    exists), the address otherwise."""
    if address is None:
        return ClusterError(f"cannot start a local Ray cluster: {exc}")
    refused = _refused_authentication(address)
    if refused is not None:
        return ClusterError(
            f"the Ray cluster at {address} refused this process's authentication ({refused}); the cluster "
            f"uses token authentication: run with RAY_AUTH_MODE=token and the cluster's token in "
            f"RAY_AUTH_TOKEN or ~/.ray/auth_token (docs/ray.md, \"Authentication\")"
        )
    return ClusterError(f"cannot connect to the Ray cluster at {address}: {exc}; check the address (ray status)")


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
                address = options.address or os.environ.get("RAY_ADDRESS")
                raise _connection_error(address, exc) from None
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

    def get(self, ref: Any, task: Any) -> Any:
        """ray.get by the engine's error rule (mnemo/work.py): a mnemo error raised in a task
        arrives as that error (an InputError naming the file and offset); any other exception
        as itself with the worker's traceback as __cause__; work lost past Ray's retries (a node
        that died) is a WorkerError naming the task."""
        try:
            return self.ray.get(ref)
        except self.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if not isinstance(cause, BaseException):
                raise
            if isinstance(cause, MnemoError) and not isinstance(cause, VerificationError):
                cause.__suppress_context__ = True
                raise cause from None
            raise cause from RemoteTraceback(str(exc))
        except self.exceptions.RayError as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise WorkerError(
                f"the Ray cluster lost {describe(task)} past its retries ({type(exc).__name__}: {first}); "
                f"check the nodes (ray status) and run again"
            ) from None

    def cancel(self, refs: Sequence[Any]) -> None:
        for ref in refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # already finished or gone: nothing to cancel
                pass

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


def shared_paths(paths: Sequence[PathArg]) -> list[Path]:
    """`paths` as absolute local paths, which every node of a cluster reads by the same name
    (the nodes' working folders are not the driver's).  URLs are refused for now (docs/ray.md:
    shards and the manifest are local files, sized and dated by stat) -- called by the command
    line before any work, and by the runs themselves."""
    shared: list[Path] = []
    for p in map(location, paths):
        if p.remote:
            raise ConfigError(
                f"{p}: runs on Ray read and write folders every node of the cluster mounts, not URLs yet; "
                f"use shared folders with --ray, or URLs without it"
            )
        shared.append(Path(p).absolute())
    return shared


def absolute_inputs(inputs: Sequence[PathArg]) -> list[Path]:
    """The inputs as absolute paths (shared_paths); standard input and pipes, which only this
    process can read, are refused."""
    paths = check_inputs(inputs)
    shared = shared_paths(paths)
    for p in paths:
        if p.info().stream:
            raise ConfigError(
                f"{p}: a stream (standard input or a pipe) cannot be read by the nodes of a Ray "
                f"cluster; write it to a file on a filesystem every node sees"
            )
    return shared


# ---- the executor -----------------------------------------------------------------------------

#: Worker states (tokenizers) a Ray worker process keeps, by Setup key, most recent last.
_STATES: dict[str, Any] = {}


def _run_call(fn: Callable[[Any, Any], Any], key: str | None, build: Callable[[bytes], Any] | None, image: bytes | None, payload: Any) -> Any:
    """On a node: fn(state, payload), the state built once per worker process and key (Ray keeps
    its worker processes between tasks, so a tokenizer is built once per worker, not per task)."""
    state = None
    if key is not None and build is not None and image is not None:
        state = _STATES.pop(key, None)
        if state is None:
            state = build(image)
        _STATES[key] = state
        while len(_STATES) > KEPT_STATES:
            del _STATES[next(iter(_STATES))]
    return fn(state, payload)


def _light(part: Any) -> Any:
    """What the driver sees of a part the tree keeps on the cluster: a dataclass with its bytes
    fields emptied (a count table's counts and sizes, without its words)."""
    if dataclasses.is_dataclass(part) and not isinstance(part, type):
        empty = {f.name: b"" for f in dataclasses.fields(part) if isinstance(getattr(part, f.name), bytes)}
        return dataclasses.replace(part, **empty)
    return None


def _map_split(fn: Callable[[Any, Any], Any], key: str | None, build: Any, image: Any, payload: Any) -> tuple[Any, Any]:
    part = _run_call(fn, key, build, image, payload)
    return part, _light(part)


def _combine_parts(combiner: Callable[[], Combiner[Any]], *parts: Any) -> tuple[Any, tuple[Any, float]]:
    """On a node: parts added up by a new combiner; (the sum, (what the driver sees of it, seconds))."""
    t0 = time.perf_counter()
    total = combiner()
    for part in parts:
        total.add(part)
    result = total.result()
    return result, (_light(result), time.perf_counter() - t0)


@dataclass
class TreeStats:
    """What the last map_combine of a RayExecutor did (bench/compare/ray_vs_processes.py prints
    it)."""

    n_tasks: int = 0
    n_combines: int = 0
    #: levels of the combine tree
    depth: int = 0
    #: from the first task submitted to the last map result ready
    map_seconds: float = 0.0
    #: from the last map result ready to the sum on the driver: the part of the tree that does
    #: not overlap the map tasks
    tail_seconds: float = 0.0
    #: adding up, summed over every combine task
    combine_seconds: float = 0.0


class RayExecutor(Executor):
    """The engine's executor on a Ray cluster (mnemo/work.py, Executor): calls run as Ray tasks,
    `width` = IN_FLIGHT_PER_CPU x the cluster's CPUs in flight; a Setup's image goes to the object
    store once and each worker process builds its state once.

    map_combine is overridden: parts stay in the object store and are added up by combine tasks,
    `fan_in` at a time, as they become ready -- a tree on the cluster -- so only the sum reaches
    the driver; `on_part` sees each part without its bytes fields (_light).  map_ordered is the
    engine's own (results come to the driver in order): tokenize's results are small counts, its
    tokens go to shards on the nodes."""

    def __init__(self, session: _Session, options: RayOptions) -> None:
        self.session = session
        self.options = options
        self._width = IN_FLIGHT_PER_CPU * session.cpus()
        self._in_flight: dict[Any, tuple[int, Any]] = {}
        self._images: dict[str, Any] = {}
        self.tree = TreeStats()

    @property
    def width(self) -> int:
        return self._width

    def _setup_args(self, setup: Setup | None) -> tuple[Any, Any, Any]:
        if setup is None:
            return None, None, None
        if setup.key not in self._images:
            self._images[setup.key] = self.session.ray.put(setup.image)
        return setup.key, setup.build, self._images[setup.key]

    def submit(self, index: int, fn: Callable[[Any, Any], Any], payload: Any, setup: Setup | None) -> None:
        ref = self.session.remote(_run_call).remote(fn, *self._setup_args(setup), payload)
        self._in_flight[ref] = (index, payload)

    def wait(self) -> tuple[int, Any]:
        done, _ = self.session.ray.wait(list(self._in_flight), num_returns=1)
        index, payload = self._in_flight.pop(done[0])
        return index, self.session.get(done[0], payload)

    def abort(self) -> None:
        self.session.cancel(list(self._in_flight))
        self._in_flight.clear()

    def share(self) -> contextlib.AbstractContextManager[SharedWriter]:
        """Not offered: the calls may run on other machines (ship the bytes in the tasks, or
        through the object store)."""
        raise NotImplementedError("RayExecutor does not share bytes between calls")

    def map_combine(
        self,
        tasks: Iterable[P],
        fn: Callable[[Any, P], R],
        combiner: Callable[[], Combiner[R]],
        setup: Setup | None,
        on_part: Callable[[R], None] | None,
    ) -> R:
        tree = self.tree = TreeStats()
        session = self.session
        fan_in = self.options.fan_in
        split = session.remote(_map_split, num_returns=2)
        combine = session.remote(_combine_parts, num_returns=2)
        source = iter(tasks)
        exhausted = False
        # in flight: the small second return of each call, waited on; the part stays on the cluster
        in_flight: dict[Any, tuple[Any, int, Any]] = {}  # small ref -> (part ref, tree level, task)
        ready: dict[int, list[Any]] = {}  # parts not yet added up, by tree level
        maps_in_flight = 0
        combines_in_flight = 0
        t0 = time.perf_counter()
        try:
            while True:
                while not exhausted and len(in_flight) < self._width:
                    try:
                        task = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    part, small = split.remote(fn, *self._setup_args(setup), task)
                    in_flight[small] = (part, 0, task)
                    maps_in_flight += 1
                    tree.n_tasks += 1
                # Add up fan_in parts of one level as soon as they are ready (a balanced tree: a
                # sum is never added again and again into a growing total); once every map and
                # combine is done, whatever is left, lowest levels first.
                settled = exhausted and maps_in_flight == 0 and combines_in_flight == 0
                while True:
                    full = [lv for lv, refs in ready.items() if len(refs) >= fan_in]
                    if full:
                        level = min(full)
                        group, ready[level] = ready[level][:fan_in], ready[level][fan_in:]
                    elif settled and sum(len(refs) for refs in ready.values()) > 1:
                        left = [ref for lv in sorted(ready) for ref in ready[lv]]
                        level = max(lv for lv, refs in ready.items() if refs)
                        group, rest = left[:fan_in], left[fan_in:]
                        ready = {level: rest} if rest else {}
                    else:
                        break
                    part, small = combine.remote(combiner, *group)
                    in_flight[small] = (part, level + 1, f"adding up {len(group)} parts")
                    combines_in_flight += 1
                    tree.n_combines += 1
                    tree.depth = max(tree.depth, level + 1)
                if not in_flight:
                    break
                done, _ = session.ray.wait(list(in_flight), num_returns=1)
                part, level, task = in_flight.pop(done[0])
                seen = session.get(done[0], task)
                if level == 0:
                    maps_in_flight -= 1
                    if exhausted and maps_in_flight == 0:
                        tree.map_seconds = time.perf_counter() - t0
                    if on_part is not None:
                        on_part(seen)
                else:
                    combines_in_flight -= 1
                    tree.combine_seconds += seen[1]
                ready.setdefault(level, []).append(part)
        except BaseException:
            session.cancel([ref for small, (part, _, _) in in_flight.items() for ref in (small, part)])
            raise
        last = [ref for refs in ready.values() for ref in refs]
        if not last:
            return combiner().result()
        total: R = session.get(last[0], "the sum of the parts")
        tree.tail_seconds = time.perf_counter() - t0 - tree.map_seconds
        return total


@contextmanager
def ray_executor(options: RayOptions) -> Iterator[RayExecutor]:
    """A RayExecutor on the cluster `options` names, connected for the block (and disconnected
    after it when this call connected)."""
    session = _Session(options)
    try:
        yield RayExecutor(session, options)
    finally:
        session.close()


# ---- planning ------------------------------------------------------------------------------------


def plan_count_tasks(
    inputs: Sequence[str | os.PathLike[str]],
    options: RayOptions,
    executor: RayExecutor,
    specials: Sequence[str],
    whole_documents: bool = False,
) -> list[Task]:
    """Counting tasks for the cluster: about `tasks_per_node` per alive node, or as a local run
    plans them for as many workers as the cluster has CPUs.  Compressed files are whole-file
    tasks, read by the node that gets them."""
    paths = absolute_inputs(inputs)
    if options.tasks_per_node is None:
        return plan_tasks(paths, n_workers=executor.session.cpus(), specials=specials, whole_documents=whole_documents)
    n_tasks = options.tasks_per_node * executor.session.nodes()
    size = max(1, -(-sum(p.stat().st_size for p in paths) // n_tasks))
    return plan_tasks(
        paths, n_workers=n_tasks, specials=specials, min_task_bytes=size, max_task_bytes=size, whole_documents=whole_documents
    )
