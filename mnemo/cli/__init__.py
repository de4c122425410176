"""The `mnemo` command.  Plain Python: it parses arguments, calls the library and prints.

Each subcommand is one function `cmd_<name>(args) -> int`, registered in `build_parser`.
Long work shows progress (tqdm) on a terminal and stays quiet when piped; every command ends
with a one-line summary on stdout.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

from mnemo.constants import GPT2_FILE_NAMES, INPUT_FORMATS, PATTERNS, TIES
from mnemo.patterns import PRESETS
from mnemo.defaults import (
    DEFAULT_BATCH,
    DEFAULT_CONTEXT,
    DEFAULT_DIM,
    DEFAULT_EVAL_EVERY,
    DEFAULT_GENERATE,
    DEFAULT_LR,
    DEFAULT_MAX_CHUNK_BYTES,
    DEFAULT_OPTIMIZER,
    DEFAULT_PATTERN,
    DEFAULT_SEED,
    DEFAULT_STEPS,
    DEFAULT_TEXT_FIELD,
    DEFAULT_TIE,
    DEFAULT_TOKEN_FORMAT,
    DEFAULT_VAL_FRACTION,
    DEFAULT_VOCAB_SIZE,
    DEMO_PRETRAIN_STEPS,
)
from mnemo.errors import ConfigError, InputError, MnemoError

if TYPE_CHECKING:
    from mnemo.location import Location
    from mnemo.tokenizer import Tokenizer
    from mnemo.work_ray import RayOptions


class _VersionAction(argparse.Action):
    """`--version` computed lazily: it imports the compiled modules and the kernels."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: object) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, help="print version, build and kernel backend")

    def __call__(self, parser: argparse.ArgumentParser, *a: object, **kw: object) -> None:
        from mnemo.buildinfo import describe

        print(describe())
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse with mnemo's error line: `mnemo: error: ...` after the usage, whichever
    subcommand's option was wrong (argparse's own is `mnemo train: error: ...`)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"mnemo: error: {message} (see `{self.prog} --help`)\n")


def _check_option_spelling(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """The error "unknown option X; did you mean Y?" for the first long option of the command
    that it does not have (nor start: argparse takes an unambiguous prefix), before argparse
    parses: `mnemo train --vocab_size 100` printed the top-level usage and "unrecognized
    arguments" (or a missing -o first), with no word of --vocab-size.  (argparse's own
    suggest_on_error came in Python 3.14.)"""
    import difflib

    commands: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands = dict(action.choices)
    target = parser
    for arg in argv:
        if arg == "--":
            return
        if arg in commands and target is parser:
            target = commands[arg]
            continue
        if not arg.startswith("--") or len(arg) < 3:
            continue
        name = arg.split("=", 1)[0]
        known = [o for action in target._actions for o in action.option_strings if o.startswith("--")]
        if name in known or any(o.startswith(name) for o in known):
            continue
        guess = difflib.get_close_matches(name.replace("_", "-"), known, n=1, cutoff=0.6)
        hint = f"; did you mean {guess[0]}?" if guess else f"; {target.prog} takes {', '.join(sorted(known))}"
        target.error(f"unknown option {name}{hint}")


# ---- progress ----------------------------------------------------------------------------------


def _interactive() -> bool:
    return sys.stderr.isatty()


#: Each progress phase (mnemo.work.Progress): its label and what it counts.  Bytes are
#: shown in MB and MB/s, like the summary lines.
PHASES: dict[str, tuple[str, str]] = {
    "count": ("counting", "B"),
    "tokenize": ("tokenizing", "B"),
    "merge": ("merging", " merges"),
}


class PhaseProgress:
    """Named phases on one terminal line each: counting and tokenizing show MB and MB/s,
    merging shows merges/s and an ETA.  Disabled (no output at all) when stderr is not a
    terminal.

    A phase's line ends with its own figures: the time from its first report (the library
    reports 0 when a phase starts) to its last, and the average rate over that time -- the
    same interval the summary line measures.  (tqdm's own last line used the time until the
    bar was closed, after merging: the counting rate of a training run came out half the
    summary's.)"""

    def __init__(self, enabled: bool, file: IO[str] | None = None) -> None:
        self.enabled = enabled
        self.file = file
        self.bars: dict[str, Any] = {}
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.finished: set[str] = set()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        bar = self.bars.get(phase)
        if bar is None:
            from tqdm import tqdm

            for other in self.bars:  # phases run one after the other
                self._finish(other)
            label, unit = PHASES.get(phase, (phase, ""))
            if unit == "B":
                bar = tqdm(desc=label, unit="B", unit_scale=True, unit_divisor=1000, leave=True, file=self.file)
            else:
                bar = tqdm(desc=label, unit=unit, total=total or None, leave=True, file=self.file)
            self.bars[phase] = bar
            self.first[phase] = now
        self.last[phase] = now
        bar.update(done - bar.n)

    def _finish(self, phase: str) -> None:
        """Replace the phase's line by its final figures (see the class docstring)."""
        if phase in self.finished:
            return
        self.finished.add(phase)
        bar = self.bars[phase]
        final = dict(bar.format_dict)
        elapsed = self.last[phase] - self.first[phase]
        final["elapsed"] = elapsed
        final["rate"] = bar.n / elapsed if elapsed > 0 else None
        if (final.get("ncols") or 0) < 1:  # a terminal of unknown width reports -1: do not trim
            final["ncols"] = None
        bar.leave = False
        bar.close()
        print(bar.format_meter(**final), file=self.file if self.file is not None else sys.stderr, flush=True)

    def close(self) -> None:
        for phase in self.bars:
            self._finish(phase)


def _plural(n: int, noun: str) -> str:
    """"1 document", "2 documents": the summaries' counts."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _amount(n_bytes: float) -> str:
    """Bytes in the largest unit that keeps a digit before the point: "3.2 MB", "41.0 kB",
    "512 bytes" (a small input said "0.0 MB")."""
    if n_bytes >= 1e6:
        return f"{n_bytes / 1e6:.1f} MB"
    if n_bytes >= 1e3:
        return f"{n_bytes / 1e3:.1f} kB"
    return f"{n_bytes:.0f} bytes"


def _rate(n_bytes: int, seconds: float) -> str:
    """A speed in _amount's units per second ("0.0 MB/s" for a small input before); none for a
    run too short to time."""
    if seconds <= 0:
        return "too fast to time"
    return _amount(n_bytes / seconds).replace(" bytes", " B") + "/s"


def _peak_rss_mib() -> float:
    """Peak resident memory of this process and of its (finished) workers, in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


# ---- train -------------------------------------------------------------------------------------


def cmd_train(args: argparse.Namespace) -> int:
    from mnemo.training import CountStats, TrainStats, train

    if args.input_format == "chat":
        raise ConfigError(
            "--input-format chat: mnemo train has no chat mode; train on the text of the conversations "
            "(JSON Lines with a text field, --text-field), then `mnemo tokenize --chat` encodes the chats"
        )
    args.inputs = _read_as(args.inputs, args.input_format, args.ray)
    base = None
    if args.base is not None:
        base = _tokenizer_arg(args.base, "train --from")
    progress = PhaseProgress(_interactive() and not args.quiet)
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
            ray=_ray_choice(args, tasks_per_node=args.tasks_per_node),
            prune=args.prune,
            superword=args.superword,
        )
    finally:
        progress.close()
    _past_the_point_of_no_return()
    tok.save(args.output)
    seconds = time.perf_counter() - t0
    if tok.superword is not None:
        print(f"  superword: merges making ids {tok.superword}.. are stage 2's (rule {tok.stage2!r})")
    print(
        f"trained {args.output}: {tok.n_vocab} ids ({stats.merges} merges"
        + (f", the first {len(base.merges)} from {args.base}" if base is not None else "")
        + f", {len(tok.special_tokens)} special) "
        f"from {_amount(stats.count.n_bytes)}, {_plural(stats.unique_words, 'unique word')} in {seconds:.2f} s "
        f"(counting {stats.count.seconds:.2f} s, {_rate(stats.count.n_bytes, stats.count.seconds)}; "
        f"merging {stats.merge_seconds:.2f} s); peak RSS {_peak_rss_mib():.0f} MiB"
    )
    if stats.prune is not None:
        print(
            f"  pruned: {len(stats.prune.removed)} intermediate-only tokens not learnt, in "
            f"{stats.prune.rounds} merge-loop runs (found per run: {', '.join(map(str, stats.prune.per_round))})"
        )
    if stats.stopped_early:
        print(
            f"  stopped early: {tok.n_vocab} ids of the {args.vocab_size} asked for, because after merge "
            f"{stats.merges} no pair of adjacent tokens occurs twice in the text any more; more (or more "
            f"varied) text gives more merges"
        )
    return 0


