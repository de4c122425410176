"""Documents and conversations as token ids, with the loss-mask bit of chat token files.

A document is `<|bos|>` + its text.  A conversation is `<|bos|>`, then for each message its role's
token, its content and `<|end|>`.  MASKBIT (0x8000) marks the tokens the model should learn to
produce: each assistant message's content and its `<|end|>` (docs/formats.md,
"Documents and chats").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from mnemo.errors import ConfigError, InputError, SpecialTokenError
from mnemo.constants import MASKBIT


class ChatEncoder(Protocol):
    """What rendering needs of a tokenizer (a `Tokenizer` is one).  A protocol rather than the
    class, so that this module sits below tokenizer.py, whose render methods delegate here."""

    @property
    def special_tokens(self) -> Mapping[str, int]: ...

    @property
    def n_vocab(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def encode_ordinary(self, text: str) -> list[int]: ...

ROLE_TOKENS: Final = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>"}
CHAT_SPECIALS: Final = ("<|bos|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>")


def _special(tokenizer: ChatEncoder, name: str) -> int:
    found = tokenizer.special_tokens.get(name)
    if found is None:
        raise ConfigError(f"the tokenizer has no special token {name!r}, which chats and documents need")
    return found


def render_document(tokenizer: ChatEncoder, text: str) -> list[int]:
    """`<|bos|>` + the text.  Special-token text inside a document is plain text (encode_ordinary):
    documents come from the wild, and a stray `<|end|>` in a web page must not end anything."""
    return [_special(tokenizer, "<|bos|>"), *tokenizer.encode_ordinary(text)]


def render_conversation(tokenizer: ChatEncoder, messages: Sequence[Mapping[str, object]]) -> list[int]:
    """The ids of a conversation, with MASKBIT set on what the assistant says (and its `<|end|>`).

    `messages` is `[{"role": "system"|"user"|"assistant", "content": str}, ...]`.  A message with
    another role, a content that is not a string, or special-token text inside its content is an
    InputError naming the message's index.
    """
    if tokenizer.n_vocab > MASKBIT:
        raise ConfigError(
            f"chat rendering needs every id below MASKBIT = {MASKBIT}, but the vocabulary has {tokenizer.n_vocab} ids"
        )
    ids = {name: _special(tokenizer, name) for name in CHAT_SPECIALS}
    out = [ids["<|bos|>"]]
    for i, message in enumerate(_messages(messages)):
        role, content = _checked_message(i, message)
        try:
            body = tokenizer.encode(content)
        except SpecialTokenError as exc:
            raise InputError(f"message {i} ({role}): {exc}") from None
        out.append(ids[ROLE_TOKENS[role]])
        if role == "assistant":
            out.extend(t | MASKBIT for t in body)
            out.append(ids["<|end|>"] | MASKBIT)
        else:
            out.extend(body)
            out.append(ids["<|end|>"])
    return out


def check_conversation(messages: object, special_tokens: Iterable[str] = ()) -> None:
    """Raise the InputError that render_conversation would raise for `messages` (parsed JSON),
    naming the message, without encoding anything: a reader of chat files runs it on each
    record, where it knows the file and the line to put in front of the message (the encoding
    happens later, in a worker that does not).  `special_tokens`: the names whose text a
    message may not hold (the tokenizer's)."""
    names = [n for n in special_tokens if n]
    for i, message in enumerate(_messages(messages)):
        role, content = _checked_message(i, message)
        for name in names:
            at = content.find(name)
            if at >= 0:
                raise InputError(
                    f"message {i} ({role}): the text contains the special token {name!r} at character {at}; "
                    f"chat messages cannot hold special-token text"
                )


def _messages(messages: object) -> Sequence[object]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InputError(f"a conversation is a list of messages, got {type(messages).__name__}")
    return messages


def _checked_message(i: int, message: object) -> tuple[str, str]:
    """(role, content) of message `i`, or the InputError naming it."""
    if not isinstance(message, Mapping):
        raise InputError(f"message {i} is a {type(message).__name__}, not a dict with 'role' and 'content'")
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLE_TOKENS:
        raise InputError(f"message {i} has role {role!r}; roles are {', '.join(ROLE_TOKENS)}")
    content = message.get("content")
    if not isinstance(content, str):
        raise InputError(f"message {i} ({role}) has content of type {type(content).__name__}, not str")
    return role, content


def split_mask(ids: Iterable[int]) -> tuple[list[int], list[bool]]:
    """(ids without MASKBIT, which of them carried it)."""
    plain: list[int] = []
    mask: list[bool] = []
    for t in ids:
        plain.append(t & ~MASKBIT)
        mask.append(bool(t & MASKBIT))
    return plain, mask


def strip_mask(ids: Iterable[int]) -> list[int]:
    """The ids without MASKBIT (what to decode or feed to a model)."""
    return [t & ~MASKBIT for t in ids]


def strip_mask_array(ids: npt.NDArray[np.integer]) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.bool_]]:
    """numpy twin of split_mask for uint16 token arrays (e.g. a memory-mapped chat .tok)."""
    return ids & ~np.asarray(MASKBIT, dtype=ids.dtype), (ids & MASKBIT) != 0
