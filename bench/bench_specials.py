"""Special-token matching: the compiled trie (mnemo/special_match.py) with 16 names and with 57,016,
on 1 MB of "<|" (every position starts a partial match of every name) and on 1 MB of English
with a few specials in it; and the `re` alternation the Tokenizer used, for scale.

    python bench/bench_specials.py [--rounds 5]

Goal (issue 27 goal 5): 1 MB with 57k specials takes at most 2x the time it takes with 16.
CPU time, best of --rounds, the two name sets alternated in each round.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mnemo.special_match import SpecialMatcher

sys.path.insert(0, str(Path(__file__).resolve().parent))


def names(n: int) -> list[bytes]:
    base = [b"<|endoftext|>", b"<|fim_prefix|>", b"<|fim_middle|>", b"<|fim_suffix|>", b"<|endofprompt|>"]
    return base + [f"<|reserved_special_token_{k}|>".encode() for k in range(n - len(base))]


def alternation(ns: list[bytes]) -> re.Pattern[bytes]:
    return re.compile(b"|".join(re.escape(b) for b in sorted(ns, key=lambda b: (-len(b), b))))


def best_cpu(fn: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    print(f"bench_specials: CPU time, best of {args.rounds}; load average {os.getloadavg()[0]:.2f}")
    few, many = names(16), names(57_016)
    t = time.process_time()
    m_many = SpecialMatcher(many)
    build = time.process_time() - t
    m_few = SpecialMatcher(few)
    print(f"building the matcher of 57,016 names: {build:.3f} s")
    try:
        from _corpus import documents

        english = "".join(documents(1.0, "english")).encode()[:1_000_000]
    except OSError:
        english = b"the quick brown fox jumps over the lazy dog. " * 22_223
    english = english[:500_000] + b"<|endoftext|>" + english[500_000:] + b"<|reserved_special_token_1234|>"
    texts = {"1 MB of '<|'": b"<|" * 500_000, "1 MB of English + 2 specials": english}
    for label, data in texts.items():
        times = {16: float("inf"), 57_016: float("inf")}
        for _ in range(args.rounds):
            for n, m in ((16, m_few), (57_016, m_many)):
                times[n] = min(times[n], best_cpu(lambda m=m: m.find_all(data), 1))
        ratio = times[57_016] / times[16]
        print(f"{label}: 16 names {times[16] * 1e3:.1f} ms, 57,016 names {times[57_016] * 1e3:.1f} ms: "
              f"{ratio:.2f}x ({'met' if ratio <= 2 else 'NOT met'}: <= 2x)")
        rx_few = best_cpu(lambda: list(alternation(few).finditer(data)), 1)
        cut = data[:20_000]
        rx_many = best_cpu(lambda: list(alternation(many).finditer(cut)), 1) * len(data) / len(cut)
        print(f"  the re alternation: 16 names {rx_few * 1e3:.1f} ms, 57,016 names ~{rx_many:.1f} s "
              f"(timed on the first 20 KB, scaled to {len(data) / 1e6:.1f} MB)")
    tokenizer_level(few, many, args.rounds)


def tokenizer_level(few: list[bytes], many: list[bytes], rounds: int) -> None:
    """Tokenizer.encode(text, allowed_special="all") on 1 MB of "<|" ending in a special, a
    vocabulary of the 256 bytes (no merges) plus 16 or 57,016 specials."""
    from mnemo import Tokenizer

    data = "<|" * 500_000 + "<|endoftext|>"
    toks = {n: Tokenizer([], special_tokens=[b.decode() for b in ns]) for n, ns in ((16, few), (57_016, many))}
    times = {16: float("inf"), 57_016: float("inf")}
    for _ in range(rounds):
        for n, tok in toks.items():
            times[n] = min(times[n], best_cpu(lambda tok=tok: tok.encode(data, allowed_special="all"), 1))
    print(f"Tokenizer.encode, 1 MB of '<|' + <|endoftext|>, allowed_special='all': 16 specials "
          f"{times[16] * 1e3:.1f} ms, 57,016 specials {times[57_016] * 1e3:.1f} ms: {times[57_016] / times[16]:.2f}x")


if __name__ == "__main__":
    main()
