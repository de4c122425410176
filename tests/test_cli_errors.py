"""Every subcommand against a missing input, an unwritable output, a file of the wrong kind and a
bad option value, each as a real `python -m mnemo` process started outside the checkout (so that
the installed package runs).  Each must end with one `mnemo: error:` line that names the file or
value, exit non-zero, print no traceback, and leave no output file behind (issue 12, issue 13
item 6).

`/proc` stands for an unwritable folder: the tests run as root on CI, where permission bits do
not stop a write, but no file can be created in /proc.  A full standard output is /dev/full.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mnemo import Tokenizer
from mnemo.tokenizing import tokenize_files
from mnemo.training import train_from_iterator

TEXT = "the cat sat on the mat. " * 200


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli-errors")
    (d / "text.txt").write_text(TEXT + "<|endoftext|>" + TEXT)
    tok = train_from_iterator([TEXT], vocab_size=300, workers=1)
    tok.save(d / "tok.bin")
    tokenize_files([d / "text.txt"], tok, d / "data.tok", workers=1)
    (d / "afile").write_text("not a folder")
    (d / "nul.txt").write_bytes(b"text\0with a NUL")
    (d / "chat.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    return d


def run(folder: Path, *args: str, stdout: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    """`python -m mnemo ARGS` with the working folder `folder` (never the checkout: its `mnemo/`
    would shadow the installed package)."""
    return subprocess.run(
        [sys.executable, "-m", "mnemo", *args], cwd=folder, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300
    )


# (subcommand, case, argv, what the error line must name); argv in the fixture folder.
CASES: list[tuple[str, str, list[str], str]] = [
    # train
    ("train", "missing input", ["train", "nothere.txt", "-o", "t.bin"], "nothere.txt"),
    ("train", "output folder missing", ["train", "text.txt", "-o", "no/such/dir/t.bin"], "no/such/dir"),
    ("train", "unwritable output", ["train", "text.txt", "-o", "/proc/t.bin"], "/proc/t.bin"),
    ("train", "output is a folder", ["train", "text.txt", "-o", "."], "."),
    ("train", "output is the input", ["train", "text.txt", "-o", "./text.txt"], "text.txt"),
    ("train", "a .tok as text", ["train", "data.tok", "-o", "t.bin"], "data.tok"),
    ("train", "a tokenizer.bin as text", ["train", "tok.bin", "-o", "t.bin"], "tok.bin"),
    ("train", "binary text", ["train", "nul.txt", "-o", "t.bin"], "nul.txt"),
    ("train", "bad vocab size", ["train", "text.txt", "-o", "t.bin", "--vocab-size", "100"], "100"),
    ("train", "vocab size not a number", ["train", "text.txt", "-o", "t.bin", "--vocab-size", "lots"], "lots"),
    ("train", "missing --from", ["train", "text.txt", "-o", "t.bin", "--from", "nothere.bin"], "nothere.bin"),
    ("train", "--from a .tok", ["train", "text.txt", "-o", "t.bin", "--from", "data.tok"], "data.tok"),
    ("train", "output is --from", ["train", "text.txt", "-o", "tok.bin", "--from", "tok.bin"], "tok.bin"),
    ("train", "--pattern not a regex", ["train", "text.txt", "-o", "t.bin", "--pattern", "(?<=x"],
     "argument --pattern: split regex '(?<=x' does not compile"),
    # tokenize
    ("tokenize", "missing input", ["tokenize", "-t", "tok.bin", "nothere.txt", "-o", "t.tok"], "nothere.txt"),
    ("tokenize", "missing tokenizer", ["tokenize", "-t", "nothere.bin", "text.txt", "-o", "t.tok"], "nothere.bin"),
    ("tokenize", "output folder missing", ["tokenize", "-t", "tok.bin", "text.txt", "-o", "no/dir/t.tok"], "no/dir"),
    ("tokenize", "unwritable output", ["tokenize", "-t", "tok.bin", "text.txt", "-o", "/proc/t.tok"], "/proc/t.tok"),
    ("tokenize", "output is the tokenizer", ["tokenize", "-t", "tok.bin", "text.txt", "-o", "tok.bin"], "tok.bin"),
    ("tokenize", "tokenizer is text", ["tokenize", "-t", "text.txt", "text.txt", "-o", "t.tok"], "text.txt"),
    ("tokenize", "a .tok as text", ["tokenize", "-t", "tok.bin", "data.tok", "-o", "t.tok"], "data.tok"),
    ("tokenize", "unknown --bos", ["tokenize", "-t", "tok.bin", "text.txt", "-o", "t.tok", "--bos", "<|nope|>"], "<|nope|>"),
    ("tokenize", "workers 0", ["tokenize", "-t", "tok.bin", "text.txt", "-o", "t.tok", "--workers", "0"], "0"),
    ("tokenize", "--ray to a URL", ["tokenize", "-t", "tok.bin", "text.txt", "-o", "s3://b/shards", "--ray"], "s3://b/shards"),
    # tokshow
    ("tokshow", "missing --file", ["tokshow", "-t", "tok.bin", "--file", "nothere.txt"], "nothere.txt"),
    ("tokshow", "missing tokenizer", ["tokshow", "-t", "nothere.bin", "hello"], "nothere.bin"),
    ("tokshow", "missing --chat", ["tokshow", "-t", "tok.bin", "--chat", "nothere.jsonl"], "nothere.jsonl"),
    ("tokshow", "tokenizer is a .tok", ["tokshow", "-t", "data.tok", "hello"], "data.tok"),
    ("tokshow", "--file is a folder", ["tokshow", "-t", "tok.bin", "--file", "."], "."),
    ("tokshow", "bad --index", ["tokshow", "-t", "tok.bin", "--chat", "chat.jsonl", "--index", "99"], "99"),
    ("tokshow", "--chat of text", ["tokshow", "-t", "tok.bin", "--chat", "text.txt"], "text.txt:1"),
    ("tokshow", "unknown --pattern", ["tokshow", "-t", "tok.bin", "--pattern", "nosuch", "hello"],
     "argument --pattern: unknown pattern 'nosuch'"),
    # info
    ("info", "missing file", ["info", "nothere.bin"], "nothere.bin"),
    ("info", "text file", ["info", "text.txt"], "text.txt"),
    ("info", "unknown option", ["info", "tok.bin", "--bogus"], "--bogus"),
    # convert
    ("convert", "missing input", ["convert", "nothere.bin", "o.json", "--from", "mnemo", "--to", "hf"], "nothere.bin"),
    ("convert", "unwritable output", ["convert", "tok.bin", "/proc/o.json", "--from", "mnemo", "--to", "hf"], "/proc/o.json"),
    ("convert", "output folder missing", ["convert", "tok.bin", "no/dir/o.json", "--from", "mnemo", "--to", "hf"], "no/dir"),
    ("convert", "output is a folder", ["convert", "tok.bin", ".", "--from", "mnemo", "--to", "hf"], "."),
    ("convert", "gpt2 output is a file", ["convert", "tok.bin", "afile", "--from", "mnemo", "--to", "gpt2"], "afile"),
    ("convert", "output is the input", ["convert", "tok.bin", "tok.bin", "--from", "mnemo", "--to", "mnemo"], "tok.bin"),
    ("convert", "input of the wrong kind", ["convert", "text.txt", "o.json", "--from", "mnemo", "--to", "hf"], "text.txt"),
    ("convert", "bad --special", ["convert", "tok.bin", "o.bin", "--from", "tiktoken", "--to", "mnemo", "--pattern", "gpt2",
                                 "--special", "oops"], "oops"),
    ("convert", "unknown format", ["convert", "tok.bin", "o.bin", "--from", "mnemo", "--to", "yaml"], "yaml"),
    # pretrain
    ("pretrain", "missing data", ["pretrain", "-t", "tok.bin", "nothere.tok"], "nothere.tok"),
    ("pretrain", "unwritable output", ["pretrain", "-t", "tok.bin", "data.tok", "-o", "/proc/w.npz"], "/proc/w.npz"),
    ("pretrain", "output is the data", ["pretrain", "-t", "tok.bin", "data.tok", "-o", "data.tok"], "data.tok"),
    ("pretrain", "data is text", ["pretrain", "-t", "tok.bin", "text.txt"], "text.txt"),
    ("pretrain", "bad --val-fraction", ["pretrain", "-t", "tok.bin", "data.tok", "--val-fraction", "2"], "2"),
    # inspect
    ("inspect", "missing tokenizer", ["inspect", "nothere.bin"], "nothere.bin"),
    ("inspect", "tokenizer is text", ["inspect", "text.txt"], "text.txt"),
    ("inspect", "missing corpus", ["inspect", "tok.bin", "--corpus", "nothere.txt"], "nothere.txt"),
    ("inspect", "binary corpus", ["inspect", "tok.bin", "--corpus", "nul.txt"], "nul.txt"),
    ("inspect", "bad --limit", ["inspect", "tok.bin", "--limit", "0"], "0"),
    # eval
    ("eval", "missing tokenizer", ["eval", "nothere.bin", "--corpus", "text.txt"], "nothere.bin"),
    ("eval", "missing corpus", ["eval", "tok.bin", "--corpus", "nothere.txt"], "nothere.txt"),
    ("eval", "no corpus", ["eval", "tok.bin"], "--corpus"),
    ("eval", "a .tok as corpus", ["eval", "tok.bin", "--corpus", "data.tok"], "data.tok"),
    ("eval", "unwritable --plot", ["eval", "tok.bin", "--corpus", "text.txt", "--plot", "/proc/e.png"], "/proc/e.png"),
    ("eval", "--plot not a png", ["eval", "tok.bin", "--corpus", "text.txt", "--plot", "e.svg"], "e.svg"),
    ("eval", "--plot is the corpus", ["eval", "tok.bin", "--corpus", "text.txt", "--plot", "text.txt"], "text.txt"),
    # URLs (docs/remote.md): a key that does not exist (memory:// of a fresh process is empty;
    # buckets that do not exist: tests/test_remote.py, on moto's S3)
    ("train", "missing --from URL", ["train", "text.txt", "-o", "t.bin", "--from", "memory://mnemo/nothere.bin"], "memory://mnemo/nothere.bin"),
    ("tokenize", "missing input URL", ["tokenize", "-t", "tok.bin", "memory://mnemo/nothere.txt", "-o", "t.tok"], "memory://mnemo/nothere.txt"),
    ("tokenize", "missing tokenizer URL", ["tokenize", "-t", "memory://mnemo/nothere.bin", "text.txt", "-o", "t.tok"], "memory://mnemo/nothere.bin"),
    ("tokshow", "missing tokenizer URL", ["tokshow", "-t", "memory://mnemo/nothere.bin", "hello"], "memory://mnemo/nothere.bin"),
    ("tokshow", "missing --file URL", ["tokshow", "-t", "tok.bin", "--file", "memory://mnemo/nothere.txt"], "memory://mnemo/nothere.txt"),
    ("tokshow", "missing --chat URL", ["tokshow", "-t", "tok.bin", "--chat", "memory://mnemo/nothere.jsonl"], "memory://mnemo/nothere.jsonl"),
    ("info", "missing URL", ["info", "memory://mnemo/nothere.tok"], "memory://mnemo/nothere.tok"),
    ("convert", "missing input URL", ["convert", "memory://mnemo/nothere.bin", "o.json", "--from", "mnemo", "--to", "hf"], "memory://mnemo/nothere.bin"),
    ("convert", "missing gpt2 folder URL", ["convert", "memory://mnemo/gpt2", "o.bin", "--from", "gpt2", "--to", "mnemo"], "memory://mnemo/gpt2"),
    ("pretrain", "missing data URL", ["pretrain", "-t", "tok.bin", "memory://mnemo/nothere.tok"], "memory://mnemo/nothere.tok"),
    ("pretrain", "missing tokenizer URL", ["pretrain", "-t", "memory://mnemo/nothere.bin", "data.tok"], "memory://mnemo/nothere.bin"),
    ("inspect", "missing tokenizer URL", ["inspect", "memory://mnemo/nothere.bin"], "memory://mnemo/nothere.bin"),
    ("inspect", "missing corpus URL", ["inspect", "tok.bin", "--corpus", "memory://mnemo/nothere.txt"], "memory://mnemo/nothere.txt"),
    ("eval", "missing tokenizer URL", ["eval", "memory://mnemo/nothere.bin", "--corpus", "text.txt"], "memory://mnemo/nothere.bin"),
    ("eval", "missing corpus URL", ["eval", "tok.bin", "--corpus", "memory://mnemo/nothere.txt"], "memory://mnemo/nothere.txt"),
    # demo
    ("demo", "unwritable output", ["demo", "--out", "/proc/mnemo-demo"], "/proc/mnemo-demo"),
    ("demo", "output is a file", ["demo", "--out", "afile"], "afile"),
    ("demo", "bad --vocab-size", ["demo", "--out", "demo-out", "--vocab-size", "100"], "100"),
    ("demo", "URL output", ["demo", "--out", "s3://bucket/demo"], "s3://bucket/demo"),
]


@pytest.mark.parametrize(("command", "case", "argv", "names"), CASES, ids=[f"{c}-{k}" for c, k, _, _ in CASES])
def test_error_is_one_mnemo_line_naming_the_culprit(files: Path, command: str, case: str, argv: list[str], names: str) -> None:
    before = sorted(p.name for p in files.iterdir())
    proc = run(files, *argv)
    err = proc.stderr
    assert proc.returncode != 0, (argv, err)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("mnemo: error: "), err
    assert names in lines[-1], (names, err)
    for line in lines[:-1]:  # only argparse's usage may come before it
        assert line.startswith(("usage:", " ")), err
    assert sorted(p.name for p in files.iterdir()) == before, f"{argv} left files behind"


def test_every_subcommand_is_covered() -> None:
    from mnemo.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(getattr(sub, "choices")) == {c for c, _, _, _ in CASES}


def test_every_command_that_writes_checks_its_paths() -> None:
    """Each command names its own path check (mnemo/cli/<command>.py sets `check_paths` on its
    subparser, and cli.check_paths runs it): a command with an output option and no check would
    write over its input, or fail after the work, with no word before."""
    from mnemo.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    writers = set()
    for name, command in getattr(sub, "choices").items():
        if {a.dest for a in command._actions} & {"output", "out", "plot"}:
            writers.add(name)
            assert callable(command.get_default("check_paths")), f"mnemo {name} writes files but checks no path"
    assert writers == {"train", "tokenize", "convert", "pretrain", "demo", "eval"}


@pytest.mark.parametrize("argv", [["info", "tok.bin"], ["tokshow", "-t", "tok.bin", "hello"]])
def test_full_standard_output(files: Path, argv: list[str]) -> None:
    """Output to a full disk (or a closed pipe's cousin, /dev/full) is an error line, not an
    'Exception ignored' traceback at exit."""
    with open("/dev/full", "w") as full:
        proc = run(files, *argv, stdout=full.fileno())
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == ["mnemo: error: cannot write the output or standard output (No space left on device)"]


# ---- the class of each error, by errors.py's rule ------------------------------------------------
#
# The user's to fix: ConfigError (an option's value, an output that cannot be written, options
# that do not go together), InputError (an input missing, unreadable or of the wrong kind),
# FormatError (a mnemo file that is not what it should be).  "usage": argparse refuses the option
# syntax itself.  Never a bare MnemoError, never anything else.
EXPECTED: dict[tuple[str, str], str] = {
    ("train", "--pattern not a regex"): "usage",
    ("tokshow", "unknown --pattern"): "usage",
    ("train", "missing input"): "InputError",
    ("train", "output folder missing"): "ConfigError",
    ("train", "unwritable output"): "ConfigError",
    ("train", "output is a folder"): "ConfigError",
    ("train", "output is the input"): "ConfigError",
    ("train", "a .tok as text"): "InputError",
    ("train", "a tokenizer.bin as text"): "InputError",
    ("train", "binary text"): "InputError",
    ("train", "bad vocab size"): "ConfigError",
    ("train", "vocab size not a number"): "usage",
    ("tokenize", "missing input"): "InputError",
    ("tokenize", "missing tokenizer"): "InputError",
    ("tokenize", "output folder missing"): "ConfigError",
    ("tokenize", "unwritable output"): "ConfigError",
    ("tokenize", "output is the tokenizer"): "ConfigError",
    ("tokenize", "tokenizer is text"): "FormatError",
    ("tokenize", "a .tok as text"): "InputError",
    ("tokenize", "unknown --bos"): "ConfigError",
    ("tokenize", "workers 0"): "usage",
    ("tokenize", "--ray to a URL"): "ConfigError",
    ("tokshow", "missing --file"): "InputError",
    ("tokshow", "missing tokenizer"): "InputError",
    ("tokshow", "missing --chat"): "InputError",
    ("tokshow", "tokenizer is a .tok"): "FormatError",
    ("tokshow", "--file is a folder"): "InputError",
    ("tokshow", "bad --index"): "ConfigError",
    ("tokshow", "--chat of text"): "InputError",
    ("info", "missing file"): "InputError",
    ("info", "text file"): "InputError",
    ("info", "unknown option"): "usage",
    ("convert", "missing input"): "InputError",
    ("convert", "unwritable output"): "ConfigError",
    ("convert", "output folder missing"): "ConfigError",
    ("convert", "output is a folder"): "ConfigError",
    ("convert", "gpt2 output is a file"): "ConfigError",
    ("convert", "output is the input"): "ConfigError",
    ("convert", "input of the wrong kind"): "FormatError",
    ("convert", "bad --special"): "ConfigError",
    ("convert", "unknown format"): "usage",
    ("pretrain", "missing data"): "InputError",
    ("pretrain", "unwritable output"): "ConfigError",
    ("pretrain", "output is the data"): "ConfigError",
    ("pretrain", "data is text"): "FormatError",
    ("pretrain", "bad --val-fraction"): "ConfigError",
    ("demo", "unwritable output"): "ConfigError",
    ("demo", "output is a file"): "ConfigError",
    ("demo", "bad --vocab-size"): "ConfigError",
    ("demo", "URL output"): "ConfigError",
    ("train", "missing --from"): "InputError",
    ("train", "--from a .tok"): "FormatError",
    ("train", "output is --from"): "ConfigError",
    ("inspect", "missing tokenizer"): "InputError",
    ("inspect", "tokenizer is text"): "FormatError",
    ("inspect", "missing corpus"): "InputError",
    ("inspect", "binary corpus"): "InputError",
    ("inspect", "bad --limit"): "usage",
    ("eval", "missing tokenizer"): "InputError",
    ("eval", "missing corpus"): "InputError",
    ("eval", "no corpus"): "usage",
    ("eval", "a .tok as corpus"): "InputError",
    ("eval", "unwritable --plot"): "ConfigError",
    ("eval", "--plot not a png"): "ConfigError",
    ("eval", "--plot is the corpus"): "ConfigError",
    ("train", "missing --from URL"): "InputError",
    ("tokenize", "missing input URL"): "InputError",
    ("tokenize", "missing tokenizer URL"): "InputError",
    ("tokshow", "missing tokenizer URL"): "InputError",
    ("tokshow", "missing --file URL"): "InputError",
    ("tokshow", "missing --chat URL"): "InputError",
    ("info", "missing URL"): "InputError",
    ("convert", "missing input URL"): "InputError",
    ("convert", "missing gpt2 folder URL"): "InputError",
    ("pretrain", "missing data URL"): "InputError",
    ("pretrain", "missing tokenizer URL"): "InputError",
    ("inspect", "missing tokenizer URL"): "InputError",
    ("inspect", "missing corpus URL"): "InputError",
    ("eval", "missing tokenizer URL"): "InputError",
    ("eval", "missing corpus URL"): "InputError",
}

# More failure paths, checked in-process only (each raised a bare MnemoError before).
MORE_CASES: list[tuple[str, str, list[str], str]] = [
    ("convert", "tiktoken without --pattern", ["convert", "t.tiktoken", "o.bin", "--from", "tiktoken", "--to", "mnemo"],
     "ConfigError"),
    ("convert", "--special for mnemo input", ["convert", "tok.bin", "o.bin", "--from", "mnemo", "--to", "mnemo",
                                              "--special", "<|x|>=1"], "ConfigError"),
    ("convert", "hf-dir input is a file", ["convert", "afile", "o.bin", "--from", "hf-dir", "--to", "mnemo"], "InputError"),
    ("convert", "gpt2 input is a file", ["convert", "afile", "o.bin", "--from", "gpt2", "--to", "mnemo"], "InputError"),
    ("convert", "gpt2 folder without files", ["convert", ".", "o.bin", "--from", "gpt2", "--to", "mnemo"], "InputError"),
    ("tokenize", "--chat with --bos", ["tokenize", "-t", "tok.bin", "chat.jsonl", "-o", "c.tok", "--chat", "--bos",
                                       "<|bos|>"], "ConfigError"),
    ("tokshow", "negative --index", ["tokshow", "-t", "tok.bin", "--chat", "chat.jsonl", "--index", "-1"], "ConfigError"),
    ("info", "unreadable file", ["info", "."], "InputError"),
]


def error_class(folder: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The class of what `mnemo ARGV` fails with, run in this process ("usage" for argparse)."""
    from mnemo.cli import build_parser, check_paths
    from mnemo.errors import MnemoError

    monkeypatch.chdir(folder)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        return "usage"
    try:
        check_paths(args)
        args.handler(args)
    except MnemoError as exc:
        return type(exc).__name__
    return "no error"


def test_every_case_is_classified() -> None:
    assert set(EXPECTED) == {(c, k) for c, k, _, _ in CASES}


@pytest.mark.parametrize(
    ("command", "case", "argv", "expected"),
    [(c, k, a, EXPECTED[c, k]) for c, k, a, _ in CASES] + MORE_CASES,
    ids=[f"{c}-{k}" for c, k, _, _ in CASES + MORE_CASES],
)
def test_error_class_follows_the_rule(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    command: str, case: str, argv: list[str], expected: str,
) -> None:
    """Each failure path raises the class errors.py's rule gives it (a bare MnemoError says
    nothing of whose move it is: the CLI raised eleven of them)."""
    got = error_class(files, argv, monkeypatch)
    capsys.readouterr()
    assert got == expected, (argv, got)


# ---- issue 28 item 17: what a new user met ---------------------------------------------------------


def test_chat_records_without_chat_say_what_to_do(files: Path) -> None:
    """A chat .jsonl given as documents said only "field 'text' must be a string (no such
    field)"; now tokenize's error names --chat, and train's says it has no chat mode."""
    proc = run(files, "tokenize", "-t", "tok.bin", "chat.jsonl", "-o", "t.tok")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and "chat.jsonl:1" in last and "--chat" in last, proc.stderr
    proc = run(files, "train", "chat.jsonl", "-o", "t.bin")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and "chat.jsonl:1" in last and "training has no chat mode" in last, proc.stderr
    assert not (files / "t.tok").exists() and not (files / "t.bin").exists()


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["train", "text.txt", "-o", "t.bin", "--vocab_size", "300"], "--vocab-size"),
        (["train", "text.txt", "--vocab_size", "300"], "--vocab-size"),  # before the missing -o
        (["tokenize", "-t", "tok.bin", "text.txt", "-o", "t.tok", "--text_field", "x"], "--text-field"),
        (["tokenize", "-t", "tok.bin", "text.txt", "-o", "t.tok", "--wokers", "2"], "--workers"),
        (["info", "tok.bin", "--verfy"], "--verify"),
    ],
)
def test_option_typo_suggests_the_option(files: Path, argv: list[str], meant: str) -> None:
    """argparse printed the top-level usage and "unrecognized arguments" (suggest_on_error is
    Python 3.14's); now the command's usage and "did you mean"."""
    proc = run(files, *argv)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and f"did you mean {meant}?" in lines[-1], proc.stderr
    assert lines[0].startswith(f"usage: mnemo {argv[0]} "), proc.stderr


