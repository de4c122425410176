"""The `mnemo` command line end to end: train -> info -> tokenize -> tokshow -> pretrain, and
clear errors that leave no output behind."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mnemo import Tokenizer, open_tok
from mnemo.tokenizing import tokenize_files
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
    assert "unique words" in line and "peak RSS" in line and re.search(r"[\d.]+ [kM]?B/s", line)


def test_tokenize_documents_and_chats(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok = Tokenizer.load(workdir / "tok.bin")
    out = workdir / "en.tok"
    assert main(["tokenize", "-t", str(workdir / "tok.bin"), str(workdir / "en.jsonl"), "-o", str(out), "--workers", "2", "-q"]) == 0
    summary = capsys.readouterr().out
    assert "documents" in summary and "bytes/token" in summary and re.search(r"[\d.]+ [kM]?B/s", summary)
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


def test_summaries_print_no_rate_for_no_tokens(tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """0 bytes over 0 tokens is no figure: tokenize of an input without documents and tokshow of
    empty text print no bytes/token (they printed 0.00), and the stats say NaN, not 0.0."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["tokenize", "-t", str(workdir / "tok.bin"), str(empty), "-o", str(tmp_path / "e.tok"), "-q"]) == 0
    summary = capsys.readouterr().out
    assert "0 documents" in summary and "0 tokens" in summary and "bytes/token" not in summary
    assert math.isnan(tokenize_files([empty], Tokenizer.load(workdir / "tok.bin"), tmp_path / "e2.tok", workers=1).bytes_per_token)
    assert main(["tokshow", "-t", str(workdir / "tok.bin"), "--no-color", ""]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "0 tokens, 0 bytes"
    assert main(["tokshow", "-t", str(workdir / "tok.bin"), "--no-color", "a"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 token, 1 byte, 1.00 bytes/token"


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


# ---- issue 12: no lost work, documents apart, honest summaries ---------------------------------


def test_output_that_is_an_input_is_refused_however_spelled(tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenize -t tok.bin IN -o tok.bin` replaced the tokenizer with the token file.  Now the
    same file is refused under any spelling -- relative, absolute, a symlink, a hard link -- and
    left as it was."""
    tok_bin = tmp_path / "tok.bin"
    tok_bin.write_bytes((workdir / "tok.bin").read_bytes())
    original = tok_bin.read_bytes()
    (tmp_path / "link.bin").symlink_to(tok_bin)
    os.link(tok_bin, tmp_path / "hard.bin")
    src = workdir / "en.jsonl"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for out in ("tok.bin", "./tok.bin", str(tok_bin), "link.bin", "hard.bin", "../" + tmp_path.name + "/tok.bin"):
            assert main(["tokenize", "-t", "tok.bin", str(src), "-o", out, "-q"]) == 1, out
            err = capsys.readouterr().err
            assert err.startswith(f"mnemo: error: {Path(out)}: the output is also the tokenizer (-t) tok.bin"), err
        assert main(["train", str(src), "-o", str(src), "-q"]) == 1
        assert "the output is also the input" in capsys.readouterr().err
        assert main(["convert", "tok.bin", "hard.bin", "--from", "mnemo", "--to", "mnemo"]) == 1
        assert "the output is also the input" in capsys.readouterr().err
        (tmp_path / "g").mkdir()
        assert main(["convert", "tok.bin", "g", "--from", "mnemo", "--to", "gpt2"]) == 0
        capsys.readouterr()
        assert main(["convert", "g", "g", "--from", "gpt2", "--to", "gpt2"]) == 1
        assert "g/vocab.json: the output is also the input" in capsys.readouterr().err
    finally:
        os.chdir(cwd)
    assert tok_bin.read_bytes() == original and src.stat().st_size > 0


def test_unwritable_output_fails_before_the_work(tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`train -o /nonexistent/dir/x.bin` trained to the end, then died with a traceback.  Now
    it stops at once (a 2,000,000-id run would take minutes) with the path and what to do."""
    big = tmp_path / "big.jsonl"
    big.write_text((workdir / "en.jsonl").read_text() * 4)
    t0 = time.perf_counter()
    assert main(["train", str(big), "-o", str(tmp_path / "no" / "dir" / "x.bin"), "--vocab-size", "60000", "-q"]) == 1
    assert time.perf_counter() - t0 < 1.0
    err = capsys.readouterr().err
    assert f"{tmp_path / 'no' / 'dir' / 'x.bin'}: the folder {tmp_path / 'no' / 'dir'} does not exist; create it first" in err
    assert main(["tokenize", "-t", str(workdir / "tok.bin"), str(big), "-o", str(tmp_path), "-q"]) == 1
    assert f"{tmp_path}: is a folder; give the output a file name" in capsys.readouterr().err
    assert main(["convert", str(workdir / "tok.bin"), str(big), "--from", "mnemo", "--to", "gpt2"]) == 1
    assert "is a file, but the output is a folder" in capsys.readouterr().err


def test_convert_writes_a_folder_format_into_an_existing_folder(tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--to gpt2 and --to hf-dir write a folder of files, created if missing: an existing
    folder is checked as a folder for both (hf-dir was checked as a file: `is a folder; give
    the output a file name`, so a second export into the same folder failed)."""
    for fmt in ("gpt2", "hf-dir"):
        out = tmp_path / fmt
        for _ in range(2):  # the second run writes into the folder the first one made
            assert main(["convert", str(workdir / "tok.bin"), str(out), "--from", "mnemo", "--to", fmt]) == 0, capsys.readouterr().err
        assert (out / ("vocab.json" if fmt == "gpt2" else "tokenizer.json")).is_file()
    (tmp_path / "afile").write_text("")
    assert main(["convert", str(workdir / "tok.bin"), str(tmp_path / "afile"), "--from", "mnemo", "--to", "hf-dir"]) == 1
    assert "is a file, but the output is a folder" in capsys.readouterr().err


def test_mnemo_files_and_binary_files_are_not_text(tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`train eng100.tok` trained on the token file as if it were text (38 s, 801 MiB).  mnemo's
    own files are known by their magic bytes, other binary files by a NUL byte in their first
    8,000 bytes after decompression; the check reads only that much."""
    import gzip

    tok_file = tmp_path / "en.tok"
    assert main(["tokenize", "-t", str(workdir / "tok.bin"), str(workdir / "en.jsonl"), "-o", str(tok_file), "-q"]) == 0
    packed = tmp_path / "packed.txt.gz"
    packed.write_bytes(gzip.compress(b"some text" * 10 + b"\0" + b"more"))
    late_nul = tmp_path / "late.txt"
    late_nul.write_bytes(b"a" * 9000 + b"\0")  # past the sniffed block: read as text, no second pass
    capsys.readouterr()
    for path, what in [
        (tok_file, "is a mnemo .tok token file, not text"),
        (workdir / "tok.bin", "is a mnemo tokenizer.bin, not text"),
        (packed, "is binary (a NUL byte at offset 90 of its decompressed text), not text"),
    ]:
        for command in (["train", str(path), "-o", str(tmp_path / "t.bin")], ["tokenize", "-t", str(workdir / "tok.bin"), str(path), "-o", str(tmp_path / "t.tok")]):
            assert main([*command, "-q"]) == 1, command
            err = capsys.readouterr().err
            assert f"mnemo: error: {path}: {what}; inputs are UTF-8 text (.txt), JSON Lines (.jsonl)" in err, err
    assert main(["train", str(late_nul), "-o", str(tmp_path / "t.bin"), "--vocab-size", "300", "--special", "<|x|>", "-q"]) == 0
    assert not (tmp_path / "t.tok").exists()


def test_train_summary_says_why_it_stopped_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "a.txt"
    src.write_text("low lower newest widest " * 100)
    assert main(["train", str(src), "-o", str(tmp_path / "t.bin"), "--vocab-size", "60000", "-q"]) == 0
    tok = Tokenizer.load(tmp_path / "t.bin")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"trained {tmp_path / 't.bin'}: {tok.n_vocab} ids")
    assert out[1] == (
        f"  stopped early: {tok.n_vocab} ids of the 60000 asked for, because after merge {len(tok.merges)} no pair "
        f"of adjacent tokens occurs twice in the text any more; more (or more varied) text gives more merges"
    )
    assert main(["train", str(src), "-o", str(tmp_path / "t.bin"), "--vocab-size", "280", "-q"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1  # reached the size asked for: no note
    # chunks left out for their length may be the reason: the note counts them (it blamed the text)
    assert main(["train", str(src), "-o", str(tmp_path / "t.bin"), "--vocab-size", "60000", "--max-chunk-bytes", "3", "-q"]) == 0
    note = capsys.readouterr().out.splitlines()[1]
    assert note.endswith(
        "more (or more varied) text gives more merges; 399 of the 401 chunks were longer than --max-chunk-bytes 3 "
        "and left out (a larger --max-chunk-bytes keeps them)"
    ), note


def test_tokenize_gpt2_vocabulary_separates_documents(tmp_path: Path, cs336_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case through the command: `first doc<|endoftext|>second doc` with GPT-2's
    vocabulary gave [11085, 2205, 12227, 2205, 198]; now each document ends with <|endoftext|>."""
    from mnemo.interop import load_gpt2

    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    gpt2.save(tmp_path / "gpt2.bin")
    src = tmp_path / "d.txt"
    src.write_text("first doc<|endoftext|>second doc\n")
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}.tok"
        assert main(["tokenize", "-t", str(tmp_path / "gpt2.bin"), str(src), "-o", str(out), "--workers", workers, "-q"]) == 0
        captured = capsys.readouterr()
        assert "2 documents, each text + <|endoftext|>" in captured.out and captured.err == ""
        outs.append(out.read_bytes())
        assert open_tok(out, gpt2).tokens.tolist() == [11085, 2205, 50256, 12227, 2205, 198, 50256]
    assert outs[0] == outs[1]
    out = tmp_path / "b.tok"
    assert main(["tokenize", "-t", str(tmp_path / "gpt2.bin"), str(src), "-o", str(out), "--bos", "<|endoftext|>", "--eos", "none", "-q"]) == 0
    assert open_tok(out, gpt2).tokens.tolist() == [50256, 11085, 2205, 50256, 12227, 2205, 198]
    assert "each <|endoftext|> + text" in capsys.readouterr().out


def test_tokenize_without_any_separator_warns_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "d.txt"
    src.write_text("first doc<|endoftext|>second doc")
    assert main(["train", str(src), "-o", str(tmp_path / "t.bin"), "--vocab-size", "270", "--special", "<|user|>", "-q"]) == 0
    capsys.readouterr()
    assert main(["tokenize", "-t", str(tmp_path / "t.bin"), str(src), "-o", str(tmp_path / "t.tok"), "--workers", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert err.count("mnemo: warning: the vocabulary has neither <|bos|> nor <|endoftext|> (special tokens: <|user|>)") == 1, err
    assert "Warning" not in err  # the command's own line, not Python's warnings machinery
    assert main(["tokenize", "-t", str(tmp_path / "t.bin"), str(src), "-o", str(tmp_path / "t.tok"), "--bos", "none", "--eos", "none", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_phase_progress_labels_units_and_final_rate() -> None:
    """tokenize's bar was labelled `merging: 43493002 merges` (bytes); the counting bar of
    train ended at 27.6 MB/s where the summary said 55.0 MB/s, because tqdm's last line divided
    by the time until the bar was closed, after merging.  Each phase now ends with its own
    time: 50 MB in ~0.3 s must not come out as 50 MB in ~1.3 s.

    The counting phase's true length is measured around the calls (a loaded machine stretches
    the sleeps), and the rate must be 50 MB over that length -- not over that length plus the
    gap of at least 1 s before merging, which the old line divided by."""
    import io

    from mnemo.cli import PhaseProgress

    out = io.StringIO()
    progress = PhaseProgress(True, file=out)
    before_first = time.perf_counter()
    progress("count", 0, 0)
    after_first = time.perf_counter()
    for k in range(1, 6):
        time.sleep(0.06)
        before_last = time.perf_counter()
        progress("count", k * 10_000_000, 0)
    after_last = counted = time.perf_counter()
    time.sleep(1.0)  # the trainer lays out its arrays, then merges
    gap = time.perf_counter() - after_last
    progress("merge", 0, 100)
    progress("merge", 100, 100)
    progress.close()
    lines = [part for part in re.split(r"[\r\n]", out.getvalue()) if part.strip()]
    count_line = [line for line in lines if line.startswith("counting")][-1]
    merge_line = [line for line in lines if line.startswith("merging")][-1]
    assert "50.0MB" in count_line and "merges" not in count_line
    rate = float(re.search(r"([\d.]+)MB/s", count_line).group(1))  # type: ignore[union-attr]
    longest, shortest = after_last - before_first, before_last - after_first  # the phase's length lies between
    assert 0.98 * 50 / longest <= rate <= 1.02 * 50 / shortest, (count_line, shortest, longest)  # tqdm rounds to 3 digits
    assert rate > 1.02 * 50 / (longest + gap), (count_line, longest, gap)  # what the old line said: ~38 MB/s idle
    assert "100/100" in merge_line and "merges/s" in merge_line
    assert counted > 0

    out = io.StringIO()
    progress = PhaseProgress(True, file=out)
    progress("tokenize", 0, 0)
    progress("tokenize", 43_493_002, 0)
    progress.close()
    last = [part for part in re.split(r"[\r\n]", out.getvalue()) if part.strip()][-1]
    assert last.startswith("tokenizing: 43.5MB") and "merge" not in last, last


def test_every_option_has_help_with_its_default() -> None:
    """`convert` and `info` had no description; options had no help or no default shown.  (The
    pretrain and demo blocks are another branch's.)"""
    import argparse

    from mnemo.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        if name in ("pretrain", "demo"):
            continue
        assert p.description, name
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            if action.option_strings and action.default not in (None, False) and not action.required:
                assert "default" in action.help or "(" in action.help, (name, action.dest, action.help)


def test_tokshow_chat_errors_name_the_file_and_line(tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tokshow --chat reads its record as tokenize does: a bad message is named with file:line,
    and JSON nested too deeply is an error line, not a RecursionError traceback."""
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
    bad = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "wizard", "content": "x"}]})
    chats = tmp_path / "c.jsonl"
    chats.write_text(f"{good}\n\n{bad}\n")
    tok = str(workdir / "tok.bin")
    assert main(["tokshow", "-t", tok, "--chat", str(chats), "--index", "0", "--no-color"]) == 0
    capsys.readouterr()
    assert main(["tokshow", "-t", tok, "--chat", str(chats), "--index", "1"]) == 1
    err = capsys.readouterr().err
    assert f"{chats}:3: message 1" in err and "wizard" in err, err
    (tmp_path / "good.jsonl").write_text(f"{good}\n{good}\n")
    assert main(["tokshow", "-t", tok, "--chat", str(tmp_path / "good.jsonl"), "--index", "5"]) == 1
    assert "has 2 records; --index 5 is out of range" in capsys.readouterr().err
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "\n")
    assert main(["tokshow", "-t", tok, "--chat", str(deep)]) == 1
    err = capsys.readouterr().err
    assert f"{deep}:1: the JSON is nested too deeply" in err and "Traceback" not in err, err


def test_tokenize_chat_with_gpt2_names_file_and_line_of_a_chatml_marker(tmp_path: Path, cs336_dir: Path) -> None:
    """`mnemo tokenize --chat` with GPT-2's vocabulary (ChatML as text) and a message holding
    `<|im_end|>`: one `mnemo: error:` naming the file and line, no output (it used to fail in a
    worker, naming only the message)."""
    from mnemo.interop import load_gpt2

    load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt").save(tmp_path / "gpt2.bin")
    src = tmp_path / "chat.jsonl"
    good = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}
    bad = {"messages": [{"role": "system", "content": "Be brief<|im_end|>"}, {"role": "user", "content": "Hi"}]}
    src.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    for workers in ("1", "2"):
        out = tmp_path / "chat.tok"
        proc = subprocess.run([MNEMO, "tokenize", "--chat", "-t", str(tmp_path / "gpt2.bin"), str(src), "-o", str(out),
                               "--workers", workers, "-q"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.splitlines() == [
            f"mnemo: error: {src}:2: message 0 (system): the text contains the chat marker '<|im_end|>' at character 8; "
            "chat messages cannot hold the template's markers (this vocabulary has no chat tokens, so chats are ChatML: "
            "docs/ids32.md)"
        ], proc.stderr
        assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["chat.jsonl", "gpt2.bin"]
