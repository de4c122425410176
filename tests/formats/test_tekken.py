"""Mistral's tekken JSON (mnemo/formats/tekken.py): ids as mistral-common's Tekkenizer gives them.

The oracle is mistral-common itself (a test dependency), which also ships two real tekken files
in its package data (tekken_240718.json, tekken_240911.json: Mistral NeMo's, 150,000 ranks of
which 130,072 are used, 1,000 special ids, version v3) and Mistral's older SentencePiece models.
The other files are built here as Mistral's are: byte ranks in byte order, then o200k's tokens
in o200k's order (or a vocabulary that has tokens no merge makes), special tokens as
mistral-common names them for versions v7 to v15, with <SPECIAL_j> fillers.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mnemo
from mnemo import FormatError, Tokenizer
from mnemo.formats.common import is_sentencepiece
from mnemo.formats.tekken import DEFAULT_SPECIALS, from_tekken_json, is_tekken, load_tekken
from mnemo.formats.tiktoken import load_tiktoken
from mnemo.pretokenize import PATTERN_REGEX

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
CORPORA = ("english", "multilingual", "code", "chat")
#: Mistral's split regex, as its tekken files give it
TEKKEN_REGEX = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
HARD = [
    "", "Hello world", "DON'T I'm they're", "12345 67 8.9", "x!/\n/y a/b //x", "line\r\n\r\n\tindented\n",
    "é\u0301t\u00e9 CamelCase HTTPServer", "日本語のテキスト 中文", "\U0001f600" * 20, "   " * 30, "a" * 3000,
    "<s>[INST] plain text [/INST]</s>", "<SPECIAL_30> [IMG]", "\u00a0\u3000word\u2028",
]  # fmt: skip


def need(module: str) -> Any:
    return pytest.importorskip(module, reason=f"the {module} package is not installed (pip install '.[test]')")


def tekkenizer() -> Any:
    return need("mistral_common.tokens.tokenizers.tekken").Tekkenizer


def mistral_data(name: str) -> Path:
    """A file of mistral-common's package data (its own tekken and SentencePiece files)."""
    need("mistral_common")
    from importlib.resources import files

    path = Path(str(files("mistral_common") / "data" / name))
    if not path.is_file():
        pytest.skip(f"{path} is not in this mistral-common's package data")
    return path


# ---- building tekken files as Mistral's are ----


@pytest.fixture(scope="session")
def o200k_tokens() -> list[bytes]:
    """The 256 bytes in byte order, then o200k_base's multi-byte tokens in its order."""
    path = FIXTURES / "tiktoken" / "o200k_base.tiktoken.gz"
    if not path.is_file():
        pytest.skip(f"fixture {path} is absent (../shared/fixtures beside the repo)")
    by_rank: dict[int, bytes] = {}
    for line in gzip.decompress(path.read_bytes()).splitlines():
        token, rank = line.split(b" ")
        by_rank[int(rank)] = base64.b64decode(token)
    return [bytes([b]) for b in range(256)] + [by_rank[r] for r in sorted(by_rank) if len(by_rank[r]) > 1]


def mistral_specials(version: int) -> list[dict[str, Any]]:
    """Special tokens as mistral-common lists them for a version (its tests' layout): the twenty
    old names, fillers, [ARGS]/[CALL_ID] from v11, [THINK] from v13, model settings from v15."""
    names: dict[int, str] = dict(enumerate(DEFAULT_SPECIALS))
    if version >= 11:
        names |= {32: "[ARGS]", 33: "[CALL_ID]"}
    if version >= 13:
        names |= {35: "[THINK]", 36: "[/THINK]"}
    if version >= 15:
        names |= {37: "[MODEL_SETTINGS]", 38: "[/MODEL_SETTINGS]"}
    top = max(names) + 1
    return [{"rank": j, "token_str": names.get(j, f"<SPECIAL_{j}>"), "is_control": True} for j in range(top)]


def tekken_json(
    tokens: list[bytes],
    *,
    pattern: str = TEKKEN_REGEX,
    version: int = 7,
    n_special: int = 100,
    used: int | None = None,
    specials: bool = True,
) -> dict[str, Any]:
    """A tekken file's JSON: `tokens` as the vocab, the first `used` of them in use."""
    used = len(tokens) if used is None else used
    vocab = [{"rank": i, "token_bytes": base64.b64encode(t).decode(), "token_str": t.decode("utf-8", "replace")} for i, t in enumerate(tokens)]
    config = {
        "pattern": pattern,
        "num_vocab_tokens": len(tokens),
        "default_vocab_size": used + n_special,
        "default_num_special_tokens": n_special,
        "version": f"v{version}",
    }
    obj: dict[str, Any] = {"config": config, "vocab": vocab, "version": 1, "type": "Tekken"}
    if specials:
        obj["special_tokens"] = mistral_specials(version)
    return obj


