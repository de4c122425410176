"""Training stacks' token files (issue 15 item 4): Megatron-LM's .bin/.idx, datatrove's
.ds/.ds.index/.ds.loss and nanoGPT's flat .bin, written by `tokenize --format` and read back.

How each is checked against its owner (docs/token-files.md):
- datatrove installs without torch: its own readers (merger.load_doc_ends / get_data_reader and
  the DocumentTokenizerMerger step) read mnemo's files, and its own Megatron writer
  (MegatronTokenizedFile) is an independent second writer of Megatron's format;
- Megatron's reader imports torch, so its files are also compared byte for byte with a file
  built here by hand from the format's definition (megatron/core/datasets/indexed_dataset.py);
- nanoGPT reads with `np.memmap(path, dtype=np.uint16, mode='r')` (train.py), done here.
The expected ids are always `encode_ordinary` of each document with its separators.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import zlib
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemo import Tokenizer, open_tok
from mnemo.cli import main
from mnemo.tokenizing import tokenize_files
from mnemo.errors import ConfigError, FormatError, InputError
from mnemo.constants import MASKBIT
from mnemo.interop import load_gpt2
from mnemo.stackfiles import (
    DatatroveWriter,
    MegatronWriter,
    NanoGPTWriter,
    Separators,
    metric,
    read_datatrove,
    read_megatron,
    read_nanogpt,
    read_stack_file,
)
from mnemo.training import train_from_iterator

MNEMO = str(Path(sys.executable).parent / "mnemo")
# an empty document, special-token text as plain text, and ordinary ones
DOCS = ["first doc", "", "say <|bos|> and <|endoftext|> as text", "second doc\n", "a third, longer document."]
CHATS = [
    {"messages": [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello!"}]},
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]},
]


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return train_from_iterator([" ".join(DOCS) * 20], vocab_size=300, workers=1)


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> Tokenizer:
    return load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")


def _jsonl(path: Path, docs: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    return path


def _expected(tok: Tokenizer, docs: list[str], bos: int | None, eos: int | None) -> list[list[int]]:
    return [[*([bos] if bos is not None else []), *tok.encode_ordinary(d), *([eos] if eos is not None else [])] for d in docs]


def _megatron_by_hand(docs: list[list[int]], code: int, dtype: str) -> tuple[bytes, bytes]:
    """.bin and .idx from the definition: b"MMIDIDX\\0\\0", <Q version 1, <B dtype code, <Q
    sequence count, <Q document count (+1), int32 lengths, int64 byte pointers, int64 document
    indices from 0; one sequence per non-empty document (preprocess_data.py skips empty ones)."""
    seqs = [d for d in docs if d]
    size = np.dtype(dtype).itemsize
    pointers = np.cumsum([0] + [len(s) * size for s in seqs])[:-1]
    doc_index = np.cumsum([0] + [1 if d else 0 for d in docs])
    idx = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, code, len(seqs), len(docs) + 1)
    idx += np.array([len(s) for s in seqs], "<i4").tobytes() + np.array(pointers, "<i8").tobytes()
    idx += np.array(doc_index, "<i8").tobytes()
    data = np.array([t for s in seqs for t in s], dtype).tobytes()
    return data, idx


def _in_datatrove_child(code: str, **values: Any) -> Any:
    """Run `code` in a child Python, with `values` as JSON in `V`; it prints its answer as JSON.
    datatrove's file layer (fsspec) starts an I/O thread, and a process with threads must not
    fork mnemo's workers afterwards (a forked worker can inherit a held lock and hang: that
    hung test_cli in this same pytest process), so datatrove never runs in the test process."""
    if importlib.util.find_spec("datatrove") is None:
        pytest.skip("datatrove is not installed (it is in the test extra)")
    prelude = "import json, sys\nimport numpy as np\nV = json.loads(sys.argv[1])\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code), json.dumps(values)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


READ_DATATROVE = """
from datatrove.pipeline.tokens.merger import get_data_reader, load_doc_ends
ends = load_doc_ends(open(V["ds"] + ".index", "rb"))
dtype = "<u2" if V["size"] == 2 else "<u4"
docs = [np.frombuffer(b, dtype).tolist() for b in get_data_reader(open(V["ds"], "rb"), ends, nb_bytes=V["size"])]
print(json.dumps([ends.tolist(), docs]))
"""


# ---- Megatron ------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_megatron_is_the_format_built_by_hand(tok: Tokenizer, tmp_path: Path, workers: int) -> None:
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    stats = tokenize_files([src], tok, tmp_path / "out", workers=workers, format="megatron")
    docs = _expected(tok, DOCS, tok.special_tokens["<|bos|>"], None)
    data, idx = _megatron_by_hand(docs, 8, "<u2")
    assert (tmp_path / "out.bin").read_bytes() == data
    assert (tmp_path / "out.idx").read_bytes() == idx
    f = read_megatron(tmp_path / "out")
    assert [d.tolist() for d in f.documents()] == docs
    assert stats.n_docs == f.n_docs == len(DOCS)
    assert f.sidecar is not None and f.sidecar["fingerprint"] == tok.fingerprint


def test_megatron_without_separators_keeps_boundaries_and_empty_documents(tok: Tokenizer, tmp_path: Path) -> None:
    """No separator chosen: a marker finds the boundaries and is removed; the empty document is
    a document of no sequence (its document index repeats), as Megatron's own tools write it."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    stats = tokenize_files([src], tok, tmp_path / "out.bin", workers=2, format="megatron", bos=None, eos=None)
    docs = _expected(tok, DOCS, None, None)
    assert docs[1] == []
    data, idx = _megatron_by_hand(docs, 8, "<u2")
    assert (tmp_path / "out.bin").read_bytes() == data
    assert (tmp_path / "out.idx").read_bytes() == idx
    assert [d.tolist() for d in read_megatron(tmp_path / "out.idx").documents()] == docs
    assert stats.n_tokens == sum(len(d) for d in docs)  # the markers are not counted


