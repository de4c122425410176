"""What the id map of an imported vocabulary costs: GPT-2 loaded from its files (with the map
that puts GPT-2's byte ids on mnemo's) against the same merges in mnemo's own numbering (no map),
side by side in one run, and tiktoken's Encoding from the same files as the reference.

    python bench/compare/idmap_vs_native_ids.py [--mb 8] [--repeat 3]

Text: the start of ../shared/corpus/english.jsonl.xz, one document at a time (`encode_ordinary`).
Figures: best of --repeat runs, MB/s of UTF-8 text by process CPU time, one core.
Also run as `encode_iterable` over the documents joined by newlines, fed line by line.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mnemo import Tokenizer
from mnemo.interop import load_gpt2, to_tiktoken

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from corpus import SHARED, documents  # noqa: E402


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cs336 = SHARED / "fixtures" / "cs336"
    mapped = load_gpt2(cs336 / "gpt2_vocab.json", cs336 / "gpt2_merges.txt")
    plain = Tokenizer(mapped.merges, pattern="gpt2", special_tokens=["<|endoftext|>"])
    assert mapped.id_map is not None and plain.id_map is None
    docs = documents(args.mb)
    size = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    n_ids = sum(len(plain.encode_ordinary(d)) for d in docs)
    enc = to_tiktoken(mapped)
    assert all(mapped.encode_ordinary(d) == enc.encode_ordinary(d) for d in docs[:200])

    rows = {
        "mnemo, no map": lambda: [plain.encode_ordinary(d) for d in docs],
        "mnemo, GPT-2 id map": lambda: [mapped.encode_ordinary(d) for d in docs],
        "tiktoken": lambda: [enc.encode_ordinary(d) for d in docs],
    }
    lines = "\n".join(docs).splitlines(keepends=True)
    rows["encode_iterable, no map"] = lambda: sum(1 for _ in plain.encode_iterable(lines))
    rows["encode_iterable, id map"] = lambda: sum(1 for _ in mapped.encode_iterable(lines))
    print(f"{len(docs)} documents, {size:.1f} MB, {n_ids} ids; best of {args.repeat}, CPU time")
    # Rows interleaved, best of --repeat each: on a shared machine the load drifts between rows.
    seconds = {name: float("inf") for name in rows}
    for _ in range(args.repeat):
        for name, run in rows.items():
            seconds[name] = min(seconds[name], best(run, 1))
    base = seconds["mnemo, no map"]
    for name, s in seconds.items():
        print(f"  {name:26s} {size / s:7.2f} MB/s  ({s / base:.3f}x the time of no map)")
    remap_ns = (seconds["mnemo, GPT-2 id map"] - base) / n_ids * 1e9
    print(f"  id map: {remap_ns:+.1f} ns per id (remap_in_place alone: {remap_alone(plain, docs, mapped):.1f} ns per id)")


def remap_alone(plain: Tokenizer, docs: list[str], mapped: Tokenizer) -> float:
    from mnemo.idmap import remap_in_place

    outs = [plain.encode_ordinary(d) for d in docs]
    table = mapped.id_map
    assert table is not None
    n = sum(len(o) for o in outs)
    start = time.process_time()
    for o in outs:
        remap_in_place(o, table)
    return (time.process_time() - start) / n * 1e9


if __name__ == "__main__":
    main()
