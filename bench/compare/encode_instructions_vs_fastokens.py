"""How much work each encoder does per chunk: instructions (valgrind's callgrind) and CPU time of
one pass over the same documents, mnemo beside fastokens, per form (lists, packed / flat) and
cache (warm, cold).  Issue 27's goal 1 asks mnemo for 1.5x fastokens' speed; this says how far
that is in instructions a chunk and in instructions a nanosecond (docs/speed.md, sixteenth
session).

    python bench/compare/encode_instructions_vs_fastokens.py [--vocab cl100k_base] [--corpus english]
                                                 [--mb 1] [--rounds 15] [--no-callgrind]

Each measurement runs in a child process of its own (`taskset -c 1` when there is taskset,
every thread pool capped at 1).  A pass's instructions are told apart from the set-up's by
difference: the child run twice under callgrind, with and without --reps passes, the
difference divided by --reps.  Forms: mnemo `encode_ordinary` per document (lists) and
`encode_batch_to_numpy(workers=1)` (packed); fastokens `encode_ordinary(d).ids` (lists) and
`encode_batch_flat` (flat).  Warm = a pass over documents encoded before; cold = mnemo's chunk
cache emptied (`clear_cache`; the word tables made at load stay), fastokens made anew with one
short text encoded first (its lazy set-up is not the pass's).  Time: CPU seconds of one pass,
best of --rounds, in the same child kinds (no valgrind).  The ids of both tools are compared
on every document first.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from corpus import SHARED, documents  # noqa: E402

PATTERN = {"cl100k_base": "cl100k", "o200k_base": "o200k"}
FORMS = [("mnemo", "lists"), ("mnemo", "packed"), ("fastokens", "lists"), ("fastokens", "flat")]
CAPPED = {"FASTOKENS_BPE_THREADS": "1", "RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def child(tool: str, form: str, cache: str, plain: str, vocab: str, docs_file: str, reps: int, passes: int, timed: bool) -> None:
    """Set up, then `reps` x (reset, when cold; `passes` passes); prints the best pass's CPU time
    when `timed`."""
    docs: list[str] = json.loads(Path(docs_file).read_text())
    make: Callable[[], Any]
    run: Callable[[Any], object]
    if tool == "mnemo":
        import mnemo

        tok = mnemo.load_tiktoken(plain, PATTERN[vocab])
        make = lambda: tok  # noqa: E731
        reset: Callable[[Any], None] = lambda t: t._encoder.clear_cache()  # noqa: E731
        if form == "lists":
            run = lambda t: [t.encode_ordinary(d) for d in docs]  # noqa: E731
        else:
            run = lambda t: t.encode_batch_to_numpy(docs, workers=1)  # noqa: E731
    else:
        import fastokens

        def make() -> Any:
            ft = fastokens.Tokenizer.from_tiktoken(plain, encoding=vocab)
            ft.encode_ordinary("Warm up: its lazy set-up (the regex JIT...) is not the word cache.")
            return ft

        reset = lambda t: None  # noqa: E731  (cold: made anew)
        if form == "lists":
            run = lambda t: [t.encode_ordinary(d).ids for d in docs]  # noqa: E731
        else:
            run = lambda t: t.encode_batch_flat(docs)  # noqa: E731
    t = make()
    if cache == "warm":
        run(t)
    best = float("inf")
    for _ in range(reps):
        if cache == "cold":
            t = make() if tool == "fastokens" else t
            reset(t)
        for _ in range(passes):
            c = time.process_time()
            run(t)
            best = min(best, time.process_time() - c)
    if timed:
        print(best)


def spawn(args: list[str], callgrind: Path | None) -> str:
    cmd = [sys.executable, "-P", __file__, "--child", *args]
    if callgrind is not None:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}", *cmd]
    elif shutil.which("taskset"):
        cmd = ["taskset", "-c", "1", *cmd]
    out = subprocess.run(cmd, env={**os.environ, **CAPPED}, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{out.stderr[-2000:]}")
    return out.stdout


def instructions(common: list[str], reps: int, tmp: Path) -> float:
    """Instructions of one pass: (with passes - without) / reps."""
    totals = []
    for passes in (0, 1):
        out = tmp / "cg.out"
        spawn([*common, str(reps), str(passes), "0"], out)
        # callgrind's own summary line: "summary: N" (the events' totals)
        summary = [ln for ln in out.read_text().splitlines() if ln.startswith("summary:")]
        totals.append(int(summary[0].split()[1]))
        out.unlink()
    return (totals[1] - totals[0]) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", default="cl100k_base", choices=sorted(PATTERN))
    ap.add_argument("--corpus", default="english")
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=15, help="timed passes; the best counts")
    ap.add_argument("--reps", type=int, default=2, help="passes under callgrind (told apart by difference)")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--child", nargs=9, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        tool, form, cache, plain, vocab, docs_file, reps, passes, timed = args.child
        child(tool, form, cache, plain, vocab, docs_file, int(reps), int(passes), timed == "1")
        return
    try:
        import fastokens
    except ImportError:
        raise SystemExit("fastokens is not installed (pip install 'mnemo[peers]')") from None
    import mnemo
    from mnemo.patterns import chunk_count

    callgrind = not args.no_callgrind and shutil.which("valgrind") is not None
    tmp = Path(tempfile.mkdtemp(prefix="mnemo-instr-"))
    plain = tmp / f"{args.vocab}.tiktoken"
    plain.write_bytes(gzip.decompress((SHARED / "fixtures" / "tiktoken" / f"{args.vocab}.tiktoken.gz").read_bytes()))
    docs = documents(args.mb, args.corpus)
    docs_file = tmp / "docs.json"
    docs_file.write_text(json.dumps(docs))
    tok = mnemo.load_tiktoken(plain, PATTERN[args.vocab])
    ft = fastokens.Tokenizer.from_tiktoken(str(plain), encoding=args.vocab)
    differ = sum(ft.encode_ordinary(d).ids != tok.encode_ordinary(d) for d in docs)
    if differ:
        raise SystemExit(f"fastokens and mnemo give different ids on {differ} of {len(docs)} documents")
    size = sum(len(d.encode("utf-8")) for d in docs)
    chunks = sum(chunk_count(d.encode("utf-8"), tok._pattern_id) for d in docs)
    ids = sum(len(tok.encode_ordinary(d)) for d in docs)
    print(f"instructions_vs_fastokens: {args.vocab}, {args.corpus}, {len(docs)} documents, {size:,} bytes, "
          f"{chunks:,} chunks, {ids:,} ids (the same from both); load average {os.getloadavg()[0]:.2f}")
    print("| tool | form | cache | instructions a pass | a chunk | ms a pass (CPU, best) | instructions a ns |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    ms: dict[tuple[str, str, str], float] = {}
    for cache in ("warm", "cold"):
        for tool, form in FORMS:
            common = [tool, form, cache, str(plain), args.vocab, str(docs_file)]
            secs = float(spawn([*common, "1", str(args.rounds), "1"] if cache == "warm" else [*common, str(args.rounds), "1", "1"], None))
            ms[tool, form, cache] = secs * 1e3
            ins = instructions(common, args.reps, tmp) if callgrind else float("nan")
            print(f"| {tool} | {form} | {cache} | {ins / 1e6:,.1f} M | {ins / chunks:,.0f} | {secs * 1e3:.2f} "
                  f"| {ins / (secs * 1e9):.1f} |", flush=True)
    print("\nmnemo's speed / fastokens' (issue 27's goal 1: >= 1.5):")
    for cache in ("warm", "cold"):
        lists = ms["fastokens", "lists", cache] / ms["mnemo", "lists", cache]
        packed = ms["fastokens", "flat", cache] / ms["mnemo", "packed", cache]
        print(f"  {cache}: lists {lists:.2f}, packed against flat {packed:.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
