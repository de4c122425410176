"""tiktoken's two rules about the end of a text, for the tiktoken drop-in (docs/tiktoken.md).

Both start from the same fact: the last pre-token of a text is not final, since more text could
extend it.  tiktoken's core applies it in two places, and code written for tiktoken sees both:

- `encode_with_unstable(text)`: the ids of everything before the last pre-token ("stable"), and
  every token sequence the text could continue as ("completions"), for prompting a model with a
  text that stops mid-word.
- `_encode_bytes(data)` of bytes that are not valid UTF-8: the valid prefix up to the FIRST
  invalid byte is encoded as text; then the last pre-token of that prefix and every byte from
  the invalid one to the end are joined into one piece, which is one token when the vocabulary
  has it, else byte-pair merged as a whole (no split).  So `b" \\xec\\x8b\\xa4\\xed"` (" 실" and
  the first byte of another character) is cl100k's single token 62085, where splitting would
  give three.  mnemo's own `encode_bytes` keeps the pre-tokenizer's rule (each invalid byte a
  one-byte character of the split): `mnemo inspect`, `encode_documents` and token files are
  defined by it.

Where tiktoken takes "the last pre-token", it first widens it back over tokens of spaces, tabs
and newlines when the pre-token itself starts with one (`\\s*[\\r\\n]+` can swallow them once text
follows).  Every step below is that rule, written from tiktoken 0.14.0's `src/lib.rs` and
`src/py.rs` (`_increase_last_piece_token_len`, `_encode_unstable_native`, `_encode_bytes`);
tests/test_tiktoken_dropin.py checks the results against tiktoken itself.

Plain Python: these run on a prompt's end, not on corpora.  The functions take the Tokenizer
whose methods delegate to them; this module sits below tokenizer.py and names it for types only.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Final

from mnemo.checks import type_error
from mnemo.patterns import split
from mnemo.streaming import text_bytes

if TYPE_CHECKING:
    from mnemo.tokenizer import AllOr, Tokenizer

#: Bytes of a token that counts as white space when the last pre-token is widened (tiktoken's set).
SPACE_BYTES: Final = frozenset(b" \n\t")

#: Unicode's White_Space property (Rust's char::is_whitespace, which tiktoken's last rule asks);
#: Python's str.isspace() differs (it takes U+001C..U+001F).
WHITE_SPACE: Final = frozenset(
    [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
)


def _piece_ids(tok: Tokenizer, piece: bytes) -> list[int]:
    """The ids of one piece, merged as a whole (no pre-tokenizer split): tiktoken's byte_pair_encode."""
    return tok._encoder.encode_chunks([piece]) if piece else []


def _all_space(tok: Tokenizer, token: int) -> bool:
    if tok.is_special_token(token):
        return False
    return all(b in SPACE_BYTES for b in tok.token_bytes(token))


def _unstable_start(tok: Tokenizer, ids: list[int], last_piece: bytes) -> int:
    """Where the unstable tokens begin in `ids`, whose last tokens are those of `last_piece`: the
    last pre-token's tokens, widened back over white-space tokens when its first token is one."""
    k = len(ids) - len(_piece_ids(tok, last_piece))
    if k < len(ids) and _all_space(tok, ids[k]):
        while k > 0 and _all_space(tok, ids[k - 1]):
            k -= 1
    return k


def encode_bytes_tiktoken(tok: Tokenizer, data: bytes) -> list[int]:
    """Tokenizer._encode_bytes: tiktoken's ids of any bytes (the module docstring's rule)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise type_error("data", "bytes", data)
    data = bytes(data)
    try:
        data.decode("utf-8")
        return tok._encode_all(data)
    except UnicodeDecodeError as exc:
        valid = exc.start
    head = data[:valid]
    ids = tok._encode_all(head)  # special-token text is plain text here, as in tiktoken
    k = _unstable_start(tok, ids, split(head, tok.split_pattern)[-1]) if head else 0
    piece = tok.decode_bytes(ids[k:]) + data[valid:]
    whole = tok.token_to_id(piece)  # not valid UTF-8, so never a special token's name
    return ids[:k] + ([whole] if whole is not None else _piece_ids(tok, piece))


def _last_char_is_white_space(raw: bytes) -> int:
    """The length of raw's last character when it is complete, white space and not all of raw; else 0."""
    for n in range(1, min(4, len(raw) - 1) + 1):
        try:
            char = raw[-n:].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return n if len(char) == 1 and ord(char) in WHITE_SPACE else 0
    return 0


def encode_with_unstable(
    tok: Tokenizer, text: str, allowed_special: AllOr, disallowed_special: AllOr
) -> tuple[list[int], list[list[int]]]:
    """Tokenizer.encode_with_unstable: (stable ids, completions), tiktoken's contract.

    The stable ids encode a prefix of the text; each completion is a token sequence that, after
    them, spells the rest of the text and possibly more.  Completions come sorted (tiktoken's
    come from a set, in no order)."""
    ids = tok.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
    data = text_bytes(text)
    allowed, _ = tok._resolve_specials(allowed_special, disallowed_special)
    start = 0
    if allowed:
        for m in tok._specials_re(allowed)[1].finditer(data):
            start = m.end()
    if start == len(data):  # empty, or ends with a special token: nothing is unstable
        return ids, []
    k = _unstable_start(tok, ids, split(data[start:], tok.split_pattern)[-1])
    unstable = tok.decode_bytes(ids[k:])
    completions: set[tuple[int, ...]] = set()
    ordered = tok.token_byte_values()

    def starting_with(prefix: bytes) -> list[bytes]:
        found = []
        at = bisect_left(ordered, prefix)
        while at < len(ordered) and ordered[at].startswith(prefix):
            found.append(ordered[at])
            at += 1
        return found

    def token_id(raw: bytes) -> int:
        found = tok.token_to_id(raw)
        assert found is not None  # raw is one of token_byte_values()
        return found

    # one token that starts with the unstable bytes (or is them)
    for raw in starting_with(unstable):
        completions.add((token_id(raw),))
    # a token that straddles the end: part of the unstable bytes, then a token starting with the rest
    for cut in range(1, len(unstable)):
        prefix, suffix = unstable[:cut], unstable[cut:]
        for raw in starting_with(suffix):
            joined = prefix + raw
            try:
                joined.decode("utf-8")
                seq = tok._encode_all(joined)  # split as text is: a split can appear inside
            except UnicodeDecodeError:
                seq = _piece_ids(tok, joined)
            kept: list[int] = []
            spelled = 0
            for t in seq:
                kept.append(t)
                spelled += len(tok._raw(t) or b"")
                if spelled >= len(unstable):
                    break
            completions.add(tuple(kept))
    # white space at the end can become a split of its own once text follows (`\s+(?!\S)`)
    tail = _last_char_is_white_space(unstable)
    if tail:
        completions.add(tuple(_piece_ids(tok, unstable[:-tail]) + _piece_ids(tok, unstable[-tail:])))
    return ids[:k], [list(c) for c in sorted(completions)]
