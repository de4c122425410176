"""Ids as packed arrays, and long texts in pieces: the Tokenizer's numpy paths.

The compiled encoder writes ids as packed uint16/uint32 bytes (encode_text.encode_documents_packed,
encode_some_packed); the arrays of `encode_to_numpy`, `encode_documents` and the flat form of
`encode_batch` are made from those bytes, with no Python int per id on the way (building a list
first and converting it cost more than the encoding itself).  With an id map (an imported
vocabulary) the public ids are gathered from the Tokenizer's map array.

Long texts are encoded in pieces of about PIECE_BYTES (`pack_pieces`): compiled code never lets
Python run a signal handler, so one call on a long text kept Ctrl-C and SIGTERM waiting until it
ended.  The Tokenizer's list paths use the same pieces.

The functions take the Tokenizer whose methods delegate to them (its encoder, pattern id, id
map and special-token policy); this module sits below tokenizer.py and names the class for
types only.  Plain Python: numpy and the compiled encoder do the work.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, cast

import numpy as np
import numpy.typing as npt
from librt.strings import BytesWriter

from mnemo.checks import check_int, text_type_error, type_error
from mnemo.encode_chunk import WRITER_IN_PLACE, Encoder, emit
from mnemo.encode_text import encode_documents_packed, encode_range_packed, encode_some_packed
from mnemo.errors import ConfigError
from mnemo.kernels import id_array
from mnemo.constants import VOCAB16
from mnemo.streaming import text_bytes

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from mnemo.tokenizer import AllOr, Tokenizer

#: Texts longer than this are encoded in pieces of about this size.  tokenizer.py reads it as
#: `packing.PIECE_BYTES`, so that a test that makes it small makes every path cut pieces.
PIECE_BYTES: Final = 1 << 20


#: Texts of at least this many bytes write their packed ids into a kept buffer (take_writer).
KEPT_WRITER_FROM: Final = 1 << 16

#: The largest buffer kept between calls: the packed ids of ~10 MB of hostile text (uint32).
KEPT_WRITER_MAX: Final = 32 << 20

# The buffer kept for the next long text: one (two threads giving theirs back at the same moment
# may both keep theirs).  A list, so that taking it (pop) is one step under the GIL: two threads
# never write into the same buffer.
_kept: list[BytesWriter] = []


def take_writer() -> BytesWriter:
    """A buffer for the packed ids of a long text: the one the last long text left, if any.

    Why keep it: a 10 MB text's buffer grows by steps to megabytes, and when it and the text's
    other buffers are freed, glibc gives that memory back to the kernel (its trim threshold
    follows the largest single block), so the next call faults it in again page by page: 12,000
    minor faults and 40 % of `encode_ordinary` on 10 MB of `^` (docs/speed.md, "Worst case and
    memory").  Kept, it costs its size between calls, at most KEPT_WRITER_MAX, one per process."""
    try:
        return _kept.pop()
    except IndexError:
        return BytesWriter()


def give_writer(dst: BytesWriter) -> None:
    """Give back a buffer from take_writer, emptied; kept if it is not too large and none is."""
    if len(dst) <= KEPT_WRITER_MAX and not _kept:
        dst.truncate(0)
        _kept.append(dst)


def python_handles_signals() -> bool:
    """Whether Ctrl-C or SIGTERM would run a Python handler, which waits for compiled code to
    return (the default KeyboardInterrupt, the CLI's cleanup).  Workers ignore SIGINT and die of
    SIGTERM in the kernel: encoding them in pieces would buy nothing (and cost up to 2x on long
    texts that must be walked chunk by chunk, such as CJK without spaces)."""
    return callable(signal.getsignal(signal.SIGINT)) or callable(signal.getsignal(signal.SIGTERM))


def pack_pieces(enc: Encoder, data: bytes, start: int, end: int, pattern_id: int, dst: BytesWriter) -> None:
    """The packed ids of data[start:end], written to `dst` in pieces of about PIECE_BYTES.

    Between pieces Ctrl-C and SIGTERM take effect.  A piece is whole chunks of the whole text
    (encode_some_packed), so the ids are those of one call.  A single chunk longer than a piece
    (16 MB of spaces is one chunk) is one piece: the encoder is linear on any chunk
    (encode_chunk.encode_huge), so the wait stays about as long as a piece of any other text
    (docs/speed.md, "Worst case and memory")."""
    pos = start
    while pos < end:
        pos = encode_some_packed(enc, data, pos, end, pattern_id, PIECE_BYTES, dst)


def encode_documents(
    tok: Tokenizer, docs: Iterable[bytes], bos: int | None, eos: int | None
) -> npt.NDArray[np.unsignedinteger]:
    """Tokenizer.encode_documents: every document's ids between `bos` and `eos`, one array."""
    checked: dict[str, int] = {}
    for name, value in (("bos", bos), ("eos", eos)):
        if value is not None:
            checked[name] = check_int(name, value)
            if tok._raw(checked[name]) is None:
                raise ConfigError(f"{name}={value} is not an id of this tokenizer (n_vocab {tok.n_vocab})")
    if isinstance(docs, (str, bytes, bytearray, memoryview)) or not isinstance(docs, Iterable):
        raise type_error("docs", "an iterable of bytes documents", docs)
    public = tok._public
    internal_bos = -1 if bos is None else checked["bos"] if public is None else public.index(checked["bos"])
    internal_eos = -1 if eos is None else checked["eos"] if public is None else public.index(checked["eos"])
    doc_list = list(docs)
    try:
        if max(map(len, doc_list), default=0) <= PIECE_BYTES or not python_handles_signals():
            packed = encode_documents_packed(tok._encoder, doc_list, tok._pattern_id, internal_bos, internal_eos)
        else:  # a long document: in pieces, so that Ctrl-C is not kept waiting
            dst = BytesWriter()
            wide = tok._encoder.wide
            for doc in doc_list:
                if internal_bos >= 0:
                    emit(dst, internal_bos, wide)
                pack_pieces(tok._encoder, doc, 0, len(doc), tok._pattern_id, dst)
                if internal_eos >= 0:
                    emit(dst, internal_eos, wide)
            packed = dst.getvalue()
    except TypeError:
        # the compiled code takes bytes only; looking for the culprit costs nothing until then
        for i, doc in enumerate(doc_list):
            if not isinstance(doc, bytes):
                raise type_error(f"docs[{i}]", "bytes", doc) from None
        raise
    ids: npt.NDArray[np.unsignedinteger] = np.frombuffer(packed, dtype="<u4" if tok._encoder.wide else "<u2")
    if tok._public_array is not None:
        ids = tok._public_array.take(ids)
    return ids


def encode_to_numpy(
    tok: Tokenizer, text: str, allowed_special: AllOr, disallowed_special: AllOr
) -> npt.NDArray[np.uint32]:
    """Tokenizer.encode_to_numpy: the compiled encoder's packed ids become the array, uint32."""
    if not isinstance(text, str):
        raise text_type_error("text", text)
    data = text_bytes(text)
    if not (_none_special(allowed_special, disallowed_special) or tok._plain_default(allowed_special, disallowed_special, data)):
        allowed, disallowed = tok._resolve_specials(allowed_special, disallowed_special)
        if allowed and tok._find_special(allowed, data) is not None:  # special tokens' ids: the list path
            return np.array(tok._encode_data(data, allowed, disallowed), dtype=np.uint32)
        if disallowed and tok._find_special(disallowed, data) is not None:
            tok._encode_data(data, allowed, disallowed)  # raises SpecialTokenError, worded once
    if len(data) > PIECE_BYTES and python_handles_signals():
        # in pieces (Ctrl-C), packed all the same: a list made first and converted by np.array
        # cost 16 ms for a 1.16 MB document, a third of encoding 5 MB of English documents
        dst = take_writer()
        try:
            pack_pieces(tok._encoder, data, 0, len(data), tok._pattern_id, dst)
            return _uint32_ids(tok, dst)
        finally:
            give_writer(dst)
    dst = BytesWriter()
    encode_range_packed(tok._encoder, data, 0, len(data), tok._pattern_id, dst)
    return _uint32_ids(tok, dst)


_UINT32: Final = np.dtype(np.uint32)

#: The types of allowed_special / disallowed_special that _none_special takes as they are.
_SET_TYPES: Final = (frozenset, set, tuple, list)


def _none_special(allowed_special: AllOr, disallowed_special: AllOr) -> bool:
    """True when both arguments are empty collections (tiktoken's `disallowed_special=()`):
    nothing is special, the text is plain, and nothing need be resolved or searched (that cost
    ~1.6 us a call, 40 % of encode_to_numpy on a short text).  Anything else ("all", names, other
    types, which _resolve_specials checks): False."""
    return (
        allowed_special.__class__ in _SET_TYPES
        and not allowed_special
        and disallowed_special.__class__ in _SET_TYPES
        and not disallowed_special
    )


def _public_ids(tok: Tokenizer, dst: BytesWriter) -> npt.NDArray[np.unsignedinteger]:
    """The public ids of the packed ids in `dst`, a new writable array: uint32 without an id map,
    else of the map's type (kernels.id_array reads `dst` where it is and gathers in one pass)."""
    table = tok._public_array
    packed = dst if WRITER_IN_PLACE else dst.getvalue()
    # (dtypes passed by position: numpy's keyword parsing took 190 ns of 400 a call; the table
    # itself, a buffer of 'I' or 'H': its .data made a memoryview each call)
    if table is None:
        return np.frombuffer(id_array(packed, tok._encoder.wide, None), _UINT32)
    return np.frombuffer(id_array(packed, tok._encoder.wide, cast("Buffer", table)), table.dtype)


def _uint32_ids(tok: Tokenizer, dst: BytesWriter) -> npt.NDArray[np.uint32]:
    """_public_ids as uint32: tiktoken's type, whatever the vocabulary's size (code written
    for it relies on it)."""
    ids = _public_ids(tok, dst)
    # (the type as a string: cast() of `npt.NDArray[np.uint32]` built that alias on every call, 3 us)
    return cast("npt.NDArray[np.uint32]", ids if ids.dtype == _UINT32 else ids.astype(_UINT32))


def encode_flat(
    tok: Tokenizer, texts: Sequence[str], allowed: set[str], disallowed: set[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]:
    """(lengths, ids back to back) of the texts (see _encode_flat)."""
    spans = [(data, 0, len(data)) for data in map(text_bytes, texts)]
    return _encode_flat(tok, spans, allowed, disallowed, bool(allowed or disallowed))


def encode_flat_block(
    tok: Tokenizer, block: bytes, ends: Sequence[int], allowed: set[str], disallowed: set[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]:
    """(lengths, ids back to back) of the texts block[0:ends[0]], block[ends[0]:ends[1]], ...
    (UTF-8, as text_bytes gives it: encode_batch's workers get a block so).  The special tokens
    are looked for in the whole block first: a token in no text is in no match there (a match
    across two texts only sends each text to its own search)."""
    search = bool(allowed) and tok._find_special(allowed, block) is not None
    search = search or (bool(disallowed) and tok._find_special(disallowed, block) is not None)
    spans = [(block, start, end) for start, end in zip([0, *ends[:-1]], ends)]
    return _encode_flat(tok, spans, allowed, disallowed, search)


def _encode_flat(
    tok: Tokenizer, spans: list[tuple[bytes, int, int]], allowed: set[str], disallowed: set[str], search: bool
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]:
    """(lengths, ids back to back) of data[start:end] for each (data, start, end), each encoded
    on its own as `encode` would: the compiled encoder writes the packed ids of all of them into
    one buffer (no Python int per id), and the public ids of an imported vocabulary are gathered
    once at the end.  `search`: look for special tokens in each text (False when none can be
    there).  A text with an allowed special token goes through _encode_data; a disallowed one
    raises SpecialTokenError there.  Ids are uint16, or uint32 when the vocabulary needs it
    (cl100k, o200k)."""
    out_type = np.uint32 if tok.n_vocab > VOCAB16 else np.uint16
    enc, pattern = tok._encoder, tok._pattern_id
    raw_type, raw_width = ("<u4", 4) if enc.wide else ("<u2", 2)
    public = tok._public_array  # of out_type
    in_pieces = python_handles_signals()
    lengths: list[int] = []
    parts: list[npt.NDArray[np.unsignedinteger]] = []
    dst = BytesWriter()

    def flush() -> None:  # the raw ids so far, as public ids
        if len(dst):
            if public is not None:
                parts.append(_public_ids(tok, dst))
            else:
                parts.append(np.frombuffer(dst.getvalue(), dtype=raw_type).astype(out_type))
            dst.truncate(0)

    done = 0  # bytes in dst
    for data, start, end in spans:
        if search:
            text = data if start == 0 and end == len(data) else data[start:end]
            if allowed and tok._find_special(allowed, text) is not None:
                ids = tok._encode_data(text, allowed, disallowed)  # public ids already
                flush()
                done = 0
                parts.append(np.asarray(ids, dtype=out_type))
                lengths.append(len(ids))
                continue
            if disallowed and tok._find_special(disallowed, text) is not None:
                tok._encode_data(text, allowed, disallowed)  # raises SpecialTokenError, worded once
        if end - start > PIECE_BYTES and in_pieces:
            pack_pieces(enc, data, start, end, pattern, dst)
        else:
            encode_range_packed(enc, data, start, end, pattern, dst)
        now = len(dst)
        lengths.append((now - done) // raw_width)
        done = now
    flush()
    flat: npt.NDArray[np.unsignedinteger] = np.concatenate(parts) if parts else np.zeros(0, dtype=out_type)
    return np.array(lengths, dtype=np.int64), flat
