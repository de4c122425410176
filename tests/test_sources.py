"""Input files: formats, compression, document splitting, task planning and clear errors."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import random
import subprocess
import sys
import threading
from typing import Any
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mnemo import Tokenizer, open_tok, train, train_from_iterator
from mnemo.tokenizing import tokenize_files
from mnemo.errors import ConfigError, InputError
from mnemo.sources import (
    Task,
    check_inputs,
    documents_from_iterable,
    iter_documents,
    iter_task_documents,
    kind_of,
    plan_tasks,
)

EOT = "<|endoftext|>"


def write_jsonl(path: Path, texts: list[str], field: str = "text") -> Path:
    path.write_text("".join(json.dumps({field: t}) + "\n" for t in texts), encoding="utf-8")
    return path


def test_kind_of_strips_compression_suffix() -> None:
    assert kind_of(Path("a/b.jsonl.xz")) == "jsonl"
    assert kind_of(Path("b.ndjson.gz")) == "jsonl"
    assert kind_of(Path("c.parquet")) == "parquet"
    assert kind_of(Path("d.txt.zst")) == "text"
    assert kind_of(Path("README")) == "text"


def test_text_file_split_at_special_tokens(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_bytes(f"one{EOT}two\n{EOT}{EOT}three".encode())
    assert list(iter_documents([p], specials=[EOT])) == [b"one", b"two\n", b"three"]
    # <|endoftext|> separates documents of text files even when it is not a special token
    assert list(iter_documents([p], specials=["<|bos|>"])) == [b"one", b"two\n", b"three"]
    p.write_bytes(b"one<|bos|>two")
    assert list(iter_documents([p], specials=["<|bos|>"])) == [b"one", b"two"]
    assert list(iter_documents([p])) == [b"one<|bos|>two"]


def test_longest_special_wins_at_the_same_position() -> None:
    docs = documents_from_iterable(["a<|end|>b<|endoftext|>c"], ["<|end|>", EOT])
    assert list(docs) == [b"a", b"b", b"c"]


@pytest.mark.parametrize("compress", ["xz", "gzip", "zstd"])
def test_compressed_inputs_read_by_magic(tmp_path: Path, compress: str) -> None:
    raw = write_jsonl(tmp_path / "raw.jsonl", ["héllo", "wörld"]).read_bytes()
    p = tmp_path / "data.jsonl.bin"  # the suffix says nothing; the magic bytes decide
    p = p.with_name("data.jsonl")
    if compress == "xz":
        p.write_bytes(lzma.compress(raw))
    elif compress == "gzip":
        p.write_bytes(gzip.compress(raw))
    else:
        zstandard = pytest.importorskip("zstandard")
        p.write_bytes(zstandard.ZstdCompressor().compress(raw))
    assert list(iter_documents([p])) == ["héllo".encode(), "wörld".encode()]


def test_jsonl_other_field_and_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text('{"body": "x"}\n\n{"body": "y"}\n')
    assert list(iter_documents([p], text_field="body")) == [b"x", b"y"]
    with pytest.raises(InputError, match=r"a\.jsonl:1: field 'text' must be a string \(no such field\)"):
        list(iter_documents([p]))


def test_jsonl_bad_line_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text('{"text": "ok"}\n{"text": "ok"}\n{"text": oops}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:3: not valid JSON"):
        list(iter_documents([p]))


def test_parquet_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"text": ["a", None, "b", "c"], "n": [1, 2, 3, 4]}), p, row_group_size=2)
    assert list(iter_documents([p])) == [b"a", b"b", b"c"]
    tasks = plan_tasks([p], n_workers=2)
    assert [t.row_group for t in tasks] == [0, 1]
    assert [d for t in tasks for d in iter_task_documents(t)] == [b"a", b"b", b"c"]
    with pytest.raises(InputError, match=r"no column 'body' \(columns: text, n\)"):
        list(iter_documents([p], text_field="body"))


def test_missing_unreadable_and_directory_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        check_inputs([tmp_path / "nope.txt"])
    with pytest.raises(InputError, match="is a directory"):
        check_inputs([tmp_path])
    with pytest.raises(InputError, match="no input files"):
        check_inputs([])
    with pytest.raises(ConfigError, match="document 1 is a int"):
        list(documents_from_iterable(["a", 3]))  # type: ignore[list-item]


def test_planned_tasks_read_the_same_documents(tmp_path: Path) -> None:
    """Cutting a file into byte ranges at document boundaries loses and duplicates nothing."""
    texts = [f"document {i} " + "word " * (i % 50) for i in range(3000)]
    jl = write_jsonl(tmp_path / "a.jsonl", texts)
    tasks = plan_tasks([jl], n_workers=4, min_task_bytes=10_000)
    assert len(tasks) > 5
    assert tasks[0].start == 0 and tasks[-1].end == jl.stat().st_size
    assert all(a.end == b.start for a, b in zip(tasks, tasks[1:]))
    assert [d for t in tasks for d in iter_task_documents(t)] == [t.encode() for t in texts]

    txt = tmp_path / "a.txt"
    txt.write_text(EOT.join(texts))
    tasks = plan_tasks([txt], n_workers=4, specials=[EOT], min_task_bytes=10_000, whole_documents=True)
    assert len(tasks) > 5
    assert [d for t in tasks for d in iter_task_documents(t, specials=[EOT])] == [t.encode() for t in texts]



def test_checked_planning_is_check_inputs_then_plan_tasks(tmp_path: Path) -> None:
    """plan_tasks(check=True) looks at each input once and plans what check_inputs and then
    plan_tasks plan (a compressed file whole, a large one in ranges, a small one whole), and
    refuses what check_inputs refuses."""
    texts = [f"document {i} " + "word " * (i % 50) for i in range(3000)]
    big = write_jsonl(tmp_path / "big.jsonl", texts)
    small = write_jsonl(tmp_path / "small.jsonl", texts[:3])
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(small.read_bytes()))
    inputs = [str(big), small, packed]
    planned = plan_tasks(check_inputs(inputs), n_workers=4, min_task_bytes=10_000)
    assert plan_tasks(inputs, n_workers=4, min_task_bytes=10_000, check=True) == planned
    assert [t.sequential for t in planned][-2:] == [False, True] and len(planned) > 5
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"text\0more")
    with pytest.raises(InputError, match=r"binary\.txt: is binary \(a NUL byte at offset 4\)"):
        plan_tasks([small, binary], n_workers=1, check=True)
    plan_tasks([small, binary], n_workers=1)  # unchecked: planned as it is


@pytest.mark.parametrize("target", [899, 901, 950, 999])
def test_a_cut_search_that_lands_in_the_last_document_ends_the_plan(tmp_path: Path, target: int) -> None:
    """Ten 100-byte lines with the planned cut inside the last one: the only boundary after it
    is the end of the file.  This once looped for ever (the cut was not taken and the search
    restarted at the same place).  Run in a thread so that a regression fails, not hangs."""
    import threading

    jl = tmp_path / "a.jsonl"
    jl.write_bytes(b"".join(json.dumps({"text": "x" * 87}).encode() + b"\n" for _ in range(10)))
    assert jl.stat().st_size == 1000
    found: list[list[tuple[int, int]]] = []
    worker = threading.Thread(
        target=lambda: found.append(
            [(t.start, t.end) for t in plan_tasks([jl], n_workers=2, min_task_bytes=target, max_task_bytes=target)]
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=30)
    assert found, f"plan_tasks did not return within 30 s for target={target}"
    assert found[0] == ([(0, 900), (900, 1000)] if target == 899 else [(0, 1000)])
def test_text_without_documents_cut_where_chunks_end(tmp_path: Path) -> None:
    """With no special tokens, counting tasks cut a text file at a space between two letters."""
    txt = tmp_path / "a.txt"
    txt.write_text("alpha beta, gamma delta! " * 4000)
    tasks = plan_tasks([txt], n_workers=4, min_task_bytes=10_000)
    assert len(tasks) > 5
    data = txt.read_bytes()
    for t in tasks[1:]:
        assert data[t.start] == 0x20 and chr(data[t.start - 1]).isalpha() and chr(data[t.start + 1]).isalpha()
    assert b"".join(d for t in tasks for d in iter_task_documents(t)) == data
    whole = plan_tasks([txt], n_workers=4, min_task_bytes=10_000, whole_documents=True)
    assert [(t.start, t.end) for t in whole] == [(0, len(data))]


@pytest.mark.parametrize("compress", ["xz", "gzip", "zstd"])
def test_truncated_compressed_input_is_a_clear_error(tmp_path: Path, compress: str) -> None:
    raw = write_jsonl(tmp_path / "raw.jsonl", ["some text " * 50] * 200).read_bytes()
    if compress == "xz":
        packed = lzma.compress(raw)
    elif compress == "gzip":
        packed = gzip.compress(raw)
    else:
        zstandard = pytest.importorskip("zstandard")
        packed = zstandard.ZstdCompressor().compress(raw)
    p = tmp_path / f"cut.jsonl.{compress}"
    p.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(InputError, match=rf"cut\.jsonl\.{compress}: cannot be read to the end .*truncated or corrupt"):
        list(iter_documents([p]))


# ---- streams: pipes, FIFOs, standard input ------------------------------------------------------
# The compression sniff once read the first bytes through one handle and reopened the file: a
# pipe lost what the first read took (`printf 'Hello world' | mnemo tokenize ... /dev/stdin` gave
# 0 documents, a 108 KB piped corpus 1,847 of 2,000), and a FIFO with a writer hung.

MNEMO = str(Path(sys.executable).parent / "mnemo")
WORDS = ["alpha", "beta", "gamma", "delta", "épée", "naïve", "日本", "quote\"d", "back\\slash", "tab\there", "x"]


def stream_docs(n: int = 2000, seed: int = 13) -> list[str]:
    """`n` small documents (about 108 KB in all) with non-ASCII text and characters JSON escapes."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        docs.append(f"doc {i}: " + " ".join(words) + ("\n" if i % 7 == 0 else ""))
    return docs