# ---- inspect and eval --------------------------------------------------------------------------


def _tokenizer_arg(spec: Path | str, command: str) -> Tokenizer:
    """A TOKENIZER argument -- anything mnemo.load reads (mnemo/formats/load.py) -- as the
    Tokenizer the command runs.  A tokenizer.json whose pipeline a Tokenizer cannot hold (a
    normalizer, another pre-tokenizer, ignore_merges, added tokens matched otherwise) encodes
    with the plain-Python pipeline only: refused here by name rather than encoded otherwise."""
    from mnemo.formats.hf_pipeline import HFTokenizer
    from mnemo.formats.load import resolve

    _, tok = resolve(str(spec))
    if isinstance(tok, HFTokenizer):
        extras = tok.extras()
        if extras:
            raise ConfigError(
                f"{spec}: `mnemo {command}` runs mnemo's compiled encoder, which does not apply this tokenizer.json's "
                f"{'; '.join(extras)} yet; encode with mnemo.load({str(spec)!r}).encode(...) in Python, which gives "
                f"tokenizers' ids"
            )
        return tok.core
    return tok


def cmd_inspect(args: argparse.Namespace) -> int:
    from mnemo.evaluate import corpus_documents, load_spec
    from mnemo.inspect_vocab import format_report, inspect

    from mnemo.formats.hf_pipeline import HFTokenizer

    label, loaded = load_spec(str(args.tokenizer))
    tok = loaded.core if isinstance(loaded, HFTokenizer) else loaded
    if isinstance(loaded, HFTokenizer) and loaded.extras():
        print(f"{args.tokenizer}: a tokenizer.json pipeline ({'; '.join(loaded.extras())}): its vocabulary is "
              f"inspected with mnemo's BPE alone")
    corpus = None
    if args.corpus:
        corpus = (d for path in args.corpus for d in corpus_documents(path, args.max_bytes or -1, args.text_field))
    report = inspect(tok, corpus)
    print(f"{args.tokenizer}: {tok.n_vocab} ids, {len(tok.merges)} merges")
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
    results, names, skipped = run(args.tokenizers, args.corpus, args.max_bytes, args.text_field)
    print(format_tables(results, names, skipped), end="")
    if args.plot is not None:
        plot(results, names, args.plot)
        print(f"wrote {args.plot}")
    return 0


# ---- info --------------------------------------------------------------------------------------


def cmd_info(args: argparse.Namespace) -> int:
    from mnemo.tokfile import TOK_MAGIC, read_tok_header
    from mnemo.vocabfile import BIN_MAGIC
    from mnemo.stackfiles import detect
    from mnemo.tokenizer import Tokenizer

    from mnemo.location import location

    for path in args.files:
        where = location(path)
        if where.isdir():  # a shard directory (at a URL: read from a local copy)
            _info_shard_dir(where.local_path("shard directory"), shown=path)
            continue
        with where.open(exact=True) as f:  # a URL: 8 bytes by one ranged read (a stack file set is copied)
            try:
                magic = f.read(8)
            except Exception as exc:  # OSError, and a store's own errors
                raise where.read_error(exc) from None
        if magic == BIN_MAGIC:
            # verify=None: tables another program wrote are checked anyway (docs/formats.md, "Trust")
            tok = Tokenizer.load(path, verify=True if args.verify else None)
            specials = ", ".join(f"{name}={i}" for name, i in tok.special_tokens.items())
            print(f"{path}: mnemo tokenizer")
            print(f"  vocabulary   {tok.n_tokens} ids = 256 bytes + {len(tok.merges)} merges + {len(tok.special_tokens)} special"
                  + (f" (ids 0..{tok.n_vocab - 1}: {tok.n_vocab - tok.n_tokens} unused)" if tok.n_vocab != tok.n_tokens else ""))
            print(f"  pattern      {tok.split_pattern.describe()}")
            print(f"  tie rule     {tok.tie}")
            print(f"  fingerprint  {tok.fingerprint}")
            print(f"  special      {specials or '(none)'}")
            if tok.id_map is not None:
                print("  id map       yes: an imported vocabulary keeps its own ids (docs/interop.md)")
            if tok.merge_counts:
                print(f"  merge counts first {tok.merge_counts[0]}, last {tok.merge_counts[-1]}")
            special_ids = set(tok.special_tokens.values())
            regular = [i for i in tok.vocab if i not in special_ids]  # tok.vocab: no holes
            longest = max(regular, key=lambda i: len(tok.token_bytes(i)))
            print(f"  longest      id {longest}: {tok.token_bytes(longest)!r}")
            if args.verify:
                print("  verified     the encoder tables agree with the merges")
        elif magic == TOK_MAGIC:
            h = read_tok_header(path)
            kind = "chat, masked" if h.chat and h.masked else "chat" if h.chat else "documents"
            size = where.info().size
            print(f"{path}: mnemo token file ({kind})")
            print(f"  tokens       {h.n_tokens} x {h.width} bytes ({size / 1e6:.1f} MB on disk)")
            print(f"  documents    {h.n_docs}")
            print(f"  vocabulary   {h.n_vocab} ids")
            print(f"  fingerprint  {h.fingerprint} (the tokenizer that wrote it)")
        elif detect(path) is not None:
            _info_stack_file(path)
        else:
            raise InputError(
                f"{path}: neither a tokenizer.bin nor a .tok file (it starts with {magic!r}), nor a training "
                f"stack's token file (Megatron's .bin/.idx, datatrove's .ds, nanoGPT's .bin, known by their names)"
            )
    return 0


