"""What the commands share: whether to show progress (mnemo/progress.py shows it), the summary
lines' figures, the TOKENIZER argument, --input-format and --ray as the library takes them, the
signal block once the output is being written, and the path checks run before any work (each
command names its own inputs and outputs: `set_defaults(check_paths=...)` in its module)."""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, overload

from mnemo.defaults import DEFAULT_SHARD_BYTES
from mnemo.errors import ConfigError

if TYPE_CHECKING:
    from mnemo.formats.hf_pipeline import HFTokenizer
    from mnemo.formats.load import AnyTokenizer
    from mnemo.location import Location
    from mnemo.tokenizer import Tokenizer
    from mnemo.work_ray import RayOptions

#: (label, path) of a file a command reads that an output could overwrite.
Inputs: TypeAlias = "list[tuple[str, str | Location]]"


# ---- progress ----------------------------------------------------------------------------------


def interactive() -> bool:
    return sys.stderr.isatty()


def plural(n: int, noun: str) -> str:
    """"1 document", "2 documents": the summaries' counts."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def amount(n_bytes: float) -> str:
    """Bytes in the largest unit that keeps a digit before the point: "3.2 MB", "41.0 kB",
    "512 bytes" (a small input said "0.0 MB")."""
    if n_bytes >= 1e6:
        return f"{n_bytes / 1e6:.1f} MB"
    if n_bytes >= 1e3:
        return f"{n_bytes / 1e3:.1f} kB"
    return f"{n_bytes:.0f} bytes"


def rate(n_bytes: int, seconds: float) -> str:
    """A speed in amount's units per second ("0.0 MB/s" for a small input before); none for a
    run too short to time."""
    if seconds <= 0:
        return "too fast to time"
    return amount(n_bytes / seconds).replace(" bytes", " B") + "/s"


def per_token(n_bytes: int, n_tokens: int) -> str:
    """"4.12 bytes/token" for a summary line; "" when there are no tokens (0 / 0 is no figure:
    printed as 0.00 it read as a measurement)."""
    return f"{n_bytes / n_tokens:.2f} bytes/token" if n_tokens else ""


def peak_rss_mib() -> float:
    """Peak resident memory of this process and of its (finished) workers, in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


# ---- arguments as the library takes them -------------------------------------------------------


#: The commands that run an HFTokenizer as it is (a tokenizer.json pipeline: tokenizers' ids,
#: docs/interop.md "Datasets through a tokenizer.json pipeline"); any other takes its core, or
#: refuses by name a pipeline the core cannot hold.
PIPELINE_COMMANDS: Final = ("tokenize", "tokenize --chat", "pretrain", "tokshow --chat")


@overload
def tokenizer_arg(spec: str | os.PathLike[str], command: Literal["train --from"], pattern: str | None = None) -> Tokenizer: ...
@overload
def tokenizer_arg(
    spec: str | os.PathLike[str], command: Literal["tokenize", "tokenize --chat", "pretrain", "tokshow --chat"],
    pattern: str | None = None,
) -> Tokenizer | HFTokenizer: ...
def tokenizer_arg(spec: str | os.PathLike[str], command: str, pattern: str | None = None) -> Tokenizer | HFTokenizer:
    """A TOKENIZER argument -- anything mnemo.load reads (mnemo/formats/load.py), with --pattern
    (`pattern`) for a .tiktoken file -- as the tokenizer the command runs (runnable)."""
    return runnable(spec, command, loaded_arg(spec, pattern, template=command in PIPELINE_COMMANDS))


def loaded_arg(spec: str | os.PathLike[str], pattern: str | None = None, *, template: bool = False) -> AnyTokenizer:
    """A TOKENIZER argument as mnemo.load gives it (a transformers folder: an HFTokenizer with its
    tokenizer_config.json's bos/eos and chat template).  `template`: loaded as asking for the
    post-processor's template, so that a tokenizer.json whose template adds tokens stays an
    HFTokenizer even when a Tokenizer holds the rest (Llama 3's): tokenize separates documents
    with those tokens, as tokenizer(text) adds them (runnable turns the adding off again)."""
    from mnemo.formats.load import resolve

    return resolve(spec, pattern=pattern, add_special_tokens=template)[1]  # named (str) where it is resolved


def runnable(spec: str | os.PathLike[str], command: str, tok: AnyTokenizer) -> Tokenizer | HFTokenizer:
    """What `command` runs of a loaded TOKENIZER: an HFTokenizer itself for PIPELINE_COMMANDS
    (which encode through it, adding no template tokens to a text: mnemo's default), else its
    compiled core (compiled_core)."""
    from mnemo.formats.hf_pipeline import HFTokenizer

    if isinstance(tok, HFTokenizer) and command in PIPELINE_COMMANDS:
        tok.add_special_tokens = False
        return tok
    return compiled_core(spec, command, tok)