def pack(data: bytes, compress: str) -> bytes:
    if compress == "xz":
        return lzma.compress(data)
    if compress == "gz":
        return gzip.compress(data)
    if compress == "zst":
        zstandard = pytest.importorskip("zstandard")
        return bytes(zstandard.ZstdCompressor().compress(data))
    return data


def corpus_bytes(docs: list[str], kind: str, compress: str) -> bytes:
    if kind == "jsonl":
        raw = "".join(json.dumps({"text": d}, ensure_ascii=bool(len(d) % 2)) + "\n" for d in docs).encode()
    else:
        raw = EOT.join(docs).encode()
    return pack(raw, compress)


def feed_fifo(path: Path, data: bytes) -> threading.Thread:
    """A writer thread that opens the FIFO (blocking until a reader opens it) and writes `data`."""

    def write() -> None:
        with open(path, "wb") as f:
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


STREAM_CASES = [(k, c) for k in ("txt", "jsonl") for c in ("", "xz", "gz", "zst")]


@pytest.mark.parametrize(("kind", "compress"), STREAM_CASES)
def test_a_fifo_reads_every_document(tmp_path: Path, kind: str, compress: str, within: Callable[..., object]) -> None:
    """A FIFO (a writer thread feeds it) gives exactly the documents of the same bytes in a
    regular file, compressed or not."""
    docs = stream_docs()
    data = corpus_bytes(docs, kind, compress)
    name = f"c.{kind}" + (f".{compress}" if compress else "")
    regular = tmp_path / name
    regular.write_bytes(data)
    fifo = tmp_path / "fifo" / name
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    writer = feed_fifo(fifo, data)
    got = within(lambda: list(iter_documents([fifo], specials=["<|bos|>"])), 60)
    writer.join(10)
    expected = list(iter_documents([regular], specials=["<|bos|>"]))
    assert got == expected and len(expected) == len(docs) == 2000
    assert expected == [d.encode() for d in docs]
    assert plan_tasks([regular], n_workers=2)[0].sequential == bool(compress)


