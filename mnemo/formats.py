"""mnemo's files: tokenizer.bin (a trained vocabulary) and .tok (a token stream).

Byte layouts are in docs/formats.md; every integer is little-endian.  Readers validate everything
and raise FormatError naming the file, the offset and what to do; no input makes them crash.
Writers go through `write_atomic` / `TokWriter`: a temporary name in the same folder, renamed at
the end, so an interrupted writer never leaves a partial file under the final name.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO, Final

import numpy as np
import numpy.typing as npt

from mnemo.errors import FingerprintError, FormatError, InputError

if TYPE_CHECKING:
    from mnemo.tokenizer import Tokenizer

# ---- tokenizer.bin ----

BIN_MAGIC: Final = b"MNEMOBPE"
BIN_VERSION: Final = 1
BIN_HEADER: Final = struct.Struct("<8sHHIHBBIII")  # 32 bytes
BIN_FLAG_COUNTS: Final = 1
BIN_FLAG_ID_MAP: Final = 2  # imported vocabularies: public id of each id (docs/interop.md)
PATTERNS: Final = ("mnemonic", "gpt4", "gpt2")  # index = pattern id (docs/formats.md, tokenizer.bin)
TIES: Final = ("id", "bytes")  # index = tie id
MAX_VOCAB: Final = 65536  # ids are stored as uint16
MAX_SPECIAL_BYTES: Final = 255  # a special token's name: one length byte, then its UTF-8
#: The largest valid tokenizer.bin: the header, then with m merges and s specials (256 + m + s
#: <= MAX_VOCAB) 4 bytes a merge, at most 1 + 255 bytes a special, 8 bytes a merge count and 2 bytes
#: an id of the id map.  A special costs more than a merge, so the most specials make the largest
#: file: 32 + 65,280 x 256 + 2 x 65,536 = 16,842,784 bytes.  Loaders read at most one byte more.
MAX_BIN_BYTES: Final = 32 + (MAX_VOCAB - 256) * max(4 + 8, 1 + MAX_SPECIAL_BYTES) + 2 * MAX_VOCAB


@dataclass(frozen=True)
class TokenizerFields:
    """What a tokenizer.bin holds, validated."""

    merges: list[tuple[int, int]]
    pattern: str
    special_tokens: list[str]
    tie: str
    merge_counts: list[int] | None
    id_map: list[int] | None = None


def encode_tokenizer_bin(
    merges: Sequence[tuple[int, int]],
    pattern: str,
    special_tokens: Sequence[str],
    tie: str,
    merge_counts: Sequence[int] | None,
    id_map: Sequence[int] | None = None,
) -> bytes:
    """Serialize without validating (Tokenizer validated; tests build bad files through this)."""
    flat = np.asarray(merges, dtype="<u2").reshape(-1)
    body = [flat.tobytes()]
    specials = b"".join(bytes([len(s.encode("utf-8"))]) + s.encode("utf-8") for s in special_tokens)
    body.append(specials)
    flags = 0
    if merge_counts is not None:
        flags |= BIN_FLAG_COUNTS
        body.append(np.asarray(merge_counts, dtype="<u8").tobytes())
    if id_map is not None:
        flags |= BIN_FLAG_ID_MAP
        body.append(np.asarray(id_map, dtype="<u2").tobytes())
    payload = b"".join(body)
    header = BIN_HEADER.pack(
        BIN_MAGIC,
        BIN_VERSION,
        flags,
        len(merges),
        len(special_tokens),
        PATTERNS.index(pattern),
        TIES.index(tie),
        len(specials),
        zlib.crc32(payload),
        0,
    )
    return header + payload


def parse_tokenizer_bin(data: bytes, source: str) -> TokenizerFields:
    """Validate a whole tokenizer.bin image and return its fields.  `source` names it in errors."""

    def fail(offset: int, what: str) -> FormatError:
        return FormatError(f"{source}: offset {offset}: {what}")

    size = len(data)
    if size < BIN_HEADER.size:
        raise fail(size, f"truncated: the file has {size} bytes, the header alone needs {BIN_HEADER.size}")
    magic, version, flags, n_merges, n_specials, pattern_id, tie_id, specials_size, crc, reserved = (
        BIN_HEADER.unpack_from(data, 0)
    )
    if magic != BIN_MAGIC:
        raise fail(0, f"bad magic {magic!r} (expected {BIN_MAGIC!r}): not a mnemo tokenizer.bin")
    if version != BIN_VERSION:
        raise fail(8, f"format version {version} is not supported (this mnemo reads version {BIN_VERSION})")
    if flags & ~(BIN_FLAG_COUNTS | BIN_FLAG_ID_MAP):
        raise fail(10, f"unknown flags 0x{flags:04x} (a newer mnemo wrote this file?)")
    if pattern_id >= len(PATTERNS):
        raise fail(18, f"unknown pattern id {pattern_id} (known: {', '.join(PATTERNS)})")
    if tie_id >= len(TIES):
        raise fail(19, f"unknown tie rule id {tie_id} (known: {', '.join(TIES)})")
    if reserved != 0:
        raise fail(28, f"reserved field is {reserved}, expected 0")
    n_vocab = 256 + n_merges + n_specials
    if n_vocab > MAX_VOCAB:
        raise fail(12, f"{n_merges} merges + {n_specials} specials give {n_vocab} ids, more than {MAX_VOCAB}")
    has_counts = bool(flags & BIN_FLAG_COUNTS)
    has_map = bool(flags & BIN_FLAG_ID_MAP)
    merges_at = BIN_HEADER.size
    specials_at = merges_at + 4 * n_merges
    counts_at = specials_at + specials_size
    map_at = counts_at + (8 * n_merges if has_counts else 0)
    expected = map_at + (2 * n_vocab if has_map else 0)
    if size < expected:
        raise fail(size, f"truncated: the header announces {expected} bytes, the file has {size}")
    if size > expected:
        raise fail(expected, f"{size - expected} trailing bytes after the end announced by the header")
    actual_crc = zlib.crc32(memoryview(data)[BIN_HEADER.size :])
    if actual_crc != crc:
        raise fail(24, f"checksum mismatch (stored 0x{crc:08x}, computed 0x{actual_crc:08x}): the file is damaged")

    pairs = np.frombuffer(data, dtype="<u2", count=2 * n_merges, offset=merges_at).reshape(-1, 2)
    merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in pairs.tolist()]
    seen: dict[tuple[int, int], int] = {}
    for k, pair in enumerate(merges):
        own = 256 + k
        for part in pair:
            if part >= own:
                raise fail(
                    merges_at + 4 * k,
                    f"merge {k} (id {own}) uses token {part}, which does not exist yet (parts must be < {own})",
                )
        first = seen.setdefault(pair, k)
        if first != k:
            raise fail(merges_at + 4 * k, f"merge {k} repeats the pair {pair} of merge {first}")

    specials: list[str] = []
    listed: dict[str, int] = {}  # name -> index: a list's `in` made 65,280 specials take 45 s
    pos = specials_at
    for j in range(n_specials):
        if pos >= counts_at:
            raise fail(pos, f"special token {j} of {n_specials} starts past the end of the specials section")
        length = data[pos]
        if length == 0:
            raise fail(pos, f"special token {j} has an empty name")
        if pos + 1 + length > counts_at:
            raise fail(pos, f"special token {j} ({length} bytes) runs past the end of the specials section")
        raw = data[pos + 1 : pos + 1 + length]
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise fail(pos + 1, f"special token {j} name {raw!r} is not valid UTF-8") from None
        first_j = listed.setdefault(name, j)
        if first_j != j:
            raise fail(pos, f"special token {j} {name!r} is listed twice (first as special token {first_j})")
        specials.append(name)
        pos += 1 + length
    if pos != counts_at:
        raise fail(pos, f"{counts_at - pos} unused bytes at the end of the specials section")

    counts: list[int] | None = None
    if has_counts:
        counts = [int(c) for c in np.frombuffer(data, dtype="<u8", count=n_merges, offset=counts_at).tolist()]
    id_map: list[int] | None = None
    if has_map:
        id_map = [int(i) for i in np.frombuffer(data, dtype="<u2", count=n_vocab, offset=map_at).tolist()]
        owner: dict[int, int] = {}
        for i, public in enumerate(id_map):
            if public >= n_vocab:
                raise fail(map_at + 2 * i, f"id map: id {i} is renumbered {public}, outside 0..{n_vocab - 1}")
            first = owner.setdefault(public, i)
            if first != i:
                raise fail(map_at + 2 * i, f"id map: ids {first} and {i} are both renumbered {public}")
    return TokenizerFields(merges, PATTERNS[pattern_id], specials, TIES[tie_id], counts, id_map)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` through a temporary name in the same folder and a rename."""
    final = Path(path)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_file(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """The whole file, which must be at most `limit` bytes: at most limit + 1 bytes are read, so
    /dev/zero, a FIFO or a huge file costs that much and no more.  A larger file is a
    FormatError naming the file and the bound."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read {os.fspath(path)}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise FormatError(
            f"{os.fspath(path)}: larger than {limit:,} bytes, the most mnemo reads as a {what}: "
            f"check that the path names one"
        )
    return data


# ---- .tok ----

TOK_MAGIC: Final = b"MNEMOTOK"
TOK_VERSION: Final = 1
TOK_HEADER: Final = struct.Struct("<8sHHIQQ16sI12s")  # 64 bytes
TOK_FLAG_CHAT: Final = 1
TOK_FLAG_MASKED: Final = 2
MASKBIT: Final = 0x8000
MASKBIT32: Final = 0x80000000


@dataclass(frozen=True)
class TokHeader:
    """The 64-byte header of a .tok file."""

    width: int  # bytes per token: 2 (uint16) or 4 (uint32)
    flags: int
    n_tokens: int
    n_docs: int
    fingerprint: str  # hex, as Tokenizer.fingerprint
    n_vocab: int

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
        return TOK_HEADER.pack(
            TOK_MAGIC,
            TOK_VERSION,
            self.width,
            self.flags,
            self.n_tokens,
            self.n_docs,
            bytes.fromhex(self.fingerprint),
            self.n_vocab,
            b"\0" * 12,
        )


def parse_tok_header(data: bytes, source: str, file_size: int) -> TokHeader:
    def fail(offset: int, what: str) -> FormatError:
        return FormatError(f"{source}: offset {offset}: {what}")

    if len(data) < TOK_HEADER.size:
        raise fail(len(data), f"truncated: the file has {len(data)} bytes, the header alone needs {TOK_HEADER.size}")
    magic, version, width, flags, n_tokens, n_docs, fp, n_vocab, reserved = TOK_HEADER.unpack_from(data, 0)
    if magic != TOK_MAGIC:
        raise fail(0, f"bad magic {magic!r} (expected {TOK_MAGIC!r}): not a mnemo .tok file")
    if version != TOK_VERSION:
        raise fail(8, f"format version {version} is not supported (this mnemo reads version {TOK_VERSION})")
    if width not in (2, 4):
        raise fail(10, f"token width {width} bytes is not 2 or 4")
    if flags & ~(TOK_FLAG_CHAT | TOK_FLAG_MASKED):
        raise fail(12, f"unknown flags 0x{flags:08x} (a newer mnemo wrote this file?)")
    if reserved != b"\0" * 12:
        raise fail(52, "reserved bytes are not zero")
    expected = TOK_HEADER.size + width * n_tokens
    if file_size != expected:
        raise fail(
            min(file_size, expected),
            f"the header announces {n_tokens} tokens of {width} bytes ({expected} bytes in all), "
            f"but the file has {file_size} bytes: it is truncated or was not finished",
        )
    return TokHeader(width, flags, n_tokens, n_docs, fp.hex(), n_vocab)


def tok_width(n_vocab: int, masked: bool) -> int:
    """uint16 when every id (with MASKBIT when masked) fits in 16 bits, else uint32."""
    limit = MASKBIT if masked else 1 << 16
    return 2 if n_vocab <= limit else 4


class TokWriter:
    """Writes a .tok file: `with TokWriter(path, tokenizer) as w: w.write_doc(ids) ...`.

    Tokens go to a temporary file in the same folder; the header is written and the file renamed
    to `path` only when the block ends without an exception.  Killed or failed, no `path` appears
    (the temporary `.NAME.tmp-PID` is removed on exceptions; a SIGKILL can leave it, never `path`).
    """

    def __init__(
        self, path: str | os.PathLike[str], tokenizer: Tokenizer, *, chat: bool = False, masked: bool | None = None
    ) -> None:
        self.path = Path(path)
        self.masked = chat if masked is None else masked
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
            if int(arr.min()) < 0 or int(arr.max()) >= limit:
                raise InputError(f"token id out of range for a {self.width}-byte .tok: {int(arr.max())}")
            self.file.write(arr.astype(self.dtype, copy=False).tobytes())
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
                header = TokHeader(self.width, self.flags, self.n_tokens, self.n_docs, self.fingerprint, self.n_vocab)
                f.seek(0)
                f.write(header.pack())
                f.flush()
                os.fsync(f.fileno())
            f.close()
            if exc_type is None:
                os.replace(self.tmp, self.path)
        finally:
            if exc_type is not None or self.tmp.exists():
                self.tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class TokFile:
    """An opened .tok file: its header and its tokens, memory-mapped (read-only)."""

    path: Path
    header: TokHeader
    tokens: npt.NDArray[np.unsignedinteger]

    def __len__(self) -> int:
        return self.header.n_tokens


def read_tok_header(path: str | os.PathLike[str]) -> TokHeader:
    """The validated header of a .tok file (its size checked), without a tokenizer."""
    source = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(TOK_HEADER.size)
            size = os.fstat(f.fileno()).st_size
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    return parse_tok_header(head, source, size)


def open_tok(path: str | os.PathLike[str], tokenizer: Tokenizer) -> TokFile:
    """Memory-map a .tok file made by `tokenizer`; FingerprintError when another tokenizer made it."""
    header = read_tok_header(path)
    if header.fingerprint != tokenizer.fingerprint:
        raise FingerprintError(
            f"{os.fspath(path)} was made by the tokenizer with fingerprint {header.fingerprint}, "
            f"not by this one ({tokenizer.fingerprint}): open it with the tokenizer.bin that wrote it"
        )
    dtype = np.dtype("<u2" if header.width == 2 else "<u4")
    if header.n_tokens == 0:
        tokens: npt.NDArray[np.unsignedinteger] = np.zeros(0, dtype=dtype)
    else:
        tokens = np.memmap(path, dtype=dtype, mode="r", offset=TOK_HEADER.size, shape=(header.n_tokens,))
    return TokFile(Path(path), header, tokens)


assert BIN_HEADER.size == 32 and TOK_HEADER.size == 64, "header layouts changed"
