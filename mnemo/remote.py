"""Paths that are URLs: object storage and every other fsspec filesystem (docs/remote.md).

Every path mnemo reads or writes may be an fsspec URL -- ``s3://bucket/key``, ``gs://``,
``hf://``, ``memory://``, ``file://`` -- as well as a local path.  This module is the one place
that knows about them: recognising a URL, opening one for reading, the size and kind of an
object, and writing an output so that it appears under its final key only when complete.

Reading streams: `open_read` returns fsspec's buffered file, which fetches ranged blocks as it is
read or seeked, so a corpus is never downloaded whole first, and the byte-range tasks of
mnemo/sources.py read only their own range.

Writing is staged: a writer builds its files in a private local folder (`Staged`), under the
names the URL gives them, exactly as it builds local files; `Staged.publish` then uploads each one
with `upload_atomic`.  An object store shows an object only once its upload completes (a single
PUT, or the completion of a multipart upload), and a failed or interrupted upload is aborted:
no object ever appears under a final key with part of its content.  (The writers cannot stream
straight to the store: a .tok header, written last, holds the token count.)

fsspec (and s3fs for ``s3://``, gcsfs for ``gs://``, huggingface_hub for ``hf://``) are optional:
``pip install 'mnemo[remote]'`` installs fsspec and s3fs.  Credentials, endpoints and other
options are found by those libraries' own rules (for S3: the AWS variables and files, as the
AWS CLI finds them), or set once through ``fsspec.config.conf``.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from mnemo.errors import ConfigError, InputError

#: `scheme://`: a scheme of at least two characters, so that a Windows drive (`C:`) is a path.
_URL: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")

#: What to install for the filesystems whose package fsspec does not bring.
EXTRA_OF: Final = {
    "s3": "pip install 'mnemo[remote]' (fsspec and s3fs)",
    "s3a": "pip install 'mnemo[remote]' (fsspec and s3fs)",
    "gs": "pip install gcsfs",
    "gcs": "pip install gcsfs",
    "hf": "pip install huggingface_hub",
    "az": "pip install adlfs",
    "abfs": "pip install adlfs",
}

#: Bytes fetched per ranged read of a remote file: the size of sources.py's reads, so that one
#: request serves one block of a task.
READ_BLOCK: Final = 8 << 20

#: Bytes per part of an upload: 8 MiB, above S3's 5 MiB minimum for every part but the last.
UPLOAD_BLOCK: Final = 8 << 20


def is_url(path: object) -> bool:
    """Whether `path` (a str or os.PathLike) is a URL (`scheme://...`) rather than a local path."""
    if isinstance(path, Url):
        return True
    if not isinstance(path, (str, os.PathLike)):
        return False
    name = os.fspath(path)
    return isinstance(name, str) and _URL.match(name) is not None


@dataclass(frozen=True)
class Url:
    """An input or output that is a URL.  `pathlib.Path` cannot hold one (it folds `s3://b/k`
    into `s3:/b/k`), so mnemo carries URLs as this and local files as Paths."""

    url: str

    @property
    def protocol(self) -> str:
        return self.url.split("://", 1)[0].lower()

    @property
    def name(self) -> str:
        """The last part of the key: what a file of that name would be called."""
        return self.url.split("://", 1)[1].rstrip("/").rsplit("/", 1)[-1]

    def with_name(self, name: str) -> Url:
        """The URL of the object `name` next to this one."""
        head, _, _ = self.url.rstrip("/").rpartition("/")
        return Url(f"{head}/{name}")

    def __str__(self) -> str:
        return self.url


#: Filesystems that live in one process's memory: other processes (workers) cannot read them.
IN_PROCESS: Final = ("memory",)


def in_process(url: str | os.PathLike[str] | Url) -> bool:
    """Whether only this process can read `url` (memory://): its tasks are read here, never by
    a worker, which would find an empty filesystem of its own."""
    return as_url(url).protocol in IN_PROCESS


def as_url(path: str | os.PathLike[str] | Url) -> Url:
    return path if isinstance(path, Url) else Url(os.fspath(path))


def _fsspec(url: str) -> ModuleType:
    try:
        return importlib.import_module("fsspec")
    except ImportError:
        raise ConfigError(f"{url}: reading and writing URLs needs fsspec: {EXTRA_OF['s3']}") from None


def filesystem(url: str | os.PathLike[str] | Url) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) of `url`: a ConfigError naming what to install when
    the protocol's package is missing, or when the protocol is unknown."""
    u = as_url(url)
    fsspec = _fsspec(u.url)
    try:
        fs, path = fsspec.core.url_to_fs(u.url)
    except ImportError:
        hint = EXTRA_OF.get(u.protocol, f"install the fsspec implementation of {u.protocol}://")
        raise ConfigError(f"{u}: reading {u.protocol}:// URLs needs its fsspec package: {hint}") from None
    except ValueError as exc:
        raise ConfigError(f"{u}: {exc}; use a local path or a URL fsspec knows (s3://, gs://, hf://, memory://, file://)") from None
    return fs, str(path)


NO_CREDENTIALS: Final = (
    'no credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile (docs/remote.md, "Credentials and endpoints")'
)


def _no_credentials(exc: BaseException) -> bool:
    """botocore's NoCredentialsError (through s3fs): no key found anywhere.  Named, not imported:
    botocore is an optional package."""
    return type(exc).__name__ == "NoCredentialsError"


def read_error(u: Url, exc: BaseException, doing: str = "read") -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{u}: no such object (or its bucket does not exist); check the URL")
    if isinstance(exc, PermissionError):
        return InputError(f"{u}: access denied ({exc}); check the credentials (docs/remote.md says where they are read from)")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{u}: is a folder (a prefix); pass the objects inside it")
    if _no_credentials(exc):
        return InputError(f"{u}: {NO_CREDENTIALS}")
    return InputError(f"{u}: cannot be {doing} ({type(exc).__name__}: {exc})")


def info(url: str | os.PathLike[str] | Url) -> dict[str, Any]:
    """The object's fsspec info (size, type); InputError when it is missing or unreadable."""
    u = as_url(url)
    fs, path = filesystem(u)
    try:
        found: dict[str, Any] = fs.info(path)
    except Exception as exc:  # OSError, and the filesystem's own errors (botocore's, aiohttp's)
        raise read_error(u, exc) from None
    return found


def check_file(url: str | os.PathLike[str] | Url) -> int:
    """The size of the object at `url`, which must exist and be a file, not a folder."""
    found = info(url)
    if found.get("type") == "directory":
        raise InputError(f"{url}: is a folder (a prefix); pass the objects inside it")
    return int(found.get("size") or 0)


def size(url: str | os.PathLike[str] | Url) -> int:
    return int(info(url).get("size") or 0)


def open_read(url: str | os.PathLike[str] | Url, *, exact: bool = False) -> Any:
    """The object as a seekable binary file that fetches READ_BLOCK-byte ranges ahead of what
    is read (fsspec's read-ahead cache: for a stream read in small pieces, as a decompressor
    reads).  `exact`: each read is one request of its own size -- for a few small reads (magic
    bytes, the search for a document boundary at a planned cut) and for a byte-range task read
    in large blocks, where reading ahead would fetch a block past the task's end for each (the
    4 MiB tasks of a tokenize run fetched 12 MiB each)."""
    u = as_url(url)
    fs, path = filesystem(u)
    try:
        if exact:
            return fs.open(path, "rb", block_size=1 << 16, cache_type="none")
        return fs.open(path, "rb", block_size=READ_BLOCK)
    except Exception as exc:
        raise read_error(u, exc) from None


def read_file(url: str | os.PathLike[str] | Url, limit: int, what: str = "file") -> bytes:
    """The whole object, at most `limit` bytes (fileio.read_file's contract for URLs)."""
    from mnemo.errors import FormatError

    u = as_url(url)
    with open_read(u) as f:
        try:
            data: bytes = f.read(limit + 1)
        except Exception as exc:
            raise read_error(u, exc) from None
    if len(data) > limit:
        raise FormatError(f"{u}: larger than {limit:,} bytes, the most mnemo reads as a {what}: check that the URL names one")
    return data


# ---- writing ----------------------------------------------------------------------------------


def upload_atomic(local: str | os.PathLike[str], url: str | os.PathLike[str] | Url) -> None:
    """Copy the local file to `url` so that the object appears only complete.  The copy runs in
    an fsspec transaction: files opened in one are not published until it ends without an
    exception (S3: the multipart upload is completed -- one atomic step -- only then), and an
    exception, Ctrl-C included, discards them (S3: the upload is aborted and its parts deleted;
    memory://: nothing is stored; file://: the temporary file is removed).  A process killed
    outright leaves at most an incomplete multipart upload, never an object (docs/remote.md:
    the bucket rule that cleans those up)."""
    u = as_url(url)
    fs, path = filesystem(u)
    try:
        with fs.transaction:
            out = fs.open(path, "wb", block_size=UPLOAD_BLOCK)
            with open(local, "rb") as src:
                while block := src.read(UPLOAD_BLOCK):
                    out.write(block)
            out.close()  # the last part goes up; the transaction's end completes the upload
    except (InputError, KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except OSError as exc:
        if getattr(exc, "filename", None) == os.fspath(local):  # the staged file, not the store
            raise
        raise _write_error(u, exc) from None
    except Exception as exc:  # the store's own errors (botocore's, aiohttp's)
        raise _write_error(u, exc) from None


def _write_error(u: Url, exc: BaseException) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{u}: cannot be written: its bucket or folder does not exist; check the URL")
    if isinstance(exc, PermissionError):
        return InputError(f"{u}: cannot be written: access denied ({exc}); check the credentials (docs/remote.md)")
    if _no_credentials(exc):
        return InputError(f"{u}: cannot be written: {NO_CREDENTIALS}")
    return InputError(f"{u}: cannot be written ({type(exc).__name__}: {exc})")


def write_atomic(url: str | os.PathLike[str] | Url, data: bytes) -> None:
    """fileio.write_atomic for a URL: the object appears complete or not at all."""
    staged = Staged(url)
    try:
        with open(staged.local, "wb") as f:
            f.write(data)
        staged.publish([staged.local])
    finally:
        staged.discard()


def remove(url: str | os.PathLike[str] | Url) -> None:
    """Delete the object when it exists (an old key about to be replaced)."""
    fs, path = filesystem(url)
    try:
        if fs.exists(path):
            fs.rm_file(path)
    except Exception as exc:
        raise _write_error(as_url(url), exc) from None


class Staged:
    """A local stand-in for an output URL: a private temporary folder in which writers build
    their files under the URL's names (`local`, and names next to it), then `publish` uploads
    them in the order given -- the key part of a set last -- and `discard` removes the folder.
    Costs local disk space equal to the output (in TMPDIR)."""

    def __init__(self, url: str | os.PathLike[str] | Url) -> None:
        self.url = as_url(url)
        if not self.url.name:
            raise ConfigError(f"{self.url}: names no object; give the output a key (such as {self.url.url.rstrip('/')}/NAME)")
        filesystem(self.url)  # a missing package or an unknown protocol: now, before any work
        self.folder = Path(tempfile.mkdtemp(prefix="mnemo-upload-"))
        self.local = self.folder / self.url.name

    def url_of(self, local: Path) -> Url:
        return self.url.with_name(local.name)

    def publish(self, files: Sequence[Path], *, remove_first: Sequence[Path] = ()) -> None:
        """Upload `files` (in this folder) next to the URL, in order, each atomically.  The
        objects of `remove_first` go first: an old key, so that no reader pairs the old key with
        new parts."""
        for old in remove_first:
            remove(self.url_of(old))
        for f in files:
            upload_atomic(f, self.url_of(f))

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def check_output(url: str | os.PathLike[str] | Url, inputs: Sequence[str | os.PathLike[str] | Url] = ()) -> None:
    """ConfigError, before any work starts, when an output URL cannot be written: one of the
    `inputs` (the upload at the end would replace it), a missing package, an unknown protocol,
    a key that names a folder (prefix), or (object stores) a bucket that does not exist."""
    u = as_url(url)
    for other in inputs:
        if is_url(other) and as_url(other).url.rstrip("/") == u.url.rstrip("/"):
            raise ConfigError(f"{u}: the output is also an input; writing it would replace the input: choose another output key")
    fs, path = filesystem(u)
    if not u.name:
        raise ConfigError(f"{u}: names no object; give the output a key (such as {u.url.rstrip('/')}/NAME)")
    try:
        if fs.isdir(path):
            raise ConfigError(f"{u}: is a folder (a prefix); give the output a key (such as {u.url.rstrip('/')}/NAME)")
        bucket = path.split("/", 1)[0]
        if u.protocol in ("s3", "s3a", "gs", "gcs") and not fs.exists(bucket):
            raise ConfigError(f"{u}: the bucket {bucket!r} does not exist (or is not visible with these credentials); create it or check the URL")
    except ConfigError:
        raise
    except Exception as exc:
        if _no_credentials(exc):
            raise ConfigError(f"{u}: {NO_CREDENTIALS}") from None
        raise ConfigError(f"{u}: cannot be checked for writing ({type(exc).__name__}: {exc}); check the URL and the credentials") from None


# ---- folders and local copies -----------------------------------------------------------------


def join(url: str | os.PathLike[str] | Url, name: str) -> Url:
    """The URL of `name` inside the folder (prefix) `url`."""
    return Url(f"{as_url(url).url.rstrip('/')}/{name}")


def isdir(url: str | os.PathLike[str] | Url) -> bool:
    """Whether `url` is a folder (a prefix with objects under it); False when nothing is there."""
    u = as_url(url)
    fs, path = filesystem(u)
    try:
        return bool(fs.isdir(path))
    except Exception as exc:
        raise read_error(u, exc) from None


def isfile(url: str | os.PathLike[str] | Url) -> bool:
    """Whether an object (not a prefix) is at `url`."""
    u = as_url(url)
    fs, path = filesystem(u)
    try:
        return bool(fs.isfile(path))
    except Exception as exc:
        raise read_error(u, exc) from None


#: Room left free in TMPDIR after a local copy: a copy that would leave less is refused.
COPY_RESERVE: Final = 256 << 20

_copies: dict[str, Path] = {}
_copy_root: list[Path] = []


def _copy_folder() -> Path:
    """This process's private folder of local copies, removed when the process exits."""
    if not _copy_root:
        import atexit

        root = Path(tempfile.mkdtemp(prefix="mnemo-copies-"))
        owner = os.getpid()
        # a forked worker inherits the hook: only the process that made the folder removes it
        atexit.register(lambda: shutil.rmtree(root, ignore_errors=True) if os.getpid() == owner else None)
        _copy_root.append(root)
    return _copy_root[0]


def local_copy(url: str | os.PathLike[str] | Url, what: str = "file") -> Path:
    """A local copy of the object (or folder) at `url`, for readers that need a local file: a
    memory map (.tok files, the training stacks' files).  The bounded local cache of
    docs/remote.md: each URL is downloaded once per process, streamed in UPLOAD_BLOCK pieces,
    into a private folder in TMPDIR that is removed when the process exits; a copy that would
    leave less than COPY_RESERVE bytes free there is refused before anything is downloaded."""
    u = as_url(url)
    key = u.url.rstrip("/")
    if key in _copies and _copies[key].exists():
        return _copies[key]
    fs, path = filesystem(u)
    try:
        found = fs.info(path)
        if found.get("type") == "directory":
            files = {str(p): int(i.get("size") or 0) for p, i in fs.find(path, detail=True).items()}
        else:
            files = {str(path): int(found.get("size") or 0)}
    except Exception as exc:
        raise read_error(u, exc) from None
    folder = Path(tempfile.mkdtemp(prefix="copy-", dir=_copy_folder()))
    need = sum(files.values())
    free = shutil.disk_usage(folder).free
    if need + COPY_RESERVE > free:
        shutil.rmtree(folder, ignore_errors=True)
        raise InputError(
            f"{u}: a {what} at a URL is read from a local copy, and its {need:,} bytes do not fit in {folder.parent.parent} "
            f"({free:,} bytes free, {COPY_RESERVE:,} kept free): set TMPDIR to a larger disk, or copy it yourself and pass the copy"
        )
    top = Path(folder) / (u.name or "root")
    base = str(path).rstrip("/")
    target = top
    try:
        for remote_path in sorted(files):
            rel = remote_path[len(base):].lstrip("/") if found.get("type") == "directory" else ""
            target = top / rel if rel else top
            target.parent.mkdir(parents=True, exist_ok=True)
            with fs.open(remote_path, "rb", block_size=UPLOAD_BLOCK) as src, open(target, "wb") as dst:
                while block := src.read(UPLOAD_BLOCK):
                    dst.write(block)
        if found.get("type") == "directory":
            top.mkdir(parents=True, exist_ok=True)  # an empty folder
    except BaseException as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM, exit
            raise
        if isinstance(exc, OSError) and getattr(exc, "filename", None) in (str(target), str(target.parent)):
            raise  # the local disk, not the store: main() names the file
        raise read_error(u, exc) from None
    _copies[key] = top
    return top


def local_set(urls: Sequence[str | os.PathLike[str] | Url], what: str = "file set") -> Path:
    """Local copies of the objects at `urls` that exist, side by side in one folder of the
    local cache (a file set read by names next to each other: Megatron's .bin + .idx, datatrove's
    .ds + .index, a sidecar), under their own names; the folder is returned.  The objects must
    share one folder (prefix).  Each set is downloaded once per process, as `local_copy`."""
    us = [as_url(u) for u in urls]
    key = "\n".join(u.url for u in us)
    if key in _copies and _copies[key].exists():
        return _copies[key]
    present = [u for u in us if isfile(u)]
    need = sum(size(u) for u in present)
    folder = Path(tempfile.mkdtemp(prefix="set-", dir=_copy_folder()))
    free = shutil.disk_usage(folder).free
    if need + COPY_RESERVE > free:
        shutil.rmtree(folder, ignore_errors=True)
        raise InputError(
            f"{us[0]}: a {what} at a URL is read from a local copy, and its {need:,} bytes do not fit in {folder.parent.parent} "
            f"({free:,} bytes free, {COPY_RESERVE:,} kept free): set TMPDIR to a larger disk, or copy it yourself and pass the copy"
        )
    try:
        for u in present:
            fs, path = filesystem(u)
            try:
                with fs.open(path, "rb", block_size=UPLOAD_BLOCK) as src, open(folder / u.name, "wb") as dst:
                    while block := src.read(UPLOAD_BLOCK):
                        dst.write(block)
            except OSError as exc:
                if getattr(exc, "filename", None) == str(folder / u.name):
                    raise  # the local disk, not the store: main() names the file
                raise read_error(u, exc) from None
            except Exception as exc:
                raise read_error(u, exc) from None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _copies[key] = folder
    return folder