def test_megatron_matches_datatroves_megatron_writer(tmp_path: Path) -> None:
    """datatrove's MegatronTokenizedFile, written apart from Megatron, gives the same bytes --
    with uint16 (code 8) and, for a vocabulary of 65,500 ids or more, int32 (code 4)."""
    rng = np.random.default_rng(0)
    for n_vocab, token_size in ((50257, 2), (65500, 4), (100277, 4)):
        docs = [rng.integers(0, n_vocab, size=int(n)).tolist() for n in rng.integers(1, 50, size=40)]
        _in_datatrove_child(
            """
            from datatrove.pipeline.tokens.megatron_tokenizer import MegatronTokenizedFile
            theirs = MegatronTokenizedFile(V["folder"], V["name"], token_size=V["token_size"])
            for d in V["docs"]:
                theirs.write(d)
            theirs.close()
            print("true")
            """,
            folder=str(tmp_path), name=f"dt{n_vocab}", token_size=token_size, docs=docs,
        )
        with MegatronWriter(tmp_path / f"mn{n_vocab}", n_vocab=n_vocab) as w:
            for d in docs:
                w.write_doc(d)
        for ext in (".bin", ".idx"):
            assert (tmp_path / f"mn{n_vocab}{ext}").read_bytes() == (tmp_path / f"dt{n_vocab}{ext}").read_bytes()
        f = read_megatron(tmp_path / f"mn{n_vocab}.bin")
        assert f.tokens.dtype == np.dtype("<u2" if token_size == 2 else "<i4")
        assert [d.tolist() for d in f.documents()] == docs


def test_megatron_reader_refuses_damage(tok: Tokenizer, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], tok, tmp_path / "out", workers=1, format="megatron")
    data = (tmp_path / "out.bin").read_bytes()
    (tmp_path / "out.bin").write_bytes(data[:-2])
    with pytest.raises(FormatError, match=r"out\.bin: .* bytes, but .*out\.idx announces"):
        read_megatron(tmp_path / "out")
    (tmp_path / "out.bin").write_bytes(data)
    idx = (tmp_path / "out.idx").read_bytes()
    (tmp_path / "out.idx").write_bytes(b"XXIDIDX\x00\x00" + idx[9:])
    with pytest.raises(FormatError, match="offset 0: bad magic"):
        read_megatron(tmp_path / "out")
    (tmp_path / "out.idx").write_bytes(idx[:-8])
    with pytest.raises(FormatError, match="truncated"):
        read_megatron(tmp_path / "out")


