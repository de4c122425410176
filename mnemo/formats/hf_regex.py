r"""Split regexes between Hugging Face's engine and the `regex` module (docs/interop.md).

`tokenizers` compiles a `Split` pattern with Oniguruma in its Ruby syntax; mnemo's patterns,
its reference splitter and its tests use the `regex` module.  The two read some of the same
text differently, and those are the constructs this module rewrites:

| construct        | Oniguruma (Ruby syntax)                | `regex`                          |
| ---------------- | -------------------------------------- | -------------------------------- |
| `X{1,3}+`        | `(?:X{1,3})+`: the interval, repeated  | possessive: `(?>X{1,3})`         |
| `X{2}?`          | `(?:X{2})?`: optional                  | lazy (the same as `X{2}`)        |
| `^`, `$`         | start / end of a line                  | start / end of the text          |
| `\Z`, `\z`       | end (before a final newline), end      | `\Z` is the very end             |
| `(?m)`           | `.` matches a newline                  | `^`/`$` match at lines: `(?s)`   |
| `\h`             | a hex digit                            | (no such class)                  |
| `[a[b]]`, `&&`   | a nested class, an intersection        | a literal `[`, literal `&&`      |

`onig_to_regex` turns a tokenizer.json regex into one the `regex` module matches the same
way (import); `regex_to_onig` does the reverse (export, issue 26 item 6: cl100k's
`\p{N}{1,3}+` exported as is gave other ids on 89 of 300 code documents).  A construct whose
meaning differs and that is not rewritten here -- `\w`, `\b` (Oniguruma's word class differs
from `regex`'s: `\w+` takes "a²b" whole, `[\w]+` does not), backreferences, `\K`, `\G`, inline
flags after the start, conditionals -- raises UnsupportedRegex naming it: a tokenizer.json that
uses one is refused, never read another way.  The two engines' Unicode tables (which code
points `\p{L}` holds) are another matter: mnemo/regex_tables.py.

Plain Python (not compiled): a pattern is rewritten once, when a file is read or written.
"""

from __future__ import annotations

from typing import Final


class UnsupportedRegex(Exception):
    """A construct whose meaning this module cannot carry from one engine to the other."""


_PROPERTY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ =&.-^")
#: escapes both engines read alike, outside and inside a class
_SAME_ESCAPES: Final = frozenset("sSdDnrtfv")
_HEX: Final = "0-9a-fA-F"


def onig_to_regex(pattern: str) -> str:
    """The `regex`-module spelling of an Oniguruma (Ruby syntax) pattern; UnsupportedRegex
    for a construct the two read differently and this module does not rewrite."""
    return _Translator(pattern, to_onig=False).run()


def regex_to_onig(pattern: str) -> str:
    """The Oniguruma spelling of a `regex`-module pattern (what `tokenizers` must be given for
    its Split to cut as `regex` does); UnsupportedRegex as above."""
    return _Translator(pattern, to_onig=True).run()


