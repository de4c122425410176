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
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt
from librt.strings import BytesWriter

from mnemo.checks import check_int, text_type_error, type_error
from mnemo.encode_chunk import Encoder, emit
from mnemo.encode_text import encode_documents_packed, encode_some_packed
from mnemo.errors import ConfigError
from mnemo.constants import VOCAB16
from mnemo.streaming import text_bytes

if TYPE_CHECKING:
    from mnemo.tokenizer import AllOr, Tokenizer

#: Texts longer than this are encoded in pieces of about this size.  tokenizer.py reads it as
#: `packing.PIECE_BYTES`, so that a test that makes it small makes every path cut pieces.
PIECE_BYTES: Final = 1 << 20


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
        ids = tok._public_array[ids]
    return ids


def encode_to_numpy(
    tok: Tokenizer, text: str, allowed_special: AllOr, disallowed_special: AllOr
) -> npt.NDArray[np.uint32]:
    """Tokenizer.encode_to_numpy: the compiled encoder's packed ids become the array, uint32."""
    if not isinstance(text, str):
        raise text_type_error("text", text)
    data = text_bytes(text)
    dtype = np.uint32  # tiktoken's, whatever the vocabulary's size: code written for it relies on it
    if not (tok._plain_default(allowed_special, disallowed_special, data) and len(data) <= PIECE_BYTES):
        allowed, disallowed = tok._resolve_specials(allowed_special, disallowed_special)
        if (len(data) > PIECE_BYTES and python_handles_signals()) or (
            allowed and tok._find_special(allowed, data) is not None
        ):  # in pieces (Ctrl-C), or with special tokens' ids: the list path
            return np.array(tok._encode_data(data, allowed, disallowed), dtype=dtype)
        if disallowed and tok._find_special(disallowed, data) is not None:
            tok._encode_data(data, allowed, disallowed)  # raises SpecialTokenError, worded once
    packed = encode_documents_packed(tok._encoder, [data], tok._pattern_id, -1, -1)
    ids: npt.NDArray[np.unsignedinteger] = np.frombuffer(packed, dtype="<u4" if tok._encoder.wide else "<u2")
    if tok._public_array is not None:
        ids = tok._public_array[ids]
    return ids.astype(dtype, copy=False) if ids.flags.writeable else ids.astype(dtype)  # writable, as np.array gave


def encode_flat(
    tok: Tokenizer, texts: Sequence[str], allowed: set[str], disallowed: set[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.unsignedinteger]]:
    """(lengths, ids back to back) of the texts.  A text with no allowed special token in it
    and at most PIECE_BYTES long is encoded straight into packed ids by the compiled encoder
    (encode_documents_packed: no Python int per id; converting lists of ids cost more than the
    encoding of short documents); others go through _encode_data and are packed here.  Ids
    are uint16, or uint32 when the vocabulary needs it (cl100k, o200k: their texts went through
    lists of ints too until the fourth round)."""
    out_type = "<u4" if tok.n_vocab > VOCAB16 else "<u2"
    width = 4 if tok.n_vocab > VOCAB16 else 2
    raw_type = "<u4" if tok._encoder.wide else "<u2"  # mnemo's ids: their width may differ with a map
    packed: list[bytes] = []
    public = tok._public_array  # of out_type
    for t in texts:
        data = text_bytes(t)
        if len(data) > PIECE_BYTES or (allowed and tok._find_special(allowed, data) is not None):
            ids = tok._encode_data(data, allowed, disallowed)  # public ids already
            packed.append(np.asarray(ids, dtype=out_type).tobytes())
            continue
        if disallowed:
            m = tok._find_special(disallowed, data)
            if m is not None:
                tok._encode_data(data, allowed, disallowed)  # raises SpecialTokenError, worded once
        raw = encode_documents_packed(tok._encoder, [data], tok._pattern_id, -1, -1)
        if public is not None:
            raw = public[np.frombuffer(raw, dtype=raw_type)].tobytes()
        packed.append(raw)  # without a map mnemo's ids are the public ones, at the same width
    lengths = np.fromiter((len(p) // width for p in packed), dtype=np.int64, count=len(packed))
    flat: npt.NDArray[np.unsignedinteger] = np.frombuffer(b"".join(packed), dtype=out_type).astype(
        np.uint32 if width == 4 else np.uint16
    )
    return lengths, flat
