"""Interoperability: GPT-2 files, tiktoken, Hugging Face tokenizer.json, the CS336 interface,
and `mnemo convert` (mnemo/interop.py, docs/interop.md).  encode_iterable: tests/test_streaming.py.

Oracles: tiktoken's own GPT-2 loader (`tiktoken.load.data_gym_to_mergeable_bpe_ranks`, which
reads the two files without any mnemo code) and `tokenizers.Tokenizer.from_file`.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemo import ConfigError, FormatError, SpecialTokenError, Tokenizer, UnknownTokenError, open_tok
from mnemo import interop
from mnemo.vocabfile import encode_tokenizer_bin
from mnemo.interop import (
    BYTE_TO_CHAR,
    bytes_to_unicode,
    from_hf_json,
    load_gpt2,
    load_hf,
    load_tiktoken,
    save_gpt2,
    save_hf,
    save_tiktoken,
    to_hf_json,
    to_tiktoken,
)
from mnemo.constants import PATTERNS
from mnemo.pretokenize import PATTERN_REGEX

EOT = "<|endoftext|>"
SPECIAL_FIXTURES = (
    "address.txt",
    "german.txt",
    "tinystories_sample.txt",
    "special_token_trailing_newlines.txt",
    "special_token_double_newlines_non_whitespace.txt",
)
CORPORA = ["english", "multilingual", "code", "chat"]


def need(module: str) -> Any:
    return pytest.importorskip(module, reason=f"the {module} package is not installed (pip install '.[test]')")


# ---- fixtures ----


@pytest.fixture(scope="module")
def gpt2_paths(cs336_dir: Path) -> tuple[Path, Path]:
    vocab, merges = cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt"
    if not vocab.exists() or not merges.exists():
        pytest.skip(f"GPT-2 fixture files absent in {cs336_dir}")
    return vocab, merges


@pytest.fixture(scope="module")
def gpt2(gpt2_paths: tuple[Path, Path]) -> Tokenizer:
    return load_gpt2(*gpt2_paths)


@pytest.fixture(scope="module")
def tiktoken_gpt2(gpt2_paths: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tiktoken's Encoding built by tiktoken's own loader from the same two files."""
    tiktoken = need("tiktoken")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    vocab, merges = gpt2_paths
    # tiktoken's loader drops the first line of vocab.bpe (`#version: 0.2`), which the fixture lacks.
    bpe = tmp_path_factory.mktemp("gpt2") / "vocab.bpe"
    bpe.write_text("#version: 0.2\n" + merges.read_text(encoding="utf-8"), encoding="utf-8")
    ranks = data_gym_to_mergeable_bpe_ranks(str(bpe), str(vocab))
    return tiktoken.Encoding(
        name="gpt2-fixture",
        pat_str=need("tiktoken_ext.openai_public").r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={EOT: 50256},
    )


@pytest.fixture(scope="module")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    """A mnemo-trained vocabulary (mnemonic pattern, default specials): no id map."""
    import mnemo

    docs = corpus_docs("english", max_bytes=600_000) + corpus_docs("code", max_bytes=300_000)
    return mnemo.train_from_iterator(iter(docs), vocab_size=2048, workers=1)


def sample(corpus_docs: Callable[..., list[str]], name: str, max_bytes: int = 300_000) -> list[str]:
    return corpus_docs(name, max_bytes=max_bytes)


# ---- GPT-2 alphabet ----


def test_bytes_to_unicode_worked_examples() -> None:
    table = bytes_to_unicode()
    # 68 bytes are not printable: 0x00-0x20 (33), 0x7f-0xa0 (34), 0xad (1); they become
    # chr(256), chr(257), ... in byte order.
    assert table[0x00] == chr(256)
    assert table[ord("\n")] == chr(256 + 10) == "Ċ"
    assert table[ord(" ")] == chr(256 + 32) == "Ġ"
    assert table[0x7F] == chr(256 + 33)
    assert table[0xA0] == chr(256 + 33 + 33)
    assert table[0xAD] == chr(256 + 67)
    assert table[ord("!")] == "!" and table[0xA1] == "\u00a1" and table[0xFF] == "\u00ff"
    assert len(set(table.values())) == 256
    assert table == BYTE_TO_CHAR


