"""`mnemo train`: learn a vocabulary from text files and write its tokenizer.bin."""

from __future__ import annotations

import argparse
import time

from mnemo.cli.common import (
    Inputs, amount, check_output, compiled_core, interactive, past_the_point_of_no_return, peak_rss_mib, plural,
    rate, ray_choice, read_as, shared_with_nodes,
)
from mnemo.cli.options import Subcommands, input_options, path_arg, pattern_arg, positive, quiet_option, ray_option, whole
from mnemo.constants import TIES
from mnemo.defaults import DEFAULT_MAX_CHUNK_BYTES, DEFAULT_PATTERN, DEFAULT_TIE, DEFAULT_VOCAB_SIZE
from mnemo.errors import ConfigError
from mnemo.patterns import PRESETS
from mnemo.progress import PhaseProgress
from mnemo.sources import MIN_TASK_BYTES, TASKS_PER_WORKER
from mnemo.vocab import DEFAULT_SPECIAL_TOKENS


def cmd_train(args: argparse.Namespace) -> int:
    from mnemo.training import CountStats, TrainStats, train

    if args.input_format == "chat":
        raise ConfigError(
            "--input-format chat: mnemo train has no chat mode; train on the text of the conversations "
            "(JSON Lines with a text field, --text-field), then `mnemo tokenize --chat` encodes the chats"
        )
    args.inputs = read_as(args.inputs, args.input_format, args.ray)
    base = None
    if args.base is not None:
        from mnemo.extend import continue_from

        from mnemo.formats.load import resolve

        # --pattern is the training pattern, and the pattern of a rank file that holds none; a
        # base that holds its own keeps it here, and continue_from refuses another
        base = compiled_core(args.base, "train --from", resolve(args.base, fallback_pattern=args.pattern)[1])
        try:  # refused now, named, rather than after the inputs are checked
            continue_from(base, args.pattern, args.special, args.tie)
        except ConfigError as exc:
            raise ConfigError(f"--from {args.base}: {exc}") from None
    progress = PhaseProgress(interactive() and not args.quiet)
    stats = TrainStats(CountStats())
    t0 = time.perf_counter()
    try:
        tok = train(
            args.inputs,
            vocab_size=args.vocab_size,
            pattern=args.pattern,
            special_tokens=args.special if args.special is not None else None,
            tie=args.tie,
            algorithm="naive" if args.naive else "fast",
            workers=args.workers,
            max_chunk_bytes=args.max_chunk_bytes,
            verify=not args.no_verify,
            text_field=args.text_field,
            progress=progress,
            stats=stats,
            base=base,
            ray=ray_choice(args, tasks_per_node=args.tasks_per_node),
            prune=args.prune,
            superword=args.superword,
        )
    finally:
        progress.close()
    past_the_point_of_no_return()
    tok.save(args.output)
    seconds = time.perf_counter() - t0
    if tok.superword is not None:
        print(f"  superword: merges making ids {tok.superword}.. are stage 2's (rule {tok.stage2!r})")
    print(
        f"trained {args.output}: {tok.n_vocab} ids ({stats.merges} merges"
        + (f", the first {len(base.merges)} from {args.base}" if base is not None else "")
        + f", {len(tok.special_tokens)} special) "
        f"from {amount(stats.count.n_bytes)}, {plural(stats.unique_words, 'unique word')} in {seconds:.2f} s "
        f"(counting {stats.count.seconds:.2f} s, {rate(stats.count.n_bytes, stats.count.seconds)}; "
        f"merging {stats.merge_seconds:.2f} s); peak RSS {peak_rss_mib():.0f} MiB"
    )
    if stats.prune is not None:
        print(
            f"  pruned: {len(stats.prune.removed)} tokens refused (the least frequent user of each intermediate-only "
            f"token found), {stats.prune.rounds} merge-loop runs (intermediate-only tokens found per run: "
            f"{', '.join(map(str, stats.prune.per_round))})"
        )
    if stats.stopped_early:
        # chunks longer than --max-chunk-bytes are left out of training: when there were any, they
        # may be the reason (--max-chunk-bytes 2 leaves little of English), so the note says so
        skipped = stats.count.n_skipped
        left_out = (
            f"; {skipped:,} of the {stats.count.n_chunks:,} chunks were longer than --max-chunk-bytes "
            f"{args.max_chunk_bytes} and left out (a larger --max-chunk-bytes keeps them)"
            if skipped else ""
        )
        print(
            f"  stopped early: {tok.n_vocab} ids of the {args.vocab_size} asked for, because after merge "
            f"{stats.merges} no pair of adjacent tokens occurs twice in the text any more; more (or more "
            f"varied) text gives more merges{left_out}"
        )
    return 0


