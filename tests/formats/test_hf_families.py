"""Hugging Face tokenizer.json of the byte-level BPE family (issue 26 item 3): mnemo's ids are
`tokenizers`' ids.

The files are built by `tokenizers` itself (conftest.hf_families), one per family, trained on
the corpora: Llama 3 style (ignore_merges with 300 whole words no merge makes, a BOS template
after ByteLevel), Qwen2 style (NFC, single digits), DeepSeek-V3 style (a Sequence of three
Splits -- digit groups, a CJK run, the main regex -- then ByteLevel without its regex, an
empty normalizer Sequence, a BOS template), StarCoder2 style (Digits individual, then
ByteLevel with its regex).  Each also holds added tokens with lstrip, rstrip, both,
single_word, not special, normalized (conftest.EXTRA_ADDED).

Oracle: `tokenizers.Tokenizer.from_file(...).encode(text, add_special_tokens=...)`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mnemo
from mnemo import FormatError, HFTokenizer, SpecialTokenError
from mnemo.formats.common import token_to_string
from mnemo.formats.hf import from_hf_json, load_hf

FAMILIES = ("llama3", "qwen2", "deepseek-v3", "starcoder2")
CORPORA = ("english", "multilingual", "code", "chat")
#: documents of each corpus compared (all of them with --full-corpus)
N_DOCS = 2000


def need(module: str) -> Any:
    return pytest.importorskip(module, reason=f"the {module} package is not installed (pip install '.[test]')")


def hf_of(path: Path) -> Any:
    return need("tokenizers").Tokenizer.from_file(str(path))


def first_difference(a: list[int], b: list[int]) -> str:
    k = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at id {k}: tokenizers {a[max(0, k - 3) : k + 4]}, mnemo {b[max(0, k - 3) : k + 4]}"


@pytest.mark.corpus
@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_ids_equal_tokenizers_on_the_corpus(
    family: str, corpus: str, hf_families: dict[str, Path], corpus_docs: Callable[..., list[str]], full_corpus: bool
) -> None:
    path = hf_families[family]
    hf = hf_of(path)
    tok = load_hf(path)
    assert isinstance(tok, HFTokenizer)
    docs = corpus_docs(corpus, 20_000_000)
    if not full_corpus:
        docs = docs[:N_DOCS]
    assert len(docs) >= N_DOCS or full_corpus
    expected = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
    for n, (doc, ids) in enumerate(zip(docs, expected)):
        got = tok.encode(doc, allowed_special="all")
        assert got == ids, f"{family} {corpus} document {n}: {first_difference(ids, got)}"


@pytest.mark.parametrize("family", FAMILIES)
def test_family_hard_cases(family: str, hf_families: dict[str, Path], hard_cases: Callable[[list[str]], list[str]]) -> None:
    path = hf_families[family]
    hf = hf_of(path)
    obj = json.loads(path.read_text(encoding="utf-8"))
    specials = [t["content"] for t in obj["added_tokens"] if t["special"]]
    tok = load_hf(path)
    with_template = load_hf(path, add_special_tokens=True)
    assert isinstance(tok, HFTokenizer) and isinstance(with_template, HFTokenizer)
    for text in hard_cases(specials):
        expected = hf.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, allowed_special="all") == expected, f"{family} {text[:60]!r}"
        assert with_template.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=True).ids
        assert tok.encode(text, allowed_special="all", add_special_tokens=True) == hf.encode(text).ids
        assert tok.decode(expected) == hf.decode(expected, skip_special_tokens=False)
        assert tok.decode(expected, skip_special_tokens=True) == hf.decode(expected, skip_special_tokens=True)


def test_the_issues_lstrip_example(gpt2: mnemo.Tokenizer) -> None:
    """Issue 26: for "Hello <|endoftext|> it" with lstrip, mnemo gave [15496, 220, 50256, 340]
    where tokenizers gives [15496, 50256, 340], silently."""
    tokenizers = need("tokenizers")
    obj = mnemo.interop.to_hf_json(gpt2)
    obj["added_tokens"][0]["lstrip"] = True
    hf = tokenizers.Tokenizer.from_str(json.dumps(obj))
    text = "Hello <|endoftext|> it"
    assert hf.encode(text, add_special_tokens=False).ids == [15496, 50256, 340]
    tok = from_hf_json(obj)
    assert isinstance(tok, HFTokenizer)
    assert tok.encode(text, allowed_special="all") == [15496, 50256, 340]
    obj["added_tokens"][0]["lstrip"] = False
    assert from_hf_json(obj).encode(text, allowed_special="all") == [15496, 220, 50256, 340]


def test_the_parts_that_matter_do_change_ids(
    hf_families: dict[str, Path], corpus_docs: Callable[..., list[str]]
) -> None:
    """The comparisons above are not vacuous: ignore_merges changes Llama 3 style ids on the
    corpus, and NFC changes Qwen2 style text there (so both paths are exercised)."""
    tokenizers = need("tokenizers")
    hf = hf_of(hf_families["llama3"])
    obj = json.loads(hf_families["llama3"].read_text(encoding="utf-8"))
    obj["model"]["ignore_merges"] = False
    hf_bpe_only = tokenizers.Tokenizer.from_str(json.dumps(obj))
    tok = load_hf(hf_families["llama3"])
    assert isinstance(tok, HFTokenizer) and tok.whole is not None
    docs = corpus_docs("english", 2_000_000)[:300]
    changed = sum(
        1 for d in docs if hf_bpe_only.encode(d, add_special_tokens=False).ids != hf.encode(d, add_special_tokens=False).ids
    )
    assert changed > 30
    qwen = load_hf(hf_families["qwen2"])
    assert isinstance(qwen, HFTokenizer)
    multi = corpus_docs("multilingual", 4_000_000)[:1000]
    assert sum(1 for d in multi if qwen.normalize(d) != d) > 5


def test_the_special_token_contract(hf_families: dict[str, Path]) -> None:
    """mnemo's contract (tiktoken's) for the special added tokens; non-special added tokens
    are matched always, as in tokenizers."""
    tok = load_hf(hf_families["qwen2"])
    assert isinstance(tok, HFTokenizer)
    with pytest.raises(SpecialTokenError, match=r"<\|endoftext\|>"):
        tok.encode("a <|endoftext|> b")
    hf = hf_of(hf_families["qwen2"])
    think = hf.token_to_id("<think>")
    assert think in tok.encode("a <think> b")
    plain = tok.encode_ordinary("a <|endoftext|> b")
    assert tok.special_tokens["<|endoftext|>"] not in plain
    hf.encode_special_tokens = True
    assert plain == hf.encode("a <|endoftext|> b", add_special_tokens=False).ids
    assert tok.encode("a <|endoftext|> b", disallowed_special=()) == plain


BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


@pytest.mark.corpus
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("behavior", BEHAVIORS)
def test_every_split_behavior(
    behavior: str,
    invert: bool,
    hf_families: dict[str, Path],
    corpus_docs: Callable[..., list[str]],
    hard_cases: Callable[[list[str]], list[str]],
) -> None:
    """A Split of each behavior, inverted or not, before ByteLevel with its regex, on the
    StarCoder2-style vocabulary; a String pattern too; and ByteLevel's add_prefix_space."""
    tokenizers = need("tokenizers")
    obj = json.loads(hf_families["starcoder2"].read_text(encoding="utf-8"))
    docs = corpus_docs("code", 2_000_000)[:150] + corpus_docs("multilingual", 2_000_000)[:150]
    specials = [t["content"] for t in obj["added_tokens"] if t["special"]]
    texts = docs + hard_cases(specials)
    for pattern, prefix in (({"Regex": r"\s*[,;]\s*|\p{N}+"}, False), ({"String": ", "}, True)):
        obj["pre_tokenizer"] = {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert},
                {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": True},
            ],
        }
        hf = tokenizers.Tokenizer.from_str(json.dumps(obj))
        tok = from_hf_json(obj)
        for n, text in enumerate(texts):
            expected = hf.encode(text, add_special_tokens=False).ids
            got = tok.encode(text, allowed_special="all")
            assert got == expected, f"{behavior} invert={invert} {pattern} text {n}: {first_difference(expected, got)}"


