"""The one work engine: every piece of parallel work in mnemo (counting words, `mnemo tokenize`,
`Tokenizer.encode_batch`) runs through here, and no other module starts worker processes.

A run is planned tasks (plain data: a `sources.Task` byte range or row group, a block of
documents), a map function applied to each, an executor that decides where the calls run, and
what happens to the results:
- `map_combine`: the results are added up by a Combiner, in any order (counting: packed count
  tables are added into one);
- `map_ordered`: the results go to a sink in input order (tokenizing: ids written in order).

The engine owns what every run needs and no caller writes again: workers started once and kept
(`shared_executor`), at most `width` calls in flight and a bounded window of finished results
held for ordering, the error rule, and cleanup: on Ctrl-C, SIGTERM or an error every call in
flight is stopped before the exception leaves the engine.

The error rule for workers: an error the user can fix, a MnemoError (an InputError naming the
file and offset, a SpecialTokenError), arrives in the caller as that same exception, type and
message; anything else -- a bug in mnemo, a VerificationError -- arrives as itself, with the
worker's traceback attached as its __cause__ (RemoteTraceback), never converted into an error
that blames the input.  A worker process that dies (SIGKILL, the OOM killer) is a WorkerError
naming the process, the signal and the task it was working on, never a hang.

What may be shipped: map functions and combiners are module-level functions or classes
(functools.partial of one with plain-data arguments is fine), tasks and results plain data
(bytes, numpy arrays, dataclasses of them).  No closures, lambdas or open files: a process
executor pickles them, and so does a cluster executor (Ray).

See docs/engine.md for the executors, cleanup and how to add an executor.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import hashlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Final, Generic, Protocol, TypeVar

from mnemo.errors import MnemoError, WorkerError
from mnemo.workers import init_worker_signals, worker_context

Progress = Callable[[str, int, int], None]
"""progress(phase, done, total): phase "count" (bytes), "merge" (merges) or "tokenize" (bytes);
total is 0 when unknown."""

P = TypeVar("P")  # a task (payload)
R = TypeVar("R")  # a map result
S = TypeVar("S")  # a worker's state, built once from a Setup

#: Finished results held for ordering, per call that may be in flight (map_ordered): enough
#: that one slow task does not idle the other workers, bounded so memory stays bounded.
ORDER_WINDOW: Final = 2
#: How a worker started as a fresh interpreter gets the caller's sys.path.
_SYS_PATH_VAR: Final = "MNEMO_WORKER_SYS_PATH"
_SPAWNED_MAIN: Final = (
    f"import json, os, sys; sys.path[:] = json.loads(os.environ.pop({_SYS_PATH_VAR!r})); "
    "from mnemo.work import spawned_main; spawned_main()"
)
#: Worker states (tokenizers) a worker keeps, most recent first.
KEPT_STATES: Final = 4
# A worker idle this long gives its freed heap back to the system (_release_free_memory).  Not
# after every task: the next task would fault the same pages in again; between the tasks of a
# run the next one comes within milliseconds.
IDLE_TRIM_SECONDS: Final = 0.25


# ---- what a run is made of ----------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """What every worker needs before its first task and keeps for the next ones (a tokenizer):
    `build(image)` makes it from plain bytes, once per worker and key.  `state`, when given, is
    the caller's own copy (never shipped): the in-process executor uses it as it is, and workers
    forked after it was registered inherit it instead of building it again (~0.15 s a tokenizer)."""

    key: str
    build: Callable[[bytes], Any]
    image: bytes
    state: Any = field(default=None, compare=False, repr=False)


def setup_of(build: Callable[[bytes], Any], image: bytes, state: Any = None) -> Setup:
    """A Setup keyed by its builder and the digest of its image (equal images: one state)."""
    digest = hashlib.blake2b(image, digest_size=16).hexdigest()
    return Setup(f"{getattr(build, '__module__', '')}.{getattr(build, '__qualname__', '')}:{digest}", build, image, state)


@dataclass(frozen=True)
class Shared:
    """Bytes that every call of a run can read (`read_shared`) without their going into each
    task's message: written by the caller through `Executor.share`'s SharedWriter, for the
    length of a run.  Plain data (a key), so tasks may name it.  encode_batch appends each
    block's UTF-8 there just before it submits the block, and sends the worker only offsets: a
    task message is then small enough that a worker can hold a second one queued (a large
    message would block its sender until the worker read it)."""

    key: str


class SharedWriter(ABC):
    """The caller's end of shared bytes: `append` adds bytes at the end and returns where they
    start.  Bytes appended before a call is submitted can be read by that call."""

    def __init__(self, ref: Shared) -> None:
        self.ref = ref
        self.size = 0

    @abstractmethod
    def append(self, data: bytes) -> int: ...


def read_shared(ref: Shared, start: int, end: int) -> bytes:
    """Bytes start..end of `ref`, in the process that runs the call (in a worker, read from the
    shared-memory file; in process, from the caller's buffer)."""
    found = _SHARES.get(ref.key)
    if found is None:
        raise RuntimeError(f"shared bytes {ref.key} are not here: a task outlived its run's Executor.share")
    if isinstance(found, BaseException):
        raise found
    if isinstance(found, bytearray):
        return bytes(found[start:end])
    parts: list[bytes] = []
    while start < end:
        part = os.pread(found, end - start, start)
        if not part:
            raise RuntimeError(f"shared bytes {ref.key} end before byte {start} (asked for {start} to {end})")
        parts.append(part)
        start += len(part)
    return b"".join(parts)


#: What `read_shared` finds, by key: the caller's buffer (in process), a worker's descriptor of
#: the shared-memory file, or why the worker could not take it.
_SHARES: dict[str, bytearray | int | BaseException] = {}
_SHARE_KEYS = itertools.count()


def _share_key() -> str:
    return f"{os.getpid()}-{next(_SHARE_KEYS)}"


class _HereWriter(SharedWriter):
    def append(self, data: bytes) -> int:
        buffer = _SHARES[self.ref.key]
        assert isinstance(buffer, bytearray)
        at = len(buffer)
        buffer += data
        self.size = len(buffer)
        return at


@contextmanager
def _share_here() -> Iterator[SharedWriter]:
    """Executor.share for calls that run in this process: a buffer here."""
    ref = Shared(_share_key())
    _SHARES[ref.key] = bytearray()
    try:
        yield _HereWriter(ref)
    finally:
        del _SHARES[ref.key]


class _FileWriter(SharedWriter):
    def __init__(self, ref: Shared, fd: int) -> None:
        super().__init__(ref)
        self.fd = fd

    def append(self, data: bytes) -> int:
        at = self.size
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        self.size += len(data)
        return at


class Combiner(Protocol[R]):
    """Adds up map results: `add` each part (in any order), then `result`.  The result is a part
    again, so that an executor may combine in a tree (partial results combined by new Combiners)."""

    def add(self, part: R) -> None: ...

    def result(self) -> R: ...


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, as text: the __cause__ of that
    exception when it is re-raised in the caller (concurrent.futures does the same)."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def describe(payload: object) -> str:
    """A task as an error message names it: its own `describe()` when it has one, else its repr,
    shortened (a block of documents is named by its size, not printed)."""
    own = getattr(payload, "describe", None)
    if callable(own):
        return str(own())
    if isinstance(payload, (list, tuple)):
        return f"a block of {len(payload)} items" if len(payload) != 1 else describe(payload[0])
    text = repr(payload)
    return text if len(text) <= 200 else text[:197] + "..."


# ---- executors ----------------------------------------------------------------------------------


class Executor(ABC):
    """Where map calls run.  The engine (map_combine, map_ordered) drives an executor through
    four operations; an executor implements them and nothing else:

    - `width`: how many calls may be in flight at once; the engine never submits more.
    - `submit(index, fn, payload, setup)`: start `fn(state, payload)` somewhere, where `state` is
      `setup.build(setup.image)` (built once per worker and kept, or None without a setup).  It
      must not wait for the call to finish.
    - `wait()`: block until one submitted call has finished; return (its index, its result), or
      raise its exception by the error rule (see the module docstring): a MnemoError as itself;
      any other exception as itself with the worker's traceback as __cause__; a worker that died
      as a WorkerError naming the task.  Never block for ever on a worker that died.
    - `abort()`: stop every call in flight now (Ctrl-C, SIGTERM, an error elsewhere) and return
      only when nothing works on them any more; no result of them is delivered afterwards.  It
      must not wait on a worker (a worker stuck in a long call, or half-way through sending a
      result, must not stall it).  The executor stays usable afterwards.

    To add an executor (a cluster, a thread pool for a GIL-free map): subclass Executor,
    implement these four, and give it to map_combine / map_ordered.  The two strategies,
    `map_combine` and `map_ordered`, are methods here too: the defaults drive the four
    operations from this process (results come here and are combined or written here); an
    executor may override them, for example to combine count tables in a tree on a cluster
    instead of in the caller.  tests/test_work.py runs the engine's contract against every
    executor; add yours to its list.

    `share()` gives a SharedWriter: bytes appended there every call can read (`read_shared`).
    The default keeps them in this process, which serves executors that run calls here; an
    executor whose calls run in other processes overrides it, or raises NotImplementedError.
    """

    @property
    @abstractmethod
    def width(self) -> int: ...

    @abstractmethod
    def submit(self, index: int, fn: Callable[[Any, Any], Any], payload: Any, setup: Setup | None) -> None: ...

    @abstractmethod
    def wait(self) -> tuple[int, Any]: ...

    @abstractmethod
    def abort(self) -> None: ...

    def share(self) -> contextlib.AbstractContextManager[SharedWriter]:
        """Shared bytes for the calls submitted inside the block (see SharedWriter)."""
        return _share_here()

    def map_combine(
        self,
        tasks: Iterable[P],
        fn: Callable[[Any, P], R],
        combiner: Callable[[], Combiner[R]],
        setup: Setup | None,
        on_part: Callable[[R], None] | None,
    ) -> R:
        total = combiner()

        def deliver(part: R) -> None:
            if on_part is not None:
                on_part(part)
            total.add(part)

        drive(self, tasks, fn, setup, deliver, ordered=False)
        return total.result()

    def map_ordered(
        self, tasks: Iterable[P], fn: Callable[[Any, P], R], sink: Callable[[R], None], setup: Setup | None
    ) -> None:
        drive(self, tasks, fn, setup, sink, ordered=True)


class InProcess(Executor):
    """Runs each call in this process, when the engine waits for it: one call at a time, tasks
    read lazily as they are needed.  Exceptions are the map function's own."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, Callable[[Any, Any], Any], Any, Setup | None]] = []
        self._states: dict[str, Any] = {}

    @property
    def width(self) -> int:
        return 1

    def submit(self, index: int, fn: Callable[[Any, Any], Any], payload: Any, setup: Setup | None) -> None:
        self._pending.append((index, fn, payload, setup))

    def wait(self) -> tuple[int, Any]:
        index, fn, payload, setup = self._pending.pop(0)
        state = None
        if setup is not None:
            state = setup.state
            if state is None:
                state = self._states.get(setup.key)
                if state is None:
                    state = self._states[setup.key] = setup.build(setup.image)
        return index, fn(state, payload)

    def abort(self) -> None:
        self._pending.clear()


# ---- local worker processes ----------------------------------------------------------------------

#: States the caller registered (Setup.state), by key: a worker forked later inherits them.
_INHERITED: dict[str, Any] = {}


class _Job:
    """A call sent to a worker and not yet answered."""

    __slots__ = ("index", "payload", "fn", "setup")

    def __init__(self, index: int, payload: Any, fn: Callable[[Any, Any], Any], setup: Setup | None) -> None:
        self.index = index
        self.payload = payload
        self.fn = fn
        self.setup = setup


class _Worker:
    """One worker process as the caller sees it: its pid, its end of the socket pair, the setup
    keys and shared bytes it already holds, and the calls sent to it and not yet answered, in
    the order it answers them (it works on the first; the others wait in its socket)."""

    def __init__(self, pid: int, conn: Connection, popen: subprocess.Popen[bytes] | None, known: set[str]) -> None:
        self.pid = pid
        self.conn = conn
        self.popen = popen
        self.known = known
        self.shares: set[str] = set()
        self.jobs: collections.deque[_Job] = collections.deque()
        self.status: int | None = None

    def reap(self, block: bool) -> bool:
        """Collect the exit status; True when the process has ended."""
        if self.status is not None:
            return True
        try:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): it has ended
            self.status = 0
            return True
        if pid == 0:
            return False
        self.status = status
        if self.popen is not None:
            self.popen.returncode = os.waitstatus_to_exitcode(status)  # so Popen never waits again
        return True

    def kill(self) -> None:
        """SIGKILL, reap, close: a worker half-way through a call or a message is simply gone
        (nothing here reads from it again, so no partial message can block anything)."""
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.reap(block=True)
        self.conn.close()

    def how_it_ended(self) -> str:
        if self.status is None:
            return "closed its pipe"
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = str(sig)
            return f"was killed by signal {name}"
        return f"exited with status {os.waitstatus_to_exitcode(self.status)}"


class LocalProcesses(Executor):
    """Worker processes on this machine, started when first needed and kept for the next runs
    (one set per process: shared_executor).  Each worker has its own socket pair and answers
    its calls in the order they were sent (one at a time, or `depth` queued with Queued), so
    the caller always knows which task a reply is for; the caller reads results in its own
    thread (multiprocessing.connection.wait), with no helper thread that could block on a
    half-sent message.

    Start method: fork where worker_context allows it (no other thread runs: a forked child
    would inherit locks held for ever), else a fresh interpreter started with subprocess, which
    imports mnemo and nothing else -- unlike multiprocessing's spawn, it never runs the caller's
    main module again, so a script without an `if __name__ == "__main__":` guard is safe."""

    def __init__(self, workers: int) -> None:
        self._width = workers
        self._workers: list[_Worker] = []
        self._shares: dict[str, int] = {}  # key -> memfd, while a share block runs
        self.surroundings = _surroundings()
        _EXECUTORS.add(self)

    @property
    def width(self) -> int:
        return self._width

    # -- start and stop --

    def _start(self) -> _Worker:
        parent_end, child_end = socket.socketpair()
        parent_pid = os.getpid()
        try:
            if worker_context().get_start_method() == "fork":
                known = set(_INHERITED)
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child leaves by os._exit
                    code = 1
                    try:
                        parent_end.close()
                        init_worker_signals(parent_pid)
                        serve(Connection(child_end.detach()))
                        code = 0
                    finally:
                        os._exit(code)
                popen = None
            else:
                known = set()
                fd = child_end.fileno()
                # The child finds modules where this process does (as multiprocessing's spawn
                # does): its sys.path, not the current folder's checkout of mnemo.
                env = dict(os.environ)
                env[_SYS_PATH_VAR] = json.dumps(sys.path)
                popen = subprocess.Popen(
                    [sys.executable, "-c", _SPAWNED_MAIN, str(fd), str(parent_pid)],
                    pass_fds=(fd,),
                    stdin=subprocess.DEVNULL,
                    env=env,
                )
                pid = popen.pid
        finally:
            child_end.close()
        return _Worker(pid, Connection(parent_end.detach()), popen, known)

    def _worker_for_call(self) -> _Worker:
        """Where the next call goes: a kept worker that is alive and has no call (one that died
        while idle -- killed by someone -- is replaced silently); else a new one while there are
        fewer than `workers`; else the worker with the fewest calls queued (Queued's depth)."""
        for w in list(self._workers):
            if w.jobs:
                continue
            if w.reap(block=False):
                w.conn.close()
                self._workers.remove(w)
                continue
            return w
        if len(self._workers) >= self._width:
            return min(self._workers, key=lambda w: len(w.jobs))
        # Ctrl-C or SIGTERM between the start and the append would leave a worker nobody stops
        # (until this process ends): the two signals wait until the worker is on the list.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            w = self._start()
            self._workers.append(w)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return w

    def shutdown(self) -> None:
        """Stop every worker (at exit, or when the width changes)."""
        for w in self._workers:
            w.kill()
        self._workers.clear()

    def forget(self) -> None:
        """In a forked child: the workers are the parent's.  Close this copy of their sockets
        (a worker that dies must give its parent end-of-file, which a copy held open here would
        prevent) and start afresh, never touching the parent's processes."""
        for w in self._workers:
            w.conn.close()
            if w.popen is not None:
                w.popen.returncode = 0  # not ours to wait for
        self._workers = []
        for fd in self._shares.values():  # a worker forked inside a share block would keep the file
            os.close(fd)
        self._shares = {}

    # -- the four operations --

    def submit(self, index: int, fn: Callable[[Any, Any], Any], payload: Any, setup: Setup | None) -> None:
        if setup is not None and setup.state is not None:
            _remember(setup)
        job = _Job(index, payload, fn, setup)
        w = self._worker_for_call()
        w.jobs.append(job)  # before sending: an interrupted send leaves it busy, so abort kills it
        try:
            self._send(w, job)
        except (BrokenPipeError, ConnectionResetError):
            if len(w.jobs) > 1:  # calls were lost with it: wait() reports the first
                return
            # it died between the check and the send (idle, so nothing was lost): once more, anew
            w.jobs.clear()
            w.kill()
            self._workers.remove(w)
            w = self._worker_for_call()
            w.jobs.append(job)
            self._send(w, job)

    def _send(self, w: _Worker, job: _Job) -> None:
        """The call's message, after the shared bytes the worker does not hold yet."""
        for key, fd in self._shares.items():
            if key not in w.shares:
                w.shares.add(key)
                w.conn.send(("share", key))
                _send_fd(w.conn, fd)
        w.conn.send(_message(w, job.fn, job.payload, job.setup))

    def wait(self) -> tuple[int, Any]:
        busy = [w for w in self._workers if w.jobs]
        if not busy:
            raise RuntimeError("wait() with no call in flight")
        ready = wait([w.conn for w in busy])
        w = next(w for w in busy if w.conn in ready)
        job = w.jobs[0]
        try:
            reply = w.conn.recv()
        except (EOFError, OSError):
            w.reap(block=True)
            w.jobs.clear()
            w.conn.close()
            self._workers.remove(w)
            raise WorkerError(
                f"a worker process (pid {w.pid}) {w.how_it_ended()} while working on {describe(job.payload)}; "
                f"if the system ran out of memory, use fewer workers"
            ) from None
        w.jobs.popleft()
        if reply[0] == "need":  # it no longer keeps that setup's state: the image, and again
            assert job.setup is not None
            w.known.discard(job.setup.key)
            w.jobs.append(job)  # answered after the calls queued before it
            self._send(w, job)
            return self.wait()
        if reply[0] == "ok":
            return job.index, reply[1]
        raise _rebuild(reply)

    def abort(self) -> None:
        for w in [w for w in self._workers if w.jobs]:
            w.kill()
            self._workers.remove(w)

    @contextmanager
    def share(self) -> Iterator[SharedWriter]:
        """Shared bytes in an anonymous shared-memory file (memfd): its descriptor goes to each
        worker over its socket before the worker's first call of the block, and the worker reads
        from it (pread) as the caller appends.  Nothing is left behind by any way out: the file
        has no name, and it is gone once this process and the workers have closed it (at the
        block's end, or as they die)."""
        fd = os.memfd_create("mnemo-shared", os.MFD_CLOEXEC)
        key = _share_key()
        try:
            self._shares[key] = fd
            yield _FileWriter(Shared(key), fd)
        finally:
            self._shares.pop(key, None)
            os.close(fd)
            for w in list(self._workers):
                if key in w.shares:
                    w.shares.discard(key)
                    try:
                        w.conn.send(("unshare", key))
                    except OSError:  # it died: wait() or the next call finds out
                        pass


class Queued(Executor):
    """Local workers that each hold `depth` calls: the next call waits in the worker's socket,
    so the worker starts it as soon as it has sent a result, instead of waiting for the caller
    to read that result and send more.  For tasks with small messages only (a large one blocks
    its sender until the worker reads it -- while the worker may be blocked sending its result):
    encode_batch's offsets into shared bytes."""

    def __init__(self, workers: LocalProcesses, depth: int) -> None:
        self._workers = workers
        self._depth = depth

    @property
    def width(self) -> int:
        return self._workers.width * self._depth

    def submit(self, index: int, fn: Callable[[Any, Any], Any], payload: Any, setup: Setup | None) -> None:
        self._workers.submit(index, fn, payload, setup)

    def wait(self) -> tuple[int, Any]:
        return self._workers.wait()

    def abort(self) -> None:
        self._workers.abort()

    def share(self) -> contextlib.AbstractContextManager[SharedWriter]:
        return self._workers.share()


def _send_fd(conn: Connection, fd: int) -> None:
    """One byte carrying a copy of `fd` (SCM_RIGHTS), right after a ("share", ...) message."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=os.dup(conn.fileno())) as sock:
        socket.send_fds(sock, [b"s"], [fd])


def _receive_share(conn: Connection, key: str) -> None:
    """The worker's side of a ("share", key) message: the descriptor that follows it, kept for
    `read_shared` until ("unshare", key)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=os.dup(conn.fileno())) as sock:
        _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    _SHARES[key] = fds[0] if fds else RuntimeError(f"shared bytes {key}: no descriptor came with the message")


def _message(w: _Worker, fn: Callable[[Any, Any], Any], payload: Any, setup: Setup | None) -> tuple[Any, ...]:
    """(fn, payload, key, build, image): the setup's image only to a worker that lacks its state."""
    if setup is None:
        return fn, payload, None, None, None
    if setup.key in w.known:
        return fn, payload, setup.key, None, None
    w.known.add(setup.key)
    return fn, payload, setup.key, setup.build, setup.image


def _remember(setup: Setup) -> None:
    _INHERITED.pop(setup.key, None)
    _INHERITED[setup.key] = setup.state
    while len(_INHERITED) > KEPT_STATES:
        del _INHERITED[next(iter(_INHERITED))]


# ---- the worker side ------------------------------------------------------------------------------


def serve(conn: Connection) -> None:
    """A worker's loop: take (fn, payload, setup) messages until end-of-file, reply to each with
    ("ok", result) or the exception packed by the error rule."""
    states: dict[str, Any] = {}
    while True:
        try:
            if not conn.poll(IDLE_TRIM_SECONDS):
                _release_free_memory()
            message = conn.recv()
        except EOFError:
            return
        except BaseException as exc:  # a message that cannot be unpickled here: a bug, reported
            conn.send(_pack(exc))
            continue
        if isinstance(message[0], str):  # ("share" | "unshare", key): no reply
            kind, key = message
            if kind == "share":
                _receive_share(conn, key)
            else:
                old = _SHARES.pop(key, None)
                if isinstance(old, int):
                    os.close(old)
            continue
        fn, payload, key, build, image = message
        try:
            state = None
            if key is not None:
                state = states.pop(key, None)
                if state is None:
                    state = _INHERITED.get(key)
                if state is None and build is None:
                    # evicted here, so the caller's note that this worker has it is stale
                    conn.send(("need",))
                    continue
                if state is None:
                    state = build(image)
                states[key] = state  # the most recent last
                while len(states) > KEPT_STATES:
                    del states[next(iter(states))]
            reply: tuple[Any, ...] = ("ok", fn(state, payload))
        except BaseException as exc:
            reply = _pack(exc)
        try:
            conn.send(reply)
        except (BrokenPipeError, ConnectionResetError):
            return
        except BaseException as exc:  # a result that cannot be pickled: a bug, reported
            conn.send(_pack(exc))


def _release_free_memory() -> None:
    """Return the pages free()d by the last tasks to the system (glibc's malloc_trim).  glibc
    keeps them otherwise: a worker that counted a few 30 MB tasks held 50-90 MB of freed tables
    for as long as it lived -- through the whole merge loop of `mnemo train`, which is when the
    run's memory peaks (the 1 GB run went over 1 GiB summed).  Elsewhere than glibc: nothing."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        import ctypes

        try:
            _MALLOC_TRIM = ctypes.CDLL(None).malloc_trim
        except (AttributeError, OSError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM: Any = None


def spawned_main() -> None:
    """The entry of a worker started as a fresh interpreter: argv is (socket fd, parent pid)."""
    fd, parent_pid = int(sys.argv[1]), int(sys.argv[2])
    init_worker_signals(parent_pid)
    serve(Connection(fd))


def _pack(exc: BaseException) -> tuple[Any, ...]:
    """An exception as it travels: the exception itself when it survives a pickle round trip
    (so it arrives with its type and message), else its type's name and message; with its
    traceback as text either way."""
    import pickle

    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        pickle.loads(pickle.dumps(exc))
    except BaseException:
        return ("err", None, f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc), tb)
    exc.__traceback__ = None
    exc.__context__ = None
    exc.__cause__ = None
    return ("err", exc, "", "", tb)


def _rebuild(reply: tuple[Any, ...]) -> BaseException:
    """The exception a worker raised, as the caller raises it (the error rule)."""
    _, sent, type_name, message, tb = reply
    exc: BaseException = sent if isinstance(sent, BaseException) else WorkerCrash(f"{type_name}: {message}")
    if isinstance(exc, MnemoError) and not _is_bug(exc):
        exc.__suppress_context__ = True  # the user's error: its message is the whole story
        return exc
    exc.__cause__ = RemoteTraceback(tb)
    return exc


def _is_bug(exc: BaseException) -> bool:
    from mnemo.errors import VerificationError

    return isinstance(exc, VerificationError)


class WorkerCrash(RuntimeError):
    """A worker raised an exception that could not be sent back as itself (it does not pickle):
    its type and message, with the worker's traceback as __cause__.  A bug, never the input's fault."""


# ---- one set of workers per process ------------------------------------------------------------------

_EXECUTORS: weakref.WeakSet[LocalProcesses] = weakref.WeakSet()
_SHARED: LocalProcesses | None = None
_SHARED_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked child (of the caller, or a worker being started) owns none of the workers."""
    global _SHARED, _SHARED_LOCK
    for ex in list(_EXECUTORS):
        ex.forget()
    _SHARED = None
    _SHARED_LOCK = threading.Lock()


def _surroundings() -> tuple[str, int]:
    """What a worker takes from its caller when it starts and never looks at again: the working
    folder (relative input paths resolve against it) and the environment (credentials, e.g.
    AWS_* for s3:// inputs).  Kept workers whose caller has since changed either are replaced."""
    try:
        cwd = os.getcwd()
    except OSError:  # the folder was deleted: no worker could resolve a relative path in it either
        cwd = ""
    return cwd, hash(frozenset(os.environ.items()))


def _shutdown_all() -> None:
    for ex in list(_EXECUTORS):
        ex.shutdown()


def _shutdown_at_exit() -> None:
    """At exit the work is done: a Ctrl-C or SIGTERM arriving now would only interrupt stopping
    the workers and print a traceback, so both stay blocked while the process ends."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    _shutdown_all()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_shutdown_at_exit)


@contextmanager
def shared_executor(workers: int, *, depth: int = 1) -> Iterator[Executor]:
    """The executor for `workers` (an int, resolve_workers'): this process for 1, else the
    process's persistent local workers, started on first use and kept for the next calls (a
    different width, working folder or environment replaces them).  A second thread asking while they are in use gets workers
    of its own for the call, stopped at its end.  `depth`: calls queued per worker (Queued; for
    tasks with small messages)."""
    global _SHARED
    if workers == 1:
        yield InProcess()
        return
    lock = _SHARED_LOCK
    if not lock.acquire(blocking=False):
        own = LocalProcesses(workers)
        try:
            yield _arranged(own, depth)
        finally:
            own.shutdown()
        return
    try:
        if _SHARED is None or _SHARED.width != workers or _SHARED.surroundings != _surroundings():
            if _SHARED is not None:
                _SHARED.shutdown()
            _SHARED = LocalProcesses(workers)
        yield _arranged(_SHARED, depth)
    finally:
        lock.release()


def _arranged(workers: LocalProcesses, depth: int) -> Executor:
    return Queued(workers, depth) if depth > 1 else workers


# ---- the engine -----------------------------------------------------------------------------------


def map_combine(
    tasks: Iterable[P],
    fn: Callable[[Any, P], R],
    combiner: Callable[[], Combiner[R]],
    *,
    executor: Executor,
    setup: Setup | None = None,
    on_part: Callable[[R], None] | None = None,
) -> R:
    """fn(state, task) for every task, added up by one `combiner()`; the sum.  `on_part` sees
    each result that reaches this process, before it is added (progress, statistics)."""
    return executor.map_combine(tasks, fn, combiner, setup, on_part)


def map_ordered(
    tasks: Iterable[P],
    fn: Callable[[Any, P], R],
    sink: Callable[[R], None],
    *,
    executor: Executor,
    setup: Setup | None = None,
) -> None:
    """fn(state, task) for every task; `sink` gets the results in task order, in this process."""
    executor.map_ordered(tasks, fn, sink, setup)


def drive(
    executor: Executor,
    tasks: Iterable[P],
    fn: Callable[[Any, P], R],
    setup: Setup | None,
    deliver: Callable[[R], None],
    *,
    ordered: bool,
) -> None:
    """The loop every strategy shares: keep `executor.width` calls in flight, reading tasks only
    as they are needed (a stream is never read ahead of the workers), hand each result to
    `deliver` (in task order when `ordered`, holding at most ORDER_WINDOW x width finished
    results), and on any exception -- a task's error, a failing sink, Ctrl-C, SIGTERM --
    abort what is in flight before it propagates."""
    source = iter(tasks)
    width = executor.width
    window = ORDER_WINDOW * width
    submitted = 0
    delivered = 0
    in_flight = 0
    finished: dict[int, R] = {}
    exhausted = False
    try:
        while True:
            while not exhausted and in_flight < width and (not ordered or submitted - delivered < window):
                try:
                    task = next(source)
                except StopIteration:
                    exhausted = True
                    break
                executor.submit(submitted, fn, task, setup)
                submitted += 1
                in_flight += 1
            if in_flight == 0:
                return
            index, result = executor.wait()
            in_flight -= 1
            if not exhausted and in_flight < width and (not ordered or submitted - delivered < window):
                # The worker that just finished gets its next task before this result is
                # handed on: it works while the caller adds up or writes (counting 1 GB, the
                # caller's adding up took about 50 ms a table, and the worker waited for it).
                try:
                    task = next(source)
                except StopIteration:
                    exhausted = True
                else:
                    executor.submit(submitted, fn, task, setup)
                    submitted += 1
                    in_flight += 1
            if not ordered:
                deliver(result)
                continue
            finished[index] = result
            while delivered in finished:
                deliver(finished.pop(delivered))
                delivered += 1
    except BaseException:
        executor.abort()
        raise
