"""`mnemo tokenize`, `tokshow --chat` and `pretrain` with a tokenizer.json pipeline that a plain
Tokenizer cannot hold (an HFTokenizer: docs/interop.md, "Datasets").

The four family files (conftest.hf_families: Llama 3, Qwen2, DeepSeek-V3 and StarCoder2 style,
each with added tokens that lstrip, rstrip, are not special, normalized...) are given to the
command line as a user gives them, and the .tok read back must hold, document after document,
`tokenizers`' ids of each document -- `encode(text, add_special_tokens=False)` with
`encode_special_tokens=True`: a dataset's special-token text is text, as on mnemo's plain path --
between the separators tokenize chose: the template's BOS where the file has one (Llama 3,
DeepSeek-V3), else `<|endoftext|>` after each document (Qwen2, StarCoder2).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mnemo
from mnemo import HFTokenizer, open_tok
from mnemo.cli import main
from mnemo.errors import ConfigError, FingerprintError
from mnemo.workers import worker_context

FAMILIES = ("llama3", "qwen2", "deepseek-v3", "starcoder2")
#: (bos, eos) tokenize puts around each document by default, by family
SEPARATORS = {
    "llama3": ("<|begin_of_text|>", None),
    "qwen2": (None, "<|endoftext|>"),
    "deepseek-v3": ("<\uff5cbegin\u2581of\u2581sentence\uff5c>", None),
    "starcoder2": (None, "<|endoftext|>"),
}


def oracle(path: Path) -> Any:
    """tokenizers' own Tokenizer of the file, reading special-token text as text."""
    tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is not installed (pip install '.[test]')")
    hf = tokenizers.Tokenizer.from_file(str(path))
    hf.encode_special_tokens = True
    return hf


def refused(capsys: pytest.CaptureFixture[str], args: list[str], message: str, output: Path) -> None:
    """The command fails with `message` on stderr and leaves no `output`."""
    assert main(args) != 0
    assert message in capsys.readouterr().err
    assert not output.exists()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, corpus_docs: Callable[..., list[str]]) -> tuple[Path, list[str]]:
    """A JSON Lines file of ~500 documents of the four corpora (~750 KB; a chat message is a
    document), and hard cases where the
    parts of the pipelines meet: special and added tokens' text, NFC, digits, CJK, an empty
    document."""
    docs = [d for name in ("english", "code", "multilingual", "chat") for d in corpus_docs(name, 150_000 if name != "english" else 300_000)]
    docs += [
        "",
        "Hello <|endoftext|> it <|begin_of_text|>x<|im_start|>",
        "Hello <|ls|> it and <|rs|>  there <|both|>   x <|sw|>",
        "a dog, dogs, hotdog, the dog. <think>hm</think>",
        "e\u0301clair and Cafe\u0301 cre\u0300me \u32ff \ufb01",
        "1234567890 \u0661\u0662\u0663 3.14159 \u4e2d\u6587\u5b57\u7b26\u4e32 \u65e5\u672c\u8a9e",
    ]
    path = tmp_path_factory.mktemp("hf-datasets") / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in docs), encoding="utf-8")
    return path, docs


def expected_ids(path: Path, docs: list[str], bos: int | None, eos: int | None) -> list[int]:
    hf = oracle(path)
    out: list[int] = []
    for doc in docs:
        out += ([bos] if bos is not None else []) + hf.encode(doc, add_special_tokens=False).ids + ([eos] if eos is not None else [])
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("family", FAMILIES)
def test_tokenize_gives_tokenizers_ids(
    family: str, hf_families: dict[str, Path], dataset: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One and two workers: the .tok holds tokenizers' ids of every document, between the
    separators tokenize chose, and is stamped with the pipeline's fingerprint (another than
    its vocabulary's alone)."""
    path = hf_families[family]
    data, docs = dataset
    tok = mnemo.load(path)
    assert isinstance(tok, HFTokenizer) and tok.extras()
    bos_name, eos_name = SEPARATORS[family]
    bos = None if bos_name is None else tok.special_tokens[bos_name]
    eos = None if eos_name is None else tok.special_tokens[eos_name]
    want = expected_ids(path, docs, bos, eos)
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}.tok"
        assert main(["tokenize", "-t", str(path), str(data), "-o", str(out), "--workers", workers, "-q"]) == 0
        line = capsys.readouterr().out
        assert f"{len(docs)} documents, each {' + '.join(n for n in (bos_name, 'text', eos_name) if n)}" in line
        tokens = open_tok(out, mnemo.load(path))  # the fingerprint matches a fresh load of the file
        assert tokens.header.n_docs == len(docs)
        got = tokens.tokens.tolist()
        assert got == want, f"workers={workers}: first difference at {next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)}"
    assert tok.fingerprint != tok.core.fingerprint
    with pytest.raises(FingerprintError, match="fingerprint"):
        open_tok(tmp_path / "out1.tok", tok.core)


