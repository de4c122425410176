r"""The GPT family of split regexes: a parser, and a compiler into programs the scanner runs.

A split regex of the family is an alternation of branches.  Each branch is a sequence of items,
optionally ended by a one-character assertion:

    branch    := item+ assertion?
    item      := set quantifier?            a run of characters of one set
               | group quantifier?          (?:...), (?i:...), (...): an alternation of fixed strings
    set       := a literal character, `.`, \s \S \d \D, \p{C} \P{C} (C a general category or its
                 letter: L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P.. S.. Z.. C..), or a class
                 [...] / [^...] of these, of characters and of ranges
    quantifier:= ? * + {n} {n,} {n,m} {,m}, greedy or possessive (a trailing +)
    assertion := (?!set) (?=set) at the end of a branch, or $ after a possessive run whose set holds \n

Inside (?i:...) ASCII letters match their other case and what the engine's case folding adds
(U+017F for s, U+212A for k: probed per Unicode table, mnemo/_unicode_data.py).  Every preset
is such a regex: gpt2's `'s|'t|...| ?\p{L}+|...`, cl100k's `'(?i:[sdmt]|ll|ve|re)|...\s++$|...`,
o200k's letter runs split by case with a contraction after them, the digit groups \p{N}{1,k},
` ?[^\s\p{L}\p{N}]+[\r\n/]*`, `\s*[\r\n]+`, `\s+(?!\S)`, `\s+`.

The program is exactly what the `regex` module would match -- leftmost alternative first,
backtracking greedy quantifiers, never a possessive one -- for three reasons the compiler
checks, and a regex that fails one is refused here (NotInFamily) and runs through `regex`
itself (mnemo/patterns.py):
- no branch matches the empty string (engines disagree on empty matches);
- backtracking stays linear: after a greedy run of unbounded length comes either nothing but an
  assertion, or one item followed by items that may match nothing (o200k's `U*L+C?`, `\s*[\r\n]+`);
- at most 63 distinct character atoms (a pattern's sets cut the code points into atoms, the classes
  of the program's own table; a set is a 64-bit mask of atoms).

What is compiled (`compile_branches`):
- the atom of every code point, as a two-stage table (and the 128 ASCII entries alone);
- the branches as a flat list of integers (item records), with each set as an atom mask;
- for every first atom, the branches that can start with it (the others cannot match there);
- shortcuts: for every first atom, and every pair of first two atoms, what the whole
  alternation does when that much of the text already decides it -- a fixed length, or "the run
  of this set from here" (with a check of the character after it) -- found by running the
  branches over atoms (`_Abstract`).  "word", " word", ", " and "\n" before a letter end so in the
  common patterns, without the general matcher.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Callable
from typing import Final, Literal, Union

import numpy as np
import numpy.typing as npt

from mnemo import _unicode_data as udata
from mnemo.errors import ConfigError

N_CODE_POINTS: Final = 0x110000
INF: Final = -1  # an unbounded quantifier's maximum
MAX_ATOMS: Final = 63
#: Bounded quantifiers up to this many extra characters may backtrack freely; longer ones count
#: as unbounded in the linearity check.
SMALL_FANOUT: Final = 16
#: The most alternatives bounded backtracking may multiply to in one branch.
MAX_FANOUT: Final = 256

# Item kinds and flags in the program (pretokenize.py reads the same numbers).  An item record is
# ITEM_WORDS integers: kind | flags, set mask (or group offset), min, max, and what may start the
# rest of the branch after it: a mask of atoms, and REST_* flags.
ITEM_WORDS: Final = 6
ITEM_SET: Final = 1
ITEM_GROUP: Final = 2
POSSESSIVE: Final = 16
REST_AT_END: Final = 1  # the rest can match at the end of the text
REST_ANYWHERE: Final = 2  # the rest can match the empty string before any character
# Assertion kinds at the end of a branch.
ASSERT_NONE: Final = 0
ASSERT_NOT: Final = 1  # (?!set): the next character is not in the set (or there is none)
ASSERT_IS: Final = 2  # (?=set): there is a next character and it is in the set
ASSERT_END: Final = 3  # $ / \Z: the end of the text
# Shortcut actions (pretokenize.py): kind in bits 0-3.
ACT_GENERIC: Final = 0  # the matcher, from the branch (bits 8-15) before which all fail
ACT_FIXED: Final = 1  # the chunk is the first k characters (k in bits 4-7)
ACT_RUN: Final = 2  # the run of mask[m] from known character s, at most x characters
ACT_RUN_CHECK: Final = 3  # ACT_RUN, then: done unless the next character is in mask[f]
ACT_NEXT: Final = 4  # look at the next character: act2 (after act1), or row r of act3 (bits 8-31)
ACT_WHITE: Final = 5  # the white-space branches at the end of the alternation: whites[w] (bits 8-31)
# A white-space tail (ACT_WHITE) is WHITE_WORDS integers: the run's set S, the set X of
# TAIL_NEWLINE, the set A of TAIL_LOOKAHEAD, the branch after the tail, and up to 4 tail kinds
# (4 bits each, in order; 0 ends them):
WHITE_WORDS: Final = 5
TAIL_END: Final = 1  # S++$            the run, if it reaches the end of the text
TAIL_NEWLINE: Final = 2  # S*X, S*X+   up to the run's last character of X
TAIL_LOOKAHEAD: Final = 3  # S+(?!A)   the run, or all but its last character (S and A disjoint)
TAIL_RUN: Final = 4  # S+              the run
TAIL_ONE: Final = 5  # S               its first character
ACT_CASED: Final = 6  # a pair of cased-word branches: caseds[c] (bits 8-31)
# The cased-word pair  P?A*B+G? | P?A+B*G?  (o200k's and tekken's letters split by case; P, G
# optional) is CASED_WORDS integers: P's mask (0: none), A's, B's, G's group offset (-1: none),
# and the branch after the pair.
CASED_WORDS: Final = 5
# ACT_RUN*: s (0-3) in bits 4-5, swar in bits 6-7, mask index in bits 8-15, follow index in bits
# 16-23, maximum count in bits 24-31 (0 = unbounded; a run bounded above 255 gets no shortcut).
# ACT_RUN_CHECK also carries its follow set's ASCII bytes, so that the common check needs no
# table: up to three in bits 32-52 (7 bits each, 0 = none), and FOLLOW_WIDE when the set holds
# other ASCII bytes too (then the check reads the tables).  Bits 54-62 are the scanner's own.
FOLLOW_WIDE: Final = 1 << 53
# ACT_RUN_CHECK's follow index (bits 16-23) names a record of FOLLOW_WORDS integers in `follows`:
# the first characters' mask of the optional item after the run, ITEM_SET or ITEM_GROUP, the
# set's mask or the group's offset, and the set's maximum (INF: none).  When the character after
# the run may start it, the scanner runs the item itself (a group's alternatives in order, the
# first that matches; or the run of the set), as the branch would: nothing else follows it.
FOLLOW_WORDS: Final = 4
SWAR_NONE: Final = 0
SWAR_LETTERS: Final = 1  # the set's ASCII part is exactly [A-Za-z]
SWAR_LOWER: Final = 2  # the set's ASCII part is exactly [a-z]

GC_NAMES: Final = udata.GC_NAMES
_GROUPS: Final = {letter: tuple(n for n in GC_NAMES if n[0] == letter) for letter in "LMNPSZC"}


class NotInFamily(Exception):
    """The regex is valid but outside the family the scanner compiles; `reason` says why."""

    def __init__(self, reason: str, at: int | None = None) -> None:
        self.reason = reason
        self.at = at
        super().__init__(reason if at is None else f"{reason} (at offset {at})")


# ---- the parsed form -----------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One member of a set: a general category (negated or not), a code point range, \\s, or
    the numeric characters of tokenizers' Digits pre-tokenizer."""

    kind: Literal["cat", "notcat", "range", "white", "notwhite", "numeric"]
    name: str = ""
    lo: int = 0
    hi: int = 0


