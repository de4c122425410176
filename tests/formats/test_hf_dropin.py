"""transformers encoding through mnemo (issue 26 item 8; mnemo/hf.py).

Each family's tokenizer.json (conftest.hf_families, built by `tokenizers`) goes into a
transformers folder with a tokenizer_config.json; `AutoTokenizer.from_pretrained` loads it
twice, once as transformers does and once after `mnemo.hf.patch_transformers()`.  Every output
transformers gives -- input_ids, attention_mask, token_type_ids, offsets, special-tokens mask,
word ids, overflowing windows with their sample mapping -- must be equal, batch by batch, with
padding (right, left, to a length, to a multiple), truncation (each strategy, stride), pairs,
pre-tokenized words and chat templates; and the patched one must have used mnemo.  Nothing is
fetched from the hub.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

FAMILIES = ("llama3", "qwen2", "deepseek-v3", "starcoder2")
CORPORA = ("english", "multilingual", "code", "chat")
CHAT_TEMPLATE = (
    "{%- for m in messages -%}{{- bos_token + m['role'] + '\\n' + m['content'] + eos_token -}}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- bos_token + 'assistant\\n' -}}{%- endif -%}"
)


def transformers_module() -> Any:
    return pytest.importorskip("transformers", reason="transformers is not installed (pip install '.[test]')")


def make_folder(tokenizer_json: Path, folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(tokenizer_json, folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def family_folder(family: str, path: Path, tmp: Path) -> Path:
    obj = json.loads(path.read_text(encoding="utf-8"))
    specials = [t["content"] for t in obj["added_tokens"] if t["special"]]
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": specials[0],
        "eos_token": specials[1],
        "pad_token": specials[-1],
        "model_max_length": 128,
        "chat_template": CHAT_TEMPLATE,
    }
    if family == "qwen2":
        config["add_bos_token"] = True  # transformers replaces the post-processor with a bos template
    return make_folder(path, tmp / family, config)


@pytest.fixture
def patched() -> Iterator[Any]:
    import mnemo.hf

    transformers_module()
    mnemo.hf.patch_transformers()
    try:
        yield mnemo.hf
    finally:
        mnemo.hf.unpatch_transformers()


def both(folder: Path, patched: Any) -> tuple[Any, Any]:
    """(transformers' own tokenizer, the one encoding through mnemo) of one folder."""
    transformers = transformers_module()
    patched.unpatch_transformers()
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    patched.patch_transformers()
    ours = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    assert isinstance(ours.backend_tokenizer, patched.MnemoBackend)
    assert not isinstance(theirs.backend_tokenizer, patched.MnemoBackend)
    return theirs, ours


def same(a: Any, b: Any, what: str) -> None:
    """Two BatchEncodings: every key, and each row's word ids and tokens."""
    assert set(a.keys()) == set(b.keys()), what
    for key in a.keys():
        assert a[key] == b[key], f"{what}: {key}"
    rows = len(a["input_ids"]) if a["input_ids"] and isinstance(a["input_ids"][0], list) else 1
    for i in range(rows):
        assert a.word_ids(i) == b.word_ids(i), f"{what}: word ids of row {i}"
        assert a.tokens(i) == b.tokens(i), f"{what}: tokens of row {i}"
        assert a.sequence_ids(i) == b.sequence_ids(i), f"{what}: sequence ids of row {i}"


CALLS: list[dict[str, Any]] = [
    {},
    {"add_special_tokens": False},
    {"padding": True},
    {"padding": True, "padding_side": "left", "pad_to_multiple_of": 8},
    {"padding": "max_length", "max_length": 96, "truncation": True},
    {"truncation": True, "max_length": 24, "stride": 5, "return_overflowing_tokens": True, "padding": True},
    {"truncation": "only_first", "max_length": 40},
    {"split_special_tokens": True},
]
OUTPUTS = {"return_offsets_mapping": True, "return_special_tokens_mask": True, "return_attention_mask": True, "return_token_type_ids": True}


@pytest.mark.corpus
@pytest.mark.parametrize("family", FAMILIES)
def test_autotokenizer_through_mnemo_equals_transformers(
    family: str,
    hf_families: dict[str, Path],
    corpus_docs: Callable[..., list[str]],
    tmp_path: Path,
    patched: Any,
    hard_cases: Callable[[list[str]], list[str]],
) -> None:
    path = hf_families[family]
    theirs, ours = both(family_folder(family, path, tmp_path), patched)
    obj = json.loads(path.read_text(encoding="utf-8"))
    texts = hard_cases([t["content"] for t in obj["added_tokens"] if t["special"]])
    docs = [d for name in CORPORA for d in corpus_docs(name, 2_000_000)[:100]]
    # every call on the hard cases and 25 documents of each corpus; on all 400 documents, the
    # batched, padded call with every output
    every = texts + [d for k in range(4) for d in docs[100 * k : 100 * k + 25]]
    for start in range(0, len(every), 50):
        batch = every[start : start + 50]
        for call in CALLS:
            same(theirs(batch, **call, **OUTPUTS), ours(batch, **call, **OUTPUTS), f"{family} texts {start}.. {call}")
    for start in range(0, len(docs), 50):
        batch = docs[start : start + 50]
        same(theirs(batch, padding=True, **OUTPUTS), ours(batch, padding=True, **OUTPUTS), f"{family} documents {start}..")
    texts += docs
    assert ours.backend_tokenizer.engine == "mnemo" and ours.backend_tokenizer.fallback_reason is None
    pairs_a, pairs_b = texts[:20], texts[20:40]
    for call in (
        {"padding": True},
        {"truncation": "longest_first", "max_length": 30, "padding": True},
        {"truncation": "only_second", "max_length": 60},
    ):
        try:
            expected = theirs(pairs_a, pairs_b, **call, **OUTPUTS)
        except Exception as exc:  # tokenizers' own error (a sequence too short to truncate): mnemo's must come too
            with pytest.raises(Exception, match="too short"):
                ours(pairs_a, pairs_b, **call, **OUTPUTS)
            assert "too short" in str(exc)
            continue
        same(expected, ours(pairs_a, pairs_b, **call, **OUTPUTS), f"{family} pairs {call}")
    # the overflowing windows of pairs (tokenizers' merge_with crosses each side's windows with
    # the other side): short texts beside whole documents, so that every window has room
    shorts = [t for t in texts[:40] if 0 < len(theirs(t, add_special_tokens=False)["input_ids"]) < 12][:6]
    longs = docs[: len(shorts)]
    for a, b, call in (
        (shorts, longs, {"truncation": "only_second", "max_length": 64, "stride": 7}),
        (longs, shorts, {"truncation": "only_first", "max_length": 48, "stride": 3, "padding": True}),
    ):
        got = ours(a, b, return_overflowing_tokens=True, **call, **OUTPUTS)
        same(theirs(a, b, return_overflowing_tokens=True, **call, **OUTPUTS), got, f"{family} overflowing pairs {call}")
        assert len(got["input_ids"]) > 2 * len(shorts), "the documents make several windows each"
    words = [t.split() for t in texts[:20] if t.split()]
    same(
        theirs(words, is_split_into_words=True, padding=True, **OUTPUTS),
        ours(words, is_split_into_words=True, padding=True, **OUTPUTS),
        f"{family} words",
    )
    one = texts[30]
    assert theirs.encode(one) == ours.encode(one)
    assert theirs.tokenize(one) == ours.tokenize(one)
    same(theirs(one, **OUTPUTS), ours(one, **OUTPUTS), f"{family} one text")
    enc_a, enc_b = theirs(one), ours(one)
    for k in range(0, len(one), 7):
        assert enc_a.char_to_token(k) == enc_b.char_to_token(k) and enc_a.char_to_word(k) == enc_b.char_to_word(k)
    chat = [{"role": "user", "content": texts[31]}, {"role": "assistant", "content": texts[32]}]
    assert theirs.apply_chat_template(chat, tokenize=True, add_generation_prompt=True) == ours.apply_chat_template(
        chat, tokenize=True, add_generation_prompt=True
    )
    assert ours.backend_tokenizer.engine == "mnemo"


def test_a_tokenizer_mnemo_does_not_hold_keeps_tokenizers_and_says_why(
    hf_families: dict[str, Path], tmp_path: Path, patched: Any
) -> None:
    obj = json.loads(hf_families["starcoder2"].read_text(encoding="utf-8"))
    obj["normalizer"] = {"type": "Lowercase"}
    (tmp_path / "lower.json").write_text(json.dumps(obj), encoding="utf-8")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<|endoftext|>"}
    folder = make_folder(tmp_path / "lower.json", tmp_path / "lower", config)
    theirs, ours = both(folder, patched)
    texts = ["Hello World", "MiXeD CaSe 123 <|endoftext|>"]
    with pytest.warns(patched.MnemoFallbackWarning, match=r"key 'normalizer' is .*Lowercase"):
        got = ours(texts, padding=True, return_offsets_mapping=True)
    same(theirs(texts, padding=True, return_offsets_mapping=True), got, "fallback")
    assert ours.backend_tokenizer.engine == "tokenizers"
    assert "normalizer" in (ours.backend_tokenizer.fallback_reason or "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once, not on every call
        ours(texts)


def test_changes_after_loading_are_seen(hf_families: dict[str, Path], tmp_path: Path, patched: Any) -> None:
    """Tokens added, and a template set, after loading: the next encode reads them."""
    transformers = transformers_module()
    folder = family_folder("starcoder2", hf_families["starcoder2"], tmp_path)
    theirs, ours = both(folder, patched)
    for tok in (theirs, ours):
        tok.add_tokens(["<new_token>", transformers.AddedToken(" lstripped", lstrip=True)])
        tok.add_special_tokens({"additional_special_tokens": ["<|extra|>"]})
    text = "a <new_token> b  lstripped <|extra|>c"
    same(theirs(text, return_offsets_mapping=True), ours(text, return_offsets_mapping=True), "after add_tokens")
    assert ours.backend_tokenizer.engine == "mnemo"
    theirs.add_bos_token = True
    ours.add_bos_token = True
    same(theirs(text), ours(text), "after add_bos_token")


def test_the_backend_pickles_and_copies(hf_families: dict[str, Path], tmp_path: Path, patched: Any) -> None:
    import copy

    folder = family_folder("llama3", hf_families["llama3"], tmp_path)
    theirs, ours = both(folder, patched)
    text = "Hello <|begin_of_text|> pickled world"
    for other in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
        assert isinstance(other.backend_tokenizer, patched.MnemoBackend)
        assert other(text)["input_ids"] == theirs(text)["input_ids"]


def test_use_mnemo_on_a_loaded_tokenizer_and_a_lone_surrogate(hf_families: dict[str, Path], tmp_path: Path) -> None:
    import mnemo.hf

    transformers = transformers_module()
    folder = family_folder("deepseek-v3", hf_families["deepseek-v3"], tmp_path)
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    ours = mnemo.hf.use_mnemo(transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True))
    assert isinstance(ours.backend_tokenizer, mnemo.hf.MnemoBackend)
    assert ours("\u65e5\u672c 12345 x")["input_ids"] == theirs("\u65e5\u672c 12345 x")["input_ids"]
    with pytest.raises(Exception) as theirs_error:
        theirs("a\ud800b")
    with pytest.raises(type(theirs_error.value)):
        ours("a\ud800b")