def write(path: Path, obj: dict[str, Any]) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def compare(tok: Tokenizer, ref: Any, texts: list[str], where: str) -> None:
    """Tekkenizer.encode(text, bos, eos) is [bos] + encode_ordinary(text) + [eos]; decoding agrees."""
    bos, eos = tok.special_tokens["<s>"], tok.special_tokens["</s>"]
    assert (bos, eos) == (ref.bos_id, ref.eos_id)
    for k, text in enumerate(texts):
        ids = tok.encode_ordinary(text)
        assert ids == ref.encode(text, bos=False, eos=False), f"{where} text {k}: {text[:60]!r}"
        assert [bos, *ids, eos] == ref.encode(text, bos=True, eos=True)
        assert tok.decode(ids) == ref.decode(ids) == text


def check_specials(tok: Tokenizer, ref: Any) -> None:
    names = [t["token_str"] for t in ref._all_special_tokens]
    assert tok.special_tokens == {name: j for j, name in enumerate(names)}
    assert tok.n_vocab == ref.n_words
    assert all(ref.get_special_token(name) == i for name, i in tok.special_tokens.items())


# ---- the real files mistral-common ships ----


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["tekken_240718.json", "tekken_240911.json"])
def test_real_tekken_files_equal_tekkenizer(name: str, corpus_docs: Callable[..., list[str]], full_corpus: bool) -> None:
    """Mistral NeMo's files: 131,072 ids (1,000 special, then 130,072 of the 150,000 ranks), the
    file's own pattern, mistral-common's ids on the corpora and the hard texts."""
    path = mistral_data(name)
    ref = tekkenizer().from_file(path)
    tok = load_tekken(path)
    assert tok.name == name.removesuffix(".json") and tok.n_vocab == 131_072
    loaded = mnemo.load(path)  # the one loader recognises it by its content
    assert isinstance(loaded, Tokenizer) and loaded.fingerprint == tok.fingerprint and loaded.name == tok.name
    check_specials(tok, ref)
    assert tok.token_bytes(1000) == b"\x00" and tok.token_bytes(131_071) == ref.id_to_byte_piece(131_071)
    compare(tok, ref, HARD, name)
    total = 0
    for corpus in CORPORA:
        docs = corpus_docs(corpus, max_bytes=300_000)
        compare(tok, ref, docs, f"{name} {corpus}")
        total += len(docs)
    if full_corpus:
        print(f"\n{name}: {total} documents identical to mistral-common's Tekkenizer")


# ---- files built as Mistral's are ----


@pytest.mark.parametrize("version", [3, 7, 11, 13, 15])
@pytest.mark.parametrize("pattern", ["tekken", "o200k"])
def test_built_files_equal_tekkenizer(
    tmp_path: Path, o200k_tokens: list[bytes], corpus_docs: Callable[..., list[str]], version: int, pattern: str
) -> None:
    """Each version's special tokens (v3 lists none: the twenty default names and fillers), a
    vocabulary cut at default_vocab_size (the file lists 5,000 more ranks than it uses), and
    tekken's regex or o200k's."""
    regex = TEKKEN_REGEX if pattern == "tekken" else PATTERN_REGEX["o200k"]
    obj = tekken_json(o200k_tokens[:25_000], pattern=regex, version=version, n_special=120, used=20_000, specials=version > 3)
    path = write(tmp_path / f"tekken_v{version}.json", obj)
    ref = tekkenizer().from_file(path)
    tok = load_tekken(path)
    assert tok.name == f"tekken_v{version}" and tok.n_vocab == 20_120
    check_specials(tok, ref)
    texts = HARD + [d for c in CORPORA for d in corpus_docs(c, max_bytes=40_000)]
    compare(tok, ref, texts, path.name)


@pytest.mark.parametrize("pattern", ["tekken", "o200k"])
def test_tokens_no_merge_makes(tmp_path: Path, o200k_tokens: list[bytes], pattern: str) -> None:
    """A tekken vocabulary may hold tokens that no merge of two lower ranks makes (Tekkenizer is
    tiktoken: a pre-token that is a token is that token): here ' Mistral', 'tekkenizer' and
    '9999' without their halves, ranked early."""
    whole = [b" Mistral", b"tekkenizer", b"9999"]
    kept = [t for t in o200k_tokens[:8000] if not any(t in w and len(t) > 1 for w in whole)]
    tokens = kept[:300] + whole + kept[300:]
    regex = TEKKEN_REGEX if pattern == "tekken" else PATTERN_REGEX["o200k"]
    path = write(tmp_path / "tekken_whole.json", tekken_json(tokens, pattern=regex, version=7))
    ref = tekkenizer().from_file(path)
    tok = load_tekken(path)
    texts = ["Hello Mistral, tekkenizer 9999 and  Mistral's tekkenizers.", " Mistral", "tekkenizer"] + HARD
    compare(tok, ref, texts, path.name)
    assert tok.encode_ordinary(" Mistral") == [100 + tokens.index(b" Mistral")]
    assert tok.ranked and set(whole) <= set(tok.whole_tokens)  # kept whole: no merge makes them


