"""Generate mnemo/_unicode_tables.py: the character classes of the pre-tokenizer.

The pre-tokenizer must give exactly what the `regex` module gives, so the classes are taken
from `regex` itself: every code point (surrogates excluded; valid UTF-8 cannot hold them) is
probed against `\\p{L}`, `\\p{N}` and `\\s`, and the case-insensitive contraction letters are
probed against `(?i:s)`, `(?i:d)`, ...  Tables and test oracle thus hold the same Unicode
version, whatever Python's `unicodedata` holds (3.11 ships Unicode 14.0; regex is newer).

The `o200k` pattern needs more than that: its letter runs are split by case, and combining
marks belong to both of its letter sets while staying outside `\\p{L}`.  It gets a second
table of its own (O200K_*), probed against the two sets exactly as its pattern spells them, so
the other patterns' table and their speed stay as they were.

Usage:
    python tools/gen_unicode_tables.py            # rewrite mnemo/_unicode_tables.py
    python tools/gen_unicode_tables.py --check    # exit 1 if the committed file differs

The test suite calls `render()` and compares it with the committed module.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
from pathlib import Path

import regex

OUT = Path(__file__).resolve().parents[1] / "mnemo" / "_unicode_tables.py"

# Class codes; mnemo/pretokenize.py relies on these exact values (it imports them from here).
OTHER = 0  # neither letter, number nor white space (also: each byte of invalid UTF-8)
APOS = 1  # the ASCII apostrophe ', which may start a contraction
LETTER = 2  # \p{L}
NUMBER = 3  # \p{N}
SPACE = 4  # the ASCII space ' ' (the optional ' ?' prefix of several branches)
WHITE = 5  # any other \s except CR and LF
NEWLINE = 6  # CR or LF (the [\r\n] of the GPT-4 patterns)

# The o200k table's codes (a table of its own; see the module docstring).  Ordered so that the
# pre-tokenizer tests ranges: punctuation [^\s\p{L}\p{N}] is <= O_MARK, the "upper" set
# [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] is O_MARK..O_BOTH, the "lower" set [\p{Ll}\p{Lm}\p{Lo}\p{M}]
# is O_MARK, O_BOTH and O_LOWER.
O_OTHER = 0  # [^\s\p{L}\p{N}] except ' and the marks (also: each byte of invalid UTF-8)
O_APOS = 1  # the ASCII apostrophe ', which may start a contraction
O_MARK = 2  # \p{M}: in both letter sets, yet not \p{L} (so also a prefix and punctuation)
O_UPPER = 3  # \p{Lu}, \p{Lt}: only in the "upper" set
O_BOTH = 4  # \p{Lm}, \p{Lo}: in both sets
O_LOWER = 5  # \p{Ll}: only in the "lower" set
O_NUMBER = 6  # \p{N}
O_SPACE = 7  # the ASCII space ' '
O_WHITE = 8  # any other \s except CR and LF
O_NEWLINE = 9  # CR or LF
O200K_UPPER_SET = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
O200K_LOWER_SET = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"

BLOCK_SHIFT = 7  # two-stage table: 128 code points per block
N_CODE_POINTS = 0x110000
CONTRACTION_LETTERS = "sdmtlvre"


def regex_unicode_version() -> str:
    """The Unicode version the installed `regex` states in its package description."""
    text = importlib.metadata.distribution("regex").read_text("METADATA") or ""
    m = re.search(r"supports Unicode (\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else "unknown"


def all_text() -> str:
    return "".join(chr(c) for c in range(N_CODE_POINTS) if not 0xD800 <= c <= 0xDFFF)


def classes() -> bytearray:
    """The class code of every code point, as regex sees it."""
    text = all_text()
    cls = bytearray(N_CODE_POINTS)
    seen: dict[int, str] = {}
    for pattern, code in ((r"\p{L}", LETTER), (r"\p{N}", NUMBER), (r"\s", WHITE)):
        for m in regex.finditer(pattern, text):
            cp = ord(m.group())
            if cp in seen:
                raise SystemExit(f"U+{cp:04X} is in both {seen[cp]} and {pattern}; the classes must be disjoint")
            seen[cp] = pattern
            cls[cp] = code
    for cp in (0x0A, 0x0D):
        assert cls[cp] == WHITE
        cls[cp] = NEWLINE
    assert cls[0x20] == WHITE
    cls[0x20] = SPACE
    assert cls[0x27] == OTHER
    cls[0x27] = APOS
    return cls


def members(pattern: str, text: str) -> set[int]:
    return {ord(m.group()) for m in regex.finditer(pattern, text)}


def o200k_classes(base: bytearray) -> bytearray:
    """The o200k class code of every code point: `base` (the classes above) with letters split
    by the two letter sets of o200k's pattern and the marks (members of both sets outside
    \\p{L}) set apart from the other punctuation."""
    text = all_text()
    upper = members(O200K_UPPER_SET, text)
    lower = members(O200K_LOWER_SET, text)
    same = {OTHER: O_OTHER, APOS: O_APOS, NUMBER: O_NUMBER, SPACE: O_SPACE, WHITE: O_WHITE, NEWLINE: O_NEWLINE}
    cls = bytearray(N_CODE_POINTS)
    for cp in range(N_CODE_POINTS):
        b = base[cp]
        up, low = cp in upper, cp in lower
        if b == LETTER:
            if not (up or low):
                raise SystemExit(f"U+{cp:04X} is in \\p{{L}} but in neither of o200k's letter sets")
            cls[cp] = O_BOTH if up and low else O_UPPER if up else O_LOWER
        elif up or low:
            if not (up and low and b == OTHER):
                raise SystemExit(f"U+{cp:04X} is in an o200k letter set outside \\p{{L}} but is not a mark in both sets")
            cls[cp] = O_MARK
        else:
            cls[cp] = same[b]
    return cls


def contraction_folds() -> list[tuple[int, str]]:
    """Non-ASCII code points that `(?i:x)` matches for a contraction letter x, with x."""
    text = all_text()
    out: list[tuple[int, str]] = []
    for letter in CONTRACTION_LETTERS:
        for m in regex.finditer(f"(?i:{letter})", text):
            cp = ord(m.group())
            if cp >= 0x80:
                out.append((cp, letter))
            elif chr(cp).lower() != letter:
                raise SystemExit(f"(?i:{letter}) matches ASCII {chr(cp)!r}; mnemo assumes only {letter}/{letter.upper()}")
    return sorted(out)


def two_stage(cls: bytearray, shift: int = BLOCK_SHIFT) -> tuple[bytes, bytes]:
    size = 1 << shift
    index: dict[bytes, int] = {}
    stage1 = bytearray()
    for start in range(0, N_CODE_POINTS, size):
        block = bytes(cls[start : start + size])
        stage1.append(index.setdefault(block, len(index)))
    if len(index) > 256:
        raise SystemExit(f"{len(index)} distinct blocks do not fit one byte each; lower BLOCK_SHIFT")
    stage2 = b"".join(sorted(index, key=index.__getitem__))
    return bytes(stage1), stage2


def hex_lines(data: bytes, indent: str = "    ", width: int = 48) -> str:
    return "\n".join(f'{indent}"{data[i : i + width].hex()}"' for i in range(0, len(data), width))


def render() -> str:
    cls = classes()
    stage1, stage2 = two_stage(cls)
    folds = contraction_folds()
    ascii_table = bytes(cls[:128]) + bytes([OTHER]) * 128
    counts = {code: cls.count(code) for code in (LETTER, NUMBER, WHITE, SPACE, NEWLINE)}
    n_white = counts[WHITE] + counts[SPACE] + counts[NEWLINE]
    fold_cps = ", ".join(f"0x{cp:X}" for cp, _ in folds)
    fold_letters = "".join(letter for _, letter in folds)
    ocls = o200k_classes(cls)
    o_stage1, o_stage2 = two_stage(ocls)
    o_ascii = bytes(ocls[:128]) + bytes([O_OTHER]) * 128
    o_counts = {code: ocls.count(code) for code in (O_MARK, O_UPPER, O_BOTH, O_LOWER)}
    return f'''r"""Character classes of the pre-tokenizer.  GENERATED by tools/gen_unicode_tables.py: do not edit.

