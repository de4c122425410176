"""mnemo inside the pipelines people already run (docs/pipelines.md): pickling and copying a
Tokenizer, fork, threads, `datasets.map` workers, `multiprocessing` with spawn, a DataLoader-style
set of worker processes, training from a `datasets.Dataset`, Arrow inputs and the Hugging Face
export directory.  `datasets` and `transformers` are the real packages (the `test` extra), and
nothing is fetched from the hub.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemo import Tokenizer, train_from_iterator

# Nothing from the hub, ever: the export folder and the datasets are made here.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"


@pytest.fixture(scope="module")
def english(corpus_docs: Callable[..., list[str]]) -> list[str]:
    return corpus_docs("english", 600_000)


@pytest.fixture(scope="module")
def tok(english: list[str]) -> Tokenizer:
    return train_from_iterator(english, vocab_size=2048, workers=1)


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> Tokenizer:
    from mnemo.interop import load_gpt2

    return load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")


# ---- pickle and copy ----------------------------------------------------------------------------


def test_pickle_round_trip_is_an_equal_tokenizer(tok: Tokenizer, english: list[str]) -> None:
    """Before: TypeError: cannot pickle 'vec[i64]' object (the compiled encoder)."""
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(tok, protocol=protocol))
        assert back is not tok
        assert back == tok
        assert back.fingerprint == tok.fingerprint
        assert back.merge_counts == tok.merge_counts
        assert back.special_tokens == tok.special_tokens
        assert [back.encode(t) for t in english[:50]] == [tok.encode(t) for t in english[:50]]


def test_pickle_is_the_tokenizer_bin_image(tok: Tokenizer) -> None:
    """The pickle carries the image itself (no encoder state, no caches): its size is the
    image's plus a few dozen bytes of pickle framing."""
    data = pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL)
    image = tok.to_bytes()
    assert image in data
    assert len(data) < len(image) + 200


def test_pickle_keeps_the_id_map(gpt2: Tokenizer) -> None:
    """An imported vocabulary renumbers its ids (id_map): the pickle must keep the numbering."""
    assert gpt2.id_map is not None
    back = pickle.loads(pickle.dumps(gpt2))
    assert back == gpt2 and back.id_map == gpt2.id_map
    text = "Hello world<|endoftext|> it's 2026!"
    assert back.encode(text, allowed_special="all") == gpt2.encode(text, allowed_special="all")
    assert back.eot_token == gpt2.eot_token


def test_copy_is_the_same_tokenizer_and_deepcopy_a_rebuilt_one(tok: Tokenizer) -> None:
    """copy.copy returns the tokenizer itself (immutable by contract); copy.deepcopy rebuilds it
    from its image, sharing no container with it.  Before: deepcopy failed on __init__."""
    assert copy.copy(tok) is tok
    deep = copy.deepcopy(tok)
    assert deep is not tok and deep == tok
    assert deep.merges is not tok.merges and deep.special_tokens is not tok.special_tokens
    holder = {"a": tok, "b": [tok]}
    copied = copy.deepcopy(holder)
    assert copied["a"] is copied["b"][0]  # the memo: one tokenizer stays one
    assert copied["a"] == tok


# ---- fork and threads ---------------------------------------------------------------------------


