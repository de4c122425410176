"""A Hugging Face tokenizer.json of the byte-level BPE family, encoding as `tokenizers` does
(issue 26 item 3; docs/interop.md, "tokenizer.json").

`tokenizers` encodes a text in five steps, and HFTokenizer runs the same five:

1. added tokens are found in the text (mnemo/formats/hf_added.py: special or not, lstrip,
   rstrip, single_word, normalized);
2. the text between them is normalized (hf_normalize.py: NFC, NFKC);
3. it is pre-tokenized (hf_pretok.py: Split with any behavior, Digits, ByteLevel);
4. each pre-token is encoded by byte-level BPE -- mnemo's compiled encoder, the Tokenizer
   `core` holds -- after a lookup of the whole pre-token when the model has `ignore_merges`;
5. the post-processor's template adds its tokens when asked (hf_post.py).

When the pre-tokenizer is one of mnemo's named patterns (with no space put in front), step 3
and 4 are one call of the core's own compiled encoder; other pre-tokenizers run in plain
Python (the `regex` module) before the compiled BPE.  The special-token contract is mnemo's
(tiktoken's): text holding a special added token raises SpecialTokenError unless
`allowed_special` names it -- `encode(text, allowed_special="all")` gives tokenizers' ids for
`encode(text, add_special_tokens=...)`.  Added tokens that are not special are always matched,
as in `tokenizers`.  `hf_encode` gives tokenizers' whole Encoding (ids, type ids, tokens,
offsets, word ids, masks) for the transformers drop-in (mnemo/hf.py).

Plain Python (not compiled): policy around the compiled encoder.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any, Final, Literal, cast

import numpy as np
import numpy.typing as npt

from mnemo.checks import check_int, type_error
from mnemo.errors import ConfigError, FormatError, InputError, MnemoError, SpecialTokenError
from mnemo.fileio import write_atomic
from mnemo.formats.common import (
    BYTE_TO_CHAR,
    CHAR_TO_BYTE,
    PathLike,
    excerpt,
    string_to_token,
    token_bytes,
    token_to_string,
    tokenizer_of,
)
from mnemo.formats.hf_added import AddedToken, AddedVocabulary, parse_added_tokens, tokenizers_ids
from mnemo.formats.hf_file import Misguessed, PlainVocab, ScannedModel, read_json_bytes
from mnemo.formats.hf_normalize import Form, normalize, parse_normalizer
from mnemo.formats.hf_post import PostProcessor, parse_post_processor, post_processor_json
from mnemo.formats.hf_pretok import TOKENIZERS_UNICODE, PreTokenizer, Runner, compiled_pattern, parse_pre_tokenizer
from mnemo.formats.hf_regex import UnsupportedRegex, onig_to_regex, regex_to_onig
from mnemo.formats.tiktoken import fields_of_ranks
from mnemo.packing import encode_flat
from mnemo.patterns import SplitPattern, compile_pattern
from mnemo.pretokenize import PATTERN_REGEX
from mnemo.streaming import text_bytes
from mnemo.tokenizer import Tokenizer
from mnemo.vocab import TokenizerFields, check_public_ids, from_byte_tokens, with_specials

AllOr = Literal["all"] | Collection[str]
#: At most this many entries left to ignore_merges' lookup in Python, a stretch is searched for
#: them (a substring test each) before it is split piece by piece (HFTokenizer._stretch).
RARE_WHOLE_MAX: Final = 64

#: tokenizers' GPT-2 ByteLevel regex (its pre_tokenizers/byte_level.rs), which mnemo's gpt2
#: pattern splits alike (tests/formats/test_hf.py)
HF_GPT2_REGEX: Final = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def _named_patterns() -> dict[str, str]:
    """The `regex` spelling each named pattern has after export and import: what a Split of
    a tokenizer.json must read as, to run on mnemo's compiled pre-tokenizer."""
    out: dict[str, str] = {}
    for name, text in PATTERN_REGEX.items():
        out[onig_to_regex(regex_to_onig(text))] = name
    return out


_NAMED: Final = _named_patterns()


def fast_pattern(pre: PreTokenizer) -> str | None:
    """The named pattern that splits as `pre` does, when mnemo's compiled pre-tokenizer can run
    it: one Isolated, not inverted Split (or ByteLevel's own regex), no space put in front."""
    steps = pre.steps
    if len(steps) != 1 or steps[0].kind != "split" or steps[0].behavior != "isolated" or steps[0].invert:
        return None
    if steps[0].regex == HF_GPT2_REGEX:
        return "gpt2"
    return _NAMED.get(steps[0].regex)


@dataclass(frozen=True)
class Encoding:
    """tokenizers' Encoding of one sequence (or a pair), as transformers reads it."""

    ids: list[int]
    type_ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    words: list[int | None]
    special_tokens_mask: list[int]
    attention_mask: list[int]
    sequence_ids: list[int | None]


