"""Token files of the training stacks: Megatron-LM, datatrove and nanoGPT.

`mnemo tokenize --format megatron|datatrove|nanogpt` writes the files these stacks read, next to
what mnemo's own .tok would hold; the layouts, the sources they were read from and the choices
made are in docs/token-files.md.  Each format has a writer with TokWriter's interface (a context
manager, `write(ids, n_docs)`, `write_doc(ids)`) and a reader (`read_megatron`,
`read_datatrove`, `read_nanogpt`) that gives the ids and the document boundaries back.

Atomic like TokWriter: every part of a set is written under a temporary name in the output's
folder and renamed only when the whole set is complete, the part by which the stack finds the
set (its "key": Megatron's .idx, datatrove's .ds, nanoGPT's .bin) last, after an old key of the
same name was removed -- so at no moment do new parts sit beside an old key as a set.

None of these formats has a place for mnemo's tokenizer fingerprint, so each set gets a small
JSON sidecar `NAME.mnemo.json` (fingerprint, vocabulary size, separators, counts); the stacks
ignore it and mnemo's readers check it against the files when it is there.
"""

from __future__ import annotations

import json
import math
import os
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Final, Protocol

import numpy as np
import numpy.typing as npt

from mnemo.errors import ConfigError, FormatError, InputError
from mnemo.fileio import CHECKSUM_KEY, json_checksum
from mnemo.constants import VOCAB16, maskbit_for
from mnemo.location import Location, PathArg, location
from mnemo.tokfile import Stamp, TokWriter


class WriterTokenizer(Stamp, Protocol):
    """What the writers need of the tokenizer (a Tokenizer, or a tokenizer.json pipeline):
    its stamp, and its special tokens for the separators."""

    @property
    def special_tokens(self) -> Mapping[str, int]: ...


FORMATS: Final = ("tok", "megatron", "datatrove", "nanogpt")
SIDECAR_SUFFIX: Final = ".mnemo.json"
SIDECAR_KIND: Final = "mnemo token-file sidecar"
SIDECAR_VERSION: Final = 1

# Megatron-LM megatron/core/datasets/indexed_dataset.py: the .idx header, its dtype codes, and
# the vocabulary size below which its tools choose uint16 (DType.optimal_dtype: < 65500).
MEGATRON_MAGIC: Final = b"MMIDIDX\x00\x00"
MEGATRON_HEADER: Final = struct.Struct("<9sQBQQ")  # magic, version 1, dtype code, sequences, documents
MEGATRON_DTYPES: Final = {1: "u1", 2: "i1", 3: "<i2", 4: "<i4", 5: "<i8", 6: "<f8", 7: "<f4", 8: "<u2"}
MEGATRON_UINT16: Final = 8
MEGATRON_INT32: Final = 4
MEGATRON_UINT16_BELOW: Final = 65500
INT32_MAX: Final = (1 << 31) - 1


# ---- names ------------------------------------------------------------------------------------------


def _strip(path: Path, suffixes: tuple[str, ...]) -> Path:
    for suffix in suffixes:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


def megatron_prefix(output: str | os.PathLike[str]) -> Path:
    """The prefix of a Megatron set: OUT.bin and OUT.idx (a given .bin/.idx/.mnemo.json is cut off)."""
    return _strip(Path(output), (SIDECAR_SUFFIX, ".bin", ".idx"))


def datatrove_name(output: str | os.PathLike[str]) -> Path:
    """The .ds file of a datatrove set: OUT itself when it ends with .ds (a given .ds.index,
    .ds.loss, .ds.metadata is cut back to it), else OUT.ds -- datatrove finds its files by the
    .ds suffix."""
    path = _strip(Path(output), (".index", ".loss", ".metadata", SIDECAR_SUFFIX))
    return path if path.name.endswith(".ds") else path.with_name(path.name + ".ds")


def output_locations(fmt: str, output: PathArg, chat: bool = False) -> list[Location]:
    """Where a tokenize run writes, the key part last: output_paths next to `output`, which may
    be a URL."""
    where = location(output)
    if fmt == "tok":
        return [where]
    return [where.sibling(p.name) for p in output_paths(fmt, where.name, chat)]


def output_paths(fmt: str, output: str | os.PathLike[str], chat: bool = False) -> list[Path]:
    """The final names a tokenize run writes, the key part last (see the module docstring)."""
    check_format_name(fmt)
    if fmt == "tok":
        return [Path(output)]
    if fmt == "megatron":
        prefix = megatron_prefix(output)
        return [_with(prefix, SIDECAR_SUFFIX), _with(prefix, ".bin"), _with(prefix, ".idx")]
    if fmt == "datatrove":
        ds = datatrove_name(output)
        loss = [_with(ds, ".loss")] if chat else []
        return [_with(ds, SIDECAR_SUFFIX), _with(ds, ".index"), *loss, _with(ds, ".metadata"), ds]
    path = Path(output)
    return [_with(path, SIDECAR_SUFFIX), path]


