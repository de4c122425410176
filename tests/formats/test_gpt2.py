"""GPT-2's vocab.json + merges.txt (mnemo/formats/gpt2.py, docs/interop.md).

Oracle: tiktoken's own GPT-2 loader (`tiktoken.load.data_gym_to_mergeable_bpe_ranks`, which reads
the two files without any mnemo code: tests/formats/conftest.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemo import FormatError, SpecialTokenError, Tokenizer
from mnemo.formats.common import BYTE_TO_CHAR
from mnemo.formats.gpt2 import load_gpt2, save_gpt2
from mnemo.pretokenize import PATTERN_REGEX

EOT = "<|endoftext|>"
CORPORA = ["english", "multilingual", "code", "chat"]


def need(module: str) -> Any:
    return pytest.importorskip(module, reason=f"the {module} package is not installed (pip install '.[test]')")


def test_gpt2_vocab_ids_are_256_plus_rank(gpt2_paths: tuple[Path, Path]) -> None:
    """The fact the id map relies on, read from the files: merge k's token has id 256 + k."""
    vocab = json.loads(gpt2_paths[0].read_text(encoding="utf-8"))
    lines = gpt2_paths[1].read_text(encoding="utf-8").splitlines()
    assert all(vocab[a + b] == 256 + k for k, (a, b) in enumerate(line.split(" ") for line in lines))
    bytes_ids = sorted(vocab[c] for c in BYTE_TO_CHAR.values())
    assert bytes_ids == list(range(256))
    assert [vocab[BYTE_TO_CHAR[b]] for b in range(256)] != list(range(256))


def test_gpt2_load(gpt2: Tokenizer, gpt2_paths: tuple[Path, Path]) -> None:
    vocab = json.loads(gpt2_paths[0].read_text(encoding="utf-8"))
    assert gpt2.n_vocab == 50257 and len(gpt2.merges) == 50000
    assert gpt2.special_tokens == {EOT: 50256}
    assert gpt2.pattern == "gpt2"
    assert gpt2.token_bytes(vocab["Ġthe"]) == b" the"
    assert gpt2.token_bytes(vocab["!"]) == b"!" and vocab["!"] == 0
    assert gpt2.encode(" the") == [vocab["Ġthe"]]
    assert gpt2.encode("!") == [0]
    assert gpt2.id_map is not None


@pytest.mark.corpus
def test_gpt2_pattern_is_tiktokens_r50k(corpus_docs: Callable[..., list[str]]) -> None:
    """mnemo's "gpt2" pattern splits as tiktoken's gpt2/r50k_base `pat_str` does.

    Older tiktoken spelt it exactly as mnemo does; newer releases use a possessive rewrite
    (`\\s++$|\\s+(?!\\S)|\\s` for `\\s+(?!\\S)|\\s+`), equivalent by their own comment.
    """
    regex = need("regex")
    theirs = regex.compile(need("tiktoken_ext.openai_public").r50k_pat_str)
    ours = regex.compile(PATTERN_REGEX["gpt2"])
    texts = ["", " ", "a  b", "a \n\n b", "x   ", "it's  'll 'S", "\t\t\nx", "1 22 333", "\u00e9t\u00e9 !!"]
    texts += corpus_docs("multilingual", max_bytes=200_000) + corpus_docs("code", max_bytes=200_000)
    for text in texts:
        assert ours.findall(text) == theirs.findall(text), text[:80]


@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPORA)
def test_gpt2_corpus_equals_tiktoken(
    name: str, corpus_docs: Callable[..., list[str]], gpt2: Tokenizer, tiktoken_gpt2: Any, full_corpus: bool
) -> None:
    docs = corpus_docs(name, max_bytes=300_000)
    for n, doc in enumerate(docs):
        ours = gpt2.encode(doc, disallowed_special=())
        theirs = tiktoken_gpt2.encode(doc, disallowed_special=())
        assert ours == theirs, f"{name} document {n} differs"
    print(f"{name}: {len(docs)} documents identical to tiktoken")


def test_gpt2_special_fixtures_equal_tiktoken(
    cs336_dir: Path, gpt2: Tokenizer, tiktoken_gpt2: Any, special_fixtures: dict[str, str]
) -> None:
    for name, text in special_fixtures.items():
        ids = gpt2.encode(text, allowed_special={EOT})
        assert ids == tiktoken_gpt2.encode(text, allowed_special={EOT}), name
        assert gpt2.decode(ids) == text
    tiny = (cs336_dir / "tinystories_sample.txt").read_text(encoding="utf-8")
    assert gpt2.encode(tiny, allowed_special="all").count(50256) == tiny.count(EOT) == 5
    with pytest.raises(SpecialTokenError, match="endoftext"):
        gpt2.encode(tiny)