@pytest.mark.corpus
def test_tokenize_other_outputs_and_separators(
    hf_families: dict[str, Path], dataset: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A training stack's files (Megatron) hold the same ids; --bos/--eos name the pipeline's
    special tokens; a name that is none of them is refused before any output appears."""
    from mnemo.stackfiles import read_stack_file

    path = hf_families["qwen2"]
    data, docs = dataset
    tok = mnemo.load(path)
    assert isinstance(tok, HFTokenizer)
    start = tok.special_tokens["<|im_start|>"]
    prefix = tmp_path / "mega"
    assert main(["tokenize", "-t", str(path), str(data), "-o", str(prefix), "--format", "megatron", "--bos", "<|im_start|>",
                 "--workers", "1", "-q"]) == 0
    stack = read_stack_file(str(prefix) + ".bin")
    assert stack.tokens.tolist() == expected_ids(path, docs, start, None)
    assert stack.n_docs == len(docs)
    refused(
        capsys,
        ["tokenize", "-t", str(path), str(data), "-o", str(tmp_path / "x.tok"), "--eos", "<nope>", "-q"],
        "eos '<nope>' is not a special token of this vocabulary (it has: <|endoftext|>, <|im_start|>",
        tmp_path / "x.tok",
    )


@pytest.mark.corpus
def test_a_transformers_folder_and_the_worker_image(
    hf_families: dict[str, Path], dataset: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """A transformers folder whose tokenizer_config.json sets add_eos_token replaces the
    template (as transformers does): tokenize puts its eos after each document.  The image a
    worker rebuilds the tokenizer from (plain JSON and the tokenizer.json text, no pickle)
    gives the same ids, template, roles and fingerprint."""
    from mnemo.formats.hf_pipeline import HFTokenizer as Pipeline

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(hf_families["starcoder2"].read_bytes())
    config = {"bos_token": "<fim_prefix>", "eos_token": "<|endoftext|>", "add_bos_token": False, "add_eos_token": True}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    tok = mnemo.load(folder)
    assert isinstance(tok, HFTokenizer)
    eot = tok.special_tokens["<|endoftext|>"]
    assert tok.template_separators() == (None, eot)
    image = tok._for_workers()
    assert b"pickle" not in image[:4] and image[4:5] == b"{"
    back = Pipeline._from_worker_image(image)
    assert back.fingerprint == tok.fingerprint and back.template_separators() == (None, eot)
    assert (back.bos_token, back.eos_token) == ("<fim_prefix>", "<|endoftext|>")
    data, docs = dataset
    for doc in docs[:50]:
        assert back.encode(doc, allowed_special="all", add_special_tokens=True) == tok.encode(
            doc, allowed_special="all", add_special_tokens=True
        )
    out = tmp_path / "f.tok"
    # with another thread alive the workers are spawned (mnemo/workers.py), so they build the
    # tokenizer from the image rather than inherit the caller's
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="a caller's thread")
    other.start()
    try:
        assert worker_context().get_start_method() == "spawn"
        assert main(["tokenize", "-t", str(folder), str(data), "-o", str(out), "--workers", "2", "-q"]) == 0
    finally:
        stop.set()
        other.join()
    assert open_tok(out, tok).tokens.tolist() == expected_ids(folder / "tokenizer.json", docs, None, eot)


def test_documents_that_are_not_utf8(hf_families: dict[str, Path], tmp_path: Path) -> None:
    """tokenizers encodes text: a byte that is not UTF-8 is read as U+FFFD (errors='replace'),
    never an error that stops a dataset nor bytes the pipeline never saw."""
    tok = mnemo.load(hf_families["qwen2"])
    assert isinstance(tok, HFTokenizer)
    got = tok.encode_documents([b"caf\xe9 ok", b"fine"], None, 7)
    want = [*tok.encode_ordinary("caf\ufffd ok"), 7, *tok.encode_ordinary("fine"), 7]
    assert got.tolist() == want and got.dtype == np.uint16
    with pytest.raises(ConfigError, match="bos=999999 is not an id"):
        tok.encode_documents([b"x"], 999999, None)


@pytest.mark.corpus
def test_chats_tokshow_and_pretrain(
    hf_families: dict[str, Path], dataset: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tokenize --chat and tokshow --chat render a conversation through the pipeline (ChatML
    spelt as text, as for every vocabulary without mnemo's chat tokens: mnemo/chat.py), the
    messages' ids tokenizers'; pretrain trains on the .tok tokenize wrote with the same file,
    and refuses one written by another tokenizer."""
    from mnemo.chat import render_conversation_mask

    path = hf_families["llama3"]
    tok = mnemo.load(path)
    assert isinstance(tok, HFTokenizer)
    messages = [{"role": "user", "content": "Caf\u00e9 dog <think> 123?"}, {"role": "assistant", "content": "A dog, 4567."}]
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": messages}) + "\n", encoding="utf-8")
    ids, mask = render_conversation_mask(tok, messages)
    hf = oracle(path)
    for m in messages:
        content = hf.encode(m["content"], add_special_tokens=False).ids
        assert any(ids[i : i + len(content)] == content for i in range(len(ids))), m
    assert main(["tokshow", "-t", str(path), "--chat", str(chat), "--no-color", "--ids", "--offsets"]) == 0
    shown = capsys.readouterr().out
    assert f"{len(ids)} tokens" in shown and f"{sum(mask)} masked" in shown
    out = tmp_path / "chat.tok"
    assert main(["tokenize", "-t", str(path), "--chat", str(chat), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    bit = 0x8000 if tok.n_vocab <= 0x8000 else 1 << 31
    assert open_tok(out, tok).tokens.tolist() == [t | bit if m else t for t, m in zip(ids, mask)]

    data, _ = dataset
    docs_tok = tmp_path / "docs.tok"
    assert main(["tokenize", "-t", str(path), str(data), "-o", str(docs_tok), "--workers", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["pretrain", str(docs_tok), "-t", str(path), "--steps", "20", "--eval-every", "10", "--generate", "5",
                 "--batch", "8", "--context", "16", "--dim", "8", "--prompt", "The dog"]) == 0
    shown = capsys.readouterr().out
    # the continuation starts as tokenize started each document: with the template's BOS
    assert "val" in shown and "greedy continuation: '<|begin_of_text|>The dog" in shown, shown
    assert main(["pretrain", str(docs_tok), "-t", str(hf_families["qwen2"]), "--steps", "2"]) != 0
    assert "was made by the tokenizer with fingerprint" in capsys.readouterr().err


@pytest.mark.corpus
def test_chatml_markers_that_are_special_tokens_are_their_ids(hf_families: dict[str, Path], corpus_docs: Callable[..., list[str]]) -> None:
    """Qwen2's vocabulary has <|im_start|> and <|im_end|> as special tokens: a chat is ChatML
    with those two ids, as tokenizers encodes the rendered text (it finds its added tokens
    there) -- not the markers spelt as text, which the model never saw.  The mask still
    covers the assistant's content and its <|im_end|>."""
    from mnemo.chat import render_conversation_mask

    tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is not installed (pip install '.[test]')")
    path = hf_families["qwen2"]
    tok = mnemo.load(path)
    start, end = tok.special_tokens["<|im_start|>"], tok.special_tokens["<|im_end|>"]
    hf = tokenizers.Tokenizer.from_file(str(path))  # special-token text is its token, as in a chat template's output
    texts = [t[:300] for t in corpus_docs("chat", 60_000)][:40]
    checked = 0
    for k in range(0, len(texts) - 2, 3):
        messages = [{"role": r, "content": texts[k + j]} for j, r in enumerate(("system", "user", "assistant"))]
        if any(m["content"][:1].isspace() or not m["content"] for m in messages):
            continue  # header and content are encoded apart (the mask's boundary): tokenizers joins "\n" + "\n..."
        ids, mask = render_conversation_mask(tok, messages)
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        assert ids == [tok.special_tokens["<|endoftext|>"], *hf.encode(text, add_special_tokens=False).ids]
        assert ids.count(start) == ids.count(end) == 3
        learned = [t for t, m in zip(ids, mask) if m]
        assert learned == [*hf.encode(messages[2]["content"], add_special_tokens=False).ids, end]
        checked += 1
    assert checked >= 5


def test_train_from_a_pipeline_is_still_refused(hf_families: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`train --from` extends a vocabulary into a tokenizer.bin, which cannot hold the pipeline:
    refused by name, before any work."""
    text = tmp_path / "t.txt"
    text.write_text("hello world " * 50, encoding="utf-8")
    args = ["train", str(text), "--from", str(hf_families["qwen2"]), "-o", str(tmp_path / "t.bin"), "--vocab-size", "7000", "-q"]
    refused(capsys, args, "normalizer NFC", tmp_path / "t.bin")


@pytest.mark.corpus
def test_a_folder_of_a_plain_file_keeps_its_template(
    hf_families: dict[str, Path], dataset: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """A tokenizer.json a Tokenizer holds whole (the DeepSeek-V3 style file with plain special
    tokens only, as Llama 3's converted files are), alone or in a transformers folder: tokenize
    still puts the template's BOS before each document, as `tokenizer(text)` does, and writes
    the .tok its Tokenizer writes (the same ids and fingerprint: the core encodes)."""
    obj = json.loads(hf_families["deepseek-v3"].read_text(encoding="utf-8"))
    obj["added_tokens"] = [t for t in obj["added_tokens"] if t["special"] and not (t["lstrip"] or t["rstrip"] or t["single_word"])]
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    plain = mnemo.load(folder / "tokenizer.json")
    assert isinstance(plain, mnemo.Tokenizer)
    bos = plain.special_tokens["<\uff5cbegin\u2581of\u2581sentence\uff5c>"]
    data, docs = dataset
    out = tmp_path / "p.tok"
    assert main(["tokenize", "-t", str(folder), str(data), "-o", str(out), "--workers", "1", "-q"]) == 0
    assert open_tok(out, plain).tokens.tolist() == expected_ids(folder / "tokenizer.json", docs, bos, None)
    alone = tmp_path / "alone.tok"
    assert main(["tokenize", "-t", str(folder / "tokenizer.json"), str(data), "-o", str(alone), "--workers", "2", "-q"]) == 0
    assert alone.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("family", FAMILIES)
def test_encode_documents_places_every_id_where_encode_puts_it(family: str, hf_families: dict[str, Path]) -> None:
    """encode_documents encodes the stretches its core takes whole in one packed call and puts
    the other ids (separators, added tokens, stretches split in Python) back between them: on
    random mixes of added tokens' text, plain and decomposed letters, digits, spaces, empty and
    non-UTF-8 documents, each document is [bos] + encode_ordinary + [eos], in order."""
    import random

    tok = mnemo.load(hf_families[family])
    assert isinstance(tok, HFTokenizer)
    added = [t.content for t in tok.added_tokens]
    parts = [*added, " ", "  ", "\n", "hello", " world", "Cafe\u0301", "caf\u00e9", "123", "4567", "\u65e5\u672c",
             "<|", "x", "don't", "\t"]
    rng = random.Random(f"{family}-documents")
    bos, eos = tok.n_vocab - 1, None
    for trial in range(40):
        docs = [
            "".join(rng.choice(parts) for _ in range(rng.randrange(0, 12))).encode("utf-8") + (b"\xff" if rng.random() < 0.1 else b"")
            for _ in range(rng.randrange(1, 8))
        ]
        for b, e in ((None, None), (bos, eos), (None, bos)):
            want = [i for d in docs for i in ([b] if b is not None else []) + tok.encode_ordinary(d.decode("utf-8", "replace"))
                    + ([e] if e is not None else [])]
            assert tok.encode_documents(docs, bos=b, eos=e).tolist() == want, (family, trial, docs, b, e)