# ---- datatrove ------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_datatrove_is_read_by_datatrove(gpt2: Tokenizer, tmp_path: Path, workers: int) -> None:
    """datatrove's own readers (the merger's load_doc_ends and get_data_reader) give back each
    document; GPT-2's vocabulary ends each with <|endoftext|>."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], gpt2, tmp_path / "train", workers=workers, format="datatrove")
    ds = tmp_path / "train.ds"
    docs = _expected(gpt2, DOCS, None, gpt2.special_tokens["<|endoftext|>"])
    _, got = _in_datatrove_child(READ_DATATROVE, ds=str(ds), size=2)
    assert got == docs
    assert (tmp_path / "train.ds.metadata").read_text().split("\n")[0] == f"mnemo-{gpt2.fingerprint}|2"
    assert not (tmp_path / "train.ds.loss").exists()
    f = read_datatrove(ds)
    assert [d.tolist() for d in f.documents()] == docs and f.loss_mask is None


def test_datatrove_merger_copies_mnemos_files_exactly(tok: Tokenizer, tmp_path: Path) -> None:
    """datatrove's DocumentTokenizerMerger (no shuffling) reads a folder of mnemo's files --
    tokens, index, loss mask and the metadata's token size -- and writes them out again:
    the same bytes."""
    src = tmp_path / "chat.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in CHATS * 3))
    (tmp_path / "in").mkdir()
    tokenize_files([src], tok, tmp_path / "in" / "part", workers=1, format="datatrove", chat=True)
    _in_datatrove_child(
        """
        from datatrove.pipeline.tokens.merger import DocumentTokenizerMerger
        DocumentTokenizerMerger(V["src"], V["dst"], "all", shuffle=False, save_loss_metadata=True, progress=False).run()
        print("true")
        """,
        src=str(tmp_path / "in"), dst=str(tmp_path / "merged"),
    )
    for ext in ("", ".index", ".loss"):
        assert (tmp_path / "merged" / f"000_all.ds{ext}").read_bytes() == (tmp_path / "in" / f"part.ds{ext}").read_bytes()


def test_datatrove_chat_loss_is_the_tok_mask(tok: Tokenizer, tmp_path: Path) -> None:
    """.ds holds the ids without MASKBIT, .ds.loss one byte a token: 1 where the .tok of the
    same chats has MASKBIT (what the model learns), 0 elsewhere; a document per conversation."""
    src = tmp_path / "chat.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in CHATS))
    tokenize_files([src], tok, tmp_path / "c.tok", workers=1, chat=True)
    tokenize_files([src], tok, tmp_path / "c.ds", workers=1, chat=True, format="datatrove")
    ref = np.asarray(open_tok(tmp_path / "c.tok", tok).tokens).astype(np.int64)
    f = read_datatrove(tmp_path / "c.ds")
    assert f.tokens.tolist() == (ref & ~MASKBIT).tolist()
    assert f.loss_mask is not None
    assert f.loss_mask.tolist() == ((ref & MASKBIT) != 0).astype(int).tolist()
    assert 0 < int(f.loss_mask.sum()) < f.loss_mask.size
    bos = tok.special_tokens["<|bos|>"]
    assert [int(d[0]) for d in f.documents()] == [bos, bos]


def test_datatrove_uint32_tokens(tmp_path: Path) -> None:
    """Above 65,536 ids datatrove stores 4-byte tokens and says so in .ds.metadata ('|4'),
    which its merger reads."""
    docs = [[70000, 1, 65536], [], [99999]]
    with DatatroveWriter(tmp_path / "w.ds", n_vocab=100000) as w:
        for d in docs:
            w.write_doc(d)
    assert (tmp_path / "w.ds").read_bytes() == np.array([70000, 1, 65536, 99999], "<u4").tobytes()
    assert (tmp_path / "w.ds.metadata").read_text().split("\n")[:2] == ["mnemo|4", "4"]
    ends, got = _in_datatrove_child(READ_DATATROVE, ds=str(tmp_path / "w.ds"), size=4)
    assert ends == [3, 3, 4] and got == docs
    assert [d.tolist() for d in read_datatrove(tmp_path / "w.ds.index").documents()] == docs


def test_metadata_count_is_written_as_humanize_writes_it() -> None:
    humanize = pytest.importorskip("humanize")
    for value in (0, 1, 9, 12, 99, 999, 1000, 1234, 9995, 12345, 99_949, 999_499, 999_999, 1_000_000, 9_035_582_198):
        assert metric(value, "T") == humanize.metric(value, unit="T")


# ---- nanoGPT --------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_nanogpt_is_what_nanogpt_memory_maps(gpt2: Tokenizer, tmp_path: Path, workers: int) -> None:
    """nanoGPT's train.py reads `np.memmap(path, dtype=np.uint16, mode='r')`: GPT-2's ids of
    each document followed by <|endoftext|> (50256), as its prepare.py writes them."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], gpt2, tmp_path / "train.bin", workers=workers, format="nanogpt")
    docs = _expected(gpt2, DOCS, None, 50256)
    assert np.memmap(tmp_path / "train.bin", dtype=np.uint16, mode="r").tolist() == [t for d in docs for t in d]
    f = read_nanogpt(tmp_path / "train.bin")
    assert [d.tolist() for d in f.documents()] == docs  # boundaries from the sidecar's separator