def compiled_core(spec: str | os.PathLike[str], command: str, tok: AnyTokenizer) -> Tokenizer:
    """The Tokenizer a command that runs mnemo's compiled encoder alone (`train --from`) takes.
    A tokenizer.json whose pipeline a Tokenizer cannot hold (a normalizer, another pre-tokenizer,
    ignore_merges, added tokens matched otherwise) is refused here by name rather than run otherwise."""
    from mnemo.formats.hf_pipeline import HFTokenizer

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


def chat_tokenizer(spec: str | os.PathLike[str], command: str, tok: AnyTokenizer) -> Tokenizer | HFTokenizer:
    """What --chat runs (runnable), rendering mnemo's chat template (mnemo/chat.py).  A
    transformers folder with a chat template of its own -- other than the one mnemo writes for
    this vocabulary (formats/hf_folder.hf_chat_template), which renders as mnemo's does -- is
    refused: rendering it needs a Jinja engine, which mnemo does not ship, and mnemo's template
    in its place would give the model another format than the one it was trained on
    (docs/cli.md, "--chat")."""
    from mnemo.formats.hf_folder import hf_chat_template
    from mnemo.formats.hf_pipeline import HFTokenizer

    run = runnable(spec, command, tok)
    core = run.core if isinstance(run, HFTokenizer) else run
    if isinstance(tok, HFTokenizer) and tok.chat_template is not None and tok.chat_template != hf_chat_template(core):
        raise ConfigError(
            f"{spec}: has a chat template of its own (tokenizer_config.json or chat_template.jinja), which "
            f"`mnemo {command}` cannot render: mnemo ships no Jinja engine, and rendering mnemo's template instead "
            f"would give another format than the model's; render the conversations to text with transformers' "
            f"apply_chat_template(messages, tokenize=False) and encode that text (mnemo tokenize, tokshow)"
        )
    return run


def read_as(inputs: Sequence[str | Location], input_format: str | None, ray: str | None) -> list[str | Location]:
    """The inputs, each read as `input_format` (--input-format) whatever its name or first bytes."""
    from mnemo.location import location

    if input_format not in (None, "chat") and ray is not None:
        # the Ray runs plan by absolute path (work_ray.shared_paths), where the format is lost
        raise ConfigError(
            f"--input-format {input_format} does not reach the nodes of a Ray run yet; give the files "
            f"names that say their format (.txt, .jsonl, .parquet, .arrow), or run without --ray"
        )
    return [location(p).read_as(input_format) for p in inputs] if input_format is not None else list(inputs)


def ray_choice(args: argparse.Namespace, tasks_per_node: int | None = None, shard_mb: int | None = None) -> RayOptions | None:
    """The library's `ray=` for --ray: None (not given), or RayOptions with what was given."""
    from mnemo.work_ray import RayOptions

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


# ---- outputs, checked before any work -----------------------------------------------------------


def check_paths(args: argparse.Namespace) -> None:
    """Refuse, before the command does any work, an output that cannot be written or that is
    one of the command's inputs, however spelled (Location.check_output: a missing folder or
    bucket, a folder given as a file, the input itself).  Without this,
    `train -o /no/such/dir/x.bin` trained to the end and then died, and
    `tokenize -t tok.bin IN -o tok.bin` replaced the tokenizer with the token file.

    Each command's module says what it reads and writes: the function its parser sets as
    `check_paths` (none for a command that writes no file)."""
    check: Callable[[argparse.Namespace], None] | None = getattr(args, "check_paths", None)
    if check is not None:
        check(args)


def check_output(output: Location | None, inputs: Inputs) -> None:
    """The usual case: one output file (None: not asked for), which is none of the inputs."""
    if output is not None:
        output.check_output(inputs)


def shared_with_nodes(args: argparse.Namespace, paths: Sequence[str | Location]) -> None:
    """--ray: the nodes read the inputs (and write the shards) by path: refused now, before the
    cluster starts, when they are not on storage every node sees."""
    if args.ray is not None:
        from mnemo.work_ray import shared_paths

        shared_paths(list(paths))


def past_the_point_of_no_return() -> None:
    """The work is done and its output (being) written: a Ctrl-C or SIGTERM from here on would
    only make a run whose output is complete exit as interrupted, so both stay blocked for the
    rest of the command (saving a tokenizer.bin and printing the summary: bounded).  A blocked
    signal is dropped when the process ends; the run exits 0 with its output."""
    if threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

