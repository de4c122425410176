"""`mnemo pretrain` (a bigram language model on .tok files) and `mnemo demo` (the main job end
to end on Python's own standard library)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from mnemo.cli.common import Inputs, check_output, interactive, tokenizer_arg
from mnemo.cli.options import Subcommands, no_color_option, path_arg, pattern_option, positive, tokenizer_option, whole
from mnemo.defaults import (
    DEFAULT_BATCH, DEFAULT_CONTEXT, DEFAULT_DIM, DEFAULT_EVAL_EVERY, DEFAULT_GENERATE, DEFAULT_LR,
    DEFAULT_OPTIMIZER, DEFAULT_SEED, DEFAULT_STEPS, DEFAULT_VAL_FRACTION, DEFAULT_VOCAB_SIZE,
    DEMO_PRETRAIN_STEPS,
)
from mnemo.errors import ConfigError


def cmd_pretrain(args: argparse.Namespace) -> int:
    from mnemo.bigram import pretrain, token_byte_counts
    from mnemo.batches import TokenStream
    from mnemo.tokenizing import document_separators

    progress = interactive() and not args.quiet
    if progress:
        print(f"loading {args.tokenizer} and {len(args.data) + len(args.val or [])} token files...",
              file=sys.stderr, flush=True)
    tok = tokenizer_arg(args.tokenizer, "pretrain", args.pattern)
    train_stream = TokenStream.from_tok_files(args.data, tok)
    val_stream = TokenStream.from_tok_files(args.val, tok) if args.val else None
    # the BOS `mnemo tokenize` puts before each document by default (a template's, a folder's,
    # <|bos|>, <s>), if any: the continuation starts where a document starts
    bos = document_separators(tok)[0]
    prompt = ([bos] if bos is not None else []) + tok.encode_ordinary(args.prompt)
    pretrain(
        train_stream,
        val_stream,
        vocab_size=tok.n_vocab,
        val_fraction=args.val_fraction,
        steps=args.steps,
        batch_size=args.batch,
        context=args.context,
        dim=args.dim,
        lr=args.lr,
        optimizer=args.optimizer,
        seed=args.seed,
        eval_every=args.eval_every,
        prompt=prompt,
        n_generate=args.generate,
        stop_id=bos,
        decode=lambda ids: tok.decode(ids),
        out=args.output,
        progress=progress,
        token_bytes=token_byte_counts(tok.n_vocab, tok.vocab, tok.special_tokens.values()),
    )
    return 0


def check_pretrain_paths(args: argparse.Namespace) -> None:
    inputs: Inputs = [("tokenizer (-t)", args.tokenizer)]
    inputs += [("input", p) for p in [*args.data, *(args.val or [])]]
    check_output(args.output, inputs)


def add_pretrain(sub: Subcommands) -> None:
    p = sub.add_parser("pretrain", help="train a bigram language model on .tok files", description=(
        "Train the smallest language model, a neural bigram (logits = E[x] W + b, hand-written gradients), "
        "on token files; report train and validation loss against the uniform and unigram baselines, and "
        "a greedy continuation.  The model starts as the training data's unigram; on a terminal a progress "
        "bar shows the steps (stderr), and only the results go to stdout."))
    p.add_argument("data", nargs="+", metavar="DATA.tok", help="training token files")
    tokenizer_option(p, "the tokenizer that wrote them")
    pattern_option(p)
    p.add_argument("--val", nargs="+", metavar="VAL.tok", help="validation token files (default: --val-fraction of DATA)")
    p.add_argument("--val-fraction", type=float, default=DEFAULT_VAL_FRACTION,
                   help=f"tail of each file held out when there is no --val (default {DEFAULT_VAL_FRACTION})")
    sizes: tuple[tuple[str, Callable[[str], float], float, str], ...] = (
        ("--steps", positive, DEFAULT_STEPS, "training steps, one batch each"),
        ("--batch", positive, DEFAULT_BATCH, "windows per step"),
        ("--context", positive, DEFAULT_CONTEXT, "tokens per window"),
        ("--dim", positive, DEFAULT_DIM, "embedding size"),
        ("--lr", float, DEFAULT_LR, "learning rate"),
    )
    for flag, kind, default, what in sizes:
        p.add_argument(flag, type=kind, default=default, help=f"{what} (default {default})")
    p.add_argument("--optimizer", choices=["adam", "sgd"], default=DEFAULT_OPTIMIZER,
                   help=f"adam (rows of E not in a batch keep their weights and state) or plain sgd (default {DEFAULT_OPTIMIZER})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the initial weights and the batch order (default {DEFAULT_SEED})")
    p.add_argument("--eval-every", type=positive, default=DEFAULT_EVAL_EVERY,
                   help=f"report train and validation loss every N steps, and at the last (default {DEFAULT_EVAL_EVERY})")
    p.add_argument("--prompt", default="The", help="text to continue greedily at the end, after the BOS tokenize puts before each document, if any (default 'The')")
    p.add_argument("--generate", type=positive, default=DEFAULT_GENERATE, help=f"tokens to generate (default {DEFAULT_GENERATE})")
    p.add_argument("-o", "--output", type=path_arg, default=None, help="save the weights here (.npz, no pickle; default: not saved)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display (default: shown on a terminal)")
    p.set_defaults(handler=cmd_pretrain, check_paths=check_pretrain_paths)


# ---- demo --------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from mnemo.demo import run_demo

    run_demo(
        Path(args.out),  # a local folder (check_paths)
        vocab_size=args.vocab_size,
        workers=args.workers,
        pretrain_steps=args.pretrain_steps,
        color=sys.stdout.isatty() and not args.no_color,
        progress=interactive(),
    )
    return 0


def check_demo_paths(args: argparse.Namespace) -> None:
    if args.out.remote:
        raise ConfigError(f"--out {args.out}: the demo writes a local folder of files to look at; give a local path")
    args.out.check_output_folder()


def add_demo(sub: Subcommands) -> None:
    p = sub.add_parser("demo", help="the main job end to end on Python's own standard library", description=(
        "Train a tokenizer on the running Python's standard library sources and documentation, tokenize "
        "them, show a few sentences, compare encoding speed with tiktoken and Hugging Face tokenizers "
        "(when installed), train a bigram model briefly, and print the figures."))
    p.add_argument("--out", type=path_arg, default="mnemo-demo", help="output folder (default ./mnemo-demo)")
    p.add_argument("--vocab-size", type=whole, default=DEFAULT_VOCAB_SIZE, help=f"ids of the trained tokenizer (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--workers", type=positive, default=None, help="processes (default: all cores)")
    p.add_argument("--pretrain-steps", type=positive, default=DEMO_PRETRAIN_STEPS,
                   help=f"steps of the bigram model (default {DEMO_PRETRAIN_STEPS})")
    no_color_option(p)
    p.set_defaults(handler=cmd_demo, check_paths=check_demo_paths)
