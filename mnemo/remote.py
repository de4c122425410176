"""URLs through fsspec: object storage and every other fsspec filesystem (docs/remote.md).

Every path mnemo reads or writes may be an fsspec URL -- ``s3://bucket/key``, ``gs://``,
``hf://``, ``memory://``, ``file://`` -- as well as a local path.  mnemo/location.py tells the
two apart and gives both one interface (`Location`); this module is what its URL kind stands on,
the one importer of fsspec: opening an object for reading, its size and kind, local copies for
memory maps, and writing an output so that it appears under its final key only when complete.
Its functions take URLs as strings.

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
import io
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from mnemo.errors import ConfigError, FormatError, InputError

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


def protocol_of(url: str) -> str:
    return url.split("://", 1)[0].lower()


def name_of(url: str) -> str:
    """The last part of the key: what a file of that name would be called ("" for none)."""
    return url.split("://", 1)[1].rstrip("/").rsplit("/", 1)[-1]


def sibling(url: str, name: str) -> str:
    """The URL of the object `name` next to the one at `url`."""
    head, _, _ = url.rstrip("/").rpartition("/")
    return f"{head}/{name}"


def join(url: str, name: str) -> str:
    """The URL of `name` inside the folder (prefix) `url`."""
    return f"{url.rstrip('/')}/{name}"


#: Filesystems that live in one process's memory: other processes (workers) cannot read them.
IN_PROCESS: Final = ("memory",)


def _fsspec(url: str) -> ModuleType:
    try:
        return importlib.import_module("fsspec")
    except ImportError:
        raise ConfigError(f"{url}: reading and writing URLs needs fsspec: {EXTRA_OF['s3']}") from None


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) of `url`: a ConfigError naming what to install when
    the protocol's package is missing, or when the protocol is unknown."""
    fsspec = _fsspec(url)
    protocol = protocol_of(url)
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError:
        hint = EXTRA_OF.get(protocol, f"install the fsspec implementation of {protocol}://")
        raise ConfigError(f"{url}: reading {protocol}:// URLs needs its fsspec package: {hint}") from None
    except ValueError as exc:
        raise ConfigError(f"{url}: {exc}; use a local path or a URL fsspec knows (s3://, gs://, hf://, memory://, file://)") from None
    return fs, str(path)


NO_CREDENTIALS: Final = (
    'no credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile (docs/remote.md, "Credentials and endpoints")'
)


def _no_credentials(exc: BaseException) -> bool:
    """botocore's NoCredentialsError (through s3fs): no key found anywhere.  Named, not imported:
    botocore is an optional package."""
    return type(exc).__name__ == "NoCredentialsError"


def read_error(u: str, exc: BaseException, doing: str = "read") -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{u}: no such object (or its bucket does not exist); check the URL")
    if isinstance(exc, PermissionError):
        return InputError(f"{u}: access denied ({exc}); check the credentials (docs/remote.md says where they are read from)")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{u}: is a folder (a prefix); pass the objects inside it")
    if _no_credentials(exc):
        return InputError(f"{u}: {NO_CREDENTIALS}")
    if _replaced(exc):
        return changed_error(u, "one version when it was opened", "another")
    return InputError(f"{u}: cannot be {doing} ({type(exc).__name__}: {exc})")


def info(url: str) -> dict[str, Any]:
    """The object's fsspec info (size, type); InputError when it is missing or unreadable."""
    fs, path = filesystem(url)
    try:
        found: dict[str, Any] = fs.info(path)
    except Exception as exc:  # OSError, and the filesystem's own errors (botocore's, aiohttp's)
        raise read_error(url, exc) from None
    return found


def check_file(url: str) -> int:
    """The size of the object at `url`, which must exist and be a file, not a folder."""
    found = info(url)
    if found.get("type") == "directory":
        raise InputError(f"{url}: is a folder (a prefix); pass the objects inside it")
    return int(found.get("size") or 0)


#: The fields of an fsspec `info` that change when an object is replaced: S3's ETag and
#: VersionId, Google Cloud Storage's generation and etag, a local file's mtime.
VERSION_FIELDS: Final = ("ETag", "VersionId", "generation", "etag", "mtime")


def version_of(found: dict[str, Any]) -> str:
    """What identifies this content of an object (its size and VERSION_FIELDS): two infos of
    one object differ in it when the object was replaced in between; "" when the filesystem
    gives none of them."""
    parts = [f"{k}={found[k]}" for k in VERSION_FIELDS if found.get(k) not in (None, "")]
    return " ".join([f"size={found.get('size')}", *parts]) if parts else ""


