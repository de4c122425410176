"""Text a split regex does not match, in a tokenizer that follows tiktoken's rules (a .tiktoken
file with a regex of one's own, a tekken file, tiktoken's Encoding constructor).

tiktoken (and mistral-common, which runs it) keeps only the regex's matches: text between them
is dropped, so `' 123'` under a pattern with no branch for a space before a digit encodes as
`'123'`.  mnemo does not drop text silently: encoding such text is an InputError that names it,
unless the tokenizer was loaded with unmatched="keep" (the text is then a piece of its own, as
Hugging Face's Split keeps it).  Text the regex covers gets the reference's ids either way.  The
fuzz suite's tekken target checks the same rule on mutated files (tests/fuzz/fuzzer.py).
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mnemo
from mnemo import ConfigError, FormatError, InputError, Tokenizer
from mnemo import patterns as P
from mnemo.formats.tekken import load_tekken
from mnemo.formats.tiktoken import load_tiktoken
from mnemo.interop import from_mergeable_ranks

# No branch for white space: ' 1' (a space before a digit) and '\n' match nothing.
GAPPY = r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
TOKENS = [b"He", b"ll", b"llo", b"Hello", b" w", b"or", b" wor", b" world", b"12", b"!\n"]
COVERED = ["Hello, world!", "Hello,world!1", "x", ""]
GAPS = [("Hello, world! 123", 13), ("a\nb", 1), ("Hello  world", 5)]


def ranks() -> dict[bytes, int]:
    return {**{bytes([b]): b for b in range(256)}, **{t: 256 + k for k, t in enumerate(TOKENS)}}


def write_tiktoken(path: Path) -> Path:
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks().items()))
    return path


def write_tekken(path: Path, pattern: str = GAPPY) -> Path:
    vocab = [{"rank": r, "token_bytes": base64.b64encode(t).decode(), "token_str": None} for t, r in ranks().items()]
    config = {"pattern": pattern, "num_vocab_tokens": len(vocab), "default_vocab_size": len(vocab) + 20,
              "default_num_special_tokens": 20, "version": "v7"}  # fmt: skip
    specials = [{"rank": j, "token_str": f"<SPECIAL_{j}>", "is_control": True} for j in range(20)]
    specials[1]["token_str"], specials[2]["token_str"] = "<s>", "</s>"
    obj = {"config": config, "vocab": vocab, "version": 1, "type": "Tekken", "special_tokens": specials}
    path.write_text(json.dumps(obj))
    return path


def tiktoken_encoding() -> Any:
    tiktoken = pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")
    return tiktoken.Encoding("gappy", pat_str=GAPPY, mergeable_ranks=ranks(), special_tokens={})


def check_rule(tok: Tokenizer, reference: Any) -> None:
    """Covered text: the reference's ids.  A gap: an InputError naming its byte offset, where
    the reference drops the text (its ids decode to less than the text)."""
    for text in COVERED:
        assert tok.encode_ordinary(text) == reference(text), text
    for text, at in GAPS:
        dropped = reference(text)
        assert tok.decode(dropped) != text  # the reference lost text here...
        with pytest.raises(InputError, match=f"matches none of the text at byte {at} "):
            tok.encode_ordinary(text)  # ...which mnemo refuses to do
        with pytest.raises(InputError, match="unmatched='keep'"):
            tok.encode_batch(["Hello", text])


def test_a_tiktoken_file_with_a_gappy_regex(tmp_path: Path) -> None:
    enc = tiktoken_encoding()
    path = write_tiktoken(tmp_path / "gappy.tiktoken")
    check_rule(load_tiktoken(path, GAPPY), enc.encode_ordinary)
    check_rule(mnemo.load(path, pattern=GAPPY, special_tokens={}), enc.encode_ordinary)
    check_rule(from_mergeable_ranks(ranks(), GAPPY), enc.encode_ordinary)


def test_tiktokens_encoding_constructor(tmp_path: Path) -> None:
    enc = tiktoken_encoding()
    from mnemo.formats.openai import encoding

    check_rule(encoding("gappy", pat_str=GAPPY, mergeable_ranks=ranks(), special_tokens={}), enc.encode_ordinary)


def test_a_tekken_file_with_a_gappy_pattern(tmp_path: Path) -> None:
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken", reason="mistral-common is not installed")
    path = write_tekken(tmp_path / "gappy.json")
    ref = tekken.Tekkenizer.from_file(path)
    check_rule(load_tekken(path), lambda t: list(ref.encode(t, bos=False, eos=False)))
    check_rule(mnemo.load(path), lambda t: list(ref.encode(t, bos=False, eos=False)))


#: The fuzzer's finding (a tekken pattern whose digit branch is `\p{N}*+`): it matches the empty
#: string at ";", where tiktoken skips the ";" and the `regex` module matched it by the next branch.
EMPTY = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}*+| ?[^\s\p{L}\p{N}]++|\s+(?!\S)|\s"""


