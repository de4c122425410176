"""A tokenizer.json read in parts (mnemo/formats/hf_file.py over the compiled
mnemo/tokenizer_json.py) against the same file read whole by json.loads.

The oracle is the way every tokenizer.json took before: `from_json(load_json(path))`.  Whatever
the bytes, loading through `mnemo.load` must give the same tokenizer or the same error (type and
message), and the plain case must really take the compiled way (else its speed is not there).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mnemo
from mnemo import Tokenizer
from mnemo.errors import MnemoError
from mnemo.formats import hf_file, hf_pipeline
from mnemo.formats.hf_added import parse_added_tokens
from mnemo.formats.hf import to_hf_json
from mnemo.formats.hf_file import read_json_file
from mnemo.formats.hf_pipeline import HFTokenizer, _alphabet_merges
from librt.vecs import vec
from mypy_extensions import i64

from mnemo.encode_chunk import spell_merges
from mnemo.tokenizer_json import model_spans, read_vocab, skip_brackets, skip_brackets_bytes

SAMPLE = "Hello <|endoftext|> world: the 12,345 cats' naïve café — 東京 \n\n  end"


@pytest.fixture(scope="module")
def small() -> Tokenizer:
    """A small vocabulary with a special token, trained here (no corpus needed)."""
    text = (
        "the cat sat on the mat; the dog sat on the log. 12 345 6789 naïve café 東京 東京 — "
        "don't won't they're we've I'll   spaces\n\nnew lines\tand tabs\n"
    )
    return mnemo.train_from_iterator(iter([text] * 40), vocab_size=420, workers=1)


def write(path: Path, obj: Any, **dump: Any) -> Path:
    path.write_bytes(json.dumps(obj, **dump).encode("utf-8"))
    return path


def outcome(make: Callable[[], Any]) -> tuple[Any, ...]:
    """What a load gives, comparably: the error's type and message, or the tokenizer's kind,
    fingerprint, special tokens and ids of a sample."""
    try:
        tok = make()
    except (MnemoError, ValueError) as exc:
        return ("error", type(exc).__name__, str(exc))
    if isinstance(tok, HFTokenizer):  # its JSON too: read in parts, it is put back when needed
        return ("hf", tok.encode(SAMPLE, allowed_special="all"), tok.n_vocab, tok.fingerprint, tok.to_hf_json())
    return ("plain", tok.fingerprint, sorted(tok.special_tokens.items()), tok.encode(SAMPLE, allowed_special="all"))


def both(path: Path) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """mnemo.load of one file, and the oracle: the same with the compiled walk declining every
    file, so that json.loads reads each whole."""
    where = str(path)
    fast = outcome(lambda: mnemo.load(where))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hf_file, "model_spans", lambda data: None)
        whole = outcome(lambda: mnemo.load(where))
    return fast, whole


def plain_taken(path: Path) -> bool:
    """Whether mnemo.load read the file's vocab and merges the compiled way."""
    taken: list[bool] = []
    real = hf_pipeline._scanned_vocabulary

    def spy(*args: Any) -> Any:
        got = real(*args)
        taken.append(got is not None)
        return got

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hf_pipeline, "_scanned_vocabulary", spy)
        mnemo.load(str(path))
    return taken == [True]


# ---- files as writers write them ----


@pytest.mark.parametrize(
    "dump",
    [
        {},
        {"ensure_ascii": False, "indent": 1},
        {"ensure_ascii": True, "indent": 4},
        {"separators": (",", ":")},
        {"ensure_ascii": False, "indent": "\t", "sort_keys": True},
    ],
    ids=["default", "indent1", "ascii-indent4", "compact", "tabs-sorted"],
)
@pytest.mark.parametrize("merges_as", ["lists", "strings"])
def test_a_file_in_parts_loads_as_the_whole_file(small: Tokenizer, tmp_path: Path, dump: dict[str, Any], merges_as: str) -> None:
    obj = to_hf_json(small)
    if merges_as == "strings":
        obj["model"]["merges"] = [f"{a} {b}" for a, b in obj["model"]["merges"]]
    path = write(tmp_path / "tokenizer.json", obj, **dump)
    fast, whole = both(path)
    assert fast == whole
    assert fast[0] == "plain" and fast[3] == small.encode(SAMPLE, allowed_special="all")
    assert plain_taken(path)


