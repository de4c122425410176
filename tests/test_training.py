"""mnemo.train end to end: inputs -> word counts -> merges -> Tokenizer, on files and in-memory
documents, deterministic across workers, with clear errors for bad input."""

from __future__ import annotations

import json
import lzma
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemo import Tokenizer
from mnemo.errors import ConfigError, InputError
from mnemo.training import CountStats, TrainStats, train, train_from_iterator

EOT = "<|endoftext|>"


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable alphabet: printable Latin-1 bytes stand for themselves, the other 68
    bytes are shifted to U+0100 and up in byte order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in printable}
    shift = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + shift)
            shift += 1
    return {c: b for b, c in chars.items()}


def test_cs336_reference_merges(cs336_dir: Path) -> None:
    """Stanford CS336's test: GPT-2 pattern, tie="bytes", <|endoftext|> as the special token,
    vocabulary 500 on corpus.en reproduces the reference merges exactly, in order."""
    decoder = gpt2_byte_decoder()
    reference = []
    for line in (cs336_dir / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines():
        left, right = line.split(" ")
        reference.append((bytes(decoder[c] for c in left), bytes(decoder[c] for c in right)))
    t0 = time.perf_counter()
    tok = train(
        [cs336_dir / "corpus.en"], vocab_size=500, pattern="gpt2", tie="bytes", special_tokens=[EOT], workers=1
    )
    seconds = time.perf_counter() - t0
    got = [(tok.token_bytes(a), tok.token_bytes(b)) for a, b in tok.merges]
    assert got == reference
    assert tok.n_vocab == 500 and tok.special_tokens == {EOT: 499}
    assert seconds < 1.5, f"took {seconds:.2f} s"


def test_same_merges_for_any_workers_and_input_form(tmp_path: Path, corpus_docs: Callable[..., list[str]]) -> None:
    docs = corpus_docs("english", max_bytes=1_500_000)
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    xz = tmp_path / "a.jsonl.xz"
    xz.write_bytes(lzma.compress(jsonl.read_bytes()))
    shuffled = docs[:]
    random.Random(0).shuffle(shuffled)
    runs = {
        "1 worker": train([jsonl], vocab_size=1000, workers=1),
        "2 workers": train([jsonl], vocab_size=1000, workers=2),
        "8 workers": train([jsonl], vocab_size=1000, workers=8),
        "xz, 2 workers": train([xz], vocab_size=1000, workers=2),
        "documents, shuffled": train_from_iterator(iter(shuffled), vocab_size=1000, workers=2),
    }
    first = runs["1 worker"]
    assert len(first.merges) == 1000 - 256 - 16
    for name, tok in runs.items():
        assert tok.merges == first.merges, name
        assert tok.merge_counts == first.merge_counts, name


def test_naive_and_fast_agree_through_train(corpus_docs: Callable[..., list[str]]) -> None:
    docs = corpus_docs("code", max_bytes=300_000)
    fast = train_from_iterator(iter(docs), vocab_size=400, workers=1)
    naive = train_from_iterator(iter(docs), vocab_size=400, workers=1, algorithm="naive")
    assert fast.merges == naive.merges and fast.merge_counts == naive.merge_counts


def test_train_is_exported() -> None:
    import mnemo

    assert mnemo.train is train


def test_default_specials_at_the_top_and_stats() -> None:
    stats = TrainStats(CountStats())
    tok = train_from_iterator(iter(["the cat sat on the mat " * 50]), vocab_size=300, stats=stats, workers=1)
    assert isinstance(tok, Tokenizer)
    n = len(tok.merges)
    assert n < 300 - 256 - 16  # this tiny text runs out of pairs that occur twice
    assert tok.special_tokens["<|bos|>"] == 256 + n
    assert max(tok.special_tokens.values()) == tok.n_vocab - 1
    # "the", " cat", " sat", " on", " the", " mat", and the final " "
    assert stats.unique_words == 7 and stats.merges == n and stats.count.n_bytes == 23 * 50


def test_stops_when_no_pair_occurs_twice() -> None:
    tok = train_from_iterator(iter(["abc"]), vocab_size=1000, special_tokens=[], workers=1)
    assert tok.merges == []  # every pair occurs once
    tok = train_from_iterator(iter(["abab"]), vocab_size=1000, special_tokens=[], workers=1)
    assert [(tok.token_bytes(a), tok.token_bytes(b)) for a, b in tok.merges] == [(b"a", b"b")]


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="training text is empty"):
        train_from_iterator(iter([""]), vocab_size=300, workers=1)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(InputError, match="training text is empty"):
        train([empty], vocab_size=300)
    with pytest.raises(ConfigError, match=r"vocab_size must be >= 272 \(256 bytes \+ 16 special tokens\), got 271"):
        train_from_iterator(iter(["abc"]), vocab_size=271)
    with pytest.raises(ConfigError, match="vocab_size must be <= 2,097,152"):
        train_from_iterator(iter(["abc"]), vocab_size=2_097_153)
    with pytest.raises(InputError, match="no such file"):
        train([tmp_path / "missing.txt"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": broken\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: not valid JSON"):
        train([bad], workers=2)
    with pytest.raises(ConfigError, match="unknown algorithm 'smart'"):
        train_from_iterator(iter(["abc"]), algorithm="smart")
    with pytest.raises(ConfigError, match="unknown tie rule 'coin'"):
        train_from_iterator(iter(["abc"]), tie="coin")


@pytest.mark.parametrize("algorithm", ["fast", "naive"])
def test_progress_reports_both_phases(algorithm: str) -> None:
    seen: list[tuple[str, int, int]] = []
    tok = train_from_iterator(iter(["low lower newest widest " * 40]), vocab_size=300, special_tokens=[], workers=1,
                algorithm=algorithm, progress=lambda phase, done, total: seen.append((phase, done, total)))
    counting = [s for s in seen if s[0] == "count"]
    merging = [s for s in seen if s[0] == "merge"]
    assert counting and counting[-1][1] == 24 * 40
    assert merging and merging[-1] == ("merge", len(tok.merges), 300 - 256)
    assert [d for _, d, _ in merging] == sorted(d for _, d, _ in merging)


# ---- files and documents: two entry points (issue 12) ----


def test_documents_and_files_give_the_identical_tokenizer(tmp_path: Path, corpus_docs: Callable[..., list[str]]) -> None:
    """The same documents, from a JSONL file through `train` and from memory through
    `train_from_iterator` (str, bytes, HF-style batches, a generator; 1 and 2 workers)."""
    docs = corpus_docs("english", max_bytes=400_000)
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    from_file = train([jsonl], vocab_size=600, workers=1)
    assert train(jsonl, vocab_size=600, workers=1) == from_file  # one path, not in a list
    assert train(str(jsonl), vocab_size=600, workers=1) == from_file
    runs = {
        "list of str": train_from_iterator(docs, vocab_size=600, workers=1),
        "generator of bytes": train_from_iterator((d.encode() for d in docs), vocab_size=600, workers=1),
        "batches, 2 workers": train_from_iterator(
            (docs[i : i + 100] for i in range(0, len(docs), 100)), vocab_size=600, workers=2
        ),
    }
    for name, tok in runs.items():
        assert tok == from_file, name


LONG_DOCUMENT = "hello world this is a document " * 200


@pytest.mark.parametrize(
    "inputs",
    [["hello world this is a document", "and a second one"], iter(["hello world this is a document"]), "hello world this is a document"],
    ids=["list", "iterator", "one str"],
)
def test_train_does_not_read_documents_as_paths(inputs: object) -> None:
    """Documents passed to `train` (which reads files) are an error that names the first one and
    the function that takes documents -- not a `no such file` that leaves the user guessing."""
    with pytest.raises(InputError, match=r"'hello world this is a document'.*mnemo\.train_from_iterator"):
        train(inputs, vocab_size=300, workers=1)  # type: ignore[arg-type]


def test_train_resolves_its_settings_before_looking_at_the_files(tmp_path: Path) -> None:
    """The run's settings are checked first, in one place; the inputs are looked at after (once,
    by sources), still before a byte is counted -- and a missing path is named as before."""
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(ConfigError, match=r"vocab_size must be >= 272"):
        train([missing], vocab_size=100, workers=1)
    with pytest.raises(InputError, match=r"missing\.txt: no such file; check the path$"):
        train([missing], vocab_size=300, workers=1)


def test_train_names_a_long_document_shortened(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"'hello world this is a document hello w[^']*\.\.\.'.*train_from_iterator") as info:
        train([LONG_DOCUMENT], vocab_size=300, workers=1)
    assert len(str(info.value)) < 300
    # a one-word document: no white space, but no directory or suffix either
    with pytest.raises(InputError, match=r"'hello' is not a file.*mnemo\.train_from_iterator"):
        train(["hello", "world"], vocab_size=300, workers=1)
    # a path that is simply missing (as the command line passes them): the usual message
    with pytest.raises(InputError, match=r"missing\.txt: no such file; check the path$"):
        train([str(tmp_path / "missing.txt")], vocab_size=300, workers=1)


def test_train_refuses_bytes_and_other_objects() -> None:
    with pytest.raises(TypeError, match=r"files\[0\] is a bytes.*train_from_iterator"):
        train([b"some text"], vocab_size=300, workers=1)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"files is a bytes.*train_from_iterator"):
        train(b"some text", vocab_size=300, workers=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"files is a int"):
        train(3, vocab_size=300, workers=1)  # type: ignore[arg-type]


