"""tokenizers' whole Encoding of a text, as mnemo makes it (issue 26 item 8; docs/interop.md,
"transformers").

`Encoding` is tokenizers' (tokenizer/encoding.rs) in Python: ids, type ids, tokens, offsets
(characters of the original text), word ids, special-tokens and attention masks, sequence
ranges and overflowing parts; `truncate`, `pad`, `merge` and the lookups transformers'
BatchEncoding calls (`word_to_tokens`, `char_to_token`, ...) follow tokenizers' code line by line.
`encode_sequence` runs HFTokenizer's pipeline keeping where every piece comes from;
`post_process` applies the post-processor's steps (ByteLevel's offset trimming, the template);
`encode` puts them together with truncation and padding as tokenizers' Tokenizer.encode does.

Plain Python (not compiled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mnemo.errors import ConfigError
from mnemo.formats.common import token_to_string
from mnemo.formats.hf_post import Template, Trim, trim
from mnemo.formats.hf_normalize import normalize_aligned

if TYPE_CHECKING:
    from mnemo.formats.hf_pipeline import HFTokenizer


@dataclass
class Encoding:
    """tokenizers' Encoding (module docstring); attribute and method names are its Python
    binding's, which transformers reads."""

    ids: list[int] = field(default_factory=list)
    type_ids: list[int] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    words: list[int | None] = field(default_factory=list)
    special_tokens_mask: list[int] = field(default_factory=list)
    attention_mask: list[int] = field(default_factory=list)
    overflowing: list[Encoding] = field(default_factory=list)
    sequence_ranges: dict[int, tuple[int, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, attention_mask, special_tokens_mask, overflowing])"

    @property
    def word_ids(self) -> list[int | None]:
        return list(self.words)

    @property
    def n_sequences(self) -> int:
        return len(self.sequence_ranges) or 1

    def set_sequence_id(self, sequence_id: int) -> None:
        self.sequence_ranges[sequence_id] = (0, len(self.ids))

    def sequence_range(self, sequence_id: int) -> tuple[int, int]:
        return self.sequence_ranges.get(sequence_id, (0, len(self.ids)))

    @property
    def sequence_ids(self) -> list[int | None]:
        out: list[int | None] = [None] * len(self.ids)
        for seq in range(self.n_sequences):
            a, b = self.sequence_range(seq)
            out[a:b] = [seq] * (b - a)
        return out

    # ---- the lookups (tokenizers' encoding.rs) ----

    def token_to_sequence(self, token: int) -> int | None:
        if token > len(self.ids):
            return None
        if not self.sequence_ranges:
            return 0
        return next((seq for seq, (a, b) in self.sequence_ranges.items() if a <= token < b), None)

    def token_to_chars(self, token: int) -> tuple[int, int] | None:
        if self.token_to_sequence(token) is None or token >= len(self.offsets):
            return None
        return self.offsets[token]

    def token_to_word(self, token: int) -> int | None:
        if self.token_to_sequence(token) is None or token >= len(self.words):
            return None
        return self.words[token]

    def word_to_tokens(self, word: int, sequence_index: int = 0) -> tuple[int, int] | None:
        a, b = self.sequence_range(sequence_index)
        start: int | None = None
        end: int | None = None
        for i, w in enumerate(self.words[a:b]):
            if not (w is None or w <= word):  # take_while(w <= Some(word)), None first
                break
            if w == word:
                if start is None or i < start:
                    start = i
                if end is None or i >= end:
                    end = i + 1
        if start is None or end is None:
            return None
        return a + start, a + end

    def word_to_chars(self, word: int, sequence_index: int = 0) -> tuple[int, int] | None:
        found = self.word_to_tokens(word, sequence_index)
        if found is None or found[1] == 0:
            return None
        return self.offsets[found[0]][0], self.offsets[found[1] - 1][1]

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> int | None:
        a, b = self.sequence_range(sequence_index)
        for i, (s, e) in enumerate(self.offsets[a:b]):
            if s <= char_pos < e:
                return a + i
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None:
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)

    # ---- truncation, padding, merging (encoding.rs) ----

    def clone(self) -> Encoding:
        """A copy sharing nothing mutable (its items are ints, strs and tuples)."""
        return Encoding(
            list(self.ids), list(self.type_ids), list(self.tokens), list(self.offsets), list(self.words),
            list(self.special_tokens_mask), list(self.attention_mask), [o.clone() for o in self.overflowing],
            dict(self.sequence_ranges),
        )  # fmt: skip

    def _joined(self, pair: Encoding) -> Encoding:
        """A copy of self merged with `pair` (merge_with's unit), leaving both as they were.

        tokenizers clones both sides first, overflowing parts and all; here nothing is copied that
        merge_with only reads: `pair` is read, and the copy's overflowing parts (self's, shared)
        are only read by its own merge_with, which then replaces its list with new encodings.  On
        a pair truncated into many parts the deep copies were most of the time (a transformers
        call with truncation="only_second": 885,964 copies, a quarter of a test's 90 s)."""
        joined = Encoding(
            list(self.ids), list(self.type_ids), list(self.tokens), list(self.offsets), list(self.words),
            list(self.special_tokens_mask), list(self.attention_mask), list(self.overflowing),
            dict(self.sequence_ranges),
        )  # fmt: skip
        joined.merge_with(pair)
        return joined

    def _slice(self, a: int, b: int) -> Encoding:
        return Encoding(
            self.ids[a:b], self.type_ids[a:b], self.tokens[a:b], self.offsets[a:b], self.words[a:b],
            self.special_tokens_mask[a:b], self.attention_mask[a:b],
        )  # fmt: skip

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        n = len(self.ids)
        if max_length >= n:
            return
        if max_length == 0:
            old = self.clone()
            self.__dict__.update(Encoding().__dict__)
            self.overflowing = [old]
            return
        if stride >= max_length:
            raise ConfigError(f"stride {stride} must be strictly less than max_length {max_length} (after the template's tokens)")
        step = max_length - stride
        ranges: list[tuple[int, int]] = []
        if direction == "right":
            for start in range(0, n, step):
                stop = min(start + max_length, n)
                ranges.append((start, stop))
                if stop == n:
                    break
        else:
            for last in range(n - 1, -1, -step):
                stop = last + 1
                start = max(stop - max_length, 0)
                ranges.append((start, stop))
                if start == 0:
                    break
        parts = [self._slice(a, b) for a, b in ranges]
        first = parts[0]
        first.overflowing = parts[1:]
        self.__dict__.update(first.__dict__)

    def pad(self, length: int, pad_id: int, pad_type_id: int, pad_token: str, direction: str = "right") -> None:
        for o in self.overflowing:
            o.pad(length, pad_id, pad_type_id, pad_token, direction)
        k = length - len(self.ids)
        if k <= 0:
            return
        if direction == "left":
            self.ids = [pad_id] * k + self.ids
            self.type_ids = [pad_type_id] * k + self.type_ids
            self.tokens = [pad_token] * k + self.tokens
            none: list[int | None] = [None] * k
            self.words = none + self.words
            self.attention_mask = [0] * k + self.attention_mask
            self.special_tokens_mask = [1] * k + self.special_tokens_mask
            self.offsets = [(0, 0)] * k + self.offsets
            self.sequence_ranges = {s: (a + k, b + k) for s, (a, b) in self.sequence_ranges.items()}
        else:
            self.ids += [pad_id] * k
            self.type_ids += [pad_type_id] * k
            self.tokens += [pad_token] * k
            self.words += [None] * k
            self.attention_mask += [0] * k
            self.special_tokens_mask += [1] * k
            self.offsets += [(0, 0)] * k

    def merge_with(self, pair: Encoding) -> None:
        """Encoding::merge_with(pair, growing_offsets=false), overflowing parts combined."""
        overflowings: list[Encoding] = []
        for mine in self.overflowing:
            overflowings.append(mine._joined(pair))
            overflowings.extend(mine._joined(theirs) for theirs in pair.overflowing)
        overflowings.extend(self._joined(theirs) for theirs in pair.overflowing)
        n = len(self.ids)
        for seq, (a, b) in pair.sequence_ranges.items():
            self.sequence_ranges[seq] = (n + a, n + b)
        self.ids += pair.ids
        self.type_ids += pair.type_ids
        self.tokens += pair.tokens
        self.words += pair.words
        self.offsets += pair.offsets
        self.special_tokens_mask += pair.special_tokens_mask
        self.attention_mask += pair.attention_mask
        self.overflowing = overflowings

    @staticmethod
    def merge(encodings: Sequence[Encoding]) -> Encoding:
        out = Encoding()
        for e in encodings:
            out.merge_with(e)
        return out


