"""tokenizer.json files converted from rank files by transformers' TikTokenConverter (its
converter for tiktoken files such as Llama 3's): ignore_merges, the BPE tokens' ids their ranks, and model.merges listing, by rank,
every pair of tokens that spells a token (several per token).  mnemo reads them by tiktoken's
rule on the ranks (formats/hf_pipeline.py, `_converted_from_ranks`) and gives `tokenizers`' ids;
such a file with a token's pair left out is read the other way, which refuses it by name.

The files are made here, offline, with transformers' own converter, from cl100k_base and from
the Llama-3-like ranks (cl100k's, then o200k's other tokens up to 128,000: a ranked vocabulary,
with tokens no merge makes and merges whose parts rank after their token)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mnemo
from mnemo import FormatError, Tokenizer
from mnemo.formats.common import token_bytes

#: Llama 3's split regex, as its tokenizer.json and the converter's default spell it
LLAMA3_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
HARD = [
    "", " ", "   \n\n  \t", "Hello world! It's 2026: naïve café, 数据 ünïcödé, <tags> and    spaces\n\tdone 12345.",
    "I'LL SEE YOU'RE THERE, we'd've", "1234567890 3.14159 ١٢٣", "\U0001f600\U0001f600 emoji \u200d",
    "ａｂｃ 日本語のテキスト 中文 한국어", "x" * 300, ".:.:.:.:" * 20, "<|begin_of_text|> is text here",
]


@pytest.fixture(scope="module", params=["cl100k_base", "llama3_like"])
def converted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tiktoken_ranks: Callable[[str], dict[bytes, int]]
) -> tuple[Path, Any]:
    """(the converted tokenizer.json, tokenizers' Tokenizer of it)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install '.[test]')")
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed (pip install '.[test]')")
    from transformers.convert_slow_tokenizer import TikTokenConverter

    folder = tmp_path_factory.mktemp(request.param)
    plain = folder / "tokenizer.model"
    ranks = tiktoken_ranks(request.param)
    plain.write_bytes(b"".join(base64.b64encode(raw) + b" %d\n" % r for raw, r in sorted(ranks.items(), key=lambda x: x[1])))
    path = folder / "tokenizer.json"
    TikTokenConverter(vocab_file=str(plain), pattern=LLAMA3_REGEX, extra_special_tokens=SPECIALS).converted().save(str(path))
    return path, tokenizers.Tokenizer.from_file(str(path))


def test_the_file_is_the_converted_kind(converted: tuple[Path, Any]) -> None:
    model = json.loads(converted[0].read_text(encoding="utf-8"))["model"]
    assert model["ignore_merges"] is True
    assert len(model["merges"]) > 2 * len(model["vocab"])  # several pairs a token


def test_converted_files_give_tokenizers_ids(converted: tuple[Path, Any], corpus_docs: Callable[..., list[str]]) -> None:
    path, ref = converted
    tok = mnemo.load(path)
    # the core from ranks does the whole-pre-token lookup of ignore_merges itself, so the file
    # needs no HFTokenizer around it: a plain Tokenizer (it saves as tokenizer.bin, `mnemo
    # tokenize` takes it), whose encode is the compiled encoder's
    assert isinstance(tok, Tokenizer)
    assert tok.n_vocab == ref.get_vocab_size()
    texts = [*HARD, *(doc for name in ("english", "multilingual", "code", "chat") for doc in corpus_docs(name, 300_000))]
    for k, text in enumerate(texts):
        assert tok.encode(text, allowed_special="all") == ref.encode(text, add_special_tokens=False).ids, f"text {k}: {text[:60]!r}"


def test_a_converted_file_saves_as_tokenizer_bin(converted: tuple[Path, Any], tmp_path: Path) -> None:
    path, ref = converted
    tok = mnemo.load(path)
    assert isinstance(tok, Tokenizer)
    tok.save(tmp_path / "tokenizer.bin")
    again = Tokenizer.load(tmp_path / "tokenizer.bin")
    assert again == tok
    text = HARD[3]
    assert again.encode(text) == ref.encode(text, add_special_tokens=False).ids


def test_every_token_alone_and_in_context(converted: tuple[Path, Any]) -> None:
    """Every 7th token's text alone, and between two words: the whole-token rule and the BPE
    around it (tokens that are not UTF-8 alone are left to the corpus test)."""
    path, ref = converted
    tok = mnemo.load(path)
    vocab = ref.get_vocab()
    for text in sorted(vocab)[::7]:
        raw = token_bytes(text)
        if raw is None:
            continue  # an added token's text
        try:
            word = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for sample in (word, f"a{word} b", f"{word}{word}"):
            assert tok.encode(sample, allowed_special="all") == ref.encode(sample, add_special_tokens=False).ids, repr(sample)


def test_a_token_whose_pair_is_left_out_is_refused(converted: tuple[Path, Any], tmp_path: Path) -> None:
    """Take out every listed pair of one token: tokenizers can then produce it only whole, where
    tiktoken's rule would glue it, so the rank path must not take the file; the other way refuses
    it, naming model.merges."""
    path, _ = converted
    obj = json.loads(path.read_text(encoding="utf-8"))
    merges = obj["model"]["merges"]
    target = "".join(merges[5000]) if isinstance(merges[5000], list) else merges[5000].replace(" ", "")
    obj["model"]["merges"] = [m for m in merges if ("".join(m) if isinstance(m, list) else m.replace(" ", "")) != target]
    broken = tmp_path / "tokenizer.json"
    broken.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(FormatError, match=r"model\.merges"):
        mnemo.load(broken)


@pytest.mark.parametrize("missing", ["left", "right"])
def test_an_item_whose_part_is_no_key_is_refused(converted: tuple[Path, Any], tmp_path: Path, missing: str) -> None:
    """An item listed beside a token's own pair whose two parts spell the token but one part is
    not a key: the rank path looks the parts of such items up (listed_pairs), and the file is
    refused by name, not read as if the item were a merge."""
    path, _ = converted
    obj = json.loads(path.read_text(encoding="utf-8"))
    vocab, merges = obj["model"]["vocab"], obj["model"]["merges"]
    as_pair = [m if isinstance(m, list) else m.split(" ") for m in merges]
    for at in range(3000, len(as_pair)):
        key = "".join(as_pair[at])
        cuts = [k for k in range(1, len(key)) if (key[:k] not in vocab) == (missing == "left") and (key[k:] not in vocab) == (missing == "right")]
        if cuts:
            break
    else:
        pytest.fail("no token with such a split")
    item = [key[: cuts[0]], key[cuts[0] :]]
    merges.insert(at + 1, item if isinstance(merges[at], list) else " ".join(item))
    broken = tmp_path / "tokenizer.json"
    broken.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(FormatError, match=r"model\.merges"):
        mnemo.load(broken)


def read_converted(path: Path) -> tuple[Any, Any, list[bytes]]:
    """(the scanned file, its PlainModel, ranked_tokens' bytes of each key by id)."""
    from mnemo.formats.hf_file import ALPHABET, read_json_file
    from mnemo.tokenizer_json import ranked_tokens

    _, scanned = read_json_file(path, "tokenizer.json")
    assert scanned is not None
    model = scanned.read(True, [])
    assert model is not None
    tokens = ranked_tokens(model, ALPHABET)
    assert tokens is not None
    return scanned, model, tokens


def test_each_tokens_pair_is_found_among_its_listed_items(converted: tuple[Path, Any]) -> None:
    """The converted files are read by finding each token's pair among the items that spell it
    (tokenizer_json.converted_vocab, ranks.PairSplits), not by merging every token's bytes: the
    same vocabulary as merges_of_ranks, and the file passes listed_pairs' checks."""
    from mnemo.ranks import merges_of_ranks
    from mnemo.tokenizer_json import converted_vocab, listed_pairs

    scanned, model, tokens = read_converted(converted[0])
    found, derived = converted_vocab(model, scanned.data, scanned._spans, tokens), merges_of_ranks(tokens)
    assert found is not None and derived is not None
    for field in ("merges", "public", "proper", "whole", "ranked", "spelled", "tables"):
        assert getattr(found, field) == getattr(derived, field), field
    assert listed_pairs(model, scanned.data, scanned._spans, derived.merges, derived.public)


def test_substring_ranks_from_the_files_keys(converted: tuple[Path, Any]) -> None:
    """converted_vocab merges the bytes of the tokens it cannot settle from their pairs over the
    ranks of their substrings found among the file's keys (tokenizer_json.KeyRanks), not over a
    table of every token: the same ranks as a dict of the tokens gives, for tokens of every
    length below LONG_TOKEN (the longer ones use the table)."""
    from librt.vecs import vec
    from mypy_extensions import i64

    from mnemo.ranks import LONG_TOKEN, NONE, SubstringRanks
    from mnemo.tokenizer_json import KeyRanks

    _, model, tokens = read_converted(converted[0])
    keys, reference = KeyRanks(model), SubstringRanks(tokens)
    first_of_length: dict[int, int] = {}
    for r, raw in enumerate(tokens):
        first_of_length.setdefault(len(raw), r)
    ranks = sorted(set(range(0, len(tokens), 997)) | {r for n, r in first_of_length.items() if 2 <= n < LONG_TOKEN})
    found = 0
    for r in ranks:
        raw = tokens[r]
        span = len(raw) + 1
        ours, theirs = vec[i64]([NONE] * (span * span)), vec[i64]([NONE] * (span * span))
        assert keys.fill(r, raw, ours, span) and reference.fill(r, raw, theirs, span)
        assert list(ours) == list(theirs), r
        found += sum(1 for x in ours if x != NONE)
    assert found > 1_000, found
    assert not keys.fill(r, raw + b"x", vec[i64]([NONE] * ((span + 1) ** 2)), span + 1)  # not the key's bytes
