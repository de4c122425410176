"""The rules every part of mnemo shares: id limits, the loss-mask bit, pattern and tie names.

One home for each: a module that needs one of these imports it from here.  Names only -- the code
that acts on them lives with its concept (pretokenize.py for the patterns, reference.py's
TIE_RULE_DOC for the tie rules, checks.py for the argument checks).

Adding a pre-tokenizer pattern: append its name to PATTERNS (its index is its id in tokenizer.bin,
so never reorder), give pretokenize.py its regex and its cutting code, and run
tests/test_patterns.py, which checks every pattern listed here against the properties other modules
rely on (PATTERN_PROPERTIES).
"""

from __future__ import annotations

from typing import Final

PATTERNS: Final = ("mnemonic", "gpt4", "gpt2", "o200k", "cl100k")  # index = pattern id (docs/formats.md, tokenizer.bin): new ones at the end

#: What other modules assume of EVERY pattern (tests/test_patterns.py checks each one, for each
#: name in PATTERNS, against the `regex` module running the pattern):
#:   "ascii_fast_path"   -- the four ASCII cases the hand-written twin (pretokenize_named.chunk_end)
#:                          cuts inline before it looks at the pattern: " word", "word", a
#:                          punctuation mark before a space, and a line break before a letter,
#:                          digit or mark; all five named patterns cut them alike.  (The compiled
#:                          scanner derives its shortcuts from each pattern: regex_family.)
#:   "cut_before_space_letter" -- a chunk ends before every space that follows a printable ASCII
#:                          character other than white space and precedes an ASCII letter, and the
#:                          text on each side splits on its own as it does inside the whole
#:                          (sources._WORD_GAP cuts input files there; not after
#:                          white space: cl100k's \s++$ would take "\n " at the end of the text
#:                          before such a cut whole).
PATTERN_PROPERTIES: Final = ("ascii_fast_path", "cut_before_space_letter")
#: Patterns that pretokenize_named.chunk_end sends to shortcuts of their own before the shared ASCII fast
#: path, so "ascii_fast_path" is not assumed of them: o200k cuts words by case and keeps a
#: contraction on its word (" a's" is one chunk).  Its own shortcuts are checked against `regex`
#: with the rest of the pattern (tests/test_pretokenize.py).  A name here is a branch in chunk_end.
OWN_ASCII_SHORTCUTS: Final = ("o200k",)

#: The longest split regex mnemo takes, in UTF-8 bytes: what tokenizer.bin's PATN section holds
#: (a u16 length); a longer one is no pattern anyone writes, and compiling it costs seconds.
MAX_PATTERN_BYTES: Final = 0xFFFF
TIES: Final = ("id", "bytes")  # index = tie id; the rules in words: reference.TIE_RULE_DOC

#: The most tokens (bytes + merges + specials) one vocabulary holds, trained or loaded.  The encoder
#: packs a pair and its merge number into one 63-bit word, 21 bits each (encode_chunk.py):
#: 2,097,152 tokens, eight times o200k_base.  A token's public id (an imported vocabulary's own
#: numbering) may be larger.
MAX_VOCAB: Final = 1 << 21
#: The largest id a token may have: bit 31 is the loss-mask bit of uint32 token files.
MAX_TOKEN_ID: Final = 0x7FFFFFFF
#: Ids below this fit a uint16 array: the 16-bit token files, caches and fast trainer.
VOCAB16: Final = 1 << 16
#: The most special tokens a tokenizer.bin holds (its header counts them in 16 bits).
MAX_SPECIALS: Final = 0xFFFF
#: The largest total of pair counts the trainers take: sum over the words of count x (length - 1).
#: The fast trainer counts in 64-bit integers, and no count it ever holds -- a pair's count, an
#: intermediate value while a merge applies its deltas, the count a merge removes -- exceeds that
#: total (a merge only lowers it), so checking it once up front rules out overflow.  2**63 - 1
#: pairs is about 9.2 exabytes of text: no real corpus comes near; only made-up counts do.
MAX_PAIR_TOTAL: Final = (1 << 63) - 1

MASKBIT: Final = 0x8000  # the loss-mask bit of a masked uint16 .tok id
MASKBIT32: Final = 0x80000000  # the loss-mask bit of a masked uint32 .tok id

#: The names a GPT-2-style folder gives its two files, in the order they are looked for: Hugging
#: Face's, the cs336 fixtures' (and others' copies prefixed with the model), OpenAI's original
#: download.  A folder written by mnemo uses the first pair.
GPT2_FILE_NAMES: Final = (("vocab.json", "merges.txt"), ("gpt2_vocab.json", "gpt2_merges.txt"), ("encoder.json", "vocab.bpe"))

#: GPT-2's and tiktoken's document separator: `Tokenizer.eot_token` names it, and plain-text
#: inputs are cut into documents at it.
EOT: Final = "<|endoftext|>"


def maskbit_for(n_vocab: int) -> int:
    """The loss-mask bit of a chat of this vocabulary: MASKBIT while every id is below it (the
    chat fits a uint16 .tok), else MASKBIT32 (a uint32 .tok; ids stay below 2**31)."""
    return MASKBIT if n_vocab <= MASKBIT else MASKBIT32

#: What --input-format names (mnemo/sources.py, docs/formats.md): "chat" is JSON Lines of chat
#: records, which only `tokenize --chat` reads.
INPUT_FORMATS: Final = ("text", "jsonl", "parquet", "arrow", "chat")
