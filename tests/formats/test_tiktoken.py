"""tiktoken's vocabularies: mergeable ranks, .tiktoken files and tiktoken.Encoding
(mnemo/formats/tiktoken.py, docs/interop.md).  OpenAI's real encodings: tests/test_tiktoken_vocabs.py."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemo import ConfigError, FormatError, Tokenizer, UnknownTokenError
from mnemo.formats.tiktoken import _split_by_ranks, load_tiktoken, save_tiktoken, tiktoken_args, to_tiktoken

EOT = "<|endoftext|>"
CORPORA = ["english", "multilingual", "code", "chat"]


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
    pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")
    enc = to_tiktoken(trained)
    save_tiktoken(trained, tmp_path / "t.tiktoken")
    back = load_tiktoken(tmp_path / "t.tiktoken", trained.pattern, trained.special_tokens)
    assert back.fingerprint == trained.fingerprint
    for name in CORPORA:
        for doc in corpus_docs(name, max_bytes=100_000):
            ids = trained.encode(doc, disallowed_special=())
            assert enc.encode(doc, disallowed_special=()) == ids
            assert back.encode(doc, disallowed_special=()) == ids


def tiktoken_lines(extra: list[str]) -> str:
    import base64

    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    return "\n".join(lines + extra) + "\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["YWI= 256", "YWI= 257"], r"line 258: token b'ab' is listed again \(first on line 257\)"),
        (["YWI= 256", "YmM= 256"], r"line 258: rank 256 is given again \(first on line 257\)"),
        (["YWI=256"], r"line 257: 'YWI=256' should be 'BASE64 RANK'"),
        (["Y*I= 256"], r"line 257: 'Y\*I=' is not valid base64"),
        (["YWI= -1"], r"line 257: rank '-1' is not a non-negative integer"),
    ],
)
def test_tiktoken_malformed(tmp_path: Path, extra: list[str], message: str) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_text(tiktoken_lines(extra), encoding="ascii")
    with pytest.raises(FormatError, match=message):
        load_tiktoken(path, "gpt2")


def test_tiktoken_ranks_may_leave_gaps(tmp_path: Path) -> None:
    """tiktoken takes a rank file with gaps (p50k_base's has no rank 50256): each gap is a hole
    of the id space, and the ids are tiktoken's."""
    tiktoken = pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")
    import base64

    path = tmp_path / "gaps.tiktoken"
    path.write_text(tiktoken_lines(["YWI= 300", f"{base64.b64encode(b'abc').decode()} 1000"]), encoding="ascii")
    tok = load_tiktoken(path, "gpt2", {EOT: 500})
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 300, b"abc": 1000}
    enc = tiktoken.Encoding("gaps", pat_str=tiktoken_args(tok)["pat_str"], mergeable_ranks=ranks, special_tokens={EOT: 500})
    text = "abc ab abd" + EOT
    # "abc" is a token; " ab" and " abd" glue a,b (300) only; the special's id fills rank 500's gap
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all") == [1000, 32, 300, 32, 300, 100, 500]
    assert tok.n_vocab == enc.n_vocab == 1001 and tok.n_tokens == 259
    with pytest.raises(UnknownTokenError, match="token id 299 "):
        tok.decode([299])


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
        from mnemo.formats.tiktoken import load_tiktoken
        try:
            load_tiktoken({str(path)!r}, "gpt2")
        except FormatError as exc:
            print(exc)
        """,
        tmp_path,
    )
    assert "big.tiktoken: line 257 has id 100000000000, above 2147483647" in out
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
        assert _split_by_ranks(raw, ranks, limit) == obvious(raw, ranks, limit), (raw, limit)