def test_byte_level_alone_with_a_prefix_space(
    hf_families: dict[str, Path], corpus_docs: Callable[..., list[str]], hard_cases: Callable[[list[str]], list[str]]
) -> None:
    """ByteLevel(add_prefix_space) puts a space before every piece the steps before it left
    (here: each stretch between added tokens), with and without its regex."""
    tokenizers = need("tokenizers")
    obj = json.loads(hf_families["qwen2"].read_text(encoding="utf-8"))
    specials = [t["content"] for t in obj["added_tokens"] if t["special"]]
    texts = corpus_docs("english", 2_000_000)[:100] + hard_cases(specials)
    for use_regex in (True, False):
        obj["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": use_regex}
        hf = tokenizers.Tokenizer.from_str(json.dumps(obj))
        tok = from_hf_json(obj)
        for text in texts:
            assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids


def test_a_plain_file_is_a_plain_tokenizer(gpt2: mnemo.Tokenizer, hf_families: dict[str, Path]) -> None:
    """A file a Tokenizer holds whole loads as one (tiktoken's contract, the compiled path);
    the families need the pipeline, and say why."""
    assert isinstance(from_hf_json(mnemo.interop.to_hf_json(gpt2)), mnemo.Tokenizer)
    loaded = {name: load_hf(path) for name, path in hf_families.items()}
    extras = {name: tok.extras() for name, tok in loaded.items() if isinstance(tok, HFTokenizer)}
    assert any("normalizer NFC" in e for e in extras["qwen2"])
    assert "model.ignore_merges" in extras["llama3"]
    # DeepSeek-V3's three Splits compile (on tokenizers' Unicode tables): only its added tokens
    # (lstrip, rstrip, single_word) keep it from being a Tokenizer
    assert not any(e.startswith("pre_tokenizer") for e in extras["deepseek-v3"])
    assert any(e.startswith("added_tokens") for e in extras["deepseek-v3"])


