"""Time the fast trainer's merge loop on the words of the first 100 MB of English (GPT-4's
pattern, regex stand-in for mnemo's counter, cached by words_cache.py), 32,496 merges, with and
without the final recount.  Prints wall and CPU seconds per run (the machine is shared: CPU time
shows the work, wall time what a user waits).

Run: .venv/bin/python bench/measure/merge_loop_100mb.py [MAX_BYTES] [N_MERGES] [ROUNDS]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from words_cache import corpus_words  # noqa: E402

from mnemo.merge_loop import train_merges  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("max_bytes", nargs="?", type=int, default=100_000_000, help="bytes of English (default 100 MB)")
    parser.add_argument("n_merges", nargs="?", type=int, default=32_496, help="merges to learn (default 32,496)")
    parser.add_argument("rounds", nargs="?", type=int, default=3, help="runs of each kind (default 3)")
    args = parser.parse_args()
    max_bytes, n_merges, rounds = args.max_bytes, args.n_merges, args.rounds
    t = time.perf_counter()
    words = corpus_words("english", max_bytes, "gpt4")
    print(f"words: {len(words):,} unique, {sum(len(w) for w in words):,} bytes, "
          f"{sum(words.values()):,} chunks ({time.perf_counter() - t:.1f} s to count or load)")
    for verify in (False, True):
        for _ in range(rounds):
            t, c = time.perf_counter(), time.process_time()
            merges, counts = train_merges(words, n_merges, verify=verify)
            print(f"verify={verify!s:5} merges={len(merges):,} wall {time.perf_counter() - t:6.2f} s  "
                  f"cpu {time.process_time() - c:6.2f} s  (last count {counts[-1]})", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
