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

import numpy as np
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


class _StallingStore:
    """A TCP relay on 127.0.0.1 between a client and moto's server that holds back the store's
    answer to one request: the store stalls at that moment.  Real sockets and requests: moto
    serves the request when it arrives (a multipart upload it starts exists), and only its answer
    waits until `release` is set.  `pattern` matches the request (its line and headers) that
    stalls.  `late`: the request itself waits, and reaches moto only once released."""

    def __init__(self, endpoint: str, pattern: bytes, *, late: bool = False) -> None:
        import re
        import socket
        import threading

        self.target = ("127.0.0.1", int(endpoint.rsplit(":", 1)[1]))
        self.pattern = re.compile(pattern, re.MULTILINE)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.held = threading.Event()
        self.release = threading.Event()
        self.late = late
        self.requests: list[bytes] = []  # the request lines seen, in order
        self._socket = socket
        self._thread = threading.Thread
        self._thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = self._socket.create_connection(self.target)
            hold: list[bool] = []
            self._thread(target=self._requests, args=(client, server, hold), daemon=True).start()
            self._thread(target=self._answers, args=(server, client, hold), daemon=True).start()

    def _requests(self, src: Any, dst: Any, hold: list[bool]) -> None:
        import re

        try:
            while data := src.recv(1 << 16):
                self.requests += re.findall(rb"^(?:GET|HEAD|PUT|POST|DELETE) [^\r\n]*", data, re.MULTILINE)
                if not self.held.is_set() and self.pattern.search(data):
                    if not self.late:
                        hold.append(True)  # before the request reaches the store: its answer waits
                    self.held.set()
                    if self.late:
                        self.release.wait()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            dst.close()

    def _answers(self, src: Any, dst: Any, hold: list[bool]) -> None:
        try:
            while data := src.recv(1 << 16):
                if hold:
                    self.release.wait()
                    hold.clear()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            dst.close()

    def close(self) -> None:
        self.release.set()
        self.listener.close()


#: Request lines of a multipart upload: the one that starts it, and a part's.
_STARTING, _PART = rb"^POST [^ ]*\?uploads[ =&]", rb"^PUT [^ ]*\?[^ ]*partNumber="


def _run_while_stalled(
    argv: list[str], store: _StallingStore, cwd: Path, meanwhile: Callable[[subprocess.Popen[str]], None]
) -> tuple[int, str]:
    """Run `argv` with the S3 endpoint behind `store`; once the store has received the stalling
    request, do `meanwhile(child)`, then let the store go on.  The exit status and standard error."""
    env = dict(os.environ, AWS_ENDPOINT_URL=store.url)
    try:
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd) as child:
            try:
                assert store.held.wait(120), "the child never reached the stalling request"
                meanwhile(child)
                store.release.set()  # the store answers, late
                _, stderr = child.communicate(timeout=300)
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
    finally:
        store.close()
    return child.returncode, stderr


def _interrupt_while_stalled(argv: list[str], store: _StallingStore, cwd: Path) -> tuple[int, str]:
    """SIGINT to the child while the store stalls (the multipart upload it starts exists)."""

    def interrupt(child: subprocess.Popen[str]) -> None:
        child.send_signal(signal.SIGINT)
        time.sleep(1.5)  # the child has handled the signal (fsspec waits in 1 s steps)

    return _run_while_stalled(argv, store, cwd, interrupt)