def _with(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def check_format_name(fmt: object) -> None:
    if fmt not in FORMATS:
        raise ConfigError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")


# ---- document boundaries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Separators:
    """How the documents of a flat block of ids are told apart, and what the file keeps.

    `bos` / `eos`: the ids before / after each document in the file.  `marker`: an id the
    encoder puts before each document only so that the writer can find the boundaries, removed
    before writing (for a format with boundaries when the caller chose no separator).  In a
    block of whole documents, none of these ids occurs inside a document: documents are encoded
    as plain text and chats refuse special-token text."""

    bos: int | None = None
    eos: int | None = None
    marker: int | None = None

    @property
    def encode_bos(self) -> int | None:
        return self.marker if self.marker is not None else self.bos

    def lengths(self, ids: npt.NDArray[np.integer], n_docs: int, where: str) -> npt.NDArray[np.int64]:
        """The length of each of the `n_docs` documents of `ids` (with the marker)."""
        size = int(ids.size)
        if n_docs < 0:
            raise ConfigError(f"n_docs must be >= 0, got {n_docs}")
        if n_docs == 0:
            if size:
                raise InputError(f"{where}: {size} tokens were written as 0 documents")
            return np.zeros(0, dtype=np.int64)
        if n_docs == 1 and self.marker is None:
            return np.array([size], dtype=np.int64)
        start = self.encode_bos
        if start is not None:
            found = np.flatnonzero(ids == start)
            if self.marker is None and self.eos == start:
                found = found[0::2]  # the same token opens and closes each document
            if len(found) == n_docs and found[0] == 0:
                return np.diff(np.append(found, size)).astype(np.int64)
            token = start
        elif self.eos is not None:
            found = np.flatnonzero(ids == self.eos) + 1
            if len(found) == n_docs and found[-1] == size:
                return np.diff(found, prepend=0).astype(np.int64)
            token = self.eos
        else:
            raise ConfigError(
                f"{where}: {n_docs} documents were written in one block with no separator token to "
                f"tell them apart; write them one at a time (write_doc), or give bos/eos"
            )
        raise InputError(
            f"{where}: a block of {n_docs} documents holds {len(found)} separator tokens {token} "
            f"where each document should have one at its {'start' if start is not None else 'end'}"
        )


def separators_for(fmt: str, tokenizer: WriterTokenizer, chat: bool, bos: int | None, eos: int | None) -> Separators:
    """What a writer of `fmt` needs to find documents in tokenize_files' blocks.  Chats start
    with <|bos|> (the chat template).  Documents with no separator at all get a marker when the
    format keeps boundaries: the first special token, encoded before each document and removed."""
    if chat:
        return Separators(bos=tokenizer.special_tokens.get("<|bos|>"))
    if bos is not None or eos is not None or fmt in ("tok", "nanogpt"):
        return Separators(bos=bos, eos=eos)
    if not tokenizer.special_tokens:
        raise ConfigError(
            f"--format {fmt} keeps where each document ends, but with no separator token and a "
            f"vocabulary without special tokens mnemo cannot find the boundaries in a block: give "
            f"--bos/--eos, or use --format tok or nanogpt"
        )
    return Separators(marker=min(tokenizer.special_tokens.values()))


# ---- writers ------------------------------------------------------------------------------------------


class _Part:
    """One file of a set: written under `.NAME.tmp-PID` in the final folder, renamed at the end."""

    def __init__(self, final: Path) -> None:
        self.final = final
        self.tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
        self.file: BinaryIO = open(self.tmp, "wb")

    def write(self, data: bytes | memoryview) -> None:
        self.file.write(data)

    def finish(self) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()

    def checksum(self) -> int:
        """The CRC-32 of what is written so far (read back: a header may have been written over
        its placeholder)."""
        self.file.flush()
        crc = 0
        with open(self.tmp, "rb") as f:
            while block := f.read(1 << 22):
                crc = zlib.crc32(block, crc)
        return crc

    def discard(self) -> None:
        self.file.close()
        self.tmp.unlink(missing_ok=True)


class StackWriter:
    """The shared half of the writers: parts under temporary names, ids checked, chats split
    into ids and mask, and the commit (renames, key last).  Subclasses write the parts."""

    format: str = ""

    def __init__(
        self,
        output: str | os.PathLike[str],
        *,
        n_vocab: int,
        fingerprint: str | None = None,
        separators: Separators | None = None,
        chat: bool = False,
    ) -> None:
        if n_vocab < 1:
            raise ConfigError(f"n_vocab must be >= 1, got {n_vocab}")
        self.output = output
        # a URL: the set is built in a local staging folder, then uploaded part by part
        self.staged = location(output).staging()
        self.paths = output_paths(self.format, self.staged.local, chat)
        self.n_vocab = n_vocab
        self.fingerprint = fingerprint
        self.separators = separators or Separators()
        self.chat = chat
        self.n_tokens = 0
        self.n_docs = 0
        self.parts: list[_Part] = []
        self.index: _Part | None = None  # the part that says where documents end, if any
        self.dtype = np.dtype("<u2")
        # chat ids carry the vocabulary's mask bit (bit 15, or bit 31 from 32,768 ids: chat.py)
        self.maskbit = maskbit_for(n_vocab)

    @property
    def where(self) -> str:
        return str(self.staged.final(self.paths[-1]))

    def __enter__(self) -> StackWriter:
        try:
            self._open()
        except BaseException:
            self._discard()
            raise
        return self

    def _open(self) -> None:
        raise NotImplementedError

    def _part(self, final: Path) -> _Part:
        try:
            part = _Part(final)
        except OSError as exc:
            raise InputError(f"cannot write {final}: {exc.strerror or exc}") from None
        self.parts.append(part)
        return part

    def write(self, ids: Any, n_docs: int = 0) -> None:
        """Append whole documents: `ids` holds `n_docs` of them, each with its separators (and
        the mask bit on what the model learns in a chat)."""
        if not self.parts:
            raise ConfigError("use the writer in a with block")
        arr = np.asarray(ids)
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"ids must be integers, got an array of {arr.dtype}")
        arr = arr.reshape(-1).astype(np.int64, copy=False)
        mask: npt.NDArray[np.bool_] | None = None
        if self.chat:
            mask = (arr & self.maskbit) != 0
            arr = arr & ~self.maskbit
        if arr.size:
            low, high = int(arr.min()), int(arr.max())
            if low < 0 or high >= self.n_vocab:
                bad = low if low < 0 else high
                raise InputError(f"{self.where}: token id {bad} is not an id of a {self.n_vocab}-id vocabulary")
        lengths = self._lengths(arr, n_docs)
        marker = self.separators.marker
        if marker is None:
            # the sidecar will say every document starts with bos / ends with eos, and the
            # readers check it: ids that do not are the caller's, refused here
            wrong = separator_mismatch(arr, np.cumsum(lengths), self.separators.bos, self.separators.eos)
            if wrong is not None:
                i, key, _, _ = wrong
                raise InputError(
                    f"{self.where}: document {i} of {len(lengths)} written here does not "
                    f"{'start' if key == 'bos' else 'end'} with the {key} token {getattr(self.separators, key)} "
                    f"this set was opened with: add it to each document, or open the writer without it"
                )
        if marker is not None and arr.size:
            keep = arr != marker
            arr = arr[keep]
            if mask is not None:
                mask = mask[keep]
            lengths = lengths - 1
        self._write(arr, mask, lengths)
        self.n_tokens += int(arr.size)
        self.n_docs += n_docs

    def _lengths(self, arr: npt.NDArray[np.int64], n_docs: int) -> npt.NDArray[np.int64]:
        return self.separators.lengths(arr, n_docs, self.where)

    def write_doc(self, ids: Any) -> None:
        """Append one document."""
        self.write(ids, 1)

    def _write(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_] | None, lengths: npt.NDArray[np.int64]) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        """Write what is known only at the end (headers, indexes) into the parts."""

    def sidecar(self) -> dict[str, Any]:
        """The sidecar's fields; `index_crc32` (the CRC-32 of the whole index file, Megatron's
        .idx or datatrove's .ds.index) only in formats with an index, once it is complete."""
        side: dict[str, Any] = {
            "kind": SIDECAR_KIND,
            "version": SIDECAR_VERSION,
            "format": self.format,
            "fingerprint": self.fingerprint,
            "n_vocab": self.n_vocab,
            "dtype": self.dtype.name,
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "bos": self.separators.bos,
            "eos": self.separators.eos,
            "chat": self.chat,
        }
        if self.index is not None:
            side["index_crc32"] = self.index.checksum()
        side[CHECKSUM_KEY] = json_checksum(side)
        return side

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is not None:
            self._discard()
            return
        try:
            self._close()
            side = self._part(self.paths[0])
            side.write(json.dumps(self.sidecar(), indent=1).encode() + b"\n")
            for part in self.parts:
                part.finish()
            self._commit()
            # the key part last, as the renames; the old key goes first
            self.staged.publish(self.paths, remove_first=[self.paths[-1]])
        except BaseException:
            self._discard()
            raise
        finally:
            self.staged.discard()

    def _commit(self) -> None:
        """Rename every part, the key last.  The old key goes first: from then on no reader
        takes the folder's files for a complete set until the new key appears.  A failed rename
        removes the parts renamed before it."""
        by_name = {p.final: p for p in self.parts}
        order = [by_name[path] for path in self.paths]
        key = order[-1].final
        done: list[Path] = []
        try:
            for old in (key, *self._stale()):
                if old.is_file() or old.is_symlink():
                    old.unlink()
            for part in order:
                os.replace(part.tmp, part.final)
                done.append(part.final)
        except OSError as exc:
            for path in done:
                path.unlink(missing_ok=True)
            raise InputError(f"cannot write {exc.filename or key}: {exc.strerror or exc}") from None
        except BaseException:
            for path in done:
                path.unlink(missing_ok=True)
            raise
        self.parts = []

    def _stale(self) -> list[Path]:
        """Parts an older set of the same name may have that this one has not (removed with
        the old key, so that no reader pairs them with the new files)."""
        return []

    def _discard(self) -> None:
        for part in self.parts:
            part.discard()
        self.parts = []