def test_nanogpt_refuses_what_it_cannot_hold(tok: Tokenizer, tmp_path: Path) -> None:
    src = tmp_path / "chat.jsonl"
    src.write_text(json.dumps(CHATS[0]) + "\n")
    for fmt in ("nanogpt", "megatron"):
        with pytest.raises(ConfigError, match="no place for a loss mask.*--format datatrove"):
            tokenize_files([src], tok, tmp_path / "x.bin", workers=1, chat=True, format=fmt)
    with pytest.raises(ConfigError, match="uint16 ids; a vocabulary of 100277 ids"):
        NanoGPTWriter(tmp_path / "y.bin", n_vocab=100277)
    assert _leftovers(tmp_path, {"chat.jsonl"}) == []


# ---- many documents, separators ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["megatron", "datatrove"])
def test_many_documents_in_many_blocks(tok: Tokenizer, tmp_path: Path, fmt: str) -> None:
    """5,000 documents (some empty) over 2 workers, in many blocks: every boundary where the
    .tok's <|bos|> tokens put it."""
    rng = np.random.default_rng(1)
    words = ["doc", "text", "", "a", "longer words here", "<|bos|>"]
    docs = [" ".join(rng.choice(words, size=int(rng.integers(0, 6)))) for _ in range(5000)]
    src = _jsonl(tmp_path / "in.jsonl", docs)
    tokenize_files([src], tok, tmp_path / "ref.tok", workers=2)
    stats = tokenize_files([src], tok, tmp_path / "out", workers=2, format=fmt)
    f = read_stack_file(tmp_path / ("out.idx" if fmt == "megatron" else "out.ds"))
    assert stats.n_docs == f.n_docs == 5000
    ref = np.asarray(open_tok(tmp_path / "ref.tok", tok).tokens)
    assert f.tokens.tolist() == ref.tolist()
    starts = np.flatnonzero(ref == tok.special_tokens["<|bos|>"])
    assert f.doc_ends is not None and f.doc_ends.tolist() == [*starts[1:].tolist(), ref.size]