@pytest.mark.parametrize("stall", [_STARTING, _PART], ids=["starting-the-upload", "uploading-a-part"])
def test_ctrl_c_while_the_store_stalls_aborts_the_upload(
    s3_endpoint: str, bucket: str, english_jsonl: Path, tmp_path: Path, stall: bytes
) -> None:
    """Issue 28 item 15: Ctrl-C reaches `mnemo tokenize -o s3://...` while the store has not yet
    answered a request of the output's multipart upload -- the one that starts it (whose answer
    is the upload id the abort needs: before the fix the upload was left behind) or a part's.
    The run ends as interrupted, with no multipart upload left in the bucket, no object, and no
    "Exception ignored" noise."""
    tok = mnemo.train([english_jsonl], vocab_size=300, workers=1)
    tok.save(tmp_path / "tok.bin")
    small = tmp_path / "small.jsonl"
    small.write_text("".join(english_jsonl.read_text(encoding="utf-8").splitlines(keepends=True)[:50]), encoding="utf-8")
    exe = str(Path(sys.executable).with_name("mnemo"))
    argv = [exe, "tokenize", str(small), "-t", str(tmp_path / "tok.bin"), "-o", f"s3://{bucket}/out.tok", "--workers", "1", "-q"]
    code, stderr = _interrupt_while_stalled(argv, _StallingStore(s3_endpoint, stall), tmp_path)
    assert code == 128 + signal.SIGINT, stderr
    assert "mnemo: interrupted" in stderr
    assert "Exception ignored" not in stderr and "Traceback" not in stderr, stderr
    assert _s3(s3_endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert _keys(s3_endpoint, bucket) == []


def test_ctrl_c_while_a_part_of_a_large_upload_stalls_aborts_it_quietly(s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    """The same for the first of three 8 MiB parts of an upload (sent while the file is still
    being written, not when it is closed): before the fix the discarded file's `__del__` printed
    "Exception ignored in AbstractBufferedFile.__del__" at exit."""
    data = tmp_path / "big.tok"
    data.write_bytes(os.urandom(20 << 20))
    argv = [sys.executable, "-c", _UPLOADER, str(data), f"s3://{bucket}/big.tok"]
    code, stderr = _interrupt_while_stalled(argv, _StallingStore(s3_endpoint, _PART), tmp_path)
    assert code != 0 and "KeyboardInterrupt" in stderr, stderr
    assert "Exception ignored" not in stderr, stderr
    assert _s3(s3_endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert _keys(s3_endpoint, bucket) == []


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


# ---- an input replaced while it is read -------------------------------------------------------------


def test_an_input_object_replaced_after_planning_is_named_as_changed(s3_endpoint: str, bucket: str, english_jsonl: Path) -> None:
    """Issue 28 item 16: the byte ranges of a run are planned on one version of an object; a task
    that finds another one there (replaced in between: here a line added at the front, so each
    planned cut falls inside a line) says the input changed -- before, the task read its range
    of the new object and said "not valid JSON".  A read of an object replaced since it was
    opened says so too (s3fs reads with If-Match: before, a bare OSError that named no file)."""
    from mnemo.location import location
    from mnemo.sources import check_inputs, iter_task_documents, plan_tasks

    url = _put(s3_endpoint, bucket, "english.jsonl", english_jsonl)
    tasks = plan_tasks(check_inputs([url]), n_workers=2, min_task_bytes=1 << 20, max_task_bytes=1 << 20)
    assert len(tasks) >= 3
    assert list(iter_task_documents(tasks[1]))  # the planned version reads
    new = b'{"text": "a line added at the front"}\n' + english_jsonl.read_bytes()
    _s3(s3_endpoint).put_object(Bucket=bucket, Key="english.jsonl", Body=new)
    for task in tasks:
        with pytest.raises(InputError, match=f"^{url}: the object changed while mnemo read it"):
            list(iter_task_documents(task))

    with location(url).open(exact=True) as f:
        assert f.read(100) == new[:100]
        _s3(s3_endpoint).put_object(Bucket=bucket, Key="english.jsonl", Body=english_jsonl.read_bytes())
        f.seek(1 << 20)
        with pytest.raises(InputError, match=f"^{url}: the object changed while mnemo read it"):
            f.read(100)


def test_tokenize_names_an_input_replaced_mid_run(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path
) -> None:
    """The same through `mnemo tokenize`: the input is replaced while a worker reads it (its
    first large ranged read -- a task's, not the planning's small ones -- reaches the store only
    after the test has replaced the object).  The error names the URL and says it changed;
    before, the run read the new object as if it were the one planned and exited 0."""
    url = _put(s3_endpoint, bucket, "english.jsonl", english_jsonl)
    task_read = rb"^GET /" + bucket.encode() + rb"/english\.jsonl [^\n]*\r\n(?:[^\r\n]+\r\n)*?[Rr]ange: bytes=\d+-\d{7,}\r\n"
    store = _StallingStore(s3_endpoint, task_read, late=True)
    exe = str(Path(sys.executable).with_name("mnemo"))
    argv = [exe, "tokenize", url, "-t", str(small_tok[1]), "-o", str(tmp_path / "out.tok"), "--workers", "2", "-q"]
    new = b'{"text": "a line added at the front"}\n' + english_jsonl.read_bytes()

    def replace(child: subprocess.Popen[str]) -> None:
        _s3(s3_endpoint).put_object(Bucket=bucket, Key="english.jsonl", Body=new)

    code, stderr = _run_while_stalled(argv, store, tmp_path, replace)
    assert code == 1, stderr
    assert stderr.startswith(f"mnemo: error: {url}: the object changed while mnemo read it"), stderr
    assert not (tmp_path / "out.tok").exists()


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
    # every TOKENIZER argument goes through mnemo.load, which says what it looks for
    assert out.returncode == 1 and out.stderr.startswith(
        f"mnemo: error: s3://{bucket}/missing.bin: no such tokenizer file or folder"
    ), out.stderr
    mnemo.train([english_jsonl], vocab_size=300, workers=1).save(tmp_path / "tok.bin")
    out = _mnemo("tokenize", english_jsonl, "-t", tmp_path / "tok.bin", "-o", "s3://mnemo-no-such-bucket/x.tok", "-q")
    assert out.returncode == 1
    assert out.stderr.startswith("mnemo: error: s3://mnemo-no-such-bucket/x.tok: the bucket 'mnemo-no-such-bucket' does not exist"), out.stderr
    same = _put(s3_endpoint, bucket, "same.jsonl", english_jsonl)
    out = _mnemo("tokenize", same, "-t", tmp_path / "tok.bin", "-o", same, "-q")
    assert out.returncode == 1 and f"{same}: the output is also an input" in out.stderr, out.stderr
    out = _mnemo("train", english_jsonl, "-o", f"s3://{bucket}/", "--vocab-size", "300", "-q")
    assert out.returncode == 1 and "give the output a key" in out.stderr, out.stderr


def test_a_folder_given_as_the_tokenizer_is_named(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path
) -> None:
    """Issue 28 item 16: `-t s3://bucket/folder` -- a prefix holding no tokenizer, or the empty
    object an S3 console makes for a folder -- said "truncated: 0 bytes".  Every TOKENIZER
    argument (through mnemo.load) names the URL and says what a tokenizer folder holds."""
    s3 = _s3(s3_endpoint)
    s3.put_object(Bucket=bucket, Key="folder/notes.txt", Body=b"not a tokenizer")
    s3.put_object(Bucket=bucket, Key="console/", Body=b"")
    data = _put(s3_endpoint, bucket, "english.jsonl", english_jsonl)
    tok_file = tmp_path / "data.tok"
    from mnemo.tokenizing import tokenize_files

    tokenize_files([english_jsonl], small_tok[0], tok_file, workers=1)
    for url in (f"s3://{bucket}/folder", f"s3://{bucket}/folder/", f"s3://{bucket}/console/"):
        for argv in (
            ["tokenize", data, "-t", url, "-o", tmp_path / "out.tok"],
            ["tokshow", "-t", url, "hello"],
            ["eval", url, "--corpus", english_jsonl],
            ["inspect", url],
            ["train", english_jsonl, "--from", url, "-o", tmp_path / "t.bin", "--vocab-size", "700"],
            ["pretrain", tok_file, "-t", url, "-o", tmp_path / "w.npz"],
            ["convert", url, tmp_path / "c.json", "--to", "hf"],
        ):
            out = _mnemo(*argv)
            assert out.returncode == 1, (argv, out.stderr)
            assert out.stderr.startswith(f"mnemo: error: {url}: a folder (a prefix) without tokenizer.json"), (argv, out.stderr)
            assert "truncated" not in out.stderr and "Traceback" not in out.stderr
        with pytest.raises(InputError, match="pass a tokenizer file, or a folder that holds one"):
            mnemo.load(url)


def test_info_of_a_prefix_without_a_manifest_names_the_url_and_copies_nothing(
    s3_endpoint: str, bucket: str, small_tok: tuple[mnemo.Tokenizer, Path]
) -> None:
    """Issue 28 item 16: `mnemo info s3://bucket/prefix` (and open_tok) of a prefix that is not a
    shard directory looks for its manifest first: the error names the URL, and no object under
    the prefix is downloaded (before, the whole prefix was copied, and the error named the
    temporary copy)."""
    s3 = _s3(s3_endpoint)
    s3.put_object(Bucket=bucket, Key="prefix/big.bin", Body=os.urandom(12 << 20))
    s3.put_object(Bucket=bucket, Key="prefix/sub/other.jsonl", Body=b'{"text": "x"}\n')
    url = f"s3://{bucket}/prefix"
    store = _StallingStore(s3_endpoint, rb"(?!)")  # stalls nothing: it records the requests
    try:
        out = _mnemo("info", url, env=dict(os.environ, AWS_ENDPOINT_URL=store.url))
    finally:
        store.close()
    assert out.returncode == 1, out.stderr
    # `info` takes a tokenizer folder too: the error says the prefix is neither
    assert out.stderr.startswith(f"mnemo: error: {url}: no shard directory of tokenize --ray (it has no manifest.json)"), out.stderr
    assert "without tokenizer.json" in out.stderr, out.stderr
    assert "mnemo-copies-" not in out.stderr
    fetched = [r for r in store.requests if r.startswith(b"GET /" + bucket.encode() + b"/prefix/")]
    assert fetched == [], fetched
    with pytest.raises(InputError, match=f"^{url}: no manifest.json"):
        mnemo.open_tok(url, small_tok[0])


def test_a_damaged_shard_directory_at_a_url_is_named_by_its_url(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path
) -> None:
    """open_tok and `mnemo info` of a shard directory whose manifest is damaged: the error names
    the manifest at the URL, not the temporary copy it was read from."""
    s3 = _s3(s3_endpoint)
    s3.put_object(Bucket=bucket, Key="shards/manifest.json", Body=b'{"format": "mnemo-shards", "version": 2}')
    s3.put_object(Bucket=bucket, Key="shards/shard-000000.tok", Body=b"x")
    url = f"s3://{bucket}/shards"
    with pytest.raises(mnemo.errors.MnemoError) as caught:
        mnemo.open_tok(url, small_tok[0])
    assert str(caught.value).startswith(f"{url}/manifest.json"), caught.value
    assert "mnemo-copies-" not in str(caught.value)
    out = _mnemo("info", url)
    assert out.returncode == 1 and out.stderr.startswith(f"mnemo: error: {url}/manifest.json"), out.stderr
    assert "mnemo-copies-" not in out.stderr


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


# ---- every other path argument: token files read back, folders, convert/pretrain/tokshow/... -----


@pytest.fixture(scope="module")
def small_tok(tmp_path_factory: pytest.TempPathFactory, english_jsonl: Path) -> tuple[mnemo.Tokenizer, Path]:
    folder = tmp_path_factory.mktemp("remote-tok")
    tok = mnemo.train([english_jsonl], vocab_size=600, workers=1)
    tok.save(folder / "tok.bin")
    return tok, folder / "tok.bin"


def _no_copy_folders(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("mnemo-copies-"))


def test_tok_files_at_a_url_are_read_back_from_a_local_copy(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """open_tok, TokenStream/BatchLoader, `mnemo info` and `mnemo pretrain` take a .tok at a URL
    (they memory-mapped local files only: `cannot read s3://...`).  The tokens are the local
    file's; a file of another tokenizer is refused on its header, before any copy; the copy
    lives in TMPDIR and is gone when the process exits; one that would not fit is refused."""
    from mnemo import remote
    from mnemo.batches import BatchLoader, TokenStream
    from mnemo.bigram import BigramModel
    from mnemo.errors import FingerprintError

    tok, tok_path = small_tok
    local = tmp_path / "en.tok"
    assert _mnemo("tokenize", english_jsonl, "-t", tok_path, "-o", local, "-q").returncode == 0
    url = _put(s3_endpoint, bucket, "tokens/en.tok", local)
    tok_url = _put(s3_endpoint, bucket, "tok.bin", tok_path)

    f = mnemo.open_tok(url, tok)
    assert str(f.path) == url and f.header == mnemo.open_tok(local, tok).header
    assert np.array_equal(f.tokens, mnemo.open_tok(local, tok).tokens)
    a = BatchLoader(TokenStream.from_tok_files([url], tok), context=32, batch_size=4, seed=1)
    b = BatchLoader(TokenStream.from_tok_files([local], tok), context=32, batch_size=4, seed=1)
    for _ in range(3):
        x, y = a.next_batch(), b.next_batch()
        assert np.array_equal(x.inputs, y.inputs) and np.array_equal(x.targets, y.targets)

    other = mnemo.train([english_jsonl], vocab_size=500, workers=1)
    url2 = _put(s3_endpoint, bucket, "tokens/again.tok", local)
    with pytest.raises(FingerprintError, match=f"{url2} was made by the tokenizer with fingerprint"):
        mnemo.open_tok(url2, other)
    assert url2 not in remote._copies  # refused on its 64-byte header: nothing was copied
    monkeypatch.setattr(remote, "COPY_RESERVE", 1 << 60)
    with pytest.raises(InputError, match=f"{url2}: a .tok file at a URL is read from a local copy, and its [0-9,]+ bytes do not fit"):
        mnemo.open_tok(url2, tok)
    monkeypatch.undo()
    with pytest.raises(InputError, match=f"s3://{bucket}/tokens/absent.tok: no such object"):
        mnemo.open_tok(f"s3://{bucket}/tokens/absent.tok", tok)

    out = _mnemo("info", url)
    assert out.returncode == 0, out.stderr
    assert out.stdout == _mnemo("info", local).stdout.replace(str(local), url)

    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    out = _mnemo("pretrain", url, "--val", url2, "-t", tok_url, "--steps", "3", "--eval-every", "3", "--batch", "4",
                 "--context", "16", "-o", f"s3://{bucket}/weights.npz", "-q", env=env)
    assert out.returncode == 0, out.stderr
    assert _no_copy_folders(tmpdir) == [], list(tmpdir.iterdir())  # the process removed its copies
    model = BigramModel.load(f"s3://{bucket}/weights.npz")
    assert model.E.shape[0] == tok.n_vocab


def test_stack_files_and_shard_directories_at_a_url(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path
) -> None:
    """`mnemo info` and read_stack_file of a Megatron/datatrove/nanoGPT set written to s3://,
    and a shard directory in a bucket read by open_tok: what the local files give."""
    from mnemo.stackfiles import read_stack_file

    tok, tok_path = small_tok
    for fmt, given, name in (("megatron", "set", "set.bin"), ("datatrove", "set", "set.ds"), ("nanogpt", "set.bin", "set.bin")):
        local_dir = tmp_path / fmt
        local_dir.mkdir()
        assert _mnemo("tokenize", english_jsonl, "-t", tok_path, "-o", local_dir / given, "--format", fmt, "-q").returncode == 0
        out = _mnemo("tokenize", english_jsonl, "-t", tok_path, "-o", f"s3://{bucket}/{fmt}/{given}", "--format", fmt, "-q")
        assert out.returncode == 0, out.stderr
        url = f"s3://{bucket}/{fmt}/{name}"
        got = _mnemo("info", url)
        assert got.returncode == 0, got.stderr
        assert got.stdout == _mnemo("info", local_dir / name).stdout.replace(str(local_dir), f"s3://{bucket}/{fmt}")
        remote_set, local_set = read_stack_file(url), read_stack_file(local_dir / name)
        assert remote_set.format == local_set.format == fmt
        assert np.array_equal(remote_set.tokens, local_set.tokens)

    # a shard directory of `tokenize --ray` (written here by the function a Ray task runs),
    # uploaded as it is: its files under one prefix
    from mnemo.shards import Manifest, Shard, shard_name, shard_origin, write_manifest
    from mnemo.sources import plan_tasks
    from mnemo.tokenizing import ShardSettings, plan_shards, write_shard

    folder = tmp_path / "shards"
    folder.mkdir()
    tasks = plan_tasks([english_jsonl], n_workers=1, min_task_bytes=1 << 20, max_task_bytes=1 << 20, whole_documents=True)
    written = []
    run = {"inputs": [[str(english_jsonl), english_jsonl.stat().st_size, english_jsonl.stat().st_mtime_ns]]}
    for i, group in enumerate(plan_shards(tasks, 1 << 20)):
        origin = shard_origin(run, Shard(shard_name(i), group))
        _, n_docs, n_tokens, _, crc = write_shard(ShardSettings(False, "text", tok.special_tokens["<|bos|>"], None), tok,
                                                  (str(folder / shard_name(i)), group, origin))
        written.append(Shard(shard_name(i), group, n_docs, n_tokens, crc))
    assert len(written) >= 2
    write_manifest(folder, Manifest(tok.fingerprint, tok.n_vocab, False, run, tuple(written), True))
    for f in sorted(folder.iterdir()):
        _put(s3_endpoint, bucket, f"shards/{f.name}", f)
    url = f"s3://{bucket}/shards"
    got, want = mnemo.open_tok(url, tok), mnemo.open_tok(folder, tok)
    assert str(got.path) == url and got.header == want.header and np.array_equal(got.tokens, want.tokens)
    out = _mnemo("info", url)
    assert out.returncode == 0, out.stderr
    assert out.stdout == _mnemo("info", folder).stdout.replace(str(folder), url)


def test_a_save_to_disk_folder_in_a_bucket_is_read_as_its_arrow_files(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path
) -> None:
    """`datasets.Dataset.save_to_disk` into a bucket (its state.json and data-*.arrow under a
    prefix): train and tokenize read the prefix as the Arrow objects state.json lists, as they
    read a local folder (one had to pass the data-*.arrow objects)."""
    datasets = pytest.importorskip("datasets")
    from mnemo.sources import check_inputs

    tok, tok_path = small_tok
    texts = [json.loads(line)["text"] for line in english_jsonl.read_text(encoding="utf-8").splitlines()]
    local = tmp_path / "ds"
    datasets.Dataset.from_dict({"text": texts}).save_to_disk(str(local), max_shard_size="1MB")
    arrows = sorted(p.name for p in local.glob("data-*.arrow"))
    assert len(arrows) >= 2
    for f in local.iterdir():
        _put(s3_endpoint, bucket, f"ds/{f.name}", f)
    url = f"s3://{bucket}/ds"
    assert [str(p) for p in check_inputs([url])] == [f"{url}/{name}" for name in json_names(local)]
    assert [str(p) for p in check_inputs([url + "/"])] == [f"{url}/{name}" for name in json_names(local)]
    assert mnemo.train([url], vocab_size=600, workers=2) == mnemo.train([local], vocab_size=600, workers=1)
    out = _mnemo("tokenize", url, "-t", tok_path, "-o", tmp_path / "remote.tok", "-q")
    assert out.returncode == 0, out.stderr
    assert _mnemo("tokenize", local, "-t", tok_path, "-o", tmp_path / "local.tok", "-q").returncode == 0
    assert (tmp_path / "remote.tok").read_bytes() == (tmp_path / "local.tok").read_bytes()
    # a prefix without state.json: the error names it
    _put(s3_endpoint, bucket, "plain/a.jsonl", english_jsonl)
    with pytest.raises(InputError, match=f"s3://{bucket}/plain: is a folder \\(a prefix\\) without a datasets state.json"):
        check_inputs([f"s3://{bucket}/plain"])


def json_names(folder: Path) -> list[str]:
    """The data files a save_to_disk folder's state.json lists, in its order."""
    return [entry["filename"] for entry in json.loads((folder / "state.json").read_text())["_data_files"]]


def test_convert_tokshow_inspect_eval_and_train_from_take_urls(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path,
    cs336_dir: Path,
) -> None:
    """The commands that took local paths only (`convert`, `tokshow`, `inspect`, `eval`,
    `train --from`) read and write s3:// as the local runs do: the same bytes, the same output."""
    tok, tok_path = small_tok
    s3 = _s3(s3_endpoint)
    b = f"s3://{bucket}"
    tok_url = _put(s3_endpoint, bucket, "tok.bin", tok_path)
    # convert: a gpt2 folder (prefix) in, a mnemo file out; an hf-dir and a gpt2 folder out and back
    _put(s3_endpoint, bucket, "gpt2/vocab.json", cs336_dir / "gpt2_vocab.json")
    _put(s3_endpoint, bucket, "gpt2/merges.txt", cs336_dir / "gpt2_merges.txt")
    gpt2_local = tmp_path / "gpt2"
    gpt2_local.mkdir()
    (gpt2_local / "vocab.json").write_bytes((cs336_dir / "gpt2_vocab.json").read_bytes())
    (gpt2_local / "merges.txt").write_bytes((cs336_dir / "gpt2_merges.txt").read_bytes())
    assert _mnemo("convert", gpt2_local, tmp_path / "gpt2.bin", "--from", "gpt2", "--to", "mnemo").returncode == 0
    out = _mnemo("convert", f"{b}/gpt2", f"{b}/conv/gpt2.bin", "--from", "gpt2", "--to", "mnemo")
    assert out.returncode == 0, out.stderr
    assert s3.get_object(Bucket=bucket, Key="conv/gpt2.bin")["Body"].read() == (tmp_path / "gpt2.bin").read_bytes()
    out = _mnemo("convert", f"{b}/gpt2/vocab.json", f"{b}/conv/gpt2-b.bin", "--merges", f"{b}/gpt2/merges.txt",
                 "--from", "gpt2", "--to", "mnemo")
    assert out.returncode == 0, out.stderr
    assert s3.get_object(Bucket=bucket, Key="conv/gpt2-b.bin")["Body"].read() == (tmp_path / "gpt2.bin").read_bytes()
    for fmt, names in (("hf-dir", ["special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]),
                       ("gpt2", ["merges.txt", "vocab.json"])):
        assert _mnemo("convert", tok_path, tmp_path / fmt, "--from", "mnemo", "--to", fmt).returncode == 0
        out = _mnemo("convert", tok_url, f"{b}/{fmt}-out/", "--from", "mnemo", "--to", fmt)
        assert out.returncode == 0, out.stderr
        assert sorted(k for k in _keys(s3_endpoint, bucket) if k.startswith(f"{fmt}-out/")) == [f"{fmt}-out/{n}" for n in names]
        for n in names:
            assert s3.get_object(Bucket=bucket, Key=f"{fmt}-out/{n}")["Body"].read() == (tmp_path / fmt / n).read_bytes(), n
        back, local_back = tmp_path / f"{fmt}-back.bin", tmp_path / f"{fmt}-local-back.bin"
        out = _mnemo("convert", f"{b}/{fmt}-out", back, "--from", fmt, "--to", "mnemo")
        assert out.returncode == 0, out.stderr
        assert _mnemo("convert", tmp_path / fmt, local_back, "--from", fmt, "--to", "mnemo").returncode == 0
        assert back.read_bytes() == local_back.read_bytes()
        if fmt == "hf-dir":  # (a gpt2 folder holds no pattern: it comes back with GPT-2's)
            # the same vocabulary and pattern, on the Unicode tables tokenizers runs a
            # tokenizer.json with (docs/interop.md): so another fingerprint than tok's
            again = mnemo.Tokenizer.load(back)
            assert (again.merges, again.special_tokens, again.pattern) == (tok.merges, tok.special_tokens, tok.pattern)
            assert again.split_pattern.unicode == "16.0.0"
    for fmt in ("hf", "tiktoken"):
        assert _mnemo("convert", tok_path, tmp_path / f"t.{fmt}", "--from", "mnemo", "--to", fmt).returncode == 0
        out = _mnemo("convert", tok_url, f"{b}/t.{fmt}", "--from", "mnemo", "--to", fmt)
        assert out.returncode == 0, out.stderr
        assert s3.get_object(Bucket=bucket, Key=f"t.{fmt}")["Body"].read() == (tmp_path / f"t.{fmt}").read_bytes()
    out = _mnemo("convert", f"{b}/t.tiktoken", tmp_path / "tt.bin", "--from", "tiktoken", "--to", "mnemo",
                 "--pattern", tok.pattern, *[a for n, i in tok.special_tokens.items() for a in ("--special", f"{n}={i}")])
    assert out.returncode == 0, out.stderr

    # tokshow: the tokenizer, --file and --chat at URLs
    text = tmp_path / "t.txt"
    text.write_text("Hello there, world of tokens.\n")
    chat = tmp_path / "c.jsonl"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}) + "\n")
    t_url, c_url = _put(s3_endpoint, bucket, "t.txt", text), _put(s3_endpoint, bucket, "c.jsonl", chat)
    for args, local_args in ((["--file", t_url], ["--file", text]), (["--chat", c_url], ["--chat", chat])):
        out = _mnemo("tokshow", "-t", tok_url, *args, "--ids", "--no-color")
        assert out.returncode == 0, out.stderr
        assert out.stdout == _mnemo("tokshow", "-t", tok_path, *local_args, "--ids", "--no-color").stdout

    # inspect and eval: the tokenizer and the corpus at URLs (eval's figures hold timings: compare the counts)
    corpus = _put(s3_endpoint, bucket, "corpus/en.jsonl", english_jsonl)
    out = _mnemo("inspect", tok_url, "--corpus", corpus, "--max-bytes", "200000")
    assert out.returncode == 0, out.stderr
    local = _mnemo("inspect", tok_path, "--corpus", english_jsonl, "--max-bytes", "200000")
    assert out.stdout.split("\n", 1)[1] == local.stdout.split("\n", 1)[1]
    out = _mnemo("eval", f"mine={tok_url}", "--corpus", corpus, "--max-bytes", "200000")
    assert out.returncode == 0, out.stderr
    assert "mine" in out.stdout and "en" in out.stdout

    # train --from a tokenizer at a URL
    out = _mnemo("train", english_jsonl, "--from", tok_url, "-o", f"{b}/more.bin", "--vocab-size", "700", "--workers", "1", "-q")
    assert out.returncode == 0, out.stderr
    assert _mnemo("train", english_jsonl, "--from", tok_path, "-o", tmp_path / "more.bin", "--vocab-size", "700",
                  "--workers", "1", "-q").returncode == 0
    assert s3.get_object(Bucket=bucket, Key="more.bin")["Body"].read() == (tmp_path / "more.bin").read_bytes()


@pytest.mark.parametrize("missing", ["bucket", "key"])
def test_every_command_names_a_missing_bucket_or_key(
    s3_endpoint: str, bucket: str, english_jsonl: Path, small_tok: tuple[mnemo.Tokenizer, Path], tmp_path: Path,
    missing: str,
) -> None:
    """Each path argument of each command, given an s3:// URL whose bucket or key does not
    exist: one `mnemo: error:` line naming the URL, no traceback, nothing written."""
    tok, tok_path = small_tok
    tok_url = _put(s3_endpoint, bucket, "tok.bin", tok_path)
    data = tmp_path / "d.tok"
    assert _mnemo("tokenize", english_jsonl, "-t", tok_path, "-o", data, "-q").returncode == 0
    gone = f"s3://mnemo-no-such-bucket-{uuid.uuid4().hex[:8]}" if missing == "bucket" else f"s3://{bucket}/no/such"
    cases: list[tuple[list[str | Path], str]] = [
        (["tokshow", "-t", f"{gone}/t.bin", "hello"], f"{gone}/t.bin"),
        (["tokshow", "-t", tok_url, "--file", f"{gone}/t.txt"], f"{gone}/t.txt"),
        (["tokshow", "-t", tok_url, "--chat", f"{gone}/c.jsonl"], f"{gone}/c.jsonl"),
        (["info", f"{gone}/d.tok"], f"{gone}/d.tok"),
        (["convert", f"{gone}/t.bin", tmp_path / "o.json", "--from", "mnemo", "--to", "hf"], f"{gone}/t.bin"),
        (["convert", f"{gone}/gpt2", tmp_path / "o.bin", "--from", "gpt2", "--to", "mnemo"], f"{gone}/gpt2"),
        (["pretrain", "-t", tok_path, f"{gone}/d.tok"], f"{gone}/d.tok"),
        (["pretrain", "-t", f"{gone}/t.bin", data], f"{gone}/t.bin"),
        (["inspect", f"{gone}/t.bin"], f"{gone}/t.bin"),
        (["inspect", tok_path, "--corpus", f"{gone}/c.jsonl"], f"{gone}/c.jsonl"),
        (["eval", f"{gone}/t.bin", "--corpus", english_jsonl], f"{gone}/t.bin"),
        (["eval", tok_path, "--corpus", f"{gone}/c.jsonl"], f"{gone}/c.jsonl"),
        (["train", english_jsonl, "-o", tmp_path / "t.bin", "--from", f"{gone}/t.bin"], f"{gone}/t.bin"),
    ]
    if missing == "bucket":  # an output whose bucket does not exist: refused before any work
        cases += [
            (["convert", tok_path, f"{gone}/o.json", "--from", "mnemo", "--to", "hf"], f"{gone}/o.json"),
            (["convert", tok_path, f"{gone}/hf/", "--from", "mnemo", "--to", "hf-dir"], f"{gone}/hf/tokenizer.json"),
            (["pretrain", "-t", tok_path, data, "-o", f"{gone}/w.npz"], f"{gone}/w.npz"),
            (["eval", tok_path, "--corpus", english_jsonl, "--plot", f"{gone}/e.png"], f"{gone}/e.png"),
        ]
    before = sorted(tmp_path.iterdir())
    for argv, url in cases:
        out = _mnemo(*argv)
        assert out.returncode == 1, (argv, out.stderr)
        assert "Traceback" not in out.stderr, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"mnemo: error: {url}"), (argv, out.stderr)
        assert sorted(tmp_path.iterdir()) == before, argv
    assert sorted(_keys(s3_endpoint, bucket)) == ["tok.bin"]
    if missing == "key":  # an output key that does not exist yet is simply written
        out = _mnemo("convert", tok_path, f"{gone}/o.json", "--from", "mnemo", "--to", "hf")
        assert out.returncode == 0 and sorted(_keys(s3_endpoint, bucket)) == ["no/such/o.json", "tok.bin"], out.stderr


def test_no_credentials_is_an_error_saying_where_they_are_read_from(tmp_path: Path) -> None:
    """An S3 URL with no credentials anywhere is one `mnemo: error:` line naming the URL and the
    variables to set -- not botocore's bare `NoCredentialsError: Unable to locate credentials`.
    Nothing is contacted: signing fails before a request, and the endpoint is a closed local port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_ENDPOINT_URL="http://127.0.0.1:9",
        AWS_DEFAULT_REGION="us-east-1",
    )
    text = tmp_path / "text.txt"
    text.write_text("some text")
    for argv, url in (
        (["info", "s3://some-bucket/data.tok"], "s3://some-bucket/data.tok"),  # a read
        (["train", str(text), "-o", "s3://some-bucket/tok.bin", "--vocab-size", "300"], "s3://some-bucket/tok.bin"),  # an output
    ):
        done = _mnemo(*argv, env=env)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"mnemo: error: {url}: no credentials"), lines[0]
        assert "AWS_ACCESS_KEY_ID" in lines[0] and "docs/remote.md" in lines[0]
