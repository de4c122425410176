"""Whole files in and out, at any location (mnemo/location.py): atomic writes and bounded reads,
and the checksum mnemo's JSON files (a shard manifest, a stack file's sidecar) carry."""

from __future__ import annotations

import json
import zlib
from typing import Any, Final

from mnemo.location import PathArg, location

#: The key of a JSON file's own checksum (json_checksum).
CHECKSUM_KEY: Final = "checksum"


def json_checksum(doc: dict[str, Any]) -> int:
    """The CRC-32 of a JSON object's members other than CHECKSUM_KEY, serialized canonically
    (sorted keys, no spaces, ASCII): what a writer stores under CHECKSUM_KEY and a reader
    recomputes from what it parsed, so that every byte of the file's content is under a checksum
    however it is indented (issue 28, item 3)."""
    rest = {k: v for k, v in doc.items() if k != CHECKSUM_KEY}
    return zlib.crc32(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode("ascii"))


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
