"""Streaming decode: text from ids that arrive one at a time, as a model generates them.

A byte-level token can end inside a UTF-8 character (GPT-2 spells most CJK characters with two
or three tokens), so decoding each token on its own would print U+FFFD for a character that the
next token completes.  `StreamDecoder` keeps the bytes of an unfinished character back until
the character is complete, and gives out only text that can no longer change.

Why Python's incremental UTF-8 decoder: it holds back exactly a valid prefix of a character and
nothing else, and it replaces invalid bytes by the same rule as `bytes.decode` (one U+FFFD per
maximal invalid subpart, Unicode's recommended practice), so the pieces always add up to
`Tokenizer.decode` of the whole sequence, whatever the split.  docs/streaming.md has the
contract and the choices (what `finish` does with a character that never completed).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mnemo.checks import check_errors
from mnemo.errors import InvalidUTF8Error

if TYPE_CHECKING:
    from mnemo.tokenizer import AllOr, Tokenizer


class StreamDecoder:
    """Ids in, one at a time; out, the text whose UTF-8 is complete.

    >>> import mnemo
    >>> tok = mnemo.Tokenizer([], special_tokens=[])        # bytes only: 'é' takes two ids
    >>> d = tok.stream_decoder()
    >>> [d.step(i) for i in "né!".encode("utf-8")]
    ['n', '', 'é', '!']
    >>> d.finish()
    ''

    `step` and `feed` return "" while a character is still arriving; invalid bytes become
    U+FFFD (with errors="replace") as soon as they cannot start or continue a character, as
    `decode` replaces them.  `finish` ends the stream: bytes still held back (a character cut
    off by the end) are decoded as `decode` would decode them at the end of the text.
    "".join of every piece, `finish()` included, equals `tok.decode(all_ids, errors)`.
    """

    def __init__(self, tokenizer: Tokenizer, errors: str = "replace") -> None:
        self._tokenizer = tokenizer
        self._errors = check_errors(errors)
        self._decoder = codecs.getincrementaldecoder("utf-8")(self._errors)

    @property
    def pending(self) -> bytes:
        """The bytes held back: the start of a character whose last bytes have not arrived."""
        return bytes(self._decoder.getstate()[0])

    def step(self, token: int) -> str:
        """The text that `token` completes ("" when it only starts or continues a character)."""
        return self._decoder.decode(self._tokenizer.token_bytes(token))

    def feed(self, tokens: Iterable[int]) -> str:
        """The text that these tokens complete, as `step` of each would give it, joined."""
        return self._decoder.decode(self._tokenizer.decode_bytes(tokens))

    def finish(self) -> str:
        """End of the stream: the bytes still held back, decoded (U+FFFD for a character cut
        off, with errors="replace"); the decoder is then empty and can start a new stream."""
        return self._decoder.decode(b"", final=True)

    def reset(self) -> None:
        """Drop the bytes held back and start a new stream."""
        self._decoder.reset()


# ---- character offsets ----

#: Every byte that is not a UTF-8 continuation byte (0x80-0xBF): deleting these from a token's
#: bytes leaves its continuation bytes, counted in C rather than byte by byte in Python.
_NOT_CONTINUATION = bytes(range(0x80)) + bytes(range(0xC0, 0x100))


def token_spans(parts: list[bytes]) -> list[tuple[int, int]]:
    """Each token's character span [start, end) in the text its bytes decode to (valid UTF-8).

    tiktoken's rule for `decode_with_offsets`, extended to the end: a token starts at the
    character holding its first byte, and ends after the character holding its last byte.  A
    character split between tokens is therefore inside the span of each of them: 'é' (C3 A9)
    as two tokens gives both the span of the whole 'é'.  Hugging Face's offsets are spans too,
    and agree wherever no character is split.
    """
    spans: list[tuple[int, int]] = []
    chars = 0  # characters started so far
    for raw in parts:
        continuing = len(raw.translate(None, _NOT_CONTINUATION))
        start = chars - 1 if raw and 0x80 <= raw[0] < 0xC0 else chars
        chars += len(raw) - continuing
        spans.append((max(start, 0), chars))
    return spans


def decode_with_offsets(
    tok: Tokenizer, tokens: Iterable[int], spans: bool
) -> tuple[str, list[int]] | tuple[str, list[tuple[int, int]]]:
    """Tokenizer.decode_with_offsets: the text and each token's start (or span) in it."""
    parts = tok.decode_tokens_bytes(tokens)
    data = b"".join(parts)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUTF8Error(
            f"the tokens decode to invalid UTF-8 (byte {exc.start}), so they have no character "
            f"offsets; use decode_tokens_bytes, or decode() which replaces invalid bytes",
            data, exc.start, exc.end,
        ) from None
    found = token_spans(parts)
    if spans:
        return text, found
    return text, [start for start, _ in found]


def encode_with_offsets(
    tok: Tokenizer, text: str, allowed_special: AllOr, disallowed_special: AllOr
) -> tuple[list[int], list[tuple[int, int]]]:
    """Tokenizer.encode_with_offsets: `encode` and each token's character span in `text`."""
    ids = tok.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
    return ids, token_spans(tok.decode_tokens_bytes(ids))
