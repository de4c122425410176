"""Every TOKENIZER argument of the command line takes every kind mnemo.load reads (issue 26 item 5),
through mnemo/cli/common.py: --pattern for a .tiktoken file that holds none (a Llama-3-like
tokenizer.model), `mnemo info` of every kind, a transformers folder's bos/eos as tokenize's
document separators, its own chat template refused by --chat, and messages that list at most a
dozen special tokens.  Each command runs as a real process."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import mnemo
from mnemo import Tokenizer
from mnemo.patterns import LLAMA3

MNEMO = str(Path(sys.executable).parent / "mnemo")
TEXT = "Hello world, it's 2026!  Ünïcödé 中文 text\n\tdone"


def mnemo_cli(*args: str | Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([MNEMO, *map(str, args)], capture_output=True, text=True)
    assert "Traceback" not in out.stderr, out.stderr
    if ok:
        assert out.returncode == 0, out.stderr
    else:
        assert out.returncode == 1, out.stdout
    return out


@pytest.fixture(scope="module")
def llama_like(tmp_path_factory: pytest.TempPathFactory, tiktoken_ranks: Callable[[str], dict[bytes, int]]) -> Path:
    """A small Llama-3-like tokenizer.model: cl100k_base's first 3,000 ranks, then 200 of
    o200k_base's tokens cl100k lacks, in o200k's order (as Llama 3 appended o200k-like tokens to
    cl100k's), no special tokens: a .tiktoken rank file whose name names no encoding."""
    cl100k = sorted(tiktoken_ranks("cl100k_base").items(), key=lambda item: item[1])[:3000]
    ranks = dict(cl100k)
    o200k = tiktoken_ranks("o200k_base")
    for raw in sorted(o200k, key=o200k.__getitem__):
        if len(ranks) == 3200:
            break
        ranks.setdefault(raw, len(ranks))
    path = tmp_path_factory.mktemp("llama3") / "tokenizer.model"
    path.write_bytes(b"".join(base64.b64encode(raw) + b" %d\n" % r for raw, r in ranks.items()))
    return path


def shown_ids(out: str) -> list[int]:
    """The ids `tokshow --ids --no-color` printed, `TOKEN(ID)|` each (the summary line after)."""
    return [int(i) for i in re.findall(r"\((\d+)\)\|", out.rsplit("\n", 2)[0])]


def test_pattern_reaches_every_tokenizer_argument(llama_like: Path, tmp_path: Path) -> None:
    """tokshow, tokenize, inspect, eval, pretrain and info take --pattern llama3 for a rank file
    named after no encoding; tokshow's ids are tiktoken's for the same ranks and pattern."""
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    enc = tiktoken.Encoding("llama3-like", pat_str=LLAMA3, mergeable_ranks=load_tiktoken_bpe(str(llama_like)), special_tokens={})
    shown = mnemo_cli("tokshow", "-t", llama_like, "--pattern", "llama3", "--ids", "--no-color", TEXT)
    assert shown_ids(shown.stdout) == enc.encode_ordinary(TEXT)
    text = tmp_path / "text.txt"
    text.write_text((TEXT + "\n") * 200)
    mnemo_cli("tokenize", "-t", llama_like, "--pattern", "llama3", text, "-o", tmp_path / "t.tok", "-q",
              "--workers", "1", "--bos", "none", "--eos", "none")
    # the pattern is part of the fingerprint: pretrain checks the .tok against the same spec
    pretrained = mnemo_cli("pretrain", tmp_path / "t.tok", "-t", llama_like, "--pattern", "llama3", "--steps", "2",
                           "--eval-every", "2", "--generate", "2", "-q")
    assert "greedy continuation" in pretrained.stdout
    inspected = mnemo_cli("inspect", llama_like, "--pattern", "llama3", "--limit", "2")
    assert "tokenizer.model: 3200 ids" in inspected.stdout
    info = mnemo_cli("info", llama_like, "--pattern", "llama3")
    assert "tokenizer.model: .tiktoken rank file" in info.stdout and "llama3: mnemo's scanner" in info.stdout
    mnemo_cli("tokshow", "-t", llama_like, "--pattern", r"\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+", "x1")  # a regex


def test_eval_pattern_goes_to_the_files_that_hold_none(llama_like: Path, tmp_path: Path) -> None:
    """eval compares tokenizers of any kind: its --pattern is the pattern of each .tiktoken file
    named after no encoding, and the others load as they are (a tokenizer.bin here)."""
    tok = mnemo.load(llama_like, pattern="llama3")
    assert isinstance(tok, Tokenizer)
    tok.save(tmp_path / "saved.bin")
    text = tmp_path / "text.txt"
    text.write_text(TEXT * 20)
    out = mnemo_cli("eval", f"llama={llama_like}", tmp_path / "saved.bin", "--pattern", "llama3", "--corpus", text)
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith(("  llama ", "  saved "))]
    assert len(rows) >= 2 and rows[0][1:] == rows[1][1:], out.stdout  # the same vocabulary, the same figures
    assert "skipped" not in out.stdout


