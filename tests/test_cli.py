"""The `mnemo` command line end to end: train -> info -> tokenize -> tokshow -> pretrain, and
clear errors that leave no output behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mnemo import Tokenizer, open_tok
from mnemo.cli import main

MNEMO = str(Path(sys.executable).parent / "mnemo")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, corpus_docs: Callable[..., list[str]]) -> Path:
    d = tmp_path_factory.mktemp("cli")
    docs = corpus_docs("english", max_bytes=600_000)
    (d / "en.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in docs))
    (d / "chat.jsonl").write_text(
        json.dumps({"messages": [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello!"}]})
        + "\n"
        + json.dumps({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]})
        + "\n"
    )
    assert main(["train", str(d / "en.jsonl"), "-o", str(d / "tok.bin"), "--vocab-size", "600", "-q"]) == 0
    return d


def test_train_writes_a_loadable_tokenizer(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok = Tokenizer.load(workdir / "tok.bin")
    assert tok.n_vocab == 600 and tok.pattern == "mnemonic" and tok.special_tokens["<|bos|>"] == 584
    assert main(["info", str(workdir / "tok.bin")]) == 0
    out = capsys.readouterr().out
    assert "600 ids = 256 bytes + 328 merges + 16 special" in out and tok.fingerprint in out


def test_train_summary_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "a.txt"
    src.write_text("low lower newest widest " * 100)
    assert main(["train", str(src), "-o", str(tmp_path / "t.bin"), "--vocab-size", "300", "--special", "<|endoftext|>"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"trained {tmp_path / 't.bin'}: ")
    assert "unique words" in line and "peak RSS" in line and "MB/s" in line


def test_tokenize_documents_and_chats(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok = Tokenizer.load(workdir / "tok.bin")
    out = workdir / "en.tok"
    assert main(["tokenize", "-t", str(workdir / "tok.bin"), str(workdir / "en.jsonl"), "-o", str(out), "--workers", "2", "-q"]) == 0
    summary = capsys.readouterr().out
    assert "documents" in summary and "bytes/token" in summary and "MB/s" in summary
    f = open_tok(out, tok)
    docs = [json.loads(line)["text"] for line in (workdir / "en.jsonl").read_text().splitlines()]
    bos = tok.special_tokens["<|bos|>"]
    expected = [i for d in docs for i in [bos, *tok.encode_ordinary(d)]]
    assert f.header.n_docs == len(docs) and np.array_equal(f.tokens, np.array(expected, dtype=np.uint16))

    chat_out = workdir / "chat.tok"
    assert main(["tokenize", "-t", str(workdir / "tok.bin"), "--chat", str(workdir / "chat.jsonl"), "-o", str(chat_out), "-q"]) == 0
    c = open_tok(chat_out, tok)
    assert c.header.chat and c.header.masked and c.header.n_docs == 2
    masked = [int(t) & 0x7FFF for t in c.tokens if t & 0x8000]
    assert tok.decode(masked) == "Hello!<|end|>4<|end|>"
    assert main(["info", str(chat_out)]) == 0
    assert "chat, masked" in capsys.readouterr().out


def test_tokshow_plain_and_ids(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok = Tokenizer.load(workdir / "tok.bin")
    assert main(["tokshow", "-t", str(workdir / "tok.bin"), "--no-color", "the cat"]) == 0
    out = capsys.readouterr().out
    pieces = [tok.token_bytes(i).decode() for i in tok.encode("the cat")]
    assert out.splitlines()[0] == "|".join(pieces) + "|"
    assert "\x1b[" not in out
    assert main(["tokshow", "-t", str(workdir / "tok.bin"), "--ids", "--no-color", "the"]) == 0
    assert f"({tok.encode('the')[0]})" in capsys.readouterr().out
    assert main(["tokshow", "-t", str(workdir / "tok.bin"), "--no-color", "--chat", str(workdir / "chat.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "[<|end|>]" in out  # the assistant's <|end|> is masked, marked with [...]
    assert "2 masked" not in out and "masked (learned)" in out


def test_tokshow_colour_on_a_terminal(workdir: Path) -> None:
    """With a terminal on stdout, every token gets a background colour escape."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.run([MNEMO, "tokshow", "-t", str(workdir / "tok.bin"), "hello world"], stdout=follower, stderr=subprocess.PIPE, timeout=60)
    os.close(follower)
    data = os.read(leader, 65536).decode()
    os.close(leader)
    assert proc.returncode == 0, proc.stderr
    assert data.count("\x1b[48;5;") >= 2


