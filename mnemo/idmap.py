"""Renumbering a list of ids in place, for imported vocabularies (Tokenizer.id_map), and the
check of an imported vocabulary's ids (distinct_ids).

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

from librt.strings import BytesWriter, write_i32_le
from librt.vecs import vec
from mypy_extensions import i32, i64, u8

from mnemo.kernels import untrack_atoms


def remap_in_place(ids: list[Any], table: list[Any]) -> None:
    """ids[i] = table[ids[i]] for every i.  Every id must index `table` (the Tokenizer's ids do)."""
    n: i64 = len(ids)
    i: i64 = 0
    while i < n:
        k: i64 = ids[i]
        ids[i] = table[k]
        i += 1


def distinct_ids(public: list[object], limit: int) -> bool:
    """Whether every item is an int (not a bool), 0 <= item <= limit, and no two are equal:
    vocab.check_public_ids' rules, its common case in two compiled passes and a byte a possible
    id (a set of 100,000 ints, with min, max and a pass over their types, was 12 ms of
    cl100k_base's tokenizer.json load).  False also when the ids are spread over more than 8 x
    their number plus 65,536 values, which the caller checks its own way (as it words every
    error)."""
    n: i64 = len(public)
    top: i64 = -1
    values = vec[i64]([0] * n)
    i: i64 = 0
    while i < n:
        x = public[i]
        if type(x) is not int:  # a bool is an int's subclass: not an id
            return False
        if x < 0 or x > limit:
            return False
        v: i64 = x
        values[i] = v
        if v > top:
            top = v
        i += 1
    if top >= 8 * n + 65536:
        return False
    seen = vec[u8]([0] * (top + 1))
    i = 0
    while i < n:
        v = values[i]
        if seen[v] != 0:
            return False
        seen[v] = 1
        i += 1
    return True


def is_identity(public: list[int], n: i64) -> bool:
    """Whether `public` is exactly [0, 1, ..., n - 1] (the Tokenizer then keeps no id map):
    one compiled pass, where `public == list(range(n))` made n int objects first (7 ms of
    o200k_base's load)."""
    if len(public) != n:
        return False
    i: i64 = 0
    while i < n:
        if public[i] != i:
            return False
        i += 1
    return True


def packed_ids(public: list[int], wide: bool) -> bytes:
    """The ids as little-endian uint32 (`wide`) or uint16, back to back: the bytes of the
    Tokenizer's public-id array (numpy's asarray of the list, an int object at a time, was 7 ms
    of o200k_base's load).  Every id fits (the caller chose `wide` from the largest)."""
    out = BytesWriter()
    for x in public:
        v: i64 = x
        if wide:
            write_i32_le(out, i32(v))
        else:
            out.append(u8(v & 0xFF))
            out.append(u8(v >> 8))
    return out.getvalue()


def placed(tokens: list[bytes], public: list[int], n_ids: i64) -> list[bytes | None]:
    """tokens[i] at index public[i] of a list of n_ids, None elsewhere (the Tokenizer's vocab by
    public id; the ids are distinct and below n_ids): one compiled pass, where numpy's object
    arrays (fill, scatter, tolist) took 5.6 ms of o200k_base's load."""
    table: list[bytes | None] = [None] * n_ids
    untrack_atoms(table)  # bytes and None: nothing the cyclic GC need walk (kernels.untrack_atoms)
    i: i64 = 0
    for raw in tokens:
        table[public[i]] = raw
        i += 1
    return table