@dataclass(frozen=True)
class CharSet:
    negate: bool
    parts: tuple[Part, ...]

    def __hash__(self) -> int:
        # Hashed once: compiling a pattern looks its sets up in dicts hundreds of thousands of
        # times (Matcher.seq: 351,398 hash calls for o200k's pattern), and the hash dataclass
        # writes hashes every part again each time (o200k's compile 161-192 -> 131-136 ms).
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.negate, self.parts))
            object.__setattr__(self, "_hash", cached)
        return cached


@dataclass(frozen=True)
class SetItem:
    cs: CharSet
    min: int
    max: int  # INF = unbounded
    possessive: bool


@dataclass(frozen=True)
class GroupItem:
    alts: tuple[tuple[CharSet, ...], ...]  # each alternative: one set per character
    min: int  # 0 (optional) or 1
    possessive: bool


Item = Union[SetItem, GroupItem]


@dataclass(frozen=True)
class Assertion:
    kind: int  # ASSERT_*
    cs: CharSet | None = None


@dataclass(frozen=True)
class Branch:
    items: tuple[Item, ...]
    assertion: Assertion


def _lit(cp: int) -> CharSet:
    return CharSet(False, (Part("range", lo=cp, hi=cp),))


# ---- the parser ----------------------------------------------------------------------------

_BRACES: Final = re.compile(r"(\d*)(,(\d*))?")
_SIMPLE_ESCAPES: Final = {"r": 0x0D, "n": 0x0A, "t": 0x09, "f": 0x0C, "v": 0x0B, "a": 0x07, "e": 0x1B}
_PUNCT: Final = set("\\.^$|?*+()[]{}-/'\"#&~!,:;<=>@%`_ ")


