"""Counting as `mnemo train` runs it (the phase before the merge loop), with the time split between
the parent and the workers: wall time, the workers' CPU seconds (from /proc, so a busy machine's
waiting is left out), the parent's CPU seconds (planning, receiving and adding up the tables).

    .venv/bin/python bench/measure/count_workers.py FILE.jsonl [--workers 2] [--rounds 3] [--tasks-per-worker 16,8]

Prints, per round, MB/s per worker by wall time and by worker CPU time (reading, JSON and
counting included: each worker reads its own byte ranges).  Goal (issue 17, goal 4): at least
120 MB/s per worker.  Use bench/measure/train_1gb.py --keep DIR to make the 1 GB input.
"""

from __future__ import annotations

import argparse
import os
import time

from mnemo import sources, work
from mnemo.training import _count_packed


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def workers_cpu() -> float:
    shared = work._SHARED
    return sum(cpu_seconds(w.pid) for w in shared._workers) if shared is not None else 0.0


def workers_sched() -> tuple[float, float]:
    """Seconds the workers ran and waited for a CPU (runnable), summed (/proc/PID/schedstat)."""
    run = wait = 0.0
    shared = work._SHARED
    for w in shared._workers if shared is not None else []:
        with open(f"/proc/{w.pid}/schedstat") as f:
            a, b, _ = f.read().split()
        run += int(a) / 1e9
        wait += int(b) / 1e9
    return run, wait


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks-per-worker", default=str(sources.TASKS_PER_WORKER),
                    help="comma-separated values of sources.TASKS_PER_WORKER, alternated in every round")
    args = ap.parse_args()
    for r, tpw in ((r, int(t)) for r in range(args.rounds) for t in args.tasks_per_worker.split(",")):
        sources.TASKS_PER_WORKER = tpw  # type: ignore[misc]
        before = workers_cpu()
        run0, wait0 = workers_sched()
        t0 = time.perf_counter()
        c0 = time.process_time()
        (_, meta), stats = _count_packed(
            [args.file], pattern="mnemonic", special_tokens=(), max_chunk_bytes=256, workers=args.workers,
            text_field="text", progress=None,
        )
        wall = time.perf_counter() - t0
        parent = time.process_time() - c0
        wcpu = workers_cpu() - before
        run1, wait1 = workers_sched()
        # idle: neither running nor waiting for a CPU -- waiting for the parent (or the disk)
        idle = args.workers * wall - (run1 - run0) - (wait1 - wait0)
        mb = stats.n_bytes / 1e6
        print(
            f"round {r}, {tpw} tasks per worker: {mb:.0f} MB of text, {len(meta) // 16} words: wall {wall:.2f} s "
            f"({mb / wall / args.workers:.1f} MB/s per worker), workers' CPU {wcpu:.2f} s "
            f"({mb / wcpu if wcpu else 0:.1f} MB/s per worker CPU second), "
            f"parent CPU {parent:.2f} s, workers idle {idle:.2f} s, waiting for a CPU {wait1 - wait0:.2f} s, load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
