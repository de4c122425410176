"""`mnemo convert`: a vocabulary between mnemo, GPT-2, tiktoken and Hugging Face files, ids kept."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemo.cli.common import Inputs, check_output
from mnemo.cli.options import Subcommands, path_arg, pattern_arg
from mnemo.constants import GPT2_FILE_NAMES, PATTERNS
from mnemo.defaults import DEFAULT_GPT2_PATTERN
from mnemo.errors import ConfigError, InputError

if TYPE_CHECKING:
    from mnemo.location import Location

CONVERT_FORMATS = ("gpt2", "tiktoken", "hf", "hf-dir", "mnemo")
#: --from also takes "auto": what mnemo.load recognises (mnemo/formats/load.py)


def _gpt2_paths(path: Location, merges: Location | None, reading: bool) -> tuple[Location, Location]:
    """gpt2 files: a folder (at a URL, a prefix) holding vocab.json + merges.txt (or another pair
    of GPT2_FILE_NAMES), or a vocab .json with --merges."""
    if merges is not None:
        return path, merges
    if not reading:
        path.make_folder()
        return path.join(GPT2_FILE_NAMES[0][0]), path.join(GPT2_FILE_NAMES[0][1])
    if path.isfile():
        raise InputError(f"{path} is a file: give the folder holding vocab.json and merges.txt, or --merges")
    for vocab_name, merges_name in GPT2_FILE_NAMES:
        if path.join(vocab_name).isfile() and path.join(merges_name).isfile():
            return path.join(vocab_name), path.join(merges_name)
    names = " or ".join(f"{v} and {m}" for v, m in GPT2_FILE_NAMES)
    raise InputError(f"{path} has no {names}: for other names, give the vocab .json as IN and --merges FILE")


def _special_ids(values: Sequence[str] | None) -> dict[str, int] | None:
    if not values:
        return None
    out: dict[str, int] = {}
    for value in values:
        name, sep, number = value.rpartition("=")
        if not sep or not name or not number.isdigit():
            raise ConfigError(f"--special {value!r} should be NAME=ID, e.g. '<|endoftext|>=50256'")
        out[name] = int(number)
    return out


def cmd_convert(args: argparse.Namespace) -> int:
    from mnemo import interop
    from mnemo.tokenizer import Tokenizer

    src: Location = args.input
    dst: Location = args.output
    merges: Location | None = args.merges
    if args.preset is not None and args.from_format not in ("tiktoken", "auto"):
        raise ConfigError("--preset is for --from tiktoken only (the other formats hold their pattern and specials)")
    if args.preset is not None and (args.pattern is not None or args.special):
        raise ConfigError("--preset sets the pattern and the special tokens: give either --preset or --pattern/--special")
    if args.from_format == "tiktoken" and args.pattern is None and args.preset is None:
        raise ConfigError(
            "a .tiktoken file does not hold its split pattern: pass --preset (cl100k_base or o200k_base, for "
            f"OpenAI's files) or --pattern ({', '.join(PATTERNS)}) with --special"
        )
    if args.from_format not in ("tiktoken", "auto") and args.special:
        raise ConfigError("--special NAME=ID is for --from tiktoken only (the other formats hold their specials)")
    from mnemo.formats.hf_pipeline import HFTokenizer

    loaded: Tokenizer | HFTokenizer
    if args.from_format == "auto":
        from mnemo.formats.load import load

        loaded = load(src, pattern=args.preset or args.pattern, special_tokens=_special_ids(args.special), merges=merges)
    elif args.from_format == "mnemo":
        loaded = Tokenizer.load(src)
    elif args.from_format == "gpt2":
        vocab_path, merges_path = _gpt2_paths(src, merges, reading=True)
        loaded = interop.load_gpt2(vocab_path, merges_path, pattern=args.pattern or DEFAULT_GPT2_PATTERN)
    elif args.from_format == "tiktoken":
        if args.preset is not None:
            if args.preset not in interop.TIKTOKEN_PRESETS:
                raise ConfigError(
                    f"unknown preset {args.preset!r}: use {' or '.join(interop.TIKTOKEN_PRESETS)} (or --pattern and "
                    "--special for another .tiktoken file)"
                )
            loaded = interop.load_tiktoken(src, args.preset)
        else:
            loaded = interop.load_tiktoken(src, args.pattern, _special_ids(args.special))
    elif args.from_format == "hf-dir":
        if not src.isdir():
            raise InputError(f"{src} is not a folder: --from hf-dir reads a save_pretrained folder holding tokenizer.json")
        loaded = interop.load_hf(src.join("tokenizer.json"))
    else:
        loaded = interop.load_hf(src)
    if isinstance(loaded, HFTokenizer):
        if args.to_format == "hf":
            loaded.save_hf(dst)  # the file as tokenizers runs it, every part kept
            print(f"converted {src} ({args.from_format}) -> {dst} (hf): {loaded!r}")
            return 0
        if loaded.extras():
            raise ConfigError(
                f"{src}: this tokenizer.json has {'; '.join(loaded.extras())}, which --to {args.to_format} cannot hold: "
                f"its ids would change; convert it --to hf only"
            )
        tok = loaded.core
    else:
        tok = loaded
    if args.to_format == "mnemo":
        tok.save(dst)
    elif args.to_format == "gpt2":
        vocab_path, merges_path = _gpt2_paths(dst, None, reading=False)
        interop.save_gpt2(tok, vocab_path, merges_path)
    elif args.to_format == "tiktoken":
        interop.save_tiktoken(tok, dst)
    elif args.to_format == "hf-dir":
        interop.save_pretrained(tok, dst)
    else:
        interop.save_hf(tok, dst)
    specials = ", ".join(f"{name}={i}" for name, i in tok.special_tokens.items()) or "none"
    print(
        f"converted {src} ({args.from_format}) -> {dst} ({args.to_format}): {tok.n_vocab} ids, "
        f"pattern {tok.pattern}, special {specials}, fingerprint {tok.fingerprint}"
    )
    if args.to_format == "tiktoken":
        print(f"  a .tiktoken file holds ranks only: load it with --pattern {tok.pattern}"
              + "".join(f" --special '{n}={i}'" for n, i in tok.special_tokens.items()))
    return 0


def check_convert_paths(args: argparse.Namespace) -> None:
    inputs: Inputs = [("input", args.input)]
    if args.merges is not None:
        inputs.append(("input (--merges)", args.merges))
    elif args.from_format == "gpt2":
        inputs += [("input", args.input.join(name)) for pair in GPT2_FILE_NAMES for name in pair]
    if args.to_format in ("gpt2", "hf-dir"):  # a folder of files
        names = GPT2_FILE_NAMES[0] if args.to_format == "gpt2" else ("tokenizer.json", "tokenizer_config.json")
        args.output.check_output_folder(inputs, names)
    else:
        check_output(args.output, inputs)


def add_convert(sub: Subcommands) -> None:
    p = sub.add_parser("convert", help="convert a vocabulary between mnemo, GPT-2, tiktoken and Hugging Face files",
                       description=(
        "Convert a byte-level BPE vocabulary.  Formats: mnemo (tokenizer.bin), gpt2 (a folder with vocab.json "
        "and merges.txt, or a vocab .json with --merges), tiktoken (a .tiktoken rank file; reading one needs "
        "--pattern and --special), hf (a Hugging Face tokenizer.json), hf-dir (a save_pretrained folder that "
        "transformers.AutoTokenizer.from_pretrained loads: tokenizer.json, tokenizer_config.json with bos/eos/pad "
        "and the chat template, special_tokens_map.json; docs/pipelines.md).  Ids are kept exactly."))
    p.add_argument("input", type=path_arg, metavar="IN", help="the file to read (a folder for --from gpt2 without --merges)")
    p.add_argument("output", type=path_arg, metavar="OUT", help="the file to write (a folder for --to gpt2 and hf-dir, created if missing)")
    p.add_argument("--from", dest="from_format", default="auto", choices=("auto", *CONVERT_FORMATS),
                   help="format of IN (default auto: what mnemo.load recognises, docs/interop.md)")
    p.add_argument("--to", dest="to_format", required=True, choices=CONVERT_FORMATS, help="format of OUT (required)")
    p.add_argument("--merges", type=path_arg, default=None,
                   help="--from gpt2 with IN a vocab .json: its merges.txt (default: IN is a folder holding both)")
    p.add_argument("--pattern", default=None, metavar="PATTERN", type=pattern_arg,
                   help="split pattern of a .tiktoken input (or --preset) or a gpt2 input: a preset name or a split "
                        f"regex (default {DEFAULT_GPT2_PATTERN})")
    p.add_argument("--preset", default=None, metavar="NAME",
                   help="--from tiktoken: OpenAI's encoding the file holds, cl100k_base or o200k_base: sets the pattern "
                        "and special tokens as tiktoken does, and checks the file's SHA-256 (the file may be gzipped)")
    p.add_argument("--special", action="append", metavar="NAME=ID",
                   help="a .tiktoken input's special token (repeat; default: none)")
    p.set_defaults(handler=cmd_convert, check_paths=check_convert_paths)
