"""Superword tokens and pruning, measured (docs/superword.md): training time, tokens per byte
on held-out text, encode speed against tiktoken.

    .venv/bin/python bench/compare/superword_vs_plain.py train TRAIN.jsonl --vocab 32768 --superword 24576 [--rounds 3] [--workers 2]
    .venv/bin/python bench/compare/superword_vs_plain.py tokens TOK.bin... --held NAME=HELD.jsonl... [--max-bytes N]
    .venv/bin/python bench/compare/superword_vs_plain.py encode SUPER.bin PLAIN.bin --held HELD.jsonl [--rounds 5]

`train` runs plain, superword and pruned training of the same file in turn (`--pruned-self`:
also pruning by the rule before, which refused each intermediate-only token itself), each in a
child process, `--rounds` times interleaved (A, B, C, A, B, C, ...), and prints each run's wall time and
its CPU time (the child's own and its workers'): on a shared machine only CPU time and same-run
ratios mean anything, so the load average is printed with every round.  `tokens` counts tokens
(deterministic).  `encode` encodes the held-out documents one by one with the superword
tokenizer (mnemo) and with the plain tokenizer of the same size converted to tiktoken, in
alternation, and prints CPU seconds and MB/s of each; the ids of the plain one are checked
against mnemo's own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import mnemo
from mnemo.training import CountStats, TrainStats
path, vocab, mode, sw, workers, out = sys.argv[1:7]
stats = TrainStats(CountStats())
kw = {}
if mode == "superword":
    kw["superword"] = int(sw)
if mode in ("pruned", "pruned-self"):
    kw["prune"] = "intermediate"
if mode == "pruned-self":
    # the rule before, for comparison: refuse each intermediate-only token itself rather than its
    # least frequent user (prune.py is interpreted, so learn_pruned looks this name up per run)
    import mnemo.prune
    mnemo.prune.rarest_users = lambda merges, counts, found: list(found)
t0 = time.perf_counter()
tok = mnemo.train([path], vocab_size=int(vocab), workers=int(workers), stats=stats, **kw)
wall = time.perf_counter() - t0
tok.save(out)
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
print(json.dumps({"wall": wall, "cpu": cpu, "count_wall": stats.count.seconds, "merge_wall": stats.merge_seconds,
                  "rss_mib": me.ru_maxrss / 1024, "merges": stats.merges,
                  "stage2": None if stats.stage2 is None else vars(stats.stage2),
                  "prune_rounds": None if stats.prune is None else stats.prune.rounds,
                  "prune_per_round": None if stats.prune is None else stats.prune.per_round,
                  "refused": None if stats.prune is None else len(stats.prune.removed)}))
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cmd_train(args: argparse.Namespace) -> None:
    print(f"# {args.path}: {Path(args.path).stat().st_size / 1e6:.1f} MB, vocab {args.vocab}, superword T = {args.superword}, "
          f"workers {args.workers}")
    modes = (["plain"] + ([] if args.no_superword else ["superword"]) + (["pruned"] if args.pruned else [])
             + (["pruned-self"] if args.pruned_self else []))
    results: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    for r in range(args.rounds):
        for mode in modes:
            out = Path(args.out) / f"{mode}_{args.vocab}.bin"
            # -P: the checkout's mnemo/ (the current folder) does not shadow the installed, compiled one
            p = subprocess.run([sys.executable, "-P", "-c", CHILD, args.path, str(args.vocab), mode, str(args.superword),
                                str(args.workers), str(out)], capture_output=True, text=True, check=True)
            res = json.loads(p.stdout.strip().splitlines()[-1])
            results[mode].append(res)
            print(f"round {r} {mode:9} wall {res['wall']:7.2f} s  cpu {res['cpu']:7.2f} s  (count {res['count_wall']:.2f} s, "
                  f"merge {res['merge_wall']:.2f} s wall; peak RSS {res['rss_mib']:.0f} MiB)  load {load()}", flush=True)
            if res.get("stage2"):
                print(f"    stage 2: {res['stage2']}")
            if res.get("prune_rounds"):
                print(f"    pruning: {res['prune_rounds']} runs, intermediate-only tokens per run {res['prune_per_round']}, "
                      f"{res['refused']} tokens refused")
    best = {m: min(x["cpu"] for x in results[m]) for m in modes}
    bwall = {m: min(x["wall"] for x in results[m]) for m in modes}
    for m in modes[1:]:
        print(f"{m} / plain: cpu {best[m] / best['plain']:.2f}x (best of {args.rounds}), wall {bwall[m] / bwall['plain']:.2f}x")


def _docs(path: str, max_bytes: int) -> list[bytes]:
    from mnemo.evaluate import corpus_documents

    return list(corpus_documents(path, max_bytes))


def cmd_tokens(args: argparse.Namespace) -> None:
    from mnemo import Tokenizer
    from mnemo.evaluate import superword_ids

    import numpy as np

    held = [(h.partition("=")[0], _docs(h.partition("=")[2], args.max_bytes)) for h in args.held]
    print("tokens per byte (fewer is better); superword share of the tokens")
    print("  " + "tokenizer".ljust(28) + "".join(f"{name:>18}" for name, _ in held))
    for spec in args.tokenizers:
        label, _, path = spec.rpartition("=")
        tok = Tokenizer.load(path)
        spans = superword_ids(tok)
        cells = []
        for _, docs in held:
            n_bytes = sum(map(len, docs))
            n_tok = 0
            n_super = 0
            for d in docs:
                ids = tok.encode_bytes(d)
                n_tok += len(ids)
                if ids:
                    n_super += int(spans[np.asarray(ids)].sum())
            cells.append(f"{n_tok / n_bytes:.5f} {100 * n_super / max(n_tok, 1):4.1f}%")
        print("  " + (label or Path(path).name).ljust(28) + "".join(f"{c:>18}" for c in cells), flush=True)


def cmd_encode(args: argparse.Namespace) -> None:
    from mnemo import Tokenizer
    from mnemo.interop import to_tiktoken

    sw = Tokenizer.load(args.superword)
    plain = Tokenizer.load(args.plain)
    enc = to_tiktoken(plain)
    docs = _docs(args.held, args.max_bytes)
    texts = [d.decode("utf-8") for d in docs]
    n_bytes = sum(map(len, docs))
    assert all(enc.encode_ordinary(t) == plain.encode_ordinary(t) for t in texts[:200])
    print(f"# {len(docs)} documents, {n_bytes / 1e6:.2f} MB; superword {sw.n_vocab} ids (T = {sw.superword}), "
          f"tiktoken with {plain.n_vocab} plain ids; load {load()}")
    times: dict[str, list[float]] = {"mnemo superword": [], "mnemo plain": [], "tiktoken plain": []}
    fns = {
        "mnemo superword": lambda t: sw.encode_ordinary(t),
        "mnemo plain": lambda t: plain.encode_ordinary(t),
        "tiktoken plain": lambda t: enc.encode_ordinary(t),
    }
    for name, fn in fns.items():  # warm the caches once
        for t in texts:
            fn(t)
    for r in range(args.rounds):
        for name, fn in fns.items():
            c0 = time.process_time()
            for t in texts:
                fn(t)
            times[name].append(time.process_time() - c0)
        print(f"round {r}: " + "  ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items()) + f"  load {load()}", flush=True)
    best = {k: min(v) for k, v in times.items()}
    for k, v in best.items():
        print(f"{k:16} {n_bytes / 1e6 / v:7.1f} MB/s cpu (best of {args.rounds})")
    print(f"mnemo superword / tiktoken: {best['tiktoken plain'] / best['mnemo superword']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("train")
    p.add_argument("path")
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--superword", type=int, default=24576)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--pruned", action="store_true")
    p.add_argument("--pruned-self", action="store_true",
                   help="also prune by the rule before (refusing each intermediate-only token itself)")
    p.add_argument("--no-superword", action="store_true")
    p.add_argument("--out", default="/tmp")
    p = sub.add_parser("tokens")
    p.add_argument("tokenizers", nargs="+", metavar="[LABEL=]TOK.bin")
    p.add_argument("--held", nargs="+", required=True, metavar="NAME=FILE")
    p.add_argument("--max-bytes", type=int, default=3_000_000)
    p = sub.add_parser("encode")
    p.add_argument("superword")
    p.add_argument("plain")
    p.add_argument("--held", required=True)
    p.add_argument("--max-bytes", type=int, default=3_000_000)
    p.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    {"train": cmd_train, "tokens": cmd_tokens, "encode": cmd_encode}[args.cmd](args)


if __name__ == "__main__":
    main()
