"""Renumbering ids at the edge of the encoder, for imported vocabularies (Tokenizer.id_map).

Compiled with mypyc: the encoder works in mnemo's own ids, and an imported vocabulary (GPT-2,
tiktoken, CS336) shows its own.  The loop rewrites the list in place and stores the table's own
int objects: typed `Any`, they are copied as references, where `list[int]` would make mypyc
unbox and re-box (allocate) every id above 256 -- ~49 ns per id, no better than a Python list
comprehension; numpy (list -> array -> list) costs ~90 ns.  Measured with bench/interop_idmap.py.
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
