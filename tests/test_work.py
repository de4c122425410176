"""The work engine (mnemo/work.py): its contract against every executor, the error rule for
workers, dead workers, the persistent workers, and cleanup on Ctrl-C and SIGTERM.

Map functions used here are module-level, as the engine requires: workers import them by name."""

from __future__ import annotations

import functools
import json
import os
import random
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mnemo import Tokenizer, train, train_from_iterator, work
from mnemo.errors import InputError, VerificationError, WorkerError
from mnemo.tokenizing import tokenize_files

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

# Workers started as fresh interpreters (whenever an earlier test left a thread running) import
# the map functions below by name, as `tests.test_work`: the repository's root goes at the END of
# sys.path, after site-packages, so that `mnemo` still comes from the installed package.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parents[1]))

MNEMO = str(Path(sys.executable).parent / "mnemo")


# ---- map functions and combiners (module level: shipped to workers by name) ----------------------


def square(state: object, x: int) -> int:
    return x * x


def with_state(state: object, x: int) -> tuple[str, int]:
    return str(state), x


def build_upper(image: bytes) -> str:
    return image.decode().upper()


def slow_square(state: object, x: int) -> int:
    """Early tasks finish last: the engine must still deliver in order."""
    time.sleep(0.02 * (5 - x) if x < 5 else 0)
    return x * x


def raise_input_error(state: object, x: int) -> int:
    if x == 3:
        raise InputError(f"corpus.jsonl:{x}: not valid JSON")
    return x


def raise_bug(state: object, x: int) -> int:
    if x == 3:
        return {}[x]  # type: ignore[no-any-return]
    return x


def raise_verification(state: object, x: int) -> int:
    raise VerificationError("pair counts drifted at merge 7")


def kill_self(state: object, x: int) -> int:
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(10)
    return x


def my_pid(state: object, x: int) -> int:
    time.sleep(0.05)  # long enough that every worker gets a task
    return os.getpid()


class Sum:
    def __init__(self) -> None:
        self.total = 0

    def add(self, part: int) -> None:
        self.total += part

    def result(self) -> int:
        return self.total


def _queued() -> work.Executor:
    return work.Queued(work.LocalProcesses(2), 2)


def executors() -> list[Callable[[], work.Executor]]:
    return [
        work.InProcess,
        functools.partial(work.LocalProcesses, 2),
        functools.partial(work.LocalProcesses, 3),
        _queued,
    ]


@pytest.fixture(params=executors(), ids=["in-process", "local-2", "local-3", "queued-2x2"])
def executor(request: pytest.FixtureRequest) -> Iterator[work.Executor]:
    ex = request.param()
    try:
        yield ex
    finally:
        _stop(ex)


def _stop(ex: work.Executor) -> None:
    if isinstance(ex, work.LocalProcesses):
        ex.shutdown()
    if isinstance(ex, work.Queued):
        ex._workers.shutdown()


# ---- the contract --------------------------------------------------------------------------------


def test_ordered_results_come_in_task_order(executor: work.Executor) -> None:
    got: list[int] = []
    work.map_ordered(range(20), slow_square, got.append, executor=executor)
    assert got == [x * x for x in range(20)]


def test_combined_results_add_up(executor: work.Executor) -> None:
    assert work.map_combine(range(100), square, Sum, executor=executor) == sum(x * x for x in range(100))


def test_setup_is_built_once_per_worker_and_passed_to_every_call(executor: work.Executor) -> None:
    got: list[tuple[str, int]] = []
    work.map_ordered(range(6), with_state, got.append, executor=executor, setup=work.setup_of(build_upper, b"tok"))
    assert got == [("TOK", x) for x in range(6)]


def test_tasks_are_read_only_as_needed(executor: work.Executor) -> None:
    """A stream is never read ahead of the workers: at most width calls in flight plus the
    ordering window."""
    read = 0

    def tasks() -> Iterator[int]:
        nonlocal read
        for x in range(1000):
            read += 1
            yield x

    seen: list[int] = []

    def sink(r: int) -> None:
        seen.append(r)
        assert read - len(seen) <= (work.ORDER_WINDOW + 1) * executor.width

    work.map_ordered(tasks(), square, sink, executor=executor)
    assert len(seen) == 1000


