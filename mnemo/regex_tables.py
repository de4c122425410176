r"""A split regex outside the compiled family, run by the `regex` module as a reference engine
with older Unicode tables would run it (docs/pretokenizer.md, "Unicode versions").

The `regex` module holds Unicode 18.0; tiktoken and tokenizers hold 16.0
(mnemo/_unicode_data.py).  A regex the family compiles runs in mnemo's scanner on the
reference's tables.  Any other regex runs through `regex`, and `follow` rewrites what in it
depends on the Unicode version, so that it matches as the reference does on every code point:

* every one-character set whose members differ between the two tables -- a property escape
  (\p{L}, \pN, \P{Lu}, \p{^Nd}: general categories and their groups, short or long names),
  \d \D \w \W \s \S, a bracketed class holding any of these, negated or not, and, inside a
  case-insensitive scope, an ASCII letter -- becomes
  `(?:(?![OUT])SET|[IN])`: the set as written, without the code points `regex` puts in it and the
  reference does not (OUT), with those the reference puts in it and `regex` does not (IN);
* \b and \B, which test \w on each side, become lookarounds of that rewritten \w.

OUT and IN are exact: `regex`'s side is probed from `regex` itself, on each set as written, over
every code point whose category, \s or case folds differ between the two tables (the universe:
17,812 code points for 16.0 -- letters, digits and marks new since 16.0, U+0295, and U+0130,
which `regex`'s (?i:i) matches and the references' does not); the reference's side comes from its
probed tables.  Off that universe the two tables agree on every category and on \s, and \w
differs nowhere else (tests/test_regex_tables.py checks \w against tiktoken on every code point).
Hence the speed rule: the code points of all the OUT and IN sets together are the *marks*, and a
text holding none of them matches alike under both regexes, every set answering the same for
each of its characters -- so the native regex runs such a text (pretokenize's _RegexCursor
checks, in compiled code, only texts that are not ASCII) and the rewritten one runs the rest.

What cannot be carried over raises NotFollowed, naming it: a property other than a general
category (scripts, blocks, binary properties: mnemo holds no older tables of them), POSIX classes,
\X, \m, \M, inline flags other than i, m, s and u (x would hide the syntax, a, L, w, f, V1 change
what sets mean), a global flag group after the start, conditionals; and inside a case-insensitive
scope a cased non-ASCII character, a property holding cased letters, or a backreference (case
folding beyond the ASCII letters, which mnemo does not hold per version).  `.` (any character but
a newline), literals and ranges mean the same on every table.

Plain Python (not compiled): a regex is rewritten once, when its pattern is compiled.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import regex

from mnemo import _unicode_data as udata
from mnemo import pretokenize as pt
from mnemo import regex_family as rf

#: the categories of \w besides Other_Alphabetic (Alphabetic, marks, Nd, Pc: UTS #18's word class)
_WORD_CATS: Final = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "Pc"})
#: categories holding characters with a case mapping (U+0345 is Mn, the circled letters So, the
#: Roman numerals Nl): a property holding one is refused under (?i)
_CASED_CATS: Final = frozenset({"Lu", "Ll", "Lt", "Mn", "So", "Nl"})
_LONG_NAMES: Final = {
    "other": "C", "control": "Cc", "format": "Cf", "unassigned": "Cn", "privateuse": "Co", "surrogate": "Cs",
    "letter": "L", "casedletter": "LC", "lowercaseletter": "Ll", "modifierletter": "Lm", "otherletter": "Lo",
    "titlecaseletter": "Lt", "uppercaseletter": "Lu", "mark": "M", "combiningmark": "M", "spacingmark": "Mc",
    "enclosingmark": "Me", "nonspacingmark": "Mn", "number": "N", "decimalnumber": "Nd", "digit": "Nd",
    "letternumber": "Nl", "othernumber": "No", "punctuation": "P", "connectorpunctuation": "Pc",
    "dashpunctuation": "Pd", "closepunctuation": "Pe", "finalpunctuation": "Pf", "initialpunctuation": "Pi",
    "otherpunctuation": "Po", "openpunctuation": "Ps", "symbol": "S", "currencysymbol": "Sc",
    "modifiersymbol": "Sk", "mathsymbol": "Sm", "othersymbol": "So", "separator": "Z", "lineseparator": "Zl",
    "paragraphseparator": "Zp", "spaceseparator": "Zs",
}  # fmt: skip
_ALLOWED_FLAGS: Final = frozenset("imsu")
_QUANTIFIER: Final = re.compile(r"\{\d*(,\d*)?\}")
_BRACES: Final = re.compile(r"\{[^{}]*\}")
_LEADING_FLAGS: Final = re.compile(r"\(\?([a-zA-Z0-9]+)\)")
_NAMED_GROUP: Final = re.compile(r"\(\?(?:P?<(?![=!])[^>]*>|'[^']*')")
_GROUP_REFERENCE: Final = re.compile(r"\(\?(?:P=[^)]*|P>[^)]*|&[^)]*|R|[+-]?\d+)\)")  # a backreference, a call
_FLAG_GROUP: Final = re.compile(r"\(\?([a-zA-Z0-9]*)(?:-([a-zA-Z]*))?([:)])")
_CONTROL_ESCAPES: Final = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "e": 27}


class NotFollowed(Exception):
    """The regex holds a construct whose meaning on the reference's tables is not written here."""

    def __init__(self, reason: str, at: int) -> None:
        self.reason = reason
        self.at = at
        super().__init__(f"{reason} (at offset {at})")


