"""A shard directory: a dataset tokenized as many .tok files (one per task of a cluster run) and a
manifest (layout in docs/token-files.md, "Shard directories").

Why shards: on a cluster every task writes its own file where it runs, so no token crosses the
network to the driver, and a task Ray retries rewrites one shard, never a shared file.  Each shard
is a complete .tok written through a temporary name and a rename (TokWriter), so a shard under its
final name is always whole; a run started again with the same arguments keeps those and redoes
the rest.  The manifest (JSON, no pickle) says which inputs made the run, what each shard holds
and the tokenizer's fingerprint; readers take the shards in its order, which is the input order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from mnemo.errors import ConfigError, FingerprintError, FormatError, InputError
from mnemo.fileio import read_file, write_atomic
from mnemo.location import PathArg, location
from mnemo.sources import Task
from mnemo.tokfile import TOK_HEADER, Stamp, TokFile, TokHeader, map_tok_file, read_tok_header


MANIFEST_NAME: Final = "manifest.json"
MANIFEST_FORMAT: Final = "mnemo-shards"
MANIFEST_VERSION: Final = 1
#: A manifest lists every shard and every input; 256 MB is millions of shards.
MAX_MANIFEST_BYTES: Final = 256 << 20
#: Documents encoded at a time inside a shard task (the .tok writer's unit of work).


def shard_name(index: int) -> str:
    return f"shard-{index:06d}.tok"


@dataclass(frozen=True)
class Shard:
    """One shard: its file name, the input pieces it encodes (in order), and -- once written --
    its documents and tokens (-1 while not known)."""

    name: str
    tasks: tuple[Task, ...]
    n_docs: int = -1
    n_tokens: int = -1


@dataclass(frozen=True)
class Manifest:
    """What a shard directory holds.  `run` is every argument that decides the shards' bytes
    (inputs with their sizes and modification times, the text field, separators, chat, shard
    size): a second run with an equal `run` may keep the shards the first one finished."""

    fingerprint: str
    n_vocab: int
    chat: bool
    run: dict[str, Any]
    shards: tuple[Shard, ...]
    complete: bool

    @property
    def n_docs(self) -> int:
        return sum(max(s.n_docs, 0) for s in self.shards)

    @property
    def n_tokens(self) -> int:
        return sum(max(s.n_tokens, 0) for s in self.shards)

    def to_json(self) -> bytes:
        doc = {
            "format": MANIFEST_FORMAT,
            "version": MANIFEST_VERSION,
            "complete": self.complete,
            "fingerprint": self.fingerprint,
            "n_vocab": self.n_vocab,
            "chat": self.chat,
            "documents": self.n_docs,
            "tokens": self.n_tokens,
            "run": self.run,
            "shards": [
                {
                    "name": s.name,
                    "documents": s.n_docs,
                    "tokens": s.n_tokens,
                    "tasks": [[t.path, t.kind, t.start, t.end, t.row_group] for t in s.tasks],
                }
                for s in self.shards
            ],
        }
        return (json.dumps(doc, indent=1) + "\n").encode("utf-8")


def write_manifest(folder: str | os.PathLike[str], manifest: Manifest) -> None:
    write_atomic(Path(folder) / MANIFEST_NAME, manifest.to_json())


def is_shard_dir(path: str | os.PathLike[str]) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST_NAME).is_file()


def read_manifest(folder: str | os.PathLike[str]) -> Manifest:
    """The manifest of a shard directory, every field checked: FormatError naming the file and
    the field when it is damaged."""
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise InputError(f"{folder}: no {MANIFEST_NAME}: not a mnemo shard directory (made by `mnemo tokenize --ray`)")
    raw = read_file(path, MAX_MANIFEST_BYTES, "shard manifest")

    def bad(what: str) -> FormatError:
        return FormatError(f"{path}: {what}; the manifest is damaged: tokenize again into an empty directory")

    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise bad(f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise bad(f"'format' is not {MANIFEST_FORMAT!r}")
    if doc.get("version") != MANIFEST_VERSION:
        raise bad(f"version {doc.get('version')!r} is not supported (this mnemo reads version {MANIFEST_VERSION})")

    def field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
        value = obj.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise bad(f"{where}{key!r} is {value!r}")
        return value

    shards: list[Shard] = []
    for i, s in enumerate(field(doc, "shards", list)):
        where = f"shard {i}: "
        if not isinstance(s, dict):
            raise bad(f"shard {i} is not an object")
        tasks = []
        for t in field(s, "tasks", list, where):
            if (
                not isinstance(t, list)
                or len(t) != 5
                or not isinstance(t[0], str)
                or not isinstance(t[1], str)
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in t[2:])
            ):
                raise bad(f"{where}task {t!r} is not [path, kind, start, end, row_group]")
            tasks.append(Task(t[0], t[1], t[2], t[3], t[4]))
        name = field(s, "name", str, where)
        if name != shard_name(i):
            raise bad(f"{where}is named {name!r}, expected {shard_name(i)!r}")
        shards.append(Shard(name, tuple(tasks), field(s, "documents", int, where), field(s, "tokens", int, where)))
    fingerprint = field(doc, "fingerprint", str)
    try:
        bytes.fromhex(fingerprint)
    except ValueError:
        raise bad(f"fingerprint {fingerprint!r} is not hexadecimal") from None
    return Manifest(
        fingerprint,
        field(doc, "n_vocab", int),
        field(doc, "chat", bool),
        field(doc, "run", dict),
        tuple(shards),
        field(doc, "complete", bool),
    )


# ---- writing ----------------------------------------------------------------------------------------


def finished_shard(folder: Path, shard: Shard, fingerprint: str) -> TokHeader | None:
    """The header of `shard` when its file is complete and of this tokenizer, else None (missing,
    or left damaged by something other than mnemo: it is written again)."""
    path = folder / shard.name
    if not path.is_file():
        return None
    try:
        header = read_tok_header(path)
    except (FormatError, InputError):
        return None
    return header if header.fingerprint == fingerprint else None


def remove_temporaries(folder: Path) -> None:
    """Remove what killed tasks left: `.shard-*.tok.tmp-PID` (never a file under a final name)."""
    for leftover in folder.glob(".shard-*.tok.tmp-*"):
        leftover.unlink(missing_ok=True)


# ---- reading -----------------------------------------------------------------------------------------


def shard_headers(folder: str | os.PathLike[str], fingerprint: str | None = None) -> tuple[Manifest, list[TokHeader]]:
    """The manifest and every shard's header, checked against each other: a run that did not
    finish, a missing shard or one that disagrees with the manifest is an error naming it."""
    manifest = read_manifest(folder)
    if not manifest.complete:
        raise InputError(
            f"{folder}: the tokenize run that writes this shard directory has not finished (or was "
            f"stopped): run the same `mnemo tokenize --ray` command again to complete it"
        )
    if fingerprint is not None and manifest.fingerprint != fingerprint:
        raise FingerprintError(
            f"{folder} was made by the tokenizer with fingerprint {manifest.fingerprint}, not by this one "
            f"({fingerprint}): open it with the tokenizer.bin that wrote it"
        )
    headers: list[TokHeader] = []
    for s in manifest.shards:
        path = Path(folder) / s.name
        if not path.is_file():
            raise InputError(f"{path}: missing; the shard directory is incomplete: tokenize again")
        h = read_tok_header(path)
        if h.fingerprint != manifest.fingerprint or h.n_tokens != s.n_tokens or h.n_docs != s.n_docs:
            raise FormatError(
                f"{path}: holds {h.n_tokens} tokens, {h.n_docs} documents (fingerprint {h.fingerprint}), "
                f"the manifest says {s.n_tokens}, {s.n_docs} ({manifest.fingerprint}): tokenize again"
            )
        headers.append(h)
    return manifest, headers


def combined_header(manifest: Manifest, headers: Sequence[TokHeader]) -> TokHeader:
    """One header for the whole directory, as a single .tok of the same run would have it."""
    if headers:
        width, flags = headers[0].width, headers[0].flags
        if any(h.width != width or h.flags != flags for h in headers):
            raise ConfigError("the shards disagree on token width or flags; tokenize again")
    else:
        from mnemo.tokfile import TOK_FLAG_CHAT, TOK_FLAG_MASKED, tok_width

        width = tok_width(manifest.n_vocab, manifest.chat)
        flags = (TOK_FLAG_CHAT | TOK_FLAG_MASKED) if manifest.chat else 0
    return TokHeader(width, flags, manifest.n_tokens, manifest.n_docs, manifest.fingerprint, manifest.n_vocab)


def shard_arrays(
    folder: str | os.PathLike[str], manifest: Manifest, headers: Sequence[TokHeader]
) -> list[npt.NDArray[np.unsignedinteger]]:
    """Every shard's tokens, memory-mapped, in input order."""

    arrays: list[npt.NDArray[np.unsignedinteger]] = []
    for s, h in zip(manifest.shards, headers):
        dtype = np.dtype("<u2" if h.width == 2 else "<u4")
        if h.n_tokens == 0:
            arrays.append(np.zeros(0, dtype=dtype))
        else:
            arrays.append(np.memmap(Path(folder) / s.name, dtype=dtype, mode="r", offset=TOK_HEADER.size, shape=(h.n_tokens,)))
    return arrays


def open_tok(path: PathArg, tokenizer: Stamp) -> TokFile:
    """mnemo.open_tok: a .tok file (tokfile.map_tok_file) or a shard directory of `mnemo
    tokenize --ray`, read as one file in input order (`parts`: one memory-mapped array per
    shard).  At a URL, a file's header is read first and a directory is read from a local copy."""
    where = location(path)
    if not where.isdir():
        return map_tok_file(where, tokenizer)
    folder = where.local_path("shard directory")
    manifest, headers = shard_headers(folder, tokenizer.fingerprint)
    header = combined_header(manifest, headers)
    parts = tuple(shard_arrays(folder, manifest, headers))
    dtype = np.dtype("<u2" if header.width == 2 else "<u4")
    tokens = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    return TokFile(where, header, tokens, parts)
