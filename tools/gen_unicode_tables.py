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
import importlib.util
import re
import sys
from pathlib import Path
from typing import NamedTuple

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


# ---- mnemo/_unicode_data.py: general categories per reference engine -------------------------

DATA_OUT = Path(__file__).resolve().parents[1] / "mnemo" / "_unicode_data.py"

# Unicode general categories, in the order of their codes in _unicode_data.py (0 = Cn, unassigned).
GC_NAMES = (
    "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
    "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co",
)  # fmt: skip
CS = GC_NAMES.index("Cs")
BASE_TABLE = "18.0.0"  # the `regex` module's tables: mnemo's own, and the tests' oracle


def all_code_points() -> list[int]:
    return [c for c in range(N_CODE_POINTS) if not 0xD800 <= c <= 0xDFFF]


class Engine:
    """Probes one regex engine: the code points each pattern matches, over every code point
    (surrogates excepted: no engine takes them in a str)."""

    name = ""
    version = ""

    def members(self, pattern: str) -> set[int]:
        raise NotImplementedError


class RegexEngine(Engine):
    name = "regex"

    def __init__(self) -> None:
        self.version = regex.__version__
        self.text = all_text()

    def members(self, pattern: str) -> set[int]:
        return {ord(m.group()) for m in regex.finditer(pattern, self.text)}


class TiktokenEngine(Engine):
    """tiktoken drops the text its pattern does not match: an Encoding whose ranks are the 256
    single bytes encodes exactly the matched characters, whose bytes decode back to them."""

    name = "tiktoken"

    def __init__(self) -> None:
        import tiktoken

        self.tiktoken = tiktoken
        self.version = importlib.metadata.version("tiktoken")
        self.text = all_text()
        self.ranks = {bytes([b]): b for b in range(256)}

    def members(self, pattern: str) -> set[int]:
        enc = self.tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks=self.ranks, special_tokens={})
        return {ord(c) for c in enc.decode_bytes(enc.encode_ordinary(self.text)).decode("utf-8")}


class TokenizersEngine(Engine):
    """Hugging Face tokenizers' Split pre-tokenizer (Oniguruma) with behavior "removed": the pieces
    left are the text the pattern does not match."""

    name = "tokenizers"

    def __init__(self) -> None:
        from tokenizers import Regex, pre_tokenizers

        self.Regex = Regex
        self.pre_tokenizers = pre_tokenizers
        self.version = importlib.metadata.version("tokenizers")
        self.text = all_text()
        self.every = set(all_code_points())

    def members(self, pattern: str) -> set[int]:
        split = self.pre_tokenizers.Split(self.Regex(pattern), behavior="removed")
        rest: set[int] = set()
        for piece, _ in split.pre_tokenize_str(self.text):
            rest.update(map(ord, piece))
        return self.every - rest

    def numeric(self) -> set[int]:
        """The code points tokenizers' Digits pre-tokenizer cuts out: Rust's char::is_numeric,
        whose Unicode version is the Rust toolchain's, not Oniguruma's."""
        text = "".join(chr(c) + "a" for c in all_code_points())
        pieces = self.pre_tokenizers.Digits(individual_digits=True).pre_tokenize_str(text)
        return {ord(p) for p, _ in pieces if len(p) == 1 and p != "a"}


class Probed(NamedTuple):
    gc: bytearray  # general category code of every code point
    white: list[int]  # the code points of \s
    folds: dict[str, list[int]]  # ASCII letter -> the non-ASCII code points (?i:letter) matches


def probe(engine: Engine) -> Probed:
    gc = bytearray(N_CODE_POINTS)
    for code, name in enumerate(GC_NAMES):
        if name in ("Cn", "Cs"):
            continue
        for cp in engine.members(rf"\p{{{name}}}"):
            if gc[cp]:
                raise SystemExit(f"{engine.name}: U+{cp:04X} is in both {GC_NAMES[gc[cp]]} and {name}")
            gc[cp] = code
    for cp in range(0xD800, 0xE000):
        gc[cp] = CS
    white = sorted(engine.members(r"\s"))
    folds: dict[str, list[int]] = {}
    for letter in "abcdefghijklmnopqrstuvwxyz":
        found = engine.members(f"(?i:{letter})")
        if not {ord(letter), ord(letter.upper())} <= found or any(cp < 0x80 and chr(cp).lower() != letter for cp in found):
            raise SystemExit(f"{engine.name}: (?i:{letter}) matches {sorted(found)}; mnemo assumes the two ASCII cases")
        extra = sorted(cp for cp in found if cp >= 0x80)
        if extra:
            folds[letter] = extra
    return Probed(gc, white, folds)


