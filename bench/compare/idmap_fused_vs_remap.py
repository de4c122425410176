"""The list path of an imported vocabulary (an id map: GPT-2, cl100k_base, o200k_base), two ways
in ONE process, alternated pass by pass over the same English documents:

- fused: the encoder's lists are made of the public ids' own int objects (Encoder.set_public,
  what Tokenizer does now);
- remap: lists of mnemo's own ids (the pre-made ints, a new int for ids of 65,536 and more),
  then idmap.remap_in_place over each list (what Tokenizer did before the fourth round).

    .venv/bin/python bench/compare/idmap_fused_vs_remap.py [--vocab gpt2|cl100k_base|o200k_base] [--mb 3] [--rounds 11]
        [--tokenizer gpt2.bin]

Each round times both once over every document (process CPU time, chunk cache emptied first,
turns rotated) and checks that they gave the same ids.  Prints median and best MB/s and the
ratio fused / remap.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers

from gpt2_merges import english_docs  # noqa: E402
from openai_vocabs_vs_peers import SHARED, pieces  # noqa: E402

import mnemo  # noqa: E402
from mnemo.encode_text import encode_bytes  # noqa: E402
from mnemo.idmap import remap_in_place  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="gpt2", choices=["gpt2", "cl100k_base", "o200k_base"])
    parser.add_argument("--tokenizer", default="", help="GPT-2's tokenizer.bin (mnemo convert --from gpt2)")
    parser.add_argument("--mb", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    docs = [p.encode("utf-8") for d in english_docs(int(args.mb * 1e6)) for p in pieces(d)]
    size = sum(map(len, docs))
    if args.vocab == "gpt2":
        if not args.tokenizer:
            raise SystemExit("--vocab gpt2 needs --tokenizer gpt2.bin (mnemo convert --from gpt2 ...)")
        tok = mnemo.Tokenizer.load(args.tokenizer)
    else:
        tok = mnemo.load_tiktoken(SHARED / "fixtures" / "tiktoken" / f"{args.vocab}.tiktoken.gz", args.vocab)
    public = tok._public
    if public is None:
        raise SystemExit("this tokenizer has no id map")
    enc = tok._encoder
    pid = tok._pattern_id

    def fused() -> list[list[int]]:
        enc.set_public(public)
        return [encode_bytes(enc, d, pid) for d in docs]

    def remap() -> list[list[int]]:
        enc.set_public(enc.ints)
        out = []
        for d in docs:
            ids = encode_bytes(enc, d, pid)
            remap_in_place(ids, public)
            out.append(ids)
        return out

    sides = {"fused": fused, "remap": remap}
    times: dict[str, list[float]] = {name: [] for name in sides}
    first: list[list[int]] | None = None
    for r in range(args.rounds):
        for k in range(len(sides)):
            name = list(sides)[(k + r) % len(sides)]
            enc.clear_cache()
            t0 = time.process_time()
            got = sides[name]()
            times[name].append(time.process_time() - t0)
            if first is None:
                first = got
            elif got != first:
                raise SystemExit(f"{name} gave other ids")
            del got
    enc.set_public(public)
    print(f"load {os.getloadavg()[0]:.2f}, {args.vocab}, {size / 1e6:.1f} MB English, {args.rounds} rounds")
    med = {n: statistics.median(t) for n, t in times.items()}
    best = {n: min(t) for n, t in times.items()}
    for name in sides:
        print(f"{name:6s} median {size / med[name] / 1e6:6.1f} MB/s   best {size / best[name] / 1e6:6.1f} MB/s")
    print(f"fused / remap: median {med['remap'] / med['fused']:.3f}x, best {best['remap'] / best['fused']:.3f}x")


if __name__ == "__main__":
    main()
