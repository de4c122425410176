"""The packed encode paths side by side with tiktoken, in one run, one core (issue 17, goal 2).

    .venv/bin/python bench/compare/packed_vs_tiktoken.py [--mb 5] [--repeat 3] [--vocab 32k|cl100k_base|o200k_base]

Paths timed, each over the same English documents, in MB/s of UTF-8 text by process CPU time:
- mnemo encode_to_numpy, one call per document;
- mnemo encode_batch_to_numpy(docs, workers=1): the flat form (ids, offsets), one core;
- mnemo encode_documents in blocks of 256 documents: what the .tok writer calls per block
  (encode_text.encode_documents_packed; bos/eos off, as encode_ordinary);
- mnemo encode_ordinary, one call per document (the list path, for reference);
- tiktoken encode_to_numpy and encode_ordinary, one call per document.
The vocabulary: 32k = GPT-2's first 32,496 merges with GPT-2's pattern (bench/lib/gpt2_merges.py's), or
OpenAI's cl100k_base / o200k_base from ../shared/fixtures/tiktoken.  Every path is checked against
tiktoken's ids first.  mnemo's chunk cache is emptied before each of its runs (a single pass over a
corpus starts cold).  Ratios are to tiktoken's encode_to_numpy in the same run; runs take turns,
the best of --repeat counts.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers

from gpt2_merges import english_docs, gpt2_tokenizer, tiktoken_encoding  # noqa: E402
from openai_vocabs_vs_peers import SHARED, pieces  # noqa: E402
from openai_vocabs_vs_peers import tiktoken_encoding as openai_encoding  # noqa: E402

import mnemo  # noqa: E402

BLOCK = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=5.0, help="MB of English text (default 5)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--vocab", default="32k", choices=["32k", "cl100k_base", "o200k_base"])
    args = parser.parse_args()

    docs = [p for d in english_docs(int(args.mb * 1e6)) for p in pieces(d)]
    bdocs = [d.encode("utf-8") for d in docs]
    size = sum(map(len, bdocs))
    with tempfile.TemporaryDirectory() as folder:
        if args.vocab == "32k":
            tok = gpt2_tokenizer()
            enc: Any = tiktoken_encoding(tok)
        else:
            path = SHARED / "fixtures" / "tiktoken" / f"{args.vocab}.tiktoken.gz"
            tok = mnemo.load_tiktoken(path, args.vocab)
            enc = openai_encoding(args.vocab, path, Path(folder))
    print(f"vocabulary {args.vocab}: {tok.n_vocab} ids; {len(docs)} English documents, {size / 1e6:.1f} MB; "
          f"load average {os.getloadavg()[0]:.1f}; one core, CPU time, best of {args.repeat}")

    def cold(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            tok._encoder.clear_cache()
            return fn()

        return run

    def to_numpy() -> object:
        return [tok.encode_to_numpy(d) for d in docs]

    def batch_flat() -> object:
        return tok.encode_batch_to_numpy(docs, workers=1)

    def tok_writer() -> object:
        return [tok.encode_documents(bdocs[i : i + BLOCK]) for i in range(0, len(bdocs), BLOCK)]

    def lists() -> object:
        return [tok.encode_ordinary(d) for d in docs]

    runners: dict[str, Callable[[], object]] = {
        "mnemo encode_to_numpy": cold(to_numpy),
        "mnemo encode_batch_to_numpy": cold(batch_flat),
        "mnemo .tok writer blocks": cold(tok_writer),
        "mnemo encode_ordinary": cold(lists),
        "tiktoken encode_to_numpy": lambda: [enc.encode_to_numpy(d) for d in docs],
        "tiktoken encode_ordinary": lambda: [enc.encode_ordinary(d) for d in docs],
    }

    expected = [enc.encode_ordinary(d) for d in docs[:200]]
    got_numpy = [tok.encode_to_numpy(d).tolist() for d in docs[:200]]
    flat, offsets = tok.encode_batch_to_numpy(docs[:200], workers=1)
    got_flat = [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    written = tok.encode_documents(bdocs[:200])
    assert got_numpy == expected and got_flat == expected, "mnemo and tiktoken disagree"
    assert written.tolist() == [i for ids in expected for i in ids]
    assert np.array_equal(enc.encode_to_numpy(docs[0]), np.asarray(expected[0]))
    print("same ids as tiktoken on 200 of 200 sample documents, on every path")

    times = {name: float("inf") for name in runners}
    for _ in range(args.repeat):
        for name, fn in runners.items():
            t0 = time.process_time()
            fn()
            times[name] = min(times[name], time.process_time() - t0)
    base = size / times["tiktoken encode_to_numpy"] / 1e6
    for name, t in times.items():
        rate = size / t / 1e6
        print(f"  {name:30s} {rate:7.1f} MB/s   {rate / base:5.2f}x tiktoken encode_to_numpy")


if __name__ == "__main__":
    main()