REFUSED: list[tuple[str, Any, str]] = [
    ("model.byte_fallback", True, r"key 'model.byte_fallback' is true"),
    ("model.dropout", 0.1, r"key 'model.dropout' is 0.1"),
    ("model.continuing_subword_prefix", "##", r"key 'model.continuing_subword_prefix'"),
    ("model.end_of_word_suffix", "</w>", r"key 'model.end_of_word_suffix'"),
    ("model.type", "WordPiece", r"key 'model.type' is 'WordPiece'"),
    ("normalizer", {"type": "Lowercase"}, r"key 'normalizer' is .*Lowercase"),
    ("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFD"}]}, r"normalizers\[1\]' is .*NFD"),
    ("pre_tokenizer", {"type": "Metaspace", "replacement": "\u2581"}, r"key 'pre_tokenizer' is .*Metaspace"),
    (
        "pre_tokenizer",
        {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "use_regex": True}, {"type": "Digits"}]},
        r"pretokenizers\[1\]' is .*after ByteLevel",
    ),
    ("pre_tokenizer", {"type": "Split", "pattern": {"Regex": r"\s+"}, "behavior": "Isolated", "invert": False}, "no ByteLevel"),
    (
        "pre_tokenizer",
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\w+"}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "use_regex": False}]},
        r"pretokenizers\[0\].pattern.Regex' is '\\\\w\+': the escape \\w",
    ),
    ("post_processor", {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}, r"key 'post_processor' is .*Roberta"),
    ("truncation", {"max_length": 8, "strategy": "LongestFirst", "stride": 0, "direction": "Right"}, r"key 'truncation'"),
    ("padding", {"strategy": "BatchLongest"}, r"key 'padding'"),
    ("decoder", {"type": "Metaspace"}, r"key 'decoder' is .*not a ByteLevel decoder"),
]


@pytest.mark.parametrize(("key", "value", "message"), REFUSED, ids=[f"{k}={json.dumps(v)[:30]}" for k, v, _ in REFUSED])
def test_every_field_mnemo_does_not_reproduce_is_refused_by_name(
    key: str, value: Any, message: str, hf_families: dict[str, Path]
) -> None:
    obj = json.loads(hf_families["starcoder2"].read_text(encoding="utf-8"))
    node = obj
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    with pytest.raises(FormatError, match=message):
        from_hf_json(obj, "t.json")


