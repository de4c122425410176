"""Argument checks shared by the layers that take arguments from callers: the API (tokenizer.py,
training.py) and both trainers (merge_loop.py, the compiled one, and reference.py, its naive twin).

One module both trainers import, so that the fast trainer does not borrow from its oracle, and one
wording for each rule.  A wrong Python type is `ArgumentTypeError` naming the argument; a value of
the right type that mnemo cannot use is `ConfigError` (errors.py states the rule).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Sequence
from numbers import Integral

import numpy as np

from mnemo.constants import MASKBIT, MASKBIT32, MAX_PAIR_TOTAL, MAX_PATTERN_BYTES, MAX_VOCAB, TIES
from mnemo.errors import ArgumentTypeError, ConfigError


def type_error(name: str, expected: str, value: object) -> ArgumentTypeError:
    """The error for an API argument of the wrong Python type: it names the argument, the type
    expected and the value given (a TypeError, as Python users expect, and a MnemoError)."""
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return ArgumentTypeError(f"{name} must be {expected}, got {type(value).__name__} {shown}")


#: the most names a message lists (a tekken vocabulary has 1,000 special tokens)
LISTED_NAMES = 12


def listed(names: Iterable[str], limit: int = LISTED_NAMES) -> str:
    """Names for a message, the first `limit` of them and how many more: "a, b, ... and 988
    more" ("none" for none).  Listing tekken's 1,000 special tokens made a 20 kB warning."""
    items = list(names)
    if not items:
        return "none"
    shown = ", ".join(items[:limit])
    return shown if len(items) <= limit else f"{shown}, ... and {len(items) - limit} more"


def text_type_error(name: str, value: object) -> ArgumentTypeError:
    """The error for a text argument that is not a str (pointing bytes at encode_bytes)."""
    err = type_error(name, "a str", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        err.args = (f"{err.args[0]}; use encode_bytes for bytes",)
    return err


def check_int(name: str, value: object) -> int:
    """`value` when it is an int (numpy integers too); bool and float are type errors, not ids."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise type_error(name, "an int", value)
    return int(value)


def check_maskbit(maskbit: object) -> int:
    """`maskbit` when it is one of the two loss-mask bits, MASKBIT (uint16 chat files) or
    MASKBIT32 (uint32 ones)."""
    if maskbit not in (MASKBIT, MASKBIT32):
        raise ConfigError(f"maskbit must be MASKBIT (0x8000) or MASKBIT32 (0x80000000), got {maskbit!r}")
    return MASKBIT if maskbit == MASKBIT else MASKBIT32


def check_errors(errors: object) -> str:
    """`errors` when it names a codec error handler ('replace', 'strict', ...): decode's and the
    stream decoder's argument."""
    if not isinstance(errors, str):
        raise type_error("errors", "a str (a codec error handler such as 'replace')", errors)
    try:
        codecs.lookup_error(errors)
    except (LookupError, UnicodeError):
        raise ConfigError(
            f"errors={errors!r} is not a codec error handler; use 'replace', 'strict', 'ignore', "
            f"'backslashreplace' or 'surrogateescape'"
        ) from None
    return errors


def check_pattern(pattern: object) -> str:
    """A pre-tokenizer pattern given as a str: a preset name or a split regex (whether it is a
    valid one, mnemo.patterns.compile_pattern says)."""
    if not isinstance(pattern, str):
        raise type_error("pattern", "a str (a preset name or a split regex)", pattern)
    why = pattern_too_long(pattern)
    if why is not None:
        raise ConfigError(f"the split regex is {why}: give a shorter one ({pattern[:40]!r}...)")
    return pattern


def pattern_too_long(pattern: str) -> str | None:
    """Why a split regex cannot be stored (its UTF-8 is longer than PATN's u16 length holds), or
    None; the caller raises its own error around it (a ConfigError for an argument, a
    FormatError naming a file's key)."""
    size = len(pattern.encode("utf-8", "surrogatepass"))
    if size <= MAX_PATTERN_BYTES:
        return None
    return f"{size:,} bytes long, more than the {MAX_PATTERN_BYTES:,} a tokenizer.bin holds"


def check_tie(tie: object) -> str:
    """A tie rule's name, one of constants.TIES (the rule itself: reference.TIE_RULE_DOC)."""
    if not isinstance(tie, str):
        raise type_error("tie", "a str", tie)
    if tie not in TIES:
        raise ConfigError(f"unknown tie rule {tie!r}; choose one of {', '.join(TIES)}")
    return tie


def check_train_args(words: dict[bytes, int], n_merges: int, tie: str) -> None:
    """The argument checks shared by both trainers: a clear ConfigError naming the value."""
    check_tie(tie)
    if n_merges < 0:
        raise ConfigError(f"n_merges must be >= 0, got {n_merges}")
    if 256 + n_merges > MAX_VOCAB:
        raise ConfigError(
            f"n_merges must be at most {MAX_VOCAB - 256} (a vocabulary holds at most {MAX_VOCAB} tokens: "
            f"constants.MAX_VOCAB), got {n_merges}"
        )
    total = 0
    for word, count in words.items():
        if not isinstance(word, bytes):
            raise ArgumentTypeError(f"word {word!r} must be bytes, got {type(word).__name__}")
        given: object = count  # typed int, but a Python caller passes anything
        if isinstance(given, bool) or not isinstance(given, Integral):
            raise ArgumentTypeError(f"the count of word {word!r} must be an int, got {type(count).__name__} {count!r}")
        if count < 0:
            raise ConfigError(f"word {word!r} has a negative count {count}; counts must be >= 0")
        if count > MAX_PAIR_TOTAL:
            raise ConfigError(f"word {word!r} has the count {count}, more than 2**63 - 1 (counts are 64-bit)")
        total += int(count) * max(len(word) - 1, 0)
        if total > MAX_PAIR_TOTAL:
            raise ConfigError(pair_total_error(word))


def check_initial_merges(initial_merges: object, n_merges: int) -> list[tuple[int, int]]:
    """The merges a run continues from (an existing tokenizer's, kept as the first ones):
    each part lower than the merge it makes, and no more of them than n_merges, the run's total."""
    if initial_merges is None:
        return []
    if isinstance(initial_merges, (str, bytes, bytearray)) or not isinstance(initial_merges, Sequence):
        raise ArgumentTypeError(f"initial_merges must be a list of (int, int) pairs, got {type(initial_merges).__name__}")
    checked: list[tuple[int, int]] = []
    for k, pair in enumerate(initial_merges):
        if not isinstance(pair, tuple) or len(pair) != 2 or not all(isinstance(x, int) for x in pair):
            raise ArgumentTypeError(f"initial merge {k} is {pair!r}, not a pair of int ids")
        a, b = pair
        if not (0 <= a < 256 + k and 0 <= b < 256 + k):
            raise ConfigError(f"initial merge {k} (id {256 + k}) is {(a, b)}: both parts must be in 0..{255 + k}")
        checked.append((a, b))
    if len(checked) > n_merges:
        raise ConfigError(
            f"n_merges ({n_merges}) counts the initial merges too, and there are {len(checked)} of them; "
            f"ask for at least {len(checked)}"
        )
    return checked


def pair_total_error(word: bytes) -> str:
    """The message when the total of pair counts passes MAX_PAIR_TOTAL at `word`."""
    return (
        f"the word counts hold more than 2**63 - 1 pairs in all (count x (length - 1), summed; "
        f"passed at word {word[:40]!r}): pair counts are 64-bit, which no real corpus fills; "
        f"check the counts"
    )
