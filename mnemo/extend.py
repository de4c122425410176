"""Extending a trained vocabulary by training on: more merges learned on new text, its own first.

New special tokens are `Tokenizer.with_special_tokens`.

Either way the new tokenizer has a new fingerprint (the fingerprint hashes the merges and the
special tokens), so token files written with the old one are refused by the new one, as a file
written with any other tokenizer is: the ids of the old special tokens may have moved.  The
choices and their reasons are in docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.checks import type_error
from mnemo.errors import ConfigError
from mnemo.patterns import SplitPattern, compile_pattern
from mnemo.tokenizer import Tokenizer


def continue_from(
    base: Tokenizer, pattern: str | SplitPattern | None, special_tokens: Sequence[str] | None, tie: str | None
) -> tuple[SplitPattern, Sequence[str], str, list[tuple[int, int]]]:
    """(pattern, special tokens, tie rule, initial merges) of a training run that continues
    from `base`: the base's own unless given, and a pattern other than the base's is refused --
    its merges were learned on chunks cut by its pattern, so the old text would no longer
    encode as it did."""
    if not isinstance(base, Tokenizer):
        raise type_error("base", "a Tokenizer (mnemo.Tokenizer.load('tokenizer.bin'))", base)
    if base.superword is not None:
        raise ConfigError(
            "the tokenizer to continue from is a superword tokenizer (docs/superword.md); continuing it would put "
            "ordinary merges after its stage-2 ones -- train a new one with superword=T instead"
        )
    if base.id_map is not None:
        raise ConfigError(
            "the tokenizer to continue from is an imported vocabulary (GPT-2's files, a .tiktoken or tekken file, "
            "a tokenizer.json another tool trained), whose ids are its own, not mnemo's merge order; continuing "
            "one is not supported: its new tokens would need ids past its own and its special tokens would have to "
            "keep theirs.  Train a new tokenizer on the text instead (no base= / --from), or add tokens without "
            "new merges with with_special_tokens (docs/extending.md); a tokenizer mnemo trained, as tokenizer.bin "
            "or exported, continues"
        )
    if pattern is not None and compile_pattern(pattern) is not base.split_pattern:
        raise ConfigError(
            f"pattern {pattern!r} differs from the pattern {base.pattern!r} of the tokenizer continued from; "
            f"its merges only hold for chunks cut by {base.pattern!r} (leave the pattern out)"
        )
    # no id map (refused above): the public ids are mnemo's own, in tokenizer.bin's order
    own = sorted(base.special_tokens, key=base.special_tokens.__getitem__)
    specials = own if special_tokens is None else special_tokens
    return base.split_pattern, specials, base.tie if tie is None else tie, list(base.merges)
