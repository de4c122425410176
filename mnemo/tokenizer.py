"""The Tokenizer: a trained vocabulary, its file, and encoding policy.

Layers as in tiktoken: the compiled encoder (encode_chunk.py, encode_text.py) knows merges and bytes
only; this module holds all policy -- validation, special tokens (tiktoken's allowed_special /
disallowed_special contract), error wording -- and is plain Python.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
import signal
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Final, Literal, cast, overload

import numpy as np
import numpy.typing as npt
from librt.strings import BytesWriter

from mnemo.encode_text import encode_bytes, encode_documents_packed, encode_range
from mnemo.encode_chunk import Encoder, ids_of
from mnemo.errors import ArgumentTypeError, ConfigError, InputError, SpecialTokenError, UnknownTokenError
from mnemo.idmap import remap_in_place
from mnemo.parallel import resolve_workers
from mnemo.constants import MAX_SPECIALS, MAX_TOKEN_ID, MAX_VOCAB, PATTERNS, TIES, VOCAB16, maskbit_for
from mnemo.fileio import read_file, write_atomic
from mnemo.vocabfile import MAX_BIN_BYTES, bin_version_for, encode_tokenizer_bin, parse_tokenizer_bin
from mnemo.pretokenize import chunk_end

DEFAULT_SPECIAL_TOKENS: Final[tuple[str, ...]] = (
    "<|bos|>",
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<|end|>",
    *(f"<|reserved_{i}|>" for i in range(11)),
)

AllOr = Literal["all"] | Collection[str]

#: GPT-2's and tiktoken's document separator, which `eot_token` names.
EOT: Final = "<|endoftext|>"

# encode_batch: batches with more text than this go to worker processes, in blocks of this many.
BATCH_PARALLEL_BYTES: Final = 4_000_000
BATCH_BLOCK: Final = 256

# Texts longer than this are encoded in pieces of about this size (see Tokenizer._encode_pieces).
PIECE_BYTES: Final = 1 << 20
# Where every pattern ends a chunk: before a space followed by an ASCII letter (the space opens
# the next chunk, " word"; no alternative of any pattern holds a space together with what
# precedes it and a letter after it), after a printable ASCII character that is not white
# space.  The text before such a cut, split on its own, gives the same chunks: the lookaheads,
# (?!\S) and o200k's backtracking letter runs, see a space there and the end of the text
# alike.  Not after white space: cl100k's \s++$ would take "\n " at the end of the text before
# the cut whole, where the whole text has "\n", " ", " word".  tests/test_tokenizer.py checks
# both against `regex`.
_SURE_CUT: Final = re.compile(rb"(?<=[!-~]) [A-Za-z]")


# ---- argument checks (shared with mnemo/training.py) ----


def type_error(name: str, expected: str, value: object) -> ArgumentTypeError:
    """The error for an API argument of the wrong Python type: it names the argument, the type
    expected and the value given (a TypeError, as Python users expect, and a MnemoError)."""
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return ArgumentTypeError(f"{name} must be {expected}, got {type(value).__name__} {shown}")


def check_int(name: str, value: object) -> int:
    """`value` when it is an int (numpy integers too); bool and float are type errors, not ids."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise type_error(name, "an int", value)
    return int(value)