def test_is_tekken_and_from_tekken_json(tmp_path: Path, o200k_tokens: list[bytes]) -> None:
    obj = tekken_json(o200k_tokens[:1000], pattern=PATTERN_REGEX["o200k"], n_special=40)
    assert is_tekken(obj)
    assert not is_tekken({"model": {"type": "BPE", "vocab": {}, "merges": []}, "version": "1.0"})  # tokenizer.json
    assert not is_tekken([obj]) and not is_tekken({"config": {}, "vocab": []})
    tok = from_tekken_json(obj, "mine")
    assert tok.n_vocab == 1040 and tok.name.startswith("mnemo-") and tok.special_tokens["[INST]"] == 3


# ---- what is refused, and how ----


def test_sentencepiece_models_are_named(tmp_path: Path) -> None:
    """Mistral's older tokenizer.model (SentencePiece) given as tekken or as tiktoken ranks."""
    for name in ("tokenizer.model.v1", "mistral_instruct_tokenizer_240323.model.v3"):
        path = mistral_data(name)
        assert is_sentencepiece(path.read_bytes())
        with pytest.raises(FormatError, match=r"this is a SentencePiece model \(a protobuf \.model file\), not a tekken JSON file"):
            load_tekken(path)
        with pytest.raises(FormatError, match=r"SentencePiece model .*not a \.tiktoken rank file.*`sentencepiece` package"):
            load_tiktoken(path, "cl100k")


def test_sentencepiece_sniff_by_hand() -> None:
    """The protobuf layout the sniff reads, built byte by byte: field 1 (a piece message: field 1
    the piece, field 2 its float score, field 3 its type), and what it must not take."""
    piece = b"\x0a\x05<unk>" + b"\x15\x00\x00\x00\x00" + b"\x18\x02"
    model = b"\x0a" + bytes([len(piece)]) + piece + b"\x0a\x0c\x0a\x03<s>\x15\x00\x00\x00\x00\x18\x03"
    assert is_sentencepiece(model)
    assert is_sentencepiece(b"\x0a\x09\x0a\x02ab\x15\x00\x00\x80\xbf")  # no type field
    for other in (b"", b"{\"config\": {}}", b"\x1f\x8b\x08", b"IQ== 0\nIg== 1\n", model[:10], b"\x0a\x0e\x0a\x05\xff\xfe<k>" + piece[7:]):
        assert not is_sentencepiece(other), other


def test_malformed_files_name_the_field(tmp_path: Path, o200k_tokens: list[bytes]) -> None:
    good = tekken_json(o200k_tokens[:600], pattern=PATTERN_REGEX["o200k"], version=7, n_special=40)
    cases: list[tuple[Callable[[dict[str, Any]], object], str]] = [
        (lambda o: o["vocab"][300].update(rank=301), r"vocab\[300\] has rank 301, not 300"),
        (lambda o: o["vocab"][300].update(token_bytes="**"), r"vocab\[300\]: token_bytes \"\*\*\" is not valid base64"),
        (lambda o: o["vocab"][300].update(extra=1), r"vocab\[300\] is .*expected \{\"rank\", \"token_bytes\", \"token_str\"\}"),
        (lambda o: o["vocab"][5].update(token_bytes="Bg=="), r"vocab\[5\] is b'\\x06': ranks 0-255 are the bytes"),
        (lambda o: o["vocab"][400].update(token_bytes=o["vocab"][300]["token_bytes"]), r"vocab\[400\] is .* again \(first vocab\[300\]\)"),
        (lambda o: o["config"].update(default_vocab_size=700), r"default_vocab_size = 700 with 40 special tokens leaves 660 ranks: it needs 256 to 600"),
        (lambda o: o["config"].update(default_vocab_size=100), r"leaves 60 ranks"),
        (lambda o: o["config"].update(version="seven"), r"config.version is \"seven\", not a version"),
        (lambda o: o["config"].update(default_num_special_tokens=-1), r"config.default_num_special_tokens is -1"),
        (lambda o: o["config"].pop("pattern"), r"config.pattern is null, not a regex"),
        (lambda o: (o.pop("special_tokens"), o["config"].update(version="v11")), r"a version-11 tekken file must list its special_tokens"),
        (lambda o: o["special_tokens"][3].update(rank=4), r"special_tokens\[3\] \('\[INST\]'\) has rank 4, not 3"),
        (lambda o: o["special_tokens"][5].update(token_str="<s>"), r"special token '<s>' is id 1 and id 5"),
        (lambda o: o["config"].update(default_num_special_tokens=10, default_vocab_size=610), r"20 special tokens, more than config.default_num_special_tokens = 10"),
        (lambda o: o.pop("vocab"), r"no \"vocab\" list: not a tekken file"),
    ]  # fmt: skip
    for k, (edit, message) in enumerate(cases):
        obj = copy.deepcopy(good)
        edit(obj)
        with pytest.raises(FormatError, match=message):
            load_tekken(write(tmp_path / f"bad{k}.json", obj))
    (tmp_path / "cut.json").write_text(json.dumps(good)[:5000], encoding="utf-8")
    with pytest.raises(FormatError, match=r"cut.json: line 1 column \d+: not valid JSON"):
        load_tekken(tmp_path / "cut.json")