class _Parser:
    def __init__(self, text: str, folds: dict[str, tuple[int, ...]]) -> None:
        self.s = text
        self.i = 0
        self.folds = folds

    def fail(self, reason: str) -> NotInFamily:
        return NotInFamily(reason, self.i)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def take(self, prefix: str) -> bool:
        if self.s.startswith(prefix, self.i):
            self.i += len(prefix)
            return True
        return False

    # -- top level --

    def parse(self) -> tuple[Branch, ...]:
        branches = [self.branch()]
        while self.take("|"):
            branches.append(self.branch())
        if self.i != len(self.s):
            raise self.fail(f"unexpected {self.peek()!r}")
        return tuple(branches)

    def branch(self) -> Branch:
        items: list[Item] = []
        assertion = Assertion(ASSERT_NONE)
        while self.i < len(self.s) and self.peek() != "|":
            if self.peek() == ")":
                raise self.fail("unbalanced ')'")
            if self.s.startswith("(?!", self.i) or self.s.startswith("(?=", self.i):
                kind = ASSERT_NOT if self.s[self.i + 2] == "!" else ASSERT_IS
                self.i += 3
                cs = self.atom_set(fold=False)
                if not self.take(")"):
                    raise self.fail("a lookahead of more than one character")
                assertion = Assertion(kind, cs)
                break
            if self.take("$") or self.take("\\Z"):
                assertion = Assertion(ASSERT_END)
                break
            items.append(self.item())
        if self.i < len(self.s) and self.peek() != "|":
            raise self.fail("an assertion before the end of its branch")
        if not items:
            raise self.fail("an empty branch")
        return Branch(tuple(items), assertion)

    def item(self) -> Item:
        c = self.peek()
        if c == "(":
            alts, fold = self.group()
            lo, hi, poss = self.quantifier()
            if all(len(a) == 1 for a in alts) and all(not a[0].negate for a in alts):
                # (?:x|y) is the class [xy], whatever the quantifier
                return SetItem(CharSet(False, tuple(p for a in alts for p in a[0].parts)), lo, hi, poss)
            if len(alts) == 1 and len(alts[0]) == 1:
                return SetItem(alts[0][0], lo, hi, poss)
            if (lo, hi) not in ((1, 1), (0, 1)):
                raise self.fail("a quantifier other than ? on a group of strings")
            if any(len(a) == 0 for a in alts):
                raise self.fail("an empty alternative in a group")
            return GroupItem(alts, lo, poss)
        if c in ("*", "+", "?", "{"):
            raise self.fail(f"a quantifier {c!r} with nothing before it")
        if c in ("^",):
            raise self.fail("the anchor ^")
        cs = self.atom_set(fold=False)
        lo, hi, poss = self.quantifier()
        return SetItem(cs, lo, hi, poss)

    def group(self) -> tuple[tuple[tuple[CharSet, ...], ...], bool]:
        """(?:...), (?i:...) or (...): alternatives of fixed strings of sets."""
        assert self.take("(")
        fold = False
        if self.take("?:"):
            pass
        elif self.take("?i:"):
            fold = True
        elif self.peek() == "?":
            raise self.fail("a group other than (?:...), (?i:...) or (...)")
        alts: list[tuple[CharSet, ...]] = []
        current: list[CharSet] = []
        while True:
            c = self.peek()
            if c == "":
                raise self.fail("an unterminated group")
            if c == ")":
                self.i += 1
                alts.append(tuple(current))
                break
            if c == "|":
                self.i += 1
                alts.append(tuple(current))
                current = []
                continue
            if c == "(":
                raise self.fail("a group inside a group")
            if c in ("*", "+", "?", "{"):
                raise self.fail("a quantifier inside a group")
            if c in ("^", "$"):
                raise self.fail(f"the anchor {c} inside a group")
            current.append(self.atom_set(fold))
        return tuple(alts), fold

    def quantifier(self) -> tuple[int, int, bool]:
        c = self.peek()
        lo, hi = 1, 1
        if c == "?":
            lo, hi = 0, 1
            self.i += 1
        elif c == "*":
            lo, hi = 0, INF
            self.i += 1
        elif c == "+":
            lo, hi = 1, INF
            self.i += 1
        elif c == "{":
            j = self.s.find("}", self.i)
            m = _BRACES.fullmatch(self.s[self.i + 1 : j]) if j > 0 else None
            if m is None or not (m.group(1) or m.group(3)) or (m.group(2) is None and not m.group(1)):
                raise self.fail("a '{' that is not a quantifier")
            if m.group(2) is None:
                lo = hi = int(m.group(1))
            else:
                lo = int(m.group(1)) if m.group(1) else 0
                hi = int(m.group(3)) if m.group(3) else INF
            if hi != INF and hi < lo:
                raise self.fail("a quantifier {n,m} with m < n")
            self.i = j + 1
        else:
            return lo, hi, False
        poss = False
        if self.take("+"):
            poss = True
        elif self.peek() == "?":
            raise self.fail("a lazy quantifier")
        if self.peek() in ("*", "+", "?", "{") and self.peek() != "":
            raise self.fail("two quantifiers in a row")
        return lo, hi, poss

    # -- sets --

    def atom_set(self, fold: bool) -> CharSet:
        """One character's set: a literal, an escape, `.` or a bracketed class."""
        c = self.peek()
        if c == "":
            raise self.fail("the regex ends where a character was expected")
        if c == "[":
            return self.bracket(fold)
        if c == ".":
            self.i += 1
            return CharSet(True, (Part("range", lo=0x0A, hi=0x0A),))
        if c == "\\":
            parts, negate = self.escape(in_class=False, fold=fold)
            return CharSet(negate, parts)
        if c in (")", "|"):
            raise self.fail(f"an unexpected {c!r}")
        self.i += 1
        return CharSet(False, self.literal(ord(c), fold))

    def literal(self, cp: int, fold: bool) -> tuple[Part, ...]:
        if fold and cp >= 0x80:
            raise self.fail(f"a non-ASCII character {chr(cp)!r} under (?i)")
        ch = chr(cp)
        if fold and ch.isalpha():
            low = ch.lower()
            cps = {ord(low), ord(low.upper()), *self.folds.get(low, ())}
            return tuple(Part("range", lo=x, hi=x) for x in sorted(cps))
        return (Part("range", lo=cp, hi=cp),)

    def escape(self, in_class: bool, fold: bool) -> tuple[tuple[Part, ...], bool]:
        """After a backslash: (parts, negated).  Negated escapes (\\S, \\P{..}) are returned as
        negated parts when inside a class."""
        assert self.take("\\")
        c = self.peek()
        if c == "":
            raise self.fail("a trailing backslash")
        self.i += 1
        if c in ("p", "P"):
            negate = c == "P"
            if self.take("{"):
                j = self.s.find("}", self.i)
                if j < 0:
                    raise self.fail("an unterminated \\p{")
                name = self.s[self.i : j]
                self.i = j + 1
            else:
                name = self.peek()
                self.i += 1
            if name.startswith("^"):
                negate = not negate
                name = name[1:]
            if fold:
                raise self.fail("a Unicode property under (?i)")
            if name in _GROUPS:
                names: tuple[str, ...] = _GROUPS[name]
            elif name in GC_NAMES:
                names = (name,)
            else:
                raise self.fail(f"the property \\p{{{name}}} (only general categories are compiled)")
            kind: Literal["cat", "notcat"] = "notcat" if negate else "cat"
            if not in_class and negate:
                return tuple(Part("cat", name=n) for n in names), True
            if negate:
                # [\P{L}x]: a negated category inside a class is its complement, one part
                return (Part("notcat", name=",".join(names)),), False
            return tuple(Part(kind, name=n) for n in names), False
        if c == "s":
            return (Part("white"),), False
        if c == "S":
            return ((Part("white"),), True) if not in_class else ((Part("notwhite"),), False)
        if c == "d":
            return (Part("cat", name="Nd"),), False
        if c == "D":
            return ((Part("cat", name="Nd"),), True) if not in_class else ((Part("notcat", name="Nd"),), False)
        if c in _SIMPLE_ESCAPES:
            return (Part("range", lo=_SIMPLE_ESCAPES[c], hi=_SIMPLE_ESCAPES[c]),), False
        if c in ("x", "u", "U"):
            cp = self.hex_escape(c)
            return self.literal(cp, fold), False
        if c == "0":
            return (Part("range", lo=0, hi=0),), False
        if c in _PUNCT:
            return self.literal(ord(c), fold), False
        raise self.fail(f"the escape \\{c}")

    def hex_escape(self, c: str) -> int:
        if c == "x" and self.take("{"):
            j = self.s.find("}", self.i)
            digits = self.s[self.i : j] if j > 0 else ""
            self.i = j + 1 if j > 0 else self.i
        else:
            n = {"x": 2, "u": 4, "U": 8}[c]
            digits = self.s[self.i : self.i + n]
            self.i += n
        try:
            cp = int(digits, 16)
        except ValueError:
            raise self.fail(f"the escape \\{c}{digits}") from None
        if not 0 <= cp < N_CODE_POINTS or 0xD800 <= cp <= 0xDFFF:
            raise self.fail(f"the code point \\{c}{digits}")
        return cp

    def bracket(self, fold: bool) -> CharSet:
        assert self.take("[")
        negate = self.take("^")
        if self.peek() == "]":
            raise self.fail("a ']' first in a class")
        parts: list[Part] = []
        while True:
            c = self.peek()
            if c == "":
                raise self.fail("an unterminated class")
            if c == "]":
                self.i += 1
                break
            if c == "[":
                raise self.fail("a '[' inside a class (nested sets, POSIX classes)")
            for op in ("&&", "--", "~~", "||"):
                if self.s.startswith(op, self.i):
                    raise self.fail(f"the set operation {op!r}")
            if c == "\\":
                start = self.i
                got, neg = self.escape(in_class=True, fold=fold)
                assert not neg
                lo_cp = _single(got)
                if lo_cp is not None and self.peek() == "-" and self.peek(1) not in ("]", ""):
                    self.i = start
                    self.range_or_char(parts, fold)
                else:
                    parts.extend(got)
                continue
            self.range_or_char(parts, fold)
        if not parts:
            raise self.fail("an empty class")
        return CharSet(negate, tuple(parts))

    def class_char(self, fold: bool) -> int:
        """One literal character of a class (a range end): a plain character or an escape."""
        c = self.peek()
        if c == "\\":
            got, _ = self.escape(in_class=True, fold=False)
            cp = _single(got)
            if cp is None:
                raise self.fail("a class escape as a range end")
            return cp
        self.i += 1
        return ord(c)

    def range_or_char(self, parts: list[Part], fold: bool) -> None:
        lo = self.class_char(fold)
        if self.peek() == "-" and self.peek(1) not in ("]", ""):
            self.i += 1
            hi = self.class_char(fold)
            if hi < lo:
                raise self.fail("a range whose end is below its start")
            if fold:
                if hi >= 0x80:
                    raise self.fail("a range beyond ASCII under (?i)")
                for cp in range(lo, hi + 1):
                    parts.extend(self.literal(cp, True))
                return
            parts.append(Part("range", lo=lo, hi=hi))
            return
        parts.extend(self.literal(lo, fold))