def changed_error(url: str, planned: str, now: str) -> InputError:
    return InputError(
        f"{url}: the object changed while mnemo read it (it was replaced or rewritten: {planned} when the run "
        f"was planned, {now} now); run again once it is no longer being written"
    )


def _replaced(exc: BaseException) -> bool:
    """Whether a read failed because the object is no longer the one opened: s3fs reads with
    If-Match of the ETag it found at the open, which S3 answers with 412 Precondition Failed
    (s3fs raises it as an OSError), or, checking locally, raises FileExpired."""
    text = str(exc)
    return type(exc).__name__ == "FileExpired" or "PreconditionFailed" in text or "Precondition Failed" in text


class _Reading(io.RawIOBase):
    """An object open for reading (fsspec's file `inner`): its reads and seeks, with a read that
    fails because the object was replaced since it was opened reported as that (changed_error),
    not as a bare OSError that names no file.  Anything else is the inner file's (`cache`...)."""

    def __init__(self, url: str, inner: Any) -> None:
        super().__init__()
        self.url = url
        self.inner = inner

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        try:
            data: bytes = self.inner.read(-1 if size is None else size)
        except Exception as exc:
            if _replaced(exc):
                raise changed_error(self.url, "one version when it was opened", "another") from None
            raise
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        return self.read(-1)

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self.inner.seek(offset, whence))

    def tell(self) -> int:
        return int(self.inner.tell())

    def close(self) -> None:
        if not self.closed:
            self.inner.close()
        super().close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def open_read(url: str, *, exact: bool = False, version: str = "") -> Any:
    """The object as a seekable binary file that fetches READ_BLOCK-byte ranges ahead of what
    is read (fsspec's read-ahead cache: for a stream read in small pieces, as a decompressor
    reads).  `exact`: each read is one request of its own size -- for a few small reads (magic
    bytes, the search for a document boundary at a planned cut) and for a byte-range task read
    in large blocks, where reading ahead would fetch a block past the task's end for each (the
    4 MiB tasks of a tokenize run fetched 12 MiB each).

    `version` (version_of the info found when the run was planned): an object that is no
    longer that one is refused (changed_error), for a byte range planned in one version and
    read in another is garbage; "" checks nothing.  Once open, s3fs reads only the version it
    opened (If-Match), and a read that finds it replaced is that error too."""
    fs, path = filesystem(url)
    try:
        if exact:
            inner = fs.open(path, "rb", block_size=1 << 16, cache_type="none")
        else:
            inner = fs.open(path, "rb", block_size=READ_BLOCK)
    except Exception as exc:
        raise read_error(url, exc) from None
    details = getattr(inner, "details", None)
    if version and isinstance(details, dict):
        now = version_of(details)
        if now and now != version:
            inner.close()
            raise changed_error(url, version, now)
    return _Reading(url, inner)


def read_file(url: str, limit: int, what: str = "file") -> bytes:
    """The whole object, at most `limit` bytes (fileio.read_file's contract for URLs)."""
    with open_read(url) as f:
        try:
            data: bytes = f.read(limit + 1)
        except Exception as exc:
            raise read_error(url, exc) from None
    if len(data) > limit:
        raise FormatError(f"{url}: larger than {limit:,} bytes, the most mnemo reads as a {what}: check that the URL names one")
    return data


# ---- writing ----------------------------------------------------------------------------------


