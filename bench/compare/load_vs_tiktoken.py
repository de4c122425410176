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
ratios (below 1: mnemo is faster).

`--fresh` times each form as the first call in a new process (its imports done before the
clock starts), one process per form and round, the forms in turn: what a `datasets.map(num_proc=N)`
worker, a DataLoader worker or a short CLI call pays.  Without it, every round runs in this one
process, where what a load keeps for the next one (mnemo's compiled split pattern, memory the
allocator holds) is already there after the first round, while tiktoken builds its regex in every
Encoding.  The
fixtures are ../shared/fixtures/tiktoken/*.tiktoken.gz, decompressed to a temporary folder
first; before timing, the script checks that mnemo and tiktoken give the same ids on a sample.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import os
import pickle
import subprocess
import sys
import time
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mnemo
from mnemo import Tokenizer
from mnemo.interop import save_hf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from timing import race_calls, timed  # noqa: E402

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


def forms_of(name: str, tmp: Path) -> dict[str, Callable[[], Any]]:
    """The forms timed for `name`, from the files `prepare` wrote in `tmp` (tiktoken first)."""
    plain = tmp / f"{name}.tiktoken"
    binary = tmp / f"{name}.bin"
    pickled = (tmp / f"{name}.pickle").read_bytes()
    as_json = tmp / f"{name}.json"
    return {
        "tiktoken": tiktoken_builder(name, plain),
        "mnemo load": lambda: Tokenizer.load(binary),
        "mnemo load, verify": lambda: Tokenizer.load(binary, verify=True),
        "mnemo pickle.loads": lambda: pickle.loads(pickled),
        "mnemo load_tiktoken": plain_loader(name, plain),
        "mnemo.load tokenizer.json": lambda: mnemo.load(as_json),
    }


def prepare(name: str, tmp: Path) -> Tokenizer:
    """Write `name`'s files into `tmp` (the rank file, tokenizer.bin, the pickle, tokenizer.json)
    and check that every form gives tiktoken's ids on a sample."""
    plain = tmp / f"{name}.tiktoken"
    if name == "llama3_like":
        write_llama3_like(plain)
    else:
        plain.write_bytes(gzip.decompress((FIXTURES / f"{name}.tiktoken.gz").read_bytes()))
    tok = plain_loader(name, plain)()
    tok.save(tmp / f"{name}.bin")
    (tmp / f"{name}.pickle").write_bytes(pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL))
    write_tokenizer_json(name, tok, plain, tmp / f"{name}.json")
    reference = tiktoken_builder(name, plain)()
    for form, fn in forms_of(name, tmp).items():
        if form != "tiktoken":
            assert fn().encode(SAMPLE) == reference.encode(SAMPLE), f"mnemo ({form}) and tiktoken disagree"
    return tok


def in_child(name: str, form: str, tmp: Path) -> Callable[[], tuple[float, float]]:
    """A form that runs its call as the first one in a new process and returns (wall, CPU)."""

    def run() -> tuple[float, float]:
        done = subprocess.run(
            [sys.executable, __file__, "--child", name, form, str(tmp)], capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            raise SystemExit(f"{form} failed in its process:\n{done.stderr}")
        wall, cpu = done.stdout.split()
        return float(wall), float(cpu)

    return run


def child(name: str, form: str, tmp: Path) -> None:
    """--child: the imports, then one timed call of the form (what `--fresh` reports)."""
    fn = forms_of(name, tmp)[form]
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    print(f"{time.perf_counter() - w0:.6f} {time.process_time() - c0:.6f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the best counts (default 5)")
    parser.add_argument("--names", nargs="+", default=["cl100k_base", "o200k_base", "llama3_like"])
    parser.add_argument("--fresh", action="store_true", help="each call the first in a new process (module docstring)")
    parser.add_argument("--child", nargs=3, metavar=("NAME", "FORM", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], Path(args.child[2]))
        return
    where = "each call the first in a new process" if args.fresh else "in this process"
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; best of {args.rounds} rounds, forms alternated, {where}")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for name in args.names:
            tok = prepare(name, tmp)
            size = (tmp / f"{name}.bin").stat().st_size
            print(f"\n{name}: {tok.n_vocab:,} ids{' (ranked)' if tok.ranked else ''}, tokenizer.bin {size:,} bytes")
            if args.fresh:
                race_calls({form: in_child(name, form, tmp) for form in forms_of(name, tmp)}, args.rounds, timer=lambda fn: fn())
            else:
                race_calls(forms_of(name, tmp), args.rounds, timer=timed)
    print(f"\nload average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
