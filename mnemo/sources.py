"""Reading training and encoding inputs: text files, JSON Lines, Parquet, compressed or not.

Formats, chosen by the file name once a compression suffix is removed:

* ``.jsonl`` / ``.ndjson`` / ``.json``: one JSON object per line; the document is the field
  ``text_field`` (default ``"text"``).  Blank lines are skipped.  A line that is an object of
  string members only is read by the compiled `mnemo.jsonfield.string_field` (the hot part of
  reading: json.loads plus encoding the text back to UTF-8 cost a worker about a quarter of its
  time); any other line, and every error, goes through `json.loads`, which gives the same
  document.
* ``.parquet``: the column ``text_field`` of every row group (through pyarrow).
* ``.arrow``: an Arrow IPC file, in the file (random access) or the stream format, read one record
  batch at a time from a memory map (pyarrow): the column ``text_field``.  A folder written by
  Hugging Face ``datasets``' ``save_to_disk`` (``state.json`` + ``data-*.arrow``) stands for its
  Arrow files, in the order ``state.json`` lists them.
* anything else (but REFUSED_SUFFIXES): UTF-8 text.  ``<|endoftext|>`` (the usual separator of
  text corpora) and the special tokens' strings separate documents and are never part of one;
  empty documents (two separators in a row, or one at the start or end of a file) are skipped.

Compression is recognised by its magic bytes, whatever the suffix: xz, gzip and zstd (zstd
needs the ``zstandard`` package).

Special-token strings split documents of every format when `specials` are given (training: they
are document boundaries, never counted as text); ``<|endoftext|>`` also separates documents of
text files whatever the specials.  A ``str`` document (in memory, a JSON string, a Parquet value)
becomes UTF-8 with each lone surrogate replaced by U+FFFD, as `Tokenizer.encode` does.

Pipes, FIFOs, character devices and ``-`` (standard input) are *streams*: each is opened once
and read once from its start, its compression sniffed on that one handle; nothing opens them
before (no check, no stat of a size) and nothing seeks in them.  A stream whose name says no
format (``-``, ``/dev/stdin``, a FIFO named ``pipe``) is JSON Lines when its first non-blank byte
(after decompression) is ``{``, else text, said on stderr (docs/formats.md).  The user can name
the format instead (``--input-format``, `Location.read_as`); names with a suffix of a format
mnemo does not read (``.csv``, ...: REFUSED_SUFFIXES) are refused.

Every input is a `Location` (mnemo/location.py): a local path, ``-``, or an fsspec URL
(``s3://``, ``gs://``, ``memory://``, ...), whose object is read like a regular file, by ranged
requests, so the planning below applies to it unchanged and each worker fetches only its own
byte range or row group.

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
import itertools
import json
import lzma
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from mnemo.constants import EOT  # always a document separator in text files, whatever the specials
from mnemo.defaults import DEFAULT_TEXT_FIELD
from mnemo.errors import ConfigError, InputError
from mnemo.jsonfield import string_field, string_fields
from mnemo.location import STDIN, Info, Location, PathArg, RawReader, location

XZ_MAGIC: Final = b"\xfd7zXZ\x00"
GZIP_MAGIC: Final = b"\x1f\x8b"
ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
COMPRESSION_SUFFIXES: Final = (".xz", ".gz", ".gzip", ".zst", ".zstd")
JSONL_SUFFIXES: Final = (".jsonl", ".ndjson", ".json")
ARROW_SUFFIXES: Final = (".arrow",)
#: Bytes read to recognise a compression format (the longest magic).
SNIFF_BYTES: Final = 6

#: How far past a planned cut to look for a document boundary before giving up on that cut.
CUT_SEARCH_BYTES: Final = 1 << 20


@dataclass(frozen=True)
class Task:
    """One worker's share of one input: bytes [start, end) of a plain file, one Parquet row
    group, or a whole compressed file or stream (start = 0, end = -1).  `sequential`: the input
    can only be read from its start, by one reader (compressed, or a pipe, FIFO or standard
    input, which only the process that plans may open; or a memory:// object, which only that
    process can see).  `path` is the input's location as given (`location(path)` opens it)."""

    path: str
    kind: str  # "text" | "jsonl" | "parquet" | "arrow" | "auto" (standard input: decided by its content)
    start: int = 0
    end: int = -1  # -1: to the end of the (decompressed) stream
    row_group: int = -1  # -1: every row group
    sequential: bool = False
    size: int = -1  # bytes of the whole file on disk, for a whole-file task (-1: unknown, or a range)
    # The object's version when planned (Info.version: a URL's size and ETag...; "" for a local
    # file): a task reads only that version (Location.expecting), for a byte range planned in
    # one and read in another would be garbage.  Not part of what the task is (shards.py).
    version: str = ""

    def describe(self) -> str:
        """The task as an error message names it (work.describe)."""
        name = str(location(self.path))
        if self.row_group >= 0:
            return f"{name} (row group {self.row_group})"
        if self.end >= 0:
            return f"{name} (bytes {self.start} to {self.end})"
        return name


