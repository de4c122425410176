"""mnemo.Tokenizer: construction and validation, files, special tokens, round trips, and GPT-2's
merges against tiktoken."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo import ConfigError, FormatError, InputError, MnemoError, SpecialTokenError, Tokenizer
import mnemo.packing as packing
from mnemo import interop
from mnemo.encode_text import encode_bytes as encode_in_one_call
from mnemo.constants import PATTERNS
from mnemo.interop import bytes_to_unicode
from mnemo.pretokenize import PATTERN_REGEX
from mnemo.vocab import DEFAULT_SPECIAL_TOKENS



@pytest.fixture(scope="session")
def pretok() -> bool:
    """The compiled pre-tokenizer that encoding goes through (kept as a fixture so that the
    tests that encode text say so)."""
    import mnemo.pretokenize

    return mnemo.pretokenize.scan is not None


def chain_merges(n: int) -> list[tuple[int, int]]:
    """n valid merges: (a, a), then (previous, a) -- a, aa, aaa, ..."""
    merges = [(97, 97)]
    for k in range(1, n):
        merges.append((255 + k, 97))
    return merges[:n]


# ---- construction ----


def test_default_ids() -> None:
    """32,496 merges + 16 default specials = 32,768 ids, <|bos|> at 32752 (DESIGN.md)."""
    tok = Tokenizer(chain_merges(32_496))
    assert tok.n_vocab == 32_768
    assert tok.special_tokens["<|bos|>"] == 32_752
    assert tok.special_tokens["<|end|>"] == 32_756
    assert tok.special_tokens["<|reserved_10|>"] == 32_767
    assert list(tok.special_tokens) == list(DEFAULT_SPECIAL_TOKENS)
    assert len(DEFAULT_SPECIAL_TOKENS) == 16


def test_token_bytes() -> None:
    tok = Tokenizer([(104, 105), (256, 33)], special_tokens=["<|x|>"])
    assert tok.token_bytes(104) == b"h"
    assert tok.token_bytes(256) == b"hi"
    assert tok.token_bytes(257) == b"hi!"
    assert tok.token_bytes(258) == b"<|x|>"
    with pytest.raises(InputError, match="token id 259 is not in the vocabulary"):
        tok.token_bytes(259)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"merges": [(97, 256)]}, r"merge 0 \(id 256\) is \(97, 256\): token 256 does not exist yet \(both parts must be in 0..255\)"),
        ({"merges": [(97, 98), (97, 98)]}, r"merge 1 repeats the pair \(97, 98\) of merge 0"),
        ({"merges": [(97, -1)]}, "both parts must be in"),
        ({"merges": [(1, 2, 3)]}, "not a pair of token ids"),
        ({"pattern": "gpt5"}, "unknown pattern 'gpt5'"),
        ({"tie": "coin"}, "unknown tie rule 'coin'"),
        ({"special_tokens": ["<|a|>", "<|a|>"]}, "listed twice"),
        ({"special_tokens": [""]}, "not a non-empty string"),
        ({"special_tokens": ["x" * 256]}, "longer than 255"),
        ({"merge_counts": [5]}, "1 merge counts for 0 merges"),
        ({"merges": chain_merges(2_097_152 - 256), "special_tokens": ["<|a|>"]}, "give 2,097,153 ids, more than 2,097,152"),
    ],
)
def test_constructor_rejects(kwargs: dict[str, object], message: str) -> None:
    merges = kwargs.pop("merges", [])
    with pytest.raises(ConfigError, match=message):
        Tokenizer(merges, **kwargs)  # type: ignore[arg-type]


# ---- files ----


def test_save_load_round_trip(tmp_path: Path) -> None:
    tok = Tokenizer(
        chain_merges(300), pattern="gpt4", special_tokens=["<|a|>", "<|é|>"], tie="bytes",
        merge_counts=list(range(300, 0, -1)),
    )
    path = tmp_path / "tokenizer.bin"
    tok.save(path)
    back = Tokenizer.load(path)
    assert back == tok
    assert (back.merges, back.pattern, back.tie, back.merge_counts) == (tok.merges, "gpt4", "bytes", tok.merge_counts)
    assert back.special_tokens == {"<|a|>": 556, "<|é|>": 557}
    assert back.fingerprint == tok.fingerprint
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_fingerprint() -> None:
    """A hash of merges, pattern and specials: stable, and it changes when any of them does."""
    base = Tokenizer(chain_merges(10))
    assert base.fingerprint == Tokenizer(chain_merges(10)).fingerprint
    assert len(base.fingerprint) == 32 and int(base.fingerprint, 16) >= 0
    others = [
        Tokenizer(chain_merges(11)),
        Tokenizer(chain_merges(10), pattern="gpt2"),
        Tokenizer(chain_merges(10), special_tokens=["<|bos|>"]),
        Tokenizer([(97, 98), *chain_merges(10)[1:]]),
    ]
    assert len({base.fingerprint, *(t.fingerprint for t in others)}) == 5
    # Training statistics do not change what the tokenizer does.
    assert Tokenizer(chain_merges(10), merge_counts=[1] * 10, tie="bytes").fingerprint == base.fingerprint


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read .*nothing.bin"):
        Tokenizer.load(tmp_path / "nothing.bin")


def test_load_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.bin"
    path.write_bytes(b"not a tokenizer at all, just text that is long enough")
    with pytest.raises(FormatError, match=r"tokenizer.bin: offset 0: bad magic"):
        Tokenizer.load(path)


# ---- encoding text (needs the pre-tokenizer or its stand-in) ----


@pytest.fixture(scope="module")
def small(pretok: bool) -> Tokenizer:
    """A little vocabulary: 'he', 'll', 'hell', 'hello', ' w', and two overlapping specials."""
    merges = [(104, 101), (108, 108), (256, 257), (258, 111), (32, 119)]
    return Tokenizer(merges, special_tokens=["<|end|>", "<|end|>x", "<|bos|>"])


def test_encode_worked_example(small: Tokenizer) -> None:
    """'hello world' -> chunks 'hello', ' world'.  'hello': he(256) ll(257) -> [256 257 o] ->
    hell(258) -> hello(259).  ' world': ' w'(260) then o r l d stay bytes."""
    assert small.encode("hello world") == [259, 260, 111, 114, 108, 100]
    assert small.decode([259, 260, 111, 114, 108, 100]) == "hello world"


def test_special_tokens_contract(small: Tokenizer) -> None:
    text = "hello<|end|>hello"
    with pytest.raises(SpecialTokenError, match=r"special token '<\|end\|>' at byte 5"):
        small.encode(text)
    # Allowed: its single id; the text around it is encoded on its own.
    assert small.encode(text, allowed_special={"<|end|>"}) == [259, 261, 259]
    assert small.encode(text, allowed_special="all") == [259, 261, 259]
    # Not disallowed: plain text, exactly as encode_ordinary.
    plain = small.encode(text, disallowed_special=())
    assert plain == small.encode_ordinary(text)
    assert 261 not in plain and small.decode(plain) == text
    # Allowing one special does not allow the others.
    with pytest.raises(SpecialTokenError, match="<\\|bos\\|>"):
        small.encode("<|bos|>hello<|end|>", allowed_special={"<|end|>"})
    # Overlapping specials: the longest match wins.
    assert small.encode("<|end|>x", allowed_special="all") == [262]
    assert small.encode("<|end|>y", allowed_special="all") == [261, 121]
    with pytest.raises(ConfigError, match="not special tokens"):
        small.encode("hi", allowed_special={"<|nope|>"})


def test_encode_variants_agree(small: Tokenizer) -> None:
    texts = ["hello world", "", "héllo\n\n  wörld!!", "<|bos|>hello"]
    batch = small.encode_batch(texts, allowed_special="all")
    assert batch == [small.encode(t, allowed_special="all") for t in texts]
    arr = small.encode_to_numpy("hello world")
    assert arr.dtype == np.uint32 and arr.tolist() == small.encode("hello world")  # tiktoken's type
    assert small.encode_bytes(b"hello world") == small.encode("hello world")


def test_encode_batch_with_workers(small: Tokenizer) -> None:
    """More than BATCH_BLOCK texts and BATCH_PARALLEL_BYTES of text: two worker processes."""
    from mnemo import batch_encode as module

    texts = [f"hello world {i} <|bos|> " * (1 + i % 7) + "héllo" * (i % 3) for i in range(600)]
    filler = "x" * (module.BATCH_PARALLEL_BYTES // 600 + 1)
    texts = [t + filler for t in texts]
    batch = small.encode_batch(texts, allowed_special={"<|bos|>"}, workers=2)
    assert batch == [small.encode(t, allowed_special={"<|bos|>"}) for t in texts]
    assert small.encode_batch(texts[:3], workers=1, disallowed_special=()) == [
        small.encode_ordinary(t) for t in texts[:3]
    ]
    with pytest.raises(ConfigError, match="workers must be from 1 to 1024, got 0"):
        small.encode_batch(texts, workers=0)


def test_batch_blocks_hold_equal_text() -> None:
    """encode_batch's blocks: every text once, in order, at most BATCH_BLOCK texts each, closed
    at the block's share of text -- so blocks of long and short texts hold about the same text."""
    import random

    from mnemo import batch_encode as module

    rng = random.Random(7)
    for n_workers in (2, 3, 8):
        for sizes in (
            [20_000] * 1000,  # equal texts
            [rng.choice([10, 200, 5_000, 300_000]) for _ in range(3000)],  # mixed
            [1] * 5000,  # tiny texts: the count closes each block
            [3_000_000, 10, 2_500_000],  # texts longer than a block: one block each
        ):
            texts = ["x" * s for s in sizes]
            blocks = list(module._blocks(texts, n_workers))
            assert [b[0] for b in blocks] == [0] + [b[1] for b in blocks[:-1]] and blocks[-1][1] == len(texts)
            target = min(max(sum(sizes) // (n_workers * module.BLOCKS_PER_WORKER), module.BLOCK_TEXT_MIN), module.BLOCK_TEXT_MAX)
            for first, stop, text in blocks:
                assert text == sum(sizes[first:stop])
                assert 0 < stop - first <= module.BATCH_BLOCK
                # under the target only when the count closed it, or at the end
                assert text >= target or stop - first == module.BATCH_BLOCK or stop == len(texts)
                # over it only by the last text
                assert text - sizes[stop - 1] < target
    assert list(module._blocks([], 2)) == []


def test_few_long_texts_go_to_workers(small: Tokenizer) -> None:
    """A batch of a few long texts (more text than BATCH_PARALLEL_BYTES, far fewer texts than a
    block's count) is encoded by the workers, in blocks of text, with the same ids -- the longest
    sent first (here the last texts), each text's ids back at its place."""
    from mnemo import batch_encode as module
    from mnemo import work

    texts = [f"text {i}: " + "hello wörld, the end. " * (module.BATCH_PARALLEL_BYTES // 22 // 12 + i) for i in range(12)]
    if work._SHARED is not None:
        work._SHARED.shutdown()
        work._SHARED = None
    assert small.encode_batch(texts, workers=2, disallowed_special=()) == [small.encode_ordinary(t) for t in texts]
    assert work._SHARED is not None and len(work._SHARED._workers) == 2
    flat, offsets = small.encode_batch_to_numpy(texts, workers=2, disallowed_special=())
    assert [flat[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == [small.encode_ordinary(t) for t in texts]
    firsts: list[int] = []
    module._batch_in_workers(small, texts, set(), set(), 2, lambda first, part: firsts.append(first))
    blocks = {first: size for first, _, size in module._blocks(texts, 2)}
    assert sorted(firsts) == sorted(blocks) and [blocks[f] for f in firsts] == sorted(blocks.values(), reverse=True)


def test_decode_never_raises_on_bad_utf8(small: Tokenizer) -> None:
    ids = small.encode_bytes("é".encode()[:1] + b"hello")
    assert small.decode(ids) == "\ufffdhello"
    assert small.decode_bytes(ids) == b"\xc3hello"
    with pytest.raises(InputError, match="token id -1 is not in the vocabulary"):
        small.decode([104, -1])
    with pytest.raises(InputError, match="token id 999 is not in the vocabulary"):
        small.decode_bytes([999])


def test_lone_surrogate_becomes_replacement(small: Tokenizer) -> None:
    assert small.decode(small.encode("a\ud800b")) == "a\ufffdb"


@pytest.fixture(scope="module")
def gpt2_like(pretok: bool) -> Tokenizer:
    """A tokenizer with a few hundred merges learned on the fly (no trainer needed): the first
    300 of GPT-2's merges read from the fixture, with the mnemonic pattern."""
    root = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "cs336"
    if not root.is_dir():
        pytest.skip(f"fixtures folder {root} is absent")
    return Tokenizer(load_gpt2(root)[:300], special_tokens=None)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_round_trip_text(gpt2_like: Tokenizer, text: str) -> None:
    assert gpt2_like.decode(gpt2_like.encode_ordinary(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300).map(lambda s: s.encode("utf-8")))
def test_round_trip_bytes(gpt2_like: Tokenizer, data: bytes) -> None:
    assert gpt2_like.decode_bytes(gpt2_like.encode_bytes(data)) == data


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_round_trip_any_bytes(gpt2_like: Tokenizer, data: bytes) -> None:
    assert gpt2_like.decode_bytes(gpt2_like.encode_bytes(data)) == data


# ---- GPT-2 against tiktoken ----


def load_gpt2(root: Path) -> list[tuple[int, int]]:
    """GPT-2's merges in mnemo's numbering: ids 0..255 are the bytes themselves, merge k is 256 + k."""
    return interop.load_gpt2(root / "gpt2_vocab.json", root / "gpt2_merges.txt").merges


@pytest.fixture(scope="module")
def gpt2_pair(cs336_dir: Path, pretok: bool) -> tuple[Tokenizer, object, list[int]]:
    """(mnemo Tokenizer, tiktoken Encoding, byte-id map) from the same GPT-2 files.

    GPT-2 numbers its 256 byte tokens in its own order (printable bytes first), and numbers merge
    k as 256 + k.  mnemo's byte ids are the byte values, so the two agree on every id >= 256 and
    differ by a permutation below 256: `perm[b]` is GPT-2's id of byte b.  The test compares
    mnemo's ids mapped through `perm` with tiktoken's ids.
    """
    tiktoken = pytest.importorskip("tiktoken")
    vocab: dict[str, int] = json.loads((cs336_dir / "gpt2_vocab.json").read_text(encoding="utf-8"))
    alphabet = bytes_to_unicode()
    decode = {c: b for b, c in alphabet.items()}
    ranks = {bytes(decode[c] for c in s): i for s, i in vocab.items() if s != "<|endoftext|>"}
    encoding = tiktoken.Encoding(
        "gpt2-from-fixture", pat_str=PATTERN_REGEX["gpt2"], mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": vocab["<|endoftext|>"]},
    )
    tok = Tokenizer(load_gpt2(cs336_dir), pattern="gpt2", special_tokens=["<|endoftext|>"])
    assert tok.special_tokens["<|endoftext|>"] == vocab["<|endoftext|>"] == 50_256
    perm = [vocab[alphabet[b]] for b in range(256)]
    return tok, encoding, perm


def to_gpt2(ids: list[int], perm: list[int]) -> list[int]:
    return [perm[i] if i < 256 else i for i in ids]


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["english", "multilingual", "code", "chat"])
def test_gpt2_equals_tiktoken(
    name: str, corpus_docs: Callable[..., list[str]], gpt2_pair: tuple[Tokenizer, object, list[int]]
) -> None:
    tok, encoding, perm = gpt2_pair
    docs = corpus_docs(name, max_bytes=400_000)
    for doc in docs:
        assert to_gpt2(tok.encode_ordinary(doc), perm) == encoding.encode_ordinary(doc)  # type: ignore[attr-defined]


def test_gpt2_fixture_texts(cs336_dir: Path, gpt2_pair: tuple[Tokenizer, object, list[int]]) -> None:
    """The CS336 fixture texts, special tokens allowed, as tiktoken encodes them."""
    tok, encoding, perm = gpt2_pair
    for name in ("address.txt", "german.txt", "tinystories_sample.txt",
                 "special_token_trailing_newlines.txt", "special_token_double_newlines_non_whitespace.txt"):
        text = (cs336_dir / name).read_text(encoding="utf-8")
        ids = tok.encode(text, allowed_special="all")
        assert to_gpt2(ids, perm) == encoding.encode(text, allowed_special="all")  # type: ignore[attr-defined]
        assert tok.decode(ids) == text


def test_encode_documents_packs_every_id_width() -> None:
    """encode_documents packs ids into uint16 in compiled code: ids from 32,768 up have the top
    bit set (stored as negative i16 on the way).  A vocabulary of 33,400 ids made of runs of
    NUL bytes (merge k glues the run of k + 1 NULs to one more) reaches them; each document must
    equal <|bos|> + encode_ordinary, with and without bos, empty documents included."""
    merges = [(0, 0)] + [(256 + k - 1, 0) for k in range(1, 33_000)]
    tok = Tokenizer(merges, special_tokens=["<|bos|>"])
    bos = tok.special_tokens["<|bos|>"]
    assert bos == 256 + 33_000 > 32_768
    docs = [b"\x00" * 33_001, b"", b"ab\x00\x00 c", b"\x00" * 40_000 + b"x", "caf\u00e9".encode()]
    expected = [i for d in docs for i in [bos, *tok.encode_bytes(d)]]
    assert max(expected) >= 32_768
    got = tok.encode_documents(docs, bos=bos)
    assert got.dtype == np.uint16 and got.tolist() == expected
    assert tok.encode_documents(docs).tolist() == [i for d in docs for i in tok.encode_bytes(d)]
    with pytest.raises(ConfigError, match="bos=70000 is not an id"):
        tok.encode_documents(docs, bos=70_000)


# ---- wrong argument types: a named error, never a traceback from deep inside ----


def _api_calls(tok: Tokenizer, tmp: Path) -> list[tuple[str, Callable[[], object], str]]:
    """(what, call, the argument its message must name) for every public method of Tokenizer."""
    return [
        ("token_bytes(1.5)", lambda: tok.token_bytes(1.5), "token"),  # type: ignore[arg-type]
        ("token_bytes('1')", lambda: tok.token_bytes("1"), "token"),  # type: ignore[arg-type]
        ("encode(None)", lambda: tok.encode(None), "text"),  # type: ignore[arg-type]
        ("encode(b'x')", lambda: tok.encode(b"x"), "text"),  # type: ignore[arg-type]
        ("encode(['a'])", lambda: tok.encode(["a"]), "text"),  # type: ignore[arg-type]
        ("encode(allowed_special=5)", lambda: tok.encode("a", allowed_special=5), "allowed_special"),  # type: ignore[arg-type]
        ("encode(allowed_special={1})", lambda: tok.encode("a", allowed_special={1}), "allowed_special"),  # type: ignore[arg-type]
        ("encode(disallowed_special=[None])", lambda: tok.encode("a", disallowed_special=[None]), "disallowed_special"),  # type: ignore[list-item]
        ("encode_ordinary(None)", lambda: tok.encode_ordinary(None), "text"),  # type: ignore[arg-type]
        ("encode_ordinary(b'x')", lambda: tok.encode_ordinary(b"x"), "text"),  # type: ignore[arg-type]
        ("encode_to_numpy(3)", lambda: tok.encode_to_numpy(3), "text"),  # type: ignore[arg-type]
        ("encode_bytes('x')", lambda: tok.encode_bytes("x"), "data"),  # type: ignore[arg-type]
        ("encode_bytes(5)", lambda: tok.encode_bytes(5), "data"),  # type: ignore[arg-type]
        ("encode_documents(bos=1.5)", lambda: tok.encode_documents([b"x"], bos=1.5), "bos"),  # type: ignore[arg-type]
        ("encode_documents(['x'])", lambda: tok.encode_documents([b"a", "x"]), r"docs\[1\]"),  # type: ignore[list-item]
        ("encode_documents(b'x')", lambda: tok.encode_documents(b"x"), "docs"),
        ("encode_documents(7)", lambda: tok.encode_documents(7), "docs"),  # type: ignore[arg-type]
        ("encode_batch('ab')", lambda: tok.encode_batch("ab"), "texts"),
        ("encode_batch([b'a'])", lambda: tok.encode_batch(["a", b"a"]), r"texts\[1\]"),  # type: ignore[list-item]
        ("encode_batch(workers=1.5)", lambda: tok.encode_batch(["a"], workers=1.5), "workers"),  # type: ignore[arg-type]
        ("render_document(None)", lambda: tok.render_document(None), "text"),  # type: ignore[arg-type]
        ("decode(None)", lambda: tok.decode(None), "tokens"),  # type: ignore[arg-type]
        ("decode('ab')", lambda: tok.decode("ab"), "tokens"),  # type: ignore[arg-type]
        ("decode([1.5])", lambda: tok.decode([104, 1.5]), r"tokens\[1\]"),  # type: ignore[list-item]
        ("decode(['a'])", lambda: tok.decode(["a"]), r"tokens\[0\]"),  # type: ignore[list-item]
        ("decode(errors=1)", lambda: tok.decode([104], errors=1), "errors"),  # type: ignore[arg-type]
        ("decode_bytes(5)", lambda: tok.decode_bytes(5), "tokens"),  # type: ignore[arg-type]
        ("encode_iterable(5)", lambda: tok.encode_iterable(5), "texts"),  # type: ignore[arg-type]
        ("from_vocab_merges(5)", lambda: Tokenizer.from_vocab_merges(5, []), "vocab"),  # type: ignore[arg-type]
        ("from_vocab_merges(merges=5)", lambda: Tokenizer.from_vocab_merges({}, 5), "merges"),  # type: ignore[arg-type]
        ("save(None)", lambda: tok.save(None), "path"),  # type: ignore[arg-type]
        ("load(5)", lambda: Tokenizer.load(5), "path"),  # type: ignore[arg-type]
        ("from_bytes('x')", lambda: Tokenizer.from_bytes("x"), "data"),  # type: ignore[arg-type]
        ("Tokenizer(5)", lambda: Tokenizer(5), "merges"),  # type: ignore[arg-type]
        ("Tokenizer(pattern=1)", lambda: Tokenizer([], pattern=1), "pattern"),  # type: ignore[arg-type]
        ("Tokenizer(tie=None)", lambda: Tokenizer([], tie=None), "tie"),  # type: ignore[arg-type]
        ("Tokenizer(special_tokens='ab')", lambda: Tokenizer([], special_tokens="ab"), "special_tokens"),
        ("Tokenizer(special_tokens=[1])", lambda: Tokenizer([], special_tokens=[1]), r"special_tokens\[0\]"),  # type: ignore[list-item]
        ("Tokenizer(merge_counts=[1.5])", lambda: Tokenizer([(97, 98)], merge_counts=[1.5]), r"merge_counts\[0\]"),  # type: ignore[list-item]
        ("Tokenizer(id_map=['0'])", lambda: Tokenizer([], special_tokens=[], id_map=["0"] * 256), r"id_map\[0\]"),  # type: ignore[list-item]
    ]


def test_wrong_argument_types_are_named_type_errors(small: Tokenizer, tmp_path: Path) -> None:
    """Each call with a wrong Python type raises a TypeError (mnemo's ArgumentTypeError, also a
    MnemoError) whose message names the argument and the type expected."""
    from mnemo import ArgumentTypeError, MnemoError

    for what, call, name in _api_calls(small, tmp_path):
        with pytest.raises(TypeError, match=rf"^{name} must be ") as info:
            call()
        assert isinstance(info.value, ArgumentTypeError) and isinstance(info.value, MnemoError), what
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda t: t.decode([10**30]), InputError, r"token id 10{30} is not in the vocabulary"),
        (lambda t: t.decode([-5]), InputError, "token id -5 is not in the vocabulary"),
        (lambda t: t.token_bytes(-1), InputError, "token id -1 is not in the vocabulary"),
        (lambda t: t.encode_documents([b"x"], bos=10**6), ConfigError, "bos=1000000 is not an id"),
        (lambda t: t.encode_batch(["a"], workers=0), ConfigError, "workers must be from 1 to 1024"),
        (lambda t: Tokenizer([(97, 98.5)]), ConfigError, "not a pair of token ids"),
        (lambda t: Tokenizer([("97", 98)]), ConfigError, "not a pair of token ids"),
        (lambda t: Tokenizer([], special_tokens=["\ud800"]), ConfigError, "lone surrogate"),
    ],
)
def test_bad_argument_values_are_mnemo_errors(
    small: Tokenizer, call: Callable[[Tokenizer], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call(small)


def test_right_types_still_work(small: Tokenizer) -> None:
    """numpy integers are ids; bytearray and memoryview are bytes; any iterable of ids decodes."""
    assert small.token_bytes(np.uint16(104)) == b"h"
    assert small.encode_bytes(bytearray(b"hello")) == small.encode_bytes(memoryview(b"hello")) == [259]
    assert small.decode(np.array([259], dtype=np.uint16)) == small.decode(iter([259])) == "hello"
    assert small.encode_documents((d for d in [b"hello"]), bos=np.int64(0)).tolist() == [0, 259]
    assert small.encode("hello", allowed_special=["<|end|>"], disallowed_special=()) == [259]


# ---- long texts are encoded in pieces: Ctrl-C takes effect, the ids do not change ----

def _spacy_tokenizer(pattern: str = "mnemonic") -> Tokenizer:
    """Merges for runs of spaces up to a few hundred (deep BPE inside one long white-space
    chunk) and for words."""
    from mnemo import train_from_iterator

    rng = random.Random(3)
    docs = ["word" + " " * rng.randint(1, 300) + "x\n" for _ in range(3000)]
    docs += ["the quick brown fox jumps\n\n over the lazy dog's back 123 " * 50] * 50
    return train_from_iterator(docs, vocab_size=1000, pattern=pattern, workers=1)


_PIECES = ["", " ", "  ", "\n", "\n\n", "\r\n", "\t", " \n ", "a", "Ab", "word", " word", "'s", "1", "123",
           "!!", "(", "é", "中文", "\u00a0", "\u3000", "x" * 40, " " * 40, "\n" * 3 + " " * 5, "\n\n\n     1"]


@pytest.fixture(scope="module", params=PATTERNS)
def spacy(request: pytest.FixtureRequest) -> Tokenizer:
    return _spacy_tokenizer(request.param)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.sampled_from([8, 16, 50]))
def test_pieces_give_the_ids_of_one_call(spacy: Tokenizer, parts: list[str], piece: int) -> None:
    """With pieces of a few bytes (so that pieces end everywhere, and chunks longer than a piece
    are pieces of their own), the ids are those of one compiled call on the whole text."""
    text = "".join(parts)
    data = text.encode("utf-8")
    expected = encode_in_one_call(spacy._encoder, data, spacy._pattern_id)
    old = packing.PIECE_BYTES
    packing.PIECE_BYTES = piece  # type: ignore[misc]
    try:
        assert spacy.encode_ordinary(text) == expected
        assert spacy.encode_bytes(data) == expected
        assert spacy.encode(text, disallowed_special=()) == expected
        assert spacy.encode_to_numpy(text, disallowed_special=()).tolist() == expected
        assert spacy.encode_documents([data, data], bos=1).tolist() == [1, *expected, 1, *expected]
        broken = data + b"\xff \xe2\x82" + data  # invalid UTF-8: one-byte "other" characters
        assert spacy.encode_bytes(broken) == encode_in_one_call(spacy._encoder, broken, spacy._pattern_id)
    finally:
        packing.PIECE_BYTES = old  # type: ignore[misc]


def test_long_texts_give_the_ids_of_one_call(spacy: Tokenizer) -> None:
    """At the real piece size: English-like text, CJK text, and one chunk of 3 MB of spaces
    (one piece)."""
    rng = random.Random(5)
    words = ["the", "Quick", "brown", "fox", "1234", "don't", "(x)", "中文", "\n", "\n\n", "   ", "é"]
    texts = [
        " ".join(rng.choices(words, k=700_000)),
        "".join(rng.choices(["中文", "。", "1", " ", "\n"], k=1_500_000)),
        "a" + " " * (3 << 20) + "b",
    ]
    for text in texts:
        data = text.encode("utf-8")
        assert len(data) > 2 * packing.PIECE_BYTES
        want = encode_in_one_call(spacy._encoder, data, spacy._pattern_id)
        assert spacy.encode_ordinary(text) == want
        ids = spacy.encode_to_numpy(text)  # packed in pieces, not through a list
        assert ids.dtype == np.uint32 and ids.flags.writeable and ids.tolist() == want


def test_long_texts_reuse_one_kept_writer(spacy: Tokenizer) -> None:
    """A long text's packed ids go to the buffer the last long text left (packing.take_writer),
    which comes back empty; one is kept, and none over KEPT_WRITER_MAX."""
    text = "Quick brown fox 1234 " * (packing.KEPT_WRITER_FROM // 10)
    data = text.encode("utf-8")
    want = encode_in_one_call(spacy._encoder, data, spacy._pattern_id)
    assert spacy.encode_ordinary(text) == want
    assert len(packing._kept) == 1 and len(packing._kept[0]) == 0
    kept = packing._kept[0]
    assert spacy.encode_ordinary(text) == want and packing._kept == [kept]
    out: list[int] = []
    spacy._encode_range(data, 0, len(data), out)  # encode()'s path between special tokens
    assert out == want and packing._kept == [kept]
    # two at once (threads): the second gets a new one; one of them is kept
    a, b = packing.take_writer(), packing.take_writer()
    assert a is kept and b is not kept and packing._kept == []
    b.write(b"x" * 10)
    packing.give_writer(b)
    packing.give_writer(a)
    assert packing._kept == [b] and len(b) == 0
    big = packing.take_writer()
    big.write(b"\0" * (packing.KEPT_WRITER_MAX + 2))
    packing.give_writer(big)
    assert packing._kept == []


INTERRUPTED = """
import sys, time
from mnemo import Tokenizer
tok = Tokenizer.load(sys.argv[1])
text = sys.argv[2] * int(sys.argv[3])
print("encoding", flush=True)
try:
    for _ in range(int(sys.argv[4])):
        tok.encode(text)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


@pytest.mark.parametrize(("unit", "times"), [(" ", 8 << 20), ("\n", 8 << 20), ("a", 8 << 20)])
def test_ctrl_c_interrupts_a_long_encode(tmp_path: Path, unit: str, times: int) -> None:
    """SIGINT while texts made of one 8 MB chunk (white space, one letter) are encoded one after
    the other ends the process within a few seconds, through a KeyboardInterrupt the program
    can catch.  A chunk cannot be cut, and compiled code hears no signal until it returns, so
    the wait is the time of the chunk under way: this holds because the encoder is linear and
    fast on one chunk of any length (the heap path took 11 s on 16 MB of spaces; the bucket
    path about 0.5 s a chunk here, 3 s allowing for a loaded machine)."""
    tok = _spacy_tokenizer()
    path = tmp_path / "t.bin"
    tok.save(path)
    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(path), unit, str(times), "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "encoding"
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    waited = time.monotonic() - sent
    assert "finished" not in out, "the encodes ended before the signal: make the loop longer"
    assert proc.returncode == 130 and "interrupted" in out, (proc.returncode, out, err)
    assert waited < 3.0, f"Ctrl-C took {waited:.1f} s to take effect"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_tokenize_in_process_stops_at_once(tmp_path: Path, sig: int) -> None:
    """`mnemo tokenize --workers 1` encodes in its own process (encode_documents): a signal while
    it encodes chunks of 8 MB of white space stops it within the chunk under way, cleanly, with
    no output left behind.  The white space is " \t" repeated, and the tokenizer has merges of
    both " \t" and "\t ": no run of one byte (Encoder.encode_runs) and no safe place to cut
    (encode_pieces), so each chunk takes the bucket path (~0.6 s).  Plain spaces took ~0.06 s
    a chunk, and spaces with a tab every 8 bytes were cut at every tab: the whole file was
    encoded before the signal came."""
    from mnemo import train_from_iterator

    rng = random.Random(5)
    docs = ["word" + " \t" * rng.randint(1, 150) + "x\n" for _ in range(3000)]
    tok = train_from_iterator(docs, vocab_size=600, pattern="mnemonic", workers=1)
    tok.save(tmp_path / "t.bin")
    (tmp_path / "ws.txt").write_bytes((b" \t" * (1 << 22) + b"x\n") * 32)  # 32 chunks of 8 MB
    mnemo = str(Path(sys.executable).parent / "mnemo")
    proc = subprocess.Popen(
        [mnemo, "tokenize", "-t", "t.bin", "ws.txt", "-o", "out.tok", "--workers", "1", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )
    time.sleep(2.5)  # loading, reading, then well inside the encode (256 MB)
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    waited = time.monotonic() - sent
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert waited < 3.0, f"the signal took {waited:.1f} s to take effect"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.bin", "ws.txt"]


@pytest.mark.parametrize("workers", [1, 2])
def test_encode_batch_to_numpy_is_the_flat_form_of_encode_batch(small: Tokenizer, workers: int) -> None:
    """(ids, offsets): every text's ids back to back, text i at ids[offsets[i]:offsets[i + 1]];
    in this process and from workers (more than BATCH_BLOCK texts and BATCH_PARALLEL_BYTES)."""
    from mnemo import batch_encode as module

    filler = "y" * (module.BATCH_PARALLEL_BYTES // 600 + 1)
    texts = [f"hello world {i} <|bos|> " * (i % 5) + ("héllo " + filler if i % 4 else "") for i in range(600)]
    flat, offsets = small.encode_batch_to_numpy(texts, allowed_special={"<|bos|>"}, workers=workers)
    lists = small.encode_batch(texts, allowed_special={"<|bos|>"}, workers=workers)
    assert flat.dtype == np.uint16 and offsets.dtype == np.int64 and offsets.shape == (len(texts) + 1,)
    assert offsets[0] == 0 and offsets[-1] == flat.size
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == lists
    assert lists == [small.encode(t, allowed_special={"<|bos|>"}) for t in texts]
    assert small.decode_batch([flat[a:b] for a, b in zip(offsets[:-1], offsets[1:])]) == small.decode_batch(lists)
    with pytest.raises(SpecialTokenError, match="<|bos|>"):
        small.encode_batch_to_numpy(texts, workers=workers)
    empty_ids, empty_offsets = small.encode_batch_to_numpy([])
    assert empty_ids.size == 0 and empty_offsets.tolist() == [0]


@pytest.mark.parametrize("workers", [1, 2])
def test_encode_batch_to_numpy_with_an_id_map(cs336_dir: Path, workers: int) -> None:
    """GPT-2's vocabulary numbers its ids its own way (an id map): the flat form holds GPT-2's ids."""
    from mnemo import batch_encode as module
    from mnemo.interop import load_gpt2

    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    assert gpt2._public is not None
    filler = " the end" * (module.BATCH_PARALLEL_BYTES // 4000 + 1)
    texts = [f"Hello world {i}, héllo!" + (filler if i % 3 else "") for i in range(600)]
    flat, offsets = gpt2.encode_batch_to_numpy(texts, workers=workers)
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == [gpt2.encode(t) for t in texts]


def test_encode_to_numpy_is_encode_as_an_array(small: Tokenizer) -> None:
    """encode_to_numpy packs the compiled encoder's ids straight into the array (no list): the
    same ids as encode, whatever the special-token arguments, the same errors, and a writable
    array of its own, as np.array(encode(...)) gave."""
    from mnemo.packing import PIECE_BYTES

    long = "hello wörld <|end|> " * (PIECE_BYTES // 20 + 3)  # encoded in pieces
    texts = ["hello world", "", "héllo\n\n  wörld!!", "<|bos|>hello<|end|>x", "hell" * 70, long]
    for text in texts:
        for allowed in (frozenset(), "all", {"<|end|>"}):
            kwargs = {"allowed_special": allowed, "disallowed_special": ()}
            arr = small.encode_to_numpy(text, **kwargs)  # type: ignore[arg-type]
            assert arr.dtype == np.uint32 and arr.tolist() == small.encode(text, **kwargs)  # type: ignore[arg-type]
            assert arr.flags.writeable and arr.flags.c_contiguous
    with pytest.raises(SpecialTokenError, match=r"'<\|bos\|>' at byte 0"):
        small.encode_to_numpy("<|bos|>hello")
    with pytest.raises(SpecialTokenError, match=r"'<\|end\|>' at byte 5"):
        small.encode_to_numpy("hello<|end|>", allowed_special={"<|bos|>"})
    with pytest.raises(SpecialTokenError, match=r"'<\|end\|>' at byte 13"):
        small.encode_to_numpy(long)


def test_encode_to_numpy_with_an_id_map(cs336_dir: Path) -> None:
    """GPT-2's vocabulary renumbers ids (an id map): the array holds GPT-2's own ids."""
    from mnemo.interop import load_gpt2

    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    assert gpt2._public is not None
    text = "Hello world, héllo! It's 2024.<|endoftext|> The end"
    for allowed in (frozenset(), "all"):
        arr = gpt2.encode_to_numpy(text, allowed_special=allowed, disallowed_special=())
        assert arr.tolist() == gpt2.encode(text, allowed_special=allowed, disallowed_special=())
        assert arr.flags.writeable


@pytest.mark.parametrize("enabled", [True, False])
def test_encode_batch_restores_the_collector(small: Tokenizer, enabled: bool) -> None:
    """encode_batch pauses the cyclic garbage collector while it builds the lists of a worker
    batch, and leaves it as it found it: on success and when a worker's text raises."""
    import gc

    from mnemo import batch_encode as module

    filler = "x" * (module.BATCH_PARALLEL_BYTES // 600 + 1)
    texts = [f"hello world {i} " + filler for i in range(600)]
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert small.encode_batch(texts, workers=2) == [small.encode(t) for t in texts]
        assert gc.isenabled() is enabled
        with pytest.raises(SpecialTokenError, match="<|bos|>"):
            small.encode_batch([*texts, "<|bos|>"], workers=2)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_encode_batch_in_process_equals_loop(cs336_dir: Path) -> None:
    """encode_batch in this process goes through the packed flat form and builds the lists from
    it: the loop's ids, with an id map (GPT-2's), special tokens allowed or plain, and its error."""
    from mnemo.interop import load_gpt2

    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    texts = ["Hello world", "", "héllo<|endoftext|>again", "x" * 300, " the end\n\n"]
    for allowed in (frozenset(), "all"):
        got = gpt2.encode_batch(texts, allowed_special=allowed, disallowed_special=(), workers=1)
        assert got == [gpt2.encode(t, allowed_special=allowed, disallowed_special=()) for t in texts]
    assert 50256 in got[2]  # <|endoftext|>'s id, which the pre-made ints do not hold
    with pytest.raises(SpecialTokenError, match="endoftext"):
        gpt2.encode_batch(texts, workers=1)


@pytest.mark.parametrize("workers", [1, 2])
def test_encode_batch_special_tokens_are_per_text(cs336_dir: Path, workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The texts of a block are searched for special tokens together first (packing.
    encode_flat_block): a token's text split across two texts is in neither, and a special token
    in one text among plain ones is found there, allowed or refused, with an id map (GPT-2's)
    and in the workers' blocks as in this process."""
    from mnemo import batch_encode as module
    from mnemo.interop import load_gpt2

    monkeypatch.setattr(module, "BATCH_PARALLEL_BYTES", 0)  # workers for any batch over a block
    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    texts = [f"text {i} <|endof" if i % 2 == 0 else "text|> more" for i in range(module.BATCH_BLOCK * 2 + 5)]
    plain = [gpt2.encode_ordinary(t) for t in texts]
    assert gpt2.encode_batch(texts, workers=workers) == plain
    flat, offsets = gpt2.encode_batch_to_numpy(texts, workers=workers)
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == plain
    texts[300] = "a <|endoftext|> b"
    with pytest.raises(SpecialTokenError, match="endoftext"):
        gpt2.encode_batch(texts, workers=workers)
    with pytest.raises(SpecialTokenError, match="endoftext"):
        gpt2.encode_batch_to_numpy(texts, workers=workers)
    allowed = gpt2.encode_batch(texts, allowed_special="all", workers=workers)
    assert allowed == [gpt2.encode(t, allowed_special="all") for t in texts] and 50256 in allowed[300]


def test_default_special_arguments_fast_path(small: Tokenizer) -> None:
    """encode and encode_to_numpy with the default special-token arguments skip building the
    name sets (Tokenizer._plain_default): they still raise on any special token's text, also for
    specials with no common prefix (no memchr shortcut then) or none at all, and otherwise give
    the ids of encode_ordinary."""
    for specials in ([], ["<|end|>"], ["[SEP]", "<|end|>", "§"]):
        tok = Tokenizer(small.merges, pattern=small.pattern, special_tokens=specials)
        for text in ["hello world", "", "x" * 300, "end|> [SEP] §§ <|end"]:
            clean = all(s not in text for s in specials)
            if clean:
                assert tok.encode(text) == tok.encode_ordinary(text) == tok.encode_to_numpy(text).tolist()
            for s in specials:
                dirty = f"{text}{s} tail"
                with pytest.raises(SpecialTokenError, match="the text contains the special token"):
                    tok.encode(dirty)
                with pytest.raises(SpecialTokenError, match="the text contains the special token"):
                    tok.encode_to_numpy(dirty)
                assert tok.encode(dirty, disallowed_special=()) == tok.encode_ordinary(dirty)
    # not the defaults, and not comparable to "all" with `!=` (the fuzzer's find): a mnemo error
    for method in (small.encode, small.encode_to_numpy):
        with pytest.raises(MnemoError, match="disallowed_special"):
            method("a", disallowed_special=np.array([1, 2], dtype=np.uint16))  # type: ignore[arg-type]


@pytest.mark.parametrize("top", [60_000, 2**31 - 1])
def test_every_list_path_gives_the_id_maps_ids(top: int) -> None:
    """With an id map the encoder's lists are made of the public ids in one pass
    (Encoder.set_public): every list-returning path gives the map's ids of the plain
    tokenizer's, special tokens included, for 16-bit and 32-bit public ids, short texts and a
    long one encoded in pieces."""
    from mnemo.packing import PIECE_BYTES

    merges = [(104, 101), (256, 108), (257, 108), (258, 111), (32, 119), (260, 111), (261, 114), (262, 108), (263, 100)]
    specials = ["<|a|>", "<|b|>"]
    plain = Tokenizer(merges, special_tokens=specials)
    n = plain.n_vocab
    id_map = [top - (i * 7) % n for i in range(n)]
    mapped = Tokenizer(merges, special_tokens=specials, id_map=id_map)
    texts = ["hello world", "", "héllo<|a|> world<|b|>x", "hello" * 3, "hello world " * (PIECE_BYTES // 12 + 5)]
    for text in texts:
        want = [id_map[i] for i in plain.encode_ordinary(text)]
        assert mapped.encode_ordinary(text) == want
        assert mapped.encode_bytes(text.encode()) == want
        want_all = [id_map[i] for i in plain.encode(text, allowed_special="all")]
        assert mapped.encode(text, allowed_special="all") == want_all
        assert list(mapped.encode_iterable([text], allowed_special="all")) == want_all
        assert mapped.encode_batch([text, text], allowed_special="all", workers=1) == [want_all, want_all]
        assert mapped.encode_to_numpy(text, allowed_special="all").tolist() == want_all
        flat, offsets = mapped.encode_batch_to_numpy([text, "hello"], allowed_special="all", workers=1)
        assert flat.tolist() == want_all + [id_map[i] for i in plain.encode("hello")]
        assert offsets.tolist() == [0, len(want_all), len(flat)]


def test_packed_paths_do_not_convert_the_id_map_per_call(cs336_dir: Path) -> None:
    """encode_to_numpy and encode_documents with an id map (GPT-2's, 50,257 ids) gather the
    public ids from an array made once: converting the map's list on every call cost ~1 ms,
    13x the whole encode_to_numpy of a 5 KB English document (3.9 against 49.8 MB/s).  Per call
    on a short text the map now costs about nothing next to the same merges without one."""
    from mnemo.interop import load_gpt2

    gpt2 = load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")
    plain = Tokenizer(gpt2.merges, pattern="gpt2", special_tokens=["<|endoftext|>"])
    assert gpt2._public is not None and plain._public is None

    def best(fn: Callable[[], object]) -> float:
        times = []
        for _ in range(5):
            t0 = time.process_time()
            for _ in range(200):
                fn()
            times.append(time.process_time() - t0)
        return min(times)

    for call in (lambda t: t.encode_to_numpy("Hello world"), lambda t: t.encode_documents([b"Hello world"])):
        mapped_s = best(lambda: call(gpt2))
        plain_s = best(lambda: call(plain))
        assert mapped_s < 4 * plain_s + 0.002, (mapped_s, plain_s)
    assert gpt2.encode_to_numpy("Hello world").tolist() == gpt2.encode("Hello world") == [15496, 995]