class MegatronWriter(StackWriter):
    """Megatron-LM's indexed dataset (MMapIndexedDataset): PREFIX.bin + PREFIX.idx, one sequence
    per non-empty document, as Megatron's tools/preprocess_data.py writes them (an empty
    document is a document of no sequence).  uint16 (code 8) below 65,500 ids, else int32 (4)."""

    format = "megatron"

    def __init__(self, output: str | os.PathLike[str], *, n_vocab: int, fingerprint: str | None = None,
                 separators: Separators | None = None, chat: bool = False) -> None:
        if chat:
            raise ConfigError(
                "Megatron's .bin/.idx has no place for a loss mask: write chats with --format tok or "
                "--format datatrove (its .ds.loss keeps the mask)"
            )
        super().__init__(output, n_vocab=n_vocab, fingerprint=fingerprint, separators=separators)
        self.code = MEGATRON_UINT16 if n_vocab < MEGATRON_UINT16_BELOW else MEGATRON_INT32
        self.dtype = np.dtype(MEGATRON_DTYPES[self.code])
        self.n_sequences = 0
        self.byte_offset = 0

    def _open(self) -> None:
        self.bin = self._part(self.paths[1])
        self.idx = self.index = self._part(self.paths[2])
        self.idx.write(b"\0" * MEGATRON_HEADER.size)  # filled in at the end
        # the .idx holds lengths, then pointers, then document indices: the last two wait in
        # scratch parts of their own (removed, never renamed) and are appended at the end
        self.pointers = self._part(_with(self.paths[2], ".pointers"))
        self.doc_index = self._part(_with(self.paths[2], ".documents"))
        self.doc_index.write(np.zeros(1, dtype="<i8").tobytes())

    def _write(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_] | None, lengths: npt.NDArray[np.int64]) -> None:
        if lengths.size and int(lengths.max()) > INT32_MAX:
            raise InputError(f"{self.where}: a document of {int(lengths.max())} tokens; Megatron's lengths are int32")
        self.bin.write(ids.astype(self.dtype).tobytes())
        seq = lengths[lengths > 0]
        ends = np.cumsum(seq * self.dtype.itemsize)
        self.idx.write(seq.astype("<i4").tobytes())
        self.pointers.write((self.byte_offset + ends - seq * self.dtype.itemsize).astype("<i8").tobytes())
        self.doc_index.write((self.n_sequences + np.cumsum(lengths > 0)).astype("<i8").tobytes())
        self.byte_offset += int(ends[-1]) if seq.size else 0
        self.n_sequences += int(seq.size)

    def _close(self) -> None:
        for scratch in (self.pointers, self.doc_index):
            scratch.finish()
            with open(scratch.tmp, "rb") as f:
                while chunk := f.read(1 << 22):
                    self.idx.write(chunk)
            scratch.tmp.unlink()
            self.parts.remove(scratch)
        self.idx.file.seek(0)
        self.idx.write(MEGATRON_HEADER.pack(MEGATRON_MAGIC, 1, self.code, self.n_sequences, self.n_docs + 1))