def test_a_regex_that_matches_the_empty_string_is_refused_under_tiktokens_rules(tmp_path: Path) -> None:
    """tiktoken skips the character after an empty match (it drops ";" from "café; x"), and panics
    on an empty piece (""); the `regex` module matched ";" by the next branch, so mnemo's ids
    were not the reference's, silently.  Such a regex is refused where tiktoken's rules apply,
    with the probe it matched empty at; `unmatched="keep"` (Hugging Face's Split) still takes it."""
    path = write_tiktoken(tmp_path / "empty.tiktoken")
    with pytest.raises(ConfigError, match=r"matches the empty string \(in an empty text\)"):
        load_tiktoken(path, EMPTY)
    with pytest.raises(ConfigError, match=r"matches the empty string \(at the start of 'a'\)"):
        load_tiktoken(path, r"\p{L}+(?=b)|(?=a)|\s")  # a lookahead alone
    with pytest.raises(ConfigError, match=r"matches the empty string \(at the start of ';'\)"):
        from_mergeable_ranks(ranks(), r"\p{L}+|\s+|\p{N}+|(?=;)")
    with pytest.raises(FormatError, match=r"config\.pattern: the split regex .* matches the empty string"):
        load_tekken(write_tekken(tmp_path / "empty.json", EMPTY))
    assert load_tiktoken(path, EMPTY, unmatched="keep").encode_ordinary("café; x")
    # a regex whose every branch takes a character is not refused: GAPPY leaves text unmatched,
    # which is the other rule (an InputError per text), not an empty match
    assert load_tiktoken(path, GAPPY).encode_ordinary("Hello")


def test_unmatched_keep_keeps_the_text(tmp_path: Path) -> None:
    """unmatched="keep": the gap is a piece of its own, so the text comes back whole; covered
    text still gets the reference's ids.  The two rules are two tokenizers (fingerprints)."""
    enc = tiktoken_encoding()
    path = write_tiktoken(tmp_path / "gappy.tiktoken")
    for keep in (load_tiktoken(path, GAPPY, unmatched="keep"), mnemo.load(write_tekken(tmp_path / "t.json"), unmatched="keep")):
        for text, _ in GAPS:
            assert keep.decode(keep.encode_ordinary(text)) == text
    keep = load_tiktoken(path, GAPPY, unmatched="keep")
    for text in COVERED:
        assert keep.encode_ordinary(text) == enc.encode_ordinary(text)
    assert keep.encode_ordinary(" 1") == [32, 49]
    assert keep.fingerprint != load_tiktoken(path, GAPPY).fingerprint
    with pytest.raises(mnemo.ConfigError, match="unmatched='drop'"):
        load_tiktoken(path, GAPPY, unmatched="drop")
    with pytest.raises(mnemo.ConfigError, match="unmatched='drop'"):
        mnemo.load(path, pattern=GAPPY, special_tokens={}, unmatched="drop")


def test_the_rule_is_saved_with_the_tokenizer(tmp_path: Path) -> None:
    """tokenizer.bin v3's pattern description carries the rule, and so does a pickled
    Tokenizer; both read back refuse as the original does."""
    import pickle

    tok = load_tekken(write_tekken(tmp_path / "gappy.json"))
    tok.save(tmp_path / "gappy.bin")
    for again in (Tokenizer.load(tmp_path / "gappy.bin"), pickle.loads(pickle.dumps(tok))):
        assert again.fingerprint == tok.fingerprint
        assert again.encode_ordinary("Hello,world!") == tok.encode_ordinary("Hello,world!")
        with pytest.raises(InputError, match="matches none of the text"):
            again.encode_ordinary("Hello 1")


def test_workers_refuse_too(tmp_path: Path) -> None:
    """encode_batch's worker processes rebuild the pattern from its description: the rule goes
    with it."""
    tok = load_tiktoken(write_tiktoken(tmp_path / "gappy.tiktoken"), GAPPY)
    from mnemo.batch_encode import BATCH_PARALLEL_BYTES

    texts = ["Hello,world!" * 200] * (BATCH_PARALLEL_BYTES // 2000)  # large enough for the workers
    assert tok.encode_batch(texts, workers=2) == [tok.encode_ordinary(texts[0])] * len(texts)
    with pytest.raises(InputError, match="matches none of the text"):
        tok.encode_batch(texts + ["Hello 1"], workers=2)


def test_a_preset_regex_in_a_file_is_the_preset() -> None:
    """A file whose regex is a preset's (a real tekken file's is tekken's) keeps the preset's
    pattern: the presets match every character (the test below)."""
    for name in ("tekken", "llama3", "cl100k", "o200k"):
        sp = P.compile_pattern(P.PRESETS[name].steps[0].regex, "tiktoken")
        assert P.refusing(sp) is sp
    gappy = P.refusing(P.compile_pattern(GAPPY))
    assert gappy.steps[0].unmatched == "refuse" and P.refusing(gappy) is gappy
    assert P.pattern_from_dict(json.loads(P.key_of(gappy))) is gappy


ONE_REGEX_PRESETS = [name for name, p in P.PRESETS.items() if len(p.steps) == 1]
CHARS = st.characters(codec="utf-8", exclude_categories=["Cs"])


@pytest.mark.parametrize("name", ONE_REGEX_PRESETS)
@settings(max_examples=150, deadline=None)
@given(text=st.text(CHARS, max_size=40))
def test_presets_match_every_character(name: str, text: str) -> None:
    """Why refusing() leaves the presets alone: each one-regex preset, made to refuse gaps,
    splits any text (here random text of every category) without one."""
    preset = P.compile_pattern(name)
    strict = P.compile_steps((replace(preset.steps[0], unmatched="refuse"),), preset.unicode)
    assert P.split(text, strict) == P.split(text, preset)


def test_refuse_is_only_for_isolated_steps() -> None:
    with pytest.raises(mnemo.ConfigError, match="isolated, not inverted"):
        P.compile_steps((P.SplitStep(r"\s+", invert=True, unmatched="refuse"),), "regex")
    with pytest.raises(mnemo.ConfigError, match="'keep' or 'refuse'"):
        P.compile_steps((P.SplitStep(r"\s+", unmatched="drop"),), "regex")
