"""`mnemo demo` (mnemo/demo.py) end to end on a slice of its corpus: every step runs and writes
what it says, the .tok file holds exactly the corpus' documents, the model ends below the unigram
baseline, the peers' ids are checked; and what `make demo` installs, and the mode of outputs."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mnemo import Tokenizer, demo, interop, open_tok
from mnemo.bigram import BigramModel
from mnemo.tokfile import TokWriter
from mnemo.sources import iter_documents

ROOT = Path(__file__).resolve().parents[1]


def test_demo_corpus_is_the_stdlib_and_its_docs(tmp_path: Path) -> None:
    files = demo.demo_corpus(tmp_path)
    assert files[-1] == tmp_path / "python-docs.jsonl"
    assert len(files) > 500 and all(p.suffix == ".py" for p in files[:-1])
    assert any(p.name == "json" or p.parent.name == "json" for p in files)


@pytest.fixture
def small_corpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    full = demo.demo_corpus

    def small(out_dir: Path) -> list[Path]:
        files = full(out_dir)
        return [*files[:40], files[-1]]  # 40 source files and the documentation topics

    monkeypatch.setattr(demo, "demo_corpus", small)
    yield


def _losses(text: str) -> tuple[float, list[float]]:
    """(unigram baseline, validation loss at every report) from the demo's output."""
    found = re.search(r"baseline unigram  loss (\S+)", text)
    assert found, text
    return float(found.group(1)), [float(v) for v in re.findall(r"^step .* val loss (\S+)", text, re.M)]


def test_demo_runs_every_step(tmp_path: Path, small_corpus: None) -> None:
    lines: list[str] = []
    demo.run_demo(tmp_path / "out", vocab_size=700, workers=2, log=lines.append)
    text = "\n".join(lines)
    for step in ("[1/5] trained", "[2/5] tokenized", "[3/5] a few sentences", "[4/5] encoding speed",
                 "[5/5] a bigram", "done in"):
        assert step in text, text
    tok = Tokenizer.load(tmp_path / "out" / "tokenizer.bin")
    assert tok.n_vocab == 700
    inputs = demo.demo_corpus(tmp_path / "out")
    documents = list(iter_documents(inputs))
    assert len(documents) >= 40 + sum(1 for line in inputs[-1].read_text().splitlines() if json.loads(line)["text"])
    tok_file = open_tok(tmp_path / "out" / "stdlib.tok", tok)
    assert tok_file.header.n_docs == len(documents)
    assert tok_file.header.n_tokens == sum(1 + len(tok.encode_bytes(d)) for d in documents)  # <|bos|> + ids
    assert (tmp_path / "out" / "bigram.npz").stat().st_size > 0


def test_demo_model_ends_below_the_unigram_baseline(tmp_path: Path, small_corpus: None) -> None:
    """The demo must show learning: its last validation loss is below the unigram baseline.
    Before: E ~ N(0, 1) and no output bias left it far above (8.58 against 7.17 on the full corpus)."""
    lines: list[str] = []
    demo.run_demo(tmp_path / "out", vocab_size=2048, workers=2, log=lines.append)
    unigram, vals = _losses("\n".join(lines))
    assert len(vals) == 3
    assert vals[-1] < unigram, "\n".join(lines)
    assert vals[-1] < vals[0]


def test_speed_comparison_checks_the_ids(tmp_path: Path) -> None:
    """With the peers installed (the test extras), their ids are compared on every document;
    each line gives MB/s and the ratio from the same run."""
    for peer in ("tiktoken", "tokenizers"):
        if importlib.util.find_spec(peer) is None:
            pytest.skip(f"{peer} is not installed (it comes with mnemo's test extras)")
    files = demo.demo_corpus(tmp_path)[:30]
    docs = [p.read_text(encoding="utf-8") for p in files]
    import mnemo

    tok = mnemo.train(files, vocab_size=1000)
    lines: list[str] = []
    demo.compare_speed(tok, docs, lines.append)
    assert lines[0].lstrip().startswith("mnemo") and "MB/s" in lines[0]
    for name, line in zip(("tiktoken", "HF tokenizers"), lines[1:], strict=True):
        assert line.lstrip().startswith(name), line
        assert re.search(r"MB/s  mnemo is \d+\.\d\dx as fast; ids identical on every document$", line), line