def test_gpt2_save_gives_back_the_files(gpt2: Tokenizer, gpt2_paths: tuple[Path, Path], tmp_path: Path) -> None:
    save_gpt2(gpt2, tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8")) == json.loads(
        gpt2_paths[0].read_text(encoding="utf-8")
    )
    lines = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#version: 0.2"
    assert lines[1:] == gpt2_paths[1].read_text(encoding="utf-8").splitlines()
    assert load_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt") == gpt2


def test_trained_gpt2_round_trip(trained: Tokenizer, tmp_path: Path, corpus_docs: Callable[..., list[str]]) -> None:
    save_gpt2(trained, tmp_path / "v.json", tmp_path / "m.txt")
    back = load_gpt2(tmp_path / "v.json", tmp_path / "m.txt", pattern="mnemonic")
    assert back.id_map is None  # mnemo's own numbering needs no map
    assert back == Tokenizer(trained.merges, pattern="mnemonic", special_tokens=list(trained.special_tokens))
    assert back.fingerprint == trained.fingerprint


def small_gpt2_files(tmp_path: Path, merges: str, extra: dict[str, int] | None = None) -> tuple[Path, Path]:
    vocab = {BYTE_TO_CHAR[b]: b for b in range(256)}
    vocab.update({"ab": 256, "abc": 257} if extra is None else extra)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text(merges, encoding="utf-8")
    return tmp_path / "vocab.json", tmp_path / "merges.txt"


def test_small_gpt2_files_load(tmp_path: Path) -> None:
    tok = load_gpt2(*small_gpt2_files(tmp_path, "#version: 0.2\na b\nab c\n"))
    assert tok.encode("abcab") == [257, 256] and tok.id_map is None


@pytest.mark.parametrize(
    ("merges", "extra", "message"),
    [
        ("a b\nabc\n", None, r"merges.txt: line 2: 'abc' should be two tokens"),
        ("a b\nab  c\n", None, r"line 2: 'ab  c' should be two tokens"),
        ("a b\nxy c\n", None, r"line 2: token 'xy' is not in the vocabulary"),
        ("a b\nab d\n", None, r"line 2: the merged token 'abd' is not in the vocabulary"),
        ("a b\nab c\n", {"ab": 256, "abc": 256}, r"id 256 is given to both 'ab' and 'abc'"),
        # a hole (257) is allowed since issue 16 (tests/test_ids32.py); an id past bit 31 is not
        ("a b\nab c\n", {"ab": 256, "abc": 2**31}, r"has id 2147483648, above 2147483647"),
        ("a b\nab c\n", {"ab": 256, "abc": 257, "zz": 258}, r"neither|id 258"),
        ("ab c\na b\n", None, r"line 1: token 'ab' is not made by any earlier merge"),
        ("a b\na b\n", None, r"line 2: makes 'ab' again"),
        ("a b\nab \u4e00\n", None, r"line 2: token '\u4e00' holds '\u4e00', which is not in GPT-2's byte alphabet"),
    ],
)
def test_gpt2_malformed(tmp_path: Path, merges: str, extra: dict[str, int] | None, message: str) -> None:
    paths = small_gpt2_files(tmp_path, merges, extra)
    if extra is not None and "zz" in extra:
        # a vocab entry no merge makes becomes a special token (as <|endoftext|>): that loads
        tok = load_gpt2(*paths)
        assert tok.special_tokens == {"zz": 258}
        return
    with pytest.raises(FormatError, match=message):
        load_gpt2(*paths)


def test_vocab_json_errors(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text('{"a": 1, "a": 2}', encoding="utf-8")
    (tmp_path / "m.txt").write_text("", encoding="utf-8")
    with pytest.raises(FormatError, match=r"v.json: key 'a' appears twice"):
        load_gpt2(tmp_path / "v.json", tmp_path / "m.txt")
    (tmp_path / "v.json").write_text('{"a": 1,', encoding="utf-8")
    with pytest.raises(FormatError, match=r"v.json: line 1 column 9: not valid JSON"):
        load_gpt2(tmp_path / "v.json", tmp_path / "m.txt")
    (tmp_path / "v.json").write_text('{"a": "one"}', encoding="utf-8")
    with pytest.raises(FormatError, match=r"key 'a': the id 'one' is not an integer"):
        load_gpt2(tmp_path / "v.json", tmp_path / "m.txt")
    (tmp_path / "v.json").write_text(json.dumps({BYTE_TO_CHAR[b]: b for b in range(255)}), encoding="utf-8")
    with pytest.raises(FormatError, match=r"the byte 0xff \('ÿ'\) is not in the vocabulary"):
        load_gpt2(tmp_path / "v.json", tmp_path / "m.txt")