# ---- the error rule --------------------------------------------------------------------------------


def test_a_workers_input_error_arrives_as_itself(executor: work.Executor) -> None:
    with pytest.raises(InputError, match=r"^corpus.jsonl:3: not valid JSON$"):
        work.map_ordered(range(8), raise_input_error, lambda r: None, executor=executor)


def test_a_bug_in_a_worker_arrives_as_a_bug(executor: work.Executor) -> None:
    with pytest.raises(KeyError) as info:
        work.map_combine(range(8), raise_bug, Sum, executor=executor)
    assert not isinstance(info.value, InputError)
    # raised in a worker: the worker's traceback as its cause; raised here: its own traceback
    cause = info.value.__cause__
    assert (isinstance(cause, work.RemoteTraceback) and "raise_bug" in str(cause)) or any(
        frame.name == "raise_bug" for frame in traceback.extract_tb(info.value.__traceback__)
    )


def test_a_verification_error_in_a_worker_arrives_as_a_bug(executor: work.Executor) -> None:
    with pytest.raises(VerificationError, match="drifted") as info:
        work.map_combine(range(4), raise_verification, Sum, executor=executor)
    if isinstance(executor, work.LocalProcesses):
        assert "raise_verification" in str(info.value.__cause__)


@pytest.mark.parametrize("make", [functools.partial(work.LocalProcesses, 2), _queued], ids=["local-2", "queued-2x2"])
def test_a_killed_worker_is_an_error_naming_it_not_a_hang(make: Callable[[], work.Executor]) -> None:
    """Also with a second call queued behind the one it dies in: the error names the first."""
    ex = make()
    try:
        t0 = time.monotonic()
        with pytest.raises(WorkerError, match=r"worker process \(pid \d+\) was killed by signal SIGKILL while working on 2"):
            work.map_ordered(range(6), kill_self, lambda r: None, executor=ex)
        assert time.monotonic() - t0 < 10
        got: list[int] = []  # and the executor works again
        work.map_ordered(range(6), square, got.append, executor=ex)
        assert got == [x * x for x in range(6)]
    finally:
        _stop(ex)


def test_a_worker_killed_while_idle_is_replaced() -> None:
    ex = work.LocalProcesses(2)
    try:
        pids = work.map_combine(range(8), functools.partial(_pid_set), _Union, executor=ex)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        assert work.map_combine(range(8), square, Sum, executor=ex) == sum(x * x for x in range(8))
    finally:
        ex.shutdown()


def _pid_set(state: object, x: int) -> set[int]:
    time.sleep(0.05)
    return {os.getpid()}


class _Union:
    def __init__(self) -> None:
        self.pids: set[int] = set()

    def add(self, part: set[int]) -> None:
        self.pids |= part

    def result(self) -> set[int]:
        return self.pids


_PINNED: list[bytearray] = []