def test_refusals_say_how_to_pass_the_pattern(llama_like: Path, tmp_path: Path) -> None:
    """Without --pattern the rank file is refused with a message that names --pattern (and
    lists each encoding once); --pattern given for a file holding its own pattern is refused."""
    for argv in (("tokshow", "-t", llama_like, "hi"), ("inspect", llama_like), ("info", llama_like)):
        out = mnemo_cli(*argv, ok=False)
        assert "holds no split pattern" in out.stderr and "--pattern PATTERN" in out.stderr
        assert out.stderr.count("r50k_base") == 1
    mnemo.load(llama_like, pattern="llama3").save(tmp_path / "tok.bin")
    out = mnemo_cli("tokshow", "-t", tmp_path / "tok.bin", "--pattern", "llama3", "hi", ok=False)
    assert "holds its own split pattern" in out.stderr and "leave it out" in out.stderr
    out = subprocess.run([MNEMO, "tokshow", "-t", str(llama_like), "--pattern", "lama3", "hi"], capture_output=True, text=True)
    assert out.returncode == 2 and "argument --pattern: unknown pattern 'lama3'" in out.stderr  # a usage error
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    out = mnemo_cli("train", text, "-o", tmp_path / "more.bin", "--from", llama_like, "--pattern", "llama3", ok=False)
    assert f"--from {llama_like}: the tokenizer to continue from is an imported vocabulary" in out.stderr
    assert "Train a new tokenizer on the text instead" in out.stderr and not (tmp_path / "more.bin").exists()


def test_info_takes_every_kind(
    llama_like: Path, hf_families: dict[str, Path], tiktoken_ranks: Callable[[str], dict[bytes, int]], tmp_path: Path
) -> None:
    """What info says of a tokenizer.json pipeline, tekken JSON, cl100k_base's .tiktoken.gz and a
    transformers folder: what it was read as, the vocabulary, the pattern and its engine, the
    specials (at most a dozen listed), and a pipeline's extras or a folder's roles."""
    qwen = mnemo_cli("info", hf_families["qwen2"]).stdout
    assert ": tokenizer.json\n" in qwen and "normalizer   NFC" in qwen and "engine       mnemo's scanner" in qwen
    assert "pipeline     normalizer NFC" in qwen
    # the fingerprint a .tok written through this pipeline carries: the pipeline's, not its core's
    pipeline = mnemo.load(hf_families["qwen2"])
    assert f"fingerprint  {pipeline.fingerprint}\n" in qwen and pipeline.fingerprint != pipeline.core.fingerprint
    tiktoken_ranks("cl100k_base")  # skips when the fixtures are absent
    cl100k = mnemo_cli("info", Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "tiktoken" / "cl100k_base.tiktoken.gz").stdout
    assert ".tiktoken rank file" in cl100k and "cl100k: mnemo's scanner" in cl100k
    assert "100261 ids = 256 bytes + 100000 merges + 5 special (ids 0..100276: 16 unused)" in cl100k
    mistral_common = pytest.importorskip("mistral_common")
    tekken = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
    shown = mnemo_cli("info", tekken).stdout
    assert "tekken JSON (Mistral)" in shown and "131072 ids" in shown and "1000 special" in shown
    assert "... and 988 more" in shown and len(shown) < 2000
    folder = tmp_path / "llama3"
    mnemo_cli("convert", llama_like, folder, "--to", "hf-dir", "--pattern", "llama3",
              "--special", "<|begin_of_text|>=3200", "--special", "<|end_of_text|>=3201")
    _set_config(folder, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")
    shown = mnemo_cli("info", folder).stdout
    assert "transformers folder" in shown and "roles        bos <|begin_of_text|>, eos <|end_of_text|>, pad none" in shown


def _set_config(folder: Path, **fields: object) -> None:
    """tokenizer_config.json's fields as transformers' converters write them."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config.update(fields)
    path.write_text(json.dumps(config))


def test_a_folders_bos_separates_documents(llama_like: Path, tmp_path: Path) -> None:
    """A transformers folder's bos_token goes before each document (the "neither <|bos|> nor
    <|endoftext|>" warning before); with only an eos_token, it goes after each one."""
    folder = tmp_path / "llama3"
    mnemo_cli("convert", llama_like, folder, "--to", "hf-dir", "--pattern", "llama3",
              "--special", "<|begin_of_text|>=3200", "--special", "<|end_of_text|>=3201")
    text = tmp_path / "docs.jsonl"
    text.write_text('{"text": "one"}\n{"text": "two"}\n')
    out = mnemo_cli("tokenize", "-t", folder, text, "-o", tmp_path / "none.tok", "-q", "--workers", "1")
    assert "neither <|bos|> nor <|endoftext|>" in out.stderr  # the folder names no bos or eos
    _set_config(folder, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")
    out = mnemo_cli("tokenize", "-t", folder, text, "-o", tmp_path / "bos.tok", "-q", "--workers", "1")
    assert "each <|begin_of_text|> + text" in out.stdout and "warning" not in out.stderr
    # the library's rule is the command's: tokenize_files reads the roles from the loaded folder
    from mnemo.tokenizing import document_separators, tokenize_files

    loaded = mnemo.load(folder)
    assert document_separators(loaded) == (3200, None)
    tokenize_files([text], loaded, tmp_path / "lib.tok", workers=1)
    assert mnemo.open_tok(tmp_path / "lib.tok", loaded).tokens.tolist() == mnemo.open_tok(tmp_path / "bos.tok", loaded).tokens.tolist()
    _set_config(folder, bos_token=None)
    out = mnemo_cli("tokenize", "-t", folder, text, "-o", tmp_path / "eos.tok", "-q", "--workers", "1")
    assert "each text + <|end_of_text|>" in out.stdout


def test_chat_renders_only_the_template_mnemo_writes(llama_like: Path, tmp_path: Path) -> None:
    """--chat renders mnemo's template: a folder mnemo exported (whose template is mnemo's own) is
    rendered; a folder with a template of its own is refused by tokshow and tokenize rather than
    rendered in another format."""
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}) + "\n")
    trained = mnemo.train_from_iterator(["hello there, general chat " * 50] * 10, vocab_size=300)
    mnemo_cli("convert", _saved(trained, tmp_path / "trained.bin"), tmp_path / "ours", "--to", "hf-dir")
    shown = mnemo_cli("tokshow", "-t", tmp_path / "ours", "--chat", chats, "--no-color")
    assert shown.stdout.startswith("<|bos|>|<|user|>|") and "masked (learned)" in shown.stdout
    mnemo_cli("tokenize", "-t", tmp_path / "ours", "--chat", chats, "-o", tmp_path / "ours.tok", "-q")
    folder = tmp_path / "llama3"
    mnemo_cli("convert", llama_like, folder, "--to", "hf-dir", "--pattern", "llama3",
              "--special", "<|begin_of_text|>=3200", "--special", "<|end_of_text|>=3201")
    _set_config(folder, chat_template="{% for m in messages %}<|begin_of_text|>{{ m['content'] }}{% endfor %}")
    for argv in (("tokshow", "-t", folder, "--chat", chats), ("tokenize", "-t", folder, "--chat", chats, "-o", tmp_path / "c.tok")):
        out = mnemo_cli(*argv, ok=False)
        assert "has a chat template of its own" in out.stderr and "apply_chat_template" in out.stderr
    assert not (tmp_path / "c.tok").exists()
    assert "chat         its own" in mnemo_cli("info", folder).stdout
    assert "chat         mnemo's" in mnemo_cli("info", tmp_path / "ours").stdout


