"""The fast merge loop of two installs side by side, on the same words in the same run: this
checkout's .venv against another Python whose mnemo is the reference (for example main's
.venv before a change to mnemo/merge_loop.py).  Rounds alternate between the two, so machine
load hits both alike; the best of each is compared.

Run: .venv/bin/python bench/compare/merge_loop_vs_other_build.py /work/main/.venv/bin/python [--rounds 5] [--merges 8000]
Also times, in this install, continuing from the first half of the merges (initial_merges),
which must cost about what learning them does.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
from words_cache import corpus_words
from mnemo.merge_loop import train_merges
words = corpus_words("english", 4_000_000, "gpt2")
n = {merges}
initial = None
if {half}:
    initial = train_merges(words, n // 2, "id", False)[0]
t0 = time.perf_counter()
merges, counts = train_merges(words, n, "id", False, None, initial_merges=initial) if initial else train_merges(words, n, "id", False)
print(time.perf_counter() - t0, hash(tuple(merges)))
"""


def run(python: str, merges: int, half: bool) -> tuple[float, int]:
    code = CHILD.format(here=str(HERE.parent / "lib"), merges=merges, half=half)
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, cwd="/tmp").stdout.split()
    return float(out[0]), int(out[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("reference", help="the Python whose mnemo is the reference")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--merges", type=int, default=8000)
    args = ap.parse_args()
    new: list[float] = []
    ref: list[float] = []
    cont: list[float] = []
    for _ in range(args.rounds):
        t, h_new = run(sys.executable, args.merges, False)
        new.append(t)
        t, h_ref = run(args.reference, args.merges, False)
        ref.append(t)
        t, h_cont = run(sys.executable, args.merges, True)
        cont.append(t)
        assert h_new == h_ref == h_cont, "the installs or the continued run learned different merges"
    print(f"{args.merges} merges on 4 MB of english, best of {args.rounds} rounds each")
    print(f"  this install      {min(new):.3f} s")
    print(f"  reference         {min(ref):.3f} s")
    print(f"  ratio this/ref    {min(new) / min(ref):.3f}")
    print(f"  continuing from the first {args.merges // 2} (initial_merges): {min(cont):.3f} s, "
          f"{min(cont) / min(new):.3f} x learning all")


if __name__ == "__main__":
    main()
