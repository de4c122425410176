"""The normalizers of a Hugging Face tokenizer.json that mnemo applies as `tokenizers` does:
none, NFC, NFKC, or a Sequence of these (docs/interop.md).

`tokenizers` normalizes with tables older than Python's `unicodedata` (U+32FF, Unicode 12.1,
is NFKC'd to 令和 by Python and left alone by `tokenizers`).  A code point whose normalization
`tokenizers` does not know (mnemo/formats/_hf_unicode.py, probed from `tokenizers` and
re-probed by the tests) acts there as a character with no normalization data: it stays as it
is, it has canonical class 0, and nothing composes with it -- so nothing reorders or composes
across it either.  `normalize` therefore cuts the text at those code points, normalizes each
part with `unicodedata`, and keeps them as they are.  The same holds for code points the
running Python assigns and the table's Unicode version did not (a newer Python): `tokenizers`
knows them even less.

Other normalizers (NFD, NFKD, Lowercase, Strip, Replace, Prepend, Precompiled, BertNormalizer,
ByteLevel...) are refused with a FormatError naming the key: none of them belongs to the
byte-level BPE family mnemo holds.

Plain Python (not compiled): once per text stretch between added tokens.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from typing import Any, Final, Literal

from mnemo.errors import FormatError
from mnemo.formats import _hf_unicode
from mnemo.formats.common import excerpt

Form = Literal["NFC", "NFKC"]
FORMS: Final[tuple[Form, ...]] = ("NFC", "NFKC")


def _assigned_starts() -> tuple[list[int], list[int]]:
    packed = "".join(_hf_unicode.ASSIGNED)
    starts = [int(packed[k : k + 6], 16) for k in range(0, len(packed), 12)]
    stops = [int(packed[k + 6 : k + 12], 16) for k in range(0, len(packed), 12)]
    return starts, stops


_STARTS, _STOPS = _assigned_starts()
#: the running Python knows characters the table's Unicode version did not
_NEWER: Final = unicodedata.unidata_version != _hf_unicode.UNIDATA_VERSION


def unknown_to_tokenizers(c: int) -> bool:
    """Whether `tokenizers` has no normalization data for code point c that unicodedata has."""
    if c in _hf_unicode.UNKNOWN:
        return True
    if c < 0x80 or not _NEWER:
        return False
    k = bisect.bisect_right(_STARTS, c) - 1
    return k < 0 or c >= _STOPS[k]


def _unknown_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Two character classes that name, together, the code points >= 0x80 unknown_to_tokenizers
    names: those of the Basic Multilingual Plane, and those above it.  A text is searched for
    them at C speed (a generator over its characters took three quarters of the time of an
    English document through the Qwen2 style file's NFC); apart, because `re` scans a class
    holding characters above U+FFFF range by range, ten times slower, so that class is searched
    only in a text that holds such a character (_ASTRAL)."""
    alternatives: list[list[str]] = [[], []]  # per plane
    listed: list[list[str]] = [[], []]
    for c in sorted(_hf_unicode.UNKNOWN):
        if c >= 0x80:
            listed[c > 0xFFFF].append(re.escape(chr(c)))
    for plane in (0, 1):
        if listed[plane]:
            alternatives[plane].append(f"[{''.join(listed[plane])}]")
    if _NEWER:  # also anything >= 0x80 outside the table's assigned ranges (stops exclusive)
        known: list[list[str]] = [[], []]
        for a, b in zip(_STARTS, _STOPS):
            for lo, hi, plane in ((a, min(b, 0x10000), 0), (max(a, 0x10000), b, 1)):
                if hi > lo:
                    known[plane].append(f"{re.escape(chr(lo))}-{re.escape(chr(hi - 1))}")
        alternatives[0].append(f"[^\\x00-\\x7f\\U00010000-\\U0010ffff{''.join(known[0])}]")
        alternatives[1].append(f"[^\\x00-\\uffff{''.join(known[1])}]")
    bmp, astral = ("|".join(a) or "(?!)" for a in alternatives)
    return re.compile(bmp), re.compile(astral)


_UNKNOWN_BMP, _UNKNOWN_ASTRAL = _unknown_patterns()
_ASTRAL: Final = re.compile("[\\U00010000-\\U0010ffff]")


def unknown_positions(text: str) -> list[int]:
    """The indexes of the characters of `text` that unknown_to_tokenizers names, in order."""
    found = [m.start() for m in _UNKNOWN_BMP.finditer(text)]
    if _ASTRAL.search(text) is not None:
        found += [m.start() for m in _UNKNOWN_ASTRAL.finditer(text)]
        found.sort()
    return found


