"""`tokenize_files` (mnemo/tokenizing.py): plain files go to the workers as byte ranges that they
read themselves, compressed files as blocks of documents read by the parent; either way the .tok
file is the one a single process writes."""

from __future__ import annotations

import json
import lzma
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mnemo import Tokenizer, tokenizing, open_tok, sources, train_from_iterator
from mnemo.errors import InputError
from mnemo.sources import plan_tasks


@pytest.fixture(scope="module")
def docs(corpus_docs: Callable[..., list[str]]) -> list[str]:
    return corpus_docs("english", max_bytes=400_000)


@pytest.fixture(scope="module")
def tok(docs: list[str]) -> Tokenizer:
    return train_from_iterator(iter(docs), vocab_size=600)


def test_every_input_kind_gives_the_single_process_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[str], tok: Tokenizer
) -> None:
    monkeypatch.setattr(tokenizing, "TASK_BYTES", 32 << 10)  # many small ranges
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    txt = tmp_path / "b.txt"
    txt.write_text("<|endoftext|>".join(docs))
    xz = tmp_path / "c.jsonl.xz"
    xz.write_bytes(lzma.compress(jsonl.read_bytes()))
    inputs: list[Path] = [jsonl, txt, xz]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pass
    else:
        parquet = tmp_path / "d.parquet"
        pq.write_table(pa.table({"text": docs}), parquet, row_group_size=max(1, len(docs) // 3))
        inputs.append(parquet)
    assert len(plan_tasks([jsonl], n_workers=2, min_task_bytes=32 << 10, max_task_bytes=32 << 10, whole_documents=True)) > 5
    assert len(plan_tasks([txt], n_workers=2, min_task_bytes=32 << 10, max_task_bytes=32 << 10, whole_documents=True)) > 5

    one = tokenizing.tokenize_files(inputs, tok, tmp_path / "one.tok", workers=1)
    two = tokenizing.tokenize_files(inputs, tok, tmp_path / "two.tok", workers=2)
    assert (tmp_path / "one.tok").read_bytes() == (tmp_path / "two.tok").read_bytes()
    assert (one.n_docs, one.n_tokens, one.n_bytes) == (two.n_docs, two.n_tokens, two.n_bytes)
    assert one.n_docs == len(inputs) * len(docs)
    assert one.n_bytes == len(inputs) * sum(len(d.encode()) for d in docs)
    bos = tok.special_tokens["<|bos|>"]
    expected = [i for d in docs for i in [bos, *tok.encode_ordinary(d)]] * len(inputs)
    assert np.array_equal(open_tok(tmp_path / "two.tok", tok).tokens, np.array(expected, dtype=np.uint16))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_get_the_tokenizer_either_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[str], tok: Tokenizer, method: str) -> None:
    """Forked workers use the parent's tokenizer as the fork copied it; workers started as fresh
    interpreters (mnemo.work.spawned_main) rebuild it from its tokenizer.bin image.  Same file
    as one process."""
    import multiprocessing

    from mnemo import work

    work._shutdown_all()  # workers started before the patch would not be `method`'s
    monkeypatch.setattr(tokenizing, "TASK_BYTES", 64 << 10)
    monkeypatch.setattr(work, "worker_context", lambda: multiprocessing.get_context(method))
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[:200]))
    try:
        tokenizing.tokenize_files([src], tok, tmp_path / "one.tok", workers=1)
        tokenizing.tokenize_files([src], tok, tmp_path / "two.tok", workers=2)
        assert work._SHARED is not None and work._SHARED._workers
        spawned = [b"spawned_main" in Path(f"/proc/{w.pid}/cmdline").read_bytes() for w in work._SHARED._workers]
        assert spawned == [method == "spawn"] * len(spawned)
    finally:
        work._shutdown_all()
    assert (tmp_path / "one.tok").read_bytes() == (tmp_path / "two.tok").read_bytes()


