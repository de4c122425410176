"""Word counts for the trainer benchmarks: the first N bytes of a corpus file, pre-tokenized with
`regex.findall` and a named pattern (independent of mnemo's counter, so the trainer bench times the merge loop alone), cached on disk
in a plain length-prefixed format (no pickle) so that repeated runs skip the counting.

Cache file layout: repeated records of  u32 LE word length | word bytes | u64 LE count.
"""

from __future__ import annotations

import json
import lzma
import os
import struct
from collections import Counter
from pathlib import Path

import regex

PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "mnemonic": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
}
CORPUS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
CACHE_DIR = Path(os.environ.get("MNEMO_BENCH_CACHE", "/tmp/mnemo-bench-cache"))


def corpus_texts(name: str, max_bytes: int) -> list[str]:
    """Document texts from the start of ../shared/corpus/<name>.jsonl.xz, up to max_bytes."""
    path = CORPUS_DIR / f"{name}.jsonl.xz"
    if not path.is_file():
        raise FileNotFoundError(f"corpus file {path} is absent (it lives in ../shared/corpus)")
    docs: list[str] = []
    total = 0
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if total >= max_bytes:
                break
            record = json.loads(line)
            texts = [m["content"] for m in record["messages"]] if "messages" in record else [record["text"]]
            for text in texts:
                docs.append(text)
                total += len(text.encode("utf-8"))
    return docs


def count_words(texts: list[str], pattern: str, max_chunk_bytes: int = 256) -> dict[bytes, int]:
    rx = regex.compile(PATTERNS[pattern])
    counts: Counter[bytes] = Counter()
    for text in texts:
        counts.update(chunk.encode("utf-8") for chunk in rx.findall(text))
    return {w: c for w, c in counts.items() if len(w) <= max_chunk_bytes}


def corpus_words(name: str, max_bytes: int, pattern: str) -> dict[bytes, int]:
    """Cached word counts of the first max_bytes of a corpus."""
    cache = CACHE_DIR / f"{name}-{max_bytes}-{pattern}.words"
    if cache.is_file():
        data = cache.read_bytes()
        words: dict[bytes, int] = {}
        pos = 0
        while pos < len(data):
            (n,) = struct.unpack_from("<I", data, pos)
            word = data[pos + 4 : pos + 4 + n]
            (count,) = struct.unpack_from("<Q", data, pos + 4 + n)
            words[word] = count
            pos += 12 + n
        return words
    words = count_words(corpus_texts(name, max_bytes), pattern)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    parts = [struct.pack("<I", len(w)) + w + struct.pack("<Q", c) for w, c in words.items()]
    tmp = cache.with_suffix(".tmp")
    tmp.write_bytes(b"".join(parts))
    tmp.rename(cache)
    return words
