"""`mnemo eval` (mnemo/evaluate.py): tokenizers of every kind side by side on the corpora; the
figures checked against counts made another way (tiktoken's own encoder for GPT-2)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import mnemo
from mnemo import ConfigError, Tokenizer
from mnemo.evaluate import LENGTH_BINS, corpus_documents, evaluate, format_tables, load_spec, run, superword_ids
from mnemo.interop import save_hf, to_tiktoken

MNEMO = str(Path(sys.executable).parent / "mnemo")

ROOT = Path(__file__).resolve().parents[1]
TIKTOKEN_DIR = ROOT.parent / "shared" / "fixtures" / "tiktoken"


@pytest.fixture(scope="module")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    return mnemo.train_from_iterator(corpus_docs("english", max_bytes=150_000), vocab_size=700, workers=1)


@pytest.fixture(scope="module")
def corpora(corpus_path: Callable[[str], Path]) -> list[tuple[str, list[bytes]]]:
    return [(name, list(corpus_documents(corpus_path(name), 60_000))) for name in ("english", "code", "chat")]


def test_bytes_only_vocabulary_worked_example() -> None:
    """No merges: one token per byte, so bytes/token is 1 and tokens/word is bytes/words."""
    tok = Tokenizer([], special_tokens=[])
    docs = [b"ab cd", "é é".encode()]  # 5 + 5 bytes, 4 words
    [res] = evaluate([("bytes", tok)], [("tiny", docs)])
    r = res.corpora["tiny"]
    assert (r.n_bytes, r.n_tokens, r.n_words) == (10, 10, 4)
    assert r.bytes_per_token == 1.0 and r.tokens_per_word == 2.5
    assert r.tokens_per_byte == 1.0 and r.super_share == 0.0
    assert r.used == len(set(b"ab cd" + "é é".encode()))
    assert res.vocab_lengths[1] == 256 and sum(res.vocab_lengths) == 256
    assert res.text_lengths[1] == 10
    assert res.top[0] == (ord(" "), b" ", 2)


def test_text_without_words_has_no_fertility() -> None:
    """Whitespace only: 7 tokens over 0 words is no figure -- NaN, printed as "-" (it read 0.00)."""
    import math

    [res] = evaluate([("bytes", Tokenizer([], special_tokens=[]))], [("ws", [b"   \n\n  "])])
    r = res.corpora["ws"]
    assert (r.n_bytes, r.n_tokens, r.n_words) == (7, 7, 0) and math.isnan(r.tokens_per_word)
    text = format_tables([res], ["ws"])
    fertility = text.split("tokens per word")[1].split("\n\n")[0]
    assert fertility.splitlines()[-1].split()[-2:] == ["-", "-"]


def test_superword_ids_are_tokens_spanning_chunks() -> None:
    """A token is a superword when the tokenizer's (stage-1) pattern cuts its bytes into two or
    more chunks: 'a ' is 'a' + ' ' and ' a b' is ' a' + ' b' under mnemonic; 'ab' and ' ab' are
    one chunk each, bytes and special tokens are never superwords."""
    a, b, sp = ord("a"), ord("b"), ord(" ")
    tok = Tokenizer([(a, b), (a, sp), (sp, a), (sp, b), (256 + 2, 256 + 3), (sp, 256)], special_tokens=["<|x y|>"])
    spans = superword_ids(tok)
    assert [tok.token_bytes(i) for i in map(int, spans.nonzero()[0])] == [b"a ", b" a b"]
    # a token ending inside a character ('中' and the first byte of '文') is one chunk in text
    zh = "中文".encode()
    part = Tokenizer([(zh[0], zh[1]), (256, zh[2]), (257, zh[3])], special_tokens=[])
    assert part.token_bytes(258) == zh[:4] and not superword_ids(part).any()


def test_counts_agree_with_tiktoken(cs336_dir: Path, corpora: list[tuple[str, list[bytes]]]) -> None:
    """GPT-2 loaded from its two files: the token totals are tiktoken's on the same documents."""
    pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")
    label, gpt2 = load_spec(f"{cs336_dir / 'gpt2_vocab.json'},{cs336_dir / 'gpt2_merges.txt'}")
    enc = to_tiktoken(gpt2)
    [res] = evaluate([(label, gpt2)], corpora)
    for name, docs in corpora:
        texts = [d.decode("utf-8") for d in docs]
        n = sum(len(enc.encode_ordinary(t)) for t in texts)
        r = res.corpora[name]
        assert r.n_tokens == n
        assert r.n_words == sum(len(t.split()) for t in texts)
        assert r.bytes_per_token == pytest.approx(sum(map(len, docs)) / n)


def test_every_kind_of_spec(tmp_path: Path, trained: Tokenizer, cs336_dir: Path, corpus_path: Callable[[str], Path]) -> None:
    trained.save(tmp_path / "mine.bin")
    save_hf(trained, tmp_path / "tokenizer.json")
    specs = [
        f"mnemo={tmp_path / 'mine.bin'}",
        f"hf={tmp_path / 'tokenizer.json'}",
        str(cs336_dir),  # a GPT-2 folder (gpt2_vocab.json + gpt2_merges.txt)
        str(TIKTOKEN_DIR / "cl100k_base.tiktoken.gz"),
    ]
    results, names, skipped = run(specs, [str(corpus_path("english"))], 30_000)
    labels = [r.label for r in results]
    assert labels[:3] == ["mnemo", "hf", "cs336"]
    # the same vocabulary through two formats gives the same figures
    assert results[0].corpora["english"].n_tokens == results[1].corpora["english"].n_tokens
    if len(results) == 4:  # 32-bit ids have landed: cl100k loads
        assert labels[3] == "cl100k_base" and results[3].n_vocab > 100_000
    else:
        [(spec, reason)] = skipped
        assert spec.endswith("cl100k_base.tiktoken.gz") and "65536" in reason
    text = format_tables(results, names, skipped)
    assert "bytes per token" in text and "tokens per word" in text and "MB/s" in text
    assert "most frequent tokens" in text


