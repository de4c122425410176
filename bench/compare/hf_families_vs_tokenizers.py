"""A tokenizer.json of each byte-level family -- Llama 3, Qwen2, DeepSeek-V3 and StarCoder2
style, built and trained by `tokenizers` itself with the builder the tests use
(tests/formats/conftest.py `_build_family`), and `llama3-converted`: cl100k_base's ranks made
into a tokenizer.json by transformers' `TikTokenConverter`, its converter for tiktoken files
such as Llama 3's (ignore_merges, every pair that spells a token listed) -- encoded by mnemo (`mnemo.load`) and
by `tokenizers`, one document at a time, on one core, over the first MB of each corpus.

    python bench/compare/hf_families_vs_tokenizers.py
    python bench/compare/hf_families_vs_tokenizers.py --mb 2 --rounds 5 --family llama3

Both sides encode the same documents with `add_special_tokens=False` (mnemo:
`encode(doc, allowed_special="all")`, which is what tokenizers does with special text); the
ids are compared on every document first, and a family whose ids differ is reported as such,
not timed.  Time: process CPU time of one pass over the documents, the best of --rounds, the
two sides alternated pass by pass; tokenizers' thread pool is held to one thread
(RAYON_NUM_THREADS=1, TOKENIZERS_PARALLELISM=false, set before it is imported).  MB/s are
UTF-8 bytes per CPU second.

tiktoken cannot run these files (a normalizer, a sequence of splits, added tokens matched with
lstrip / rstrip / single_word are tokenizers' own); the same patterns on a tiktoken vocabulary
against tiktoken are in encode_vs_peers.py (cl100k, o200k) and openai_vocabs_vs_peers.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from corpus import SHARED, documents  # noqa: E402
from timing import best_alternated  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FAMILIES = ("llama3", "qwen2", "deepseek-v3", "starcoder2", "llama3-converted")
CORPORA = ("english", "multilingual", "code", "chat")


def builder() -> Any:
    """tests/formats/conftest.py, loaded from its path (it is not a package module)."""
    spec = importlib.util.spec_from_file_location("hf_family_builder", REPO / "tests" / "formats" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def family_files(folder: Path, families: list[str]) -> dict[str, Path]:
    """The families' tokenizer.json files, built once into `folder` (~10 s each)."""
    out = {name: folder / f"{name}.json" for name in families}
    missing = [name for name, path in out.items() if not path.exists()]
    if "llama3-converted" in missing:
        missing.remove("llama3-converted")
        convert_cl100k(folder, out["llama3-converted"])
    if missing:
        build = builder()
        train = [doc for corpus in build.CORPORA_HF for doc in documents(1.2, corpus)]
        folder.mkdir(parents=True, exist_ok=True)
        for name in missing:
            print(f"building {name}.json with tokenizers ...", flush=True)
            build._build_family(name, train, out[name])
    return out


def convert_cl100k(folder: Path, out: Path) -> None:
    """cl100k_base's ranks as a tokenizer.json by transformers' converter, with its default
    pattern (Llama 3's regex) and Llama 3's first special tokens."""
    import gzip

    from transformers.convert_slow_tokenizer import TikTokenConverter

    print("converting cl100k_base with transformers' TikTokenConverter ...", flush=True)
    folder.mkdir(parents=True, exist_ok=True)
    plain = folder / "cl100k_base.tiktoken"
    plain.write_bytes(gzip.decompress((SHARED / "fixtures" / "tiktoken" / "cl100k_base.tiktoken.gz").read_bytes()))
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    TikTokenConverter(vocab_file=str(plain), extra_special_tokens=specials).converted().save(str(out))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="MB of each corpus (default 1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--family", action="append", choices=FAMILIES, help="only these families (repeatable)")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="only these corpora (repeatable)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/mnemo-bench-hf-families"), help="where the files are built")
    args = parser.parse_args()
    if not (SHARED / "corpus").is_dir():
        sys.exit(f"{SHARED / 'corpus'} is absent: this bench needs ../shared/corpus beside the checkout")

    import tokenizers

    import mnemo

    families = args.family or list(FAMILIES)
    corpora = args.corpus or list(CORPORA)
    files = family_files(args.cache, families)
    print(f"mnemo {mnemo.__version__}, tokenizers {tokenizers.__version__}; {args.mb:g} MB per corpus, best of "
          f"{args.rounds}, one document per call, one core; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'family':<12} {'corpus':<13} {'mnemo MB/s':>10} {'tokenizers MB/s':>16} {'mnemo/tokenizers':>17}  pre-tokenizer")
    for name in families:
        ours = mnemo.load(files[name])
        theirs = tokenizers.Tokenizer.from_file(str(files[name]))
        how = ours.pattern_description() if hasattr(ours, "pattern_description") else ours.split_pattern.describe()
        how = "compiled" if "compiled" in how or "scanner" in how else "regex module"
        for corpus in corpora:
            docs = documents(args.mb, corpus)
            size = sum(len(d.encode("utf-8")) for d in docs) / 1e6
            bad = next((k for k, d in enumerate(docs) if ours.encode(d, allowed_special="all")
                        != theirs.encode(d, add_special_tokens=False).ids), None)  # fmt: skip
            if bad is not None:
                print(f"{name:<12} {corpus:<13} ids differ from tokenizers' on document {bad}: not timed")
                continue
            mine = lambda d: ours.encode(d, allowed_special="all")  # noqa: E731
            ref = lambda d: theirs.encode(d, add_special_tokens=False)  # noqa: E731
            best = best_alternated([mine, ref], docs, args.rounds)
            print(f"{name:<12} {corpus:<13} {size / best[0]:>10.2f} {size / best[1]:>16.2f} "
                  f"{best[1] / best[0]:>16.2f}x  {how}")  # fmt: skip


if __name__ == "__main__":
    main()
