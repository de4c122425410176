"""`mnemo tokenize`'s end of run: the last input cut into smaller tasks (tokenizing.TAIL_SPLIT)
against the plain plan (TAIL_SPLIT = 1), alternated in one process on the same input.

    .venv/bin/python bench/tokenize_tail.py --tokenizer tokenizer.bin INPUT.jsonl [--rounds 5] [--workers 2]

Prints each run's wall time and the workers' idle seconds (neither running nor waiting for a
CPU, summed over the workers, from /proc/PID/schedstat: the end of a run with one worker busy is
idle time of the others), the medians of each side and their ratios, with the load average.
Wall time on a busy machine is mostly waiting for a CPU; the idle seconds are not.  One
warm-up run first starts the worker pool, which later runs reuse.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import mnemo
from mnemo import tokenizing, work


def workers_sched() -> tuple[float, float]:
    """Seconds the pool's workers ran and waited for a CPU, summed (/proc/PID/schedstat)."""
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
    ap.add_argument("--tokenizer", type=Path, required=True)
    ap.add_argument("input", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--split", type=int, default=tokenizing.TAIL_SPLIT)
    args = ap.parse_args()
    tok = mnemo.Tokenizer.load(args.tokenizer)
    size = args.input.stat().st_size
    times: dict[int, list[float]] = {1: [], args.split: []}
    idles: dict[int, list[float]] = {1: [], args.split: []}
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="mnemo-tail-") as tmp:
        out = Path(tmp) / "out.tok"
        tokenizing.tokenize_files([args.input], tok, out, workers=args.workers)  # starts the pool
        out.unlink()
        for r in range(args.rounds):
            for split in ((1, args.split) if r % 2 == 0 else (args.split, 1)):
                tokenizing.TAIL_SPLIT = split
                run0, wait0 = workers_sched()
                t0 = time.perf_counter()
                tokenizing.tokenize_files([args.input], tok, out, workers=args.workers)
                dt = time.perf_counter() - t0
                run1, wait1 = workers_sched()
                idle = args.workers * dt - (run1 - run0) - (wait1 - wait0)
                times[split].append(dt)
                idles[split].append(idle)
                print(
                    f"round {r} tail_split {split}: {dt:.3f} s  {size / dt / 1e6:.1f} MB/s (file bytes), workers idle "
                    f"{idle:.3f} s, ran {run1 - run0:.2f} s, waited for a CPU {wait1 - wait0:.2f} s, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                out.unlink()
    plain, split_ = statistics.median(times[1]), statistics.median(times[args.split])
    print(f"median wall, tail_split 1: {plain:.3f} s; tail_split {args.split}: {split_:.3f} s; ratio {plain / split_:.3f}")
    i1, i2 = statistics.median(idles[1]), statistics.median(idles[args.split])
    print(f"median workers idle, tail_split 1: {i1:.3f} s; tail_split {args.split}: {i2:.3f} s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