def test_train_from_iterator_refuses_what_is_not_documents(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"a single str.*\[text\]"):
        train_from_iterator("one document", vocab_size=300, workers=1)
    with pytest.raises(TypeError, match=r"a path.*mnemo\.train"):
        train_from_iterator(tmp_path / "a.txt", vocab_size=300, workers=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"item 1 is a int"):
        train_from_iterator(["fine", 3], vocab_size=300, workers=1)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"item 0 \(a batch\), element 1 is a NoneType"):
        train_from_iterator([["fine", None]], vocab_size=300, workers=1)  # type: ignore[list-item]
    with pytest.raises(InputError, match="training text is empty"):
        train_from_iterator([], vocab_size=300, workers=1)


class CountingDocuments:
    """An iterable that counts how often it is iterated and which documents were taken, and
    notes, for each document, how many bytes the counter had reported when it was taken."""

    def __init__(self, docs: list[str], reported: list[int]) -> None:
        self.docs = docs
        self.reported = reported
        self.iterations = 0
        self.taken: list[int] = []
        self.reported_at_take: list[int] = []

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.iterations += 1
        for i, d in enumerate(self.docs):
            self.taken.append(i)
            self.reported_at_take.append(self.reported[-1] if self.reported else 0)
            yield d


@pytest.mark.parametrize("workers", [1, 2])
def test_train_from_iterator_reads_a_stream_once(workers: int) -> None:
    """One pass over the iterable, each document taken once; with one worker each document is
    counted before the next is taken (the documents are never gathered in a list first)."""
    docs = [f"document {i}: the cat sat on the mat number {i % 7} " * 3 for i in range(200)]
    reported: list[int] = []
    source = CountingDocuments(docs, reported)
    tok = train_from_iterator(
        source, vocab_size=300, workers=workers, progress=lambda phase, done, total: reported.append(done) if phase == "count" else None
    )
    assert source.iterations == 1 and source.taken == list(range(200))
    assert tok == train_from_iterator(docs, vocab_size=300, workers=1)
    if workers == 1:
        sizes = [len(d) for d in docs]
        assert source.reported_at_take == [sum(sizes[:i]) for i in range(200)]