def upload_atomic(local: str | os.PathLike[str], url: str) -> None:
    """Copy the local file to `url` so that the object appears only complete.  The copy runs in
    an fsspec transaction: files opened in one are not published until it ends without an
    exception (S3: the multipart upload is completed -- one atomic step -- only then), and an
    exception discards them (S3: the upload is aborted and its parts deleted; memory://: nothing
    is stored; file://: the temporary file is removed).

    Ctrl-C and SIGTERM take effect between the store's requests, not inside one (`_Signals`):
    interrupted inside a request, fsspec stops waiting for its answer, and when that request
    starts the multipart upload, the answer -- the upload's id, which the abort needs -- is lost
    while the store goes on to create the upload, which was then left behind (billed, with
    nothing to abort it).  A second Ctrl-C stops at once (and may leave it).  A process killed
    outright leaves at most an incomplete multipart upload, never an object (docs/remote.md:
    the bucket rule that cleans those up)."""
    fs, path = filesystem(url)
    with _Signals(url) as signals:
        try:
            with fs.transaction:  # its end (the completion, or the abort) is held too
                out = fs.open(path, "wb", block_size=UPLOAD_BLOCK)
                try:
                    with open(local, "rb") as src:
                        while True:
                            with signals.released():  # a local read: no request in flight
                                block = src.read(UPLOAD_BLOCK)
                            if not block:
                                break
                            out.write(block)  # a part goes up for each UPLOAD_BLOCK written
                    out.close()  # the last part goes up; the transaction's end completes the upload
                    signals.check()  # not completed when interrupted before this point
                except BaseException:
                    _forget(out)
                    raise
        except (InputError, KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except OSError as exc:
            if getattr(exc, "filename", None) == os.fspath(local):  # the staged file, not the store
                raise
            raise _write_error(url, exc) from None
        except Exception as exc:  # the store's own errors (botocore's, aiohttp's)
            raise _write_error(url, exc) from None


def _forget(f: Any) -> None:
    """Mark a file the transaction is about to discard as closed: otherwise its `__del__`, at
    the latest when the interpreter exits, closes it -- flushing a buffer the discard has
    dropped, through an event loop that may be gone -- and Python prints "Exception ignored in
    AbstractBufferedFile.__del__"."""
    try:
        f.closed = True
    except AttributeError:  # a file whose `closed` is read-only (file://): its own close is safe
        pass


class _Signals:
    """SIGINT and SIGTERM during an upload: held while a request to the store is in flight,
    acted on (as the handler before would: Ctrl-C's KeyboardInterrupt, the CLI's SIGTERM
    exception) at the next point between requests -- `released()` -- or at the end.  One that
    arrives while released, or a second one, acts at once.  Only the main thread receives
    signals: elsewhere, and for a signal that is ignored, nothing changes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.previous: dict[int, Any] = {}
        self.caught: list[int] = []
        self.delivered = False
        self.holding = False

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                handler = signal.getsignal(signum)
                if handler not in (signal.SIG_IGN, None):
                    self.previous[signum] = handler
                    signal.signal(signum, self._catch)
        self.holding = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.holding = False
        self._restore()
        if exc_type is None and self.caught and not self.delivered:
            # it came while the completion was in flight: the object is published, the run stops
            self.delivered = True
            self._act(self.caught[0], None)

    def check(self) -> None:
        """A point between requests: act on a signal held during the last one."""
        if self.caught and not self.delivered:
            self.delivered = True
            self._act(self.caught[0], None)

    @contextmanager
    def released(self) -> Iterator[None]:
        """A block that sends no request (a local read): signals act at once in it."""
        self.check()
        self.holding = False
        try:
            yield
        finally:
            self.holding = True

    def _catch(self, signum: int, frame: Any) -> None:
        if not self.holding or self.caught:  # between requests, or the second: the user will not wait
            self._act(signum, frame)
            return
        self.caught.append(signum)
        print(
            f"mnemo: stopping once the store answers, to abort the upload of {self.url} "
            f"(press Ctrl-C again to stop now, which can leave an incomplete multipart upload)",
            file=sys.stderr,
            flush=True,
        )

    def _act(self, signum: int, frame: Any) -> None:
        handler = self.previous.get(signum, signal.getsignal(signum))
        if callable(handler):
            handler(signum, frame)
        elif handler == signal.SIG_DFL:
            self._restore()
            os.kill(os.getpid(), signum)  # its default action: the process ends

    def _restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous = {}


def _write_error(u: str, exc: BaseException) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{u}: cannot be written: its bucket or folder does not exist; check the URL")
    if isinstance(exc, PermissionError):
        return InputError(f"{u}: cannot be written: access denied ({exc}); check the credentials (docs/remote.md)")
    if _no_credentials(exc):
        return InputError(f"{u}: cannot be written: {NO_CREDENTIALS}")
    return InputError(f"{u}: cannot be written ({type(exc).__name__}: {exc})")


def write_atomic(url: str, data: bytes) -> None:
    """fileio.write_atomic for a URL: the object appears complete or not at all."""
    staged = Staged(url)
    try:
        with open(staged.local, "wb") as f:
            f.write(data)
        staged.publish([staged.local])
    finally:
        staged.discard()


def remove(url: str) -> None:
    """Delete the object when it exists (an old key about to be replaced)."""
    fs, path = filesystem(url)
    try:
        if fs.exists(path):
            fs.rm_file(path)
    except Exception as exc:
        raise _write_error(url, exc) from None


class Staged:
    """A local stand-in for an output URL: a private temporary folder in which writers build
    their files under the URL's names (`local`, and names next to it), then `publish` uploads
    them in the order given -- the key part of a set last -- and `discard` removes the folder.
    Costs local disk space equal to the output (in TMPDIR)."""

    def __init__(self, url: str) -> None:
        self.url = url
        if not name_of(url):
            raise ConfigError(f"{url}: names no object; give the output a key (such as {url.rstrip('/')}/NAME)")
        filesystem(url)  # a missing package or an unknown protocol: now, before any work
        self.folder = Path(tempfile.mkdtemp(prefix="mnemo-upload-"))
        self.local = self.folder / name_of(url)

    def url_of(self, local: Path) -> str:
        return sibling(self.url, local.name)

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


def check_writable(url: str) -> None:
    """ConfigError, before any work starts, when an output URL cannot be written: a missing
    package, an unknown protocol, a key that names a folder (prefix), or (object stores) a
    bucket that does not exist."""
    fs, path = filesystem(url)
    key = url.rstrip("/")
    if not name_of(url):
        raise ConfigError(f"{url}: names no object; give the output a key (such as {key}/NAME)")
    try:
        if fs.isdir(path):
            raise ConfigError(f"{url}: is a folder (a prefix); give the output a key (such as {key}/NAME)")
        bucket = path.split("/", 1)[0]
        if protocol_of(url) in ("s3", "s3a", "gs", "gcs") and not fs.exists(bucket):
            raise ConfigError(f"{url}: the bucket {bucket!r} does not exist (or is not visible with these credentials); create it or check the URL")
    except ConfigError:
        raise
    except Exception as exc:
        if _no_credentials(exc):
            raise ConfigError(f"{url}: {NO_CREDENTIALS}") from None
        raise ConfigError(f"{url}: cannot be checked for writing ({type(exc).__name__}: {exc}); check the URL and the credentials") from None


# ---- folders and local copies -----------------------------------------------------------------


def isdir(url: str) -> bool:
    """Whether `url` is a folder (a prefix with objects under it); False when nothing is there."""
    fs, path = filesystem(url)
    try:
        return bool(fs.isdir(path))
    except Exception as exc:
        raise read_error(url, exc) from None


def isfile(url: str) -> bool:
    """Whether an object (not a prefix) is at `url`."""
    fs, path = filesystem(url)
    try:
        return bool(fs.isfile(path))
    except Exception as exc:
        raise read_error(url, exc) from None


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


def local_copy(url: str, what: str = "file", holding: str = "") -> Path:
    """A local copy of the object (or folder) at `url`, for readers that need a local file: a
    memory map (.tok files, the training stacks' files).  The bounded local cache of
    docs/remote.md: each URL is downloaded once per process, streamed in UPLOAD_BLOCK pieces,
    into a private folder in TMPDIR that is removed when the process exits; a copy that would
    leave less than COPY_RESERVE bytes free there is refused before anything is downloaded.

    `holding`: a folder is copied only when it holds an object of that name (a shard
    directory's manifest), looked for first: a prefix of anything else is an InputError naming
    the URL, before anything is listed or downloaded."""
    u = url
    key = url.rstrip("/")
    if key in _copies and _copies[key].exists():
        return _copies[key]
    fs, path = filesystem(u)
    try:
        found = fs.info(path)
        if found.get("type") == "directory":
            if holding and not fs.isfile(f"{str(path).rstrip('/')}/{holding}"):
                raise InputError(f"{key}: no {holding} under this prefix: not a mnemo {what}; check the URL")
            files = {str(p): int(i.get("size") or 0) for p, i in fs.find(path, detail=True).items()}
        else:
            files = {str(path): int(found.get("size") or 0)}
    except InputError:
        raise
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
    top = Path(folder) / (name_of(u) or "root")
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


def local_set(urls: Sequence[str], what: str = "file set") -> Path:
    """Local copies of the objects at `urls` that exist, side by side in one folder of the
    local cache (a file set read by names next to each other: Megatron's .bin + .idx, datatrove's
    .ds + .index, a sidecar), under their own names; the folder is returned.  The objects must
    share one folder (prefix).  Each set is downloaded once per process, as `local_copy`."""
    us = list(urls)
    key = "\n".join(us)
    if key in _copies and _copies[key].exists():
        return _copies[key]
    present = [u for u in us if isfile(u)]
    need = sum(check_file(u) for u in present)
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
                with fs.open(path, "rb", block_size=UPLOAD_BLOCK) as src, open(folder / name_of(u), "wb") as dst:
                    while block := src.read(UPLOAD_BLOCK):
                        dst.write(block)
            except OSError as exc:
                if getattr(exc, "filename", None) == str(folder / name_of(u)):
                    raise  # the local disk, not the store: main() names the file
                raise read_error(u, exc) from None
            except Exception as exc:
                raise read_error(u, exc) from None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _copies[key] = folder
    return folder