# ---- one sequence through the pipeline ----


def _span(origin: int) -> tuple[int, int]:
    """A character's span in the original text (origin < 0: zero-width at -origin - 1)."""
    return (origin, origin + 1) if origin >= 0 else (-origin - 1, -origin - 1)


def encode_sequence(tok: HFTokenizer, text: str, type_id: int = 0, skip: Sequence[int] = (), word: int | None = None) -> Encoding:
    """One sequence as tokenizers' encode_single_sequence gives it, before truncation and
    post-processing: every id, its token string, its character offsets in `text` and its word
    (the index of its split among the text's splits; `word`: every token's, for a
    pre-tokenized word)."""
    ids: list[int] = []
    tokens: list[str] = []
    offsets: list[tuple[int, int]] = []
    words: list[int | None] = []
    info = _token_info(tok)
    whole = tok.whole
    split_index = 0
    aligned = (lambda s: normalize_aligned(tok.forms, s)) if tok.forms else (lambda s: (s, list(range(len(s)))))
    for piece, token, origin in tok._added.split_aligned(text, aligned, skip):
        if token is not None:
            ids.append(token)
            tokens.append(piece)
            offsets.append((_span(origin[0])[0], _span(origin[-1])[1]))
            words.append(split_index if word is None else word)
            split_index += 1
            continue
        if not piece:
            continue
        for s, e, prefixed in tok._runner.spans(piece):
            pre = (" " if prefixed else "") + piece[s:e]
            chars = ([origin[s]] if prefixed else []) + origin[s:e]
            data = pre.encode("utf-8")
            if len(data) == len(pre):
                char_of_byte: Sequence[int] = range(len(data))  # ASCII: a byte is a character
            else:
                spread: list[int] = []
                for i, ch in enumerate(pre):
                    spread.extend([i] * len(ch.encode("utf-8")))
                char_of_byte = spread
            found = whole.get(data) if whole is not None else None
            piece_ids = [found] if found is not None else tok._encoder([data])
            w = split_index if word is None else word
            pos = 0
            for ident in piece_ids:
                if found is not None:
                    size, spelt = len(data), token_to_string(data)
                else:
                    size, spelt = info(ident)
                first, last = chars[char_of_byte[pos]], chars[char_of_byte[pos + size - 1]]
                ids.append(ident)
                tokens.append(spelt)
                offsets.append((first if first >= 0 else -first - 1, last + 1 if last >= 0 else -last - 1))
                words.append(w)
                pos += size
            split_index += 1
    n = len(ids)
    return Encoding(ids, [type_id] * n, tokens, offsets, words, [0] * n, [1] * n)


