"""Fixtures the format tests share (tests/formats/): GPT-2's files from the cs336 fixtures,
the Tokenizer load_gpt2 makes of them, tiktoken's own Encoding of the same files (the oracle), a
mnemo-trained vocabulary, and the special-token fixture texts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemo import Tokenizer
from mnemo.formats.gpt2 import load_gpt2

EOT = "<|endoftext|>"


@pytest.fixture(scope="session")
def gpt2_paths(cs336_dir: Path) -> tuple[Path, Path]:
    vocab, merges = cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt"
    if not vocab.exists() or not merges.exists():
        pytest.skip(f"GPT-2 fixture files absent in {cs336_dir}")
    return vocab, merges


@pytest.fixture(scope="session")
def gpt2(gpt2_paths: tuple[Path, Path]) -> Tokenizer:
    return load_gpt2(*gpt2_paths)


@pytest.fixture(scope="session")
def tiktoken_gpt2(gpt2_paths: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tiktoken's Encoding built by tiktoken's own loader from the same two files."""
    tiktoken = pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import r50k_pat_str

    vocab, merges = gpt2_paths
    # tiktoken's loader drops the first line of vocab.bpe (`#version: 0.2`), which the fixture lacks.
    bpe = tmp_path_factory.mktemp("gpt2") / "vocab.bpe"
    bpe.write_text("#version: 0.2\n" + merges.read_text(encoding="utf-8"), encoding="utf-8")
    ranks = data_gym_to_mergeable_bpe_ranks(str(bpe), str(vocab))
    return tiktoken.Encoding(
        name="gpt2-fixture",
        pat_str=r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={EOT: 50256},
    )


@pytest.fixture(scope="session")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    """A mnemo-trained vocabulary (mnemonic pattern, default specials): no id map."""
    import mnemo

    docs = corpus_docs("english", max_bytes=600_000) + corpus_docs("code", max_bytes=300_000)
    return mnemo.train_from_iterator(iter(docs), vocab_size=2048, workers=1)


@pytest.fixture(scope="session")
def special_fixtures(cs336_dir: Path) -> dict[str, str]:
    """The cs336 fixture texts around special tokens, by file name."""
    names = (
        "address.txt",
        "german.txt",
        "tinystories_sample.txt",
        "special_token_trailing_newlines.txt",
        "special_token_double_newlines_non_whitespace.txt",
    )
    return {name: (cs336_dir / name).read_text(encoding="utf-8") for name in names}