class HFTokenizer:
    """A tokenizer.json of the byte-level BPE family with what a mnemo Tokenizer has no place
    for: a normalizer, a pre-tokenizer other than mnemo's patterns, added tokens matched with
    lstrip / rstrip / single_word / normalized or not special, ignore_merges, a template.
    Built by `from_hf_json` / `load_hf` (mnemo/formats/hf.py), or mnemo.load."""

    def __init__(
        self,
        core: Tokenizer,
        *,
        obj: Mapping[str, Any],
        source: str,
        pre: PreTokenizer,
        forms: tuple[Form, ...],
        added: Sequence[AddedToken],
        whole: Mapping[bytes, int] | None,
        post: PostProcessor,
        add_special_tokens: bool = False,
        scanned: ScannedModel | None = None,
    ) -> None:
        """`scanned`: model.vocab and model.merges are still out of `obj` (hf_file.py); they are
        put back the first time the whole file's JSON is needed (a worker's image, save_hf)."""
        self.core = core
        self.source = source
        self.pre = pre
        self.forms = forms
        self.added_tokens = list(added)
        self.whole = whole
        self.post = post
        self.add_special_tokens = add_special_tokens
        self._obj = obj  # all but the model's vocab and merges while _scanned is not None
        self._scanned = scanned
        self._worker_bytes: bytes | None = None
        self._fingerprint: str | None = None
        self._runner = Runner(pre)
        fast = fast_pattern(pre)
        self._fast = fast if whole is None else None
        # the core's own pattern splits as the pre-tokenizer does: it encodes whole stretches
        # (without ignore_merges), and the pre-tokenizer is nothing a Tokenizer cannot hold
        self._core_splits = fast is not None or (
            self._runner.pattern is not None and core.split_pattern is self._runner.pattern
        )
        self._whole_stretch = whole is None and self._core_splits
        # A few entries ignore_merges must still look up (the core does not give them whole:
        # an added token's text in model.vocab): a stretch that holds none of them as a
        # substring has no piece equal to one, and is encoded whole as well.
        self._rare_whole: list[str] | None = None
        if whole is not None and self._core_splits and len(whole) <= RARE_WHOLE_MAX:
            self._rare_whole = [raw.decode("utf-8", "replace") for raw in whole]
        self._added = AddedVocabulary(added, self.normalize)
        self.special_tokens: dict[str, int] = {t.content: t.id for t in added if t.special}
        #: decode skips these with skip_special_tokens
        self._special_ids = {t.id for t in added if t.special}
        self._content = {t.id: t.content for t in added}
        # tokenizers decodes an added token by passing its text (normalized, for a normalized
        # one) through the ByteLevel decoder: a text whose every character is in GPT-2's byte
        # alphabet ("<|endoftext|>", but also "éclair") is read as those bytes, any other as UTF-8
        self._added_bytes = {t.id: _byte_level_decode(self.normalize(t.content) if t.normalized else t.content) for t in added}
        self._encoder = _chunk_encoder(core)
        # a transformers folder's tokenizer_config.json (mnemo/formats/load.py)
        self.bos_token: str | None = None
        self.eos_token: str | None = None
        self.pad_token: str | None = None
        self.chat_template: str | None = None

    def __repr__(self) -> str:
        return (
            f"<HFTokenizer {self.source!r} n_vocab={self.n_vocab} added={len(self.added_tokens)} "
            f"normalizer={'+'.join(self.forms) or None} pre_tokenizer={self.pattern_description()}>"
        )

    def pattern_description(self) -> str:
        if self._fast is not None:
            return f"{self._fast} (compiled)"
        compiled = self._runner.pattern
        if compiled is not None:
            how = f" (compiled, Unicode {compiled.unicode})"
        else:
            self._runner.compiled  # noqa: B018 -- compiles the steps, which sets off_table
            off = self._runner.off_table
            how = f" (the regex module, Unicode {TOKENIZERS_UNICODE})" if not off else f" (the regex module, on its own Unicode tables: {off})"
        return " -> ".join(
            "space in front" if s.kind == "prefix" else f"Split({s.source!r}, {s.behavior}{', invert' if s.invert else ''})"
            for s in self.pre.steps
        ) + how

    def engine(self) -> str:
        """What runs the pre-tokenizer's splits (`mnemo info`): mnemo's compiled scanner, or the
        `regex` module for a split outside the compiled family."""
        return "mnemo's scanner" if self._fast is not None or self._runner.pattern is not None else "the regex module"

    # ---- the pipeline ----

    def normalize(self, text: str) -> str:
        """The text as the normalizer leaves it (unchanged without one)."""
        return normalize(self.forms, text) if self.forms else text

    def pre_tokenize(self, text: str) -> list[str]:
        """tokenizers' pre-tokens of a normalized stretch (before the byte mapping)."""
        return self._runner.split(text)

    def _core_encodes(self, text: str) -> bool:
        """Whether the core's compiled encoder gives the ids of this normalized stretch between
        added tokens by itself, in one call (its pattern splits as the pre-tokenizer does, and
        ignore_merges has nothing to look up in it)."""
        rare = self._rare_whole
        return self._whole_stretch or (rare is not None and not any(word in text for word in rare))

    def _stretch(self, text: str, out: list[int]) -> None:
        """Append the ids of one normalized stretch between added tokens."""
        if self._core_encodes(text):
            out.extend(self.core.encode_ordinary(text))
            return
        whole = self.whole
        pending: list[bytes] = []
        for piece in self._runner.split(text):
            data = piece.encode("utf-8")  # no lone surrogate is left (_no_surrogates)
            if whole is not None:
                found = whole.get(data)
                if found is not None:
                    if pending:
                        out.extend(self._encoder(pending))
                        pending = []
                    out.append(found)
                    continue
            pending.append(data)
        if pending:
            out.extend(self._encoder(pending))

    def _resolve(self, allowed_special: AllOr, disallowed_special: AllOr) -> tuple[set[int], set[int]]:
        """(ids to skip, ids that raise) of the special added tokens (mnemo's contract)."""
        names = self.special_tokens
        if isinstance(allowed_special, str) and allowed_special == "all":
            allowed = set(names)
        else:
            allowed = set(allowed_special)
            unknown = allowed - set(names)
            if unknown:
                raise ConfigError(f"allowed_special names {sorted(unknown)}, which are not special tokens here")
        if isinstance(disallowed_special, str) and disallowed_special == "all":
            disallowed = set(names) - allowed
        else:
            disallowed = set(disallowed_special) & set(names)
        skip = {names[n] for n in names if n not in allowed and n not in disallowed}
        return skip, {names[n] for n in disallowed}

    def _encode(self, text: str, skip: Collection[int], check: Collection[int]) -> list[int]:
        if not isinstance(text, str):
            raise ConfigError(f"text must be a str, got {type(text).__name__}")
        text = _no_surrogates(text)
        out: list[int] = []
        for piece in self._added.split(text, self.normalize, skip):
            if piece.token is not None:
                if piece.token in check:
                    name = self._content[piece.token]
                    raise SpecialTokenError(
                        f"the text contains the special token {name!r} at character {piece.start}; "
                        f"pass allowed_special={{{name!r}}} (or 'all') to encode it as its id, "
                        f"or disallowed_special=() / encode_ordinary to encode it as plain text"
                    )
                out.append(piece.token)
            elif piece.text:
                self._stretch(piece.text, out)
        return out

    def _template(self, ids: list[int], add: bool | None) -> list[int]:
        template = self.post.template
        if template is None or not (self.add_special_tokens if add is None else add):
            return ids
        out: list[int] = []
        for p in template.single:
            if p.sequence is not None:
                out.extend(ids)
            else:
                assert p.special is not None
                out.extend(template.specials[p.special][0])
        return out

    # ---- mnemo's encode names ----

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
        add_special_tokens: bool | None = None,
    ) -> list[int]:
        """Ids of `text` as `tokenizers` gives them, special tokens under mnemo's contract
        (module docstring); `add_special_tokens`: the template's tokens around them (default:
        the option this tokenizer was loaded with)."""
        skip, check = self._resolve(allowed_special, disallowed_special)
        return self._template(self._encode(text, skip, check), add_special_tokens)

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of `text` with the special added tokens' text as plain text (tokenizers'
        encode_special_tokens=True); no template."""
        return self._encode(text, self._special_ids, ())

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
        add_special_tokens: bool | None = None,
    ) -> list[list[int]]:
        return [
            self.encode(t, allowed_special=allowed_special, disallowed_special=disallowed_special, add_special_tokens=add_special_tokens)
            for t in texts
        ]

    def encode_ordinary_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode_ordinary(t) for t in texts]

    def encode_with_offsets(
        self, text: str, *, allowed_special: AllOr = frozenset(), disallowed_special: AllOr = "all"
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """`encode` and each token's character span in `text`, as tokenizers' offsets give
        them (through the normalizer; an added token with lstrip/rstrip spans its white space)."""
        from mnemo.formats.hf_encoding import encode_sequence

        skip, check = self._resolve(allowed_special, disallowed_special)
        enc = encode_sequence(self, _no_surrogates(text), 0, sorted(skip))
        for ident, (start, _) in zip(enc.ids, enc.offsets):
            if ident in check:
                self._encode(text, skip, check)  # raises, naming the token
        return enc.ids, enc.offsets

    def encode_bytes(self, data: bytes) -> list[int]:
        """`encode_ordinary` of UTF-8 bytes.  tokenizers encodes text, not bytes: its normalizer
        and regexes run on characters, so invalid UTF-8 is an InputError naming the offset."""
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"the bytes are not UTF-8 at offset {exc.start}: a tokenizer.json pipeline encodes text (decode it "
                f"first, e.g. with errors='replace')"
            ) from None
        return self.encode_ordinary(text)

    # ---- datasets: what `mnemo tokenize` and the work engine ask of a tokenizer ----

    def encode_documents(
        self, docs: Iterable[bytes], bos: int | None = None, eos: int | None = None
    ) -> npt.NDArray[np.unsignedinteger]:
        """Every document's ids between `bos` and `eos` (ids, or None), one array (uint16 when
        the vocabulary fits, else uint32), as Tokenizer.encode_documents gives them: each
        document is `encode_ordinary` of its UTF-8 text -- tokenizers' ids with its special
        added tokens' text read as text (`encode_special_tokens=True`), non-special added tokens
        matched as always, no template.  Bytes that are not UTF-8 are read as U+FFFD each
        (errors="replace"): tokenizers encodes text, and a dataset is read whole, not refused
        for one bad byte (docs/interop.md, "Datasets").  A pipeline that gives its core's ids
        (`extras` names nothing but a template) is its core's encode_documents."""
        for name, value in (("bos", bos), ("eos", eos)):
            if value is not None and self.core._raw(check_int(name, value)) is None:
                raise ConfigError(f"{name}={value} is not an id of this tokenizer (n_vocab {self.n_vocab})")
        if not self._id_extras():  # the core's ids: its .tok is the one its tokenizer.bin writes
            return self.core.encode_documents(docs, bos=bos, eos=eos)
        if isinstance(docs, (str, bytes, bytearray, memoryview)) or not isinstance(docs, Iterable):
            raise type_error("docs", "an iterable of bytes documents", docs)
        # The stretches the core encodes whole are encoded together, packed (packing.encode_flat:
        # no Python int per id); every other id -- separators, added tokens, stretches split in
        # Python -- is `fixed`, and `before[k]` counts the fixed ids before stretch k.
        fixed: list[int] = []
        stretches: list[str] = []
        before: list[int] = []
        for i, doc in enumerate(docs):
            if not isinstance(doc, bytes):
                raise type_error(f"docs[{i}]", "bytes", doc)
            if bos is not None:
                fixed.append(bos)
            for piece in self._added.split(doc.decode("utf-8", "replace"), self.normalize, self._special_ids):
                if piece.token is not None:
                    fixed.append(piece.token)
                elif piece.text and self._core_encodes(piece.text):
                    before.append(len(fixed))
                    stretches.append(piece.text)
                elif piece.text:
                    self._stretch(piece.text, fixed)
            if eos is not None:
                fixed.append(eos)
        lengths, flat = encode_flat(self.core, stretches, set(), set())
        ids = np.empty(len(fixed) + len(flat), dtype=flat.dtype)
        if fixed:
            # fixed id j lands after the stretches placed before it: j + their lengths
            ends = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)])
            at = np.arange(len(fixed)) + ends[np.searchsorted(np.array(before, dtype=np.int64), np.arange(len(fixed)), side="right")]
            ids[at] = fixed
            rest = np.ones(len(ids), dtype=bool)
            rest[at] = False
            ids[rest] = flat
        else:
            ids[:] = flat
        return ids

    def template_separators(self) -> tuple[int | None, int | None] | None:
        """(before, after) each text: the special tokens the post-processor's template puts
        around a single sequence -- what tokenizers' `add_special_tokens=True`, its and
        transformers' default, adds (Llama 3's `<|begin_of_text|>` before) -- when each side is
        at most one special added token; None when the template adds nothing or more than that.
        `mnemo tokenize` separates documents with them by default (tokenizing.document_separators)."""
        template = self.post.template
        if template is None or template.added(False) == 0:
            return None
        sides: list[list[int]] = [[], []]
        side = 0
        for piece in template.single:
            if piece.sequence is not None:
                side = 1
                continue
            assert piece.special is not None
            sides[side].extend(template.specials[piece.special][0])
        if any(len(ids) > 1 or (ids and ids[0] not in self._special_ids) for ids in sides):
            return None
        return (sides[0][0] if sides[0] else None), (sides[1][0] if sides[1] else None)

    @property
    def fingerprint(self) -> str:
        """What identifies the ids this tokenizer gives, as 32 hex digits (.tok files and
        shard folders record it; docs/formats.md, "Fingerprint").  The core's when the pipeline
        gives the core's ids (nothing but a template, which encode_documents does not apply);
        else a hash of the core's fingerprint and the tokenizer.json keys that change ids --
        normalizer, pre_tokenizer, added_tokens, model.ignore_merges -- so that a .tok written
        through the pipeline is never read as the plain vocabulary's, nor the other way round."""
        if self._fingerprint is None:
            if not self._id_extras():
                self._fingerprint = self.core.fingerprint
            else:
                model = self._obj.get("model")
                keys = [
                    self._obj.get("normalizer"),
                    self._obj.get("pre_tokenizer"),
                    self._obj.get("added_tokens"),
                    model.get("ignore_merges", False) if isinstance(model, dict) else None,
                ]
                h = hashlib.blake2b(digest_size=16, person=b"mnemo-hfpipe1")
                h.update(self.core.fingerprint.encode("ascii") + b"\0")
                h.update(json.dumps(keys, sort_keys=True, ensure_ascii=False).encode("utf-8"))
                self._fingerprint = h.hexdigest()
        return self._fingerprint

    def _for_workers(self) -> bytes:
        """What a worker process rebuilds this tokenizer from (`_from_worker_image`), plain
        bytes and no pickle: the options it was loaded with and what loading set on it (a
        transformers folder's roles, chat template and template), as JSON, then the
        tokenizer.json text, which the worker reads again.  Made once."""
        if self._worker_bytes is None:
            options = {
                "source": self.source,
                "add_special_tokens": self.add_special_tokens,
                # the transformers drop-in reads a live file, whose truncation and padding it applies
                "session": self._obj.get("truncation") is not None or self._obj.get("padding") is not None,
                "post_processor": post_processor_json(self.post),
                "bos_token": self.bos_token,
                "eos_token": self.eos_token,
                "pad_token": self.pad_token,
                "chat_template": self.chat_template,
            }
            head = json.dumps(options, ensure_ascii=False).encode("utf-8")
            # the file's own bytes while its JSON is not needed otherwise: what json.loads read
            body = self._scanned.data if self._scanned is not None else json.dumps(self._json(), ensure_ascii=False).encode("utf-8")
            self._worker_bytes = len(head).to_bytes(4, "little") + head + body
        return self._worker_bytes

    @classmethod
    def _from_worker_image(cls, data: bytes) -> HFTokenizer:
        """The tokenizer `_for_workers` gave the image of (in a worker: the caller's own bytes)."""
        n = int.from_bytes(data[:4], "little")
        options = json.loads(data[4 : 4 + n])
        source = options["source"]
        obj, scanned = read_json_bytes(data[4 + n :], source, "tokenizer.json")
        tok = from_json(
            obj,
            source,
            add_special_tokens=options["add_special_tokens"],
            plain_ok=False,
            session=options["session"],
            scanned=scanned,
        )
        assert isinstance(tok, HFTokenizer)
        tok.post = parse_post_processor(options["post_processor"], source)
        tok.bos_token = options["bos_token"]
        tok.eos_token = options["eos_token"]
        tok.pad_token = options["pad_token"]
        tok.chat_template = options["chat_template"]
        return tok

    # ---- the vocabulary and decoding (the core's) ----

    @property
    def n_vocab(self) -> int:
        return self.core.n_vocab

    @property
    def n_tokens(self) -> int:
        return self.core.n_tokens

    @property
    def merges(self) -> list[tuple[int, int]]:
        return self.core.merges

    @property
    def merge_pairs(self) -> list[tuple[bytes, bytes]]:
        return self.core.merge_pairs

    @property
    def merge_counts(self) -> list[int] | None:
        return self.core.merge_counts

    @property
    def id_map(self) -> list[int] | None:
        return self.core.id_map

    @property
    def pattern(self) -> str:
        """What splits the text: a named pattern, or the pre-tokenizer's steps."""
        return self._fast if self._fast is not None else self.pattern_description()

    @property
    def vocab(self) -> dict[int, bytes]:
        return self.core.vocab

    def token_bytes(self, token: int) -> bytes:
        return self.core.token_bytes(token)

    def token_to_id(self, token: str | bytes) -> int | None:
        return self.core.token_to_id(token)

    def is_special_token(self, token: int) -> bool:
        return token in self._special_ids

    def decode_bytes(self, tokens: Iterable[int], *, skip_special_tokens: bool = False) -> bytes:
        ids = list(tokens)
        if skip_special_tokens:
            ids = [t for t in ids if t not in self._special_ids]
        added = self._added_bytes
        if not any(t in added for t in ids):
            return self.core.decode_bytes(ids)
        return b"".join(self.decode_tokens_bytes(ids))

    def decode(self, tokens: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False) -> str:
        """The text of the ids (tokenizers' ByteLevel decoder: bytes joined, invalid UTF-8 as
        U+FFFD); skip_special_tokens leaves out the special added tokens, as in tokenizers."""
        return self.decode_bytes(tokens, skip_special_tokens=skip_special_tokens).decode("utf-8", errors=errors)

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """Each token's bytes as decode gives them (an added token's as tokenizers decodes it)."""
        added = self._added_bytes
        return [added[t] if t in added else self.core.token_bytes(t) for t in tokens]

    # ---- files ----

    def _json(self) -> Mapping[str, Any]:
        """The whole tokenizer.json as json.loads reads it."""
        if self._scanned is not None:
            self._scanned.fill(cast("dict[str, Any]", self._obj))
            self._scanned = None
        return self._obj

    def to_hf_json(self) -> dict[str, Any]:
        """The tokenizer.json this was read from (it is what tokenizers runs)."""
        copy: dict[str, Any] = json.loads(json.dumps(self._json()))
        return copy

    def save_hf(self, path: PathLike) -> None:
        write_atomic(path, json.dumps(self._json(), ensure_ascii=False, indent=1).encode("utf-8"))

    def save(self, path: str | os.PathLike[str]) -> None:
        """tokenizer.bin cannot hold what makes this tokenizer differ from a plain one."""
        raise ConfigError(
            f"{self.source}: a tokenizer.bin cannot hold this tokenizer.json's {', '.join(self.extras()) or 'pipeline'}; "
            f"save it with save_hf (tokenizer.json), or save .core for its vocabulary alone"
        )

    def extras(self) -> list[str]:
        """What this tokenizer has beyond a plain mnemo Tokenizer, by tokenizer.json key."""
        out = self._id_extras()
        if self.post.template is not None and self.add_special_tokens:
            out.append("post_processor (its template, with add_special_tokens)")
        return out

    def _id_extras(self) -> list[str]:
        """The extras that change the ids of a text (all of them but the template)."""
        out: list[str] = []
        if self.forms:
            out.append(f"normalizer {'+'.join(self.forms)}")
        if not self._core_splits:
            out.append(f"pre_tokenizer {self.pattern_description()}")
        if self.whole is not None:
            out.append("model.ignore_merges")
        if any(t.lstrip or t.rstrip or t.single_word or not t.special for t in self.added_tokens):
            out.append("added_tokens (lstrip, rstrip, single_word or not special)")
        elif len({t.normalized for t in self.added_tokens}) > 1 and self.forms:
            out.append("added_tokens (normalized)")
        return out


