"""Fixtures the format tests share (tests/formats/): GPT-2's files from the cs336 fixtures,
the Tokenizer load_gpt2 makes of them, tiktoken's own Encoding of the same files (the oracle), a
mnemo-trained vocabulary, the special-token fixture texts, and one Hugging Face tokenizer.json
per byte-level BPE family (Llama 3, Qwen2, DeepSeek-V3, StarCoder2 style), trained by
`tokenizers` itself on the corpora."""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemo import Tokenizer
from mnemo.formats.gpt2 import load_gpt2

EOT = "<|endoftext|>"


@pytest.fixture(scope="session")
def gpt2_paths(cs336_dir: Path) -> tuple[Path, Path]:
    vocab, merges = cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt"
    if not vocab.exists() or not merges.exists():
        pytest.skip(f"GPT-2 fixture files absent in {cs336_dir}")
    return vocab, merges


@pytest.fixture(scope="session")
def gpt2(gpt2_paths: tuple[Path, Path]) -> Tokenizer:
    return load_gpt2(*gpt2_paths)


@pytest.fixture(scope="session")
def tiktoken_gpt2(gpt2_paths: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tiktoken's Encoding built by tiktoken's own loader from the same two files."""
    tiktoken = pytest.importorskip("tiktoken", reason="the tiktoken package is not installed (pip install '.[test]')")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import r50k_pat_str

    vocab, merges = gpt2_paths
    # tiktoken's loader drops the first line of vocab.bpe (`#version: 0.2`), which the fixture lacks.
    bpe = tmp_path_factory.mktemp("gpt2") / "vocab.bpe"
    bpe.write_text("#version: 0.2\n" + merges.read_text(encoding="utf-8"), encoding="utf-8")
    ranks = data_gym_to_mergeable_bpe_ranks(str(bpe), str(vocab))
    return tiktoken.Encoding(
        name="gpt2-fixture",
        pat_str=r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={EOT: 50256},
    )


@pytest.fixture(scope="session")
def trained(corpus_docs: Callable[..., list[str]]) -> Tokenizer:
    """A mnemo-trained vocabulary (mnemonic pattern, default specials): no id map."""
    import mnemo

    docs = corpus_docs("english", max_bytes=600_000) + corpus_docs("code", max_bytes=300_000)
    return mnemo.train_from_iterator(iter(docs), vocab_size=2048, workers=1)


@pytest.fixture(scope="session")
def special_fixtures(cs336_dir: Path) -> dict[str, str]:
    """The cs336 fixture texts around special tokens, by file name."""
    names = (
        "address.txt",
        "german.txt",
        "tinystories_sample.txt",
        "special_token_trailing_newlines.txt",
        "special_token_double_newlines_non_whitespace.txt",
    )
    return {name: (cs336_dir / name).read_text(encoding="utf-8") for name in names}


# ---- Hugging Face tokenizer.json families, built by `tokenizers` itself ----------------------------

#: The pre-tokenizer regexes as those models' published tokenizer.json files spell them
#: (Oniguruma syntax: what `tokenizers` compiles).
LLAMA3_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN2_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
DEEPSEEK_V3_REGEXES = (
    r"""\p{N}{1,3}""",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
)
HF_FAMILIES = ("llama3", "qwen2", "deepseek-v3", "starcoder2")
#: Added tokens every family gets beside its own specials (the hard cases of issue 26 item 3):
#: (content, special, lstrip, rstrip, single_word, normalized)
EXTRA_ADDED = (
    ("<|ls|>", True, True, False, False, False),
    ("<|rs|>", True, False, True, False, False),
    ("<|both|>", True, True, True, False, False),
    ("dog", False, False, False, True, True),
    ("<think>", False, False, False, False, False),
    ("e\u0301clair", False, False, False, False, True),
    ("<|sw|>", True, False, False, True, False),
)
FAMILY_VOCAB = 6000


def _build_family(name: str, train: list[str], out: Path) -> None:
    """One tokenizer.json of a family, trained by `tokenizers` on `train`, written to `out`."""
    import regex
    from tokenizers import AddedToken, Regex
    from tokenizers import Tokenizer as HFTokenizerObj
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

    def byte_level(use_regex: bool) -> Any:
        return pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=use_regex)

    def split(rx: str) -> Any:
        return pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False)

    specials = {
        "llama3": ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
        "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "deepseek-v3": ["<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"],
        "starcoder2": ["<|endoftext|>", "<fim_prefix>", "<fim_middle>"],
    }[name]
    tok = HFTokenizerObj(models.BPE(ignore_merges=name == "llama3"))
    if name == "qwen2":
        tok.normalizer = normalizers.NFC()
    elif name == "deepseek-v3":
        tok.normalizer = normalizers.Sequence([])
    if name == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([split(LLAMA3_REGEX), byte_level(False)])
    elif name == "qwen2":
        tok.pre_tokenizer = pre_tokenizers.Sequence([split(QWEN2_REGEX), byte_level(False)])
    elif name == "deepseek-v3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([*(split(r) for r in DEEPSEEK_V3_REGEXES), byte_level(False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level(True)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=FAMILY_VOCAB,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(train, trainer=trainer)
    if name in ("llama3", "deepseek-v3"):
        bos = specials[0]
        template = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos}:1 $B:1", special_tokens=[(bos, tok.token_to_id(bos))]
        )
        byte_post = processors.ByteLevel(trim_offsets=False)
        tok.post_processor = processors.Sequence([byte_post, template]) if name == "llama3" else template
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    obj = json.loads(tok.to_str())
    if name == "llama3":
        # Llama 3's file holds tokens no merge makes, which only ignore_merges' whole-word lookup
        # produces: add the most frequent words that BPE splits, as new vocabulary entries.
        counts: dict[str, int] = {}
        for text in train[:4000]:
            for word in regex.findall(r" ?\p{L}{4,}", text):
                counts[word] = counts.get(word, 0) + 1
        spell = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        vocab = obj["model"]["vocab"]
        added = 0
        for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            key = spell.pre_tokenize_str(word)[0][0]
            if key not in vocab and len(tok.encode(word, add_special_tokens=False).ids) >= 2:
                vocab[key] = len(vocab)
                added += 1
                if added == 300:
                    break
        tok = HFTokenizerObj.from_str(json.dumps(obj))
    # then the added tokens, which tokenizers numbers from the vocabulary's size on
    for content, special, lstrip, rstrip, single_word, normalized in EXTRA_ADDED:
        token = AddedToken(
            content, special=special, lstrip=lstrip, rstrip=rstrip, single_word=single_word, normalized=normalized
        )
        (tok.add_special_tokens if special else tok.add_tokens)([token])
    obj = json.loads(tok.to_str())
    text = json.dumps(obj, ensure_ascii=False, indent=1)
    HFTokenizerObj.from_str(text)  # tokenizers reads back what it is given
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)


@pytest.fixture(scope="session")
def hf_families(request: pytest.FixtureRequest, corpus_docs: Callable[..., list[str]]) -> dict[str, Path]:
    """family -> tokenizer.json (module docstring of test_hf_families.py), trained by `tokenizers`
    on the first 1.2 MB of each corpus and cached in pytest's cache folder under a key of the
    builder's source, the tokenizers version and the corpus files (training takes ~10 s each)."""
    import hashlib
    import inspect

    tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is not installed (pip install '.[test]')")
    corpus = [Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / f"{n}.jsonl.xz" for n in CORPORA_HF]
    stamp = hashlib.sha256()
    stamp.update(inspect.getsource(_build_family).encode())
    stamp.update(repr((EXTRA_ADDED, FAMILY_VOCAB, tokenizers.__version__)).encode())
    for path in corpus:
        stamp.update(f"{path.name}:{path.stat().st_size if path.exists() else -1}".encode())
    folder = Path(request.config.cache.mkdir(f"hf-families-{stamp.hexdigest()[:16]}"))
    out = {name: folder / f"{name}.json" for name in HF_FAMILIES}
    # `make test` runs the suite in several processes (pytest-xdist): one builds, the others wait
    with open(folder / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all(p.exists() for p in out.values()):
            train = [doc for n in CORPORA_HF for doc in corpus_docs(n, 1_200_000)]
            for name, path in out.items():
                if not path.exists():
                    _build_family(name, train, path)
    return out


CORPORA_HF = ("english", "multilingual", "code", "chat")


def _hard_cases(specials: list[str]) -> list[str]:
    """Texts where the parts of the pipeline meet (issue 26 item 3's list, and more)."""
    s0, s1 = specials[0], specials[-1]
    return [
        "",
        " ",
        "Hello world",
        f"Hello {s0} it",
        f"Hello{s0}it",
        f"  {s0}  {s1}\n{s0}{s0}",
        "Hello <|ls|> it and <|rs|>  there <|both|>   x",
        "   <|ls|>x <|rs|>\n\n y<|both|>",
        "<|ls|><|ls|>  <|rs|><|rs|>",
        "a dog, dogs, hotdog, dog_x, the dog. dog",
        "<|sw|> x<|sw|> <|sw|>y (<|sw|>)",
        "<think>reasoning</think> <think><think>",
        "e\u0301clair and \u00e9clair and eclair",
        "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, a\u0301\u0323b, \u1e0b\u0323, \u1100\u1161\u11a8",
        "\U00011935\U00011930 a\u1ac1\u0316 \u32ff \ufb01 \u2460 \u00bd",
        "1234567890 12 123 1234 \u0661\u0662\u0663 \u00b2\u00b3 2024-01-01 3.14159 0x1F 1,000,000",
        "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u6f22\u5b57\u3001\u30ab\u30bf\u30ab\u30ca\u3002"
        "\u4e2d\u6587\u5b57\u7b26\u4e32 \ud55c\uad6d\uc5b4",
        "I'LL don't WE'RE 'S 's 'sam they've",
        "  \n\n\t  x  \r\n  \u00a0\u3000 y \u2028 z\u0085",
        "x" * 3000 + " " * 2000 + "y",
        "\U0001f469\u200d\U0001f469\u200d\U0001f467 \U0001f1eb\U0001f1f7 caf\u00e9\u2019s",
        "def f(x):\n    return x**2  # \u00e7a\n\n\n",
        f"{s0}",
        f"{s0} ",
        f" {s1}",
    ]


@pytest.fixture(scope="session")
def hard_cases() -> Callable[[list[str]], list[str]]:
    """hard_cases(specials) -> texts where the parts of an HF pipeline meet (test_hf_families)."""
    return _hard_cases
