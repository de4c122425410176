"""Documents and conversations as token ids, with the loss-mask bit of chat token files.

A document is `<|bos|>` + its text.  A conversation is `<|bos|>`, then for each message its role's
token, its content and `<|end|>`.  The loss-mask bit marks the tokens the model should learn to
produce: each assistant message's content and its `<|end|>` (docs/formats.md, "Documents and
chats").  It is MASKBIT (0x8000, bit 15) while the vocabulary's ids are below 32,768 (a uint16
chat .tok), else MASKBIT32 (bit 31, a uint32 .tok): constants.maskbit_for.  Callers who want
Hugging Face's shape take `(ids, mask)` instead (render_conversation_mask).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from mnemo.checks import check_maskbit
from mnemo.errors import ConfigError, InputError, SpecialTokenError
from mnemo.constants import EOT, MASKBIT, MASKBIT32, maskbit_for


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
# Vocabularies without any of mnemo's chat tokens (GPT-2's, cl100k_base, o200k_base) get ChatML
# -- the template Hugging Face applied to tokenizers without one of their own
# (`default_chat_template`): `<|im_start|>ROLE\nCONTENT<|im_end|>\n`, after `<|endoftext|>`
# when the vocabulary has it; the two markers are spelt as text unless both are special tokens
# of the vocabulary (Qwen's), then they are their ids (docs/ids32.md).
CHATML_START: Final = "<|im_start|>"
CHATML_END: Final = "<|im_end|>"


def uses_chatml(special_tokens: Iterable[str]) -> bool:
    """Whether a vocabulary with these special tokens renders chats as ChatML text: it has none
    of mnemo's chat tokens (GPT-2's, cl100k_base, o200k_base)."""
    names = set(special_tokens)
    return not any(name in names for name in CHAT_SPECIALS)


def _chatml_marker_error(i: int, role: str, content: str) -> InputError | None:
    for marker in (CHATML_START, CHATML_END):
        at = content.find(marker)
        if at >= 0:
            return InputError(
                f"message {i} ({role}): the text contains the chat marker {marker!r} at character {at}; "
                f"chat messages cannot hold the template's markers (this vocabulary has no chat tokens, so "
                f"chats are ChatML: docs/ids32.md)"
            )
    return None


def _chatml_markers(tokenizer: ChatEncoder) -> tuple[int, int] | None:
    """The ids of `<|im_start|>` and `<|im_end|>` when the vocabulary has both as special tokens
    (Hugging Face's tokenizers find them so in the rendered text); None: they are spelt as text."""
    start, end = tokenizer.special_tokens.get(CHATML_START), tokenizer.special_tokens.get(CHATML_END)
    return None if start is None or end is None else (start, end)


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
    """The ids of a conversation, with the loss-mask bit (maskbit_for: MASKBIT below 32,768 ids,
    else MASKBIT32) set on what the assistant says (and its `<|end|>`): the ids a chat .tok holds.

    `messages` is `[{"role": "system"|"user"|"assistant", "content": str}, ...]`.  A message with
    another role, a content that is not a string, or special-token text inside its content is an
    InputError naming the message's index.
    """
    ids, mask = render_conversation_mask(tokenizer, messages)
    bit = maskbit_for(tokenizer.n_vocab)
    return [t | bit if m else t for t, m in zip(ids, mask)]


def render_conversation_mask(tokenizer: ChatEncoder, messages: Sequence[Mapping[str, object]]) -> tuple[list[int], list[int]]:
    """The conversation as (ids, mask), Hugging Face's shape (`apply_chat_template(...,
    return_assistant_tokens_mask=True)`'s `assistant_masks`): plain ids, and 1 where the loss
    counts (what the assistant says and its `<|end|>`), else 0.  Any vocabulary size."""
    if uses_chatml(tokenizer.special_tokens):
        return _render_chatml_text(tokenizer, messages)
    ids = {name: _special(tokenizer, name) for name in CHAT_SPECIALS}
    out = [ids["<|bos|>"]]
    mask = [0]
    for i, message in enumerate(_messages(messages)):
        role, content = _checked_message(i, message)
        try:
            body = tokenizer.encode(content)
        except SpecialTokenError as exc:
            raise InputError(f"message {i} ({role}): {exc}") from None
        learned = 1 if role == "assistant" else 0
        out.append(ids[ROLE_TOKENS[role]])
        out.extend(body)
        out.append(ids["<|end|>"])
        mask.append(0)
        mask.extend([learned] * (len(body) + 1))
    return out, mask


def _render_chatml_text(tokenizer: ChatEncoder, messages: Sequence[Mapping[str, object]]) -> tuple[list[int], list[int]]:
    """ChatML, for vocabularies without chat tokens (markers: _chatml_markers).  Header, content,
    end marker and newline are encoded apart, so that the mask (content and `<|im_end|>` of the
    assistant's turns, as the `{% generation %}` blocks of Hugging Face's ChatML templates) falls
    on token boundaries; a message may not hold a marker."""
    out: list[int] = []
    mask: list[int] = []
    eot = tokenizer.special_tokens.get(EOT)
    if eot is not None:
        out.append(eot)
        mask.append(0)
    markers = _chatml_markers(tokenizer)
    end = tokenizer.encode_ordinary(CHATML_END) if markers is None else [markers[1]]
    newline = tokenizer.encode_ordinary("\n")
    for i, message in enumerate(_messages(messages)):
        role, content = _checked_message(i, message)
        marker_error = _chatml_marker_error(i, role, content)
        if marker_error is not None:
            raise marker_error
        try:
            body = tokenizer.encode(content)
        except SpecialTokenError as exc:
            raise InputError(f"message {i} ({role}): {exc}") from None
        if markers is None:
            head = tokenizer.encode_ordinary(f"{CHATML_START}{role}\n")
        else:
            head = [markers[0], *tokenizer.encode_ordinary(f"{role}\n")]
        learned = 1 if role == "assistant" else 0
        out += head + body + end + newline
        mask += [0] * len(head) + [learned] * (len(body) + len(end)) + [0] * len(newline)
    return out, mask


def check_conversation(messages: object, special_tokens: Iterable[str] = (), *, chatml: bool | None = None) -> None:
    """Raise the InputError that render_conversation would raise for `messages` (parsed JSON),
    naming the message, without encoding anything: a reader of chat files runs it on each
    record, where it knows the file and the line to put in front of the message (the encoding
    happens later, in a worker that does not).  `special_tokens`: the names whose text a
    message may not hold (the tokenizer's).  `chatml`: whether the tokenizer renders ChatML as
    text (uses_chatml), so that a message may not hold its markers either; by default, when
    `special_tokens` are given and hold none of mnemo's chat tokens."""
    names = [n for n in special_tokens if n]
    if chatml is None:
        chatml = bool(names) and uses_chatml(names)
    for i, message in enumerate(_messages(messages)):
        role, content = _checked_message(i, message)
        if chatml:
            marker_error = _chatml_marker_error(i, role, content)
            if marker_error is not None:
                raise marker_error
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


def split_mask(ids: Iterable[int], maskbit: int = MASKBIT) -> tuple[list[int], list[bool]]:
    """(ids without the mask bit, which of them carried it).  `maskbit`: the vocabulary's,
    maskbit_for(tokenizer.n_vocab) -- MASKBIT (the default) for vocabularies below 32,768 ids;
    for a larger one bit 15 is part of an id, and MASKBIT32 is the bit."""
    check_maskbit(maskbit)
    plain: list[int] = []
    mask: list[bool] = []
    for t in ids:
        plain.append(t & ~maskbit)
        mask.append(bool(t & maskbit))
    return plain, mask


def strip_mask(ids: Iterable[int], maskbit: int = MASKBIT) -> list[int]:
    """The ids without the mask bit (what to decode or feed to a model); `maskbit` as in split_mask."""
    check_maskbit(maskbit)
    return [t & ~maskbit for t in ids]


def strip_mask_array(
    ids: npt.NDArray[np.integer], maskbit: int | None = None
) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.bool_]]:
    """numpy twin of split_mask for chat token arrays (e.g. a memory-mapped chat .tok).  The bit,
    unless given, is the one a .tok of this dtype holds: MASKBIT32 in uint32 arrays, else MASKBIT."""
    bit = maskbit if maskbit is not None else MASKBIT32 if ids.dtype == np.uint32 else MASKBIT
    check_maskbit(bit)
    return ids & ~np.asarray(bit, dtype=ids.dtype), (ids & bit) != 0