def test_same_token_before_and_after(gpt2: Tokenizer, tmp_path: Path) -> None:
    """--bos and --eos both <|endoftext|>: each document is EOT text EOT, and the boundaries
    pair them up."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], gpt2, tmp_path / "o", workers=1, format="datatrove", bos="<|endoftext|>", eos="<|endoftext|>")
    assert [d.tolist() for d in read_datatrove(tmp_path / "o.ds").documents()] == _expected(gpt2, DOCS, 50256, 50256)


def test_writer_refuses_a_block_it_cannot_split(tmp_path: Path) -> None:
    with MegatronWriter(tmp_path / "m", n_vocab=1000, separators=Separators(eos=999)) as w:
        w.write([1, 2, 999, 3, 999], 2)
        with pytest.raises(InputError, match="block of 2 documents holds 1 separator tokens 999"):
            w.write([1, 2, 999, 3], 2)
        with pytest.raises(InputError, match="token id 1000 is not an id of a 1000-id vocabulary"):
            w.write([1000], 1)
    with pytest.raises(ConfigError, match="no separator token to tell them apart"):
        with MegatronWriter(tmp_path / "n", n_vocab=1000) as w:
            w.write([1, 2, 3], 2)
    assert [d.tolist() for d in read_megatron(tmp_path / "m").documents()] == [[1, 2, 999], [3, 999]]
    assert not (tmp_path / "n.bin").exists()


# ---- atomic writes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [MegatronWriter, DatatroveWriter, NanoGPTWriter])
def test_a_failed_write_leaves_no_file(cls: Any, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with cls(tmp_path / "x", n_vocab=1000, separators=Separators(eos=999)) as w:
            w.write([1, 999], 1)
            raise RuntimeError("interrupted")
    assert _leftovers(tmp_path, set()) == []


@pytest.mark.parametrize("fmt", ["megatron", "datatrove", "nanogpt"])
def test_an_interrupted_tokenize_leaves_no_file(tok: Tokenizer, tmp_path: Path, fmt: str) -> None:
    src = _jsonl(tmp_path / "in.jsonl", DOCS * 200)
    calls = []

    def progress(phase: str, done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tokenize_files([src], tok, tmp_path / "out", workers=1, format=fmt, progress=progress)
    assert _leftovers(tmp_path, {"in.jsonl"}) == []


def test_a_failed_rename_takes_back_the_parts_renamed_before(tok: Tokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key (.idx) is renamed last, after the old key was removed: when its rename fails,
    the parts renamed before it are removed again, and no old .idx is left beside new parts."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], tok, tmp_path / "out", workers=1, format="megatron")  # an old set
    renamed: list[str] = []
    real = os.replace

    def replace(a: Any, b: Any) -> None:
        if str(b).endswith(".idx"):
            raise OSError(28, "No space left on device", str(b))
        renamed.append(Path(b).name)
        real(a, b)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(InputError, match=r"cannot write .*out\.idx: No space left on device"):
        tokenize_files([src], tok, tmp_path / "out", workers=1, format="megatron", bos=None, eos=None)
    assert renamed == ["out.mnemo.json", "out.bin"]
    assert _leftovers(tmp_path, {"in.jsonl"}) == []


def test_a_killed_cli_run_leaves_no_file(tok: Tokenizer, tmp_path: Path) -> None:
    """SIGKILL in the middle of a run (reading standard input that is still open): nothing
    under any final name (a temporary .NAME.tmp-PID may stay, as with .tok)."""
    tok.save(tmp_path / "tok.bin")
    proc = subprocess.Popen(
        [MNEMO, "tokenize", "-t", str(tmp_path / "tok.bin"), "-", "-o", str(tmp_path / "out"), "--format", "datatrove",
         "--workers", "1", "-q"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(b"".join(json.dumps({"text": d}).encode() + b"\n" for d in DOCS * 100))
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while not any(p.name.startswith(".out.ds.tmp-") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline, "the writer never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".") and p.name != "tok.bin"] == []


# ---- sidecar, info, command line ----------------------------------------------------------------


def test_a_stale_sidecar_is_refused(tok: Tokenizer, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], tok, tmp_path / "t.bin", workers=1, format="nanogpt")
    np.array([1, 2, 3], "<u2").tofile(tmp_path / "t.bin")  # rewritten by another tool
    with pytest.raises(FormatError, match=r"t\.bin\.mnemo\.json: says n_tokens .*, but the files hold 3"):
        read_nanogpt(tmp_path / "t.bin")


@pytest.mark.parametrize(
    ("fmt", "output", "files"),
    [
        ("megatron", "out", ["out.bin", "out.idx", "out.mnemo.json"]),
        ("datatrove", "out", ["out.ds", "out.ds.index", "out.ds.metadata", "out.ds.mnemo.json"]),
        ("nanogpt", "train.bin", ["train.bin", "train.bin.mnemo.json"]),
        ("nanogpt", "train", ["train", "train.mnemo.json"]),  # no .bin: the sidecar says what it is
    ],
)
def test_cli_tokenize_and_info(tok: Tokenizer, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, output: str, files: list[str]) -> None:
    tok.save(tmp_path / "tok.bin")
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    out = tmp_path / "o"
    out.mkdir()
    assert main(["tokenize", "-t", str(tmp_path / "tok.bin"), str(src), "-o", str(out / output), "--format", fmt, "-q"]) == 0
    said = capsys.readouterr().out
    assert f"tokenized {out / files[0]}" in said and "5 documents" in said
    assert sorted(p.name for p in out.iterdir()) == files
    assert main(["info", str(out / files[0])]) == 0
    said = capsys.readouterr().out
    assert "documents    5" in said
    assert f"fingerprint  {tok.fingerprint}" in said


def test_cli_refuses_chat_for_megatron(tok: Tokenizer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok.save(tmp_path / "tok.bin")
    src = tmp_path / "chat.jsonl"
    src.write_text(json.dumps(CHATS[0]) + "\n")
    assert main(["tokenize", "-t", str(tmp_path / "tok.bin"), "--chat", str(src), "-o", str(tmp_path / "o"), "--format", "megatron", "-q"]) != 0
    assert "no place for a loss mask" in capsys.readouterr().err
    assert _leftovers(tmp_path, {"tok.bin", "chat.jsonl"}) == []


def test_cli_refuses_an_output_part_that_is_an_input(tok: Tokenizer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o data --format megatron` writes data.bin: when data.bin is an input, refused before any work."""
    tok.save(tmp_path / "tok.bin")
    src = tmp_path / "data.bin"
    src.write_text("some text\n")
    assert main(["tokenize", "-t", str(tmp_path / "tok.bin"), str(src), "-o", str(tmp_path / "data"), "--format", "megatron", "-q"]) != 0
    assert "the output is also the input" in capsys.readouterr().err
    assert src.read_text() == "some text\n"