def runs(values: bytes | bytearray) -> list[tuple[int, int]]:
    """(start, value) at every change of value, from code point 0."""
    out: list[tuple[int, int]] = []
    for cp, v in enumerate(values):
        if not out or out[-1][1] != v:
            out.append((cp, v))
    return out


def diff_runs(base: bytes | bytearray, other: bytes | bytearray) -> list[tuple[int, int, int]]:
    """(start, stop, value of `other`) for every stretch where `other` differs from `base`."""
    out: list[tuple[int, int, int]] = []
    for cp in range(N_CODE_POINTS):
        if base[cp] != other[cp]:
            if out and out[-1][1] == cp and out[-1][2] == other[cp]:
                out[-1] = (out[-1][0], cp + 1, other[cp])
            else:
                out.append((cp, cp + 1, other[cp]))
    return out


def set_runs(cps: set[int] | list[int]) -> list[tuple[int, int]]:
    """A set of code points as (start, stop) ranges."""
    out: list[tuple[int, int]] = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp:
            out[-1] = (out[-1][0], cp + 1)
        else:
            out.append((cp, cp + 1))
    return out


def _hex_records(records: list[str], per_line: int = 12, indent: str = "    ") -> str:
    lines = []
    for i in range(0, len(records), per_line):
        lines.append(f'{indent}"{"".join(records[i : i + per_line])}"')
    return "\n".join(lines) if lines else f'{indent}""'


def _sentinels(gc: bytes | bytearray) -> str:
    """Which of a few letters and digits of recent Unicode versions a table has: the evidence for
    the version it is named after."""
    marks = []
    for version, cp in UNICODE_SENTINELS:
        marks.append(f"U+{cp:04X} ({version}) {'yes' if gc[cp] else 'no'}")
    return ", ".join(marks)


# Assigned code points first assigned in the Unicode version given; a table has all of a
# version's or none (checked when it is named).
UNICODE_SENTINELS = (
    ("15.0", 0x11F04),  # KAWI LETTER A
    ("15.1", 0x2EBF0),  # a CJK Extension I ideograph
    ("16.0", 0x10D4A),  # a GARAY letter
    ("17.0", 0x058B),  # the first letter the issue names
    ("17.0", 0x323B0),  # a CJK Extension J ideograph
    ("18.0", 0x12550),  # a cuneiform numeral
)


def table_version(gc: bytes | bytearray, white: list[int]) -> str:
    """The Unicode version a probed table holds: the newest version whose sentinels it has."""
    has = {}
    for version, cp in UNICODE_SENTINELS:
        has.setdefault(version, []).append(gc[cp] != 0)
    newest = "14.0"
    for version, flags in has.items():
        if all(flags):
            newest = version
        elif any(flags):
            raise SystemExit(f"the table has some of Unicode {version}'s sentinels and not others")
    return newest + ".0"


