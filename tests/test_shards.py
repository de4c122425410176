"""Shard directories (mnemo/shards.py) without a cluster: written here by the same function a Ray
task runs, then read back by open_tok, TokenStream and `mnemo info`; damaged ones refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mnemo
from mnemo.batches import TokenStream
from mnemo.errors import FingerprintError, FormatError, InputError
from mnemo.shards import MANIFEST_NAME, Manifest, Shard, shard_name, write_manifest
from mnemo.tokenizing import ShardSettings, plan_shards, write_shard
from mnemo.sources import plan_tasks
from mnemo.tokenizer import Tokenizer
from mnemo.tokenizing import tokenize_files

MNEMO = str(Path(sys.executable).with_name("mnemo"))


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    docs = [f"document number {i} says hello to the world of tokens" for i in range(300)]
    return mnemo.train_from_iterator(docs, vocab_size=400, workers=1)


def _write_dir(tok: Tokenizer, folder: Path, inputs: list[Path], shard_bytes: int, complete: bool = True) -> Manifest:
    """A shard directory as tokenize --ray writes it, every shard written in this process."""
    tasks = plan_tasks(inputs, n_workers=1, min_task_bytes=shard_bytes, max_task_bytes=shard_bytes, whole_documents=True)
    folder.mkdir()
    shards = []
    bos = tok.special_tokens["<|bos|>"]
    for i, group in enumerate(plan_shards(tasks, shard_bytes)):
        _, n_docs, n_tokens, _ = write_shard(ShardSettings(False, "text", bos, None), tok, (str(folder / shard_name(i)), group))
        shards.append(Shard(shard_name(i), group, n_docs, n_tokens))
    manifest = Manifest(tok.fingerprint, tok.n_vocab, False, {"inputs": [str(p) for p in inputs]}, tuple(shards), complete)
    write_manifest(folder, manifest)
    return manifest


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    paths = []
    for n in range(2):
        p = tmp_path / f"in{n}.jsonl"
        p.write_text("".join(json.dumps({"text": f"file {n} line {i}: hello world " * (1 + i % 7)}) + "\n" for i in range(400)))
        paths.append(p)
    return paths


def test_shards_read_back_as_the_local_tok(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    manifest = _write_dir(tok, tmp_path / "d", corpus, 4096)
    assert len(manifest.shards) > 4
    tokenize_files(corpus, tok, tmp_path / "local.tok", workers=1)
    local = mnemo.open_tok(tmp_path / "local.tok", tok)
    opened = mnemo.open_tok(tmp_path / "d", tok)
    assert np.array_equal(np.asarray(opened.tokens), np.asarray(local.tokens))
    assert (opened.header.n_tokens, opened.header.n_docs) == (local.header.n_tokens, local.header.n_docs)
    assert len(opened.parts) == len(manifest.shards)
    stream = TokenStream.from_tok_files([tmp_path / "d"], tok)
    assert len(stream.arrays) == len(manifest.shards)
    assert np.array_equal(np.concatenate([np.asarray(a) for a in stream.arrays]), np.asarray(local.tokens))


def test_one_open_tok_reads_a_file_or_a_shard_directory(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """mnemo has one open_tok (issue 29): the package's, the shards module's and the batches'
    are one function, and tokfile's single-file mapper goes by another name."""
    from mnemo import batches, shards, tokfile

    assert mnemo.open_tok is shards.open_tok is batches.open_tok
    assert not hasattr(tokfile, "open_tok") and tokfile.map_tok_file is not shards.open_tok
    _write_dir(tok, tmp_path / "d", corpus, 4096)
    tokenize_files(corpus, tok, tmp_path / "one.tok", workers=1)
    assert str(mnemo.open_tok(tmp_path / "d", tok).path) == str(tmp_path / "d")
    assert str(mnemo.open_tok(tmp_path / "one.tok", tok).path) == str(tmp_path / "one.tok")


def test_info_describes_a_shard_directory(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    manifest = _write_dir(tok, tmp_path / "d", corpus, 4096)
    r = subprocess.run([MNEMO, "info", str(tmp_path / "d")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"{len(manifest.shards)} .tok shards" in r.stdout
    assert f"tokens       {manifest.n_tokens} x 2 bytes" in r.stdout
    assert f"documents    {manifest.n_docs}" in r.stdout and manifest.n_docs == 800


def test_unfinished_run_is_refused(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    _write_dir(tok, tmp_path / "d", corpus, 4096, complete=False)
    with pytest.raises(InputError, match="has not finished.*run the same `mnemo tokenize --ray` command again"):
        mnemo.open_tok(tmp_path / "d", tok)


def test_other_tokenizer_is_refused(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    _write_dir(tok, tmp_path / "d", corpus, 4096)
    other = mnemo.train_from_iterator(["something else entirely"] * 50, vocab_size=300, workers=1)
    with pytest.raises(FingerprintError, match="fingerprint"):
        mnemo.open_tok(tmp_path / "d", other)


def test_missing_shard_is_named(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    _write_dir(tok, tmp_path / "d", corpus, 4096)
    (tmp_path / "d" / shard_name(2)).unlink()
    with pytest.raises(InputError, match=f"{shard_name(2)}: missing"):
        mnemo.open_tok(tmp_path / "d", tok)


def test_shard_that_disagrees_with_the_manifest(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    _write_dir(tok, tmp_path / "d", corpus, 4096)
    d = tmp_path / "d"
    (d / shard_name(0)).write_bytes((d / shard_name(1)).read_bytes())  # another shard's whole .tok
    with pytest.raises(FormatError, match=f"{shard_name(0)}: holds .* the manifest says"):
        mnemo.open_tok(tmp_path / "d", tok)


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda d: "{not json", "not valid JSON"),
        (lambda d: json.dumps({**d, "format": "other"}), "'format' is not"),
        (lambda d: json.dumps({**d, "version": 9}), "version 9 is not supported"),
        (lambda d: json.dumps({**d, "shards": [{**d["shards"][0], "tokens": "many"}]}), "shard 0: 'tokens' is 'many'"),
        (lambda d: json.dumps({**d, "shards": [{**d["shards"][0], "name": "../x.tok"}]}), "is named '../x.tok'"),
        (lambda d: json.dumps({**d, "fingerprint": "zz"}), "not hexadecimal"),
    ],
)
def test_damaged_manifest_is_a_format_error(tok: Tokenizer, corpus: list[Path], tmp_path: Path, damage: object, match: str) -> None:
    _write_dir(tok, tmp_path / "d", corpus, 4096)
    path = tmp_path / "d" / MANIFEST_NAME
    doc = json.loads(path.read_text())
    path.write_text(damage(doc))  # type: ignore[operator]
    with pytest.raises(FormatError, match=match):
        mnemo.open_tok(tmp_path / "d", tok)
