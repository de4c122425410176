"""`mnemo inspect` (mnemo/inspect_vocab.py): unreachable, intermediate-only and under-trained
tokens, on a vocabulary built by hand to hold each kind, and on a trained one."""

from __future__ import annotations

import base64
import subprocess
import unicodedata
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import mnemo
from mnemo import Tokenizer
from mnemo.inspect_vocab import FAR_BELOW, counts_left, format_report, inspect

MNEMO = str(Path(sys.executable).parent / "mnemo")

A, B, C = ord("a"), ord("b"), ord("c")


def built() -> Tokenizer:
    """Each kind once (ids in the comments; counts as tokenizer.bin would hold them):

    256 'bc'   (b, c)      merged first, so 'abc' encodes to a + 'bc' ...
    257 'ab'   (a, b)
    258 'abc'  (257, c)    ... and 258 is UNREACHABLE: its bytes give [97, 256]
    259 'xy'   (x, y) 20   every one of the 20 consumed by merge 260: INTERMEDIATE
    260 'xyz'  (259, z) 20
    261 'qu'   1000        the held-out text never holds 'qu': NEVER produced
    262 'ee'   1000        the held-out text holds it once: FAR BELOW
    263 'oo'   1000        the held-out text holds it 1000 times: none of the lists
    264 ' \\xc3' 5          a token ending inside a character: shown as ' <0xC3>'
    """
    merges = [
        (B, C), (A, B), (257, C), (ord("x"), ord("y")), (259, ord("z")),
        (ord("q"), ord("u")), (ord("e"), ord("e")), (ord("o"), ord("o")), (ord(" "), 0xC3),
    ]
    counts = [50, 40, 30, 20, 20, 1000, 1000, 1000, 5]
    return Tokenizer(merges, special_tokens=["<|end|>"], merge_counts=counts)


HELD_OUT = [("oo " * 1000).encode(), b"ee", ("xyz " * 20).encode()]


def test_each_kind_is_found() -> None:
    tok = built()
    report = inspect(tok, HELD_OUT)
    assert [(f.id, f.encodes_to, f.partial) for f in report.unreachable] == [(258, [A, 256], False)]
    assert report.intermediate is not None and [(f.id, f.used_by) for f in report.intermediate] == [(259, [260])]
    assert report.never is not None and report.far_below is not None
    assert report.never[0].id == 261 and report.never[0].seen == 0
    assert {f.id for f in report.never} == {256, 257, 258, 261, 264}  # 259: nothing left to expect
    assert [(f.id, f.seen) for f in report.far_below] == [(262, 1)]
    far = report.far_below[0]
    assert far.expected is not None and far.expected > FAR_BELOW * 1
    listed = {f.id for lst in (report.unreachable, report.intermediate, report.never, report.far_below) for f in lst}
    assert 263 not in listed and 260 not in listed


def test_counts_left_is_a_bound_on_a_trained_vocabulary(corpus_docs: Callable[..., list[str]]) -> None:
    """Trained on documents where no chunk is left out, then encoding the same documents: a
    token listed as intermediate is never produced, and no token is produced more often than
    its bound says is left."""
    docs = corpus_docs("english", max_bytes=120_000)
    tok = mnemo.train_from_iterator(docs, vocab_size=800, workers=1, max_chunk_bytes=1 << 20)
    bounds = counts_left(tok)
    assert bounds is not None
    left, _ = bounds
    seen = [0] * tok.n_vocab
    for d in docs:
        for i in tok.encode_ordinary(d):
            seen[i] += 1
    assert all(seen[256 + k] <= left[k] for k in range(len(tok.merges)))
    report = inspect(tok, [d.encode("utf-8") for d in docs])
    assert report.intermediate is not None and len(report.intermediate) > 0
    assert all(seen[f.id] == 0 for f in report.intermediate)
    assert report.never is not None and all(seen[f.id] == 0 == f.seen for f in report.never)
    # mnemo's trainer and encoder apply merges in one order: only tokens that end inside a
    # character (cut off alone by the pre-tokenizer) can fail to encode to themselves
    assert all(f.partial for f in report.unreachable)


def test_gpt2_has_unreachable_tokens(cs336_dir: Path) -> None:
    """GPT-2's vocabulary holds tokens its own merges never make from their bytes; without
    merge counts the intermediate list is unknown."""
    from mnemo.interop import load_gpt2

    tok = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    report = inspect(tok)
    assert report.intermediate is None and report.never is None
    assert len(report.unreachable) > 0
    for f in report.unreachable[:50]:
        assert tok.encode_bytes(f.raw) == f.encodes_to != [f.id]
    text = format_report(report, 5)
    assert "intermediate only: unknown" in text and "give a held-out corpus" in text


