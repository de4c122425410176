"""OpenAI's cl100k_base and o200k_base: presets, gzip-compressed files, and ids equal to tiktoken's.

The files are the real ones (../shared/fixtures/tiktoken/, gzip-compressed, checksums in its
README).  The oracle is tiktoken itself, built offline from the same files: tiktoken's own
definition of each encoding (`tiktoken_ext.openai_public.cl100k_base()`, which gives the pattern
and special tokens) with its loader pointed at the decompressed fixture instead of the URL, so
tiktoken's own loader reads the ranks and checks their SHA-256.  Every corpus document is compared
under --full-corpus, a sample by default.
"""

from __future__ import annotations

import base64
import random
import gzip
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mnemo
from mnemo import ConfigError, FormatError, SpecialTokenError, Tokenizer
from mnemo import interop
from mnemo.cli import main
from mnemo.interop import TIKTOKEN_PRESETS, load_tiktoken, save_tiktoken
from mnemo.pretokenize import PATTERN_REGEX

TIKTOKEN_DIR = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "tiktoken"  # beside the repo
PRESETS = ("cl100k_base", "o200k_base")
CORPORA = ("english", "multilingual", "code", "chat")
EOT = "<|endoftext|>"


def need(module: str) -> Any:
    return pytest.importorskip(module, reason=f"the {module} package is not installed (pip install '.[test]')")


def fixture_file(name: str) -> Path:
    path = TIKTOKEN_DIR / f"{name}.tiktoken.gz"
    if not path.is_file():
        pytest.skip(f"fixture {path} is absent (../shared/fixtures/tiktoken beside the repo)")
    return path


# ---- the oracle ----


def tiktoken_definition(name: str, tmp: Path) -> dict[str, Any]:
    """tiktoken's own constructor arguments for encoding `name`, offline: openai_public's function
    with load_tiktoken_bpe reading the decompressed fixture (tiktoken still checks the hash)."""
    need("tiktoken")
    openai_public = need("tiktoken_ext.openai_public")
    from tiktoken.load import load_tiktoken_bpe

    plain = tmp / f"{name}.tiktoken"
    plain.write_bytes(gzip.decompress(fixture_file(name).read_bytes()))

    def local(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        assert url.endswith(f"/{name}.tiktoken"), url
        return load_tiktoken_bpe(str(plain), expected_hash=expected_hash)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(tmp / "cache"))
        mp.setattr(openai_public, "load_tiktoken_bpe", local)
        return dict(getattr(openai_public, name)())


@pytest.fixture(scope="module", params=PRESETS)
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Tokenizer, Any]:
    """(name, mnemo's tokenizer from the preset, tiktoken's Encoding) for one vocabulary."""
    name: str = request.param
    tiktoken = need("tiktoken")
    args = tiktoken_definition(name, tmp_path_factory.mktemp(name))
    enc = tiktoken.Encoding(**args)
    tok = mnemo.load_tiktoken(fixture_file(name), name)
    return name, tok, enc


# ---- presets: what they hold ----


@pytest.mark.parametrize("name", PRESETS)
def test_preset_is_tiktokens_definition(name: str, tmp_path: Path) -> None:
    """Each preset's pattern splits with exactly tiktoken's pat_str, its special tokens are
    tiktoken's, and its checksum is the one tiktoken checks."""
    args = tiktoken_definition(name, tmp_path)
    pattern, digest, specials = TIKTOKEN_PRESETS[name]
    assert PATTERN_REGEX[pattern] == args["pat_str"]
    assert specials == args["special_tokens"]
    assert hashlib.sha256(gzip.decompress(fixture_file(name).read_bytes())).hexdigest() == digest


