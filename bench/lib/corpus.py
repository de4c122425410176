"""The corpus documents the benches read: one helper instead of a copy in each bench.

A bench imports it as `from corpus import documents` after putting bench/lib on sys.path (a
script does so itself; under pytest, bench/pytest/conftest.py does).
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any, Literal

#: ../shared beside the checkout: corpora and fixtures (brief-common.md).
SHARED = Path(__file__).resolve().parents[3] / "shared"


def documents(
    mb: float, name: str = "english", *, count: Literal["bytes", "chars"] = "bytes", max_chars: int | None = None
) -> list[str]:
    """The first documents of ../shared/corpus/NAME.jsonl.xz, up to the first that reaches
    `mb` million UTF-8 bytes in all (`count="chars"`: characters, what pickle_round_trip.py's figures
    in docs/pipelines.md were measured on), each cut to `max_chars` characters when given.  For
    `chat`, each message's content is a document (as the tests' corpus_docs has it)."""
    docs: list[str] = []
    size = 0
    with lzma.open(SHARED / "corpus" / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            texts = [m["content"] for m in record["messages"]] if "messages" in record else [record["text"]]
            for text in texts:
                text = text[:max_chars] if max_chars is not None else text
                docs.append(text)
                size += len(text.encode("utf-8")) if count == "bytes" else len(text)
                if size >= mb * 1e6:
                    return docs
    return docs


def vocabulary(name: str) -> Any:
    """A mnemo Tokenizer by a bench's --vocab: `cl100k_base` / `o200k_base` from
    ../shared/fixtures/tiktoken (tiktoken's pattern and Unicode tables), else a tokenizer.bin path."""
    import mnemo

    if name in ("cl100k_base", "o200k_base"):
        return mnemo.load(SHARED / "fixtures" / "tiktoken" / f"{name}.tiktoken.gz", pattern=name)
    return mnemo.Tokenizer.load(name)
