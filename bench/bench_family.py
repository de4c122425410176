"""The compiled family against the hand-written scanner it replaced, in one run.

  python bench/bench_family.py [--mb 5] [--repeat 5] [--corpora english,multilingual,code,chat]

For each corpus (its first --mb MB, documents joined by newlines) and each of the five named
patterns: the chunk loop (`pos = scan(...)` until the end, pretokenize.count_chunks) of the
compiled program against the same loop of the hand-written named scanner
(mnemo/pretokenize_named.py), run in turn, round after round, in this one process; each figure is
the best of --repeat rounds of CPU time (time.process_time), and the ratio is hand-written time /
compiled time (above 1: the compiled program is faster).  The chunk counts are checked equal first.

Then, for the presets that are not named patterns, the compiled chunk loop in MB/s beside the
same pre-tokenization by `tokenizers` (its Sequence of Split / Digits pre-tokenizers,
pre_tokenize_str) on the same text: not a like-for-like speed race (tokenizers builds a Python
list of pieces with offsets), shown for scale.

The load average is printed with the figures: on a shared machine only the ratios of one run mean
anything (docs/speed.md).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from mnemo import patterns as P
from mnemo import pretokenize as pt
from mnemo import pretokenize_named as named
from mnemo.constants import PATTERNS

SHARED = Path(__file__).resolve().parents[2] / "shared"


def corpus_bytes(name: str, mb: float) -> bytes:
    """The first documents (chat: message contents) of a corpus, joined by newlines, up to mb MB."""
    parts: list[str] = []
    size = 0
    with lzma.open(SHARED / "corpus" / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            texts = [m["content"] for m in record["messages"]] if "messages" in record else [record["text"]]
            for text in texts:
                parts.append(text)
                size += len(text.encode("utf-8")) + 1
            if size >= mb * 1e6:
                break
    return "\n".join(parts).encode("utf-8")


def rounds(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """CPU seconds of each function, `repeat` rounds, the functions in turn within a round."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            t = time.process_time()
            fn()
            times[key].append(time.process_time() - t)
    return times


def named_against_compiled(data: bytes, repeat: int) -> list[tuple[str, float, float, float, float]]:
    """(pattern, hand MB/s, compiled MB/s, best ratio, median ratio) for the five named patterns."""
    out = []
    fns: dict[str, Callable[[], object]] = {}
    for name in PATTERNS:
        pid = named.pattern_id(name)
        prog = P.compile_pattern(name).program
        hand = named.chunk_count(data, pid)
        compiled = pt.count_chunks(prog, data)
        if hand != compiled:
            raise SystemExit(f"{name}: {compiled} chunks compiled against {hand} hand-written")
        fns[f"hand {name}"] = lambda d=data, i=pid: named.chunk_count(d, i)
        fns[f"compiled {name}"] = lambda d=data, p=prog: pt.count_chunks(p, d)
    times = rounds(fns, repeat)
    mb = len(data) / 1e6
    for name in PATTERNS:
        h, c = times[f"hand {name}"], times[f"compiled {name}"]
        ratios = [a / b for a, b in zip(h, c)]
        out.append((name, mb / min(h), mb / min(c), min(h) / min(c), statistics.median(ratios)))
    return out


def presets_against_tokenizers(data: bytes, repeat: int) -> list[tuple[str, float, float]]:
    from tokenizers import Regex, pre_tokenizers

    text = data.decode("utf-8")
    out = []
    for name in P.PRESETS:
        if name in PATTERNS:
            continue
        sp = P.compile_pattern(name)
        steps = [
            pre_tokenizers.Digits(individual_digits=s.behavior == "isolated")
            if s.kind == "digits"
            else pre_tokenizers.Split(Regex(s.regex), behavior=s.behavior, invert=s.invert)
            for s in sp.steps
        ]
        hf = pre_tokenizers.Sequence(steps)
        times = rounds(
            {"mnemo": lambda p=sp.program: pt.count_chunks(p, data), "tokenizers": lambda h=hf: h.pre_tokenize_str(text)},
            repeat,
        )
        mb = len(data) / 1e6
        out.append((name, mb / min(times["mnemo"]), mb / min(times["tokenizers"])))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=5.0, help="MB of each corpus (default 5)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; figures are the best (default 5)")
    parser.add_argument("--corpora", default="english,multilingual,code,chat")
    parser.add_argument("--skip-presets", action="store_true", help="only the named patterns")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f} (1 min)")
    for corpus in args.corpora.split(","):
        data = corpus_bytes(corpus, args.mb)
        print(f"\n{corpus}: {len(data) / 1e6:.1f} MB, best of {args.repeat} rounds of CPU time")
        print(f"  {'pattern':10s} {'hand-written':>13s} {'compiled':>10s} {'ratio best':>11s} {'median':>7s}")
        for name, hand, comp, best, median in named_against_compiled(data, args.repeat):
            print(f"  {name:10s} {hand:8.1f} MB/s {comp:6.1f} MB/s {best:10.2f}x {median:6.2f}x")
        if not args.skip_presets:
            print(f"  {'preset':14s} {'mnemo':>10s} {'tokenizers':>12s}")
            for name, mine, theirs in presets_against_tokenizers(data, max(1, args.repeat // 2)):
                print(f"  {name:14s} {mine:5.1f} MB/s {theirs:7.1f} MB/s")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
