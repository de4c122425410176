"""mnemo on a real multi-node Ray cluster (conftest.py here starts it; tests/test_ray.py runs this
file inside a loopback-only network namespace)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import mnemo
from mnemo.batches import TokenStream
from mnemo.count import packed_to_dict
from mnemo.errors import ConfigError, InputError
from mnemo.patterns import compile_pattern, key_of
from mnemo.shards import MANIFEST_NAME, read_manifest
from mnemo.tokenizer import Tokenizer
from mnemo.tokenizing import tokenize_files
from mnemo.training import CountPart, CountSettings, CountSum, count_task, count_words
from mnemo.work import map_combine
from mnemo.work_ray import RayOptions, plan_count_tasks, ray_executor

sys.path.insert(0, str(Path(__file__).parent))

from _cluster import ADDRESS, Samples, descendants, kill_group, ray_env, start_node, wait_nodes  # noqa: E402

CORPORA = ("english", "multilingual", "code", "chat")
MNEMO = str(Path(sys.executable).with_name("mnemo"))


@pytest.fixture(scope="module")
def tokenizer_path(samples: Samples, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tok") / "tokenizer.bin"
    mnemo.train([samples.path("english"), samples.path("code")], vocab_size=2048, workers=1).save(path)
    return path


def _local_tok(inputs: list[Path], tok: Tokenizer, out: Path, chat: bool = False) -> np.ndarray:
    tokenize_files(inputs, tok, out, workers=1, chat=chat)
    return np.asarray(mnemo.open_tok(out, tok).tokens)


# ---- training ------------------------------------------------------------------------------------


@pytest.mark.parametrize("tasks_per_node", [1, 2, 8])
@pytest.mark.parametrize("corpus", CORPORA)
def test_train_on_cluster_is_a_local_run(cluster: str, samples: Samples, corpus: str, tasks_per_node: int) -> None:
    """tokenizer.bin byte for byte the local one, whatever the number of tasks per node."""
    path = samples.path(corpus)
    local = mnemo.train(path, vocab_size=600, workers=1)
    on_ray = mnemo.train(path, vocab_size=600, ray=RayOptions(address=cluster, tasks_per_node=tasks_per_node))
    assert on_ray.to_bytes() == local.to_bytes()


def test_superword_train_on_cluster_is_a_local_run(cluster: str, samples: Samples) -> None:
    """Superword training counts both stages' tables in the same tasks: on Ray too, the
    tokenizer is byte for byte the local one (docs/superword.md)."""
    path = samples.path("english")
    local = mnemo.train(path, vocab_size=900, superword=600, workers=1)
    on_ray = mnemo.train(path, vocab_size=900, superword=600, ray=RayOptions(address=cluster, tasks_per_node=4))
    assert local.superword == 600 and on_ray.to_bytes() == local.to_bytes()


def test_count_tables_are_added_in_a_tree(cluster: str, samples: Samples) -> None:
    """About 16 tables (8 tasks on each of 2 nodes; fewer where a document is longer than a
    task) added 4 at a time by combine tasks on the cluster, in at least 2 levels; the driver
    receives one table, equal to the local count, and sees each part without its words."""
    path = samples.path("multilingual")
    pid = key_of(compile_pattern("mnemonic"))  # the pattern as it travels to workers
    options = RayOptions(address=cluster, tasks_per_node=8)
    seen: list[CountPart] = []
    with ray_executor(options) as executor:
        total = map_combine(
            plan_count_tasks([path], options, executor, []),
            partial(count_task, CountSettings(pid, 256, (), "text")),
            partial(CountSum, pid, 256),
            executor=executor,
            on_part=seen.append,
        )
        tree = executor.tree
    words, local_stats = count_words(path, workers=1, special_tokens=[])
    assert packed_to_dict(total.blob, total.meta) == words
    assert (total.n_bytes, total.n_chunks) == (local_stats.n_bytes, local_stats.n_chunks)
    assert tree.n_tasks >= 8 and len(seen) == tree.n_tasks
    assert all(p.blob == b"" and p.meta == b"" and p.n_bytes > 0 for p in seen)
    assert sum(p.n_bytes for p in seen) == local_stats.n_bytes
    assert tree.depth >= 2 and tree.n_combines >= -(-(tree.n_tasks - 1) // 3)


def test_cli_train_with_address(cluster: str, samples: Samples, tmp_path: Path) -> None:
    out = tmp_path / "t.bin"
    r = subprocess.run([MNEMO, "train", str(samples.path("code")), "-o", str(out), "--vocab-size", "500",
                        "--ray", cluster, "--tasks-per-node", "2", "-q"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert Tokenizer.load(out).to_bytes() == mnemo.train(samples.path("code"), vocab_size=500, workers=1).to_bytes()


def test_cli_train_ray_takes_the_address_from_the_environment(cluster: str, samples: Samples, tmp_path: Path) -> None:
    """--ray with no address, the input right after it: the cluster RAY_ADDRESS names."""
    out = tmp_path / "t.bin"
    r = subprocess.run([MNEMO, "train", "--ray", str(samples.path("code")), "-o", str(out), "--vocab-size", "500", "-q"],
                       capture_output=True, text=True, timeout=300, env={**ray_env(), "RAY_ADDRESS": cluster})
    assert r.returncode == 0, r.stderr
    assert out.is_file()


def test_a_driver_without_the_token_is_told_it_is_authentication(cluster: str, samples: Samples, tmp_path: Path) -> None:
    """The cluster runs with token authentication (tests/test_ray.py gives every process of the
    namespace the token); a driver without it gets an error that names authentication and what
    to set, not one that blames the address."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in ray_env().items() if k not in ("RAY_AUTH_TOKEN", "RAY_AUTH_MODE")}
    env["HOME"] = str(home)
    out = tmp_path / "t.bin"
    r = subprocess.run([MNEMO, "train", str(samples.path("code")), "-o", str(out), "--vocab-size", "500",
                        "--ray", cluster, "-q"], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mnemo: error: the Ray cluster at {cluster} refused this process's authentication"), r.stderr[-3000:]
    assert "RAY_AUTH_MODE=token" in last and "RAY_AUTH_TOKEN" in last
    assert not out.exists()


def test_a_task_error_arrives_as_the_input_error(cluster: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": oops}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl"):
        mnemo.train(bad, vocab_size=300, ray=cluster)


# ---- tokenizing ----------------------------------------------------------------------------------


def test_sharded_tokenize_is_the_local_tok(cluster: str, samples: Samples, tokenizer_path: Path, tmp_path: Path) -> None:
    tok = Tokenizer.load(tokenizer_path)
    inputs = [samples.path("english"), samples.path("multilingual"), samples.path("code")]
    local = _local_tok(inputs, tok, tmp_path / "local.tok")
    out = tmp_path / "shards"
    stats = tokenize_files(inputs, tok, out, ray=RayOptions(address=cluster, shard_bytes=64 << 10))
    assert stats.n_shards > 6 and stats.n_skipped_shards == 0
    opened = mnemo.open_tok(out, tok)
    assert np.array_equal(np.asarray(opened.tokens), local)
    assert opened.header.n_docs == mnemo.open_tok(tmp_path / "local.tok", tok).header.n_docs
    assert len(opened.parts) == stats.n_shards
    stream = TokenStream.from_tok_files([out], tok)
    assert np.array_equal(np.concatenate([np.asarray(a) for a in stream.arrays]), local)
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert manifest["complete"] and manifest["fingerprint"] == tok.fingerprint
    assert sum(s["tokens"] for s in manifest["shards"]) == local.size
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_sharded_chat_tokenize_is_the_local_tok(
    cluster: str, tokenizer_path: Path, tmp_path: Path, corpus_path: Callable[[str], Path]
) -> None:
    import lzma

    tok = Tokenizer.load(tokenizer_path)
    lines = []
    with lzma.open(corpus_path("chat"), "rt") as f:
        for _, line in zip(range(200), f):
            lines.append(line)
    inputs = []
    for i in range(3):
        p = tmp_path / f"chat{i}.jsonl"
        p.write_text("".join(lines[i::3]))
        inputs.append(p)
    local = _local_tok(inputs, tok, tmp_path / "local.tok", chat=True)
    tokenize_files(inputs, tok, tmp_path / "shards", chat=True, ray=cluster)
    opened = mnemo.open_tok(tmp_path / "shards", tok)
    assert opened.header.chat and opened.header.masked
    assert np.array_equal(np.asarray(opened.tokens), local)


def test_sharded_tokenize_through_a_tokenizer_json_pipeline_is_the_local_tok(
    cluster: str, samples: Samples, tokenizer_path: Path, tmp_path: Path
) -> None:
    """A tokenizer.json a Tokenizer cannot hold (here: NFC, and an added token that is not
    special) runs on the nodes as the HFTokenizer it is, rebuilt there from its worker image:
    the shards hold the ids of a local run, with the pipeline's fingerprint."""
    from mnemo.formats.hf import save_hf
    from mnemo.formats.hf_pipeline import HFTokenizer

    obj_path = tmp_path / "tokenizer.json"
    save_hf(Tokenizer.load(tokenizer_path), obj_path)
    obj = json.loads(obj_path.read_text(encoding="utf-8"))
    obj["normalizer"] = {"type": "NFC"}
    n = max(t["id"] for t in obj["added_tokens"]) + 1
    obj["added_tokens"].append({"id": n, "content": " the", "single_word": False, "lstrip": False, "rstrip": False,
                                "normalized": True, "special": False})
    obj_path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    tok = mnemo.load(obj_path)
    assert isinstance(tok, HFTokenizer) and tok.fingerprint != Tokenizer.load(tokenizer_path).fingerprint
    inputs = [samples.path("english"), samples.path("multilingual")]
    tokenize_files(inputs, tok, tmp_path / "local.tok", workers=1)
    local = np.asarray(mnemo.open_tok(tmp_path / "local.tok", tok).tokens)
    assert n in set(local.tolist())  # the added token was matched
    stats = tokenize_files(inputs, tok, tmp_path / "shards", ray=RayOptions(address=cluster, shard_bytes=64 << 10))
    assert stats.n_shards > 4
    assert np.array_equal(np.asarray(mnemo.open_tok(tmp_path / "shards", tok).tokens), local)


def test_cli_tokenize_and_info(cluster: str, samples: Samples, tokenizer_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "shards"
    r = subprocess.run([MNEMO, "tokenize", str(samples.path("code")), "-t", str(tokenizer_path), "-o", str(out),
                        "--ray", cluster, "--shard-mb", "1", "-q"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "shards" in r.stdout
    info = subprocess.run([MNEMO, "info", str(out)], capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    tok = Tokenizer.load(tokenizer_path)
    n = len(mnemo.open_tok(out, tok))
    assert f"tokens       {n} x 2 bytes" in info.stdout and "shard directory" in info.stdout


def test_another_run_in_the_same_folder_is_refused(cluster: str, samples: Samples, tokenizer_path: Path, tmp_path: Path) -> None:
    tok = Tokenizer.load(tokenizer_path)
    out = tmp_path / "shards"
    tokenize_files([samples.path("code")], tok, out, ray=cluster)
    with pytest.raises(ConfigError, match="another run"):
        tokenize_files([samples.path("english")], tok, out, ray=cluster)


def _tokenize_cmd(inputs: list[Path], tokenizer: Path, out: Path) -> list[str]:
    return [MNEMO, "tokenize", *map(str, inputs), "-t", str(tokenizer), "-o", str(out), "--ray", ADDRESS,
            "--shard-mb", "1", "-q"]


def _big_input(samples: Samples, tmp_path: Path, copies: int) -> Path:
    """A few MB of JSONL: enough shards (of 1 MB) that a run lasts seconds on two CPUs."""
    path = tmp_path / "big.jsonl"
    data = samples.path("english").read_bytes() + samples.path("multilingual").read_bytes()
    path.write_bytes(data * copies)
    return path


def test_resume_after_a_killed_driver(cluster: str, samples: Samples, tokenizer_path: Path, tmp_path: Path) -> None:
    """Kill the driver after its first shards: the second run keeps them (same files, untouched)
    and writes the rest; the result is the local .tok's ids."""
    big = _big_input(samples, tmp_path, 12)
    out = tmp_path / "shards"
    log = tmp_path / "driver.err"
    with open(log, "wb") as err:
        driver = subprocess.Popen(_tokenize_cmd([big], tokenizer_path, out), stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120
    while len(list(out.glob("shard-*.tok"))) < 2:
        assert driver.poll() is None, f"the driver ended before it could be killed: {log.read_text()}"
        assert time.monotonic() < deadline, "no shard written in 120 s"
        time.sleep(0.01)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    manifest = read_manifest(out)
    assert not manifest.complete
    done = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("shard-*.tok")}
    assert 2 <= len(done) < len(manifest.shards)
    with pytest.raises(InputError, match="has not finished"):
        mnemo.open_tok(out, Tokenizer.load(tokenizer_path))

    r = subprocess.run(_tokenize_cmd([big], tokenizer_path, out), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{len(done)} kept from an earlier run" in r.stdout or "kept from an earlier run" in r.stdout
    for name, ident in done.items():
        p = out / name
        assert (p.stat().st_ino, p.stat().st_mtime_ns) == ident, f"{name} was written again"
    tok = Tokenizer.load(tokenizer_path)
    assert np.array_equal(np.asarray(mnemo.open_tok(out, tok).tokens), _local_tok([big], tok, tmp_path / "local.tok"))


def test_a_second_run_keeps_its_shards_and_writes_a_foreign_one_again(
    cluster: str, samples: Samples, tokenizer_path: Path, tmp_path: Path
) -> None:
    """Issue 28 items 10 and 1 on the cluster: the same command twice over inputs smaller than a
    shard keeps every shard (it was refused as 'another run': a planned whole-file task carries
    a size the manifest does not store); a shard of another run copied over one is written again,
    and the result is the local .tok's ids."""
    import shutil

    inputs = []
    for name in ("english", "code", "multilingual"):  # about 0.6 MB each: two shards of 1 MB
        inputs.append(tmp_path / f"{name}.jsonl")
        inputs[-1].write_bytes(samples.path(name).read_bytes() * 2)
    out, other = tmp_path / "shards", tmp_path / "other"
    first = subprocess.run(_tokenize_cmd(inputs, tokenizer_path, out), capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    manifest = read_manifest(out)
    n = len(manifest.shards)
    # each input smaller than a shard: one whole-file task each, the case that was refused
    assert n >= 2 and all(t.end == -1 for s in manifest.shards for t in s.tasks), manifest.shards
    again = subprocess.run(_tokenize_cmd(inputs, tokenizer_path, out), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{n} kept from an earlier run" in again.stdout, again.stdout
    r = subprocess.run(_tokenize_cmd(inputs[::-1], tokenizer_path, other), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    shutil.copyfile(other / "shard-000000.tok", out / "shard-000000.tok")  # the same tokenizer, other tokens
    third = subprocess.run(_tokenize_cmd(inputs, tokenizer_path, out), capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert f"{n - 1} kept from an earlier run" in third.stdout, third.stdout
    tok = Tokenizer.load(tokenizer_path)
    assert np.array_equal(np.asarray(mnemo.open_tok(out, tok).tokens), _local_tok(inputs, tok, tmp_path / "local.tok"))


def test_killed_raylet_mid_run(cluster: str, samples: Samples, tokenizer_path: Path, tmp_path: Path) -> None:
    """A third node joins; its raylet is killed while one of its workers runs a shard task.  Ray
    retries that task on the other nodes: the run ends well and the shards are the local .tok's
    ids (or, the other outcome the issue allows, a clear error and no half-written shard)."""
    big = _big_input(samples, tmp_path, 40)  # ~24 shards: work for all three nodes for seconds
    out = tmp_path / "shards"
    node = start_node(block=True)
    assert node is not None
    try:
        wait_nodes(3)
        with subprocess.Popen(_tokenize_cmd([big], tokenizer_path, out), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) as driver:
            deadline = time.monotonic() + 120
            # until the third node runs a shard task (its worker process is titled after the
            # task's function; idle, it is ray::IDLE): the raylet dies with work on it
            while not any(name.startswith("ray::_run_call") for _, name in descendants(node.pid)):
                assert driver.poll() is None, "the run ended before the third node got a task"
                assert time.monotonic() < deadline
                time.sleep(0.005)
            raylets = [pid for pid, name in descendants(node.pid) if name == "raylet"]
            assert raylets, "the third node has no raylet"
            for pid in raylets:
                os.kill(pid, signal.SIGKILL)
            stdout, stderr = driver.communicate(timeout=300)
    finally:
        kill_group(node)
    wait_nodes(2)
    tok = Tokenizer.load(tokenizer_path)
    if driver.returncode == 0:
        assert np.array_equal(np.asarray(mnemo.open_tok(out, tok).tokens), _local_tok([big], tok, tmp_path / "local.tok"))
    else:  # the other outcome the contract allows: a clear error, and no file under a final name half written
        assert "mnemo: error:" in stderr and "Traceback" not in stderr
        assert not read_manifest(out).complete
        from mnemo.tokfile import read_tok_header

        for p in out.glob("shard-*.tok"):
            read_tok_header(p)  # every shard under its final name is a whole .tok


# ---- Ray Data ------------------------------------------------------------------------------------


# Ray Data warns about its own deprecated settings as it starts (ray/data/context.py), which the
# suite's filterwarnings=error would turn into a failure of this test.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_data_map_batches(cluster: str, samples: Samples, tokenizer_path: Path) -> None:
    import ray

    from mnemo.ray_data import EncodeBatches

    docs = [json.loads(line)["text"] for line in samples.path("code").read_text().splitlines()[:300]]
    ds = ray.data.from_items([{"text": d, "n": i} for i, d in enumerate(docs)])
    encoded = ds.map_batches(EncodeBatches, fn_constructor_args=(str(tokenizer_path),), concurrency=2, batch_size=32)
    rows = sorted(encoded.take_all(), key=lambda r: r["n"])
    tok = Tokenizer.load(tokenizer_path)
    bos = tok.special_tokens["<|bos|>"]
    assert len(rows) == len(docs)
    for row, doc in zip(rows, docs):
        assert list(row["ids"]) == [bos, *tok.encode_ordinary(doc)]