# ---- 1. GPT-2 files ----


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
    texts += sample(corpus_docs, "multilingual", 200_000) + sample(corpus_docs, "code", 200_000)
    for text in texts:
        assert ours.findall(text) == theirs.findall(text), text[:80]


@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPORA)
def test_gpt2_corpus_equals_tiktoken(
    name: str, corpus_docs: Callable[..., list[str]], gpt2: Tokenizer, tiktoken_gpt2: Any, full_corpus: bool
) -> None:
    docs = sample(corpus_docs, name)
    for n, doc in enumerate(docs):
        ours = gpt2.encode(doc, disallowed_special=())
        theirs = tiktoken_gpt2.encode(doc, disallowed_special=())
        assert ours == theirs, f"{name} document {n} differs"
    print(f"{name}: {len(docs)} documents identical to tiktoken")


def test_gpt2_special_fixtures_equal_tiktoken(cs336_dir: Path, gpt2: Tokenizer, tiktoken_gpt2: Any) -> None:
    for name in SPECIAL_FIXTURES:
        text = (cs336_dir / name).read_text(encoding="utf-8")
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


# ---- tokenizer.bin with an id map ----


def test_imported_vocabulary_in_a_tok_file_has_its_own_ids(gpt2: Tokenizer, tmp_path: Path) -> None:
    """`mnemo tokenize` (Tokenizer.encode_documents) writes the public ids, as encode_ordinary
    returns them: GPT-2's "!" is 0, not mnemo's byte id 33.  (It once wrote mnemo's ids.)"""
    from mnemo.tokenizing import tokenize_files

    docs = ["Hello world!", "caf\u00e9 \u2603 <|endoftext|> plain text", "!!!"]
    eot = gpt2.special_tokens[EOT]
    ids = gpt2.encode_documents([d.encode() for d in docs], bos=eot)
    assert ids.tolist() == [i for d in docs for i in [eot, *gpt2.encode_ordinary(d)]]
    assert gpt2.encode_ordinary("!") == [0]
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    tokenize_files([src], gpt2, tmp_path / "a.tok", workers=2)
    # no <|bos|> in GPT-2's specials: each document ends with <|endoftext|> (docs/cli.md)
    assert open_tok(tmp_path / "a.tok", gpt2).tokens.tolist() == [i for d in docs for i in [*gpt2.encode_ordinary(d), eot]]
    with pytest.raises(ConfigError, match="bos=99999 is not an id"):
        gpt2.encode_documents([b"x"], bos=99999)


def test_id_map_saved_and_loaded(gpt2: Tokenizer, tmp_path: Path) -> None:
    gpt2.save(tmp_path / "gpt2.bin")
    back = Tokenizer.load(tmp_path / "gpt2.bin")
    assert back == gpt2 and back.id_map == gpt2.id_map and back.special_tokens == {EOT: 50256}
    assert back.encode("Hello world!") == gpt2.encode("Hello world!")


def test_id_map_in_fingerprint() -> None:
    merges = [(97, 98)]
    plain = Tokenizer(merges, special_tokens=["<s>"])
    identity = Tokenizer(merges, special_tokens=["<s>"], id_map=list(range(258)))
    assert identity.id_map is None and identity.fingerprint == plain.fingerprint
    swapped = list(range(258))
    swapped[97], swapped[257] = 257, 97  # "a" <-> "<s>"
    renamed = Tokenizer(merges, special_tokens=["<s>"], id_map=swapped)
    assert renamed.fingerprint != plain.fingerprint
    assert renamed.special_tokens == {"<s>": 97}
    assert renamed.encode("ab a<s>", allowed_special="all") == [256, 32, 257, 97]
    assert renamed.decode([257, 97, 256]) == "a<s>ab"
    assert renamed.token_bytes(257) == b"a"
    assert renamed.vocab[97] == b"<s>"


