"""The tiktoken drop-in (docs/tiktoken.md): every OpenAI encoding by name, tiktoken's names,
arguments, exception types and array type, `encode_with_unstable` and `_encode_bytes`.

The oracle is tiktoken itself, built offline from the same files: each encoding's own
definition in `tiktoken_ext.openai_public` (pattern, specials) with its loader reading the
local copy of the file it would download, so tiktoken checks every SHA-256 itself.  The rank
files are ../shared/fixtures/tiktoken's (cl100k_base, o200k_base) and, for r50k_base and
p50k_base, the ones mnemo derives from GPT-2's encoder.json (../shared/fixtures/cs336): tiktoken
accepting them is the proof that they are OpenAI's.  tiktoken's own test suite is run apart
(tools/tiktoken_suite.py); these tests are mnemo's own.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import pickle
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo import ConfigError, FormatError, InputError, InvalidUTF8Error, SpecialTokenError, Tokenizer, UnknownTokenError
from mnemo.formats import openai
from mnemo.formats.tiktoken import TIKTOKEN_PRESETS, load_tiktoken

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
NAMES = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony")
SMALL = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base")  # quick to load, in every run
EOT = "<|endoftext|>"


def need(module: str) -> Any:
    return pytest.importorskip(module, reason=f"the {module} package is not installed (pip install '.[test]')")


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of every rank file: r50k/p50k derived from GPT-2's encoder.json, cl100k/o200k copied."""
    encoder_json = FIXTURES / "cs336" / "gpt2_vocab.json"
    sources = [encoder_json] + [FIXTURES / "tiktoken" / f"{n}.tiktoken.gz" for n in ("cl100k_base", "o200k_base")]
    for path in sources:
        if not path.is_file():
            pytest.skip(f"fixture {path} is absent (../shared/fixtures beside the repo)")
    folder = tmp_path_factory.mktemp("encodings")
    openai.write_rank_files(encoder_json, folder)
    for path in sources[1:]:
        (folder / path.name).write_bytes(path.read_bytes())
    return folder


_oracles: dict[str, Any] = {}


