"""`mnemo tokshow` (text split into tokens, in colour) and `mnemo info` (what a tokenizer.bin,
.tok, stack token file or shard directory holds)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mnemo.cli.common import chat_tokenizer, loaded_arg, per_token, plural
from mnemo.cli.options import LOADABLE, Subcommands, no_color_option, path_arg, pattern_option, tokenizer_option
from mnemo.errors import ConfigError, FormatError, InputError

if TYPE_CHECKING:
    from mnemo.formats.load import AnyTokenizer
    from mnemo.location import Location


# ---- tokshow -----------------------------------------------------------------------------------


def cmd_tokshow(args: argparse.Namespace) -> int:
    from mnemo.chat import render_conversation_mask
    from mnemo.decoding import token_spans
    from mnemo.tokenizer import Tokenizer
    from mnemo.tokshow import render_tokens

    from mnemo.formats.hf_pipeline import HFTokenizer

    # a tokenizer.json pipeline shows its own tokens and offsets (tokenizers'), and renders a
    # chat through itself (mnemo's chat template, mnemo/chat.py; a folder's own one is refused)
    tok: Tokenizer | HFTokenizer
    if args.chat is not None:
        tok = chat_tokenizer(args.tokenizer, "tokshow --chat", loaded_arg(args.tokenizer, args.pattern, template=True))
    else:
        tok = loaded_arg(args.tokenizer, args.pattern)
    color = not args.no_color and sys.stdout.isatty()
    mask: list[bool] | None = None
    spans: list[tuple[int, int]] | None = None
    if args.chat is not None:
        import json

        from mnemo.tokenizing import chat_lines

        if args.index < 0:
            raise ConfigError(f"--index must be >= 0, got {args.index}")
        found: tuple[int, bytes] | None = None
        count = 0
        # Records are checked as tokenize checks them (file:line in every message) up to the one shown.
        for count, numbered in enumerate(chat_lines(args.chat, list(tok.special_tokens)), 1):
            if count - 1 == args.index:
                found = numbered
                break
        if found is None:
            raise ConfigError(f"{args.chat}: has {count} records; --index {args.index} is out of range")
        messages = json.loads(found[1])["messages"]
        ids, learned = render_conversation_mask(tok, messages)
        mask = [bool(m) for m in learned]
        if args.offsets:
            spans = token_spans(tok.decode_tokens_bytes(ids))  # a rendered chat: valid UTF-8
    else:
        if args.file is not None:
            text = _read_text(path_arg(args.file)) if args.file != "-" else sys.stdin.read()
        elif args.text:
            text = " ".join(args.text)
        elif not sys.stdin.isatty():
            text = sys.stdin.read()
        else:
            raise ConfigError("no text to show: pass TEXT, --file FILE, --chat FILE.jsonl, or pipe text in")
        ids, spans = tok.encode_with_offsets(text, allowed_special="all")
    print(render_tokens(tok, ids, mask, color=color, show_ids=args.ids, spans=spans if args.offsets else None))
    n_bytes = sum(len(tok.token_bytes(i)) for i in ids)
    print(", ".join(f for f in (plural(len(ids), "token"), plural(n_bytes, "byte"), per_token(n_bytes, len(ids))) if f)
          + (f", {sum(mask)} masked (learned)" if mask is not None else ""))
    return 0


def _read_text(path: Location) -> str:
    """A text file for tokshow, opened as every input is (sources.open_binary: its errors name
    the file; compressed files are decompressed)."""
    from mnemo.sources import open_binary

    with open_binary(path) as f:
        return f.read().decode("utf-8", errors="surrogateescape")


def add_tokshow(sub: Subcommands) -> None:
    p = sub.add_parser("tokshow", help="show text split into tokens, in colour", description=(
        "Show how a tokenizer splits text: each token on its own background colour on a terminal, "
        "separated by | otherwise; bytes that are not whole UTF-8 characters show as <0xC3>."))
    p.add_argument("text", nargs="*", help="text to show (or --file, --chat, or standard input)")
    tokenizer_option(p, "the tokenizer", " (required)")
    pattern_option(p)
    p.add_argument("-f", "--file", help="read the text from this file ('-' for standard input)")
    p.add_argument("--chat", metavar="JSONL", help="render a conversation record from this file, masked tokens marked")
    p.add_argument("--index", type=int, default=0, help="which record of --chat (default 0)")
    p.add_argument("--ids", action="store_true", help="print each token's id after it (default: off)")
    p.add_argument("--offsets", action="store_true",
                   help="print each token's character span @start:end in the text after it (default: off)")
    no_color_option(p)
    p.set_defaults(handler=cmd_tokshow)


# ---- info --------------------------------------------------------------------------------------


def cmd_info(args: argparse.Namespace) -> int:
    from mnemo.tokfile import TOK_MAGIC, read_tok_header
    from mnemo.vocabfile import BIN_MAGIC
    from mnemo.stackfiles import detect
    from mnemo.tokenizer import Tokenizer

    from mnemo.location import SHARD_MANIFEST, location

    for path in args.files:
        where = location(path)
        if where.isdir():  # a shard directory (at a URL: read from a local copy), or a tokenizer's folder
            if where.join(SHARD_MANIFEST).isfile():
                _info_shard_dir(where, shown=path)
            else:
                _info_folder(path, args.pattern)
            continue
        with where.open(exact=True) as f:  # a URL: 8 bytes by one ranged read (a stack file set is copied)
            try:
                magic = f.read(8)
            except Exception as exc:  # OSError, and a store's own errors
                raise where.read_error(exc) from None
        if magic == BIN_MAGIC:
            # verify=None: tables another program wrote are checked anyway (docs/formats.md, "Trust")
            tok = Tokenizer.load(path, verify=True if args.verify else None)
            specials = ", ".join(f"{name}={i}" for name, i in tok.special_tokens.items())
            print(f"{path}: mnemo tokenizer")
            print(f"  vocabulary   {tok.n_tokens} ids = 256 bytes + {len(tok.merges)} merges + {len(tok.special_tokens)} special"
                  + (f" (ids 0..{tok.n_vocab - 1}: {tok.n_vocab - tok.n_tokens} unused)" if tok.n_vocab != tok.n_tokens else ""))
            print(f"  pattern      {tok.split_pattern.describe()}")
            print(f"  tie rule     {tok.tie}")
            print(f"  fingerprint  {tok.fingerprint}")
            print(f"  special      {specials or '(none)'}")
            if tok.id_map is not None:
                print("  id map       yes: an imported vocabulary keeps its own ids (docs/interop.md)")
            if tok.merge_counts:
                print(f"  merge counts first {tok.merge_counts[0]}, last {tok.merge_counts[-1]}")
            special_ids = set(tok.special_tokens.values())
            regular = [i for i in tok.vocab if i not in special_ids]  # tok.vocab: no holes
            longest = max(regular, key=lambda i: len(tok.token_bytes(i)))
            print(f"  longest      id {longest}: {tok.token_bytes(longest)!r}")
            if args.verify:
                print("  verified     the encoder tables agree with the merges")
        elif magic == TOK_MAGIC:
            h = read_tok_header(path)
            kind = "chat, masked" if h.chat and h.masked else "chat" if h.chat else "documents"
            size = where.info().size
            print(f"{path}: mnemo token file ({kind})")
            print(f"  tokens       {h.n_tokens} x {h.width} bytes ({size / 1e6:.1f} MB on disk)")
            print(f"  documents    {h.n_docs}")
            print(f"  vocabulary   {h.n_vocab} ids")
            print(f"  fingerprint  {h.fingerprint} (the tokenizer that wrote it)")
        elif detect(path) is not None:
            _info_stack_file(path)
        else:
            _info_other(path, magic, args.pattern)
    return 0


def _info_other(path: str, magic: bytes, pattern: str | None) -> None:
    """A file that is no mnemo file: a tokenizer another tool wrote, else the error says what it
    is not.  JSON is told apart once parsed: a .jsonl corpus starts as a tokenizer.json does."""
    from mnemo.formats.load import load_kind, sniff

    kind = sniff(path)
    why = ""
    if kind == "json":
        try:
            _info_tokenizer(path, *load_kind(path, fallback_pattern=pattern))
            return
        except FormatError as exc:
            why = f"; read as JSON: {exc}"
    elif kind is not None:  # a tokenizer by its first bytes or name: its own errors tell what is wrong
        _info_tokenizer(path, *load_kind(path, fallback_pattern=pattern))
        return
    raise InputError(
        f"{path}: neither a tokenizer.bin nor a .tok file (it starts with {magic!r}), nor a training stack's token "
        f"file (Megatron's .bin/.idx, datatrove's .ds, nanoGPT's .bin, known by their names), nor a tokenizer "
        f"mnemo.load reads (tokenizer.json, tekken JSON, .tiktoken file, a tokenizer's folder){why}"
    )


def _info_folder(path: str, pattern: str | None) -> None:
    """A folder that is no shard directory: a tokenizer's (transformers, GPT-2, tekken.json or
    tokenizer.model inside), else the error says it is neither."""
    from mnemo.formats.load import load_kind
    from mnemo.location import SHARD_MANIFEST

    try:
        found = load_kind(path, fallback_pattern=pattern)
    except InputError as exc:  # no tokenizer in it either
        raise InputError(f"{path}: no shard directory of tokenize --ray (it has no {SHARD_MANIFEST}), and {exc}") from None
    _info_tokenizer(path, *found)


def _info_tokenizer(path: str, kind: str, tok: AnyTokenizer) -> None:
    """What `info` says of a tokenizer mnemo.load reads that is no tokenizer.bin: what it was read
    as, its vocabulary, what splits its text and with which engine, its special tokens, and for a
    tokenizer.json pipeline what it carries beyond a plain vocabulary (docs/cli.md, "mnemo info")."""
    from mnemo.checks import listed
    from mnemo.formats.hf_folder import hf_chat_template
    from mnemo.formats.hf_pipeline import HFTokenizer
    from mnemo.formats.load import TRANSFORMERS

    core = tok.core if isinstance(tok, HFTokenizer) else tok
    print(f"{path}: {kind}")
    parts = [f"256 bytes + {len(core.merges)} merges"]
    if core.whole_tokens:
        parts.append(f"{len(core.whole_tokens)} whole tokens (no merge makes them)")
    parts.append(f"{len(core.special_tokens)} special")
    holes = core.n_vocab - core.n_tokens
    print(f"  vocabulary   {core.n_tokens} ids = {' + '.join(parts)}"
          + (f" (ids 0..{core.n_vocab - 1}: {holes} unused)" if holes else ""))
    if isinstance(tok, HFTokenizer):
        print(f"  pattern      {tok.pattern_description()}")
        print(f"  engine       {tok.engine()}")
        print(f"  normalizer   {'+'.join(tok.forms) or 'none'}")
        extras = tok.extras()
        print(f"  pipeline     " + ("; ".join(extras) + " (encoded in Python as tokenizers does; train --from "
                                    "refuses it)" if extras else "nothing beyond mnemo's compiled encoder"))
        if tok.post.template is not None:
            print("  template     the post_processor's (added with add_special_tokens=True)")
    else:
        print(f"  pattern      {core.split_pattern.describe()}")
    print(f"  fingerprint  {tok.fingerprint}")  # a pipeline's own when it changes the ids (what a .tok carries)
    print(f"  special      {listed(f'{name}={i}' for name, i in core.special_tokens.items())}")
    if isinstance(tok, HFTokenizer) and kind == TRANSFORMERS:
        roles = ", ".join(f"{role} {name or 'none'}" for role, name in
                          (("bos", tok.bos_token), ("eos", tok.eos_token), ("pad", tok.pad_token)))
        print(f"  roles        {roles} (tokenizer_config.json)")
        chat = ("none" if tok.chat_template is None else "mnemo's (--chat renders it)"
                if tok.chat_template == hf_chat_template(core) else "its own (Jinja; --chat refuses it: docs/cli.md)")
        print(f"  chat         {chat}")
    if core.id_map is not None:
        print("  id map       yes: an imported vocabulary keeps its own ids (docs/interop.md)")


def _info_shard_dir(where: Location, shown: str) -> None:
    from mnemo.shards import combined_header, shard_dir_headers

    path, manifest, headers = shard_dir_headers(where)  # errors name the URL, not a copy
    h = combined_header(manifest, headers)
    kind = "chat, masked" if h.chat and h.masked else "chat" if h.chat else "documents"
    size = sum(os.path.getsize(os.path.join(path, s.name)) for s in manifest.shards)
    print(f"{shown}: mnemo shard directory ({kind}; {len(manifest.shards)} .tok shards, read in order as one dataset)")
    print(f"  tokens       {h.n_tokens} x {h.width} bytes ({size / 1e6:.1f} MB on disk)")
    print(f"  documents    {h.n_docs}")
    print(f"  vocabulary   {h.n_vocab} ids")
    print(f"  fingerprint  {h.fingerprint} (the tokenizer that wrote it)")
    print(f"  inputs       {len(manifest.run.get('inputs', []))} files")


def _info_stack_file(path: str) -> None:
    import numpy as np

    from mnemo.stackfiles import read_stack_file

    f = read_stack_file(path)
    names = {"megatron": "Megatron-LM indexed dataset", "datatrove": "datatrove tokenized file", "nanogpt": "nanoGPT token file"}
    tokens = f.tokens
    on_disk = sum(os.path.getsize(p) for p in f.paths)
    from mnemo.location import location

    # a URL's set is read from local copies (Location.local_set): name its objects, not the copies
    parts = [str(location(path).sibling(p.name)) for p in f.paths]
    print(f"{path}: {names[f.format]} ({', '.join(parts)})")
    print(f"  tokens       {tokens.size} x {tokens.dtype.itemsize} bytes ({tokens.dtype.name}; {on_disk / 1e6:.1f} MB on disk)")
    print(f"  documents    {f.n_docs if f.n_docs is not None else 'not recorded (the file keeps ids only)'}")
    if f.loss_mask is not None:
        print(f"  loss mask    {int(np.count_nonzero(f.loss_mask))} of {f.loss_mask.size} tokens trained on")
    side = f.sidecar
    if side is None:
        print("  fingerprint  unknown (no .mnemo.json sidecar: not written by mnemo, or it was removed)")
    else:
        print(f"  vocabulary   {side.get('n_vocab')} ids")
        print(f"  fingerprint  {side.get('fingerprint')} (the tokenizer that wrote it, from the .mnemo.json sidecar)")


def add_info(sub: Subcommands) -> None:
    p = sub.add_parser("info", help="what a tokenizer, .tok or stack token file holds", description=(
        "Describe a tokenizer's vocabulary, pattern and the engine that runs it (mnemo's scanner or the "
        "regex module), special tokens and fingerprint -- a tokenizer.bin's tie rule too, a tokenizer.json's "
        "pipeline, a transformers folder's roles and chat template; a .tok file's tokens, documents and the "
        "fingerprint of the tokenizer that wrote it; Megatron (.bin/.idx), datatrove (.ds) and nanoGPT (.bin) "
        "token files, read back and checked."))
    p.add_argument("files", nargs="+", metavar="FILE",
                   help=f"tokenizers ({LOADABLE}), .tok files (known by their first bytes), stack token files (by their "
                        f"names), or shard directories of tokenize --ray")
    pattern_option(p, several=True)
    p.add_argument("--verify", action="store_true",
                   help="also rebuild a tokenizer.bin's encoder tables from its merges and compare them (what "
                        "loading a file this mnemo wrote trusts; every other rule is checked at every load)")
    p.set_defaults(handler=cmd_info)