def test_tokens_no_merge_makes(hf_families: dict[str, Path]) -> None:
    """With ignore_merges, a token no merge makes -- text or not -- is held by the core as a
    whole token of a ranked vocabulary (issue 26 item 1) and produced whole, as tokenizers
    does; without, tokenizers never produces one, and one that is not text is refused."""
    tokenizers = need("tokenizers")
    obj = json.loads(hf_families["llama3"].read_text(encoding="utf-8"))
    vocab = obj["model"]["vocab"]
    # " éü" (one pre-token, 5 bytes no merge makes), and the bytes e2 82 (not text on their own)
    piece = " \u00e9\u00fc"
    vocab[token_to_string(piece.encode("utf-8"))] = len(vocab)
    vocab[token_to_string(b"\xe2\x82")] = len(vocab)
    hf = tokenizers.Tokenizer.from_str(json.dumps(obj))
    tok = from_hf_json(obj)
    assert isinstance(tok, HFTokenizer) and tok.core.ranked
    for text in (f"x{piece} y", f"{piece}{piece}", "plain words here \u20ac"):
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids
    assert hf.encode(f"x{piece}", add_special_tokens=False).ids[-1] == len(vocab) - 2
    assert tok.decode([len(vocab) - 2, len(vocab) - 1]) == hf.decode([len(vocab) - 2, len(vocab) - 1])
    plain = json.loads(hf_families["starcoder2"].read_text(encoding="utf-8"))
    plain["model"]["vocab"][token_to_string(b"\xe2\x82")] = 99_999  # not UTF-8 on their own
    with pytest.raises(FormatError, match=r"made by no merge and is not UTF-8 text, and without ignore_merges"):
        from_hf_json(plain, "t.json")


def test_added_tokens_take_the_ids_tokenizers_gives_them(hf_families: dict[str, Path]) -> None:
    """tokenizers numbers the added tokens model.vocab lacks from its size on, whatever id the
    file writes (its deserializer calls add_tokens): mnemo does the same; an id that lands on a
    model.vocab entry would name two tokens, and is refused."""
    tokenizers = need("tokenizers")
    obj = json.loads(hf_families["starcoder2"].read_text(encoding="utf-8"))
    extra = next(t for t in obj["added_tokens"] if t["content"] == "<|ls|>")
    extra["id"] = 123_456
    hf = tokenizers.Tokenizer.from_str(json.dumps(obj))
    tok = from_hf_json(obj)
    assert hf.token_to_id("<|ls|>") != 123_456
    assert tok.encode("x <|ls|> y", allowed_special="all") == hf.encode("x <|ls|> y", add_special_tokens=False).ids
    vocab = obj["model"]["vocab"]
    vocab[token_to_string(b"zzzzzz")] = len(vocab) + 2  # where tokenizers will number an added token
    with pytest.raises(FormatError, match=r"tokenizers gives .* the id \d+ .*one id for two tokens"):
        from_hf_json(obj, "t.json")


def contexts(cps: range) -> str:
    """Each code point alone between line breaks, after a letter, before a space and a letter
    (as tests/test_unicode_engines.py walks them)."""
    return "".join(f"\n{chr(c)}\na{chr(c)} x" for c in cps if not 0xD800 <= c <= 0xDFFF)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_letters_new_since_unicode_16_take_tokenizers_ids(family: str, hf_families: dict[str, Path]) -> None:
    """Issue 26 item 7 for imports: a tokenizer.json's pre-tokenizer runs compiled on the
    Unicode tables tokenizers holds (16.0), so every code point gets tokenizers' ids -- checked
    on each block of 16,384 code points where those tables and the `regex` module's (18.0,
    which the plain-Python run uses) split the family's pattern otherwise, and on the first
    block.  The plain-Python run differs there: the walk can fail."""
    from mnemo import patterns as P

    path = hf_families[family]
    hf = hf_of(path)
    tok = load_hf(path)
    assert isinstance(tok, HFTokenizer)
    compiled = tok._runner.pattern
    assert compiled is not None and compiled.unicode == "16.0.0", tok.pattern_description()
    assert "(compiled, Unicode 16.0.0)" in tok.pattern_description()
    newer = P.compile_steps(compiled.steps, "regex")
    blocks = [range(s, min(s + (1 << 14), 0x110000)) for s in range(0, 0x110000, 1 << 14)]
    differing = [b for b in blocks if P.split(contexts(b), compiled) != P.split(contexts(b), newer)]
    assert differing, "the two tables split alike everywhere: this walk would prove nothing"
    for cps in [blocks[0], *differing]:
        text = contexts(cps)
        want = hf.encode(text, add_special_tokens=False).ids
        got = tok.encode(text, allowed_special="all")
        assert got == want, f"{family}, U+{cps.start:04X}..U+{cps.stop - 1:04X}: {first_difference(want, got)}"
        # the plain-Python run follows tokenizers' tables too (mnemo/regex_tables.py)
        assert tok._runner.split_in_python(text) == tok._runner.split(text)