class DatatroveWriter(StackWriter):
    """datatrove's tokenized files (pipeline/tokens/tokenizer.py, TokenizedFile): NAME.ds (the
    tokens, uint16, or uint32 above 65,536 ids), NAME.ds.index (uint64 end of each document, in
    tokens), NAME.ds.loss for chats (one byte a token, 1 = trained on) and NAME.ds.metadata
    ('name|token size', the token count, the count for humans)."""

    format = "datatrove"

    def __init__(self, output: str | os.PathLike[str], *, n_vocab: int, fingerprint: str | None = None,
                 separators: Separators | None = None, chat: bool = False) -> None:
        super().__init__(output, n_vocab=n_vocab, fingerprint=fingerprint, separators=separators, chat=chat)
        self.dtype = np.dtype("<u2" if n_vocab <= VOCAB16 else "<u4")

    def _open(self) -> None:
        names = self.paths
        self.ds_index = self.index = self._part(names[1])
        self.loss = self._part(names[2]) if self.chat else None
        self.metadata = self._part(names[-2])
        self.ds = self._part(names[-1])

    def _write(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_] | None, lengths: npt.NDArray[np.int64]) -> None:
        self.ds.write(ids.astype(self.dtype).tobytes())
        self.ds_index.write((self.n_tokens + np.cumsum(lengths)).astype("<u8").tobytes())
        if self.loss is not None and mask is not None:
            self.loss.write(mask.astype(np.uint8).tobytes())

    def _stale(self) -> list[Path]:
        return [] if self.chat else [_with(self.paths[-1], ".loss")]

    def _close(self) -> None:
        name = f"mnemo-{self.fingerprint}" if self.fingerprint else "mnemo"
        text = f"{name}|{self.dtype.itemsize}\n{self.n_tokens}\n{metric(self.n_tokens, 'T')}"
        self.metadata.write(text.encode())


