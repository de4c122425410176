"""Reading a tokenizer.json file: its BPE model's vocab and merges left to the compiled
mnemo/tokenizer_json.py, everything else parsed by json.loads.

`read_json_file` parses the file with model.vocab and model.merges cut out (`{}` and `[]` in
their place) and returns a `ScannedModel` beside it: from_json (hf_pipeline.py) asks it for the
vocabulary and merges of the plain case or of a file converted from ranks (`read`,
`converted`), read from the bytes without a string or dict entry per token, or has it put the
two values back (`fill`, json.loads of each) when it needs them as JSON -- any other case, a
tokenizer that keeps the file's JSON (HFTokenizer), or an error, which json.loads of the whole
file must word first if the values are not valid JSON.  Either way the parsed object, once
filled, is what json.loads of the whole text gives.

Whenever the compiled walk declines (not a tokenizer.json, keys with escapes, a key twice, ...)
or any step fails, the whole text goes through json.loads as before, so every error a file gets
is the one the plain parse words (same line, column and message).

model.merges' end is taken from the end of the text when the file ends `] } }` (Spans.guessed:
tokenizers writes every file so), not found by walking the array.  A reader that walks its items
to that end proves it; before anything else uses it (`fill`, or an error), `spans_hold` walks the
array, and when the array ends elsewhere -- a member after model.merges that the cut-out text
lost -- from_json starts again from json.loads of the whole file (`Misguessed`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from mnemo.errors import FormatError
from mnemo.fileio import read_file
from mnemo.formats.common import BYTE_TO_CHAR, CHAR_TO_BYTE, MAX_TEXT_FILE_BYTES, PathLike, parse_json, utf8_text
from mnemo.formats.hf_added import AddedToken
from mnemo.formats.tiktoken import fields_of_ranks
from mnemo.patterns import SplitPattern, compile_pattern
from mnemo.tokenizer_json import (
    PlainModel,
    Spans,
    alphabet_merges,
    converted_vocab,
    listed_pairs,
    model_spans,
    ranked_tokens,
    read_vocab,
    skip_brackets,
    spelled_keys,
)
from mnemo.vocab import TokenizerFields

#: the UTF-8 of GPT-2's character for each byte: the keys of the 256 byte tokens
BYTE_KEYS: Final = [BYTE_TO_CHAR[byte].encode("utf-8") for byte in range(256)]
#: GPT-2's alphabet read back: the byte of each code point below U+0800, or -1
ALPHABET: Final = [CHAR_TO_BYTE.get(chr(cp), -1) for cp in range(0x800)]


class ScannedModel:
    """The vocab and merges of a tokenizer.json, still as bytes of the file (see the module)."""

    def __init__(self, data: bytes, spans: Spans, source: str, what: str) -> None:
        self._data = data
        self._spans = spans
        self._source = source
        self._what = what
        self._filled = False
        self._proven = not spans.guessed  # whether spans.merges_end is known to be the array's end

    def spans_hold(self) -> bool:
        """Whether model.merges ends where the spans say: a guessed end (Spans.guessed) checked
        by walking the array, once, unless a reader walked its items to that end already."""
        if not self._proven:
            spans = self._spans
            if skip_brackets(self._data, spans.merges_start, len(self._data)) != spans.merges_end:
                return False
            self._proven = True
        return True

    def whole(self) -> Any:
        """json.loads of the whole file (its errors worded as the plain parse words them)."""
        return _whole(self._data, self._source, self._what)

    @property
    def data(self) -> bytes:
        """The file's bytes."""
        return self._data

    def read(self, ignore_merges: bool, added: Sequence[AddedToken]) -> PlainModel | None:
        """model.vocab, and without ignore_merges the plain case's merges
        (tokenizer_json.alphabet_merges, every key left over an added token's text); None when
        the file is not that case.  With ignore_merges, `converted` reads the merges."""
        model = read_vocab(self._data, self._spans)
        if model is None:
            return None
        contents = {token.content.encode("utf-8", "surrogatepass") for token in added}
        if ignore_merges:
            # an added token's text in the vocabulary: _converted_from_ranks' rule for it
            return None if any(len(text) > 1 and model.get(text) is not None for text in contents) else model
        if not alphabet_merges(model, self._data, self._spans, BYTE_KEYS):
            return None
        self._proven = True  # every item walked, to the ']' the spans name
        return model if set(model.leftover()) <= contents else None

    def spelled(self, model: PlainModel) -> list[bytes] | None:
        """The bytes of each byte and merge that `read` found, by mnemo's internal id, decoded
        from their keys in the file's order (tokenizer_json.spelled_keys): the encoder then does
        not spell them from the merges."""
        return spelled_keys(model, ALPHABET)

    def converted(self, model: PlainModel, added: Sequence[AddedToken], pattern: str | SplitPattern) -> TokenizerFields | None:
        """hf_pipeline._converted_from_ranks on the file's bytes (a file converted from ranks,
        with ignore_merges: the ids are the ranks; every token's one pair listed, by rank), or
        None when the file is not that case."""
        by_rank = ranked_tokens(model, ALPHABET)
        if by_rank is None:
            return None
        count = model.size()
        specials: dict[str, int] = {}
        for token in added:
            if token.id >= count:
                specials[token.content] = token.id
            elif model.key(model.entry_of[token.id]) != token.content.encode("utf-8", "surrogatepass"):
                return None
        # each token's pair found among its listed items: every check listed_pairs makes, in
        # the same walk; when that cannot show it, the rank derivation and listed_pairs decide
        vocab = converted_vocab(model, self._data, self._spans, by_rank)
        fields = fields_of_ranks((by_rank, 0), compile_pattern(pattern), specials, vocab)
        if fields is None or fields.id_map is None:
            return None
        if vocab is None and not listed_pairs(model, self._data, self._spans, fields.merges, fields.id_map):
            return None
        self._proven = True  # every item walked, to the ']' the spans name
        return fields

    def fill(self, obj: dict[str, Any]) -> None:
        """Put model.vocab and model.merges into `obj` (the parsed rest of the file) as json.loads
        reads them (once)."""
        if self._filled:
            return
        if not self.spans_hold():
            raise Misguessed
        spans = self._spans
        values = []
        for start, end in ((spans.vocab_start, spans.vocab_end), (spans.merges_start, spans.merges_end)):
            try:
                text = self._data[start:end].decode("utf-8")
                values.append(json.loads(text, object_pairs_hook=_no_repeats))
            except (UnicodeDecodeError, json.JSONDecodeError, _Repeated, RecursionError):
                # the whole file words the error, at its own line and column
                _whole(self._data, self._source, self._what)
                raise AssertionError(f"{self._source}: parsed whole but not in parts") from None
        obj["model"]["vocab"], obj["model"]["merges"] = values
        self._filled = True


