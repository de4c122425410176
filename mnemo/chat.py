"""Chats as token sequences with a loss mask.

A conversation becomes <|bos|>, then for each message its role's token (<|system|>, <|user|>,
<|assistant|>), its content and <|end|>.  The top bit of a token id, MASKBIT, marks what the model
should learn to produce: each assistant message's content and its <|end|> (so that it learns to
stop).  Everything else -- <|bos|>, the role tokens, system and user turns -- is context only.

MASKBIT is 0x8000 when every id fits in 15 bits (mnemo's default 32,768 ids end at 32,767), else
0x80000000 (the .tok file then stores uint32); `maskbit_for(tokenizer)` says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from mnemo.errors import ConfigError, SpecialTokenError
from mnemo.formats import MASKBIT, MASKBIT32
from mnemo.tokenizer import Tokenizer

ROLES = ("system", "user", "assistant")
CHAT_TOKENS = ("<|bos|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>")


def maskbit_for(tokenizer: Tokenizer) -> int:
    """The mask bit for this tokenizer's ids: 0x8000, or 0x80000000 for vocabularies over 32,768."""
    return MASKBIT if tokenizer.n_vocab <= MASKBIT else MASKBIT32


def render_conversation(tokenizer: Tokenizer, messages: Sequence[Mapping[str, object]]) -> list[int]:
    """The ids of a conversation, with MASKBIT set on each assistant content and its <|end|>.

    `messages` is `[{"role": "system"|"user"|"assistant", "content": str}, ...]`.  A malformed
    message (not a mapping, an unknown role, content that is not a string, or content holding a
    special token's text) is a ConfigError or SpecialTokenError naming the message's index.
    """
    ids = tokenizer.special_tokens
    missing = [name for name in CHAT_TOKENS if name not in ids]
    if missing:
        raise ConfigError(
            f"this tokenizer has no {', '.join(missing)}: chats need mnemo's chat special tokens "
            f"(train with the default special_tokens)"
        )
    mask = maskbit_for(tokenizer)
    end = ids["<|end|>"]
    out = [ids["<|bos|>"]]
    if not isinstance(messages, (list, tuple)):
        raise ConfigError(f"messages must be a list of {{'role', 'content'}} mappings, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ConfigError(f"message {i} is a {type(message).__name__}, not a {{'role', 'content'}} mapping")
        role = message.get("role")
        content = message.get("content")
        if role not in ROLES:
            raise ConfigError(f"message {i} has role {role!r}; the roles are {', '.join(ROLES)}")
        if not isinstance(content, str):
            raise ConfigError(f"message {i} ({role}) has content of type {type(content).__name__}, not str")
        try:
            body = tokenizer.encode(content)
        except SpecialTokenError as exc:
            raise SpecialTokenError(f"message {i} ({role}): {exc}") from None
        out.append(ids[f"<|{role}|>"])
        if role == "assistant":
            out.extend(t | mask for t in body)
            out.append(end | mask)
        else:
            out.extend(body)
            out.append(end)
    return out


def strip_mask(ids: Sequence[int] | npt.NDArray[np.integer], maskbit: int = MASKBIT) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.bool_]
]:
    """(ids without the bit, mask) -- mask[i] is True where the model learns ids[i]."""
    arr = np.asarray(ids, dtype=np.int64)
    mask = (arr & maskbit) != 0
    return arr & ~maskbit, mask