def test_id_map_rejected() -> None:
    with pytest.raises(ConfigError, match="id_map has 3 entries"):
        Tokenizer([], special_tokens=[], id_map=[0, 1, 2])
    with pytest.raises(ConfigError, match="gives id 0 to both 0 and 1"):
        Tokenizer([], special_tokens=[], id_map=[0, 0, *range(2, 256)])


def test_damaged_id_map_section(tmp_path: Path) -> None:
    bad = [1, 1, *range(2, 256)]
    image = encode_tokenizer_bin([], "gpt2", [], "id", None, bad)
    with pytest.raises(FormatError, match=r"offset 146: id_map gives id 1 to both 0 and 1"):
        Tokenizer.from_bytes(image)


# ---- 2. tiktoken ----


def test_to_tiktoken_gpt2(gpt2: Tokenizer, tiktoken_gpt2: Any, cs336_dir: Path) -> None:
    enc = to_tiktoken(gpt2, "gpt2-from-mnemo")
    assert enc._mergeable_ranks == tiktoken_gpt2._mergeable_ranks
    assert enc._special_tokens == {EOT: 50256}
    text = (cs336_dir / "tinystories_sample.txt").read_text(encoding="utf-8")
    assert enc.encode(text, allowed_special="all") == gpt2.encode(text, allowed_special="all")


def test_tiktoken_file_round_trip_gpt2(gpt2: Tokenizer, tmp_path: Path) -> None:
    save_tiktoken(gpt2, tmp_path / "gpt2.tiktoken")
    first = (tmp_path / "gpt2.tiktoken").read_text(encoding="ascii").splitlines()[0]
    assert first == "IQ== 0"  # b"!" in base64, rank 0
    back = load_tiktoken(tmp_path / "gpt2.tiktoken", "gpt2", {EOT: 50256})
    assert back.merges == gpt2.merges  # the merges re-derived from ranks are GPT-2's merges.txt
    assert back == gpt2


@pytest.mark.corpus
def test_trained_through_tiktoken(trained: Tokenizer, tmp_path: Path, corpus_docs: Callable[..., list[str]]) -> None:
    """mnemo -> tiktoken (Encoding and .tiktoken file) -> mnemo: the same ids everywhere."""
    need("tiktoken")
    enc = to_tiktoken(trained)
    save_tiktoken(trained, tmp_path / "t.tiktoken")
    back = load_tiktoken(tmp_path / "t.tiktoken", trained.pattern, trained.special_tokens)
    assert back.fingerprint == trained.fingerprint
    for name in CORPORA:
        for doc in sample(corpus_docs, name, 100_000):
            ids = trained.encode(doc, disallowed_special=())
            assert enc.encode(doc, disallowed_special=()) == ids
            assert back.encode(doc, disallowed_special=()) == ids


# ---- 3. Hugging Face tokenizer.json ----