class NanoGPTWriter(StackWriter):
    """nanoGPT's flat token file (data/*/prepare.py): uint16 ids one after the other, no header,
    no index: documents are told apart by their separator token only (GPT-2's <|endoftext|>)."""

    format = "nanogpt"

    def __init__(self, output: str | os.PathLike[str], *, n_vocab: int, fingerprint: str | None = None,
                 separators: Separators | None = None, chat: bool = False) -> None:
        if chat:
            raise ConfigError(
                "nanoGPT's .bin is ids only, with no place for a loss mask: write chats with --format tok "
                "or --format datatrove (its .ds.loss keeps the mask)"
            )
        if n_vocab > VOCAB16:
            raise ConfigError(f"nanoGPT's .bin holds uint16 ids; a vocabulary of {n_vocab} ids does not fit: use --format datatrove or megatron")
        super().__init__(output, n_vocab=n_vocab, fingerprint=fingerprint, separators=separators)

    def _open(self) -> None:
        self.bin = self._part(self.paths[1])

    def _lengths(self, arr: npt.NDArray[np.int64], n_docs: int) -> npt.NDArray[np.int64]:
        return np.zeros(0, dtype=np.int64)  # the file keeps no boundaries

    def _write(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_] | None, lengths: npt.NDArray[np.int64]) -> None:
        self.bin.write(ids.astype(self.dtype).tobytes())


WRITERS: Final[dict[str, type[StackWriter]]] = {"megatron": MegatronWriter, "datatrove": DatatroveWriter, "nanogpt": NanoGPTWriter}


def open_writer(
    fmt: str, output: str | os.PathLike[str], tokenizer: WriterTokenizer, *, chat: bool, bos: int | None, eos: int | None
) -> tuple[TokWriter | StackWriter, int | None, int | None]:
    """The writer of `fmt` for tokenize_files, and the (bos, eos) ids to encode documents with
    (a marker instead of none when the format needs to find the boundaries).  Format errors
    (chats in a format without masks, ...) come from here, before any work starts."""
    check_format_name(fmt)
    if fmt == "tok":
        return TokWriter(output, tokenizer, chat=chat), bos, eos
    seps = separators_for(fmt, tokenizer, chat, bos, eos)
    writer = WRITERS[fmt](output, n_vocab=tokenizer.n_vocab, fingerprint=tokenizer.fingerprint, separators=seps, chat=chat)
    if chat:
        return writer, bos, eos
    return writer, seps.encode_bos, seps.eos


