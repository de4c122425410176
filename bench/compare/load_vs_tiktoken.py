"""Loading a vocabulary, side by side with tiktoken (issue 27, goal 4): each form mnemo loads,
beside tiktoken building its Encoding from the plain rank file, for cl100k_base, o200k_base and
a Llama-3-like rank file.

    python bench/compare/load_vs_tiktoken.py [--rounds 5] [--names cl100k_base o200k_base llama3_like]

`llama3_like` is built here from the two fixtures as Meta's Llama 3 tokenizer.model is made:
cl100k_base's ranks, then o200k_base's tokens cl100k lacks, in o200k's order, up to 128,000
ranks, and 256 special tokens after them; Llama 3's pattern.  It is a ranked vocabulary (tokens
no merge makes, parts ranked after their token: docs/formats.md, "Rank semantics").

Forms, each timed in this process, the forms taking turns within every round so that a change in
the machine's load hits all alike; the best round counts, wall and CPU time:

- tiktoken: `tiktoken.load.load_tiktoken_bpe(plain file)` then `tiktoken.Encoding(...)` with
  tiktoken's own pattern and special tokens (its definition of the encoding, offline);
- mnemo load: `Tokenizer.load` of a tokenizer.bin this mnemo wrote (the encoder's tables trusted,
  docs/formats.md "Trust");
- mnemo load, verify: `Tokenizer.load(..., verify=True)`: what a file another program wrote costs;
- mnemo pickle.loads: a pickled Tokenizer (every `datasets.map(num_proc=N)` worker);
- mnemo load_tiktoken: `mnemo.load_tiktoken(plain file, preset)`, the same file tiktoken reads;
- mnemo.load tokenizer.json: the same vocabulary as a tokenizer.json (cl100k_base and o200k_base
  written by `save_hf`; llama3_like converted by transformers' `TikTokenConverter`, Llama 3's
  layout; bench/compare/load_vs_reference.py times these beside `tokenizers`).

Ratios are mnemo's time over tiktoken's: of the best times, and the median of the rounds' own
ratios (below 1: mnemo is faster).  The
fixtures are ../shared/fixtures/tiktoken/*.tiktoken.gz, decompressed to a temporary folder
first; before timing, the script checks that mnemo and tiktoken give the same ids on a sample.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mnemo
from mnemo import Tokenizer
from mnemo.interop import save_hf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from timing import race_calls  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "tiktoken"
SAMPLE = "Hello world! It's 2026: naïve café, 数据 ünïcödé, <tags> and    spaces\n\tdone 12345."


#: Llama 3's special tokens by id: 128,000 on (their names do not change the timing)
LLAMA3_SPECIALS = {f"<|reserved_special_token_{i}|>": 128_000 + i for i in range(256)}


def write_llama3_like(plain: Path) -> None:
    """The rank file of `llama3_like` (module docstring)."""
    from mnemo.ranks import parse_rank_lines

    tokens = parse_rank_lines(gzip.decompress((FIXTURES / "cl100k_base.tiktoken.gz").read_bytes()))
    theirs = parse_rank_lines(gzip.decompress((FIXTURES / "o200k_base.tiktoken.gz").read_bytes()))
    assert tokens is not None and theirs is not None
    known = set(tokens)
    tokens += [raw for raw in theirs if raw not in known][: 128_000 - len(tokens)]
    plain.write_bytes(b"".join(base64.b64encode(raw) + b" %d\n" % r for r, raw in enumerate(tokens)))


def tiktoken_builder(name: str, plain: Path) -> Callable[[], Any]:
    """tiktoken's own definition of `name` (pattern, special tokens), its ranks read from `plain`."""
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    from tiktoken.load import load_tiktoken_bpe

    if name == "llama3_like":
        from mnemo.patterns import LLAMA3

        return lambda: tiktoken.Encoding(
            name, pat_str=LLAMA3, mergeable_ranks=load_tiktoken_bpe(str(plain)), special_tokens=LLAMA3_SPECIALS
        )

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: {}  # the definition without its download
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return lambda: tiktoken.Encoding(
        name, pat_str=spec["pat_str"], mergeable_ranks=load_tiktoken_bpe(str(plain)), special_tokens=spec["special_tokens"]
    )


def plain_loader(name: str, plain: Path) -> Callable[[], Tokenizer]:
    """mnemo.load_tiktoken of the same file tiktoken reads: by preset, or Llama 3's pattern and specials."""
    if name == "llama3_like":
        return lambda: mnemo.load_tiktoken(plain, "llama3", special_tokens=LLAMA3_SPECIALS)
    return lambda: mnemo.load_tiktoken(plain, name)


def write_tokenizer_json(name: str, tok: Tokenizer, plain: Path, path: Path) -> None:
    """The vocabulary as a tokenizer.json: save_hf's, or Llama 3's layout for llama3_like."""
    if name == "llama3_like":
        from transformers.convert_slow_tokenizer import TikTokenConverter

        TikTokenConverter(vocab_file=str(plain), extra_special_tokens=list(LLAMA3_SPECIALS)).converted().save(str(path))
    else:
        save_hf(tok, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the best counts (default 5)")
    parser.add_argument("--names", nargs="+", default=["cl100k_base", "o200k_base", "llama3_like"])
    args = parser.parse_args()
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; best of {args.rounds} rounds, forms alternated")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for name in args.names:
            plain = tmp / f"{name}.tiktoken"
            if name == "llama3_like":
                write_llama3_like(plain)
            else:
                plain.write_bytes(gzip.decompress((FIXTURES / f"{name}.tiktoken.gz").read_bytes()))
            load_plain = plain_loader(name, plain)
            build_tiktoken = tiktoken_builder(name, plain)
            tok = load_plain()
            binary = tmp / f"{name}.bin"
            tok.save(binary)
            pickled = pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL)
            reference = build_tiktoken()
            as_json = tmp / f"{name}.json"
            write_tokenizer_json(name, tok, plain, as_json)
            for form in (tok, Tokenizer.load(binary), pickle.loads(pickled), mnemo.load(as_json)):
                assert form.encode(SAMPLE) == reference.encode(SAMPLE), "mnemo and tiktoken disagree"
            forms: dict[str, Callable[[], object]] = {
                "tiktoken": build_tiktoken,
                "mnemo load": lambda: Tokenizer.load(binary),
                "mnemo load, verify": lambda: Tokenizer.load(binary, verify=True),
                "mnemo pickle.loads": lambda: pickle.loads(pickled),
                "mnemo load_tiktoken": load_plain,
                "mnemo.load tokenizer.json": lambda: mnemo.load(as_json),
            }
            print(f"\n{name}: {tok.n_vocab:,} ids{' (ranked)' if tok.ranked else ''}, tokenizer.bin {binary.stat().st_size:,} bytes, pickle {len(pickled):,} bytes")
            race_calls(forms, args.rounds)
    print(f"\nload average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
