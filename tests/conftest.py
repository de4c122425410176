"""Shared fixtures: kernel backends, and the real-text corpus in ../shared/corpus.

The corpus lives beside the repository (never inside it).  Tests that need it ask for the
`corpus_docs` fixture and are skipped, with the path in the reason, where it is absent -- so the
package also tests cleanly elsewhere.  `--full-corpus` makes corpus tests read every document
instead of their default deterministic sample.
"""

from __future__ import annotations

import base64
import gzip
import json
import lzma
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mnemo import kernels

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT.parent / "shared" / "corpus"
FIXTURES_DIR = ROOT.parent / "shared" / "fixtures"
CORPUS_NAMES = ("english", "multilingual", "code", "chat")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full-corpus",
        action="store_true",
        default=False,
        help="corpus tests read every document of ../shared/corpus instead of a sample",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a user's process has it.  A suite started in the background (`make test &`, a CI
    runner's shell: a shell without job control starts background commands with SIGINT ignored)
    has SIGINT ignored, and an ignored signal stays ignored in every process started from it:
    the tests' child processes never saw the SIGINT they were sent, and mnemo's own
    `python_handles_signals` took its other way.  Which tests passed then depended on whether an
    earlier test in the same process had put Python's handler back (pytest-xdist's order showed
    it).  Python's handler here is the default again in a child."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(params=kernels.backends())
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once per kernel backend this build can run here (asm first)."""
    before = kernels.backend()
    kernels.set_backend(request.param)
    try:
        yield request.param
    finally:
        kernels.set_backend(before)


@pytest.fixture(scope="session")
def full_corpus(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("full_corpus"))


def corpus_file(name: str) -> Path:
    """Path of ../shared/corpus/<name>.jsonl.xz, or skip the test with the reason."""
    path = CORPUS_DIR / f"{name}.jsonl.xz"
    if not path.is_file():
        pytest.skip(f"corpus file {path} is absent (it lives in ../shared/corpus beside the repo)")
    return path


@pytest.fixture(scope="session")
def corpus_path() -> Callable[[str], Path]:
    """corpus_path(name) -> ../shared/corpus/<name>.jsonl.xz, or skip the test with the reason."""
    return corpus_file


def iter_corpus_texts(name: str) -> Iterator[str]:
    """Every document's text, in file order; for `chat`, every message's content."""
    with lzma.open(corpus_file(name), "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if "messages" in record:
                for message in record["messages"]:
                    yield message["content"]
            else:
                yield record["text"]


@pytest.fixture(scope="session")
def corpus_docs(full_corpus: bool) -> Callable[..., list[str]]:
    """corpus_docs(name, max_bytes=2_000_000) -> texts from the start of that corpus.

    The files are shuffled (see their README), so a prefix is a fair sample.  With
    --full-corpus, max_bytes is ignored and every document is returned.
    """
    cache: dict[tuple[str, int], list[str]] = {}

    def get(name: str, max_bytes: int = 2_000_000) -> list[str]:
        limit = -1 if full_corpus else max_bytes
        key = (name, limit)
        if key not in cache:
            docs: list[str] = []
            total = 0
            for text in iter_corpus_texts(name):
                if 0 <= limit <= total:
                    break
                docs.append(text)
                total += len(text.encode("utf-8"))
            cache[key] = docs
        return cache[key]

    return get


@pytest.fixture(scope="session")
def cs336_dir() -> Path:
    path = FIXTURES_DIR / "cs336"
    if not path.is_dir():
        pytest.skip(f"fixtures folder {path} is absent")
    return path


def _within(fn: Callable[[], object], seconds: float) -> object:
    """fn() in a thread: the test fails, not hangs, when it does not return within `seconds`."""
    import threading

    result: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"did not return within {seconds} s"
    if errors:
        raise errors[0]
    return result[0]


@pytest.fixture
def within() -> Callable[[Callable[[], object], float], object]:
    """`within(fn, seconds)`: fn() or a failed test, never a hung one (time bounds on loaders)."""
    return _within


@pytest.fixture(scope="session")
def tiktoken_ranks() -> Callable[[str], dict[bytes, int]]:
    """tiktoken_ranks(name) -> the ranks of ../shared/fixtures/tiktoken/NAME.tiktoken.gz, or of
    "llama3_like": cl100k_base's ranks, then o200k_base's tokens cl100k lacks, in o200k's order,
    up to 128,000 ranks (as Llama 3 appended its 27,744 multilingual tokens to cl100k's).  A test
    that asks for one skips when the fixtures are absent."""

    def read(name: str) -> dict[bytes, int]:
        path = FIXTURES_DIR / "tiktoken" / f"{name}.tiktoken.gz"
        if not path.is_file():
            pytest.skip(f"fixture {path} is absent (../shared/fixtures/tiktoken beside the repo)")
        ranks: dict[bytes, int] = {}
        for line in gzip.decompress(path.read_bytes()).splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    def get(name: str) -> dict[bytes, int]:
        if name != "llama3_like":
            return read(name)
        ranks = read("cl100k_base")
        o200k = read("o200k_base")
        for raw in sorted(o200k, key=o200k.__getitem__):
            if len(ranks) == 128_000:
                break
            ranks.setdefault(raw, len(ranks))
        return ranks

    return get
