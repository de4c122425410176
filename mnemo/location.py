"""Where mnemo reads and writes: one `Location` type for local files, standard input and URLs.

Every path mnemo is given -- an input, an output, a tokenizer file -- becomes a Location through
`location(path)`, the one place that tells a URL from a local path.  The rest of mnemo asks the
location instead of branching on what kind of path it is.  Three kinds:

| | `LocalPath` | `StandardInput` (``-``) | `UrlPath` (``s3://``, ``memory://``, ...) |
| --- | --- | --- | --- |
| `info`: a file and its size, a folder, a stream | `os.stat` (a pipe, FIFO or device is a stream) | a stream | fsspec's `info` |
| `open`: read whole or from an offset | the file | this process's standard input, borrowed | ranged reads (fsspec) |
| `isdir`, `isfile`, `join`, `sibling` | the filesystem's | -- | prefixes and keys |
| `same_as`: is the output an input? | device and inode | (the file ``-``) | the URL |
| `local_path`: to memory-map | itself | -- | a copy (remote.local_copy) |
| `write_atomic`, `staging` | a temporary name, then a rename | (the file ``-``) | staged locally, then uploaded |
| `check_output`, `check_output_folder` | the folder exists and is writable | (the file ``-``) | the bucket exists |

A Location is `os.PathLike`: its `__fspath__` is the path or URL as given, so `location()` of it
is the same location again, a `Task` carries it as that string, and it goes wherever a path
does.  `str()` is how messages name it (``<stdin>`` for ``-``).

fsspec serves the URL kind (mnemo/remote.py, its one importer) and stays an optional package
(``mnemo[remote]``): local paths and standard input never import it (docs/remote.md says why).
"""

from __future__ import annotations

import copy
import io
import os
import re
import stat
import sys
import tempfile
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final, Union

from mnemo import remote
from mnemo.errors import ConfigError, FormatError, InputError
from mnemo.kernels import read_fd

#: What callers may pass as a path: a str, an os.PathLike (a Path, or a Location itself).
PathArg = Union[str, "os.PathLike[str]"]

#: `scheme://`: a scheme of at least two characters, so that a Windows drive (`C:`) is a path.
_URL: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
#: The path that names standard input.
STDIN: Final = "-"
#: How standard input is named in messages.
STDIN_NAME: Final = "<stdin>"
#: The manifest of a shard directory (mnemo/shards.py), the one kind of folder mnemo reads from
#: a local copy (`local_path` of a folder): a URL's prefix is copied only once this is found
#: under it, so that a prefix of anything else is refused by name, not downloaded whole first.
SHARD_MANIFEST: Final = "manifest.json"


def location(path: PathArg) -> Location:
    """The Location of `path`: a URL (``scheme://...``), standard input (``-``) or a local path.
    A Location is returned as it is."""
    if isinstance(path, Location):
        return path
    text = os.fspath(path)
    if _URL.match(text) is not None:
        return UrlPath(text)
    if text == STDIN:
        return StandardInput(Path(text))
    return LocalPath(Path(text))