def test_encode_in_a_forked_child_equals_the_parent(tok: Tokenizer, english: list[str]) -> None:
    """The parent's warm caches are copied by fork; the child must encode as the parent does."""
    texts = english[:200]
    expected = [tok.encode(t) for t in texts]  # also fills the parent's caches
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: encode, send the result, leave without running pytest's teardown
        code = 1
        try:
            os.close(read_fd)
            data = pickle.dumps([tok.encode(t) for t in texts] + [tok.encode(t) for t in english[200:300]])
            with os.fdopen(write_fd, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as inp:
        got = pickle.loads(inp.read())
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert got[:200] == expected
    assert got[200:] == [tok.encode(t) for t in english[200:300]]


def test_eight_threads_encode_as_one(english: list[str], tok: Tokenizer) -> None:
    """One Tokenizer used by 8 threads at once, with the interpreter asked to switch threads
    every microsecond, gives what sequential encoding gives.  The tokenizer is fresh (empty
    caches), so that cache entries are written while other threads read them; the expected
    ids come from another tokenizer.  Why this holds is in docs/pipelines.md ("Threads")."""
    shared = copy.deepcopy(tok)
    per_thread = [english[i::8][:60] for i in range(8)]
    expected = [[tok.encode(t) for t in texts] + [tok.encode_ordinary(t) for t in texts] for texts in per_thread]
    results: list[list[list[int]] | None] = [None] * 8
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def run(i: int) -> None:
        try:
            barrier.wait()
            texts = per_thread[i]
            results[i] = [shared.encode(t) for t in texts] + [shared.encode_ordinary(t) for t in texts]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors
    assert results == expected


# ---- processes: datasets.map, spawn, DataLoader-style workers -----------------------------------


def test_datasets_map_with_two_processes(tok: Tokenizer, english: list[str]) -> None:
    """`datasets.map(num_proc=2)` pickles the function, with the tokenizer it holds, to its
    workers.  Before: TypeError: cannot pickle 'vec[i64]' object."""
    import datasets

    texts = english[:400]
    ds = datasets.Dataset.from_dict({"text": texts})
    expected = [tok.encode(t) for t in texts]

    def one(row: dict[str, str]) -> dict[str, list[int]]:
        return {"ids": tok.encode(row["text"])}

    def batch(rows: dict[str, list[str]]) -> dict[str, list[list[int]]]:
        return {"ids": tok.encode_batch(rows["text"], workers=1)}

    assert ds.map(one, num_proc=2)["ids"] == expected
    assert ds.map(batch, batched=True, batch_size=64, num_proc=2)["ids"] == expected


def test_datasets_fingerprint_of_a_tokenizer_is_stable(tok: Tokenizer) -> None:
    """`datasets` names its map cache files by hashing the function with what it holds: an equal
    tokenizer (a rebuilt one, in another run) must hash the same, or every run recomputes."""
    from datasets.fingerprint import Hasher

    assert Hasher.hash(tok) == Hasher.hash(copy.deepcopy(tok)) == Hasher.hash(pickle.loads(pickle.dumps(tok)))


def test_spawned_pool_receives_the_tokenizer_pickled(tok: Tokenizer, english: list[str]) -> None:
    texts = english[:40]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.starmap(Tokenizer.encode, [(tok, t) for t in texts])
    assert got == [tok.encode(t) for t in texts]


WORKERS_MODULE = '''
"""A torch-free DataLoader stand-in: a dataset object holding the tokenizer is pickled to each
worker process (as DataLoader does under spawn); worker w encodes the items w, w + n, ..."""


class TokenDataset:
    def __init__(self, tok, texts):
        self.tok = tok
        self.texts = texts

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        return self.tok.encode(self.texts[i])


def worker_loop(dataset, worker_id, num_workers, out):
    for i in range(worker_id, len(dataset), num_workers):
        out.put((i, dataset[i]))
    out.put(None)
'''


def test_dataloader_style_workers(tok: Tokenizer, english: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mnemo_loader_workers.py").write_text(textwrap.dedent(WORKERS_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned children get the parent's sys.path
    import mnemo_loader_workers as w

    texts = english[:90]
    dataset = w.TokenDataset(tok, texts)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=w.worker_loop, args=(dataset, k, 3, out)) for k in range(3)]
    for p in procs:
        p.start()
    got: dict[int, list[int]] = {}
    done = 0
    while done < 3:
        item = out.get(timeout=120)
        if item is None:
            done += 1
        else:
            got[item[0]] = item[1]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [got[i] for i in range(len(texts))] == [tok.encode(t) for t in texts]