@dataclass(frozen=True)
class _Part:
    """A member of a set: kind "cp" (lo..hi), "cat" (general categories, `names`), "white" (\\s)
    or "word" (\\w); `neg` for \\P{..}, \\S, \\W inside a class."""

    kind: str
    lo: int = 0
    hi: int = 0
    names: frozenset[str] = frozenset()
    neg: bool = False


@dataclass(frozen=True)
class _Set:
    text: str  # as written
    parts: tuple[_Part, ...]
    negate: bool
    fold: bool  # inside a case-insensitive scope


@dataclass(frozen=True)
class _Boundary:
    text: str  # \b or \B
    fold: bool


_Token = str | _Set | _Boundary


# ---- the tables ----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Universe:
    """The code points where the two tables may answer differently, and the reference's view of them."""

    cps: npt.NDArray[np.int64]
    text: str  # the code points, in order, as one string (what the native sets are probed on)
    gc: npt.NDArray[np.uint8]  # the reference's category of each
    white: npt.NDArray[np.bool_]
    word_known: npt.NDArray[np.bool_]  # the category decides \w (the category changed): else \w is regex's
    folds: dict[str, tuple[int, ...]]


@lru_cache(maxsize=4)
def _universe(version: str) -> _Universe:
    ref_gc, own_gc = rf._gc(version), rf._gc(udata.DEFAULT)
    ref_white, own_white = rf._white(version), rf._white(udata.DEFAULT)
    moved = (ref_gc != own_gc) | (ref_white != own_white)
    marks = moved.copy()
    ref_folds, own_folds = rf._folds(version), rf._folds(udata.DEFAULT)
    for letter in set(ref_folds) | set(own_folds):
        for cp in set(ref_folds.get(letter, ())) ^ set(own_folds.get(letter, ())):
            marks[cp] = True
    cps = np.flatnonzero(marks).astype(np.int64)
    assert not (cps < 0x80).any(), "the tables differ on an ASCII character"
    return _Universe(
        cps, "".join(map(chr, cps.tolist())), ref_gc[cps], ref_white[cps], moved[cps], ref_folds
    )


