"""URLs as paths (mnemo/remote.py): a real S3 API -- moto's server on 127.0.0.1, read and
written through s3fs -- and fsspec's memory:// and file:// filesystems.

The server is moto's own (`moto.server.ThreadedMotoServer`), started once for the session on a
free port of 127.0.0.1; credentials and the endpoint reach s3fs through the environment, as they
would in a user's shell (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL), so that the
`mnemo` command run as a child process finds them too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mnemo
from mnemo.errors import InputError

fsspec = pytest.importorskip("fsspec")


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION")}
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_ENDPOINT_URL=endpoint, AWS_DEFAULT_REGION="us-east-1"
    )
    try:
        yield endpoint
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    """A new, empty bucket for each test."""
    import boto3

    name = f"mnemo-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return name


def _s3(s3_endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=s3_endpoint)


def _keys(s3_endpoint: str, bucket: str) -> list[str]:
    return [o["Key"] for o in _s3(s3_endpoint).list_objects_v2(Bucket=bucket).get("Contents", [])]


def _mnemo(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("mnemo")
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def english_jsonl(tmp_path_factory: pytest.TempPathFactory, corpus_docs: Callable[..., list[str]]) -> Path:
    """About 3 MB of English JSONL: big enough for several byte-range tasks of 1 MB."""
    path = tmp_path_factory.mktemp("remote") / "english.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for text in corpus_docs("english", 3_000_000):
            f.write(json.dumps({"text": text}) + "\n")
    return path


def _put(s3_endpoint: str, bucket: str, key: str, path: Path) -> str:
    _s3(s3_endpoint).upload_file(str(path), bucket, key)
    return f"s3://{bucket}/{key}"


# ---- S3: train and tokenize from s3://, outputs to s3:// -------------------------------------------


def test_train_and_tokenize_from_s3_to_s3_equal_local_runs(
    s3_endpoint: str, bucket: str, english_jsonl: Path, tmp_path: Path
) -> None:
    """`mnemo train` and `mnemo tokenize` with every path an s3:// URL (inputs, the tokenizer,
    the outputs) write the bytes the local runs write."""
    url = _put(s3_endpoint, bucket, "corpus/english.jsonl", english_jsonl)
    local_bin, local_tok = tmp_path / "tok.bin", tmp_path / "out.tok"
    assert _mnemo("train", english_jsonl, "-o", local_bin, "--vocab-size", "1000", "--workers", "2", "-q").returncode == 0
    assert _mnemo("tokenize", english_jsonl, "-t", local_bin, "-o", local_tok, "--workers", "2", "-q").returncode == 0

    out = _mnemo("train", url, "-o", f"s3://{bucket}/tok.bin", "--vocab-size", "1000", "--workers", "2", "-q")
    assert out.returncode == 0, out.stderr
    assert f"s3://{bucket}/tok.bin" in out.stdout
    out = _mnemo("tokenize", url, "-t", f"s3://{bucket}/tok.bin", "-o", f"s3://{bucket}/out/english.tok", "--workers", "2", "-q")
    assert out.returncode == 0, out.stderr
    assert f"s3://{bucket}/out/english.tok" in out.stdout
    s3 = _s3(s3_endpoint)
    assert s3.get_object(Bucket=bucket, Key="tok.bin")["Body"].read() == local_bin.read_bytes()
    assert s3.get_object(Bucket=bucket, Key="out/english.tok")["Body"].read() == local_tok.read_bytes()
    assert sorted(_keys(s3_endpoint, bucket)) == ["corpus/english.jsonl", "out/english.tok", "tok.bin"]


def test_library_reads_s3_by_byte_ranges_and_parquet_row_groups(
    s3_endpoint: str, bucket: str, english_jsonl: Path, tmp_path: Path
) -> None:
    """A remote JSONL file is planned as byte ranges and a remote Parquet file as row groups,
    as local files are; the documents of the tasks are the local file's, in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mnemo.sources import check_inputs, iter_documents, iter_task_documents, plan_tasks

    url = _put(s3_endpoint, bucket, "english.jsonl", english_jsonl)
    texts = [json.loads(line)["text"] for line in english_jsonl.read_text(encoding="utf-8").splitlines()]
    pq.write_table(pa.table({"text": texts}), tmp_path / "english.parquet", row_group_size=200)
    purl = _put(s3_endpoint, bucket, "english.parquet", tmp_path / "english.parquet")
    expected = [t.encode("utf-8") for t in texts]
    for source, local in ((url, english_jsonl), (purl, tmp_path / "english.parquet")):
        tasks = plan_tasks(check_inputs([source]), n_workers=2, min_task_bytes=1 << 20, max_task_bytes=1 << 20)
        local_tasks = plan_tasks(check_inputs([local]), n_workers=2, min_task_bytes=1 << 20, max_task_bytes=1 << 20)
        assert len(tasks) == len(local_tasks) >= 3
        assert [(t.start, t.end, t.row_group) for t in tasks] == [(t.start, t.end, t.row_group) for t in local_tasks]
        assert all(t.path == source and not t.sequential for t in tasks)
        assert [d for t in tasks for d in iter_task_documents(t)] == expected
        assert list(iter_documents([source])) == expected
    tok = mnemo.train([url], vocab_size=600, workers=2)
    assert tok == mnemo.train([english_jsonl], vocab_size=600, workers=1)
    tok.save(f"s3://{bucket}/lib/tok.bin")
    assert mnemo.Tokenizer.load(f"s3://{bucket}/lib/tok.bin") == tok