def _magic(head: bytes) -> str:
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return ""


def compression_of(path: Location) -> str:
    """"xz", "gzip", "zstd" or "" -- from the first bytes of a file, never of a stream (which
    cannot be looked at twice: open_binary sniffs it on the handle it reads)."""
    with path.open(exact=True) as f:
        try:
            head = f.read(SNIFF_BYTES)
        except OSError as exc:
            raise path.read_error(exc) from None
    return _magic(head)


#: Suffixes of formats mnemo does not read, which reading as text would turn into documents of
#: markup or noise without a word (a .csv became one document holding its header row): refused,
#: unless --input-format says how to read the file.  Any other name is text: mnemo trains on
#: source code, Markdown, logs and files without a suffix alike.
REFUSED_SUFFIXES: Final = (
    ".csv", ".tsv", ".xlsx", ".xls", ".ods", ".avro", ".orc", ".feather", ".h5", ".hdf5", ".npy",
    ".npz", ".pkl", ".pickle", ".pt", ".safetensors", ".zip", ".tar", ".tgz", ".7z", ".rar",
    ".bz2", ".lz4", ".pdf", ".docx", ".doc", ".epub",
)
#: What the messages say mnemo reads.
READ_FORMATS: Final = (
    "UTF-8 text (.txt, or any other name), JSON Lines (.jsonl, .ndjson, .json), Parquet (.parquet) "
    "or Arrow (.arrow) files, optionally compressed (.xz, .gz, .zst)"
)


def kind_of(path: PathArg) -> str:
    """"jsonl", "parquet", "arrow" or "text": the format the user named for the location
    (Location.read_as, `--input-format`; "chat" reads as JSON Lines), else the one its name
    says once a compression suffix is removed.  A stream (standard input, a pipe, a FIFO or a
    device, however named) whose name says no format is "auto": its first bytes decide
    (_sniff_kind).  A name with one of REFUSED_SUFFIXES is an InputError naming what mnemo
    reads."""
    return _kind(location(path))


def _kind(where: Location, stream: bool | None = None) -> str:
    """kind_of a Location, with what its `info` said about it being a stream when that is known
    (None: asked of it only when its name says no format)."""
    if where.input_format is not None:
        return "jsonl" if where.input_format == "chat" else where.input_format
    name = where.name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(ARROW_SUFFIXES):
        return "arrow"
    if name.endswith(REFUSED_SUFFIXES):
        suffix = "." + name.rsplit(".", 1)[1]
        raise InputError(
            f"{where}: mnemo does not read {suffix} files; it reads {READ_FORMATS}.  Convert it to "
            f"one of those, or name the format with --input-format (input_format=) to read it as that"
        )
    if name.endswith(".txt") or not (where.is_stream() if stream is None else stream):
        return "text"
    return "auto"


def open_binary(path: Location, *, exact: bool = False) -> io.BufferedIOBase:
    """The input's decompressed bytes as a stream, through ONE open of it (`-`: standard input,
    left open at the end; a URL is read by ranges, never downloaded whole; `exact`: without
    read-ahead, see Location.open).  The magic bytes are read from that handle; a seekable file
    goes back to where it was, a pipe gets them served again before the rest -- a second open or
    a seek would lose what the first read took from a pipe (once 153 of 2,000 documents)."""
    raw = path.open(exact=exact)
    try:
        head, source = _sniff(raw)
        return _decompressor(path, source, _magic(head))
    except BaseException:
        raw.close()
        raise


