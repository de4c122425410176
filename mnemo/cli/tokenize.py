"""`mnemo tokenize`: encode datasets into a .tok file, a training stack's token files, or (on
Ray) a shard directory."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mnemo.cli.common import (
    Inputs, amount, chat_tokenizer, interactive, loaded_arg, past_the_point_of_no_return, per_token, plural, rate, ray_choice,
    read_as, runnable, shared_with_nodes,
)
from mnemo.cli.options import (
    Subcommands, input_options, path_arg, pattern_option, positive, quiet_option, ray_option, tokenizer_option,
)
from mnemo.defaults import DEFAULT_SHARD_BYTES, DEFAULT_TOKEN_FORMAT
from mnemo.errors import ConfigError
from mnemo.progress import PhaseProgress
from mnemo.stackfiles import FORMATS

if TYPE_CHECKING:
    from mnemo.location import Location


def cmd_tokenize(args: argparse.Namespace) -> int:
    from mnemo.tokenizing import tokenize_files

    from mnemo.tokenizing import AUTO, document_separators, no_separator_warning

    if args.input_format == "chat":
        args.chat = True
    elif args.chat and args.input_format is not None:
        raise ConfigError(f"--chat reads JSON Lines chat records; --input-format {args.input_format} says otherwise: give one")
    args.inputs = read_as(args.inputs, args.input_format, args.ray)
    loaded = loaded_arg(args.tokenizer, args.pattern, template=True)
    tok = (
        chat_tokenizer(args.tokenizer, "tokenize --chat", loaded) if args.chat else runnable(args.tokenizer, "tokenize", loaded)
    )
    bos, eos = _separator_option(args.bos), _separator_option(args.eos)
    separators = ""
    if args.chat:
        if bos != AUTO or eos != AUTO:
            raise ConfigError("--bos/--eos are for documents; --chat records are delimited by the chat template (<|bos|> ... <|end|>)")
    else:
        bos_id, eos_id = document_separators(tok, bos, eos)
        if bos_id is None and eos_id is None and bos == AUTO and eos == AUTO:
            print(f"mnemo: warning: {no_separator_warning(tok)}", file=sys.stderr)
        # the choice made, passed on explicitly (the library would warn a second time)
        names = {i: name for name, i in tok.special_tokens.items()}
        bos = None if bos_id is None else names[bos_id]
        eos = None if eos_id is None else names[eos_id]
        separators = ", each " + " + ".join([*([bos] if bos else []), "text", *([eos] if eos else [])])
    progress = PhaseProgress(interactive() and not args.quiet)
    try:
        stats = tokenize_files(
            args.inputs,
            tok,
            args.output,
            chat=args.chat,
            workers=args.workers,
            text_field=args.text_field,
            progress=progress,
            bos=bos,
            eos=eos,
            format=args.format,
            ray=ray_choice(args, shard_mb=args.shard_mb),
        )
    finally:
        progress.close()
    past_the_point_of_no_return()
    written = _written(args.format, args.output, args.chat)
    if args.ray is not None:
        kept = f", {stats.n_skipped_shards} kept from an earlier run" if stats.n_skipped_shards else ""
        written = f"{args.output}/ ({stats.n_shards} shards{kept})"
    print(
        f"tokenized {written}: {plural(stats.n_docs, 'conversation' if args.chat else 'document')}{separators}, "
        f"{plural(stats.n_tokens, 'token')}, {amount(stats.n_bytes)} in {stats.seconds:.2f} s "
        f"({', '.join(f for f in (rate(stats.n_bytes, stats.seconds), per_token(stats.n_bytes, stats.n_tokens)) if f)})"
    )
    return 0


def _written(fmt: str, output: Location, chat: bool) -> str:
    """The files a tokenize run wrote, for its summary line (mnemo's sidecar left out)."""
    from mnemo.stackfiles import SIDECAR_SUFFIX, output_locations

    parts = [p for p in output_locations(fmt, output, chat) if not p.name.endswith(SIDECAR_SUFFIX)]
    if fmt == "datatrove":
        parts = parts[-1:] + parts[:-1]  # the .ds first, then its .index, .loss, .metadata
    return " + ".join(str(p) for p in parts)


def _separator_option(value: str | None) -> str | None:
    """--bos/--eos: None (not given: the default rule), 'none' (no token), or a token's name."""
    from mnemo.tokenizing import AUTO

    if value is None:
        return AUTO
    return None if value == "none" else value


def check_tokenize_paths(args: argparse.Namespace) -> None:
    from mnemo.stackfiles import output_locations

    inputs: Inputs = [("input", p) for p in args.inputs]
    inputs.append(("tokenizer (-t)", args.tokenizer))
    shared_with_nodes(args, [*args.inputs, args.output])
    if args.ray is not None:
        args.output.check_output_folder(inputs)  # a folder of shards
    else:
        for part in output_locations(args.format, args.output, args.chat):  # a set: its files next to the name given
            part.check_output(inputs)


def add_tokenize(sub: Subcommands) -> None:
    p = sub.add_parser("tokenize", help="encode datasets into a .tok file", description=(
        "Encode every document of the inputs into one .tok file, stamped with the tokenizer's "
        "fingerprint.  Documents stay apart: the tokens a tokenizer.json's template adds to a text, else the "
        "bos_token of a transformers folder's tokenizer_config.json before each one (else its eos_token after "
        "each one), else <|bos|> (or else <s>) before each one when the vocabulary has it, else <|endoftext|> "
        "after each one when it has that; --bos/--eos choose (docs/cli.md)."))
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=".txt, .jsonl, .parquet or .arrow (or a datasets save_to_disk folder), optionally .xz/.gz/.zst")
    tokenizer_option(p, "the tokenizer to encode with", " (required)")
    pattern_option(p)
    p.add_argument("-o", "--output", required=True, type=path_arg,
                   help="the .tok file to write, or the name/prefix of a --format's files (required)")
    p.add_argument("--chat", action="store_true", help="inputs are JSONL chat records {messages: [...]}; write masked chats")
    p.add_argument("--bos", metavar="TOKEN", default=None,
                   help="special token before each document, or 'none' (default: a tokenizer.json template's, a "
                        "transformers folder's bos_token, else <|bos|> or <s> if the vocabulary has it)")
    p.add_argument("--eos", metavar="TOKEN", default=None,
                   help="special token after each document, or 'none' (default: a transformers folder's eos_token "
                        "when it names no other bos_token, else <|endoftext|> when the vocabulary has it and no "
                        "<|bos|> or <s>); giving either option turns the default off")
    p.add_argument("--format", choices=FORMATS, default=DEFAULT_TOKEN_FORMAT,
                   help="tok (mnemo's .tok, default); megatron (OUT.bin + OUT.idx); datatrove (OUT.ds + "
                        ".ds.index, .ds.loss for --chat); nanogpt (a flat uint16 .bin) -- docs/token-files.md")
    p.add_argument("--workers", type=positive, default=None, help="encoding processes (default: all cores)")
    input_options(p)
    ray_option(p, "encode into a shard directory -o DIR (docs/ray.md)")
    p.add_argument("--shard-mb", type=positive, default=None, metavar="MB",
                   help=f"with --ray: input megabytes per shard (default {DEFAULT_SHARD_BYTES >> 20})")
    quiet_option(p)
    p.set_defaults(handler=cmd_tokenize, check_paths=check_tokenize_paths)
