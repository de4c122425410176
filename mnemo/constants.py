"""The rules every part of mnemo shares: id limits, the loss-mask bit, pattern and tie names.

One home for each: a module that needs one of these imports it from here.
"""

from __future__ import annotations

from typing import Final

PATTERNS: Final = ("mnemonic", "gpt4", "gpt2", "o200k", "cl100k")  # index = pattern id (docs/formats.md, tokenizer.bin): new ones at the end
TIES: Final = ("id", "bytes")  # index = tie id
#: The most tokens (bytes + merges + specials) one vocabulary holds.  The encoder packs a pair and
#: its merge number into one 63-bit word, 21 bits each (encode_chunk.py): 2,097,152 tokens, eight
#: times o200k_base.  A token's public id (an imported vocabulary's own numbering) may be larger.
MAX_VOCAB: Final = 1 << 21
#: The largest id a token may have: bit 31 is the loss-mask bit of uint32 token files.
MAX_TOKEN_ID: Final = 0x7FFFFFFF
#: Ids below this fit a uint16 array: the 16-bit token files, caches and fast trainer.
VOCAB16: Final = 1 << 16
#: The most special tokens a tokenizer.bin holds (its header counts them in 16 bits).
MAX_SPECIALS: Final = 0xFFFF
MASKBIT: Final = 0x8000  # the loss-mask bit of a masked uint16 .tok id
MASKBIT32: Final = 0x80000000  # the loss-mask bit of a masked uint32 .tok id


def maskbit_for(n_vocab: int) -> int:
    """The loss-mask bit of a chat of this vocabulary: MASKBIT while every id is below it (the
    chat fits a uint16 .tok), else MASKBIT32 (a uint32 .tok; ids stay below 2**31)."""
    return MASKBIT if n_vocab <= MASKBIT else MASKBIT32
