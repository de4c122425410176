"""The one location type (mnemo/location.py): local paths, standard input and fsspec URLs answer
the same questions -- what is there, open it (whole or from an offset), is it the same file,
a local path to memory-map, write it atomically -- and local paths work without fsspec.

URLs here are fsspec's memory:// (in this process); tests/test_remote.py runs the same paths
against a real S3 API.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemo.errors import ConfigError, InputError
from mnemo.location import LocalPath, Location, StandardInput, UrlPath, location

fsspec = pytest.importorskip("fsspec")


@pytest.fixture
def memory() -> Iterator[Any]:
    """fsspec's in-process filesystem, emptied after the test."""
    fs = fsspec.filesystem("memory")
    yield fs
    if fs.exists("/loc-test"):
        fs.rm("/loc-test", recursive=True)


def test_location_tells_the_three_kinds_apart_once() -> None:
    """`location()` is the one place that reads a path's spelling: a URL has a scheme of two
    characters or more (a Windows drive letter is a path), `-` is standard input, and a
    Location given back is returned as it is."""
    assert isinstance(location("s3://bucket/dir/key.jsonl"), UrlPath)
    assert isinstance(location("memory://x"), UrlPath)
    assert type(location("C://x")) is LocalPath and type(location("data/a.txt")) is LocalPath
    assert type(location(Path("data") / "a.txt")) is LocalPath
    stdin = location("-")
    assert isinstance(stdin, StandardInput) and location(Path("-")) == stdin
    for given in ("s3://bucket/dir/key.jsonl", "data/a.txt", "-"):
        loc = location(given)
        assert location(loc) is loc
        assert location(os.fspath(loc)) == loc  # a Task carries os.fspath(loc) to a worker
    url = location("s3://bucket/dir/key.jsonl")
    assert url.name == "key.jsonl" and url.remote and not location("a.txt").remote
    assert str(url.sibling("key.idx")) == "s3://bucket/dir/key.idx"
    assert str(url.join("x")) == "s3://bucket/dir/key.jsonl/x"
    assert str(stdin) == "<stdin>" and os.fspath(stdin) == "-" and stdin.stdin and stdin.private
    assert location("memory://x/y").private and not location("s3://b/k").private and not location("a").private


def test_info_says_file_folder_or_stream_without_opening(
    tmp_path: Path, memory: Any, within: Callable[[Callable[[], object], float], object]
) -> None:
    """info() is one stat or one request: a file's size, a folder, or a stream -- a FIFO is
    found to be one without being opened (opening it would wait for a writer)."""
    (tmp_path / "a.txt").write_bytes(b"hello world")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert location(tmp_path / "a.txt").info().size == 11
    assert location(tmp_path).info().type == "directory"
    info: Any = within(lambda: location(fifo).info(), 10)
    assert info.stream and info.type == "stream"
    assert location("-").info().stream
    with pytest.raises(InputError, match=r"nope\.txt: no such file; check the path"):
        location(tmp_path / "nope.txt").info()
    memory.pipe("/loc-test/d/a.txt", b"12345")
    assert location("memory://loc-test/d/a.txt").info().size == 5
    assert location("memory://loc-test/d").info().type == "directory"
    with pytest.raises(InputError, match="memory://loc-test/none: no such object"):
        location("memory://loc-test/none").info()


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_open_whole_or_from_an_offset_and_read_back(tmp_path: Path, memory: Any, kind: str) -> None:
    """The same bytes from both kinds: whole, from an offset (a task's byte range), and by
    read_bytes with its bound."""
    data = bytes(range(256)) * 40
    if kind == "local":
        (tmp_path / "f.bin").write_bytes(data)
        where: Location = location(tmp_path / "f.bin")
    else:
        memory.pipe("/loc-test/f.bin", data)
        where = location("memory://loc-test/f.bin")
    with where.open() as f:
        assert f.read() == data
    with where.open(exact=True) as f:
        f.seek(1000)
        assert f.read(300) == data[1000:1300]
    assert where.read_bytes(len(data)) == data
    with pytest.raises(Exception, match=f"larger than {len(data) - 1:,} bytes"):
        where.read_bytes(len(data) - 1)
    assert where.isfile() and not where.isdir()


