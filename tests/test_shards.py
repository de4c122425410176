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
from mnemo.shards import MANIFEST_NAME, Manifest, Shard, read_manifest, shard_name, shard_origin, write_manifest
from mnemo.tokenizing import ShardSettings, _resume, plan_shards, write_shard
from mnemo.sources import plan_tasks
from mnemo.tokenizer import Tokenizer
from mnemo.tokenizing import tokenize_files

MNEMO = str(Path(sys.executable).with_name("mnemo"))


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    docs = [f"document number {i} says hello to the world of tokens" for i in range(300)]
    return mnemo.train_from_iterator(docs, vocab_size=400, workers=1)


def _run(inputs: list[Path], shard_bytes: int) -> dict[str, object]:
    """The manifest's `run`, as tokenize_on_ray records it."""
    return {"inputs": [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in inputs], "text_field": "text",
            "chat": False, "bos": None, "eos": None, "shard_bytes": shard_bytes}


def _planned(tok: Tokenizer, inputs: list[Path], shard_bytes: int) -> Manifest:
    """The manifest tokenize_on_ray plans before it writes a shard (counts unknown)."""
    tasks = plan_tasks(inputs, n_workers=1, min_task_bytes=shard_bytes, max_task_bytes=shard_bytes, whole_documents=True)
    shards = tuple(Shard(shard_name(i), group) for i, group in enumerate(plan_shards(tasks, shard_bytes)))
    return Manifest(tok.fingerprint, tok.n_vocab, False, _run(inputs, shard_bytes), shards, False)


def _write_dir(tok: Tokenizer, folder: Path, inputs: list[Path], shard_bytes: int, complete: bool = True,
               only: set[int] | None = None) -> Manifest:
    """A shard directory as tokenize --ray writes it, every shard (or those in `only`, and then
    the manifest it plans first) written in this process -- the local engine of a resume."""
    planned = _planned(tok, inputs, shard_bytes)
    folder.mkdir(exist_ok=True)
    shards = []
    bos = tok.special_tokens["<|bos|>"]
    for i, s in enumerate(planned.shards):
        if only is not None and i not in only:
            shards.append(s)
            continue
        job = (str(folder / s.name), s.tasks, shard_origin(planned.run, s))
        _, n_docs, n_tokens, _, crc = write_shard(ShardSettings(False, "text", bos, None), tok, job)
        shards.append(Shard(s.name, s.tasks, n_docs, n_tokens, crc))
    recorded = tuple(shards) if only is None else planned.shards  # a stopped run recorded none
    manifest = Manifest(tok.fingerprint, tok.n_vocab, False, planned.run, recorded, complete and only is None)
    write_manifest(folder, manifest)
    return manifest


def _save_edited(folder: Path, doc: dict[str, object]) -> None:
    """An edited manifest with its checksum made to match (as a careful editor, or another
    tool, would): the checks behind the checksum are what a test reaches."""
    from mnemo.fileio import json_checksum

    (folder / MANIFEST_NAME).write_text(json.dumps({**doc, "checksum": json_checksum(doc)}))


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


# ---- issue 28: what a resumed run keeps, and manifests checked on open -------------------------------