def _cats(name: str, at: int) -> frozenset[str]:
    key = name.replace(" ", "").replace("_", "").replace("-", "").lower()
    for prefix in ("generalcategory=", "gc=", "generalcategory:", "gc:"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
    if key.startswith("is") and len(key) > 2:  # \p{IsL}
        key = key[2:]
    short = _LONG_NAMES.get(key, key)
    if short in ("lc", "l&"):
        return frozenset({"Lu", "Ll", "Lt"})
    for gc in rf.GC_NAMES:
        if gc.lower() == short:
            return frozenset({gc})
    if len(short) == 1 and short.upper() in "CLMNPSZ":
        return frozenset(n for n in rf.GC_NAMES if n[0] == short.upper())
    raise NotFollowed(
        f"the property \\p{{{name}}}: only general categories are held per Unicode version "
        "(scripts, blocks and binary properties are not)",
        at,
    )


# ---- the parser ----------------------------------------------------------------------------


class _Parser:
    """Cuts a `regex`-module pattern (VERSION0) into text kept as written, one-character sets
    and word boundaries; NotFollowed for what cannot be carried to another table."""

    def __init__(self, text: str, version: str) -> None:
        self.s = text
        self.i = 0
        self.version = version
        self.gcs = (rf._gc(version), rf._gc(udata.DEFAULT))

    def fail(self, reason: str, at: int | None = None) -> NotFollowed:
        return NotFollowed(reason, self.i if at is None else at)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def parse(self) -> list[_Token]:
        out: list[_Token] = []
        fold = self.leading_flags(out)
        stack = [fold]
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\":
                out.append(self.escape_outside(stack[-1]))
            elif c == "[":
                out.append(self.bracket(stack[-1]))
            elif c == "(":
                out.append(self.group_open(stack))
            elif c == ")":
                if len(stack) > 1:
                    stack.pop()
                out.append(c)
                self.i += 1
            elif c == "{":
                m = _QUANTIFIER.match(self.s, self.i)
                if m is None and _BRACES.match(self.s, self.i) is not None:
                    raise self.fail("a {...} that is not a counted repeat (fuzzy matching)")
                end = m.end() if m is not None else self.i + 1  # else a literal '{'
                out.append(self.s[self.i : end])
                self.i = end
            else:
                self.i += 1
                out.append(self.literal(ord(c), stack[-1], c))
        return out

    def leading_flags(self, out: list[_Token]) -> bool:
        """Global flag groups at the start: (?i), (?ims)..."""
        fold = False
        while True:
            m = _LEADING_FLAGS.match(self.s, self.i)
            if m is None:
                return fold
            flags = m.group(1)
            self.check_flags(flags.replace("V0", ""))
            fold = fold or "i" in flags
            out.append(m.group(0))
            self.i = m.end()

    def check_flags(self, flags: str) -> None:
        for f in flags:
            if f not in _ALLOWED_FLAGS and f != "-":
                raise self.fail(f"the inline flag {f!r} (only i, m, s and u keep their meaning on another table)")

    def group_open(self, stack: list[bool]) -> str:
        s, i = self.s, self.i
        fold = stack[-1]
        if not s.startswith("(?", i):
            stack.append(fold)
            self.i += 1
            return "("
        for head in ("(?:", "(?>", "(?=", "(?!", "(?<=", "(?<!", "(?|"):
            if s.startswith(head, i):
                stack.append(fold)
                self.i += len(head)
                return head
        if s.startswith("(?#", i):
            j = s.find(")", i)
            self.i = j + 1
            return s[i : j + 1]
        m = _NAMED_GROUP.match(s, i)
        if m is not None:  # a named group
            stack.append(fold)
            self.i = m.end()
            return m.group(0)
        m = _GROUP_REFERENCE.match(s, i)
        if m is not None:
            if m.group(0).startswith("(?P=") and fold:
                raise self.fail("a backreference under (?i)")
            self.i = m.end()
            return m.group(0)
        m = _FLAG_GROUP.match(s, i)
        if m is not None:
            on, off = m.group(1).replace("V0", ""), m.group(2) or ""
            self.check_flags(on + off)
            if m.group(3) == ")":
                raise self.fail("a global flag group after the start of the regex")
            stack.append(False if "i" in off else (True if "i" in on else fold))
            self.i = m.end()
            return m.group(0)
        raise self.fail(f"the group {s[i : i + 4]!r}...")

    def cased(self, lo: int, hi: int) -> bool:
        """Does lo..hi hold a character with a case mapping beyond ASCII, on either table?"""
        lo = max(lo, 0x80)
        if hi < lo:
            return False
        cased = [rf.GC_NAMES.index(n) for n in _CASED_CATS]
        return any(bool(np.isin(g[lo : hi + 1], cased).any()) for g in self.gcs)

    def literal(self, cp: int, fold: bool, text: str) -> _Token:
        """A literal character outside a class."""
        if not fold:
            return text
        if cp < 0x80:
            if chr(cp).isalpha():
                return _Set(text, (_Part("cp", cp, cp),), False, True)
            return text
        if self.cased(cp, cp):
            raise self.fail(f"the cased character {chr(cp)!r} under (?i) (case folds beyond ASCII are not held per version)")
        return text

    def escape_outside(self, fold: bool) -> _Token:
        start = self.i
        got = self.escape(fold, in_class=False)
        text = self.s[start : self.i]
        if isinstance(got, _Part):
            return _Set(text, (got,), False, fold)
        if got == -2:
            return _Boundary(text, fold)
        if got >= 0:
            return self.literal(got, fold, text)
        return text

    def escape(self, fold: bool, in_class: bool) -> _Part | int:
        """After a backslash: a set member (_Part), a literal code point, -1 for an escape kept as
        written (an anchor, a backreference), -2 for \\b or \\B outside a class."""
        assert self.s[self.i] == "\\"
        at = self.i
        self.i += 1
        c = self.peek()
        self.i += 1
        if c in ("p", "P"):
            neg = c == "P"
            if self.peek() == "{":
                j = self.s.find("}", self.i)
                name = self.s[self.i + 1 : j]
                self.i = j + 1
            else:
                name = self.peek()
                self.i += 1
            if name.startswith("^"):
                neg, name = not neg, name[1:]
            names = _cats(name, at)
            if fold and names & _CASED_CATS:
                raise self.fail(f"the property \\{c}{{{name}}} under (?i) (it holds cased letters)", at)
            return _Part("cat", names=names, neg=neg)
        if c in "dD":
            return _Part("cat", names=frozenset({"Nd"}), neg=c == "D")
        if c in "sS":
            return _Part("white", neg=c == "S")
        if c in "wW":
            return _Part("word", neg=c == "W")
        if c in "bB":
            if in_class:
                if c == "B":
                    raise self.fail("\\B inside a class", at)
                return 8
            return -2
        if c in "XmM":
            raise self.fail(f"\\{c} (what it matches depends on tables mnemo does not hold per version)", at)
        if c == "N":
            j = self.s.find("}", self.i)
            name = self.s[self.i + 1 : j]
            self.i = j + 1
            try:
                return ord(unicodedata.lookup(name))
            except KeyError:
                raise self.fail(f"the named character \\N{{{name}}} (not in Python's Unicode names)", at) from None
        if c in ("x", "u", "U"):
            n = {"x": 2, "u": 4, "U": 8}[c]
            digits = self.s[self.i : self.i + n]
            self.i += n
            return int(digits, 16)
        if c == "0" or (c in "1234567" and len(self.s) >= self.i + 2 and all(d in "01234567" for d in self.s[self.i : self.i + 2])):
            j = self.i
            limit = at + 4
            while j < min(limit, len(self.s)) and self.s[j] in "01234567":
                j += 1
            self.i = j
            return int(self.s[at + 1 : j], 8)
        if c.isdigit() or c == "g":
            if in_class:
                raise self.fail(f"the escape \\{c} inside a class", at)
            if c == "g":
                self.i = self.s.find(">", self.i) + 1
            else:
                while self.peek().isdigit():
                    self.i += 1
            if fold:
                raise self.fail("a backreference under (?i)", at)
            return -1
        if c in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[c]
        if c in "AZzGK" and not in_class:
            return -1
        if c == "Q":
            raise self.fail("\\Q...\\E", at)
        return ord(c)

    def bracket(self, fold: bool) -> _Set:
        start = self.i
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        parts: list[_Part] = []
        first = True
        while True:
            c = self.peek()
            if c == "":
                raise self.fail("an unterminated class", start)
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[" and self.peek(1) in (":", "=", "."):
                raise self.fail("a POSIX class [:...:] (its members depend on tables mnemo does not hold per version)")
            lo = self.class_member(fold)
            if isinstance(lo, _Part):
                parts.append(lo)
                continue
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self.class_member(fold)
                if isinstance(hi, _Part):
                    raise self.fail("a class escape as a range end")
            else:
                hi = lo
            if fold and self.cased(lo, hi):
                raise self.fail(f"the cased characters {chr(lo)!r}..{chr(hi)!r} under (?i) (case folds beyond ASCII are not held per version)")
            parts.append(_Part("cp", lo, hi))
        return _Set(self.s[start : self.i], tuple(parts), negate, fold)

    def class_member(self, fold: bool) -> _Part | int:
        if self.peek() == "\\":
            got = self.escape(fold, in_class=True)
            if isinstance(got, int) and got < 0:
                raise self.fail("an escape that is not a character inside a class")
            return got
        c = self.peek()
        self.i += 1
        return ord(c)


# ---- membership and the rewrite ------------------------------------------------------------


def _ranges(cps: npt.NDArray[np.int64]) -> str:
    """A class body for sorted code points."""
    out: list[str] = []
    vals = cps.tolist()
    k = 0
    while k < len(vals):
        j = k
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(f"\\U{vals[k]:08X}" if j == k else f"\\U{vals[k]:08X}-\\U{vals[j]:08X}")
        k = j + 1
    return "".join(out)


class _Rewriter:
    def __init__(self, version: str) -> None:
        self.u = _universe(version)
        self.native_word = self.probe(r"\w", False)
        self.marks = np.zeros(len(self.u.cps), dtype=np.bool_)
        # each distinct set's rewrite, once: a regex that repeats its branches (a fuzzed file
        # held 1,700 sets, 17 of them distinct) probed every code point for each (2.7 s)
        self.done: dict[tuple[str, bool], str] = {}

    def probe(self, text: str, fold: bool) -> npt.NDArray[np.bool_]:
        """Which universe code points `regex` matches with the set as written."""
        rx = regex.compile(("(?i)" if fold else "") + "(?:" + text + ")")
        found = {ord(ch) for ch in rx.findall(self.u.text)}
        return np.isin(self.u.cps, np.fromiter(found, dtype=np.int64, count=len(found)))

    def reference(self, st: _Set) -> npt.NDArray[np.bool_]:
        """Which universe code points the reference puts in the set."""
        u = self.u
        out = np.zeros(len(u.cps), dtype=np.bool_)
        for part in st.parts:
            if part.kind == "cp":
                got = (u.cps >= part.lo) & (u.cps <= part.hi)
                if st.fold:
                    for cp in range(max(part.lo, 0x41), min(part.hi, 0x7A) + 1):
                        if chr(cp).isalpha():
                            got |= np.isin(u.cps, u.folds.get(chr(cp).lower(), ()))
            elif part.kind == "cat":
                lut = np.array([n in part.names for n in rf.GC_NAMES], dtype=np.bool_)
                got = lut[u.gc]
            elif part.kind == "white":
                got = u.white.copy()
            else:
                lut = np.array([n in _WORD_CATS for n in rf.GC_NAMES], dtype=np.bool_)
                got = np.where(u.word_known, lut[u.gc], self.native_word)
            out |= ~got if part.neg else got
        return ~out if st.negate else out

    def unit(self, st: _Set) -> str:
        key = (st.text, st.fold)
        found = self.done.get(key)
        if found is None:
            found = self.done[key] = self._unit(st)
        return found

    def _unit(self, st: _Set) -> str:
        native = self.probe(st.text, st.fold)
        ref = self.reference(st)
        out, into = native & ~ref, ref & ~native
        if not out.any() and not into.any():
            return st.text
        self.marks |= out | into
        # inside (?i) the correction's classes are read case-sensitively: (?i:[İ]) matches i in `regex`
        wrap = "(?-i:[{}])" if st.fold else "[{}]"
        text = st.text
        if out.any():
            text = f"(?!{wrap.format(_ranges(self.u.cps[out]))}){text}"
        if into.any():
            text = f"{text}|{wrap.format(_ranges(self.u.cps[into]))}"
        return f"(?:{text})"

    def boundary(self, b: _Boundary) -> str:
        w = self.unit(_Set(r"\w", (_Part("word"),), False, b.fold))
        if w == r"\w":
            return b.text
        if b.text == r"\b":
            return f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))"
        return f"(?:(?<={w})(?={w})|(?<!{w})(?!{w}))"


