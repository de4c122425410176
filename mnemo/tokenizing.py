"""Whole datasets to .tok files: `mnemo tokenize`.

Work goes through the work engine (mnemo/work.py: map_ordered) in input order, in two forms
(mnemo/sources.py):
- tasks: a byte range of a plain .txt/.jsonl file cut at a document boundary (about
  TASK_BYTES), whole small files gathered up to that size, or one Parquet row group; the
  worker reads and parses them itself: no JSON decoding in the parent, no documents pickled to
  the workers (faster end to end than blocks read by the parent, docs/speed.md; the .tok files
  are identical);
- a block of BLOCK_DOCS documents that the parent read: compressed files, which can only be
  read from their start, and chat files.
The parent writes the tokens in input order through a TokWriter (temporary name, renamed at the
end: an interrupted run leaves no output file).  At most `workers` pieces of work are in
flight and a few finished ones wait for their turn, so memory stays bounded whatever the input size.

Documents stay apart (document_separators): a tokenizer.json template's BOS, else a transformers
folder's bos/eos, else <|bos|> before each document when the vocabulary has it (mnemo's default
specials), else <s> (Mistral's), else <|endoftext|> after each one when it has that (GPT-2's
convention), or the tokens the caller names; with none of them, a warning.  Special-token text inside a document is encoded as plain
text (`encode_ordinary`): datasets are data, not instructions.  With `chat=True`, each record's
`messages` are rendered by mnemo.chat.render_conversation, with MASKBIT on what the model learns.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt

from mnemo.chat import check_conversation, uses_chatml
from mnemo.checks import listed
from mnemo.constants import VOCAB16
from mnemo.defaults import DEFAULT_TEXT_FIELD, DEFAULT_TOKEN_FORMAT
from mnemo.errors import ConfigError, InputError
from mnemo.formats.hf_pipeline import HFTokenizer
from mnemo.location import PathArg, location
from mnemo.workers import resolve_workers
from mnemo.sources import (
    Task,
    check_inputs,
    iter_task_documents,
    kind_of,
    open_binary,
    plan_tasks,
    read_errors,
)
from mnemo import shards as sh
from mnemo.stackfiles import open_writer, output_locations
from mnemo.tokfile import TokHeader, TokWriter
from mnemo.tokenizer import Tokenizer
from mnemo.work import Progress, map_ordered, setup_of, shared_executor
from mnemo.work_ray import RayOptions, absolute_inputs, check_ray_option, ray_executor, shared_paths

#: What tokenize_files encodes with: a Tokenizer, or a tokenizer.json pipeline mnemo.load read
#: (an HFTokenizer: the same names -- encode_documents, special_tokens, fingerprint, the
#: worker image -- with tokenizers' ids).
DatasetTokenizer: TypeAlias = "Tokenizer | HFTokenizer"

BLOCK_DOCS: Final = 256
#: `bos` / `eos` of tokenize_files: choose by document_separators' rule.
AUTO: Final = "auto"
#: The size of a worker's byte range of a plain file (smaller than training's: a tokenize run
#: is short, and the last task runs alone).
TASK_BYTES = 4 << 20


@dataclass
class TokenizeStats:
    n_docs: int = 0
    n_tokens: int = 0
    n_bytes: int = 0
    seconds: float = 0.0
    #: A Ray run (a shard directory): its shards, and those a previous run had completed.
    n_shards: int = 0
    n_skipped_shards: int = 0

    @property
    def bytes_per_token(self) -> float:
        """n_bytes / n_tokens; NaN when nothing was encoded (no figure, not 0.0)."""
        return self.n_bytes / self.n_tokens if self.n_tokens else math.nan

    @property
    def mb_per_s(self) -> float:
        return self.n_bytes / 1e6 / self.seconds if self.seconds else 0.0


# ---- the map (runs in whichever process the executor chooses) ---------------------------------


@dataclass(frozen=True)
class EncodeSettings:
    """What every tokenize task needs besides the tokenizer (plain data: it travels to workers)."""

    chat: bool
    text_field: str
    bos: int | None
    eos: int | None


def encode_block(
    tok: DatasetTokenizer, docs: Sequence[bytes], chat: bool, bos: int | None = None, eos: int | None = None
) -> npt.NDArray[np.unsignedinteger]:
    """The tokens of a block of documents (raw text bytes, each between `bos` and `eos` when
    given; or JSON chat records when `chat`, which the chat template delimits)."""
    if not chat:
        return tok.encode_documents(docs, bos=bos, eos=eos)
    from mnemo.chat import render_conversation

    flat: list[int] = []
    for raw in docs:
        flat += render_conversation(tok, json.loads(raw)["messages"])
    return np.array(flat, dtype=np.uint16 if tok.n_vocab <= VOCAB16 else np.uint32)


def encode_task(
    settings: EncodeSettings, tok: DatasetTokenizer, job: tuple[list[Task], list[bytes]]
) -> tuple[npt.NDArray[np.unsignedinteger], int, int]:
    """The tokenize map: (tokens, documents, text bytes) of a piece of work -- a group of tasks,
    read and parsed here, in order, or a block of documents the caller read."""
    tasks, block = job
    if not tasks:
        return encode_block(tok, block, settings.chat, settings.bos, settings.eos), len(block), sum(len(d) for d in block)
    parts: list[npt.NDArray[np.unsignedinteger]] = []
    n_docs = 0
    n_bytes = 0
    docs_of_tasks = (d for t in tasks for d in iter_task_documents(t, text_field=settings.text_field, whole_documents=True))
    for docs in _blocks(docs_of_tasks):
        parts.append(encode_block(tok, docs, False, settings.bos, settings.eos))
        n_docs += len(docs)
        n_bytes += sum(len(d) for d in docs)
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint16)), n_docs, n_bytes  # ids < MAX_VOCAB


# ---- parent side ----------------------------------------------------------------------------------


def _documents(
    inputs: Sequence[str | os.PathLike[str]], text_field: str, chat: bool, specials: Sequence[str] = ()
) -> Iterator[bytes]:
    """The documents (chat: the raw records, checked against `specials`, the tokenizer's)."""
    for path in check_inputs(inputs):
        kind = kind_of(path)
        if chat:
            if kind not in ("jsonl", "auto"):  # "auto": standard input, JSON Lines for --chat
                raise InputError(f"{path}: --chat reads JSON Lines records with a 'messages' list; this is {kind}")
            yield from (line for _, line in chat_lines(path, specials))
        else:
            yield from iter_task_documents(Task(os.fspath(path), kind), text_field=text_field, whole_documents=True)


def chat_lines(path: PathArg, specials: Sequence[str] = ()) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) of each record of a chat JSONL file, each checked here, where the
    file and line are known, to be a record that render_conversation accepts (the workers that
    render it know neither; `mnemo tokshow --chat` reads its record through here too)."""
    where = location(path)
    name = str(where)
    chatml = uses_chatml(specials)  # the tokenizer's specials: ChatML's text markers are its markers
    try:
        with open_binary(where) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"{name}:{number}: not valid JSON ({exc})") from None
                except RecursionError:
                    raise InputError(f"{name}:{number}: the JSON is nested too deeply to read") from None
                if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
                    raise InputError(f"{name}:{number}: a chat record needs a 'messages' list")
                try:
                    check_conversation(record["messages"], specials, chatml=chatml)
                except InputError as exc:
                    raise InputError(f"{name}:{number}: {exc}") from None
                yield number, line
    except read_errors() as exc:
        raise InputError(f"{name}: cannot be read to the end ({type(exc).__name__}: {exc}); the file may be truncated or corrupt") from None


def _work(
    inputs: Sequence[str | os.PathLike[str]], text_field: str, chat: bool, n_workers: int, specials: Sequence[str] = ()
) -> Iterator[tuple[list[Task], list[bytes]]]:
    """The pieces of work for the workers, in input order, each (tasks, documents) with one of
    the two empty: groups of tasks that a worker reads itself (byte ranges of plain files, whole
    small files gathered up to TASK_BYTES -- a corpus of thousands of small files would
    otherwise cost a round trip each -- and Parquet row groups), or blocks of documents read
    here (compressed files, chats)."""
    if chat:
        for block in _blocks(_documents(inputs, text_field, chat, specials)):
            yield [], block
        return
    group: list[Task] = []
    size = 0
    tasks = plan_tasks(inputs, n_workers=n_workers, min_task_bytes=TASK_BYTES, max_task_bytes=TASK_BYTES, whole_documents=True, check=True)
    for task in tasks:
        if task.sequential:
            # a compressed file or a stream, readable only from its start: read it here, hand out blocks
            if group:
                yield group, []
                group, size = [], 0
            for block in _blocks(iter_task_documents(task, text_field=text_field, whole_documents=True)):
                yield [], block
            continue
        group.append(task)
        if task.kind == "parquet":
            size += TASK_BYTES  # a row group: a piece of work of its own
        else:
            size += task.end - task.start if task.end >= 0 else max(task.size, 0)
        if size >= TASK_BYTES:
            yield group, []
            group, size = [], 0
    if group:
        yield group, []


def _blocks(docs: Iterator[bytes]) -> Iterator[list[bytes]]:
    block: list[bytes] = []
    for d in docs:
        block.append(d)
        if len(block) == BLOCK_DOCS:
            yield block
            block = []
    if block:
        yield block


def tokenize_files(
    inputs: Sequence[str | os.PathLike[str]],
    tokenizer: DatasetTokenizer,
    output: str | os.PathLike[str],
    *,
    chat: bool = False,
    workers: int | None = None,
    text_field: str = DEFAULT_TEXT_FIELD,
    progress: Progress | None = None,
    bos: str | None = AUTO,
    eos: str | None = AUTO,
    format: str = DEFAULT_TOKEN_FORMAT,
    ray: bool | str | RayOptions | None = None,
) -> TokenizeStats:
    """Encode every document of the inputs into the .tok file `output`, or into the token files
    of a training stack: `format` "megatron", "datatrove" or "nanogpt" (mnemo/stackfiles.py).

    `ray` (True, "HOST:PORT" or a RayOptions; docs/ray.md): encode on a Ray cluster into the
    shard directory `output` -- a .tok per task and a manifest (mnemo/shards.py), read back as
    one dataset by open_tok, TokenStream and `mnemo info`.  A run started again with the same
    arguments keeps the shards a previous run completed.

    `bos` / `eos`: the names of the special tokens put before / after each document, None for
    no token, or AUTO (see document_separators).  Chats (`chat=True`) are delimited by the chat
    template and take neither.  `output` is checked before any work starts (check_output)."""
    n_workers = resolve_workers(workers)
    if chat:
        if bos != AUTO or eos != AUTO:
            raise ConfigError("bos/eos are for documents; chats are delimited by the chat template (<|bos|> ... <|end|>)")
        bos_id: int | None = None
        eos_id: int | None = None
    else:
        bos_id, eos_id = document_separators(tokenizer, bos, eos)
        if bos_id is None and eos_id is None and bos == AUTO and eos == AUTO:
            warnings.warn(no_separator_warning(tokenizer), stacklevel=2)
    ray_options = check_ray_option(ray)
    if ray_options is not None and workers is not None:
        raise ConfigError(f"workers={workers} is for local runs; on Ray, size the shards with RayOptions(shard_bytes=...) (--shard-mb)")
    if ray_options is not None:
        return _tokenize_on_ray(inputs, tokenizer, output, ray_options, chat, text_field, progress, bos_id, eos_id, format)
    for part in output_locations(format, output, chat):  # the parts of a set go next to the name given
        part.check_output([("input", p) for p in inputs])
    sink, bos_id, eos_id = open_writer(format, output, tokenizer, chat=chat, bos=bos_id, eos=eos_id)
    stats = TokenizeStats()
    t0 = time.perf_counter()
    if progress is not None:
        progress("tokenize", 0, 0)  # the phase starts: its rate is measured from here, like stats.seconds
    with sink as writer:

        def emit(result: tuple[npt.NDArray[np.unsignedinteger], int, int]) -> None:
            ids, n_docs, n_bytes = result
            writer.write(ids, n_docs)
            stats.n_docs += n_docs
            stats.n_tokens += int(ids.size)
            stats.n_bytes += n_bytes
            if progress is not None:
                progress("tokenize", stats.n_bytes, 0)

        settings = EncodeSettings(chat, text_field, bos_id, eos_id)
        work = (
            _work(inputs, text_field, chat, n_workers, list(tokenizer.special_tokens))
            if n_workers > 1
            else (([], block) for block in _blocks(_documents(inputs, text_field, chat, list(tokenizer.special_tokens))))
        )
        with shared_executor(n_workers) as executor:
            map_ordered(
                work,
                partial(encode_task, settings),
                emit,
                executor=executor,
                setup=setup_of(type(tokenizer)._from_worker_image, tokenizer._for_workers(), tokenizer),
            )
    stats.n_tokens = sink.n_tokens  # what the file holds: a boundary marker is not a token of it
    stats.seconds = time.perf_counter() - t0
    return stats


def _tokenize_on_ray(
    inputs: Sequence[str | os.PathLike[str]],
    tokenizer: DatasetTokenizer,
    output: str | os.PathLike[str],
    options: RayOptions,
    chat: bool,
    text_field: str,
    progress: Progress | None,
    bos_id: int | None,
    eos_id: int | None,
    format: str,
) -> TokenizeStats:
    if format != "tok":
        raise ConfigError(f"--ray writes a shard directory of .tok files; format {format!r} is not written on Ray (use tok)")
    shared_paths([output])  # a URL is refused: every node writes its shards into the folder
    folder = location(output)
    for p in inputs:
        if folder.same_as(p):
            raise ConfigError(f"{output}: the output is also an input; choose another output folder")
    folder.check_output_folder()
    t0 = time.perf_counter()
    stats = tokenize_on_ray(
        inputs, tokenizer, output, options, chat=chat, text_field=text_field, bos=bos_id, eos=eos_id, progress=progress
    )
    stats.seconds = time.perf_counter() - t0
    return stats


# ---- document separators ---------------------------------------------------------------------------


def document_separators(tok: DatasetTokenizer, bos: str | None = AUTO, eos: str | None = AUTO) -> tuple[int | None, int | None]:
    """The ids put before and after each document: (bos, eos), None for none.

    With both AUTO: what a tokenizer.json's template adds around a text, when it adds one token
    before and/or after (HFTokenizer.template_separators: Llama 3's BOS, as tokenizer(text)
    adds it); else the tokenizer's own bos before each document when it names one (an
    HFTokenizer's bos_token and eos_token: a transformers folder's tokenizer_config.json), else its eos
    after each one -- a bos that is also the eos (GPT-2's `<|endoftext|>`) counts as the eos.
    Without roles: <|bos|> before each document when the vocabulary has it (mnemo's default
    specials), else <s> (SentencePiece's and Mistral's BOS: a tekken file's id 1, which
    mistral-common's encode puts before a text), else <|endoftext|> after each one when it has that (GPT-2's and tiktoken's
    convention: a document ends with it), else none -- and the documents run together, which
    tokenize_files warns about.  Naming either token replaces the rule: the one left AUTO is
    then none (`bos="<|endoftext|>"` alone gives that token before each document and nothing
    after).  Names must be special tokens of the vocabulary: ConfigError otherwise."""
    if bos == AUTO and eos == AUTO:
        own_bos: str | None = None
        own_eos: str | None = None
        if isinstance(tok, HFTokenizer):
            own = tok.template_separators()
            if own is not None:
                return own
            own_bos, own_eos = tok.bos_token, tok.eos_token
        specials = tok.special_tokens
        if own_bos is not None and own_bos != own_eos and own_bos in specials:
            return specials[own_bos], None
        if own_eos is not None and own_eos in specials:
            return None, specials[own_eos]
        for name in ("<|bos|>", "<s>"):
            if name in specials:
                return specials[name], None
        if "<|endoftext|>" in specials:
            return None, specials["<|endoftext|>"]
        return None, None
    return _special_id(tok, "bos", bos), _special_id(tok, "eos", eos)


def _special_id(tok: DatasetTokenizer, option: str, name: str | None) -> int | None:
    if name is None or name == AUTO:
        return None
    found = tok.special_tokens.get(name)
    if found is None:
        have = listed(tok.special_tokens)
        raise ConfigError(f"{option} {name!r} is not a special token of this vocabulary (it has: {have}); name one of those, or none")
    return found


def no_separator_warning(tok: DatasetTokenizer) -> str:
    have = listed(tok.special_tokens)
    return (
        f"the vocabulary has neither <|bos|> nor <|endoftext|> (special tokens: {have}): documents "
        f"are joined with nothing between them; choose a separator with --bos TOKEN / --eos TOKEN "
        f"(bos=/eos= in tokenize_files), or pass --bos none --eos none to silence this"
    )


# ---- shards of a run on Ray (mnemo/shards.py has the directory's format) ----


def plan_shards(tasks: Sequence[Task], shard_bytes: int) -> list[tuple[Task, ...]]:
    """Group the tasks, in order, into shards of about `shard_bytes` of input each (a Parquet row
    group or a compressed file is one piece of work: it counts as a whole shard)."""
    groups: list[tuple[Task, ...]] = []
    group: list[Task] = []
    size = 0
    for task in tasks:
        group.append(task)
        if task.kind in ("parquet", "arrow") or task.sequential:
            size += shard_bytes
        else:
            size += task.end - task.start if task.end >= 0 else location(task.path).info().size
        if size >= shard_bytes:
            groups.append(tuple(group))
            group, size = [], 0
    if group:
        groups.append(tuple(group))
    return groups


@dataclass(frozen=True)
class ShardSettings:
    """What every shard task needs besides the tokenizer and its inputs (plain data: it travels)."""

    chat: bool
    text_field: str
    bos: int | None
    eos: int | None


def write_shard(
    settings: ShardSettings, tok: DatasetTokenizer, job: tuple[str, Sequence[Task], int]
) -> tuple[str, int, int, int, int]:
    """The shard map (work.py: fn(state, task), the state a tokenizer): encode the tasks of `job`
    (path, tasks, origin: shards.shard_origin) into the .tok `path`, through a temporary name
    renamed when complete; (its name, documents, tokens, text bytes, tokens' CRC-32).  Runs
    where the task runs."""
    path, tasks, origin = job
    specials = list(tok.special_tokens)
    chat = settings.chat
    n_bytes = 0
    with TokWriter(path, tok, chat=chat, origin=origin) as writer:
        for task in tasks:
            docs_iter: Iterator[bytes]
            if chat:
                docs_iter = (line for _, line in chat_lines(task.path, specials))
            else:
                docs_iter = iter_task_documents(task, text_field=settings.text_field, whole_documents=True)
            block: list[bytes] = []
            for doc in docs_iter:
                block.append(doc)
                if len(block) == BLOCK_DOCS:
                    writer.write(encode_block(tok, block, chat, settings.bos, settings.eos), len(block))
                    n_bytes += sum(len(d) for d in block)
                    block = []
            if block:
                writer.write(encode_block(tok, block, chat, settings.bos, settings.eos), len(block))
                n_bytes += sum(len(d) for d in block)
    return Path(path).name, writer.n_docs, writer.n_tokens, n_bytes, writer.data_crc


# ---- tokenizing on Ray: one shard per task (mnemo/shards.py has the directory's format) ----


def tokenize_on_ray(
    inputs: Sequence[str | os.PathLike[str]],
    tokenizer: DatasetTokenizer,
    output: str | os.PathLike[str],
    options: RayOptions,
    *,
    chat: bool,
    text_field: str,
    bos: int | None,
    eos: int | None,
    progress: Progress | None = None,
) -> TokenizeStats:
    """Encode the inputs into the shard directory `output`, one shard per task on the cluster
    (the engine's map_ordered: each result, a shard's counts, is recorded in order); shards a
    previous run of the same arguments completed are kept (see mnemo/shards.py)."""
    paths = absolute_inputs(inputs)
    folder = shared_paths([output])[0]
    if chat:
        for p in paths:
            if (kind := kind_of(p)) != "jsonl":
                raise InputError(f"{p}: --chat reads JSON Lines records with a 'messages' list; this is {kind}")
        tasks = [Task(str(p), "jsonl", sequential=True) for p in paths]  # a chat file is read whole
    else:
        tasks = plan_tasks(
            paths, n_workers=1, min_task_bytes=options.shard_bytes, max_task_bytes=options.shard_bytes, whole_documents=True
        )
    groups = plan_shards(tasks, options.shard_bytes)
    run = {
        "inputs": [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in paths],
        "text_field": text_field,
        "chat": chat,
        "bos": bos,
        "eos": eos,
        "shard_bytes": options.shard_bytes,
    }
    shards = [sh.Shard(sh.shard_name(i), group) for i, group in enumerate(groups)]
    kept = _resume(folder, sh.Manifest(tokenizer.fingerprint, tokenizer.n_vocab, chat, run, tuple(shards), False))
    stats = TokenizeStats(n_shards=len(shards), n_skipped_shards=len(kept))
    for h in kept.values():
        stats.n_docs += h.n_docs
        stats.n_tokens += h.n_tokens
    shards = [sh.Shard(s.name, s.tasks, kept[s.name].n_docs, kept[s.name].n_tokens, kept[s.name].data_crc) if s.name in kept else s
              for s in shards]
    index = {s.name: i for i, s in enumerate(shards)}

    def record(result: tuple[str, int, int, int, int]) -> None:
        name, n_docs, n_tokens, n_bytes, crc = result
        i = index[name]
        shards[i] = sh.Shard(name, shards[i].tasks, n_docs, n_tokens, crc)
        stats.n_docs += n_docs
        stats.n_tokens += n_tokens
        stats.n_bytes += n_bytes
        if progress is not None:
            progress("tokenize", stats.n_bytes, 0)

    with ray_executor(options) as executor:  # connected (or refused) before anything is written
        folder.mkdir(parents=True, exist_ok=True)
        sh.remove_temporaries(folder)
        sh.write_manifest(folder, sh.Manifest(tokenizer.fingerprint, tokenizer.n_vocab, chat, run, tuple(shards), False))
        if progress is not None:
            progress("tokenize", 0, 0)
        jobs = [(str(folder / s.name), s.tasks, sh.shard_origin(run, s)) for s in shards if s.name not in kept]
        map_ordered(
            jobs,
            partial(write_shard, ShardSettings(chat, text_field, bos, eos)),
            record,
            executor=executor,
            setup=setup_of(type(tokenizer)._from_worker_image, tokenizer._for_workers()),
        )
    sh.remove_temporaries(folder)
    sh.write_manifest(folder, sh.Manifest(tokenizer.fingerprint, tokenizer.n_vocab, chat, run, tuple(shards), True))
    return stats


def _resume(folder: Path, manifest: Any) -> dict[str, TokHeader]:
    """The shards of `manifest` already complete in `folder`: {name: its header}.  A folder
    holding another run (other inputs, options or tokenizer) is refused, never mixed; a file
    under a shard's name is kept only when every byte of it checks and it is that shard
    (shards.finished_shard), else it is written again."""
    if not folder.exists():
        return {}
    if not folder.is_dir():
        raise ConfigError(f"{folder}: is a file; with --ray the output is a folder of shards (created if missing)")
    if not sh.is_shard_dir(folder):
        if any(folder.iterdir()):
            raise ConfigError(
                f"{folder}: is a folder holding files and no {sh.MANIFEST_NAME}; with --ray the output is a "
                f"folder of shards: give an empty or new folder"
            )
        return {}
    old = sh.read_manifest(folder)
    same = (
        old.fingerprint == manifest.fingerprint
        and old.chat == manifest.chat
        and old.run == manifest.run
        # as stored: a planned Task carries a size and a sequential flag the manifest does not
        # keep (the run's inputs record the sizes), so Tasks never compared equal (item 10)
        and [s.task_rows for s in old.shards] == [s.task_rows for s in manifest.shards]
    )
    if not same:
        raise ConfigError(
            f"{folder}: holds the shards of another run (other inputs, options or tokenizer); remove it "
            f"or choose another output folder"
        )
    kept: dict[str, TokHeader] = {}
    for s, recorded in zip(manifest.shards, old.shards):
        header = sh.finished_shard(folder, s, manifest.fingerprint, sh.shard_origin(manifest.run, s), recorded)
        if header is not None:
            kept[s.name] = header
    return kept