def test_streams_are_checked_and_planned_without_being_opened(tmp_path: Path, within: Callable[..., object]) -> None:
    """Opening a FIFO takes its writer (and blocks without one): checking and planning must not."""
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    tasks = within(lambda: (check_inputs([fifo, "-"]), plan_tasks([fifo, Path("-")], n_workers=2)), 10)
    assert tasks[1] == [Task(str(fifo), "jsonl", sequential=True), Task("-", "auto", sequential=True)]  # type: ignore[index]
    with pytest.raises(InputError, match="standard input .* more than once"):
        check_inputs(["-", "-"])
    pq_fifo = tmp_path / "g.parquet"
    os.mkfifo(pq_fifo)
    with pytest.raises(InputError, match=r"g\.parquet: Parquet cannot be read from a pipe"):
        check_inputs([pq_fifo])


def run_mnemo(args: list[str], stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([MNEMO, *args], input=stdin, capture_output=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def stream_tok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streams") / "tok.bin"
    train_from_iterator(stream_docs(300, seed=5), vocab_size=400, workers=1).save(path)
    return path


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize(("kind", "compress"), STREAM_CASES)
def test_tokenize_from_standard_input(tmp_path: Path, stream_tok: Path, kind: str, compress: str, workers: str) -> None:
    """`mnemo tokenize -t tok.bin - -o out.tok` from a real pipe: the .tok file of the same
    bytes in a regular file, every document (jsonl: standard input starting with "{")."""
    docs = stream_docs()
    data = corpus_bytes(docs, kind, compress)
    regular = tmp_path / (f"c.{kind}" + (f".{compress}" if compress else ""))
    regular.write_bytes(data)
    tok = Tokenizer.load(stream_tok)
    tokenize_files([regular], tok, tmp_path / "file.tok", workers=1)
    done = run_mnemo(["tokenize", "-t", str(stream_tok), "-", "-o", str(tmp_path / "pipe.tok"), "--workers", workers, "-q"], data)
    assert done.returncode == 0, done.stderr.decode()
    assert b"2000 documents" in done.stdout
    pipe, file = open_tok(tmp_path / "pipe.tok", tok), open_tok(tmp_path / "file.tok", tok)
    assert pipe.header.n_docs == file.header.n_docs == 2000
    assert np.array_equal(pipe.tokens, file.tokens)


@pytest.mark.parametrize(("kind", "compress", "workers"), [("txt", "", "2"), ("jsonl", "", "1"), ("jsonl", "xz", "2"), ("jsonl", "gz", "1"), ("txt", "zst", "2")])
def test_train_from_standard_input(tmp_path: Path, kind: str, compress: str, workers: str) -> None:
    """`mnemo train - -o tok.bin` from a real pipe: the tokenizer.bin of the same bytes in a
    regular file, byte for byte."""
    data = corpus_bytes(stream_docs(), kind, compress)
    regular = tmp_path / (f"c.{kind}" + (f".{compress}" if compress else ""))
    regular.write_bytes(data)
    expected = train(regular, vocab_size=400, workers=1).to_bytes()
    done = run_mnemo(["train", "-", "-o", str(tmp_path / "pipe.bin"), "--vocab-size", "400", "--workers", workers, "-q"], data)
    assert done.returncode == 0, done.stderr.decode()
    assert (tmp_path / "pipe.bin").read_bytes() == expected


def test_dev_stdin_and_fifos_on_the_command_line(tmp_path: Path, stream_tok: Path) -> None:
    """The issue's cases: /dev/stdin from printf (was 0 documents), and FIFOs with a writer
    (was a hang) for train and tokenize."""
    done = run_mnemo(["tokenize", "-t", str(stream_tok), "/dev/stdin", "-o", str(tmp_path / "p.tok")], b"Hello world")
    assert done.returncode == 0, done.stderr.decode()
    tok = Tokenizer.load(stream_tok)
    bos = tok.special_tokens["<|bos|>"]
    assert open_tok(tmp_path / "p.tok", tok).tokens.tolist() == [bos, *tok.encode("Hello world")]

    docs = stream_docs()
    data = corpus_bytes(docs, "jsonl", "gz")
    (tmp_path / "c.jsonl.gz").write_bytes(data)
    os.mkfifo(tmp_path / "f.jsonl.gz")
    writer = feed_fifo(tmp_path / "f.jsonl.gz", data)
    done = run_mnemo(["train", str(tmp_path / "f.jsonl.gz"), "-o", str(tmp_path / "f.bin"), "--vocab-size", "400", "-q", "--workers", "2"])
    writer.join(10)
    assert done.returncode == 0, done.stderr.decode()
    assert (tmp_path / "f.bin").read_bytes() == train(tmp_path / "c.jsonl.gz", vocab_size=400, workers=1).to_bytes()

    os.mkfifo(tmp_path / "g.txt")
    writer = feed_fifo(tmp_path / "g.txt", corpus_bytes(docs, "txt", ""))
    done = run_mnemo(["tokenize", "-t", str(stream_tok), str(tmp_path / "g.txt"), "-o", str(tmp_path / "g.tok"), "-q", "--workers", "2"])
    writer.join(10)
    assert done.returncode == 0, done.stderr.decode()
    assert open_tok(tmp_path / "g.tok", tok).header.n_docs == 2000


def test_standard_input_in_the_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-` is standard input wherever a path is taken: its bytes are read once, from a pipe."""
    docs = stream_docs(50)
    r, w = os.pipe()
    data = corpus_bytes(docs, "jsonl", "xz")
    os.write(w, data)  # fits in the pipe's buffer
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(pipe))
        assert list(iter_documents(["-"])) == [d.encode() for d in docs]


def test_a_text_stdin_that_starts_like_json_is_an_error_naming_it(tmp_path: Path) -> None:
    done = run_mnemo(["train", "-", "-o", str(tmp_path / "t.bin"), "--vocab-size", "300"], b'{"a": 1} is not a record\nmore text\n')
    assert done.returncode == 1 and not (tmp_path / "t.bin").exists()
    assert "<stdin>:1: not valid JSON" in done.stderr.decode()


# ---- special-token text is a document boundary in every format ----------------------------------
# JSONL and Parquet documents once had their special-token text counted: 300 documents gave 43
# merges including `<|`, `|>`, `bos`, `|><|` as JSONL, 35 and none of those as .txt or in memory.

SPECIAL_DOCS_SEED = 3


def special_docs(n: int = 300) -> list[str]:
    """Documents with the default specials' text inside them (never <|endoftext|>, which
    separates the .txt form), some of them several in a row."""
    rng = random.Random(SPECIAL_DOCS_SEED)
    names = ["<|bos|>", "<|end|>", "<|user|>", "<|assistant|>", "<|reserved_3|>"]
    docs = []
    for i in range(n):
        parts = []
        for _ in range(rng.randint(2, 9)):
            parts.append(" ".join(rng.choice(WORDS[:6]) for _ in range(rng.randint(0, 5))))
            parts.append("".join(rng.choice(names) for _ in range(rng.randint(1, 2))))
        docs.append(f"item {i} " + "".join(parts))
    return docs


def every_format(tmp_path: Path, docs: list[str]) -> dict[str, object]:
    """The same documents as each input form mnemo.train takes."""
    jsonl = "".join(json.dumps({"text": d}) + "\n" for d in docs).encode()
    raw_jsonl = "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs).encode("utf-8", "surrogatepass")
    text = EOT.join(docs).encode("utf-8", "surrogatepass")
    forms: dict[str, object] = {"memory": list(docs)}
    files = {
        "a.txt": text,
        "a.txt.gz": pack(text, "gz"),
        "a.jsonl": jsonl,
        "raw.jsonl": raw_jsonl,
        "a.jsonl.xz": pack(jsonl, "xz"),
        "a.jsonl.zst": pack(jsonl, "zst"),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        forms[name] = tmp_path / name
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pass
    else:
        try:
            table = pa.table({"text": docs})
        except (UnicodeError, pa.ArrowException):
            pass  # Arrow strings are UTF-8: no lone surrogates
        else:
            pq.write_table(table, tmp_path / "a.parquet", row_group_size=100)
            forms["a.parquet"] = tmp_path / "a.parquet"
    return forms


def _train_form(form: object, **kw: Any) -> Tokenizer:
    """A file goes to `train`, documents held in memory to `train_from_iterator`."""
    if isinstance(form, Path):
        return train(form, **kw)
    assert isinstance(form, list)
    return train_from_iterator(form, **kw)


@pytest.mark.parametrize("workers", [1, 2])
def test_special_token_text_is_never_learned_in_any_format(tmp_path: Path, workers: int) -> None:
    docs = special_docs()
    forms = every_format(tmp_path, docs)
    images = {name: _train_form(form, vocab_size=400, workers=workers).to_bytes() for name, form in forms.items()}
    reference = images["memory"]
    assert {name for name, image in images.items() if image != reference} == set()
    tok = Tokenizer.from_bytes(reference)
    learned = [tok.token_bytes(256 + k) for k in range(len(tok.merges))]
    assert len(learned) > 30
    for piece in (b"<|", b"|>", b"bos", b"<", b">"):
        assert not [t for t in learned if piece in t], piece


def test_in_memory_jsonl_and_parquet_documents_split_at_specials(tmp_path: Path) -> None:
    docs = ["a<|bos|>b<|end|><|end|>c", "<|bos|>", "d<|endoftext|>e"]
    specials = ["<|bos|>", "<|end|>"]
    expected = [b"a", b"b", b"c", b"d<|endoftext|>e"]  # <|endoftext|> separates text files only
    assert list(documents_from_iterable(docs, specials)) == expected
    forms = every_format(tmp_path, docs)
    for name in ("a.jsonl", "raw.jsonl", "a.jsonl.xz", "a.parquet"):
        if name in forms:
            assert list(iter_documents([forms[name]], specials=specials)) == expected, name  # type: ignore[list-item]
    assert list(iter_documents([forms["a.jsonl"]])) == [d.encode() for d in docs]  # type: ignore[list-item]


def test_separators_cut_across_read_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A separator that straddles two read blocks is found; of two that start at the same place
    the longest wins even when the shorter one is complete in the first block."""
    import mnemo.sources as sources

    specials = ["<|a|>", "<|a|>x|>", "|>"]
    text = "one<|a|>x|>two<|a|>three|>four" * 50
    expected = list(documents_from_iterable([text], specials))
    p = tmp_path / "a.txt"
    p.write_text(text)
    for block in (1, 2, 3, 5, 7, 64):
        monkeypatch.setattr(sources, "BLOCK", block)
        assert list(iter_documents([p], specials=specials)) == expected, block
    assert expected[:4] == [b"one", b"two", b"three", b"fourone"]


def test_text_with_many_documents_reads_in_linear_time(tmp_path: Path, within: Callable[..., object]) -> None:
    """Every document start once searched the rest of its block for each of the 17 separators
    (30 MB of English took 117 s).  8 MB of 20,000 documents must take well under a second a MB."""
    from mnemo.vocab import DEFAULT_SPECIAL_TOKENS

    docs = [f"document {i} " + "some words here " * 25 for i in range(20_000)]
    p = tmp_path / "many.txt"
    p.write_text(EOT.join(docs))
    got = within(lambda: sum(1 for _ in iter_documents([p], specials=list(DEFAULT_SPECIAL_TOKENS))), 20)
    assert got == len(docs)


# ---- lone surrogates: one rule, tiktoken's -------------------------------------------------------


def test_lone_surrogates_are_trained_as_encode_sees_them(tmp_path: Path) -> None:
    """A lone surrogate in a str is U+FFFD for Tokenizer.encode (as in tiktoken); training once
    learned it as the bytes ED A0 80.  Every input path now trains on U+FFFD: the tokenizer is
    byte for byte the one trained on the text with U+FFFD written in, and it encodes the
    training text with the merges it learned from it."""
    base = [f"w{i % 7}\ud800x \udc01y{i % 5} z\ud83d" + "\ufffd" * (i % 3) for i in range(200)]
    replaced = [d.replace("\ud800", "\ufffd").replace("\udc01", "\ufffd").replace("\ud83d", "\ufffd") for d in base]
    reference = train_from_iterator(replaced, vocab_size=330, workers=1).to_bytes()
    forms = every_format(tmp_path, base)
    for name in ("memory", "a.jsonl", "raw.jsonl", "a.jsonl.xz"):
        assert _train_form(forms[name], vocab_size=330, workers=1).to_bytes() == reference, name
    tok = Tokenizer.from_bytes(reference)
    learned = [tok.token_bytes(256 + k) for k in range(len(tok.merges))]
    assert not [t for t in learned if b"\xed" in t] and [t for t in learned if "\ufffd".encode() in t]
    assert tok.encode(base[5]) == tok.encode(replaced[5])
    assert len(tok.encode(base[5])) < len(replaced[5].encode()) // 2  # merges of U+FFFD's bytes apply


def test_jsonl_lines_read_in_place_across_read_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSONL reader takes the text fields out of each read block in place (jsonfield's
    string_fields) and hands the lines it declines to json.loads: whatever the block size, the
    documents are json.loads's, in order, and an error names the right line."""
    import mnemo.sources as sources
    from mnemo.sources import str_to_utf8

    lines = [
        '{"text": "plain words"}',
        "",
        '{"text": "esc\\u00e9 \\"q\\" \\n new", "id": "7"}',
        "   ",
        '{"id": 7, "text": "a number before it: json.loads reads this line"}',
        '{"text": "caf\u00e9 \u4e2d\u6587 \U0001f600"}\r',
        '{"text": "lone \\ud800 surrogate"}',
        '  {"meta": {"x": "y"}, "text": "nested: declined, then json.loads"}  ',
        '{"text": ""}',
        '{"text": "' + "long line " * 40 + '"}',
    ] * 3
    p = tmp_path / "a.jsonl"
    p.write_bytes("\n".join(lines).encode("utf-8"))  # no newline after the last line
    expected = [str_to_utf8(json.loads(line)["text"]) for line in lines if line.strip()]
    for block in (1, 2, 3, 5, 7, 64, 1000, 1 << 20):
        monkeypatch.setattr(sources, "BLOCK", block)
        assert list(iter_documents([p])) == expected, block
    bad = [*lines[:7], '{"text": 5}', *lines[7:]]
    p.write_bytes("\n".join(bad).encode("utf-8"))
    for block in (1, 7, 64, 1 << 20):
        monkeypatch.setattr(sources, "BLOCK", block)
        with pytest.raises(InputError, match=r"a\.jsonl:8: field 'text' must be a string \(int\)"):
            list(iter_documents([p]))


# ---- issue 28 item 8: every stream sniffed, --input-format, refused suffixes ----------------------

MNEMO_CLI = str(Path(sys.executable).parent / "mnemo")


@pytest.fixture(scope="module")
def small_tok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("item8") / "tok.bin"
    train_from_iterator(["the cat sat on the mat, and the dog sat on the log"] * 50, vocab_size=300, workers=1).save(path)
    return path


def _tokenize(tok: Path, folder: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [MNEMO_CLI, "tokenize", "-t", str(tok), *args, "-q", "--workers", "1"],
        cwd=folder, input=stdin, capture_output=True, timeout=120,
    )


def test_every_stream_is_sniffed_however_named(small_tok: Path, tmp_path: Path, within: Callable[..., object]) -> None:
    """`-` was sniffed, but /dev/stdin and a FIFO named by path were read as text: one document
    of raw JSON, exit 0.  Now every stream whose name says no format is sniffed, and stderr says
    which format was assumed."""
    docs = [f"document number {i}: the cat sat" for i in range(37)]
    data = "".join(json.dumps({"text": d}) + "\n" for d in docs).encode()
    tok = Tokenizer.load(small_tok)
    for name in ("-", "/dev/stdin"):
        done = _tokenize(small_tok, tmp_path, name, "-o", "s.tok", stdin=data)
        assert done.returncode == 0, done.stderr
        assert open_tok(tmp_path / "s.tok", tok).header.n_docs == 37
        shown = "<stdin>" if name == "-" else name
        assert f"mnemo: reading {shown} as JSON Lines (its first byte is '{{')".encode() in done.stderr, done.stderr
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = feed_fifo(fifo, data)
    done = within(lambda: _tokenize(small_tok, tmp_path, "pipe", "-o", "f.tok"), 60)
    writer.join(10)
    assert done.returncode == 0 and b"reading pipe as JSON Lines" in done.stderr, done.stderr  # type: ignore[attr-defined]
    assert open_tok(tmp_path / "f.tok", tok).header.n_docs == 37
    # text on a stream: said too
    done = _tokenize(small_tok, tmp_path, "/dev/stdin", "-o", "t.tok", stdin=b"plain text<|endoftext|>more text")
    assert done.returncode == 0 and b"reading /dev/stdin as text (its first byte is not '{')" in done.stderr
    assert open_tok(tmp_path / "t.tok", tok).header.n_docs == 2
    # the library alike: kind_of asks the location whether it is a stream
    assert kind_of(fifo) == "auto" and kind_of(Path("/dev/stdin")) == "auto" and kind_of("-") == "auto"


def test_input_format_says_it_outright(small_tok: Path, tmp_path: Path) -> None:
    docs = [f"line {i} of the mat" for i in range(5)]
    data = "".join(json.dumps({"text": d}) + "\n" for d in docs).encode()
    tok = Tokenizer.load(small_tok)
    # JSON read as text on purpose: one document, and no sniffing line
    done = _tokenize(small_tok, tmp_path, "/dev/stdin", "-o", "a.tok", "--input-format", "text", stdin=data)
    assert done.returncode == 0 and b"reading" not in done.stderr, done.stderr
    assert open_tok(tmp_path / "a.tok", tok).header.n_docs == 1
    # JSON Lines in a file whose name says text
    (tmp_path / "records.txt").write_bytes(data)
    done = _tokenize(small_tok, tmp_path, "records.txt", "-o", "b.tok", "--input-format", "jsonl")
    assert done.returncode == 0, done.stderr
    assert open_tok(tmp_path / "b.tok", tok).header.n_docs == 5
    # chat: tokenize's --chat; train has none
    (tmp_path / "talk.txt").write_text(json.dumps({"messages": [{"role": "user", "content": "the cat"}]}) + "\n")
    done = _tokenize(small_tok, tmp_path, "talk.txt", "-o", "c.tok", "--input-format", "chat")
    assert done.returncode == 0, done.stderr
    assert open_tok(tmp_path / "c.tok", tok).header.chat
    done = _tokenize(small_tok, tmp_path, "talk.txt", "-o", "d.tok", "--input-format", "text", "--chat")
    assert done.returncode == 1 and b"--chat reads JSON Lines chat records; --input-format text" in done.stderr
    done = subprocess.run([MNEMO_CLI, "train", "talk.txt", "-o", "t.bin", "--input-format", "chat"], cwd=tmp_path, capture_output=True, timeout=120)
    assert done.returncode == 1 and b"mnemo train has no chat mode" in done.stderr, done.stderr
    assert not (tmp_path / "d.tok").exists() and not (tmp_path / "t.bin").exists()
    # Ray runs plan by absolute path, where the format would be lost: refused, not ignored
    done = _tokenize(small_tok, tmp_path, "records.txt", "-o", "shards", "--input-format", "jsonl", "--ray")
    assert done.returncode == 1 and b"--input-format jsonl does not reach the nodes of a Ray run" in done.stderr, done.stderr
    # the library: Location.read_as
    from mnemo.location import location

    assert kind_of(location(tmp_path / "records.txt").read_as("jsonl")) == "jsonl"
    assert list(iter_documents([location(tmp_path / "records.txt").read_as("jsonl")])) == [d.encode() for d in docs]


def test_suffixes_mnemo_does_not_read_are_refused(small_tok: Path, tmp_path: Path) -> None:
    """A .csv became one document holding its header row, exit 0."""
    (tmp_path / "table.csv").write_text("text,label\nthe cat,1\n")
    done = _tokenize(small_tok, tmp_path, "table.csv", "-o", "x.tok")
    err = done.stderr.decode()
    assert done.returncode == 1 and "table.csv: mnemo does not read .csv files" in err, err
    assert "JSON Lines (.jsonl" in err and "--input-format" in err and "Traceback" not in err
    assert not (tmp_path / "x.tok").exists()
    with gzip.open(tmp_path / "data.tsv.gz", "wt") as f:
        f.write("text\tlabel\n")
    with pytest.raises(InputError, match=r"data\.tsv\.gz: mnemo does not read \.tsv files"):
        check_inputs([tmp_path / "data.tsv.gz"])
    done = subprocess.run([MNEMO_CLI, "train", "table.csv", "-o", "t.bin"], cwd=tmp_path, capture_output=True, timeout=120)
    assert done.returncode == 1 and b"does not read .csv files" in done.stderr
    # said outright, it is read
    done = _tokenize(small_tok, tmp_path, "table.csv", "-o", "x.tok", "--input-format", "text")
    assert done.returncode == 0, done.stderr
    # any other name is text, as before (code, Markdown, no suffix)
    for name in ("notes.md", "main.py", "README"):
        (tmp_path / name).write_text("the cat sat")
        assert kind_of(tmp_path / name) == "text"
