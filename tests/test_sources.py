"""Input files: formats, compression, document splitting, task planning and clear errors."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import pytest

from mnemo.errors import ConfigError, InputError
from mnemo.sources import (
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
