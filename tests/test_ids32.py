"""32-bit ids end to end (issue 16): vocabularies of more than 65,536 ids, id spaces with holes,
chat masks of any vocabulary, and training past 65,535 ids.

The 16-bit paths keep their own tests (test_encode_chunk, test_files, test_chat, ...); here each
test drives a vocabulary that does not fit in 16 bits, or says why a small one still behaves as
before (files and fingerprints of earlier versions).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from librt.strings import BytesWriter

from mnemo import ConfigError, FormatError, InputError, Tokenizer, UnknownTokenError, open_tok
from mnemo.batches import BatchLoader, TokenStream
from mnemo.chat import split_mask, strip_mask, strip_mask_array
from mnemo.constants import MASKBIT, MASKBIT32, MAX_TOKEN_ID, MAX_VOCAB
from mnemo.encode_chunk import LONG_CHUNK, Encoder, emit, ids_of
from mnemo.reference import encode_chunks_naive
from mnemo.tokfile import TokWriter
from mnemo.vocabfile import encode_tokenizer_bin, parse_tokenizer_bin

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]


# ---- a vocabulary of more than 65,536 ids --------------------------------------------------------


def wide_merges(texts: list[str]) -> list[tuple[int, int]]:
    """71,000-odd merges: every pair of bytes first (65,536 merges, ids 256..65,791, so that every
    chunk's first step is a byte-pair merge), then two rounds of pairs of adjacent tokens found
    by encoding `texts` with the merges so far -- merges whose parts are above 65,535 and that
    really fire on text."""
    merges = [(a, b) for a in range(256) for b in range(256)]
    for _ in range(2):
        enc = Encoder(merges)
        known = set(merges)
        for text in texts:
            for word in text.encode("utf-8").split(b" "):
                ids = enc.encode_chunks([word])
                for pair in zip(ids, ids[1:]):
                    if pair not in known:
                        known.add(pair)
                        merges.append(pair)
            if len(merges) > 65_536 + 2_500 * (_ + 1):
                break
    return merges


@pytest.fixture(scope="module")
def sample(corpus_docs) -> list[str]:  # type: ignore[no-untyped-def]
    return corpus_docs("english", 60_000) + corpus_docs("multilingual", 60_000)


@pytest.fixture(scope="module")
def big(sample: list[str]) -> Tokenizer:
    merges = wide_merges(sample)
    assert 256 + len(merges) > 70_000
    return Tokenizer(merges, pattern="gpt4")


def test_ids_packed_as_uint32_round_trip() -> None:
    """A wide encoder writes little-endian uint32: ids up to 2**21 - 1 (the largest id of
    MAX_VOCAB tokens) and the specials' public ids up to 2**31 - 1 come back."""
    values = [0, 255, 65_535, 65_536, 70_000, MAX_VOCAB - 1, MAX_TOKEN_ID]
    dst = BytesWriter()
    for x in values:
        emit(dst, x, True)
    packed = dst.getvalue()
    assert ids_of(packed, True) == values
    assert np.frombuffer(packed, dtype="<u4").tolist() == values


def test_wide_encoder_every_path_equals_twin(big: Tokenizer, sample: list[str]) -> None:
    """Cache, no cache, the long-chunk heap and the short rank arrays: the naive twin's ids, on
    real text, with ids above 65,535 in the output."""
    enc = Encoder(big.merges)
    assert enc.wide
    chunks = [c for text in sample[:40] for c in text.encode("utf-8").split(b" ") if c]
    expected = encode_chunks_naive(chunks, big.merges)
    assert enc.encode_chunks(chunks) == expected
    assert enc.encode_chunks(chunks) == expected  # through the caches, filled now
    assert enc.encode_chunks_uncached(chunks) == expected
    assert max(expected) >= 65_536
    long = [c for c in chunks if len(c) >= LONG_CHUNK] + [b"".join(chunks[:200])]
    dst = BytesWriter()
    for c in long:
        enc.encode_long(c, 0, len(c), dst)
    assert ids_of(dst.getvalue(), True) == encode_chunks_naive(long, big.merges)
    assert enc.ids_list(dst.getvalue()) == encode_chunks_naive(long, big.merges)


def test_wide_tokenizer_round_trip_and_arrays(big: Tokenizer, sample: list[str], tmp_path: Path) -> None:
    text = " ".join(sample[:20])
    ids = big.encode(text)
    assert max(ids) >= 65_536 and big.decode(ids) == text
    arr = big.encode_to_numpy(text)
    assert arr.dtype == np.uint32 and arr.tolist() == ids
    docs = [t.encode() for t in sample[:20]]
    bos = big.n_vocab - 1  # any id: the array holds it as given
    packed = big.encode_documents(docs, bos=bos)
    assert packed.dtype == np.uint32
    assert packed.tolist() == [i for d in sample[:20] for i in [bos, *big.encode_ordinary(d)]]
    # 32-bit ids on disk (version 3, id width 4: docs/formats.md), and back
    path = tmp_path / "big.bin"
    big.save(path)
    assert path.read_bytes()[8] == 3 and path.read_bytes()[32:36] == b"MRGS" and path.read_bytes()[48] == 4
    loaded = Tokenizer.load(path)
    assert loaded == big and loaded.encode(text) == ids
    assert loaded.fingerprint == big.fingerprint


# ---- tokenizer.bin: version 1 files load as before; version 2 ---------------------------------------


def test_version_1_files_of_earlier_mnemo_load_unchanged() -> None:
    """tests/data/*_v1.bin were written by mnemo before version 2 (main at c8d9701), *_v2.bin before
    version 3 (main at 9930691).  They load, give the fingerprints their .tok files name, encode as
    they did, and saved again (version 3) load as the same tokenizer with the same fingerprint."""
    counts = Tokenizer.load(DATA / "tokenizer_v1_counts.bin")
    assert counts.fingerprint == "dc0709f682179ef1295922d8160d9eea"
    assert counts.encode("hi y hi yab") == [256, 257, 32, 256, 257, 259]
    assert counts.merge_counts == [9, 7, 5, 3]
    mapped = Tokenizer.load(DATA / "tokenizer_v1_idmap.bin")
    assert mapped.fingerprint == "c4a5bce519e249e87db6be3ad890984a"
    assert mapped.encode("hi y hi yab <|endoftext|>", allowed_special="all") == [5, 4, 229, 5, 4, 2, 229, 1]
    wide = Tokenizer.load(DATA / "tokenizer_v2_idmap.bin")
    assert (DATA / "tokenizer_v2_idmap.bin").read_bytes()[8] == 2
    assert wide.fingerprint == "8152d9108ec9a994d8b79835d5375477"
    assert wide.encode("hi! hi <|x|>", allowed_special="all") == [256, 33, 258, 32, 100276]
    assert (wide.pattern, wide.tie, wide.merge_counts, wide.n_vocab) == ("cl100k", "bytes", [9, 4, 2], 100_277)
    for old in (counts, mapped, wide):
        again = Tokenizer.from_bytes(old.to_bytes())
        assert old.to_bytes()[8] == 3
        assert again == old and again.fingerprint == old.fingerprint and again.id_map == old.id_map


def test_version_2_bad_files_are_format_errors() -> None:
    """Each damage names the offset; a version-1 file may not use version 2's liberties."""
    merges = [(97, 98), (256, 99)]
    good = encode_tokenizer_bin(merges, "gpt2", ["<|x|>"], "id", None, [0, *range(1, 258), 70_000], version=2)
    fields = parse_tokenizer_bin(good, "t.bin")
    assert fields.merges == merges and fields.id_map is not None and fields.id_map[-1] == 70_000
    with pytest.raises(FormatError, match=r"t.bin: offset 4[0-9]: merge 1 \(id 257\) is \(257, 99\): token 257 does not exist yet"):
        parse_tokenizer_bin(encode_tokenizer_bin([(97, 98), (257, 99)], "gpt2", [], "id", None, version=2), "t.bin")
    with pytest.raises(FormatError, match="truncated"):
        parse_tokenizer_bin(good[:-1], "t.bin")
    with pytest.raises(FormatError, match=r"id_map\[258\] = 2147483648 is outside 0..2147483647"):
        parse_tokenizer_bin(
            encode_tokenizer_bin(merges, "gpt2", ["<|x|>"], "id", None, [*range(258), MASKBIT32], version=2), "t.bin"
        )
    with pytest.raises(FormatError, match=r"id_map\[258\] = 300 is outside 0..258"):
        parse_tokenizer_bin(
            encode_tokenizer_bin(merges, "gpt2", ["<|x|>"], "id", None, [*range(258), 300], version=1), "t.bin"
        )
    bad_version = bytearray(good)
    bad_version[8] = 4
    with pytest.raises(FormatError, match="format version 4 is not supported"):
        parse_tokenizer_bin(bytes(bad_version), "t.bin")


# ---- id spaces with holes (cl100k_base, o200k_base) --------------------------------------------------


@pytest.fixture(scope="module")
def holey() -> Tokenizer:
    """Two merges and two specials, the specials at cl100k's ids: 100,257 and 100,276 (ids 258..100,256
    and 100,258..100,275 are holes).  Merges: (a, b) -> 256 'ab', (256, c) -> 257 'abc'."""
    return Tokenizer(
        [(97, 98), (256, 99)],
        pattern="gpt4",
        special_tokens=["<|endoftext|>", "<|endofprompt|>"],
        id_map=[*range(258), 100_257, 100_276],
    )


def test_holes_are_not_tokens(holey: Tokenizer) -> None:
    """n_vocab and max_token_value as tiktoken has them (the largest id + 1, and the largest
    id), a hole decodes to an error naming it, and vocab lists no hole."""
    assert holey.n_vocab == 100_277 and holey.max_token_value == 100_276 and holey.n_tokens == 260
    assert holey.encode("abc<|endofprompt|>", allowed_special="all") == [257, 100_276]
    assert holey.decode([257, 100_257]) == "abc<|endoftext|>"
    for hole in (258, 100_256, 100_275):
        with pytest.raises(UnknownTokenError, match=f"token id {hole} is not in the vocabulary: this vocabulary leaves it unused"):
            holey.decode([97, hole])
        with pytest.raises(UnknownTokenError, match=f"token id {hole} "):
            holey.token_bytes(hole)
    with pytest.raises(UnknownTokenError, match="token id 100277 is not in the vocabulary"):
        holey.decode([100_277])
    assert sorted(holey.vocab) == [*range(258), 100_257, 100_276]
    with pytest.raises(ConfigError, match="bos=100256 is not an id"):
        holey.encode_documents([b"abc"], bos=100_256)
    arr = holey.encode_documents([b"abc"], eos=100_257)
    assert arr.dtype == np.uint32 and arr.tolist() == [257, 100_257]


def test_a_sparse_id_space_costs_no_table_of_every_id(tmp_path: Path) -> None:
    """Ids up to 2**31 - 1 are allowed: one special token there made a list of 2**31 entries
    (16 GiB: MemoryError, or the process killed)."""
    tok = Tokenizer([(97, 98)], special_tokens=["<|far|>"], id_map=[*range(257), MAX_TOKEN_ID])
    assert tok.n_vocab == MASKBIT32 and tok.max_token_value == MAX_TOKEN_ID and tok.n_tokens == 258
    assert tok.encode("ab<|far|>", allowed_special="all") == [256, MAX_TOKEN_ID]
    assert tok.decode([256, MAX_TOKEN_ID]) == "ab<|far|>"
    assert tok.encode_to_numpy("ab").dtype == np.uint32
    with pytest.raises(UnknownTokenError, match="token id 1000 is not in the vocabulary: this vocabulary leaves it unused"):
        tok.decode([1000])
    assert sorted(tok.vocab) == [*range(257), MAX_TOKEN_ID]
    tok.save(tmp_path / "far.bin")
    assert Tokenizer.load(tmp_path / "far.bin") == tok


def test_holes_survive_the_file(holey: Tokenizer, tmp_path: Path) -> None:
    path = tmp_path / "holey.bin"
    holey.save(path)
    assert path.read_bytes()[48] == 4  # 16-bit ids cannot hold holes: the merges section's id width is 4
    loaded = Tokenizer.load(path)
    assert loaded == holey and loaded.n_vocab == 100_277 and loaded.id_map == holey.id_map


def test_tiktoken_ranks_with_specials_past_a_hole() -> None:
    """cl100k_base's shape: ranks 0..n-1, then specials that leave ids unused.  Refused before
    ("mnemo needs ids 0..n-1 without gaps")."""
    from mnemo.interop import from_mergeable_ranks

    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    tok = from_mergeable_ranks(ranks, "gpt4", {"<|endoftext|>": 258, "<|fim|>": 1000})
    assert tok.n_vocab == 1001 and tok.encode("ab<|fim|>", allowed_special="all") == [256, 1000]
    with pytest.raises(UnknownTokenError, match="token id 257 "):
        tok.decode([257])


@pytest.mark.slow
def test_cl100k_base_loads_with_its_holes() -> None:
    path = ROOT.parent / "shared" / "fixtures" / "tiktoken" / "cl100k_base.tiktoken.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    import gzip

    from mnemo.interop import from_mergeable_ranks, parse_tiktoken

    ranks, _ = parse_tiktoken(gzip.decompress(path.read_bytes()).decode(), str(path))
    specials = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
    tok = from_mergeable_ranks(ranks, "gpt4", specials)
    assert tok.n_vocab == 100_277 and tok.max_token_value == 100_276
    with pytest.raises(UnknownTokenError, match="token id 100256 "):
        tok.decode([100_256])
    text = "Hello, world! Tokenizers with holes: 12345 ünïcödé"
    ids = tok.encode(text + "<|endoftext|>", allowed_special="all")
    tiktoken = pytest.importorskip("tiktoken")
    ref = tiktoken.Encoding(
        "cl100k_base",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        mergeable_ranks=ranks,
        special_tokens=specials,
    )
    assert ids == ref.encode(text + "<|endoftext|>", allowed_special="all")
    assert tok.n_vocab == ref.n_vocab and tok.max_token_value == ref.max_token_value


# ---- chat and masks with any vocabulary -----------------------------------------------------------


MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello there"},
]


