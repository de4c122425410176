"""The vocabulary's rules (mnemo/vocab.py), one set for every door a vocabulary comes in by:
`Tokenizer(...)` raises ConfigError, a tokenizer.bin FormatError with the offset, and both say the
same thing in the same words (they used to be two validations with two wordings)."""

from __future__ import annotations

import random
import re
from typing import cast

import pytest

from mnemo import ConfigError, FormatError, Tokenizer
from mnemo.idmap import distinct_ids, is_identity, packed_ids, placed
from mnemo.vocab import check_public_ids, from_ranks, spell
from mnemo.vocabfile import encode_tokenizer_bin, parse_tokenizer_bin

BAD = [
    # (merges, special tokens, id map): one broken rule each
    ([(97, 300)], ["<|a|>"], None),  # a part that does not exist yet
    ([(97, 98), (97, 98)], ["<|a|>"], None),  # a repeated pair
    ([(97, 98)], ["<|a|>", "<|a|>"], None),  # a special listed twice
    ([(97, 98)], ["<|a|>"], [1, 1] + list(range(2, 258))),  # two ids renumbered alike
]


@pytest.mark.parametrize(("merges", "specials", "id_map"), BAD)
def test_one_rule_one_wording_at_both_doors(
    merges: list[tuple[int, int]], specials: list[str], id_map: list[int] | None
) -> None:
    with pytest.raises(ConfigError) as from_args:
        Tokenizer(merges, special_tokens=specials, id_map=id_map)
    image = encode_tokenizer_bin(merges, "mnemonic", specials, "id", None, id_map)
    with pytest.raises(FormatError) as from_file:
        parse_tokenizer_bin(image, "t.bin")
    message = str(from_args.value)
    assert re.fullmatch(rf"t\.bin: offset \d+: {re.escape(message)}", str(from_file.value)), (
        message,
        str(from_file.value),
    )


# ---- vocabularies given as ranks (tests/test_rank_semantics.py encodes with them) ----

BYTES = {bytes([b]): b for b in range(256)}


def test_spell_takes_parts_from_later_merges() -> None:
    """spell: merge 0 = (257, 98) uses merge 1 = (97, 97), spelled first."""
    assert spell([(257, 98), (97, 97)])[256:] == [b"aab", b"aa"]
    with pytest.raises(ConfigError, match=r"merge 0 \(id 256\) is made of itself"):
        spell([(256, 98)])
    with pytest.raises(ConfigError, match=r"is made of itself"):
        spell([(97, 258), (97, 98), (256, 99)])


def test_from_ranks_numbers_merges_then_whole_tokens() -> None:
    """Merges in rank order with the ranks as public ids, the tokens no merge makes after
    them, the specials last; holes in the ranks stay holes, as tiktoken allows them."""
    ranks = BYTES | {b"xyz": 300, b"ab": 256, b"abab": 400}
    fields = from_ranks("r", ranks, pattern="gpt2", specials={"<|s|>": 500})
    assert fields.merges == [(97, 98), (256, 256)] and fields.whole_tokens == [b"xyz"] and fields.ranked
    assert fields.id_map == list(range(256)) + [256, 400, 300, 500]
    assert fields.special_tokens == ["<|s|>"]


@pytest.mark.parametrize(
    ("ranks", "specials", "message"),
    [
        ({b"a": 0, b"ab": 1}, {}, r"r: the byte 0x00 is not a token; a byte-level BPE vocabulary has all 256 bytes"),
        (BYTES | {b"ab": 97}, {}, r"r: id 97 is given to both token b'a' and token b'ab' \(duplicate id\)"),
        (BYTES | {b"ab": 256}, {"<|s|>": 256}, r"r: id 256 is given to both token b'ab' and special token '<\|s\|>'"),
        (BYTES | {b"ab": 1 << 31}, {}, r"r: token b'ab' has id 2147483648, above 2147483647"),
        (BYTES | {b"ab": -1}, {}, r"r: token b'ab' has id -1, not a non-negative integer"),
    ],
)
def test_from_ranks_refuses(ranks: dict[bytes, int], specials: dict[str, int], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        from_ranks("r", ranks, pattern="gpt2", specials=specials)


def python_distinct_ids(public: list[object], limit: int) -> bool:
    """The rules of check_public_ids, in Python: every item an int and not a bool, 0 to limit,
    no two equal."""
    return all(type(i) is int and 0 <= i <= limit for i in public) and len(set(public)) == len(public)


def test_the_id_map_helpers() -> None:
    """is_identity, packed_ids and placed (Tokenizer._setup's id map, compiled) against their
    Python definitions."""
    rng = random.Random(9)
    for _ in range(300):
        n = rng.randint(0, 50)
        public = rng.sample(range(rng.choice([n, 2 * n + 1, 70_000, 2**31 - 1])), n)
        assert is_identity(public, n) == (public == list(range(n)))
        assert is_identity(list(range(n)), n) and not is_identity(list(range(n)), n + 1)
        wide = bool(public) and max(public) >= 65_536
        assert packed_ids(public, wide) == b"".join(i.to_bytes(4 if wide else 2, "little") for i in public)
        tokens = [bytes([65 + j % 26]) * (j + 1) for j in range(n)]
        if not public or max(public) < 100_000:
            size = max(public, default=-1) + 3
            want: list[bytes | None] = [None] * size
            for i, raw in zip(public, tokens):
                want[i] = raw
            assert placed(tokens, public, size) == want


def test_distinct_ids_is_check_public_ids_rule() -> None:
    """The compiled check of an importer's ids says yes exactly when the Python rule does (or
    declines ids spread too wide for its table, and check_public_ids checks those itself)."""
    rng = random.Random(4)
    spread = 0
    for _ in range(3000):
        n = rng.randint(0, 40)
        top = rng.choice([n, 2 * n, 300, 70_000, 2**31 - 1, 2**40])
        public: list[object] = [rng.randint(0, top) for _ in range(n)]
        if public and rng.random() < 0.3:
            public[rng.randrange(n)] = rng.choice([-1, True, False, 1.0, "1", None, 2**31, 2**31 - 1, 2**70, public[0]])
        got = distinct_ids(public, 2**31 - 1)
        want = python_distinct_ids(public, 2**31 - 1)
        assert got == want or (want and max(cast(list[int], public)) >= 8 * n + 65536), public
        spread += want and not got
    assert spread > 10
    assert distinct_ids(list(range(100_000)), 2**31 - 1) and not distinct_ids([*range(100_000), 5], 2**31 - 1)
    with pytest.raises(FormatError, match=r"id 7 is given to both a 1 and a 2 \(duplicate id\)"):
        check_public_ids("f", [3, 7, 7], lambda pos: f"a {pos}")
    with pytest.raises(FormatError, match=r"a 1 has id True, not a non-negative integer"):
        check_public_ids("f", [3, True], lambda pos: f"a {pos}")
