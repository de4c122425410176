"""GPT-2's merges as a mnemo Tokenizer and as the same vocabulary in tiktoken, and the start of the
English corpus: what the encode benches of pytest/ and compare/ share.  mnemo's ids: byte b is id
b, merge k is 256 + k."""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

from mnemo import Tokenizer
from mnemo.interop import bytes_to_unicode

SHARED = Path(__file__).resolve().parents[3] / "shared"
PATTERNS = {
    "mnemonic": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
}


def gpt2_tokenizer(n_merges: int = 32_496) -> Tokenizer:
    decode = {c: b for b, c in bytes_to_unicode().items()}
    ids = {bytes([b]): b for b in range(256)}
    merges: list[tuple[int, int]] = []
    path = SHARED / "fixtures" / "cs336" / "gpt2_merges.txt"
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#version"):
            continue
        left, right = (bytes(decode[c] for c in part) for part in line.split(" "))
        merges.append((ids[left], ids[right]))
        ids[left + right] = 255 + len(merges)
        if len(merges) == n_merges:
            break
    return Tokenizer(merges, pattern="gpt2")


def english_docs(max_bytes: int) -> list[str]:
    docs: list[str] = []
    total = 0
    with lzma.open(SHARED / "corpus" / "english.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            docs.append(text)
            total += len(text.encode("utf-8"))
            if total >= max_bytes:
                break
    return docs


def tiktoken_encoding(tok: Tokenizer) -> Any:
    import tiktoken

    n = 256 + len(tok.merges)
    ranks = {tok.token_bytes(i): i for i in range(n)}
    return tiktoken.Encoding("mnemo-merges", pat_str=PATTERNS[tok.pattern], mergeable_ranks=ranks, special_tokens={})