def _token_info(tok: HFTokenizer) -> Any:
    """(byte length, spelling in GPT-2's alphabet) of a BPE id, cached on the tokenizer."""
    cache: dict[int, tuple[int, str]] = tok.__dict__.setdefault("_token_info", {})

    def info(ident: int) -> tuple[int, str]:
        found = cache.get(ident)
        if found is None:
            raw = tok.core.token_bytes(ident)
            found = cache[ident] = (len(raw), token_to_string(raw))
        return found

    return info


# ---- the post-processor, truncation, padding ----


def post_process(tok: HFTokenizer, encodings: list[Encoding], add_special_tokens: bool) -> Encoding:
    """tokenizers' PostProcessor::process: each sequence gets its index as sequence and type
    id, the steps run in order on the list of parts, the parts are merged."""
    for i, e in enumerate(encodings):
        for part in [e, *e.overflowing]:
            part.set_sequence_id(i)
        e.type_ids = [i] * len(e.ids)
    parts = encodings
    for step in tok.post.steps:
        if isinstance(step, Trim):
            for i, e in enumerate(parts):
                for part in [e, *e.overflowing]:
                    _trim(part, step.add_prefix_space)
                e.set_sequence_id(i)  # as tokenizers' ByteLevel does, whatever the part
        else:
            parts = _apply_template(step, parts, add_special_tokens)
    return Encoding.merge(parts)


def _trim(e: Encoding, add_prefix_space: bool) -> None:
    e.offsets = [
        trim(token, offsets, i == 0 or offsets[0] == 0, add_prefix_space)
        for i, (token, offsets) in enumerate(zip(e.tokens, e.offsets))
    ]


