"""tokenizer.bin and .tok: exact layouts, validation of every field, fuzzing, atomic writes."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import FingerprintError, FormatError, Tokenizer, open_tok
from mnemo.constants import MASKBIT, MAX_SPECIALS, MAX_VOCAB, VOCAB16
from mnemo.tokfile import TokWriter, read_tok_header
from mnemo.vocabfile import MAX_BIN_BYTES, encode_tokenizer_bin, parse_tokenizer_bin

# ---- tokenizer.bin ----


def test_tokenizer_bin_layout() -> None:
    """Two merges, one special, counts: every byte derived by hand from docs/formats.md."""
    tok = Tokenizer([(104, 105), (256, 33)], pattern="gpt2", special_tokens=["<|e|>"], merge_counts=[7, 3])
    data = tok.to_bytes()
    merges = bytes([104, 0, 105, 0, 0, 1, 33, 0])  # (104, 105), (256, 33) as uint16 LE
    specials = bytes([5]) + b"<|e|>"
    counts = (7).to_bytes(8, "little") + (3).to_bytes(8, "little")
    payload = merges + specials + counts
    header = (
        b"MNEMOBPE"
        + (1).to_bytes(2, "little")  # version
        + (1).to_bytes(2, "little")  # flags: merge counts present
        + (2).to_bytes(4, "little")  # merges
        + (1).to_bytes(2, "little")  # specials
        + bytes([2, 0])  # pattern gpt2, tie "id"
        + (6).to_bytes(4, "little")  # specials section size
        + zlib.crc32(payload).to_bytes(4, "little")
        + bytes(4)  # reserved
    )
    assert len(header) == 32
    assert data == header + payload


def good_bin() -> bytes:
    merges = [(97, 97), (256, 97), (98, 99), (256, 258)]
    return Tokenizer(merges, special_tokens=["<|a|>", "<|bb|>"], merge_counts=[9, 8, 7, 6]).to_bytes()


def with_crc(data: bytes) -> bytes:
    """Fix the checksum after editing, so that the deeper checks are the ones that fire."""
    return data[:24] + struct.pack("<I", zlib.crc32(data[32:])) + data[28:]


def patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new) :]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d[:31], r"offset 31: truncated: the file has 31 bytes, the header alone needs 32"),
        (lambda d: b"MNEMOXXX" + d[8:], r"offset 0: bad magic b'MNEMOXXX'"),
        (lambda d: patch(d, 8, b"\x03\x00"), r"offset 8: format version 3 is not supported \(this mnemo reads versions 1 and 2\)"),
        (lambda d: patch(d, 10, b"\x04\x00"), r"offset 10: unknown flags 0x0004"),
        (lambda d: patch(d, 18, b"\x07"), r"offset 18: unknown pattern id 7"),
        (lambda d: patch(d, 19, b"\x05"), r"offset 19: unknown tie rule id 5"),
        (lambda d: patch(d, 28, b"\x01"), r"offset 28: reserved field is 1"),
        (lambda d: patch(d, 12, struct.pack("<I", 70000)), r"offset 12: 70000 merges \+ 2 specials"),
        (lambda d: d[:-1], r"offset 92: truncated: the header announces 93 bytes, the file has 92"),
        (lambda d: d + b"\0\0", r"offset 93: 2 trailing bytes"),
        (lambda d: patch(d, 40, b"\x63"), r"offset 24: checksum mismatch"),
        # merge 2 (id 258) = (98, 99) -> (98, 300): part from the future
        (lambda d: with_crc(patch(d, 32 + 8, struct.pack("<HH", 98, 300))),
         r"offset 40: merge 2 \(id 258\) uses token 300, which does not exist yet"),
        (lambda d: with_crc(patch(d, 32 + 8, struct.pack("<HH", 97, 97))),
         r"offset 40: merge 2 repeats the pair \(97, 97\) of merge 0"),
        # specials section at 48: [5]<|a|>[6]<|bb|>
        (lambda d: with_crc(patch(d, 48, b"\x00")), r"offset 48: special token 0 has an empty name"),
        (lambda d: with_crc(patch(d, 48, b"\x0d")), r"offset 48: special token 0 \(13 bytes\) runs past"),
        (lambda d: with_crc(patch(d, 48, b"\x0c")), r"offset 61: special token 1 of 2 starts past the end"),
        (lambda d: with_crc(patch(d, 48, b"\x04")), r"offset 53: special token 1 \(62 bytes\) runs past"),
        (lambda d: with_crc(patch(d, 49, b"\xff")), r"offset 49: special token 0 name .* is not valid UTF-8"),
    ],
)
def test_bad_tokenizer_bin(edit: object, message: str, tmp_path: Path) -> None:
    data = edit(good_bin())  # type: ignore[operator]
    path = tmp_path / "tok.bin"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=message):
        Tokenizer.load(path)


def test_specials_duplicate_and_slack() -> None:
    dup = encode_tokenizer_bin([(97, 97)], "mnemonic", ["<|a|>", "<|a|>"], "id", None)
    with pytest.raises(FormatError, match=r"x: offset 42: special token 1 '<\|a\|>' is listed twice"):
        parse_tokenizer_bin(dup, "x")
    # Announce one special but leave the second one's bytes in the section.
    data = bytearray(encode_tokenizer_bin([(97, 97)], "mnemonic", ["<|a|>", "<|b|>"], "id", None))
    data[16:18] = struct.pack("<H", 1)
    with pytest.raises(FormatError, match=r"offset 42: 6 unused bytes at the end of the specials section"):
        parse_tokenizer_bin(bytes(data), "x")


def largest_bin() -> bytes:
    """The largest valid version-1 tokenizer.bin: no merges, 65,280 specials of 255 bytes, an id map."""
    n = VOCAB16 - 256
    names = [f"<|{j:05d}|>".ljust(255, "x") for j in range(n)]
    return encode_tokenizer_bin([], "mnemonic", names, "id", [], list(range(VOCAB16))[::-1])


def test_the_size_bound_is_the_largest_valid_file(tmp_path: Path) -> None:
    """MAX_BIN_BYTES is computed from the layout (version 2: MAX_VOCAB ids of a merge, its count
    and an id map entry, and MAX_SPECIALS specials of 255 bytes); the largest version-1 file
    loads, in time linear in its size (a list's `in` for repeated specials once made 65,280 of
    them take 45 s at 446 KB, 129 s at this size), and one byte more than the bound is refused
    before it is parsed."""
    import threading

    data = largest_bin()
    assert len(data) == 16_842_784
    assert MAX_BIN_BYTES == 32 + (8 + 8 + 4) * MAX_VOCAB + 256 * MAX_SPECIALS == 58_720_032
    path = tmp_path / "largest.bin"
    path.write_bytes(data)
    loaded: list[Tokenizer] = []
    t = threading.Thread(target=lambda: loaded.append(Tokenizer.load(path)), daemon=True)
    t.start()
    t.join(30)
    assert loaded, "loading the largest tokenizer.bin took more than 30 s"
    assert loaded[0].n_vocab == VOCAB16
    with open(path, "wb") as f:
        f.truncate(MAX_BIN_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(FormatError, match=rf"{path}: larger than 58,720,032 bytes, the most mnemo reads as a tokenizer.bin"):
        Tokenizer.load(path)


def test_many_short_specials_load_fast() -> None:
    """The issue's 446 KB file: 65,280 short specials."""
    import time

    names = [f"<|{j}|>" for j in range(VOCAB16 - 256)]
    data = encode_tokenizer_bin([], "mnemonic", names, "id", None)
    t0 = time.perf_counter()
    fields = parse_tokenizer_bin(data, "x")
    assert time.perf_counter() - t0 < 5 and len(fields.special_tokens) == len(names)


