"""How `mnemo tokshow` (and `mnemo demo`) show tokens: each on its own background colour, or
plain with separators when the output is not a terminal."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemo.tokenizer import Tokenizer

if TYPE_CHECKING:
    from mnemo.formats.hf_pipeline import HFTokenizer

_PLAIN_BG = (60, 22, 52, 17, 94, 23)
_MASKED_BG = (28, 130, 90, 25, 166, 30)
#: Shown as <0xNN>: what surrogateescape makes of the bytes 0x80-0xFF that are not valid UTF-8,
#: and control characters other than the escaped \n \r \t (an ESC would drive the terminal).
_AS_BYTE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\udc80-\udcff]")


def token_text(raw: bytes) -> str:
    """A token's bytes as visible text: newlines and tabs escaped, and each byte that is not
    part of valid UTF-8 (a fragment of a character the next token completes) shown as `<0xC3>`,
    the byte-fallback spelling of sentencepiece and Hugging Face tokenizers -- a U+FFFD in its
    place would not say which byte the token holds."""
    text = raw.decode("utf-8", "surrogateescape")
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return _AS_BYTE.sub(_byte_name, text)


def _byte_name(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"<0x{c - 0xDC00 if c >= 0xDC00 else c:02X}>"


def render_tokens(
    tok: Tokenizer | HFTokenizer,
    ids: Sequence[int],
    mask: Sequence[bool] | None,
    *,
    color: bool,
    show_ids: bool,
    spans: Sequence[tuple[int, int]] | None = None,
) -> str:
    """Each token on its own background colour (masked ones bright and underlined), or, without
    colour, tokens separated by `|` with masked ones in `[...]`; `show_ids` appends `(id)`, and
    `spans` (Tokenizer.encode_with_offsets) each token's character span `@start:end`.
    A line break follows every token that holds a newline, so the text keeps its lines."""
    out: list[str] = []
    for k, i in enumerate(ids):
        raw = tok.token_bytes(i)
        text = token_text(raw)
        if show_ids:
            text += f"({i})"
        if spans is not None:
            text += f"@{spans[k][0]}:{spans[k][1]}"
        masked = mask is not None and bool(mask[k])
        if color:
            bg = (_MASKED_BG if masked else _PLAIN_BG)[k % len(_PLAIN_BG)]
            piece = f"\x1b[48;5;{bg}m" + ("\x1b[4m" if masked else "") + text + "\x1b[0m"
        else:
            piece = (f"[{text}]" if masked else text) + "|"
        out.append(piece)
        if b"\n" in raw:
            out.append("\n")
    return "".join(out)
