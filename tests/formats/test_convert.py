"""`mnemo convert`: every format to every other (docs/interop.md, docs/cli.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mnemo import Tokenizer

EOT = "<|endoftext|>"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    # From the filesystem root: `python -m` puts the working folder first on sys.path, and the
    # checkout's uncompiled mnemo/ must not shadow the installed package.  (Arguments are absolute.)
    return subprocess.run(
        [sys.executable, "-m", "mnemo", *args], capture_output=True, text=True, timeout=300, cwd=Path("/")
    )


def test_convert_chain(gpt2_paths: tuple[Path, Path], gpt2: Tokenizer, tmp_path: Path) -> None:
    src = tmp_path / "gpt2"
    src.mkdir()
    shutil.copy(gpt2_paths[0], src / "vocab.json")
    shutil.copy(gpt2_paths[1], src / "merges.txt")
    steps = [
        (src, tmp_path / "a.bin", "gpt2", "mnemo"),
        (tmp_path / "a.bin", tmp_path / "b.json", "mnemo", "hf"),
        (tmp_path / "b.json", tmp_path / "c.tiktoken", "hf", "tiktoken"),
        (tmp_path / "c.tiktoken", tmp_path / "d", "tiktoken", "gpt2"),
        (tmp_path / "d", tmp_path / "e.bin", "gpt2", "mnemo"),
    ]
    for source, dest, a, b in steps:
        extra = ["--pattern", "gpt2", "--special", f"{EOT}=50256"] if a == "tiktoken" else []
        result = run_cli("convert", str(source), str(dest), "--from", a, "--to", b, *extra)
        assert result.returncode == 0, result.stderr
        assert "50257 ids" in result.stdout
    assert Tokenizer.load(tmp_path / "e.bin") == gpt2


def test_convert_errors(tmp_path: Path) -> None:
    result = run_cli("convert", str(tmp_path / "nothing.tiktoken"), str(tmp_path / "x.bin"), "--from", "tiktoken", "--to", "mnemo")
    assert result.returncode != 0 and "--pattern" in result.stderr
    result = run_cli("convert", str(tmp_path / "missing.bin"), str(tmp_path / "x.json"), "--from", "mnemo", "--to", "hf")
    assert result.returncode != 0 and "missing.bin" in result.stderr
    result = run_cli("convert", str(tmp_path), str(tmp_path / "x.bin"), "--from", "gpt2", "--to", "mnemo")
    assert result.returncode == 1 and "has no vocab.json and merges.txt" in result.stderr and "--merges" in result.stderr



@pytest.mark.parametrize("names", [("gpt2_vocab.json", "gpt2_merges.txt"), ("encoder.json", "vocab.bpe")])
def test_convert_finds_a_gpt2_folder_by_its_other_names(
    gpt2_paths: tuple[Path, Path], gpt2: Tokenizer, tmp_path: Path, names: tuple[str, str]
) -> None:
    """The cs336 fixture folder names its files gpt2_vocab.json / gpt2_merges.txt and OpenAI's
    download encoder.json / vocab.bpe: `convert --from gpt2 FOLDER` reads either pair."""
    folder = tmp_path / "gpt2"
    folder.mkdir()
    for source, name in zip(gpt2_paths, names):
        (folder / name).write_bytes(source.read_bytes())
    result = run_cli("convert", str(folder), str(tmp_path / "g.bin"), "--from", "gpt2", "--to", "mnemo")
    assert result.returncode == 0, result.stderr
    assert Tokenizer.load(tmp_path / "g.bin") == gpt2