def test_train_from_iterator_is_exported() -> None:
    import mnemo

    assert mnemo.train_from_iterator is train_from_iterator


# ---- every argument is checked before a byte is counted ----


class _Watched:
    """Documents that record whether training ever asked for one."""

    def __init__(self) -> None:
        self.pulled = 0

    def __iter__(self) -> object:
        for _ in range(20):
            self.pulled += 1
            yield "some text to count " * 20


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"special_tokens": ["\ud800"]}, ConfigError, r"special token 0 '\\ud800' is not encodable as UTF-8"),
        ({"special_tokens": ["<|a|>", "<|b|>", "<|a|>"]}, ConfigError, r"special token 2 '<\|a\|>' is listed twice \(first as special token 0\)"),
        ({"special_tokens": ["x" * 256]}, ConfigError, r"special token 0 .* is longer than 255 UTF-8 bytes"),
        ({"special_tokens": ["é" * 128]}, ConfigError, r"longer than 255 UTF-8 bytes \(256\)"),
        ({"special_tokens": [""]}, ConfigError, "not a non-empty string"),
        ({"special_tokens": "<|a|>"}, TypeError, "special_tokens must be a list of str"),
        ({"special_tokens": [b"<|a|>"]}, TypeError, r"special_tokens\[0\] must be a str"),
        ({"vocab_size": 1500.0}, TypeError, "vocab_size must be an int, got float 1500.0"),
        ({"vocab_size": "1500"}, TypeError, "vocab_size must be an int"),
        ({"vocab_size": 271}, ConfigError, r"vocab_size must be >= 272"),
        ({"vocab_size": 2_097_153}, ConfigError, r"vocab_size must be <= 2,097,152"),
        ({"pattern": "gpt5"}, ConfigError, "unknown pattern 'gpt5'"),
        ({"pattern": 3}, TypeError, "pattern must be a str"),  # None is the default (or that of base)
        ({"tie": "coin"}, ConfigError, "unknown tie rule 'coin'"),
        ({"tie": 0}, TypeError, "tie must be a str"),
        ({"algorithm": "smart"}, ConfigError, "unknown algorithm 'smart'"),
        ({"workers": 0}, ConfigError, "workers must be from 1 to 1024, got 0"),
        ({"workers": 2**63}, ConfigError, r"workers must be from 1 to 1024, got 9223372036854775808"),
        ({"workers": 2.0}, TypeError, "workers must be an int"),
        ({"max_chunk_bytes": 0}, ConfigError, r"max_chunk_bytes must be >= 1, got 0"),
        ({"max_chunk_bytes": 1 << 40}, ConfigError, r"max_chunk_bytes must be <= 2147483647"),
        ({"max_chunk_bytes": 256.0}, TypeError, "max_chunk_bytes must be an int"),
        ({"text_field": ""}, ConfigError, "text_field must name"),
        ({"text_field": 3}, TypeError, "text_field must be a str"),
        ({"verify": "yes"}, TypeError, "verify must be a bool"),
        ({"stats": {}}, TypeError, "stats must be a TrainStats"),
    ],
)
@pytest.mark.parametrize("workers", [1, 2])
def test_arguments_are_checked_before_counting(
    kwargs: dict[str, object], error: type[Exception], message: str, workers: int, tmp_path: Path
) -> None:
    """A bad argument fails at once: no document is read and no progress is reported (the bad
    special tokens used to fail only after the whole run, when the Tokenizer was built).
    Documents go through train_from_iterator; text_field, which only files have, through train."""
    docs = _Watched()
    calls: list[tuple[str, int, int]] = []
    options: dict[str, object] = {"vocab_size": 1000, "workers": workers, "progress": lambda *a: calls.append(a)}
    options.update(kwargs)
    t0 = time.perf_counter()
    with pytest.raises(error, match=message):
        if "text_field" in kwargs:
            path = tmp_path / "a.jsonl"
            path.write_text('{"text": "some text to count"}\n' * 20)
            train(path, **options)  # type: ignore[arg-type]
        else:
            train_from_iterator(docs, **options)  # type: ignore[arg-type]
    assert docs.pulled == 0 and calls == []
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (b"raw bytes", "files is a bytes; mnemo.train reads files"),
        (5, "files is a int, not a path or an iterable of paths"),
    ],
)
def test_inputs_of_a_wrong_type(inputs: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        train(inputs, vocab_size=300)  # type: ignore[arg-type]


def test_progress_must_be_callable() -> None:
    docs = _Watched()
    with pytest.raises(TypeError, match="progress must be a callable"):
        train_from_iterator(docs, vocab_size=300, progress=5)  # type: ignore[arg-type]
    assert docs.pulled == 0


def test_the_public_signatures_are_train_options() -> None:
    """train and train_from_iterator spell out the keywords of training.TrainOptions, where they
    are written once: the same names in the same order, keyword-only, with the same defaults
    (train_from_iterator has no text_field and no ray)."""
    import dataclasses
    import inspect

    from mnemo.training import TrainOptions

    options = [(f.name, f.default) for f in dataclasses.fields(TrainOptions)]
    for fn, left_out in ((train, ()), (train_from_iterator, ("text_field", "ray"))):
        params = list(inspect.signature(fn).parameters.values())[1:]
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), fn.__name__
        assert [(p.name, p.default) for p in params] == [o for o in options if o[0] not in left_out], fn.__name__