def _apply_template(template: Template, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
    pieces = template.pair if len(encodings) == 2 else template.single
    out: list[Encoding] = []
    for piece in pieces:
        if piece.sequence is not None:
            i = 0 if piece.sequence == "A" else 1
            e = encodings[i].clone()
            e.type_ids = [piece.type_id] * len(e.ids)
            e.set_sequence_id(i)
            out.append(e)
        elif add_special_tokens:
            assert piece.special is not None
            ids, tokens = template.specials[piece.special]
            n = len(ids)
            out.append(Encoding(list(ids), [piece.type_id] * n, list(tokens), [(0, 0)] * n, [None] * n, [1] * n, [1] * n))
    return out


def truncate_encodings(first: Encoding, pair: Encoding | None, max_length: int, stride: int, strategy: str, direction: str) -> None:
    """tokenizers' truncate_encodings (utils/truncation.rs), in place."""
    if max_length == 0:
        first.truncate(0, stride, direction)
        if pair is not None:
            pair.truncate(0, stride, direction)
        return
    total = len(first) + (len(pair) if pair is not None else 0)
    if total <= max_length:
        return
    to_remove = total - max_length
    if strategy == "longest_first":
        if pair is None:
            first.truncate(total - to_remove, stride, direction)
            return
        n1, n2 = len(first), len(pair)
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        if swap:
            n1, n2 = n2, n1
        first.truncate(n1, stride, direction)
        pair.truncate(n2, stride, direction)
        return
    if strategy == "only_second" and pair is None:
        raise ConfigError("Truncation error: Second sequence not provided")
    target = first if strategy == "only_first" else pair
    assert target is not None
    if len(target) > to_remove:
        target.truncate(len(target) - to_remove, stride, direction)
    else:
        raise ConfigError(
            "Truncation error: Sequence to truncate too short to respect the provided max_length"
        )


def pad_encodings(encodings: list[Encoding], length: int | None, multiple: int | None, pad_id: int, pad_type_id: int, pad_token: str, direction: str) -> None:
    """tokenizers' pad_encodings: to `length` (None: the longest of the batch), rounded up to
    a multiple."""
    if not encodings:
        return
    target = length if length is not None else max(len(e) for e in encodings)
    if multiple and target % multiple:
        target += multiple - target % multiple
    for e in encodings:
        e.pad(target, pad_id, pad_type_id, pad_token, direction)


def encode(
    tok: HFTokenizer,
    sequence: str | Sequence[str],
    pair: str | Sequence[str] | None = None,
    *,
    add_special_tokens: bool = True,
    is_pretokenized: bool = False,
    encode_special_tokens: bool = False,
    truncation: dict[str, Any] | None = None,
    padding: dict[str, Any] | None = None,
) -> Encoding:
    """tokenizers' Tokenizer.encode (with offsets in characters): each sequence through the
    pipeline, truncation, the post-processor, padding (`truncation` and `padding` as the
    binding's properties give them, None: none)."""
    skip = sorted(tok._special_ids) if encode_special_tokens else []
    encodings: list[Encoding] = []
    for i, seq in enumerate([sequence] if pair is None else [sequence, pair]):
        if is_pretokenized:
            if isinstance(seq, str):
                raise ConfigError("is_pretokenized=True takes a list of words per sequence, not a str")
            enc = Encoding.merge([encode_sequence(tok, w, i, skip, word=k) for k, w in enumerate(seq)])
        else:
            if not isinstance(seq, str):
                raise ConfigError(f"a sequence to encode must be a str, got {type(seq).__name__}")
            enc = encode_sequence(tok, seq, i, skip)
        encodings.append(enc)
    if truncation is not None:
        max_length = int(truncation["max_length"])
        added = tok.post.template.added(pair is not None) if tok.post.template is not None else 0
        if add_special_tokens and added > 0:
            max_length -= added
        truncate_encodings(
            encodings[0],
            encodings[1] if len(encodings) > 1 else None,
            max_length,
            int(truncation.get("stride", 0)),
            str(truncation.get("strategy", "longest_first")),
            str(truncation.get("direction", "right")),
        )
    if tok.post.present:
        final = post_process(tok, encodings, add_special_tokens)
    elif len(encodings) == 1:
        final = encodings[0]  # default_process: a single sequence as it is
    else:
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
        final = Encoding.merge(encodings)
    if padding is not None:
        pad([final], padding)
    return final


def pad(encodings: list[Encoding], padding: dict[str, Any]) -> None:
    pad_encodings(
        encodings,
        padding.get("length"),
        padding.get("pad_to_multiple_of"),
        int(padding.get("pad_id", 0)),
        int(padding.get("pad_type_id", 0)),
        str(padding.get("pad_token", "[PAD]")),
        str(padding.get("direction", "right")),
    )