class Location(os.PathLike[str]):
    """One place to read or write (see the module docstring).  Reading methods raise an
    InputError naming the location when it is missing or unreadable; the writing checks
    (`check_output`, `check_output_folder`) raise ConfigError before any work starts."""

    #: Read and written through fsspec (a URL), not through this machine's filesystem: what a
    #: Ray cluster's nodes cannot share by path, and what a demo cannot show as a folder.
    remote: ClassVar[bool] = False
    #: Standard input: its format is read from its content, not its name.
    stdin: ClassVar[bool] = False
    #: How messages name a folder here, and the things inside one.
    FOLDER: ClassVar[str] = "directory"
    FILES: ClassVar[str] = "files"

    #: The last part of the path or key ("" when it names none): what a file of it is called.
    name: str
    #: Only this process can read it (standard input; memory://, fsspec's in-process
    #: filesystem): its tasks are read here, never by a worker.
    private: bool
    #: The input format the user named for it (`--input-format`: "text", "jsonl", "parquet",
    #: "arrow" or "chat"), or None: its name decides, or for a stream its first bytes
    #: (mnemo/sources.py, kind_of).  Not part of what it is: equal locations may differ in it.
    input_format: str | None = None

    @abstractmethod
    def __fspath__(self) -> str:
        """The path or URL as given: what `location()` makes this location of again."""

    def __str__(self) -> str:
        return self.__fspath__()

    @abstractmethod
    def sibling(self, name: str) -> Location:
        """The location of `name` next to this one (in the same folder)."""

    @abstractmethod
    def join(self, name: str) -> Location:
        """The location of `name` inside this folder."""

    # ---- reading ---------------------------------------------------------------------------------

    @abstractmethod
    def info(self) -> Info:
        """What is there, as fsspec's `info` tells it (one stat, or one request), found without
        opening it (a FIFO's open takes its writer; a pipe's bytes, once read, are gone):
        InputError naming it when it is missing or cannot be read."""

    def is_stream(self) -> bool:
        """Whether it is read once from its start (standard input, a pipe, a FIFO, a device):
        `info` says so; False when nothing readable is there (the read names it)."""
        try:
            return self.info().stream
        except InputError:
            return False

    def expecting(self, version: str) -> Location:
        """This location, read only as long as it holds what `info().version` said when the
        run was planned: an object replaced since is an InputError saying so (a URL; a local
        file is read as it is)."""
        return self

    def read_as(self, input_format: str | None) -> Location:
        """This location, with the input format the user named for it (None: none)."""
        declared = copy.copy(self)
        object.__setattr__(declared, "input_format", input_format)
        return declared

    @abstractmethod
    def isdir(self) -> bool:
        """Whether it is a folder (a prefix with objects under it); False when nothing is there."""

    @abstractmethod
    def isfile(self) -> bool:
        """Whether a file (an object, not a prefix) is there."""

    @abstractmethod
    def open(self, *, exact: bool = False) -> Any:
        """Its bytes as a binary file, seekable unless it is a stream, for reading whole or from
        an offset (a task's byte range).  `exact`: a URL is read without read-ahead, each read
        one request of its own size (remote.open_read)."""

    @abstractmethod
    def read_error(self, exc: BaseException) -> InputError:
        """The InputError for `exc`, raised while reading it."""

    @abstractmethod
    def read_bytes(self, limit: int, what: str = "file") -> bytes:
        """The whole file, which must be at most `limit` bytes (at most limit + 1 are read, so
        /dev/zero or a huge file costs that much and no more): FormatError naming the bound."""

    @abstractmethod
    def local_path(self, what: str = "file") -> Path:
        """A local path of its bytes, for a memory map: the file itself, or a copy of a URL's
        object (or folder) in this process's bounded cache (remote.local_copy)."""

    @abstractmethod
    def local_set(self, names: Sequence[str], what: str = "file set") -> Path:
        """`local_path` of a set of files read by names next to each other (Megatron's .bin +
        .idx, ...): the local path standing for this one, with those of `names` that exist beside it."""

    # ---- writing ---------------------------------------------------------------------------------

    @abstractmethod
    def identity(self) -> object:
        """What names the file whatever the spelling: equal for two locations of one file."""

    def same_as(self, other: PathArg) -> bool:
        """Whether `other` names the same file, however it is spelled."""
        return self.identity() == location(other).identity()

    @abstractmethod
    def check_output(self, inputs: Sequence[tuple[str, PathArg]] = ()) -> None:
        """ConfigError, before any work starts, when this output cannot be written: it is one
        of the `inputs` (label, path) -- writing it would replace that input --, or it cannot be
        written here (see each kind).  Without this a run worked to its end and died on the write."""

    @abstractmethod
    def check_output_folder(self, inputs: Sequence[tuple[str, PathArg]] = (), names: Sequence[str] = ()) -> None:
        """ConfigError, before any work starts, when it cannot be (or be made) a folder to write
        the files `names` in, or when one of those files (without names: the folder) is one of
        the `inputs`."""

    @abstractmethod
    def make_folder(self) -> None:
        """Create it as a folder when missing (a URL's prefix needs no creating)."""

    @abstractmethod
    def write_atomic(self, data: bytes) -> None:
        """Write `data` so that it appears complete or not at all."""

    @abstractmethod
    def staging(self) -> Staging:
        """Where a writer builds this output and the files next to it (see Staging)."""


