"""NFC and NFKC as `tokenizers` applies them (mnemo/formats/hf_normalize.py).  Oracle:
`tokenizers.normalizers.NFC()/NFKC().normalize_str`."""

from __future__ import annotations

import importlib.util
import random
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from mnemo import FormatError
from mnemo.formats import _hf_unicode
from mnemo.formats.hf_normalize import normalize, parse_normalizer

ROOT = Path(__file__).resolve().parents[2]


def engines() -> dict[str, Any]:
    tokenizers = pytest.importorskip("tokenizers")
    return {"NFC": tokenizers.normalizers.NFC(), "NFKC": tokenizers.normalizers.NFKC()}


def test_the_table_is_what_tokenizers_is_probed_to_be() -> None:
    """The committed table equals a fresh probe of the installed tokenizers (every code point)."""
    tokenizers = pytest.importorskip("tokenizers")
    if unicodedata.unidata_version != _hf_unicode.UNIDATA_VERSION or tokenizers.__version__ != _hf_unicode.TOKENIZERS_VERSION:
        pytest.skip(
            f"the table was probed with Unicode {_hf_unicode.UNIDATA_VERSION} and tokenizers "
            f"{_hf_unicode.TOKENIZERS_VERSION}; here {unicodedata.unidata_version} and {tokenizers.__version__}"
        )
    spec = importlib.util.spec_from_file_location("gen_hf_normalize_table", ROOT / "tools" / "gen_hf_normalize_table.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.render() == (ROOT / "mnemo" / "formats" / "_hf_unicode.py").read_text(encoding="utf-8")


#: characters where the two disagree or normalization acts: combining marks of several classes,
#: characters tokenizers does not know, compatibility characters, Hangul jamo
POOL = (
    "ae\u0301\u0300\u0323\u0316\u0345\u0334\u1ac1\u1abf\U00011930\U00011935\U00011938\u32ff\ufb01"
    "\u2460\u00bd\u1100\u1161\u11a8\uac00\u0041\u030a\u212b\u1e0b\u0307\u00e9\u0065\u0338\u003c"
    "\u0915\u093c\u0958\u09c7\u09be\u0b47\u0b3e\u0dd9\u0dcf\u1025\u102e\u3099\u304b\u30a6\ua7f2"
)


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_random_text_normalizes_as_in_tokenizers(form: str) -> None:
    engine = engines()[form]
    rng = random.Random(26)
    for _ in range(20_000):
        text = "".join(rng.choice(POOL) for _ in range(rng.randint(1, 8)))
        assert normalize((form,), text) == engine.normalize_str(text), [hex(ord(c)) for c in text]


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_every_code_point_alone_and_after_a_letter(form: str) -> None:
    engine = engines()[form]
    for c in range(0x110000):
        if 0xD800 <= c < 0xE000:
            continue
        for text in (chr(c), "a" + chr(c) + "\u0316"):
            assert normalize((form,), text) == engine.normalize_str(text), hex(c)


def test_a_sequence_applies_in_order() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    both = tokenizers.normalizers.Sequence([tokenizers.normalizers.NFKC(), tokenizers.normalizers.NFC()])
    assert parse_normalizer({"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "NFC"}]}, "t") == ("NFKC", "NFC")
    for text in ("\ufb01e\u0301", "\u2460\u0301", "x"):
        assert normalize(("NFKC", "NFC"), text) == both.normalize_str(text)
    assert parse_normalizer({"type": "Sequence", "normalizers": []}, "t") == ()
    assert parse_normalizer(None, "t") == ()


@pytest.mark.parametrize(
    "obj",
    [{"type": "NFD"}, {"type": "Lowercase"}, {"type": "Prepend", "prepend": "\u2581"}, {"type": "Sequence", "normalizers": 5}, 7],
)
def test_other_normalizers_are_refused_by_key(obj: Any) -> None:
    with pytest.raises(FormatError, match=r"t: key 'normalizer"):
        parse_normalizer(obj, "t")


@pytest.mark.parametrize("newer", [False, True])
def test_the_unknown_class_is_unknown_to_tokenizers(newer: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The character class normalize searches a text with names exactly the code points >= 0x80
    that unknown_to_tokenizers names, on every code point; also as it is built on a Python whose
    Unicode is newer than the table's (every code point the table does not assign)."""
    from mnemo.formats import hf_normalize

    monkeypatch.setattr(hf_normalize, "_NEWER", newer)
    bmp, astral = hf_normalize._unknown_patterns()
    monkeypatch.setattr(hf_normalize, "_UNKNOWN_BMP", bmp)
    monkeypatch.setattr(hf_normalize, "_UNKNOWN_ASTRAL", astral)
    every = "".join(map(chr, range(0x110000)))
    want = [c for c in range(0x80, 0x110000) if hf_normalize.unknown_to_tokenizers(c)]
    assert hf_normalize.unknown_positions(every) == want
    assert hf_normalize.unknown_positions(every[:0x10000]) == [c for c in want if c < 0x10000]
    assert hf_normalize._has_unknown(chr(want[-1])) and not hf_normalize._has_unknown("caf\u00e9 \U0001f600")