def test_a_new_set_replaces_every_part_of_an_old_one(tok: Tokenizer, tmp_path: Path) -> None:
    """Documents written over an earlier chat set of the same name: its .ds.loss goes too, or
    datatrove's merger would pair the old mask with the new tokens."""
    chats = tmp_path / "chat.jsonl"
    chats.write_text("".join(json.dumps(c) + "\n" for c in CHATS))
    tokenize_files([chats], tok, tmp_path / "o.ds", workers=1, chat=True, format="datatrove")
    assert (tmp_path / "o.ds.loss").exists()
    tokenize_files([_jsonl(tmp_path / "in.jsonl", DOCS)], tok, tmp_path / "o.ds", workers=1, format="datatrove")
    assert not (tmp_path / "o.ds.loss").exists()
    f = read_datatrove(tmp_path / "o.ds")
    assert f.loss_mask is None and f.n_docs == len(DOCS)


@pytest.mark.parametrize("fmt", ["megatron", "datatrove", "nanogpt"])
def test_no_documents_at_all(tok: Tokenizer, tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "empty.jsonl"
    src.write_text("")
    tokenize_files([src], tok, tmp_path / "o.bin", workers=1, format=fmt)
    f = read_stack_file(tmp_path / ("o.idx" if fmt == "megatron" else "o.bin.ds" if fmt == "datatrove" else "o.bin"), fmt)
    assert f.tokens.size == 0 and f.documents() == []
    if fmt == "megatron":
        assert (tmp_path / "o.idx").read_bytes() == _megatron_by_hand([], 8, "<u2")[1]


# ---- issue 28 item 5: each index checked against mnemo's sidecar ------------------------------------


def test_a_changed_megatron_dtype_code_is_refused(tok: Tokenizer, tmp_path: Path) -> None:
    """dtype code 8 (uint16) changed to 3 (int16): GPT-2 ids above 32,767 read negative, and
    `mnemo info` showed int16 while the sidecar says uint16."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], tok, tmp_path / "out", workers=1, format="megatron", bos="<|bos|>")
    idx = bytearray((tmp_path / "out.idx").read_bytes())
    assert idx[17] == 8
    idx[17] = 3
    (tmp_path / "out.idx").write_bytes(bytes(idx))
    with pytest.raises(FormatError, match=r"out\.idx: holds int16 tokens, but .*out\.mnemo\.json says uint16"):
        read_megatron(tmp_path / "out")


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("sep", ["bos", "eos"])
def test_a_moved_megatron_document_boundary_is_refused(tok: Tokenizer, tmp_path: Path, sep: str) -> None:
    """One flipped low bit in the document index: a document starts one sequence later, so it
    does not start with <|bos|> (or the one before does not end with eos) as the sidecar says."""
    src = _jsonl(tmp_path / "in.jsonl", [f"document {i}" for i in range(20)])
    tokenize_files([src], tok, tmp_path / "out", workers=1, format="megatron", **{sep: "<|bos|>"})
    assert len(read_megatron(tmp_path / "out").documents()) == 20
    n_seq = struct.unpack_from("<Q", (tmp_path / "out.idx").read_bytes(), 18)[0]
    _flip(tmp_path / "out.idx", 34 + 12 * n_seq + 8 * 6)  # document index 6: 6 -> 7
    with pytest.raises(FormatError, match=rf"out\.idx: document \d+ .* does not {'start' if sep == 'bos' else 'end'} with {sep}"):
        read_megatron(tmp_path / "out")


@pytest.mark.parametrize("chat", [False, True])
def test_a_moved_datatrove_document_end_is_refused(tok: Tokenizer, tmp_path: Path, chat: bool) -> None:
    src = tmp_path / "in.jsonl"
    if chat:
        src.write_text("".join(json.dumps(c) + "\n" for c in CHATS * 5))
    else:
        _jsonl(src, [f"document {i}" for i in range(20)])
    separator: dict[str, Any] = {} if chat else {"bos": "<|bos|>"}  # a chat starts with <|bos|> anyway
    tokenize_files([src], tok, tmp_path / "out", workers=1, format="datatrove", chat=chat, **separator)
    _flip(tmp_path / "out.ds.index", 8 * 5)  # the end of document 5, one token off
    with pytest.raises(FormatError, match=r"out\.ds\.index: document [56] .* does not start with bos"):
        read_datatrove(tmp_path / "out.ds")


def test_a_datatrove_token_size_other_than_the_sidecar_is_refused(tok: Tokenizer, tmp_path: Path) -> None:
    for n in range(1, len(DOCS) + 1):  # an even number of tokens: a whole number of 4-byte ones
        src = _jsonl(tmp_path / "in.jsonl", DOCS[:n])
        tokenize_files([src], tok, tmp_path / "out", workers=1, format="datatrove", bos="<|bos|>")
        if (tmp_path / "out.ds").stat().st_size % 4 == 0:
            break
    meta = tmp_path / "out.ds.metadata"
    meta.write_text(meta.read_text().replace("|2\n", "|4\n", 1))
    with pytest.raises(FormatError, match=r"holds uint32 tokens, but .*out\.ds\.mnemo\.json says uint16"):
        read_datatrove(tmp_path / "out.ds")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda text: "[" * 100_000, "not valid JSON \\(nested too deeply\\)"),
        (lambda text: text.replace('"n_docs": ', '"n_docs": "x", "was": '), "'n_docs' is 'x', not a count"),
        (lambda text: text.replace('"dtype": "uint16"', '"dtype": ["uint16"]'), "'dtype' is .* not one of uint16"),
    ],
)
@pytest.mark.parametrize("fmt, output, sidecar, shown", [("megatron", "out", "out.mnemo.json", "out.idx"),
                                                         ("datatrove", "out", "out.ds.mnemo.json", "out.ds"),
                                                         ("nanogpt", "out.bin", "out.bin.mnemo.json", "out.bin")])
def test_a_hostile_sidecar_is_a_format_error(tok: Tokenizer, tmp_path: Path, edit: Any, match: str, fmt: str, output: str,
                                             sidecar: str, shown: str) -> None:
    """Issue 28 item 14: '[' * 100000 in a sidecar was a RecursionError traceback."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], tok, tmp_path / output, workers=1, format=fmt, bos="<|bos|>")
    side = tmp_path / sidecar
    side.write_text(edit(side.read_text()))
    with pytest.raises(FormatError, match=rf"{sidecar}: {match}"):
        read_stack_file(tmp_path / output, fmt)
    r = subprocess.run([MNEMO, "info", str(tmp_path / shown)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr and sidecar in r.stderr, r.stderr


@pytest.mark.parametrize("fmt, output, index, sidecar", [("megatron", "out", "out.idx", "out.mnemo.json"),
                                                         ("datatrove", "out", "out.ds.index", "out.ds.mnemo.json")])
def test_an_index_without_separators_is_under_the_sidecars_crc(tok: Tokenizer, tmp_path: Path, fmt: str, output: str,
                                                                index: str, sidecar: str) -> None:
    """No bos/eos (a marker found the boundaries, and is gone): no separator to check a boundary
    by, so the sidecar keeps the index's CRC-32, and a moved boundary is refused by it.  A sidecar
    without the field (mnemo before it) still reads."""
    src = _jsonl(tmp_path / "in.jsonl", [f"document {i}" for i in range(20)])
    tokenize_files([src], tok, tmp_path / output, workers=1, format=fmt, bos=None, eos=None)
    side = json.loads((tmp_path / sidecar).read_text())
    assert side["bos"] is None and side["eos"] is None
    assert side["index_crc32"] == zlib.crc32((tmp_path / index).read_bytes())
    docs = [d.tolist() for d in read_stack_file(tmp_path / output, fmt).documents()]
    assert docs == [tok.encode_ordinary(f"document {i}") for i in range(20)]
    good = (tmp_path / index).read_bytes()
    at = len(good) - 8 * 12 if fmt == "megatron" else 8 * 5  # a document index / a document end
    _flip(tmp_path / index, at)
    with pytest.raises(FormatError, match=rf"{index}: its CRC-32 is 0x[0-9a-f]{{8}}, but .*{sidecar} says"):
        read_stack_file(tmp_path / output, fmt)
    (tmp_path / index).write_bytes(good)
    del side["index_crc32"], side["checksum"]  # as mnemo wrote sidecars before either
    (tmp_path / sidecar).write_text(json.dumps(side))
    assert [d.tolist() for d in read_stack_file(tmp_path / output, fmt).documents()] == docs


@pytest.mark.parametrize("fmt, output, sidecar", [("megatron", "out", "out.mnemo.json"), ("datatrove", "out", "out.ds.mnemo.json"),
                                                  ("nanogpt", "out.bin", "out.bin.mnemo.json")])
def test_every_field_of_the_sidecar_is_under_its_checksum(tok: Tokenizer, tmp_path: Path, fmt: str, output: str, sidecar: str) -> None:
    """The fingerprint (which no file of the set can check) changed by one digit: `mnemo info`
    showed it as the tokenizer that wrote the set.  Now the sidecar's checksum refuses it."""
    src = _jsonl(tmp_path / "in.jsonl", DOCS)
    tokenize_files([src], tok, tmp_path / output, workers=1, format=fmt, bos="<|bos|>")
    path = tmp_path / sidecar
    side = json.loads(path.read_text())
    fp = side["fingerprint"]
    side["fingerprint"] = ("1" if fp[0] == "0" else "0") + fp[1:]
    path.write_text(json.dumps(side, indent=1))
    with pytest.raises(FormatError, match=rf"{sidecar}: 'checksum' is \d+, but its content has CRC-32 \d+ \(it was edited or damaged\)"):
        read_stack_file(tmp_path / output, fmt)


@pytest.mark.parametrize("cls", [MegatronWriter, DatatroveWriter])
def test_a_writer_refuses_documents_without_its_separators(cls: Any, tmp_path: Path) -> None:
    """The sidecar says every document ends with eos (or starts with bos) and the readers now
    check it: a document handed to write_doc without it was written, then the set was refused
    on read.  The writer refuses it instead, and leaves no file."""
    with pytest.raises(InputError, match=r"document 0 of 1 written here does not end with the eos token 999"):
        with cls(tmp_path / "x", n_vocab=1000, separators=Separators(eos=999)) as w:
            w.write_doc([1, 999])
            w.write_doc([1, 2])
    with pytest.raises(InputError, match=r"document 0 of 2 written here does not end with the eos token 7"):
        with cls(tmp_path / "y", n_vocab=1000, separators=Separators(bos=7, eos=7)) as w:
            w.write([7, 1, 7, 2, 7, 7], 2)  # the same token both sides: documents [7 1 7 2] [7 7]
    assert _leftovers(tmp_path, set()) == []
