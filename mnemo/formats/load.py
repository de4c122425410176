"""One way to load any tokenizer: `mnemo.load(path_or_url, **options)` (issue 26 item 5;
docs/interop.md, "Loading anything").

It recognises, by content first and name second:

| what                                   | how it is known                                     | gives |
| -------------------------------------- | --------------------------------------------------- | ----- |
| mnemo's tokenizer.bin                  | its magic                                           | Tokenizer |
| a tokenizer.json                       | JSON with a "model" object                          | Tokenizer, or HFTokenizer when the file needs more (hf_pipeline) |
| a transformers folder                  | a folder holding tokenizer.json (tokenizer_config.json's bos/eos/pad, chat template and add_bos/eos_token are read too) | HFTokenizer |
| a GPT-2 folder                         | vocab.json + merges.txt (or the other GPT2_FILE_NAMES) | Tokenizer |
| `.tiktoken` (gzip or not), Llama 3's tokenizer.model | base64 rank lines; the pattern from `pattern=` or a preset name the file name starts with | Tokenizer |
| Mistral's tekken JSON                  | JSON with "config" and a "vocab" list               | Tokenizer (formats/tekken.py) |
| a SentencePiece model, whatever its name | its protobuf header (formats/common.is_sentencepiece), or a binary .model | FormatError naming SentencePiece |

`resolve(spec)` is the form every TOKENIZER argument of the command line takes (eval, inspect,
tokenize, tokshow, pretrain, train --base, convert): `[NAME=]PATH_OR_URL`, or `VOCAB,MERGES`
for GPT-2's two files; it returns the label a table shows with the tokenizer.  `load_kind` also
says what the path was read as (KINDS: `mnemo info` prints it).

`pattern=` is for the kinds that hold no split pattern, a .tiktoken file and GPT-2's files; given
with any other kind, which holds its own, it is a ConfigError rather than silently ignored.

Plain Python (not compiled).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from mnemo.constants import GPT2_FILE_NAMES
from mnemo.defaults import DEFAULT_GPT2_PATTERN
from mnemo.errors import ConfigError, FormatError, InputError
from mnemo.fileio import read_file
from mnemo.location import location
from mnemo.formats.common import MAX_TEXT_FILE_BYTES, PathLike, is_sentencepiece, load_json, sentencepiece_error
from mnemo.formats.gpt2 import load_gpt2
from mnemo.formats.hf_file import read_json_file
from mnemo.formats.hf_pipeline import HFTokenizer, from_json
from mnemo.formats.hf_post import Template, TemplatePiece
from mnemo.formats.tekken import from_tekken_json
from mnemo.formats.tiktoken import GZIP_MAGIC, TIKTOKEN_PRESETS, load_tiktoken
from mnemo.patterns import PRESETS
from mnemo.tokenizer import Tokenizer
from mnemo.vocabfile import BIN_MAGIC

AnyTokenizer = Tokenizer | HFTokenizer

#: What load_kind says a path was read as.
BIN: Final = "mnemo tokenizer.bin"
TOKENIZER_JSON: Final = "tokenizer.json"
TRANSFORMERS: Final = "transformers folder (tokenizer.json + tokenizer_config.json)"
GPT2: Final = "GPT-2 vocab.json + merges.txt"
TIKTOKEN: Final = ".tiktoken rank file"
TEKKEN: Final = "tekken JSON (Mistral)"
KINDS: Final = (BIN, TOKENIZER_JSON, TRANSFORMERS, GPT2, TIKTOKEN, TEKKEN)
#: the kinds whose files hold no split pattern: `pattern=` is theirs
TAKES_PATTERN: Final = (GPT2, TIKTOKEN)

#: the most of a file read to tell what it is
_SNIFF_BYTES: Final = 4096


def load(
    source: PathLike,
    *,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
    merges: PathLike | None = None,
    add_special_tokens: bool = False,
    unmatched: str = "refuse",
) -> AnyTokenizer:
    """The tokenizer at a path or URL (module docstring).

    `pattern` (and `special_tokens`): a .tiktoken file's split pattern -- a mnemo pattern name
    with the specials' ids, or one of OpenAI's encodings ("cl100k_base", "o200k_base"); by
    default the encoding the file name starts with.  `merges`: GPT-2's merges.txt beside a
    vocab.json given as `source`.  `add_special_tokens`: a tokenizer.json's encode adds its
    post-processor template's tokens (tokenizers' add_special_tokens=True).  `unmatched`: for a
    .tiktoken or tekken file whose split regex leaves some text unmatched (tiktoken drops such
    text): "refuse" (encoding it is an InputError) or "keep" (pieces of their own, as Hugging
    Face's Split keeps them); see docs/pretokenizer.md, "Text the pattern does not match".
    """
    return _load(source, pattern, special_tokens, merges, add_special_tokens, unmatched, None)[1]


def load_kind(
    source: PathLike, *, pattern: str | None = None, fallback_pattern: str | None = None, add_special_tokens: bool = False
) -> tuple[str, AnyTokenizer]:
    """(what the path was read as -- one of KINDS --, the tokenizer), with the options the command
    line gives: `pattern` (--pattern, as load's) or `fallback_pattern`: the pattern of a .tiktoken
    file whose name names no OpenAI encoding, and only of that (`mnemo eval --pattern` and
    `mnemo info --pattern`, one option for several tokenizers of any kind); `add_special_tokens`
    as load's (the commands that separate documents with a template's tokens)."""
    return _load(source, pattern, None, None, add_special_tokens, "refuse", fallback_pattern)


def _load(
    source: PathLike, pattern: str | None, special_tokens: Mapping[str, int] | None, merges: PathLike | None,
    add_special_tokens: bool, unmatched: str, fallback_pattern: str | None,
) -> tuple[str, AnyTokenizer]:
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(f"load takes a path or URL (str or os.PathLike), got {type(source).__name__}")
    where = os.fspath(source)
    if unmatched not in ("refuse", "keep"):
        raise ConfigError(f"unmatched={unmatched!r}: use 'refuse' (the default) or 'keep'")
    options: dict[str, Any] = {
        "pattern": pattern,
        "special_tokens": special_tokens,
        "merges": None if merges is None else os.fspath(merges),
        "add_special_tokens": add_special_tokens,
        "unmatched": unmatched,
        "fallback_pattern": fallback_pattern,
    }
    if _isdir(where):
        kind, tok = _folder(where, options)
    else:
        _check_exists(where)
        kind, tok = _file(where, options)
    if pattern is not None and kind not in TAKES_PATTERN:
        raise ConfigError(
            f"{where}: a {kind}, which holds its own split pattern; pattern= (--pattern on the command line) is "
            f"for a .tiktoken file or GPT-2's files, which hold none: leave it out"
        )
    if special_tokens is not None and kind != TIKTOKEN:
        raise ConfigError(
            f"{where}: a {kind}, which holds its own special tokens; special_tokens= is for a .tiktoken file, "
            f"which holds none: leave it out"
        )
    return kind, tok


def resolve(
    spec: str | os.PathLike[str], *, pattern: str | None = None, fallback_pattern: str | None = None,
    add_special_tokens: bool = False,
) -> tuple[str, AnyTokenizer]:
    """(label, tokenizer) of a command-line TOKENIZER argument: `[NAME=]PATH_OR_URL` or
    `[NAME=]VOCAB,MERGES` (module docstring), with load_kind's options; the command line's
    option, a Location, is read as messages name it (its str())."""
    text = str(spec)
    label, sep, where = text.partition("=")
    if not sep or "/" in label or "\\" in label:
        label, where = "", text
    if not where:
        raise ConfigError(f"tokenizer spec {text!r} names no file; use PATH or NAME=PATH")
    if "," in where and not location(where).remote:
        vocab, merges = where.split(",", 1)
        return label or Path(vocab).stem, load_gpt2(vocab, merges, pattern=pattern or DEFAULT_GPT2_PATTERN)
    tok = load_kind(where, pattern=pattern, fallback_pattern=fallback_pattern, add_special_tokens=add_special_tokens)[1]
    return label or _default_label(where), tok


def _default_label(where: str) -> str:
    name = _name(where)
    for preset in TIKTOKEN_PRESETS:
        if name.startswith(preset):
            return preset
    if _isdir(where):
        return name
    return name.split(".", 1)[0] if "." in name else name


# ---- paths and URLs alike ----


def _isdir(where: str) -> bool:
    return location(where).isdir()


def _isfile(where: str) -> bool:
    return location(where).isfile()


def _join(where: str, name: str) -> str:
    return os.fspath(location(where).join(name))


def _name(where: str) -> str:
    return location(where).name


def _check_exists(where: str) -> None:
    if not _isfile(where):
        raise InputError(
            f"{location(where)}: no such tokenizer file or folder (a tokenizer.bin, tokenizer.json, transformers or "
            f"GPT-2 folder, .tiktoken file or tekken JSON)"
        )


def _head(where: str) -> bytes:
    place = location(where)
    try:
        with place.open() as f:
            head: bytes = f.read(_SNIFF_BYTES)
            return head
    except OSError as exc:
        raise place.read_error(exc) from None


# ---- folders ----


def _folder(where: str, options: dict[str, Any]) -> tuple[str, AnyTokenizer]:
    if _isfile(_join(where, "tokenizer.json")):
        return TRANSFORMERS, _transformers_folder(where, options)
    for vocab_name, merges_name in GPT2_FILE_NAMES:
        vocab, merges = _join(where, vocab_name), _join(where, merges_name)
        if _isfile(vocab) and _isfile(merges):
            return GPT2, load_gpt2(vocab, merges, pattern=options["pattern"] or DEFAULT_GPT2_PATTERN)
    for name in ("tekken.json", "tokenizer.model"):
        if _isfile(_join(where, name)):
            return _file(_join(where, name), options)
    prefix = " (a prefix)" if location(where).remote else ""
    raise InputError(
        f"{where}: a folder{prefix} without tokenizer.json (a transformers folder), vocab.json + merges.txt (GPT-2), "
        f"tekken.json or tokenizer.model: pass a tokenizer file, or a folder that holds one"
    )


def _token_name(value: Any) -> str | None:
    """A special token as tokenizer_config.json gives it: a str or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _transformers_folder(where: str, options: dict[str, Any]) -> HFTokenizer:
    """tokenizer.json, with tokenizer_config.json's roles, chat template and add_bos/eos_token
    as transformers applies them (its update_post_processor replaces the template when either
    is set explicitly)."""
    path = _join(where, "tokenizer.json")
    obj, scanned = read_json_file(path, "tokenizer.json")
    config_path = _join(where, "tokenizer_config.json")
    config: dict[str, Any] = {}
    if _isfile(config_path):
        raw = load_json(config_path, "tokenizer_config.json")
        if not isinstance(raw, dict):
            raise FormatError(f"{config_path}: not a JSON object")
        config = raw
    tok = from_json(obj, path, add_special_tokens=options["add_special_tokens"], plain_ok=False, scanned=scanned)
    assert isinstance(tok, HFTokenizer)
    tok.bos_token = _token_name(config.get("bos_token"))
    tok.eos_token = _token_name(config.get("eos_token"))
    tok.pad_token = _token_name(config.get("pad_token"))
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: the "default" one
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    jinja = _join(where, "chat_template.jinja")
    if template is None and _isfile(jinja):
        template = read_file(jinja, MAX_TEXT_FILE_BYTES, "chat template").decode("utf-8", "replace")
    tok.chat_template = template if isinstance(template, str) else None
    if "add_bos_token" in config or "add_eos_token" in config:
        tok.post = _bos_eos_template(tok, bool(config.get("add_bos_token")), bool(config.get("add_eos_token")), config_path)
    return tok


def _bos_eos_template(tok: HFTokenizer, bos: bool, eos: bool, source: str) -> Any:
    """transformers' update_post_processor: `bos:0 $A:0 eos:0` (as set), replacing the file's."""
    from dataclasses import replace

    specials: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {}
    for wanted, name, at_end in ((bos, tok.bos_token, False), (eos, tok.eos_token, True)):
        if not wanted or name is None:
            continue
        ident = tok.token_to_id(name)
        if ident is None:
            raise FormatError(f"{source}: {'eos' if at_end else 'bos'}_token {name!r} is not a token of tokenizer.json")
        specials[name] = ((ident,), (name,))
    single: list[TemplatePiece] = []
    if bos and tok.bos_token in specials:
        single.append(TemplatePiece(None, tok.bos_token, 0))
    single.append(TemplatePiece("A", None, 0))
    if eos and tok.eos_token in specials:
        single.append(TemplatePiece(None, tok.eos_token, 0))
    pair = list(single)
    if bos and tok.bos_token in specials:
        pair.append(TemplatePiece(None, tok.bos_token, 1))
    pair.append(TemplatePiece("B", None, 1))
    if eos and tok.eos_token in specials:
        pair.append(TemplatePiece(None, tok.eos_token, 1))
    # transformers sets this template as the whole post-processor (a ByteLevel before it goes)
    return replace(tok.post, steps=(Template(tuple(single), tuple(pair), specials),), present=True)


# ---- files ----


def sniff(where: str) -> str | None:
    """What a file's first bytes and name say it is -- BIN, TIKTOKEN, "json" (a tokenizer.json,
    tekken JSON or GPT-2 vocab.json, told apart once parsed), "sentencepiece" -- or None: no
    tokenizer mnemo reads (`mnemo info` asks before it loads)."""
    return _sniff(_head(where), _name(where))


def _sniff(head: bytes, name: str) -> str | None:
    if head.startswith(BIN_MAGIC):
        return BIN
    # Mistral ships its SentencePiece models as tokenizer.model.v3, ...model.v7: known by content
    if is_sentencepiece(head) or (name.endswith(".model") and not _looks_like_ranks(head)):
        return "sentencepiece"
    if head.startswith(GZIP_MAGIC) or name.endswith((".tiktoken", ".tiktoken.gz")) or _looks_like_ranks(head):
        return TIKTOKEN
    if head.lstrip().startswith(b"{"):
        return "json"
    return None


def _file(where: str, options: dict[str, Any]) -> tuple[str, AnyTokenizer]:
    name = _name(where)
    kind = _sniff(_head(where), name)
    if kind == BIN:
        return BIN, Tokenizer.load(where)
    if kind == "sentencepiece":
        raise sentencepiece_error(where, "a tokenizer mnemo reads")
    if kind == TIKTOKEN:
        return TIKTOKEN, _tiktoken(where, name, options)
    if kind == "json":
        return _json_file(where, options)
    raise FormatError(
        f"{where}: not a tokenizer mnemo knows (a tokenizer.bin, tokenizer.json, transformers or GPT-2 folder, "
        f".tiktoken rank file or tekken JSON)"
    )


def _looks_like_ranks(head: bytes) -> bool:
    """Whether a file starts as a .tiktoken rank file does: `BASE64 RANK` lines."""
    lines = head.split(b"\n")[:-1] or head.split(b"\n")
    if not lines or not lines[0]:
        return False
    for line in lines[:20]:
        parts = line.rstrip(b"\r").split(b" ")
        if len(parts) != 2 or not parts[1].isdigit():
            return False
        if any(c not in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=" for c in parts[0]):
            return False
    return True


def _tiktoken(where: str, name: str, options: dict[str, Any]) -> Tokenizer:
    pattern = options["pattern"]
    specials = options["special_tokens"]
    if pattern is None:
        preset = next((p for p in TIKTOKEN_PRESETS if name.startswith(p)), None)
        if preset is None and options["fallback_pattern"] is not None:
            return load_tiktoken(where, options["fallback_pattern"], unmatched=options["unmatched"])
        if preset is None:
            raise ConfigError(
                f"{where}: a .tiktoken rank file holds no split pattern or special tokens: give its pattern -- on "
                f"the command line --pattern PATTERN, in Python load(path, pattern=..., special_tokens={{...}}) -- "
                f"a preset ({', '.join(PRESETS)}; llama3 for Meta's Llama 3 tokenizer.model), a split regex, or "
                f"one of OpenAI's encodings ({', '.join(TIKTOKEN_PRESETS)}), which sets the special tokens too; "
                f"or name the file after that encoding"
            )
        return load_tiktoken(where, preset, unmatched=options["unmatched"])
    return load_tiktoken(where, pattern, specials, unmatched=options["unmatched"])


def _json_file(where: str, options: dict[str, Any]) -> tuple[str, AnyTokenizer]:
    obj, scanned = read_json_file(where, "tokenizer JSON file")
    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        return TOKENIZER_JSON, from_json(obj, where, add_special_tokens=options["add_special_tokens"], scanned=scanned)
    if isinstance(obj, dict) and isinstance(obj.get("config"), dict) and isinstance(obj.get("vocab"), list):
        stem = _name(where)
        stem = stem[: -len(".json")] if stem.endswith(".json") else stem
        return TEKKEN, from_tekken_json(obj, where, name=stem, unmatched=options["unmatched"])
    if isinstance(obj, dict) and obj and all(isinstance(v, int) for v in obj.values()):
        merges = options["merges"]
        if merges is None:
            raise ConfigError(
                f"{where}: a GPT-2 vocab.json: give its merges.txt too (load(vocab, merges=...), or VOCAB,MERGES on the "
                f"command line, or the folder holding both)"
            )
        return GPT2, load_gpt2(where, merges, pattern=options["pattern"] or DEFAULT_GPT2_PATTERN)
    raise FormatError(
        f"{where}: JSON that is no tokenizer mnemo knows (a tokenizer.json has a \"model\" object, a tekken file "
        f"\"config\" and \"vocab\", a GPT-2 vocab.json token -> id pairs)"
    )


__all__ = ["AnyTokenizer", "KINDS", "load", "load_kind", "resolve", "sniff"]
