"""Two builds' encode forms, cold and warm, on any vocabulary and corpus: one child process per
build and round, alternated (the order flips every round), pinned to one core, process CPU time.

    .venv/bin/python bench/compare/forms_vs_other_build.py BASE NEW [--vocab cl100k_base] [--corpus english]
        [--mb 2] [--rounds 7] [--passes 2] [--forms list numpy batch] [--cpu 1]

BASE / NEW: a folder holding an installed build (the `mnemo` folder and `*__mypyc*.so` of a
site-packages, or a `pip install --target` of a checkout), put first on the child's PYTHONPATH;
`-` is this venv's installed build.  Each child loads the vocabulary (bench/lib's `vocabulary`),
reads the first documents of the corpus up to MB megabytes and 0.6 MB of the documents after
them, encodes that other text once, then per pass: `clear_cache`, the other text again, the
timed documents (cold), the timed documents again (warm); it reports its best of --passes and a
CRC of the cold pass's ids.  Forms: list = encode_ordinary per document, numpy = encode_to_numpy
per document with disallowed_special=() (as the peer bench calls it), batch =
encode_batch_to_numpy(workers=1).  The parent prints each build's median and best MB/s over the
rounds, new/base, and whether every child gave the same ids.  (docs/speed.md, thirteenth
session.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

LIB = Path(__file__).resolve().parents[1] / "lib"
FORMS = ("list", "numpy", "batch")


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(LIB))
    import numpy as np
    from corpus import documents, vocabulary

    tok = vocabulary(args.vocab)
    texts = documents(args.mb + 0.6, args.corpus)
    docs: list[str] = []
    size = 0
    while size < args.mb * 1e6 and len(docs) < len(texts):
        docs.append(texts[len(docs)])
        size += len(docs[-1].encode("utf-8"))
    other = texts[len(docs):]
    fns: dict[str, Any] = {
        "list": lambda ds: [tok.encode_ordinary(d) for d in ds],
        "numpy": lambda ds: [tok.encode_to_numpy(d, disallowed_special=()) for d in ds],
        "batch": lambda ds: [tok.encode_batch_to_numpy(ds, workers=1)[0]],
    }
    out = {}
    for form in args.forms:
        encode = fns[form]
        encode(other)
        cold = warm = float("inf")
        for _ in range(args.passes):
            tok._encoder.clear_cache()
            encode(other)
            t0 = time.process_time()
            ids = encode(docs)
            cold = min(cold, time.process_time() - t0)
            t0 = time.process_time()
            encode(docs)
            warm = min(warm, time.process_time() - t0)
        crc = zlib.crc32(np.concatenate([np.asarray(x, dtype=np.int64) for x in ids] or [np.zeros(0, np.int64)]).tobytes())
        out[form] = {"cold": size / cold / 1e6, "warm": size / warm / 1e6, "crc": crc}
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--vocab", default="cl100k_base", help="cl100k_base, o200k_base or a tokenizer.bin path")
    p.add_argument("--corpus", default="english", choices=["english", "multilingual", "code"])
    p.add_argument("--mb", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--forms", nargs="+", default=["list", "numpy"], choices=FORMS)
    p.add_argument("--cpu", default="1")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    sides = {"base": args.base, "new": args.new}
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    load0 = os.getloadavg()[0]
    for r in range(args.rounds):
        for side in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            if sides[side] != "-":
                env["PYTHONPATH"] = sides[side]
            cmd = ["taskset", "-c", args.cpu, sys.executable, "-P", __file__, "--child", "-", "-",
                   "--vocab", args.vocab, "--corpus", args.corpus, "--mb", str(args.mb),
                   "--passes", str(args.passes), "--forms", *args.forms]
            run = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if run.returncode:
                sys.exit(f"{side} child failed:\n{run.stderr[-3000:]}")
            results[side].append(json.loads(run.stdout.strip().splitlines()[-1]))
    print(f"{args.vocab} {args.corpus} {args.mb} MB, {args.rounds} rounds x {args.passes} passes, "
          f"load average {load0:.1f}-{os.getloadavg()[0]:.1f}; MB/s, median (best)")
    for form in args.forms:
        same = len({x[form]["crc"] for side in sides for x in results[side]}) == 1
        for phase in ("cold", "warm"):
            b = [x[form][phase] for x in results["base"]]
            n = [x[form][phase] for x in results["new"]]
            print(f"  {form:5s} {phase}: base {statistics.median(b):6.1f} ({max(b):6.1f})  "
                  f"new {statistics.median(n):6.1f} ({max(n):6.1f})  new/base "
                  f"{statistics.median(n) / statistics.median(b):.3f} ({max(n) / max(b):.3f})  same ids: {same}")


if __name__ == "__main__":
    main()
