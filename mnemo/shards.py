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
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from mnemo.errors import ConfigError, FingerprintError, FormatError, InputError, MnemoError
from mnemo.fileio import CHECKSUM_KEY, json_checksum, read_file, write_atomic
from mnemo.location import SHARD_MANIFEST, Location, PathArg, location
from mnemo.sources import Task, kind_of
from mnemo.tokfile import TOK_HEADER, Stamp, TokFile, TokHeader, map_tok_file, read_tok_header, verify_tok


MANIFEST_NAME: Final = SHARD_MANIFEST  # location.py: a URL's folder is copied only when it holds one
MANIFEST_FORMAT: Final = "mnemo-shards"
#: Version 2 records each shard's CRC-32 (of its tokens, as its .tok header has it): a shard of
#: another run with the same counts is found (issue 28, item 1).  Version 1 is still read.
MANIFEST_VERSION: Final = 2
MANIFEST_VERSIONS: Final = (1, 2)
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
    crc: int = -1  # CRC-32 of its tokens (the .tok header's data_crc); -1 while not known

    @property
    def task_rows(self) -> list[list[Any]]:
        """The tasks as the manifest stores them, and as runs compare them: what they read,
        not how they were planned (Task.size and .sequential follow from the input itself)."""
        return [[t.path, t.kind, t.start, t.end, t.row_group] for t in self.tasks]


def shard_origin(run: dict[str, Any], shard: Shard) -> int:
    """What a shard's .tok header records of where it comes from (TokHeader.origin): the CRC-32
    of the run's arguments, the shard's name and its tasks.  A resumed run keeps a file under a
    shard's name only when it has this origin: a file copied from another run, or another
    shard's, has another one, even before the manifest records the shard."""
    key = json.dumps([run, shard.name, shard.task_rows], sort_keys=True)
    return zlib.crc32(key.encode("utf-8", "surrogatepass"))


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
                    "crc32": s.crc,
                    "tasks": s.task_rows,
                }
                for s in self.shards
            ],
        }
        doc[CHECKSUM_KEY] = json_checksum(doc)
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
    except RecursionError:  # json.loads recurses once per level: '[' * 100000
        raise bad("not valid JSON (nested too deeply)") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise bad(f"'format' is not {MANIFEST_FORMAT!r}")
    version = doc.get("version")
    if version not in MANIFEST_VERSIONS or isinstance(version, bool):
        raise bad(f"version {version!r} is not supported (this mnemo reads versions 1 and {MANIFEST_VERSION})")

    def field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
        value = obj.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise bad(f"{where}{key!r} is {_short(value)}")
        return value

    complete = field(doc, "complete", bool)
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
                raise bad(f"{where}task {_short(t)} is not [path, kind, start, end, row_group]")
            tasks.append(Task(t[0], t[1], t[2], t[3], t[4]))
        name = field(s, "name", str, where)
        if name != shard_name(i):
            raise bad(f"{where}is named {name!r}, expected {shard_name(i)!r}")
        counts = [field(s, key, int, where) for key in ("documents", "tokens")]
        crc = field(s, "crc32", int, where) if version >= 2 else -1
        if complete and min(counts) < 0 or min(counts) < -1 or crc < -1 or crc >= 1 << 32 or complete and version >= 2 and crc < 0:
            raise bad(f"{where}documents {counts[0]}, tokens {counts[1]}, crc32 {crc} are not the counts of a "
                      f"{'finished' if complete else 'planned'} shard")
        shards.append(Shard(name, tuple(tasks), counts[0], counts[1], crc))
    fingerprint = field(doc, "fingerprint", str)
    try:
        bytes.fromhex(fingerprint)
    except ValueError:
        raise bad(f"fingerprint {fingerprint!r} is not hexadecimal") from None
    run = field(doc, "run", dict)
    inputs = run.get("inputs")
    if not isinstance(inputs, list) or not all(
        isinstance(x, list) and len(x) == 3 and isinstance(x[0], str)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in x[1:])
        for x in inputs
    ):
        raise bad(f"'run': 'inputs' is {_short(inputs)}, not a list of [path, size, mtime_ns]")
    manifest = Manifest(fingerprint, field(doc, "n_vocab", int), field(doc, "chat", bool), run, tuple(shards), complete)
    # the manifest's own totals and the inputs its shards cover: an entry deleted (or
    # "shards": []) would otherwise open as a smaller dataset with no error (issue 28, item 2)
    if complete:
        for key, total in (("documents", manifest.n_docs), ("tokens", manifest.n_tokens)):
            if field(doc, key, int) != total:
                raise bad(f"{key!r} is {doc[key]}, but its shards hold {total} (a shard entry removed or changed?)")
    _check_coverage(manifest, bad)
    # last: the checks above name what an edit broke; this one catches the edits they cannot
    # see (another text field in `run`, a count moved between shards, ...)
    if version >= 2:
        stored, actual = doc.get(CHECKSUM_KEY), json_checksum(doc)
        if stored != actual:
            raise bad(f"{CHECKSUM_KEY!r} is {_short(stored)}, but its content has CRC-32 {actual} (it was edited or damaged)")
    return manifest


