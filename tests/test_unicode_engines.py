r"""Every code point, against the reference engines themselves (issue 26 item 7).

The reference engines hold older Unicode tables than the `regex` module mnemo's own tables come
from: tiktoken 0.14 (Rust's regex) and tokenizers 0.23 (Oniguruma) hold Unicode 16.0, regex 18.0
(mnemo/_unicode_data.py, probed from each engine by tools/gen_unicode_tables.py).  A pattern
compiled with an engine's Unicode version must split every code point as that engine does:

- tiktoken: cl100k_base and o200k_base loaded by mnemo.load_tiktoken(..., unicode="tiktoken")
  give tiktoken's ids;
- tokenizers: its Split pre-tokenizer (and its Digits, for StarCoder2) gives mnemo's pieces for
  the presets tokenizers runs.

Each code point but the surrogates (which no str holds) appears in three contexts -- alone
between line breaks, after a letter, before a space and a letter ("\nC\naC x") -- in one text,
compared block by block so that a difference names its code point.  Each check also shows it can
fail: mnemo's own tables (18.0) give other results on the letters and digits new since 16.0.
The tokenizers walk takes three patterns that between them use every class the presets use
(the case classes and marks of o200k, the punctuation, symbols and CJK ranges of DeepSeek-V3,
\p{L} \p{N} \s and the Digits pre-tokenizer of StarCoder2).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

import mnemo
from mnemo import _unicode_data as udata
from mnemo import patterns as P

TIKTOKEN_DIR = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "tiktoken"
BLOCK = 1 << 14  # code points per compared block

# A letter new in Unicode 17 (U+058B), a Tolong Siki digit (U+11DE0, 17.0) and a cuneiform
# numeral (U+12550, 18.0): the walk's proof that 16.0 and 18.0 tables split differently.
NEW_SINCE_16 = "\u058b\U00011de0\U00012550"


def contexts(cps: range) -> str:
    return "".join(f"\n{chr(c)}\na{chr(c)} x" for c in cps if not 0xD800 <= c <= 0xDFFF)


BLOCKS = [range(start, min(start + BLOCK, 0x110000)) for start in range(0, 0x110000, BLOCK)]


def first_difference(got: list[Any], want: list[Any], text: str, pieces: list[str] | None = None) -> str:
    k = next(i for i, (g, w) in enumerate(zip(got + [None], want + [None])) if g != w)
    if pieces is not None:
        where = sum(len(p) for p in pieces[:k])
        return f"piece {k}: {got[k:k + 3]} != {want[k:k + 3]} near {text[max(0, where - 5):where + 10]!r}"
    return f"id {k}: {got[k:k + 5]} != {want[k:k + 5]}"


# ---- tiktoken ------------------------------------------------------------------------------


def tiktoken_encoding(name: str, tmp: Path) -> Any:
    """tiktoken's own Encoding `name`, built offline from the fixture (its loader checks the
    hash), as tests/test_tiktoken_vocabs.py builds it."""
    tiktoken = pytest.importorskip("tiktoken")
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    from tiktoken.load import load_tiktoken_bpe

    gz = TIKTOKEN_DIR / f"{name}.tiktoken.gz"
    if not gz.is_file():
        pytest.skip(f"fixture {gz} is absent (../shared/fixtures/tiktoken beside the repo)")
    plain = tmp / f"{name}.tiktoken"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))

    def local(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return load_tiktoken_bpe(str(plain), expected_hash=expected_hash)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(tmp / "cache"))
        mp.setattr(openai_public, "load_tiktoken_bpe", local)
        return tiktoken.Encoding(**getattr(openai_public, name)())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_every_code_point_against_tiktoken(name: str, tmp_path: Path) -> None:
    enc = tiktoken_encoding(name, tmp_path)
    tok = mnemo.load_tiktoken(TIKTOKEN_DIR / f"{name}.tiktoken.gz", name, unicode="tiktoken")
    assert tok.split_pattern.unicode == udata.ENGINES["tiktoken"]
    for cps in BLOCKS:
        text = contexts(cps)
        got, want = tok.encode_ordinary(text), enc.encode_ordinary(text)
        if got != want:
            pytest.fail(f"{name}, U+{cps.start:04X}..U+{cps.stop - 1:04X}: {first_difference(got, want, text)}")
    # the walk can fail: mnemo's own tables split a letter new in 17.0 otherwise
    own = mnemo.load_tiktoken(TIKTOKEN_DIR / f"{name}.tiktoken.gz", name)
    assert own.encode_ordinary("\u058b/U") != enc.encode_ordinary("\u058b/U") == tok.encode_ordinary("\u058b/U")


def test_the_issues_example() -> None:
    """cl100k on '\\u058b/U': mnemo's own tables make U+058B a letter, so the '/' prefixes 'U'
    apart from it; tiktoken's (16.0) do not, so '\\u058b/' is one punctuation run."""
    gz = TIKTOKEN_DIR / "cl100k_base.tiktoken.gz"
    if not gz.is_file():
        pytest.skip(f"fixture {gz} is absent")
    assert mnemo.load_tiktoken(gz, "cl100k_base").encode_ordinary("\u058b/U") == [146, 233, 63110]
    assert mnemo.load_tiktoken(gz, "cl100k_base", unicode="tiktoken").encode_ordinary("\u058b/U") == [146, 233, 14, 52]


# ---- tokenizers ----------------------------------------------------------------------------

TOKENIZERS_PATTERNS = ["deepseek-v3", "starcoder2", "o200k"]


def hf_pre_tokenizer(sp: P.SplitPattern) -> Any:
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    from tokenizers import Regex

    steps = [
        pre_tokenizers.Digits(individual_digits=s.behavior == "isolated")
        if s.kind == "digits"
        else pre_tokenizers.Split(Regex(s.regex), behavior=s.behavior, invert=s.invert)
        for s in sp.steps
    ]
    return steps[0] if len(steps) == 1 else pre_tokenizers.Sequence(steps)


@pytest.mark.slow
@pytest.mark.parametrize("spec", TOKENIZERS_PATTERNS)
def test_every_code_point_against_tokenizers(spec: str) -> None:
    sp = P.compile_pattern(spec, "tokenizers")
    pre = hf_pre_tokenizer(sp)
    for cps in BLOCKS:
        text = contexts(cps)
        got = P.split(text, sp)
        want = [piece for piece, _ in pre.pre_tokenize_str(text)]
        if got != want:
            pytest.fail(f"{spec!r}, U+{cps.start:04X}..U+{cps.stop - 1:04X}: {first_difference(got, want, text, got)}")
    text = contexts(range(0x580, 0x590)) + NEW_SINCE_16 + "a" + NEW_SINCE_16
    assert [p for p, _ in pre.pre_tokenize_str(text)] == P.split(text, sp) != P.split(text, P.compile_pattern(spec, "regex"))
