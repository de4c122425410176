"""The `mnemo` command.  Plain Python: it parses arguments, calls the library and prints.

Each subcommand is one function `cmd_<name>(args) -> int`; `main()` dispatches.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mnemo.errors import MnemoError


class _VersionAction(argparse.Action):
    """`--version` computed lazily: it imports the compiled modules and the kernels."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: object) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, help="print version, build and kernel backend")

    def __call__(self, parser: argparse.ArgumentParser, *a: object, **kw: object) -> None:
        from mnemo.buildinfo import describe

        print(describe())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnemo", description="Fast, verifiable byte-level BPE tokenizer.")
    parser.add_argument("--version", action=_VersionAction)
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code: int = handler(args)
    except MnemoError as exc:
        print(f"mnemo: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mnemo: interrupted", file=sys.stderr)
        return 130
    return code