def render_data(probes: dict[str, Probed], versions: dict[str, str], numeric: set[int], numeric_version: str) -> str:
    """mnemo/_unicode_data.py from the probes of each engine (name -> Probed)."""
    base = probes["regex"]
    base_name = table_version(base.gc, base.white)
    if base_name != BASE_TABLE:
        raise SystemExit(f"regex holds Unicode {base_name}, BASE_TABLE says {BASE_TABLE}; update BASE_TABLE")
    tables: dict[str, Probed] = {base_name: base}
    engines: dict[str, str] = {"regex": base_name}
    for engine, probed in probes.items():
        if engine == "regex":
            continue
        name = table_version(probed.gc, probed.white)
        if name in tables:
            same = tables[name]
            if same.gc != probed.gc or same.white != probed.white or same.folds != probed.folds:
                raise SystemExit(f"{engine} holds Unicode {name} but differs from another engine of that version")
        tables[name] = probed
        engines[engine] = name
    rust_numeric = set_runs(numeric)
    nver = numeric_version
    out = [
        f'r"""General categories of every code point, as each reference engine sees them.  GENERATED by',
        "tools/gen_unicode_tables.py: do not edit.",
        "",
        "A split pattern's classes (\\p{L}, \\p{N}, \\s, ...) are sets of general categories, so one table",
        "of categories per Unicode version gives every class of every pattern (mnemo/regex_family.py",
        "builds a pattern's own class table from it).  Each table is probed from the engine itself,",
        "category by category over every code point:",
        "",
    ]
    for engine, name in engines.items():
        out.append(f"  {engine} {versions[engine]}: Unicode {name} ({_sentinels(tables[name].gc)})")
    out += [
        f"  tokenizers' Digits pre-tokenizer (Rust's char::is_numeric): Unicode {nver}, {len(numeric)} code points",
        "",
        f"GC_{_ident(BASE_TABLE)}: the category of every code point as (start, category) runs, 8 hex digits each.",
        "GC_<other>_DIFF: the (start, stop, category) runs where another version differs from it, 14 hex",
        "digits each.  WHITE_<v>: the code points of \\s.  FOLDS_<v>: the non-ASCII code points `(?i:x)`",
        "matches for an ASCII letter x.  NUMERIC_<v>: (start, stop) runs, 12 hex digits each.",
        '"""',
        "",
        "from typing import Final",
        "",
        f"GC_NAMES: Final = {GC_NAMES!r}",
        f'DEFAULT: Final = "{BASE_TABLE}"',
        f"VERSIONS: Final = {tuple(tables)!r}",
        "#: the Unicode version of each reference engine's classes (the engines named in the docstring)",
        f"ENGINES: Final = {engines!r}",
        "#: the engine versions probed",
        f"ENGINE_VERSIONS: Final = {dict(versions)!r}",
        "#: tokenizers' Digits pre-tokenizer tests Rust's char::is_numeric, of this Unicode version",
        f'DIGITS_VERSION: Final = "{nver}"',
        "",
    ]
    base_runs = runs(base.gc)
    out.append(f"GC_{_ident(BASE_TABLE)}: Final = (")
    out.append(_hex_records([f"{start:06x}{v:02x}" for start, v in base_runs]))
    out.append(")")
    for name, probed in tables.items():
        ident = _ident(name)
        if name != BASE_TABLE:
            d = diff_runs(base.gc, probed.gc)
            out.append(f"GC_{ident}_DIFF: Final = (  # {sum(b - a for a, b, _ in d)} code points in {len(d)} runs")
            out.append(_hex_records([f"{a:06x}{b:06x}{v:02x}" for a, b, v in d], per_line=8))
            out.append(")")
        out.append(f"WHITE_{ident}: Final[tuple[int, ...]] = ({', '.join(f'0x{cp:X}' for cp in probed.white)},)")
        folds = ", ".join(f'"{k}": ({", ".join(f"0x{cp:X}" for cp in v)},)' for k, v in sorted(probed.folds.items()))
        out.append(f"FOLDS_{ident}: Final[dict[str, tuple[int, ...]]] = {{{folds}}}")
    out.append(f"NUMERIC_{_ident(nver)}: Final = (  # {len(numeric)} code points")
    out.append(_hex_records([f"{a:06x}{b:06x}" for a, b in rust_numeric], per_line=8))
    out.append(")")
    out.append("")
    return "\n".join(out)


def _ident(version: str) -> str:
    return version.replace(".", "_")


def probe_all(engines: list[Engine]) -> tuple[dict[str, Probed], dict[str, str]]:
    probes: dict[str, Probed] = {}
    versions: dict[str, str] = {}
    for engine in engines:
        print(f"probing {engine.name} {engine.version} ...", file=sys.stderr)
        probes[engine.name] = probe(engine)
        versions[engine.name] = engine.version
    return probes, versions