#: a Split regex outside the family (a lookbehind; "in" under (?i), where U+0130 is `regex`'s
#: (?i:i) and not Oniguruma's), spelt as Oniguruma and `regex` both read it
LOOKBEHIND = r"""(?<=\s)\p{L}+|(?i:'s|'t|'re|'ve|'m|'ll|'d|in)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
BYTE_LEVEL_PREFIX = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
BYTE_LEVEL_ALONE = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
OUTSIDE_THE_FAMILY = {
    "split": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LOOKBEHIND}, "behavior": "Isolated", "invert": False}, BYTE_LEVEL_ALONE,
    ]},
    "add_prefix_space": BYTE_LEVEL_PREFIX,
    "digits, merged, prefix": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": False},
        {"type": "Split", "pattern": {"Regex": LOOKBEHIND}, "behavior": "MergedWithNext", "invert": False},
        BYTE_LEVEL_PREFIX,
    ]},
}  # fmt: skip


@pytest.mark.parametrize("case", OUTSIDE_THE_FAMILY)
def test_a_pre_tokenizer_outside_the_family_takes_tokenizers_ids_on_every_mark(case: str, gpt2: mnemo.Tokenizer) -> None:
    """Issue 26 item 7 for what the scanner does not compile (it runs through the `regex` module
    in plain Python): GPT-2's vocabulary with a non-family Split regex, with ByteLevel's
    add_prefix_space, and with both after a Digits step, against tokenizers on every code point
    where its tables and the `regex` module's differ (regex_tables' marks, 17,812) in three
    contexts, and on 2,000 others.  The `regex` module's own tables give other ids there."""
    import random

    from mnemo import regex_tables as rt

    tokenizers = need("tokenizers")
    obj = mnemo.interop.to_hf_json(gpt2)
    obj["pre_tokenizer"] = OUTSIDE_THE_FAMILY[case]
    hf = tokenizers.Tokenizer.from_str(json.dumps(obj))
    tok = from_hf_json(obj)
    assert isinstance(tok, HFTokenizer) and tok._runner.pattern is None
    assert tok.pattern_description().endswith("(the regex module, Unicode 16.0.0)")
    marks = set(rt.follow(LOOKBEHIND, "16.0.0").marks)
    others = random.Random(26).sample([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and c not in marks], 2000)
    texts = [t for c in [*sorted(marks), *others] for t in (f"a{chr(c)}b", f" {chr(c)}9", f"\u0130{chr(c)}in x")]
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    for text, ids in zip(texts, want):
        assert tok.encode(text) == ids, f"{case}: {text!r}: {first_difference(ids, tok.encode(text))}"
    # the `regex` module's own tables, as before, cut those texts otherwise (and so give other ids
    # wherever the vocabulary has a merge across the cut)
    pieces = [tok.pre_tokenize(t) for t in texts]
    tok._runner.compiled[:] = [rt.TableRegex(tr.native, None, None) if tr is not None else None for tr in tok._runner.compiled]
    assert sum(tok.pre_tokenize(t) != p for t, p in zip(texts, pieces)) > 10_000


def test_a_split_regex_holding_a_script_runs_on_the_regex_modules_tables_and_says_so(gpt2: mnemo.Tokenizer) -> None:
    """A property mnemo holds no older table of (a script) cannot follow tokenizers' tables: the
    file still loads, and pattern_description says which tables the step runs on."""
    obj = mnemo.interop.to_hf_json(gpt2)
    obj["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\p{Han}+|(?<=\s)\p{L}+"}, "behavior": "Isolated", "invert": False},
        BYTE_LEVEL_ALONE,
    ]}  # fmt: skip
    tok = from_hf_json(obj)
    assert isinstance(tok, HFTokenizer)
    assert r"(the regex module, on its own Unicode tables: pre_tokenizer.pretokenizers[0].pattern.Regex: the property \p{Han}" in (
        tok.pattern_description()
    )