def _byte_level_decode(text: str) -> bytes:
    """tokenizers' ByteLevel decoder on one token's text."""
    try:
        return bytes([CHAR_TO_BYTE[c] for c in text])
    except KeyError:
        return text.encode("utf-8")


def _no_surrogates(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD (mnemo's rule: tokenizers refuses such a str)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text_bytes(text).decode("utf-8")


def _chunk_encoder(tok: Tokenizer) -> Any:
    """The core's compiled BPE of already-split chunks (public ids): Encoder.encode_chunks."""
    return tok._encoder.encode_chunks


# ---- reading a tokenizer.json ----


def _model_checks(model: Any, source: str) -> bool:
    """The BPE model's options: ignore_merges (returned); FormatError naming any option mnemo
    does not reproduce."""
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE":
        kind = model.get("type") if isinstance(model, dict) else model
        raise FormatError(f"{source}: key 'model.type' is {kind!r}: mnemo imports byte-level BPE only")
    dropout = model.get("dropout")
    if dropout is not None and not (isinstance(dropout, (int, float)) and not isinstance(dropout, bool) and dropout == 0):
        raise FormatError(
            f"{source}: key 'model.dropout' is {dropout!r}: BPE dropout draws random merges, which mnemo does not; "
            f"set it to null"
        )
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        value = model.get(key)
        if value not in (None, ""):
            raise FormatError(
                f"{source}: key 'model.{key}' is {excerpt(value, 40)}: subword prefixes and suffixes belong to "
                f"WordPiece-style BPE, not the byte-level family mnemo holds"
            )
    fallback = model.get("byte_fallback", False)
    if fallback is not False:
        raise FormatError(
            f"{source}: key 'model.byte_fallback' is {excerpt(fallback, 40)}: byte fallback (<0x..> tokens) belongs "
            f"to SentencePiece-style BPE, not the byte-level family mnemo holds"
        )
    ignore = model.get("ignore_merges", False)
    if not isinstance(ignore, bool):
        raise FormatError(f"{source}: key 'model.ignore_merges' is {excerpt(ignore, 40)}, not true or false")
    for key in ("fuse_unk",):
        if not isinstance(model.get(key, False), bool):
            raise FormatError(f"{source}: key 'model.{key}' is {excerpt(model.get(key), 40)}, not true or false")
    return ignore


def from_json(
    obj: Any,
    source: str,
    *,
    add_special_tokens: bool = False,
    plain_ok: bool = True,
    session: bool = False,
    scanned: ScannedModel | None = None,
) -> Tokenizer | HFTokenizer:
    """A tokenizer from a parsed tokenizer.json: a plain Tokenizer when it holds everything
    the file does (and `plain_ok`), else an HFTokenizer.  FormatError names the key of any part
    mnemo does not reproduce (docs/interop.md lists them).  `session`: the file comes from a
    live tokenizers object (the drop-in), whose truncation and padding the caller applies.
    `scanned`: model.vocab and model.merges left out of `obj` by hf_file.read_json_file, read
    from the file's bytes in the plain case, else put back into `obj` here."""
    try:
        return _from_json(obj, source, add_special_tokens, plain_ok, session, scanned)
    except (MnemoError, Misguessed):
        if scanned is not None and not scanned.spans_hold():
            # model.merges ends before the end of the text said: `obj` lost a member after it
            whole = scanned.whole()
            return from_json(whole, source, add_special_tokens=add_special_tokens, plain_ok=plain_ok, session=session)
        if scanned is not None:
            # json.loads of the whole file stops at a syntax error in those values first
            scanned.fill(obj)
        raise


def _from_json(
    obj: Any, source: str, add_special_tokens: bool, plain_ok: bool, session: bool, scanned: ScannedModel | None
) -> Tokenizer | HFTokenizer:
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: not a JSON object")
    ignore_merges = _model_checks(obj.get("model"), source)
    model = obj["model"]
    if not session:
        for key in ("truncation", "padding"):
            if obj.get(key) is not None:
                raise FormatError(
                    f"{source}: key '{key}' is {excerpt(obj.get(key), 80)}: mnemo's encode neither truncates nor pads; "
                    f"set it to null (transformers sets both per call)"
                )
    forms = parse_normalizer(obj.get("normalizer"), source)
    pre = parse_pre_tokenizer(obj.get("pre_tokenizer"), source)
    post = parse_post_processor(obj.get("post_processor"), source)
    decoder = obj.get("decoder")
    if not _byte_level_decoder(decoder):
        raise FormatError(
            f"{source}: key 'decoder' is {excerpt(decoder, 80)}: not a ByteLevel decoder, so tokenizers' decode "
            f"gives other text than the tokens' bytes"
        )
    listed = parse_added_tokens(obj.get("added_tokens"), source)
    fast = fast_pattern(pre)
    # the pattern on tokenizers' own Unicode tables (its ids on letters new since Unicode 16)
    compiled = compile_pattern(fast, "tokenizers") if fast is not None else compiled_pattern(pre)
    pattern: str | SplitPattern = compiled if compiled is not None else "gpt2"
    template_adds = post.template is not None and add_special_tokens and post.template.added(False) > 0
    # The plain case and a file converted from ranks, read from the file's bytes
    # (tokenizer_json.py); any other case from the JSON.
    got: tuple[list[AddedToken], TokenizerFields, bool] | None = None
    if scanned is not None:
        got = _scanned_vocabulary(scanned, source, listed, ignore_merges, pattern)
        if got is None:
            scanned.fill(obj)
    raw_vocab: Mapping[str, int] = model.get("vocab")
    if got is not None:
        added, fields, checked = got
        unreachable: dict[bytes, int] = {}
    else:
        if not isinstance(raw_vocab, dict) or not (
            set(map(type, raw_vocab.values())) <= {int} and (not raw_vocab or min(raw_vocab.values()) >= 0)
        ):
            raise FormatError(f"{source}: key 'model.vocab' should be an object mapping tokens to non-negative integer ids")
        added = tokenizers_ids(listed, raw_vocab, source)
        fields, unreachable, checked = _vocabulary(source, raw_vocab, model.get("merges"), added, ignore_merges, pattern)
    assert fields.id_map is not None
    bpe_ids = _among(added, islice(fields.id_map, 256 + len(fields.merges)))  # added ids of bytes and merges
    if ignore_merges and unreachable:
        cut = 256 + len(fields.merges)
        whole_raw = sorted(unreachable, key=unreachable.__getitem__)
        public = [*fields.id_map[:cut], *(unreachable[raw] for raw in whole_raw), *fields.id_map[cut:]]
        check_public_ids(source, public, lambda pos: f"id {public[pos]}")
        fields = replace(fields, id_map=public, whole_tokens=whole_raw, ranked=True)
    core = Tokenizer._from_checked(fields) if checked else tokenizer_of(source, fields, built=True)
    whole: dict[bytes, int] | None = None
    # ignore_merges: a pre-token that is a vocabulary entry is that entry.  A core from ranks
    # (`checked`) does that itself, natively (tiktoken's rule); otherwise HFTokenizer looks it up.
    if ignore_merges and not checked:
        whole = {}
        for key, value in raw_vocab.items():
            raw = token_bytes(key)
            if raw is not None:
                whole[raw] = value
        whole = _left_to_look_up(core, whole)
    plain_added = all(
        t.special and not (t.lstrip or t.rstrip or t.single_word) and t.id not in bpe_ids for t in added
    ) and (len({t.normalized for t in added}) <= 1 or not forms)
    if plain_ok and plain_added and not forms and compiled is not None and whole is None and not template_adds and not unreachable:
        return core
    return HFTokenizer(
        core,
        obj=obj,
        source=source,
        pre=pre,
        forms=forms,
        added=added,
        whole=whole,
        post=post,
        add_special_tokens=add_special_tokens,
        scanned=scanned if got is not None else None,  # its JSON filled when first needed
    )


def _among(added: Sequence[AddedToken], ids: Iterable[int]) -> set[int]:
    """The added tokens' ids that `ids` holds: a set of a few ids met with the list in one C
    loop (a set of every id, to look a few up, was 3 ms of cl100k's load)."""
    return {t.id for t in added}.intersection(ids)


def _left_to_look_up(core: Tokenizer, whole: dict[bytes, int]) -> dict[bytes, int] | None:
    """The vocabulary entries ignore_merges' lookup must still give in Python: those the core,
    given a pre-token that is exactly the entry, does not give alone (None: none).  The core
    gives most of them itself -- each merge's token is what BPE makes of its bytes, and the
    tokens no merge makes are its whole tokens -- which one compiled call over every entry shows
    (the ids, concatenated, are the entries' ids, one each); when it does not, entry by entry."""
    chunks = list(whole)
    enc = core._encoder
    if enc.encode_chunks(chunks) == [whole[raw] for raw in chunks]:
        return None
    return {raw: i for raw, i in whole.items() if enc.encode_chunks([raw]) != [i]}


def _vocabulary(
    source: str,
    raw_vocab: dict[str, int],
    raw_merges: Any,
    added: Sequence[AddedToken],
    ignore_merges: bool,
    pattern: str | SplitPattern,
) -> tuple[TokenizerFields, dict[bytes, int], bool]:
    """The core's fields from model.vocab, model.merges and the added tokens, the tokens no
    merge makes (`unreachable`, bytes -> id), and whether every rule of the fields is checked
    already (the rank path's: Tokenizer._from_checked takes them).

    Three ways: an ignore_merges file converted from ranks (Llama 3's) takes
    _converted_from_ranks; a file without ignore_merges whose every vocabulary entry is a byte,
    a merge's token or an added token's text takes _alphabet_merges, which works on the file's
    strings; any other file, and any error, the way below, which words it."""
    contents = {t.content for t in added}
    if ignore_merges:
        converted = _converted_from_ranks(raw_vocab, raw_merges, added, contents, pattern)
        if converted is not None:
            return converted, {}, True
    else:
        found = _alphabet_merges(raw_vocab, raw_merges, contents)
        if found is not None:
            pairs, public, keys = found
            return _with_added(source, pairs, public, added, pattern, lambda pos: keys[pos]), {}, False
    # each vocabulary entry's bytes, once (None: not in GPT-2's alphabet); the merges name them
    spelled = {key: token_bytes(key) for key in raw_vocab}
    merges = _merges(raw_merges, source, spelled)
    made = {a + b for a, b in merges}
    plain: dict[str, Any] = {}
    for key, value in raw_vocab.items():
        if key in contents:
            raw = spelled[key]
            if raw is None or (raw not in made and len(raw) > 1):
                continue  # the added token alone holds it (as tokenizers' trainer writes its specials)
        plain[key] = value
    # Tokens no merge makes (Llama 3's files hold some): only a whole-pre-token lookup
    # (ignore_merges) produces them.  With ignore_merges the core holds them as its whole tokens
    # (a ranked vocabulary, mnemo/vocab.py); without, tokenizers never produces them, and the
    # core keeps each, for decoding only, as a token named by its text.
    unreachable: dict[bytes, int] = {}
    vocab: dict[bytes, int] = {}
    for key, value in plain.items():
        raw = spelled[key]
        if raw is None:
            raw = string_to_token(key, f"{source}: key model.vocab.{key!r}")  # words the error
        if len(raw) > 1 and raw not in made:
            unreachable[raw] = value
        else:
            vocab[raw] = value
    bpe_ids = set(vocab.values())
    specials = {t.content: t.id for t in added if t.id not in bpe_ids}
    if not ignore_merges:
        for raw, ident in unreachable.items():
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise FormatError(
                    f"{source}: vocabulary entry 'model.vocab'[{token_to_string(raw)!r}] (id {ident}) is made by no merge "
                    f"and is not UTF-8 text, and without ignore_merges nothing produces it: remove it"
                ) from None
            if name in specials:
                raise FormatError(
                    f"{source}: vocabulary entry {name!r} (id {ident}) is made by no merge, and an added token has the "
                    f"same text with id {specials[name]}"
                )
            specials[name] = ident
    fields = from_byte_tokens(
        source,
        vocab,
        merges,
        pattern=pattern,
        specials=specials,
        show=lambda raw: repr(token_to_string(raw)),
        merge_where=lambda k: f"key 'model.merges[{k}]'",
        vocab_where=lambda raw: f"'model.vocab'[{token_to_string(raw)!r}]",
    )
    return fields, unreachable, False


def _scanned_vocabulary(
    scanned: ScannedModel, source: str, listed: list[AddedToken], ignore_merges: bool, pattern: str | SplitPattern
) -> tuple[list[AddedToken], TokenizerFields, bool] | None:
    """What tokenizers_ids and _vocabulary give, read from the file's bytes (hf_file.py, over
    tokenizer_json.py): for the plain case (_alphabet_merges' answer from the same merges) and
    for a file converted from ranks (_converted_from_ranks'); None for any other file."""
    plain = scanned.read(ignore_merges, listed)
    if plain is None:
        return None
    added = tokenizers_ids(listed, PlainVocab(plain), source, lambda: plain.ids_from(plain.size()))
    if ignore_merges:
        converted = scanned.converted(plain, added, pattern)
        return None if converted is None else (added, converted, True)
    label = lambda pos: plain.public_keys()[pos].decode("utf-8")  # noqa: E731
    fields = _with_added(source, plain.pairs, plain.public, added, pattern, label)
    return added, replace(fields, spelled=scanned.spelled(plain)), False


def _with_added(
    source: str,
    pairs: list[tuple[int, int]],
    public: list[int],
    added: Sequence[AddedToken],
    pattern: str | SplitPattern,
    key: Callable[[int], str],
) -> TokenizerFields:
    """The fields of the plain case's merges and the added tokens that are no byte or merge
    (`key(pos)`: the vocabulary string of public[pos], for messages)."""
    bpe_ids = _among(added, public)
    specials = {t.content: t.id for t in added if t.id not in bpe_ids}
    return with_specials(source, pairs, public, [], specials, pattern, lambda pos: f"'model.vocab'[{key(pos)!r}]")


def _converted_from_ranks(
    raw_vocab: Mapping[str, int],
    raw_merges: Any,
    added: Sequence[AddedToken],
    contents: Collection[str],
    pattern: str | SplitPattern,
) -> TokenizerFields | None:
    """The core of a file converted from a rank file -- the layout of transformers'
    TikTokenConverter, its converter for tiktoken files such as Llama 3's: ignore_merges, the
    BPE tokens' ids are their ranks 0..n-1, and model.merges lists, by their token's rank,
    every pair of tokens that spells a token (several per token: 290,209 for the 128,000
    tokens of the tests' Llama-3-like ranks) -- built from the ranks by tiktoken's rule
    (formats.tiktoken.fields_of_ranks, compiled; every rule checked), or None when the file
    is not that case.

    Why the ids are tokenizers': with ignore_merges a whole pre-token that is a token is that
    token, in both.  Otherwise tokenizers glues the listed pair of lowest index, tiktoken the
    pair of lowest rank; the merges go by rank, so both glue a token of the lowest rank first.
    And the two parts that sit side by side and spell a token T are always the same pair: the
    steps inside T's bytes were the lowest there, so they are the merge of T's own bytes, whose
    last step is T's one pair (the one merges_of_ranks finds).  So each step is the same in both
    as long as that pair is listed: checked below, for every token.  A file that fails a check
    takes the way from_byte_tokens words (its merges must then come in the order they apply)."""
    if not isinstance(raw_merges, list):
        return None
    # An added token's text in the vocabulary that no merge makes is the added token's alone
    # (from_json's rule): which of those texts a merge makes, when the vocabulary holds any.
    held = [key for key in contents if len(key) > 1 and key in raw_vocab]
    made: set[str] = set()
    if held:
        wanted = set(held)
        for item in raw_merges:
            parts = _pair_of(item)
            if parts is None:
                return None
            if parts[0] + parts[1] in wanted:
                made.add(parts[0] + parts[1])
    keys: list[str | None] = [None] * len(raw_vocab)
    count = 0
    for key, rank in raw_vocab.items():
        if key in contents and len(key) > 1 and key not in made:
            continue
        if rank >= len(keys) or keys[rank] is not None:
            return None
        keys[rank] = key
        count += 1
    if any(key is None for key in keys[:count]):
        return None  # the BPE tokens' ids are not 0..n-1
    names = cast("list[str]", keys[:count])
    by_rank = [token_bytes(key) for key in names]
    if any(raw is None for raw in by_rank):
        return None
    specials: dict[str, int] = {}
    for token in added:
        if token.id >= count:
            specials[token.content] = token.id
        elif names[token.id] != token.content:
            return None
    fields = fields_of_ranks((cast("list[bytes]", by_rank), 0), compile_pattern(pattern), specials)
    if fields is None or fields.id_map is None:
        return None
    # each token's one pair, by the token's rank: the ranks of its two parts
    public = fields.id_map
    pair_of = [-1] * count
    for k, (left, right) in enumerate(fields.merges):
        pair_of[public[256 + k]] = public[left] << 32 | public[right]
    listed = bytearray(count)
    last = -1
    for item in raw_merges:
        parts = _pair_of(item)
        if parts is None:
            return None
        a, b = parts
        made_rank = raw_vocab.get(a + b)
        ra = raw_vocab.get(a)
        rb = raw_vocab.get(b)
        if made_rank is None or ra is None or rb is None or not last <= made_rank < count:
            return None  # not a pair of tokens that spells one, or not by rank
        last = made_rank
        if pair_of[made_rank] == ra << 32 | rb:
            listed[made_rank] = 1
    if any(pair_of[r] >= 0 and not listed[r] for r in range(count)):
        return None  # a token's one pair is not listed: tokenizers cannot glue it
    return fields


def _alphabet_merges(
    raw_vocab: Mapping[str, int], raw_merges: Any, contents: Collection[str]
) -> tuple[list[tuple[int, int]], list[int], list[str]] | None:
    """The merges as pairs of mnemo's ids, the public id of each byte and merge, and their
    strings, read from the file's strings as they are (GPT-2's alphabet spells each byte with
    one character, so the string of a merge's token is its parts' strings joined): or None
    when anything is not the plain case -- a byte or a merge's token missing from the
    vocabulary, a part not made before, a token made twice, an entry that is neither a byte, a
    merge's token nor an added token's text -- and from_byte_tokens words what is wrong."""
    if not isinstance(raw_merges, list):
        return None
    internal: dict[str, int] = {}
    pairs: list[tuple[int, int]] = []
    public: list[int] = []
    keys: list[str] = []
    for byte in range(256):
        char = BYTE_TO_CHAR[byte]
        i = raw_vocab.get(char)
        if i is None:
            return None
        internal[char] = byte
        public.append(i)
        keys.append(char)
    k = 256
    for item in raw_merges:
        parts = _pair_of(item)
        if parts is None:
            return None
        a, b = parts
        left = internal.get(a)
        right = internal.get(b)
        merged = a + b
        i = raw_vocab.get(merged)
        if left is None or right is None or i is None or merged in internal:
            return None
        internal[merged] = k
        k += 1
        pairs.append((left, right))
        public.append(i)
        keys.append(merged)
    if len(internal) != len(raw_vocab) and not (raw_vocab.keys() - internal.keys()) <= set(contents):
        return None  # a token no merge makes: the way that words it
    return pairs, public, keys


def _pair_of(item: Any) -> tuple[str, str] | None:
    """A model.merges entry's two strings ("a b" or ["a", "b"]), or None when it is neither (the
    way through _merges words that)."""
    if type(item) is str:
        a, space, b = item.partition(" ")
        return (a, b) if space and " " not in b else None
    if type(item) is list and len(item) == 2 and type(item[0]) is str and type(item[1]) is str:
        return item[0], item[1]
    return None


def _byte_level_decoder(decoder: Any) -> bool:
    if isinstance(decoder, dict) and decoder.get("type") == "ByteLevel":
        return True
    if isinstance(decoder, dict) and decoder.get("type") == "Sequence" and isinstance(decoder.get("decoders"), list):
        return len(decoder["decoders"]) == 1 and _byte_level_decoder(decoder["decoders"][0])
    return False


def _merges(raw: Any, source: str, spelled: Mapping[str, bytes | None]) -> list[tuple[bytes, bytes]]:
    """model.merges as byte pairs; `spelled`: the bytes of the vocabulary's strings (None: not
    in GPT-2's alphabet), looked up instead of decoding each part again."""
    if not isinstance(raw, list):
        raise FormatError(f"{source}: key 'model.merges' should be a list")
    merges: list[tuple[bytes, bytes]] = []
    for k, item in enumerate(raw):
        parts: Any = item.split(" ") if isinstance(item, str) else item
        if type(parts) is list and len(parts) == 2:
            a, b = parts
            if type(a) is str and type(b) is str and a and b:
                left = spelled.get(a) or token_bytes(a)
                right = spelled.get(b) or token_bytes(b)
                if left is not None and right is not None:
                    merges.append((left, right))
                    continue
        # the slow way, which words the error
        where = f"{source}: key 'model.merges[{k}]'"
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            raise FormatError(f"{where}: {item!r} should be two tokens")
        merges.append((string_to_token(parts[0], where), string_to_token(parts[1], where)))
    return merges


__all__ = ["Encoding", "HFTokenizer", "HF_GPT2_REGEX", "UnsupportedRegex", "fast_pattern", "from_json"]