def check_train_paths(args: argparse.Namespace) -> None:
    inputs: Inputs = [("input", p) for p in args.inputs]
    if args.base is not None:
        inputs.append(("tokenizer (--from)", args.base))
    shared_with_nodes(args, args.inputs)
    check_output(args.output, inputs)


def add_train(sub: Subcommands) -> None:
    p = sub.add_parser("train", help="learn a vocabulary from text files", description=(
        "Learn a byte-level BPE vocabulary from text files and write it as a tokenizer.bin.  Training "
        "stops early, with a note, when no pair of tokens occurs twice any more."))
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help=".txt (documents separated by <|endoftext|>), .jsonl, .parquet or .arrow (or a datasets save_to_disk folder), optionally .xz/.gz/.zst")
    p.add_argument("-o", "--output", required=True, type=path_arg, help="the tokenizer.bin to write, a path or a URL (required)")
    p.add_argument("--vocab-size", type=whole, default=DEFAULT_VOCAB_SIZE, help=f"ids in all: bytes + merges + specials (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--pattern", default=None, metavar="PATTERN", type=pattern_arg,
                   help=f"split pattern: a preset ({', '.join(PRESETS)}) or a split regex (default {DEFAULT_PATTERN}, "
                        "or that of --from; docs/pretokenizer.md); also that of a --from .tiktoken file, which holds none")
    p.add_argument("--tie", default=None, choices=TIES,
                   help="tie rule: the smaller pair of ids, or the greatest pair of byte strings as CS336 requires "
                        f"(default {DEFAULT_TIE}, or that of --from)")
    p.add_argument("--from", dest="base", type=path_arg, metavar="TOKENIZER",
                   help="continue training from this tokenizer (anything mnemo.load reads): its merges first, then new ones up to --vocab-size; "
                        "its pattern, tie rule and special tokens unless given (docs/extending.md)")
    p.add_argument("--naive", action="store_true", help="use the naive twin trainer (slow; for checking; default: the fast one)")
    p.add_argument("--superword", type=positive, default=None, metavar="T",
                   help="superword tokens (SuperBPE): ordinary merges up to id T, then merges that may bridge "
                        "white space, up to --vocab-size (docs/superword.md; default: none, plain BPE)")
    p.add_argument("--prune", choices=("none", "intermediate"), default=None,
                   help="intermediate: learn no token that ends up intermediate only (every occurrence consumed by "
                        "later merges, as mnemo inspect lists them), keeping the vocabulary size (docs/superword.md; "
                        "default none)")
    p.add_argument("--workers", type=positive, default=None, help="counting processes (default: all cores)")
    p.add_argument("--max-chunk-bytes", type=positive, default=DEFAULT_MAX_CHUNK_BYTES, help=f"leave longer chunks out (default {DEFAULT_MAX_CHUNK_BYTES})")
    input_options(p)
    p.add_argument("--special", action="append", metavar="TOKEN", help=f"a special token (repeat; default: mnemo's {len(DEFAULT_SPECIAL_TOKENS)})")
    p.add_argument("--no-verify", action="store_true", help="skip the final recount of every pair (default: verify)")
    ray_option(p, "count")
    p.add_argument("--tasks-per-node", type=positive, default=None, metavar="N",
                   help=f"with --ray: counting tasks per node (default: about {TASKS_PER_WORKER} per CPU, at least "
                        f"{MIN_TASK_BYTES >> 20} MB each)")
    quiet_option(p)
    p.set_defaults(handler=cmd_train, check_paths=check_train_paths)