def test_a_compiled_sequence_loads_as_a_tokenizer(
    hf_families: dict[str, Path], tmp_path: Path, corpus_docs: Callable[..., list[str]]
) -> None:
    """A DeepSeek-V3-style file with plain special tokens only (its three Splits compile on
    tokenizers' tables) loads as a plain Tokenizer: tokenizers' ids, tokenizer.bin round trip,
    and the command line's TOKENIZER argument takes it."""
    from mnemo.cli.common import tokenizer_arg

    obj = json.loads(hf_families["deepseek-v3"].read_text(encoding="utf-8"))
    obj["added_tokens"] = [t for t in obj["added_tokens"] if t["special"] and not (t["lstrip"] or t["rstrip"] or t["single_word"])]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    hf = hf_of(path)
    tok = mnemo.load(path)
    assert isinstance(tok, mnemo.Tokenizer) and len(tok.split_pattern.steps) == 3
    assert tok.split_pattern.unicode == "16.0.0" and tok.split_pattern.engine == "scanner"
    docs = [d for c in CORPORA for d in corpus_docs(c, 100_000)] + ["\u058b/U 12345 \u4e2d\u6587", "x\U00031350 y"]
    for doc in docs:
        assert tok.encode(doc, allowed_special="all") == hf.encode(doc, add_special_tokens=False).ids, doc[:60]
    tok.save(tmp_path / "tokenizer.bin")
    back = mnemo.Tokenizer.load(tmp_path / "tokenizer.bin")
    assert back == tok and back.split_pattern is tok.split_pattern
    assert tokenizer_arg(path, "train --from") == tok
    # tokenize keeps the file's template, for its separators, around the same core
    kept = tokenizer_arg(path, "tokenize")
    assert isinstance(kept, HFTokenizer) and kept.core == tok and kept.fingerprint == tok.fingerprint
    assert kept.template_separators() == (tok.special_tokens["<\uff5cbegin\u2581of\u2581sentence\uff5c>"], None)


def test_the_strings_path_builds_what_the_bytes_path_builds(
    hf_families: dict[str, Path], gpt2: mnemo.Tokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hf_pipeline._alphabet_merges reads a plain file on its strings (no bytes object per token),
    or tokenizer_json on the file's bytes; with both turned off, every file takes the bytes
    path, which words every error.  Both build
    the same merges, ids and special tokens: on each family's file and on GPT-2's tokenizer.json
    (the Llama 3 style file, with ignore_merges and tokens no merge makes, takes the bytes path
    either way)."""
    from mnemo.formats import hf_file, hf_pipeline
    from mnemo.interop import save_hf

    gpt2_json = tmp_path / "gpt2.json"
    save_hf(gpt2, gpt2_json)
    paths = [*hf_families.values(), gpt2_json]
    taken: list[bool] = []
    real = hf_pipeline._alphabet_merges

    def spy(*args: Any) -> Any:
        found = real(*args)
        taken.append(found is not None)
        return found

    def core(tok: Any) -> Any:
        tok = getattr(tok, "core", tok)
        return tok.merges, tok.id_map, tok.special_tokens, tok.whole_tokens

    real_scanned = hf_pipeline._scanned_vocabulary

    def spy_scanned(*args: Any) -> Any:
        found = real_scanned(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(hf_pipeline, "_alphabet_merges", spy)
    monkeypatch.setattr(hf_pipeline, "_scanned_vocabulary", spy_scanned)
    fast = [core(mnemo.load(p)) for p in paths]
    monkeypatch.setattr(hf_pipeline, "_alphabet_merges", lambda *args: None)
    monkeypatch.setattr(hf_file, "model_spans", lambda data: None)  # and no compiled reading
    slow = [core(mnemo.load(p)) for p in paths]
    assert fast == slow
    # every file without ignore_merges took the strings path or the compiled one (tokenizer_json)
    assert taken.count(True) >= 4, taken


def test_ignore_merges_leaves_only_a_few_entries_to_the_lookup(hf_families: dict[str, Path]) -> None:
    """A tokenizers-trained ignore_merges file (Llama 3 style): the core gives every vocabulary
    entry whole itself except the added tokens' texts, so only those stay in the lookup in
    Python (HFTokenizer.whole), and a stretch that holds none of them is encoded in one compiled
    call.  Texts with and without them, special text encoded as text on both sides, give
    tokenizers' ids."""
    tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is not installed")
    from mnemo.formats.hf_pipeline import RARE_WHOLE_MAX

    path = hf_families["llama3"]
    tok = load_hf(path)
    assert isinstance(tok, HFTokenizer) and tok.whole is not None
    assert tok._rare_whole is not None  # a substring test a stretch, not the lookup of every piece
    assert 0 < len(tok.whole) <= RARE_WHOLE_MAX < len(json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"])
    ref = tokenizers.Tokenizer.from_file(str(path))
    ref.encode_special_tokens = True
    words = [raw.decode("utf-8") for raw in tok.whole]
    texts = ["plain text, no entry here", *(t for w in words for t in (w, f"a {w} b", f"x{w}y", f"{w}{w}", f"{w}\n{w} "))]
    for text in texts:
        assert tok.encode_ordinary(text) == ref.encode(text, add_special_tokens=False).ids, repr(text)