def test_the_gpt2_vocabulary_in_parts(gpt2: Tokenizer, tmp_path: Path) -> None:
    path = write(tmp_path / "tokenizer.json", to_hf_json(gpt2), ensure_ascii=False, indent=1)
    assert plain_taken(path)
    tok = mnemo.load(str(path))
    assert isinstance(tok, Tokenizer) and tok.merges == gpt2.merges and tok.id_map == gpt2.id_map
    assert both(path)[0] == both(path)[1]


def test_model_first_and_vocab_after_merges(small: Tokenizer, tmp_path: Path) -> None:
    obj = to_hf_json(small)
    model = obj.pop("model")
    reordered = {"model": {"merges": model.pop("merges"), **model}, **obj}
    path = write(tmp_path / "tokenizer.json", reordered)
    assert plain_taken(path)
    fast, whole = both(path)
    assert fast == whole and fast[0] == "plain"


def test_filled_object_is_json_loads_of_the_file(small: Tokenizer, tmp_path: Path) -> None:
    path = write(tmp_path / "tokenizer.json", to_hf_json(small), ensure_ascii=True, indent=2)
    obj, scanned = read_json_file(path, "tokenizer.json")
    assert scanned is not None and obj["model"]["vocab"] == {} and obj["model"]["merges"] == []
    scanned.fill(obj)
    assert obj == json.loads(path.read_text(encoding="utf-8"))
    assert list(obj["model"]) == list(json.loads(path.read_text(encoding="utf-8"))["model"])


def test_the_compiled_merges_are_the_string_ways(small: Tokenizer, tmp_path: Path) -> None:
    """alphabet_merges on the bytes gives _alphabet_merges' answer on the parsed strings."""
    obj = to_hf_json(small)
    path = write(tmp_path / "tokenizer.json", obj, ensure_ascii=False)
    _, scanned = read_json_file(path, "tokenizer.json")
    assert scanned is not None
    plain = scanned.read(False, parse_added_tokens(obj["added_tokens"], "test"))
    assert plain is not None
    contents = {token["content"] for token in obj["added_tokens"]}
    found = _alphabet_merges(obj["model"]["vocab"], obj["model"]["merges"], contents)
    assert found is not None
    pairs, public, keys = found
    assert plain.pairs == pairs and plain.public == public
    assert [key.decode("utf-8") for key in plain.public_keys()] == keys
    # the tokens' bytes decoded from their keys are what the encoder spells from the merges
    assert scanned.spelled(plain) == spell_merges(vec[i64]([a for a, _ in pairs]), vec[i64]([b for _, b in pairs]))


def test_the_walk_skips_the_model_values_without_checking_their_strings() -> None:
    """skip_brackets finds where model.vocab and model.merges end by their quotes alone (an
    escaped quote or bracket inside a string does not end it); what reads them checks them, so
    a bad string there is found later (by read_vocab, then json.loads of the whole file)."""
    text = r'{"model": {"vocab": {"a\"}]": 0, "\u00e9": 1, "b\\": 2}, "merges": [["a\"}]", "]["]], "x": "}"}}'
    data = text.encode("utf-8")
    spans = model_spans(data)
    assert spans is not None
    assert json.loads(data[spans.vocab_start : spans.vocab_end]) == {'a"}]': 0, "\u00e9": 1, "b\\": 2}
    assert json.loads(data[spans.merges_start : spans.merges_end]) == [['a"}]', "]["]]
    bad = b'{"model": {"vocab": {"a\x01": 0}, "merges": []}}'
    spans = model_spans(bad)
    assert spans is not None and read_vocab(bad, spans) is None


