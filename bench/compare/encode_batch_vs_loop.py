"""encode_batch against a loop of encode, on English corpus documents, in one run.

    .venv/bin/python bench/compare/encode_batch_vs_loop.py [--docs 1000,100000] [--max-chars 1000] [--tokenizer tok.bin]

Documents are the English corpus's, in file order, cycled when more are asked for than it holds,
each cut to --max-chars characters (100,000 whole documents would be ~860 MB of text).  The
tokenizer is trained on the first 20 MB (32,768 ids) unless one is given.  For each size it
prints the loop's time, encode_batch's (best of 20 in turns for up to 10,000 documents, one
run above; default workers: every CPU; the persistent workers are
started by a warm-up call first, as they are in any program that calls it twice), and the ratio
loop / encode_batch (above 1: encode_batch is faster); encode_batch_to_numpy too.  Every result
is checked against the loop's ids.  Run it when the machine is otherwise idle: the ratio with
workers depends on free cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import lzma
import os
import time
from pathlib import Path

import numpy as np

import mnemo

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "english.jsonl.xz"


def documents(n: int, max_chars: int) -> list[str]:
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        corpus = [json.loads(line)["text"][:max_chars] for line in f]
    return list(itertools.islice(itertools.cycle(corpus), n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="1000,100000", help="batch sizes, comma-separated")
    parser.add_argument("--max-chars", type=int, default=1000)
    parser.add_argument("--tokenizer", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.docs.split(",")]
    docs = documents(max(sizes), args.max_chars)
    if args.tokenizer is not None:
        tok = mnemo.Tokenizer.load(args.tokenizer)
    else:
        train_docs: list[str] = []
        size = 0
        with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
            for line in f:
                train_docs.append(json.loads(line)["text"])
                size += len(train_docs[-1])
                if size >= 20_000_000:
                    break
        tok = mnemo.train_from_iterator(train_docs, vocab_size=32768, workers=1)
    print(f"CPUs {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}; documents cut to {args.max_chars} chars")
    tok.encode_batch(docs[:5000])  # warm-up: starts the persistent workers when the batch is large enough
    for n in sizes:
        batch = docs[:n]
        mb = sum(len(d.encode()) for d in batch) / 1e6
        rounds = 20 if n <= 10_000 else 1  # small batches: the best of 20, taken in turns
        t_loop = t_batch = t_numpy = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            loop = [tok.encode(d) for d in batch]
            t_loop = min(t_loop, time.perf_counter() - t0)
            t0 = time.perf_counter()
            batched = tok.encode_batch(batch)
            t_batch = min(t_batch, time.perf_counter() - t0)
            t0 = time.perf_counter()
            flat, offsets = tok.encode_batch_to_numpy(batch)
            t_numpy = min(t_numpy, time.perf_counter() - t0)
        assert batched == loop
        assert np.array_equal(flat, np.fromiter(itertools.chain.from_iterable(loop), dtype=flat.dtype))
        assert offsets[-1] == flat.size and len(offsets) == n + 1
        print(
            f"{n:>7} documents, {mb:7.1f} MB: loop {t_loop:7.3f} s   encode_batch {t_batch:7.3f} s "
            f"(loop/batch {t_loop / t_batch:4.2f})   encode_batch_to_numpy {t_numpy:7.3f} s "
            f"(loop/numpy {t_loop / t_numpy:4.2f})"
        )


if __name__ == "__main__":
    main()
