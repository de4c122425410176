"""tokshow's renderer: what each token looks like on screen."""

from __future__ import annotations

import pytest

from mnemo import Tokenizer
from mnemo.tokshow import render_tokens


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer([], special_tokens=["<|bos|>"])  # bytes only: every token is one byte


def test_byte_fragments_show_their_bytes(tok: Tokenizer) -> None:
    """'é日' is C3 A9 E6 97 A5: with byte tokens, no token is a whole character, and each showed
    as U+FFFD (`�(195)`), which does not say which byte it is.  Now `<0xC3>`, as Hugging Face
    tokenizers and sentencepiece spell byte-fallback tokens."""
    ids = tok.encode_ordinary("é日")
    assert ids == [0xC3, 0xA9, 0xE6, 0x97, 0xA5]
    out = render_tokens(tok, ids, None, color=False, show_ids=True)
    assert out == "<0xC3>(195)|<0xA9>(169)|<0xE6>(230)|<0x97>(151)|<0xA5>(165)|"
    assert "\ufffd" not in render_tokens(tok, ids, None, color=True, show_ids=False)


def test_whole_characters_and_partial_tokens() -> None:
    """A token holding a whole character shows it; one that ends in a fragment shows the
    character and then the byte.  Control characters other than \\n \\r \\t show as bytes too
    (an ESC would drive the terminal); backslash and newline stay escaped."""
    tok = Tokenizer([(ord(" "), 0xC3), (0xC3, 0xA9)])  # 256: ' \xc3', 257: 'é'
    assert tok.encode_ordinary(" é") == [256, 0xA9]
    assert render_tokens(tok, [256, 0xA9], None, color=False, show_ids=False) == " <0xC3>|<0xA9>|"
    assert render_tokens(tok, [257], None, color=False, show_ids=False) == "é|"
    assert render_tokens(tok, [0x1B, 0x00, 0x7F], None, color=False, show_ids=False) == "<0x1B>|<0x00>|<0x7F>|"
    assert render_tokens(tok, [ord("\\"), ord("\t"), ord("\n")], None, color=False, show_ids=False) == "\\\\|\\t|\\n|\n"
