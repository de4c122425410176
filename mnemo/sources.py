"""Reading training and encoding inputs: text files, JSON Lines, Parquet, compressed or not.

Formats, chosen by the file name once a compression suffix is removed:

* ``.jsonl`` / ``.ndjson`` / ``.json``: one JSON object per line; the document is the field
  ``text_field`` (default ``"text"``).  Blank lines are skipped.  A line that is an object of
  string members only is read by the compiled `mnemo.jsonfield.string_field` (the hot part of
  reading: json.loads plus encoding the text back to UTF-8 cost a worker about a quarter of its
  time); any other line, and every error, goes through `json.loads`, which gives the same
  document.
* ``.parquet``: the column ``text_field`` of every row group (through pyarrow).
* anything else: UTF-8 text.  ``<|endoftext|>`` (the usual separator of text corpora) and the
  special tokens' strings separate documents and are never part of one; empty documents (two
  separators in a row, or one at the start or end of a file) are skipped.

Compression is recognised by its magic bytes, whatever the suffix: xz, gzip and zstd (zstd
needs the ``zstandard`` package).

Work is planned as *tasks* so that worker processes read their own share of the input and the
parent never holds a corpus in memory: an uncompressed text or JSONL file larger than
``min_task_bytes`` is cut into byte ranges at document boundaries (a JSONL line end; in text, the
start of a special token, or failing that a space between two ASCII letters, where every
split pattern ends a chunk); a Parquet file is cut at row groups; a compressed file is one task.
"""

from __future__ import annotations

import gzip
import importlib
import io
import json
import lzma
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from mnemo.errors import ConfigError, InputError
from mnemo.jsonfield import string_field

XZ_MAGIC: Final = b"\xfd7zXZ\x00"
GZIP_MAGIC: Final = b"\x1f\x8b"
ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
COMPRESSION_SUFFIXES: Final = (".xz", ".gz", ".gzip", ".zst", ".zstd")
JSONL_SUFFIXES: Final = (".jsonl", ".ndjson", ".json")
#: Always a document separator in text files, whatever the special tokens.
TEXT_DOCUMENT_SEPARATOR: Final = "<|endoftext|>"

#: How far past a planned cut to look for a document boundary before giving up on that cut.
CUT_SEARCH_BYTES: Final = 1 << 20


@dataclass(frozen=True)
class Task:
    """One worker's share of one input: bytes [start, end) of a plain file, one Parquet row
    group, or a whole compressed file (start = 0, end = -1)."""

    path: str
    kind: str  # "text" | "jsonl" | "parquet"
    start: int = 0
    end: int = -1  # -1: to the end of the (decompressed) stream
    row_group: int = -1  # -1: every row group


def compression_of(path: Path) -> str:
    """"xz", "gzip", "zstd" or "" -- from the file's first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory; pass the files inside it") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror}); check its permissions") from None
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return ""


def kind_of(path: Path) -> str:
    """"jsonl", "parquet" or "text", from the name with any compression suffix removed."""
    name = path.name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    return "text"


def open_binary(path: Path) -> io.BufferedIOBase:
    """The file's decompressed bytes as a stream."""
    comp = compression_of(path)
    if comp == "xz":
        return lzma.LZMAFile(path, "rb")
    if comp == "gzip":
        return gzip.GzipFile(path, "rb")
    if comp == "zstd":
        try:
            zstandard = _zstandard()
        except ImportError:
            raise InputError(f"{path}: is zstd-compressed; install the 'zstandard' package to read it") from None
        return io.BufferedReader(_ZstdReader(open(path, "rb"), zstandard.ZstdDecompressor()), 1 << 20)
    return open(path, "rb")


def _zstandard() -> ModuleType:
    """The optional `zstandard` package, imported by name: it has no type stubs, and the build
    type-checks this module without it installed."""
    return importlib.import_module("zstandard")