class _Translator:
    """A recursive walk over a pattern: sequences of items (an atom with its quantifiers),
    groups, classes and escapes.  Each item is kept as its own string so that a quantifier
    can wrap the item it applies to."""

    def __init__(self, pattern: str, to_onig: bool) -> None:
        self.p = pattern
        self.i = 0
        self.to_onig = to_onig

    def fail(self, what: str) -> UnsupportedRegex:
        return UnsupportedRegex(f"{what} at offset {self.i}")

    def run(self) -> str:
        prefix = ""
        flags = self._leading_flags()
        body = self._sequence(top=True)
        if flags:
            prefix = f"(?{flags}:"
            return prefix + body + ")"
        return body

    def _leading_flags(self) -> str:
        """A pattern that starts with `(?i)` (flags for the whole pattern): the flags, translated
        (the body is wrapped in a scoped group instead, which both engines read alike)."""
        p = self.p
        if not p.startswith("(?"):
            return ""
        j = 2
        while j < len(p) and (p[j].isalpha() or p[j] == "-"):
            j += 1
        if j >= len(p) or p[j] != ")" or j == 2:
            return ""
        flags = self._flags(p[2:j])
        self.i = j + 1
        return flags

    def _flags(self, flags: str) -> str:
        out = []
        for f in flags:
            if f == "i" or f == "-":
                out.append(f)
            elif f == "m" and not self.to_onig:
                out.append("s")  # Ruby's m: `.` matches a newline, which is `regex`'s s
            elif f == "s" and self.to_onig:
                out.append("m")
            else:
                raise self.fail(f"the inline flag {f!r}")
        return "".join(out)

    # ---- sequences and groups ----

    def _sequence(self, top: bool) -> str:
        p = self.p
        items: list[str] = []
        can_repeat = False  # is items[-1] something a quantifier may follow?
        while self.i < len(p):
            c = p[self.i]
            if c == ")":
                if top:
                    raise self.fail("an unbalanced ')'")
                return "".join(items)
            if c == "|":
                items.append("|")
                self.i += 1
                can_repeat = False
            elif c == "(":
                group = self._group()
                if group:  # a comment leaves nothing, and what came before keeps its place
                    items.append(group)
                    can_repeat = not group.startswith(("(?=", "(?!", "(?<=", "(?<!"))
            elif c == "[":
                items.append(self._class())
                can_repeat = True
            elif c == "\\":
                text, repeatable = self._escape(in_class=False)
                items.append(text)
                can_repeat = repeatable
            elif c in "*+?{":
                if c == "{" and not self._is_interval():
                    items.append("\\{")
                    self.i += 1
                    can_repeat = True
                    continue
                if not can_repeat or not items:
                    raise self.fail(f"a quantifier {c!r} with nothing to repeat")
                items[-1] = self._quantify(items[-1])
                can_repeat = False
            elif c == "^":
                items.append("\\A" if self.to_onig else "(?m:^)")
                self.i += 1
                can_repeat = False
            elif c == "$":
                items.append("\\Z" if self.to_onig else "(?m:$)")
                self.i += 1
                can_repeat = False
            else:
                items.append(c)
                self.i += 1
                can_repeat = True
        if not top:
            raise self.fail("a '(' that is never closed")
        return "".join(items)

    def _group(self) -> str:
        """A group from its '(' to its ')', inner part translated.  Capturing groups become
        non-capturing (a split uses only the whole match); "" for a comment."""
        p = self.p
        start = self.i
        self.i += 1
        head = "(?:"
        if p.startswith("?", self.i):
            rest = p[self.i :]
            for form in ("?:", "?=", "?!", "?<=", "?<!", "?>"):
                if rest.startswith(form):
                    head = "(" + form
                    self.i += len(form)
                    break
            else:
                if rest.startswith("?#"):
                    end = p.find(")", self.i)
                    if end < 0:
                        raise self.fail("a comment that is never closed")
                    self.i = end + 1
                    return ""
                if rest.startswith(("?<", "?P<")):
                    end = p.find(">", self.i)
                    if end < 0:
                        raise self.fail("a group name that is never closed")
                    self.i = end + 1
                else:
                    j = self.i + 1
                    while j < len(p) and (p[j].isalpha() or p[j] == "-"):
                        j += 1
                    if j < len(p) and p[j] == ":" and j > self.i + 1:
                        head = "(?" + self._flags(p[self.i + 1 : j]) + ":"
                        self.i = j + 1
                    elif j < len(p) and p[j] == ")":
                        self.i = start
                        raise self.fail("inline flags after the start of the pattern")
                    else:
                        self.i = start
                        raise self.fail(f"the group {p[start : start + 4]!r}")
        inner = self._sequence(top=False)
        self.i += 1  # the ')'
        return head + inner + ")"

    # ---- quantifiers ----

    def _is_interval(self) -> bool:
        """Whether the '{' at self.i starts {n}, {n,}, {n,m} or {,m} (both engines read any
        other '{' as a literal)."""
        p = self.p
        end = p.find("}", self.i)
        if end < 0:
            return False
        body = p[self.i + 1 : end]
        lo, comma, hi = body.partition(",")
        if not comma:
            return lo.isdigit() and lo.isascii()
        return (not lo or (lo.isascii() and lo.isdigit())) and (not hi or (hi.isascii() and hi.isdigit())) and bool(lo or hi)

    def _quantify(self, item: str) -> str:
        """`item` with the quantifier at self.i (and its lazy '?' or possessive '+')."""
        p = self.p
        c = p[self.i]
        if c == "{":
            end = p.find("}", self.i)
            q = p[self.i : end + 1]
            self.i = end + 1
            fixed = "," not in q
            nxt = p[self.i] if self.i < len(p) else ""
            if nxt == "+":
                self.i += 1
                if self.to_onig:
                    # regex's possessive interval; Ruby reads `{n,m}+` as the interval repeated
                    return "(?>" + item + q + ")"
                # Oniguruma: the interval, then `+` applied to it (which may itself take ? or +)
                return self._after(f"(?:{item}{q})+")
            if nxt == "?":
                self.i += 1
                if fixed:
                    if self.to_onig:
                        return item + q  # a lazy fixed count is the fixed count
                    return self._after(f"(?:{item}{q})?")  # Ruby: `{n}?` is optional, not lazy
                return item + q + "?"
            return item + q
        self.i += 1
        out = item + c
        if self.i < len(p) and p[self.i] in "?+":
            out += p[self.i]
            self.i += 1
        return out

    def _after(self, item: str) -> str:
        """An item made by a rewrite whose trailing `+` or `?` may itself take a '?' or '+'."""
        p = self.p
        if self.i < len(p) and p[self.i] in "?+":
            item += p[self.i]
            self.i += 1
        return item

    # ---- escapes and classes ----

    def _escape(self, in_class: bool) -> tuple[str, bool]:
        """The escape at self.i, translated, and whether it can take a quantifier."""
        p = self.p
        if self.i + 1 >= len(p):
            raise self.fail("a trailing backslash")
        c = p[self.i + 1]
        self.i += 2
        if c in "pP":
            if self.i < len(p) and p[self.i] == "{":
                end = p.find("}", self.i)
                name = p[self.i + 1 : end] if end > 0 else ""
                if end < 0 or not name or not set(name) <= _PROPERTY_CHARS:
                    raise self.fail("a malformed \\p{...}")
                self.i = end + 1
                return f"\\{c}{{{name}}}", True
            raise self.fail(f"\\{c} without braces")
        if c in _SAME_ESCAPES:
            return "\\" + c, True
        if c == "h" and not self.to_onig:
            return (_HEX if in_class else f"[{_HEX}]"), True
        if c == "H" and not self.to_onig and not in_class:
            return f"[^{_HEX}]", True
        if c == "x":
            if self.i < len(p) and p[self.i] == "{":
                end = p.find("}", self.i)
                digits = p[self.i + 1 : end] if end > 0 else ""
                self.i = end + 1
            else:
                digits = p[self.i : self.i + 2]
                self.i += 2
            return _hex_escape(digits, self), True
        if c == "u":
            digits = p[self.i : self.i + 4]
            self.i += 4
            return _hex_escape(digits, self), True
        if c in "ae":
            return _hex_escape("7" if c == "a" else "1b", self), True
        if not in_class:
            if c == "A":
                return "\\A", False
            if c == "z":
                return ("\\z" if self.to_onig else "\\Z"), False
            if c == "Z":
                return ("\\z" if self.to_onig else "(?=\\n?\\Z)"), False
        if not c.isalnum():
            return "\\" + c, True  # an escaped symbol is that symbol in both
        self.i -= 2
        raise self.fail(f"the escape \\{c}")

    def _class(self) -> str:
        """A character class from its '[' to its ']', translated."""
        p = self.p
        start = self.i
        self.i += 1
        out = ["["]
        if self.i < len(p) and p[self.i] == "^":
            out.append("^")
            self.i += 1
        first = True
        while self.i < len(p):
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                out.append("]")
                return "".join(out)
            first = False
            if c == "\\":
                text, _ = self._escape(in_class=True)
                out.append(text)
            elif c == "[":
                if not self.to_onig:
                    raise self.fail("a nested class or a POSIX bracket ([[:alpha:]])")
                out.append("\\[")  # a literal '[' in regex's class: Oniguruma would nest a class
                self.i += 1
            elif c == "&" and p.startswith("&&", self.i):
                if not self.to_onig:
                    raise self.fail("a class intersection (&&)")
                out.append("\\&\\&")
                self.i += 2
            elif c == "]":  # first: a literal ']' in both
                out.append("\\]")
                self.i += 1
            else:
                out.append(c)
                self.i += 1
        self.i = start
        raise self.fail("a '[' that is never closed")


def _hex_escape(digits: str, t: _Translator) -> str:
    if not digits or len(digits) > 6 or any(d not in "0123456789abcdefABCDEF" for d in digits):
        raise t.fail(f"a malformed hex escape {digits!r}")
    value = int(digits, 16)
    if value > 0x10FFFF:
        raise t.fail(f"the code point {value:#x}, beyond Unicode")
    # Oniguruma reads \x{...}; the `regex` module (as Python's re) \U with eight digits
    return f"\\x{{{value:x}}}" if t.to_onig else f"\\U{value:08x}"
