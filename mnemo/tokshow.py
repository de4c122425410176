"""How `mnemo tokshow` (and `mnemo demo`) show tokens: each on its own background colour, or
plain with separators when the output is not a terminal."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.tokenizer import Tokenizer

_PLAIN_BG = (60, 22, 52, 17, 94, 23)
_MASKED_BG = (28, 130, 90, 25, 166, 30)


def _token_text(raw: bytes) -> str:
    """A token's bytes as visible text: invalid UTF-8 replaced, newlines and tabs escaped."""
    text = raw.decode("utf-8", "replace")
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def render_tokens(tok: Tokenizer, ids: Sequence[int], mask: Sequence[bool] | None, *, color: bool, show_ids: bool) -> str:
    """Each token on its own background colour (masked ones bright and underlined), or, without
    colour, tokens separated by `|` with masked ones in `[...]`; `show_ids` appends `(id)`.
    A line break follows every token that holds a newline, so the text keeps its lines."""
    out: list[str] = []
    for k, i in enumerate(ids):
        raw = tok.token_bytes(i)
        text = _token_text(raw)
        if show_ids:
            text += f"({i})"
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