def _single(parts: tuple[Part, ...]) -> int | None:
    if len(parts) == 1 and parts[0].kind == "range" and parts[0].lo == parts[0].hi:
        return parts[0].lo
    return None


def parse(regex_text: str, unicode: str) -> tuple[Branch, ...]:
    """The branches of a family regex, or NotInFamily with the reason.  The regex must already be
    known to compile with the `regex` module (mnemo/patterns.py checks that first)."""
    branches = _Parser(regex_text, _folds(unicode)).parse()
    check_family(branches)
    return branches


# ---- the family's rules --------------------------------------------------------------------


def _min_len(item: Item) -> int:
    if isinstance(item, SetItem):
        return item.min
    return item.min * min(len(a) for a in item.alts)


def _fanout(item: Item) -> int:
    if isinstance(item, SetItem):
        if item.possessive or item.max == item.min:
            return 1
        return (SMALL_FANOUT + 1) if item.max == INF else item.max - item.min + 1
    return 1 if item.possessive else len(item.alts) + (1 - item.min)


def check_family(branches: tuple[Branch, ...]) -> None:
    for k, br in enumerate(branches):
        where = f"branch {k + 1}"
        if sum(_min_len(it) for it in br.items) == 0:
            raise NotInFamily(f"{where} can match the empty string")
        fanout = 1
        for j, it in enumerate(br.items):
            f = _fanout(it)
            if f > SMALL_FANOUT:
                rest = br.items[j + 1 :]
                ok = (not rest) or (br.assertion.kind == ASSERT_NONE and all(_min_len(r) == 0 for r in rest[1:]))
                if not ok:
                    raise NotInFamily(
                        f"{where}: a greedy run of unbounded length followed by more than one item that "
                        "must match (its backtracking may not be linear)"
                    )
            else:
                fanout *= f
        if fanout > MAX_FANOUT:
            raise NotInFamily(f"{where}: bounded quantifiers that backtrack over {fanout} alternatives")
        if br.assertion.kind == ASSERT_END:
            last = br.items[-1]
            if not (isinstance(last, SetItem) and last.possessive and last.max == INF):
                raise NotInFamily(f"{where}: $ after something other than a possessive run (\\s++$)")


# ---- sets over a Unicode table -------------------------------------------------------------


@lru_cache(maxsize=4)
def _gc(version: str) -> npt.NDArray[np.uint8]:
    """The general category code of every code point in a Unicode table of _unicode_data.py."""
    if version not in udata.VERSIONS:
        raise ConfigError(f"no Unicode table {version!r}; mnemo has {', '.join(udata.VERSIONS)}")
    ident = udata.DEFAULT.replace(".", "_")
    blob = "".join(getattr(udata, f"GC_{ident}"))
    raw = np.frombuffer(bytes.fromhex(blob), dtype=np.uint8).reshape(-1, 4)
    starts = (raw[:, 0].astype(np.int64) << 16) | (raw[:, 1].astype(np.int64) << 8) | raw[:, 2]
    lengths = np.diff(np.append(starts, N_CODE_POINTS))
    gc = np.repeat(raw[:, 3], lengths)
    if version != udata.DEFAULT:
        blob = "".join(getattr(udata, f"GC_{version.replace('.', '_')}_DIFF"))
        rec = bytes.fromhex(blob)
        for i in range(0, len(rec), 7):
            a = int.from_bytes(rec[i : i + 3], "big")
            b = int.from_bytes(rec[i + 3 : i + 6], "big")
            gc[a:b] = rec[i + 6]
    gc.setflags(write=False)
    return gc


