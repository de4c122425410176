"""The vocabulary's rules (mnemo/vocab.py), one set for every door a vocabulary comes in by:
`Tokenizer(...)` raises ConfigError, a tokenizer.bin FormatError with the offset, and both say the
same thing in the same words (they used to be two validations with two wordings)."""

from __future__ import annotations

import re

import pytest

from mnemo import ConfigError, FormatError, Tokenizer
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