def test_an_endless_input_is_read_to_the_bound_only(tmp_path: Path) -> None:
    """`-t /dev/zero` once read without end.  In a child with 1 GiB of address space and a
    time limit: a FormatError naming the bound, not an out-of-memory death or a hang."""
    code = textwrap.dedent(
        """
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from mnemo import FormatError, Tokenizer
        try:
            Tokenizer.load("/dev/zero")
        except FormatError as exc:
            print(exc)
        """
    )
    # cwd: away from the checkout, whose mnemo/ would shadow the installed package
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("/dev/zero: larger than 58,720,032 bytes")


def test_every_truncation_is_a_format_error() -> None:
    data = good_bin()
    for n in range(len(data)):
        with pytest.raises(FormatError):
            parse_tokenizer_bin(data[:n], "t")
    assert parse_tokenizer_bin(data, "t").special_tokens == ["<|a|>", "<|bb|>"]


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_fuzzed_tokenizer_bin(data: st.DataObject) -> None:
    """Random edits, with and without a repaired checksum: a Tokenizer or a FormatError, nothing else."""
    raw = bytearray(good_bin())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = bytearray(with_crc(bytes(raw)))
    try:
        fields = parse_tokenizer_bin(bytes(raw), "fuzz")
    except FormatError:
        return
    Tokenizer(fields.merges, pattern=fields.pattern, special_tokens=fields.special_tokens, tie=fields.tie)


