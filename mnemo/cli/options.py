"""The argument types and the options several commands share, with their help texts (one
spelling each).  Every default an option shares with the library comes from mnemo/defaults.py,
the table the library's signatures read; a default only the command line has (`--index 0`,
`--prompt The`, `demo --out mnemo-demo`) stays beside its option."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from mnemo.constants import INPUT_FORMATS
from mnemo.defaults import DEFAULT_TEXT_FIELD

if TYPE_CHECKING:
    from mnemo.location import Location

#: What a TOKENIZER argument may be (mnemo/formats/load.py).
LOADABLE = (
    "anything mnemo.load reads: a tokenizer.bin, tokenizer.json, transformers or GPT-2 folder, tekken JSON, "
    ".tiktoken file (Llama 3's tokenizer.model is one) named after an OpenAI encoding or with --pattern "
    "(docs/interop.md)"
)


class Parser(argparse.ArgumentParser):
    """argparse with mnemo's error line: `mnemo: error: ...` after the usage, whichever
    subcommand's option was wrong (argparse's own is `mnemo train: error: ...`)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"mnemo: error: {message} (see `{self.prog} --help`)\n")


#: The subcommands' parsers, each a Parser: every command module adds its own (`add_<command>`).
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"


def path_arg(text: str) -> Location:
    """A path argument: its Location (a local path, or a URL, which a Path would fold)."""
    from mnemo.location import location

    return location(text)


def whole(text: str) -> int:
    """A whole number whose bounds the library checks, with the one message it gives for every
    value out of them: --vocab-size 0 said ">= 1" here while 100 said ">= 272" there."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def pattern_arg(text: str) -> str:
    """--pattern of train and convert: a preset or a split regex, checked here so that an error
    names the option (the library's message: what is wrong and what to give)."""
    from mnemo.checks import check_pattern
    from mnemo.errors import MnemoError
    from mnemo.patterns import compile_pattern

    try:
        compile_pattern(check_pattern(text))
    except MnemoError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def tokenizer_pattern_arg(text: str) -> str:
    """--pattern of a TOKENIZER argument: pattern_arg's, or one of OpenAI's encodings."""
    from mnemo.formats.tiktoken import TIKTOKEN_PRESETS

    if text in TIKTOKEN_PRESETS:
        return text
    try:
        return pattern_arg(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; nor one of OpenAI's encodings ({', '.join(TIKTOKEN_PRESETS)})") from None


def positive(text: str) -> int:
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def ray_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help=f"{what} on a Ray cluster: ADDRESS (HOST:PORT), else the one RAY_ADDRESS names, else a new "
                        f"local one; needs pip install 'mnemo[ray]'")


def tokenizer_option(p: argparse.ArgumentParser, what: str, note: str = "") -> None:
    """-t/--tokenizer, required: WHAT: what it may be (LOADABLE), then NOTE."""
    p.add_argument("-t", "--tokenizer", required=True, type=path_arg, help=f"{what}: {LOADABLE}{note}")


def pattern_option(p: argparse.ArgumentParser, several: bool = False) -> None:
    """--pattern: the split pattern of a TOKENIZER that holds none (mnemo.load's pattern=)."""
    from mnemo.formats.tiktoken import TIKTOKEN_PRESETS
    from mnemo.patterns import PRESETS

    which = ("each .tiktoken TOKENIZER whose name names no OpenAI encoding (the others load as they are)" if several
             else "a .tiktoken TOKENIZER (or GPT-2 files), which holds none")
    p.add_argument("--pattern", default=None, metavar="PATTERN", type=tokenizer_pattern_arg,
                   help=f"split pattern of {which}: a preset ({', '.join(PRESETS)}; llama3 for Llama 3's "
                        f"tokenizer.model), a split regex, or an OpenAI encoding ({', '.join(TIKTOKEN_PRESETS)}), "
                        f"which sets the special tokens too (default: from the file's name; docs/interop.md)")


def input_options(p: argparse.ArgumentParser) -> None:
    """--text-field and --input-format of the commands that read datasets (train, tokenize)."""
    p.add_argument("--text-field", default=DEFAULT_TEXT_FIELD, help=f"JSONL field / Parquet or Arrow column holding the text (default {DEFAULT_TEXT_FIELD})")
    p.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                   help="read every input as this, whatever its name (default: from the name; a stream whose name says none, "
                        "such as - or /dev/stdin: from its first bytes, said on stderr)")


def corpus_text_field(p: argparse.ArgumentParser) -> None:
    """--text-field of the commands that read corpora (eval, inspect)."""
    p.add_argument("--text-field", default=DEFAULT_TEXT_FIELD, help=f"JSONL field holding the text (default {DEFAULT_TEXT_FIELD}; chat records: their messages)")


def quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display (default: progress on a terminal)")


def no_color_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-color", action="store_true", help="plain output even on a terminal (default: colour on a terminal)")