def parse_normalizer(obj: Any, source: str, key: str = "normalizer") -> tuple[Form, ...]:
    """The forms a tokenizer.json normalizer applies, in order (() for none); FormatError
    naming the key for any other normalizer."""
    if obj is None:
        return ()
    kind = obj.get("type") if isinstance(obj, dict) else None
    for form in FORMS:
        if kind == form:
            return (form,)
    if kind == "Sequence":
        steps = obj.get("normalizers")
        if not isinstance(steps, list):
            raise FormatError(f"{source}: key '{key}.normalizers' is {excerpt(steps, 80)}, not a list")
        out: list[Form] = []
        for j, step in enumerate(steps):
            out.extend(parse_normalizer(step, source, f"{key}.normalizers[{j}]"))
            if step is None:
                raise FormatError(f"{source}: key '{key}.normalizers[{j}]' is null")
        return tuple(out)
    raise FormatError(
        f"{source}: key '{key}' is {excerpt(obj, 120)}: mnemo applies the normalizers NFC and NFKC (or a "
        f"Sequence of them) only; this one would change the text in a way mnemo does not reproduce"
    )


def normalize(forms: tuple[Form, ...], text: str) -> str:
    """`text` as the normalizers `forms` leave it in `tokenizers`."""
    for form in forms:
        text = _normalize_one(form, text)
    return text


def _normalize_one(form: Form, text: str) -> str:
    if text.isascii():
        return text  # ASCII is every form's fixed point
    if unicodedata.is_normalized(form, text) and not _has_unknown(text):
        return text
    parts: list[str] = []
    start = 0
    for i in unknown_positions(text):
        parts.append(unicodedata.normalize(form, text[start:i]))
        parts.append(text[i])
        start = i + 1
    parts.append(unicodedata.normalize(form, text[start:]))
    return "".join(parts)


def _has_unknown(text: str) -> bool:
    if _UNKNOWN_BMP.search(text) is not None:
        return True
    return _ASTRAL.search(text) is not None and _UNKNOWN_ASTRAL.search(text) is not None


# ---- where each normalized character comes from (offsets) ----


def normalize_aligned(forms: tuple[Form, ...], text: str) -> tuple[str, list[int]]:
    """`normalize(forms, text)` and, for each of its characters, the index of the character of
    `text` tokenizers aligns it to (-1: none, an offset of (0, 0) there) -- what its offsets
    follow back to the original text.

    tokenizers' normalizer (unicode-normalization-alignments) tags each output character with
    a change: 0 replaces the next input character, +1 is inserted (a decomposition's second
    character...), -n replaces the next one and drops the n after it (a composition).  The
    tags are dealt out in output order whatever reordering happened, which this follows: in
    NFC("a\\u0301\\u0323") the U+0301 left over is aligned to the input's U+0323."""
    index = list(range(len(text)))
    for form in forms:
        if text.isascii():
            continue
        out, tagged = _tagged(form, text)
        ptr = 0
        stage: list[int] = []
        for change in tagged:
            if change > 0:
                stage.append(index[ptr - 1] if ptr > 0 else -1)
            else:
                stage.append(index[ptr] if ptr < len(index) else -1)
                ptr += 1 - change if change < 0 else 1
        text, index = out, stage
    return text, index


def _ccc(ch: str) -> int:
    return 0 if unknown_to_tokenizers(ord(ch)) else unicodedata.combining(ch)


def _tagged(form: Form, text: str) -> tuple[str, list[int]]:
    """The crate's (character, change) stream for one form: decompose each character, order the
    marks canonically (stably, changes travelling with them), then compose (NFC, NFKC)."""
    decomposition: Literal["NFD", "NFKD"] = "NFKD" if form == "NFKC" else "NFD"
    stream: list[list[Any]] = []  # [char, change]
    for ch in text:
        if ord(ch) < 0x80 or unknown_to_tokenizers(ord(ch)):
            stream.append([ch, 0])
            continue
        parts = unicodedata.normalize(decomposition, ch)
        stream.append([parts[0], 0])
        stream.extend([p, 1] for p in parts[1:])
    # canonical ordering: each run of marks sorted by class, stably
    i = 0
    while i < len(stream):
        if _ccc(stream[i][0]) == 0:
            i += 1
            continue
        j = i
        while j < len(stream) and _ccc(stream[j][0]) != 0:
            j += 1
        stream[i:j] = sorted(stream[i:j], key=lambda item: _ccc(item[0]))
        i = j
    # canonical composition
    out: list[list[Any]] = []
    starter = -1
    last_class = 0
    for item in stream:
        ch = item[0]
        klass = _ccc(ch)
        if starter >= 0 and (last_class < klass or last_class == 0):
            composite = _compose(out[starter][0], ch)
            if composite is not None:
                out[starter][0] = composite
                out[starter][1] += item[1] - 1
                continue
        if klass == 0:
            starter = len(out)
        last_class = klass
        if starter < 0 or (klass != 0 and starter == -1):
            last_class = 256
        out.append(item)
    return "".join(c for c, _ in out), [change for _, change in out]


def _compose(first: str, second: str) -> str | None:
    """The primary composite of two characters, if any (NFC of the pair, when it is one
    character and neither is unknown to tokenizers)."""
    if unknown_to_tokenizers(ord(first)) or unknown_to_tokenizers(ord(second)):
        return None
    pair = unicodedata.normalize("NFC", first + second)
    return pair if len(pair) == 1 else None
