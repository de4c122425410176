"""Every byte of a tokenizer.bin is covered by a checksum (issue 28, item 3).

The rule: an image mnemo writes, with any one bit flipped or any one byte set to another value,
loads as a clean FormatError or as a tokenizer identical to the original (same merges, pattern,
specials, tie rule, merge counts, id map and fingerprint) -- never as another tokenizer.  Before
format version 3, header bytes 18 (pattern id) and 19 (tie id) were outside the CRC: one flipped
bit loaded as another pattern or tie rule, and `train --from` then trained under it.

The same holds for a pickled Tokenizer, whose pickle carries the image (Tokenizer.__reduce__):
every bit of the image inside the pickle stream is flipped.  The pickle's own framing around it
(opcodes, the names of the class and its loader) is Python's format, whose damage gives pickle's
own errors; it is not mutated here.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest

from mnemo import FormatError, Tokenizer


def state(tok: Tokenizer) -> tuple[object, ...]:
    """Everything a tokenizer.bin says: two tokenizers with the same state encode, decode, save
    and train (`train --from`) alike."""
    return (
        tok.merges,
        tok.pattern,
        sorted(tok.special_tokens.items(), key=lambda item: item[1]),
        tok.tie,
        tok.merge_counts,
        tok.id_map,
        tok.whole_tokens,
        tok.ranked,
        tok.fingerprint,
        tok.superword,
        tok.stage2,
        tok.n_vocab,
    )


#: Small tokenizers of every kind the writer stores: pattern and tie other than the defaults,
#: merge counts, an id map (16-bit, and one that needs 32-bit ids), no specials, many specials.
KINDS: dict[str, Tokenizer] = {
    "plain": Tokenizer([(97, 97), (256, 98)], special_tokens=["<|a|>"]),
    "counts-gpt2-bytes": Tokenizer(
        [(104, 105), (256, 33), (32, 256)], pattern="gpt2", tie="bytes", special_tokens=["<|e|>", "<|f|>"], merge_counts=[9, 4, 2]
    ),
    "id-map": Tokenizer([(97, 98)], pattern="o200k", special_tokens=["<|x|>"], id_map=[*range(1, 258), 0]),
    "wide-id-map": Tokenizer([(97, 98)], pattern="cl100k", special_tokens=["<|x|>"], id_map=[*range(257), 100_277]),
    "no-specials": Tokenizer([(120, 121), (256, 256)], pattern="gpt4", special_tokens=[]),
    # a ranked vocabulary (its RANK section): a merge whose part comes after it, a whole token
    "ranked": Tokenizer([(97, 257), (98, 99)], whole_tokens=[b"xyz"], ranked=True, special_tokens=["<|e|>"]),
    # a superword tokenizer (its STG2 section): merge 1 (id 257) is stage 2's, across a space
    "superword": Tokenizer([(32, 98), (97, 256)], superword=257, special_tokens=["<|e|>"]),
}


def mutations(image: bytes) -> Iterator[tuple[str, bytes]]:
    """Every single-bit flip, and every byte set to 0x00, 0xFF and its value + 1."""
    for pos in range(len(image)):
        for bit in range(8):
            mutated = bytearray(image)
            mutated[pos] ^= 1 << bit
            yield f"offset {pos} bit {bit}", bytes(mutated)
        for value in {0x00, 0xFF, (image[pos] + 1) & 0xFF} - {image[pos]}:
            mutated = bytearray(image)
            mutated[pos] = value
            yield f"offset {pos} = 0x{value:02x}", bytes(mutated)


def changed_loads(image: bytes, original: Tokenizer, load: object) -> list[str]:
    """The mutations of `image` that load as a tokenizer other than `original`."""
    want = state(original)
    changed: list[str] = []
    for where, mutated in mutations(image):
        try:
            tok = load(mutated)  # type: ignore[operator]
        except FormatError:
            continue
        if state(tok) != want:
            changed.append(where)
    return changed


@pytest.mark.parametrize("kind", KINDS)
def test_every_mutated_byte_of_a_tokenizer_bin_is_caught(kind: str) -> None:
    original = KINDS[kind]
    image = original.to_bytes()
    assert state(Tokenizer.from_bytes(image)) == state(original)
    changed = changed_loads(image, original, lambda data: Tokenizer.from_bytes(data, "mutated"))
    assert not changed, f"{len(changed)} mutated images loaded as another tokenizer: {changed[:8]}"


@pytest.mark.parametrize("kind", KINDS)
def test_every_mutated_byte_of_a_pickled_tokenizer_is_caught(kind: str) -> None:
    original = KINDS[kind]
    image = original.to_bytes()
    data = pickle.dumps(original, protocol=pickle.HIGHEST_PROTOCOL)
    at = data.find(image)
    assert at >= 0 and data.find(image, at + 1) < 0, "the pickle carries the image once"

    def load(mutated_image: bytes) -> Tokenizer:
        loaded = pickle.loads(data[:at] + mutated_image + data[at + len(image) :])
        assert isinstance(loaded, Tokenizer)
        return loaded

    changed = changed_loads(image, original, load)
    assert not changed, f"{len(changed)} mutated pickles loaded as another tokenizer: {changed[:8]}"
