"""Other tokenizers' files in and out, and the CS336 interface (docs/interop.md).

GPT-2 `vocab.json` + `merges.txt`, tiktoken's mergeable ranks and `.tiktoken` files, Hugging Face
`tokenizer.json` and export folders, and `(vocab: dict[int, bytes], merges: list[tuple[bytes,
bytes]])`.  Every importer validates what it reads and raises FormatError naming the file and the
line or key; no pickle anywhere.  Imported vocabularies keep their own ids through
`Tokenizer.id_map`, so mnemo gives exactly the ids the other tool gives.

Re-exports only: each format lives in its own module of mnemo/formats/ (gpt2, tiktoken, hf,
hf_folder, cs336, and common for what they share); this module keeps the one name users import
them by, `from mnemo import interop`.
"""

from mnemo.formats.common import (
    BYTE_TO_CHAR,
    CHAR_TO_BYTE,
    MAX_TEXT_FILE_BYTES,
    PathLike,
    assemble,
    bytes_to_unicode,
    string_to_token,
    token_to_string,
)
from mnemo.formats.cs336 import from_vocab_merges
from mnemo.formats.gpt2 import gpt2_merges, gpt2_vocab, load_gpt2, parse_merges_txt, save_gpt2
from mnemo.formats.hf import HF_GPT2_REGEX, from_hf_json, load_hf, save_hf, to_hf_json
from mnemo.formats.hf_folder import HF_CHAT_ROLES, hf_chat_template, save_pretrained
from mnemo.formats.tiktoken import (
    GZIP_MAGIC,
    MAX_RANK_DIGITS,
    TIKTOKEN_PRESETS,
    from_mergeable_ranks,
    load_tiktoken,
    merges_from_ranks,
    mergeable_ranks,
    parse_tiktoken,
    read_tiktoken_bytes,
    save_tiktoken,
    tiktoken_args,
    to_tiktoken,
)

__all__ = [
    "BYTE_TO_CHAR",
    "CHAR_TO_BYTE",
    "GZIP_MAGIC",
    "HF_CHAT_ROLES",
    "HF_GPT2_REGEX",
    "MAX_RANK_DIGITS",
    "MAX_TEXT_FILE_BYTES",
    "PathLike",
    "TIKTOKEN_PRESETS",
    "assemble",
    "bytes_to_unicode",
    "from_hf_json",
    "from_mergeable_ranks",
    "from_vocab_merges",
    "gpt2_merges",
    "gpt2_vocab",
    "hf_chat_template",
    "load_gpt2",
    "load_hf",
    "load_tiktoken",
    "merges_from_ranks",
    "mergeable_ranks",
    "parse_merges_txt",
    "parse_tiktoken",
    "read_tiktoken_bytes",
    "save_gpt2",
    "save_hf",
    "save_pretrained",
    "save_tiktoken",
    "string_to_token",
    "tiktoken_args",
    "to_hf_json",
    "to_tiktoken",
    "token_to_string",
]