def _info_shard_dir(path: Path, shown: str) -> None:
    from mnemo.shards import combined_header, shard_headers

    manifest, headers = shard_headers(path)
    h = combined_header(manifest, headers)
    kind = "chat, masked" if h.chat and h.masked else "chat" if h.chat else "documents"
    size = sum(os.path.getsize(os.path.join(path, s.name)) for s in manifest.shards)
    print(f"{shown}: mnemo shard directory ({kind}; {len(manifest.shards)} .tok shards, read in order as one dataset)")
    print(f"  tokens       {h.n_tokens} x {h.width} bytes ({size / 1e6:.1f} MB on disk)")
    print(f"  documents    {h.n_docs}")
    print(f"  vocabulary   {h.n_vocab} ids")
    print(f"  fingerprint  {h.fingerprint} (the tokenizer that wrote it)")
    print(f"  inputs       {len(manifest.run.get('inputs', []))} files")


def _info_stack_file(path: str) -> None:
    import numpy as np

    from mnemo.stackfiles import read_stack_file

    f = read_stack_file(path)
    names = {"megatron": "Megatron-LM indexed dataset", "datatrove": "datatrove tokenized file", "nanogpt": "nanoGPT token file"}
    tokens = f.tokens
    on_disk = sum(os.path.getsize(p) for p in f.paths)
    from mnemo.location import location

    # a URL's set is read from local copies (Location.local_set): name its objects, not the copies
    parts = [str(location(path).sibling(p.name)) for p in f.paths]
    print(f"{path}: {names[f.format]} ({', '.join(parts)})")
    print(f"  tokens       {tokens.size} x {tokens.dtype.itemsize} bytes ({tokens.dtype.name}; {on_disk / 1e6:.1f} MB on disk)")
    print(f"  documents    {f.n_docs if f.n_docs is not None else 'not recorded (the file keeps ids only)'}")
    if f.loss_mask is not None:
        print(f"  loss mask    {int(np.count_nonzero(f.loss_mask))} of {f.loss_mask.size} tokens trained on")
    side = f.sidecar
    if side is None:
        print("  fingerprint  unknown (no .mnemo.json sidecar: not written by mnemo, or it was removed)")
    else:
        print(f"  vocabulary   {side.get('n_vocab')} ids")
        print(f"  fingerprint  {side.get('fingerprint')} (the tokenizer that wrote it, from the .mnemo.json sidecar)")


# ---- convert -----------------------------------------------------------------------------------

CONVERT_FORMATS = ("gpt2", "tiktoken", "hf", "hf-dir", "mnemo")
#: --from also takes "auto": what mnemo.load recognises (mnemo/formats/load.py)


def _gpt2_paths(path: Location, merges: Location | None, reading: bool) -> tuple[Location, Location]:
    """gpt2 files: a folder (at a URL, a prefix) holding vocab.json + merges.txt (or another pair
    of GPT2_FILE_NAMES), or a vocab .json with --merges."""
    if merges is not None:
        return path, merges
    if not reading:
        path.make_folder()
        return path.join(GPT2_FILE_NAMES[0][0]), path.join(GPT2_FILE_NAMES[0][1])
    if path.isfile():
        raise InputError(f"{path} is a file: give the folder holding vocab.json and merges.txt, or --merges")
    for vocab_name, merges_name in GPT2_FILE_NAMES:
        if path.join(vocab_name).isfile() and path.join(merges_name).isfile():
            return path.join(vocab_name), path.join(merges_name)
    names = " or ".join(f"{v} and {m}" for v, m in GPT2_FILE_NAMES)
    raise InputError(f"{path} has no {names}: for other names, give the vocab .json as IN and --merges FILE")


def _special_ids(values: Sequence[str] | None) -> dict[str, int] | None:
    if not values:
        return None
    out: dict[str, int] = {}
    for value in values:
        name, sep, number = value.rpartition("=")
        if not sep or not name or not number.isdigit():
            raise ConfigError(f"--special {value!r} should be NAME=ID, e.g. '<|endoftext|>=50256'")
        out[name] = int(number)
    return out


