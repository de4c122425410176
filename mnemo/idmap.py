"""Renumbering a list of ids in place, for imported vocabularies (Tokenizer.id_map).

The Tokenizer no longer calls this: the encoder makes its lists of the public ids directly
(Encoder.set_public), one pass instead of two, faster on the list path (docs/speed.md;
bench/compare/idmap_fused_vs_remap.py times it against this loop).  It stays as that bench's
reference, the two-pass twin of the fused path.

Compiled with mypyc.  The loop rewrites the list in place and stores the table's own int
objects: typed `Any`, they are copied as references, where `list[int]` would make mypyc unbox
and re-box (allocate) every id above 256, no better than a Python list comprehension; numpy
(list -> array -> list) costs more (docs/interop.md; bench/compare/idmap_vs_native_ids.py).
"""

from __future__ import annotations

from typing import Any

from mypy_extensions import i64


def remap_in_place(ids: list[Any], table: list[Any]) -> None:
    """ids[i] = table[ids[i]] for every i.  Every id must index `table` (the Tokenizer's ids do)."""
    n: i64 = len(ids)
    i: i64 = 0
    while i < n:
        k: i64 = ids[i]
        ids[i] = table[k]
        i += 1