@dataclass(frozen=True)
class Followed:
    """A regex as the reference's tables read it: `text` (the regex itself when no set it holds
    differs) and the code points where it and the regex as written may match differently
    (`marks`, empty then)."""

    text: str
    marks: tuple[int, ...]


def follow(regex_text: str, version: str) -> Followed:
    """The regex rewritten for the Unicode tables `version` (module docstring); NotFollowed for a
    construct this cannot carry over.  The regex must compile with the `regex` module."""
    if version == udata.DEFAULT:
        return Followed(regex_text, ())
    tokens = _Parser(regex_text, version).parse()
    rw = _Rewriter(version)
    parts: list[str] = []
    for tok in tokens:
        if isinstance(tok, _Set):
            parts.append(rw.unit(tok))
        elif isinstance(tok, _Boundary):
            parts.append(rw.boundary(tok))
        else:
            parts.append(tok)
    marks = tuple(rw.u.cps[rw.marks].tolist())
    return Followed("".join(parts) if marks else regex_text, marks)


def numeric_class() -> str:
    """tokenizers' Digits pre-tokenizer as one class: Rust's char::is_numeric, spelt out from
    its probed table (_unicode_data.DIGITS_VERSION)."""
    return f"[{_ranges(np.flatnonzero(rf._numeric()).astype(np.int64))}]"