@lru_cache(maxsize=4)
def _white(version: str) -> npt.NDArray[np.bool_]:
    _gc(version)  # validates the name
    out = np.zeros(N_CODE_POINTS, dtype=np.bool_)
    out[list(getattr(udata, f"WHITE_{version.replace('.', '_')}"))] = True
    out.setflags(write=False)
    return out


def _folds(version: str) -> dict[str, tuple[int, ...]]:
    _gc(version)
    folds: dict[str, tuple[int, ...]] = getattr(udata, f"FOLDS_{version.replace('.', '_')}")
    return folds


@lru_cache(maxsize=2)
def _numeric() -> npt.NDArray[np.bool_]:
    out = np.zeros(N_CODE_POINTS, dtype=np.bool_)
    rec = bytes.fromhex("".join(getattr(udata, f"NUMERIC_{udata.DIGITS_VERSION.replace('.', '_')}")))
    for i in range(0, len(rec), 6):
        out[int.from_bytes(rec[i : i + 3], "big") : int.from_bytes(rec[i + 3 : i + 6], "big")] = True
    out.setflags(write=False)
    return out


def members(cs: CharSet, version: str) -> npt.NDArray[np.bool_]:
    """The code points of a set, as a boolean array over every code point."""
    out = np.zeros(N_CODE_POINTS, dtype=np.bool_)
    cats = np.zeros(len(GC_NAMES), dtype=np.bool_)
    for part in cs.parts:
        if part.kind == "cat":
            cats[GC_NAMES.index(part.name)] = True
        elif part.kind == "notcat":
            lut = np.ones(len(GC_NAMES), dtype=np.bool_)
            for name in part.name.split(","):
                lut[GC_NAMES.index(name)] = False
            out |= lut[_gc(version)]
        elif part.kind == "range":
            out[part.lo : part.hi + 1] = True
        elif part.kind == "white":
            out |= _white(version)
        elif part.kind == "notwhite":
            out |= ~_white(version)
        else:
            out |= _numeric()
    if cats.any():
        out |= cats[_gc(version)]
    return ~out if cs.negate else out


def digits_branches() -> tuple[Branch, ...]:
    """tokenizers' Digits pre-tokenizer as one branch: a single character of Rust's
    char::is_numeric (its own Unicode version, _unicode_data.DIGITS_VERSION)."""
    numeric = CharSet(False, (Part("numeric"),))
    return (Branch((SetItem(numeric, 1, 1, False),), Assertion(ASSERT_NONE)),)


# ---- the compiled form ---------------------------------------------------------------------

INVALID_CP: Final = 0xDC80  # how the oracle sees an invalid byte: a lone surrogate (gc Cs)


@dataclass
class Compiled:
    """Everything pretokenize.SplitProgram holds for a scanned pattern."""

    n_atoms: int
    ascii: bytes  # 128 atom ids
    stage1: bytes
    stage2: bytes
    shift: int
    invalid_atom: int
    code: list[int]
    branch_at: list[int]
    cand_at: list[int]  # n_atoms + 1 offsets into cands
    cands: list[int]
    masks: list[int]  # every set's atom mask (the actions name them by index)
    groups: list[int]
    act1: list[int]  # per first atom
    act2: list[int]  # per (first atom, second atom or END = n_atoms)
    act3: list[int]  # rows of n_atoms + 1: per third atom, for the pairs act2 sends here
    whites: list[int]  # white-space tail programs (WHITE_WORDS each)
    follows: list[int]  # the optional items after shortcut runs (FOLLOW_WORDS each)
    caseds: list[int]  # cased-word pairs (CASED_WORDS each)
    pair: bytes  # per two ASCII bytes (b0 << 7 | b1): the action, 8 bytes (0: no shortcut)
    tri: bytes  # act3's rows for an ASCII third byte: (row << 7 | b2), 8 bytes each
    start_mask: int  # atoms a match can start with


def _collect_sets(branches: tuple[Branch, ...]) -> list[CharSet]:
    out: list[CharSet] = []

    def add(cs: CharSet) -> None:
        if cs not in out:
            out.append(cs)

    for br in branches:
        for it in br.items:
            if isinstance(it, SetItem):
                add(it.cs)
            else:
                for alt in it.alts:
                    for cs in alt:
                        add(cs)
        if br.assertion.cs is not None:
            add(br.assertion.cs)
    return out


def _atoms(sets: list[CharSet], version: str) -> tuple[npt.NDArray[np.uint8], list[int]]:
    """The atom of every code point (the classes the sets cut the code points into), and each
    set's atom mask."""
    if len(sets) > 64:
        raise NotInFamily(f"{len(sets)} distinct character sets (at most 64 are compiled)")
    sig = np.zeros(N_CODE_POINTS, dtype=np.uint64)
    for k, cs in enumerate(sets):
        sig |= members(cs, version).astype(np.uint64) << np.uint64(k)
    values, first, inverse = np.unique(sig, return_index=True, return_inverse=True)
    if len(values) > MAX_ATOMS:
        raise NotInFamily(f"the sets cut the code points into {len(values)} classes (at most {MAX_ATOMS} are compiled)")
    # number the atoms in order of their first code point (ASCII atoms come first)
    order = np.argsort(first)
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.arange(len(values))
    atoms = rank[inverse].astype(np.uint8)
    masks = []
    for k in range(len(sets)):
        bit = np.uint64(1) << np.uint64(k)
        m = 0
        for a in range(len(values)):
            if int(values[order[a]]) & int(bit):
                m |= 1 << a
        masks.append(m)
    block = atoms[0xDC80:0xDD00]
    if not (block == block[0]).all():
        raise NotInFamily("a set separates the code points U+DC80..U+DCFF (how invalid bytes are seen)")
    return atoms, masks


def two_stage(atoms: npt.NDArray[np.uint8]) -> tuple[bytes, bytes, int]:
    raw = atoms.tobytes()
    for shift in range(7, 13):
        size = 1 << shift
        index: dict[bytes, int] = {}
        stage1 = bytearray()
        for start in range(0, N_CODE_POINTS, size):
            stage1.append(index.setdefault(raw[start : start + size], len(index)) & 0xFF)
            if len(index) > 256:
                break
        if len(index) <= 256:
            return bytes(stage1), b"".join(index), shift
    raise NotInFamily("the class table does not fit a two-stage table of one-byte blocks")