# ---- .tok ----


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer([(97, 97), (256, 97)], special_tokens=["<|bos|>", "<|end|>"])


def test_tok_round_trip_and_layout(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([258, 257, 98])
        w.write_doc(np.array([258, 256], dtype=np.int64))
    raw = path.read_bytes()
    assert len(raw) == 64 + 2 * 5
    assert raw[:8] == b"MNEMOTOK"
    assert struct.unpack_from("<HHIQQ", raw, 8) == (1, 2, 0, 5, 2)  # version, width, flags, tokens, docs
    assert raw[32:48].hex() == tok.fingerprint
    assert struct.unpack_from("<I", raw, 48) == (tok.n_vocab,)
    assert raw[52:64] == bytes(12)
    assert raw[64:] == struct.pack("<5H", 258, 257, 98, 258, 256)
    opened = open_tok(path, tok)
    assert opened.tokens.tolist() == [258, 257, 98, 258, 256]
    assert opened.tokens.dtype == np.dtype("<u2")
    assert isinstance(opened.tokens, np.memmap)
    assert (opened.header.n_docs, opened.header.chat, len(opened)) == (2, False, 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.tok"]


def test_tok_chat_flags_and_empty(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "chat.tok"
    with TokWriter(path, tok, chat=True) as w:
        w.write([258, 97 | MASKBIT], n_docs=1)
    opened = open_tok(path, tok)
    assert opened.header.chat and opened.header.masked and opened.header.maskbit == MASKBIT
    assert opened.tokens.tolist() == [258, 97 | 0x8000]
    empty = tmp_path / "empty.tok"
    with TokWriter(empty, tok):
        pass
    assert len(open_tok(empty, tok)) == 0


def test_tok_foreign_fingerprint(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([1, 2])
    other = Tokenizer([(97, 98)])
    with pytest.raises(FingerprintError, match=f"fingerprint {tok.fingerprint}.*this one \\({other.fingerprint}\\)"):
        open_tok(path, other)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d[:-1], r"the header announces 3 tokens of 2 bytes \(70 bytes in all\), but the file has 69"),
        (lambda d: d + b"\0", r"but the file has 71 bytes"),
        (lambda d: d[:40], r"offset 40: truncated: the file has 40 bytes"),
        (lambda d: b"MNEMOBPE" + d[8:], r"offset 0: bad magic b'MNEMOBPE'"),
        (lambda d: patch(d, 8, b"\x09\x00"), r"offset 8: format version 9"),
        (lambda d: patch(d, 10, b"\x03\x00"), r"offset 10: token width 3 bytes"),
        (lambda d: patch(d, 12, b"\x08"), r"offset 12: unknown flags 0x00000008"),
        (lambda d: patch(d, 60, b"\x01"), r"offset 52: reserved bytes are not zero"),
        (lambda d: patch(d, 16, struct.pack("<Q", 1 << 62)), r"announces 4611686018427387904 tokens"),
    ],
)
def test_bad_tok(edit: object, message: str, tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([1, 2, 3])
    path.write_bytes(edit(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(FormatError, match=message):
        open_tok(path, tok)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_tok(data: st.DataObject, tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "fuzz.tok"
    with TokWriter(path, tok) as w:
        w.write_doc([1, 2, 3, 4])
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    path.write_bytes(bytes(raw[:cut]))
    try:
        opened = open_tok(path, tok)
    except FormatError:
        return
    assert len(opened.tokens) == opened.header.n_tokens


def test_writer_exception_leaves_nothing(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    with pytest.raises(RuntimeError, match="boom"), TokWriter(path, tok) as w:
        w.write_doc([1, 2, 3])
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_killed_writer_leaves_no_output(tmp_path: Path, tok: Tokenizer) -> None:
    """SIGKILL in the middle of a write: the final name never appears."""
    bin_path = tmp_path / "tokenizer.bin"
    tok.save(bin_path)
    out = tmp_path / "out.tok"
    script = textwrap.dedent(
        f"""
        import sys
        from mnemo import Tokenizer
        from mnemo.tokfile import TokWriter
        tok = Tokenizer.load({str(bin_path)!r})
        with TokWriter({str(out)!r}, tok) as w:
            w.write_doc([1, 2, 3])
            print("writing", flush=True)
            sys.stdin.read()  # wait to be killed
        """
    )
    # cwd=tmp_path: `python -c` puts the working folder first on sys.path, and the checkout's
    # uncompiled mnemo/ must not shadow the installed package
    with subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"writing\n"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not out.exists()
    with pytest.raises(FormatError):
        read_tok_header(next(tmp_path.glob(".out.tok.tmp-*")))  # the unfinished temporary: still invalid
