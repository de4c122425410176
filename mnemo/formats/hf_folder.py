"""A Hugging Face export folder, as `save_pretrained` writes it and
`transformers.AutoTokenizer.from_pretrained` loads it: tokenizer.json (mnemo/formats/hf.py),
tokenizer_config.json with the special tokens' roles and a chat template, and
special_tokens_map.json (docs/interop.md).

Plain Python (not compiled): writing a few small files once.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mnemo.checks import listed
from mnemo.errors import ConfigError
from mnemo.location import Location, location
from mnemo.formats.common import PathLike
from mnemo.formats.hf import to_hf_json
from mnemo.tokenizer import Tokenizer

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
                f"(its special tokens: {listed(tok.special_tokens)})"
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