class _Unknown(Exception):
    """The abstract matcher needs a character it does not know.  `branch`: the first branch
    whose outcome is unknown (the ones before it fail), or len(branches) for a gap."""

    branch = 0


# Outcomes of the abstract matcher.
_FAIL: Final = ("fail",)


class _Abstract:
    """Runs the branches over atoms instead of characters: the first one or two characters are
    known atoms (or END), the rest unknown.  The outcome is "fail", ("match", k) -- the chunk is
    the first k characters -- ("run", mask, s, max) -- the chunk ends where the run of `mask`
    from known character s ends -- or ("check", mask, s, max, item) -- the same, then the optional item after it (follow) -- unless the
    character after the run starts `follow` -- or raises _Unknown.  The same backtracking order
    as the scanner's matcher (pretokenize._seq), so the outcome is what it would find."""

    def __init__(self, branches: tuple[Branch, ...], set_mask: dict[CharSet, int], end_atom: int) -> None:
        self.branches = branches
        self.mask = set_mask
        self.end = end_atom

    def first_set(self, it: Item) -> int:
        if isinstance(it, SetItem):
            return self.mask[it.cs]
        m = 0
        for alt in it.alts:
            m |= self.mask[alt[0]]
        return m

    def outcome(self, known: list[int]) -> tuple[object, ...]:
        """What the whole alternation does at a chunk start whose first atoms are `known`."""
        r = self.first_match(known)
        if r != _FAIL:
            return r
        # no branch matches here: the chunk is the gap up to the next place one does
        gap = _Unknown()  # (when that depends on what follows: every branch fails here)
        gap.branch = len(self.branches)
        for k in range(1, len(known)):
            try:
                if known[k] == self.end or self.first_match(known[k:]) != _FAIL:
                    return ("match", k)
            except _Unknown:
                raise gap from None
        raise gap

    def first_match(self, known: list[int]) -> tuple[object, ...]:
        """The first branch's outcome that is not a failure, or _FAIL."""
        for b, br in enumerate(self.branches):
            try:
                r = self.seq(br, 0, 0, known)
            except _Unknown as unknown:
                unknown.branch = b
                raise
            if r != _FAIL:
                return r
        return _FAIL

    def has(self, known: list[int], k: int) -> bool:
        """Is character k known (and not END)?"""
        if k >= len(known):
            raise _Unknown
        return known[k] != self.end

    def seq(self, br: Branch, j: int, k: int, known: list[int]) -> tuple[object, ...]:
        if j == len(br.items):
            return self.assertion(br.assertion, k, known)
        it = br.items[j]
        if isinstance(it, SetItem):
            mask = self.mask[it.cs]
            c = 0
            while (it.max == INF or c < it.max) and k + c < len(known) and known[k + c] != self.end and (mask >> known[k + c]) & 1:
                c += 1
            if k + c == len(known) and (it.max == INF or c < it.max):
                # the run goes on into the unknown
                if c < it.min or it.max > 255:
                    raise _Unknown
                rest = br.items[j + 1 :]
                if br.assertion.kind != ASSERT_NONE:
                    raise _Unknown
                if not rest:
                    return ("run", mask, k, it.max)
                if len(rest) == 1 and _min_len(rest[0]) == 0:
                    return ("check", mask, k, it.max, rest[0])
                raise _Unknown
            if c < it.min:
                return _FAIL
            if it.possessive or c == it.min:
                return self.seq(br, j + 1, k + c, known)
            for cc in range(c, it.min - 1, -1):
                r = self.seq(br, j + 1, k + cc, known)
                if r != _FAIL:
                    return r
            return _FAIL
        matched_any = False
        for alt in it.alts:
            q = k
            ok = True
            for cs in alt:
                if not self.has(known, q) or not (self.mask[cs] >> known[q]) & 1:
                    ok = False
                    break
                q += 1
            if not ok:
                continue
            matched_any = True
            r = self.seq(br, j + 1, q, known)
            if it.possessive or r != _FAIL:
                return r
        if it.min == 0 and not (it.possessive and matched_any):
            return self.seq(br, j + 1, k, known)
        return _FAIL

    def assertion(self, a: Assertion, k: int, known: list[int]) -> tuple[object, ...]:
        if a.kind == ASSERT_NONE:
            return ("match", k)
        if k >= len(known):
            raise _Unknown
        at_end = known[k] == self.end
        if a.kind == ASSERT_END:
            return ("match", k) if at_end else _FAIL
        assert a.cs is not None
        inside = (not at_end) and bool((self.mask[a.cs] >> known[k]) & 1)
        if a.kind == ASSERT_NOT:
            return _FAIL if inside else ("match", k)
        return ("match", k) if inside else _FAIL


def _swar(mask: int, ascii_atoms: bytes) -> int:
    inside = {b for b in range(128) if (mask >> ascii_atoms[b]) & 1}
    letters = set(range(0x41, 0x5B)) | set(range(0x61, 0x7B))
    if inside == letters:
        return SWAR_LETTERS
    if inside == set(range(0x61, 0x7B)):
        return SWAR_LOWER
    return SWAR_NONE


def _action(
    r: tuple[object, ...], masks: list[int], ascii_atoms: bytes, follow_index: Callable[[Item], tuple[int, int]]
) -> int:
    """The action word of an outcome of _Abstract (the ACT_* layout above).  follow_index gives
    an ACT_RUN_CHECK's optional item's record in `follows`, and its first characters' mask."""
    kind = r[0]
    if kind == "match":
        k = r[1]
        assert isinstance(k, int) and 1 <= k <= 3
        return ACT_FIXED | (k << 4)

    def index(m: object) -> int:
        assert isinstance(m, int)
        if m not in masks:
            masks.append(m)
        return masks.index(m)

    mask, s, mx = r[1], r[2], r[3]
    assert isinstance(s, int) and isinstance(mx, int) and isinstance(mask, int)
    swar = _swar(mask, ascii_atoms) if mx == INF else SWAR_NONE
    act = (ACT_RUN if kind == "run" else ACT_RUN_CHECK) | (s << 4) | (swar << 6) | (index(mask) << 8)
    if kind == "check":
        item = r[4]
        assert isinstance(item, (SetItem, GroupItem))
        k, first = follow_index(item)
        act |= k << 16
        inside = [b for b in range(1, 128) if (first >> ascii_atoms[b]) & 1]
        if (first >> ascii_atoms[0]) & 1 or len(inside) > 3:
            act |= FOLLOW_WIDE
        else:
            for j, b in enumerate(inside):
                act |= b << (32 + 7 * j)
    if mx != INF:
        act |= mx << 24
    return act