def test_a_second_run_of_small_inputs_keeps_every_shard(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """Item 10: inputs smaller than a shard are whole-file tasks with a size, which the manifest
    does not store; the planned and recorded tasks must still compare equal (it said "holds the
    shards of another run")."""
    _write_dir(tok, tmp_path / "d", corpus, 1 << 20)
    kept = _resume(tmp_path / "d", _planned(tok, corpus, 1 << 20))
    assert sorted(kept) == [shard_name(0)]


def test_resume_keeps_only_its_own_shards(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """Item 1: a shard of another run (same tokenizer) copied over one of a finished run, or over
    one a stopped run wrote but never recorded, is not kept: its counts, CRC-32 or origin differ.
    The run's own untouched shards are kept; a flipped token bit is not."""
    d = tmp_path / "d"
    done = _write_dir(tok, d, corpus, 4096)
    other = tmp_path / "other"
    _write_dir(tok, other, [corpus[1], corpus[0]], 4096)  # another run: the same files, another order
    (d / shard_name(0)).write_bytes((other / shard_name(0)).read_bytes())
    damaged = bytearray((d / shard_name(3)).read_bytes())
    damaged[-1] ^= 1
    (d / shard_name(3)).write_bytes(bytes(damaged))
    kept = _resume(d, _planned(tok, corpus, 4096))
    assert sorted(kept) == [s.name for s in done.shards if s.name not in (shard_name(0), shard_name(3))]
    with pytest.raises(FormatError, match=f"{shard_name(0)}: (holds|its tokens)"):  # and open_tok refuses it
        mnemo.open_tok(d, tok)

    # a stopped run: the manifest is the planned one, no shard recorded; shard 1 and 2 written
    stopped = tmp_path / "stopped"
    _write_dir(tok, stopped, corpus, 4096, only={1, 2})
    (stopped / shard_name(1)).write_bytes((other / shard_name(1)).read_bytes())
    (stopped / shard_name(4)).write_bytes((stopped / shard_name(2)).read_bytes())  # another shard's file
    assert sorted(_resume(stopped, _planned(tok, corpus, 4096))) == [shard_name(2)]


def test_a_shard_with_the_same_counts_but_other_tokens_is_refused_on_open(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """Item 1: the manifest records each shard's CRC-32; a file whose header says other tokens
    (a foreign shard with equal counts) is refused without reading the tokens."""
    d = tmp_path / "d"
    manifest = _write_dir(tok, d, corpus, 4096)
    doc = json.loads((d / MANIFEST_NAME).read_text())
    assert [s["crc32"] for s in doc["shards"]] == [s.crc for s in manifest.shards] and min(s.crc for s in manifest.shards) >= 0
    doc["shards"][2]["crc32"] ^= 1
    _save_edited(d, doc)
    with pytest.raises(FormatError, match=f"{shard_name(2)}: its tokens' CRC-32 .* is not what the manifest says"):
        mnemo.open_tok(d, tok)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: {**d, "shards": d["shards"][:-1]}, r"'documents' is 800, but its shards hold \d+"),
        (lambda d: {**d, "shards": []}, r"'documents' is 800, but its shards hold 0"),
        # the totals edited too: the inputs are no longer all read
        (lambda d: {**d, "shards": [], "documents": 0, "tokens": 0}, r"is read by none"),
        (lambda d: {**d, "shards": d["shards"][:2] + d["shards"][3:]}, r"holds|is named"),
        (lambda d: {**d, "n_vocab": 70_000}, r"shard-000000\.tok: a documents file of \d+ ids, but manifest\.json says documents of 70000"),
        (lambda d: {**d, "chat": True}, r"a documents file of \d+ ids, but manifest\.json says chat"),
    ],
)
def test_manifest_edits_are_refused(tok: Tokenizer, corpus: list[Path], tmp_path: Path, edit: object, match: str) -> None:
    """Item 2: a deleted shard entry (or "shards": []) opened as a smaller dataset, no error."""
    d = tmp_path / "d"
    _write_dir(tok, d, corpus, 4096)
    doc = json.loads((d / MANIFEST_NAME).read_text())
    _save_edited(d, edit(doc))  # type: ignore[operator]
    with pytest.raises(FormatError, match=match):
        mnemo.open_tok(d, tok)


