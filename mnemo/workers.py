"""Worker processes, the lower layer of the work engine (mnemo/work.py, the only module that
starts them): which start method is safe, how a worker leaves signals to its parent and dies
with it, and how many workers a `workers` argument means."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.context import ForkContext, SpawnContext
from typing import Final

from mnemo.errors import ArgumentTypeError, ConfigError

#: prctl(2) option: the signal the kernel sends this process when its parent dies.
PR_SET_PDEATHSIG = 1
#: How often the watchdog (platforms without prctl) looks at its parent, in seconds.
WATCHDOG_SECONDS = 0.5


def worker_context() -> ForkContext | SpawnContext:
    """`fork` where the platform has it and this process runs no other thread (workers start in
    milliseconds and inherit the loaded compiled modules); else `spawn`.

    A forked child holds a copy of every lock as it was at the fork, and only the forking thread:
    a lock another thread held then (an I/O thread such as fsspec's, a caller's thread pool, a
    logging handler) stays held in the child for ever, and a worker that needs it hangs.  A
    spawned worker starts clean and gets the tokenizer as its image.  (CPython 3.12 warns about
    fork in a threaded process; 3.14 stops using it by default for this reason.)  Not
    `forkserver`: its workers are the server's children, so they could not die with their parent
    (die_with_parent).  Spawned workers import the caller's main module, as multiprocessing
    documents: a script that trains or tokenizes with several workers while other threads run
    needs the `if __name__ == "__main__":` guard."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def init_worker_signals(parent_pid: int) -> None:
    """In a worker process: leave Ctrl-C and SIGTERM to the parent, and die with the parent.

    The parent turns Ctrl-C and SIGTERM into an exception that cleans up (no partial output) and
    stops the workers itself; a worker that inherited the parent's handlers would print a
    traceback of its own instead.  `parent_pid` is os.getpid() of the parent, taken before the
    worker started (see die_with_parent)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # The parent blocks both while it starts a worker (mnemo/work.py); a fork and an exec
    # both keep the signal mask, and a worker must die of SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    die_with_parent(parent_pid)


def die_with_parent(parent_pid: int) -> None:
    """In a worker process: make sure it ends when its parent does, however the parent ends.

    A parent killed with SIGKILL (the OOM killer) cannot stop its workers, and a worker blocked
    on a queue that the parent fed would wait forever.  On Linux the kernel sends the worker
    SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG).  The parent may have died before the
    prctl ran: the worker then already has another parent, which is why the parent's pid is
    recorded in the parent, before the start, and compared here.  Elsewhere a daemon thread looks
    at the parent every WATCHDOG_SECONDS.

    The kernel sends the signal when the *thread* that started the worker ends; mnemo starts its
    workers from the main thread, which ends only with the process (a multiprocessing.Pool
    replaces a dead worker from its own thread, which lives as long as the pool)."""
    if _set_parent_death_signal():
        if os.getppid() != parent_pid:
            os._exit(1)
        return
    watch_parent(parent_pid)


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up once, in the parent, at import: a worker forked while another
    thread of the parent held the dynamic loader's lock would hang for ever in its own dlopen
    (ctypes.CDLL) -- a forked child must not load libraries, only call what is loaded."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL: Final = _load_prctl()


def _set_parent_death_signal() -> bool:
    """prctl(PR_SET_PDEATHSIG, SIGKILL) for this process; False where there is no prctl."""
    if _PRCTL is None:
        return False
    return int(_PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0


def watch_parent(parent_pid: int, interval: float = WATCHDOG_SECONDS) -> threading.Thread:
    """Start a daemon thread that ends this process (os._exit) as soon as its parent is no longer
    `parent_pid` (the parent died and the process was adopted).  The fallback of die_with_parent
    where prctl is missing; a seam of its own so that tests run it on Linux too."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval)
        os._exit(1)

    thread = threading.Thread(target=watch, name="mnemo-parent-watchdog", daemon=True)
    thread.start()
    return thread


MAX_WORKERS: Final = 1024
"""More worker processes than this is a mistake, not a plan (each holds a tokenizer or a count
table): refused before anything starts, instead of an OverflowError deep in multiprocessing."""


def resolve_workers(workers: object) -> int:
    """The `workers` argument of every parallel entry point: None means every CPU; else an int
    from 1 to MAX_WORKERS (the one place this is checked)."""
    if workers is None:
        return min(os.cpu_count() or 1, MAX_WORKERS)
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise ArgumentTypeError(f"workers must be an int or None, got {type(workers).__name__} {workers!r:.40}")
    if not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"workers must be from 1 to {MAX_WORKERS}, got {workers}")
    return workers