def _saved(tok: Tokenizer, path: Path) -> Path:
    tok.save(path)
    return path


def test_tekken_documents_start_with_its_bos_and_messages_list_a_dozen_names(tmp_path: Path) -> None:
    """tokenize -t tekken.json found no separator among 1,000 special tokens and listed them all
    (about 20 kB on stderr).  Now each document starts with `<s>` (id 1), as mistral-common's
    Tekkenizer.encode(text, bos=True, eos=False) starts it, and a message that lists the names
    lists the first dozen and how many more."""
    mistral_common = pytest.importorskip("mistral_common")
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tekken = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
    text = tmp_path / "t.txt"
    text.write_text("hello world\n")
    out = mnemo_cli("tokenize", "-t", tekken, text, "-o", tmp_path / "t.tok", "--workers", "1")
    assert "warning" not in out.stderr and "each <s> + text" in out.stdout, out
    ids = mnemo.open_tok(tmp_path / "t.tok", mnemo.load(tekken)).tokens.tolist()
    assert ids == Tekkenizer.from_file(str(tekken)).encode("hello world\n", bos=True, eos=False)
    bad = mnemo_cli("tokenize", "-t", tekken, text, "-o", tmp_path / "u.tok", "--bos", "<|nope|>", ok=False)
    assert "special tokens of this vocabulary" in bad.stderr or "is not a special token" in bad.stderr
    assert "... and 988 more" in bad.stderr and len(bad.stderr) < 1000


def test_help_names_every_kind_and_the_pattern() -> None:
    for command in ("tokenize", "tokshow", "inspect", "eval", "pretrain", "info"):
        out = mnemo_cli(command, "--help").stdout
        flat = " ".join(out.split())
        assert "tekken JSON" in flat and "--pattern" in flat and "llama3" in flat, command
