"""The naive twins of mnemo's hot paths: the obvious loops, for tests and benchmarks to compare.

Same signatures and results as the fast code; no speed tricks.
"""

from __future__ import annotations

from collections.abc import Sequence


# ---- encoding ----


def encode_chunk_naive(chunk: bytes, ranks: dict[tuple[int, int], int]) -> list[int]:
    """BPE on one chunk, literally: while some adjacent pair has a merge, take the lowest-numbered
    one and replace every occurrence, left to right, by its id 256 + k.

    `ranks` maps each merge's pair to its number k (see `merge_ranks`).
    """
    ids = list(chunk)
    while len(ids) >= 2:
        found = [ranks[p] for p in zip(ids, ids[1:]) if p in ranks]
        if not found:
            break
        k = min(found)
        new = 256 + k
        out: list[int] = []
        i = 0
        while i < len(ids):
            if i + 1 < len(ids) and ranks.get((ids[i], ids[i + 1])) == k:
                out.append(new)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids


def merge_ranks(merges: Sequence[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """pair -> merge number."""
    return {(a, b): k for k, (a, b) in enumerate(merges)}


def encode_chunks_naive(chunks: Sequence[bytes], merges: Sequence[tuple[int, int]]) -> list[int]:
    """The ids of already-split chunks, concatenated (the twin of Encoder.encode_chunks)."""
    ranks = merge_ranks(merges)
    out: list[int] = []
    for chunk in chunks:
        out.extend(encode_chunk_naive(chunk, ranks))
    return out
