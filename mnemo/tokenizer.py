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
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, cast, overload

import numpy as np
import numpy.typing as npt
from librt.strings import BytesWriter

from mnemo import batch_encode, decoding, packing
from mnemo.chat import render_document
from mnemo.encode_text import encode_bytes, encode_range
from mnemo.encode_chunk import Encoder
from mnemo.errors import ArgumentTypeError, ConfigError, SpecialTokenError, UnknownTokenError
from mnemo.checks import check_int, check_pattern, check_tie, text_type_error, type_error
from mnemo.constants import EOT, MAX_VOCAB, PATTERNS, VOCAB16, maskbit_for
from mnemo.fileio import read_file, write_atomic
from mnemo.vocab import (
    DEFAULT_SPECIAL_TOKENS,
    as_format_error,
    check_id_map,
    check_merges,
    check_size,
    check_special_tokens,
    from_vocab_merges,
)
from mnemo.vocabfile import MAX_BIN_BYTES, bin_version_for, encode_tokenizer_bin, parse_tokenizer_bin
from mnemo.streaming import encode_stream, text_bytes

if TYPE_CHECKING:
    from mnemo.decoding import StreamDecoder

AllOr = Literal["all"] | Collection[str]


def _name_set(name: str, value: object) -> set[str]:
    """allowed_special / disallowed_special other than "all", as a set of str."""
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise type_error(name, "'all' or a set of str", value)
    items = list(value)
    if not all(isinstance(x, str) for x in items):  # before set(): an unhashable item is a TypeError there
        raise type_error(name, "'all' or a set of str", value)
    return set(items)


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
        check_pattern(pattern)
        check_tie(tie)
        specials = check_special_tokens(special_tokens)
        given: object = merges  # typed, but callers of a Python API pass anything
        if isinstance(given, (str, bytes, bytearray)) or not hasattr(given, "__len__"):
            raise type_error("merges", "a sequence of (int, int) pairs", merges)
        n_vocab = check_size(len(merges), len(specials), ConfigError)
        checked: list[tuple[int, int]] = []
        for k, pair in enumerate(merges):
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
            checked.append((int(x), int(y)))
        check_merges(checked)
        vocab: list[bytes] = [bytes([i]) for i in range(256)]
        for a, b in checked:
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
            check_id_map(public, n_vocab)
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
        # finds every token and a hole fails the fast b"".join of decode_bytes.  An id space
        # that is mostly holes (ids up to 2**31 - 1 are allowed) is a dict instead: a list
        # would take 8 bytes per id, 16 GiB for one token at 2**31 - 1.
        self._vocab: list[bytes | None] | dict[int, bytes]
        self._n_ids = n_vocab if public is None else max(public) + 1
        if public is None:
            self.special_tokens: dict[str, int] = names
            self._vocab = list(vocab)
        else:
            self.special_tokens = {s: public[i] for s, i in names.items()}
            if self._n_ids > 4 * n_vocab:
                self._vocab = {public[i]: raw for i, raw in enumerate(vocab)}
            else:
                table: list[bytes | None] = [None] * self._n_ids
                for i, raw in enumerate(vocab):
                    table[public[i]] = raw
                self._vocab = table
        self._n_holes = self._n_ids - n_vocab
        # The packed paths gather public ids from this array: converting the list on every call
        # cost ~1 ms for GPT-2's 50,257 ids, 13x the encoding of a 5 KB document.
        self._public_array: npt.NDArray[np.unsignedinteger] | None = (
            None if public is None else np.asarray(public, dtype=np.uint16 if self._n_ids <= VOCAB16 else np.uint32)
        )
        self._pattern_id = PATTERNS.index(pattern)
        self._encoder = Encoder(checked, wide=n_vocab > VOCAB16)
        if public is not None:
            # the encoder's lists hold the public ids (public's own int objects): no second pass
            self._encoder.set_public(cast(list[object], public))
        self._special_re: dict[frozenset[str], tuple[bytes, re.Pattern[bytes]]] = {}
        self._all_special_re: tuple[bytes, re.Pattern[bytes]] | None = None  # _plain_default's
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
        return self._n_ids

    @property
    def n_tokens(self) -> int:
        """How many tokens there are: n_vocab less the holes of the id space."""
        return self._n_ids - self._n_holes

    def _raw(self, token: int) -> bytes | None:
        """The bytes of an id, or None when no token has it (a hole, or out of range)."""
        vocab = self._vocab
        if isinstance(vocab, dict):
            return vocab.get(token)
        return vocab[token] if 0 <= token < len(vocab) else None

    def _unknown(self, token: int) -> UnknownTokenError:
        """The error for an id that is no token: out of range, or a hole of the id space."""
        if 0 <= token < self._n_ids:
            return UnknownTokenError(
                f"token id {token} is not in the vocabulary: this vocabulary leaves it unused "
                f"(its ids are 0..{self._n_ids - 1} with {self._n_holes} holes)"
            )
        return UnknownTokenError(f"token id {token} is not in the vocabulary (ids are 0..{self._n_ids - 1})")

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
        raw = self._raw(token)
        if raw is None:
            raise self._unknown(token)
        return raw

    @property
    def vocab(self) -> dict[int, bytes]:
        """Every id's bytes (special tokens: their UTF-8 names), as CS336's interface has it."""
        if isinstance(self._vocab, dict):
            return dict(sorted(self._vocab.items()))
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
        """A Tokenizer from CS336's `vocab` (id -> bytes), `merges` and special tokens (mnemo/vocab.py).

        Entries of `vocab` that no merge makes (GPT-2's `<|endoftext|>`) are special tokens with
        their ids, whether `special_tokens` names them or not.
        """
        if not isinstance(vocab, Mapping):
            raise type_error("vocab", "a mapping of int ids to bytes", vocab)
        given: object = merges  # typed, but callers of a Python API pass anything
        if isinstance(given, (str, bytes, bytearray)) or not isinstance(given, Iterable):
            raise type_error("merges", "a sequence of (bytes, bytes) pairs", merges)
        fields = from_vocab_merges(vocab, merges, special_tokens, check_pattern(pattern))
        try:
            return cls(fields.merges, pattern=fields.pattern, special_tokens=fields.special_tokens, id_map=fields.id_map)
        except ConfigError as exc:
            raise as_format_error("from_vocab_merges", exc) from None

    def with_special_tokens(self, names: Sequence[str]) -> Tokenizer:
        """A new tokenizer: this one with `names` added as special tokens after its own, at the
        top of the vocabulary.  Every existing id keeps its meaning (tiktoken's way of extending
        an Encoding); the fingerprint changes, so token files of this tokenizer are refused by
        the new one (docs/extending.md)."""
        added = check_special_tokens(names)
        clash = [name for name in added if name in self.special_tokens]
        if clash:
            raise ConfigError(f"{clash[0]!r} is already a special token of this tokenizer (id {self.special_tokens[clash[0]]})")
        if self.n_vocab + len(added) > MAX_VOCAB:
            raise ConfigError(f"{len(added)} more special tokens make {self.n_vocab + len(added)} ids, more than {MAX_VOCAB}")
        id_map = None
        if self.id_map is not None:
            # an imported vocabulary's public ids are a permutation of 0..n_vocab-1: the new ids follow it
            id_map = self.id_map + list(range(self.n_vocab, self.n_vocab + len(added)))
        own = sorted(self._internal_specials, key=self._internal_specials.__getitem__)
        return Tokenizer(
            self.merges,
            pattern=self.pattern,
            special_tokens=own + added,
            tie=self.tie,
            merge_counts=self.merge_counts,
            id_map=id_map,
        )

    def encode_iterable(
        self,
        texts: Iterable[str],
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
    ) -> Iterator[int]:
        """`encode` of "".join(texts), ids yielded lazily with bounded memory (mnemo/streaming.py)."""
        if isinstance(texts, (bytes, bytearray, memoryview)) or not isinstance(texts, Iterable):
            raise type_error("texts", "an iterable of str", texts)
        allowed, disallowed = self._resolve_specials(allowed_special, disallowed_special)
        names = allowed | disallowed
        specials = self._specials_re(names)[1] if names else None
        longest = max((len(text_bytes(n)) for n in names), default=0)

        def encode(data: bytes) -> list[int]:
            return self._encode_data(data, allowed, disallowed)

        return encode_stream(texts, encode, self.pattern, specials, longest)

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

    def _encode_range(self, data: bytes, start: int, end: int, out: list[int]) -> None:
        if end - start > packing.PIECE_BYTES and packing.python_handles_signals():
            self._encode_pieces(data, start, end, out)
        else:
            encode_range(self._encoder, data, start, end, self._pattern_id, out)

    def _encode_all(self, data: bytes) -> list[int]:
        """Public ids of a whole text (Encoder.set_public): one compiled call, or pieces for a long one."""
        if len(data) <= packing.PIECE_BYTES or not packing.python_handles_signals():
            return encode_bytes(self._encoder, data, self._pattern_id)
        # The list as ids_list makes it, not extended into an empty one: that copy of 1-3 M
        # references (and its fresh memory) was a fifth of encode_ordinary on 10 MB of `^`.
        dst = BytesWriter()
        packing.pack_pieces(self._encoder, data, 0, len(data), self._pattern_id, dst)
        return self._encoder.ids_list(dst.getvalue())

    def _encode_pieces(self, data: bytes, start: int, end: int, out: list[int]) -> None:
        """Append the ids of data[start:end] as encode_range does, in pieces (packing.pack_pieces),
        so that Ctrl-C and SIGTERM are not kept waiting by one long compiled call."""
        dst = BytesWriter()
        packing.pack_pieces(self._encoder, data, start, end, self._pattern_id, dst)
        out.extend(self._encoder.ids_list(dst.getvalue()))

    def encode_bytes(self, data: bytes) -> list[int]:
        """Ids of raw bytes (any bytes, valid UTF-8 or not); special-token text is plain text."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise type_error("data", "bytes", data)
        return self._encode_all(bytes(data))

    def encode_documents(
        self, docs: Iterable[bytes], *, bos: int | None = None, eos: int | None = None
    ) -> npt.NDArray[np.unsignedinteger]:
        """Every document (raw bytes, special-token text as plain text), each preceded by `bos`
        and followed by `eos` when given (GPT-2's vocabulary has no <|bos|>: its documents end
        with <|endoftext|>), as one uint16 array: the .tok writer's unit of work.  `bos`, `eos`
        and the result are public ids (mnemo/packing.py)."""
        return packing.encode_documents(self, docs, bos, eos)

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of `text`, with special-token text encoded as plain text."""
        if not isinstance(text, str):
            raise text_type_error("text", text)
        return self._encode_all(text_bytes(text))

    def _specials_re(self, names: Collection[str]) -> tuple[bytes, re.Pattern[bytes]]:
        """(common prefix of the names, regex matching any of them, longest first)."""
        key = frozenset(names)
        found = self._special_re.get(key)
        if found is None:
            # A name is matched as its text would be encoded (lone surrogates as U+FFFD).
            raw = [text_bytes(s) for s in key]
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
            raise text_type_error("text", text)
        data = text_bytes(text)
        if self._plain_default(allowed_special, disallowed_special, data):
            return self._encode_all(data)
        allowed, disallowed = self._resolve_specials(allowed_special, disallowed_special)
        return self._encode_data(data, allowed, disallowed)

    def _plain_default(self, allowed_special: AllOr, disallowed_special: AllOr, data: bytes) -> bool:
        """True when the special-token arguments are the defaults (none allowed, all disallowed)
        and `data` holds no special token: then it is plain text.  The general path built sets of
        names and looked up their regex on every call, ~6 us: 10 % of encode_to_numpy's time on
        documents of 5 KB."""
        if allowed_special.__class__ is not frozenset or allowed_special:
            return False
        if not (isinstance(disallowed_special, str) and disallowed_special == "all"):  # `!=` on an array is an array
            return False
        if not self.special_tokens:
            return True
        found = self._all_special_re
        if found is None:
            found = self._all_special_re = self._specials_re(self.special_tokens)
        prefix, pattern = found
        return (bool(prefix) and prefix not in data) or pattern.search(data) is None

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
            return self._encode_all(data)
        out: list[int] = []
        pos = 0
        ids = self.special_tokens  # public ids, as the encoder's lists hold (Encoder.set_public)
        for m in self._specials_re(allowed)[1].finditer(data):
            self._encode_range(data, pos, m.start(), out)
            out.append(ids[m.group().decode("utf-8")])
            pos = m.end()
        self._encode_range(data, pos, len(data), out)
        return out

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
        workers: int | None = None,
    ) -> list[list[int]]:
        """`encode` of each text, in order.  Large batches (more than BATCH_BLOCK texts and
        BATCH_PARALLEL_BYTES of text) go to the work engine's worker processes; `workers`: how
        many (default: every CPU, or 1 in a process that multiprocessing started); workers=1
        always encodes in this process.  mnemo/batch_encode.py and docs/pipelines.md tell the rule."""
        return batch_encode.encode_batch(self, texts, allowed_special, disallowed_special, workers)

    def encode_batch_to_numpy(
        self,
        texts: Sequence[str],
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
        workers: int | None = None,
    ) -> tuple[npt.NDArray[np.unsignedinteger], npt.NDArray[np.int64]]:
        """`encode_batch` in the flat form token-file writers want: (ids, offsets), where ids is
        one array of every text's ids back to back (uint16, or uint32 when the vocabulary needs
        it) and offsets an int64 array of len(texts) + 1 entries: text i's ids are
        ids[offsets[i]:offsets[i + 1]].  Same ids, same rules for workers as encode_batch; no
        Python list of every id is built when workers encode."""
        return batch_encode.encode_batch_to_numpy(self, texts, allowed_special, disallowed_special, workers)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
    ) -> npt.NDArray[np.unsignedinteger]:
        """`encode` as a numpy array of uint16 (uint32 when the vocabulary needs it), made from
        the compiled encoder's packed ids: no Python int per id on the way (mnemo/packing.py)."""
        return packing.encode_to_numpy(self, text, allowed_special, disallowed_special)

    # ---- documents and chats (mnemo/chat.py) ----

    def render_document(self, text: str) -> list[int]:
        """`<|bos|>` + the text's ids (special-token text is plain text)."""
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
                # A hole is None in the list (join raises TypeError) or missing from the dict
                # (KeyError); the loop below names it.  Both index by id alike.
                spelled = cast("list[bytes]", vocab)
                return b"".join([spelled[t] for t in toks])
        except (IndexError, KeyError, TypeError):
            pass
        # Chat ids carry the loss-mask bit (render_conversation, chat .tok files): no id has it,
        # so an id with it is that id, masked.
        bit = maskbit_for(self._n_ids)
        parts: list[bytes] = []
        for i, t in enumerate(toks):
            t = check_int(f"tokens[{i}]", t)
            plain = t & ~bit if t >= self._n_ids and t & bit else t
            raw = self._raw(plain)
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

    def stream_decoder(self, errors: str = "replace") -> StreamDecoder:
        """A decoder for ids that arrive one at a time (mnemo/decoding.py): it returns text only
        once its UTF-8 is complete, and its pieces add up to `decode` of the whole sequence."""
        from mnemo.decoding import StreamDecoder

        return StreamDecoder(self, errors)

    # ---- tiktoken's names (docs/tiktoken.md: the whole table, with the differences) ----

    @property
    def max_token_value(self) -> int:
        """The largest id, as tiktoken's (ids are 0..max_token_value; an imported id space may
        have holes, which are no tokens)."""
        return self._n_ids - 1

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

    @overload
    def decode_with_offsets(self, tokens: Iterable[int], *, spans: Literal[False] = False) -> tuple[str, list[int]]: ...
    @overload
    def decode_with_offsets(self, tokens: Iterable[int], *, spans: Literal[True]) -> tuple[str, list[tuple[int, int]]]: ...
    def decode_with_offsets(
        self, tokens: Iterable[int], *, spans: bool = False
    ) -> tuple[str, list[int]] | tuple[str, list[tuple[int, int]]]:
        """The text of the tokens and, for each token, the index in that text of the character
        where it starts -- of the first character holding any of its bytes, when a character is
        split between tokens (tiktoken's result).  With spans=True, each token's span
        (start, end) instead: it ends after the character holding its last byte
        (mnemo/decoding.py, token_spans).  The bytes must be valid UTF-8 (else InputError), as
        in tiktoken."""
        return decoding.decode_with_offsets(self, tokens, spans)

    def encode_with_offsets(
        self,
        text: str,
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """`encode` and each token's character span (start, end) in `text`, as Hugging Face's
        offsets: text[start:end] is what the token spells, and a token holding part of a
        character gets the whole character's span (decode_with_offsets's rule, tiktoken's).
        A lone surrogate is encoded as U+FFFD, one character as in `text`."""
        return decoding.encode_with_offsets(self, text, allowed_special, disallowed_special)

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