def cmd_convert(args: argparse.Namespace) -> int:
    from mnemo import interop
    from mnemo.tokenizer import Tokenizer

    src: Location = args.input
    dst: Location = args.output
    merges: Location | None = args.merges
    if args.preset is not None and args.from_format not in ("tiktoken", "auto"):
        raise ConfigError("--preset is for --from tiktoken only (the other formats hold their pattern and specials)")
    if args.preset is not None and (args.pattern is not None or args.special):
        raise ConfigError("--preset sets the pattern and the special tokens: give either --preset or --pattern/--special")
    if args.from_format == "tiktoken" and args.pattern is None and args.preset is None:
        raise ConfigError(
            "a .tiktoken file does not hold its split pattern: pass --preset (cl100k_base or o200k_base, for "
            f"OpenAI's files) or --pattern ({', '.join(PATTERNS)}) with --special"
        )
    if args.from_format not in ("tiktoken", "auto") and args.special:
        raise ConfigError("--special NAME=ID is for --from tiktoken only (the other formats hold their specials)")
    from mnemo.formats.hf_pipeline import HFTokenizer

    loaded: Tokenizer | HFTokenizer
    if args.from_format == "auto":
        from mnemo.formats.load import load

        loaded = load(src, pattern=args.preset or args.pattern, special_tokens=_special_ids(args.special), merges=merges)
    elif args.from_format == "mnemo":
        loaded = Tokenizer.load(src)
    elif args.from_format == "gpt2":
        vocab_path, merges_path = _gpt2_paths(src, merges, reading=True)
        loaded = interop.load_gpt2(vocab_path, merges_path, pattern=args.pattern or "gpt2")
    elif args.from_format == "tiktoken":
        if args.preset is not None:
            if args.preset not in interop.TIKTOKEN_PRESETS:
                raise ConfigError(
                    f"unknown preset {args.preset!r}: use {' or '.join(interop.TIKTOKEN_PRESETS)} (or --pattern and "
                    "--special for another .tiktoken file)"
                )
            loaded = interop.load_tiktoken(src, args.preset)
        else:
            loaded = interop.load_tiktoken(src, args.pattern, _special_ids(args.special))
    elif args.from_format == "hf-dir":
        if not src.isdir():
            raise InputError(f"{src} is not a folder: --from hf-dir reads a save_pretrained folder holding tokenizer.json")
        loaded = interop.load_hf(src.join("tokenizer.json"))
    else:
        loaded = interop.load_hf(src)
    if isinstance(loaded, HFTokenizer):
        if args.to_format == "hf":
            loaded.save_hf(dst)  # the file as tokenizers runs it, every part kept
            print(f"converted {src} ({args.from_format}) -> {dst} (hf): {loaded!r}")
            return 0
        if loaded.extras():
            raise ConfigError(
                f"{src}: this tokenizer.json has {'; '.join(loaded.extras())}, which --to {args.to_format} cannot hold: "
                f"its ids would change; convert it --to hf only"
            )
        tok = loaded.core
    else:
        tok = loaded
    if args.to_format == "mnemo":
        tok.save(dst)
    elif args.to_format == "gpt2":
        vocab_path, merges_path = _gpt2_paths(dst, None, reading=False)
        interop.save_gpt2(tok, vocab_path, merges_path)
    elif args.to_format == "tiktoken":
        interop.save_tiktoken(tok, dst)
    elif args.to_format == "hf-dir":
        interop.save_pretrained(tok, dst)
    else:
        interop.save_hf(tok, dst)
    specials = ", ".join(f"{name}={i}" for name, i in tok.special_tokens.items()) or "none"
    print(
        f"converted {src} ({args.from_format}) -> {dst} ({args.to_format}): {tok.n_vocab} ids, "
        f"pattern {tok.pattern}, special {specials}, fingerprint {tok.fingerprint}"
    )
    if args.to_format == "tiktoken":
        print(f"  a .tiktoken file holds ranks only: load it with --pattern {tok.pattern}"
              + "".join(f" --special '{n}={i}'" for n, i in tok.special_tokens.items()))
    return 0


# ---- tokenize ----------------------------------------------------------------------------------


def cmd_tokenize(args: argparse.Namespace) -> int:
    from mnemo.tokenizing import tokenize_files
    from mnemo.tokenizer import Tokenizer

    from mnemo.tokenizing import AUTO, document_separators, no_separator_warning

    if args.input_format == "chat":
        args.chat = True
    elif args.chat and args.input_format is not None:
        raise ConfigError(f"--chat reads JSON Lines chat records; --input-format {args.input_format} says otherwise: give one")
    args.inputs = _read_as(args.inputs, args.input_format, args.ray)
    tok = _tokenizer_arg(args.tokenizer, "tokenize")
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
    progress = PhaseProgress(_interactive() and not args.quiet)
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
            ray=_ray_choice(args, shard_mb=args.shard_mb),
        )
    finally:
        progress.close()
    _past_the_point_of_no_return()
    written = _written(args.format, args.output, args.chat)
    if args.ray is not None:
        kept = f", {stats.n_skipped_shards} kept from an earlier run" if stats.n_skipped_shards else ""
        written = f"{args.output}/ ({stats.n_shards} shards{kept})"
    print(
        f"tokenized {written}: {_plural(stats.n_docs, 'conversation' if args.chat else 'document')}{separators}, "
        f"{_plural(stats.n_tokens, 'token')}, {_amount(stats.n_bytes)} in {stats.seconds:.2f} s "
        f"({_rate(stats.n_bytes, stats.seconds)}, {stats.bytes_per_token:.2f} bytes/token)"
    )
    return 0


def _read_as(inputs: Sequence[str | Location], input_format: str | None, ray: str | None) -> list[str | Location]:
    """The inputs, each read as `input_format` (--input-format) whatever its name or first bytes."""
    from mnemo.location import location

    if input_format not in (None, "chat") and ray is not None:
        # the Ray runs plan by absolute path (work_ray.shared_paths), where the format is lost
        raise ConfigError(
            f"--input-format {input_format} does not reach the nodes of a Ray run yet; give the files "
            f"names that say their format (.txt, .jsonl, .parquet, .arrow), or run without --ray"
        )
    return [location(p).read_as(input_format) for p in inputs] if input_format is not None else list(inputs)


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


# ---- tokshow -----------------------------------------------------------------------------------

