r"""The added tokens of a Hugging Face tokenizer.json, matched in text as `tokenizers` matches
them (its AddedVocabulary; docs/interop.md).

Every added token -- special or not -- is found in the text before anything else happens, in
two passes:

1. on the text as given, the tokens with `normalized: false`;
2. each stretch between those is normalized (mnemo/formats/hf_normalize.py), then searched for
   the tokens with `normalized: true`, spelt as the normalizer leaves them.

Each pass takes the leftmost match, the longest of those starting there, then goes on after it
(an Aho-Corasick automaton in leftmost-longest mode), and checks each match:

* `single_word`: the match is dropped when a word character (`\w`) touches it on either side
  -- and the search still goes on after it, so a shorter token inside is not found instead;
* `lstrip`: the white space before it (back to the previous match) becomes part of it;
* `rstrip`: the white space after it becomes part of it;
* a match of a token the caller has switched off (mnemo's `allowed_special`, tokenizers'
  `encode_special_tokens`) is skipped the same way: its text stays text.

The result is a list of pieces: the text of each, and the token's id for a match (None for
text in between).  Offsets into the original text are kept for the first pass; a match of the
second pass lies in normalized text.

Plain Python (not compiled), once per text; the search itself is the compiled byte trie of
special-token names (mnemo/special_match.py: leftmost, then longest, non-overlapping, as the
automaton), run on the text's UTF-8 with its byte offsets mapped back to characters.  (An
alternation of the escaped tokens, longest first, finds the same; with 40,000 added tokens it
took seconds to compile.)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import regex

from mnemo.errors import FormatError
from mnemo.formats.common import excerpt
from mnemo.special_match import SpecialMatcher

#: `tokenizers` tests a neighbour with Rust's regex crate (`\w$`, `^\w`, `\s*$`, `^\s*`), whose
#: `\w` and `\s` are Unicode's word and White_Space characters, as the `regex` module's are.
_WORD: Final = regex.compile(r"\w")
_SPACE: Final = regex.compile(r"\s")
_SPACE_RUN: Final = regex.compile(r"\s*")

_FLAGS: Final = ("single_word", "lstrip", "rstrip", "normalized", "special")


@dataclass(frozen=True)
class AddedToken:
    """One entry of tokenizer.json's `added_tokens`."""

    id: int
    content: str
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = True
    special: bool = False


def parse_added_tokens(obj: Any, source: str) -> list[AddedToken]:
    """tokenizer.json's `added_tokens`, checked (FormatError naming the key)."""
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise FormatError(f"{source}: key 'added_tokens' is {excerpt(obj, 80)}, not a list of {{'id', 'content'}} objects")
    out: list[AddedToken] = []
    seen: dict[str, int] = {}
    for j, item in enumerate(obj):
        where = f"{source}: key 'added_tokens[{j}]'"
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise FormatError(f"{where} needs a string 'content' and an integer 'id'")
        ident = item.get("id")
        if not isinstance(ident, int) or isinstance(ident, bool) or ident < 0:
            raise FormatError(f"{where} needs a string 'content' and an integer 'id' (a non-negative integer)")
        content: str = item["content"]
        if not content:
            raise FormatError(f"{where}: the content is empty (tokenizers ignores such a token; remove it)")
        if content in seen:
            raise FormatError(f"{where}: the content {content!r} is listed twice (first as added_tokens[{seen[content]}])")
        flags: dict[str, bool] = {}
        for name in _FLAGS:
            value = item.get(name, name == "normalized" and not item.get("special", False))
            if not isinstance(value, bool):
                raise FormatError(f"{where}.{name} is {excerpt(value, 40)}, not true or false")
            flags[name] = value
        seen[content] = j
        out.append(AddedToken(ident, content, **flags))
    return out


def tokenizers_ids(
    tokens: Sequence[AddedToken],
    model_vocab: Mapping[str, int],
    source: str,
    ids: Callable[[], Iterable[int]] | None = None,
) -> list[AddedToken]:
    """The added tokens with the ids `tokenizers` gives them when it reads the file: a token
    whose content is in model.vocab takes that entry's id; the others are numbered from the
    size of model.vocab on, in the order listed -- whatever id the file writes (its
    deserializer calls add_tokens).  An id so given that model.vocab holds for another token
    is a FormatError: tokenizers would give one id to two tokens.  `ids`: gives model.vocab's
    ids, or at least those from len(model_vocab) on (the only ones an id given here can meet),
    when the caller has a faster way to them (else its values are read); called only for a
    token model.vocab lacks."""
    next_id = len(model_vocab)
    taken: set[int] | None = None  # made for the first token model.vocab lacks
    out: list[AddedToken] = []
    for j, token in enumerate(tokens):
        ident = model_vocab.get(token.content)
        if ident is None:
            ident = next_id
            next_id += 1
            if taken is None:
                taken = set(model_vocab.values() if ids is None else ids())
            if ident in taken:
                owner = next(key for key, i in model_vocab.items() if i == ident)
                raise FormatError(
                    f"{source}: key 'added_tokens[{j}]': tokenizers gives {token.content!r} the id {ident} (it numbers the "
                    f"added tokens model.vocab lacks from the vocabulary's size, {len(model_vocab)}, on), which "
                    f"model.vocab gives to {owner!r}: one id for two tokens"
                )
        out.append(replace(token, id=ident))
    return out