def test_tokenize_to_s3_in_a_training_stack_format(s3_endpoint: str, bucket: str, english_jsonl: Path, tmp_path: Path) -> None:
    """A set of files (Megatron's .bin + .idx, and mnemo's sidecar) goes to s3:// next to the
    key given, each object equal to the local run's file."""
    tok = mnemo.train([english_jsonl], vocab_size=600, workers=1)
    tok.save(tmp_path / "tok.bin")
    local = _mnemo("tokenize", english_jsonl, "-t", tmp_path / "tok.bin", "-o", tmp_path / "set", "--format", "megatron", "-q")
    assert local.returncode == 0, local.stderr
    out = _mnemo("tokenize", english_jsonl, "-t", tmp_path / "tok.bin", "-o", f"s3://{bucket}/stack/set", "--format", "megatron", "-q")
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("set"))
    assert sorted(_keys(s3_endpoint, bucket)) == [f"stack/{n}" for n in names]
    s3 = _s3(s3_endpoint)
    for name in names:
        assert s3.get_object(Bucket=bucket, Key=f"stack/{name}")["Body"].read() == (tmp_path / name).read_bytes(), name


def test_remote_reads_fetch_ranges_not_the_object(s3_endpoint: str, bucket: str) -> None:
    """A read in the middle of a 24 MiB object fetches that range (and one read-ahead block),
    not the object: what lets each worker read only its byte range of a remote corpus."""
    from mnemo.remote import READ_BLOCK, open_read

    data = bytes(range(256)) * (24 << 12)
    _s3(s3_endpoint).put_object(Bucket=bucket, Key="big.bin", Body=data)
    with open_read(f"s3://{bucket}/big.bin") as f:
        f.seek(12 << 20)
        assert f.read(1 << 20) == data[12 << 20 : 13 << 20]
        assert f.cache.total_requested_bytes <= (1 << 20) + READ_BLOCK < len(data)


# ---- atomic outputs ---------------------------------------------------------------------------------


_UPLOADER = """
import sys
from mnemo.remote import upload_atomic
print("started", flush=True)
upload_atomic(sys.argv[1], sys.argv[2])
print("done", flush=True)
"""


def _wait_for_multipart(s3_endpoint: str, bucket: str, key: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        uploads = _s3(s3_endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])
        if any(u["Key"] == key for u in uploads):
            return
        time.sleep(0.02)
    raise AssertionError(f"no multipart upload of {key} started within {timeout} s")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_an_interrupted_upload_leaves_no_object_under_the_final_key(
    s3_endpoint: str, bucket: str, tmp_path: Path, how: signal.Signals
) -> None:
    """The writer is stopped mid-upload -- killed outright, or interrupted (Ctrl-C) -- after
    parts of a multipart upload have gone up: no object appears under the key.  The upload reads
    its file from a FIFO that the test fills only half way, so the writer is certainly mid-upload
    when it is stopped.  Interrupted, it aborts the upload: no parts are left behind either."""
    fifo = tmp_path / "data.fifo"
    os.mkfifo(fifo)
    key = "big/out.tok"
    with subprocess.Popen(
        [sys.executable, "-c", _UPLOADER, str(fifo), f"s3://{bucket}/{key}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,  # not the checkout's mnemo/
    ) as child:
        try:
            assert child.stdout is not None and child.stderr is not None
            assert child.stdout.readline().strip() == "started", child.stderr.read()
            with open(fifo, "wb") as w:
                w.write(os.urandom(20 << 20))  # two and a half 8 MiB parts
                w.flush()
                _wait_for_multipart(s3_endpoint, bucket, key)
                child.send_signal(how)
                child.wait(60)
        except BrokenPipeError:
            pass
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        stderr = child.stderr.read()
    assert child.returncode != 0
    assert key not in _keys(s3_endpoint, bucket)
    if how == signal.SIGINT:
        assert "KeyboardInterrupt" in stderr
        uploads = _s3(s3_endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])
        assert not [u for u in uploads if u["Key"] == key]  # aborted, parts deleted