#: bytes the word-at-a-time walk must tell apart: its six marks, bytes whose low seven bits or
#: whose fold (| 0x20) spell one of them, and the indentation it skips
WALK_BYTES = list(b'"\\[]{}| a\n,') + [0x02, 0x1B, 0x3B, 0x5B | 0x80, 0xA2, 0xDC, 0xDD, 0xFB, 0xFD]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(WALK_BYTES), min_size=1, max_size=60), st.data())
def test_the_walk_skips_as_its_byte_loop(chosen: list[int], data: st.DataObject) -> None:
    """skip_brackets (eight bytes at a time) ends where skip_brackets_bytes (its twin, a byte at
    a time) ends, or fails where it fails, from any start in any bytes."""
    text = bytes(chosen)
    start = data.draw(st.integers(0, len(text) - 1))
    assert skip_brackets(text, start, len(text)) == skip_brackets_bytes(text, start, len(text))


def test_the_walk_over_a_pretty_printed_file(small: Tokenizer) -> None:
    """Long runs with no mark (the indentation) and marks at every place in a word."""
    for indent in (None, 1, 2, 7, 8, 9):
        text = json.dumps(to_hf_json(small), indent=indent, ensure_ascii=False).encode("utf-8")
        spans = model_spans(text)
        assert spans is not None
        for start in (spans.vocab_start, spans.merges_start):
            end = skip_brackets(text, start, len(text))
            assert end == skip_brackets_bytes(text, start, len(text)) and end > start
            json.loads(text[start:end])


@pytest.mark.parametrize("extra", ["lstrip", "nfc", "folder"])
def test_a_pipeline_keeps_the_whole_json(small: Tokenizer, tmp_path: Path, extra: str) -> None:
    """A file that is more than a plain Tokenizer (an added token with lstrip, a normalizer, a
    transformers folder) is an HFTokenizer whose core is read the compiled way and whose JSON,
    put back when first needed, is the file's as json.loads gives it."""
    obj = to_hf_json(small)
    if extra == "lstrip":
        obj["added_tokens"][0]["lstrip"] = True
    if extra == "nfc":
        obj["normalizer"] = {"type": "NFC"}
    path = write(tmp_path / "tokenizer.json", obj, ensure_ascii=False)
    where = tmp_path if extra == "folder" else path
    fast, whole = both(where)
    assert fast == whole and fast[0] == "hf"
    assert plain_taken(where)
    tok = mnemo.load(str(where))
    assert isinstance(tok, HFTokenizer)
    # what workers rebuild it from: the whole file, read again the same two ways
    rebuilt = HFTokenizer._from_worker_image(tok._for_workers())
    assert rebuilt.encode(SAMPLE, allowed_special="all") == tok.encode(SAMPLE, allowed_special="all")
    assert rebuilt.to_hf_json() == obj and rebuilt.fingerprint == tok.fingerprint
    tok.save_hf(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text(encoding="utf-8")) == obj


# ---- the walk declines what it is not sure of ----


@pytest.mark.parametrize(
    "text",
    [
        '{"model": {"vocab": {}, "merges": []}, "model": {"vocab": {}, "merges": []}}',
        '{"mod\\u0065l": {"vocab": {}, "merges": []}}',
        '{"model": {"vocab": {}, "vocab": {}, "merges": []}}',
        '{"model": {"voc\\u0061b": {}, "merges": []}}',
        '{"model": {"vocab": [], "merges": []}}',
        '{"model": {"vocab": {}, "merges": {}}}',
        '{"model": {"merges": []}}',
        '[{"model": {"vocab": {}, "merges": []}}]',
        '\ufeff{"model": {"vocab": {}, "merges": []}}',
        '{"model": {"vocab": {}, "merges": []}} x',
        '{"model": {"vocab": {}, "merges": []}',
        '{"model": {"vocab": {"a": 1}, "merges": ["a a"] }, "x": "\\ud800"}',
    ],
)
def test_the_walk_declines(text: str) -> None:
    """The walk declines these; with model.merges' end taken from the end of the text, it
    declines them too or takes an end that the walk over the array disproves (two "model"
    members: the second one's ']' ends the text), so the file is parsed whole."""
    data = text.encode("utf-8")
    assert model_spans(data, guess=False) is None
    spans = model_spans(data)
    assert spans is None or (
        spans.guessed and skip_brackets(data, spans.merges_start, len(data)) != spans.merges_end
    )


