"""One way to load anything (issue 26 item 5): `mnemo.load(path_or_url)` and the resolver every
TOKENIZER argument of the command line goes through (mnemo/formats/load.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import mnemo
from mnemo import ConfigError, FormatError, HFTokenizer, InputError, Tokenizer
from mnemo.formats.gpt2 import save_gpt2
from mnemo.formats.hf import save_hf
from mnemo.formats.hf_folder import save_pretrained
from mnemo.formats.load import resolve
from mnemo.formats.tiktoken import save_tiktoken

MNEMO = str(Path(sys.executable).parent / "mnemo")
TIKTOKEN_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "tiktoken"
TEXT = "Hello world<|endoftext|> it's 2026!  \n\tok"


def write_every_kind(tok: Tokenizer, folder: Path) -> None:
    """tokenizer.bin, tokenizer.json, transformers/, gpt2/ (vocab.json + merges.txt),
    r50k_base.tiktoken and ranks.tiktoken (the same ranks, named after no encoding)."""
    tok.save(folder / "tokenizer.bin")
    save_hf(tok, folder / "tokenizer.json")
    save_pretrained(tok, folder / "transformers")
    (folder / "gpt2").mkdir()
    save_gpt2(tok, folder / "gpt2" / "vocab.json", folder / "gpt2" / "merges.txt")
    save_tiktoken(tok, folder / "r50k_base.tiktoken")
    shutil.copy(folder / "r50k_base.tiktoken", folder / "ranks.tiktoken")


def test_every_kind_is_recognised(gpt2: Tokenizer, tmp_path: Path) -> None:
    """tokenizer.bin, tokenizer.json, a transformers folder, a GPT-2 folder, VOCAB,MERGES, a
    .tiktoken with a pattern: each loads, and each gives GPT-2's ids."""
    expected = gpt2.encode(TEXT, allowed_special="all")
    write_every_kind(gpt2, tmp_path)
    loaded = {
        "bin": mnemo.load(tmp_path / "tokenizer.bin"),
        "json": mnemo.load(tmp_path / "tokenizer.json"),
        "transformers": mnemo.load(tmp_path / "transformers"),
        "gpt2 folder": mnemo.load(tmp_path / "gpt2"),
        "vocab + merges=": mnemo.load(tmp_path / "gpt2" / "vocab.json", merges=tmp_path / "gpt2" / "merges.txt"),
        "tiktoken by name": mnemo.load(tmp_path / "r50k_base.tiktoken"),
        "tiktoken + pattern": mnemo.load(tmp_path / "ranks.tiktoken", pattern="gpt2", special_tokens={"<|endoftext|>": 50256}),
        "spec VOCAB,MERGES": resolve(f"{tmp_path / 'gpt2' / 'vocab.json'},{tmp_path / 'gpt2' / 'merges.txt'}")[1],
    }
    for kind, tok in loaded.items():
        assert tok.encode(TEXT, allowed_special="all") == expected, kind
    assert isinstance(loaded["bin"], Tokenizer) and isinstance(loaded["json"], Tokenizer)
    folder = loaded["transformers"]
    assert isinstance(folder, HFTokenizer)
    assert folder.bos_token == folder.eos_token == "<|endoftext|>" and folder.chat_template is None
    assert resolve(f"mine={tmp_path / 'tokenizer.bin'}")[0] == "mine"
    assert resolve(str(tmp_path / "r50k_base.tiktoken"))[0] == "r50k_base"


def test_a_transformers_folder_brings_its_config(trained: Tokenizer, tmp_path: Path) -> None:
    """bos/eos/pad and the chat template from tokenizer_config.json; add_bos_token there makes
    add_special_tokens put bos first, as transformers does (update_post_processor)."""
    save_pretrained(trained, tmp_path / "export")
    tok = mnemo.load(tmp_path / "export")
    assert isinstance(tok, HFTokenizer)
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<|bos|>", "<|end|>", "<|reserved_0|>")
    assert tok.chat_template is not None and "raise_exception" in tok.chat_template
    config_path = tmp_path / "export" / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["add_bos_token"] = True
    config_path.write_text(json.dumps(config))
    with_bos = mnemo.load(tmp_path / "export", add_special_tokens=True)
    bos = trained.special_tokens["<|bos|>"]
    assert with_bos.encode("hello there") == [bos, *trained.encode("hello there")]
    assert mnemo.load(tmp_path / "export").encode("hello there") == trained.encode("hello there")


