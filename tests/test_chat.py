"""Chats: exact ids and mask bits on hand-written conversations, and malformed messages."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mnemo import Tokenizer
from mnemo.chat import maskbit_for, render_conversation, strip_mask
from mnemo.errors import ConfigError, SpecialTokenError

M = 0x8000


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    """No merges: every byte is its own id, so the expected ids can be written by hand.
    Specials: <|bos|>=256, <|user|>=257, <|assistant|>=258, <|system|>=259, <|end|>=260, ..."""
    return Tokenizer([])


def test_ids_and_mask_by_hand(tok: Tokenizer) -> None:
    ids = render_conversation(
        tok,
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
            {"role": "user", "content": "?"},
            {"role": "assistant", "content": ""},
        ],
    )
    assert ids == [
        256,  # <|bos|>
        259, ord("S"), 260,  # system: <|system|> S <|end|>
        257, ord("h"), ord("i"), 260,  # user
        258, ord("y") | M, ord("o") | M, 260 | M,  # assistant: content and its <|end|> masked
        257, ord("?"), 260,
        258, 260 | M,  # an empty assistant turn still learns to stop
    ]


def test_mask_covers_exactly_assistant_content_and_end(tok: Tokenizer) -> None:
    messages = [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4, of course."},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "You're welcome!"},
    ]
    ids = render_conversation(tok, messages)
    plain, mask = strip_mask(ids)
    assert tok.decode([int(i) for i in plain[mask]]) == "4, of course.<|end|>You're welcome!<|end|>"
    assert tok.decode([int(i) for i in plain[~mask]]) == (
        "<|bos|><|user|>What is 2+2?<|end|><|assistant|><|user|>Thanks<|end|><|assistant|>"
    )
    assert plain.max() < M


def test_maskbit_for_large_vocabularies() -> None:
    small = Tokenizer([])
    assert maskbit_for(small) == 0x8000
    big = Tokenizer([(97, 97)] + [(256 + k, 97) for k in range(40000)])
    assert maskbit_for(big) == 0x80000000
    ids = render_conversation(big, [{"role": "assistant", "content": "aa"}])
    plain, mask = strip_mask(ids, maskbit_for(big))
    assert mask.tolist() == [False, False, True, True]
    assert plain.tolist()[2] == 256  # "aa" is merge 0


@pytest.mark.parametrize(
    ("messages", "error", "match"),
    [
        ([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], ConfigError, "message 1 has role 'robot'"),
        ([{"role": "user", "content": 3}], ConfigError, r"message 0 \(user\) has content of type int"),
        ([{"role": "user", "content": "a"}, "hello"], ConfigError, "message 1 is a str"),
        ([{"role": "assistant", "content": "x<|end|>y"}], SpecialTokenError, r"message 0 \(assistant\).*'<\|end\|>'"),
        ("hello", ConfigError, "messages must be a list"),
    ],
)
def test_malformed_messages(tok: Tokenizer, messages: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        render_conversation(tok, messages)  # type: ignore[arg-type]


def test_needs_chat_specials() -> None:
    with pytest.raises(ConfigError, match=re.escape("has no <|bos|>, <|system|>, <|user|>, <|assistant|>, <|end|>")):
        render_conversation(Tokenizer([], special_tokens=["<|endoftext|>"]), [])


def test_strip_mask_on_numpy() -> None:
    plain, mask = strip_mask(np.array([5, 5 | M, 7], dtype=np.uint16))
    assert plain.tolist() == [5, 5, 7] and mask.tolist() == [False, True, False]