def oracle(name: str, files: Path) -> Any:
    """tiktoken's own Encoding `name`, its loaders reading `files` (decompressed where needed)."""
    if name not in _oracles:
        tiktoken = need("tiktoken")
        public = need("tiktoken_ext.openai_public")
        from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

        def local(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
            plain = files / url.rsplit("/", 1)[1]
            if not plain.is_file():
                plain.write_bytes(gzip.decompress(plain.with_name(plain.name + ".gz").read_bytes()))
            return load_tiktoken_bpe(str(plain), expected_hash=expected_hash)

        def data_gym(vocab_bpe_file: str, encoder_json_file: str, **hashes: Any) -> dict[bytes, int]:
            bpe = files / "vocab.bpe"
            merges = (FIXTURES / "cs336" / "gpt2_merges.txt").read_text(encoding="utf-8")
            bpe.write_text("#version: 0.2\n" + merges, encoding="utf-8")  # the line the fixture lacks
            return data_gym_to_mergeable_bpe_ranks(str(bpe), str(FIXTURES / "cs336" / "gpt2_vocab.json"), **hashes)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(public, "load_tiktoken_bpe", local)
            mp.setattr(public, "data_gym_to_mergeable_bpe_ranks", data_gym)
            _oracles[name] = tiktoken.Encoding(**public.ENCODING_CONSTRUCTORS[name]())
    return _oracles[name]


@pytest.fixture(scope="module", params=SMALL)
def pair(request: pytest.FixtureRequest, files: Path) -> tuple[str, Tokenizer, Any]:
    name: str = request.param
    return name, openai.get_encoding(name, files), oracle(name, files)


@pytest.fixture(scope="module")
def cl100k(files: Path) -> tuple[Tokenizer, Any]:
    return openai.get_encoding("cl100k_base", files), oracle("cl100k_base", files)


# ---- every OpenAI encoding, by name, offline ----


def test_derived_rank_files_are_openais(files: Path) -> None:
    """r50k_base and p50k_base derived from GPT-2's encoder.json have exactly the SHA-256 that
    tiktoken checks; p50k_base's extra ranks are runs of 2 to 25 spaces, and 50256 is a gap."""
    for stem in ("r50k_base", "p50k_base"):
        assert hashlib.sha256((files / f"{stem}.tiktoken").read_bytes()).hexdigest() == TIKTOKEN_PRESETS[stem][1]
    lines = (files / "p50k_base.tiktoken").read_text(encoding="ascii").splitlines()
    assert len(lines) == 50280 and lines[-1] == "ICAgICAgICAgICAgICAgICAgICAgICAgIA== 50280"  # 25 spaces
    assert all(int(line.split()[1]) != 50256 for line in lines)


def test_write_rank_files_refuses_another_vocabulary(tmp_path: Path) -> None:
    vocab = json.loads((FIXTURES / "cs336" / "gpt2_vocab.json").read_text(encoding="utf-8"))
    vocab["Ġthe"], vocab["Ġa"] = vocab["Ġa"], vocab["Ġthe"]  # two ranks swapped
    (tmp_path / "encoder.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(FormatError, match=r"r50k_base ranks derived from it have SHA-256 [0-9a-f]{64}, not 306cd27f.*not GPT-2's"):
        openai.write_rank_files(tmp_path / "encoder.json", tmp_path)
    assert not (tmp_path / "r50k_base.tiktoken").exists()


@pytest.mark.parametrize("name", NAMES)
def test_every_encoding_is_tiktokens(name: str, files: Path) -> None:
    """Name, specials (tiktoken's definition, aliases included), n_vocab, max_token_value, the
    ranks (`_mergeable_ranks`), the split (`_pat_str` splits as tiktoken's pat_str) and ids."""
    regex = need("regex")
    tok, enc = openai.get_encoding(name, files), oracle(name, files)
    assert tok.name == enc.name == name
    assert tok.special_tokens == enc._special_tokens and tok.special_tokens_set == enc.special_tokens_set
    assert (tok.n_vocab, tok.max_token_value) == (enc.n_vocab, enc.max_token_value)
    assert tok._mergeable_ranks == enc._mergeable_ranks
    text = "Hello world, it's 12345 o'clock!\n\n  naïve café //\r\n\tHTTPServer 日本語" + "".join(enc._special_tokens)[:400]
    assert regex.findall(tok._pat_str, text) == regex.findall(enc._pat_str, text)
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=())
    for i in [*range(0, enc.n_vocab, 97), enc.n_vocab - 1, enc.n_vocab]:  # holes and the end too
        try:
            theirs = enc.decode_single_token_bytes(i)
        except KeyError:
            with pytest.raises(KeyError):
                tok.decode_single_token_bytes(i)
            continue
        assert tok.decode_single_token_bytes(i) == theirs, i


@pytest.mark.corpus
@pytest.mark.parametrize("name", ("r50k_base", "p50k_edit"))
def test_corpus_ids_equal_tiktoken(name: str, files: Path, corpus_docs: Callable[..., list[str]]) -> None:
    """r50k_base and p50k_base (here p50k_edit, its ranks with fill-in-the-middle tokens) on
    the four corpora: cl100k/o200k have tests/test_tiktoken_vocabs.py, gpt2 is r50k's ranks."""
    tok, enc = openai.get_encoding(name, files), oracle(name, files)
    code = " " * 24 + "return x\n" + "\t" * 3 + "    if a:\n" + " " * 40 + "pass"
    for corpus in ("english", "multilingual", "code", "chat"):
        for k, doc in enumerate(corpus_docs(corpus, max_bytes=150_000) + [code]):
            assert tok.encode(doc, disallowed_special=()) == enc.encode(doc, disallowed_special=()), (corpus, k)


def test_harmony_aliases(files: Path) -> None:
    """o200k_harmony names id 200018 twice: both names are special tokens of that id, decoding
    it gives the first (<|endofprompt|>, as tiktoken does), and everything else holds."""
    tok, enc = openai.get_encoding("o200k_harmony", files), oracle("o200k_harmony", files)
    text = "<|start|>user<|message|>hi<|reserved_200018|><|endofprompt|><|end|>"
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode(text, allowed_special={"<|reserved_200018|>"}, disallowed_special=()) == enc.encode(
        text, allowed_special={"<|reserved_200018|>"}, disallowed_special=()
    )
    with pytest.raises(SpecialTokenError, match="reserved_200018"):
        tok.encode("x<|reserved_200018|>", allowed_special={"<|endofprompt|>"})
    assert tok.encode_single_token("<|reserved_200018|>") == 200018 == enc.encode_single_token("<|reserved_200018|>")
    assert tok.decode_single_token_bytes(200018) == enc.decode_single_token_bytes(200018) == b"<|endofprompt|>"
    assert len(tok.special_tokens_set) == len(enc.special_tokens_set) == 1091
    # a file cannot hold the second name yet; pickle and copies keep it, and the name
    with pytest.raises(ConfigError, match=r"gives 1 special tokens a second name \(<\|reserved_200018\|>"):
        tok.to_bytes()
    back = pickle.loads(pickle.dumps(tok))
    assert back == tok and back.name == "o200k_harmony" and back.special_tokens == tok.special_tokens
    more = tok.with_special_tokens(["<|mine|>"])
    assert more.special_tokens["<|reserved_200018|>"] == 200018 and more.fingerprint != tok.fingerprint


def test_harmony_aliases_in_batch_workers(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """encode_batch's workers rebuild the tokenizer with its second names (the image they get
    carries them): they raised ConfigError ("tokenizer.bin cannot hold ... save would lose them")."""
    from mnemo import batch_encode

    monkeypatch.setattr(batch_encode, "BATCH_PARALLEL_BYTES", 0)  # workers for any batch over a block
    tok, enc = openai.get_encoding("o200k_harmony", files), oracle("o200k_harmony", files)
    texts = [f"<|start|>user<|message|>hi {i}<|reserved_200018|><|end|>" for i in range(batch_encode.BATCH_BLOCK * 2 + 3)]
    want = [enc.encode(t, allowed_special="all") for t in texts]
    assert tok.encode_batch(texts, allowed_special="all", workers=2) == want
    flat, offsets = tok.encode_batch_to_numpy(texts, allowed_special={"<|reserved_200018|>", "<|start|>", "<|message|>", "<|end|>"}, workers=2)
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == want
    with pytest.raises(SpecialTokenError, match="reserved_200018"):
        tok.encode_batch(texts, allowed_special={"<|start|>", "<|message|>", "<|end|>"}, workers=2)


def test_aliases_change_the_fingerprint() -> None:
    """A second name for an id is part of the vocabulary: another fingerprint, another name,
    the same ids otherwise; decoding gives the first name."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    one = openai.encoding("x", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={EOT: 257})
    two = openai.encoding("x", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={EOT: 257, "<|eot|>": 257})
    assert one != two and one.fingerprint != two.fingerprint and one.name == two.name == "x"
    assert two.encode("ab<|eot|><|endoftext|>", allowed_special="all") == [256, 257, 257]
    assert two.decode([257]) == EOT and two.special_tokens_set == {EOT, "<|eot|>"}
    three = openai.encoding("x", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={EOT: 257, "<|eot|>": 257, "<|z|>": 257})
    assert three.special_tokens == {EOT: 257, "<|eot|>": 257, "<|z|>": 257} and three.n_vocab == 258


def test_get_encoding_errors(files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"unknown encoding 'cl200k_base': OpenAI's are gpt2, r50k_base"):
        openai.get_encoding("cl200k_base", files)
    with pytest.raises(ConfigError, match=r"must be a str"):
        openai.get_encoding(5, files)  # type: ignore[arg-type]
    monkeypatch.delenv(openai.FOLDER_VARIABLE, raising=False)
    with pytest.raises(ConfigError, match=r"downloads no encodings.*MNEMO_ENCODINGS_DIR"):
        openai.get_encoding("cl100k_base")
    with pytest.raises(InputError, match=r"no p50k_base.tiktoken or p50k_base.tiktoken.gz.*write_rank_files"):
        openai.get_encoding("p50k_edit", tmp_path)
    monkeypatch.setenv(openai.FOLDER_VARIABLE, str(files))
    assert openai.get_encoding("gpt2") is openai.get_encoding("gpt2", files)  # read once, shared
    assert openai.list_encoding_names() == list(NAMES)


def test_presets_load_by_file(files: Path) -> None:
    """load_tiktoken(path, preset) for the new presets: checksum, specials and name."""
    tok = load_tiktoken(files / "p50k_base.tiktoken", "p50k_edit")
    assert tok.name == "p50k_edit" and tok.special_tokens["<|fim_suffix|>"] == 50283 and tok.n_vocab == 50284
    with pytest.raises(FormatError, match=r"not OpenAI's r50k_base.tiktoken"):
        load_tiktoken(files / "p50k_base.tiktoken", "r50k_base")


# ---- tiktoken's names and arguments ----


def test_every_public_name_of_tiktokens_encoding(cl100k: tuple[Tokenizer, Any]) -> None:
    """Every public attribute of tiktoken.Encoding, and tiktoken's private names its README and
    tests use, exists on a Tokenizer; every method takes tiktoken's parameter names."""
    tiktoken = need("tiktoken")
    tok, enc = cl100k
    public = [n for n in dir(tiktoken.Encoding) if not n.startswith("_")] + ["name"]
    used = ["_pat_str", "_mergeable_ranks", "_special_tokens", "_encode_bytes"]
    for attr in public + used:
        assert hasattr(tok, attr), attr
        theirs = getattr(tiktoken.Encoding, attr, None)
        if callable(theirs):
            ours = list(inspect.signature(getattr(tok, attr)).parameters.values())
            for k, param in enumerate(list(inspect.signature(theirs).parameters.values())[1:]):
                if param.kind is param.KEYWORD_ONLY:  # by name
                    assert any(p.name == param.name for p in ours), f"{attr}({param.name}=...)"
                else:  # by position (encode_batch's list is `text` there, `texts` here)
                    assert ours[k].kind is param.POSITIONAL_OR_KEYWORD, f"{attr}: argument {k}"
        else:
            assert type(getattr(tok, attr)) is type(getattr(enc, attr)), attr
    assert tok._pat_str == enc._pat_str and tok._special_tokens == enc._special_tokens
    assert tok.token_byte_values() == enc.token_byte_values()


def test_extending_as_tiktokens_readme_does(cl100k: tuple[Tokenizer, Any]) -> None:
    """tiktoken's README: a new Encoding from another's _pat_str, _mergeable_ranks and
    _special_tokens plus two specials.  mnemo's `encoding` gives tiktoken's ids and the name."""
    tiktoken = need("tiktoken")
    tok, enc = cl100k
    specials = {**tok._special_tokens, "<|im_start|>": 100264, "<|im_end|>": 100265}
    ours = openai.encoding("cl100k_im", pat_str=tok._pat_str, mergeable_ranks=tok._mergeable_ranks, special_tokens=specials)
    theirs = tiktoken.Encoding("cl100k_im", pat_str=enc._pat_str, mergeable_ranks=enc._mergeable_ranks, special_tokens=specials)
    text = "<|im_start|>user\nHello<|im_end|><|endoftext|>"
    assert ours.name == "cl100k_im" and ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    assert pickle.loads(pickle.dumps(ours)).name == "cl100k_im"
    with pytest.raises(ConfigError, match=r"explicit_n_vocab=5, but there are 100256 ranks and 7 special tokens"):
        openai.encoding("x", pat_str=tok._pat_str, mergeable_ranks=tok._mergeable_ranks, special_tokens=specials, explicit_n_vocab=5)


def test_default_name_is_the_fingerprints(cl100k: tuple[Tokenizer, Any]) -> None:
    tok = Tokenizer([(104, 105)], special_tokens=["<|x|>"])
    assert tok.name == f"mnemo-{tok.fingerprint[:16]}"
    assert Tokenizer.from_bytes(tok.to_bytes()).name == tok.name
    assert cl100k[0].name == "cl100k_base" and Tokenizer.from_bytes(cl100k[0].to_bytes()).name.startswith("mnemo-")


@pytest.mark.parametrize("method", ["encode_batch", "encode_ordinary_batch", "decode_batch", "decode_bytes_batch"])
def test_num_threads(pair: tuple[str, Tokenizer, Any], method: str) -> None:
    """tiktoken's num_threads= on the four batch methods: the same results as tiktoken's; bad
    values fail as tiktoken's ThreadPoolExecutor fails (TypeError, ValueError)."""
    _, tok, enc = pair
    texts = ["hello world", "goodbye <|endoftext|> world", ""]
    arg: Any = texts if method.startswith("encode") else enc.encode_batch(texts, disallowed_special=())
    kwargs: dict[str, Any] = {"disallowed_special": ()} if method == "encode_batch" else {}
    assert getattr(tok, method)(arg, num_threads=4, **kwargs) == getattr(enc, method)(arg, num_threads=4, **kwargs)
    assert getattr(tok, method)(arg, num_threads=1, **kwargs) == getattr(enc, method)(arg, num_threads=1, **kwargs)
    for bad, error in (("2", TypeError), (0, ValueError), (-1, ValueError)):
        with pytest.raises(error):
            getattr(enc, method)(arg, num_threads=bad, **kwargs)
        with pytest.raises(error):
            getattr(tok, method)(arg, num_threads=bad, **kwargs)
    if method.startswith("encode"):
        with pytest.raises(ConfigError, match="not both"):
            getattr(tok, method)(arg, num_threads=2, workers=2, **kwargs)


def test_num_threads_is_at_most_that_many_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemo import batch_encode

    monkeypatch.setattr(batch_encode, "_batch_workers", lambda workers: 3)
    assert batch_encode.threads_as_workers(None, 8) == 3
    assert batch_encode.threads_as_workers(None, 2) == 2
    assert batch_encode.threads_as_workers(5, None) == 5


def test_exception_types_are_tiktokens(pair: tuple[str, Tokenizer, Any]) -> None:
    """What tiktoken users catch: ValueError for disallowed special-token text (mnemo:
    SpecialTokenError), KeyError for ids and tokens that are not in the vocabulary (mnemo:
    UnknownTokenError), UnicodeDecodeError for decode(errors='strict') and decode_with_offsets
    of bytes that are not UTF-8 (mnemo: InvalidUTF8Error, an InputError as before)."""
    _, tok, enc = pair
    cases: list[tuple[Callable[[Any], object], type[BaseException]]] = [
        (lambda e: e.encode("hello <|endoftext|>"), ValueError),
        (lambda e: e.encode_to_numpy("<|endoftext|>"), ValueError),
        (lambda e: e.encode_batch(["ok", "<|endoftext|>"]), ValueError),
        (lambda e: e.encode_with_unstable("<|endoftext|>"), ValueError),
        (lambda e: e.decode_single_token_bytes(e.n_vocab + 5), KeyError),
        (lambda e: e.decode([e.n_vocab + 5]), KeyError),
        (lambda e: e.decode_bytes([1, e.n_vocab + 5]), KeyError),
        (lambda e: e.encode_single_token("definitely not one token"), KeyError),
        (lambda e: e.decode([e.encode_single_token(b"\xc3")], errors="strict"), UnicodeDecodeError),
        (lambda e: e.decode_with_offsets([e.encode_single_token(b"\xc3")]), UnicodeDecodeError),
    ]  # fmt: skip
    for call, error in cases:
        with pytest.raises(error):
            call(enc)
        with pytest.raises(error):
            call(tok)
    with pytest.raises(SpecialTokenError):
        tok.encode("<|endoftext|>")
    with pytest.raises(UnknownTokenError):
        tok.decode_single_token_bytes(tok.n_vocab + 5)
    with pytest.raises(InvalidUTF8Error, match=r"^the tokens decode to invalid UTF-8 \(byte 0\), so they have no character offsets"):
        tok.decode_with_offsets([tok.encode_single_token(b"\xc3")])


def test_encode_to_numpy_is_uint32(pair: tuple[str, Tokenizer, Any]) -> None:
    """uint32 always, as tiktoken's, also for a vocabulary whose ids fit in 16 bits (GPT-2's)
    and on each path (plain, with specials allowed, with an id map)."""
    _, tok, enc = pair
    cases: list[tuple[str, dict[str, Any]]] = [
        ("hello world", {}), ("hi <|endoftext|> there", {"allowed_special": "all"}), ("", {}),
        # nothing special (packing._none_special): special-token text is plain text
        ("hi <|endoftext|> there", {"disallowed_special": ()}),
        ("<|endoftext|>", {"allowed_special": set(), "disallowed_special": frozenset()}),
        ("", {"disallowed_special": ()}),
        ("héllo wörld 123 \n\n  " * 40, {"disallowed_special": set()}),
    ]
    for text, kwargs in cases:
        ours, theirs = tok.encode_to_numpy(text, **kwargs), enc.encode_to_numpy(text, **kwargs)
        assert ours.dtype == theirs.dtype == np.uint32
        assert np.array_equal(ours, theirs)
        assert ours.flags.writeable
    small = Tokenizer([(104, 105)])
    assert small.encode_to_numpy("hihi").dtype == np.uint32 and small.encode_to_numpy("hihi").tolist() == [256, 256]


# ---- _encode_bytes and encode_with_unstable: tiktoken's rules at the end of a text ----


def test_encode_bytes_tail_of_the_issue(cl100k: tuple[Tokenizer, Any]) -> None:
    """Issue 26's case: the first byte of a character after " 실" is joined to that pre-token and
    merged with it: one token.  mnemo's own encode_bytes keeps splitting invalid bytes off."""
    tok, enc = cl100k
    data = b" \xec\x8b\xa4\xed"
    assert tok._encode_bytes(data) == enc._encode_bytes(data) == [62085]
    assert tok.encode_bytes(data) == [30027, 97, 169] and tok.decode_bytes(tok.encode_bytes(data)) == data


def _broken(draw: st.DrawFn) -> bytes:
    parts = st.sampled_from(list("ab é日1'sS!.\n\t ") + ["  ", "\r\n", "ll"])
    text = "".join(draw(st.lists(parts, max_size=30)))
    data = text.encode("utf-8")
    junk = draw(st.binary(min_size=1, max_size=3).map(lambda b: bytes(x | 0x80 for x in b)))
    where = draw(st.sampled_from(["end", "middle", "start"]))
    if where == "end":
        return data + junk
    if where == "start":
        return junk + data
    cut = draw(st.integers(0, len(data)))
    return data[:cut] + junk + data[cut:]


@settings(max_examples=400, deadline=None)
@given(st.composite(_broken)())
def test_encode_bytes_is_tiktokens(cl100k: tuple[Tokenizer, Any], data: bytes) -> None:
    """Invalid UTF-8 at the end, in the middle and at the start: tiktoken's ids exactly."""
    tok, enc = cl100k
    assert tok._encode_bytes(data) == enc._encode_bytes(data)
    assert tok.decode_bytes(tok._encode_bytes(data)) == data


def test_encode_bytes_on_every_small_encoding(pair: tuple[str, Tokenizer, Any]) -> None:
    name, tok, enc = pair
    rng = random.Random(26)
    samples = [b"", b"\xff", b"\x80" * 7, b"hello world", b"<|endoftext|>\xff", b"x \n\n \t\xe4\xb8", b"  \xf0\x9f"]
    for _ in range(300):
        text = "".join(rng.choice(["a", " ", "\n", "é", "日", "1", "'s", "!!", "  ", "\t", "word", "😀"]) for _ in range(rng.randint(0, 20)))
        data = text.encode("utf-8")
        cut = rng.randint(0, len(data))
        samples.append(data[:cut] if rng.random() < 0.5 else data[:cut] + bytes([rng.randint(0x80, 0xFF)]) + data[cut:])
    for data in samples:
        assert tok._encode_bytes(data) == enc._encode_bytes(data), (name, data)


UNSTABLE_TEXTS = [
    "hello fanta", "hello", "", "a", "The quick brown fox jum", "x  ", "today\n ", "  !", "hi <|endoftext|>",
    "hi <|endoftext|> wor", "日本", "don'", "12345", "x\n\n", "a\u3000", "é", " \u00a0", "line\r\n", "   ",
]  # fmt: skip


@pytest.mark.parametrize("name", ["r50k_base", "p50k_edit", "cl100k_base"])  # gpt2, p50k_base: the same ranks
def test_encode_with_unstable_is_tiktokens(name: str, files: Path) -> None:
    """The stable ids, and the completions as a set (tiktoken's come from a set, in no order;
    mnemo's are sorted), on chosen texts and random ones, special tokens allowed or not."""
    tok, enc = openai.get_encoding(name, files), oracle(name, files)
    rng = random.Random(9)
    texts = list(UNSTABLE_TEXTS)
    for _ in range(15):
        texts.append("".join(rng.choice(["a", " ", "\n", "é", "1", "'s", "!!", "  ", "\t", "hel", "lo", " wor"]) for _ in range(rng.randint(1, 6))))
    for text in texts:
        for kwargs in ({"allowed_special": "all"}, {"disallowed_special": ()}):
            stable, completions = tok.encode_with_unstable(text, **kwargs)
            theirs_stable, theirs = enc.encode_with_unstable(text, **kwargs)
            assert stable == theirs_stable, (name, text)
            assert completions == sorted(completions) and {tuple(c) for c in completions} == {tuple(c) for c in theirs}, (name, text)


def test_encode_with_unstable_contract(cl100k: tuple[Tokenizer, Any]) -> None:
    """What tiktoken's docstring promises: the stable ids spell a prefix of the text, and each
    completion after them spells the text and possibly more."""
    tok, _ = cl100k
    for text in UNSTABLE_TEXTS:
        stable, completions = tok.encode_with_unstable(text, allowed_special="all")
        data = text.encode("utf-8")
        assert data.startswith(tok.decode_bytes(stable))
        assert all(tok.decode_bytes(stable + c).startswith(data) for c in completions), text