def marks_program(marks: tuple[int, ...]) -> pt.SplitProgram:
    """The marks as a table the compiled check (pretokenize.marked) reads."""
    atoms = np.zeros(rf.N_CODE_POINTS, dtype=np.uint8)
    atoms[list(marks)] = 1
    stage1, stage2, shift = rf.two_stage(atoms)
    return pt.marks_program(stage1, stage2, shift)


@dataclass(frozen=True, eq=False)
class TableRegex:
    """A regex outside the family on a reference's tables: `native` as written, `rewritten` (None
    when nothing differs) for the texts that hold one of the marks."""

    native: Any
    rewritten: Any
    marks: pt.SplitProgram | None

    def pick(self, text: str) -> Any:
        """The regex to run on `text`: both match it alike unless it holds a mark."""
        if self.marks is None or text.isascii():
            return self.native
        data = text.encode("utf-8", "surrogatepass")
        return self.rewritten if pt.marked(self.marks, data, 0, len(data)) else self.native


def table_regex(regex_text: str, version: str) -> TableRegex:
    """The TableRegex of a regex on the Unicode tables `version`; NotFollowed as follow()."""
    native = regex.compile(regex_text)
    f = follow(regex_text, version)
    if not f.marks:
        return TableRegex(native, None, None)
    return TableRegex(native, regex.compile(f.text), marks_program(f.marks))