def _decompressor(path: Location, source: Any, comp: str) -> io.BufferedIOBase:
    """The decompressed bytes of `source` (compressed with `comp`: "" for none), whose magic
    bytes _sniff read, as a buffered stream."""
    if comp == "xz":
        return io.BufferedReader(_Owning(lzma.LZMAFile(source, "rb"), source), 1 << 20)
    if comp == "gzip":
        return io.BufferedReader(_Owning(gzip.GzipFile(fileobj=source, mode="rb"), source), 1 << 20)
    if comp == "zstd":
        try:
            zstandard = _zstandard()
        except ImportError:
            raise InputError(f"{path}: is zstd-compressed; install the 'zstandard' package to read it") from None
        return io.BufferedReader(_ZstdReader(source, zstandard.ZstdDecompressor()), 1 << 20)
    if isinstance(source, io.BufferedIOBase):
        return source  # a plain regular file: seekable, for the byte ranges of tasks
    return io.BufferedReader(source, 1 << 20)


def _sniff(raw: Any) -> tuple[bytes, Any]:
    """The first SNIFF_BYTES bytes of `raw` (fewer at its end), and a stream of all of it."""
    start = raw.tell() if raw.seekable() else -1
    head = b""
    while len(head) < SNIFF_BYTES:
        more = raw.read(SNIFF_BYTES - len(head))
        if not more:
            break
        head += more
    if start >= 0:
        raw.seek(start)
        return head, raw
    return head, _Prefixed(head, raw)


class _Prefixed(RawReader):
    """`head`, then the rest of `inner` (which `head` was read from): a pipe read once."""

    def __init__(self, head: bytes, inner: Any) -> None:
        super().__init__(inner)
        self.head = head

    def readinto(self, buffer: Any) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        return super().readinto(buffer)

    def close(self) -> None:
        self.inner.close()
        super().close()


class _Owning(RawReader):
    """Reads `inner` and closes it and `also` (the file a decompressor reads) when closed."""

    def __init__(self, inner: Any, also: Any) -> None:
        super().__init__(inner)
        self.also = also

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.also.close()
            super().close()


def _zstandard() -> ModuleType:
    """The optional `zstandard` package, imported by name: it has no type stubs, and the build
    type-checks this module without it installed."""
    return importlib.import_module("zstandard")


class _ZstdReader(io.RawIOBase):
    """zstd frames, one after another, as a raw stream -- raising EOFError when the input ends
    inside a frame.  (zstandard's own stream_reader returns a truncated stream's bytes and then a
    quiet end of file: a cut-off file would be read as a shorter one.)"""

    def __init__(self, raw: Any, dctx: Any) -> None:
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


@dataclass(frozen=True)
class FoundInput:
    """One input file as it was found, once, before any work: its location as given, `at` (the
    same, read only in the version `info` saw: Location.expecting), the path or URL a Task names
    it by, what `info` said (a file and its size, or a stream), its format (kind_of) and its
    compression ("" for none; None when it was not looked at: a stream, or a plan that does not
    need it yet).  Planning asks these, not the location again."""

    given: Location
    at: Location
    where: str
    info: Info
    kind: str
    compression: str | None = None


def check_inputs(inputs: Sequence[PathArg]) -> list[Location]:
    """The inputs' locations, each checked to be a readable file (else InputError).  Streams
    are checked without being opened: opening a FIFO takes its writer, and a pipe's bytes once
    read are gone."""
    return [found.given for found in found_inputs(inputs)]


def found_inputs(inputs: Sequence[PathArg]) -> list[FoundInput]:
    """check_inputs, with what was found of each input on the way (FoundInput): one `info` and, for
    a file, one open (its compression and its first bytes) per input (plan_tasks' `check`)."""
    if not inputs:
        raise InputError("no input files given; pass at least one .txt, .jsonl, .parquet or .arrow file")
    given = [location(p) for p in inputs]
    if sum(1 for p in given if p.stdin) > 1:
        raise InputError(f"standard input ('{STDIN}') is given more than once; it can be read only once")
    found: list[FoundInput] = []
    for p in given:
        info = p.info()  # missing or unreadable: an InputError naming it
        for q, q_info in [(p, info)] if info.type != "directory" else [(q, q.info()) for q in _dataset_folder_files(p)]:
            if q_info.type == "directory":
                raise q.read_error(IsADirectoryError())
            if not q_info.stream:
                found.append(_looked_at(q, q_info))
                continue
            kind = _kind(q, stream=True)
            if kind == "parquet":
                raise InputError(_parquet_stream_message(str(q)))
            if kind == "arrow":
                raise InputError(_arrow_stream_message(str(q)))
            found.append(FoundInput(q, q, os.fspath(q), q_info, kind))
    return found


