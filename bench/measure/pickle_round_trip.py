"""What a pickle round trip of a Tokenizer costs (docs/pipelines.md): `pickle.dumps` writes the
tokenizer.bin image (Tokenizer.__reduce__), `pickle.loads` validates it and builds the encoder
-- what every `datasets.map(num_proc=N)` worker and DataLoader worker pays once.

    python bench/measure/pickle_round_trip.py [--tokenizer tokenizer.bin] [--mb 20] [--repeat 7]

Tokenizers: mnemo's default vocabulary of 32,768 ids, trained on the first --mb MB of
../shared/corpus/english.jsonl.xz (or read from --tokenizer), and GPT-2's 50,257 ids from
../shared/fixtures/cs336 (an imported vocabulary, with its id map).  Figures: best and median
of --repeat runs, wall time, one process; copy.deepcopy is the same rebuild.
"""

from __future__ import annotations

import argparse
import copy
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mnemo
from mnemo import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from corpus import SHARED, documents  # noqa: E402


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def report(name: str, tok: Tokenizer, repeat: int) -> None:
    data = pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(data) == tok
    rows = [
        ("pickle.dumps", lambda: pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL)),
        ("pickle.loads", lambda: pickle.loads(data)),
        ("round trip", lambda: pickle.loads(pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL))),
        ("copy.deepcopy", lambda: copy.deepcopy(tok)),
    ]
    print(f"{name}: n_vocab {tok.n_vocab}, pickle {len(data):,} bytes")
    for label, fn in rows:
        best, median = timed(fn, repeat)
        print(f"  {label:14s} best {best * 1e3:7.2f} ms   median {median * 1e3:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.bin to measure instead of training one")
    parser.add_argument("--mb", type=float, default=20.0, help="MB of English to train the 32,768-id vocabulary on")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if args.tokenizer:
        tok = Tokenizer.load(args.tokenizer)
    else:
        t0 = time.perf_counter()
        tok = mnemo.train_from_iterator(documents(args.mb, count="chars"), vocab_size=32768)
        print(f"(trained on {args.mb} MB of English in {time.perf_counter() - t0:.1f} s)")
    report("mnemo default vocabulary", tok, args.repeat)
    cs336 = SHARED / "fixtures" / "cs336"
    if (cs336 / "gpt2_vocab.json").exists():
        from mnemo.interop import load_gpt2

        report("GPT-2 (imported, id map)", load_gpt2(cs336 / "gpt2_vocab.json", cs336 / "gpt2_merges.txt"), args.repeat)


if __name__ == "__main__":
    main()
