"""Tokenizer.decode of a git revision against the installed one, in ONE process, alternated call
by call (issue 28 item 6: the out-of-vocabulary check must not slow plain decoding down).

    .venv/bin/python bench/compare/decode_vs_other_build.py [--rev binfile] [--mb 2] [--rounds 15] [--chunk 0] [--stream]

The old `Tokenizer` class is read from `git show REV:mnemo/tokenizer.py` and its decode is
called, unbound, on the installed tokenizer (same tables); the ids are GPT-2's (32,768 ids) of
the English corpus, one call per document (`--chunk N`: per N ids instead, the shape of a model
that decodes as it generates; `--stream`: StreamDecoder.step per id, the old class from
mnemo/decoding.py).  Every round times each side over every call (process CPU time,
turns swapped every round) and checks they give the same text.  Prints each side's median and
best ms per round and the ratio new/old of the medians, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers

from gpt2_merges import english_docs, gpt2_tokenizer  # noqa: E402


def old_class(rev: str, module_name: str, cls_name: str) -> Any:
    """Class `cls_name` of mnemo/`module_name`.py as it is at git revision `rev`."""
    root = Path(__file__).resolve().parents[2]
    source = subprocess.run(
        ["git", "show", f"{rev}:mnemo/{module_name}.py"], cwd=root, check=True, capture_output=True, text=True
    ).stdout
    name = f"mnemo_{module_name}_old"
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, f"{rev}:mnemo/{module_name}.py", "exec"), module.__dict__)
    return module.__dict__[cls_name]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="binfile")
    ap.add_argument("--mb", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--chunk", type=int, default=0)
    ap.add_argument("--stream", action="store_true")
    args = ap.parse_args()
    tok = gpt2_tokenizer()
    old_decode = old_class(args.rev, "tokenizer", "Tokenizer").decode
    docs = english_docs(int(args.mb * 1e6))
    if args.chunk:
        flat = [i for d in docs for i in tok.encode_ordinary(d)]
        calls = [flat[i : i + args.chunk] for i in range(0, len(flat), args.chunk)]
    else:
        calls = [tok.encode_ordinary(d) for d in docs]
    n_ids = sum(map(len, calls))
    sides: dict[str, Callable[[list[int]], str]] = {"old": lambda ids: old_decode(tok, ids), "new": tok.decode}
    if args.stream:
        old_stream = old_class(args.rev, "decoding", "StreamDecoder")

        def stepped(decoder: Any) -> Callable[[list[int]], str]:
            step = decoder.step
            return lambda ids: "".join([step(t) for t in ids])

        sides = {"old": stepped(old_stream(tok)), "new": stepped(tok.stream_decoder())}
    assert all(sides["old"](c) == sides["new"](c) for c in calls)
    times: dict[str, list[float]] = {name: [] for name in sides}
    order = list(sides)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            fn = sides[name]
            t0 = time.process_time()
            for c in calls:
                fn(c)
            times[name].append(time.process_time() - t0)
    print(f"n_vocab {tok.n_vocab}, {len(calls)} calls, {n_ids} ids, {args.rounds} rounds, load average {os.getloadavg()}")
    for name in order:
        med = statistics.median(times[name])
        print(f"{name}: median {med * 1e3:.1f} ms, best {min(times[name]) * 1e3:.1f} ms, {n_ids / med / 1e6:.1f} M ids/s")
    print(f"new/old (medians): {statistics.median(times['new']) / statistics.median(times['old']):.3f}")


if __name__ == "__main__":
    main()