Probed from the `regex` module {regex.__version__} (Unicode {regex_unicode_version()}) over every code point:
{counts[LETTER]} code points in \\p{{L}}, {counts[NUMBER]} in \\p{{N}}, {n_white} in \\s.

class_of(cp) = STAGE2[(STAGE1[cp >> {BLOCK_SHIFT}] << {BLOCK_SHIFT}) | (cp & {(1 << BLOCK_SHIFT) - 1})]
({len(stage1)} + {len(stage2)} bytes); ASCII_CLASS is the same for bytes < 0x80 (entries >= 0x80 unused).

The O200K_ tables are the same lookup with the o200k pattern's own codes (O_*): its letters split
by case ({o_counts[O_UPPER]} only in {O200K_UPPER_SET}, {o_counts[O_LOWER]} only in
{O200K_LOWER_SET}, {o_counts[O_BOTH]} letters and {o_counts[O_MARK]} marks in both)
({len(o_stage1)} + {len(o_stage2)} bytes).
"""

from typing import Final

REGEX_VERSION: Final = "{regex.__version__}"
UNICODE_VERSION: Final = "{regex_unicode_version()}"

OTHER: Final = {OTHER}
APOS: Final = {APOS}
LETTER: Final = {LETTER}
NUMBER: Final = {NUMBER}
SPACE: Final = {SPACE}
WHITE: Final = {WHITE}
NEWLINE: Final = {NEWLINE}

BLOCK_SHIFT: Final = {BLOCK_SHIFT}
BLOCK_MASK: Final = {(1 << BLOCK_SHIFT) - 1}

# Non-ASCII code points that the case-insensitive contractions `(?i:[sdmt]|ll|ve|re)` accept,
# and the ASCII letter each stands for (same order).
FOLD_CPS: Final[tuple[int, ...]] = ({fold_cps},)
FOLD_LETTERS: Final = b"{fold_letters}"

ASCII_CLASS: Final = bytes.fromhex(
{hex_lines(ascii_table)}
)

STAGE1: Final = bytes.fromhex(
{hex_lines(stage1)}
)

STAGE2: Final = bytes.fromhex(
{hex_lines(stage2)}
)

# The o200k pattern's classes (ordered so that its tests are ranges; see the generator).
O_OTHER: Final = {O_OTHER}
O_APOS: Final = {O_APOS}
O_MARK: Final = {O_MARK}
O_UPPER: Final = {O_UPPER}
O_BOTH: Final = {O_BOTH}
O_LOWER: Final = {O_LOWER}
O_NUMBER: Final = {O_NUMBER}
O_SPACE: Final = {O_SPACE}
O_WHITE: Final = {O_WHITE}
O_NEWLINE: Final = {O_NEWLINE}

O200K_ASCII_CLASS: Final = bytes.fromhex(
{hex_lines(o_ascii)}
)

O200K_STAGE1: Final = bytes.fromhex(
{hex_lines(o_stage1)}
)

O200K_STAGE2: Final = bytes.fromhex(
{hex_lines(o_stage2)}
)
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    text = render()
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} differs from what regex {regex.__version__} gives; rerun without --check")
            return 1
        print(f"{OUT} is up to date (regex {regex.__version__}, Unicode {regex_unicode_version()})")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} (regex {regex.__version__}, Unicode {regex_unicode_version()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
