"""mnemo/ranks.py, the compiled rank-file path, against its Python twins (formats/tiktoken.py's
parse_tiktoken, vocab.py's from_ranks).

The rule: the compiled path covers every vocabulary of ranks 0..n-1 with each byte a token --
ordinary ones (every token the merge of two lower-ranked ones: GPT-2, cl100k_base, o200k_base)
and ranked ones (docs/formats.md, "Rank semantics": Llama 3's) -- and gives exactly what the
Python path gives for them; on an error it returns None and the Python path words it.
"""

from __future__ import annotations

import base64
import gzip
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from librt.vecs import vec
from mypy_extensions import i64

from mnemo import FormatError, Tokenizer
from mnemo.encode_chunk import Encoder, export_tables, spell_merges
from mnemo.patterns import compile_pattern
from mnemo.formats.common import tokenizer_of
from mnemo.formats.tiktoken import (
    TIKTOKEN_PRESETS,
    _from_tokens_by_rank,
    _split_by_ranks,
    _tokens_by_rank,
    from_mergeable_ranks,
    load_tiktoken,
    parse_tiktoken,
)
from mnemo.ranks import CLEAN, LONG_TOKEN, PairSplits, RankVocab, SubstringRanks, byte_ranks, merges_of_ranks, parse_rank_lines
from mnemo.vocab import from_ranks

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "tiktoken"


def python_tokens(data: bytes) -> list[bytes] | None:
    """The Python parser's tokens by rank, or None when it raises or the ranks are not 0..n-1
    (gaps are allowed since rank semantics: a ranked vocabulary, the Python path's)."""
    try:
        ranks, _ = parse_tiktoken(data.decode("utf-8"), "t")
    except (FormatError, UnicodeDecodeError):
        return None
    if sorted(ranks.values()) != list(range(len(ranks))):
        return None
    return [raw for raw, _ in sorted(ranks.items(), key=lambda item: item[1])]


def python_vocab(tokens: list[bytes]) -> tuple[list[tuple[int, int]], list[int], list[bytes], bool] | None:
    """The Python path's merges, id map, whole tokens and ranked flag for tokens by rank; None
    when it raises."""
    try:
        fields = from_ranks("t", {raw: r for r, raw in enumerate(tokens)}, pattern="gpt2")
    except FormatError:
        return None
    tok = tokenizer_of("t", fields)
    return tok.merges, tok.id_map if tok.id_map is not None else list(range(tok.n_vocab)), tok.whole_tokens, tok.ranked


def compiled_vocab(tokens: list[bytes]) -> tuple[list[tuple[int, int]], list[int], list[bytes], bool] | None:
    fast = merges_of_ranks(tokens)
    return None if fast is None else (fast.merges, fast.public, fast.whole, fast.ranked)


def byte_lines() -> list[bytes]:
    return [base64.b64encode(bytes([b])) + b" " + str(b).encode() for b in range(256)]


# ---- parse_rank_lines ----


def has_repeats(tokens: list[bytes]) -> bool:
    """A token listed twice: parse_rank_lines leaves these to merges_of_ranks, whose table of
    tokens finds them (the Python parser names the line)."""
    return len(set(tokens)) != len(tokens)


LINE_CASES = [
    b"YWI= 256",  # plain
    b"YWI= 0256",  # leading zeros: int() takes them
    b"YWI= 256\r\r",  # CRs stripped, every one of them
    b"",  # blank lines are skipped
    b"\r",
    b"YWJj 256",  # no padding
    b"YQ== 256",
    b"YR== 256",  # non-zero leftover bits: b64decode ignores them, and so must we
    b"YWI 256",  # not a multiple of 4
    b"YWI=256",  # no space
    b"YWI=  256",  # two spaces
    b" YWI= 256",
    b"YWI= 256 ",
    b"Y*I= 256",
    b"YW=I 256",
    b"Y=== 256",
    b"==== 256",
    b"YWI= -1",
    b"YWI= 1\xc2\xb2",  # a superscript two: isdigit() but not ASCII
    b"YWI= 1234567890123456789",  # 19 digits
    b"YWI= ",
    b"\xef\xbb\xbfYWI= 256",  # a byte-order mark
    b"YWI=\t256",
    b"YWI= 257",  # a gap
    b"YWI= 255",  # a rank given twice
    b"YQ== 256",  # a token given twice (with the byte line for 'a')
]