def _rss_after_freeing(state: object, mb: int) -> tuple[int, int]:
    """Allocate `mb` MB in 60 KB blocks from malloc's heap (each followed by a small block kept
    alive, as a worker's long-lived objects are), free the big ones; this worker's pid and
    resident KiB afterwards.  glibc keeps the freed pages: they sit below live blocks."""
    blocks = []
    for _ in range(mb * 1_000_000 // 60_000):
        blocks.append(bytes(60_000))
        _PINNED.append(bytearray(1_000))  # over pymalloc's 512 bytes: from malloc too
    del blocks
    return os.getpid(), _rss_kib(os.getpid())


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


class _Last:
    def __init__(self) -> None:
        self.last: tuple[int, int] = (0, 0)

    def add(self, part: tuple[int, int]) -> None:
        self.last = part

    def result(self) -> tuple[int, int]:
        return self.last


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads resident memory from /proc")
def test_an_idle_worker_gives_freed_memory_back() -> None:
    """A worker kept its freed count tables (glibc keeps free()d pages): through `mnemo train`'s
    merge loop two idle workers held 150 MiB, and the 1 GB run went over 1 GiB summed.  The
    task frees 200 MB, and at least 100 MB must go back: a worker forked from a test process
    with a fragmented heap reuses some of the free holes it inherited, which no trim returns
    (with 100 MB freed, only 43 MB came back after another test's batches)."""
    ex = work.LocalProcesses(1)
    try:
        pid, after_task = work.map_combine([200], _rss_after_freeing, _Last, executor=ex)
        time.sleep(work.IDLE_TRIM_SECONDS + 1.0)
        idle = _rss_kib(pid)
        assert after_task - idle > 100_000, f"worker {pid}: {after_task} KiB after the task, {idle} KiB idle"
    finally:
        ex.shutdown()


def _surroundings_seen(state: object, x: int) -> tuple[str, str]:
    return os.getcwd(), os.environ.get("MNEMO_TEST_SURROUNDINGS", "")


class _Collect:
    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()

    def add(self, part: tuple[str, str]) -> None:
        self.seen.add(part)

    def result(self) -> set[tuple[str, str]]:
        return self.seen


def test_kept_workers_follow_the_callers_folder_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept workers started before the caller changed its working folder or its environment
    (credentials set for an s3:// input, a test's chdir) would read relative paths and URLs
    with the old ones: they are replaced."""
    work._shutdown_all()
    first = tmp_path / "a"
    second = tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    monkeypatch.setenv("MNEMO_TEST_SURROUNDINGS", "one")
    try:
        with work.shared_executor(2) as ex:
            assert work.map_combine(range(4), _surroundings_seen, _Collect, executor=ex) == {(str(first), "one")}
        monkeypatch.chdir(second)
        monkeypatch.setenv("MNEMO_TEST_SURROUNDINGS", "two")
        with work.shared_executor(2) as ex:
            assert work.map_combine(range(4), _surroundings_seen, _Collect, executor=ex) == {(str(second), "two")}
    finally:
        work._shutdown_all()


def test_an_error_stops_the_calls_in_flight() -> None:
    """After an error (or Ctrl-C) no worker goes on with the run's other tasks."""
    ex = work.LocalProcesses(3)
    try:
        with pytest.raises(InputError):
            work.map_ordered(range(100), raise_input_error, lambda r: None, executor=ex)
        assert all(not w.jobs for w in ex._workers)
    finally:
        ex.shutdown()


# ---- through counting and tokenizing ----------------------------------------------------------


@pytest.fixture
def fresh_workers() -> Iterator[None]:
    """Forked workers see a monkeypatched module only when they start after the patch."""
    work._shutdown_all()
    yield
    work._shutdown_all()


@pytest.fixture
def jsonl(tmp_path: Path, corpus_docs: Callable[..., list[str]]) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": d}) + "\n" for d in corpus_docs("english", 600_000)))
    return src


BUG_IN_A_WORKER = """
import sys, traceback
from pathlib import Path
import mnemo, mnemo.tokenizing, mnemo.training
from mnemo.errors import VerificationError

def bug(*args, **kwargs):
    raise ZeroDivisionError("a bug, not the input's fault")

def drift(*args, **kwargs):
    raise VerificationError("counts drifted")

src, workers, where, patch = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
tok = mnemo.train(src, vocab_size=300, workers=1)
module = mnemo.training if where == "count" else mnemo.tokenizing
module.TASK_BYTES = 64 << 10
module.iter_task_documents = bug if patch == "bug" else drift  # before the workers start: forked, they have it
try:
    if where == "count":
        mnemo.train(src, vocab_size=300, workers=workers)
    else:
        mnemo.tokenizing.tokenize_files([src], tok, src.with_suffix(".tok"), workers=workers)
except BaseException as exc:
    cause = exc.__cause__
    own = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    print(type(exc).__name__, "|", exc, "|", "bug" in own or "drift" in own or (cause is not None and "line" in str(cause)))
print("output left:", src.with_suffix(".tok").exists())
"""


@pytest.mark.parametrize("where", ["count", "tokenize"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_bug_in_a_worker_is_not_an_input_error(jsonl: Path, tmp_path: Path, where: str, workers: int) -> None:
    """training.py turned every worker exception, a VerificationError or a plain bug included,
    into InputError("ZeroDivisionError: ...").  Now each arrives as itself, with the worker's
    traceback.  In a fresh single-threaded process, so that the workers are forked after the
    module is patched (a fresh interpreter would not see the patch)."""
    script = tmp_path / "bug.py"
    script.write_text(BUG_IN_A_WORKER)
    for patch, expected in (("bug", "ZeroDivisionError | a bug, not the input's fault | True"), ("drift", "VerificationError | counts drifted | True")):
        if where == "tokenize" and patch == "drift":
            continue
        done = subprocess.run(
            [sys.executable, str(script), str(jsonl), str(workers), where, patch], cwd=tmp_path, capture_output=True, text=True, timeout=240
        )
        assert done.stdout.splitlines() == [expected, "output left: False"], (done.stdout, done.stderr)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_line_while_counting_names_its_line(tmp_path: Path, jsonl: Path, workers: int) -> None:
    lines = jsonl.read_text().splitlines(keepends=True)
    bad = len(lines) - 2
    lines[bad] = "{not json\n"
    jsonl.write_text("".join(lines))
    with pytest.raises(InputError, match=rf"{jsonl}:{bad + 1}: "):
        train(jsonl, vocab_size=300, workers=workers)


# ---- persistent workers ----------------------------------------------------------------------------


def _children() -> set[int]:
    me = os.getpid()
    kids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            if int(fields[1]) == me and fields[0] not in ("Z", "X"):
                kids.add(int(entry))
    return kids


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return train_from_iterator(["the quick brown fox jumps over the lazy dog"] * 50, vocab_size=300, workers=1)


def test_encode_batch_reuses_its_workers(tok: Tokenizer, fresh_workers: None) -> None:
    """encode_batch started a ProcessPoolExecutor for every call."""
    texts = ["the quick brown fox " * 100] * 3000  # 6 MB: above BATCH_PARALLEL_BYTES
    before = _children()
    first = tok.encode_batch(texts, workers=2)
    workers = _children() - before
    assert len(workers) == 2
    second = tok.encode_batch(texts, workers=2)
    assert _children() - before == workers
    assert first == second == [tok.encode(texts[0])] * len(texts)


def test_a_forked_child_gets_workers_of_its_own(tok: Tokenizer, fresh_workers: None) -> None:
    texts = ["the quick brown fox " * 100] * 3000
    expected = tok.encode_batch(texts[:1], workers=1) * len(texts)
    assert tok.encode_batch(texts, workers=2) == expected
    parent_workers = _children()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child leaves by os._exit
        ok = tok.encode_batch(texts, workers=2) == expected and not (_children() & parent_workers)
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(r)
    assert _children() == parent_workers and tok.encode_batch(texts, workers=2) == expected


# ---- cleanup on SIGINT and SIGTERM, at many moments -----------------------------------------------


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(raw[raw.rindex(")") + 2 :].split()[1]) == pid:
                found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return raw[raw.rindex(")") + 2 :].split()[0] not in ("Z", "X")


def _started(pid: int) -> int | None:
    """The process's start time (clock ticks after boot; /proc/PID/stat field 22), or None when
    it is gone: with the pid, what names one process -- on a busy machine a pid freed by a
    worker is soon another process's."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(raw[raw.rindex(")") + 2 :].split()[19])


def _same_and_alive(pid: int, started: int | None) -> bool:
    return started is not None and _started(pid) == started and _alive(pid)


@pytest.fixture(scope="module")
def signal_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("signals")
    rng = random.Random(5)
    words = ["".join(rng.choices("abcdefghijklmnop", k=rng.randint(2, 8))) for _ in range(3000)]
    src = folder / "in.jsonl"
    with src.open("w") as f:
        for _ in range(6000):
            f.write(json.dumps({"text": " ".join(rng.choices(words, k=150))}) + "\n")
    tok = folder / "tok.bin"
    subprocess.run([MNEMO, "train", str(src), "-o", str(tok), "--vocab-size", "400", "--workers", "1", "-q"], check=True)
    return src, tok


@pytest.mark.parametrize("command", ["tokenize", "train"])
def test_signals_at_many_moments_leave_nothing_behind(
    command: str, signal_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Pool.terminate deadlocked in ~2 of 8 runs (its result thread stuck reading a half-sent
    5 MB message of a killed worker).  SIGINT and SIGTERM, 10 times each, at moments spread over
    the run (workers starting, counting or encoding, merging, writing): the exit status says
    which signal, no worker outlives the run, no output or temporary file is left."""
    src, tok = signal_inputs
    rng = random.Random(11 if command == "train" else 12)
    out = tmp_path / "out"
    argv = (
        [MNEMO, "tokenize", "-t", str(tok), str(src), "-o", str(out), "--workers", "2", "-q"]
        if command == "tokenize"
        else [MNEMO, "train", str(src), "-o", str(out), "--vocab-size", "3000", "--workers", "2", "-q"]
    )
    # How long a run works once its first worker exists, measured here: the moments are spread
    # over that time, whatever the machine's speed and load.
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not _descendants(proc.pid) and proc.poll() is None:
        time.sleep(0.005)
    started = time.monotonic()
    proc.wait(timeout=120)
    span = time.monotonic() - started
    out.unlink()
    # At least 20 runs and until 10 of them were interrupted (at most 40): a run that ends
    # before its moment shows the machine got faster than when `span` was measured (the load of
    # a shared machine comes and goes), so the later moments are drawn over that run's length.
    interrupted = k = 0
    while k < 20 or (interrupted < 10 and k < 40):
        sig = signal.SIGINT if k % 2 else signal.SIGTERM
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seen: dict[int, int | None] = {}  # worker pid -> its start time

        def look() -> None:
            for p in _descendants(proc.pid) - seen.keys():
                seen[p] = _started(p)

        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline and proc.poll() is None:  # until workers exist
            look()
            time.sleep(0.005)
        working = time.monotonic()
        moment = working + rng.uniform(0.0, 0.8 * span)
        while time.monotonic() < moment and proc.poll() is None:
            look()
            time.sleep(0.005)
        if proc.poll() is not None and seen:
            span = min(span, time.monotonic() - working)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        left = [p for p, started in seen.items() if _same_and_alive(p, started)]
        for p in left:
            os.kill(p, signal.SIGKILL)
        assert not left, f"run {k}: workers {left} outlived the run"
        assert "Traceback" not in err, err
        if proc.returncode in (0, -sig):
            # The signal came after the work: the output is complete.  (-sig: it came while the
            # interpreter was shutting down, after Python had put the default handlers back.)
            assert out.exists(), (k, proc.returncode, err)
            out.unlink()
        else:
            assert proc.returncode == 128 + sig, (k, proc.returncode, err)
            if out.exists():
                # The signal came after the output was put in place (renamed whole) and before
                # the command returned: as after `mv` or `cp`, the status says the signal and
                # the file is whole -- checked to the last byte, then counted as a finished run.
                if command == "tokenize":
                    from mnemo.tokfile import verify_tok

                    assert verify_tok(out).n_docs == 6000, k
                else:
                    assert Tokenizer.load(out).n_vocab == 3000, k
                out.unlink()
            else:
                interrupted += 1
        assert sorted(p.name for p in tmp_path.iterdir()) == [], (k, list(tmp_path.iterdir()))
        k += 1
    assert interrupted >= 10, (interrupted, k, span)  # the moments fell inside the runs


AFTER_MAIN = """
import os, signal, sys
from mnemo import cli
code = cli.main()  # as the `mnemo` script calls it: the arguments from sys.argv
os.kill(os.getpid(), signal.SIGINT)  # after the work, before the workers' shutdown at exit
os.kill(os.getpid(), signal.SIGTERM)
sys.exit(code)
"""


def test_a_signal_after_the_command_ends_prints_no_traceback(tmp_path: Path) -> None:
    """main() put the raising handlers back as it returned: a Ctrl-C in the moment between its
    end and the workers' shutdown at exit raised KeyboardInterrupt inside that atexit function
    (a traceback, seen once in the signal test above).  Run as the program, main leaves the two
    signals blocked: they are dropped, and the run exits with its own status."""
    src = tmp_path / "in.txt"
    src.write_text("the quick brown fox jumps over the lazy dog\n" * 2000)
    argv = ["mnemo", "train", str(src), "-o", str(tmp_path / "t.bin"), "--vocab-size", "300", "--workers", "2", "-q"]
    result = subprocess.run(
        [sys.executable, "-c", AFTER_MAIN, *argv[1:]], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, (result.returncode, result.stderr)
    assert (tmp_path / "t.bin").exists()


# ---- encode_batch in a script without the __main__ guard (issue 15 item 2) --------------------------

UNGUARDED = """
import json, sys, threading
import mnemo

print("top level ran", flush=True)
tok = mnemo.Tokenizer.load(sys.argv[1])
texts = json.loads(open(sys.argv[2]).read())
if sys.argv[3] == "threaded":  # another thread: no fork, workers are fresh interpreters
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
ids = tok.encode_batch(texts)
flat, offsets = tok.encode_batch_to_numpy(texts)
loop = [tok.encode(t) for t in texts]
print("same ids", ids == loop and flat.tolist() == [i for x in loop for i in x], flush=True)
from mnemo import work
print("workers", len(work._SHARED._workers) if work._SHARED is not None else 0)
"""


@pytest.mark.parametrize("mode", ["single-threaded", "threaded"])
def test_encode_batch_in_an_unguarded_script(tmp_path: Path, corpus_docs: Callable[..., list[str]], mode: str) -> None:
    """encode_batch hung for good in a script without `if __name__ == "__main__":` once the batch
    held 4 MB of text: its spawned workers ran the script again and died.  Now the script runs
    once, to its end, whatever the start method."""
    texts = corpus_docs("english", 5_000_000)
    assert sum(len(t) for t in texts) > 4_000_000 and len(texts) > 256
    tok = train_from_iterator(texts[:200], vocab_size=1000, workers=1)
    tok.save(tmp_path / "tok.bin")
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "tok.bin"), str(tmp_path / "texts.json"), mode],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr
    workers = min(os.cpu_count() or 1, -(-len(texts) // 256)) if (os.cpu_count() or 1) > 1 else 0
    assert done.stdout.splitlines() == ["top level ran", "same ids True", f"workers {workers}"], done.stdout


def test_tasks_say_what_they_are() -> None:
    """An error names the task without opening its file: a byte range, a row group, a whole file;
    a block of documents by its size."""
    from mnemo.sources import Task

    assert work.describe(Task("a.jsonl", "jsonl", 0, 100)) == "a.jsonl (bytes 0 to 100)"
    assert work.describe(Task("b.parquet", "parquet", row_group=3)) == "b.parquet (row group 3)"
    assert work.describe(Task("c.txt.gz", "text", sequential=True)) == "c.txt.gz"
    assert work.describe([b"doc"] * 256) == "a block of 256 items"


@pytest.mark.parametrize("depth", [1, 3])
def test_a_worker_that_dropped_a_state_gets_it_again(depth: int) -> None:
    """A worker keeps KEPT_STATES states; the caller's note of what it has can be stale (a test
    suite with many tokenizers in one process): the worker asks for the image again -- also for
    the calls queued behind the first, which come back after the calls resent."""
    workers = work.LocalProcesses(1)
    ex = work.Queued(workers, depth) if depth > 1 else workers
    try:
        for k in [*range(work.KEPT_STATES + 2), 0, 1]:
            got: list[tuple[str, int]] = []
            work.map_ordered(range(5), with_state, got.append, executor=ex, setup=work.setup_of(build_upper, f"tok{k}".encode()))
            assert got == [(f"TOK{k}", x) for x in range(5)]
    finally:
        workers.shutdown()


def started_at(state: object, x: int) -> float:
    started = time.monotonic()
    time.sleep(0.05)
    return started


@pytest.mark.parametrize("depth", [1, 2])
def test_a_queued_call_starts_while_the_caller_is_busy(depth: int) -> None:
    """With a call queued behind the one it works on (Queued), a worker goes on while the caller
    is busy with a result; without, it waits for the caller to send more.  One worker, the
    caller busy 0.4 s with the first result: the third call starts before that ends only when
    queued."""
    workers = work.LocalProcesses(1)
    ex = work.Queued(workers, depth) if depth > 1 else workers
    starts: list[float] = []
    busy_until: list[float] = []

    def sink(started: float) -> None:
        starts.append(started)
        if len(starts) == 1:
            time.sleep(0.4)
            busy_until.append(time.monotonic())

    try:
        work.map_ordered(range(4), started_at, sink, executor=ex)
    finally:
        workers.shutdown()
    assert (starts[2] < busy_until[0]) == (depth == 2), (starts, busy_until)


def read_part(state: object, part: tuple[work.Shared, int, int]) -> tuple[bytes, int]:
    ref, start, end = part
    return work.read_shared(ref, start, end), os.getpid()


def shared_files(state: object, x: int) -> int:
    """How many shared-bytes files this process holds: in its registry, and open descriptors."""
    return len([v for v in work._SHARES.values() if not isinstance(v, BaseException)]) + _memfds()


def _memfds() -> int:
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            found += "mnemo-shared" in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir itself used
            pass
    return found


@pytest.mark.parametrize("make", [work.InProcess, functools.partial(work.LocalProcesses, 2), _queued])
def test_shared_bytes_reach_every_call_and_are_gone_after(make: Callable[[], work.Executor]) -> None:
    """Executor.share: every call reads the bytes appended before it was submitted, in any worker
    (from a memfd), while the caller goes on appending; after the block no worker and not this
    process holds the file (it is freed)."""
    ex = make()
    rng = random.Random(5)
    chunks = [rng.randbytes(rng.randrange(0, 300_000)) for _ in range(16)]
    try:
        got: list[tuple[bytes, int]] = []
        with ex.share() as shared:

            def parts() -> Iterator[tuple[work.Shared, int, int]]:
                for chunk in chunks:  # appended as the engine reads the tasks
                    start = shared.append(chunk)
                    yield shared.ref, start, start + len(chunk)

            work.map_ordered(parts(), read_part, got.append, executor=ex)
            assert shared.size == sum(map(len, chunks))
        assert [part for part, _ in got] == chunks
        if not isinstance(ex, work.InProcess):
            assert len({pid for _, pid in got}) == 2  # both workers read them
        assert _memfds() == 0
        assert work.map_combine(range(8), shared_files, Sum, executor=ex) == 0
        with pytest.raises(RuntimeError, match="not here"):
            work.map_ordered([(shared.ref, 0, 1)], read_part, lambda r: None, executor=ex)
    finally:
        _stop(ex)


IN_A_CHILD = """
import multiprocessing
import mnemo
from mnemo import work

def child(queue):
    tok = mnemo.train_from_iterator(["the quick brown fox jumps over the lazy dog"] * 50, vocab_size=300, workers=1)
    texts = ["the quick brown fox " * 100] * 3000  # 6 MB: workers in a top-level process
    ids = tok.encode_batch(texts)
    queue.put((ids == [tok.encode(t) for t in texts], 0 if work._SHARED is None else len(work._SHARED._workers)))

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=child, args=(queue,))
    process.start()
    print(queue.get(timeout=120))
    process.join()
"""


def test_encode_batch_stays_in_a_multiprocessing_child(tmp_path: Path) -> None:
    """In a process multiprocessing started (a DataLoader or datasets.map worker), the default is
    one process: its siblings have the other CPUs."""
    script = tmp_path / "in_a_child.py"
    script.write_text(IN_A_CHILD)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and done.stdout.strip() == "(True, 0)", (done.stdout, done.stderr)



def test_a_worker_gets_its_next_task_before_the_caller_adds_up_its_result() -> None:
    """A worker that returned a result was idle until the caller had added it up (counting's
    tables, ~50 ms each on 1 GB, longer on a busy machine): the next task now goes out first.
    With two workers, when the first result is added up the third task has been read (and
    handed to the worker that finished); before, only two had."""
    read = 0

    def tasks() -> Iterator[int]:
        nonlocal read
        for x in range(6):
            read += 1
            yield x

    read_at_add: list[int] = []

    class Noting(Sum):
        def add(self, part: int) -> None:
            read_at_add.append(read)
            super().add(part)

    ex = work.LocalProcesses(2)
    try:
        assert work.map_combine(tasks(), square, Noting, executor=ex) == sum(x * x for x in range(6))
    finally:
        ex.shutdown()
    assert read_at_add[0] == 3, read_at_add