def test_chat_of_a_large_vocabulary_uses_bit_31(big: Tokenizer) -> None:
    """Refused before ("chat rendering needs every id below MASKBIT = 32768").  Ids reach 32,768
    and more, so bit 15 is part of an id: the mask is bit 31, as in a uint32 .tok."""
    tok = Tokenizer(big.merges, pattern="gpt4")  # mnemo's chat specials at the top
    ids = tok.render_conversation(MESSAGES)
    plain, mask = tok.render_conversation(MESSAGES, return_mask=True)
    assert len(ids) == len(plain) == len(mask)
    assert [t & ~MASKBIT32 for t in ids] == plain
    assert [int(bool(t & MASKBIT32)) for t in ids] == mask
    reply = tok.encode("hello there")
    start = plain.index(tok.special_tokens["<|assistant|>"]) + 1
    assert plain[start : start + len(reply) + 1] == [*reply, tok.special_tokens["<|end|>"]]
    assert mask == [0] * start + [1] * (len(reply) + 1)
    assert tok.decode(ids, masked=True) == tok.decode(plain)  # masked ids decode when asked
    with pytest.raises(UnknownTokenError, match="masked=True"):
        tok.decode(ids)
    assert split_mask(ids, MASKBIT32) == (plain, [bool(m) for m in mask])
    assert strip_mask(ids, MASKBIT32) == plain
    arr_plain, arr_mask = strip_mask_array(np.array(ids, dtype=np.uint32))
    assert arr_plain.tolist() == plain and arr_mask.tolist() == [bool(m) for m in mask]


