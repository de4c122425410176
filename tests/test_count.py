"""Word counting: the compiled open-addressing counter against collections.Counter over
`split`, on real text and on crafted hash collisions; and count_words across workers."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mnemo.constants import PATTERNS
from mnemo.count import MEMEQ_MIN_BYTES, PREFIX_BYTES, WordCounter, pack_words, packed_to_dict, word_hash
from mnemo.errors import ConfigError, InputError
from mnemo.patterns import compile_pattern, split
from mnemo.pretokenize import pattern_id
from mnemo.pretokenize_bits import BITS_MIN
from mnemo.training import count_words


def oracle(docs: list[bytes], pattern: str, limit: int = 256) -> tuple[dict[bytes, int], int]:
    chunks = [c for d in docs for c in split(d, pattern)]
    return dict(Counter(c for c in chunks if len(c) <= limit)), sum(len(c) > limit for c in chunks)


@pytest.mark.parametrize("corpus", ["english", "multilingual", "code", "chat"])
@pytest.mark.parametrize("pattern", ["mnemonic", "gpt4", "gpt2", "o200k", "cl100k", "llama3"])
def test_counter_equals_counter_of_split(corpus_docs: Callable[..., list[str]], corpus: str, pattern: str) -> None:
    """`add` cuts a named pattern's text with the hand-written scanner and any other pattern's
    (llama3, a preset) with its compiled program, and the GPT-4 family's texts of BITS_MIN bytes
    or more over ASCII from the class masks (pretokenize_bits); `split` runs the compiled
    program for all."""
    docs = [d.encode() for d in corpus_docs(corpus, max_bytes=1_000_000)]
    handle = compile_pattern(pattern).id
    counter = WordCounter(handle, 256)
    assert counter.named == (pattern_id(pattern) if pattern in PATTERNS else -1)
    assert (counter.rules != 0) == (pattern in ("mnemonic", "gpt4", "o200k", "cl100k"))
    assert any(len(d) >= BITS_MIN for d in docs)
    for d in docs:
        counter.add(d)
    expected, skipped = oracle(docs, pattern)
    assert counter.to_dict() == expected
    assert counter.skipped == skipped
    assert counter.n_bytes == sum(map(len, docs))
    assert len(counter) == len(expected)


def test_long_chunks_and_the_limit() -> None:
    """Words at the memeq crossover and beyond, repeated, and one over the limit."""
    long_words = [b"a" * n for n in (PREFIX_BYTES, PREFIX_BYTES + 1, MEMEQ_MIN_BYTES - 1, MEMEQ_MIN_BYTES, 200)]
    near = b"a" * (MEMEQ_MIN_BYTES + 5) + b"b"  # differs from the a-run only in its last byte... and length
    text = b" ".join(long_words * 3 + [near, near, b"z" * 300])
    counter = WordCounter(pattern_id("mnemonic"), 256)
    counter.add(text)
    expected, skipped = oracle([text], "mnemonic")
    assert counter.to_dict() == expected
    assert skipped == counter.skipped == 1


def _packed(b: bytes) -> int:
    return int.from_bytes(b, "little")


def test_same_hash_length_and_prefix_are_told_apart() -> None:
    """Two different 22-byte words with equal word_hash and equal first 14 bytes (the two
    packed prefix fields of a word record) land on the same key and prefixes: only the full
    comparison separates them.  The pair is found by a birthday search over 400,000 random
    8-letter suffixes, hashed by the compiled word_hash itself (about 18 collisions of its 32
    bits expected)."""
    prefix = b"prefixxprefixx"
    assert len(prefix) == 2 * PREFIX_BYTES
    p1, p2 = _packed(prefix[:PREFIX_BYTES]), _packed(prefix[PREFIX_BYTES:])
    rng = np.random.default_rng(7)
    suffixes = rng.integers(ord("a"), ord("z") + 1, size=(400_000, 8), dtype=np.uint8)
    seen: dict[int, bytes] = {}
    pair = None
    for row in suffixes:
        word = prefix + row.tobytes()
        h = word_hash(word, 0, len(word), p1, p2)
        other = seen.setdefault(h, word)
        if other != word:
            pair = (other, word)
            break
    assert pair is not None, "no collision among 400,000 words: word_hash is not 32 bits wide?"
    a, b = pair
    assert a != b and len(a) == len(b) and a[: 2 * PREFIX_BYTES] == b[: 2 * PREFIX_BYTES]
    counter = WordCounter(pattern_id("gpt2"), 256)
    for word in (a, b, a):  # three documents of one chunk each
        counter.add(word)
    assert counter.to_dict() == {a: 2, b: 1}


def test_table_grows_past_its_first_size() -> None:
    words = [bytes(w) for w in itertools.islice(itertools.product(b"abcdefghijklmnopqrstuvwxyz", repeat=4), 200_000)]
    counter = WordCounter(pattern_id("mnemonic"), 256)
    for w in words:
        counter.add(w)
        counter.add(w)
    assert len(counter) == 200_000
    assert counter.to_dict() == dict.fromkeys(words, 2)


def test_packed_tables_merge_like_counting_everything(corpus_docs: Callable[..., list[str]]) -> None:
    """Workers send their tables packed (to_packed) and the parent adds them up (add_packed,
    through `count`, which repeats add's lookups): the sum must equal counting all the text in
    one table -- same counts, and no word in the table twice (which a key computed differently
    by `count` than by `add` would cause).  Words of every length class: up to 7 bytes (the
    short table), up to 14 (key and prefixes), longer (compared byte by byte, and with memeq
    from MEMEQ_MIN_BYTES), and at the very end of a packed blob (the byte-by-byte load path)."""
    docs = [d.encode() for d in corpus_docs("english", max_bytes=400_000)] + [d.encode() for d in corpus_docs("multilingual", max_bytes=200_000)]
    long_words = [b" " + bytes([97 + i % 26]) * n for i, n in enumerate([8, 13, 14, 15, 40, MEMEQ_MIN_BYTES, 200])]
    docs.append(b"".join(long_words) * 3)
    half = len(docs) // 2
    pid = pattern_id("mnemonic")
    one = WordCounter(pid, 256)
    for d in docs:
        one.add(d)
    first, second = WordCounter(pid, 256), WordCounter(pid, 256)
    for d in docs[:half]:
        first.add(d)
    for d in docs[half:]:
        second.add(d)
    merged = WordCounter(pid, 256)
    merged.add(docs[0])  # words counted by `add`, then the same words again through `count`
    for part, part_docs in ((first, docs[:half]), (second, docs[half:])):
        blob, meta = part.to_packed()
        assert packed_to_dict(blob, meta) == oracle(part_docs, "mnemonic")[0]
        merged.add_packed(blob, meta)
    expected = one.to_dict()
    expected_with_first = dict(expected)
    for w, c in _counts_of(pid, docs[0]).items():
        expected_with_first[w] += c
    assert merged.to_dict() == expected_with_first
    assert len(merged) == len(expected)
    assert all(w in expected for w in long_words)
    blob, meta = pack_words(expected)
    assert packed_to_dict(blob, meta) == expected
    tail = WordCounter(pid, 256)
    tail.add_packed(blob, meta)
    assert tail.to_dict() == expected


def _counts_of(pid: int, doc: bytes) -> dict[bytes, int]:
    c = WordCounter(pid, 256)
    c.add(doc)
    return c.to_dict()


def test_count_words_same_for_any_number_of_workers(tmp_path: Path, corpus_docs: Callable[..., list[str]]) -> None:
    docs = corpus_docs("english", max_bytes=3_000_000)
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    one, stats1 = count_words([path], workers=1)
    two, stats2 = count_words([path], workers=2)
    mem, _ = count_words(iter(docs), workers=2)
    assert one == two == mem
    assert stats1.n_bytes == stats2.n_bytes == sum(len(d.encode()) for d in docs)


def test_count_words_specials_split_and_are_not_counted(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("hello<|endoftext|>world hello")
    words, _ = count_words([path], workers=1, special_tokens=["<|endoftext|>"])
    assert words == {b"hello": 1, b"world": 1, b" hello": 1}


def test_count_words_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown|pattern"):
        count_words(["x"], pattern="gpt5")
    with pytest.raises(ConfigError, match="max_chunk_bytes must be >= 1, got 0"):
        count_words(["x"], max_chunk_bytes=0)
    with pytest.raises(InputError, match="no such file"):
        count_words([tmp_path / "missing.txt"], workers=2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n' * 10 + "nope\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:11: not valid JSON"):
        count_words([bad], workers=2)


def test_packed_counts_is_a_named_table() -> None:
    """to_packed and pack_words give a count.PackedCounts: (blob, meta) by name and by unpacking,
    n_words from the one layout count.py owns, and it survives the pickle a worker's pipe uses."""
    import pickle

    from mnemo.count import META_BYTES, PackedCounts

    counter = WordCounter(pattern_id("mnemonic"), 256)
    counter.add(b"the cat and the hat, the end " + b"x" * 30)
    packed = counter.to_packed()
    assert isinstance(packed, PackedCounts)
    assert packed.n_words == len(counter.to_dict()) == len(packed.meta) // META_BYTES
    blob, meta = packed
    assert (blob, meta) == (packed.blob, packed.meta)
    assert packed_to_dict(*packed) == counter.to_dict()
    again = pickle.loads(pickle.dumps(packed))
    assert again == packed and again.n_words == packed.n_words
    assert pack_words(counter.to_dict()) == packed