@pytest.mark.corpus
@pytest.mark.parametrize("which", ["gpt2", "trained"])
def test_hf_export_encodes_identically(
    which: str, request: pytest.FixtureRequest, tmp_path: Path, corpus_docs: Callable[..., list[str]]
) -> None:
    tokenizers = need("tokenizers")
    tok: Tokenizer = request.getfixturevalue(which)
    save_hf(tok, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.get_vocab_size() == tok.n_vocab
    n = 0
    for name in CORPORA:
        for doc in sample(corpus_docs, name, 100_000):
            ids = tok.encode(doc, allowed_special="all")
            assert hf.encode(doc, add_special_tokens=False).ids == ids, f"{name} document {n}"
            assert hf.decode(ids, skip_special_tokens=False) == tok.decode(ids)
            n += 1
    back = load_hf(tmp_path / "tokenizer.json")
    assert back.fingerprint == tok.fingerprint


def test_hf_special_tokens(gpt2: Tokenizer, cs336_dir: Path, tmp_path: Path) -> None:
    tokenizers = need("tokenizers")
    save_hf(gpt2, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for name in SPECIAL_FIXTURES:
        text = (cs336_dir / name).read_text(encoding="utf-8")
        assert hf.encode(text, add_special_tokens=False).ids == gpt2.encode(text, allowed_special="all"), name


def test_hf_gpt2_style_byte_level(gpt2: Tokenizer) -> None:
    """HF's own GPT-2 layout (ByteLevel with its built-in regex, merges as "a b") imports as gpt2."""
    obj = to_hf_json(gpt2)
    obj["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    obj["model"]["merges"] = [f"{a} {b}" for a, b in obj["model"]["merges"]]
    assert from_hf_json(obj) == gpt2


# ---- 4. the CS336 interface ----


def test_cs336_worked_example() -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"ab"
    tok = Tokenizer.from_vocab_merges(vocab, [(b"a", b"b")], ["<|x|>"])
    assert tok.encode("abab<|x|>a", allowed_special="all") == [256, 256, 257, 97]
    assert tok.vocab[257] == b"<|x|>" and tok.merge_pairs == [(b"a", b"b")]


def test_cs336_round_trip(gpt2: Tokenizer) -> None:
    vocab, merges = gpt2.vocab, gpt2.merge_pairs
    assert isinstance(vocab, dict) and vocab[50256] == EOT.encode() and len(vocab) == 50257
    assert merges[0] == (b" ", b"t")
    assert Tokenizer.from_vocab_merges(vocab, merges, [EOT]) == gpt2
    # a special token not in the vocabulary gets the next id
    extra = Tokenizer.from_vocab_merges(vocab, merges, [EOT, "<|pad|>"])
    assert extra.special_tokens == {EOT: 50256, "<|pad|>": 50257}


def test_cs336_reference_vocab_with_special_at_id_0(cs336_dir: Path) -> None:
    """train-bpe-reference-vocab.json: the special is id 0, bytes 1..256, merges 257.. (a full map)."""
    raw = json.loads((cs336_dir / "train-bpe-reference-vocab.json").read_text(encoding="utf-8"))
    decode = {c: b for b, c in bytes_to_unicode().items()}
    vocab = {i: (s.encode() if s == EOT else bytes(decode[c] for c in s)) for s, i in raw.items()}
    lines = (cs336_dir / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [tuple(bytes(decode[c] for c in part) for part in line.split(" ")) for line in lines]
    tok = Tokenizer.from_vocab_merges(vocab, merges, [EOT])  # type: ignore[arg-type]
    assert tok.special_tokens == {EOT: 0}
    text = "the quick brown fox<|endoftext|> of the"
    ids = tok.encode(text, allowed_special="all")
    assert ids[ids.index(0) + 1] == raw["Ġof"] and 0 in ids
    assert tok.decode(ids) == text
    assert [tok.vocab[i] for i in ids] == [tok.token_bytes(i) for i in ids]


def cs336_vocab_merges(vocab_path: Path, merges_path: Path) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """GPT-2's files read the way CS336's test helper (`get_tokenizer_from_vocab_merges_path`)
    reads them with no special tokens: every vocab.json entry, `<|endoftext|>` included, becomes
    id -> bytes, each merges.txt line a pair of bytes."""
    decode = {c: b for b, c in bytes_to_unicode().items()}
    raw = json.loads(vocab_path.read_text(encoding="utf-8"))
    vocab = {i: bytes(decode[c] for c in s) for s, i in raw.items()}
    merges = []
    for line in merges_path.read_text(encoding="utf-8").splitlines():
        parts = line.rstrip().split(" ")
        if len(parts) == 2:
            merges.append((bytes(decode[c] for c in parts[0]), bytes(decode[c] for c in parts[1])))
    return vocab, merges


@pytest.mark.parametrize("entry", ["method", "function"])
def test_cs336_gpt2_files_without_special_tokens(
    entry: str, gpt2_paths: tuple[Path, Path], gpt2: Tokenizer, tiktoken_gpt2: Any, cs336_dir: Path
) -> None:
    """Issue 12: `from_vocab_merges(gpt2_vocab, gpt2_merges)` with no special tokens, as CS336's
    tests build it.  `<|endoftext|>`, which no merge makes, is a special token with its own id."""
    vocab, merges = cs336_vocab_merges(*gpt2_paths)
    assert vocab[50256] == EOT.encode() and len(merges) == 50000
    build = Tokenizer.from_vocab_merges if entry == "method" else interop.from_vocab_merges
    tok = build(vocab, merges)
    assert tok.special_tokens == {EOT: 50256}
    assert tok == gpt2  # what load_gpt2 makes of the same files
    assert tok.vocab == vocab
    for name in SPECIAL_FIXTURES:
        text = (cs336_dir / name).read_text(encoding="utf-8")
        ids = tok.encode(text, allowed_special="all")
        assert ids == tiktoken_gpt2.encode(text, allowed_special="all"), name
        assert tok.decode(ids) == text, name
        plain = tok.encode_ordinary(text)
        assert plain == tiktoken_gpt2.encode_ordinary(text) and tok.decode(plain) == text, name
    tiny = (cs336_dir / "tinystories_sample.txt").read_text(encoding="utf-8")
    assert tok.encode(tiny, allowed_special="all").count(50256) == tiny.count(EOT) == 5
    with pytest.raises(SpecialTokenError, match="<\\|endoftext\\|>"):
        tok.encode(tiny)  # tiktoken's contract, as for every special token
    # with special tokens as well: the leftover keeps its id, a new one comes after it
    more = build(vocab, merges, ["<|pad|>"])
    assert more.special_tokens == {EOT: 50256, "<|pad|>": 50257}
    assert more.encode("a<|pad|>b<|endoftext|>", allowed_special="all") == [64, 50257, 65, 50256]


def test_cs336_leftover_entries_keep_their_ids() -> None:
    """An entry no merge makes, anywhere in the ids (not only at the top), is a special token
    named by its UTF-8 text; one that is not UTF-8 cannot be named and is an error."""
    vocab = {i + 1: bytes([i]) for i in range(256)}
    vocab[0] = b"<|x|>"
    vocab[257] = b"ab"
    tok = Tokenizer.from_vocab_merges(vocab, [(b"a", b"b")])
    assert tok.special_tokens == {"<|x|>": 0} and tok.vocab == vocab
    assert tok.encode("ab<|x|>a", allowed_special="all") == [257, 0, 98]
    assert tok.decode([257, 0, 98]) == "ab<|x|>a"
    bad = {**{i: bytes([i]) for i in range(256)}, 256: b"\xff\xfe"}
    with pytest.raises(FormatError, match=r"vocab\[256\] b'\\xff\\xfe' is neither a byte nor made by a merge, and not UTF-8"):
        Tokenizer.from_vocab_merges(bad, [])


# ---- 5. mnemo convert ----


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

# ---- 6. malformed inputs ----


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


def tiktoken_lines(extra: list[str]) -> str:
    import base64

    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    return "\n".join(lines + extra) + "\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["YWI= 256", "YWI= 257"], r"line 258: token b'ab' is listed again \(first on line 257\)"),
        (["YWI= 256", "YmM= 256"], r"line 258: rank 256 is given again \(first on line 257\)"),
        (["YWI= 257"], r"no token has rank 256 but ranks go up to 257 \(ranks have gaps\)"),
        (["YWI=256"], r"line 257: 'YWI=256' should be 'BASE64 RANK'"),
        (["Y*I= 256"], r"line 257: 'Y\*I=' is not valid base64"),
        (["YWI= -1"], r"line 257: rank '-1' is not a non-negative integer"),
        (["YWJj 256"], r"line 257: token b'abc' \(rank 256\) is not the merge of two lower-ranked tokens"),
    ],
)
def test_tiktoken_malformed(tmp_path: Path, extra: list[str], message: str) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_text(tiktoken_lines(extra), encoding="ascii")
    with pytest.raises(FormatError, match=message):
        load_tiktoken(path, "gpt2")


def test_tiktoken_specials_must_fill_ids(tmp_path: Path) -> None:
    path = tmp_path / "t.tiktoken"
    path.write_text(tiktoken_lines(["YWI= 256"]), encoding="ascii")
    assert load_tiktoken(path, "gpt2", {EOT: 257}).encode("ab" + EOT, allowed_special="all") == [256, 257]
    holey = load_tiktoken(path, "gpt2", {EOT: 258})  # cl100k's shape: 257 is a hole (issue 16)
    assert holey.n_vocab == 259 and holey.encode(EOT, allowed_special="all") == [258]
    with pytest.raises(UnknownTokenError, match="token id 257 "):
        holey.decode([257])
    with pytest.raises(ConfigError, match="unknown pattern or preset 'cl200k'"):  # cl100k is a pattern now
        load_tiktoken(path, "cl200k")


def test_hf_not_byte_level(gpt2: Tokenizer, tmp_path: Path) -> None:
    obj = to_hf_json(Tokenizer([(97, 98)], pattern="gpt2", special_tokens=[]))
    wordpiece = json.loads(json.dumps(obj))
    wordpiece["model"]["type"] = "WordPiece"
    with pytest.raises(FormatError, match=r"key 'model.type' is 'WordPiece'"):
        from_hf_json(wordpiece, "t.json")
    metaspace = json.loads(json.dumps(obj))
    metaspace["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581"}
    with pytest.raises(FormatError, match=r"t.json: key 'pre_tokenizer' is .*Metaspace.*byte-level BPE only"):
        from_hf_json(metaspace, "t.json")
    other_regex = json.loads(json.dumps(obj))
    other_regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\w+"
    with pytest.raises(FormatError, match=r"pretokenizers\[0\].pattern.Regex' is '\\\\w\+', which is none"):
        from_hf_json(other_regex, "t.json")
    sentencepiece = json.loads(json.dumps(obj))
    sentencepiece["model"]["vocab"]["\u2581the"] = 257
    with pytest.raises(FormatError, match="not in GPT-2's byte alphabet"):
        from_hf_json(sentencepiece, "t.json")
    bad_merge = json.loads(json.dumps(obj))
    bad_merge["model"]["merges"][0] = ["a"]
    with pytest.raises(FormatError, match=r"key 'model.merges\[0\]': \['a'\] should be two tokens"):
        from_hf_json(bad_merge, "t.json")
    normalized = json.loads(json.dumps(obj))
    normalized["normalizer"] = {"type": "NFC"}
    with pytest.raises(FormatError, match="key 'normalizer' is set"):
        from_hf_json(normalized, "t.json")


def test_cs336_malformed() -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    # tokens are shown as the Python bytes CS336's interface passes (not in GPT-2's alphabet)
    with pytest.raises(FormatError, match=r"merges\[0\]: token b'xy' is not in the vocabulary"):
        Tokenizer.from_vocab_merges(vocab, [(b"xy", b"z")])
    with pytest.raises(FormatError, match=r"vocab\[97\] and vocab\[300\] are both b'a'"):
        Tokenizer.from_vocab_merges({**vocab, 300: b"a"}, [])
    holey = Tokenizer.from_vocab_merges({**vocab, 300: b"ab"}, [(b"a", b"b")])  # holes 256..299 (issue 16)
    assert holey.n_vocab == 301 and holey.encode("ab") == [300]


def test_no_pickle_in_interop() -> None:
    import re

    for module in ("interop", "tokenizer", "vocabfile", "tokfile"):
        source = Path(interop.__file__).with_name(f"{module}.py").read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+(c?pickle|marshal|shelve)\b", source, re.M), module


# ---- hostile files: bounded time and memory, and errors instead of tracebacks ----------------


def in_child(code: str, cwd: Path, timeout: float = 120) -> str:
    """Run `code` in a child Python with 2 GiB of address space and a time limit; its output.
    A loader that builds a huge set or loops for ever fails the test instead of the machine."""
    import textwrap

    prelude = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd,  # not the checkout's mnemo/
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_huge_tiktoken_rank_is_an_error_not_a_huge_set(tmp_path: Path) -> None:
    """Rank 100000000000 once built set(range(top + 1)): ten billion ints."""
    path = tmp_path / "big.tiktoken"
    path.write_text(tiktoken_lines(["YWI= 100000000000"]), encoding="ascii")
    out = in_child(
        f"""
        from mnemo import FormatError
        from mnemo.interop import load_tiktoken
        try:
            load_tiktoken({str(path)!r}, "gpt2")
        except FormatError as exc:
            print(exc)
        """,
        tmp_path,
    )
    assert "no token has rank 256 but ranks go up to 100000000000" in out
    path.write_text(tiktoken_lines(["YWI= " + "9" * 5000]), encoding="ascii")  # int() refuses > 4300 digits
    with pytest.raises(FormatError, match=r"line 257: rank '9{20}' is not a non-negative integer of at most 18 digits"):
        load_tiktoken(path, "gpt2")


@pytest.mark.parametrize("rank", ["²", "٣", "1²", "𝟙"])
def test_a_tiktoken_rank_of_unicode_digits_is_an_error(tmp_path: Path, rank: str) -> None:
    """str.isdigit() takes "²" and int() does not: a ValueError traceback once."""
    path = tmp_path / "d.tiktoken"
    path.write_text(tiktoken_lines([f"YWI= {rank}"]), encoding="utf-8")
    with pytest.raises(FormatError, match=rf"d.tiktoken: line 257: rank '{rank}' is not a non-negative integer"):
        load_tiktoken(path, "gpt2")


def test_a_long_tiktoken_token_is_split_in_n_log_n(tmp_path: Path, within: Callable[..., object]) -> None:
    """Rescanning every pair for every merge was quadratic: one 8,000-byte token took 5.5 s.
    Tokens 'a' * 2**k up to 32,768 bytes (and one of 32,768 + 16,384) load in a few seconds."""
    import base64

    extra = []
    rank = 256
    for k in range(1, 16):
        extra.append(f"{base64.b64encode(b'a' * 2**k).decode()} {rank}")
        rank += 1
    extra.append(f"{base64.b64encode(b'a' * (2**15 + 2**14)).decode()} {rank}")
    path = tmp_path / "long.tiktoken"
    path.write_text(tiktoken_lines(extra), encoding="ascii")
    tok = within(lambda: load_tiktoken(path, "gpt2"), 20)
    assert isinstance(tok, Tokenizer)
    assert tok.merges[-1] == (256 + 14, 256 + 13)  # 32,768 + 16,384 bytes = 'a'*2**15 + 'a'*2**14
    assert tok.encode("a" * 64) == [256 + 5]


def test_split_by_ranks_is_tiktokens_merge() -> None:
    """The heap version against the obvious loop (lowest rank first, the leftmost of equals)."""
    rng = random.Random(7)

    def obvious(raw: bytes, ranks: dict[bytes, int], limit: int) -> list[bytes]:
        parts = [raw[i : i + 1] for i in range(len(raw))]
        while len(parts) > 1:
            best, at = limit, -1
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1], limit)
                if r < best:
                    best, at = r, i
            if at < 0:
                break
            parts[at : at + 2] = [parts[at] + parts[at + 1]]
        return parts

    for _ in range(300):
        alphabet = b"abc"[: rng.randint(1, 3)]
        ranks = {bytes([b]): b for b in range(256)}
        for _ in range(rng.randint(0, 30)):
            tok = bytes(rng.choice(alphabet) for _ in range(rng.randint(2, 6)))
            ranks.setdefault(tok, len(ranks))
        raw = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        limit = rng.randint(256, len(ranks) + 1)
        assert interop._split_by_ranks(raw, ranks, limit) == obvious(raw, ranks, limit), (raw, limit)


