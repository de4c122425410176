r"""The pre-tokenizer of a Hugging Face tokenizer.json of the byte-level BPE family, as split
steps mnemo runs the way `tokenizers` does (docs/interop.md).

`parse_pre_tokenizer` reads the `pre_tokenizer` key into a tuple of steps:

* `Split` (`pattern` a Regex or a String, `behavior` Removed, Isolated, MergedWithPrevious,
  MergedWithNext or Contiguous, `invert`): the regex is Oniguruma's, rewritten for the `regex`
  module (mnemo/formats/hf_regex.py; a construct the two read differently is refused);
* `Digits` (`individual_digits`): a Split on each numeric character (Rust's char::is_numeric,
  \p{N}), Isolated or, without individual_digits, Contiguous;
* `ByteLevel` (`add_prefix_space`, `use_regex`), which must come last: each piece gets a space
  in front unless it starts with one, then (use_regex) GPT-2's split, then bytes;
* `Sequence` of these, flattened.

Any other pre-tokenizer (Metaspace, Whitespace, BertPreTokenizer, Punctuation, ...) is refused
with a FormatError naming the key: the byte-level family has ByteLevel last, and mnemo's
encoder works on bytes.

`Runner` runs the steps on one stretch of text (what `tokenizers` gives its model).  When every
step can be -- no space put in front (ByteLevel's add_prefix_space), no Removed behavior, each
regex in the family mnemo compiles -- it runs them as one pattern in mnemo's scanner, on the
Unicode tables tokenizers itself holds (`compiled_pattern`; the `regex` module's are newer, and
would split letters new since Unicode 16 otherwise than tokenizers).  Otherwise it runs them in
plain Python with the `regex` module, on tokenizers' tables too (mnemo/regex_tables.py rewrites
each regex where the `regex` module's differ; Digits is char::is_numeric spelt out): the
reference the tests compare with `tokenizers`.
Semantics, as tokenizers' pre_tokenizers/*.rs and normalizer.rs have them: a step runs on each
piece the previous steps left; a regex is searched as Oniguruma's find_iter does (an empty
match right where the previous match ended is skipped); behaviors fold the (piece, is-match)
list as NormalizedString::split does; empty pieces are dropped.

Plain Python (not compiled).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

import regex

from mnemo import _unicode_data as udata
from mnemo import patterns as P
from mnemo import regex_tables as rt
from mnemo.checks import pattern_too_long
from mnemo.errors import ConfigError, FormatError
from mnemo.formats.common import excerpt
from mnemo.formats.hf_regex import UnsupportedRegex, onig_to_regex

#: tokenizers' ByteLevel regex (pre_tokenizers/byte_level.rs), which Oniguruma and `regex` read alike
BYTE_LEVEL_REGEX: Final = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: the Unicode tables tokenizers' Oniguruma holds (its Split's classes)
TOKENIZERS_UNICODE: Final = udata.ENGINES["tokenizers"]

BEHAVIORS: Final = {
    "Removed": "removed",
    "Isolated": "isolated",
    "MergedWithPrevious": "merged_with_previous",
    "MergedWithNext": "merged_with_next",
    "Contiguous": "contiguous",
}


@dataclass(frozen=True)
class Step:
    """One step: kind "split" (regex, behavior, invert) or "prefix" (ByteLevel's
    add_prefix_space).  `regex` is in the `regex` module's syntax; `source` is the regex as
    the file spells it, and `key` where it is in the file."""

    kind: str
    regex: str = ""
    behavior: str = "isolated"
    invert: bool = False
    source: str = ""
    key: str = ""
    digits: bool = False  # a Digits pre-tokenizer (Rust's char::is_numeric, not the regex's \p{N})


@dataclass(frozen=True)
class PreTokenizer:
    steps: tuple[Step, ...]
    #: the pieces are bytes-mapped at the end (ByteLevel last): always true once parsed
    byte_level: bool = True

    @property
    def prefix_space(self) -> bool:
        return any(s.kind == "prefix" for s in self.steps)


def _not_byte_level(source: str, key: str, value: Any, why: str) -> FormatError:
    return FormatError(f"{source}: key '{key}' is {excerpt(value, 160)}: {why}")


def parse_pre_tokenizer(obj: Any, source: str) -> PreTokenizer:
    """The steps of tokenizer.json's `pre_tokenizer` (module docstring); FormatError naming the
    key of anything else."""
    flat: list[tuple[str, Any]] = []
    _flatten(obj, "pre_tokenizer", source, flat)
    steps: list[Step] = []
    byte_level_at = -1
    for n, (key, item) in enumerate(flat):
        kind = item.get("type")
        if byte_level_at >= 0:
            raise _not_byte_level(
                source, key, item, "a pre-tokenizer after ByteLevel: mnemo runs byte-level BPE, where ByteLevel comes last"
            )
        if kind == "Split":
            steps.append(_split(item, key, source))
        elif kind == "Digits":
            individual = item.get("individual_digits", False)
            if not isinstance(individual, bool):
                raise _not_byte_level(source, f"{key}.individual_digits", individual, "not true or false")
            steps.append(Step("split", r"\p{N}", "isolated" if individual else "contiguous", False, r"\p{N}", key, True))
        elif kind == "ByteLevel":
            byte_level_at = n
            prefix = item.get("add_prefix_space", True)
            use_regex = item.get("use_regex", True)
            for name, value in (("add_prefix_space", prefix), ("use_regex", use_regex)):
                if not isinstance(value, bool):
                    raise _not_byte_level(source, f"{key}.{name}", value, "not true or false")
            if prefix:
                steps.append(Step("prefix", key=key))
            if use_regex:
                steps.append(Step("split", BYTE_LEVEL_REGEX, "isolated", False, BYTE_LEVEL_REGEX, key))
        else:
            raise _not_byte_level(
                source,
                key,
                item,
                "mnemo imports byte-level BPE, whose pre-tokenizer is Split, Digits and ByteLevel (last), "
                "or a Sequence of them",
            )
    if byte_level_at < 0:
        raise _not_byte_level(
            source, "pre_tokenizer", obj, "no ByteLevel pre-tokenizer: this is not a byte-level BPE tokenizer"
        )
    return PreTokenizer(tuple(steps))


def _flatten(obj: Any, key: str, source: str, out: list[tuple[str, Any]]) -> None:
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise _not_byte_level(source, key, obj, "not a pre-tokenizer object with a 'type'")
    if obj["type"] == "Sequence":
        items = obj.get("pretokenizers")
        if not isinstance(items, list):
            raise _not_byte_level(source, f"{key}.pretokenizers", items, "not a list")
        for j, item in enumerate(items):
            _flatten(item, f"{key}.pretokenizers[{j}]", source, out)
        return
    out.append((key, obj))


def _split(item: dict[str, Any], key: str, source: str) -> Step:
    pattern = item.get("pattern")
    behavior = item.get("behavior")
    invert = item.get("invert", False)
    if not isinstance(behavior, str) or behavior not in BEHAVIORS:
        raise _not_byte_level(source, f"{key}.behavior", behavior, f"not one of {', '.join(BEHAVIORS)}")
    if not isinstance(invert, bool):
        raise _not_byte_level(source, f"{key}.invert", invert, "not true or false")
    if isinstance(pattern, dict) and len(pattern) == 1 and isinstance(pattern.get("String"), str):
        literal = pattern["String"]
        # tokenizers escapes the string for Oniguruma (regex::escape): a literal match; an empty
        # string matches nowhere there (Pattern for &str), which an impossible regex spells here
        text = regex.escape(literal) if literal else r"(?!)"
        return Step("split", text, BEHAVIORS[behavior], invert, literal, f"{key}.pattern.String")
    if not isinstance(pattern, dict) or len(pattern) != 1 or not isinstance(pattern.get("Regex"), str):
        raise _not_byte_level(source, f"{key}.pattern", pattern, 'not {"Regex": "..."} or {"String": "..."}')
    onig = pattern["Regex"]
    where = f"{key}.pattern.Regex"
    too_long = pattern_too_long(onig)  # before seconds of translating
    if too_long is not None:
        raise FormatError(f"{source}: key '{where}' is a regex {too_long}: not read")
    try:
        translated = onig_to_regex(onig)
        regex.compile(translated)
    except UnsupportedRegex as exc:
        raise FormatError(
            f"{source}: key '{where}' is {onig!r}: {exc}, which Hugging Face's engine (Oniguruma) reads "
            f"otherwise than the regex module mnemo runs: refused rather than read another way"
        ) from None
    except regex.error as exc:
        raise FormatError(f"{source}: key '{where}' is {onig!r}, which does not compile ({exc})") from None
    return Step("split", translated, BEHAVIORS[behavior], invert, onig, where)


# ---- the plain-Python run of the steps ----

Span = tuple[int, int, bool]  # (start, end) in the stretch's text, and whether a space is put in front


def _find_matches(rx: regex.Pattern[str], text: str) -> list[tuple[int, int, bool]]:
    """tokenizers' Pattern::find_matches on `text` (the piece alone: no lookbehind before it, no
    lookahead after it, `^` at its start): (start, end, is_match) covering it, matches found as
    Oniguruma's find_iter finds them (an empty match where the previous match ended is skipped,
    and the search moves one character on)."""
    end = len(text)
    if end == 0:
        return [(0, 0, False)]
    out: list[tuple[int, int, bool]] = []
    prev = 0
    # finditer finds what find_iter finds as long as no match is empty (the two engines differ
    # only in where they allow an empty match): the common case, taken first
    for m in rx.finditer(text):
        s, e = m.span()
        if s == e:
            return _find_matches_exact(rx, text)
        if prev != s:
            out.append((prev, s, False))
        out.append((s, e, True))
        prev = e
    if prev != end:
        out.append((prev, end, False))
    return out


def _find_matches_exact(rx: regex.Pattern[str], text: str) -> list[tuple[int, int, bool]]:
    end = len(text)
    out: list[tuple[int, int, bool]] = []
    prev = 0
    pos = 0
    last_end = -1
    while pos <= end:
        m = rx.search(text, pos)
        if m is None:
            break
        s, e = m.span()
        if s == e and e == last_end:
            pos = s + 1
            continue
        if prev != s:
            out.append((prev, s, False))
        out.append((s, e, True))
        prev = e
        pos = e
        last_end = e
    if prev != end:
        out.append((prev, end, False))
    return out


def _isolated(rx: regex.Pattern[str], text: str) -> list[str] | None:
    """The pieces of an Isolated, not inverted split of `text` (non-empty), or None when a
    match is empty (then _find_matches' exact walk decides)."""
    out: list[str] = []
    prev = 0
    for m in rx.finditer(text):
        s, e = m.span()
        if s == e:
            return None
        if s > prev:
            out.append(text[prev:s])
        out.append(m.group())
        prev = e
    if prev < len(text):
        out.append(text[prev:])
    return out


def _fold(matches: list[tuple[int, int, bool]], behavior: str) -> list[tuple[int, int]]:
    """NormalizedString::split's behaviors on the (start, end, is_match) list."""
    if behavior == "isolated":
        return [(s, e) for s, e, _ in matches]
    if behavior == "removed":
        return [(s, e) for s, e, is_match in matches if not is_match]
    acc: list[list[int]] = []
    if behavior == "contiguous":
        previous = False
        for s, e, is_match in matches:
            if is_match == previous and acc:
                acc[-1][1] = e
            else:
                acc.append([s, e])
            previous = is_match
        return [(a, b) for a, b in acc]
    if behavior == "merged_with_previous":
        previous = False
        for s, e, is_match in matches:
            if is_match and not previous and acc:
                acc[-1][1] = e
            else:
                acc.append([s, e])
            previous = is_match
        return [(a, b) for a, b in acc]
    # merged_with_next: the same fold from the right
    previous = False
    for s, e, is_match in reversed(matches):
        if is_match and not previous and acc:
            acc[-1][0] = s
        else:
            acc.append([s, e])
        previous = is_match
    return [(a, b) for a, b in reversed(acc)]


def compiled_pattern(pre: PreTokenizer) -> P.SplitPattern | None:
    """The steps as one pattern of mnemo's scanner on tokenizers' Unicode tables, or None when
    one cannot be (module docstring)."""
    steps: list[P.SplitStep] = []
    for s in pre.steps:
        if s.kind != "split" or s.behavior not in P.BEHAVIORS:
            return None
        steps.append(P.SplitStep(s.regex, s.behavior, s.invert, "digits" if s.digits else "regex"))
    try:  # strict: a step `regex` cannot run on tokenizers' tables is a ConfigError
        pattern = P.compile_steps(steps, "tokenizers")
    except ConfigError:
        return None
    # a step outside the family runs in plain Python (Runner.split_in_python: Oniguruma's empty
    # matches and every behavior), on tokenizers' tables too
    return pattern if pattern.engine == "scanner" else None


class Runner:
    """The steps of a PreTokenizer, compiled into mnemo's scanner or run in plain Python."""

    def __init__(self, pre: PreTokenizer) -> None:
        self.pre = pre
        self.pattern = compiled_pattern(pre)
        #: why a step runs on the `regex` module's own Unicode tables, not tokenizers' ("": none does)
        self.off_table = ""

    @cached_property
    def compiled(self) -> list[rt.TableRegex | None]:
        """Each step's regex on tokenizers' Unicode tables (None for the prefix step), compiled
        when first asked for: a pre-tokenizer that compiles into the scanner runs none of them.
        A Digits step is Rust's char::is_numeric spelt out (its own Unicode version); a regex
        step is rewritten where the `regex` module's tables differ (mnemo/regex_tables.py), or,
        holding what cannot be rewritten (a script property, say), runs on `regex`'s own."""
        out: list[rt.TableRegex | None] = []
        for s in self.pre.steps:
            if s.kind != "split":
                out.append(None)
            elif s.digits:
                out.append(rt.TableRegex(regex.compile(rt.numeric_class()), None, None))
            else:
                try:
                    out.append(rt.table_regex(s.regex, TOKENIZERS_UNICODE))
                except rt.NotFollowed as err:
                    self.off_table = self.off_table or f"{s.key}: {err}"
                    out.append(rt.TableRegex(regex.compile(s.regex), None, None))
        return out

    def split(self, text: str) -> list[str]:
        """The pieces of one stretch of text, as `tokenizers` hands them to its model (before
        the byte mapping): a prefixed piece starts with the space put in front of it.  The
        same pieces as `spans`, made faster (no offsets kept)."""
        if self.pattern is not None:
            return P.split(text, self.pattern)
        return self.split_in_python(text)

    def split_in_python(self, text: str) -> list[str]:
        """`split` by the `regex` module, step by step (the plain-Python reference)."""
        pieces = [text] if text else []
        for step, tr in zip(self.pre.steps, self.compiled):
            rx = None if tr is None else tr.pick(text)
            out: list[str] = []
            if rx is None:
                for piece in pieces:
                    out.append(piece if piece.startswith(" ") else " " + piece)
                pieces = out
                continue
            simple = step.behavior == "isolated" and not step.invert
            for piece in pieces:
                found = _isolated(rx, piece) if simple else None
                if found is None:
                    matches = _find_matches(rx, piece)
                    if step.invert:
                        matches = [(a, b, not m) for a, b, m in matches]
                    found = [piece[a:b] for a, b in _fold(matches, step.behavior) if b > a]
                out.extend(found)
            pieces = out
        return pieces

    def spans(self, text: str) -> list[Span]:
        """The pieces as (start, end, prefixed): text[start:end], with a space in front when
        `prefixed` (ByteLevel's add_prefix_space put it there)."""
        if self.pattern is not None:
            spans: list[Span] = []
            at = 0
            for piece in P.split(text, self.pattern):
                spans.append((at, at + len(piece), False))
                at += len(piece)
            return spans
        pieces: list[Span] = [(0, len(text), False)] if text else []
        for step, tr in zip(self.pre.steps, self.compiled):
            rx = None if tr is None else tr.pick(text)
            out: list[Span] = []
            if rx is None:  # the prefix step: a space in front of each piece that lacks one
                for s, e, p in pieces:
                    out.append((s, e, p or text[s] != " "))
                pieces = out
                continue
            for s, e, p in pieces:
                # the step sees the piece alone, with the space put in front of it if any
                piece = (" " if p else "") + text[s:e]
                shift = s - 1 if p else s
                matches = _find_matches(rx, piece)
                if step.invert:
                    matches = [(a, b, not m) for a, b, m in matches]
                for a, b in _fold(matches, step.behavior):
                    if b > a:
                        if p and a == 0:
                            out.append((s, shift + b, True))
                        else:
                            out.append((shift + a, shift + b, False))
            pieces = out
        return [(s, e, p) for s, e, p in pieces if e > s or p]
