"""A split regex outside the family mnemo compiles (it runs through the `regex` module) against
tiktoken running the same regex, with the same ranks (cl100k_base's), one document at a time,
on one core.  Issue 26 asks the fallback to be at least as fast as tiktoken on the same pattern.

    python bench/compare/regex_fallback_vs_tiktoken.py
    python bench/compare/regex_fallback_vs_tiktoken.py --mb 2 --rounds 5 --corpus code

The regexes (each one mnemo's family refuses, each one tiktoken's engine and `regex` read
alike): cl100k's regex with word boundaries (`\\b`), and one with a lookbehind.  For scale, the
same ranks with cl100k's own regex (compiled in mnemo's scanner) are timed beside them.  The
ids are compared on every document first; a pattern whose ids differ is reported, not timed.
Both sides run on tiktoken's Unicode tables (16.0): mnemo's compiled pattern on them, and the
`regex` module, whose own tables are 18.0, on the regex as it is for a text holding none of the
code points where the tables differ, rewritten for the others (mnemo/regex_tables.py; none in
these corpora, so the timed path is the regex as written plus mnemo's check of each non-ASCII
document).  --unicode regex runs the fallback on `regex`'s own tables instead (no check).  Time:
process CPU time of a pass, best of --rounds, the sides alternated; MB/s are UTF-8 bytes per
CPU second.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from corpus import SHARED, documents  # noqa: E402
from timing import best_alternated  # noqa: E402

CL100K = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
PATTERNS = {
    "cl100k (compiled)": CL100K,
    "cl100k with \\b": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+\b|\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "lookbehind": r"""(?<=\s)\p{L}+|'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
}


def ranks() -> dict[bytes, int]:
    import base64

    path = SHARED / "fixtures" / "tiktoken" / "cl100k_base.tiktoken.gz"
    out: dict[bytes, int] = {}
    for line in gzip.decompress(path.read_bytes()).splitlines():
        token, rank = line.split()
        out[base64.b64decode(token)] = int(rank)
    return out



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpus", action="append", choices=("english", "multilingual", "code"))
    parser.add_argument("--unicode", default="tiktoken", choices=("tiktoken", "regex"), help="the tables of the fallback")
    args = parser.parse_args()
    if not (SHARED / "corpus").is_dir():
        sys.exit(f"{SHARED / 'corpus'} is absent: this bench needs ../shared/corpus beside the checkout")
    import regex
    import tiktoken

    from mnemo.formats.tiktoken import from_mergeable_ranks

    table = ranks()
    print(f"tiktoken {tiktoken.__version__}; cl100k_base's ranks; {args.mb:g} MB per corpus, best of {args.rounds}, "
          f"one document per call, one core; the fallback on {args.unicode}'s tables; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'pattern':<20} {'corpus':<13} {'engine':<8} {'mnemo MB/s':>10} {'tiktoken MB/s':>14} {'mnemo/tiktoken':>15} "
          f"{'findall MB/s':>13} {'findall/tiktoken':>17}")  # fmt: skip
    for label, pattern in PATTERNS.items():
        ours = from_mergeable_ranks(table, pattern, {}, unicode="tiktoken" if "compiled" in label else args.unicode)
        theirs = tiktoken.Encoding(label, pat_str=pattern, mergeable_ranks=table, special_tokens={})
        # the split alone, as the fallback runs it on these corpora (none holds a code point
        # where the tables differ, so the regex as written): a bound on the fallback's speed
        findall = regex.compile(pattern).findall
        engine = ours.split_pattern.engine
        for corpus in args.corpus or ["english", "multilingual", "code"]:
            docs = documents(args.mb, corpus)
            size = sum(len(d.encode("utf-8")) for d in docs) / 1e6
            bad = next((k for k, d in enumerate(docs) if ours.encode_ordinary(d) != theirs.encode_ordinary(d)), None)
            if bad is not None:
                print(f"{label:<20} {corpus:<13} {engine:<8} ids differ from tiktoken's on document {bad}: not timed")
                continue
            best = best_alternated([ours.encode_ordinary, theirs.encode_ordinary, findall], docs, args.rounds)
            print(f"{label:<20} {corpus:<13} {engine:<8} {size / best[0]:>10.2f} {size / best[1]:>14.2f} "
                  f"{best[1] / best[0]:>14.2f}x {size / best[2]:>13.2f} {best[1] / best[2]:>16.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