def test_urls_load_as_paths_do(gpt2: Tokenizer, tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    save_hf(gpt2, tmp_path / "tokenizer.json")
    gpt2.save(tmp_path / "tokenizer.bin")
    for name in ("tokenizer.json", "tokenizer.bin"):
        memory.pipe(f"/mnemo-load/{name}", (tmp_path / name).read_bytes())
        memory.pipe(f"/mnemo-load/folder/{name}", (tmp_path / name).read_bytes())
    expected = gpt2.encode(TEXT, allowed_special="all")
    for url in ("memory://mnemo-load/tokenizer.json", "memory://mnemo-load/tokenizer.bin", "memory://mnemo-load/folder"):
        assert mnemo.load(url).encode(TEXT, allowed_special="all") == expected, url
    with pytest.raises(InputError, match="memory://mnemo-load/nope.json"):
        mnemo.load("memory://mnemo-load/nope.json")


def test_what_cannot_be_loaded_says_what_it_is(tmp_path: Path) -> None:
    model = tmp_path / "tokenizer.model"
    model.write_bytes(b"\n\x0e\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02" * 10)  # a SentencePiece protobuf's start
    with pytest.raises(FormatError, match="SentencePiece"):
        mnemo.load(model)
    tekken = tmp_path / "tekken.json"
    tekken.write_text(json.dumps({"config": {"pattern": "x", "default_vocab_size": 1}, "vocab": [], "special_tokens": []}))
    with pytest.raises(FormatError, match=r"config.default_num_special_tokens is null"):  # tekken, its fields checked
        mnemo.load(tekken)
    ranks = tmp_path / "ranks.tiktoken"
    ranks.write_text("YQ== 0\n")
    with pytest.raises(ConfigError, match="holds no split pattern") as refused:
        mnemo.load(ranks)
    message = str(refused.value)
    assert "--pattern PATTERN" in message and "pattern=" in message and "llama3" in message
    assert message.count("r50k_base") == 1  # listed twice before
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps({"a": 0}))
    with pytest.raises(ConfigError, match="give its merges.txt too"):
        mnemo.load(vocab)
    other = tmp_path / "other.json"
    other.write_text('{"a": [1, 2]}')
    with pytest.raises(FormatError, match="JSON that is no tokenizer mnemo knows"):
        mnemo.load(other)
    other.write_text("[1, 2]")
    with pytest.raises(FormatError, match="not a tokenizer mnemo knows"):
        mnemo.load(other)
    with pytest.raises(InputError, match="no such tokenizer file or folder"):
        mnemo.load(tmp_path / "missing.bin")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="a folder without tokenizer.json"):
        mnemo.load(tmp_path / "empty")


def test_every_sentencepiece_model_is_named_whatever_its_file_name(tmp_path: Path) -> None:
    """Mistral's SentencePiece models as mistral-common ships them (tokenizer.model.v1,
    mistral_instruct_tokenizer_*.model.v2/v3/v7/v7m1): known by their protobuf header, not their
    name, and refused with the error that names SentencePiece (a generic FormatError before),
    by load, by the command line and as a folder's tokenizer.model."""
    mistral_common = pytest.importorskip("mistral_common")
    data = Path(mistral_common.__file__).parent / "data"
    models = sorted(p for p in data.iterdir() if ".model" in p.name)
    assert len(models) >= 5, models
    for model in models:
        with pytest.raises(FormatError, match=r"this is a SentencePiece model .* use the `sentencepiece` package"):
            mnemo.load(model)
    copy = tmp_path / "no-such-suffix"
    copy.write_bytes(models[-1].read_bytes())
    with pytest.raises(FormatError, match="SentencePiece"):
        mnemo.load(copy)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "tokenizer.model").write_bytes(models[0].read_bytes())
    with pytest.raises(FormatError, match="SentencePiece"):
        mnemo.load(tmp_path / "folder")
    shown = mnemo_cli("tokshow", "-t", models[0], "hello")
    assert shown.returncode == 1 and "SentencePiece" in shown.stderr and "Traceback" not in shown.stderr


def test_what_each_path_was_read_as(gpt2: Tokenizer, tmp_path: Path) -> None:
    """load_kind names the kind; pattern= is for the kinds that hold none (a .tiktoken file,
    GPT-2's files), and given with another kind it is refused, never silently ignored."""
    from mnemo.formats.load import BIN, GPT2, TIKTOKEN, TOKENIZER_JSON, TRANSFORMERS, load_kind, sniff

    write_every_kind(gpt2, tmp_path)
    kinds = {
        "tokenizer.bin": BIN, "tokenizer.json": TOKENIZER_JSON, "transformers": TRANSFORMERS, "gpt2": GPT2,
    }
    for name, kind in kinds.items():
        assert load_kind(tmp_path / name)[0] == kind, name
    assert load_kind(tmp_path / "ranks.tiktoken", pattern="gpt2")[0] == TIKTOKEN
    assert load_kind(tmp_path / "gpt2", pattern="gpt2")[0] == GPT2
    for name in ("tokenizer.bin", "tokenizer.json", "transformers"):
        with pytest.raises(ConfigError, match=r"which holds its own split pattern; pattern= \(--pattern on the command line\)"):
            mnemo.load(tmp_path / name, pattern="llama3")
    with pytest.raises(ConfigError, match="which holds its own special tokens"):
        mnemo.load(tmp_path / "gpt2", special_tokens={"<|endoftext|>": 50256})
    # a .tiktoken file named after no encoding: fallback_pattern (eval --pattern) is its pattern;
    # a file named after one keeps that encoding, and other kinds load as they are
    assert load_kind(tmp_path / "ranks.tiktoken", fallback_pattern="gpt2")[1].pattern == "gpt2"
    assert load_kind(tmp_path / "tokenizer.bin", fallback_pattern="llama3")[0] == BIN
    (tmp_path / "corpus.jsonl").write_text('{"text": "a"}\n')
    (tmp_path / "notes.txt").write_text("hello\n")
    assert sniff(str(tmp_path / "corpus.jsonl")) == "json" and sniff(str(tmp_path / "notes.txt")) is None