def _rest_start(br: Branch, j: int, abstract: _Abstract, all_atoms: int) -> tuple[int, int]:
    """What can start a match of items j.. of the branch (and its assertion): the atoms its
    first character can have, and REST_AT_END / REST_ANYWHERE.  A greedy run backtracks only
    to the positions this allows (pretokenize._seq)."""
    first = 0
    for it in br.items[j:]:
        first |= abstract.first_set(it)
        if _min_len(it) > 0:
            return first, 0
    a = br.assertion
    if a.kind == ASSERT_NONE:
        return all_atoms, REST_AT_END | REST_ANYWHERE
    if a.kind == ASSERT_END:
        return first, REST_AT_END
    assert a.cs is not None
    if a.kind == ASSERT_NOT:
        return first | (all_atoms & ~abstract.mask[a.cs]), REST_AT_END
    return first | abstract.mask[a.cs], 0


def _tail_kind(br: Branch, mask: dict[CharSet, int]) -> tuple[int, int, int]:
    """(kind, S, X or A) when the branch is one of the white-space tail's shapes, else (0, 0, 0)."""
    items = br.items
    a = br.assertion
    first = items[0]
    if not isinstance(first, SetItem):
        return 0, 0, 0
    s = mask[first.cs]
    if len(items) == 1:
        if a.kind == ASSERT_END and first.possessive and first.min == 1 and first.max == INF:
            return TAIL_END, s, 0
        if a.kind == ASSERT_NOT and not first.possessive and first.min == 1 and first.max == INF:
            assert a.cs is not None
            if mask[a.cs] & s == 0:
                return TAIL_LOOKAHEAD, s, mask[a.cs]
        if a.kind == ASSERT_NONE and first.min == 1 and first.max == INF:
            return TAIL_RUN, s, 0
        if a.kind == ASSERT_NONE and first.min == 1 and first.max == 1:
            return TAIL_ONE, s, 0
        return 0, 0, 0
    if len(items) == 2 and a.kind == ASSERT_NONE:
        second = items[1]
        if (
            isinstance(second, SetItem)
            and not first.possessive
            and first.min == 0
            and first.max == INF
            and second.min == 1
            and second.max in (1, INF)
        ):
            x = mask[second.cs]
            if x & ~s == 0:
                return TAIL_NEWLINE, s, x
    return 0, 0, 0


def _cased_pair(first: Branch, second: Branch, mask: dict[CharSet, int], group_at: dict[int, int], k: int) -> list[int] | None:
    """The ACT_CASED record of branches k and k + 1 when they are P?A*B+G? and P?A+B*G? (the
    same P, A, B and G; G an optional group), else None."""

    def parts(br: Branch) -> tuple[SetItem | None, SetItem, SetItem, GroupItem | None] | None:
        items = list(br.items)
        if br.assertion.kind != ASSERT_NONE:
            return None
        g: GroupItem | None = None
        if items and isinstance(items[-1], GroupItem):
            last = items.pop()
            assert isinstance(last, GroupItem)
            if last.min != 0 or last.possessive:
                return None
            g = last
        pre: SetItem | None = None
        if len(items) == 3:
            head = items.pop(0)
            if not (isinstance(head, SetItem) and head.min == 0 and head.max == 1 and not head.possessive):
                return None
            pre = head
        if len(items) != 2 or not all(isinstance(it, SetItem) and not it.possessive and it.max == INF for it in items):
            return None
        a, b = items
        assert isinstance(a, SetItem) and isinstance(b, SetItem)
        return pre, a, b, g

    one = parts(first)
    two = parts(second)
    if one is None or two is None:
        return None
    p1, a1, b1, g1 = one
    p2, a2, b2, g2 = two
    if (p1, g1) != (p2, g2) or a1.cs != a2.cs or b1.cs != b2.cs:
        return None
    if (a1.min, b1.min, a2.min, b2.min) != (0, 1, 1, 0):
        return None
    return [
        mask[p1.cs] if p1 is not None else 0,
        mask[a1.cs],
        mask[b1.cs],
        group_at[k] if g1 is not None else -1,
        k + 2,
    ]