def metric(value: int, unit: str) -> str:
    """A count with a metric prefix and 3 significant digits ('1.23 kT'): the third line of
    datatrove's .ds.metadata, which it writes with humanize.metric."""
    exponent = int(math.floor(math.log10(abs(value)))) if value else 0
    digits = max(0, 2 - exponent % 3)
    if round(abs(value) / 10 ** (exponent // 3 * 3), digits) >= 10 ** (exponent % 3 + 1):  # 999,999: 1.00 M, not 1000 k
        exponent += 1
        digits = max(0, 2 - exponent % 3)
    scaled = value / 10 ** (exponent // 3 * 3)
    prefix = "kMGTPEZYRQ"[exponent // 3 - 1] if exponent >= 3 else ""
    return f"{scaled:.{digits}f} {prefix}{unit}"


# ---- readers ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StackFile:
    """A training stack's token file set, read and checked: its ids (memory-mapped), where
    each document ends (exclusive token offsets; None where the file does not say), the loss
    mask (1 = trained on; datatrove chats), and mnemo's sidecar when there is one."""

    format: str
    paths: tuple[Path, ...]
    tokens: npt.NDArray[np.integer]
    doc_ends: npt.NDArray[np.int64] | None
    loss_mask: npt.NDArray[np.uint8] | None
    sidecar: dict[str, Any] | None

    @property
    def n_docs(self) -> int | None:
        return None if self.doc_ends is None else int(self.doc_ends.size)

    def documents(self) -> list[npt.NDArray[np.integer]]:
        """Each document's ids (ConfigError when the file does not say where documents end)."""
        if self.doc_ends is None:
            raise ConfigError(f"{self.paths[-1]}: the file does not say where its documents end")
        starts = np.concatenate([[0], self.doc_ends[:-1]]).astype(np.int64)
        return [self.tokens[int(a) : int(b)] for a, b in zip(starts, self.doc_ends)]


def _map(path: Path, dtype: str | np.dtype[Any], count: int, offset: int = 0) -> npt.NDArray[Any]:
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """mnemo's sidecar of a set (its name), or None when there is none; each field it has is
    of its type (FormatError naming the file and the field otherwise)."""
    if not path.exists():
        return None
    try:
        data = json.loads(_read(path))
    except ValueError as exc:
        raise FormatError(f"{path}: not valid JSON ({exc}); delete it or write the files again") from None
    except RecursionError:  # json.loads recurses once per level: '[' * 100000
        raise FormatError(f"{path}: not valid JSON (nested too deeply); delete it or write the files again") from None
    if not isinstance(data, dict) or data.get("kind") != SIDECAR_KIND:
        raise FormatError(f"{path}: not a mnemo sidecar (no \"kind\": {SIDECAR_KIND!r})")
    if data.get("version") != SIDECAR_VERSION:
        raise FormatError(f"{path}: sidecar version {str(data.get('version'))[:40]!r} is not supported (this mnemo reads {SIDECAR_VERSION})")
    for key in ("n_vocab", "n_tokens", "n_docs", "bos", "eos"):
        value = data.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise FormatError(f"{path}: {key!r} is {str(value)[:40]!r}, not a count or an id; delete it or write the files again")
    crc = data.get("index_crc32")
    if crc is not None and (not isinstance(crc, int) or isinstance(crc, bool) or not 0 <= crc < 1 << 32):
        raise FormatError(f"{path}: 'index_crc32' is {str(crc)[:40]!r}, not a CRC-32; delete it or write the files again")
    dtype = data.get("dtype")
    if dtype is not None and dtype not in SIDECAR_DTYPES:
        raise FormatError(f"{path}: 'dtype' is {str(dtype)[:40]!r}, not one of {', '.join(SIDECAR_DTYPES)}")
    # optional (mnemo before it wrote none): every field under a checksum, the fingerprint
    # included, which no file of the set can check
    if CHECKSUM_KEY in data and data[CHECKSUM_KEY] != json_checksum(data):
        raise FormatError(
            f"{path}: {CHECKSUM_KEY!r} is {repr(data[CHECKSUM_KEY])[:40]}, but its content has CRC-32 "
            f"{json_checksum(data)} (it was edited or damaged); delete it or write the files again"
        )
    return data


#: The token types mnemo's writers use, by numpy's name (the sidecar's "dtype").
SIDECAR_DTYPES: Final = ("uint16", "uint32", "int32")


def _check_dtype(side: dict[str, Any] | None, where: Path, dtype: np.dtype[Any], index: str) -> None:
    """The token type the files say (`index`: where) against the one the sidecar `where` says."""
    said = None if side is None else side.get("dtype")
    if said is not None and said != dtype.name:
        raise FormatError(
            f"{index}: holds {dtype.name} tokens, but {where} says {said}: the file is damaged "
            f"(or the sidecar belongs to other files); write the set again"
        )


def _check_sidecar(
    side: dict[str, Any] | None,
    where: Path,
    tokens: npt.NDArray[np.integer],
    doc_ends: npt.NDArray[np.int64] | None,
    index: str,
    index_bytes: bytes | None = None,
) -> None:
    """The files against mnemo's sidecar `where`, which says what was written: the token type,
    the counts, and the separator each document starts (bos) or ends (eos) with -- so a changed
    dtype code or a moved boundary in `index` (the file that says them) is an error, not other
    ids or other documents (issue 28, item 5)."""
    if side is None:
        return
    _check_dtype(side, where, tokens.dtype, index)
    n_docs = None if doc_ends is None else int(doc_ends.size)
    for key, actual in (("n_tokens", int(tokens.size)), ("n_docs", n_docs)):
        if actual is not None and side.get(key) != actual:
            raise FormatError(
                f"{where}: says {key} {side.get(key)!r}, but the files hold {actual}: it belongs to "
                f"other files (written again by another tool?); delete it or write the set again"
            )
    if doc_ends is not None and doc_ends.size:
        _check_separators(side, where, tokens, doc_ends, index)
    # last: the checks above name what moved; this one catches what they cannot see (a set
    # without separators, a changed byte that moves nothing)
    crc = side.get("index_crc32")
    if crc is not None and index_bytes is not None and zlib.crc32(index_bytes) != crc:
        raise FormatError(
            f"{index}: its CRC-32 is 0x{zlib.crc32(index_bytes):08x}, but {where} says 0x{crc:08x}: the index "
            f"is damaged (or the sidecar belongs to other files); write the set again"
        )


def _check_separators(
    side: dict[str, Any], where: Path, tokens: npt.NDArray[np.integer], doc_ends: npt.NDArray[np.int64], index: str
) -> None:
    """Every document `doc_ends` delimits starts with the sidecar's bos and ends with its eos,
    where it names them."""
    wrong = separator_mismatch(tokens, doc_ends, side.get("bos"), side.get("eos"))
    if wrong is not None:
        i, key, start, end = wrong
        raise FormatError(
            f"{index}: document {i} (tokens {start} to {end}) does not {'start' if key == 'bos' else 'end'} "
            f"with {key} {side.get(key)}, as {where} says every document does: the index is damaged; write the set again"
        )


def separator_mismatch(
    tokens: npt.NDArray[np.integer], doc_ends: npt.NDArray[np.int64], bos: int | None, eos: int | None
) -> tuple[int, str, int, int] | None:
    """The first document (index, "bos" or "eos", its start and end) of those `doc_ends`
    delimits in `tokens` that does not start with `bos` or end with `eos` (each when not None),
    or None.  The writers check what they are given by this, and the readers what they read."""
    if not doc_ends.size:
        return None
    starts = np.concatenate([[0], doc_ends[:-1]]).astype(np.int64)
    empty = doc_ends <= starts
    for key, sep, at in (("bos", bos, starts), ("eos", eos, doc_ends - 1)):
        if sep is None:
            continue
        ok = ~empty  # an empty document has no separator
        ok[ok] = tokens[at[ok]] == sep
        wrong = np.flatnonzero(~ok)
        if wrong.size:
            i = int(wrong[0])
            return i, key, int(starts[i]), int(doc_ends[i])
    return None


def read_megatron(path: str | os.PathLike[str]) -> StackFile:
    """Megatron's PREFIX.bin + PREFIX.idx (PATH may be either file or the prefix), checked
    against each other: sequence pointers, document indices and the .bin size."""
    prefix = megatron_prefix(path)
    idx_path, bin_path = _with(prefix, ".idx"), _with(prefix, ".bin")
    data = _read(idx_path)

    def fail(offset: int, what: str) -> FormatError:
        return FormatError(f"{idx_path}: offset {offset}: {what}")

    if len(data) < MEGATRON_HEADER.size:
        raise fail(len(data), f"truncated: {len(data)} bytes, the header alone needs {MEGATRON_HEADER.size}")
    magic, version, code, n_seq, n_doc = MEGATRON_HEADER.unpack_from(data)
    if magic != MEGATRON_MAGIC:
        raise fail(0, f"bad magic {magic!r} (expected {MEGATRON_MAGIC!r}): not a Megatron .idx")
    if version != 1:
        raise fail(9, f"version {version} is not supported (Megatron writes 1)")
    if code not in MEGATRON_DTYPES or code in (6, 7):
        raise fail(17, f"dtype code {code} is not an integer type of Megatron's DType (1-5, 8)")
    dtype = np.dtype(MEGATRON_DTYPES[code])
    at = MEGATRON_HEADER.size
    expected = at + 12 * n_seq + 8 * n_doc
    if len(data) not in (expected, expected + n_seq):  # + n_seq: a multimodal set's modes
        raise fail(min(len(data), expected), f"the header announces {n_seq} sequences and {n_doc} document indices "
                   f"({expected} bytes), the file has {len(data)}: it is truncated or damaged")
    lengths = np.frombuffer(data, "<i4", n_seq, at).astype(np.int64)
    pointers = np.frombuffer(data, "<i8", n_seq, at + 4 * n_seq)
    doc_index = np.frombuffer(data, "<i8", n_doc, at + 12 * n_seq)
    if n_seq and int(lengths.min()) < 0:
        raise fail(at + 4 * int(np.argmin(lengths)), "a negative sequence length")
    starts = np.concatenate([[0], np.cumsum(lengths)])
    bad = np.flatnonzero(pointers != starts[:-1] * dtype.itemsize)
    if bad.size:
        raise fail(at + 4 * n_seq + 8 * int(bad[0]), f"sequence {int(bad[0])}'s pointer {int(pointers[bad[0]])} is not "
                   f"where the lengths before it end ({int(starts[bad[0]]) * dtype.itemsize})")
    if n_doc < 1 or doc_index[0] != 0 or doc_index[-1] != n_seq or (n_doc > 1 and int(np.diff(doc_index).min()) < 0):
        raise fail(at + 12 * n_seq, f"the document indices must rise from 0 to the {n_seq} sequences")
    n_tokens = int(starts[-1])
    size = _size(bin_path)
    if size != n_tokens * dtype.itemsize:
        raise FormatError(f"{bin_path}: {size} bytes, but {idx_path} announces {n_tokens} tokens of {dtype.itemsize} bytes: "
                          f"it is truncated or belongs to another index")
    doc_ends = starts[doc_index[1:]].astype(np.int64)
    side = read_sidecar(_with(prefix, SIDECAR_SUFFIX))
    tokens = _map(bin_path, dtype, n_tokens)
    _check_sidecar(side, _with(prefix, SIDECAR_SUFFIX), tokens, doc_ends, str(idx_path), data)
    return StackFile("megatron", (bin_path, idx_path), tokens, doc_ends, None, side)


def read_datatrove(path: str | os.PathLike[str]) -> StackFile:
    """datatrove's NAME.ds with its .ds.index (document ends), .ds.loss (mask) and .ds.metadata
    (token size) when present.  The token size is the metadata's, else the sidecar's, else 2
    (datatrove's default)."""
    ds = datatrove_name(path)
    side_path = _with(ds, SIDECAR_SUFFIX)
    side = read_sidecar(side_path)
    token_size = 2
    meta_path = _with(ds, ".metadata")
    if meta_path.exists():
        first = _read(meta_path).decode("utf-8", "replace").split("\n", 1)[0]
        tail = first.rpartition("|")[2]
        if tail.strip() in ("2", "4"):
            token_size = int(tail)
        elif "|" in first:
            raise FormatError(f"{meta_path}: line 1 {first!r} should end with |2 or |4 (the token size)")
    elif side is not None and side.get("dtype") is not None:
        token_size = np.dtype(str(side["dtype"])).itemsize
    _check_dtype(side, side_path, np.dtype("<u2" if token_size == 2 else "<u4"), str(meta_path))
    size = _size(ds)
    if size % token_size:
        raise FormatError(f"{ds}: {size} bytes is not a whole number of {token_size}-byte tokens: it is truncated")
    n_tokens = size // token_size
    dtype = "<u2" if token_size == 2 else "<u4"
    doc_ends: npt.NDArray[np.int64] | None = None
    index = _with(ds, ".index")
    raw: bytes | None = None
    if index.exists():
        raw = _read(index)
        if len(raw) % 8:
            raise FormatError(f"{index}: {len(raw)} bytes is not a whole number of uint64 document ends: it is truncated")
        ends = np.frombuffer(raw, "<u8").astype(np.int64)
        if ends.size and (int(np.diff(ends, prepend=0).min()) < 0 or int(ends[-1]) != n_tokens):
            raise FormatError(f"{index}: the document ends must rise to the {n_tokens} tokens of {ds}")
        if not ends.size and n_tokens:
            raise FormatError(f"{index}: no document, but {ds} holds {n_tokens} tokens")
        doc_ends = ends
    mask: npt.NDArray[np.uint8] | None = None
    loss = _with(ds, ".loss")
    if loss.exists():
        if _size(loss) != n_tokens:
            raise FormatError(f"{loss}: {_size(loss)} bytes, but {ds} holds {n_tokens} tokens (one loss byte each)")
        mask = _map(loss, "u1", n_tokens)
    tokens = _map(ds, dtype, n_tokens)
    _check_sidecar(side, side_path, tokens, doc_ends, str(index if doc_ends is not None else meta_path), raw)
    paths = tuple(p for p in (ds, index, loss, meta_path) if p.exists())
    return StackFile("datatrove", paths, tokens, doc_ends, mask, side)


def read_nanogpt(path: str | os.PathLike[str]) -> StackFile:
    """nanoGPT's flat uint16 .bin.  The file does not say where documents end: with mnemo's
    sidecar, they are found by the separator it names (<|endoftext|> after, or <|bos|> before,
    each document)."""
    bin_path = _strip(Path(path), (SIDECAR_SUFFIX,))
    size = _size(bin_path)
    if size % 2:
        raise FormatError(f"{bin_path}: {size} bytes is an odd size; a nanoGPT .bin holds 2-byte tokens: it is truncated")
    n_tokens = size // 2
    tokens = _map(bin_path, "<u2", n_tokens)
    side_path = _with(bin_path, SIDECAR_SUFFIX)
    side = read_sidecar(side_path)
    doc_ends: npt.NDArray[np.int64] | None = None
    if side is not None:
        _check_sidecar(side, side_path, tokens, None, str(bin_path))
        bos, eos = side.get("bos"), side.get("eos")
        if isinstance(bos, int):
            found = np.flatnonzero(tokens == bos)
            if eos == bos:
                found = found[0::2]
            if n_tokens and (not found.size or found[0] != 0):
                raise FormatError(f"{bin_path}: does not start with the separator {bos} that {side_path} names")
            doc_ends = np.append(found[1:], n_tokens).astype(np.int64) if n_tokens else np.zeros(0, np.int64)
        elif isinstance(eos, int):
            doc_ends = (np.flatnonzero(tokens == eos) + 1).astype(np.int64)
            if n_tokens and (not doc_ends.size or doc_ends[-1] != n_tokens):
                raise FormatError(f"{bin_path}: does not end with the separator {eos} that {side_path} names")
        _check_sidecar(side, side_path, tokens, doc_ends, str(bin_path))
    paths = (bin_path, side_path) if side is not None else (bin_path,)
    return StackFile("nanogpt", paths, tokens, doc_ends, None, side)


def detect(path: PathArg) -> str | None:
    """The stack format of a path: the one its mnemo sidecar names, else the one its suffix
    names (a .bin with a sibling .idx is Megatron's, one without is nanoGPT's), or None."""
    p = _strip(local_stack_set(path), (SIDECAR_SUFFIX,))
    try:
        side = read_sidecar(_with(p, SIDECAR_SUFFIX))
    except FormatError:
        side = None
    if side is not None and side.get("format") in ("megatron", "datatrove", "nanogpt"):
        return str(side["format"])  # mnemo wrote it: its sidecar says what it is, whatever its name
    name = p.name
    if name.endswith((".ds", ".ds.index", ".ds.loss", ".ds.metadata")):
        return "datatrove"
    if name.endswith(".idx"):
        return "megatron"
    if name.endswith(".bin"):
        return "megatron" if _with(megatron_prefix(p), ".idx").exists() else "nanogpt"
    return None


READERS: Final = {"megatron": read_megatron, "datatrove": read_datatrove, "nanogpt": read_nanogpt}


def local_stack_set(path: PathArg) -> Path:
    """A stack file set, its tokens to be memory-mapped: the local path standing for `path`,
    its siblings the set's other parts (at a URL, copies in the local cache of every part any
    format could pair with the name given, those that exist: Location.local_set)."""
    where = location(path)
    names = dict.fromkeys([where.name, *(p.name for fmt in FORMATS[1:] for p in output_paths(fmt, where.name, chat=True))])
    return where.local_set(list(names), "token file set")


def read_stack_file(path: PathArg, fmt: str | None = None) -> StackFile:
    """Read a stack's token file set, its format named or found by `detect` (a URL: from local
    copies of its parts, Location.local_set)."""
    path = local_stack_set(path)
    found = fmt or detect(path)
    if found not in READERS:
        raise InputError(f"{path}: not a Megatron (.bin/.idx), datatrove (.ds) or nanoGPT (.bin) token file")
    return READERS[found](path)
