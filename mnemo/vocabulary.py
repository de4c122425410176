"""The vocabulary in memory: what a Tokenizer's ids are.

vocab.py states the rules every vocabulary follows and vocabfile.py its file (tokenizer.bin); a
`Vocabulary` is one vocabulary in memory: its merges checked and turned into tables (the bytes
of every id, the special tokens, the id map of an imported vocabulary with its holes), the
compiled encoder of those merges, the fingerprint, tokenizer.bin and pickle, and the lookups by
id and by bytes.  The Tokenizer (tokenizer.py) is a Vocabulary with the encoding policy on top:
special tokens in text, errors, the list, numpy, batch and chat paths, decoding.

Plain Python: built once per vocabulary; the compiled encoder does the work.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Self, TypeVar, cast

import numpy as np
import numpy.typing as npt

from mnemo.checks import check_int, check_pattern, check_tie, listed, type_error
from mnemo.constants import EOT, MAX_VOCAB, PATTERNS, VOCAB16
from mnemo.defaults import DEFAULT_GPT2_PATTERN, DEFAULT_PATTERN, DEFAULT_TIE
from mnemo.encode_chunk import Encoder, export_tables
from mnemo.errors import ArgumentTypeError, ConfigError, FormatError, UnknownTokenError
from mnemo.fileio import read_file, write_atomic
from mnemo.idmap import is_identity, packed_ids, placed
from mnemo.kernels import untrack_atoms
from mnemo.patterns import SplitPattern, compile_pattern, identity, label, stored_id
from mnemo.special_match import Found, SpecialMatcher, lacks
from mnemo.streaming import text_bytes
from mnemo.vocab import (
    TokenizerFields,
    as_format_error,
    check_id_map,
    check_merges,
    check_ranked,
    check_size,
    check_special_tokens,
    from_vocab_merges,
)
from mnemo.superword import SuperEncoder, rule_id
from mnemo.vocabfile import MAX_BIN_BYTES, MAX_WHOLE_BYTES, WRITER, encode_tokenizer_bin, id_width, parse_tokenizer_bin


_Atom = TypeVar("_Atom", bytes, bytes | None)


def _untracked(*parts: Iterable[_Atom]) -> list[_Atom]:
    """The parts joined in a list the cyclic GC does not track, untracked while empty (no pass
    over the items to check them: kernels.untrack_atoms)."""
    out: list[_Atom] = []
    untrack_atoms(out)
    for part in parts:
        out.extend(part)
    return out


def _fingerprint(fields: TokenizerFields, split_pattern: SplitPattern) -> str:
    """Vocabulary.fingerprint (docs/formats.md, "Fingerprint"): ids hashed at the width
    tokenizer.bin stores them, so a vocabulary that fits in 16 bits keeps the fingerprint earlier
    versions gave it (its .tok files name it).  A ranked one has a personalisation of its own,
    with its whole tokens after the merges; a superword one appends its curriculum, which decides
    the ids too (plain fingerprints unchanged).  The pattern is its patterns.identity: a named
    pattern on mnemo's own tables its name, as before; any other its steps and Unicode version."""
    merges, public = fields.merges, fields.id_map
    n_vocab = 256 + len(merges) + len(fields.whole_tokens) + len(fields.special_tokens)
    wide = fields.ranked or id_width(n_vocab, public) == 4
    id_type = "<u4" if wide else "<u2"
    person = b"mnemo-tokenizer3" if fields.ranked else b"mnemo-tokenizer2" if wide else b"mnemo-tokenizer1"
    h = hashlib.blake2b(digest_size=16, person=person)
    h.update(identity(split_pattern).encode() + b"\0")
    h.update(np.fromiter(itertools.chain.from_iterable(merges), dtype=id_type, count=2 * len(merges)).tobytes())
    if fields.ranked:
        h.update(len(fields.whole_tokens).to_bytes(4, "little"))
        for raw in fields.whole_tokens:
            h.update(len(raw).to_bytes(4, "little") + raw)
    for name in fields.special_tokens:
        raw = name.encode("utf-8")
        h.update(bytes([len(raw)]) + raw)
    if public is not None:
        h.update(b"id_map" + np.asarray(public, dtype=id_type).tobytes())
    if fields.superword is not None:
        h.update(b"superword" + (fields.stage2 or "").encode() + b"\0" + fields.superword.to_bytes(4, "little"))
    return h.hexdigest()


