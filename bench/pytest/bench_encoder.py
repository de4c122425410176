"""Encoding speed, side by side in one run: mnemo (one core) against tiktoken and Hugging Face
tokenizers, all three with the same vocabulary, on the start of the English corpus.

    python bench/pytest/bench_encoder.py [--tokenizer tokenizer.bin] [--mb 20] [--repeat 3]

Without --tokenizer the vocabulary is GPT-2's first 32,496 merges (from ../shared/fixtures/cs336)
with GPT-2's pattern and 16 specials: 32,768 ids, the default vocabulary size.  tiktoken's and HF's
tokenizers are built from the SAME merges (mnemo's ids: byte b is id b, merge k is 256 + k), and
the script checks that all three give the same ids before timing them.

Each figure is the best of --repeat runs of encoding every document once (encode_ordinary), in
MB/s of UTF-8 text, measured as process CPU time; ratios are to tiktoken in the same run.  mnemo's
chunk cache is emptied before each of its runs.  As a
pytest-benchmark file (`make bench`) it times a smaller sample of mnemo against tiktoken.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemo import Tokenizer
from mnemo.interop import bytes_to_unicode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from gpt2_merges import PATTERNS, SHARED, english_docs, gpt2_tokenizer, tiktoken_encoding  # noqa: E402


def hf_tokenizer(tok: Tokenizer) -> Any:
    from tokenizers import Regex, decoders, models, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizer

    alphabet = bytes_to_unicode()

    def name(i: int) -> str:
        return "".join(alphabet[b] for b in tok.token_bytes(i))

    vocab = {name(i): i for i in range(256 + len(tok.merges))}
    merges = [(name(a), name(b)) for a, b in tok.merges]
    hf = HFTokenizer(models.BPE(vocab, merges))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PATTERNS[tok.pattern]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    return hf


def best_time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.bin (default: 32,768 ids from GPT-2's merges)")
    parser.add_argument("--mb", type=float, default=20.0, help="MB of English text (default 20)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-hf", action="store_true", help="skip Hugging Face tokenizers (slow)")
    args = parser.parse_args()
    # One core for everyone: HF reads this when it first starts its thread pool (before any use).
    os.environ["RAYON_NUM_THREADS"] = "1"

    tok = Tokenizer.load(args.tokenizer) if args.tokenizer else gpt2_tokenizer()
    docs = english_docs(int(args.mb * 1e6))
    size = sum(len(d.encode("utf-8")) for d in docs)
    print(f"vocabulary: {tok.n_vocab} ids, pattern {tok.pattern}; text: {len(docs)} English documents, {size / 1e6:.1f} MB")

    def run_mnemo() -> object:
        # Start every run with an empty chunk cache: repeating the same text would otherwise
        # find it warm from the previous run, which a real single pass over a corpus does not.
        tok._encoder.clear_cache()
        return [tok.encode_ordinary(d) for d in docs]

    runners: dict[str, Callable[[], object]] = {"mnemo (cold cache)": run_mnemo}
    enc = tiktoken_encoding(tok)
    runners["tiktoken"] = lambda: [enc.encode_ordinary(d) for d in docs]
    hf = None
    if not args.no_hf:
        hf = hf_tokenizer(tok)
        runners["hf tokenizers (1 thread)"] = lambda: [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]

    sample = docs[:200]
    ours = [tok.encode_ordinary(d) for d in sample]
    agree = sum(a == enc.encode_ordinary(d) for a, d in zip(ours, sample))
    print(f"same ids as tiktoken on {agree} of {len(sample)} sample documents")
    if agree < len(sample):
        print("WARNING: mnemo and tiktoken disagree: the speed figures below compare different work")
    if hf is not None:
        agree = sum(a == hf.encode(d, add_special_tokens=False).ids for a, d in zip(ours, sample))
        print(f"same ids as HF tokenizers on {agree} of {len(sample)} sample documents")

    # Interleaved (one run of each, repeated) so that a change in the machine's load hits all alike.
    times = {name: float("inf") for name in runners}
    for _ in range(args.repeat):
        for name, fn in runners.items():
            times[name] = min(times[name], best_time(fn, 1))
    base = size / times["tiktoken"] / 1e6
    for name, t in times.items():
        rate = size / t / 1e6
        print(f"{name:28s} {rate:7.1f} MB/s   {rate / base:5.2f}x tiktoken")


# ---- pytest-benchmark (make bench): a small sample, mnemo and tiktoken in one group ----


@pytest.fixture(scope="module")
def setup() -> tuple[Tokenizer, Any, list[str]]:
    if not (SHARED / "corpus" / "english.jsonl.xz").is_file() or not (SHARED / "fixtures" / "cs336").is_dir():
        pytest.skip("needs ../shared/corpus and ../shared/fixtures")
    pytest.importorskip("mnemo.pretokenize")
    tok = gpt2_tokenizer()
    return tok, tiktoken_encoding(tok), english_docs(2_000_000)


@pytest.mark.benchmark(group="encode 2 MB English, 32,768 ids")
def test_bench_mnemo(benchmark: Any, setup: tuple[Tokenizer, Any, list[str]]) -> None:
    tok, _, docs = setup
    benchmark(lambda: [tok.encode_ordinary(d) for d in docs])


@pytest.mark.benchmark(group="encode 2 MB English, 32,768 ids")
def test_bench_tiktoken(benchmark: Any, setup: tuple[Tokenizer, Any, list[str]]) -> None:
    _, enc, docs = setup
    benchmark(lambda: [enc.encode_ordinary(d) for d in docs])


if __name__ == "__main__":
    main()
