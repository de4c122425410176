"""The `mnemo` argument parser: each command's module adds its own subparser (`add_*(sub)`);
this module puts them together, with mnemo's error line and the spelling hint for an unknown
option."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from mnemo.cli import convert, evaluate, pretrain, show, tokenize, train
from mnemo.cli.options import Parser, Subcommands

#: The commands in the order `mnemo --help` lists them.
COMMANDS: tuple[Callable[[Subcommands], None], ...] = (
    train.add_train,
    tokenize.add_tokenize,
    show.add_tokshow,
    pretrain.add_pretrain,
    pretrain.add_demo,
    convert.add_convert,
    evaluate.add_inspect,
    evaluate.add_eval,
    show.add_info,
)


class _VersionAction(argparse.Action):
    """`--version` computed lazily: it imports the compiled modules and the kernels."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: object) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, help="print version, build and kernel backend")

    def __call__(self, parser: argparse.ArgumentParser, *a: object, **kw: object) -> None:
        from mnemo.buildinfo import describe

        print(describe())
        parser.exit()


def check_option_spelling(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
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


def ray_argv(argv: Sequence[str]) -> list[str]:
    """`--ray` followed by something that is not a Ray address (an input file) takes no value:
    argparse would otherwise read `mnemo train --ray data.txt -o x` as the address data.txt."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        nxt = out[i + 1]
        if arg == "--ray" and not (":" in nxt or nxt in ("auto", "local")):
            out[i] = "--ray="
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="mnemo", description="Fast, verifiable byte-level BPE tokenizer.",
                    epilog="`mnemo COMMAND --help` describes each command.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser
