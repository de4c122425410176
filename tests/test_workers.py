"""Worker processes die with their parent (mnemo/workers.py): a parent killed with SIGKILL --
what the OOM killer does -- cannot stop its workers itself, and a worker blocked on the queue its
parent fed would otherwise wait forever.  Each test starts a real parent, finds its workers in
/proc, kills the parent with SIGKILL and requires every worker to be gone within seconds."""

from __future__ import annotations

import gzip
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

MNEMO = str(Path(sys.executable).parent / "mnemo")
#: How long the workers of a killed parent may live on.
GRACE_SECONDS = 5.0


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None and st[1] == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")  # a zombie has ended; only init may reap it


def _wait_for_workers(proc: subprocess.Popen[bytes], n: int) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the parent ended (code {proc.returncode}) before it had {n} workers"
        kids = _children(proc.pid)
        if len(kids) >= n:
            return kids
        time.sleep(0.02)
    raise AssertionError(f"no {n} workers after 60 s")


def _kill_and_check(proc: subprocess.Popen[bytes], workers: list[int]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for w in left:  # don't leave them behind for the next test
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers {left} outlived their parent by {GRACE_SECONDS} s"


@pytest.fixture(scope="module")
def corpus_gz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~48 MB of words as a gzip stream: the parent must decompress and hand out batches, so the
    workers are alive (counting, or waiting on the queue) for several seconds."""
    rng = random.Random(7)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 9))) for _ in range(20000)]
    block = ("\n".join(" ".join(rng.choices(words, k=12)) for _ in range(20000)) + "\n").encode()
    path = tmp_path_factory.mktemp("orphans") / "big.txt.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(max(1, (48 << 20) // len(block))):
            f.write(block)
    return path


def test_killed_train_leaves_no_workers(corpus_gz: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [MNEMO, "train", str(corpus_gz), "-o", str(tmp_path / "t.bin"), "--workers", "2", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _kill_and_check(proc, _wait_for_workers(proc, 2))
    assert not (tmp_path / "t.bin").exists()


def test_killed_tokenize_leaves_no_workers(corpus_gz: Path, tmp_path: Path) -> None:
    small = tmp_path / "small.txt"
    small.write_text("the quick brown fox jumps over the lazy dog\n" * 200)
    tok = tmp_path / "t.bin"
    subprocess.run([MNEMO, "train", str(small), "-o", str(tok), "--vocab-size", "300", "--workers", "1", "-q"], check=True)
    proc = subprocess.Popen(
        [MNEMO, "tokenize", "-t", str(tok), str(corpus_gz), "-o", str(tmp_path / "out.tok"), "--workers", "2", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # a text file without special tokens is one document, so one task: the work engine starts
    # workers as tasks need them, and this run needs one
    _kill_and_check(proc, _wait_for_workers(proc, 1))


ENCODE_BATCH = """
import mnemo
tok = mnemo.train_from_iterator(["the quick brown fox jumps over the lazy dog"] * 100, vocab_size=300, workers=1)
texts = ["the quick brown fox jumps over the lazy dog " * 50] * 2_000_000
tok.encode_batch(texts, workers=2)
"""


def test_killed_encode_batch_leaves_no_workers(tmp_path: Path) -> None:
    # cwd: the installed package, not the checkout's sources
    proc = subprocess.Popen(
        [sys.executable, "-c", ENCODE_BATCH], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path
    )
    # the work engine's two workers (forked: the script runs no other thread)
    _kill_and_check(proc, _wait_for_workers(proc, 2))


WATCHDOG = """
import os, sys, time
from mnemo.workers import watch_parent
parent = os.getpid()
child = os.fork()
if child == 0:
    watch_parent(parent, 0.05)
    time.sleep(60)
    os._exit(0)
print(child, flush=True)
time.sleep(60)
"""


def test_watchdog_ends_an_orphan(tmp_path: Path) -> None:
    """The fallback where prctl is missing, run on Linux through its seam: a process whose
    parent died ends by itself."""
    with subprocess.Popen([sys.executable, "-c", WATCHDOG], stdout=subprocess.PIPE, cwd=tmp_path) as proc:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert _alive(child)
        _kill_and_check(proc, [child])


# ---- the start method: fork only in a single-threaded process ----------------------------------


THREADED = """
import random, sys, threading
from pathlib import Path
from mnemo import train
from mnemo.tokenizing import tokenize_files
from mnemo.workers import worker_context

def run(folder, corpus, tag):
    tok = train(corpus, vocab_size=400, workers=2)
    tokenize_files([corpus], tok, folder / f"{tag}.tok", workers=2)
    return tok.to_bytes(), (folder / f"{tag}.tok").read_bytes()

if __name__ == "__main__":  # spawned workers import this script
    folder = Path(sys.argv[1])
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "theta", "iota"]
    corpus = folder / "c.txt"
    corpus.write_text("<|endoftext|>".join(" ".join(rng.choice(words) for _ in range(200)) for _ in range(300)))
    assert worker_context().get_start_method() == "fork"
    forked = run(folder, corpus, "forked")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="a caller's thread")
    other.start()
    try:
        assert worker_context().get_start_method() == "spawn"
        assert run(folder, corpus, "spawned") == forked
    finally:
        stop.set()
        other.join()
    print("same bytes")
"""


def test_workers_are_not_forked_while_other_threads_run(tmp_path: Path) -> None:
    """A forked child keeps every lock as it was at the fork, held for ever when another thread
    held it (fsspec's I/O thread hung tokenize workers in the test suite).  With another thread
    alive, workers are spawned, and training and tokenizing give the same bytes as forked
    workers do.  In a fresh process: the test process itself may run threads of earlier tests."""
    script = tmp_path / "threaded.py"
    script.write_text(THREADED)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "same bytes", done.stderr
