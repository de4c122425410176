"""Does the 32-bit trainer need a 32-bit asm pair scan (`vpcmpeqd`)?  Two measurements, one run:

1. The scan alone: every position of one pair in the training array of real words, by the AVX2
   16-bit kernel (kernels.pair_positions over a vec[i16]) and by the wide trainer's scan over a
   vec[i32] (merge_loop_wide._scan: the same kernel over the 32-bit memory, finding the later
   token of the pair, then a compiled check of its neighbour), in ns per token.
2. The whole trainer: the same words trained to the same vocabulary size (below 65,536 ids, where
   both trainers apply) by merge_loop (16-bit) and merge_loop_wide (32-bit), best of --repeat,
   interleaved.  The ratio bounds what a 32-bit kernel (vpcmpeqd) could still win.

    python bench/compare/wide_trainer_vs_narrow.py [--mb 20] [--vocab 32768] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import lzma
import time
from pathlib import Path

from librt.vecs import vec
from mypy_extensions import i16, i32

from mnemo import kernels, merge_loop, merge_loop_wide
from mnemo.training import count_words

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "english.jsonl.xz"


def english(mb: float) -> list[bytes]:
    docs: list[bytes] = []
    size = 0
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            raw = json.loads(line)["text"].encode("utf-8")
            docs.append(raw)
            size += len(raw)
            if size >= mb * 1e6:
                break
    return docs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    words, _ = count_words(english(args.mb), pattern="gpt4", workers=1)
    flat = [b for w in words for b in (*w, 0xFFFF)]
    t16 = vec[i16]([i16(x - 65536) if x >= 32768 else i16(x) for x in flat])
    t32 = vec[i32]([-1 if x == 0xFFFF else x for x in flat])
    n = len(flat)
    a, b = ord("t"), ord("h")  # a common pair: the scan runs to the end of the array
    for name, fn in (
        ("asm vpcmpeqw, 16-bit", lambda: kernels.pair_positions(t16, a, b, n, 0, n)),
        ("merge_loop_wide._scan, 32-bit", lambda: merge_loop_wide._scan(t32, a, b, n, 0, n)),
    ):
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        print(f"scan {name:30s} {best * 1e9 / n:6.2f} ns/token ({n:,} tokens)")
    n_merges = args.vocab - 256
    times = {"16-bit trainer": float("inf"), "32-bit trainer": float("inf")}
    results = []
    for _ in range(args.repeat):
        for name, mod in zip(times, (merge_loop, merge_loop_wide)):
            t0 = time.perf_counter()
            results.append(mod.train_merges(words, n_merges, verify=False))
            times[name] = min(times[name], time.perf_counter() - t0)
    assert all(r == results[0] for r in results), "the two trainers disagree"
    base = times["16-bit trainer"]
    for name, t in times.items():
        print(f"{name:32s} {t:7.2f} s   {t / base:5.2f}x  ({len(words):,} words, {args.mb:g} MB, {args.vocab:,} ids)")


if __name__ == "__main__":
    main()