def test_a_failed_tokenize_run_leaves_no_object(s3_endpoint: str, bucket: str, english_jsonl: Path, tmp_path: Path) -> None:
    """A run that fails on its input (a bad JSON line at the end) publishes nothing."""
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(english_jsonl.read_bytes() + b"{not json\n")
    tok = mnemo.train([english_jsonl], vocab_size=600, workers=1)
    tok.save(tmp_path / "tok.bin")
    out = _mnemo("tokenize", bad, "-t", tmp_path / "tok.bin", "-o", f"s3://{bucket}/bad.tok", "--workers", "2", "-q")
    assert out.returncode == 1
    assert "mnemo: error:" in out.stderr and "not valid JSON" in out.stderr
    assert _keys(s3_endpoint, bucket) == []


# ---- errors -----------------------------------------------------------------------------------------


def test_missing_bucket_or_key_is_a_mnemo_error_naming_the_url(s3_endpoint: str, bucket: str, english_jsonl: Path, tmp_path: Path) -> None:
    for url in (f"s3://{bucket}/no/such.jsonl", "s3://mnemo-no-such-bucket/corpus.jsonl"):
        out = _mnemo("train", url, "-o", tmp_path / "tok.bin", "--vocab-size", "300", "-q")
        assert out.returncode == 1, out.stderr
        assert out.stderr.startswith(f"mnemo: error: {url}: no such object"), out.stderr
        assert "Traceback" not in out.stderr
        with pytest.raises(InputError, match=url):
            mnemo.train([url], vocab_size=300)
    out = _mnemo("tokenize", english_jsonl, "-t", f"s3://{bucket}/missing.bin", "-o", tmp_path / "x.tok", "-q")
    assert out.returncode == 1 and out.stderr.startswith(f"mnemo: error: s3://{bucket}/missing.bin: no such object"), out.stderr
    mnemo.train([english_jsonl], vocab_size=300, workers=1).save(tmp_path / "tok.bin")
    out = _mnemo("tokenize", english_jsonl, "-t", tmp_path / "tok.bin", "-o", "s3://mnemo-no-such-bucket/x.tok", "-q")
    assert out.returncode == 1
    assert out.stderr.startswith("mnemo: error: s3://mnemo-no-such-bucket/x.tok: the bucket 'mnemo-no-such-bucket' does not exist"), out.stderr
    same = _put(s3_endpoint, bucket, "same.jsonl", english_jsonl)
    out = _mnemo("tokenize", same, "-t", tmp_path / "tok.bin", "-o", same, "-q")
    assert out.returncode == 1 and f"{same}: the output is also an input" in out.stderr, out.stderr
    out = _mnemo("train", english_jsonl, "-o", f"s3://{bucket}/", "--vocab-size", "300", "-q")
    assert out.returncode == 1 and "give the output a key" in out.stderr, out.stderr


def test_a_missing_extra_is_named(tmp_path: Path) -> None:
    """Without fsspec (hidden from the import system), a URL is a `mnemo: error:` naming the
    extra to install, before any work."""
    code = textwrap.dedent("""
        import sys
        sys.modules["fsspec"] = None  # as if it were not installed
        from mnemo.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    out = subprocess.run([sys.executable, "-c", code, "train", "s3://b/corpus.jsonl", "-o", str(tmp_path / "t.bin")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.startswith("mnemo: error: s3://b/corpus.jsonl: reading and writing URLs needs fsspec"), out.stderr
    assert "mnemo[remote]" in out.stderr


# ---- memory:// and file:// ------------------------------------------------------------------------------


def test_memory_and_file_urls(english_jsonl: Path, tmp_path: Path) -> None:
    """memory:// (fsspec's in-process filesystem) and file:// work as paths everywhere: train
    from them, save and load the tokenizer, tokenize to them -- the bytes of local runs."""
    mem = fsspec.filesystem("memory")
    mem.pipe("/mnemo-test/english.jsonl", english_jsonl.read_bytes())
    local = mnemo.train([english_jsonl], vocab_size=700, workers=1)
    for url in ("memory://mnemo-test/english.jsonl", english_jsonl.as_uri()):
        assert url.startswith(("memory://", "file://"))
        tok = mnemo.train([url], vocab_size=700, workers=2)
        assert tok == local
    local.save("memory://mnemo-test/tok.bin")
    assert mem.cat("/mnemo-test/tok.bin") == local.to_bytes()
    assert mnemo.Tokenizer.load("memory://mnemo-test/tok.bin") == local
    from mnemo.tokenizing import tokenize_files

    tokenize_files([english_jsonl], local, tmp_path / "out.tok", workers=1)
    tokenize_files(["memory://mnemo-test/english.jsonl"], local, "memory://mnemo-test/out.tok", workers=1)
    assert mem.cat("/mnemo-test/out.tok") == (tmp_path / "out.tok").read_bytes()
    tokenize_files([english_jsonl.as_uri()], local, (tmp_path / "via-url.tok").as_uri(), workers=2)
    assert (tmp_path / "via-url.tok").read_bytes() == (tmp_path / "out.tok").read_bytes()
    with pytest.raises(InputError, match="memory://mnemo-test/absent.jsonl: no such object"):
        mnemo.train(["memory://mnemo-test/absent.jsonl"], vocab_size=300)