def test_spec_errors(tmp_path: Path) -> None:
    (tmp_path / "x.tiktoken").write_text("YQ== 0\n")
    with pytest.raises(ConfigError, match="holds no split pattern or special tokens: give its pattern -- on the command line --pattern PATTERN"):
        load_spec(str(tmp_path / "x.tiktoken"))
    with pytest.raises(mnemo.InputError, match="no such tokenizer file"):
        load_spec(str(tmp_path / "nope.bin"))
    # a missing file is an error of its own, not a skipped tokenizer
    with pytest.raises(mnemo.InputError, match="nope.bin: no such tokenizer file"):
        run([str(tmp_path / "x.tiktoken"), str(tmp_path / "nope.bin")], [], 10)
    # one this build cannot hold is skipped; when none is left, that is the error
    with pytest.raises(ConfigError, match="no tokenizer loaded: .*x.tiktoken: .*give its pattern -- on the command line --pattern PATTERN"):
        run([str(tmp_path / "x.tiktoken")], [], 10)


def test_a_corpus_without_text_is_an_error(tmp_path: Path, trained: Tokenizer) -> None:
    """An empty corpus, or one whose documents are all empty, has no bytes to measure: the
    tables printed 0.00 bytes a token for it (0 / 0 read as 0), and `run(..., max_bytes=0)` did the
    same for every corpus (the command line refuses --max-bytes 0).  Each is an error naming the
    file, on the command line and in the API."""
    trained.save(tmp_path / "mine.bin")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "blank.jsonl").write_text('{"text": ""}\n{"text": ""}\n')
    (tmp_path / "good.jsonl").write_text('{"text": "some text to measure"}\n')
    for name, docs in (("empty.jsonl", 0), ("blank.jsonl", 2)):
        out = subprocess.run([MNEMO, "eval", str(tmp_path / "mine.bin"), "--corpus", str(tmp_path / "good.jsonl"),
                              "--corpus", str(tmp_path / name)], capture_output=True, text=True)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert f"{tmp_path / name}: no text to measure ({docs} documents, 0 bytes)" in out.stderr, out.stderr
        assert out.stdout == ""
    out = subprocess.run([MNEMO, "eval", str(tmp_path / "mine.bin"), "--corpus", str(tmp_path / "good.jsonl"),
                          "--max-bytes", "0"], capture_output=True, text=True)
    assert out.returncode == 2 and "argument --max-bytes: must be >= 1, got 0" in out.stderr, out.stderr
    with pytest.raises(ConfigError, match="max_bytes 0 reads no text to measure"):
        run([str(tmp_path / "mine.bin")], [str(tmp_path / "good.jsonl")], 0)
    with pytest.raises(mnemo.InputError, match="'blank': no text to measure \\(1 documents, 0 bytes\\)"):
        evaluate([("mine", trained)], [("good", [b"text"]), ("blank", [b""])])
    assert evaluate([("mine", trained)], [("good", [b"text"])])[0].corpora["good"].n_bytes == 4


def test_cli_table_and_plot(tmp_path: Path, trained: Tokenizer, cs336_dir: Path, corpus_path: Callable[[str], Path]) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install '.[test]')")
    trained.save(tmp_path / "mine.bin")
    png = tmp_path / "eval.png"
    run_ = subprocess.run(
        [MNEMO, "eval", f"mine={tmp_path / 'mine.bin'}", str(cs336_dir),
         "--corpus", str(corpus_path("english")), "--corpus", str(corpus_path("chat")),
         "--max-bytes", "20000", "--plot", str(png)],
        capture_output=True, text=True,
    )
    assert run_.returncode == 0, run_.stderr
    assert "english" in run_.stdout and "chat" in run_.stdout and f"wrote {png}" in run_.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"{LENGTH_BINS - 1}+" in run_.stdout


def test_cli_plot_without_matplotlib(tmp_path: Path, trained: Tokenizer, corpus_path: Callable[[str], Path]) -> None:
    """Where matplotlib cannot be imported, --plot is a one-line error before any work."""
    trained.save(tmp_path / "mine.bin")
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # import matplotlib now raises ImportError
        "from mnemo.cli import main\n"
        f"sys.exit(main(['eval', {str(tmp_path / 'mine.bin')!r}, '--corpus', {str(corpus_path('english'))!r}, "
        f"'--plot', {str(tmp_path / 'x.png')!r}]))\n"
    )
    run_ = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run_.returncode == 1
    assert "pip install 'mnemo[plot]'" in run_.stderr and "Traceback" not in run_.stderr
    assert not (tmp_path / "x.png").exists()


def test_corpus_documents(tmp_path: Path) -> None:
    """JSON Lines: the text field, or a chat record's messages joined; a bad line names file:line."""
    good = tmp_path / "c.jsonl"
    good.write_text('{"text": "one"}\n\n{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n')
    assert list(corpus_documents(good)) == [b"one", b"hi\nyo"]
    assert list(corpus_documents(good, max_bytes=2)) == [b"one"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "one"}\n{"body": "two"}\n')
    with pytest.raises(mnemo.InputError, match=r"bad.jsonl:2: no 'text' string and no chat 'messages'"):
        list(corpus_documents(bad))
    (tmp_path / "broken.jsonl").write_text('{"text": \n')
    with pytest.raises(mnemo.InputError, match=r"broken.jsonl:1: not a JSON record"):
        list(corpus_documents(tmp_path / "broken.jsonl"))
