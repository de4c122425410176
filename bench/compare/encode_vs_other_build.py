"""Two builds of mnemo's encoder side by side, in one run that alternates them (a change measured
on its own against the build before it, on a shared machine).

    .venv/bin/python bench/compare/encode_vs_other_build.py BASE_DIR [--mb 5] [--rounds 5] [--vocab 32k|cl100k_base|o200k_base|PATH.bin]

BASE_DIR holds an installed copy of the build before (the `mnemo` folder and the `*__mypyc*.so`
files of site-packages, copied there after `make install`); the other side is this checkout's
installed build.  Each round runs one child process per side, in turns (the order flips every
round); a child times, by process CPU time, with the chunk cache emptied before each pass:
- list: encode_ordinary on every document (goal 1's path);
- blocks: encode_documents on blocks of 256 documents (the .tok writer's unit, goal 2);
- numpy: encode_to_numpy on every document (goal 2).
It prints each side's median and best MB/s (each child's figure is its best of --passes) and the
ratios new / base of the medians and of the bests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(mb: float, vocab: str, passes: int) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent / "lib")]  # openai_vocabs_vs_peers; bench/lib
    from gpt2_merges import english_docs, gpt2_tokenizer
    from openai_vocabs_vs_peers import SHARED, pieces

    import mnemo

    docs = [p for d in english_docs(int(mb * 1e6)) for p in pieces(d)]
    bdocs = [d.encode("utf-8") for d in docs]
    size = sum(map(len, bdocs))
    if vocab == "32k":
        tok = gpt2_tokenizer()
    elif vocab.endswith(".bin"):  # a tokenizer.bin: GPT-2's files after `mnemo convert`, say
        tok = mnemo.Tokenizer.load(vocab)
    else:
        tok = mnemo.load_tiktoken(SHARED / "fixtures" / "tiktoken" / f"{vocab}.tiktoken.gz", vocab)
    enc = tok._encoder
    blocks = [bdocs[i : i + 256] for i in range(0, len(bdocs), 256)]
    out: dict[str, float] = {}

    def best(fn: object) -> float:
        t_best = float("inf")
        for _ in range(passes):
            enc.clear_cache()
            t0 = time.process_time()
            fn()  # type: ignore[operator]
            t_best = min(t_best, time.process_time() - t0)
        return size / t_best / 1e6

    out["list"] = best(lambda: [tok.encode_ordinary(d) for d in docs])
    out["blocks"] = best(lambda: [tok.encode_documents(b) for b in blocks])
    out["numpy"] = best(lambda: [tok.encode_to_numpy(d) for d in docs])
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base")
    parser.add_argument("--mb", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--vocab", default="32k", help="32k, cl100k_base, o200k_base or a tokenizer.bin")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.mb, args.vocab, args.passes)
        return
    cmd = [sys.executable, __file__, "x", "--child", "--mb", str(args.mb), "--vocab", args.vocab,
           "--passes", str(args.passes)]
    results: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
    for r in range(args.rounds):
        order = ["base", "new"] if r % 2 == 0 else ["new", "base"]
        for side in order:
            env = dict(os.environ)
            if side == "base":
                env["PYTHONPATH"] = os.path.abspath(args.base)
            else:
                env.pop("PYTHONPATH", None)
            line = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout.strip()
            results[side].append(json.loads(line.splitlines()[-1]))
    print(f"load {os.getloadavg()[0]:.2f}, {args.vocab}, {args.mb} MB English, {args.rounds} rounds")
    for path in results["base"][0]:
        b = statistics.median(x[path] for x in results["base"])
        n = statistics.median(x[path] for x in results["new"])
        bb = max(x[path] for x in results["base"])
        nb = max(x[path] for x in results["new"])
        print(f"{path:7s} median: base {b:6.1f} MB/s  new {n:6.1f} MB/s  new/base {n / b:.3f};  best: base {bb:6.1f} "
              f"new {nb:6.1f} new/base {nb / bb:.3f}\n        "
              f"(base {[round(x[path], 1) for x in results['base']]}, new {[round(x[path], 1) for x in results['new']]})")


if __name__ == "__main__":
    main()