def test_many_added_tokens_load_in_linear_time(tmp_path: Path, within: Callable[..., object]) -> None:
    """interop.assemble checked repeated specials with a list's `in`: 40,000 HF added_tokens
    took 15.6 s."""
    obj = to_hf_json(Tokenizer([(97, 98)], pattern="gpt2", special_tokens=[]))
    n = len(obj["model"]["vocab"])
    obj["added_tokens"] = [{"id": n + j, "content": f"<|t{j}|>", "special": True} for j in range(40_000)]
    path = tmp_path / "many.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    tok = within(lambda: load_hf(path), 10)
    assert isinstance(tok, Tokenizer) and len(tok.special_tokens) == 40_000


@pytest.mark.parametrize("loader", ["hf", "vocab", "merges-vocab"])
def test_deeply_nested_json_is_a_format_error(tmp_path: Path, loader: str) -> None:
    """'[' * 100000 raised RecursionError from json.loads."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000, encoding="utf-8")
    other = tmp_path / "m.txt"
    other.write_text("", encoding="utf-8")
    with pytest.raises(FormatError, match=r"deep.json: the JSON is nested too deeply to read"):
        if loader == "hf":
            load_hf(deep)
        else:
            load_gpt2(deep, other)
    nested = tmp_path / "nested.json"  # deep, but inside a valid object
    nested.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(FormatError, match=r"nested.json: the JSON is nested too deeply"):
        load_hf(nested) if loader == "hf" else load_gpt2(nested, other)


def test_a_huge_interop_file_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.truncate(interop.MAX_TEXT_FILE_BYTES + 1)  # sparse
    with pytest.raises(FormatError, match=r"huge.json: larger than 67,108,864 bytes, the most mnemo reads as a tokenizer.json"):
        load_hf(path)


WRONG_TYPES: list[Any] = [5, -1, 1.5, True, None, "x", "", [], [5], {}, {"a": 1}, [[[]]]]


def json_paths(obj: Any, prefix: tuple[Any, ...] = (), depth: int = 4) -> Iterator[tuple[Any, ...]]:
    """Every key path of a parsed JSON value down to `depth`, with only the first few entries
    of each list and of the vocabulary (the structure, not every token)."""
    if depth == 0:
        return
    if isinstance(obj, dict):
        items: list[tuple[Any, Any]] = list(obj.items())
        if prefix[-1:] == ("vocab",):
            items = items[:2] + items[-2:]
        for k, v in items:
            yield (*prefix, k)
            yield from json_paths(v, (*prefix, k), depth - 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:2]):
            yield (*prefix, i)
            yield from json_paths(v, (*prefix, i), depth - 1)


def with_value(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(obj))
    node = copy
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return copy


def test_every_json_value_of_a_wrong_type_is_a_format_error(tmp_path: Path) -> None:
    """The audit of interop's JSON readers: each key of a tokenizer.json (and a vocab.json
    entry), given each wrong type in turn, loads or is a FormatError -- never a TypeError,
    KeyError, AttributeError or the like (`"added_tokens": 5` was a TypeError)."""
    tok = Tokenizer([(97, 98), (256, 99)], pattern="gpt2", special_tokens=["<|x|>"])
    obj = to_hf_json(tok)
    paths = list(json_paths(obj))
    assert ("added_tokens",) in paths and ("model", "merges", 0, 1) in paths
    assert [p for p in paths if p[:2] == ("model", "vocab") and len(p) == 3]
    tried = 0
    for path in paths:
        for value in WRONG_TYPES:
            bad = with_value(obj, path, value)
            target = tmp_path / "t.json"
            target.write_text(json.dumps(bad), encoding="utf-8")
            try:
                load_hf(target)
            except FormatError:
                pass
            tried += 1
    assert tried > 400
    # vocab.json: the whole file, and one entry
    merges = tmp_path / "merges.txt"
    merges.write_text("a b\n", encoding="utf-8")
    vocab = {BYTE_TO_CHAR[b]: b for b in range(256)} | {"ab": 256}
    for bad_vocab in [*WRONG_TYPES, *({**vocab, "ab": v} for v in WRONG_TYPES)]:
        (tmp_path / "v.json").write_text(json.dumps(bad_vocab), encoding="utf-8")
        try:
            load_gpt2(tmp_path / "v.json", merges)
        except FormatError:
            pass
    with pytest.raises(FormatError, match=r"key 'added_tokens' is 5, not a list"):
        from_hf_json(with_value(obj, ("added_tokens",), 5), "t.json")
    twice = with_value(obj, ("added_tokens",), obj["added_tokens"] * 2)
    with pytest.raises(FormatError, match=r"key 'added_tokens\[1\]': the content '<\|x\|>' is listed twice"):
        from_hf_json(twice, "t.json")