def cmd_tokshow(args: argparse.Namespace) -> int:
    from mnemo.chat import render_conversation_mask
    from mnemo.tokenizer import Tokenizer
    from mnemo.tokshow import render_tokens

    from mnemo.formats.hf_pipeline import HFTokenizer
    from mnemo.formats.load import resolve

    # a tokenizer.json pipeline shows its own tokens and offsets (tokenizers'); --chat renders
    # mnemo's chat template, which needs a Tokenizer
    tok: Tokenizer | HFTokenizer
    if args.chat is not None:
        tok = _tokenizer_arg(args.tokenizer, "tokshow --chat")
    else:
        tok = resolve(str(args.tokenizer))[1]
    color = not args.no_color and sys.stdout.isatty()
    mask: list[bool] | None = None
    spans: list[tuple[int, int]] | None = None
    if args.chat is not None:
        import json

        from mnemo.tokenizing import chat_lines

        if args.index < 0:
            raise ConfigError(f"--index must be >= 0, got {args.index}")
        assert isinstance(tok, Tokenizer)
        found: tuple[int, bytes] | None = None
        count = 0
        # Records are checked as tokenize checks them (file:line in every message) up to the one shown.
        for count, numbered in enumerate(chat_lines(args.chat, list(tok.special_tokens)), 1):
            if count - 1 == args.index:
                found = numbered
                break
        if found is None:
            raise ConfigError(f"{args.chat}: has {count} records; --index {args.index} is out of range")
        messages = json.loads(found[1])["messages"]
        ids, learned = render_conversation_mask(tok, messages)
        mask = [bool(m) for m in learned]
        if args.offsets:
            spans = tok.decode_with_offsets(ids, spans=True)[1]
    else:
        if args.file is not None:
            text = _read_text(_path(args.file)) if args.file != "-" else sys.stdin.read()
        elif args.text:
            text = " ".join(args.text)
        elif not sys.stdin.isatty():
            text = sys.stdin.read()
        else:
            raise ConfigError("no text to show: pass TEXT, --file FILE, --chat FILE.jsonl, or pipe text in")
        ids, spans = tok.encode_with_offsets(text, allowed_special="all")
    print(render_tokens(tok, ids, mask, color=color, show_ids=args.ids, spans=spans if args.offsets else None))
    n_bytes = sum(len(tok.token_bytes(i)) for i in ids)
    print(f"{len(ids)} tokens, {n_bytes} bytes, {n_bytes / max(len(ids), 1):.2f} bytes/token"
          + (f", {sum(mask)} masked (learned)" if mask is not None else ""))
    return 0


def _read_text(path: Location) -> str:
    """A text file for tokshow, opened as every input is (sources.open_binary: its errors name
    the file; compressed files are decompressed)."""
    from mnemo.sources import open_binary

    with open_binary(path) as f:
        return f.read().decode("utf-8", errors="surrogateescape")


# ---- pretrain ----------------------------------------------------------------------------------


def cmd_pretrain(args: argparse.Namespace) -> int:
    from mnemo.bigram import pretrain, token_byte_counts
    from mnemo.batches import TokenStream
    from mnemo.tokenizer import Tokenizer

    progress = _interactive() and not args.quiet
    if progress:
        print(f"loading {args.tokenizer} and {len(args.data) + len(args.val or [])} token files...",
              file=sys.stderr, flush=True)
    tok = _tokenizer_arg(args.tokenizer, "pretrain")
    train_stream = TokenStream.from_tok_files(args.data, tok)
    val_stream = TokenStream.from_tok_files(args.val, tok) if args.val else None
    bos = tok.special_tokens.get("<|bos|>")
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


# ---- demo --------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from mnemo.demo import run_demo

    run_demo(
        Path(args.out),  # a local folder (check_paths)
        vocab_size=args.vocab_size,
        workers=args.workers,
        pretrain_steps=args.pretrain_steps,
        color=sys.stdout.isatty() and not args.no_color,
        progress=_interactive(),
    )
    return 0


# ---- parser ------------------------------------------------------------------------------------


def _path(text: str) -> Location:
    """A path argument: its Location (a local path, or a URL, which a Path would fold)."""
    from mnemo.location import location

    return location(text)


def _whole(text: str) -> int:
    """A whole number whose bounds the library checks, with the one message it gives for every
    value out of them: --vocab-size 0 said ">= 1" here while 100 said ">= 272" there."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _positive(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _ray_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help=f"{what} on a Ray cluster: ADDRESS (HOST:PORT), else the one RAY_ADDRESS names, else a new "
                        f"local one; needs pip install 'mnemo[ray]'")


def _ray_argv(argv: Sequence[str]) -> list[str]:
    """`--ray` followed by something that is not a Ray address (an input file) takes no value:
    argparse would otherwise read `mnemo train --ray data.txt -o x` as the address data.txt."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        nxt = out[i + 1]
        if arg == "--ray" and not (":" in nxt or nxt in ("auto", "local")):
            out[i] = "--ray="
    return out


