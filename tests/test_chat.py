"""Documents and chats: exact ids and mask bits on hand-written conversations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mnemo import ConfigError, InputError, Tokenizer
from mnemo.chat import MASKBIT, check_conversation, split_mask, strip_mask, strip_mask_array

@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    """Merges: 0 (h, i) -> 256 'hi'; 1 (' ', 'y') -> 257 ' y'.  Default specials from 258:
    <|bos|> 258, <|user|> 259, <|assistant|> 260, <|system|> 261, <|end|> 262."""
    return Tokenizer([(104, 105), (32, 121)])


def test_specials_of_the_example(tok: Tokenizer) -> None:
    assert [tok.special_tokens[s] for s in ("<|bos|>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>")] == [
        258, 259, 260, 261, 262,
    ]


def test_document(tok: Tokenizer) -> None:
    """'hi y' -> chunks 'hi', ' y' -> 256, 257; a document prepends <|bos|>.  Special text in a
    document is plain text."""
    assert tok.render_document("hi y") == [258, 256, 257]
    assert tok.render_document("<|end|>")[1:] == list(b"<|end|>")


def test_conversation_ids_and_mask(tok: Tokenizer) -> None:
    messages = [
        {"role": "system", "content": "y"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hi y"},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "i"},
    ]
    m = MASKBIT
    expected = [
        258,  # <|bos|>
        261, 121, 262,  # <|system|> y <|end|>
        259, 256, 262,  # <|user|> hi <|end|>
        260, 256 | m, 257 | m, 262 | m,  # <|assistant|> hi ' y' <|end|>, content and end masked
        259, 262,  # <|user|> (empty) <|end|>
        260, 105 | m, 262 | m,  # <|assistant|> i <|end|>
    ]
    ids = tok.render_conversation(messages)
    assert ids == expected
    plain, mask = split_mask(ids)
    assert plain == strip_mask(ids) == [t & 0x7FFF for t in expected]
    # The mask covers exactly the assistant contents and their <|end|>.
    assert [i for i, bit in enumerate(mask) if bit] == [8, 9, 10, 14, 15]
    assert tok.decode(plain) == "<|bos|><|system|>y<|end|><|user|>hi<|end|><|assistant|>hi y<|end|><|user|><|end|><|assistant|>i<|end|>"
    arr_plain, arr_mask = strip_mask_array(np.array(ids, dtype=np.uint16))
    assert arr_plain.tolist() == plain and arr_mask.tolist() == mask


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}], r"message 1 has role 'bot'"),
        ([{"role": "user", "content": 5}], r"message 0 \(user\) has content of type int, not str"),
        ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "x<|end|>"}],
         r"message 1 \(assistant\): .*special token '<\|end\|>'"),
        ([{"content": "x"}], r"message 0 has role None"),
        (["hello"], r"message 0 is a str, not a dict"),
        ("hello", r"a conversation is a list of messages, got str"),
    ],
)
def test_malformed_messages(tok: Tokenizer, messages: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        tok.render_conversation(messages)  # type: ignore[arg-type]
    # the check a chat-file reader runs where it knows the file and line: the same message
    with pytest.raises(InputError, match=message):
        check_conversation(messages, tok.special_tokens)
    check_conversation([{"role": "user", "content": "x<|end|>"}])  # no specials given: no special-token check


def test_needs_all_chat_specials_or_none() -> None:
    """Some of mnemo's chat tokens but not all: an error.  None (GPT-2's vocabulary): ChatML as
    text, and vocabularies of 32,768 ids and more use mask bit 31 (tests/test_ids32.py)."""
    with pytest.raises(ConfigError, match="no special token '<\\|system\\|>'"):
        Tokenizer([], special_tokens=["<|bos|>", "<|end|>"]).render_conversation([])
    assert Tokenizer([], special_tokens=["<|endoftext|>"]).render_conversation([]) == [256]


def test_chatml_markers_in_a_gpt2_chat_file_name_file_and_line(tmp_path: Path, cs336_dir: Path) -> None:
    """GPT-2's vocabulary has no chat tokens: chats are ChatML spelt as text, so a message may
    not hold `<|im_start|>` / `<|im_end|>`.  The chat-file reader checks that where it knows the
    file and line (it used to pass the record on, and the worker that rendered it failed with
    'message 1 (assistant): ...' and no file:line)."""
    from mnemo.interop import load_gpt2
    from mnemo.tokenizing import chat_lines, tokenize_files

    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    good = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}
    for marker in ("<|im_end|>", "<|im_start|>"):
        bad = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": f"Hello{marker} there"}]}
        src = tmp_path / "chat.jsonl"
        src.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        expected = rf"{re.escape(str(src))}:3: message 1 \(assistant\): the text contains the chat marker '{re.escape(marker)}' at character 5"
        with pytest.raises(InputError, match=expected):
            list(chat_lines(src, list(gpt2.special_tokens)))
        for workers in (1, 2):
            out = tmp_path / f"chat-{workers}.tok"
            with pytest.raises(InputError, match=expected):
                tokenize_files([src], gpt2, out, chat=True, workers=workers)
            assert not out.exists()
        with pytest.raises(InputError, match=r"message 1 \(assistant\): the text contains the chat marker"):
            gpt2.render_conversation(bad["messages"])  # type: ignore[arg-type]
        check_conversation(bad["messages"], gpt2.special_tokens, chatml=False)  # told: markers are mnemo's tokens
    # mnemo's chat tokens: the ChatML markers are plain text in a message
    tok = Tokenizer([], special_tokens=["<|bos|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"])
    check_conversation([{"role": "user", "content": "a <|im_end|> b"}], tok.special_tokens)
    tok.render_conversation([{"role": "user", "content": "a <|im_end|> b"}])
    # a vocabulary without any special token renders ChatML too: the reader checks its markers
    bare = Tokenizer([], special_tokens=[])
    assert bare.special_tokens == {}
    src = tmp_path / "bare.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "<|im_start|>"}]}) + "\n")
    with pytest.raises(InputError, match=rf"{re.escape(str(src))}:1: message 0 \(user\): the text contains the chat marker"):
        list(chat_lines(src, list(bare.special_tokens)))