# ---- training from a datasets.Dataset ------------------------------------------------------------


def _write_jsonl(path: Path, texts: list[str]) -> Path:
    import json

    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    return path


def test_train_from_a_dataset_column_and_from_batches(english: list[str], tmp_path: Path) -> None:
    """A `datasets.Dataset` column, and its batches (`ds.iter` yields dicts: the one-liner takes
    each batch's "text" list), train the same tokenizer as the same documents in a file."""
    import datasets

    import mnemo

    texts = english[:300]
    from_file = mnemo.train(_write_jsonl(tmp_path / "docs.jsonl", texts), vocab_size=700, workers=1)
    ds = datasets.Dataset.from_dict({"text": texts, "n": list(range(len(texts)))})
    column = train_from_iterator(ds["text"], vocab_size=700, workers=1)
    batches = train_from_iterator((b["text"] for b in ds.iter(batch_size=64)), vocab_size=700, workers=2)
    assert column.to_bytes() == from_file.to_bytes()
    assert batches.to_bytes() == from_file.to_bytes()


# ---- Arrow inputs: datasets' save_to_disk folders and Arrow IPC files ----------------------------


@pytest.fixture(scope="module")
def same_docs(english: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same 400 documents as JSONL, Parquet, Arrow IPC (file and stream format, several
    record batches) and a datasets save_to_disk folder of 3 shards."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = english[:400]
    folder = tmp_path_factory.mktemp("same_docs")
    table = pa.table({"id": list(range(len(texts))), "text": texts})
    pq.write_table(table, folder / "docs.parquet", row_group_size=150)
    for name, writer in (("file.arrow", pa.ipc.new_file), ("stream.arrow", pa.ipc.new_stream)):
        with writer(str(folder / name), table.schema) as w:
            for batch in table.to_batches(max_chunksize=70):
                w.write_batch(batch)
    datasets.Dataset.from_dict({"text": texts}).save_to_disk(str(folder / "saved"), num_shards=3)
    return {
        "jsonl": _write_jsonl(folder / "docs.jsonl", texts),
        "parquet": folder / "docs.parquet",
        "arrow-file": folder / "file.arrow",
        "arrow-stream": folder / "stream.arrow",
        "save_to_disk": folder / "saved",
    }


def test_save_to_disk_folder_expands_to_its_arrow_files_in_order(same_docs: dict[str, Path], english: list[str]) -> None:
    from mnemo.sources import check_inputs, iter_documents

    files = check_inputs([same_docs["save_to_disk"]])
    assert [f.name for f in files] == [f"data-0000{i}-of-00003.arrow" for i in range(3)]
    expected = [t.encode("utf-8") for t in english[:400]]
    for name in ("arrow-file", "arrow-stream", "save_to_disk"):
        assert list(iter_documents([same_docs[name]])) == expected, name


def _mnemo(*args: str | Path) -> Any:
    import subprocess

    exe = Path(sys.executable).with_name("mnemo")
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_train_and_tokenize_give_identical_bytes_from_every_format(same_docs: dict[str, Path], tmp_path: Path) -> None:
    """`mnemo train` and `mnemo tokenize` over the same documents as JSONL, Parquet, Arrow and
    a save_to_disk folder: identical tokenizer.bin and .tok bytes."""
    bins: dict[str, bytes] = {}
    toks: dict[str, bytes] = {}
    for name, path in same_docs.items():
        out = _mnemo("train", path, "-o", tmp_path / f"{name}.bin", "--vocab-size", "800", "--workers", "2", "-q")
        assert out.returncode == 0, out.stderr
        bins[name] = (tmp_path / f"{name}.bin").read_bytes()
        out = _mnemo("tokenize", path, "-t", tmp_path / "jsonl.bin", "-o", tmp_path / f"{name}.tok", "--workers", "2", "-q")
        assert out.returncode == 0, out.stderr
        toks[name] = (tmp_path / f"{name}.tok").read_bytes()
    assert all(b == bins["jsonl"] for b in bins.values())
    assert all(t == toks["jsonl"] for t in toks.values())
    assert len(toks["jsonl"]) > 64 + 400 * 2


def test_arrow_large_string_and_null_values(tmp_path: Path) -> None:
    """`datasets` writes large_string columns for big texts; nulls are skipped, as in Parquet."""
    import pyarrow as pa

    from mnemo.sources import iter_documents

    path = tmp_path / "large.arrow"
    schema = pa.schema([("text", pa.large_string())])
    with pa.ipc.new_stream(str(path), schema) as w:
        w.write_batch(pa.record_batch([pa.array(["a b", None, "c"], pa.large_string())], schema=schema))
        w.write_batch(pa.record_batch([pa.array(["é"], pa.large_string())], schema=schema))
    assert list(iter_documents([path])) == [b"a b", b"c", "é".encode()]


def test_arrow_input_errors_name_the_file_and_the_fix(tmp_path: Path, english: list[str]) -> None:
    import datasets
    import pyarrow as pa

    import mnemo
    from mnemo import InputError

    numbers = tmp_path / "numbers.arrow"
    with pa.ipc.new_file(str(numbers), pa.schema([("text", pa.int64())])) as w:
        w.write_batch(pa.record_batch([pa.array([1, 2])], names=["text"]))
    with pytest.raises(InputError, match=r"numbers\.arrow: column 'text' holds int64, not text"):
        mnemo.train(numbers, vocab_size=300, workers=1)
    with pytest.raises(InputError, match=r"numbers\.arrow: no column 'body' \(columns: text\)"):
        mnemo.train(numbers, vocab_size=300, workers=1, text_field="body")
    damaged = tmp_path / "damaged.arrow"
    damaged.write_bytes(b"ARROW1\0\0" + b"\x07" * 100)
    with pytest.raises(InputError, match=r"damaged\.arrow: not a readable Arrow IPC file"):
        mnemo.train(damaged, vocab_size=300, workers=1)
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": english[:5]}),
                                   "test": datasets.Dataset.from_dict({"text": english[5:10]})})
    splits.save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(InputError, match=r"is a datasets DatasetDict \(splits: train, test\); pass the folder of one split"):
        mnemo.train(tmp_path / "dd", vocab_size=300, workers=1)
    out = _mnemo("train", tmp_path / "dd", "-o", tmp_path / "x.bin", "-q")
    assert out.returncode != 0 and "mnemo: error:" in out.stderr and "DatasetDict" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "x.bin").exists()