@dataclass(frozen=True)
class Info:
    """What a location holds: `type` "file", "directory", or "stream" -- something to open once
    and read once from its start (standard input, a pipe, a FIFO, a device), which nothing may
    look at before its one reader does; the size in bytes of a file (-1 otherwise); and for an
    object at a URL its `version` (remote.version_of: size and ETag, generation...; "" when
    unknown), which changes when the object is replaced (Location.expecting)."""

    type: str
    size: int = -1
    version: str = ""
    stream: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stream", self.type == "stream")


class Staging:
    """Where a writer builds an output and its sibling files: under `local` and names next to
    it, as local files, each written through a temporary name and renamed when complete; then
    `publish` makes them appear at the output (nothing to do for a local output: they are
    there), and `discard` removes what is left."""

    def __init__(self, output: Location, local: Path) -> None:
        self.output = output
        self.local = local

    def final(self, local: Path) -> Location:
        """Where the file built at `local` appears."""
        return self.output.sibling(local.name)

    def publish(self, files: Sequence[Path], *, remove_first: Sequence[Path] = ()) -> None:
        """Make `files` appear, in order, each complete; those of `remove_first` are removed
        first (an old key, so that no reader pairs it with new parts)."""

    def discard(self) -> None:
        """Remove what the writer left (the published files stay)."""