def _ray_choice(args: argparse.Namespace, tasks_per_node: int | None = None, shard_mb: int | None = None) -> RayOptions | None:
    """The library's `ray=` for --ray: None (not given), or RayOptions with what was given."""
    from mnemo.work_ray import DEFAULT_SHARD_BYTES, RayOptions

    if args.ray is None:
        for flag, value in (("--tasks-per-node", tasks_per_node), ("--shard-mb", shard_mb)):
            if value is not None:
                raise ConfigError(f"{flag} is for runs on a Ray cluster; add --ray [ADDRESS]")
        return None
    return RayOptions(
        address=None if args.ray in ("", "auto") else args.ray,
        tasks_per_node=tasks_per_node,
        shard_bytes=DEFAULT_SHARD_BYTES if shard_mb is None else shard_mb << 20,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mnemo", description="Fast, verifiable byte-level BPE tokenizer.",
                                     epilog="`mnemo COMMAND --help` describes each command.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("train", help="learn a vocabulary from text files", description=(
        "Learn a byte-level BPE vocabulary from text files and write it as a tokenizer.bin.  Training "
        "stops early, with a note, when no pair of tokens occurs twice any more."))
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help=".txt (documents separated by <|endoftext|>), .jsonl, .parquet or .arrow (or a datasets save_to_disk folder), optionally .xz/.gz/.zst")
    p.add_argument("-o", "--output", required=True, type=_path, help="the tokenizer.bin to write, a path or a URL (required)")
    p.add_argument("--vocab-size", type=_whole, default=DEFAULT_VOCAB_SIZE, help=f"ids in all: bytes + merges + specials (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--pattern", default=None, metavar="PATTERN",
                   help=f"split pattern: a preset ({', '.join(PRESETS)}) or a split regex (default {DEFAULT_PATTERN}, "
                        "or that of --from; docs/pretokenizer.md)")
    p.add_argument("--tie", default=None, choices=TIES,
                   help="tie rule: the smaller pair of ids, or the greatest pair of byte strings as CS336 requires "
                        f"(default {DEFAULT_TIE}, or that of --from)")
    p.add_argument("--from", dest="base", type=_path, metavar="TOKENIZER",
                   help="continue training from this tokenizer (anything mnemo.load reads): its merges first, then new ones up to --vocab-size; "
                        "its pattern, tie rule and special tokens unless given (docs/extending.md)")
    p.add_argument("--naive", action="store_true", help="use the naive twin trainer (slow; for checking; default: the fast one)")
    p.add_argument("--superword", type=_positive, default=None, metavar="T",
                   help="superword tokens (SuperBPE): ordinary merges up to id T, then merges that may bridge "
                        "white space, up to --vocab-size (docs/superword.md; default: none, plain BPE)")
    p.add_argument("--prune", choices=("none", "intermediate"), default=None,
                   help="intermediate: learn no token that ends up intermediate only (every occurrence consumed by "
                        "later merges, as mnemo inspect lists them), keeping the vocabulary size (docs/superword.md; "
                        "default none)")
    p.add_argument("--workers", type=_positive, default=None, help="counting processes (default: all cores)")
    p.add_argument("--max-chunk-bytes", type=_positive, default=DEFAULT_MAX_CHUNK_BYTES, help=f"leave longer chunks out (default {DEFAULT_MAX_CHUNK_BYTES})")
    p.add_argument("--text-field", default=DEFAULT_TEXT_FIELD, help=f"JSONL field / Parquet or Arrow column holding the text (default {DEFAULT_TEXT_FIELD})")
    p.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                   help="read every input as this, whatever its name (default: from the name; a stream whose name says none, "
                        "such as - or /dev/stdin: from its first bytes, said on stderr)")
    p.add_argument("--special", action="append", metavar="TOKEN", help="a special token (repeat; default: mnemo's 16)")
    p.add_argument("--no-verify", action="store_true", help="skip the final recount of every pair (default: verify)")
    _ray_options(p, "count")
    p.add_argument("--tasks-per-node", type=_positive, default=None, metavar="N",
                   help="with --ray: counting tasks per node (default: about 16 per CPU, at least 16 MB each)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display (default: progress on a terminal)")
    p.set_defaults(handler=cmd_train)

    p = sub.add_parser("tokenize", help="encode datasets into a .tok file", description=(
        "Encode every document of the inputs into one .tok file, stamped with the tokenizer's "
        "fingerprint.  Documents stay apart: <|bos|> before each one when the vocabulary has it, "
        "else <|endoftext|> after each one when it has that; --bos/--eos choose (docs/cli.md)."))
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=".txt, .jsonl, .parquet or .arrow (or a datasets save_to_disk folder), optionally .xz/.gz/.zst")
    p.add_argument("-t", "--tokenizer", required=True, type=_path, help="the tokenizer to encode with: anything mnemo.load reads: a tokenizer.bin, tokenizer.json, transformers or GPT-2 folder, .tiktoken named after a preset (docs/interop.md) (required)")
    p.add_argument("-o", "--output", required=True, type=_path,
                   help="the .tok file to write, or the name/prefix of a --format's files (required)")
    p.add_argument("--chat", action="store_true", help="inputs are JSONL chat records {messages: [...]}; write masked chats")
    p.add_argument("--bos", metavar="TOKEN", default=None,
                   help="special token before each document, or 'none' (default: <|bos|> if the vocabulary has it)")
    p.add_argument("--eos", metavar="TOKEN", default=None,
                   help="special token after each document, or 'none' (default: <|endoftext|> when the vocabulary "
                        "has it and no <|bos|>); giving either option turns the default off")
    p.add_argument("--format", choices=("tok", "megatron", "datatrove", "nanogpt"), default=DEFAULT_TOKEN_FORMAT,
                   help="tok (mnemo's .tok, default); megatron (OUT.bin + OUT.idx); datatrove (OUT.ds + "
                        ".ds.index, .ds.loss for --chat); nanogpt (a flat uint16 .bin) -- docs/token-files.md")
    p.add_argument("--workers", type=_positive, default=None, help="encoding processes (default: all cores)")
    p.add_argument("--text-field", default=DEFAULT_TEXT_FIELD, help=f"JSONL field / Parquet or Arrow column holding the text (default {DEFAULT_TEXT_FIELD})")
    p.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                   help="read every input as this, whatever its name (default: from the name; a stream whose name says none, "
                        "such as - or /dev/stdin: from its first bytes, said on stderr)")
    _ray_options(p, "encode into a shard directory -o DIR (docs/ray.md)")
    p.add_argument("--shard-mb", type=_positive, default=None, metavar="MB",
                   help="with --ray: input megabytes per shard (default 64)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display (default: progress on a terminal)")
    p.set_defaults(handler=cmd_tokenize)

    p = sub.add_parser("tokshow", help="show text split into tokens, in colour", description=(
        "Show how a tokenizer splits text: each token on its own background colour on a terminal, "
        "separated by | otherwise; bytes that are not whole UTF-8 characters show as <0xC3>."))
    p.add_argument("text", nargs="*", help="text to show (or --file, --chat, or standard input)")
    p.add_argument("-t", "--tokenizer", required=True, type=_path, help="the tokenizer: anything mnemo.load reads: a tokenizer.bin, tokenizer.json, transformers or GPT-2 folder, .tiktoken named after a preset (docs/interop.md) (required)")
    p.add_argument("-f", "--file", help="read the text from this file ('-' for standard input)")
    p.add_argument("--chat", metavar="JSONL", help="render a conversation record from this file, masked tokens marked")
    p.add_argument("--index", type=int, default=0, help="which record of --chat (default 0)")
    p.add_argument("--ids", action="store_true", help="print each token's id after it (default: off)")
    p.add_argument("--offsets", action="store_true",
                   help="print each token's character span @start:end in the text after it (default: off)")
    p.add_argument("--no-color", action="store_true", help="plain output even on a terminal (default: colour on a terminal)")
    p.set_defaults(handler=cmd_tokshow)

    p = sub.add_parser("pretrain", help="train a bigram language model on .tok files", description=(
        "Train the smallest language model, a neural bigram (logits = E[x] W + b, hand-written gradients), "
        "on token files; report train and validation loss against the uniform and unigram baselines, and "
        "a greedy continuation.  The model starts as the training data's unigram; on a terminal a progress "
        "bar shows the steps (stderr), and only the results go to stdout."))
    p.add_argument("data", nargs="+", metavar="DATA.tok", help="training token files")
    p.add_argument("-t", "--tokenizer", required=True, type=_path, help="the tokenizer that wrote them: anything mnemo.load reads: a tokenizer.bin, tokenizer.json, transformers or GPT-2 folder, .tiktoken named after a preset (docs/interop.md)")
    p.add_argument("--val", nargs="+", metavar="VAL.tok", help="validation token files (default: --val-fraction of DATA)")
    p.add_argument("--val-fraction", type=float, default=DEFAULT_VAL_FRACTION,
                   help=f"tail of each file held out when there is no --val (default {DEFAULT_VAL_FRACTION})")
    p.add_argument("--steps", type=_positive, default=DEFAULT_STEPS,
                   help=f"training steps, one batch each (default {DEFAULT_STEPS})")
    p.add_argument("--batch", type=_positive, default=DEFAULT_BATCH,
                   help=f"windows per step (default {DEFAULT_BATCH})")
    p.add_argument("--context", type=_positive, default=DEFAULT_CONTEXT,
                   help=f"tokens per window (default {DEFAULT_CONTEXT})")
    p.add_argument("--dim", type=_positive, default=DEFAULT_DIM,
                   help=f"embedding size (default {DEFAULT_DIM})")
    p.add_argument("--lr", type=float, default=DEFAULT_LR,
                   help=f"learning rate (default {DEFAULT_LR})")
    p.add_argument("--optimizer", choices=["adam", "sgd"], default=DEFAULT_OPTIMIZER,
                   help=f"adam (rows of E not in a batch keep their weights and state) or plain sgd (default {DEFAULT_OPTIMIZER})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the initial weights and the batch order (default {DEFAULT_SEED})")
    p.add_argument("--eval-every", type=_positive, default=DEFAULT_EVAL_EVERY,
                   help=f"report train and validation loss every N steps, and at the last (default {DEFAULT_EVAL_EVERY})")
    p.add_argument("--prompt", default="The", help="text to continue greedily at the end, after <|bos|> (default 'The')")
    p.add_argument("--generate", type=_positive, default=DEFAULT_GENERATE, help=f"tokens to generate (default {DEFAULT_GENERATE})")
    p.add_argument("-o", "--output", type=_path, default=None, help="save the weights here (.npz, no pickle; default: not saved)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display (default: shown on a terminal)")
    p.set_defaults(handler=cmd_pretrain)

    p = sub.add_parser("demo", help="the main job end to end on Python's own standard library", description=(
        "Train a tokenizer on the running Python's standard library sources and documentation, tokenize "
        "them, show a few sentences, compare encoding speed with tiktoken and Hugging Face tokenizers "
        "(when installed), train a bigram model briefly, and print the figures."))
    p.add_argument("--out", type=_path, default="mnemo-demo", help="output folder (default ./mnemo-demo)")
    p.add_argument("--vocab-size", type=_whole, default=DEFAULT_VOCAB_SIZE, help=f"ids of the trained tokenizer (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--workers", type=_positive, default=None, help="processes (default: all cores)")
    p.add_argument("--pretrain-steps", type=_positive, default=DEMO_PRETRAIN_STEPS,
                   help=f"steps of the bigram model (default {DEMO_PRETRAIN_STEPS})")
    p.add_argument("--no-color", action="store_true", help="plain output even on a terminal (default: colour on a terminal)")
    p.set_defaults(handler=cmd_demo)

    p = sub.add_parser("convert", help="convert a vocabulary between mnemo, GPT-2, tiktoken and Hugging Face files",
                       description=(
        "Convert a byte-level BPE vocabulary.  Formats: mnemo (tokenizer.bin), gpt2 (a folder with vocab.json "
        "and merges.txt, or a vocab .json with --merges), tiktoken (a .tiktoken rank file; reading one needs "
        "--pattern and --special), hf (a Hugging Face tokenizer.json), hf-dir (a save_pretrained folder that "
        "transformers.AutoTokenizer.from_pretrained loads: tokenizer.json, tokenizer_config.json with bos/eos/pad "
        "and the chat template, special_tokens_map.json; docs/pipelines.md).  Ids are kept exactly."))
    p.add_argument("input", type=_path, metavar="IN", help="the file to read (a folder for --from gpt2 without --merges)")
    p.add_argument("output", type=_path, metavar="OUT", help="the file to write (a folder for --to gpt2 and hf-dir, created if missing)")
    p.add_argument("--from", dest="from_format", default="auto", choices=("auto", *CONVERT_FORMATS),
                   help="format of IN (default auto: what mnemo.load recognises, docs/interop.md)")
    p.add_argument("--to", dest="to_format", required=True, choices=CONVERT_FORMATS, help="format of OUT (required)")
    p.add_argument("--merges", type=_path, default=None,
                   help="--from gpt2 with IN a vocab .json: its merges.txt (default: IN is a folder holding both)")
    p.add_argument("--pattern", default=None, metavar="PATTERN",
                   help="split pattern of a .tiktoken input (or --preset) or a gpt2 input: a preset name or a split "
                        "regex (default gpt2)")
    p.add_argument("--preset", default=None, metavar="NAME",
                   help="--from tiktoken: OpenAI's encoding the file holds, cl100k_base or o200k_base: sets the pattern "
                        "and special tokens as tiktoken does, and checks the file's SHA-256 (the file may be gzipped)")
    p.add_argument("--special", action="append", metavar="NAME=ID",
                   help="a .tiktoken input's special token (repeat; default: none)")
    p.set_defaults(handler=cmd_convert)

    p = sub.add_parser("inspect", help="unreachable, intermediate-only and under-trained tokens", description=(
        "List a tokenizer's tokens that a model will see rarely or never: tokens whose own bytes encode "
        "to other ids, tokens every later merge consumed in training, and (with --corpus) tokens a "
        "held-out corpus never produces or produces far below their training count (docs/inspect.md)."))
    p.add_argument("tokenizer", metavar="TOKENIZER",
                   help="anything mnemo.load reads: a tokenizer.bin, tokenizer.json, transformers or GPT-2 folder, .tiktoken named after a preset (docs/interop.md)")
    p.add_argument("--corpus", action="append", metavar="FILE", help="held-out text (.txt, .jsonl, ...; repeat)")
    p.add_argument("--max-bytes", type=_positive, default=None, help="read at most about this much of each corpus (default all)")
    p.add_argument("--text-field", default=DEFAULT_TEXT_FIELD, help=f"JSONL field holding the text (default {DEFAULT_TEXT_FIELD}; chat records: their messages)")
    p.add_argument("--limit", type=_positive, default=20, help="rows shown per list (default 20)")
    p.set_defaults(handler=cmd_inspect)

    p = sub.add_parser("eval", help="tokenizers side by side on corpora", description=(
        "Compare tokenizers on corpora: bytes per token, tokens per word, share of the vocabulary used, "
        "encode speed, token lengths and the most frequent tokens; --plot draws the comparison (docs/eval.md)."))
    p.add_argument("tokenizers", nargs="+", metavar="[NAME=]TOKENIZER",
                   help="anything mnemo.load reads: a tokenizer.bin, tokenizer.json, transformers or GPT-2 folder, .tiktoken named after a preset (docs/interop.md), or VOCAB.json,MERGES.txt")
    p.add_argument("--corpus", action="append", required=True, metavar="FILE", help="a corpus (.txt, .jsonl, ...; repeat)")
    p.add_argument("--max-bytes", type=_positive, default=2_000_000, help="read about this much of each corpus (default 2000000)")
    p.add_argument("--text-field", default=DEFAULT_TEXT_FIELD, help=f"JSONL field holding the text (default {DEFAULT_TEXT_FIELD}; chat records: their messages)")
    p.add_argument("--plot", type=_path, metavar="FILE.png", help="also draw the comparison (needs matplotlib: mnemo[plot])")
    p.set_defaults(handler=cmd_eval)

    p = sub.add_parser("info", help="what a tokenizer.bin, .tok or stack token file holds", description=(
        "Describe mnemo files: a tokenizer.bin's vocabulary, pattern, tie rule, special tokens and "
        "fingerprint; a .tok file's tokens, documents and the fingerprint of the tokenizer that wrote it; "
        "Megatron (.bin/.idx), datatrove (.ds) and nanoGPT (.bin) token files, read back and checked."))
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="tokenizer.bin or .tok files (known by their first bytes), stack token files (by their names), "
                        "or shard directories of tokenize --ray")
    p.add_argument("--verify", action="store_true",
                   help="also rebuild a tokenizer.bin's encoder tables from its merges and compare them (what "
                        "loading a file this mnemo wrote trusts; every other rule is checked at every load)")
    p.set_defaults(handler=cmd_info)
    return parser