def committed_data_probes() -> tuple[dict[str, Probed], dict[str, str], set[int], str]:
    """The engine probes as the committed _unicode_data.py holds them (for a check of the regex
    part without probing the other engines again)."""
    spec = importlib.util.spec_from_file_location("_unicode_data_committed", DATA_OUT)
    assert spec is not None and spec.loader is not None
    data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data)
    probes: dict[str, Probed] = {}
    for engine, name in data.ENGINES.items():
        gc = decode_gc(data, name)
        ident = _ident(name)
        probes[engine] = Probed(gc, list(getattr(data, f"WHITE_{ident}")), {k: list(v) for k, v in getattr(data, f"FOLDS_{ident}").items()})
    numeric: set[int] = set()
    blob = "".join(getattr(data, f"NUMERIC_{_ident(data.DIGITS_VERSION)}"))
    for i in range(0, len(blob), 12):
        numeric.update(range(int(blob[i : i + 6], 16), int(blob[i + 6 : i + 12], 16)))
    return probes, dict(data.ENGINE_VERSIONS), numeric, data.DIGITS_VERSION


def decode_gc(data: object, name: str) -> bytearray:
    """A table's categories, decoded from the module's run records (the generator's own reader)."""
    gc = bytearray(N_CODE_POINTS)
    blob = "".join(getattr(data, f"GC_{_ident(BASE_TABLE)}"))
    starts = [(int(blob[i : i + 6], 16), int(blob[i + 6 : i + 8], 16)) for i in range(0, len(blob), 8)]
    for k, (start, v) in enumerate(starts):
        stop = starts[k + 1][0] if k + 1 < len(starts) else N_CODE_POINTS
        gc[start:stop] = bytes([v]) * (stop - start)
    if name != BASE_TABLE:
        blob = "".join(getattr(data, f"GC_{_ident(name)}_DIFF"))
        for i in range(0, len(blob), 14):
            a, b, v = int(blob[i : i + 6], 16), int(blob[i + 6 : i + 12], 16), int(blob[i + 12 : i + 14], 16)
            gc[a:b] = bytes([v]) * (b - a)
    return gc


def render_data_regex_only() -> str:
    """_unicode_data.py with the regex table probed now and the other engines' tables as
    committed: what the test suite regenerates (probing tiktoken and tokenizers takes minutes;
    tests/test_unicode_engines.py checks those tables against the engines themselves)."""
    probes, versions, numeric, nver = committed_data_probes()
    probes["regex"] = probe(RegexEngine())
    versions["regex"] = regex.__version__
    return render_data(probes, versions, numeric, nver)



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    parser.add_argument(
        "--regex-only",
        action="store_true",
        help="probe only the regex module for _unicode_data.py; keep the committed tiktoken/tokenizers tables",
    )
    args = parser.parse_args()
    outputs = {OUT: render()}
    if args.regex_only:
        outputs[DATA_OUT] = render_data_regex_only()
    else:
        tk, hf = TiktokenEngine(), TokenizersEngine()
        probes, versions = probe_all([RegexEngine(), tk, hf])
        numeric = hf.numeric()
        outputs[DATA_OUT] = render_data(probes, versions, numeric, table_version_numeric(numeric, probes))
    status = 0
    for path, text in outputs.items():
        if args.check:
            if path.read_text(encoding="utf-8") != text:
                print(f"{path} differs from what the engines give; rerun without --check")
                status = 1
            else:
                print(f"{path} is up to date")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return status


def table_version_numeric(numeric: set[int], probes: dict[str, Probed]) -> str:
    """The Unicode version of a set of numeric code points, from the numeric sentinels of the
    regex table (digits new in 17.0 present, cuneiform numerals new in 18.0 absent)."""
    if 0x12550 in numeric:
        return "18.0.0"
    if 0x11DE0 in numeric:  # a TOLONG SIKI digit, new in 17.0
        return "17.0.0"
    return "16.0.0"


if __name__ == "__main__":
    sys.exit(main())