def _dataset_folder_files(path: Location) -> list[Location]:
    """A `datasets.Dataset.save_to_disk` folder (a prefix, at a URL) -- `path` is a folder, its
    `info` said so -- as its Arrow files, in the order of its state.json.  A DatasetDict folder
    (one subfolder per split) is an error naming the splits: training on train and test together
    must be a choice."""
    from mnemo.fileio import read_file

    state = path.join("state.json")
    if state.isfile():
        try:
            files = json.loads(read_file(state, 1 << 24, "datasets state.json"))["_data_files"]
            names = [str(entry["filename"]) for entry in files]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"{state}: not a datasets state.json with a '_data_files' list ({type(exc).__name__}: {exc})"
            ) from None
        if not names:
            raise InputError(f"{path}: its state.json lists no Arrow files")
        for name in names:
            if Path(name).name != name:
                raise InputError(f"{state}: data file {name!r} is not a file name inside the folder")
        return [path.join(name) for name in names]
    splits = path.join("dataset_dict.json")
    if splits.isfile():
        try:
            found = ", ".join(str(s) for s in json.loads(read_file(splits, 1 << 24, "datasets dataset_dict.json"))["splits"])
        except (InputError, ValueError, KeyError, TypeError):
            found = "see dataset_dict.json"
        raise InputError(
            f"{path}: is a datasets DatasetDict (splits: {found}); pass the folder of one split, e.g. {path.join('train')}"
        )
    raise InputError(f"{path}: is a {path.FOLDER} without a datasets state.json; pass the {path.FILES} inside it")


#: Bytes (after decompression) looked at for a NUL: git's rule for telling binary from text.
TEXT_SNIFF_BYTES: Final = 8000


def _looked_at(given: Location, info: Info) -> FoundInput:
    """The FoundInput of a file (not a stream) whose `info` has been read, with its format and its
    compression, from its first bytes, read through one open of it.  InputError for a
    compressed Arrow file, and for a text or JSONL file that is one of mnemo's own files
    (tokenizer.bin, .tok) or binary (a NUL byte in its first TEXT_SNIFF_BYTES, after
    decompression): training on a .tok file as if it were text ran for 38 s and gave a
    vocabulary of noise.  Never called for a stream: a read from a pipe would take bytes that
    the real read then misses."""
    from mnemo.tokfile import TOK_MAGIC
    from mnemo.vocabfile import BIN_MAGIC

    path = given.expecting(info.version)  # what is planned from here is what the tasks read
    where = os.fspath(given)
    raw = path.open(exact=True)
    try:
        try:
            head, source = _sniff(raw)
        except OSError as exc:
            raise path.read_error(exc) from None
        comp = _magic(head)
        kind = _kind(given, stream=False)
        found = FoundInput(given, path, where, info, kind, comp)
        if comp and kind == "arrow":
            raise InputError(f"{path}: a compressed Arrow file cannot be read by record batch; decompress it and pass that")
        if kind in ("parquet", "arrow"):
            return found
        try:
            with _decompressor(path, source, comp) as f:
                head = f.read(TEXT_SNIFF_BYTES)
        except read_errors():
            return found  # a damaged compressed file: the real read reports it, with its offset
    finally:
        raw.close()
    nul = head.find(b"\0")
    if head.startswith(BIN_MAGIC):
        what = "a mnemo tokenizer.bin"
    elif head.startswith(TOK_MAGIC):
        what = "a mnemo .tok token file"
    elif nul >= 0:
        what = f"binary (a NUL byte at offset {nul}{' of its decompressed text' if comp else ''})"
    else:
        return found
    raise InputError(
        f"{path}: is {what}, not text; inputs are UTF-8 text (.txt), JSON Lines (.jsonl), "
        f"Parquet or Arrow files, optionally compressed"
    )


def _arrow_stream_message(name: str) -> str:
    return f"{name}: Arrow files are read from a memory map, not from a pipe or standard input; save it to a file and pass that"


def _parquet_stream_message(name: str) -> str:
    return (
        f"{name}: Parquet cannot be read from a pipe or standard input (its index is at the end of "
        f"the file); save it to a file and pass that"
    )