def test_read_bytes_does_not_trust_the_size_a_file_reports(tmp_path: Path) -> None:
    """read_bytes sizes its buffer by the file's stat, but reads on when there is more: a file
    of /proc says it is 0 bytes long and is not; the bound still holds for it and for a FIFO."""
    cmdline = Path("/proc/self/cmdline")
    if not cmdline.exists() or os.stat(cmdline).st_size != 0:
        pytest.skip("needs Linux's /proc, whose files report a size of 0")
    code = "from mnemo.location import location; import sys; sys.stdout.buffer.write(location('/proc/self/cmdline').read_bytes(1 << 20))"
    done = subprocess.run(  # from tmp_path: not the source tree, which `-c` would import from the cwd
        [sys.executable, "-c", code, "x" * 5000], capture_output=True, timeout=300, check=True, cwd=tmp_path
    )
    assert done.stdout == b"\0".join([sys.executable.encode(), b"-c", code.encode(), b"x" * 5000]) + b"\0"
    with pytest.raises(Exception, match="larger than 10 bytes"):
        location(cmdline).read_bytes(10)
    exact = tmp_path / "exact.bin"
    exact.write_bytes(b"0123456789")
    assert location(exact).read_bytes(10) == b"0123456789"
    with pytest.raises(Exception, match="larger than 9 bytes"):
        location(exact).read_bytes(9)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'wb').write(b'y' * 70000)"])
    try:
        assert location(fifo).read_bytes(70000) == b"y" * 70000
    finally:
        writer.wait(timeout=300)


