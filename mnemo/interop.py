"""Other tokenizers' files in and out, and the CS336 interface (docs/interop.md).

GPT-2 `vocab.json` + `merges.txt`, tiktoken's mergeable ranks and `.tiktoken` files, Hugging Face
`tokenizer.json`, and `(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]])`.  Every
importer validates what it reads and raises FormatError naming the file and the line or key; no
pickle anywhere.  Imported vocabularies keep their own ids through `Tokenizer.id_map`, so mnemo
gives exactly the ids the other tool gives.

Plain Python (not compiled): parsing and checking whole files once.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import heapq
import importlib
import io
import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from mnemo.errors import ConfigError, FormatError
from mnemo.fileio import read_file, write_atomic
from mnemo.location import Location, location
from mnemo.checks import check_pattern
from mnemo.pretokenize import PATTERN_REGEX
from mnemo.tokenizer import Tokenizer
from mnemo.vocab import as_format_error, from_byte_tokens

PathLike = str | os.PathLike[str]


# ---- GPT-2's printable byte alphabet ----


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable alphabet for the 256 bytes (its encoder.py): byte value -> character.

    Printable Latin-1 bytes stand for themselves; the other 68 (controls, space, 0x7f-0xa0,
    0xad) become chr(256), chr(257), ... in byte order, so every token is printable text.
    """
    printable = {*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    table: dict[int, str] = {}
    extra = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_CHAR: Final = bytes_to_unicode()
CHAR_TO_BYTE: Final = {c: b for b, c in BYTE_TO_CHAR.items()}


def token_to_string(raw: bytes) -> str:
    """A token's bytes spelt in GPT-2's alphabet (b" the" -> "Ġthe")."""
    return "".join([BYTE_TO_CHAR[b] for b in raw])


def string_to_token(text: str, where: str) -> bytes:
    """The bytes a GPT-2-alphabet string stands for; FormatError (naming `where`) otherwise."""
    try:
        return bytes([CHAR_TO_BYTE[c] for c in text])
    except KeyError as exc:
        raise FormatError(
            f"{where}: token {text!r} holds {exc.args[0]!r}, which is not in GPT-2's byte alphabet "
            f"(this is not a byte-level BPE vocabulary)"
        ) from None


# ---- the one assembler every importer goes through ----


def _show(raw: bytes) -> str:
    return repr(token_to_string(raw))


def assemble(
    source: str,
    vocab: Mapping[bytes, int],
    merges: Sequence[tuple[bytes, bytes]],
    *,
    pattern: str,
    specials: Mapping[str, int] | None = None,
    merge_where: Callable[[int], str] = lambda k: f"merge {k}",
    vocab_where: Callable[[bytes], str] = _show,
    leftover_name: Callable[[bytes], str] | None = None,
) -> Tokenizer:
    """A Tokenizer from byte-level tokens with their ids (vocab.from_byte_tokens, tokens spelt in
    GPT-2's alphabet in messages); a vocabulary rule the source breaks is a FormatError."""
    fields = from_byte_tokens(
        source,
        vocab,
        merges,
        pattern=pattern,
        specials=specials,
        show=_show,
        merge_where=merge_where,
        vocab_where=vocab_where,
        leftover_name=leftover_name,
    )
    try:
        return Tokenizer(fields.merges, pattern=fields.pattern, special_tokens=fields.special_tokens, id_map=fields.id_map)
    except ConfigError as exc:
        raise as_format_error(source, exc) from None


def _regular_ids(tok: Tokenizer) -> list[int]:
    specials = set(tok.special_tokens.values())
    return [i for i in tok.vocab if i not in specials]  # tok.vocab: no holes


#: The largest vocab.json, merges.txt, .tiktoken or tokenizer.json mnemo reads.  A vocabulary of
#: MAX_VOCAB = 65,536 ids makes files of a few MB (GPT-2's vocab.json is 1.0 MB, its merges.txt
#: 0.5 MB; cl100k_base.tiktoken, with 100,256 ids, 1.7 MB; Llama 3's tokenizer.json, 128,256 ids,
#: 9 MB): 64 MiB leaves room for long tokens, and bounds what a wrong path can cost.
MAX_TEXT_FILE_BYTES: Final = 64 << 20


def _read_text(path: PathLike, what: str) -> str:
    data = read_file(path, MAX_TEXT_FILE_BYTES, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{os.fspath(path)}: offset {exc.start}: not valid UTF-8") from None


def _excerpt(value: Any, limit: int) -> str:
    """The start of a parsed JSON value, for a message (a value nested deeper than json.dumps
    goes is described instead)."""
    try:
        return json.dumps(value)[:limit]
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} nested too deeply to show"


def _load_json(path: PathLike, what: str) -> Any:
    source = os.fspath(path)

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise FormatError(f"{source}: key {key!r} appears twice")
            out[key] = value
        return out

    try:
        return json.loads(_read_text(path, what), object_pairs_hook=no_repeats)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{source}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise FormatError(f"{source}: the JSON is nested too deeply to read: not a {what}") from None


# ---- GPT-2: vocab.json + merges.txt ----


def _gpt2_vocab(obj: Any, source: str, where: str = "") -> dict[bytes, int]:
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: {where or 'the file'} should be a JSON object mapping tokens to ids")
    vocab: dict[bytes, int] = {}
    for key, value in obj.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise FormatError(f"{source}: key {where}{key!r}: the id {value!r} is not an integer")
        raw = string_to_token(key, f"{source}: key {where}{key!r}")
        vocab[raw] = value
    return vocab


def parse_merges_txt(text: str, source: str) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    """merges.txt as byte pairs, with the 1-based line of each (a `#version` first line is skipped)."""
    merges: list[tuple[bytes, bytes]] = []
    lines: list[int] = []
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line or (n == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise FormatError(f"{source}: line {n}: {line!r} should be two tokens separated by one space")
        where = f"{source}: line {n}"
        merges.append((string_to_token(parts[0], where), string_to_token(parts[1], where)))
        lines.append(n)
    return merges, lines


def load_gpt2(vocab_path: PathLike, merges_path: PathLike, *, pattern: str = "gpt2") -> Tokenizer:
    """A Tokenizer from GPT-2's `vocab.json` (encoder.json) and `merges.txt` (vocab.bpe).

    Vocabulary entries that no merge makes (`<|endoftext|>`) become special tokens with their ids.
    """
    vsource, msource = os.fspath(vocab_path), os.fspath(merges_path)
    vocab = _gpt2_vocab(_load_json(vocab_path, "vocab.json"), vsource)
    merges, lines = parse_merges_txt(_read_text(merges_path, "merges.txt"), msource)
    return assemble(
        f"{vsource} + {msource}",
        vocab,
        merges,
        pattern=check_pattern(pattern),
        merge_where=lambda k: f"{msource}: line {lines[k]}",
        leftover_name=token_to_string,  # the vocab.json key itself
    )


def gpt2_vocab(tok: Tokenizer) -> dict[str, int]:
    """The vocab.json mapping: GPT-2-alphabet token -> id; special tokens under their names."""
    specials = {i: s for s, i in tok.special_tokens.items()}
    out: dict[str, int] = {}
    for i, raw in tok.vocab.items():  # no holes
        key = specials.get(i)
        if key is None:
            key = token_to_string(raw)
        if key in out:
            raise ConfigError(f"ids {out[key]} and {i} are both {key!r}: a vocab.json cannot hold both")
        out[key] = i
    return out


def gpt2_merges(tok: Tokenizer) -> list[tuple[str, str]]:
    """The merges in priority order, spelt in GPT-2's alphabet."""
    return [(token_to_string(a), token_to_string(b)) for a, b in tok.merge_pairs]


def save_gpt2(tok: Tokenizer, vocab_path: PathLike, merges_path: PathLike) -> None:
    """Write vocab.json and merges.txt (with OpenAI's `#version: 0.2` first line)."""
    vocab = json.dumps(gpt2_vocab(tok), ensure_ascii=False)
    lines = ["#version: 0.2", *(f"{a} {b}" for a, b in gpt2_merges(tok))]
    write_atomic(vocab_path, vocab.encode("utf-8"))
    write_atomic(merges_path, ("\n".join(lines) + "\n").encode("utf-8"))


# ---- tiktoken ----


def mergeable_ranks(tok: Tokenizer) -> dict[bytes, int]:
    """tiktoken's `mergeable_ranks`: the bytes of every non-special token -> its id."""
    ranks: dict[bytes, int] = {}
    for i in _regular_ids(tok):
        raw = tok.token_bytes(i)
        if raw in ranks:
            raise ConfigError(f"ids {ranks[raw]} and {i} are both {raw!r}: tiktoken ranks cannot hold both")
        ranks[raw] = i
    return ranks


def tiktoken_args(tok: Tokenizer, name: str = "mnemo") -> dict[str, Any]:
    """Keyword arguments of `tiktoken.Encoding(**...)`: name, pat_str, mergeable_ranks, special_tokens."""
    return {
        "name": name,
        "pat_str": PATTERN_REGEX[tok.pattern],
        "mergeable_ranks": mergeable_ranks(tok),
        "special_tokens": dict(tok.special_tokens),
    }


def to_tiktoken(tok: Tokenizer, name: str = "mnemo") -> Any:
    """A ready `tiktoken.Encoding` that encodes as `tok` does (needs tiktoken installed).

    Typed Any and imported by name: tiktoken is optional, and the build type-checks without it.
    """
    try:
        tiktoken = importlib.import_module("tiktoken")
    except ImportError:
        raise ConfigError("to_tiktoken needs the tiktoken package: pip install tiktoken") from None
    return tiktoken.Encoding(**tiktoken_args(tok, name))


def save_tiktoken(tok: Tokenizer, path: PathLike) -> None:
    """A `.tiktoken` file: one `base64(token) rank` line per token, by rank (no specials, no pattern)."""
    ranks = sorted(mergeable_ranks(tok).items(), key=lambda item: item[1])
    text = "".join(f"{base64.b64encode(raw).decode('ascii')} {rank}\n" for raw, rank in ranks)
    write_atomic(path, text.encode("ascii"))


#: The longest rank a .tiktoken line may hold (ranks are ids: far below 10**18).
MAX_RANK_DIGITS: Final = 18


def parse_tiktoken(text: str, source: str) -> tuple[dict[bytes, int], dict[bytes, int]]:
    """A `.tiktoken` file's ranks, and the line of each token."""
    ranks: dict[bytes, int] = {}
    where: dict[bytes, int] = {}
    rank_line: dict[int, int] = {}
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise FormatError(f"{source}: line {n}: {line[:60]!r} should be 'BASE64 RANK'")
        try:
            raw = base64.b64decode(parts[0], validate=True)
        except (binascii.Error, ValueError):
            raise FormatError(f"{source}: line {n}: {parts[0][:60]!r} is not valid base64") from None
        # ASCII digits only: str.isdigit() takes "²", which int() refuses; and a bounded length,
        # so a rank of a million digits is not converted (nor a huge range built from it later).
        if not (parts[1].isascii() and parts[1].isdigit()) or len(parts[1]) > MAX_RANK_DIGITS:
            raise FormatError(
                f"{source}: line {n}: rank {parts[1][:20]!r} is not a non-negative integer of at most "
                f"{MAX_RANK_DIGITS} digits"
            )
        rank = int(parts[1])
        if not raw:
            raise FormatError(f"{source}: line {n}: the token is empty")
        if raw in ranks:
            raise FormatError(f"{source}: line {n}: token {raw!r} is listed again (first on line {where[raw]})")
        if rank in rank_line:
            raise FormatError(f"{source}: line {n}: rank {rank} is given again (first on line {rank_line[rank]})")
        ranks[raw] = rank
        where[raw] = n
        rank_line[rank] = n
    if not ranks:
        raise FormatError(f"{source}: no ranks in the file")
    top = max(rank_line)
    if top != len(ranks) - 1:
        # the ranks are distinct, so one of 0..len-1 is missing; never range(top + 1): top may be 10**11
        missing = next(r for r in range(len(ranks)) if r not in rank_line)
        raise FormatError(f"{source}: no token has rank {missing} but ranks go up to {top} (ranks have gaps)")
    return ranks, where


def _split_by_ranks(raw: bytes, ranks: Mapping[bytes, int], limit: int) -> list[bytes]:
    """tiktoken's byte-pair merge of `raw` using only ranks below `limit`: repeatedly merge the
    adjacent pair of lowest rank, the leftmost of equals.  A heap of candidate pairs with lazy
    deletion keeps it O(n log n) in the token's length (rescanning every pair for every merge
    took 5.5 s for one 8,000-byte token)."""
    n = len(raw)
    if n < 2:
        return [raw] if n else []
    nxt = list(range(1, n + 1))  # part starting at i ends at nxt[i]
    prv = list(range(-1, n - 1))  # the part before the one starting at i
    alive = [True] * n
    heap: list[tuple[int, int, int, int]] = []  # (rank, left start, right start, right end)

    def push(a: int) -> None:
        b = nxt[a]
        if b < n:
            r = ranks.get(raw[a : nxt[b]], limit)
            if r < limit:
                heapq.heappush(heap, (r, a, b, nxt[b]))

    for i in range(n - 1):
        push(i)
    while heap:
        _, a, b, end = heapq.heappop(heap)
        if not alive[a] or nxt[a] != b or not alive[b] or nxt[b] != end:
            continue  # stale: one of the two parts has grown since
        alive[b] = False
        nxt[a] = end
        if end < n:
            prv[end] = a
        push(a)
        if prv[a] >= 0:
            push(prv[a])
    parts: list[bytes] = []
    i = 0
    while i < n:
        parts.append(raw[i : nxt[i]])
        i = nxt[i]
    return parts


def merges_from_ranks(ranks: Mapping[bytes, int], source: str, where: Callable[[bytes], str]) -> list[tuple[bytes, bytes]]:
    """The merges behind mergeable ranks: each multi-byte token, by rank, is the pair tiktoken's
    own merging of its bytes ends with (using only lower ranks)."""
    merges: list[tuple[bytes, bytes]] = []
    for raw, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(raw) < 2:
            continue
        parts = _split_by_ranks(raw, ranks, rank)
        if len(parts) != 2:
            raise FormatError(
                f"{source}: {where(raw)}: token {raw!r} (rank {rank}) is not the merge of two lower-ranked "
                f"tokens (merging its bytes stops at {len(parts)} parts)"
            )
        merges.append((parts[0], parts[1]))
    return merges


def from_mergeable_ranks(
    ranks: Mapping[bytes, int],
    pattern: str,
    special_tokens: Mapping[str, int] | None = None,
    source: str = "<mergeable_ranks>",
    where: Callable[[bytes], str] | None = None,
) -> Tokenizer:
    """A Tokenizer from tiktoken's mergeable ranks (rank = id), a pattern name and specials."""
    name_of = where or (lambda raw: f"token {raw!r}")
    merges = merges_from_ranks(ranks, source, name_of)
    return assemble(source, ranks, merges, pattern=check_pattern(pattern), specials=special_tokens, vocab_where=name_of)


#: OpenAI's encodings as tiktoken 0.12 defines them (tiktoken_ext/openai_public.py): the mnemo
#: pattern that splits as theirs does, the SHA-256 tiktoken checks (of the decompressed file), and
#: the special tokens.  ../shared/fixtures/tiktoken/README.md lists the same.
TIKTOKEN_PRESETS: Final[dict[str, tuple[str, str, dict[str, int]]]] = {
    "cl100k_base": (
        "cl100k",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (
        "o200k",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}

GZIP_MAGIC: Final = b"\x1f\x8b"


def read_tiktoken_bytes(path: PathLike) -> tuple[bytes, str]:
    """A .tiktoken file's bytes, decompressed when it is gzip (known by its first two bytes, as
    the files are shipped: cl100k_base.tiktoken.gz), and the name to give in messages.  Both the
    file and what it decompresses to are bounded by MAX_TEXT_FILE_BYTES: a gzip bomb costs that
    much and no more."""
    source = os.fspath(path)
    data = read_file(path, MAX_TEXT_FILE_BYTES, ".tiktoken file")
    if data[:2] != GZIP_MAGIC:
        return data, source
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_TEXT_FILE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(
            f"{source}: starts as a gzip file does (1f 8b) but does not decompress ({exc}): the file is damaged "
            "or cut short; download it again"
        ) from None
    if len(out) > MAX_TEXT_FILE_BYTES:
        raise FormatError(
            f"{source}: decompresses to more than {MAX_TEXT_FILE_BYTES:,} bytes, the most mnemo reads as a "
            ".tiktoken file: check that the path names one"
        )
    return out, f"{source} (decompressed)"


def load_tiktoken(path: PathLike, pattern: str, special_tokens: Mapping[str, int] | None = None) -> Tokenizer:
    """A Tokenizer from a `.tiktoken` rank file (gzip-compressed or not).

    `pattern` is a mnemo pattern name, with the special tokens' ids in `special_tokens`; or the
    name of one of OpenAI's encodings, "cl100k_base" or "o200k_base" (TIKTOKEN_PRESETS), which
    sets the pattern and the special tokens as tiktoken's encoding of that name has them, and
    checks the file's SHA-256 as tiktoken does: load_tiktoken("o200k_base.tiktoken",
    "o200k_base") encodes as tiktoken.get_encoding("o200k_base").
    """
    preset = TIKTOKEN_PRESETS.get(pattern)
    if preset is None:
        if pattern not in PATTERN_REGEX:
            raise ConfigError(
                f"unknown pattern or preset {pattern!r}: give a pattern ({', '.join(PATTERN_REGEX)}) with the "
                f"special tokens, or a preset ({', '.join(TIKTOKEN_PRESETS)})"
            )
    elif special_tokens is not None:
        raise ConfigError(
            f"the preset {pattern!r} sets the special tokens; to choose others, give its pattern instead: "
            f"load_tiktoken(path, {preset[0]!r}, special_tokens={{...}})"
        )
    data, source = read_tiktoken_bytes(path)
    if preset is not None:
        name = pattern
        pattern, expected, special_tokens = preset
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            raise FormatError(
                f"{source}: SHA-256 {digest}, not {expected}: this is not OpenAI's {name}.tiktoken, which the "
                f"preset {name!r} stands for (tiktoken refuses it too); to load it anyway, give its pattern and "
                f"special tokens: load_tiktoken(path, {pattern!r}, special_tokens={{...}})"
            )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{source}: offset {exc.start}: not valid UTF-8") from None
    ranks, lines = parse_tiktoken(text, source)
    return from_mergeable_ranks(ranks, pattern, special_tokens, source, lambda raw: f"line {lines[raw]}")


# ---- Hugging Face tokenizer.json ----

HF_GPT2_REGEX: Final = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def to_hf_json(tok: Tokenizer) -> dict[str, Any]:
    """A Hugging Face `tokenizer.json` (as a dict) that encodes as `tok` does."""
    specials = {i: s for s, i in tok.special_tokens.items()}
    vocab = gpt2_vocab(tok)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": s,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i, s in sorted(specials.items())
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": PATTERN_REGEX[tok.pattern]},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {k: v for k, v in vocab.items() if v not in specials},
            "merges": [[a, b] for a, b in gpt2_merges(tok)],
        },
    }


def save_hf(tok: Tokenizer, path: PathLike) -> None:
    """Write a Hugging Face tokenizer.json."""
    write_atomic(path, json.dumps(to_hf_json(tok), ensure_ascii=False, indent=1).encode("utf-8"))


def _hf_pattern(pre: Any, source: str) -> str:
    """The mnemo pattern a byte-level pre-tokenizer runs, or a FormatError naming the key."""

    def not_byte_level(key: str, value: Any) -> FormatError:
        return FormatError(
            f"{source}: key {key!r} is {_excerpt(value, 120)}: mnemo imports byte-level BPE only "
            f"(a Split on one of mnemo's patterns followed by ByteLevel without its regex, or GPT-2's ByteLevel)"
        )

    if not isinstance(pre, dict):
        raise not_byte_level("pre_tokenizer", pre)
    if pre.get("type") == "ByteLevel":
        if pre.get("use_regex", True) is not True or pre.get("add_prefix_space", False) is not False:
            raise not_byte_level("pre_tokenizer", pre)
        return "gpt2"
    steps = pre.get("pretokenizers")
    if pre.get("type") != "Sequence" or not isinstance(steps, list) or len(steps) != 2:
        raise not_byte_level("pre_tokenizer", pre)
    first, second = steps
    key = "pre_tokenizer.pretokenizers[0]"
    if not isinstance(first, dict) or first.get("type") != "Split":
        raise not_byte_level(key, first)
    regex = first.get("pattern", {}).get("Regex") if isinstance(first.get("pattern"), dict) else None
    if first.get("behavior") != "Isolated" or first.get("invert", False) is not False:
        raise not_byte_level(key, first)
    if (
        not isinstance(second, dict)
        or second.get("type") != "ByteLevel"
        or second.get("use_regex", True) is not False
        or second.get("add_prefix_space", False) is not False
    ):
        raise not_byte_level("pre_tokenizer.pretokenizers[1]", second)
    for name, text in PATTERN_REGEX.items():
        if regex == text:
            return name
    if regex == HF_GPT2_REGEX:
        return "gpt2"
    raise FormatError(
        f"{source}: key '{key}.pattern.Regex' is {regex!r}, which is none of mnemo's patterns "
        f"({', '.join(PATTERN_REGEX)}; docs/pretokenizer.md)"
    )


def from_hf_json(obj: Any, source: str = "<tokenizer.json>") -> Tokenizer:
    """A Tokenizer from a parsed Hugging Face tokenizer.json holding byte-level BPE."""
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: not a JSON object")
    model = obj.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        kind = model.get("type") if isinstance(model, dict) else model
        raise FormatError(f"{source}: key 'model.type' is {kind!r}: mnemo imports byte-level BPE only")
    if obj.get("normalizer") is not None:
        raise FormatError(f"{source}: key 'normalizer' is set: mnemo imports byte-level BPE without a normalizer")
    for key, ok in (
        ("dropout", None),
        ("continuing_subword_prefix", None),
        ("end_of_word_suffix", None),
    ):
        if model.get(key) not in (ok, ""):
            raise FormatError(f"{source}: key 'model.{key}' is {model.get(key)!r}; mnemo needs it unset")
    if model.get("byte_fallback", False) or model.get("ignore_merges", False):
        raise FormatError(f"{source}: keys 'model.byte_fallback' / 'model.ignore_merges' must be false")
    pattern = _hf_pattern(obj.get("pre_tokenizer"), source)
    decoder = obj.get("decoder")
    if not isinstance(decoder, dict) or decoder.get("type") != "ByteLevel":
        raise FormatError(f"{source}: key 'decoder' is {_excerpt(decoder, 80)}: not a ByteLevel decoder")
    specials: dict[str, int] = {}
    added_tokens = obj.get("added_tokens")
    if added_tokens is None:
        added_tokens = []
    if not isinstance(added_tokens, list):
        raise FormatError(
            f"{source}: key 'added_tokens' is {_excerpt(added_tokens, 80)}, not a list of {{'id', 'content'}} objects"
        )
    for j, added in enumerate(added_tokens):
        if not isinstance(added, dict) or not isinstance(added.get("content"), str) or not isinstance(added.get("id"), int):
            raise FormatError(f"{source}: key 'added_tokens[{j}]' needs a string 'content' and an integer 'id'")
        if added["content"] in specials:
            raise FormatError(f"{source}: key 'added_tokens[{j}]': the content {added['content']!r} is listed twice")
        specials[added["content"]] = added["id"]
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise FormatError(f"{source}: key 'model.vocab' should be an object mapping tokens to ids")
    plain: dict[str, Any] = {}
    for key, value in raw_vocab.items():
        if key in specials:
            if value != specials[key]:
                raise FormatError(
                    f"{source}: key 'model.vocab'[{key!r}] is id {value!r} but added_tokens gives it {specials[key]}"
                )
            continue
        plain[key] = value
    vocab = _gpt2_vocab(plain, source, "model.vocab.")
    raw_merges = model.get("merges")
    if not isinstance(raw_merges, list):
        raise FormatError(f"{source}: key 'model.merges' should be a list")
    merges: list[tuple[bytes, bytes]] = []
    for k, item in enumerate(raw_merges):
        where = f"{source}: key 'model.merges[{k}]'"
        if isinstance(item, str):
            parts: Any = item.split(" ")
        else:
            parts = item
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            raise FormatError(f"{where}: {item!r} should be two tokens")
        merges.append((string_to_token(parts[0], where), string_to_token(parts[1], where)))
    return assemble(
        source,
        vocab,
        merges,
        pattern=pattern,
        specials=specials,
        merge_where=lambda k: f"key 'model.merges[{k}]'",
        vocab_where=lambda raw: f"'model.vocab'[{token_to_string(raw)!r}]",
    )


def load_hf(path: PathLike) -> Tokenizer:
    """A Tokenizer from a Hugging Face tokenizer.json holding byte-level BPE."""
    return from_hf_json(_load_json(path, "tokenizer.json"), os.fspath(path))


# ---- a Hugging Face export directory (save_pretrained) ----

#: The chat tokens render_conversation uses, by role (mnemo/chat.py).
HF_CHAT_ROLES: Final = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>"}


def _jinja_str(text: str) -> str:
    """A Jinja string literal (JSON's escapes are a subset of Jinja's)."""
    return json.dumps(text)


def hf_chat_template(tok: Tokenizer) -> str | None:
    """A Jinja chat template whose `apply_chat_template(messages, tokenize=True)` gives the ids of
    `render_conversation(messages)` without MASKBIT: `<|bos|>`, then role token + content +
    `<|end|>` per message (and `<|assistant|>` with add_generation_prompt).  The errors
    render_conversation raises (an unknown role, content that is not a string or that holds
    special-token text) are raised by the template too, so the two never differ silently.
    None for a vocabulary without the chat tokens (GPT-2's)."""
    if not all(name in tok.special_tokens for name in ("<|bos|>", "<|end|>", *HF_CHAT_ROLES.values())):
        return None
    roles = "{" + ", ".join(f"{_jinja_str(r)}: {_jinja_str(t)}" for r, t in HF_CHAT_ROLES.items()) + "}"
    specials = "[" + ", ".join(_jinja_str(s) for s in tok.special_tokens) + "]"
    return (
        "{%- set roles = " + roles + " -%}"
        "{%- set specials = " + specials + " -%}"
        '{{- "<|bos|>" -}}'
        "{%- for message in messages -%}"
        '{%- if message["role"] not in roles -%}'
        '{{- raise_exception("message " ~ loop.index0 ~ " has role " ~ message["role"] ~ "; roles are system, user, assistant") -}}'
        "{%- endif -%}"
        '{%- if message["content"] is not string -%}'
        '{{- raise_exception("message " ~ loop.index0 ~ ": content must be a string") -}}'
        "{%- endif -%}"
        "{%- for name in specials -%}"
        '{%- if name in message["content"] -%}'
        '{{- raise_exception("message " ~ loop.index0 ~ ": the text contains the special token " ~ name) -}}'
        "{%- endif -%}"
        "{%- endfor -%}"
        '{{- roles[message["role"]] + message["content"] + "<|end|>" -}}'
        "{%- endfor -%}"
        '{%- if add_generation_prompt -%}{{- "<|assistant|>" -}}{%- endif -%}'
    )


def _default_roles(tok: Tokenizer) -> tuple[str | None, str | None, str | None]:
    """(bos, eos, pad) names for a vocabulary.  mnemo's: `<|bos|>` starts a document, `<|end|>`
    ends a turn (what generation stops at), and pad is `<|reserved_0|>`, never eos: collators
    that mask pad in the labels (DataCollatorForLanguageModeling) would otherwise never teach
    the model to produce `<|end|>`.  GPT-2's: `<|endoftext|>` for bos and eos (as GPT-2's own
    files on the hub have it) and no pad."""
    names = tok.special_tokens
    if "<|bos|>" in names:
        return (
            "<|bos|>",
            "<|end|>" if "<|end|>" in names else None,
            "<|reserved_0|>" if "<|reserved_0|>" in names else None,
        )
    if "<|endoftext|>" in names:
        return "<|endoftext|>", "<|endoftext|>", None
    return None, None, None


_UNSET: Final = "\0unset"


def save_pretrained(
    tok: Tokenizer,
    directory: PathLike,
    *,
    bos_token: str | None = _UNSET,
    eos_token: str | None = _UNSET,
    pad_token: str | None = _UNSET,
) -> list[Location]:
    """Write a Hugging Face export directory that `transformers.AutoTokenizer.from_pretrained`
    loads: tokenizer.json (`to_hf_json`), tokenizer_config.json (bos/eos/pad, the chat template,
    no tokens added by encode: mnemo's encode adds none) and special_tokens_map.json.  Each file
    is written through a temporary name and a rename; the folder is created when missing.

    `bos_token`, `eos_token`, `pad_token`: special-token names (None: no such token); by default
    those of `_default_roles`.  Returns the locations written (a folder may be a URL's prefix)."""
    folder = location(directory)
    if folder.isfile():
        raise ConfigError(f"{folder}: exists and is not a folder; save_pretrained writes a folder of files")
    defaults = _default_roles(tok)
    chosen: dict[str, str | None] = {}
    for key, value, default in zip(("bos_token", "eos_token", "pad_token"), (bos_token, eos_token, pad_token), defaults):
        value = default if value == _UNSET else value
        if value is not None and value not in tok.special_tokens:
            raise ConfigError(
                f"{key}={value!r} is not a special token of this tokenizer "
                f"(its special tokens: {', '.join(tok.special_tokens) or 'none'})"
            )
        chosen[key] = value
    roles = {k: v for k, v in chosen.items() if v is not None}
    others = [s for s in tok.special_tokens if s not in roles.values()]
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **roles,
        "additional_special_tokens": others,
        # mnemo's encode adds no token: the text's ids only (render_document adds <|bos|>)
        "add_bos_token": False,
        "add_eos_token": False,
        # decode must give the text back byte for byte, as mnemo's decode does
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
    }
    template = hf_chat_template(tok)
    if template is not None:
        config["chat_template"] = template
    special_map: dict[str, Any] = {**roles, "additional_special_tokens": others}
    folder.make_folder()
    files = {
        "tokenizer.json": to_hf_json(tok),
        "tokenizer_config.json": config,
        "special_tokens_map.json": special_map,
    }
    written: list[Location] = []
    for name, obj in files.items():
        path = folder.join(name)
        path.write_atomic(json.dumps(obj, ensure_ascii=False, indent=1).encode("utf-8"))
        written.append(path)
    return written


# ---- the CS336 interface ----


def from_vocab_merges(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] | None = None,
    *,
    pattern: str = "gpt2",
) -> Tokenizer:
    """`Tokenizer.from_vocab_merges` as a function (the rules: vocab.from_vocab_merges)."""
    return Tokenizer.from_vocab_merges(vocab, merges, special_tokens, pattern=pattern)
