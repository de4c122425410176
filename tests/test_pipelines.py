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

import pytest

from mnemo import Tokenizer, train_from_iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


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
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
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
