"""The Tokenizer: a vocabulary (mnemo/vocabulary.py) and its encoding policy.

Layers as in tiktoken: the compiled encoder (encode_chunk.py, encode_text.py) knows merges and bytes
only; this module holds all policy -- special tokens (tiktoken's allowed_special /
disallowed_special contract), error wording -- and is plain Python.  The batch, numpy, chat and
offset paths are methods here that delegate down (batch_encode.py, packing.py, chat.py,
decoding.py), so that this class stays the size of tiktoken's Encoding.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, cast, overload

import numpy as np
import numpy.typing as npt

from mnemo import batch_encode, decoding, packing, unstable
from mnemo.chat import render_document
from mnemo.checks import check_errors, check_int, text_type_error, type_error
from mnemo.constants import maskbit_for
from mnemo.encode_text import encode_bytes, encode_range, encode_range_packed
from mnemo.errors import ConfigError, SpecialTokenError, UnknownTokenError
from mnemo.special_match import lacks
from mnemo.streaming import encode_stream, text_bytes
from mnemo.vocabulary import Vocabulary

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


class Tokenizer(Vocabulary):
    """A byte-level BPE vocabulary and its encoding policy.

    `Tokenizer(merges, *, pattern, special_tokens, tie, merge_counts, id_map)`: the vocabulary
    (mnemo/vocabulary.py: how ids are numbered, the id map of an imported vocabulary,
    tokenizer.bin, lookups).  Here: tiktoken's contract for special tokens in text
    (allowed_special / disallowed_special), error wording, the list, numpy, batch and chat
    paths, decoding.  tiktoken's names for these methods, and how they differ, are in
    docs/tiktoken.md.
    """

    # ---- encoding ----

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

        return encode_stream(texts, encode, self.split_pattern, specials, longest, self.superword is not None)

    def _encode_range(self, data: bytes, start: int, end: int, out: list[int]) -> None:
        if end - start < packing.KEPT_WRITER_FROM and end - start <= packing.PIECE_BYTES:
            encode_range(self._encoder, data, start, end, self._pattern_id, out)
        else:
            out.extend(self._encode_long(data, start, end))

    def _encode_all(self, data: bytes) -> list[int]:
        """Public ids of a whole text (Encoder.set_public): one compiled call, or _encode_long."""
        if len(data) < packing.KEPT_WRITER_FROM and len(data) <= packing.PIECE_BYTES:
            return encode_bytes(self._encoder, data, self._pattern_id)
        # The list as ids_list makes it, not extended into an empty one: that copy of 1-3 M
        # references (and its fresh memory) was a fifth of encode_ordinary on 10 MB of `^`.
        return self._encode_long(data, 0, len(data))

    def _encode_long(self, data: bytes, start: int, end: int) -> list[int]:
        """The ids of a long data[start:end], packed into the kept buffer (packing.take_writer);
        over PIECE_BYTES in pieces (packing.pack_pieces), so that Ctrl-C and SIGTERM are not
        kept waiting by one long compiled call."""
        dst = packing.take_writer()
        try:
            if end - start > packing.PIECE_BYTES and packing.python_handles_signals():
                packing.pack_pieces(self._encoder, data, start, end, self._pattern_id, dst)
            else:
                encode_range_packed(self._encoder, data, start, end, self._pattern_id, dst)
            return self._encoder.writer_ids(dst)
        finally:
            packing.give_writer(dst)

    def encode_bytes(self, data: bytes) -> list[int]:
        """Ids of raw bytes (any bytes, valid UTF-8 or not); special-token text is plain text.
        Each invalid UTF-8 byte is a one-byte character of the pre-tokenizer's split (as in
        encode_documents); `_encode_bytes` is tiktoken's rule instead (mnemo/unstable.py)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise type_error("data", "bytes", data)
        return self._encode_all(bytes(data))

    def _encode_bytes(self, data: bytes) -> list[int]:
        """tiktoken's `Encoding._encode_bytes`: from the first invalid UTF-8 byte on, the bytes are
        joined to the last pre-token before them and merged as one piece (mnemo/unstable.py)."""
        return unstable.encode_bytes_tiktoken(self, data)

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: AllOr = frozenset(),
        disallowed_special: AllOr = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """tiktoken's `encode_with_unstable`: the ids of the text up to its last pre-token, and
        every token sequence that could follow them while spelling the rest (mnemo/unstable.py)."""
        return unstable.encode_with_unstable(self, text, allowed_special, disallowed_special)

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
        return (bool(prefix) and lacks(data, prefix)) or pattern.search(data) is None

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
        num_threads: int | None = None,
    ) -> list[list[int]]:
        """`encode` of each text, in order.  Large batches (more than BATCH_BLOCK texts and
        BATCH_PARALLEL_BYTES of text) go to the work engine's worker processes; `workers`: how
        many (default: every CPU, or 1 in a process that multiprocessing started); workers=1
        always encodes in this process.  mnemo/batch_encode.py and docs/pipelines.md tell the rule.
        `num_threads` (tiktoken's name) is taken as at most that many workers."""
        workers = batch_encode.threads_as_workers(workers, num_threads)
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
    ) -> npt.NDArray[np.uint32]:
        """`encode` as a numpy array of uint32 (tiktoken's type, whatever the vocabulary's size),
        made from the compiled encoder's packed ids: no Python int per id on the way
        (mnemo/packing.py)."""
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

    def decode_bytes(self, tokens: Iterable[int], *, masked: bool = False) -> bytes:
        """The bytes of a token sequence (special tokens as their names).  An id that is no
        token raises UnknownTokenError, whatever bits it has.  `masked=True`: the ids are a
        chat's, some carrying the loss-mask bit (render_conversation, chat .tok files:
        maskbit_for(n_vocab)); the bit is dropped before the lookup."""
        vocab = self._vocab
        if not isinstance(masked, bool):
            raise type_error("masked", "a bool", masked)
        if isinstance(tokens, list):
            toks = tokens
        elif isinstance(tokens, (str, bytes, bytearray)) or not isinstance(tokens, Iterable):
            raise type_error("tokens", "a sequence of int ids", tokens)
        else:
            toks = list(tokens)
        try:
            if not toks or min(toks) >= 0:
                # A hole is None in the list (join raises TypeError) or missing from the dict
                # (KeyError), an id past the end raises IndexError: the loop below names it.
                spelled = cast("list[bytes]", vocab)
                return b"".join([spelled[t] for t in toks])
        except (IndexError, KeyError, TypeError):
            pass
        # Only a caller who says the ids are a chat's gets the mask bit stripped: an id past the
        # end is otherwise a bad id (a padded vocabulary's sample), never a token.
        bit = maskbit_for(self._n_ids) if masked else 0
        parts: list[bytes] = []
        for i, t in enumerate(toks):
            t = check_int(f"tokens[{i}]", t)
            plain = t & ~bit if t & bit else t
            raw = self._raw(plain)
            if raw is None:
                raise self._unknown_decoded(t, masked)
            parts.append(raw)
        return b"".join(parts)

    def _unknown_decoded(self, token: int, masked: bool) -> UnknownTokenError:
        """_unknown, and the way out when the id is a chat's id with the mask bit."""
        error = self._unknown(token)
        bit = maskbit_for(self._n_ids)
        if masked or not token & bit or self._raw(token & ~bit) is None:
            return error
        return UnknownTokenError(
            f"{error.args[0]}; if these are a chat's ids with the loss-mask bit (0x{bit:X}), "
            f"decode them with masked=True"
        )

    def decode(self, tokens: Iterable[int], errors: str = "replace", *, masked: bool = False) -> str:
        """The text of a token sequence; invalid UTF-8 becomes U+FFFD (by default).  An id that
        is no token raises UnknownTokenError; chat ids with the loss-mask bit need
        `masked=True` (see decode_bytes)."""
        return self.decode_bytes(tokens, masked=masked).decode("utf-8", errors=check_errors(errors))

    def stream_decoder(self, errors: str = "replace", *, masked: bool = False) -> StreamDecoder:
        """A decoder for ids that arrive one at a time (mnemo/decoding.py): it returns text only
        once its UTF-8 is complete, and its pieces add up to `decode` of the whole sequence
        (`masked` as in decode)."""
        from mnemo.decoding import StreamDecoder

        return StreamDecoder(self, errors, masked=masked)

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

    def decode_batch(
        self,
        batch: Iterable[Iterable[int]],
        *,
        errors: str = "replace",
        masked: bool = False,
        num_threads: int | None = None,
    ) -> list[str]:
        """`decode` of each token sequence.  `num_threads` (tiktoken's) is checked and changes
        nothing: decoding is a join of byte strings, done in this thread."""
        batch_encode.threads_as_workers(None, num_threads)
        return [self.decode(tokens, errors=errors, masked=masked) for tokens in batch]

    def decode_bytes_batch(
        self, batch: Iterable[Iterable[int]], *, masked: bool = False, num_threads: int | None = None
    ) -> list[bytes]:
        """`decode_bytes` of each token sequence (`num_threads` as in decode_batch)."""
        batch_encode.threads_as_workers(None, num_threads)
        return [self.decode_bytes(tokens, masked=masked) for tokens in batch]

    def encode_ordinary_batch(
        self, texts: Sequence[str], *, workers: int | None = None, num_threads: int | None = None
    ) -> list[list[int]]:
        """`encode_ordinary` of each text (special-token text is plain text); in worker
        processes for large batches, as `encode_batch` (`num_threads` too)."""
        return self.encode_batch(texts, disallowed_special=(), workers=workers, num_threads=num_threads)


