"""The merge loop alone, on mnemo's own word counts of a real input, cached on disk so that
repeated runs skip the counting.  Sides (trainers) alternate round by round in one run, so the
machine's load hits each alike; the best of each is compared to the first side.

    .venv/bin/python bench/compare/merge_loop_narrow_vs_wide.py english100 --vocab 131072 --sides wide,hybrid [--rounds 2]
    .venv/bin/python bench/compare/merge_loop_narrow_vs_wide.py 1gb --input /path/corpus.jsonl --vocab 32768 --sides narrow

Inputs: `english100` = the first 100 MB of documents of the English corpus (what
bench/compare/train_vs_peers.py trains on, pattern gpt4); `1gb` = the JSONL of bench/measure/train_1gb.py --keep
(pattern mnemonic, the command line's default).  Sides: `narrow` (merge_loop, up to 65,535 ids),
`wide` (merge_loop_wide alone: SEAMS.handoff = 0), `hybrid` (merge_loop_wide as mnemo.train runs it:
merge_loop's 16-bit trainer for the first 65,279 merges, then the 32-bit one from its words).
Wall and CPU time (time.process_time: the loop is one thread, and on a loaded machine its CPU
time is the steadier figure).  Every side must learn the same merges with the same counts, or the bench fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import time
from collections.abc import Callable
from pathlib import Path

from mnemo import merge_loop, merge_loop_wide, training
from mnemo.vocab import DEFAULT_SPECIAL_TOKENS

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
CACHE_DIR = Path(os.environ.get("MNEMO_BENCH_CACHE", "/tmp/mnemo-bench-cache"))

Trainer = Callable[[bytes, bytes, int], tuple[list[tuple[int, int]], list[int]]]


def english_docs(mb: float) -> list[str]:
    docs: list[str] = []
    size = 0
    with lzma.open(CORPUS / "english.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            if size >= mb * 1e6:
                break
            text = json.loads(line)["text"]
            docs.append(text)
            size += len(text.encode("utf-8"))
    return docs


def packed(name: str, path: Path | None) -> tuple[bytes, bytes]:
    """(blob, meta) of the input's word counts, from the cache when present."""
    cache = CACHE_DIR / f"{name}.packed"
    if cache.is_file():
        data = cache.read_bytes()
        n = int.from_bytes(data[:8], "little")
        return data[8 : 8 + n], data[8 + n :]
    t0 = time.perf_counter()
    if name == "english100":
        (blob, meta), _ = training._count_packed(
            training.Documents(english_docs(100)), pattern="gpt4", special_tokens=[], max_chunk_bytes=256,
            workers=2, text_field="text", progress=None)
    elif name == "1gb":
        if path is None:
            raise SystemExit("1gb needs --input (the corpus.jsonl of bench/measure/train_1gb.py --keep)")
        (blob, meta), _ = training._count_packed(
            [path], pattern="mnemonic", special_tokens=list(DEFAULT_SPECIAL_TOKENS), max_chunk_bytes=256,
            workers=2, text_field="text", progress=None)
    else:
        raise SystemExit(f"unknown input {name}")
    print(f"counted {name} in {time.perf_counter() - t0:.1f} s", flush=True)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_bytes(len(blob).to_bytes(8, "little") + blob + meta)
    tmp.rename(cache)
    return blob, meta


def _wide(blob: bytes, meta: bytes, n: int, handoff: int) -> tuple[list[tuple[int, int]], list[int]]:
    old = merge_loop_wide.SEAMS.handoff
    merge_loop_wide.SEAMS.handoff = handoff
    try:
        return merge_loop_wide.train_merges_packed(blob, meta, n, "id", False)
    finally:
        merge_loop_wide.SEAMS.handoff = old


SIDES: dict[str, Trainer] = {
    "narrow": lambda blob, meta, n: merge_loop.train_merges_packed(blob, meta, n, "id", False),
    "wide": lambda blob, meta, n: _wide(blob, meta, n, 0),
    "hybrid": lambda blob, meta, n: _wide(blob, meta, n, merge_loop.NARROW_MERGES),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", choices=("english100", "1gb"))
    ap.add_argument("--input", dest="path", type=Path)
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--sides", default="wide")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    blob, meta = packed(args.input, args.path)
    n_specials = 0 if args.input == "english100" else len(DEFAULT_SPECIAL_TOKENS)
    n = args.vocab - 256 - n_specials
    sides = args.sides.split(",")
    best = {s: float("inf") for s in sides}
    cpu = {s: float("inf") for s in sides}
    digest: dict[str, str] = {}
    for _ in range(args.rounds):
        for s in sides:
            t0 = time.perf_counter()
            c0 = time.process_time()
            merges, counts = SIDES[s](blob, meta, n)
            best[s] = min(best[s], time.perf_counter() - t0)
            cpu[s] = min(cpu[s], time.process_time() - c0)
            digest[s] = hashlib.sha256(repr((merges, counts)).encode()).hexdigest()[:16]
    if len(set(digest.values())) != 1:
        raise SystemExit(f"the sides disagree: {digest}")
    base = best[sides[0]]
    words = len(meta) // 16
    for s in sides:
        print(f"{s:8s} {best[s]:7.2f} s  {best[s] / base:5.2f}x  cpu {cpu[s]:7.2f} s {cpu[s] / cpu[sides[0]]:5.2f}x  ({args.input}: {words:,} words, {n:,} merges, "
              f"best of {args.rounds}, load {os.getloadavg()[0]:.1f}) merges {digest[s]}")


if __name__ == "__main__":
    main()
