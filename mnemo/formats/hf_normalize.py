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
    for i, ch in enumerate(text):
        if ord(ch) >= 0x80 and unknown_to_tokenizers(ord(ch)):
            parts.append(unicodedata.normalize(form, text[start:i]))
            parts.append(ch)
            start = i + 1
    parts.append(unicodedata.normalize(form, text[start:]))
    return "".join(parts)


def _has_unknown(text: str) -> bool:
    return any(ord(ch) >= 0x80 and unknown_to_tokenizers(ord(ch)) for ch in text)
