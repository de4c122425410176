"""OpenAI's encodings by name, offline: the part of a tiktoken drop-in that finds them
(docs/tiktoken.md, "A tiktoken drop-in").

tiktoken's `get_encoding(name)` downloads a rank file, checks its SHA-256 and adds the encoding's
pattern and special tokens.  mnemo downloads nothing: `get_encoding(name, folder)` reads the
rank file from a folder you give (or $MNEMO_ENCODINGS_DIR) with the preset of that name
(formats/tiktoken.py's TIKTOKEN_PRESETS: the same checksum, pattern and specials).

| encoding | rank file it reads | |
| --- | --- | --- |
| `gpt2`, `r50k_base` | `r50k_base.tiktoken` | `gpt2` is r50k_base under its own name: tiktoken builds it from GPT-2's vocab.bpe + encoder.json, which give the same ranks |
| `p50k_base`, `p50k_edit` | `p50k_base.tiktoken` | p50k_edit adds three fill-in-the-middle tokens |
| `cl100k_base` | `cl100k_base.tiktoken` | |
| `o200k_base`, `o200k_harmony` | `o200k_base.tiktoken` | o200k_harmony adds gpt-oss's 1,089 special tokens |

Each may also be gzip-compressed (`NAME.tiktoken.gz`).  r50k_base's and p50k_base's files are
GPT-2's byte-level vocabulary: `write_rank_files(encoder_json, folder)` derives both from GPT-2's
encoder.json (vocab.json) -- p50k_base adds the runs of 2 to 25 spaces as ranks 50257-50280 --
and writes them only when their SHA-256 is the one tiktoken checks, so they are OpenAI's files
byte for byte.

`encoding(name, pat_str=, mergeable_ranks=, special_tokens=)` is tiktoken's `Encoding(...)`
constructor returning a mnemo Tokenizer (a function: the Tokenizer is the one class).

Plain Python (not compiled): files are read and checked once.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from mnemo.errors import ConfigError, FormatError, InputError
from mnemo.fileio import write_atomic
from mnemo.formats.common import PathLike, load_json, pattern_for_regex
from mnemo.formats.gpt2 import vocab_from_json
from mnemo.formats.tiktoken import EOT, TIKTOKEN_PRESETS, from_mergeable_ranks, load_tiktoken
from mnemo.tokenizer import Tokenizer

#: Each encoding's rank file (without .tiktoken) and the preset that reads it.
ENCODINGS: Final[dict[str, tuple[str, str]]] = {
    "gpt2": ("r50k_base", "r50k_base"),
    "r50k_base": ("r50k_base", "r50k_base"),
    "p50k_base": ("p50k_base", "p50k_base"),
    "p50k_edit": ("p50k_base", "p50k_edit"),
    "cl100k_base": ("cl100k_base", "cl100k_base"),
    "o200k_base": ("o200k_base", "o200k_base"),
    "o200k_harmony": ("o200k_base", "o200k_harmony"),
}

#: The environment variable get_encoding reads when no folder is given.
FOLDER_VARIABLE: Final = "MNEMO_ENCODINGS_DIR"

#: p50k_base's ranks beyond r50k_base's: runs of 2 to 25 spaces (for code), ranks 50257-50280.
P50K_SPACES: Final = range(2, 26)

_cache: dict[tuple[str, str], Tokenizer] = {}
_lock = threading.Lock()


def list_encoding_names() -> list[str]:
    """The names get_encoding takes (tiktoken's list_encoding_names, for OpenAI's encodings)."""
    return list(ENCODINGS)


def _folder_of(folder: PathLike | None) -> Path:
    if folder is None:
        env = os.environ.get(FOLDER_VARIABLE)
        if not env:
            raise ConfigError(
                f"mnemo downloads no encodings: pass the folder that holds the rank files (r50k_base.tiktoken, "
                f"p50k_base.tiktoken, cl100k_base.tiktoken, o200k_base.tiktoken, or .tiktoken.gz) as "
                f"get_encoding(name, folder), or set {FOLDER_VARIABLE}"
            )
        folder = env
    if not isinstance(folder, (str, os.PathLike)):
        raise ConfigError(f"folder must be a path, got {type(folder).__name__}")
    return Path(folder)


def get_encoding(name: str, folder: PathLike | None = None) -> Tokenizer:
    """The Tokenizer of OpenAI's encoding `name`, read from its rank file in `folder` (default
    $MNEMO_ENCODINGS_DIR) and checked as tiktoken checks it; tiktoken's ids, special tokens,
    n_vocab and name.  Each (name, folder) is read once and the tokenizer shared after, as
    tiktoken shares its Encodings (a Tokenizer is immutable)."""
    if not isinstance(name, str):
        raise ConfigError(f"the encoding name must be a str, got {type(name).__name__}")
    if name not in ENCODINGS:
        raise ConfigError(f"unknown encoding {name!r}: OpenAI's are {', '.join(ENCODINGS)}")
    where = _folder_of(folder)
    key = (name, os.path.realpath(where))
    with _lock:
        found = _cache.get(key)
        if found is not None:
            return found
        stem, preset = ENCODINGS[name]
        paths = [where / f"{stem}.tiktoken", where / f"{stem}.tiktoken.gz"]
        path = next((p for p in paths if p.is_file()), None)
        if path is None:
            how = " (write_rank_files derives it from GPT-2's encoder.json)" if stem in ("r50k_base", "p50k_base") else ""
            raise InputError(f"{where}: no {stem}.tiktoken or {stem}.tiktoken.gz, the rank file of {name}{how}")
        tok = load_tiktoken(path, preset)
        if name != preset:
            tok._set_name(name)
        _cache[key] = tok
        return tok


def gpt2_ranks(encoder_json: PathLike) -> dict[bytes, int]:
    """r50k_base's ranks: GPT-2's encoder.json (vocab.json) without <|endoftext|>; each token's
    rank is its GPT-2 id."""
    source = os.fspath(encoder_json)
    vocab = vocab_from_json(load_json(encoder_json, "encoder.json"), source)
    vocab.pop(EOT.encode("ascii"), None)
    return vocab


def _rank_file_text(ranks: Mapping[bytes, int]) -> bytes:
    import base64

    ordered = sorted(ranks.items(), key=lambda item: item[1])
    return "".join(f"{base64.b64encode(raw).decode('ascii')} {rank}\n" for raw, rank in ordered).encode("ascii")


def write_rank_files(encoder_json: PathLike, folder: PathLike) -> list[Path]:
    """Derive r50k_base.tiktoken and p50k_base.tiktoken from GPT-2's encoder.json into `folder`,
    each written only when its SHA-256 is the one tiktoken checks (FormatError otherwise, naming
    both digests: the encoder.json is not GPT-2's).  Returns the two paths."""
    r50k = gpt2_ranks(encoder_json)
    p50k = dict(r50k)
    top = max(r50k.values())
    for k, n in enumerate(P50K_SPACES):
        p50k[b" " * n] = top + 2 + k  # 50256 stays <|endoftext|>'s
    written: list[Path] = []
    for stem, ranks in (("r50k_base", r50k), ("p50k_base", p50k)):
        text = _rank_file_text(ranks)
        digest = hashlib.sha256(text).hexdigest()
        expected = TIKTOKEN_PRESETS[stem][1]
        if digest != expected:
            raise FormatError(
                f"{os.fspath(encoder_json)}: the {stem} ranks derived from it have SHA-256 {digest}, not {expected} "
                f"(tiktoken's): this is not GPT-2's encoder.json"
            )
        path = Path(folder) / f"{stem}.tiktoken"
        write_atomic(path, text)
        written.append(path)
    return written


def encoding(
    name: str,
    *,
    pat_str: str,
    mergeable_ranks: Mapping[bytes, int],
    special_tokens: Mapping[str, int],
    explicit_n_vocab: int | None = None,
) -> Tokenizer:
    """tiktoken's `Encoding(name, pat_str=, mergeable_ranks=, special_tokens=, explicit_n_vocab=)`,
    as a mnemo Tokenizer named `name`.  explicit_n_vocab is checked as tiktoken checks it (ranks
    and specials together are that many, the largest id one less), a ConfigError here."""
    if not isinstance(name, str):
        raise ConfigError(f"name must be a str, got {type(name).__name__}")
    if not isinstance(mergeable_ranks, Mapping) or not isinstance(special_tokens, Mapping):
        raise ConfigError("mergeable_ranks must map bytes to ranks and special_tokens names to ids")
    if explicit_n_vocab:
        top = max([*mergeable_ranks.values(), *special_tokens.values()])
        if len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab or top != explicit_n_vocab - 1:
            raise ConfigError(
                f"explicit_n_vocab={explicit_n_vocab}, but there are {len(mergeable_ranks)} ranks and "
                f"{len(special_tokens)} special tokens, the largest id {top}"
            )
    return from_mergeable_ranks(mergeable_ranks, pattern_for_regex(pat_str), special_tokens, f"<Encoding {name!r}>", name=name)