def test_a_vocabulary_with_holes(tmp_path: Path, tiktoken_ranks: Callable[[str], dict[bytes, int]]) -> None:
    """An imported id space may have holes, ids no token has (cl100k_base has 16, between its
    last rank 100255 and <|endoftext|> 100257 and before <|endofprompt|> 100276): they are
    counted among the ids and never inspected.  Before, the first hole stopped `mnemo inspect`
    with "token id ... is not in the vocabulary".  cl100k's first 3,000 ranks, with two special
    tokens placed to leave 10 + 3 holes."""
    ranks = sorted(tiktoken_ranks("cl100k_base").items(), key=lambda item: item[1])[:3000]
    path = tmp_path / "holes.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(raw) + b" %d\n" % rank for raw, rank in ranks))
    tok = mnemo.load(path, pattern="cl100k", special_tokens={"<|endoftext|>": 3010, "<|endofprompt|>": 3014})
    assert isinstance(tok, Tokenizer) and tok.n_vocab == 3015 and tok.n_tokens == 3002
    report = inspect(tok)
    assert report.unreachable, "cl100k's first ranks hold partial tokens (part of a character)"
    for f in report.unreachable:
        assert f.id < 3000 and tok.encode_bytes(f.raw) == f.encodes_to != [f.id]
    tok.save(tmp_path / "holes.bin")
    run = subprocess.run([MNEMO, "inspect", str(tmp_path / "holes.bin")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "holes.bin: 3015 ids (13 of them holes: no token has them), 2744 merges" in run.stdout
    assert f"unreachable (their own bytes encode to other ids): {len(report.unreachable)}" in run.stdout


def test_listing_and_cli(tmp_path: Path) -> None:
    tok = built()
    tok.save(tmp_path / "tok.bin")
    (tmp_path / "held.txt").write_bytes(b"<|endoftext|>".join(HELD_OUT))
    run = subprocess.run(
        [MNEMO, "inspect", str(tmp_path / "tok.bin"), "--corpus", str(tmp_path / "held.txt")],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "unreachable (their own bytes encode to other ids): 1" in out
    assert "258  'abc'" in out and "97 256" in out
    assert "intermediate only (every occurrence consumed by later merges in training): 1" in out
    assert "259  'xy'" in out
    assert "' <0xC3>'" in out  # tokshow's spelling of a byte that is not a whole character
    assert "never produced by the held-out corpus: 5" in out
    assert "far below their training count" in out and "262  'ee'" in out
    run = subprocess.run(
        [MNEMO, "inspect", str(tmp_path / "tok.bin"), "--corpus", str(tmp_path / "missing.txt")],
        capture_output=True, text=True,
    )
    assert run.returncode == 1 and "missing.txt" in run.stderr and "Traceback" not in run.stderr


def test_rows_with_double_width_characters_line_up() -> None:
    """The columns after a token's bytes start at one terminal column in every row, whatever
    the token holds: CJK (two columns a character), a combining accent (none), ASCII.  Before,
    widths were len(): each CJK character pushed its row's next columns one column right."""
    from mnemo.inspect_vocab import Finding, Report

    def display_width(text: str) -> int:  # the test's own count: East Asian W/F two, marks none
        return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    rows = ["中文字", "e\u0301t", "abcdefg", "ｆｕｌｌ", "x"]
    found = [Finding(id=300 + k, raw=r.encode(), encodes_to=[7, 8 + k]) for k, r in enumerate(rows)]
    text = format_report(Report(n_vocab=400, unreachable=found, intermediate=None, never=None, far_below=None), 10)
    lines = text.splitlines()
    header = next(line for line in lines if "encodes to" in line)
    right_edge = display_width(header[: header.index("encodes to") + len("encodes to")])
    shown = [line for line in lines if line.lstrip().startswith(tuple(str(f.id) for f in found))]
    assert len(shown) == len(rows)
    # each row ends with its right-aligned "encodes to" cell (the empty "partial" is stripped)
    assert [display_width(line) for line in shown] == [right_edge] * len(rows), text
    from mnemo.inspect_vocab import display_width as mnemo_width

    assert [mnemo_width(r) for r in rows] == [display_width(r) for r in rows] == [6, 2, 7, 8, 1]