def test_llama3_style_tokenizer_model_is_a_rank_file(tmp_path: Path) -> None:
    """Meta's tokenizer.model is a tiktoken rank file, not SentencePiece: known by its lines."""
    path = TIKTOKEN_DIR / "cl100k_base.tiktoken.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    import gzip

    (tmp_path / "tokenizer.model").write_bytes(gzip.decompress(path.read_bytes()))
    tok = mnemo.load(tmp_path / "tokenizer.model", pattern="cl100k_base")
    assert tok.encode("hello world") == [15339, 1917]


def mnemo_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MNEMO, *map(str, args)], capture_output=True, text=True)


@pytest.mark.corpus
def test_every_tokenizer_argument_takes_every_kind(
    gpt2: Tokenizer, hf_families: dict[str, Path], tmp_path: Path, corpus_path: Callable[[str], Path]
) -> None:
    """tokenize, tokshow, inspect, eval, convert and train --from take a tokenizer.json or a
    transformers folder as they take a tokenizer.bin; a pipeline a Tokenizer cannot hold is
    encoded through it (tokenize: tests/formats/test_hf_datasets.py) or, where it cannot be
    (a tokenizer.bin), refused by name, never encoded otherwise."""
    save_pretrained(gpt2, tmp_path / "transformers")
    text = tmp_path / "text.txt"
    text.write_text("Hello world. It's 2026.\n" * 20)
    for spec in (tmp_path / "transformers", tmp_path / "transformers" / "tokenizer.json"):
        out = mnemo_cli("tokenize", "-t", spec, text, "-o", tmp_path / "t.tok", "-q", "--workers", "1")
        assert out.returncode == 0, out.stderr
        shown = mnemo_cli("tokshow", "-t", spec, "--no-color", "--ids", "Hello world")
        assert shown.returncode == 0 and "15496" in shown.stdout, shown.stderr
        assert mnemo_cli("inspect", spec).returncode == 0
        assert mnemo_cli("eval", spec, "--corpus", text).returncode == 0
    converted = mnemo_cli("convert", tmp_path / "transformers", tmp_path / "back.bin", "--to", "mnemo")
    assert converted.returncode == 0, converted.stderr
    assert Tokenizer.load(tmp_path / "back.bin").encode(TEXT, allowed_special="all") == gpt2.encode(TEXT, allowed_special="all")
    qwen = hf_families["qwen2"]
    encoded = mnemo_cli("tokenize", "-t", qwen, text, "-o", tmp_path / "q.tok", "-q")
    assert encoded.returncode == 0 and (tmp_path / "q.tok").exists(), encoded.stderr
    to_bin = mnemo_cli("convert", qwen, tmp_path / "q.bin", "--to", "mnemo")
    assert to_bin.returncode != 0 and "normalizer NFC" in to_bin.stderr
    to_hf = mnemo_cli("convert", qwen, tmp_path / "q.json", "--to", "hf")
    assert to_hf.returncode == 0, to_hf.stderr
    assert json.loads((tmp_path / "q.json").read_text()) == json.loads(qwen.read_text())
    tokenizers = pytest.importorskip("tokenizers")
    text_nfc = "Cafe\u0301 <|endoftext|> e\u0301clair 12"
    expected = tokenizers.Tokenizer.from_file(str(qwen)).encode(text_nfc, add_special_tokens=False)
    shown = mnemo_cli("tokshow", "-t", qwen, "--no-color", "--ids", "--offsets", text_nfc)
    assert shown.returncode == 0, shown.stderr
    shown_tokens = re.findall(r"\((\d+)\)@(\d+):(\d+)\|", shown.stdout.splitlines()[0])
    assert [int(i) for i, _, _ in shown_tokens] == expected.ids
    assert [(int(a), int(b)) for _, a, b in shown_tokens] == expected.offsets
    evaluated = mnemo_cli("eval", qwen, "--corpus", corpus_path("english"), "--max-bytes", "20000")
    assert evaluated.returncode == 0 and "qwen2" in evaluated.stdout, evaluated.stderr