def _text_type_error(name: str, value: object) -> ArgumentTypeError:
    err = type_error(name, "a str", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        err.args = (f"{err.args[0]}; use encode_bytes for bytes",)
    return err


def _name_set(name: str, value: object) -> set[str]:
    """allowed_special / disallowed_special other than "all", as a set of str."""
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise type_error(name, "'all' or a set of str", value)
    items = list(value)
    if not all(isinstance(x, str) for x in items):  # before set(): an unhashable item is a TypeError there
        raise type_error(name, "'all' or a set of str", value)
    return set(items)


def check_special_tokens(special_tokens: object) -> list[str]:
    """The special tokens (None: DEFAULT_SPECIAL_TOKENS) as a list, each a non-empty str that is
    valid UTF-8 (no lone surrogate) of at most 255 bytes, none listed twice.  One rule for the
    Tokenizer and for training, which checks them before counting a byte of text."""
    if special_tokens is None:
        return list(DEFAULT_SPECIAL_TOKENS)
    if isinstance(special_tokens, (str, bytes, bytearray)) or not isinstance(special_tokens, Iterable):
        raise type_error("special_tokens", "a list of str", special_tokens)
    specials = list(special_tokens)
    seen: set[str] = set()
    for j, name in enumerate(specials):
        if not isinstance(name, str):
            raise type_error(f"special_tokens[{j}]", "a str", name)
        if not name:
            raise ConfigError(f"special token {j} is {name!r}, not a non-empty string")
        try:
            raw = name.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(
                f"special token {j} {name[:20]!r} is not encodable as UTF-8 (it holds a lone surrogate)"
            ) from None
        if len(raw) > 255:
            raise ConfigError(f"special token {j} {name[:20]!r}... is longer than 255 UTF-8 bytes ({len(raw)})")
        if name in seen:
            raise ConfigError(f"special token {name!r} is listed twice")
        seen.add(name)
    return specials


class Tokenizer:
    """A byte-level BPE vocabulary: 256 bytes, merges, then special tokens.

    Merge k (0-based) makes id 256 + k from the pair merges[k]; special token j gets id
    256 + len(merges) + j.  The file is docs/formats.md's tokenizer.bin; tiktoken's
    names for these methods, and how they differ, are in docs/tiktoken.md.

    `id_map` (imported vocabularies, docs/interop.md) renumbers the ids the tokenizer shows:
    id_map[i] is the public id of mnemo's id i, distinct ids in 0..2**31-1.  Public ids may
    leave holes (cl100k_base has no token 100256): a hole is no token, and decoding it is an
    error.  `n_vocab` is then the largest id + 1, as in tiktoken (docs/ids32.md).  `merges` stay
    in mnemo's own numbering (the encoder's); every other id in and out (encode, decode,
    token_bytes, special_tokens, vocab) is public.  An identity map is stored as None.
    """

    def __init__(
        self,
        merges: Sequence[tuple[int, int]],
        *,
        pattern: str = "mnemonic",
        special_tokens: Sequence[str] | None = None,
        tie: str = "id",
        merge_counts: Sequence[int] | None = None,
        id_map: Sequence[int] | None = None,
    ) -> None:
        if not isinstance(pattern, str):
            raise type_error("pattern", "a str", pattern)
        if not isinstance(tie, str):
            raise type_error("tie", "a str", tie)
        if pattern not in PATTERNS:
            raise ConfigError(f"unknown pattern {pattern!r}; choose one of {', '.join(PATTERNS)}")
        if tie not in TIES:
            raise ConfigError(f"unknown tie rule {tie!r}; choose one of {', '.join(TIES)}")
        specials = check_special_tokens(special_tokens)
        given: object = merges  # typed, but callers of a Python API pass anything
        if isinstance(given, (str, bytes, bytearray)) or not hasattr(given, "__len__"):
            raise type_error("merges", "a sequence of (int, int) pairs", merges)
        n_vocab = 256 + len(merges) + len(specials)
        if n_vocab > MAX_VOCAB:
            raise ConfigError(
                f"vocabulary of {n_vocab} tokens is larger than {MAX_VOCAB:,} (the encoder packs ids in 21 bits)"
            )
        if len(specials) > MAX_SPECIALS:
            raise ConfigError(f"{len(specials)} special tokens are more than {MAX_SPECIALS} (tokenizer.bin counts them in 16 bits)")
        checked: list[tuple[int, int]] = []
        seen: dict[tuple[int, int], int] = {}
        vocab: list[bytes] = [bytes([i]) for i in range(256)]
        for k, pair in enumerate(merges):
            own = 256 + k
            try:
                if len(pair) != 2:
                    raise ValueError
                x, y = pair
            except (TypeError, ValueError):
                raise ConfigError(f"merge {k} is {pair!r}, not a pair of token ids") from None
            if (
                isinstance(x, bool)
                or isinstance(y, bool)
                or not isinstance(x, (int, np.integer))
                or not isinstance(y, (int, np.integer))
            ):
                raise ConfigError(f"merge {k} is {pair!r}, not a pair of token ids")
            a, b = int(x), int(y)
            if not (0 <= a < own and 0 <= b < own):
                raise ConfigError(f"merge {k} (id {own}) is {(a, b)}: both parts must be in 0..{own - 1}")
            first = seen.setdefault((a, b), k)
            if first != k:
                raise ConfigError(f"merge {k} repeats the pair {(a, b)} of merge {first}")
            checked.append((a, b))
            vocab.append(vocab[a] + vocab[b])
        names: dict[str, int] = {}
        for j, name in enumerate(specials):
            names[name] = 256 + len(checked) + j
            vocab.append(name.encode("utf-8"))
        counts: list[int] | None = None
        if merge_counts is not None:
            if isinstance(merge_counts, (str, bytes, bytearray)) or not isinstance(merge_counts, Iterable):
                raise type_error("merge_counts", "a sequence of int", merge_counts)
            counts = [check_int(f"merge_counts[{k}]", c) for k, c in enumerate(merge_counts)]
            if len(counts) != len(checked):
                raise ConfigError(f"{len(counts)} merge counts for {len(checked)} merges")
            if any(c < 0 or c >= 1 << 64 for c in counts):
                raise ConfigError("merge counts must be in 0..2**64-1")

        public: list[int] | None = None
        if id_map is not None:
            if isinstance(id_map, (str, bytes, bytearray)) or not isinstance(id_map, Iterable):
                raise type_error("id_map", "a sequence of int", id_map)
            public = [check_int(f"id_map[{k}]", i) for k, i in enumerate(id_map)]
            if len(public) != n_vocab:
                raise ConfigError(f"id_map has {len(public)} entries for a vocabulary of {n_vocab} ids")
            owner: dict[int, int] = {}
            for i, p in enumerate(public):
                if not 0 <= p <= MAX_TOKEN_ID:
                    raise ConfigError(f"id_map[{i}] = {p} is outside 0..{MAX_TOKEN_ID} (bit 31 is the loss-mask bit)")
                first_owner = owner.setdefault(p, i)
                if first_owner != i:
                    raise ConfigError(f"id_map gives id {p} to both {first_owner} and {i}")
            if public == list(range(n_vocab)):
                public = None

        self.merges: list[tuple[int, int]] = checked
        self.pattern: str = pattern
        self.tie: str = tie
        self.merge_counts: list[int] | None = counts
        self.id_map: list[int] | None = public
        self._internal_vocab = vocab
        self._internal_specials = names
        self._public: list[int] | None = public
        # Indexed by public id; None marks a hole (an id no token has), so that a plain index
        # finds every token and a hole fails the fast b"".join of decode_bytes.
        self._vocab: list[bytes | None]
        if public is None:
            self.special_tokens: dict[str, int] = names
            self._vocab = list(vocab)
        else:
            self.special_tokens = {s: public[i] for s, i in names.items()}
            self._vocab = [None] * (max(public) + 1)
            for i, raw in enumerate(vocab):
                self._vocab[public[i]] = raw
        self._n_holes = len(self._vocab) - n_vocab
        self._pattern_id = PATTERNS.index(pattern)
        self._encoder = Encoder(checked, wide=n_vocab > VOCAB16)
        self._special_re: dict[frozenset[str], tuple[bytes, re.Pattern[bytes]]] = {}
        self._special_by_id = {i: s for s, i in self.special_tokens.items()}
        self._ids_by_bytes: dict[bytes, int] | None = None  # token_to_id's table, built on first use
        # Ids hashed at the width tokenizer.bin stores them: a vocabulary that fits in 16 bits
        # keeps the fingerprint earlier versions gave it (its .tok files name it).
        wide = bin_version_for(n_vocab, public) > 1
        id_type = "<u4" if wide else "<u2"
        h = hashlib.blake2b(digest_size=16, person=b"mnemo-tokenizer2" if wide else b"mnemo-tokenizer1")
        h.update(pattern.encode() + b"\0")
        h.update(np.asarray(checked, dtype=id_type).tobytes())
        for name in specials:
            raw = name.encode("utf-8")
            h.update(bytes([len(raw)]) + raw)
        if public is not None:
            h.update(b"id_map" + np.asarray(public, dtype=id_type).tobytes())
        self.fingerprint: str = h.hexdigest()

    # ---- properties and files ----

    @property
    def n_vocab(self) -> int:
        """The largest id + 1, as tiktoken's `n_vocab` (holes included: see n_tokens)."""
        return len(self._vocab)

    @property
    def n_tokens(self) -> int:
        """How many tokens there are: n_vocab less the holes of the id space."""
        return len(self._vocab) - self._n_holes

    def _unknown(self, token: int) -> UnknownTokenError:
        """The error for an id that is no token: out of range, or a hole of the id space."""
        if 0 <= token < len(self._vocab):
            return UnknownTokenError(
                f"token id {token} is not in the vocabulary: this vocabulary leaves it unused "
                f"(its ids are 0..{len(self._vocab) - 1} with {self._n_holes} holes)"
            )
        return UnknownTokenError(f"token id {token} is not in the vocabulary (ids are 0..{len(self._vocab) - 1})")

    def __repr__(self) -> str:
        return (
            f"<Tokenizer n_vocab={self.n_vocab} merges={len(self.merges)} specials={len(self.special_tokens)} "
            f"pattern={self.pattern!r} fingerprint={self.fingerprint}>"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return (
            self.fingerprint == other.fingerprint
            and self.tie == other.tie
            and self.merge_counts == other.merge_counts
            and self.merges == other.merges
        )

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one id (a special token's UTF-8 name for specials)."""
        token = check_int("token", token)
        raw = self._vocab[token] if 0 <= token < len(self._vocab) else None
        if raw is None:
            raise self._unknown(token)
        return raw

    @property
    def vocab(self) -> dict[int, bytes]:
        """Every id's bytes (special tokens: their UTF-8 names), as CS336's interface has it."""
        return {i: raw for i, raw in enumerate(self._vocab) if raw is not None}

    @property
    def merge_pairs(self) -> list[tuple[bytes, bytes]]:
        """The merges as byte pairs, in the order they apply (CS336's `merges`)."""
        v = self._internal_vocab
        return [(v[a], v[b]) for a, b in self.merges]

    @classmethod
    def from_vocab_merges(
        cls,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Sequence[str] | None = None,
        *,
        pattern: str = "gpt2",
    ) -> Tokenizer:
        """A Tokenizer from CS336's `vocab` (id -> bytes), `merges` and special tokens (mnemo/interop.py).

        Entries of `vocab` that no merge makes (GPT-2's `<|endoftext|>`) are special tokens with
        their ids, whether `special_tokens` names them or not.
        """
        from mnemo.interop import from_vocab_merges

        if not isinstance(vocab, Mapping):
            raise type_error("vocab", "a mapping of int ids to bytes", vocab)
        given: object = merges  # typed, but callers of a Python API pass anything
        if isinstance(given, (str, bytes, bytearray)) or not isinstance(given, Iterable):
            raise type_error("merges", "a sequence of (bytes, bytes) pairs", merges)
        return from_vocab_merges(vocab, merges, special_tokens, pattern=pattern)

    def encode_iterable(
        self,
        texts: Iterable[str],
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
    ) -> Iterator[int]:
        """`encode` of "".join(texts), ids yielded lazily with bounded memory (mnemo/interop.py)."""
        from mnemo.interop import encode_iterable

        if isinstance(texts, (bytes, bytearray, memoryview)) or not isinstance(texts, Iterable):
            raise type_error("texts", "an iterable of str", texts)

        return encode_iterable(self, texts, allowed_special=allowed_special, disallowed_special=disallowed_special)

    def to_bytes(self) -> bytes:
        """The tokenizer.bin image of this tokenizer."""
        return encode_tokenizer_bin(
            self.merges, self.pattern, list(self.special_tokens), self.tie, self.merge_counts, self.id_map
        )

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> Tokenizer:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise type_error("data", "bytes (a tokenizer.bin image)", data)
        if not isinstance(source, str):
            raise type_error("source", "a str", source)
        fields = parse_tokenizer_bin(bytes(data), source)
        return cls(
            fields.merges,
            pattern=fields.pattern,
            special_tokens=fields.special_tokens,
            tie=fields.tie,
            merge_counts=fields.merge_counts,
            id_map=fields.id_map,
        )

    # ---- pickle and copy (docs/pipelines.md) ----

    def __reduce__(self) -> tuple[object, tuple[bytes, str]]:
        """Pickle as the tokenizer.bin image (id map and merge counts included): `datasets.map`
        with num_proc, DataLoader workers and `multiprocessing` send tokenizers by pickle, and
        the image is both the smallest form and the one whose loader validates everything.  The
        encoder's caches are not sent: the receiver starts with empty ones.  Pickle is only the
        transport Python's tools use; no mnemo file holds a pickle."""
        return (type(self).from_bytes, (self.to_bytes(), "<pickled Tokenizer>"))

    def __copy__(self) -> Tokenizer:
        """A Tokenizer is immutable by contract, so a copy is the tokenizer itself (as for
        tuple or str): no 9 MB of new encoder caches for nothing."""
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Tokenizer:
        """Rebuilt from its tokenizer.bin image, as a pickle round trip: a deep copy promises
        containers that share nothing with the original (`merges`, `special_tokens` are
        plain lists and dicts a caller can reach)."""
        copied = type(self).from_bytes(self.to_bytes(), "<copied Tokenizer>")
        memo[id(self)] = copied
        return copied

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write tokenizer.bin (through a temporary name and a rename)."""
        if not isinstance(path, (str, os.PathLike)):
            raise type_error("path", "a str or os.PathLike", path)
        write_atomic(path, self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Read and validate a tokenizer.bin; FormatError (with the offset) when it is bad."""
        if not isinstance(path, (str, os.PathLike)):
            raise type_error("path", "a str or os.PathLike", path)
        return cls.from_bytes(read_file(path, MAX_BIN_BYTES, "tokenizer.bin"), os.fspath(path))

    # ---- encoding ----

    def _text_bytes(self, text: str) -> bytes:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (as tiktoken): each becomes U+FFFD.
            return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")

    def _encode_range(self, data: bytes, start: int, end: int, out: list[int]) -> None:
        if end - start > PIECE_BYTES and _python_handles_signals():
            self._encode_pieces(data, start, end, out)
        else:
            encode_range(self._encoder, data, start, end, self._pattern_id, out)

    def _encode_all(self, data: bytes) -> list[int]:
        """mnemo's ids of a whole text: one compiled call, or pieces for a long text."""
        if len(data) <= PIECE_BYTES or not _python_handles_signals():
            return encode_bytes(self._encoder, data, self._pattern_id)
        out: list[int] = []
        self._encode_pieces(data, 0, len(data), out)
        return out

    def _encode_pieces(self, data: bytes, start: int, end: int, out: list[int]) -> None:
        """Append the ids of data[start:end] as encode_range does, in pieces of about PIECE_BYTES.

        Compiled code never lets Python run a signal handler, so one call on a long text kept
        Ctrl-C and SIGTERM waiting until it ended.  Between pieces they take effect.  Pieces end
        where the pattern ends a chunk, and BPE never crosses a chunk, so the ids are those of
        one call: at a _SURE_CUT when there is one near; else the chunks are walked here
        (chunk_end against the whole text, so every lookahead sees what it would see) and
        encoded one by one up to PIECE_BYTES.  A single chunk longer than that (16 MB of spaces
        is one chunk) cannot be cut; _encode_long_chunk encodes it."""
        enc = self._encoder
        pid = self._pattern_id
        pos = start
        while end - pos > PIECE_BYTES:
            m = _SURE_CUT.search(data, pos + PIECE_BYTES, min(end, pos + 2 * PIECE_BYTES))
            if m is not None:
                encode_range(enc, data, pos, m.start(), pid, out)
                pos = m.start()
                continue
            e = chunk_end(data, pos, end, pid)
            if e - pos > PIECE_BYTES:
                _encode_long_chunk(enc, data, pos, e, out)
                pos = e
                continue
            dst = BytesWriter()
            stop = pos + PIECE_BYTES
            while True:
                enc.encode_span(data, pos, e, dst)
                pos = e
                if pos >= stop or pos >= end:
                    break
                e = chunk_end(data, pos, end, pid)
                if e - pos > PIECE_BYTES:
                    break  # a long chunk: the next step's
            out.extend(ids_of(dst.getvalue(), enc.wide))
        encode_range(enc, data, pos, end, pid, out)

    def encode_bytes(self, data: bytes) -> list[int]:
        """Ids of raw bytes (any bytes, valid UTF-8 or not); special-token text is plain text."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise type_error("data", "bytes", data)
        return self._to_public(self._encode_all(bytes(data)))

    def encode_documents(
        self, docs: Iterable[bytes], *, bos: int | None = None, eos: int | None = None
    ) -> npt.NDArray[np.unsignedinteger]:
        """Every document (raw bytes, special-token text as plain text), each preceded by `bos`
        and followed by `eos` when given (GPT-2's vocabulary has no <|bos|>: its documents end
        with <|endoftext|>), as one uint16 array: the .tok writer's unit of work.  The ids are
        packed in compiled code (encode_text.encode_documents_packed).  `bos`, `eos` and the
        result are public ids: with an id map (an imported vocabulary) they are mapped in and
        the array out."""
        checked: dict[str, int] = {}
        for name, value in (("bos", bos), ("eos", eos)):
            if value is not None:
                checked[name] = check_int(name, value)
                if not 0 <= checked[name] < self.n_vocab or self._vocab[checked[name]] is None:
                    raise ConfigError(f"{name}={value} is not an id of this tokenizer (n_vocab {self.n_vocab})")
        if isinstance(docs, (str, bytes, bytearray, memoryview)) or not isinstance(docs, Iterable):
            raise type_error("docs", "an iterable of bytes documents", docs)
        public = self._public
        internal_bos = -1 if bos is None else checked["bos"] if public is None else public.index(checked["bos"])
        internal_eos = -1 if eos is None else checked["eos"] if public is None else public.index(checked["eos"])
        doc_list = list(docs)
        try:
            if max(map(len, doc_list), default=0) <= PIECE_BYTES or not _python_handles_signals():
                packed = encode_documents_packed(self._encoder, doc_list, self._pattern_id, internal_bos, internal_eos)
            else:  # a long document: in pieces, so that Ctrl-C is not kept waiting
                flat: list[int] = []
                for doc in doc_list:
                    if internal_bos >= 0:
                        flat.append(internal_bos)
                    self._encode_range(doc, 0, len(doc), flat)
                    if internal_eos >= 0:
                        flat.append(internal_eos)
                packed = np.asarray(flat, dtype="<u4" if self._encoder.wide else "<u2").tobytes()
        except TypeError:
            # the compiled code takes bytes only; looking for the culprit costs nothing until then
            for i, doc in enumerate(doc_list):
                if not isinstance(doc, bytes):
                    raise type_error(f"docs[{i}]", "bytes", doc) from None
            raise
        ids: npt.NDArray[np.unsignedinteger] = np.frombuffer(packed, dtype="<u4" if self._encoder.wide else "<u2")
        if public is not None:
            ids = np.asarray(public, dtype=np.uint16 if self.n_vocab <= VOCAB16 else np.uint32)[ids]
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of `text`, with special-token text encoded as plain text."""
        if not isinstance(text, str):
            raise _text_type_error("text", text)
        return self._to_public(self._encode_all(self._text_bytes(text)))

    def _to_public(self, ids: list[int]) -> list[int]:
        """mnemo's ids -> the public ids, in place (only when an id_map renumbers them)."""
        if self._public is not None:
            remap_in_place(ids, self._public)
        return ids

    def _specials_re(self, names: Collection[str]) -> tuple[bytes, re.Pattern[bytes]]:
        """(common prefix of the names, regex matching any of them, longest first)."""
        key = frozenset(names)
        found = self._special_re.get(key)
        if found is None:
            # A name is matched as its text would be encoded (lone surrogates as U+FFFD).
            raw = [self._text_bytes(s) for s in key]
            # Longest first: where two specials match at one place, the longer wins.
            ordered = sorted(raw, key=lambda b: (-len(b), b))
            first, last = min(raw), max(raw)
            common = 0
            while common < len(first) and first[common] == last[common]:
                common += 1
            found = (first[:common], re.compile(b"|".join(re.escape(b) for b in ordered)))
            self._special_re[key] = found
        return found

    def _find_special(self, names: Collection[str], data: bytes) -> re.Match[bytes] | None:
        prefix, pattern = self._specials_re(names)
        # Fast path: bytes.__contains__ runs at memory speed; the default specials share "<|".
        if prefix and prefix not in data:
            return None
        return pattern.search(data)

    def _resolve_specials(self, allowed_special: AllOr, disallowed_special: AllOr) -> tuple[set[str], set[str]]:
        if isinstance(allowed_special, str) and allowed_special == "all":
            allowed = set(self.special_tokens)
        else:
            allowed = _name_set("allowed_special", allowed_special)
            unknown = allowed - set(self.special_tokens)
            if unknown:
                raise ConfigError(f"allowed_special names {sorted(unknown)}, which are not special tokens here")
        if isinstance(disallowed_special, str) and disallowed_special == "all":
            disallowed = set(self.special_tokens) - allowed
        else:
            disallowed = _name_set("disallowed_special", disallowed_special)
        return allowed, disallowed

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
    ) -> list[int]:
        """Ids of `text`, tiktoken's contract for special tokens.

        Special-token text raises SpecialTokenError unless it is in `allowed_special` (then it
        becomes its single id) or left out of `disallowed_special` (then it is plain text).
        """
        if not isinstance(text, str):
            raise _text_type_error("text", text)
        allowed, disallowed = self._resolve_specials(allowed_special, disallowed_special)
        data = self._text_bytes(text)
        return self._encode_data(data, allowed, disallowed)

    def _encode_data(self, data: bytes, allowed: set[str], disallowed: set[str]) -> list[int]:
        if disallowed:
            m = self._find_special(disallowed, data)
            if m is not None:
                name = m.group().decode("utf-8")
                raise SpecialTokenError(
                    f"the text contains the special token {name!r} at byte {m.start()}; "
                    f"pass allowed_special={{{name!r}}} (or 'all') to encode it as its id, "
                    f"or disallowed_special=() / encode_ordinary to encode it as plain text"
                )
        if not (allowed and self._find_special(allowed, data) is not None):
            return self._to_public(self._encode_all(data))
        out: list[int] = []
        pos = 0
        ids = self._internal_specials
        for m in self._specials_re(allowed)[1].finditer(data):
            self._encode_range(data, pos, m.start(), out)
            out.append(ids[m.group().decode("utf-8")])
            pos = m.end()
        self._encode_range(data, pos, len(data), out)
        return self._to_public(out)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
        workers: int | None = None,
    ) -> list[list[int]]:
        """`encode` of each text, in order.

        Large batches (more than BATCH_PARALLEL_BYTES of text) are split into blocks of
        BATCH_BLOCK texts and encoded by `workers` processes (default: every CPU); each worker
        rebuilds the tokenizer from its tokenizer.bin image, and sends ids back as uint16/uint32
        arrays.  workers=1 always encodes in this process.
        """
        if isinstance(texts, (str, bytes, bytearray)) or not isinstance(texts, Sequence):
            raise type_error("texts", "a sequence of str", texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise _text_type_error(f"texts[{i}]", t)
        allowed, disallowed = self._resolve_specials(allowed_special, disallowed_special)
        workers = resolve_workers(workers)
        if workers == 1 or len(texts) <= BATCH_BLOCK or sum(len(t) for t in texts) < BATCH_PARALLEL_BYTES:
            return [self._encode_data(self._text_bytes(t), allowed, disallowed) for t in texts]
        import concurrent.futures
        import multiprocessing

        blocks = [list(texts[i : i + BATCH_BLOCK]) for i in range(0, len(texts), BATCH_BLOCK)]
        context = multiprocessing.get_context("spawn")
        result: list[list[int]] = []
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(workers, len(blocks)),
            mp_context=context,
            initializer=_batch_worker_init,
            initargs=(self.to_bytes(), os.getpid()),
        ) as pool:
            for lengths, flat in pool.map(
                _batch_worker_encode, blocks, [sorted(allowed)] * len(blocks), [sorted(disallowed)] * len(blocks)
            ):
                ids = flat.tolist()
                pos = 0
                for n in lengths:
                    result.append(ids[pos : pos + n])
                    pos += n
        return result

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
    ) -> npt.NDArray[np.unsignedinteger]:
        """`encode` as a numpy array of uint16 (uint32 when the vocabulary needs it)."""
        ids = self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        dtype = np.uint16 if self.n_vocab <= 1 << 16 else np.uint32
        return np.array(ids, dtype=dtype)

    # ---- documents and chats (mnemo/chat.py) ----

    def render_document(self, text: str) -> list[int]:
        """`<|bos|>` + the text's ids (special-token text is plain text)."""
        from mnemo.chat import render_document

        return render_document(self, text)

    @overload
    def render_conversation(
        self, messages: Sequence[Mapping[str, object]], *, return_mask: Literal[False] = False
    ) -> list[int]: ...
    @overload
    def render_conversation(
        self, messages: Sequence[Mapping[str, object]], *, return_mask: Literal[True]
    ) -> tuple[list[int], list[int]]: ...
    def render_conversation(
        self, messages: Sequence[Mapping[str, object]], *, return_mask: bool = False
    ) -> list[int] | tuple[list[int], list[int]]:
        """`<|bos|>`, then role token, content, `<|end|>` per message, the loss-mask bit on
        assistant turns (MASKBIT, or MASKBIT32 from 32,768 ids: mnemo/chat.py).  With
        `return_mask=True`, Hugging Face's shape: (plain ids, mask of 0/1)."""
        from mnemo.chat import render_conversation, render_conversation_mask

        if not isinstance(return_mask, bool):
            raise type_error("return_mask", "a bool", return_mask)
        if return_mask:
            return render_conversation_mask(self, messages)
        return render_conversation(self, messages)

    # ---- decoding ----

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """The bytes of a token sequence (special tokens as their names)."""
        vocab = self._vocab
        if isinstance(tokens, list):
            toks = tokens
        elif isinstance(tokens, (str, bytes, bytearray)) or not isinstance(tokens, Iterable):
            raise type_error("tokens", "a sequence of int ids", tokens)
        else:
            toks = list(tokens)
        try:
            if not toks or min(toks) >= 0:
                # A hole is None in the table: join raises TypeError, and the loop below names it.
                spelled = cast("list[bytes]", vocab)
                return b"".join([spelled[t] for t in toks])
        except (IndexError, TypeError):
            pass
        # Chat ids carry the loss-mask bit (render_conversation, chat .tok files): no id has it,
        # so an id with it is that id, masked.
        bit = maskbit_for(len(vocab))
        parts: list[bytes] = []
        for i, t in enumerate(toks):
            t = check_int(f"tokens[{i}]", t)
            plain = t & ~bit if t >= len(vocab) and t & bit else t
            raw = vocab[plain] if 0 <= plain < len(vocab) else None
            if raw is None:
                raise self._unknown(t)
            parts.append(raw)
        return b"".join(parts)

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """The text of a token sequence; invalid UTF-8 becomes U+FFFD (never raises by default)."""
        if not isinstance(errors, str):
            raise type_error("errors", "a str (a codec error handler such as 'replace')", errors)
        try:
            codecs.lookup_error(errors)
        except (LookupError, UnicodeError):
            raise ConfigError(
                f"errors={errors!r} is not a codec error handler; use 'replace', 'strict', 'ignore', "
                f"'backslashreplace' or 'surrogateescape'"
            ) from None
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    # ---- tiktoken's names (docs/tiktoken.md: the whole table, with the differences) ----

    @property
    def max_token_value(self) -> int:
        """The largest id, as tiktoken's (ids are 0..max_token_value; an imported id space may
        have holes, which are no tokens)."""
        return len(self._vocab) - 1

    @property
    def eot_token(self) -> int:
        """The id of `<|endoftext|>` (GPT-2's and tiktoken's document separator).

        mnemo's own vocabularies have none -- a document starts with `<|bos|>` instead -- so for
        them this raises UnknownTokenError, a KeyError, as tiktoken does for a vocabulary
        without it.
        """
        eot = self.special_tokens.get(EOT)
        if eot is None:
            raise UnknownTokenError(
                f"this vocabulary has no {EOT!r} token (its special tokens: {', '.join(self.special_tokens) or 'none'}); "
                f"mnemo's vocabularies start documents with '<|bos|>': use special_tokens['<|bos|>']"
            )
        return eot

    @property
    def special_tokens_set(self) -> set[str]:
        """The special tokens' names (a new set each time: changing it changes nothing here)."""
        return set(self.special_tokens)

    def is_special_token(self, token: int) -> bool:
        """Whether the id is a special token's."""
        return token in self._special_by_id

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the token whose bytes (or UTF-8 text) these are, special tokens included.

        A token of the byte-level vocabulary wins over a special token of the same text, as in
        tiktoken.  Raises UnknownTokenError (a KeyError, as tiktoken's) when there is none.
        """
        found = self.token_to_id(text_or_bytes)
        if found is None:
            shown = text_or_bytes if len(text_or_bytes) <= 60 else text_or_bytes[:60]
            more = "" if len(text_or_bytes) <= 60 else " (shortened)"
            raise UnknownTokenError(
                f"{shown!r}{more} is not a single token of this vocabulary; encode() gives the ids of any text"
            )
        return found

    def token_to_id(self, token: str | bytes) -> int | None:
        """The id of a token given as bytes or UTF-8 text, or None (Hugging Face's `token_to_id`;
        its str is the UTF-8 text, not GPT-2's printable alphabet).  Where two merges spell the
        same bytes, the earlier merge's id."""
        if isinstance(token, str):
            raw = token.encode("utf-8", "surrogatepass")
        elif isinstance(token, (bytes, bytearray, memoryview)):
            raw = bytes(token)
        else:
            raise ArgumentTypeError(f"token must be str or bytes, got {type(token).__name__}")
        ids = self._ids_by_bytes
        if ids is None:
            # Built on first use: bytes, then merges in order, so that the first spelling wins.
            ids = {}
            internal = self._internal_vocab
            public = self._public
            for i in range(256 + len(self.merges)):
                ids.setdefault(internal[i], i if public is None else public[i])
            self._ids_by_bytes = ids
        found = ids.get(raw)
        if found is None and isinstance(token, str):
            found = self.special_tokens.get(token)
        elif found is None:
            try:
                found = self.special_tokens.get(raw.decode("utf-8"))
            except UnicodeDecodeError:
                pass
        return found

    def decode_single_token_bytes(self, token: int) -> bytes:
        """`token_bytes` under tiktoken's name: UnknownTokenError (a KeyError) for an unknown id."""
        return self.token_bytes(token)

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """The bytes of each token, one entry per token (for showing tokens)."""
        return [self.token_bytes(t) for t in tokens]

    def decode_with_offsets(self, tokens: Iterable[int]) -> tuple[str, list[int]]:
        """The text of the tokens and, for each token, the index in that text of the character
        where it starts -- of the first character holding any of its bytes, when a character is
        split between tokens.  The bytes must be valid UTF-8 (else InputError), as in tiktoken."""
        parts = self.decode_tokens_bytes(tokens)
        data = b"".join(parts)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"the tokens decode to invalid UTF-8 (byte {exc.start}), so they have no character "
                f"offsets; use decode_tokens_bytes, or decode() which replaces invalid bytes"
            ) from None
        offsets: list[int] = []
        chars = 0  # characters started so far
        for raw in parts:
            # A token that starts inside a character belongs to that character (started already).
            offsets.append(chars - 1 if raw and 0x80 <= raw[0] < 0xC0 else chars)
            chars += sum(1 for c in raw if not 0x80 <= c < 0xC0)
        return text, offsets

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace") -> list[str]:
        """`decode` of each token sequence."""
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Iterable[Iterable[int]]) -> list[bytes]:
        """`decode_bytes` of each token sequence."""
        return [self.decode_bytes(tokens) for tokens in batch]

    def encode_ordinary_batch(self, texts: Sequence[str], *, workers: int | None = None) -> list[list[int]]:
        """`encode_ordinary` of each text (special-token text is plain text); in worker
        processes for large batches, as `encode_batch`."""
        return self.encode_batch(texts, disallowed_special=(), workers=workers)

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every token of the byte-level vocabulary (no special tokens), sorted."""
        return sorted(set(self._internal_vocab[: 256 + len(self.merges)]))


def _python_handles_signals() -> bool:
    """Whether Ctrl-C or SIGTERM would run a Python handler, which waits for compiled code to
    return (the default KeyboardInterrupt, the CLI's cleanup).  Workers ignore SIGINT and die of
    SIGTERM in the kernel: encoding them in pieces would buy nothing (and cost up to 2x on long
    texts that must be walked chunk by chunk, such as CJK without spaces)."""
    return callable(signal.getsignal(signal.SIGINT)) or callable(signal.getsignal(signal.SIGTERM))


def _encode_chunk(enc: Encoder, data: bytes, start: int, end: int, out: list[int]) -> None:
    dst = BytesWriter()
    enc.encode_span(data, start, end, dst)
    out.extend(ids_of(dst.getvalue(), enc.wide))


def _encode_long_chunk(enc: Encoder, data: bytes, start: int, end: int, out: list[int]) -> None:
    """Append the ids of one chunk longer than PIECE_BYTES, data[start:end].

    BPE cannot be cut inside a chunk without changing the ids, and the compiled encoder took
    11 s on the one chunk of 16 MB of spaces, deaf to Ctrl-C all along.  Where this process can
    fork safely (the main thread, no other thread), a child process encodes the chunk and
    this one waits on a pipe, where a signal handler runs at once: its exception kills the
    child and goes on.  Elsewhere, and if the child fails, the chunk is encoded here."""
    if (
        not hasattr(os, "fork")
        or threading.active_count() != 1
        or threading.current_thread() is not threading.main_thread()
    ):
        _encode_chunk(enc, data, start, end, out)
        return
    parent = os.getpid()
    r, w = os.pipe()
    try:
        child = os.fork()
    except OSError:  # no memory or process left for a child: encode here
        os.close(r)
        os.close(w)
        _encode_chunk(enc, data, start, end, out)
        return
    if child == 0:  # pragma: no cover - the child leaves by os._exit
        code = 1
        try:
            from mnemo.parallel import die_with_parent

            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides
            die_with_parent(parent)
            dst = BytesWriter()
            enc.encode_span(data, start, end, dst)  # the chunk alone: no pre-tokenizer
            view = memoryview(dst.getvalue())  # mnemo's ids, little-endian uint16 (uint32 when wide)
            while view:
                view = view[os.write(w, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    parts: list[bytes] = []
    try:
        while block := os.read(r, 1 << 20):
            parts.append(block)
        _, status = os.waitpid(child, 0)
    except BaseException:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        raise
    finally:
        os.close(r)
    if status != 0:
        _encode_chunk(enc, data, start, end, out)
        return
    out.extend(ids_of(b"".join(parts), enc.wide))


# ---- encode_batch workers (module level: spawned processes import them by name) ----

_worker_tokenizer: Tokenizer | None = None


def _batch_worker_init(image: bytes, parent_pid: int) -> None:
    global _worker_tokenizer
    from mnemo.parallel import die_with_parent

    die_with_parent(parent_pid)
    _worker_tokenizer = Tokenizer.from_bytes(image, "<encode_batch>")


def _batch_worker_encode(
    texts: list[str], allowed: list[str], disallowed: list[str]
) -> tuple[list[int], npt.NDArray[np.unsignedinteger]]:
    tok = _worker_tokenizer
    assert tok is not None, "worker not initialised"
    parts = [tok._encode_data(tok._text_bytes(t), set(allowed), set(disallowed)) for t in texts]
    dtype = np.uint16 if tok.n_vocab <= 1 << 16 else np.uint32
    flat: npt.NDArray[np.unsignedinteger] = np.array([i for p in parts for i in p], dtype=dtype)
    return [len(p) for p in parts], flat