def read_json_file(path: PathLike, what: str) -> tuple[Any, ScannedModel | None]:
    """The parsed JSON of the file, and its model's vocab and merges for from_json when they
    were left out of it (None: the object is whole)."""
    return read_json_bytes(read_file(path, MAX_TEXT_FILE_BYTES, what), os.fspath(path), what)


def read_json_bytes(data: bytes, source: str, what: str) -> tuple[Any, ScannedModel | None]:
    """read_json_file of the file `source` whose bytes are `data`."""
    spans = model_spans(data)
    if spans is None:
        return _whole(data, source, what), None
    rest = b"".join(
        (
            data[: spans.vocab_start],
            b"{}",
            data[spans.vocab_end : spans.merges_start],
            b"[]",
            data[spans.merges_end :],
        )
        if spans.vocab_start < spans.merges_start
        else (
            data[: spans.merges_start],
            b"[]",
            data[spans.merges_end : spans.vocab_start],
            b"{}",
            data[spans.vocab_end :],
        )
    )
    try:
        obj = parse_json(rest.decode("utf-8"), source, what)
    except (UnicodeDecodeError, FormatError):
        return _whole(data, source, what), None
    model = obj.get("model") if isinstance(obj, dict) else None
    if not (isinstance(model, dict) and model.get("vocab") == {} and model.get("merges") == []):
        return _whole(data, source, what), None  # the walk and json.loads disagree: trust json.loads
    return obj, ScannedModel(data, spans, source, what)


def _whole(data: bytes, source: str, what: str) -> Any:
    return parse_json(utf8_text(data, source), source, what)


class Misguessed(Exception):
    """model.merges does not end where the text's end said (Spans.guessed): the text parsed
    without it lost a member; from_json starts again from the whole file."""


class _Repeated(Exception):
    """A key listed twice inside model.vocab or model.merges (the whole file words it)."""


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Repeated
    return out


class PlainVocab(Mapping[str, int]):
    """model.vocab as from_json reads it (token string -> id), over a PlainModel's keys: a
    lookup encodes the string, iterating decodes each key (rare: messages)."""

    def __init__(self, model: PlainModel) -> None:
        self._model = model

    def __getitem__(self, key: str) -> int:
        got = self._model.get(key.encode("utf-8", "surrogatepass"))
        if got is None:
            raise KeyError(key)
        return got

    def get(self, key: str, default: Any = None) -> Any:
        got = self._model.get(key.encode("utf-8", "surrogatepass"))
        return default if got is None else got

    def __len__(self) -> int:
        return self._model.size()

    def __iter__(self) -> Iterator[str]:
        return (key.decode("utf-8") for key in self._model.keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None