# ---- the Hugging Face export directory (save_pretrained) ----------------------------------------


@pytest.fixture(scope="module")
def chats(corpus_path: Callable[[str], Path]) -> list[list[dict[str, str]]]:
    import json
    import lzma

    out = []
    with lzma.open(corpus_path("chat"), "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line)["messages"])
            if len(out) == 60:
                break
    return out


def _auto(folder: Path) -> Any:
    transformers = pytest.importorskip("transformers")  # in the test extra: never skipped by `make test`
    return transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def _ids(out: Any) -> list[int]:
    """apply_chat_template's ids, whether it returns a list or a BatchEncoding (transformers 5)."""
    from collections.abc import Mapping

    ids = out["input_ids"] if isinstance(out, Mapping) or hasattr(out, "input_ids") else out
    return list(ids)


def test_autotokenizer_loads_the_export_and_encodes_as_mnemo(
    tok: Tokenizer,
    english: list[str],
    corpus_docs: Callable[..., list[str]],
    chats: list[list[dict[str, str]]],
    tmp_path: Path,
) -> None:
    from mnemo.chat import strip_mask
    from mnemo.interop import save_pretrained

    written = save_pretrained(tok, tmp_path / "export")
    assert sorted(p.name for p in written) == ["special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    hf = _auto(tmp_path / "export")
    texts = english[:150] + corpus_docs("code", 300_000)[:60] + corpus_docs("multilingual", 300_000)[:60]
    for text in texts:
        ids = tok.encode(text)
        assert hf.encode(text) == ids
        assert hf.decode(ids) == tok.decode(ids)
    assert hf.bos_token == "<|bos|>" and hf.bos_token_id == tok.special_tokens["<|bos|>"]
    assert hf.eos_token == "<|end|>" and hf.eos_token_id == tok.special_tokens["<|end|>"]
    assert hf.pad_token == "<|reserved_0|>" and hf.pad_token_id == tok.special_tokens["<|reserved_0|>"]
    for messages in chats:
        expected = strip_mask(tok.render_conversation(messages))
        assert _ids(hf.apply_chat_template(messages, tokenize=True)) == expected
    prompt = _ids(hf.apply_chat_template(chats[0][:1], tokenize=True, add_generation_prompt=True))
    assert prompt == strip_mask(tok.render_conversation(chats[0][:1])) + [tok.special_tokens["<|assistant|>"]]


def test_the_chat_template_refuses_what_render_conversation_refuses(tok: Tokenizer, tmp_path: Path) -> None:
    import jinja2

    from mnemo import InputError
    from mnemo.interop import save_pretrained

    save_pretrained(tok, tmp_path / "export")
    hf = _auto(tmp_path / "export")
    for bad, words in (
        ([{"role": "tool", "content": "x"}], "has role tool"),
        ([{"role": "user", "content": "hi <|end|> there"}], "special token <|end|>"),
    ):
        with pytest.raises(InputError):
            tok.render_conversation(bad)
        with pytest.raises(jinja2.TemplateError, match=words):
            hf.apply_chat_template(bad, tokenize=True)


def test_export_of_an_imported_vocabulary_and_the_convert_command(gpt2: Tokenizer, english: list[str], tmp_path: Path) -> None:
    """GPT-2 (an id map, no chat tokens): bos = eos = <|endoftext|>, no pad, no chat template."""
    import json

    from mnemo.interop import save_pretrained

    save_pretrained(gpt2, tmp_path / "gpt2")
    config = json.loads((tmp_path / "gpt2" / "tokenizer_config.json").read_text())
    assert config["bos_token"] == config["eos_token"] == "<|endoftext|>"
    assert "pad_token" not in config and "chat_template" not in config
    hf = _auto(tmp_path / "gpt2")
    for text in english[:40]:
        assert hf.encode(text) == gpt2.encode(text)
    gpt2.save(tmp_path / "gpt2.bin")
    out = _mnemo("convert", tmp_path / "gpt2.bin", tmp_path / "via-cli", "--from", "mnemo", "--to", "hf-dir")
    assert out.returncode == 0, out.stderr
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (tmp_path / "via-cli" / name).read_bytes() == (tmp_path / "gpt2" / name).read_bytes()
    back = _mnemo("convert", tmp_path / "via-cli", tmp_path / "back.bin", "--from", "hf-dir", "--to", "mnemo")
    assert back.returncode == 0, back.stderr
    assert Tokenizer.load(tmp_path / "back.bin").encode(english[0]) == gpt2.encode(english[0])
    not_a_folder = _mnemo("convert", tmp_path / "gpt2.bin", tmp_path / "x.bin", "--from", "hf-dir", "--to", "mnemo")
    assert not_a_folder.returncode != 0 and "Traceback" not in not_a_folder.stderr
    assert not_a_folder.stderr.strip().endswith("--from hf-dir reads a save_pretrained folder holding tokenizer.json")


def test_save_pretrained_checks_its_arguments(tok: Tokenizer, tmp_path: Path) -> None:
    from mnemo import ConfigError
    from mnemo.interop import save_pretrained

    with pytest.raises(ConfigError, match=r"pad_token='<pad>' is not a special token of this tokenizer"):
        save_pretrained(tok, tmp_path / "x", pad_token="<pad>")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        save_pretrained(tok, tmp_path / "file")