def compile_branches(branches: tuple[Branch, ...], version: str) -> Compiled:
    """The program of a parsed family regex over the Unicode table `version`."""
    sets = _collect_sets(branches)
    atoms, set_masks = _atoms(sets, version)
    n_atoms = int(atoms.max()) + 1
    stage1, stage2, shift = two_stage(atoms)
    by_set = dict(zip(sets, set_masks))
    masks: list[int] = list(dict.fromkeys(set_masks))
    code: list[int] = []
    groups: list[int] = []
    branch_at: list[int] = []
    abstract = _Abstract(branches, by_set, n_atoms)
    all_atoms = (1 << n_atoms) - 1
    last_group: dict[int, int] = {}
    group_of: dict[GroupItem, int] = {}
    for br in branches:
        branch_at.append(len(code))
        asrt = br.assertion
        code += [len(br.items), asrt.kind, by_set[asrt.cs] if asrt.cs is not None else 0, 0, 0, 0]
        for j, it in enumerate(br.items):
            rest_first, rest_flags = _rest_start(br, j + 1, abstract, all_atoms)
            flags = POSSESSIVE if it.possessive else 0
            if isinstance(it, SetItem):
                code += [ITEM_SET | flags, by_set[it.cs], it.min, it.max, rest_first, rest_flags]
            else:
                g = len(groups)
                last_group[len(branch_at) - 1] = g
                group_of[it] = g
                groups.append(len(it.alts))
                groups.append(abstract.first_set(it))
                for alt in it.alts:
                    groups.append(len(alt))
                    groups += [by_set[cs] for cs in alt]
                code += [ITEM_GROUP | flags, g, it.min, 1, rest_first, rest_flags]
    first = [0] * len(branches)
    for b, br in enumerate(branches):
        m = 0
        for it in br.items:
            m |= abstract.first_set(it)
            if _min_len(it) > 0:
                break
        first[b] = m
    cand_at: list[int] = []
    cands: list[int] = []
    for a in range(n_atoms):
        cand_at.append(len(cands))
        cands += [b for b in range(len(branches)) if (first[b] >> a) & 1]
    cand_at.append(len(cands))
    start_mask = 0
    for m in first:
        start_mask |= m
    ascii_atoms = atoms[:128].tobytes()
    width = n_atoms + 1
    act1: list[int] = []
    act2: list[int] = [ACT_GENERIC] * (n_atoms * width)
    act3: list[int] = []
    follows: list[int] = []

    def follow_index(item: Item) -> tuple[int, int]:
        """The FOLLOW_WORDS record of an optional item after a shortcut's run: its first
        characters' mask, its kind, its set's mask or its group's offset, its maximum."""
        first_mask = abstract.first_set(item)
        if isinstance(item, GroupItem):
            record = [first_mask, ITEM_GROUP, group_of[item], 1]
        else:
            record = [first_mask, ITEM_SET, by_set[item.cs], item.max]
        for k in range(0, len(follows), FOLLOW_WORDS):
            if follows[k : k + FOLLOW_WORDS] == record:
                return k // FOLLOW_WORDS, first_mask
        follows.extend(record)
        return len(follows) // FOLLOW_WORDS - 1, first_mask

    tails = [_tail_kind(br, by_set) for br in branches]
    whites: list[int] = []
    caseds: list[int] = []
    cased_at: dict[int, int] = {}
    for k in range(len(branches) - 1):
        rec = _cased_pair(branches[k], branches[k + 1], by_set, last_group, k)
        if rec is not None:
            cased_at[k] = len(caseds) // CASED_WORDS
            caseds += rec

    def generic(unknown: _Unknown, a0: int) -> int:
        """The matcher from the first branch not known to fail -- or the white-space tail
        program, when the branches from there that can start with a0 are all tail shapes over
        one set S that holds a0."""
        b = unknown.branch
        if b in cased_at:
            return ACT_CASED | (cased_at[b] << 8)
        kinds: list[int] = []
        s_mask = x_mask = a_mask = 0
        after = len(branches)
        for k in range(b, len(branches)):
            if not (first[k] >> a0) & 1:
                continue
            kind, sm, other = tails[k]
            if kind == 0 or (kinds and sm != s_mask) or not (sm >> a0) & 1 or len(kinds) == 4:
                after = k
                break
            if kind == TAIL_NEWLINE:
                if x_mask and other != x_mask:
                    after = k
                    break
                x_mask = other
            if kind == TAIL_LOOKAHEAD:
                if a_mask and other != a_mask:
                    after = k
                    break
                a_mask = other
            s_mask = sm
            kinds.append(kind)
        if not kinds or b >= len(branches):
            return ACT_GENERIC | (min(b, 255) << 8)
        record = [s_mask, x_mask, a_mask, after, sum(kind << (4 * i) for i, kind in enumerate(kinds))]
        for w in range(0, len(whites), WHITE_WORDS):
            if whites[w : w + WHITE_WORDS] == record:
                return ACT_WHITE | ((w // WHITE_WORDS) << 8)
        whites.extend(record)
        return ACT_WHITE | ((len(whites) // WHITE_WORDS - 1) << 8)

    for a0 in range(n_atoms):
        try:
            act1.append(_action(abstract.outcome([a0]), masks, ascii_atoms, follow_index))
            continue
        except _Unknown:
            act1.append(ACT_NEXT)
        for a1 in range(width):
            try:
                act2[a0 * width + a1] = _action(abstract.outcome([a0, a1]), masks, ascii_atoms, follow_index)
                continue
            except _Unknown as unknown:
                act2[a0 * width + a1] = generic(unknown, a0)
            if a1 == n_atoms:
                continue
            row = [ACT_GENERIC] * width
            decided = False
            for a2 in range(width):
                try:
                    row[a2] = _action(abstract.outcome([a0, a1, a2]), masks, ascii_atoms, follow_index)
                    decided = True
                except _Unknown as unknown:
                    row[a2] = generic(unknown, a0)
            if row.count(row[0]) == width and row[0] & 15 in (ACT_GENERIC, ACT_WHITE, ACT_CASED):
                act2[a0 * width + a1] = row[0]
            elif decided or any(r & 15 in (ACT_WHITE, ACT_CASED) for r in row):
                act2[a0 * width + a1] = ACT_NEXT | ((len(act3) // width) << 8)
                act3 += row
    # the ASCII pairs' actions, two bytes to one lookup (8 bytes each, little-endian)
    pair = np.zeros(128 * 128, dtype="<i8")
    for b0 in range(128):
        a0 = ascii_atoms[b0]
        for b1 in range(128):
            act = act1[a0] if act1[a0] != ACT_NEXT else act2[a0 * width + ascii_atoms[b1]]
            if act & 15 != ACT_GENERIC:
                pair[(b0 << 7) | b1] = act
    if len(masks) > 256:
        raise NotInFamily("too many shortcut masks")
    return Compiled(
        n_atoms=n_atoms,
        ascii=ascii_atoms,
        stage1=stage1,
        stage2=stage2,
        shift=shift,
        invalid_atom=int(atoms[INVALID_CP]),
        code=code,
        branch_at=branch_at,
        cand_at=cand_at,
        cands=cands,
        masks=masks,
        groups=groups,
        act1=act1,
        act2=act2,
        act3=act3,
        whites=whites,
        follows=follows,
        caseds=caseds,
        pair=pair.tobytes(),
        tri=np.array(
            [act3[r * width + ascii_atoms[b2]] for r in range(len(act3) // width) for b2 in range(128)], dtype="<i8"
        ).tobytes(),
        start_mask=start_mask,
    )