def test_same_file_however_spelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Identity: the device and inode of a local file (symlinks, hard links, ./x), the resolved
    path of one not there yet, the URL without a trailing slash; never across kinds."""
    monkeypatch.chdir(tmp_path)
    Path("a.txt").write_text("a")
    Path("b.txt").write_text("b")
    os.symlink("a.txt", "link.txt")
    os.link("a.txt", "hard.txt")
    a = location("a.txt")
    for other in ("./a.txt", str(tmp_path / "a.txt"), "link.txt", "hard.txt", Path("a.txt")):
        assert a.same_as(other), other
    assert not a.same_as("b.txt") and not a.same_as("missing.txt")
    assert location("new.txt").same_as("./sub/../new.txt")
    assert location("s3://b/dir/").same_as("s3://b/dir") and not location("s3://b/dir").same_as("s3://b/other")
    assert not a.same_as((tmp_path / "a.txt").as_uri())  # a file:// URL is fsspec's: another kind


def test_local_path_maps_a_local_file_in_place_and_copies_a_url_once(tmp_path: Path, memory: Any) -> None:
    (tmp_path / "t.bin").write_bytes(b"tokens")
    assert location(tmp_path / "t.bin").local_path() == tmp_path / "t.bin"  # no copy
    memory.pipe("/loc-test/t.bin", b"remote tokens")
    copy = location("memory://loc-test/t.bin").local_path()
    assert copy.read_bytes() == b"remote tokens" and copy != tmp_path / "t.bin"
    assert location("memory://loc-test/t.bin").local_path() == copy  # once per process
    with pytest.raises(InputError, match="standard input cannot be"):
        location("-").local_path()


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_staging_and_atomic_writes_publish_only_complete_files(tmp_path: Path, memory: Any, kind: str) -> None:
    """A writer builds its files in `staging().local`'s folder and publishes them: in place for
    a local output, by upload for a URL -- where nothing appears before `publish`."""
    out: Location = location(tmp_path / "out.bin") if kind == "local" else location("memory://loc-test/out.bin")
    staging = out.staging()
    try:
        (staging.local).write_bytes(b"part one")
        side = staging.local.with_name("out.idx")
        side.write_bytes(b"index")
        assert str(staging.final(side)) == str(out.sibling("out.idx"))
        if kind == "memory":
            assert not out.isfile()  # staged only
        staging.publish([staging.local, side])
    finally:
        staging.discard()
    assert out.read_bytes(100) == b"part one" and out.sibling("out.idx").read_bytes(100) == b"index"
    out.write_atomic(b"again")
    assert out.read_bytes(100) == b"again"


def test_output_checks_name_the_input_and_the_folder(tmp_path: Path, memory: Any) -> None:
    (tmp_path / "in.txt").write_text("x")
    with pytest.raises(ConfigError, match=r"in\.txt: the output is also the input .*in\.txt; writing it would destroy the input"):
        location(tmp_path / "in.txt").check_output([("input", str(tmp_path / "in.txt"))])
    with pytest.raises(ConfigError, match="the folder .* does not exist; create it first"):
        location(tmp_path / "no" / "x.bin").check_output()
    location(tmp_path / "x.bin").check_output([("input", "memory://loc-test/x.bin")])  # another kind: fine
    with pytest.raises(ConfigError, match="memory://loc-test/k: the output is also an input"):
        location("memory://loc-test/k").check_output([("input", "memory://loc-test/k")])
    # a folder of files (convert --to gpt2/hf-dir, tokenize --ray): the folder may not exist yet
    location(tmp_path / "new" / "deeper").check_output_folder([("input", tmp_path / "in.txt")], ["vocab.json"])
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "vocab.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"g/vocab\.json: the output is also the input"):
        location(tmp_path / "g").check_output_folder([("input", tmp_path / "g" / "vocab.json")], ["vocab.json"])
    with pytest.raises(ConfigError, match="is a file, but the output is a folder"):
        location(tmp_path / "in.txt").check_output_folder()
    memory.pipe("/loc-test/obj", b"x")
    with pytest.raises(ConfigError, match="memory://loc-test/obj: is an object, but the output is a folder"):
        location("memory://loc-test/obj").check_output_folder()


def test_local_paths_and_standard_input_work_without_fsspec(tmp_path: Path) -> None:
    """fsspec is the optional mnemo[remote] (docs/remote.md): with it hidden from the import
    system, training, tokenizing and reading back local files and standard input work, and
    nothing imports it; a URL is the error naming the extra."""
    text = tmp_path / "text.jsonl"
    text.write_text("".join(f'{{"text": "the cat sat on the mat number {i}"}}\n' for i in range(300)))
    code = textwrap.dedent(f"""
        import sys
        sys.modules["fsspec"] = None  # as if it were not installed
        import mnemo
        from mnemo.cli import main
        from mnemo.errors import ConfigError
        folder = {str(tmp_path)!r}
        assert main(["train", folder + "/text.jsonl", "-o", folder + "/tok.bin", "--vocab-size", "300", "--workers", "1", "-q"]) == 0
        assert main(["tokenize", "-", "-t", folder + "/tok.bin", "-o", folder + "/out.tok", "--workers", "2", "-q"]) == 0
        tok = mnemo.Tokenizer.load(folder + "/tok.bin")
        assert mnemo.open_tok(folder + "/out.tok", tok).header.n_docs == 300
        assert sys.modules["fsspec"] is None
        try:
            mnemo.Tokenizer.load("s3://bucket/tok.bin")
        except ConfigError as exc:
            assert "mnemo[remote]" in str(exc), exc
        else:
            raise AssertionError("a URL without fsspec was read")
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], input=text.read_bytes(), capture_output=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == b"ok", done.stderr.decode()


@pytest.mark.parametrize("text, what", [("\ud800", r"U\+D800 at index 0"), ("a/b\udfffc", r"U\+DFFF at index 3"), ("x\0y", "NUL")])
def test_a_path_no_file_can_have_is_named(text: str, what: str) -> None:
    """A path from a manifest or sidecar (JSON can spell a lone surrogate) that no file name can
    hold is an InputError naming it, not a UnicodeEncodeError from os.stat (the fuzz suite's
    shard-dir-run-input-lone-surrogate case); a name of undecodable bytes (surrogateescape's
    U+DC80..U+DCFF, which is what Python makes of them) stays a path."""
    with pytest.raises(InputError, match=what):
        location(text)
    assert isinstance(location(os.fsdecode(b"caf\xe9.txt")), LocalPath)