def test_unknown_preset_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown pattern or preset 'gpt-4o'.*cl100k_base, o200k_base") as err:
        load_tiktoken(tmp_path / "absent.tiktoken", "gpt-4o")  # checked before the file is read
    assert "mnemonic, gpt4, gpt2, o200k, cl100k" in str(err.value)
    with pytest.raises(ConfigError, match=r"'p50k_codex'"):  # p50k_base is a preset now (test_tiktoken_dropin.py)
        mnemo.load_tiktoken(tmp_path / "absent.tiktoken", "p50k_codex")


def test_preset_with_special_tokens_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"preset 'o200k_base' sets the special tokens.*'o200k'"):
        load_tiktoken(tmp_path / "absent.tiktoken", "o200k_base", {EOT: 5})


@pytest.mark.parametrize("compress", [False, True])
def test_wrong_checksum_is_a_format_error(tmp_path: Path, compress: bool) -> None:
    """A file that is not OpenAI's: FormatError naming the file, both digests and the way out."""
    body = b"".join(b"%s %d\n" % (base64.b64encode(bytes([b])), b) for b in range(256))
    path = tmp_path / "small.tiktoken"
    path.write_bytes(gzip.compress(body) if compress else body)
    digest = hashlib.sha256(body).hexdigest()
    with pytest.raises(FormatError) as err:
        load_tiktoken(path, "cl100k_base")
    message = str(err.value)
    assert str(path) in message and digest in message and TIKTOKEN_PRESETS["cl100k_base"][1] in message
    assert "load_tiktoken(path, 'cl100k'" in message
    # with the pattern instead of the preset, the same file loads
    assert load_tiktoken(path, "cl100k").n_vocab == 256


# ---- gzip ----


@pytest.fixture(scope="module")
def gpt2_tiktoken(cs336_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tokenizer, Path]:
    vocab, merges = cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt"
    if not vocab.exists() or not merges.exists():
        pytest.skip(f"GPT-2 fixture files absent in {cs336_dir}")
    tok = interop.load_gpt2(vocab, merges)
    path = tmp_path_factory.mktemp("gz") / "gpt2.tiktoken"
    save_tiktoken(tok, path)
    return tok, path


def test_gzipped_tiktoken_loads_as_the_plain_file(gpt2_tiktoken: tuple[Tokenizer, Path]) -> None:
    tok, plain = gpt2_tiktoken
    packed = plain.with_name("gpt2.tiktoken.gz")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a = load_tiktoken(plain, "gpt2", {EOT: 50256})
    b = load_tiktoken(packed, "gpt2", {EOT: 50256})
    assert a == b and a.fingerprint == b.fingerprint
    text = "Hello world, it's a gzipped vocabulary."
    assert b.encode(text) == tok.encode(text)


def test_damaged_gzip_is_a_format_error(gpt2_tiktoken: tuple[Tokenizer, Path], tmp_path: Path) -> None:
    data = gzip.compress(gpt2_tiktoken[1].read_bytes())
    cut = tmp_path / "cut.tiktoken.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match=r"cut\.tiktoken\.gz: starts as a gzip file does.*does not decompress"):
        load_tiktoken(cut, "gpt2")
    flipped = bytearray(data)
    flipped[-6] ^= 0xFF  # the CRC
    bad = tmp_path / "crc.tiktoken.gz"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(FormatError, match=r"crc\.tiktoken\.gz: starts as a gzip file does"):
        load_tiktoken(bad, "gpt2")


def test_gzip_bomb_is_bounded(tmp_path: Path) -> None:
    """A small .gz that decompresses past the bound: refused after reading bound + 1 bytes."""
    bomb = tmp_path / "bomb.tiktoken.gz"
    bomb.write_bytes(gzip.compress(b"A" * (interop.MAX_TEXT_FILE_BYTES + 10), compresslevel=1))
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(FormatError, match=r"bomb\.tiktoken\.gz: decompresses to more than 67,108,864 bytes"):
        load_tiktoken(bomb, "gpt2")


def test_errors_in_a_gzipped_file_name_the_decompressed_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.tiktoken.gz"
    path.write_bytes(gzip.compress(b"YQ== 0\nnot-base64! 1\n"))
    with pytest.raises(FormatError, match=r"bad\.tiktoken\.gz \(decompressed\): line 2: 'not-base64!'"):
        load_tiktoken(path, "gpt2")


