"""Loading a tokenizer.json or a tekken file, side by side with the library each format comes from
(issue 26: "loading any of these formats takes no longer than the reference library takes to
load the same file"; issue 27, goal 4).  The rank files are bench/compare/load_vs_tiktoken.py's.

    python bench/compare/load_vs_reference.py [--rounds 5] [--names tekken_240911 cl100k_json ...]

Files (made or found here, offline):

- `tekken_240718`, `tekken_240911`: the tekken files mistral-common ships in its package data
  (dated 2024-07-18 and 2024-09-11 by their names, 14.8 MB and 19.3 MB of JSON); the reference is mistral-common's
  `Tekkenizer.from_file`.
- `cl100k_json`, `o200k_json`: cl100k_base and o200k_base as tokenizer.json, written by mnemo's
  `save_hf` (ByteLevel BPE with their Split regexes, one merge a token).
- `llama3_json`: the Llama-3-like ranks of load_vs_tiktoken.py converted to tokenizer.json by
  transformers' `TikTokenConverter`, its converter for tiktoken files such as Llama 3's (`ignore_merges`, every
  pair of tokens that spells a token listed: 290,209 merges for 128,000 tokens).
  The reference for these is `tokenizers.Tokenizer.from_file`.
- `llama3_folder`: llama3_json's tokenizer.json in a transformers folder with a
  tokenizer_config.json (bos and eos), as a model's folder holds it; timed beside
  `tokenizers.Tokenizer.from_file` of its tokenizer.json (the ratios' reference) and
  transformers' `AutoTokenizer.from_pretrained` of the folder.

Each form is timed once a round in this process, the forms in turn; the best round counts, wall
and CPU time, with ratios to the reference (below 1: mnemo is faster).  Before timing, the
script checks that mnemo and the reference give the same ids on a sample text.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mnemo
from mnemo.interop import save_hf

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from load_vs_tiktoken import FIXTURES, LLAMA3_SPECIALS, SAMPLE, write_llama3_like  # noqa: E402
from timing import race_calls  # noqa: E402

NAMES = ["tekken_240718", "tekken_240911", "cl100k_json", "o200k_json", "llama3_json", "llama3_folder"]


def tekken_file(name: str) -> Path:
    from importlib.resources import files

    return Path(str(files("mistral_common") / "data" / f"{name}.json"))


def hf_file(name: str, tmp: Path) -> Path:
    """A tokenizer.json of cl100k_base or o200k_base written by mnemo, or of llama3_like written
    by transformers' converter."""
    path = tmp / f"{name}.json"
    if name == "llama3_json":
        from transformers.convert_slow_tokenizer import TikTokenConverter

        plain = tmp / "llama3_like.tiktoken"
        write_llama3_like(plain)
        specials = list(LLAMA3_SPECIALS)
        TikTokenConverter(vocab_file=str(plain), extra_special_tokens=specials).converted().save(str(path))
        return path
    vocab = name.replace("_json", "_base")
    plain = tmp / f"{vocab}.tiktoken"
    plain.write_bytes(gzip.decompress((FIXTURES / f"{vocab}.tiktoken.gz").read_bytes()))
    save_hf(mnemo.load_tiktoken(plain, vocab), path)
    return path


def forms_of(name: str, tmp: Path) -> tuple[dict[str, Callable[[], object]], str]:
    """The forms to time (the reference first) and a line about the file."""
    if name.startswith("tekken"):
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        path = tekken_file(name)
        ours, theirs = mnemo.load(path), Tekkenizer.from_file(path)
        assert ours.encode_ordinary(SAMPLE) == theirs.encode(SAMPLE, bos=False, eos=False), "mnemo and Tekkenizer disagree"
        reference: tuple[str, Callable[[], Any]] = ("Tekkenizer.from_file", lambda: Tekkenizer.from_file(path))
    elif name == "llama3_folder":
        import tokenizers
        from transformers import AutoTokenizer

        path = tmp / name
        path.mkdir(exist_ok=True)
        hf_file("llama3_json", tmp).replace(path / "tokenizer.json")
        config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
        (path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        ours, their_tok = mnemo.load(path), tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
        assert ours.encode(SAMPLE, allowed_special="all") == their_tok.encode(SAMPLE, add_special_tokens=False).ids, "mnemo and tokenizers disagree"
        about = f"{name}: {path.name}/ (llama3_json's tokenizer.json and a tokenizer_config.json), {ours.n_vocab:,} ids"
        return {
            "tokenizers from_file": lambda: tokenizers.Tokenizer.from_file(str(path / "tokenizer.json")),
            "transformers AutoTokenizer": lambda: AutoTokenizer.from_pretrained(str(path)),
            "mnemo.load": lambda: mnemo.load(path),
        }, about
    else:
        import tokenizers

        path = hf_file(name, tmp)
        ours, their_tok = mnemo.load(path), tokenizers.Tokenizer.from_file(str(path))
        assert ours.encode(SAMPLE, allowed_special="all") == their_tok.encode(SAMPLE, add_special_tokens=False).ids, "mnemo and tokenizers disagree"
        reference = ("tokenizers from_file", lambda: tokenizers.Tokenizer.from_file(str(path)))
    about = f"{name}: {path.name}, {path.stat().st_size:,} bytes, {ours.n_vocab:,} ids{' (ranked)' if getattr(getattr(ours, 'core', ours), 'ranked', False) else ''}"
    return {reference[0]: reference[1], "mnemo.load": lambda: mnemo.load(path)}, about


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the best counts (default 5)")
    parser.add_argument("--names", nargs="+", default=NAMES, choices=NAMES)
    args = parser.parse_args()
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; best of {args.rounds} rounds, forms alternated")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.names:
            forms, about = forms_of(name, Path(folder))
            print(f"\n{about}")
            race_calls(forms, args.rounds)
    print(f"\nload average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
