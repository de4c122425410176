"""`mnemo demo` (mnemo/demo.py) end to end on a slice of its corpus: every step runs and writes
what it says, and the .tok file holds exactly the corpus' documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo import Tokenizer, demo, open_tok
from mnemo.sources import iter_documents


def test_demo_corpus_is_the_stdlib_and_its_docs(tmp_path: Path) -> None:
    files = demo.demo_corpus(tmp_path)
    assert files[-1] == tmp_path / "python-docs.jsonl"
    assert len(files) > 500 and all(p.suffix == ".py" for p in files[:-1])
    assert any(p.name == "json" or p.parent.name == "json" for p in files)


def test_demo_runs_every_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    full = demo.demo_corpus

    def small(out_dir: Path) -> list[Path]:
        files = full(out_dir)
        return [*files[:40], files[-1]]  # 40 source files and the documentation topics

    monkeypatch.setattr(demo, "demo_corpus", small)
    lines: list[str] = []
    demo.run_demo(tmp_path / "out", vocab_size=700, workers=2, pretrain_steps=3, log=lines.append)
    text = "\n".join(lines)
    for step in ("[1/4] trained", "[2/4] tokenized", "[3/4] a few sentences", "[4/4] a bigram", "done in"):
        assert step in text, text
    tok = Tokenizer.load(tmp_path / "out" / "tokenizer.bin")
    assert tok.n_vocab == 700
    (tmp_path / "again").mkdir()
    inputs = small(tmp_path / "again")
    documents = list(iter_documents(inputs))
    assert len(documents) >= 40 + sum(1 for line in inputs[-1].read_text().splitlines() if json.loads(line)["text"])
    tok_file = open_tok(tmp_path / "out" / "stdlib.tok", tok)
    assert tok_file.header.n_docs == len(documents)
    assert tok_file.header.n_tokens == sum(1 + len(tok.encode_bytes(d)) for d in documents)  # <|bos|> + ids
    assert (tmp_path / "out" / "bigram.npz").stat().st_size > 0
