"""Hugging Face tokenizer.json (mnemo/formats/hf.py, docs/interop.md).

Oracle: `tokenizers.Tokenizer.from_file`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo import FormatError, Tokenizer
from mnemo.formats.common import BYTE_TO_CHAR
from mnemo.formats.gpt2 import load_gpt2
from mnemo.formats.hf import from_hf_json, load_hf, save_hf, to_hf_json
from mnemo.pretokenize import PATTERN_REGEX

CORPORA = ["english", "multilingual", "code", "chat"]


def need(module: str) -> Any:
    return pytest.importorskip(module, reason=f"the {module} package is not installed (pip install '.[test]')")


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
        for doc in corpus_docs(name, max_bytes=100_000):
            ids = tok.encode(doc, allowed_special="all")
            assert hf.encode(doc, add_special_tokens=False).ids == ids, f"{name} document {n}"
            assert hf.decode(ids, skip_special_tokens=False) == tok.decode(ids)
            n += 1
    back = load_hf(tmp_path / "tokenizer.json")
    # the same vocabulary and pattern, on the Unicode tables tokenizers runs the file with (so
    # another fingerprint: the two split letters new since Unicode 16 otherwise)
    assert isinstance(back, Tokenizer)
    assert (back.merges, back.special_tokens, back.id_map) == (tok.merges, tok.special_tokens, tok.id_map)
    assert back.split_pattern.steps == tok.split_pattern.steps and back.pattern == tok.pattern
    assert back.split_pattern.unicode == "16.0.0" != tok.split_pattern.unicode


def test_hf_special_tokens(gpt2: Tokenizer, special_fixtures: dict[str, str], tmp_path: Path) -> None:
    tokenizers = need("tokenizers")
    save_hf(gpt2, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for name, text in special_fixtures.items():
        assert hf.encode(text, add_special_tokens=False).ids == gpt2.encode(text, allowed_special="all"), name


def test_hf_gpt2_style_byte_level(gpt2: Tokenizer) -> None:
    """HF's own GPT-2 layout (ByteLevel with its built-in regex, merges as "a b") imports as gpt2,
    on tokenizers' Unicode tables."""
    obj = to_hf_json(gpt2)
    obj["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    obj["model"]["merges"] = [f"{a} {b}" for a, b in obj["model"]["merges"]]
    back = from_hf_json(obj)
    assert isinstance(back, Tokenizer)
    assert (back.merges, back.special_tokens, back.pattern) == (gpt2.merges, gpt2.special_tokens, "gpt2")
    assert back.split_pattern.unicode == "16.0.0"


def test_hf_not_byte_level(gpt2: Tokenizer, tmp_path: Path) -> None:
    obj = to_hf_json(Tokenizer([(97, 98)], pattern="gpt2", special_tokens=[]))
    wordpiece = json.loads(json.dumps(obj))
    wordpiece["model"]["type"] = "WordPiece"
    with pytest.raises(FormatError, match=r"key 'model.type' is 'WordPiece'"):
        from_hf_json(wordpiece, "t.json")
    metaspace = json.loads(json.dumps(obj))
    metaspace["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581"}
    with pytest.raises(FormatError, match=r"t.json: key 'pre_tokenizer' is .*Metaspace.*mnemo imports byte-level BPE"):
        from_hf_json(metaspace, "t.json")
    other_regex = json.loads(json.dumps(obj))
    other_regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\w+"
    with pytest.raises(FormatError, match=r"pretokenizers\[0\].pattern.Regex' is '\\\\w\+': the escape"):
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
    normalized["normalizer"] = {"type": "Lowercase"}
    with pytest.raises(FormatError, match="key 'normalizer' is .*Lowercase.*NFC and NFKC"):
        from_hf_json(normalized, "t.json")


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
    """The audit of the formats' JSON readers: each key of a tokenizer.json (and a vocab.json
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


# ---- exact exports (issue 26 item 6) ------------------------------------------------------------

TIKTOKEN_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "tiktoken"


@pytest.fixture(scope="module")
def pattern_tokenizers(gpt2: Tokenizer, trained: Tokenizer, corpus_docs: Callable[..., list[str]]) -> dict[str, Tokenizer]:
    """A tokenizer of every named pattern: GPT-2's (gpt2), mnemo-trained ones (mnemonic, gpt4),
    OpenAI's cl100k_base and o200k_base from the fixture files."""
    import mnemo

    docs = corpus_docs("english", 300_000) + corpus_docs("code", 200_000)
    out = {"gpt2": gpt2, "mnemonic": trained}
    out["gpt4"] = mnemo.train_from_iterator(iter(docs), vocab_size=1024, pattern="gpt4", workers=1)
    for name in ("cl100k_base", "o200k_base"):
        path = TIKTOKEN_DIR / f"{name}.tiktoken.gz"
        if not path.is_file():
            pytest.skip(f"{path} is absent")
        out[name[:-5]] = mnemo.load_tiktoken(path, name)
    assert sorted(t.pattern for t in out.values()) == sorted(["gpt2", "mnemonic", "gpt4", "cl100k", "o200k"])
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("pattern", ["gpt2", "mnemonic", "gpt4", "cl100k", "o200k"])
def test_every_pattern_exported_gives_mnemos_ids_in_tokenizers(
    pattern: str, pattern_tokenizers: dict[str, Tokenizer], tmp_path: Path, corpus_docs: Callable[..., list[str]]
) -> None:
    """save_hf spells each pattern for Oniguruma (hf_regex.regex_to_onig): the file, loaded by
    tokenizers, gives mnemo's ids on 300 documents of each corpus and on text with the
    specials.  Before, cl100k's `\\p{N}{1,3}+` was written as is and read as a repeated group;
    the test shows that spelling still differs, so it tests the rewrite."""
    tokenizers = need("tokenizers")
    tok = pattern_tokenizers[pattern]
    save_hf(tok, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    specials = list(tok.special_tokens)
    texts = [f"a {specials[0]} b{specials[-1]}\n  12345678 x"]
    for name in CORPORA:
        texts += corpus_docs(name, 2_000_000)[:300]
    for n, text in enumerate(texts):
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text, allowed_special="all"), f"{pattern} text {n}"
    if pattern == "cl100k":
        raw = to_hf_json(tok)
        raw["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = PATTERN_REGEX["cl100k"]
        as_before = tokenizers.Tokenizer.from_str(json.dumps(raw))
        code = corpus_docs("code", 2_000_000)[:300]
        differ = sum(1 for t in code if as_before.encode(t, add_special_tokens=False).ids != tok.encode(t, allowed_special="all"))
        assert differ > 30  # the issue counted 89 of 300
    back = load_hf(tmp_path / "tokenizer.json")
    # a tokenizer.json holds the regex, not its Unicode tables: cl100k and o200k, loaded by name,
    # run on tiktoken's (docs/tiktoken.md) and come back on mnemo's own, the same merges and steps
    assert isinstance(back, Tokenizer) and back.merges == tok.merges and back.id_map == tok.id_map
    assert back.split_pattern.steps == tok.split_pattern.steps
    if tok.split_pattern.unicode == back.split_pattern.unicode:
        assert back.fingerprint == tok.fingerprint


ADDED_ALPHABET = "ab<|>é \U0001f600\ud800"


@settings(max_examples=400, deadline=None)
@given(
    tokens=st.sets(st.text(ADDED_ALPHABET, min_size=1, max_size=4), min_size=1, max_size=8),
    text=st.text(ADDED_ALPHABET, max_size=40),
)
def test_added_token_finder_is_the_longest_first_alternation(tokens: set[str], text: str) -> None:
    """formats/hf_added.py finds added tokens without compiling an alternation of them (40,000
    of them took seconds): the byte trie's matches, mapped back to characters, are exactly the
    alternation's, longest first -- lone surrogates and 4-byte characters included."""
    import regex

    from mnemo.formats.hf_added import AddedToken, _matcher, char_spans

    alternation = regex.compile("|".join(regex.escape(s) for s in sorted(tokens, key=lambda s: (-len(s), s))))
    matcher = _matcher({s: AddedToken(k, s) for k, s in enumerate(sorted(tokens))})
    assert matcher is not None
    assert list(char_spans(matcher, text)) == [m.span() for m in alternation.finditer(text)]
