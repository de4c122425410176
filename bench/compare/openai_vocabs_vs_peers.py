"""Encoding speed with OpenAI's vocabularies, cl100k_base and o200k_base, side by side in one run:
mnemo (its presets), tiktoken, and bpe-openai (the Python binding of GitHub's linear-time BPE,
`pip install bpe-openai`, which ships both vocabularies), on the start of one corpus.

    python bench/openai_vocabs_vs_peers.py [--mb 20] [--corpus english] [--repeat 1]

mnemo reads the fixture files (../shared/fixtures/tiktoken, gzip-compressed); tiktoken gets the
same files through its own definition of each encoding (its loader pointed at the decompressed
fixture: no network, tiktoken checks the hash); bpe-openai uses the copy it ships, which is the
same file (the fixtures were taken from it).  The script checks that they all give the same ids on
a sample before timing.  One core: mnemo encodes in the calling process, tiktoken's and
bpe-openai's single-text encode run on the calling thread.  Each figure is the best of --repeat
passes (default one) of encode_ordinary over every document, in MB/s of UTF-8 text by process
CPU time; the tools take turns within each pass so that a change in the machine's load hits all
alike; ratios are to tiktoken in the same run.  mnemo's chunk cache is emptied before its runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mnemo

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
NAMES = ("cl100k_base", "o200k_base")


# bpe-openai's wrapper refuses a text of 1,000,000 characters or more, or of more than 200,000
# tokens.  Longer documents are cut, for every tool alike, into pieces of about PIECE characters
# where every pattern ends a chunk (the pattern property "cut_before_space_letter"), so all three do the same work.
PIECE = 100_000
SURE_CUT = re.compile(r"(?<=[!-~]) [A-Za-z]")


def pieces(text: str) -> list[str]:
    out: list[str] = []
    while len(text) > PIECE:
        m = SURE_CUT.search(text, PIECE, 2 * PIECE)
        if m is None:
            break
        out.append(text[: m.start()])
        text = text[m.start() :]
    return [*out, text]


def corpus_docs(name: str, max_bytes: int) -> list[str]:
    docs: list[str] = []
    total = 0
    with lzma.open(SHARED / "corpus" / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            texts = [m["content"] for m in record["messages"]] if "messages" in record else [record["text"]]
            for text in texts:
                docs += pieces(text)
                total += len(text.encode("utf-8"))
            if total >= max_bytes:
                break
    return docs


def tiktoken_encoding(name: str, path: Path, tmp: Path) -> Any:
    """tiktoken's own definition of `name`, its ranks read from the fixture (offline)."""
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    from tiktoken.load import load_tiktoken_bpe

    plain = tmp / f"{name}.tiktoken"
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tmp / "cache")
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda url, expected_hash=None: load_tiktoken_bpe(str(plain), expected_hash)
    try:
        return tiktoken.Encoding(**getattr(openai_public, name)())
    finally:
        openai_public.load_tiktoken_bpe = original


def bpe_openai_encoding(name: str) -> Any:
    try:
        import bpe_openai
    except ImportError:
        print("bpe-openai is not installed (pip install bpe-openai): its column is left out")
        return None
    return bpe_openai.get_encoding(name)


def cpu_seconds(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=20.0, help="MB of text (default 20)")
    parser.add_argument("--corpus", default="english", choices=["english", "multilingual", "code", "chat"])
    parser.add_argument("--repeat", type=int, default=1, help="passes; the best counts (default 1)")
    args = parser.parse_args()

    docs = corpus_docs(args.corpus, int(args.mb * 1e6))
    size = sum(len(d.encode("utf-8")) for d in docs)
    print(f"text: {args.corpus}, {size / 1e6:.1f} MB in {len(docs)} pieces (documents cut at {PIECE:,} characters); "
          f"one core, CPU time, best of {args.repeat}")
    with tempfile.TemporaryDirectory() as folder:
        for name in NAMES:
            path = SHARED / "fixtures" / "tiktoken" / f"{name}.tiktoken.gz"
            t0 = time.perf_counter()
            tok = mnemo.load_tiktoken(path, name)
            load_s = time.perf_counter() - t0
            enc = tiktoken_encoding(name, path, Path(folder))
            bpe = bpe_openai_encoding(name)

            def run_mnemo(tok: mnemo.Tokenizer = tok) -> object:
                tok._encoder.clear_cache()  # a single pass over a corpus starts cold
                return [tok.encode_ordinary(d) for d in docs]

            runners: dict[str, Callable[[], object]] = {
                "mnemo (cold cache)": run_mnemo,
                "tiktoken": lambda enc=enc: [enc.encode_ordinary(d) for d in docs],
            }
            if bpe is not None:
                runners["bpe-openai"] = lambda bpe=bpe: [bpe.encode_ordinary(d) for d in docs]

            sample = docs[:300]
            theirs = [enc.encode_ordinary(d) for d in sample]
            print(f"\n{name}: {tok.n_tokens} tokens, max id {tok.max_token_value}; mnemo loads the .gz in {load_s:.1f} s")
            for label, other in (("mnemo", tok), ("bpe-openai", bpe)):
                if other is None:
                    continue
                agree = sum(other.encode_ordinary(d) == t for d, t in zip(sample, theirs))
                note = "" if agree == len(sample) else "  WARNING: the figures below compare different work"
                print(f"  {label} gives tiktoken's ids on {agree} of {len(sample)} sample documents{note}")

            times = {label: float("inf") for label in runners}
            for _ in range(args.repeat):
                for label, fn in runners.items():
                    times[label] = min(times[label], cpu_seconds(fn))
            base = size / times["tiktoken"] / 1e6
            for label, t in times.items():
                rate = size / t / 1e6
                print(f"  {label:20s} {rate:7.1f} MB/s   {rate / base:5.2f}x tiktoken")


if __name__ == "__main__":
    main()
