"""The CS336 interface: a Tokenizer from `(vocab: dict[int, bytes], merges: list[tuple[bytes,
bytes]])` and special tokens by name (docs/interop.md; the rules: vocab.from_vocab_merges).

Plain Python (not compiled).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnemo.defaults import DEFAULT_GPT2_PATTERN
from mnemo.tokenizer import Tokenizer


def from_vocab_merges(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] | None = None,
    *,
    pattern: str = DEFAULT_GPT2_PATTERN,
) -> Tokenizer:
    """`Tokenizer.from_vocab_merges` as a function (the rules: vocab.from_vocab_merges)."""
    return Tokenizer.from_vocab_merges(vocab, merges, special_tokens, pattern=pattern)
