"""Variants of the packed encode loop side by side in ONE process, alternated pass by pass (the
finest interleaving: on a shared machine a neighbour's burst then hits both sides alike).

    .venv/bin/python bench/compare/encode_loop_vs_variants.py FUNC [FUNC ...] [--mb 3] [--rounds 15] [--vocab 32k|cl100k_base|o200k_base]

Each FUNC names a function of mnemo.encode_text with encode_range_packed's signature
(enc, data, start, end, pattern, dst), optionally followed by `:ATTR=INT` to set an attribute of
the Encoder before its turn (a switch between two code paths of one build).  Every round times each FUNC once over every document
(process CPU time, chunk cache emptied first, turns rotated every round) and checks that they
wrote the same ids.  Prints each one's median and best MB/s and its ratio to the first FUNC.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers

from gpt2_merges import english_docs, gpt2_tokenizer  # noqa: E402
from openai_vocabs_vs_peers import SHARED, pieces  # noqa: E402
from librt.strings import BytesWriter  # noqa: E402

import mnemo  # noqa: E402
import mnemo.encode_text as et  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("funcs", nargs="+")
    parser.add_argument("--mb", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--vocab", default="32k", choices=["32k", "cl100k_base", "o200k_base"])
    args = parser.parse_args()
    docs = [p.encode("utf-8") for d in english_docs(int(args.mb * 1e6)) for p in pieces(d)]
    size = sum(map(len, docs))
    if args.vocab == "32k":
        tok = gpt2_tokenizer()
    else:
        tok = mnemo.load_tiktoken(SHARED / "fixtures" / "tiktoken" / f"{args.vocab}.tiktoken.gz", args.vocab)
    enc = tok._encoder
    pid = tok._pattern_id
    funcs = [getattr(et, name.split(":")[0]) for name in args.funcs]
    settings = [name.split(":")[1].split("=") if ":" in name else None for name in args.funcs]
    times: dict[str, list[float]] = {name: [] for name in args.funcs}
    outputs: dict[str, bytes] = {}
    for r in range(args.rounds):
        for k in range(len(funcs)):
            i = (k + r) % len(funcs)
            fn = funcs[i]
            if settings[i] is not None:
                setattr(enc, settings[i][0], type(getattr(enc, settings[i][0]))(int(settings[i][1])))
            enc.clear_cache()
            t0 = time.process_time()
            parts = []
            for d in docs:
                dst = BytesWriter()
                fn(enc, d, 0, len(d), pid, dst)
                parts.append(dst.getvalue())
            times[args.funcs[i]].append(time.process_time() - t0)
            out = b"".join(parts)
            if outputs.setdefault(args.funcs[i], out) != out or out != next(iter(outputs.values())):
                raise SystemExit(f"{args.funcs[i]} wrote other ids")
    print(f"load {os.getloadavg()[0]:.2f}, {args.vocab}, {size / 1e6:.1f} MB English, {args.rounds} rounds")
    base_med = statistics.median(times[args.funcs[0]])
    base_best = min(times[args.funcs[0]])
    for name in args.funcs:
        med = statistics.median(times[name])
        best = min(times[name])
        print(f"{name:34s} median {size / med / 1e6:6.1f} MB/s ({base_med / med:.3f}x)   best {size / best / 1e6:6.1f} MB/s"
              f" ({base_best / best:.3f}x)")


if __name__ == "__main__":
    main()
