"""The rules every part of mnemo shares: id limits, the loss-mask bit, pattern and tie names.

One home for each: a module that needs one of these imports it from here.
"""

from __future__ import annotations

from typing import Final

PATTERNS: Final = ("mnemonic", "gpt4", "gpt2", "o200k", "cl100k")  # index = pattern id (docs/formats.md, tokenizer.bin): new ones at the end
TIES: Final = ("id", "bytes")  # index = tie id
MAX_VOCAB: Final = 65536  # ids are stored as uint16
MASKBIT: Final = 0x8000  # the loss-mask bit of a masked uint16 .tok id
MASKBIT32: Final = 0x80000000  # the loss-mask bit of a masked uint32 .tok id