def _short(value: object) -> str:
    """A value for an error message, cut to a line (a damaged manifest may hold anything)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_coverage(manifest: Manifest, bad: Any) -> None:
    """The shards' tasks, in order, read each input of `run` (an input given twice: twice) once
    and whole: the whole file in one task, or bytes 0 to its size in contiguous ranges, or row
    groups 0, 1, ...  Only a Parquet file of no row groups makes no task (plan_tasks)."""
    tasks = [t for s in manifest.shards for t in s.tasks]
    j = 0
    for path, size, _ in manifest.run["inputs"]:
        if j >= len(tasks) or tasks[j].path != path:
            if kind_of(path) != "parquet":
                raise bad(f"the shards do not read all the run's inputs ({path!r} is read by none)")
            continue
        first = tasks[j]
        if first.row_group >= 0:
            group = 0
            while j < len(tasks) and tasks[j].path == path and tasks[j].row_group == group:
                j, group = j + 1, group + 1
        elif first.end == -1:
            j += 1
        else:
            at = 0
            while j < len(tasks) and tasks[j].path == path and tasks[j].row_group == -1 and tasks[j].end > tasks[j].start == at:
                at = tasks[j].end
                j += 1
            if at != size:
                raise bad(f"the shards' tasks do not read all of {path!r} once, in order (a shard entry removed or changed?)")
    if j != len(tasks):
        raise bad(f"the shards' task {_short(tasks[j].describe())} is not the next piece of the run's inputs "
                  f"(a shard entry removed or changed?)")


# ---- writing ----------------------------------------------------------------------------------------


def finished_shard(folder: Path, shard: Shard, fingerprint: str, origin: int, recorded: Shard | None = None) -> TokHeader | None:
    """The header of `shard` when its file is complete, whole (every byte under its CRC-32s),
    of this tokenizer and of this shard (`origin`: shard_origin), and holds what the earlier
    run's manifest `recorded` of it, when it did; else None: missing, damaged or another run's
    file, it is written again."""
    path = folder / shard.name
    if not path.is_file():
        return None
    try:
        header = verify_tok(path)
    except (FormatError, InputError):
        return None
    if header.fingerprint != fingerprint or header.origin != origin:
        return None
    if recorded is not None and recorded.n_docs >= 0:
        if (header.n_docs, header.n_tokens, header.data_crc) != (recorded.n_docs, recorded.n_tokens, recorded.crc):
            return None
    return header


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
        if h.n_vocab != manifest.n_vocab or h.chat != manifest.chat:
            raise FormatError(
                f"{path}: a {'chat' if h.chat else 'documents'} file of {h.n_vocab} ids, but {MANIFEST_NAME} says "
                f"{'chat' if manifest.chat else 'documents'} of {manifest.n_vocab} ids: tokenize again"
            )
        if h.fingerprint != manifest.fingerprint or h.n_tokens != s.n_tokens or h.n_docs != s.n_docs:
            raise FormatError(
                f"{path}: holds {h.n_tokens} tokens, {h.n_docs} documents (fingerprint {h.fingerprint}), "
                f"the manifest says {s.n_tokens}, {s.n_docs} ({manifest.fingerprint}): tokenize again"
            )
        # a version 2 manifest's shards are version 2 files: their tokens' CRC and origin too
        # (a shard of another run with the same counts; the tokens themselves are not read here)
        if s.crc >= 0 and (h.version < 2 or h.data_crc != s.crc or h.origin != shard_origin(manifest.run, s)):
            raise FormatError(
                f"{path}: its tokens' CRC-32 0x{h.data_crc:08x} or origin 0x{h.origin:08x} is not what the "
                f"manifest says (0x{s.crc:08x}, 0x{shard_origin(manifest.run, s):08x}): it is another run's "
                f"shard; tokenize again"
            )
        headers.append(h)
    return manifest, headers


def shard_dir_headers(where: Location, fingerprint: str | None = None) -> tuple[Path, Manifest, list[TokHeader]]:
    """shard_headers of the shard directory `where`, and the local folder it is read from: a
    URL's prefix is copied (once its manifest is found: Location.local_path), and an error about
    the copy names the URL, not the temporary folder."""
    folder = where.local_path("shard directory")
    try:
        manifest, headers = shard_headers(folder, fingerprint)
    except MnemoError as exc:
        shown = os.fspath(where).rstrip("/")
        if os.fspath(folder) == shown:
            raise
        raise type(exc)(str(exc).replace(os.fspath(folder), shown)) from None
    return folder, manifest, headers


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
    folder, manifest, headers = shard_dir_headers(where, tokenizer.fingerprint)
    header = combined_header(manifest, headers)
    parts = tuple(shard_arrays(folder, manifest, headers))
    dtype = np.dtype("<u2" if header.width == 2 else "<u4")
    tokens = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    return TokFile(where, header, tokens, parts)
