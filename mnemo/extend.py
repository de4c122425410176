"""Extending a trained vocabulary: new special tokens, or more merges learned on new text.

Both make a new tokenizer with a new fingerprint (the fingerprint hashes the merges and the
special tokens), so token files written with the old one are refused by the new one, as a file
written with any other tokenizer is: the ids of the old special tokens may have moved.  The
choices and their reasons are in docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemo.constants import MAX_VOCAB
from mnemo.errors import ConfigError

if TYPE_CHECKING:
    from mnemo.tokenizer import Tokenizer


def with_special_tokens(tok: Tokenizer, names: Sequence[str]) -> Tokenizer:
    """`tok` with `names` added as special tokens after its own, at the top of the vocabulary:
    every existing id keeps its meaning (tiktoken's way of extending an Encoding)."""
    from mnemo.tokenizer import Tokenizer, check_special_tokens

    added = check_special_tokens(names)
    clash = [name for name in added if name in tok.special_tokens]
    if clash:
        raise ConfigError(f"{clash[0]!r} is already a special token of this tokenizer (id {tok.special_tokens[clash[0]]})")
    if tok.n_vocab + len(added) > MAX_VOCAB:
        raise ConfigError(
            f"{len(added)} more special tokens make {tok.n_vocab + len(added)} ids, more than {MAX_VOCAB}"
        )
    id_map = None
    if tok.id_map is not None:
        # an imported vocabulary's public ids are a permutation of 0..n_vocab-1: the new ids follow it
        id_map = tok.id_map + list(range(tok.n_vocab, tok.n_vocab + len(added)))
    return Tokenizer(
        tok.merges,
        pattern=tok.pattern,
        special_tokens=_internal_specials(tok) + added,
        tie=tok.tie,
        merge_counts=tok.merge_counts,
        id_map=id_map,
    )


def _internal_specials(tok: Tokenizer) -> list[str]:
    """The special tokens in the order of mnemo's own ids (their order in tokenizer.bin)."""
    return sorted(tok._internal_specials, key=tok._internal_specials.__getitem__)


def continue_from(
    base: Tokenizer, pattern: str | None, special_tokens: Sequence[str] | None, tie: str | None
) -> tuple[str, Sequence[str], str, list[tuple[int, int]]]:
    """(pattern, special tokens, tie rule, initial merges) of a training run that continues
    from `base`: the base's own unless given, and a pattern other than the base's is refused --
    its merges were learned on chunks cut by its pattern, so the old text would no longer
    encode as it did."""
    from mnemo.tokenizer import Tokenizer, type_error

    if not isinstance(base, Tokenizer):
        raise type_error("base", "a Tokenizer (mnemo.Tokenizer.load('tokenizer.bin'))", base)
    if base.id_map is not None:
        raise ConfigError(
            "the tokenizer to continue from renumbers its ids (an imported vocabulary such as GPT-2's); "
            "new merges would need ids inside its numbering -- continue from a tokenizer mnemo trained"
        )
    if pattern is not None and pattern != base.pattern:
        raise ConfigError(
            f"pattern {pattern!r} differs from the pattern {base.pattern!r} of the tokenizer continued from; "
            f"its merges only hold for chunks cut by {base.pattern!r} (leave the pattern out)"
        )
    specials = _internal_specials(base) if special_tokens is None else special_tokens
    return base.pattern, specials, base.tie if tie is None else tie, list(base.merges)
