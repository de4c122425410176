"""`datasets.map(num_proc=2)` against `num_proc=None` with a mnemo Tokenizer (docs/pipelines.md):
what a user's `ds.map(lambda b: {"ids": tok.encode_batch(b["text"], workers=1)}, batched=True,
num_proc=N)` costs end to end -- pickling the tokenizer to the workers, sharding, encoding and
writing the Arrow results.

    python bench/compare/datasets_map_two_procs_vs_one.py [--mb 100] [--train-mb 10] [--tokenizer tokenizer.bin]

Documents: the first --mb MB of ../shared/corpus/english.jsonl.xz, in one in-memory Dataset.
Tokenizer: 32,768 ids trained on the first --train-mb MB (or read from --tokenizer).  --on-disk
maps over a save_to_disk copy (memory-mapped Arrow, what load_dataset gives), whose shards the
workers read from the files instead of receiving them pickled.  Caching is
off (each map really runs).  One run of each, in this order, in one process; the ratio is what
to quote.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import sys
import time
from pathlib import Path

import mnemo
from mnemo import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from corpus import SHARED, documents  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="MB of English text to map over")
    parser.add_argument("--train-mb", type=float, default=10.0, help="MB of English to train the 32,768-id vocabulary on")
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.bin instead of training one")
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--on-disk", action="store_true",
                        help="map over a save_to_disk copy (memory-mapped, as load_dataset gives) instead of an in-memory Dataset")
    args = parser.parse_args()

    import datasets

    datasets.disable_caching()
    datasets.disable_progress_bars()
    docs = documents(args.mb)
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    if args.tokenizer:
        tok = Tokenizer.load(args.tokenizer)
    else:
        tok = mnemo.train_from_iterator(documents(args.train_mb), vocab_size=32768)
    ds = datasets.Dataset.from_dict({"text": docs})
    folder = ""
    if args.on_disk:  # as load_dataset / load_from_disk give it: memory-mapped Arrow files
        folder = tempfile.mkdtemp(prefix="bench-map-")
        ds.save_to_disk(folder)
        ds = datasets.load_from_disk(folder)

    def encode(batch: dict[str, list[str]]) -> dict[str, list[list[int]]]:
        return {"ids": tok.encode_batch(batch["text"], workers=1)}

    where = "on disk (memory-mapped)" if args.on_disk else "in memory"
    print(f"{len(docs):,} documents, {n_bytes / 1e6:.1f} MB {where}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
    times: dict[str, float] = {}
    results = {}
    for label, num_proc in (("num_proc=None", None), (f"num_proc={args.num_proc}", args.num_proc)):
        t0 = time.perf_counter()
        results[label] = ds.map(encode, batched=True, num_proc=num_proc, remove_columns=["text"])
        times[label] = time.perf_counter() - t0
        print(f"  {label:14s} {times[label]:7.2f} s  {n_bytes / 1e6 / times[label]:6.1f} MB/s")
    one, many = results.values()
    assert one["ids"][:50] == many["ids"][:50] and len(one) == len(many)
    if args.on_disk:
        del ds, results, one, many
        shutil.rmtree(folder, ignore_errors=True)
    base, par = times.values()
    print(f"num_proc={args.num_proc} runs {base / par:.2f}x as fast as num_proc=None  (load at the end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