def test_pretrain_runs_and_saves(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok_file = workdir / "en.tok"
    if not tok_file.exists():
        assert main(["tokenize", "-t", str(workdir / "tok.bin"), str(workdir / "en.jsonl"), "-o", str(tok_file), "-q"]) == 0
    w = workdir / "w.npz"
    assert main(["pretrain", "-t", str(workdir / "tok.bin"), str(tok_file), "--steps", "20", "--eval-every", "10", "-o", str(w)]) == 0
    out = capsys.readouterr().out
    assert "baseline uniform" in out and "baseline unigram" in out and "greedy continuation" in out
    assert w.exists()


def test_errors_leave_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.bin"
    assert main(["train", str(tmp_path / "missing.txt"), "-o", str(out)]) == 1
    assert "no such file" in capsys.readouterr().err and not out.exists()
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["train", str(empty), "-o", str(out)]) == 1
    assert "training text is empty" in capsys.readouterr().err and not out.exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n{oops\n')
    assert main(["train", str(bad), "-o", str(out)]) == 1
    assert "bad.jsonl:2: not valid JSON" in capsys.readouterr().err and not out.exists()
    assert main(["train", str(empty), "-o", str(out), "--vocab-size", "100"]) == 1
    assert "vocab_size must be >= 272" in capsys.readouterr().err
    assert main(["info", str(bad)]) == 1
    assert "neither a tokenizer.bin nor a .tok" in capsys.readouterr().err


def _kill_mid_run(tmp_path: Path, workdir: Path, sig: int) -> tuple[Path, list[Path], int, str]:
    big = tmp_path / "big.jsonl"
    line = json.dumps({"text": "the quick brown fox jumps over the lazy dog " * 200}) + "\n"
    big.write_text(line * 20000)  # ~180 MB of text: long enough to be caught mid-run
    out = tmp_path / "out.tok"
    proc = subprocess.Popen([MNEMO, "tokenize", "-t", str(workdir / "tok.bin"), str(big), "-o", str(out), "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.tok.tmp-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(0.3)
    assert proc.poll() is None, "tokenize finished before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return out, list(tmp_path.glob(".out.tok.tmp-*")), proc.returncode, err


def test_killed_tokenize_leaves_no_output(tmp_path: Path, workdir: Path) -> None:
    out, _, code, _ = _kill_mid_run(tmp_path, workdir, signal.SIGKILL)
    assert code == -signal.SIGKILL and not out.exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_tokenize_cleans_up(tmp_path: Path, workdir: Path, sig: int) -> None:
    out, leftovers, code, err = _kill_mid_run(tmp_path, workdir, sig)
    assert code == 128 + sig, (code, err)
    assert not out.exists() and leftovers == []
    assert "Traceback" not in err, err  # the workers leave the signal to the parent


def test_truncated_input_is_an_error_in_every_command(tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(gzip.compress((workdir / "en.jsonl").read_bytes())[:20000])
    chats = tmp_path / "cut-chat.jsonl.gz"
    packed = gzip.compress((workdir / "chat.jsonl").read_bytes() * 3000)
    chats.write_bytes(packed[: len(packed) // 2])
    for argv in (
        ["train", str(p), "-o", str(tmp_path / "t.bin"), "--workers", "1"],
        ["train", str(p), "-o", str(tmp_path / "t.bin"), "--workers", "2"],
        ["tokenize", "-t", str(workdir / "tok.bin"), str(p), "-o", str(tmp_path / "t.tok")],
        ["tokenize", "-t", str(workdir / "tok.bin"), "--chat", str(chats), "-o", str(tmp_path / "t.tok")],
    ):
        assert main([*argv, "-q"]) == 1, argv
        err = capsys.readouterr().err
        assert ".jsonl.gz: cannot be read to the end" in err and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "t.bin").exists() and not (tmp_path / "t.tok").exists()
    assert not list(tmp_path.glob(".t.tok.tmp-*"))
