"""The parent's side of counting: adding up the workers' count tables (training.CountSum), timed
on its own.

    .venv/bin/python bench/measure/count_sum.py FILE.jsonl [--tasks 8] [--rounds 5]

Plans FILE's counting tasks as `mnemo train` does with 2 workers, counts the first --tasks of
them in this process (the tables the workers would send), then adds those tables up with
CountSum --rounds times and prints the best and the median CPU seconds, and ns per word added.
For a before/after ratio run it once per build (PYTHONPATH=<other build>), alternating.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from mnemo.patterns import compile_pattern, key_of
from mnemo.sources import check_inputs, plan_tasks
from mnemo.training import CountSettings, CountSum, count_task


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    pid = key_of(compile_pattern("mnemonic"))  # the pattern as it travels to workers
    settings = CountSettings(pid, 256, (), "text")
    tasks = plan_tasks(check_inputs([args.file]), n_workers=2, specials=[])[: args.tasks]
    parts = [count_task(settings, None, t) for t in tasks]
    n_words = sum(len(p.meta) // 16 for p in parts)
    times = []
    for _ in range(args.rounds):
        c0 = time.process_time()
        total = CountSum(pid, 256)
        for p in parts:
            total.add(p)
        result = total.result()
        times.append(time.process_time() - c0)
    print(
        f"{len(parts)} tables, {n_words} words added into {len(result.meta) // 16}: CPU best {min(times):.3f} s, "
        f"median {statistics.median(times):.3f} s ({statistics.median(times) / n_words * 1e9:.0f} ns a word), "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