# ---- planning ---------------------------------------------------------------------------------


#: A worker's share of the input is cut into about this many tasks, each at least MIN_TASK_BYTES.
TASKS_PER_WORKER: Final = 16
MIN_TASK_BYTES: Final = 16 << 20


def plan_tasks(
    paths: Sequence[PathArg],
    *,
    n_workers: int,
    specials: Sequence[str] = (),
    min_task_bytes: int = MIN_TASK_BYTES,
    max_task_bytes: int | None = None,
    whole_documents: bool = False,
    check: bool = False,
) -> list[Task]:
    """Cut the inputs into tasks of roughly equal size, in input order: about a sixteenth of
    each worker's share, within [min_task_bytes, max_task_bytes].  Small tasks balance the
    workers: they all finish within about one task's time of each other (with a quarter of a
    share per task, the second of two workers counting 879 MB finished 2 s after the first).

    With `whole_documents` (encoding: every document gets its own <|bos|>), a text file is cut
    only at special tokens; otherwise (counting) also at a space between two ASCII letters.

    `check`: check the inputs first, as check_inputs does, in the same pass: each input is looked
    at once (found_inputs), and planned from what was found.  Else the paths are planned as they
    are."""
    if check:
        inputs = found_inputs(paths)
    else:
        infos = [(at, at.info()) for at in map(location, paths)]
        inputs = [FoundInput(at, at.expecting(info.version), os.fspath(at), info, _kind(at, info.stream)) for at, info in infos]
    tasks: list[Task] = []
    total = sum(found.info.size for found in inputs if not found.info.stream)
    target = max(min_task_bytes, total // max(1, TASKS_PER_WORKER * n_workers))
    if max_task_bytes is not None:
        target = min(target, max_task_bytes)
    for found in inputs:
        p, kind, info, where = found.at, found.kind, found.info, found.where  # a task names its input as given
        v = info.version
        if info.stream:  # never opened here: the reader opens it once
            if kind == "parquet":
                raise InputError(_parquet_stream_message(str(p)))
            if kind == "arrow":
                raise InputError(_arrow_stream_message(str(p)))
            tasks.append(Task(where, kind, sequential=True, version=v))
        elif p.private:  # memory://: only this process sees it
            tasks.append(Task(where, kind, sequential=True, version=v))
        elif kind == "parquet":
            tasks += [Task(where, kind, row_group=g, version=v) for g in range(_parquet_row_groups(p))]
        elif kind == "arrow":  # one task per file (datasets shards big datasets into files)
            tasks.append(Task(where, kind, size=info.size, version=v))
        elif found.compression if found.compression is not None else compression_of(p):
            tasks.append(Task(where, kind, sequential=True, version=v))
        elif info.size <= target:
            tasks.append(Task(where, kind, size=info.size, version=v))
        else:
            tasks += [Task(where, kind, s, e, version=v) for s, e in _cut_points(p, info.size, kind, target, specials, whole_documents)]
    return tasks


def _cut_points(
    path: Location, size: int, kind: str, target: int, specials: Sequence[str], whole_documents: bool
) -> list[tuple[int, int]]:
    """Byte ranges of about `target` bytes of the `size` bytes of `path`, each starting at a
    document boundary (a remote object: one ranged read of at most CUT_SEARCH_BYTES per cut)."""
    cuts = [0]
    with path.open(exact=True) as f:
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
    m = separator_re([*specials, EOT]).search(window)
    if m is not None or whole_documents:
        return -1 if m is None else m.start()
    return _word_gap(window)


#: A space between two ASCII letters: the letters before it end a chunk in every pattern
#: (letters run maximally), and the space starts the next one (" word").  This is the pattern
#: property "cut_before_space_letter" (constants.PATTERN_PROPERTIES), which tests/test_patterns.py
#: checks for every pattern: a new pattern that breaks it fails there.
_WORD_GAP: Final = re.compile(rb"[A-Za-z] [A-Za-z]")


def _word_gap(window: bytes) -> int:
    """Offset of the first space between two ASCII letters in `window`, or -1."""
    m = _WORD_GAP.search(window)
    return -1 if m is None else m.start() + 1


def separator_re(specials: Iterable[str]) -> re.Pattern[bytes]:
    """One regular expression for the separators (UTF-8), longest first: a search finds the
    leftmost one and, of those starting there, the longest -- one pass over the text (searching
    each separator in turn from every document start was quadratic: 30 MB of text took 117 s).
    With no separator it matches nothing."""
    seps = sorted({s.encode("utf-8") for s in specials if s}, key=lambda b: (-len(b), b))
    if not seps:
        return re.compile(rb"(?!)")
    return re.compile(b"|".join(re.escape(s) for s in seps))


def str_to_utf8(text: str) -> bytes:
    """`text` as UTF-8, each lone surrogate as U+FFFD (a surrogate pair as its character): the
    rule of `Tokenizer.encode` and of tiktoken, for every str that becomes training text."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def split_at(data: bytes, seps: re.Pattern[bytes]) -> Iterator[bytes]:
    """The non-empty pieces of `data` between separators."""
    at = 0
    for m in seps.finditer(data):
        if m.start() > at:
            yield data[at : m.start()]
        at = m.end()
    if at < len(data):
        yield data[at:] if at else data


def _parquet_row_groups(path: Location) -> int:
    pq = _pyarrow_parquet(path)
    try:
        with path.open() as f:  # pyarrow reads the footer by ranges of a file object
            return int(pq.ParquetFile(f).num_row_groups)
    except Exception as exc:  # pyarrow raises its own error types
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def _pyarrow_parquet(path: Location) -> ModuleType:
    try:
        return importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs the 'pyarrow' package (pip install pyarrow)") from None


# ---- reading ---------------------------------------------------------------------------------


def iter_task_documents(
    task: Task, *, text_field: str = DEFAULT_TEXT_FIELD, specials: Sequence[str] = (), whole_documents: bool = False
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
            f"{location(task.path)}: cannot be read to the end ({type(exc).__name__}: {exc}); "
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
    path = location(task.path).expecting(task.version)
    if task.kind == "parquet":
        yield from _parquet_documents(path, task.row_group, text_field, specials)
        return
    if task.kind == "arrow":
        yield from _arrow_documents(path, text_field, specials)
        return
    stream = open_binary(path, exact=task.end >= 0)  # a byte range: read in large blocks, up to its end
    with stream:
        if task.end >= 0:
            stream.seek(task.start)
            raw: Iterable[bytes] = _limited(stream, task.end - task.start)
        else:
            raw = _blocks(stream)
        kind = task.kind
        if kind == "auto":
            kind, raw = _sniff_kind(raw, path)
        if kind == "jsonl":
            yield from _jsonl_documents(raw, path, task.start, text_field, specials)
        else:
            yield from _text_documents(raw, specials, whole_documents)


def _sniff_kind(raw: Iterable[bytes], path: Location) -> tuple[str, Iterable[bytes]]:
    """The format of a stream whose name says none, from its first bytes: "jsonl" when the
    first byte that is not white space is "{", else "text" (a text that starts with "{" then
    fails as JSON on a named line, never silently); Parquet and Arrow cannot be streamed.  The
    choice is said on stderr, with the option that overrides it: nothing else shows it."""
    blocks = iter(raw)
    seen: list[bytes] = []
    kind = "text"
    why = "it is empty"
    for block in blocks:
        seen.append(block)
        stripped = block.lstrip()
        if stripped:
            if stripped.startswith(b"PAR1"):
                raise InputError(_parquet_stream_message(str(path)))
            if stripped.startswith(b"ARROW1") or stripped.startswith(b"\xff\xff\xff\xff"):
                raise InputError(_arrow_stream_message(str(path)))
            kind = "jsonl" if stripped.startswith(b"{") else "text"
            why = "its first byte is '{'" if kind == "jsonl" else "its first byte is not '{'"
            break
    shown = "JSON Lines" if kind == "jsonl" else "text"
    print(
        f"mnemo: reading {path} as {shown} ({why}); --input-format text|jsonl (input_format=) says otherwise",
        file=sys.stderr,
        flush=True,
    )
    return kind, itertools.chain(seen, blocks)


def iter_documents(
    inputs: Sequence[PathArg], *, text_field: str = DEFAULT_TEXT_FIELD, specials: Sequence[str] = ()
) -> Iterator[bytes]:
    """Every document of every input, in order (a single process; see plan_tasks for workers)."""
    for p in check_inputs(inputs):
        yield from iter_task_documents(Task(os.fspath(p), kind_of(p)), text_field=text_field, specials=specials)


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


def _jsonl_documents(
    raw: Iterable[bytes], path: Location, start: int, field: str, specials: Sequence[str] = ()
) -> Iterator[bytes]:
    """The documents of JSON Lines, split at the special tokens' strings when there are any.
    Lines are counted as they go by, for messages: a stream cannot be read again to count them."""
    key = field.encode("utf-8", "surrogatepass")
    seps = separator_re(specials) if specials else None
    line_no = 0  # lines of this task before the current one
    rest = b""  # the unfinished last line of the blocks so far
    for block in raw:
        at = 0
        if rest:
            nl = block.find(b"\n")
            if nl < 0:
                rest += block
                continue
            # only the line that spans two blocks is joined: the block itself is read in place
            yield from _jsonl_line(rest + block[:nl], path, start, line_no, field, key, seps)
            line_no += 1
            at = nl + 1
        while True:
            docs: list[bytes] = []
            at = string_fields(block, at, key, docs)  # the compiled fast path, line after line
            line_no += len(docs)
            if seps is None:
                yield from docs
            else:
                for doc in docs:
                    yield from split_at(doc, seps)
            nl = block.find(b"\n", at)
            if nl < 0:
                break
            # a line string_fields declined: json.loads reads it, with the errors
            yield from _jsonl_line(block[at:nl], path, start, line_no, field, key, seps)
            line_no += 1
            at = nl + 1
        rest = block[at:]
    if rest:
        yield from _jsonl_line(rest, path, start, line_no, field, key, seps)


def _jsonl_line(
    line: bytes, path: Location, start: int, line_no: int, field: str, key: bytes, seps: re.Pattern[bytes] | None
) -> Iterator[bytes]:
    """The document of one line (line `line_no` of a task starting at byte `start`); `key` is
    `field` as UTF-8 ("surrogatepass")."""
    if not line.strip():
        return
    text_bytes = string_field(line, key)  # the compiled fast path: None when it is not sure
    if text_bytes is None:
        text_bytes = _json_field(line, path, start, line_no, field)
    if seps is None:
        yield text_bytes
    else:
        yield from split_at(text_bytes, seps)


def _json_field(line: bytes, path: Location, start: int, line_no: int, field: str) -> bytes:
    """The field through json.loads: what string_field declined, with the errors."""
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{_where(path, start, line_no)}: not valid JSON ({exc}); each line of a .jsonl file must be one JSON object"
        ) from None
    except RecursionError:
        raise InputError(
            f"{_where(path, start, line_no)}: the JSON is nested too deeply to read; each line of a .jsonl "
            f"file must be one JSON object with a text field"
        ) from None
    text = record.get(field) if isinstance(record, dict) else None
    if not isinstance(text, str):
        got = "no such field" if not isinstance(record, dict) or field not in record else type(text).__name__
        if isinstance(record, dict) and field not in record and isinstance(record.get("messages"), list):
            raise InputError(
                f"{_where(path, start, line_no)}: field {field!r} must be a string ({got}): the line is a chat "
                f"record (a 'messages' list); `mnemo tokenize --chat` (tokenize_files(chat=True)) reads chat "
                f"records; training has no chat mode: train on text (a field holding each document's text, "
                f"chosen with --text-field), or render the chats to text first"
            )
        raise InputError(
            f"{_where(path, start, line_no)}: field {field!r} must be a string ({got}); "
            f"choose the text field with text_field= / --text-field"
        )
    return str_to_utf8(text)


def _where(path: Location, start: int, line_no: int) -> str:
    """"FILE:LINE" of line `line_no` of the task that starts at byte `start` of the file."""
    first = 1 if start == 0 else _line_number(path, start)  # start > 0: a regular file
    return f"{path}:{first + line_no}"


def _line_number(path: Location, offset: int) -> int:
    """1-based line number of the byte at `offset` of a plain file (counted only when reporting
    an error)."""
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
    document), to keep memory bounded.

    One pass: each block is searched once, from where the last search stopped.  A separator
    found within `longest` bytes of the end of what has arrived is left for the next block,
    which may complete a longer one starting at the same place (or earlier)."""
    seps = separator_re([*specials, EOT])
    longest = max(len(s.encode("utf-8")) for s in [*specials, EOT] if s)
    doc: list[bytes] = []  # the current document's bytes, searched already
    size = 0
    tail = b""  # bytes not searched to the end yet (the last longest - 1 of what arrived)
    for block in itertools.chain(raw, [b""]):
        last = not block
        buf = tail + block
        safe = len(buf) if last else max(0, len(buf) - longest + 1)  # a match from here may be cut
        at = 0
        for m in seps.finditer(buf):
            if m.start() >= safe:
                break
            if m.start() > at or doc:
                doc.append(buf[at : m.start()])
                piece = b"".join(doc)
                if piece:
                    yield piece
            doc, size = [], 0
            at = m.end()
        keep = max(at, safe)
        if keep > at:
            doc.append(buf[at:keep])
            size += keep - at
        tail = buf[keep:]
        if not whole_documents and size > 4 * BLOCK:
            # hand on all but the last piece, cut where a chunk certainly ends
            last_part = doc[-1]
            cut = _word_gap(last_part)
            if cut > 0:
                doc[-1] = last_part[:cut]
                yield b"".join(doc)
                doc, size = [last_part[cut:]], len(last_part) - cut
    if doc:
        piece = b"".join(doc)
        if piece:
            yield piece


def _parquet_documents(path: Location, row_group: int, field: str, specials: Sequence[str] = ()) -> Iterator[bytes]:
    pq = _pyarrow_parquet(path)
    seps = separator_re(specials) if specials else None
    try:
        pf = pq.ParquetFile(_arrow_source(path, map_local=False))
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
                data = str_to_utf8(value)
                if seps is None:
                    yield data
                else:
                    yield from split_at(data, seps)
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises its own error types
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def _arrow_source(path: Location, map_local: bool) -> Any:
    """What pyarrow reads a Parquet or Arrow file from: a local file's path (`map_local`: a
    memory map of it, whose record batches are read in place), or a URL's object as a file
    that fetches ranges (a footer, a row group) as pyarrow asks for them -- never a local copy."""
    if path.remote:
        return path.open()
    if map_local:
        return importlib.import_module("pyarrow").memory_map(os.fspath(path), "r")
    return os.fspath(path)


def _arrow_documents(path: Location, field: str, specials: Sequence[str] = ()) -> Iterator[bytes]:
    """The column `field` of an Arrow IPC file (file or stream format), one record batch at a
    time from a memory map: a file of any size is never read whole."""
    try:
        pa = importlib.import_module("pyarrow")
        ipc = importlib.import_module("pyarrow.ipc")
    except ImportError:
        raise InputError(f"{path}: reading Arrow files needs the 'pyarrow' package (pip install pyarrow)") from None
    seps = separator_re(specials) if specials else None
    try:
        with _arrow_source(path, map_local=True) as source:
            batches: Iterable[Any]
            try:
                reader = ipc.open_file(source)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            except pa.ArrowInvalid:  # not the file format: the stream format (datasets writes it)
                source.seek(0)
                reader = ipc.open_stream(source)
                batches = reader
            names = reader.schema.names
            if field not in names:
                raise InputError(
                    f"{path}: no column {field!r} (columns: {', '.join(names)}); choose one with text_field= / --text-field"
                )
            kind = reader.schema.field(field).type
            is_view = getattr(pa.types, "is_string_view", None)  # pyarrow >= 16
            if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or (is_view and is_view(kind))):
                raise InputError(f"{path}: column {field!r} holds {kind}, not text")
            index = names.index(field)
            for batch in batches:
                for value in batch.column(index).to_pylist():
                    if value is None:
                        continue
                    data = str_to_utf8(value)
                    if seps is None:
                        yield data
                    else:
                        yield from split_at(data, seps)
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises its own error types
        raise InputError(f"{path}: not a readable Arrow IPC file ({exc})") from None


def documents_from_iterable(docs: Iterable[str | bytes], specials: Sequence[str] = ()) -> Iterator[bytes]:
    """In-memory documents as bytes, split at special tokens like text files (a str's lone
    surrogates become U+FFFD, as Tokenizer.encode makes them)."""
    seps = separator_re(specials) if specials else None
    for i, doc in enumerate(docs):
        if isinstance(doc, str):
            data = str_to_utf8(doc)
        elif isinstance(doc, (bytes, bytearray, memoryview)):
            data = bytes(doc)
        else:
            raise ConfigError(f"document {i} is a {type(doc).__name__}; documents must be str or bytes")
        if seps is None:
            yield data
        else:
            yield from split_at(data, seps)