def test_vocab_size_bound_is_one_message(files: Path) -> None:
    """--vocab-size 0 said ">= 1" (argparse) while 100 said ">= 272" (the library)."""
    messages = []
    for value in ("0", "100", "-3"):
        proc = run(files, "train", "text.txt", "-o", "t.bin", f"--vocab-size={value}")
        assert proc.returncode == 1, proc.stderr
        messages.append(proc.stderr.strip().splitlines()[-1].replace(value, "N"))
    assert messages[0] == messages[1] == messages[2], messages
    assert ">= 272 (256 bytes + 16 special tokens), got N" in messages[0]


def test_summaries_count_and_rate_small_runs(files: Path, tmp_path: Path) -> None:
    """A one-document run said "1 documents" and "0.0 MB/s"."""
    (tmp_path / "one.txt").write_text("the cat sat on the mat")
    proc = run(tmp_path, "tokenize", "-t", str(files / "tok.bin"), "one.txt", "-o", "one.tok", "-q", stdout=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    assert "1 document," in proc.stdout and "1 documents" not in proc.stdout, proc.stdout
    assert "0.0 MB" not in proc.stdout and "22 bytes in" in proc.stdout, proc.stdout
    assert re.search(r"\(\d+(\.\d)? [kM]?B/s, ", proc.stdout), proc.stdout
    proc = run(tmp_path, "train", "one.txt", "-o", "one.bin", "--vocab-size", "280", "-q", "--workers", "1", stdout=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    assert "0.0 MB" not in proc.stdout and "from 22 bytes" in proc.stdout, proc.stdout