# ---- local paths -------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=True)
class LocalPath(Location):
    """A path of this machine's filesystem: a file, a folder, or a pipe, FIFO or device."""

    path: Path
    name: str = field(init=False)
    private: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.path.name)
        text = os.fspath(self.path)
        try:  # a path no file can have (a manifest's, a sidecar's) is named here, not as a traceback
            os.fsencode(text)
        except UnicodeEncodeError as exc:
            raise InputError(
                f"path {text!r} holds U+{ord(text[exc.start]):04X} at index {exc.start}, which no file name on this "
                "system can hold; check where the path came from"
            ) from None
        if "\0" in text:
            raise InputError(f"path {text!r} holds a NUL character, which no file name can hold; check where it came from")

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def sibling(self, name: str) -> Location:
        return LocalPath(self.path.with_name(name))

    def join(self, name: str) -> Location:
        return LocalPath(self.path / name)

    # reading

    def info(self) -> Info:
        """A stream is also checked for permission here: it is never opened before it is read."""
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise self.read_error(exc) from None
        if stat.S_ISDIR(st.st_mode):
            return Info("directory")
        if stat.S_ISREG(st.st_mode):
            return Info("file", st.st_size)
        if not os.access(self.path, os.R_OK):
            raise InputError(f"{self}: cannot be read (permission denied); check its permissions")
        return Info("stream")

    def isdir(self) -> bool:
        return self.path.is_dir()

    def isfile(self) -> bool:
        return self.path.is_file()

    def open(self, *, exact: bool = False) -> Any:
        try:
            return open(self.path, "rb")
        except OSError as exc:
            raise self.read_error(exc) from None

    def read_error(self, exc: BaseException) -> InputError:
        if isinstance(exc, FileNotFoundError):
            return InputError(f"{self}: no such file; check the path")
        if isinstance(exc, IsADirectoryError):
            return InputError(f"{self}: is a directory; pass the files inside it")
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return InputError(f"{self}: cannot be read ({reason}); check its permissions")

    def read_bytes(self, limit: int, what: str = "file") -> bytes:
        try:
            with open(self.path, "rb") as f:
                # A regular file is read into a buffer of its own size (plus the byte that
                # shows it grew), not one of limit + 1: a 64 MB request is always a fresh
                # mapping, whose pages fault in on every read, where a buffer of the file's
                # size is reused from the heap by the next read of that size.
                # Read into the bytes object itself (kernels.read_fd), whose pages fault in 2 MB
                # at a time from 4 MB on: 4,300 faults fewer for a 17.6 MB tokenizer.json.
                st = os.fstat(f.fileno())
                want = limit + 1
                if stat.S_ISREG(st.st_mode) and st.st_size < limit:
                    want = st.st_size + 1
                data = read_fd(f.fileno(), want)
                if len(data) == want and want <= limit:  # it grew since fstat: read on to the bound
                    data += read_fd(f.fileno(), limit + 1 - want)
        except OSError as exc:
            raise InputError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        if len(data) > limit:
            raise FormatError(f"{self.path}: larger than {limit:,} bytes, the most mnemo reads as a {what}: check that the path names one")
        return data

    def local_path(self, what: str = "file") -> Path:
        return self.path

    def local_set(self, names: Sequence[str], what: str = "file set") -> Path:
        return self.path  # its siblings are next to it already

    # writing

    def identity(self) -> object:
        """The device and inode when it exists (symlinks, hard links, ./x against x), else the
        resolved path."""
        try:
            st = os.stat(self.path)
        except OSError:
            return ("path", self.path.resolve())
        return ("inode", st.st_dev, st.st_ino)

    def check_output(self, inputs: Sequence[tuple[str, PathArg]] = ()) -> None:
        """Also refused: a folder or another non-regular file (renaming onto /dev/null would
        replace the device), and a folder that is missing or not writable (tried by creating
        and removing a file in it, which is what the writers' temporary name needs; permission
        bits say nothing for root)."""
        path = self.path
        self._refuse_inputs(inputs, "name")
        if path.is_dir():
            raise ConfigError(f"{path}: is a folder; give the output a file name (such as {path / 'NAME'})")
        if path.exists() and not path.is_file():
            raise ConfigError(
                f"{path}: is not a regular file (a device, pipe or socket); outputs are written to a "
                f"temporary name and renamed, which would replace it: give a file name"
            )
        _check_folder_writable(path, path.parent)

    def check_output_folder(self, inputs: Sequence[tuple[str, PathArg]] = (), names: Sequence[str] = ()) -> None:
        """Refused: an existing file, and a path whose nearest existing folder is not writable
        (the folder may not exist yet: the files in it are not checked further)."""
        path = self.path
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{path}: is a file, but the output is a folder; give a folder name (it is created if missing)")
        folder = path
        while not folder.exists():
            if folder.parent == folder:
                break
            folder = folder.parent
        if not folder.is_dir():
            raise ConfigError(f"{path}: {folder} is a file, not a folder; give a folder name under an existing folder")
        _check_folder_writable(path, folder)
        for target in [LocalPath(path / name) for name in names] or [self]:
            target._refuse_inputs(inputs, "folder")

    def make_folder(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def write_atomic(self, data: bytes) -> None:
        """Through a temporary name in the same folder, fsync and a rename."""
        final = self.path
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

    def staging(self) -> Staging:
        return Staging(self, self.path)  # built in place: each file's rename publishes it

    def _refuse_inputs(self, inputs: Sequence[tuple[str, PathArg]], noun: str) -> None:
        for label, other in inputs:
            if self.same_as(other):
                raise ConfigError(
                    f"{self.path}: the output is also the {label} {location(other)}; writing it would destroy the {label}: "
                    f"choose another output {noun}"
                )


def _check_folder_writable(path: Path, where: Path) -> None:
    if not where.exists():
        raise ConfigError(f"{path}: the folder {where} does not exist; create it first (mkdir -p {where}) or choose another path")
    if not where.is_dir():
        raise ConfigError(f"{path}: {where} is a file, not a folder; choose another path")
    try:
        fd, probe = tempfile.mkstemp(prefix=".mnemo-probe-", dir=where)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write in {where} ({exc.strerror}); choose a folder you can write to") from None
    os.close(fd)
    os.unlink(probe)


@dataclass(frozen=True, eq=True)
class StandardInput(LocalPath):
    """``-``: read as this process's standard input, a stream.  Anything else (an output, a
    file read whole) is the file named ``-``, as it always was."""

    stdin: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", STDIN_NAME)
        object.__setattr__(self, "private", True)

    def __str__(self) -> str:
        return STDIN_NAME

    def info(self) -> Info:
        return Info("stream")  # nothing to find out before it is read

    def isdir(self) -> bool:
        return False

    def isfile(self) -> bool:
        return False

    def open(self, *, exact: bool = False) -> Any:
        return _Borrowed(sys.stdin.buffer)

    def local_path(self, what: str = "file") -> Path:
        raise InputError(f"{self}: a {what} is memory-mapped, and standard input cannot be: save it to a file and pass that")

    def local_set(self, names: Sequence[str], what: str = "file set") -> Path:
        return self.local_path(what)


class RawReader(io.RawIOBase):
    """A raw stream that reads another (`inner`): what standard input's borrowed stream and the
    readers of mnemo/sources.py (decompressors, a pipe with its first bytes served again) share."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Borrowed(RawReader):
    """A stream we read but do not own (standard input): closing it leaves the stream open."""

    def seekable(self) -> bool:
        return bool(self.inner.seekable())

    def tell(self) -> int:
        return int(self.inner.tell())

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self.inner.seek(offset, whence))


# ---- URLs ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=True)
class UrlPath(Location):
    """An fsspec URL (``s3://bucket/key``, ``gs://``, ``hf://``, ``memory://``, ``file://``):
    read by ranged requests, never downloaded whole unless memory-mapped; written by staging
    locally and uploading so that the object appears complete or not at all (mnemo/remote.py).
    `pathlib.Path` cannot hold one (it folds ``s3://b/k`` into ``s3:/b/k``)."""

    url: str
    name: str = field(init=False)
    private: bool = field(init=False)
    #: remote.version_of the object when the run was planned ("": not checked); not part of
    #: what the location is.
    version: str = field(default="", compare=False)

    remote: ClassVar[bool] = True
    FOLDER: ClassVar[str] = "folder (a prefix)"
    FILES: ClassVar[str] = "objects"

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", remote.name_of(self.url))
        object.__setattr__(self, "private", remote.protocol_of(self.url) in remote.IN_PROCESS)

    def __fspath__(self) -> str:
        return self.url

    def sibling(self, name: str) -> Location:
        return UrlPath(remote.sibling(self.url, name))

    def join(self, name: str) -> Location:
        return UrlPath(remote.join(self.url, name))

    # reading

    def info(self) -> Info:
        found = remote.info(self.url)
        if found.get("type") == "directory":
            return Info("directory")
        return Info("file", int(found.get("size") or 0), remote.version_of(found))

    def expecting(self, version: str) -> Location:
        checked = copy.copy(self)
        object.__setattr__(checked, "version", version)
        return checked

    def is_stream(self) -> bool:
        return False  # an object is read by ranges, never once from its start: no request to ask

    def isdir(self) -> bool:
        return remote.isdir(self.url)

    def isfile(self) -> bool:
        return remote.isfile(self.url)

    def open(self, *, exact: bool = False) -> Any:
        return remote.open_read(self.url, exact=exact, version=self.version)

    def read_error(self, exc: BaseException) -> InputError:
        return remote.read_error(self.url, exc)

    def read_bytes(self, limit: int, what: str = "file") -> bytes:
        return remote.read_file(self.url, limit, what)

    def local_path(self, what: str = "file") -> Path:
        """A folder is copied only when it holds SHARD_MANIFEST (a shard directory)."""
        return remote.local_copy(self.url, what, holding=SHARD_MANIFEST)

    def local_set(self, names: Sequence[str], what: str = "file set") -> Path:
        if not self.isfile():
            raise self.read_error(FileNotFoundError(self.url))
        return remote.local_set([remote.sibling(self.url, n) for n in names], what) / self.name

    # writing

    def identity(self) -> object:
        return ("url", self.url.rstrip("/"))

    def check_output(self, inputs: Sequence[tuple[str, PathArg]] = ()) -> None:
        """Also refused: a missing package, an unknown protocol, a key that names a folder
        (prefix), and (object stores) a bucket that does not exist."""
        if any(self.same_as(other) for _, other in inputs):
            raise ConfigError(f"{self}: the output is also an input; writing it would replace the input: choose another output key")
        remote.check_writable(self.url)

    def check_output_folder(self, inputs: Sequence[tuple[str, PathArg]] = (), names: Sequence[str] = ()) -> None:
        """Refused: an object at the folder's URL, and each file's key as check_output refuses
        it (a prefix itself is never missing)."""
        if self.isfile():
            raise ConfigError(f"{self}: is an object, but the output is a folder (prefix) of files: give a folder URL")
        for name in names:
            self.join(name).check_output(inputs)

    def make_folder(self) -> None:
        pass  # a prefix exists once an object is under it

    def write_atomic(self, data: bytes) -> None:
        remote.write_atomic(self.url, data)

    def staging(self) -> Staging:
        return _Upload(self)


class _Upload(Staging):
    """Staging of a URL: files built in a private local folder (remote.Staged), uploaded when
    published."""

    def __init__(self, output: UrlPath) -> None:
        self.staged = remote.Staged(output.url)
        super().__init__(output, self.staged.local)

    def publish(self, files: Sequence[Path], *, remove_first: Sequence[Path] = ()) -> None:
        self.staged.publish(files, remove_first=remove_first)

    def discard(self) -> None:
        self.staged.discard()
