"""The encoder's caches, cold and warm, of two installed builds: one child process per build and
round, alternated (the order flips every round), pinned to core 1, process CPU time.

    python bench/compare/cache_warm_vs_other_build.py BASE_PYTHON NEW_PYTHON [--rounds 5] [--mb 2]
        [--passes 1] [--vocab cl100k_base|o200k_base] [--corpora english multilingual code]

Each child loads the vocabulary (cl100k_base unless --vocab) by name, reads MB megabytes of a
corpus, encodes every document with encode_ordinary once with the chunk cache emptied (cold)
and once more (warm), --passes times, and prints the best MB/s of each and a hash of the ids.
The parent prints, per corpus, each build's medians and bests over the rounds, new/base, and
whether every child gave the same ids.  BASE_PYTHON / NEW_PYTHON: the python of each build's
venv (a copy of the build before, installed in a venv of its own).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPORA = ("english", "multilingual", "code")


def documents(name: str, mb: float) -> list[str]:
    docs: list[str] = []
    size = 0
    with lzma.open(SHARED / "corpus" / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            docs.append(text)
            size += len(text.encode("utf-8"))
            if size >= mb * 1e6:
                break
    return docs


def child(name: str, mb: float, vocab: str, passes: int) -> None:
    import mnemo

    tok = mnemo.load_tiktoken(SHARED / "fixtures" / "tiktoken" / f"{vocab}.tiktoken.gz", vocab)
    docs = documents(name, mb)
    size = sum(len(d.encode("utf-8")) for d in docs)
    cold = warm = float("inf")
    for _ in range(passes):  # the best of `passes` (cold, warm) pairs
        tok._encoder.clear_cache()
        t0 = time.process_time()
        cold_ids = [tok.encode_ordinary(d) for d in docs]
        cold = min(cold, time.process_time() - t0)
        t0 = time.process_time()
        warm_ids = [tok.encode_ordinary(d) for d in docs]
        warm = min(warm, time.process_time() - t0)
        assert cold_ids == warm_ids
    print(json.dumps({"cold": size / cold / 1e6, "warm": size / warm / 1e6, "ids": hash(tuple(map(tuple, cold_ids)))}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--passes", type=int, default=1, help="(cold, warm) pairs a child, its best of each")
    parser.add_argument("--vocab", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.mb, args.vocab, args.passes)
        return
    sides = {"base": args.base, "new": args.new}
    print(f"load average {os.getloadavg()[0]:.1f}, {args.mb} MB per corpus, {args.rounds} rounds of {args.passes} passes, {args.vocab}, MB/s")
    for name in args.corpora:
        rates: dict[str, dict[str, list[float]]] = {k: {"cold": [], "warm": []} for k in sides}
        hashes: set[int] = set()
        for r in range(args.rounds):
            for side in list(sides) if r % 2 == 0 else list(sides)[::-1]:
                out = subprocess.run(
                    ["taskset", "-c", "1", sides[side], __file__, "x", "x", "--child", name, "--mb", str(args.mb), "--vocab", args.vocab, "--passes", str(args.passes)],
                    capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"), cwd="/",
                )  # fmt: skip
                if out.returncode:
                    sys.exit(out.stderr)
                got = json.loads(out.stdout)
                rates[side]["cold"].append(got["cold"])
                rates[side]["warm"].append(got["warm"])
                hashes.add(got["ids"])
        med = {side: {m: statistics.median(v) for m, v in rates[side].items()} for side in sides}
        print(
            f"{name:13} {'same ids' if len(hashes) == 1 else 'IDS DIFFER'}  "
            f"cold base {med['base']['cold']:.1f} new {med['new']['cold']:.1f} ({med['new']['cold'] / med['base']['cold']:.3f}x)  "
            f"warm base {med['base']['warm']:.1f} new {med['new']['warm']:.1f} ({med['new']['warm'] / med['base']['warm']:.3f}x)  "
            f"load {os.getloadavg()[0]:.1f}\n{'':13} best of rounds: cold {max(rates['base']['cold']):.1f} -> "
            f"{max(rates['new']['cold']):.1f} ({max(rates['new']['cold']) / max(rates['base']['cold']):.3f}x), warm "
            f"{max(rates['base']['warm']):.1f} -> {max(rates['new']['warm']):.1f} "
            f"({max(rates['new']['warm']) / max(rates['base']['warm']):.3f}x)"
        )


if __name__ == "__main__":
    main()