def test_speed_comparison_says_when_a_peer_is_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def absent(name: str, *args: object) -> object:
        return None if name in ("tiktoken", "tokenizers") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", absent)
    import mnemo

    (tmp_path / "t.txt").write_text("some text to train on, some text")
    tok = mnemo.train([tmp_path / "t.txt"], vocab_size=300)
    lines: list[str] = []
    demo.compare_speed(tok, ["some text"], lines.append)
    assert "tiktoken       not installed (pip install tiktoken)" in lines[1]
    assert "HF tokenizers  not installed (pip install tokenizers)" in lines[2]


def test_demo_options_show_their_default() -> None:
    from mnemo.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for action in sub.choices["demo"]._actions:
        if action.option_strings and action.dest != "help":
            assert action.help and "default" in action.help, f"{action.option_strings}: {action.help!r}"


@pytest.mark.skipif(shutil.which("make") is None or not (ROOT / "Makefile").is_file(),
                    reason="needs make and the checkout's Makefile")
def test_make_demo_installs_mnemo_without_the_test_extras(tmp_path: Path) -> None:
    """`make demo` announces the build and installs `.` (mnemo and its runtime dependencies),
    never `.[test]`; `make test` still installs the test extras.  Dry runs in a fresh venv path."""
    venv = tmp_path / "venv"
    demo_run = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={venv}", "demo"],
                              capture_output=True, text=True, check=True).stdout
    assert "building mnemo (nasm + mypyc), about a minute..." in demo_run
    assert "pip install -q ." in demo_run and "[test]" not in demo_run
    test_run = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={venv}", "test"],
                              capture_output=True, text=True, check=True).stdout
    assert "pip install -q '.[test]'" in test_run


# ---- the mode of outputs ----


def _write_every_output(folder: Path, text_file: Path) -> list[Path]:
    import mnemo

    text_file.write_text("hello world, hello there")
    tok = mnemo.train([text_file], vocab_size=300)
    paths = [folder / "tokenizer.bin", folder / "data.tok", folder / "bigram.npz", folder / "tokenizer.json",
             folder / "ranks.tiktoken", folder / "vocab.json", folder / "merges.txt"]
    tok.save(paths[0])
    with TokWriter(paths[1], tok) as w:
        w.write_doc(tok.encode_ordinary("hello"))
    BigramModel.init(300, 2).save(paths[2])
    interop.save_hf(tok, paths[3])
    interop.save_tiktoken(tok, paths[4])
    interop.save_gpt2(tok, paths[5], paths[6])
    return paths


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_every_output_gets_0666_minus_the_umask(tmp_path: Path, umask: int) -> None:
    """tokenizer.bin, .tok, the bigram's .npz and the converted files all get the usual mode.
    Before, the .npz went through mkstemp and came out 0600 whatever the umask."""
    out = tmp_path / "out"
    out.mkdir()
    before = os.umask(umask)
    try:
        paths = _write_every_output(out, tmp_path / "text.txt")
    finally:
        os.umask(before)
    for p in paths:
        assert oct(p.stat().st_mode & 0o777) == oct(0o666 & ~umask), p.name
    assert sorted(q.name for q in out.iterdir()) == sorted(p.name for p in paths)  # no temporaries


# ---- pretrain's defaults on the demo's data ----


@pytest.mark.slow
def test_pretrain_defaults_beat_the_unigram_on_the_demo_data(tmp_path: Path) -> None:
    """The demo's corpus (the stdlib and its docs, 32 MB), a 32,768-id tokenizer, and
    `mnemo pretrain` with every option at its default: below the unigram baseline at the end."""
    import mnemo
    from mnemo.tokenizing import tokenize_files

    inputs = demo.demo_corpus(tmp_path)
    tok = mnemo.train(inputs, vocab_size=32768, workers=2)
    tok.save(tmp_path / "tok.bin")
    tokenize_files(inputs, tok, tmp_path / "stdlib.tok", workers=2)
    run = subprocess.run([sys.executable, "-m", "mnemo", "pretrain", "-t", str(tmp_path / "tok.bin"),
                          str(tmp_path / "stdlib.tok")], capture_output=True, text=True, check=False,
                         cwd=tmp_path)  # not the checkout, whose mnemo/ is not built
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # piped: no progress display
    unigram, vals = _losses(run.stdout)
    assert vals[-1] < unigram - 0.2, run.stdout
    assert vals[-1] < vals[0] - 0.3, run.stdout  # step 0 is the add-one unigram
    assert np.isfinite(vals).all()
