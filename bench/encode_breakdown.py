"""Where mnemo's encode time goes, per vocabulary and corpus, cold and warm, beside fastokens cold
and warm: the stages told apart by timing nested work in one process (CPU time, best of
--rounds, the measurements alternated in each round so that load hits them alike).

    python bench/encode_breakdown.py [--mb 2] [--rounds 3] [--vocab cl100k_base o200k_base]
                                     [--corpus english multilingual code]

Stages (per document, as encode_ordinary runs them):
  pre-tokenize    chunk_count: the compiled pre-tokenizer's boundary loop alone
  lookups         encode_documents_packed with warm caches, minus pre-tokenize: the table and cache
                  lookups of every chunk and writing its ids
  BPE (cold)      the same with the chunk cache emptied first, minus warm: BPE of the chunks met
                  for the first time, and filling the cache
  list building   encode_ordinary (warm) minus the packed form (warm): str -> UTF-8, the public id
                  map, the list of int objects, the call
fastokens: encode_ordinary per document; cold = the first pass of a new Tokenizer (its word cache
empty; one short text encoded before, so that its lazy set-up is not counted), warm = the pass
after it.  "cold" for mnemo = the chunk cache emptied (clear_cache) before
the pass; its word tables, filled from the merges at load, stay.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import mnemo
from mnemo.encode_text import encode_documents_packed
from mnemo.patterns import chunk_count

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import SHARED, documents  # noqa: E402

PATTERN = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


def cpu(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--vocab", nargs="+", default=["cl100k_base", "o200k_base"])
    p.add_argument("--corpus", nargs="+", default=["english", "multilingual", "code"])
    args = p.parse_args()
    try:
        import fastokens
    except ImportError:
        fastokens = None
        print("fastokens is not installed (pip install 'mnemo[peers]'): its columns are left out")
    print(f"encode_breakdown: {args.mb:g} MB per corpus, CPU time, best of {args.rounds}, "
          f"load average {os.getloadavg()[0]:.2f}")
    tmp = Path(tempfile.mkdtemp())
    for vocab in args.vocab:
        gz = SHARED / "fixtures" / "tiktoken" / f"{vocab}.tiktoken.gz"
        plain = tmp / f"{vocab}.tiktoken"
        plain.write_bytes(gzip.decompress(gz.read_bytes()))
        tok = mnemo.load_tiktoken(plain, PATTERN[vocab])
        enc, pid = tok._encoder, tok._pattern_id
        print(f"\n{vocab}: ms per MB (share of warm encode_ordinary); load average {os.getloadavg()[0]:.2f}")
        print("| corpus | pre-tokenize | lookups | BPE (cold extra) | list building | mnemo warm | mnemo cold "
              "| fastokens warm | fastokens cold | mnemo speed / fastokens, warm | cold |")
        print("| --- |" + " ---: |" * 10)
        for corpus in args.corpus:
            docs = documents(args.mb, corpus)
            bdocs = [d.encode("utf-8") for d in docs]
            mb = sum(map(len, bdocs)) / 1e6
            ft = fastokens.Tokenizer.from_tiktoken(str(plain), encoding=vocab) if fastokens else None
            best: dict[str, float] = {}

            def keep(name: str, s: float) -> None:
                best[name] = min(best.get(name, float("inf")), s)

            def packed_cold() -> object:
                enc.clear_cache()
                return encode_documents_packed(enc, bdocs, pid, -1, -1)

            def list_cold() -> object:
                enc.clear_cache()
                return [tok.encode_ordinary(d) for d in docs]

            for _ in range(args.rounds):
                keep("pre", cpu(lambda: [chunk_count(b, pid) for b in bdocs]))
                keep("packed cold", cpu(packed_cold))
                keep("packed warm", cpu(lambda: encode_documents_packed(enc, bdocs, pid, -1, -1)))
                keep("list cold", cpu(list_cold))
                keep("list warm", cpu(lambda: [tok.encode_ordinary(d) for d in docs]))
                if fastokens is not None:
                    fresh = fastokens.Tokenizer.from_tiktoken(str(plain), encoding=vocab)
                    fresh.encode_ordinary("Warm up: its lazy set-up (the regex JIT...) is not the word cache.")
                    keep("ft cold", cpu(lambda: [fresh.encode_ordinary(d).ids for d in docs]))
                    keep("ft warm", cpu(lambda: [fresh.encode_ordinary(d).ids for d in docs]))
            if ft is not None:
                sample = docs[:200]
                same = sum(ft.encode_ordinary(d).ids == tok.encode_ordinary(d) for d in sample)
                if same != len(sample):
                    print(f"  (fastokens and mnemo differ on {len(sample) - same} of {len(sample)} documents)")
            ms = {k: v / mb * 1e3 for k, v in best.items()}
            whole = ms["list warm"]

            def cell(v: float) -> str:
                return f"{v:.1f} ({v / whole:.0%})"

            fw, fc = ms.get("ft warm"), ms.get("ft cold")
            cold = ms["list cold"]
            print(f"| {corpus} | {cell(ms['pre'])} | {cell(ms['packed warm'] - ms['pre'])} "
                  f"| {ms['packed cold'] - ms['packed warm']:.1f} | {cell(ms['list warm'] - ms['packed warm'])} "
                  f"| {whole:.1f} | {ms['list cold']:.1f} | {fw if fw is None else f'{fw:.1f}'} | {fc if fc is None else f'{fc:.1f}'} "
                  f"| {'' if fw is None else f'{fw / whole:.2f}'} | {'' if fc is None else f'{fc / cold:.2f}'} |",
                  flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