def test_the_walk_finds_the_values() -> None:
    text = '{"a": [1, {"model": 2}], "model": {"b": "}]", "vocab": {"x": 0} , "merges": [["x","x"]]}, "c": null}'
    spans = model_spans(text.encode("utf-8"))
    assert spans is not None
    data = text.encode("utf-8")
    assert json.loads(data[spans.vocab_start : spans.vocab_end]) == {"x": 0}
    assert json.loads(data[spans.merges_start : spans.merges_end]) == [["x", "x"]]


# ---- any bytes: the same tokenizer or the same error ----

PALETTE = list(b'{}[]:," \\\n0123456789-.eEtrufalsn') + [0x00, 0xC3, 0xA9, 0xFF, 0xE2]


@st.composite
def edits(draw: st.DrawFn, size: int) -> list[tuple[int, int, bytes]]:
    """A few edits (position, bytes removed, bytes inserted) of a file of `size` bytes."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, size - 1))
        cut = draw(st.integers(0, 4))
        put = bytes(draw(st.lists(st.sampled_from(PALETTE), max_size=3)))
        out.append((at, cut, put))
    return out


def apply(data: bytes, changes: list[tuple[int, int, bytes]]) -> bytes:
    for at, cut, put in sorted(changes, reverse=True):
        data = data[:at] + put + data[at + cut :]
    return data


def converted_file(tok: Tokenizer, folder: Path) -> Path:
    """`tok`'s vocabulary as ranks, converted to tokenizer.json by transformers' TikTokenConverter
    (the layout of Llama 3's: ignore_merges, every pair that spells a token listed)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install '.[test]')")
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = folder / "tokenizer.model"
    tokens = tok.token_byte_values()
    ordered = sorted(tokens, key=lambda raw: tok.encode_single_token(raw))
    ranks.write_bytes(b"".join(base64.b64encode(raw) + b" %d\n" % r for r, raw in enumerate(ordered)))
    path = folder / "tokenizer.json"
    TikTokenConverter(vocab_file=str(ranks), pattern=tok.split_pattern.regex, extra_special_tokens=["<|eot|>"]).converted().save(
        str(path)
    )
    return path


def test_a_converted_file_in_parts(small: Tokenizer, tmp_path: Path) -> None:
    path = converted_file(small, tmp_path)
    assert json.loads(path.read_text(encoding="utf-8"))["model"]["ignore_merges"] is True
    fast, whole = both(path)
    assert fast == whole and fast[0] == "plain"
    assert plain_taken(path)


def test_a_converted_file_without_one_listed_pair(small: Tokenizer, tmp_path: Path) -> None:
    """Each token with several listed pairs, each pair taken out in turn: the compiled check
    (which knows a token's one pair by the length of its left part) and the whole-file way
    agree on every file, and the compiled way declines exactly the files that lack a token's
    one pair (the first of them refused as the other way refuses it)."""
    obj = json.loads(converted_file(small, tmp_path).read_text(encoding="utf-8"))
    merges = obj["model"]["merges"]
    spelled = ["".join(m) if isinstance(m, list) else m.replace(" ", "") for m in merges]
    several = [t for t in dict.fromkeys(spelled) if spelled.count(t) > 1][:6]
    assert several
    declined = 0
    for target in several:
        for k in [k for k, t in enumerate(spelled) if t == target]:
            obj["model"]["merges"] = merges[:k] + merges[k + 1 :]
            path = write(tmp_path / "edited.json", obj)
            fast, whole = both(path)
            assert fast == whole
            declined += not plain_taken(path) if fast[0] != "error" else 1
    assert declined == len(several)


@pytest.fixture(scope="module", params=["plain", "converted"])
def compact(request: pytest.FixtureRequest, small: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A small file of each kind the compiled way reads, without white space."""
    if request.param == "converted":
        obj = json.loads(converted_file(small, tmp_path_factory.mktemp("converted")).read_text(encoding="utf-8"))
    else:
        obj = to_hf_json(small)
        obj["model"]["merges"] = [f"{a} {b}" for a, b in obj["model"]["merges"][:60]]
        keep = {key for key, i in obj["model"]["vocab"].items() if i < 256 + 60}
        obj["model"]["vocab"] = {k: v for k, v in obj["model"]["vocab"].items() if k in keep}
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return data


def test_the_fuzzed_files_are_read_the_compiled_way(compact: bytes, tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_bytes(compact)
    assert plain_taken(path)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_edited_files_load_as_whole_files(compact: bytes, tmp_path: Path, data: st.DataObject) -> None:
    model_at = compact.index(b'"model"')
    # edits land in the model's vocab and merges most of the time, where the compiled reader works
    changes = data.draw(edits(len(compact)))
    changes = [(model_at + at % (len(compact) - model_at), cut, put) for at, cut, put in changes]
    path = tmp_path / "edited.json"
    path.write_bytes(apply(compact, changes))
    fast, whole = both(path)
    assert fast == whole


# ---- model.merges' end taken from the end of the text ----


def test_the_end_of_the_merges_is_taken_from_the_end_of_the_text(small: Tokenizer, tmp_path: Path) -> None:
    """A file as tokenizers writes it (model.merges last in the model, the model last in the
    file) has its merges' end from the text's end (Spans.guessed), where the walk over the array
    (guess=False) finds it too; the file loads as json.loads of the whole reads it."""
    for indent in (None, 1, 4):
        data = json.dumps(to_hf_json(small), indent=indent, ensure_ascii=False).encode("utf-8") + b" \n"
        guessed, walked = model_spans(data), model_spans(data, guess=False)
        assert guessed is not None and walked is not None
        assert guessed.guessed and not walked.guessed
        assert (guessed.vocab_start, guessed.vocab_end, guessed.merges_start, guessed.merges_end) == (
            walked.vocab_start, walked.vocab_end, walked.merges_start, walked.merges_end)
    path = write(tmp_path / "tokenizer.json", to_hf_json(small), ensure_ascii=False)
    fast, whole = both(path)
    assert fast == whole and fast[0] == "plain" and plain_taken(path)


@pytest.mark.parametrize(
    "after",
    [
        '"extra": [1, 2]',  # an array member after the merges: the text ends "]}}" all the same
        '"ignore_merges": true, "extra": []',  # a member that decides how the file reads, lost with it
        '"type": "BPE", "extra": [["a", "b"]]',
        '"extra": "]", "more": [[]]',
    ],
)
def test_a_member_after_the_merges_is_not_lost(small: Tokenizer, tmp_path: Path, after: str) -> None:
    """When the model has a member after model.merges whose value is an array, the end of the
    text names that array's ']': the guess is wrong, the readers' walk over the items stops at
    the merges' own ']', and the file loads as json.loads of the whole reads it (an error where
    that gives one) -- not from a text that lost the member."""
    obj = to_hf_json(small)
    model = obj["model"]
    for key in ("type", "ignore_merges"):
        if key in after:
            model.pop(key, None)
    text = json.dumps(obj, ensure_ascii=False)
    merges_json = json.dumps(model["merges"], ensure_ascii=False)
    at = text.index('"merges": ' + merges_json) + len('"merges": ' + merges_json)
    text = text[:at] + ", " + after + text[at:]
    assert text.endswith("]}}")
    data = text.encode("utf-8")
    spans = model_spans(data)
    assert spans is not None and spans.guessed and spans.merges_end == len(data) - 2  # the wrong ']'
    walked = model_spans(data, guess=False)
    assert walked is not None and walked.merges_end < spans.merges_end
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    fast, whole = both(path)
    assert fast == whole
