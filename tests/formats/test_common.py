"""What the formats share (mnemo/formats/common.py): GPT-2's byte alphabet, the assembler's
bounded time, bounded reads of JSON files; and `mnemo.interop`, which keeps every name it had
when the formats were one module."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemo import FormatError, Tokenizer, interop
from mnemo.formats.common import BYTE_TO_CHAR, MAX_TEXT_FILE_BYTES, bytes_to_unicode
from mnemo.formats.gpt2 import load_gpt2
from mnemo.formats.hf import load_hf, to_hf_json

#: Every public name interop.py had when it held the four formats itself (before mnemo/formats/).
INTEROP_NAMES = """
    BYTE_TO_CHAR CHAR_TO_BYTE GZIP_MAGIC HF_CHAT_ROLES HF_GPT2_REGEX MAX_RANK_DIGITS MAX_TEXT_FILE_BYTES
    PathLike TIKTOKEN_PRESETS assemble bytes_to_unicode from_hf_json from_mergeable_ranks
    from_vocab_merges gpt2_merges gpt2_vocab hf_chat_template load_gpt2 load_hf load_tiktoken
    merges_from_ranks mergeable_ranks parse_merges_txt parse_tiktoken read_tiktoken_bytes save_gpt2
    save_hf save_pretrained save_tiktoken string_to_token tiktoken_args to_hf_json to_tiktoken
    token_to_string
""".split()


def test_interop_keeps_every_name() -> None:
    """`from mnemo import interop` and `interop.X` work as before the split, with the formats'
    own objects; `import mnemo` alone binds mnemo.interop, as it always did."""
    import importlib

    import mnemo

    assert sorted(interop.__all__) == sorted(INTEROP_NAMES)
    owners = ["common", "gpt2", "tiktoken", "hf", "hf_folder", "cs336"]
    modules = [importlib.import_module(f"mnemo.formats.{m}") for m in owners]
    for name in INTEROP_NAMES:
        homes = [m for m in modules if name in vars(m)]
        assert homes, name
        assert all(getattr(m, name) is getattr(interop, name) for m in homes), name
    assert mnemo.interop is interop and mnemo.load_tiktoken is interop.load_tiktoken


def test_bytes_to_unicode_worked_examples() -> None:
    table = bytes_to_unicode()
    # 68 bytes are not printable: 0x00-0x20 (33), 0x7f-0xa0 (34), 0xad (1); they become
    # chr(256), chr(257), ... in byte order.
    assert table[0x00] == chr(256)
    assert table[ord("\n")] == chr(256 + 10) == "Ċ"
    assert table[ord(" ")] == chr(256 + 32) == "Ġ"
    assert table[0x7F] == chr(256 + 33)
    assert table[0xA0] == chr(256 + 33 + 33)
    assert table[0xAD] == chr(256 + 67)
    assert table[ord("!")] == "!" and table[0xA1] == "\u00a1" and table[0xFF] == "\u00ff"
    assert len(set(table.values())) == 256
    assert table == BYTE_TO_CHAR


def test_no_pickle_in_the_formats() -> None:
    package = Path(interop.__file__).parent
    sources = [*package.joinpath("formats").glob("*.py")]
    sources += [package / f"{m}.py" for m in ("interop", "tokenizer", "vocabfile", "tokfile")]
    assert len(sources) > 8
    for path in sources:
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+(c?pickle|marshal|shelve)\b", source, re.M), path.name


def test_many_added_tokens_load_in_linear_time(tmp_path: Path, within: Callable[..., object]) -> None:
    """assemble (mnemo/formats/common.py) checked repeated specials with a list's `in`: 40,000 HF added_tokens
    took 15.6 s."""
    obj = to_hf_json(Tokenizer([(97, 98)], pattern="gpt2", special_tokens=[]))
    n = len(obj["model"]["vocab"])
    obj["added_tokens"] = [{"id": n + j, "content": f"<|t{j}|>", "special": True} for j in range(40_000)]
    path = tmp_path / "many.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    tok = within(lambda: load_hf(path), 10)
    assert isinstance(tok, Tokenizer) and len(tok.special_tokens) == 40_000


@pytest.mark.parametrize("loader", ["hf", "vocab", "merges-vocab"])
def test_deeply_nested_json_is_a_format_error(tmp_path: Path, loader: str) -> None:
    """'[' * 100000 raised RecursionError from json.loads."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000, encoding="utf-8")
    other = tmp_path / "m.txt"
    other.write_text("", encoding="utf-8")
    with pytest.raises(FormatError, match=r"deep.json: the JSON is nested too deeply to read"):
        if loader == "hf":
            load_hf(deep)
        else:
            load_gpt2(deep, other)
    nested = tmp_path / "nested.json"  # deep, but inside a valid object
    nested.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(FormatError, match=r"nested.json: the JSON is nested too deeply"):
        load_hf(nested) if loader == "hf" else load_gpt2(nested, other)


def test_a_huge_format_file_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.truncate(MAX_TEXT_FILE_BYTES + 1)  # sparse
    with pytest.raises(FormatError, match=r"huge.json: larger than 67,108,864 bytes, the most mnemo reads as a tokenizer.json"):
        load_hf(path)