class Vocabulary:
    """A byte-level BPE vocabulary: 256 bytes, merges, then special tokens.

    Merge k (0-based) makes id 256 + k from the pair merges[k]; special token j gets id
    256 + len(merges) + j.  The file is docs/formats.md's tokenizer.bin.

    `id_map` (imported vocabularies, docs/interop.md) renumbers the ids the tokenizer shows:
    id_map[i] is the public id of mnemo's id i, distinct ids in 0..2**31-1.  Public ids may
    leave holes (cl100k_base has no token 100256): a hole is no token, and decoding it is an
    error.  `n_vocab` is then the largest id + 1, as in tiktoken (docs/ids32.md).  `merges` stay
    in mnemo's own numbering (the encoder's); every other id in and out (encode, decode,
    token_bytes, special_tokens, vocab) is public.  An identity map is stored as None.

    `ranked` (a vocabulary from ranks: tiktoken's files; mnemo/vocab.py's from_ranks) allows
    what tiktoken's rule needs beyond that (docs/formats.md, "Rank semantics"): a merge may use
    later merges, and `whole_tokens`, the tokens no merge makes, take the ids after the merges
    (256 + len(merges) + j, the specials follow them); a pre-token that is exactly one of them
    is that token.  A vocabulary that needs neither is stored as an ordinary one
    (`self.ranked` is False), which encodes the same.

    `superword` (docs/superword.md): the transition T of a superword tokenizer -- the merges
    making ids below T are stage 1's, applied inside the chunks of `pattern`; the others are
    stage 2's, applied inside coarse chunks (the `stage2` rule's runs of those chunks) to the
    stage-1 tokens.  None: plain BPE.
    """

    def __init__(
        self,
        merges: Sequence[tuple[int, int]],
        *,
        pattern: str | SplitPattern = DEFAULT_PATTERN,
        special_tokens: Sequence[str] | None = None,
        tie: str = DEFAULT_TIE,
        merge_counts: Sequence[int] | None = None,
        id_map: Sequence[int] | None = None,
        whole_tokens: Sequence[bytes] | None = None,
        ranked: bool = False,
        superword: int | None = None,
        stage2: str = "superword",
    ) -> None:
        split_pattern = compile_pattern(pattern if isinstance(pattern, SplitPattern) else check_pattern(pattern))
        check_tie(tie)
        specials = check_special_tokens(special_tokens)
        given: object = merges  # typed, but callers of a Python API pass anything
        if isinstance(given, (str, bytes, bytearray)) or not hasattr(given, "__len__"):
            raise type_error("merges", "a sequence of (int, int) pairs", merges)
        if not isinstance(ranked, bool):
            raise type_error("ranked", "a bool", ranked)
        whole: list[bytes] = []
        if whole_tokens is not None:
            given_whole: object = whole_tokens  # typed, but callers of a Python API pass anything
            if isinstance(given_whole, (str, bytes, bytearray)) or not isinstance(given_whole, Iterable):
                raise type_error("whole_tokens", "a sequence of bytes", whole_tokens)
            whole = list(whole_tokens)
            if whole and not ranked:
                raise ConfigError("whole_tokens are tokens of a ranked vocabulary: pass ranked=True with them")
        n_vocab = check_size(len(merges) + len(whole), len(specials), ConfigError)
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
        if ranked:
            check_ranked(checked, whole)
            ranked = bool(whole) or any(a >= 256 + k or b >= 256 + k for k, (a, b) in enumerate(checked))
        else:
            check_merges(checked)
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
        if superword is not None:
            superword = check_int("superword", superword)
            if not 256 <= superword <= 256 + len(checked):
                raise ConfigError(f"superword (the transition id) must be in 256..{256 + len(checked)}, got {superword}")
            if public is not None:
                raise ConfigError("a superword tokenizer has no id map")
            if whole:
                raise ConfigError("a superword tokenizer is not ranked (it has no whole tokens)")
            if not isinstance(stage2, str):
                raise type_error("stage2", "a str", stage2)
            rule_id(stage2)
            if stored_id(split_pattern) is None:
                raise ConfigError(
                    f"a superword tokenizer runs on one of the five named patterns ({', '.join(PATTERNS)}) on mnemo's "
                    f"own Unicode tables; its pattern is {split_pattern.describe()}"
                )
        self._setup(
            TokenizerFields(
                checked, split_pattern, specials, tie, counts, public, whole_tokens=whole, ranked=ranked,
                superword=superword, stage2=stage2 if superword is not None else None,
            )
        )

    def _setup(self, fields: TokenizerFields) -> None:
        """Everything a Vocabulary holds, from parts that follow vocab.py's rules: checked by
        __init__ (a caller's values) or by a loader (_from_checked), so that loading a file
        does not check each merge twice.  fields.encoder_tables: the encoder's prebuilt tables
        (encode_chunk.export_tables), or None to build them."""
        merges, specials, whole = fields.merges, fields.special_tokens, fields.whole_tokens
        split_pattern = compile_pattern(fields.pattern)
        public = fields.id_map
        n_vocab = 256 + len(merges) + len(whole) + len(specials)
        if public is not None and is_identity(public, n_vocab):
            public = None
            fields = dataclasses.replace(fields, id_map=None)
        spelled: list[bytes]
        if fields.superword is None:
            self._encoder = Encoder(
                merges, wide=n_vocab > VOCAB16, whole=whole, tables=fields.encoder_tables or b"", spelled=fields.spelled
            )
            spelled = self._encoder.spelled
        else:  # its tables are always built (a superword file has no ENCT section)
            sup = SuperEncoder(merges, fields.superword, rule_id(fields.stage2 or ""), wide=n_vocab > VOCAB16)
            self._encoder = sup
            spelled = sup.full.spelled
        vocab: list[bytes] = _untracked(spelled, whole, [name.encode("utf-8") for name in specials])
        names = {name: 256 + len(merges) + len(whole) + j for j, name in enumerate(specials)}

        self.superword: int | None = fields.superword
        self.stage2: str | None = fields.stage2
        self.merges: list[tuple[int, int]] = merges
        self.whole_tokens: list[bytes] = whole
        self.ranked: bool = fields.ranked
        #: the pattern's name (a preset) or regex; split_pattern is the compiled pattern, with its
        #: Unicode version and engine (mnemo/patterns.py)
        self.pattern: str = label(split_pattern)
        self.split_pattern: SplitPattern = split_pattern
        self.tie: str = fields.tie
        self.merge_counts: list[int] | None = fields.merge_counts
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
        # The packed paths gather public ids from this array: converting the list on every call
        # cost ~1 ms for GPT-2's 50,257 ids, 13x the encoding of a 5 KB document.
        self._public_array: npt.NDArray[np.unsignedinteger] | None = None
        if public is None:
            self.special_tokens: dict[str, int] = names
            untracked: list[bytes | None] = _untracked(vocab)
            self._vocab = untracked
        else:
            # packed and placed by compiled loops (idmap.py): numpy's conversions of 200,000
            # ints and objects were 13 ms of o200k's load, a Python loop 40 ms
            wide = self._n_ids > VOCAB16
            self._public_array = np.frombuffer(packed_ids(public, wide), dtype="<u4" if wide else "<u2").astype(
                np.uint32 if wide else np.uint16, copy=False
            )
            self.special_tokens = {s: public[i] for s, i in names.items()}
            if self._n_ids > 4 * n_vocab:
                self._vocab = {public[i]: raw for i, raw in enumerate(vocab)}
            else:
                self._vocab = placed(vocab, public, self._n_ids)
        self._n_holes = self._n_ids - n_vocab
        # the long lists of ints, bytes and pairs it keeps, which every full collection of the
        # process walked item by item: 7-14 ms a collection for Llama 3 or o200k (docs/speed.md)
        for atoms in (merges, whole, vocab, public, self._vocab):
            if isinstance(atoms, list):
                untrack_atoms(atoms)
        self._pattern_id = split_pattern.id
        if public is not None:
            # the encoder's lists hold the public ids (public's own int objects): no second pass
            self._encoder.set_public(cast(list[object], public))
        self._special_re: dict[frozenset[str], tuple[bytes, SpecialMatcher]] = {}
        self._all_special_re: tuple[bytes, SpecialMatcher] | None = None  # _plain_default's
        self._special_by_id = {i: s for s, i in self.special_tokens.items()}
        self._ids_by_bytes: dict[bytes, int] | None = None  # token_to_id's table, built on first use
        self._source = "<Tokenizer>"  # what verify's messages name: from_bytes sets the file
        self._fingerprint: str | None = None  # computed on first use (fingerprint): a load needs none
        self._name: str | None = None  # tiktoken's Encoding.name, set by a loader that knows it
        self._aliases: dict[str, str] = {}  # special-token names that share another's id
        self._worker_bytes: bytes | None = None  # what workers rebuild it from, made on first use
        self._ranks: dict[bytes, int] | None = None  # tiktoken's _mergeable_ranks, built on first use
        self._byte_values: list[bytes] | None = None  # token_byte_values, sorted once

    @property
    def fingerprint(self) -> str:
        """What identifies the ids this vocabulary gives (docs/formats.md, "Fingerprint"), as
        32 hex digits; .tok files and shard folders record it.  Hashed on first use, not at
        load: o200k's takes 20 ms, 15 % of a Tokenizer.load."""
        if self._fingerprint is None:
            fields = TokenizerFields(
                self.merges, self.split_pattern, list(self._internal_specials), self.tie, None, self.id_map,
                self.whole_tokens, self.ranked, superword=self.superword, stage2=self.stage2,
            )
            self._fingerprint = _fingerprint(fields, self.split_pattern)
        return self._fingerprint

    # ---- tiktoken's name, and special tokens that share an id ----

    @property
    def name(self) -> str:
        """tiktoken's `Encoding.name`: the encoding's name when a loader knew it (`cl100k_base`,
        a tekken file's name), else `mnemo-` and the fingerprint's first 16 hex digits, so that
        vocabularies with different ids never share a name (tiktoken's rule for names).  Pickle
        keeps it; tokenizer.bin does not hold it yet, so `load` gives the default."""
        return self._name if self._name is not None else f"mnemo-{self.fingerprint[:16]}"

    def _set_name(self, name: str) -> None:
        """Name a vocabulary its loader has just built (no one else holds it yet)."""
        if not isinstance(name, str) or not name:
            raise type_error("name", "a non-empty str", name)
        self._name = name

    def _add_aliases(self, aliases: Mapping[str, str]) -> None:
        """Give special tokens a second name each: aliases[alias] is the special token whose id the
        alias shares (o200k_harmony names id 200018 both `<|endofprompt|>` and
        `<|reserved_200018|>`).  An alias encodes to that id and is allowed, disallowed and listed
        as a special token; decoding the id gives the first name.  Only on a vocabulary its loader
        has just built.  tokenizer.bin cannot hold aliases yet (to_bytes refuses); pickle keeps them."""
        if not aliases:
            return
        names = check_special_tokens(list(aliases))
        h = hashlib.blake2b(digest_size=16, person=b"mnemo-aliases")
        h.update(self.fingerprint.encode("ascii"))
        for alias in names:
            target = aliases[alias]
            if not isinstance(target, str):  # a pickle's state is anyone's bytes (the fuzz suite's pickle target)
                raise type_error(f"aliases[{alias!r}]", "the name of a special token (a str)", target)
            if alias in self.special_tokens:
                raise ConfigError(f"{alias!r} is already a special token (id {self.special_tokens[alias]})")
            if target not in self._internal_specials:
                raise ConfigError(f"alias {alias!r} names {target!r}, which is not a special token here")
            self.special_tokens[alias] = self.special_tokens[target]
            self._aliases[alias] = target
            h.update(alias.encode("utf-8") + b"\0" + target.encode("utf-8") + b"\0")
        self._fingerprint = h.hexdigest()
        self._worker_bytes = None
        self._special_re.clear()
        self._all_special_re = None

    # ---- ids and bytes ----

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
            f"<{type(self).__name__} n_vocab={self.n_vocab} merges={len(self.merges)} specials={len(self.special_tokens)} "
            f"pattern={self.pattern!r}"
            + ("" if self.superword is None else f" superword={self.superword} stage2={self.stage2!r}")
            + f" fingerprint={self.fingerprint}>"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return (
            self.fingerprint == other.fingerprint
            and self.tie == other.tie
            and self.merge_counts == other.merge_counts
            and self.merges == other.merges
            and self.whole_tokens == other.whole_tokens
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

    # ---- other vocabularies from this one, and from CS336's form ----

    @classmethod
    def from_vocab_merges(
        cls,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Sequence[str] | None = None,
        *,
        pattern: str = DEFAULT_GPT2_PATTERN,
    ) -> Self:
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

    def with_special_tokens(self, names: Sequence[str]) -> Self:
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
        extended = type(self)(
            self.merges,
            pattern=self.split_pattern,
            special_tokens=own + added,
            tie=self.tie,
            merge_counts=self.merge_counts,
            id_map=id_map,
            whole_tokens=self.whole_tokens,
            ranked=self.ranked,
            superword=self.superword,
            stage2=self.stage2 or "superword",
        )
        extended._add_aliases(self._aliases)
        return extended

    # ---- tokenizer.bin ----

    def to_bytes(self) -> bytes:
        """The tokenizer.bin image of this tokenizer, with its encoder's prebuilt tables (a
        ranked one's whole tokens in its RANK section, a superword one's transition and stage-2
        rule in its STG2 section)."""
        if self._aliases:
            raise ConfigError(
                f"this tokenizer gives {len(self._aliases)} special tokens a second name "
                f"({', '.join(sorted(self._aliases)[:3])}, ...), which tokenizer.bin cannot hold yet: save "
                f"would lose them.  Load it from its source again (it pickles, with its aliases)"
            )
        return self._image()

    def _image(self) -> bytes:
        """The tokenizer.bin image of the vocabulary without its aliases (pickle adds them back)."""
        if sum(map(len, self.whole_tokens)) > MAX_WHOLE_BYTES:
            raise ConfigError(
                f"this ranked tokenizer's {len(self.whole_tokens)} whole tokens hold more than {MAX_WHOLE_BYTES:,} bytes, "
                f"the most a tokenizer.bin holds: load it from its rank file instead"
            )
        superword = None if self.superword is None else (self.superword, self.stage2 or "")
        return encode_tokenizer_bin(
            self.merges,
            self.split_pattern,
            [s for s in self.special_tokens if s not in self._aliases],
            self.tie,
            self.merge_counts,
            self.id_map,
            # a superword encoder's tables are its stage 1's alone: built at each load instead
            encoder_tables=export_tables(self._encoder) if superword is None else None,
            whole_tokens=self.whole_tokens if self.ranked else None,
            superword=superword,
        )

    def _for_workers(self) -> bytes:
        """What a worker process rebuilds this vocabulary from (`_from_worker_image`): its
        tokenizer.bin image, and the second names of its special tokens, which the image cannot
        hold (o200k_harmony's).  Made once: a Tokenizer is immutable, and the image took 25-35 ms
        of every encode_batch call with cl100k."""
        if self._worker_bytes is None:
            aliases = json.dumps(self._aliases, sort_keys=True).encode("utf-8")
            self._worker_bytes = len(aliases).to_bytes(4, "little") + aliases + self._image()
        return self._worker_bytes

    @classmethod
    def _from_worker_image(cls, data: bytes) -> Self:
        """The vocabulary `_for_workers` gave the image of (in a worker: the caller's own bytes)."""
        n = int.from_bytes(data[:4], "little")
        built = cls.from_bytes(data[4 + n :], "<the caller's tokenizer>")
        built._add_aliases(json.loads(data[4 : 4 + n]))
        return built

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>", *, verify: bool | None = None) -> Self:
        """A Tokenizer from a tokenizer.bin image; FormatError (with the offset) when it is bad.

        Every rule of a vocabulary is checked at every load.  The encoder's tables a version-3
        image carries are the one thing trusted (docs/formats.md, "Trust"): `verify` None
        trusts them when this mnemo wrote the image (its WRTR section) and builds them again
        from the merges otherwise, failing when they disagree; True always builds and
        compares them (what `verify()` does after a load); False trusts any image's tables.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise type_error("data", "bytes (a tokenizer.bin image)", data)
        if not isinstance(source, str):
            raise type_error("source", "a str", source)
        if verify is not None and not isinstance(verify, bool):
            raise type_error("verify", "True, False or None", verify)
        fields = parse_tokenizer_bin(bytes(data), source)
        stored = fields.encoder_tables
        check = fields.writer != WRITER if verify is None else verify
        # The reader checked every rule __init__ checks (vocab.py's, vectorized): straight to
        # _setup, which builds the encoder's tables only when they are not trusted.
        tok = cls._from_checked(dataclasses.replace(fields, encoder_tables=None if check else stored))
        tok._source = source
        if check and stored is not None:
            tok._compare_tables(export_tables(tok._encoder), stored)
        return tok

    @classmethod
    def _from_checked(cls, fields: TokenizerFields) -> Self:
        """A Tokenizer from parts a loader has checked against every rule __init__ applies (the
        tokenizer.bin reader, the compiled rank-file path of formats/tiktoken.py): no second pass
        over each merge.  See _setup."""
        tok = cls.__new__(cls)
        tok._setup(fields)
        return tok

    def verify(self) -> None:
        """Build the encoder's tables again from the merges and compare them with the ones in
        use: what loading a tokenizer.bin written by this mnemo trusts instead of computing
        (docs/formats.md, "Trust").  FormatError naming the first token that disagrees; every
        other rule of the file was checked when it was read.  `mnemo info --verify` runs it."""
        # a superword encoder is its stage 1's encoder (stage 2 rides on its full one)
        first = self.merges if self.superword is None else self.merges[: self.superword - 256]
        fresh = Encoder(first, wide=self._encoder.wide, whole=self.whole_tokens)
        self._compare_tables(export_tables(fresh), export_tables(self._encoder))

    def _compare_tables(self, built: bytes, trusted: bytes) -> None:
        """FormatError unless the tables built from the merges equal the trusted ones."""
        if built == trusted:
            return
        at = next(i for i in range(len(built)) if built[i] != trusted[i])
        k = 8 * at + ((built[at] ^ trusted[at]) & -(built[at] ^ trusted[at])).bit_length() - 1
        token = 256 + k
        shown = token if self._public is None else self._public[token]
        says = bool(trusted[at] >> (k & 7) & 1)
        raise FormatError(
            f"{self._source}: its encoder tables say that token {shown} ({self._internal_vocab[token]!r}) is "
            f"{'' if says else 'not '}what BPE makes of its own bytes, and its merges say the opposite: the "
            "file was edited or written by another program; rebuild it from its merges (Tokenizer(tok.merges, "
            "pattern=..., special_tokens=...).save(path)) or load it with verify=False to trust it anyway"
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write tokenizer.bin (through a temporary name and a rename)."""
        if not isinstance(path, (str, os.PathLike)):
            raise type_error("path", "a str or os.PathLike", path)
        write_atomic(path, self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, verify: bool | None = None) -> Self:
        """Read and validate a tokenizer.bin; FormatError (with the offset) when it is bad.
        `verify`: as from_bytes (None: the encoder's tables are built again and compared unless
        this mnemo wrote the file)."""
        if not isinstance(path, (str, os.PathLike)):
            raise type_error("path", "a str or os.PathLike", path)
        return cls.from_bytes(read_file(path, MAX_BIN_BYTES, "tokenizer.bin"), os.fspath(path), verify=verify)

    # ---- pickle and copy (docs/pipelines.md) ----

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle as the tokenizer.bin image (id map and merge counts included): `datasets.map`
        with num_proc, DataLoader workers and `multiprocessing` send tokenizers by pickle, and
        the image is both the smallest form and the one whose loader validates everything.  The
        encoder's caches are not sent: the receiver starts with empty ones.  Pickle is only the
        transport Python's tools use; no mnemo file holds a pickle.  A name or special-token
        aliases, which the image does not hold, travel beside it (__setstate__)."""
        if self._name is None and not self._aliases:
            return (type(self).from_bytes, (self.to_bytes(), "<pickled Tokenizer>"))
        return (type(self).from_bytes, (self._image(), "<pickled Tokenizer>"), (self._name, dict(self._aliases)))

    def __setstate__(self, state: object) -> None:
        """The name and aliases __reduce__ sent beside the image."""
        if not (isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict)):
            raise ConfigError(f"not the state of a pickled Tokenizer: {state!r:.80}")
        name, aliases = state
        self._add_aliases(aliases)
        if name is not None:
            self._set_name(name)

    def __copy__(self) -> Self:
        """A Tokenizer is immutable by contract, so a copy is the tokenizer itself (as for
        tuple or str): no 9 MB of new encoder caches for nothing."""
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        """Rebuilt from its tokenizer.bin image, as a pickle round trip: a deep copy promises
        containers that share nothing with the original (`merges`, `special_tokens` are
        plain lists and dicts a caller can reach)."""
        copied = type(self).from_bytes(self._image(), "<copied Tokenizer>")
        copied.__setstate__((self._name, dict(self._aliases)))
        memo[id(self)] = copied
        return copied

    # ---- special tokens' text in bytes ----

    def _specials_re(self, names: Collection[str]) -> tuple[bytes, SpecialMatcher]:
        """(common prefix of the names, a matcher of any of them: the leftmost, and the longest
        where several start at one place).  The matcher is a compiled trie (special_match.py),
        linear in the text whatever the number of names; the `re` alternation of every name it
        replaced took ~45 s for 1 MB of "<|" with 57,016 names."""
        key = frozenset(names)
        found = self._special_re.get(key)
        if found is None:
            # A name is matched as its text would be encoded (lone surrogates as U+FFFD).
            raw = sorted(text_bytes(s) for s in key)
            first, last = raw[0], raw[-1]
            common = 0
            while common < len(first) and first[common] == last[common]:
                common += 1
            found = (first[:common], SpecialMatcher(raw))
            self._special_re[key] = found
        return found

    def _find_special(self, names: Collection[str], data: bytes) -> Found | None:
        prefix, pattern = self._specials_re(names)
        if prefix and lacks(data, prefix):
            return None
        return pattern.search(data)

    # ---- lookups under tiktoken's and Hugging Face's names (docs/tiktoken.md: the whole table) ----

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
                f"this vocabulary has no {EOT!r} token (its special tokens: {listed(self.special_tokens)}); "
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
            for i in range(256 + len(self.merges) + len(self.whole_tokens)):
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

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every token of the byte-level vocabulary (no special tokens), sorted."""
        if self._byte_values is None:
            self._byte_values = sorted(set(self._internal_vocab[: 256 + len(self.merges) + len(self.whole_tokens)]))
        return list(self._byte_values)

    # ---- tiktoken's private names, which its README's "Extending tiktoken" uses ----

    @property
    def _pat_str(self) -> str:
        """The regex this vocabulary's pattern splits as (`tiktoken.Encoding._pat_str`)."""
        return self.split_pattern.regex or self.pattern

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """The bytes of every token that is not special -> its id (`Encoding._mergeable_ranks`; the
        same dict each time, as tiktoken's: changing it changes nothing here).  Where two ids spell
        the same bytes (a Hugging Face vocabulary may), the first."""
        if self._ranks is None:
            ranks: dict[bytes, int] = {}
            specials = set(self.special_tokens.values())
            for i, raw in self.vocab.items():
                if i not in specials:
                    ranks.setdefault(raw, i)
            self._ranks = ranks
        return self._ranks

    @property
    def _special_tokens(self) -> dict[str, int]:
        """`Encoding._special_tokens`: special_tokens, aliases included."""
        return self.special_tokens
