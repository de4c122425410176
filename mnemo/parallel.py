"""What the orchestration modules (training.py, dataset.py, tokenizer.encode_batch) share about
worker processes: how to start them, and the progress callback they report through."""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from multiprocessing.context import ForkContext, SpawnContext

Progress = Callable[[str, int, int], None]
"""progress(phase, done, total): phase "count" (bytes), "merge" (merges) or "tokenize" (bytes);
total is 0 when unknown."""


def worker_context() -> ForkContext | SpawnContext:
    """`fork` where the platform has it (workers start in milliseconds and inherit the loaded
    compiled modules), else `spawn`.  mnemo's parents hold no threads and no locks when they
    fork: the workers only read files or the batches they are handed."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def init_worker_signals() -> None:
    """In a worker process: leave Ctrl-C and SIGTERM to the parent.  The parent turns them into
    an exception that cleans up (no partial output) and stops the workers itself; a worker that
    inherited the parent's handlers would print a traceback of its own instead."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
