"""Streaming encode: the ids of a text that arrives in pieces, with bounded memory.

`Tokenizer.encode_iterable` is the entry point.  This module holds the rule that makes it exact --
where encoding can be cut so that no id changes whatever text follows (`safe_cut`) -- and the one
definition of the bytes a text is encoded as (`text_bytes`).  It knows nothing of the Tokenizer: it
is handed the encode function, the special tokens' matcher and the pattern's name, so the arrow points
from tokenizer.py down to here.

Plain Python (not compiled): it only cuts text and hands it to the compiled encoder and
pre-tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

from mnemo.errors import ArgumentTypeError
from mnemo.kernels import utf8_of
from mnemo.patterns import SplitPattern, split
from mnemo.superword import KIND_HARD, KIND_JOIN, chunk_kind
from mnemo.special_match import SpecialMatcher

ITERABLE_BLOCK: Final = 1 << 16  # characters gathered before a cut is looked for


def text_bytes(text: str) -> bytes:
    """The UTF-8 bytes that encoding sees for `text`: each lone surrogate becomes U+FFFD, as in
    tiktoken (a surrogate pair is the character it stands for).  `kernels.utf8_of` is
    `text.encode("utf-8")`, an ASCII text of 4 MB or more copied into huge pages (fewer page
    faults of fresh memory: docs/speed.md, "Fresh memory of a long text")."""
    try:
        return utf8_of(text)
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def _coarse_boundary(before: bytes, after: bytes) -> bool:
    """Whether stage 2 (docs/superword.md) cuts between these two stage-1 chunks."""
    return chunk_kind(before, 0, len(before)) != KIND_JOIN or chunk_kind(after, 0, len(after)) == KIND_HARD


def safe_cut(
    data: bytes, pattern: str | SplitPattern, specials: SpecialMatcher | None, longest: int, coarse: bool = False
) -> int:
    """A byte offset in `data` where encoding can be cut without changing any id, whatever follows.

    `specials` matches the special tokens that end a stretch of text (None: there are none);
    `longest` is the longest one's length in bytes.  A match starting at or before len - longest
    is final, and ends a stretch of text for good.  Pre-tokens: the text after the last final
    special is cut at or before its second-to-last piece -- only the last piece boundary can move
    when text is appended (the patterns look at most one character past a piece, and a piece that
    reaches the end can grow).  The pieces are taken of the text up to len - longest + 1, since a
    special starting later would end the stretch there.

    `coarse` (a superword tokenizer): the cut must also end a coarse chunk, so that stage 2
    sees the same coarse chunks; a clause has tens of pieces, so it looks further back.
    """
    size = len(data)
    start = 0
    limit = size
    if specials is not None and longest:
        limit = size - longest + 1
        if limit <= 0:
            return 0
        while limit < size and data[limit] & 0xC0 == 0x80:  # not inside a character
            limit -= 1
        for m in specials.finditer(data):
            if m.start() >= limit:
                break
            start = m.end()
    pieces = split(data[start:limit], pattern)
    # The prefix is encoded on its own, where the pattern sees its end instead of the text that
    # follows: `\s+(?!\S)` then takes "\n\n" whole where "\n\n-" splits as "\n", "\n".  So a
    # cut must also leave the prefix split exactly as it is inside the whole text; step back a
    # piece at a time until it does.
    # Only the last few pieces of the prefix can differ (a piece's match looks at most across a
    # white-space run, which is at most 3 pieces), so the check splits a window of 4 pieces.
    cut = limit - sum(len(p) for p in pieces[-2:])
    for k in range(len(pieces) - 2, max(len(pieces) - (64 if coarse else 8), 0), -1):
        first = max(k - 4, 0)
        window = pieces[first:k]
        begin = cut - sum(len(p) for p in window)
        if split(data[begin:cut], pattern) == window and (not coarse or _coarse_boundary(pieces[k - 1], pieces[k])):
            return cut
        cut -= len(pieces[k - 1])
    return start


def encode_stream(
    texts: Iterable[str],
    encode: Callable[[bytes], list[int]],
    pattern: str | SplitPattern,
    specials: SpecialMatcher | None,
    longest: int,
    coarse: bool = False,
) -> Iterator[int]:
    """The ids of "".join(texts), yielded lazily: exactly `encode` of the whole text's bytes.

    Holds only the text whose ids could still change (a few pieces, or a special token that may
    still be completing); memory does not grow with the input, only with its longest piece.
    """
    carry = b""
    pending: list[str] = []
    pending_size = 0
    threshold = ITERABLE_BLOCK
    for i, part in enumerate(texts):
        if not isinstance(part, str):
            raise ArgumentTypeError(f"texts[{i}] must be a str, got {type(part).__name__}")
        pending.append(part)
        pending_size += len(part)
        if pending_size + len(carry) < threshold:
            continue
        text = "".join(pending)
        pending.clear()
        if text and "\ud800" <= text[-1] <= "\udbff":  # the other half of a surrogate pair may follow
            pending.append(text[-1])
            text = text[:-1]
        pending_size = len(pending[0]) if pending else 0
        data = carry + text_bytes(text)
        cut = safe_cut(data, pattern, specials, longest, coarse)
        if cut:
            yield from encode(data[:cut])
        carry = data[cut:]
        threshold = max(ITERABLE_BLOCK, 2 * len(carry))
    data = carry + text_bytes("".join(pending))
    if data:
        yield from encode(data)
