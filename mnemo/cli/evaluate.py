"""`mnemo inspect` (tokens a model will see rarely or never) and `mnemo eval` (tokenizers side
by side on corpora)."""

from __future__ import annotations

import argparse

from mnemo.cli.common import Inputs, check_output, loaded_arg
from mnemo.cli.options import LOADABLE, Subcommands, corpus_text_field, path_arg, pattern_option, positive
from mnemo.defaults import DEFAULT_EVAL_MAX_BYTES, DEFAULT_INSPECT_LIMIT
from mnemo.errors import ConfigError


def cmd_inspect(args: argparse.Namespace) -> int:
    from mnemo.evaluate import corpus_documents
    from mnemo.inspect_vocab import format_report, inspect

    from mnemo.formats.hf_pipeline import HFTokenizer

    loaded = loaded_arg(args.tokenizer, args.pattern)
    tok = loaded.core if isinstance(loaded, HFTokenizer) else loaded
    if isinstance(loaded, HFTokenizer) and loaded.extras():
        print(f"{args.tokenizer}: a tokenizer.json pipeline ({'; '.join(loaded.extras())}): its vocabulary is "
              f"inspected with mnemo's BPE alone")
    corpus = None
    if args.corpus:
        corpus = (d for path in args.corpus for d in corpus_documents(path, args.max_bytes or -1, args.text_field))
    report = inspect(tok, corpus)
    holes = tok.n_vocab - tok.n_tokens
    # a hole is an id no token has (cl100k_base's 16): counted among the ids, never inspected
    print(f"{args.tokenizer}: {tok.n_vocab} ids" + (f" ({holes} of them holes: no token has them)" if holes else "")
          + f", {len(tok.merges)} merges")
    print()
    print(format_report(report, args.limit), end="")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from mnemo.evaluate import format_tables, plot, run

    if args.plot is not None and not str(args.plot).lower().endswith(".png"):
        raise ConfigError(f"--plot {args.plot}: give a .png file name")
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401  (checked before the long part)
        except ImportError:
            raise ConfigError(
                "--plot needs matplotlib, which is not installed: pip install 'mnemo[plot]' (or pip install matplotlib)"
            ) from None
    results, names, skipped = run(args.tokenizers, args.corpus, args.max_bytes, args.text_field, args.pattern)
    print(format_tables(results, names, skipped), end="")
    if args.plot is not None:
        plot(results, names, args.plot)
        print(f"wrote {args.plot}")
    return 0


def check_eval_paths(args: argparse.Namespace) -> None:
    inputs: Inputs = [("corpus", p) for p in args.corpus]
    check_output(args.plot, inputs)


def add_inspect(sub: Subcommands) -> None:
    p = sub.add_parser("inspect", help="unreachable, intermediate-only and under-trained tokens", description=(
        "List a tokenizer's tokens that a model will see rarely or never: tokens whose own bytes encode "
        "to other ids, tokens every later merge consumed in training, and (with --corpus) tokens a "
        "held-out corpus never produces or produces far below their training count (docs/inspect.md)."))
    p.add_argument("tokenizer", metavar="TOKENIZER",
                   help=LOADABLE)
    pattern_option(p)
    p.add_argument("--corpus", action="append", metavar="FILE", help="held-out text (.txt, .jsonl, ...; repeat)")
    p.add_argument("--max-bytes", type=positive, default=None, help="read at most about this much of each corpus (default all)")
    corpus_text_field(p)
    p.add_argument("--limit", type=positive, default=DEFAULT_INSPECT_LIMIT, help=f"rows shown per list (default {DEFAULT_INSPECT_LIMIT})")
    p.set_defaults(handler=cmd_inspect)


def add_eval(sub: Subcommands) -> None:
    p = sub.add_parser("eval", help="tokenizers side by side on corpora", description=(
        "Compare tokenizers on corpora: bytes per token, tokens per word, share of the vocabulary used, "
        "encode speed, token lengths and the most frequent tokens; --plot draws the comparison (docs/eval.md)."))
    p.add_argument("tokenizers", nargs="+", metavar="[NAME=]TOKENIZER",
                   help=f"{LOADABLE}, or VOCAB.json,MERGES.txt")
    pattern_option(p, several=True)
    p.add_argument("--corpus", action="append", required=True, metavar="FILE", help="a corpus (.txt, .jsonl, ...; repeat)")
    p.add_argument("--max-bytes", type=positive, default=DEFAULT_EVAL_MAX_BYTES, help=f"read about this much of each corpus (default {DEFAULT_EVAL_MAX_BYTES})")
    corpus_text_field(p)
    p.add_argument("--plot", type=path_arg, metavar="FILE.png", help="also draw the comparison (needs matplotlib: mnemo[plot])")
    p.set_defaults(handler=cmd_eval, check_paths=check_eval_paths)
