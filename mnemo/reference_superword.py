"""The naive twins of superword tokens (mnemo/superword.py, docs/superword.md), written from
the definition: stage-1 chunks by the `regex` module running the pattern's regular expression
(pretokenize.PATTERN_REGEX; an undecodable byte is one character of its own, as in
mnemo.pretokenize), each chunk's kind from its characters' Unicode classes, coarse chunks by the
join rule, BPE by the literal loop (reference.encode_chunk_naive) and training by recounting
every pair (reference.train_tokens_naive).  Plain Python, not compiled: the oracle.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

from mnemo.reference import bpe_naive, encode_chunk_naive, merge_ranks, train_tokens_naive

HARD, END, JOIN = 0, 1, 2
#: One character each: sentence ends and the colon (what a token never reaches past).
ENDS = frozenset(".!?:\u3002\uff01\uff1f\uff1a\u061f\u06d4\u0964\u0965")


@functools.cache
def _regex() -> ModuleType:
    """The `regex` module (a test dependency: the oracle runs under the tests), typed loosely:
    it ships no type stubs."""
    return importlib.import_module("regex")


def stage1_chunks(data: bytes, pattern: str) -> list[bytes]:
    """The pattern's chunks of `data`, by the regex module (undecodable bytes as themselves)."""
    from mnemo.pretokenize import PATTERN_REGEX

    regex = _regex()

    text = data.decode("utf-8", "surrogateescape")
    return [m.encode("utf-8", "surrogateescape") for m in regex.findall(PATTERN_REGEX[pattern], text)]


def kind(chunk: bytes) -> int:
    """HARD, END or JOIN (mnemo.superword.chunk_kind), from the characters' classes."""
    regex = _regex()

    text = chunk.decode("utf-8", "surrogateescape")
    letters = sum(1 for c in text if regex.match(r"\p{L}", c))
    if any(c in "\r\n" or regex.match(r"\p{N}", c) for c in text):
        return HARD
    rest = text[1:] if text.startswith(" ") else text
    if any(regex.match(r"\s", c) for c in rest):
        return HARD
    others = [c for c in rest if not regex.match(r"\p{L}", c)]
    if letters:
        return JOIN
    if len(others) != 1:
        return HARD
    return END if others[0] in ENDS else JOIN


def coarse_chunks(data: bytes, pattern: str) -> list[list[bytes]]:
    """The coarse chunks of `data`, each as its stage-1 chunks: a run of chunks each of which
    joins the one before it (a JOIN after a JOIN, an END after a JOIN)."""
    out: list[list[bytes]] = []
    joinable = False  # the last coarse chunk ends with a JOIN chunk
    for chunk in stage1_chunks(data, pattern):
        k = kind(chunk)
        if joinable and k != HARD:
            out[-1].append(chunk)
        else:
            out.append([chunk])
        joinable = k == JOIN
    return out


def encode_superword(data: bytes, merges: Sequence[tuple[int, int]], transition: int, pattern: str) -> list[int]:
    """The curriculum: each stage-1 chunk by the stage-1 merges, then each coarse chunk's tokens
    by the stage-2 merges."""
    n1 = transition - 256
    ranks1 = merge_ranks(merges[:n1])
    ranks2 = {pair: k for k, pair in enumerate(merges) if k >= n1}
    out: list[int] = []
    for coarse in coarse_chunks(data, pattern):
        ids = [t for chunk in coarse for t in encode_chunk_naive(chunk, ranks1)]
        out.extend(bpe_naive(ids, ranks2))
    return out


def count_coarse(docs: Iterable[bytes], pattern: str, max_chunk_bytes: int = 256) -> dict[bytes, int]:
    """Stage 2's words: every coarse chunk of every document with its count; a longer one than
    max_chunk_bytes in pieces of whole stage-1 chunks (each as long as fits), a stage-1 chunk
    longer than that left out (mnemo.superword.add_coarse)."""
    counts: dict[bytes, int] = {}
    for doc in docs:
        for coarse in coarse_chunks(doc, pattern):
            piece = b""
            pieces: list[bytes] = []
            for chunk in coarse:
                if len(piece) + len(chunk) <= max_chunk_bytes:
                    piece += chunk
                    continue
                if piece:
                    pieces.append(piece)
                piece = chunk if len(chunk) <= max_chunk_bytes else b""
            if piece:
                pieces.append(piece)
            for p in pieces:
                counts[p] = counts.get(p, 0) + 1
    return counts


def train_stage2(
    coarse_words: dict[bytes, int],
    merges: Sequence[tuple[int, int]],
    counts: Sequence[int],
    n_merges: int,
    pattern: str,
    tie: str = "id",
    verify: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    skip: Callable[[bytes, bytes], bool] | None = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Stage 2 from stage 1's `merges`: each coarse word as the stage-1 tokens of its chunks
    (the word re-split alone), then the naive trainer up to `n_merges` merges in all."""
    ranks1 = merge_ranks(merges)
    seqs: list[list[int]] = []
    weights: list[int] = []
    for word, count in coarse_words.items():
        ids = [t for chunk in stage1_chunks(word, pattern) for t in encode_chunk_naive(chunk, ranks1)]
        if len(ids) >= 2 and count > 0:
            seqs.append(ids)
            weights.append(count)
    return train_tokens_naive(seqs, weights, list(merges), n_merges, tie, verify, progress, (), skip, counts)