@pytest.mark.parametrize("line", LINE_CASES)
def test_each_line_shape_parses_as_the_python_parser_does(line: bytes) -> None:
    for data in (b"\n".join([*byte_lines(), line]) + b"\n", b"\n".join([*byte_lines(), line]), b"\r\n".join([*byte_lines(), line])):
        fast = parse_rank_lines(data)
        slow = python_tokens(data)
        assert fast is None or fast == slow or has_repeats(fast), line
        if slow is None:
            assert fast is None or merges_of_ranks(fast) is None, line


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=8), st.data())
def test_random_files_parse_as_the_python_parser_does(tokens: list[bytes], data: st.DataObject) -> None:
    """Random tokens and ranks, with random damage: the compiled parser agrees or declines."""
    lines = [base64.b64encode(t) + b" " + str(r).encode() for r, t in enumerate(tokens)]
    data.draw(st.randoms()).shuffle(lines)
    raw = bytearray(b"\n".join(lines))
    for _ in range(data.draw(st.integers(0, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.sampled_from(b"= \r\n+/Aa09\xff-"))
    fast = parse_rank_lines(bytes(raw))
    slow = python_tokens(bytes(raw))
    assert fast is None or fast == slow or has_repeats(fast)
    if slow is None:
        assert fast is None or merges_of_ranks(fast) is None


# ---- merges_of_ranks ----


def random_vocab(rng: random.Random, long: bool = False) -> list[bytes]:
    """The 256 bytes at random ranks, then random tokens over a small alphabet (so that many of
    them are, or nearly are, merges of lower-ranked ones)."""
    alphabet = b"abc"[: rng.randint(1, 3)]
    tokens = [bytes([b]) for b in range(256)]
    rng.shuffle(tokens)
    seen = set(tokens)
    for _ in range(rng.randint(0, 40)):
        size = rng.randint(LONG_TOKEN - 4, LONG_TOKEN + 40) if long and rng.random() < 0.3 else rng.randint(2, 8)
        tok = bytes(rng.choice(alphabet) for _ in range(size))
        if tok not in seen:
            seen.add(tok)
            tokens.append(tok)
    return tokens


@pytest.mark.parametrize("long", [False, True])
def test_merges_of_ranks_is_the_python_path(long: bool) -> None:
    """Random vocabularies, most of which are ranked (a token that is not the merge of two
    lower-ranked ones): the same merges, ids, whole tokens and ranked flag as the Python path;
    every ordinary one proper (its encoder tables taken unbuilt, which verify() checks)."""
    rng = random.Random(11 + long)
    ordinary = ranked = 0
    for _ in range(400):
        tokens = random_vocab(rng, long)
        fast = merges_of_ranks(tokens)
        assert fast is not None and compiled_vocab(tokens) == python_vocab(tokens)
        # the bytes handed to the encoder are those it would spell from the merges
        assert fast.spelled == spell_merges(vec[i64]([a for a, _ in fast.merges]), vec[i64]([b for _, b in fast.merges]))
        assert_tables_known_are_right(fast)
        if fast.ranked:
            ranked += 1
            assert not fast.proper
        else:
            ordinary += 1
            assert fast.proper
            from_mergeable_ranks({t: r for r, t in enumerate(tokens)}, "gpt2").verify()
    assert ordinary > 5 and ranked > 50, (ordinary, ranked)  # test_merges_of_ranks_on_grown_vocabularies: more ordinary


def assert_tables_known_are_right(vocab: RankVocab) -> int:
    """The encoder's tables as merges_of_ranks gives them (known where no step of a token's own
    merge was improper, ranked vocabularies too) equal the ones a BPE of every token's bytes
    builds; returns how many tokens were left to that BPE."""
    n = len(vocab.merges)
    wide = n + len(vocab.whole) + 256 > 65536
    given = Encoder(vocab.merges, wide, vocab.whole, vocab.tables, vocab.spelled)
    built = Encoder(vocab.merges, wide, vocab.whole)
    assert export_tables(given) == export_tables(built)
    size = (n + 7) >> 3
    assert len(vocab.tables) in (size, 2 * size)
    return sum(bin(b).count("1") for b in vocab.tables[size:])


def test_ranked_tables_are_known_token_by_token() -> None:
    """A ranked vocabulary's tokens whose own merge is proper come with their table bits (they
    used to be built by a BPE of every token); the improper ones are left to that BPE, and a
    whole token is no merge at all."""
    tokens = [bytes([b]) for b in range(256)]
    later = merges_of_ranks([*tokens, b"abc", b"ab"])  # b"abc" glues b"ab", ranked after it
    assert later is not None and later.ranked and assert_tables_known_are_right(later) == 1
    # b"abc"'s merge is improper (it glues b"ab", of a higher rank): unknown; b"ab" is known
    assert later.tables == bytes([0b10, 0b01])
    plain = merges_of_ranks([*tokens, b"ab", b"abc", b"xyz"])  # b"xyz": whole, no merge
    assert plain is not None and plain.ranked and plain.merges == [(97, 98), (256, 99)]
    assert plain.tables == bytes([0b11]) and assert_tables_known_are_right(plain) == 0


def test_ranks_after_the_special_ids_take_the_compiled_path() -> None:
    """A tekken file's ranks start after its special ids.  The compiled path takes them (it took
    only ranks 0..n-1, so tekken files went the Python way: about 3x slower to load) and builds what
    the Python path builds: the same merges, whole tokens, public ids and special ids."""
    rng = random.Random(23)
    for _ in range(60):
        tokens = random_vocab(rng)
        offset = rng.randint(1, 40)
        names = {f"<s{j}>": j for j in rng.sample(range(offset), rng.randint(0, offset))}
        ranks = {raw: offset + r for r, raw in enumerate(tokens)}
        by_rank = _tokens_by_rank(ranks)
        assert by_rank == (tokens, offset)
        fast = _from_tokens_by_rank(by_rank, compile_pattern("gpt2"), names)
        try:
            slow = tokenizer_of("t", from_ranks("t", ranks, pattern="gpt2", specials=names))
        except FormatError:
            assert fast is None
            continue
        assert fast is not None
        assert (fast.merges, fast.whole_tokens, fast.ranked, fast.id_map, fast.special_tokens) == (
            slow.merges, slow.whole_tokens, slow.ranked, slow.id_map, slow.special_tokens
        )
    # a special id among the ranks' ids, or ranks with a gap: the Python path words it
    assert _from_tokens_by_rank(([bytes([b]) for b in range(256)], 5), compile_pattern("gpt2"), {"<x>": 7}) is None
    assert _tokens_by_rank({bytes([b]): b + (b > 9) for b in range(256)}) is None


def grown_vocab(rng: random.Random, alphabet: bytes, size: int, steps: int) -> list[bytes]:
    """The 256 bytes at random ranks, then up to `steps` tokens, each a pair of neighbours in
    tiktoken's merge of one random text (of `size` bytes over `alphabet`) by the ranks so far:
    the way a trained vocabulary grows."""
    tokens = [bytes([b]) for b in range(256)]
    rng.shuffle(tokens)
    ranks = {t: r for r, t in enumerate(tokens)}
    text = bytes(rng.choice(alphabet) for _ in range(size))
    for _ in range(rng.randint(1, steps)):
        parts = _split_by_ranks(text, ranks, len(ranks))
        pairs = [parts[i] + parts[i + 1] for i in range(len(parts) - 1)]
        if not pairs:
            break
        new = rng.choice(pairs)
        if new not in ranks:
            ranks[new] = len(ranks)
            tokens.append(new)
    return tokens


def test_merges_of_ranks_on_grown_vocabularies() -> None:
    """Vocabularies that load: each token made by tiktoken's own merge of a text (the way a
    trained vocabulary grows), up to and past the heap's LONG_TOKEN bytes."""
    rng = random.Random(5)
    for _ in range(60):
        tokens = grown_vocab(rng, b"ab c", 400, 120)
        fast = merges_of_ranks(tokens)
        assert fast is not None and compiled_vocab(tokens) == python_vocab(tokens) and not fast.ranked
        # A proper vocabulary (every one found so far: these, the accepted random ones above,
        # cl100k_base, o200k_base) loads with every word-table bit set, unchecked; verify()
        # rebuilds the encoder's tables by a BPE of every token and must find the same bits.
        assert fast.proper
        from_mergeable_ranks({t: r for r, t in enumerate(tokens)}, "gpt2").verify()


def test_missing_bytes_and_repeats_are_declined() -> None:
    tokens = [bytes([b]) for b in range(256)]
    assert merges_of_ranks(tokens[:-1]) is None  # byte 255 has no token
    assert merges_of_ranks([*tokens, b"a"]) is None  # listed twice
    assert merges_of_ranks([*tokens, b""]) is None
    # a repeat found in each of TokenTable's tables: two bytes, 3 to SMALL bytes, longer
    for raw in (b"ab", b"abc", b"abcde", b"abcdef", b"abcdefgh", bytes(range(250, 256)) * 3):
        parts = [raw[:i] for i in range(2, len(raw) + 1)]
        assert merges_of_ranks([*tokens, *parts]) is not None
        assert merges_of_ranks([*tokens, *parts, raw]) is None, raw
    vocab = merges_of_ranks([*tokens, b"ab", b"abc"])
    assert vocab is not None and vocab.merges == [(97, 98), (256, 99)] and vocab.public == list(range(258))
    assert not vocab.ranked and vocab.whole == [] and vocab.proper


def test_ranked_vocabularies_take_the_compiled_path() -> None:
    """A token no merge makes is whole; a token whose pair ranks after it is merged from it."""
    tokens = [bytes([b]) for b in range(256)]
    whole = merges_of_ranks([*tokens, b"abc"])  # tiktoken's merge of b"abc" never glues a pair
    assert whole is not None and whole.ranked and not whole.proper
    assert (whole.merges, whole.whole, whole.public) == ([], [b"abc"], list(range(257)))
    later = merges_of_ranks([*tokens, b"abc", b"ab"])  # b"abc" (rank 256) is made of b"ab" (rank 257)
    assert later is not None and later.ranked and later.whole == []
    assert later.merges == [(257, 99), (97, 98)] and later.public == [*range(256), 256, 257]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_openai_files_through_both_paths(name: str, tmp_path: Path) -> None:
    """The whole file: the compiled parser gives the Python parser's tokens, and load_tiktoken
    (compiled path) the Tokenizer the Python path builds -- merges, ids, fingerprint -- which
    also passes verify() (its encoder's tables built again from its merges)."""
    path = FIXTURES / f"{name}.tiktoken.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    data = gzip.decompress(path.read_bytes())
    tokens = parse_rank_lines(data)
    assert tokens is not None and tokens == python_tokens(data)
    fast = load_tiktoken(path, name)
    fast.verify()
    if name == "cl100k_base":  # the Python path takes a few seconds: once is enough
        pattern, _, specials = TIKTOKEN_PRESETS[name]
        ranks = {raw: r for r, raw in enumerate(tokens)}
        # an encoding by name runs on tiktoken's Unicode tables (docs/tiktoken.md)
        slow = tokenizer_of(name, from_ranks(name, ranks, pattern=compile_pattern(pattern, "tiktoken"), specials=specials))
        assert not slow.ranked
        assert fast.merges == slow.merges and fast.id_map == slow.id_map and fast.fingerprint == slow.fingerprint
        assert fast.special_tokens == slow.special_tokens


def test_from_mergeable_ranks_takes_the_compiled_path_and_leaves_the_rest_to_python() -> None:
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    tok = from_mergeable_ranks(ranks, "gpt2", {"<|x|>": 300})
    assert isinstance(tok, Tokenizer) and tok.n_vocab == 301 and tok.merges == [(97, 98)] and not tok.ranked
    with pytest.raises(FormatError, match=r"id 100 is given to both"):
        from_mergeable_ranks(ranks, "gpt2", {"<|x|>": 100})
    ranks[b"xyz"] = 257  # no merge makes it: kept whole, by the compiled path as by the Python one
    fast = merges_of_ranks([raw for raw, _ in sorted(ranks.items(), key=lambda item: item[1])])
    assert fast is not None and fast.whole == [b"xyz"]
    ranked = from_mergeable_ranks(ranks, "gpt2")
    assert ranked.ranked and ranked.whole_tokens == [b"xyz"]
    slow = tokenizer_of("r", from_ranks("r", ranks, pattern="gpt2"))
    assert (ranked.merges, ranked.id_map, ranked.fingerprint) == (slow.merges, slow.id_map, slow.fingerprint)


def test_a_llama3_like_rank_file_through_both_paths(tmp_path: Path) -> None:
    """cl100k_base's first 30,000 ranks, then 6,000 of o200k_base's other tokens in o200k's order
    (as Llama 3 appended its tokens to cl100k's): ranked, with whole tokens and parts ranked
    after their token.  load_tiktoken (compiled) builds the Tokenizer the Python path builds."""
    cl100k, o200k = (FIXTURES / f"{name}.tiktoken.gz" for name in ("cl100k_base", "o200k_base"))
    if not cl100k.exists() or not o200k.exists():
        pytest.skip(f"{FIXTURES} is absent")
    tokens = parse_rank_lines(gzip.decompress(cl100k.read_bytes()))
    theirs = parse_rank_lines(gzip.decompress(o200k.read_bytes()))
    assert tokens is not None and theirs is not None
    tokens = tokens[:30_000]
    known = set(tokens)
    tokens += [raw for raw in theirs if raw not in known][:6_000]
    path = tmp_path / "tokenizer.model"
    path.write_bytes(b"".join(base64.b64encode(raw) + b" %d\n" % r for r, raw in enumerate(tokens)))
    specials = {"<|begin_of_text|>": 36_000, "<|end_of_text|>": 36_001}
    fast = load_tiktoken(path, "cl100k", special_tokens=specials)
    slow = tokenizer_of("s", from_ranks("s", {raw: r for r, raw in enumerate(tokens)}, pattern="cl100k", specials=specials))
    assert fast.ranked and len(fast.whole_tokens) >= 10, len(fast.whole_tokens)  # 23
    assert any(a >= 256 + k or b >= 256 + k for k, (a, b) in enumerate(fast.merges))  # a part after its token
    assert (fast.merges, fast.id_map, fast.whole_tokens) == (slow.merges, slow.id_map, slow.whole_tokens)
    assert fast.fingerprint == slow.fingerprint and fast.special_tokens == slow.special_tokens
    fast.verify()


# ---- PairSplits: each token's pair found among the pairs that spell it ----


def pair_splits_vocab(
    tokens: list[bytes], rng: random.Random | None = None, substrings: bool = False
) -> tuple[RankVocab | None, int]:
    """PairSplits' vocabulary when offered, token by token in rank order, every pair of tokens
    that spells the token (as a tokenizer.json converted from ranks lists them; in a random order
    when `rng` is given), and how many tokens it settled from their pairs (the others' bytes it
    merged: over a TokenTable of every token, or with `substrings` over each token's
    substrings' ranks, SubstringRanks)."""
    byte_rank = byte_ranks(tokens)
    assert len(byte_rank) == 256
    rank = {raw: r for r, raw in enumerate(tokens)}
    splits = PairSplits(tokens, byte_rank, SubstringRanks(tokens) if substrings else None)
    for r, raw in enumerate(tokens):
        pairs = [(rank[raw[:i]], rank[raw[i:]]) for i in range(1, len(raw)) if raw[:i] in rank and raw[i:] in rank]
        if rng is not None:
            rng.shuffle(pairs)
        splits.settle_below(r)
        for left, right in pairs:
            assert splits.offer(r, left, right)
    vocab = splits.vocab()
    return vocab, sum(1 for k in splits.kind if k == CLEAN)


def assert_same_vocab(a: RankVocab | None, b: RankVocab | None) -> None:
    assert a is not None and b is not None
    for field in ("merges", "public", "proper", "whole", "ranked", "spelled", "tables"):
        assert getattr(a, field) == getattr(b, field), field


@pytest.mark.parametrize("substrings", [False, True])
@pytest.mark.parametrize("grown", [False, True])
def test_pair_splits_is_merges_of_ranks(grown: bool, substrings: bool) -> None:
    """Random vocabularies over a small alphabet (ties everywhere: a pair that spells a token
    at two places, runs of one byte) and grown ones (every token tiktoken's merge of a text):
    PairSplits gives merges_of_ranks' vocabulary field for field, whatever the order of the
    offers, whether it merges the tokens it cannot settle over a table of every token or over
    each one's substrings; on the grown (ordinary) ones it settles every token from its pairs
    alone."""
    rng = random.Random(31 + grown)
    from_pairs = merged = 0
    for _ in range(300):
        if grown:
            tokens = grown_vocab(rng, b"aab c", 300, 100)
        else:
            tokens = random_vocab(rng, rng.random() < 0.2)
        vocab, clean = pair_splits_vocab(tokens, rng if rng.random() < 0.5 else None, substrings)
        assert_same_vocab(vocab, merges_of_ranks(tokens))
        longer = sum(1 for raw in tokens if len(raw) > 1)
        from_pairs += clean
        merged += longer - clean
        if grown:
            assert clean == longer
    assert from_pairs > 500 and (grown or merged > 1000), (from_pairs, merged)


@pytest.mark.parametrize("name", ["cl100k_base", "llama3_like"])
def test_pair_splits_on_real_vocabularies(name: str, tiktoken_ranks: Callable[[str], dict[bytes, int]]) -> None:
    """cl100k_base settles every token from its pairs (no token's bytes merged); the Llama-3-like
    ranks, with whole tokens and parts ranked after their token, merge the bytes of the few it
    cannot settle.  Both give merges_of_ranks' vocabulary."""
    ranks = tiktoken_ranks(name)
    tokens = [raw for raw, _ in sorted(ranks.items(), key=lambda item: item[1])]
    derived = merges_of_ranks(tokens)
    for substrings in (False, True):
        vocab, clean = pair_splits_vocab(tokens, None, substrings)
        assert_same_vocab(vocab, derived)
        merged = sum(1 for raw in tokens if len(raw) > 1) - clean
        assert merged == 0 if name == "cl100k_base" else 0 < merged < 1_000, merged  # 253


def test_pair_splits_refuses_what_the_file_does_not_list() -> None:
    """A token merged from its bytes (not settled from its pairs) must have its pair among the
    offers, as listed_pairs requires of a converted file: else None.  Offers out of rank order
    are refused."""
    tokens = [bytes([b]) for b in range(256)] + [b"abc", b"ab"]  # b"abc" glues b"ab", ranked after it
    byte_rank = byte_ranks(tokens)
    listed = PairSplits(tokens, byte_rank)
    listed.settle_below(256)
    assert listed.offer(256, 257, 99)  # b"ab" + b"c": b"abc"'s one pair, of a part ranked after it
    listed.settle_below(257)
    assert listed.offer(257, 97, 98)
    assert_same_vocab(listed.vocab(), merges_of_ranks(tokens))
    assert listed.merger is not None  # b"abc" could not be settled from its pair: merged
    by_substrings = PairSplits(tokens, byte_rank, SubstringRanks(tokens))
    by_substrings.settle_below(256)
    assert by_substrings.offer(256, 257, 99)
    by_substrings.settle_below(257)
    assert by_substrings.offer(257, 97, 98)
    assert_same_vocab(by_substrings.vocab(), merges_of_ranks(tokens))
    assert by_substrings.merger is None and by_substrings.sub_merger is not None  # no table of every token
    unlisted = PairSplits(tokens, byte_rank)
    unlisted.settle_below(257)  # b"abc" offered nothing
    assert unlisted.offer(257, 97, 98)
    assert unlisted.vocab() is None
    late = PairSplits(tokens, byte_rank)
    late.settle_below(257)
    assert late.offer(257, 97, 98)
    assert not late.offer(256, 257, 99)  # a lower rank after a higher one