class _ZstdReader(io.RawIOBase):
    """zstd frames, one after another, as a raw stream -- raising EOFError when the input ends
    inside a frame.  (zstandard's own stream_reader returns a truncated stream's bytes and then a
    quiet end of file: a cut-off file would be read as a shorter one.)"""

    def __init__(self, raw: io.BufferedReader, dctx: Any) -> None:
        super().__init__()
        self.raw = raw
        self.dctx = dctx
        self.dobj: Any = None
        self.out = b""
        self.pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self.pos >= len(self.out):
            chunk = self.raw.read(1 << 20)
            if not chunk:
                if self.dobj is not None:
                    raise EOFError("the zstd stream ends inside a frame")
                return 0
            produced: list[bytes] = []
            while chunk:
                if self.dobj is None:
                    self.dobj = self.dctx.decompressobj()
                produced.append(self.dobj.decompress(chunk))
                if self.dobj.eof:
                    chunk = self.dobj.unused_data
                    self.dobj = None
                else:
                    chunk = b""
            self.out, self.pos = b"".join(produced), 0
        n = min(len(buffer), len(self.out) - self.pos)
        buffer[:n] = self.out[self.pos : self.pos + n]
        self.pos += n
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def check_inputs(inputs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The inputs as paths, each checked to be a readable file (else InputError)."""
    if not inputs:
        raise InputError("no input files given; pass at least one .txt, .jsonl or .parquet file")
    paths = [Path(p) for p in inputs]
    for p in paths:
        compression_of(p)  # raises InputError for missing, unreadable or directory
        _refuse_binary(p)
    return paths


#: Bytes (after decompression) looked at for a NUL: git's rule for telling binary from text.
SNIFF_BYTES: Final = 8000


def _refuse_binary(path: Path) -> None:
    """InputError for a text or JSONL input that is one of mnemo's own files (tokenizer.bin,
    .tok) or binary (a NUL byte in its first SNIFF_BYTES, after decompression): training on
    a .tok file as if it were text ran for 38 s and gave a vocabulary of noise.  Only regular
    files are looked at: a read from a pipe would take bytes that the real read then misses."""
    if kind_of(path) == "parquet" or not path.is_file():
        return
    from mnemo.formats import BIN_MAGIC, TOK_MAGIC

    try:
        with open_binary(path) as f:
            head = f.read(SNIFF_BYTES)
    except read_errors():
        return  # a damaged compressed file: the real read reports it, with its offset
    nul = head.find(b"\0")
    if head.startswith(BIN_MAGIC):
        what = "a mnemo tokenizer.bin"
    elif head.startswith(TOK_MAGIC):
        what = "a mnemo .tok token file"
    elif nul >= 0:
        what = f"binary (a NUL byte at offset {nul}{' of its decompressed text' if compression_of(path) else ''})"
    else:
        return
    raise InputError(
        f"{path}: is {what}, not text; inputs are UTF-8 text (.txt), JSON Lines (.jsonl) or "
        f"Parquet files, optionally compressed"
    )


# ---- planning ---------------------------------------------------------------------------------


TASKS_PER_WORKER: Final = 16


def plan_tasks(
    paths: Sequence[Path],
    *,
    n_workers: int,
    specials: Sequence[str] = (),
    min_task_bytes: int = 16 << 20,
    max_task_bytes: int | None = None,
    whole_documents: bool = False,
) -> list[Task]:
    """Cut the inputs into tasks of roughly equal size, in input order: about a sixteenth of
    each worker's share, within [min_task_bytes, max_task_bytes].  Small tasks balance the
    workers: they all finish within about one task's time of each other (with a quarter of a
    share per task, the second of two workers counting 879 MB finished 2 s after the first).

    With `whole_documents` (encoding: every document gets its own <|bos|>), a text file is cut
    only at special tokens; otherwise (counting) also at a space between two ASCII letters."""
    tasks: list[Task] = []
    total = sum(p.stat().st_size for p in paths)
    target = max(min_task_bytes, total // max(1, TASKS_PER_WORKER * n_workers))
    if max_task_bytes is not None:
        target = min(target, max_task_bytes)
    for p in paths:
        kind = kind_of(p)
        if kind == "parquet":
            tasks += [Task(str(p), kind, row_group=g) for g in range(_parquet_row_groups(p))]
        elif compression_of(p) or p.stat().st_size <= target:
            tasks.append(Task(str(p), kind))
        else:
            tasks += [Task(str(p), kind, s, e) for s, e in _cut_points(p, kind, target, specials, whole_documents)]
    return tasks


def _cut_points(
    path: Path, kind: str, target: int, specials: Sequence[str], whole_documents: bool
) -> list[tuple[int, int]]:
    """Byte ranges of about `target` bytes, each starting at a document boundary."""
    size = path.stat().st_size
    cuts = [0]
    with open(path, "rb") as f:
        pos = target
        while pos < size:
            f.seek(pos)
            window = f.read(CUT_SEARCH_BYTES)
            at = _boundary_in(window, kind, specials, whole_documents)
            if at < 0:  # no boundary in this window: look in the next one
                pos += len(window)
                continue
            if pos + at >= size:  # the only boundary left is the end of the file
                break
            cuts.append(pos + at)  # > cuts[-1]: pos is past it by `target`
            pos = cuts[-1] + target
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _boundary_in(window: bytes, kind: str, specials: Sequence[str], whole_documents: bool = False) -> int:
    """Offset in `window` where a new document (or a certain chunk boundary) starts, or -1."""
    if kind == "jsonl":
        i = window.find(b"\n")
        return -1 if i < 0 else i + 1
    best = -1
    for s in [*specials, TEXT_DOCUMENT_SEPARATOR]:
        i = window.find(s.encode("utf-8"))
        if i >= 0 and (best < 0 or i < best):
            best = i
    if best >= 0 or whole_documents:
        return best
    # A space between two ASCII letters: the letters before it end a chunk in every pattern
    # (letters run maximally), and the space starts the next one (" word").
    for i in range(1, len(window) - 1):
        if window[i] == 0x20 and _is_ascii_letter(window[i - 1]) and _is_ascii_letter(window[i + 1]):
            return i
    return -1


def _is_ascii_letter(c: int) -> bool:
    return 0x61 <= (c | 0x20) <= 0x7A


def _parquet_row_groups(path: Path) -> int:
    pq = _pyarrow_parquet(path)
    try:
        return int(pq.ParquetFile(path).num_row_groups)
    except Exception as exc:  # pyarrow raises its own error types
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def _pyarrow_parquet(path: Path) -> ModuleType:
    try:
        return importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs the 'pyarrow' package (pip install pyarrow)") from None


# ---- reading ---------------------------------------------------------------------------------


def iter_task_documents(
    task: Task, *, text_field: str = "text", specials: Sequence[str] = (), whole_documents: bool = False
) -> Iterator[bytes]:
    """The documents of one task as UTF-8 bytes (text files: split at the special tokens).

    For counting, a text document longer than 32 MB is handed on in pieces (see
    _text_documents); `whole_documents` (encoding: one <|bos|> per document) keeps it whole.

    A file that cannot be read to its end (a truncated or corrupt compressed stream, an I/O
    error) is an InputError naming it."""
    try:
        yield from _task_documents(task, text_field, specials, whole_documents)
    except read_errors() as exc:
        raise InputError(
            f"{task.path}: cannot be read to the end ({type(exc).__name__}: {exc}); "
            f"the file may be truncated or corrupt"
        ) from None


def read_errors() -> tuple[type[BaseException], ...]:
    """What reading a (compressed) file raises when it is truncated, corrupt or unreadable."""
    errors: list[type[BaseException]] = [EOFError, OSError, lzma.LZMAError, zlib.error]
    try:
        errors.append(_zstandard().ZstdError)
    except ImportError:
        pass
    return tuple(errors)


def _task_documents(task: Task, text_field: str, specials: Sequence[str], whole_documents: bool) -> Iterator[bytes]:
    path = Path(task.path)
    if task.kind == "parquet":
        yield from _parquet_documents(path, task.row_group, text_field)
        return
    stream = open_binary(path)
    with stream:
        if task.end >= 0:
            stream.seek(task.start)
            raw: Iterable[bytes] = _limited(stream, task.end - task.start)
        else:
            raw = _blocks(stream)
        if task.kind == "jsonl":
            yield from _jsonl_documents(raw, path, task.start, text_field)
        else:
            yield from _text_documents(raw, specials, whole_documents)


def iter_documents(
    inputs: Sequence[str | os.PathLike[str]], *, text_field: str = "text", specials: Sequence[str] = ()
) -> Iterator[bytes]:
    """Every document of every input, in order (a single process; see plan_tasks for workers)."""
    for p in check_inputs(inputs):
        yield from iter_task_documents(Task(str(p), kind_of(p)), text_field=text_field, specials=specials)


BLOCK: Final = 8 << 20


def _blocks(stream: io.BufferedIOBase) -> Iterator[bytes]:
    while block := stream.read(BLOCK):
        yield block


def _limited(stream: io.BufferedIOBase, n: int) -> Iterator[bytes]:
    while n > 0:
        block = stream.read(min(BLOCK, n))
        if not block:
            return
        n -= len(block)
        yield block


def _jsonl_documents(raw: Iterable[bytes], path: Path, start: int, field: str) -> Iterator[bytes]:
    key = field.encode("utf-8", "surrogatepass")
    offset = start
    rest = b""
    for block in raw:
        data = rest + block
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield from _jsonl_line(line, path, offset, field, key)
            offset += len(line) + 1
    if rest:
        yield from _jsonl_line(rest, path, offset, field, key)


def _jsonl_line(line: bytes, path: Path, offset: int, field: str, key: bytes) -> Iterator[bytes]:
    """The document of one line; `key` is `field` as UTF-8 ("surrogatepass")."""
    if not line.strip():
        return
    text_bytes = string_field(line, key)  # the compiled fast path: None when it is not sure
    if text_bytes is not None:
        yield text_bytes
        return
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{path}:{_line_number(path, offset)}: not valid JSON ({exc}); each line of a .jsonl file "
            f"must be one JSON object"
        ) from None
    text = record.get(field) if isinstance(record, dict) else None
    if not isinstance(text, str):
        got = "no such field" if not isinstance(record, dict) or field not in record else type(text).__name__
        raise InputError(
            f"{path}:{_line_number(path, offset)}: field {field!r} must be a string ({got}); "
            f"choose the text field with text_field= / --text-field"
        )
    yield text.encode("utf-8", "surrogatepass")


def _line_number(path: Path, offset: int) -> int:
    """1-based line number of the byte at `offset` (counted only when reporting an error)."""
    count = 1
    with open_binary(path) as f:
        remaining = offset
        while remaining > 0:
            block = f.read(min(BLOCK, remaining))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count


def _text_documents(raw: Iterable[bytes], specials: Sequence[str], whole_documents: bool = False) -> Iterator[bytes]:
    """Documents separated by <|endoftext|> and the special tokens' strings.  Unless
    `whole_documents`, a document longer than 32 MB is handed on in pieces cut at a space between
    two ASCII letters (where every split pattern ends a chunk, so counting the pieces counts the
    document), to keep memory bounded."""
    seps = sorted({s.encode("utf-8") for s in [*specials, TEXT_DOCUMENT_SEPARATOR] if s}, key=len, reverse=True)
    longest = max((len(s) for s in seps), default=0)
    pending = b""
    for block in raw:
        pending += block
        while True:
            at, sep = _find_first(pending, seps)
            if at < 0:
                break
            if at:
                yield pending[:at]
            pending = pending[at + len(sep) :]
        if not whole_documents and len(pending) > 4 * BLOCK:
            # search before the last `longest` bytes: they may hold the start of a separator
            tail = pending[len(pending) - BLOCK : len(pending) - longest]
            cut = _boundary_in(tail, "text", ())
            if cut > 0:
                cut += len(pending) - BLOCK
                yield pending[:cut]
                pending = pending[cut:]
    if pending:
        yield pending


def _find_first(data: bytes, seps: Sequence[bytes]) -> tuple[int, bytes]:
    best, which = -1, b""
    for s in seps:  # longest first, so that at equal positions the longest special wins
        i = data.find(s)
        if i >= 0 and (best < 0 or i < best):
            best, which = i, s
    return best, which


def _parquet_documents(path: Path, row_group: int, field: str) -> Iterator[bytes]:
    pq = _pyarrow_parquet(path)
    try:
        pf = pq.ParquetFile(path)
        if field not in pf.schema_arrow.names:
            raise InputError(
                f"{path}: no column {field!r} (columns: {', '.join(pf.schema_arrow.names)}); "
                f"choose one with text_field= / --text-field"
            )
        groups = range(pf.num_row_groups) if row_group < 0 else [row_group]
        for g in groups:
            column = pf.read_row_group(g, columns=[field]).column(0)
            for value in column.to_pylist():
                if value is None:
                    continue
                if not isinstance(value, str):
                    raise InputError(f"{path}: column {field!r} holds {type(value).__name__}, not text")
                yield value.encode("utf-8", "surrogatepass")
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises its own error types
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def documents_from_iterable(docs: Iterable[str | bytes], specials: Sequence[str] = ()) -> Iterator[bytes]:
    """In-memory documents as bytes, split at special tokens like text files."""
    seps = sorted({s.encode("utf-8") for s in specials if s}, key=len, reverse=True)
    for i, doc in enumerate(docs):
        if isinstance(doc, str):
            data = doc.encode("utf-8", "surrogatepass")
        elif isinstance(doc, (bytes, bytearray, memoryview)):
            data = bytes(doc)
        else:
            raise ConfigError(f"document {i} is a {type(doc).__name__}; documents must be str or bytes")
        if not seps:
            yield data
            continue
        while True:
            at, sep = _find_first(data, seps)
            if at < 0:
                break
            yield data[:at]
            data = data[at + len(sep) :]
        yield data
