"""Whole files in and out, at any location (mnemo/location.py): atomic writes and bounded reads."""

from __future__ import annotations

from mnemo.location import PathArg, location


def write_atomic(path: PathArg, data: bytes) -> None:
    """Write `data` to `path` so that it appears complete or not at all: through a temporary
    name in the same folder and a rename (a URL: an upload that publishes the object only
    complete, mnemo/remote.py)."""
    location(path).write_atomic(data)


def read_file(path: PathArg, limit: int, what: str = "file") -> bytes:
    """The whole file, which must be at most `limit` bytes: at most limit + 1 bytes are read, so
    /dev/zero, a FIFO or a huge file costs that much and no more.  A larger file is a
    FormatError naming the file and the bound."""
    return location(path).read_bytes(limit, what)