# ---- outputs, checked before any work -----------------------------------------------------------


def check_paths(args: argparse.Namespace) -> None:
    """Refuse, before the command does any work, an output that cannot be written or that is
    one of the command's inputs, however spelled (Location.check_output: a missing folder or
    bucket, a folder given as a file, the input itself).  Without this,
    `train -o /no/such/dir/x.bin` trained to the end and then died, and
    `tokenize -t tok.bin IN -o tok.bin` replaced the tokenizer with the token file."""
    from mnemo.stackfiles import output_locations

    command = args.command
    inputs = _inputs(args)
    if command in ("train", "tokenize") and args.ray is not None:
        from mnemo.work_ray import shared_paths

        # nodes read the inputs (and write the shards) by path: refused now, before the cluster starts
        shared_paths([*args.inputs, *([args.output] if command == "tokenize" else [])])
    if command == "tokenize" and args.ray is not None:
        args.output.check_output_folder(inputs)  # a folder of shards
    elif command == "tokenize":
        for part in output_locations(args.format, args.output, args.chat):  # a set: its files next to the name given
            part.check_output(inputs)
    elif command == "convert" and args.to_format in ("gpt2", "hf-dir"):  # a folder of files
        names = GPT2_FILE_NAMES[0] if args.to_format == "gpt2" else ("tokenizer.json", "tokenizer_config.json")
        args.output.check_output_folder(inputs, names)
    elif command == "demo":
        if args.out.remote:
            raise ConfigError(f"--out {args.out}: the demo writes a local folder of files to look at; give a local path")
        args.out.check_output_folder()
    else:
        output = args.plot if command == "eval" else getattr(args, "output", None)
        if output is not None:
            output.check_output(inputs)