def test_last_shard_removed_with_its_totals_is_refused(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """Item 2: the last entry deleted and the totals made to agree: the input it read is not read."""
    d = tmp_path / "d"
    _write_dir(tok, d, corpus, 4096)
    doc = json.loads((d / MANIFEST_NAME).read_text())
    last = doc["shards"].pop()
    doc["documents"] -= last["documents"]
    doc["tokens"] -= last["tokens"]
    _save_edited(d, doc)
    with pytest.raises(FormatError, match=r"do not read all of .*in1\.jsonl"):
        mnemo.open_tok(d, tok)


@pytest.mark.parametrize(
    "text, match",
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"format": "mnemo-shards", "version": 2, "shards": ' + "[" * 100_000, "nested too deeply"),
        (None, r"'run': 'inputs' is 5, not a list of \[path, size, mtime_ns\]"),
    ],
)
def test_hostile_manifest_is_a_format_error(tok: Tokenizer, corpus: list[Path], tmp_path: Path, text: str | None, match: str) -> None:
    """Item 14: a RecursionError or a TypeError traceback before, from open_tok, `mnemo info`
    and a resumed tokenize; now a FormatError naming the manifest."""
    d = tmp_path / "d"
    _write_dir(tok, d, corpus, 4096)
    if text is None:
        doc = json.loads((d / MANIFEST_NAME).read_text())
        text = json.dumps({**doc, "run": {"inputs": 5}})
    (d / MANIFEST_NAME).write_text(text)
    for call in (lambda: mnemo.open_tok(d, tok), lambda: TokenStream.from_tok_files([d], tok),
                 lambda: _resume(d, _planned(tok, corpus, 4096))):
        with pytest.raises(FormatError, match=rf"{MANIFEST_NAME}: .*{match}"):
            call()
    r = subprocess.run([MNEMO, "info", str(d)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr and MANIFEST_NAME in r.stderr, r.stderr
    # a resumed run reads the manifest before it connects to a cluster: no Ray is reached here
    tok.save(tmp_path / "tok.bin")
    r = subprocess.run([MNEMO, "tokenize", str(corpus[0]), "-t", str(tmp_path / "tok.bin"), "-o", str(d), "--ray", "127.0.0.1:1", "-q"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and f"{MANIFEST_NAME}: " in r.stderr, r.stderr


def test_version_1_manifest_still_opens(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """A version 1 manifest (no crc32): opened, its shards checked by counts as before."""
    d = tmp_path / "d"
    manifest = _write_dir(tok, d, corpus, 4096)
    doc = json.loads((d / MANIFEST_NAME).read_text())
    doc["version"] = 1
    for s in doc["shards"]:
        del s["crc32"]
    (d / MANIFEST_NAME).write_text(json.dumps(doc))
    assert read_manifest(d).shards[0].crc == -1
    assert mnemo.open_tok(d, tok).header.n_docs == manifest.n_docs


def test_every_field_of_the_manifest_is_under_its_checksum(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """An edit no other check can see -- another text field in `run` (a resumed run would keep
    shards encoded from another field), or documents moved between two shards' counts -- is
    refused by the manifest's checksum (docs/formats.md: canonical JSON's CRC-32)."""
    from mnemo.fileio import json_checksum

    d = tmp_path / "d"
    _write_dir(tok, d, corpus, 4096)
    doc = json.loads((d / MANIFEST_NAME).read_text())
    assert doc["checksum"] == json_checksum(doc)
    for edit in ({**doc, "run": {**doc["run"], "text_field": "body"}},
                 {**doc, "shards": [{**doc["shards"][0], "documents": doc["shards"][0]["documents"] + 1},
                                    {**doc["shards"][1], "documents": doc["shards"][1]["documents"] - 1}, *doc["shards"][2:]]}):
        (d / MANIFEST_NAME).write_text(json.dumps(edit, indent=2))
        with pytest.raises(FormatError, match=r"'checksum' is \d+, but its content has CRC-32 \d+ \(it was edited or damaged\)"):
            read_manifest(d)
    (d / MANIFEST_NAME).write_text(json.dumps(doc))  # indented otherwise, the same content: read
    assert read_manifest(d).n_docs == 800


def test_a_parquet_input_of_no_row_groups_is_read_by_no_shard(tok: Tokenizer, corpus: list[Path], tmp_path: Path) -> None:
    """A Parquet file with no row group (a writer closed with nothing written) makes no task:
    the manifest's coverage check must not take it for a deleted shard entry."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    empty = tmp_path / "empty.parquet"
    pq.ParquetWriter(empty, pa.schema([("text", pa.string())])).close()
    assert pq.ParquetFile(empty).num_row_groups == 0
    manifest = _write_dir(tok, tmp_path / "d", [empty, *corpus], 4096)
    assert manifest.run["inputs"][0][0] == str(empty)  # type: ignore[index]
    assert mnemo.open_tok(tmp_path / "d", tok).header.n_docs == 800


@pytest.mark.parametrize("shard_bytes", [4096, 1 << 20])  # ranges, whole files
def test_an_input_given_twice_is_read_twice(tok: Tokenizer, corpus: list[Path], tmp_path: Path, shard_bytes: int) -> None:
    """`mnemo tokenize a.jsonl a.jsonl --ray`: the input's tasks appear twice; a genuine
    manifest of it opens (the coverage check walks the inputs in order, not by name)."""
    _write_dir(tok, tmp_path / "d", [corpus[0], corpus[0]], shard_bytes)
    assert mnemo.open_tok(tmp_path / "d", tok).header.n_docs == 800
