""".tok: a token stream as one file (layout in docs/formats.md, little-endian).

The reader validates the header (its CRC-32, every field, and the fields against each other) and the
size, and raises FormatError naming the file, the offset and what to do.  The header also holds the
CRC-32 of the tokens: `verify_tok` reads the whole file to check it (a resumed run does, for each
shard it keeps); opening a file does not, since it maps the tokens without reading them.  `TokWriter` writes through a temporary name in the same folder, renamed at the end, so an
interrupted writer never leaves a partial file under the final name.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO, Final, Protocol

import numpy as np
import numpy.typing as npt

from mnemo.constants import MASKBIT, MASKBIT32, VOCAB16
from mnemo.errors import ConfigError, FingerprintError, FormatError
from mnemo.location import Location, PathArg, location


class Stamp(Protocol):
    """What a .tok file records of the tokenizer that made it (a `Tokenizer` is one): its
    fingerprint and vocabulary size.  A protocol, so that files sit below the Tokenizer."""

    @property
    def fingerprint(self) -> str: ...

    @property
    def n_vocab(self) -> int: ...


TOK_MAGIC: Final = b"MNEMOTOK"
#: Version 2 puts the header's and the tokens' CRC-32 (and a shard's origin) in what version 1
#: left reserved: a flipped bit in n_docs or n_vocab read silently (issue 28, item 3).  Version
#: 1 files are still read, with no checksum to check.
TOK_VERSION: Final = 2
TOK_VERSIONS: Final = (1, 2)
TOK_HEADER: Final = struct.Struct("<8sHHIQQ16sI12s")  # 64 bytes; the last 12: see TOK_TAIL
TOK_TAIL: Final = struct.Struct("<III")  # version 2: tokens' CRC-32, origin, header's CRC-32
#: The header's own CRC-32 covers its bytes before it.
TOK_HEADER_CRC_AT: Final = 60
TOK_FLAG_CHAT: Final = 1
TOK_FLAG_MASKED: Final = 2


@dataclass(frozen=True)
class TokHeader:
    """The 64-byte header of a .tok file."""

    width: int  # bytes per token: 2 (uint16) or 4 (uint32)
    flags: int
    n_tokens: int
    n_docs: int
    fingerprint: str  # hex, as Tokenizer.fingerprint
    n_vocab: int
    data_crc: int = 0  # CRC-32 of the token bytes (version 2; 0 in a version 1 file)
    origin: int = 0  # a shard's origin (shards.shard_origin); 0 in any other file
    version: int = TOK_VERSION

    @property
    def chat(self) -> bool:
        return bool(self.flags & TOK_FLAG_CHAT)

    @property
    def masked(self) -> bool:
        return bool(self.flags & TOK_FLAG_MASKED)

    @property
    def maskbit(self) -> int:
        """The bit marking trained-on tokens in a masked file (0 when not masked)."""
        if not self.masked:
            return 0
        return MASKBIT if self.width == 2 else MASKBIT32

    def pack(self) -> bytes:
        """The version 2 header (a writer writes no other), its CRC-32 last."""
        tail = TOK_TAIL.pack(self.data_crc, self.origin, 0)
        head = TOK_HEADER.pack(
            TOK_MAGIC, 2, self.width, self.flags, self.n_tokens, self.n_docs, bytes.fromhex(self.fingerprint), self.n_vocab, tail
        )[:TOK_HEADER_CRC_AT]
        return head + zlib.crc32(head).to_bytes(4, "little")


def parse_tok_header(data: bytes, source: str, file_size: int) -> TokHeader:
    def fail(offset: int, what: str) -> FormatError:
        return FormatError(f"{source}: offset {offset}: {what}")

    if len(data) < TOK_HEADER.size:
        raise fail(len(data), f"truncated: the file has {len(data)} bytes, the header alone needs {TOK_HEADER.size}")
    magic, version, width, flags, n_tokens, n_docs, fp, n_vocab, tail = TOK_HEADER.unpack_from(data, 0)
    if magic != TOK_MAGIC:
        raise fail(0, f"bad magic {magic!r} (expected {TOK_MAGIC!r}): not a mnemo .tok file")
    if version not in TOK_VERSIONS:
        raise fail(8, f"format version {version} is not supported (this mnemo reads versions 1 and {TOK_VERSION})")
    data_crc = origin = 0
    if version == 1:
        if tail != b"\0" * 12:
            raise fail(52, "reserved bytes are not zero")
    else:
        data_crc, origin, crc = TOK_TAIL.unpack(tail)
        if crc != zlib.crc32(data[:TOK_HEADER_CRC_AT]):
            raise fail(
                TOK_HEADER_CRC_AT,
                f"header CRC-32 0x{crc:08x} does not match its bytes 0-{TOK_HEADER_CRC_AT - 1} "
                f"(0x{zlib.crc32(data[:TOK_HEADER_CRC_AT]):08x}): the header is damaged; write the file again",
            )
    if width not in (2, 4):
        raise fail(10, f"token width {width} bytes is not 2 or 4")
    if flags & ~(TOK_FLAG_CHAT | TOK_FLAG_MASKED):
        raise fail(12, f"unknown flags 0x{flags:08x} (a newer mnemo wrote this file?)")
    if flags & TOK_FLAG_MASKED and not flags & TOK_FLAG_CHAT:
        # only a chat file has a loss mask: read as masked, a documents file's ids lose their
        # top bit and every target reads as not trained on
        raise fail(12, f"flags 0x{flags:08x}: masked (bit 1) without chat (bit 0); only chat files are masked")
    # the width follows from n_vocab (TokWriter: tok_width), so each checks the other
    if not 256 <= n_vocab <= MASKBIT32:
        raise fail(48, f"n_vocab {n_vocab} is not a vocabulary size (256 to {MASKBIT32})")
    if width != tok_width(n_vocab, bool(flags & TOK_FLAG_MASKED)):
        raise fail(
            48,
            f"n_vocab {n_vocab} does not go with {width}-byte tokens ({'masked' if flags & TOK_FLAG_MASKED else 'unmasked'} "
            f"files of {n_vocab} ids have {tok_width(n_vocab, bool(flags & TOK_FLAG_MASKED))}-byte tokens): the header is damaged",
        )
    expected = TOK_HEADER.size + width * n_tokens
    if file_size != expected:
        raise fail(
            min(file_size, expected),
            f"the header announces {n_tokens} tokens of {width} bytes ({expected} bytes in all), "
            f"but the file has {file_size} bytes: it is truncated or was not finished",
        )
    return TokHeader(width, flags, n_tokens, n_docs, fp.hex(), n_vocab, data_crc, origin, version)


def tok_width(n_vocab: int, masked: bool) -> int:
    """uint16 when every id (with MASKBIT when masked) fits in 16 bits, else uint32."""
    limit = MASKBIT if masked else VOCAB16
    return 2 if n_vocab <= limit else 4


class TokWriter:
    """Writes a .tok file: `with TokWriter(path, tokenizer) as w: w.write_doc(ids) ...`.

    Tokens go to a temporary file in the same folder; the header is written and the file renamed
    to `path` only when the block ends without an exception.  Killed or failed, no `path` appears
    (the temporary `.NAME.tmp-PID` is removed on exceptions; a SIGKILL can leave it, never `path`).
    A URL `path` is built in a local staging folder and uploaded at the end (Location.staging):
    the object appears complete or not at all.
    """

    def __init__(
        self, path: PathArg, tokenizer: Stamp, *, chat: bool = False, masked: bool | None = None, origin: int = 0
    ) -> None:
        self.staged = location(path).staging()
        self.path = self.staged.local
        self.masked = chat if masked is None else masked
        if self.masked and not chat:
            raise ConfigError("a masked .tok is a chat file: pass chat=True (documents have no loss mask)")
        self.origin = origin
        self.data_crc = 0
        self.flags = (TOK_FLAG_CHAT if chat else 0) | (TOK_FLAG_MASKED if self.masked else 0)
        self.fingerprint = tokenizer.fingerprint
        self.n_vocab = tokenizer.n_vocab
        self.width = tok_width(self.n_vocab, self.masked)
        self.dtype = np.dtype("<u2" if self.width == 2 else "<u4")
        self.n_tokens = 0
        self.n_docs = 0
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        self.file: BinaryIO | None = None

    def __enter__(self) -> TokWriter:
        self.file = open(self.tmp, "wb")
        self.file.write(b"\0" * TOK_HEADER.size)
        return self

    def write(self, ids: Sequence[int] | npt.NDArray[np.integer], n_docs: int = 0) -> None:
        """Append tokens (already with MASKBIT where wanted) holding `n_docs` documents."""
        assert self.file is not None, "use TokWriter in a with block"
        arr = np.asarray(ids)
        if arr.size:
            limit = 1 << (8 * self.width)
            low, high = int(arr.min()), int(arr.max())
            if low < 0 or high >= limit:
                # the caller's values, not the input text's: a ConfigError naming the bad id
                bad = low if low < 0 else high
                raise ConfigError(
                    f"{self.path}: token id {bad} does not fit a {self.width}-byte .tok (ids 0..{limit - 1}); "
                    f"pass the ids the tokenizer gave (with MASKBIT only in a masked file)"
                )
            data = arr.astype(self.dtype, copy=False).tobytes()
            self.data_crc = zlib.crc32(data, self.data_crc)
            self.file.write(data)
        self.n_tokens += int(arr.size)
        self.n_docs += n_docs

    def write_doc(self, ids: Sequence[int] | npt.NDArray[np.integer]) -> None:
        self.write(ids, 1)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        f = self.file
        self.file = None
        if f is None:
            return
        try:
            if exc_type is None:
                header = TokHeader(
                    self.width, self.flags, self.n_tokens, self.n_docs, self.fingerprint, self.n_vocab, self.data_crc, self.origin
                )
                f.seek(0)
                f.write(header.pack())
                f.flush()
                os.fsync(f.fileno())
            f.close()
            if exc_type is None:
                os.replace(self.tmp, self.path)
                self.staged.publish([self.path])
        finally:
            if exc_type is not None or self.tmp.exists():
                self.tmp.unlink(missing_ok=True)
            self.staged.discard()


@dataclass(frozen=True)
class TokFile:
    """An opened .tok file: its header and its tokens, memory-mapped (read-only).

    A shard directory (`mnemo tokenize --ray`, mnemo/shards.py) opens as one TokFile: `header`
    describes the whole dataset, `parts` holds each shard's memory-mapped tokens in input order,
    and `tokens` is their concatenation (read into memory when there is more than one shard;
    TokenStream reads `parts` and maps them instead)."""

    path: Location  # as given (a URL's tokens are mapped from a local copy)
    header: TokHeader
    tokens: npt.NDArray[np.unsignedinteger]
    parts: tuple[npt.NDArray[np.unsignedinteger], ...] = ()

    def __len__(self) -> int:
        return self.header.n_tokens


def read_tok_header(path: PathArg) -> TokHeader:
    """The validated header of a .tok file (its size checked), without a tokenizer.  A URL's
    header is one ranged read of 64 bytes: no copy is made for a header."""
    where = location(path)
    with where.open(exact=True) as f:
        try:
            head = f.read(TOK_HEADER.size)
        except Exception as exc:  # OSError, and a store's own errors
            raise where.read_error(exc) from None
    info = where.info()
    if info.type == "directory":
        raise where.read_error(IsADirectoryError())
    return parse_tok_header(head, str(where), info.size)


def map_tok_file(path: PathArg, tokenizer: Stamp) -> TokFile:
    """Memory-map a .tok file made by `tokenizer`; FingerprintError when another tokenizer made
    it.  (`mnemo.open_tok`, shards.open_tok, opens a .tok file through this, and a shard
    directory as one file.)"""
    where = location(path)
    header = read_tok_header(where)
    if header.fingerprint != tokenizer.fingerprint:
        raise FingerprintError(
            f"{where} was made by the tokenizer with fingerprint {header.fingerprint}, "
            f"not by this one ({tokenizer.fingerprint}): open it with the tokenizer.bin that wrote it"
        )
    if header.n_vocab != tokenizer.n_vocab:
        raise FormatError(
            f"{where}: offset 48: n_vocab {header.n_vocab}, but the tokenizer with its fingerprint has "
            f"{tokenizer.n_vocab} ids: the header is damaged; write the file again"
        )
    dtype = np.dtype("<u2" if header.width == 2 else "<u4")
    if header.n_tokens == 0:
        tokens: npt.NDArray[np.unsignedinteger] = np.zeros(0, dtype=dtype)
    else:
        # a URL: memory-mapped from this process's local copy, made once the header (one
        # ranged read) has shown the file is this tokenizer's
        local = where.local_path(".tok file")
        if os.path.getsize(local) != TOK_HEADER.size + header.n_tokens * header.width:
            raise FormatError(f"{where}: changed while it was read (its size no longer matches its header); read it again")
        tokens = np.memmap(local, dtype=dtype, mode="r", offset=TOK_HEADER.size, shape=(header.n_tokens,))
    return TokFile(where, header, tokens, (tokens,))


#: Bytes read at a time when a whole file is checked (verify_tok).
VERIFY_BLOCK: Final = 8 << 20


def verify_tok(path: PathArg) -> TokHeader:
    """The header of the .tok file `path` once every byte is checked: the header as
    read_tok_header does, then the CRC-32 of the tokens against the header's (a version 1
    file has none: FormatError saying so, as its tokens cannot be checked)."""
    where = location(path)
    header = read_tok_header(where)
    if header.version < 2:
        raise FormatError(f"{where}: a version 1 .tok has no checksum of its tokens to verify; write it again")
    crc = 0
    with where.open(exact=True) as f:
        try:
            f.seek(TOK_HEADER.size)
            while block := f.read(VERIFY_BLOCK):
                crc = zlib.crc32(block, crc)
        except Exception as exc:  # OSError, and a store's own errors
            raise where.read_error(exc) from None
    if crc != header.data_crc:
        raise FormatError(
            f"{where}: offset 52: the tokens' CRC-32 is 0x{crc:08x}, the header says 0x{header.data_crc:08x}: "
            f"the tokens are damaged; write the file again"
        )
    return header


assert TOK_HEADER.size == 64 and TOK_TAIL.size == 12, "header layout changed"
