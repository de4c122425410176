"""Whole files in and out: atomic writes (temporary name, fsync, rename) and bounded reads."""

from __future__ import annotations

import os
from pathlib import Path

from mnemo import remote
from mnemo.errors import FormatError, InputError


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` through a temporary name in the same folder and a rename (a URL:
    an upload that publishes the object only complete, mnemo/remote.py)."""
    if remote.is_url(path):
        remote.write_atomic(path, data)
        return
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
    if remote.is_url(path):
        return remote.read_file(path, limit, what)
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