def test_decode_of_masked_16_bit_ids() -> None:
    tok = Tokenizer([(104, 105)])
    ids = tok.render_conversation(MESSAGES)
    assert any(t & MASKBIT for t in ids)
    assert tok.decode(ids, masked=True) == tok.decode(strip_mask(ids))
    with pytest.raises(UnknownTokenError, match="masked=True"):
        tok.decode(ids)


@pytest.fixture(scope="module")
def gpt2(cs336_dir: Path) -> Tokenizer:
    from mnemo.interop import load_gpt2

    return load_gpt2(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")


def test_chat_with_gpt2_is_chatml_text(gpt2: Tokenizer) -> None:
    """GPT-2 has none of mnemo's chat tokens: ChatML spelt as text after <|endoftext|>, the
    template Hugging Face gave tokenizers without one; content and <|im_end|> of the assistant
    are learned.  50,257 ids: the mask is bit 31."""
    plain, mask = gpt2.render_conversation(MESSAGES, return_mask=True)
    assert gpt2.decode(plain) == (
        "<|endoftext|><|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
        "<|im_start|>assistant\nhello there<|im_end|>\n"
    )
    learned = gpt2.decode([t for t, m in zip(plain, mask) if m])
    assert learned == "hello there<|im_end|>"
    ids = gpt2.render_conversation(MESSAGES)
    assert [t & ~MASKBIT32 for t in ids] == plain and any(t & MASKBIT32 for t in ids)
    with pytest.raises(InputError, match=r"message 1 \(user\): the text contains the chat marker '<\|im_end\|>'"):
        gpt2.render_conversation([MESSAGES[0], {"role": "user", "content": "x<|im_end|>"}])


def test_chat_markers_that_are_special_tokens_are_their_ids(gpt2: Tokenizer) -> None:
    """GPT-2 with <|im_start|> and <|im_end|> added as special tokens (as Qwen's vocabulary has
    them): each marker is its one id, as encode(text, allowed_special="all") finds it in the
    rendered text; with only one of the two, both stay text."""
    both = gpt2.with_special_tokens(["<|im_start|>", "<|im_end|>"])
    start, end = both.special_tokens["<|im_start|>"], both.special_tokens["<|im_end|>"]
    plain, mask = both.render_conversation(MESSAGES, return_mask=True)
    text = (
        "<|endoftext|><|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
        "<|im_start|>assistant\nhello there<|im_end|>\n"
    )
    assert plain == both.encode(text, allowed_special="all")
    assert plain.count(start) == plain.count(end) == 3
    assert [t for t, m in zip(plain, mask) if m] == [*both.encode("hello there"), end]
    with pytest.raises(InputError, match=r"message 1 \(user\)"):
        both.render_conversation([MESSAGES[0], {"role": "user", "content": "x<|im_end|>"}])
    one = gpt2.with_special_tokens(["<|im_start|>"])
    assert one.render_conversation(MESSAGES, return_mask=True)[0] == gpt2.render_conversation(MESSAGES, return_mask=True)[0]


def test_tokshow_chat_with_gpt2(gpt2: Tokenizer, tmp_path: Path) -> None:
    """`mnemo tokshow -t gpt2.bin --chat` failed: every id had to be below MASKBIT."""
    gpt2.save(tmp_path / "gpt2.bin")
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"messages": MESSAGES}) + "\n")
    run = subprocess.run(
        [sys.executable, "-m", "mnemo", "tokshow", "-t", str(tmp_path / "gpt2.bin"), "--chat", str(chats), "--no-color"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "[hello]|[ there]|[<]|[|]|[im]|[_]|[end]|[|]|[>]|" in run.stdout
    assert "masked (learned)" in run.stdout


def test_masked_uint32_stream_and_loader() -> None:
    ids = np.array([5, 70_000 | MASKBIT32, 40_000, 0x8001 | MASKBIT32, 3], dtype=np.uint32)
    stream = TokenStream.from_arrays(ids, masked=True)
    assert stream.maskbit == MASKBIT32 and stream.max_id() == 70_000
    batch = BatchLoader(stream, batch_size=1, context=4, order="sequential").get([0])
    assert batch.inputs.tolist() == [[5, 70_000, 40_000, 0x8001]]
    assert batch.targets.tolist() == [[70_000, 40_000, 0x8001, 3]]
    assert batch.mask is not None and batch.mask.tolist() == [[True, False, True, False]]
    assert stream.token_counts(70_001)[[70_000, 0x8001, 40_000]].tolist() == [1, 1, 0]
    with pytest.raises(ConfigError, match="maskbit="):
        TokenStream.from_arrays(ids, ids.astype(np.uint16), masked=True)


def test_chat_tok_file_of_a_large_vocabulary(big: Tokenizer, tmp_path: Path) -> None:
    tok = Tokenizer(big.merges, pattern="gpt4")
    ids = tok.render_conversation(MESSAGES)
    with TokWriter(tmp_path / "c.tok", tok, chat=True) as w:
        w.write(ids, n_docs=1)
    f = open_tok(tmp_path / "c.tok", tok)
    assert f.header.width == 4 and f.header.maskbit == MASKBIT32 and f.tokens.tolist() == ids
    stream = TokenStream.from_tok_files([tmp_path / "c.tok"], tok)
    plain, mask = tok.render_conversation(MESSAGES, return_mask=True)
    batch = BatchLoader(stream, batch_size=1, context=len(ids) - 1, order="sequential").get([0])
    assert batch.inputs.tolist() == [plain[:-1]] and batch.mask is not None
    assert batch.mask.tolist() == [[bool(m) for m in mask[1:]]]


# ---- training past 65,535 ids ---------------------------------------------------------------------


def test_wide_trainer_is_generated_from_the_16_bit_one() -> None:
    """mnemo/merge_loop_wide.py is tools/gen_merge_loop_wide.py's output for the merge_loop.py
    of this checkout: the two trainers cannot drift apart."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen", ROOT / "tools" / "gen_merge_loop_wide.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.generate() == (ROOT / "mnemo" / "merge_loop_wide.py").read_text(encoding="utf-8"), (
        "run python tools/gen_merge_loop_wide.py"
    )


def _words(texts: list[str], pattern: str = "mnemonic") -> dict[bytes, int]:
    from mnemo.training import count_words

    return count_words([t.encode() for t in texts], pattern=pattern, workers=1)[0]


@pytest.mark.parametrize("tie", ["id", "bytes"])
def test_wide_trainer_equals_16_bit_and_naive(sample: list[str], tie: str) -> None:
    from mnemo import merge_loop, merge_loop_wide
    from mnemo.reference import train_merges_naive

    words = _words(sample[:12])
    naive = train_merges_naive(words, 200, tie=tie)
    assert merge_loop_wide.train_merges(words, 200, tie=tie) == naive
    with pytest.MonkeyPatch.context() as m:  # the skip index's seams, as tests/test_merge_loop.py sets them
        m.setattr(merge_loop_wide.SEAMS, "block", 64)
        m.setattr(merge_loop_wide.SEAMS, "gap", 1)
        assert merge_loop_wide.train_merges(words, 200, tie=tie) == naive
    more = _words(sample)
    assert merge_loop_wide.train_merges(more, 5_000, tie=tie) == merge_loop.train_merges(more, 5_000, tie=tie)


@pytest.mark.parametrize("tie", ["id", "bytes"])
def test_wide_trainer_continues_from_the_16_bit_one(sample: list[str], tie: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above 65,535 ids merge_loop_wide learns the merges that fit in 16 bits with merge_loop and
    continues from its words (SEAMS.handoff, low here so that a small sample crosses it): the same
    merges and counts as the 32-bit trainer alone and as the twin, wherever the handoff falls --
    first merge, middle, last, inside the initial merges, after the pairs ran out -- with the
    verification on (it recounts on both sides of the handoff)."""
    from mnemo import merge_loop_wide
    from mnemo.reference import train_merges_naive

    words = _words(sample[:12])
    naive = train_merges_naive(words, 300, tie=tie)
    monkeypatch.setattr(merge_loop_wide.SEAMS, "handoff", 0)
    assert merge_loop_wide.train_merges(words, 300, tie=tie) == naive
    calls: list[int] = []
    for h in (1, 100, 299):
        monkeypatch.setattr(merge_loop_wide.SEAMS, "handoff", h)
        calls.clear()
        got = merge_loop_wide.train_merges(words, 300, tie=tie, progress=lambda _p, done, total: calls.append(done))
        assert got == naive, f"handoff after {h} merges"
        assert calls == sorted(calls) and calls[-1] == 300
    initial = naive[0][:150]  # continuing a tokenizer: the forced merges run past the handoff
    monkeypatch.setattr(merge_loop_wide.SEAMS, "handoff", 100)
    assert merge_loop_wide.train_merges(words, 300, tie=tie, initial_merges=initial) == train_merges_naive(
        words, 300, tie=tie, initial_merges=initial
    )
    with monkeypatch.context() as m:  # small blocks: the index is rebuilt for the 32-bit words
        m.setattr(merge_loop_wide.SEAMS, "block", 64)
        m.setattr(merge_loop_wide.SEAMS, "gap", 1)
        assert merge_loop_wide.train_merges(words, 300, tie=tie) == naive
    with monkeypatch.context() as m:  # every pair from its word list on both sides of the handoff, then none
        from mnemo import merge_loop

        for cost in (0, -1):
            m.setattr(merge_loop_wide.SEAMS, "list_cost", cost)
            m.setattr(merge_loop.SEAMS, "list_cost", cost)
            assert merge_loop_wide.train_merges(words, 300, tie=tie) == naive, cost
    tiny = {b"hello": 5, b"yellow": 3, b"low": 2, b"x": 9}
    for h in (2, 50):  # the pairs run out after the handoff, and before it
        monkeypatch.setattr(merge_loop_wide.SEAMS, "handoff", h)
        assert merge_loop_wide.train_merges(tiny, 1_000, tie=tie) == train_merges_naive(tiny, 1_000, tie=tie)


def train_merges_incremental(words: dict[bytes, int], n_merges: int) -> tuple[list[tuple[int, int]], list[int]]:
    """The naive twin's rule (tie="id"), with pair counts kept up to date instead of recounted:
    train_merges_naive recounts every pair for every merge, O(merges x text), and cannot reach
    70,000 ids in a test.  Plain dicts, a heap of (-count, pair) with lazy deletion, and the
    naive twin's merge_word; checked against train_merges_naive below."""
    import heapq
    from collections import defaultdict

    from mnemo.reference import merge_word

    seqs = [list(w) for w in words]
    weights = list(words.values())
    counts: defaultdict[tuple[int, int], int] = defaultdict(int)
    where: defaultdict[tuple[int, int], set[int]] = defaultdict(set)
    for i, seq in enumerate(seqs):
        for p in zip(seq, seq[1:]):
            counts[p] += weights[i]
            where[p].add(i)
    heap = [(-c, p) for p, c in counts.items() if c >= 2]
    heapq.heapify(heap)
    merges: list[tuple[int, int]] = []
    got: list[int] = []
    for k in range(n_merges):
        while heap and counts[heap[0][1]] != -heap[0][0]:
            _, p = heapq.heappop(heap)
            if counts[p] >= 2:
                heapq.heappush(heap, (-counts[p], p))
        if not heap:
            break
        c, best = heapq.heappop(heap)
        new = 256 + k
        merges.append(best)
        got.append(-c)
        touched: set[tuple[int, int]] = set()
        for i in sorted(where.pop(best)):
            seq, w = seqs[i], weights[i]
            for p in zip(seq, seq[1:]):
                counts[p] -= w
            seqs[i] = seq = merge_word(seq, best, new)
            for p in zip(seq, seq[1:]):
                counts[p] += w
                where[p].add(i)
                if new in p:
                    touched.add(p)
        for p in touched:
            if counts[p] >= 2:
                heapq.heappush(heap, (-counts[p], p))
    return merges, got


def test_incremental_twin_is_the_naive_twin(sample: list[str]) -> None:
    from mnemo.reference import train_merges_naive

    words = _words(sample[:12])
    assert train_merges_incremental(words, 200) == train_merges_naive(words, 200)


@pytest.mark.slow
def test_fast_equals_twin_at_70000_ids(corpus_docs) -> None:  # type: ignore[no-untyped-def]
    """The corpus samples, trained to 70,000 ids (the 32-bit trainer, ids above 65,535): the same
    merges and counts as the twin."""
    from mnemo import merge_loop_wide

    texts: list[str] = []
    for name in ("english", "multilingual", "code", "chat"):
        size = 0  # 2 MB of each (with --full-corpus too: the twin is Python), 8 MB in all
        for text in corpus_docs(name):
            if size >= 2_000_000:
                break
            texts.append(text)
            size += len(text.encode("utf-8"))
    words = _words(texts)
    fast = merge_loop_wide.train_merges(words, 70_000 - 256)
    assert len(fast[0]) == 70_000 - 256, "the sample no longer holds 70,000 ids' worth of pairs"
    assert fast == train_merges_incremental(words, 70_000 - 256)


def test_vocab_sizes_up_to_262144_are_accepted() -> None:
    from mnemo.training import check_vocab_size

    assert check_vocab_size(262_144) == 262_144
    assert check_vocab_size(MAX_VOCAB) == MAX_VOCAB
    with pytest.raises(ConfigError, match="vocab_size must be <= 2,097,152"):
        check_vocab_size(MAX_VOCAB + 1)


# ---- done when: 131,072 ids, trained, saved, loaded, tokenized to uint32, bigram trained -----------


def synthetic_text(n_words: int) -> str:
    """Distinct made-up words, each twice: every one of their pairs occurs at least twice, so a
    small text holds 130,000 merges (real text of that many merges is tens of MB)."""
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    out = []
    for i in range(n_words):
        word = ""
        x = i * 7919 + 13
        while x:
            x, r = divmod(x, 26)
            word += letters[r]
        out.append(word)
    return " ".join(out + out)


def test_131072_ids_end_to_end(tmp_path: Path) -> None:
    import mnemo
    from mnemo.bigram import pretrain
    from mnemo.tokenizing import tokenize_files

    text = synthetic_text(70_000)
    tok = mnemo.train_from_iterator([text], vocab_size=131_072, workers=1)
    assert tok.n_vocab == 131_072 and len(tok.merges) == 131_072 - 256 - 16
    tok.save(tmp_path / "tokenizer.bin")
    loaded = Tokenizer.load(tmp_path / "tokenizer.bin")
    assert loaded == tok
    ids = loaded.encode(text[:20_000])
    assert max(ids) >= 65_536 and loaded.decode(ids) == text[:20_000]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"text": text[i : i + 5_000]}) + "\n" for i in range(0, 100_000, 5_000)))
    tokenize_files([tmp_path / "docs.jsonl"], loaded, tmp_path / "docs.tok", workers=1)
    f = open_tok(tmp_path / "docs.tok", loaded)
    assert f.header.width == 4 and f.tokens.dtype == np.uint32 and int(f.tokens.max()) >= 65_536
    stream = TokenStream.from_tok_files([tmp_path / "docs.tok"], loaded)
    result = pretrain(stream, vocab_size=loaded.n_vocab, steps=3, batch_size=2, context=8, dim=4,
                      eval_every=3, eval_windows=4, n_generate=2, log=lambda _: None)
    assert result.history and all(np.isfinite(val) for _, _, val in result.history)


def test_info_names_the_holes(holey: Tokenizer, tmp_path: Path) -> None:
    holey.save(tmp_path / "holey.bin")
    run = subprocess.run([sys.executable, "-m", "mnemo", "info", str(tmp_path / "holey.bin")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "260 ids = 256 bytes + 2 merges + 2 special (ids 0..100276: 100017 unused)" in run.stdout