# ---- the command line ----


def _mnemo(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """`mnemo ARGS` in this process: the exit status and what went to stderr."""
    capsys.readouterr()
    status = main(list(args))
    return status, capsys.readouterr().err


def test_cli_preset_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "x.tiktoken"
    src.write_bytes(b"YQ== 0\n")
    out = tmp_path / "out.bin"
    convert = ("convert", "--from", "tiktoken", "--to", "mnemo")
    status, err = _mnemo(capsys, *convert, "--preset", "o200k", str(src), str(out))
    assert status != 0 and "unknown preset 'o200k': use cl100k_base or o200k_base" in err
    status, err = _mnemo(capsys, *convert, "--preset", "o200k_base", "--pattern", "o200k", str(src), str(out))
    assert status != 0 and "--preset sets the pattern and the special tokens" in err
    status, err = _mnemo(capsys, *convert, str(src), str(out))
    assert status != 0 and "--preset (cl100k_base or o200k_base" in err
    status, err = _mnemo(capsys, *convert, "--preset", "cl100k_base", str(src), str(out))
    assert status != 0 and "SHA-256" in err and "Traceback" not in err
    status, err = _mnemo(capsys, "convert", "--from", "mnemo", "--to", "tiktoken", "--preset", "cl100k_base", str(src), str(out))
    assert status != 0 and "--preset is for --from tiktoken only" in err
    assert not out.exists()


# ---- ids equal to tiktoken's ----


def test_preset_tokenizer_matches_tiktoken_shape(pair: tuple[str, Tokenizer, Any]) -> None:
    name, tok, enc = pair
    assert tok.pattern == TIKTOKEN_PRESETS[name][0]
    assert tok.special_tokens == enc._special_tokens
    assert tok.n_vocab == enc.n_vocab and tok.max_token_value == enc.max_token_value
    assert tok.eot_token == enc.eot_token


def test_cli_convert_preset(pair: tuple[str, Tokenizer, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mnemo convert --from tiktoken --preset NAME` writes a tokenizer.bin that encodes as tiktoken."""
    name, tok, enc = pair
    out = tmp_path / f"{name}.bin"
    status, err = _mnemo(capsys, "convert", "--from", "tiktoken", "--to", "mnemo", "--preset", name, str(fixture_file(name)), str(out))
    assert status == 0, err
    loaded = Tokenizer.load(out)
    assert loaded == tok
    text = "Hello, CamelCase world!\n\n  It's 12345 o'clock: naïve café //\r\n" + EOT
    assert loaded.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")


def _with_specials(docs: list[str], specials: list[str]) -> list[str]:
    """Documents joined pairwise with a special token's text between them (each special in turn)."""
    return [a + specials[k % len(specials)] + b for k, (a, b) in enumerate(zip(docs[::2], docs[1::2]))]


@pytest.mark.corpus
@pytest.mark.parametrize("corpus", CORPORA)
def test_corpus_ids_equal_tiktoken(
    pair: tuple[str, Tokenizer, Any], corpus: str, corpus_docs: Callable[..., list[str]], full_corpus: bool
) -> None:
    """Every document (sample by default): encode_ordinary; then the documents joined pairwise
    by special-token text, with specials allowed (the specials' ids between the texts' ids),
    disallowed (both raise) and not special (disallowed_special=(): the text of the special is
    encoded as text).  On the sample, also the other entry points over the same texts (encode
    of a document without special text, encode with all specials allowed, encode_ordinary of a
    joined text); --full-corpus leaves out these repeats of the same work, which would double
    its time."""
    name, tok, enc = pair
    docs = corpus_docs(corpus, max_bytes=300_000)
    assert docs
    for k, doc in enumerate(docs):
        theirs = enc.encode_ordinary(doc)
        assert tok.encode_ordinary(doc) == theirs, f"{name} {corpus} document {k}"
        if not full_corpus:
            if not any(s in doc for s in tok.special_tokens):
                assert tok.encode(doc) == theirs, f"{name} {corpus} document {k}"
            assert tok.encode(doc, allowed_special="all") == enc.encode(doc, allowed_special="all")
    specials = sorted(tok.special_tokens)
    for k, text in enumerate(_with_specials(docs, specials)):
        where = f"{name} {corpus} joined text {k}"
        assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all"), where
        assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=()), where
        if not full_corpus:
            assert tok.encode_ordinary(text) == enc.encode_ordinary(text), where
        with pytest.raises(ValueError):
            enc.encode(text)
        with pytest.raises(SpecialTokenError):
            tok.encode(text)
    if full_corpus:
        print(f"\n{name} {corpus}: {len(docs)} documents identical to tiktoken")


def test_hard_texts_equal_tiktoken(pair: tuple[str, Tokenizer, Any]) -> None:
    """Texts aimed at each pattern's corners: case transitions, marks, contractions, '/' and
    CR/LF after punctuation, white space at the end (cl100k's \\s++$), long runs."""
    name, tok, enc = pair
    texts = [
        "", "a\n ", "x\n\n  ", "HelloWorld iPhone HTTPServer", "DON'T I'm they'reX it'sy",
        "e\u0301t\u00e9 E\u0301T \u0301\u0301A !\u0301x", "x!/\n/y a/b a; //x", " .\r\n", "\u01c5ungla A\u02b0 \u4e2d\u6587AB",
        "12345 \u0661\u0662\u0663\u0664", "\t\t\nx  ", "   " * 40, "a" * 5000, "Ab" * 3000, "\U0001f600" * 100,
        "<|endoftext|>x\n <|endofprompt|>", "line\r\n\r\n\tindented\n", "\u00a0\u3000word\u2028",
    ]  # fmt: skip
    for text in texts:
        assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all"), (name, text[:40])
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), (name, text[:40])


def test_flat_batch_form_equals_tiktoken(pair: tuple[str, Tokenizer, Any]) -> None:
    """encode_batch_to_numpy in this process with a vocabulary of 32-bit ids: texts packed by
    the compiled encoder and gathered through the id map, a text with an allowed special token
    through the list path; uint32 ids equal to tiktoken's, text by text."""
    _, tok, enc = pair
    texts = ["Hello world, héllo!", "", "x<|endoftext|>y 12345", "  \n\tcode(x) == 3;" * 40, "日本語のテキスト"]
    flat, offsets = tok.encode_batch_to_numpy(texts, allowed_special="all", workers=1)
    assert flat.dtype.name == "uint32"
    got = [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    assert got == [enc.encode(t, allowed_special="all") for t in texts]


@pytest.mark.corpus
def test_grown_long_word_table_equals_tiktoken(pair: tuple[str, Tokenizer, Any], corpus_docs: Callable[..., list[str]]) -> None:
    """The long-word table grows when its room for cached chunks runs out (Encoder.grow_lwords,
    after ~1.5 MB of multilingual text with cl100k); here its room is cut to 64 so that it
    grows within the first documents: the ids of multilingual text before, across and after the
    doubling, and of the same text again (found in the grown table), are tiktoken's."""
    name, tok, enc = pair
    e = tok._encoder
    e.clear_cache()
    size = e.lwords_mask + 1
    e.lwords_room = 64
    docs = corpus_docs("multilingual", max_bytes=150_000)
    for rep in range(2):
        for k, doc in enumerate(docs):
            assert tok.encode_ordinary(doc) == enc.encode_ordinary(doc), f"{name} pass {rep} document {k}"
    assert e.lwords_mask + 1 == 2 * size
    e.clear_cache()
    assert e.lwords_room == e.lwords_limit


def test_bypassed_chunks_equal_tiktoken(pair: tuple[str, Tokenizer, Any]) -> None:
    """Text whose chunks the tables keep missing (base64 and latin-1 text of random bytes) takes
    the encoder's bypass (chunk lengths that keep missing go straight to BPE, encode_chunk's
    MISS_STEP), between English that turns it off again: the ids stay tiktoken's."""
    from mnemo.encode_chunk import BYPASS_ON

    name, tok, enc = pair
    rng = random.Random(29)
    english = "The quick brown fox jumps over the lazy dog, because everything was there. " * 400
    texts = [
        base64.b64encode(rng.randbytes(150_000)).decode("ascii"),
        english,
        rng.randbytes(100_000).decode("latin-1"),
        english + base64.b64encode(rng.randbytes(30_000)).decode("ascii") + english,
    ]
    tok._encoder.clear_cache()
    engaged = False
    for text in texts:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), (name, text[:40])
        engaged = engaged or any(tok._encoder.misses[n] > BYPASS_ON for n in range(len(tok._encoder.misses)))
    assert engaged


def _long_tracked_lists(tok: Tokenizer) -> list[str]:
    """The names of the tokenizer's lists (its own and its encoder's) of 1,000 items or more
    that the cyclic GC tracks."""
    import gc

    enc = tok._encoder
    held: dict[str, object] = dict(vars(tok))
    held.update({f"_encoder.{k}": getattr(enc, k) for k in ("ints", "id_objects", "spelled")})
    return [k for k, v in held.items() if isinstance(v, list) and len(v) >= 1000 and gc.is_tracked(v)]


def test_a_loaded_vocabularys_long_lists_are_not_walked_by_the_gc(tmp_path: Path) -> None:
    """Every loader leaves the vocabulary's long lists (merges, ids, tokens) untracked
    (kernels.untrack_atoms, kernels.pair_list): each full collection of the process walked
    them item by item, 7-14 ms for cl100k/o200k.  The tokenizers still encode alike."""
    import pickle

    tok = mnemo.load_tiktoken(fixture_file("cl100k_base"), "cl100k_base")
    tok.save(tmp_path / "tokenizer.bin")
    interop.save_hf(tok, tmp_path / "tokenizer.json")
    forms = {
        "load_tiktoken": tok,
        "Tokenizer.load": Tokenizer.load(tmp_path / "tokenizer.bin"),
        "pickle": pickle.loads(pickle.dumps(tok)),
        "tokenizer.json": mnemo.load(tmp_path / "tokenizer.json"),
    }
    text = "The untracked lists 1234 of ids — and tokens, 😀."
    for form, got in forms.items():
        assert _long_tracked_lists(got) == [], form
        assert len(got.merges) > 99_000 and got.encode_ordinary(text) == tok.encode_ordinary(text), form


def test_the_encoder_asks_for_huge_pages_after_enough_text() -> None:
    """A cl100k-sized encoder puts its tables on huge pages (kernels.huge_pages: the kernel copies
    them, 5-65 ms) once HUGE_AFTER bytes of text have gone through it, not when it is loaded; a
    small vocabulary's never asks.  The ids are the same before and after."""
    from mnemo.encode_chunk import HUGE_AFTER

    tok = mnemo.load_tiktoken(fixture_file("cl100k_base"), "cl100k_base")
    enc = tok._encoder
    assert enc.huge_after == HUGE_AFTER
    text = "Counted 1234 bytes, — and tokens, 😀." + " " * 1000 + "\n"  # runs of spaces: fast
    part = text * (HUGE_AFTER // 2 // len(text.encode()))
    first = tok.encode_ordinary(part)
    assert 0 < enc.huge_after <= HUGE_AFTER - len(part.encode())
    second = tok.encode_ordinary(part + part)
    assert enc.huge_after == -1
    assert second == first + first and tok.encode_ordinary(text) == first[: len(tok.encode_ordinary(text))]
    small = mnemo.Tokenizer([(104, 105)])
    assert small._encoder.huge_after == -1
