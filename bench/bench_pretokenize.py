"""Pre-tokenizer speed: split(), the boundary-only chunk_end loop, and regex.findall, side by side.

Two ways to run it:

  python bench/bench_pretokenize.py [--mb 20] [--repeat 5] [--linear-mb 10] [--clock wall|cpu]
      Side by side on the first --mb MB of ../shared/corpus/english.jsonl.xz, same text, same
      run: MB/s (best of --repeat) of
        chunk loop   `pos = scan(program, data, pos, end)` until the end (chunk_count)
        split bytes  split(data) -> list[bytes]
        split str    split(text) -> list[str]
        regex        regex.findall(pattern, text)
      for each pattern, and the chunk loop's speed-up over regex.findall.  Then the linear-time
      table: the chunk loop on runs of one character of each class at 1/10 and full --linear-mb.

  pytest bench/bench_pretokenize.py        (pytest-benchmark; the same three in one group)

All figures are single-threaded.  The chunk loop runs inside the compiled module (a native
call per chunk), as the counter and encoder run it.
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import regex

from mnemo import patterns, pretokenize
from mnemo.constants import PATTERNS

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "english.jsonl.xz"

# One character of each class the issue names; each is repeated to the run length.
RUNS: dict[str, str] = {
    "letters": "a",
    "digits": "7",
    "spaces": " ",
    "newlines": "\n",
    "crlf": "\r\n",
    "punctuation": ".",
    "apostrophes": "'",
    "emoji (4 bytes)": "\U0001f600",
    "combining mark": "\u0301",
    "ideographic space": "\u3000",
    "space+letter": " a",
    "apostrophe+s": "'s",
}


def english_text(max_bytes: int, corpus: Path = CORPUS) -> str:
    """Documents from the start of the English corpus, joined by newlines, up to max_bytes."""
    if not corpus.is_file():
        raise SystemExit(f"the corpus file {corpus} is absent (it lives in ../shared/corpus beside the repo)")
    parts: list[str] = []
    total = 0
    with lzma.open(corpus, "rt", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            parts.append(text)
            total += len(text.encode("utf-8")) + 1
            if total >= max_bytes:
                break
    return "\n".join(parts)


CLOCK: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = CLOCK["wall"]


def best_seconds(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = _clock()
        fn()
        best = min(best, _clock() - t)
    return best


def side_by_side(mb: float, repeat: int, corpus: Path) -> None:
    """Each figure is the best of `repeat` runs.  The runs go round-robin over the patterns and
    forms (round 1: every pattern and form once, then round 2, ...), so that a slow spell of a
    shared host falls on all of them alike instead of on whichever ran during it."""
    text = english_text(int(mb * 1e6), corpus)
    data = text.encode("utf-8")
    size = len(data) / 1e6
    print(f"English corpus, first {size:.1f} MB ({len(text):,} characters); best of {repeat}, round-robin; MB/s of UTF-8 bytes")
    names = PATTERNS
    compiled = {name: regex.compile(pretokenize.PATTERN_REGEX[name]) for name in names}
    counts = {name: patterns.chunk_count(data, pretokenize.pattern_id(name)) for name in names}
    forms: dict[str, Callable[[str], Any]] = {
        "loop": lambda name: patterns.chunk_count(data, pretokenize.pattern_id(name)),
        "bytes": lambda name: patterns.split(data, name),
        "str": lambda name: patterns.split(text, name),
        "regex": lambda name: compiled[name].findall(text),
    }
    times: dict[tuple[str, str], list[float]] = {(n, f): [] for n in names for f in forms}
    for r in range(repeat):
        for name in names:
            for form, fn in forms.items():
                if form == "regex" and r >= max(1, repeat // 2):
                    continue  # regex is slow: half as many runs
                t = _clock()
                fn(name)
                times[name, form].append(_clock() - t)
    print(f"{'pattern':<10}{'chunks':>12}{'chunk loop':>12}{'(median)':>10}{'split bytes':>13}{'split str':>11}{'regex':>8}{'loop/regex':>12}")
    for name in names:
        best = {form: min(times[name, form]) for form in forms}
        median = statistics.median(times[name, "loop"])
        print(
            f"{name:<10}{counts[name]:>12,}{size / best['loop']:>12.1f}{size / median:>10.1f}{size / best['bytes']:>13.1f}"
            f"{size / best['str']:>11.1f}{size / best['regex']:>8.1f}{best['regex'] / best['loop']:>11.1f}x"
        )


def linear(mb: float, repeat: int) -> None:
    big = int(mb * 1e6)
    print(f"\nLinear time: chunk loop (mnemonic) on runs of one character, {big // 10:,} vs {big:,} bytes")
    print(f"{'run of':<20}{'small MB/s':>12}{'large MB/s':>12}{'time ratio':>12}  (10 = linear)")
    pid = pretokenize.PATTERN_MNEMONIC
    for label, unit in RUNS.items():
        u = unit.encode("utf-8")
        small = u * (big // 10 // len(u))
        large = u * (big // len(u))
        t_small = best_seconds(lambda: patterns.chunk_count(small, pid), repeat)
        t_large = best_seconds(lambda: patterns.chunk_count(large, pid), max(1, repeat // 2))
        print(
            f"{label:<20}{len(small) / 1e6 / t_small:>12.1f}{len(large) / 1e6 / t_large:>12.1f}"
            f"{t_large / t_small:>12.1f}"
        )


# ---- pytest-benchmark ----------------------------------------------------------------------

_TEXT_CACHE: dict[int, str] = {}


def _bench_text() -> str:
    if 0 not in _TEXT_CACHE:
        import pytest

        if not CORPUS.is_file():
            pytest.skip(f"the corpus file {CORPUS} is absent")
        _TEXT_CACHE[0] = english_text(5_000_000)
    return _TEXT_CACHE[0]


def test_chunk_loop(benchmark: Any) -> None:
    benchmark.group = "pretokenize english 5 MB"
    data = _bench_text().encode("utf-8")
    benchmark(patterns.chunk_count, data, pretokenize.PATTERN_MNEMONIC)


def test_split_bytes(benchmark: Any) -> None:
    benchmark.group = "pretokenize english 5 MB"
    data = _bench_text().encode("utf-8")
    benchmark(patterns.split, data, "mnemonic")


def test_split_str(benchmark: Any) -> None:
    benchmark.group = "pretokenize english 5 MB"
    benchmark(patterns.split, _bench_text(), "mnemonic")


def test_regex_findall(benchmark: Any) -> None:
    benchmark.group = "pretokenize english 5 MB"
    compiled = regex.compile(pretokenize.PATTERN_REGEX["mnemonic"])
    benchmark.pedantic(compiled.findall, args=(_bench_text(),), rounds=3)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=20.0, help="MB of English text (default 20)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is shown (default 5)")
    parser.add_argument("--linear-mb", type=float, default=10.0, help="size of the large runs (default 10)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=f"english.jsonl.xz (default {CORPUS})")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCK),
        default="wall",
        help="wall time (default), or this process's CPU time (steadier on a shared machine)",
    )
    parser.add_argument("--skip-linear", action="store_true", help="only the side-by-side table")
    args = parser.parse_args()
    global _clock
    _clock = CLOCK[args.clock]
    print(f"clock: {args.clock}; load average at start: {_loadavg()}")
    side_by_side(args.mb, args.repeat, args.corpus)
    if not args.skip_linear:
        linear(args.linear_mb, args.repeat)


if __name__ == "__main__":
    main()