def _inputs(args: argparse.Namespace) -> list[tuple[str, str | Location]]:
    """(label, path) of every file the command reads that an output could overwrite."""
    command = args.command
    found: list[tuple[str, str | Location]] = []
    if command in ("train", "tokenize"):
        found += [("input", p) for p in args.inputs]
    if command in ("tokenize", "pretrain"):
        found.append(("tokenizer (-t)", args.tokenizer))
    if command == "pretrain":
        found += [("input", p) for p in [*args.data, *(args.val or [])]]
    if command == "convert":
        found.append(("input", args.input))
        if args.merges is not None:
            found.append(("input (--merges)", args.merges))
        elif args.from_format == "gpt2":
            found += [("input", args.input.join(name)) for pair in GPT2_FILE_NAMES for name in pair]
    if command == "train" and args.base is not None:
        found.append(("tokenizer (--from)", args.base))
    if command == "eval":
        found += [("corpus", p) for p in args.corpus]
    return found


def _past_the_point_of_no_return() -> None:
    """The work is done and its output (being) written: a Ctrl-C or SIGTERM from here on would
    only make a run whose output is complete exit as interrupted, so both stay blocked for the
    rest of the command (saving a tokenizer.bin and printing the summary: bounded).  A blocked
    signal is dropped when the process ends; the run exits 0 with its output."""
    if threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _unblock_dropping_pending(saved_mask: set[int | signal.Signals]) -> None:
    """Put back the signal mask main() started with (main may run inside another program, a
    test), dropping a Ctrl-C or SIGTERM that arrived while blocked: the run it came too late for
    has finished.  Ignored while unblocked, a pending signal is discarded."""
    if threading.current_thread() is not threading.main_thread():
        return
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in handlers:
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)
    for s, h in handlers.items():
        signal.signal(s, h)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that `with` blocks (the .tok writer) clean up."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's own flush at exit does not
    fail a second time on what is still buffered (Python's advice for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        # Ctrl-C interrupts even when this process was started with SIGINT ignored (as a shell
        # does for background jobs), so that an interrupted run always cleans up after itself.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    parser = build_parser()
    given = _ray_argv(sys.argv[1:] if argv is None else argv)
    _check_option_spelling(parser, given)
    args = parser.parse_args(given)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        check_paths(args)
        code = handler(args)
        sys.stdout.flush()  # here, where a full disk is an error line, not a message at exit
        return code
    except MnemoError as exc:
        print(f"mnemo: error: {exc}", file=sys.stderr)
        return 1
    except _Terminated:
        print("mnemo: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("mnemo: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as exc:
        # The last resort for what the environment does to a run the checks let through (a full
        # disk, a file removed mid-run): name the file rather than print a traceback.
        if exc.filename is not None:
            print(f"mnemo: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        else:  # a write to an open file: an output being written, or standard output
            _silence_stdout()
            print(f"mnemo: error: cannot write the output or standard output ({exc.strerror or exc})", file=sys.stderr)
        return 1
    finally:
        if argv is None and threading.current_thread() is threading.main_thread():
            # The program itself (the `mnemo` script, `python -m mnemo`): it ends now.  Unblocked,
            # a Ctrl-C or SIGTERM arriving between here and the workers' shutdown at exit raised
            # KeyboardInterrupt inside that atexit function and printed a traceback; blocked, it
            # is dropped when the process ends, with main's exit status.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        else:
            _unblock_dropping_pending(saved_mask)