@dataclass(frozen=True)
class Piece:
    """A stretch of text (token None) or an added token's match (its id), with where it lies
    in the original text: [start, end) (None for a piece of normalized text that does not map
    one to one onto the original, see hf_pipeline)."""

    text: str
    token: int | None
    start: int
    end: int
    normalized: bool  # text is the normalizer's output (pass 2), not the original's characters


class AddedVocabulary:
    """The matcher of a tokenizer's added tokens (see the module docstring)."""

    def __init__(self, tokens: Sequence[AddedToken], normalize_content: Any) -> None:
        """`normalize_content(str) -> str`: the normalizer, for the contents of normalized tokens."""
        self.tokens = list(tokens)
        self.by_id = {t.id: t for t in tokens}
        self._raw = {t.content: t for t in tokens if not t.normalized}
        self._normalized: dict[str, AddedToken] = {}
        for t in tokens:
            if t.normalized:
                # two tokens that normalize alike: tokenizers' automaton keeps the later one
                self._normalized[normalize_content(t.content)] = t
        self._raw_re = _matcher(self._raw)
        self._norm_re = _matcher(self._normalized)

    def split(
        self, text: str, normalize: Any, skip: Collection[int] = ()
    ) -> list[Piece]:
        """The pieces of `text` (module docstring); `skip`: ids whose matches stay text."""
        first = self._find(text, self._raw_re, self._raw, skip)
        pieces: list[Piece] = []
        for start, end, token in first:
            if token is not None:
                pieces.append(Piece(text[start:end], token, start, end, False))
                continue
            stretch = text[start:end]
            normal = normalize(stretch)
            if self._norm_re is None:
                pieces.append(Piece(normal, None, start, end, normal != stretch))
                continue
            changed = normal != stretch
            for s2, e2, tok2 in self._find(normal, self._norm_re, self._normalized, skip):
                if changed:
                    pieces.append(Piece(normal[s2:e2], tok2, start, end, True))
                else:
                    pieces.append(Piece(normal[s2:e2], tok2, start + s2, start + e2, False))
        return pieces

    def split_aligned(self, text: str, normalize_aligned: Any, skip: Collection[int] = ()) -> list[tuple[str, int | None, list[int]]]:
        """`split` keeping where each character comes from: (text, id or None, origin) where
        origin[i] is the index in `text` of the character piece text[i] is aligned to (-1:
        the stretch's start, zero-width), as tokenizers' offsets follow them back.
        `normalize_aligned(str) -> (str, list[int])`: the normalizer with its alignment."""
        out: list[tuple[str, int | None, list[int]]] = []
        for start, end, token in self._find(text, self._raw_re, self._raw, skip):
            stretch = text[start:end]
            if token is not None:
                out.append((stretch, token, list(range(start, end))))
                continue
            normal, index = normalize_aligned(stretch)
            origin = [start + i if i >= 0 else -1 - start for i in index]
            if self._norm_re is None:
                out.append((normal, None, origin))
                continue
            for s2, e2, tok2 in self._find(normal, self._norm_re, self._normalized, skip):
                out.append((normal[s2:e2], tok2, origin[s2:e2]))
        return out

    def _find(
        self, text: str, pattern: SpecialMatcher | None, by_content: dict[str, AddedToken], skip: Collection[int]
    ) -> list[tuple[int, int, int | None]]:
        """tokenizers' find_matches: (start, end, id or None) covering `text` (an empty text
        gives one empty piece, as there)."""
        if not text:
            return [(0, 0, None)]
        if pattern is None:
            return [(0, len(text), None)]
        out: list[tuple[int, int, int | None]] = []
        offset = 0
        for start, stop in char_spans(pattern, text):
            token = by_content[text[start:stop]]
            if token.id in skip:
                continue
            if token.single_word:
                start_ok = start == 0 or _WORD.match(text, start - 1) is None
                stop_ok = stop == len(text) or _WORD.match(text, stop) is None
                if not (start_ok and stop_ok):
                    continue
            if token.lstrip:
                # back over the white space before it, not into an earlier match's (tokenizers
                # takes max(start of the run, end of the previous match))
                while start > offset and _SPACE.match(text, start - 1) is not None:
                    start -= 1
            if token.rstrip:
                found = _SPACE_RUN.match(text, stop)
                if found is not None:
                    stop = found.end()
            if offset < start:
                out.append((offset, start, None))
            out.append((start, stop, token.id))
            offset = stop
        if offset != len(text):
            out.append((offset, len(text), None))
        return out


def _matcher(by_content: Mapping[str, AddedToken]) -> SpecialMatcher | None:
    """The trie of the contents' UTF-8 (lone surrogates, which JSON can spell, kept as
    surrogatepass writes them), or None when there are none."""
    if not by_content:
        return None
    return SpecialMatcher([c.encode("utf-8", "surrogatepass") for c in by_content])


def char_spans(matcher: SpecialMatcher, text: str) -> Iterator[tuple[int, int]]:
    """(start, end) in characters of each match of `matcher` in `text`, in order.  A match
    starts and ends on a character boundary (a content is whole characters), so its byte offsets
    map onto character offsets: counted forward once, from match to match."""
    data = text.encode("utf-8", "surrogatepass")
    found = matcher.find_all(data)
    if len(data) == len(text):  # ASCII: the offsets are the same
        for start, end, _ in found:
            yield start, end
        return
    chars = 0
    at = 0
    for start, end, _ in found:
        chars += len(data[at:start].decode("utf-8", "surrogatepass"))
        first = chars
        chars += len(data[start:end].decode("utf-8", "surrogatepass"))
        at = end
        yield first, chars