def test_a_bad_line_in_a_worker_range_names_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[str], tok: Tokenizer) -> None:
    monkeypatch.setattr(tokenizing, "TASK_BYTES", 32 << 10)
    lines = [json.dumps({"text": d}) + "\n" for d in docs]
    bad = len(lines) - 3
    lines[bad] = "{not json\n"
    src = tmp_path / "a.jsonl"
    src.write_text("".join(lines))
    out = tmp_path / "out.tok"
    with pytest.raises(InputError, match=rf"{src}:{bad + 1}: "):
        tokenizing.tokenize_files([src], tok, out, workers=2)
    assert not out.exists() and list(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_long_text_document_stays_one_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[str], tok: Tokenizer, workers: int
) -> None:
    """Counting hands a text document longer than 4 read blocks (32 MB) on in pieces; tokenize
    must not: every piece would get its own <|bos|>.  Blocks of 1 KB make a 40 KB document long."""
    monkeypatch.setattr(sources, "BLOCK", 1024)
    text = " ".join(docs)[:40_000]
    src = tmp_path / "long.txt"
    src.write_text(text)
    assert len(list(sources.iter_task_documents(sources.Task(str(src), "text")))) > 1  # counting's view
    stats = tokenizing.tokenize_files([src], tok, tmp_path / "out.tok", workers=workers)
    assert stats.n_docs == 1
    bos = tok.special_tokens["<|bos|>"]
    expected = [bos, *tok.encode_ordinary(text)]
    assert np.array_equal(open_tok(tmp_path / "out.tok", tok).tokens, np.array(expected, dtype=np.uint16))


def test_small_files_go_to_the_workers_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[str], tok: Tokenizer
) -> None:
    """Thousands of small files (mnemo demo's corpus) must not cost a worker round trip each:
    whole files are gathered up to TASK_BYTES per piece of work.  Same file as one process."""
    monkeypatch.setattr(tokenizing, "TASK_BYTES", 32 << 10)
    files = []
    for k, text in enumerate(docs[:60]):
        f = tmp_path / f"f{k:03}.txt"
        f.write_text(text)
        files.append(f)
    pieces = list(tokenizing._work(files, "text", False, 2))
    assert all(tasks and not block for tasks, block in pieces)
    assert [t.path for tasks, _ in pieces for t in tasks] == [str(f) for f in files]
    assert len(pieces) < len(files) // 3
    tokenizing.tokenize_files(files, tok, tmp_path / "one.tok", workers=1)
    tokenizing.tokenize_files(files, tok, tmp_path / "two.tok", workers=2)
    assert (tmp_path / "one.tok").read_bytes() == (tmp_path / "two.tok").read_bytes()
    assert open_tok(tmp_path / "two.tok", tok).header.n_docs == 60


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"role": "robot", "content": "x"}, r"message 1 has role 'robot'"),
        ({"role": "user", "content": 5}, r"message 1 \(user\) has content of type int"),
        ({"role": "user", "content": "a <|end|> b"}, r"message 1 \(user\): the text contains the special token '<\|end\|>'"),
        ("hello", r"message 1 is a str"),
    ],
)
def test_a_chat_error_names_the_file_and_the_record(
    tmp_path: Path, tok: Tokenizer, message: object, error: str, workers: int
) -> None:
    """A bad message once gave "message 1 ..." of no record in particular: the error names the
    file and the line of the record, whichever process renders it."""
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    bad = {"messages": [{"role": "user", "content": "hi"}, message]}
    src = tmp_path / "chat.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [good, good, good, bad, good]) + "\n")
    out = tmp_path / "out.tok"
    with pytest.raises(InputError, match=rf"^{src}:4: {error}"):
        tokenizing.tokenize_files([src], tok, out, chat=True, workers=workers)
    assert not out.exists()


def test_a_nested_record_is_an_error_naming_its_line(tmp_path: Path, tok: Tokenizer) -> None:
    src = tmp_path / "deep.jsonl"
    src.write_text('{"text": "ok"}\n' + "[" * 100_000 + "\n")
    with pytest.raises(InputError, match=rf"{src}:2: the JSON is nested too deeply"):
        tokenizing.tokenize_files([src], tok, tmp_path / "out.tok", workers=1)
    chat = tmp_path / "deep-chat.jsonl"
    chat.write_text('{"messages": []}\n' + '{"messages": ' + "[" * 100_000 + "\n")
    with pytest.raises(InputError, match=rf"{chat}:2: the JSON is nested too deeply"):
        tokenizing.tokenize_files([chat], tok, tmp_path / "out.tok", chat=True, workers=1)
