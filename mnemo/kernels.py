"""The native kernels, as the rest of mnemo sees them.  This is the only module that imports
the extension mnemo._kernels (asm/shim.c); everything else imports from here.

Kernels (NASM in asm/*.asm, portable C twins in asm/kernels_portable.c):

pair_scan(tokens, a, b, out, start=0, stop=-1) -> int
    Every i in [start, stop - 1) with tokens[i] == a and tokens[i + 1] == b, in increasing
    order, written to `out` (a writable buffer of int64) as absolute indices; returns how
    many were written.  Needs 0 <= start <= stop <= len(tokens); stop=-1 (the default) is the
    one value that means len(tokens), and every other negative stop is a ValueError.  It
    stops when `out` is full: resume from out[-1] + 1.  `tokens` is any contiguous buffer of
    16-bit items (numpy uint16, array('H'), librt vec[i16]).  Long scans release the GIL, so
    threads can scan parts of one array at once (bench/pytest/bench_kernels.py does).

pair_positions(tokens, a, b, cap, start=0, stop=-1) -> bytes
    The same scan, returning at most `cap` positions packed as little-endian int64 in a bytes
    object (mypyc-compiled code reads them with librt.strings.read_i64_le at ~1 ns each).

memeq(a, a_off, b, b_off, n) -> bool
    a[a_off:a_off+n] == b[b_off:b_off+n] without reading outside either range.  A range not
    inside its buffer (any offset or n negative, or past the end) is a ValueError, for every
    64-bit value (the check cannot overflow; see asm/shim.c range_ok).  A call costs
    about 50 ns from compiled code: worth it only for long ranges (see count.py).

class_masks(data, table[, start, stop]) -> bytes
    For each 64-byte block k of `data`, eight little-endian uint64 masks at bytes 64k .. 64k+63
    of the result: mask p (at 64k + 8p) has bit j set when bit p of table[data[64k + j]] is set.
    `table` is 256 bytes, one byte of up to eight property bits per byte value (the caller
    decides what the bits mean: letter, digit, space, ...).  Bits past len(data) in the last
    block are 0.  The pre-tokenizer's use: classify a whole text once (~1 call, no per-chunk
    crossing), then find the end of a run of bytes with some property by reading a mask word
    (mnemo/classmask.py).  Long texts release the GIL.  With `start` and `stop`, the masks of
    data[start:stop], read where it lies (0 <= start <= stop <= len(data), else ValueError).

huge_pages(memory) -> int
    Ask Linux to move the pages of `memory` (any buffer) onto 2 MB huge pages now
    (madvise MADV_COLLAPSE over the 2 MB-aligned regions it touches; asm/shim.c says why a
    region it only partly covers is taken whole).  Returns the bytes of those regions when the
    kernel did it, else 0 (another system, an older kernel, a region that spans two
    mappings); it is a hint, so 0 changes nothing but speed.

huge_pages_of(objects) -> int
    The same for the memory of a list: its array of references and the span of its objects
    (the encoder's pre-made int objects, which every list of ids references).

align_offset(memory, alignment) -> int
    How many bytes from the start of `memory` (any buffer) to its first address that is a
    multiple of `alignment` (a power of two): where the encoder starts a table in a vec so that
    no entry straddles two cache lines (encode_chunk.LINE).

id_list(packed, objects, wide) -> list
    The list [objects[x] for x in ids], where ids are `packed` read as little-endian uint16
    (uint32 when `wide`), and a new int for an id past the objects: the encoder's lists of ids
    (Encoder.ids_list; encode_chunk.ids_from is the compiled twin).  Each object and its
    slot are fetched some ids ahead of use.  A length that is not a whole number of ids is a
    ValueError.  `packed` may also be a librt.strings BytesWriter, read where it is (no copy
    by getvalue) when writer_in_place() says its memory layout is known.

id_array(packed, wide, table) -> bytearray
    The public ids of the packed ids (`packed` as id_list reads it) as native uint16 or uint32
    items, ready for np.frombuffer: table[x] for each id x when `table` is a contiguous buffer
    of uint16 or uint32 (format 'H' or 'I'; the result has its width), else x itself as
    uint32 (table=None).  An id past the table is a ValueError.  For encode_to_numpy and the
    flat batch (mnemo/packing.py); numpy's `table.take(ids)` is its twin, which the tests
    compare.

id_lists(packed, objects, wide, lengths) -> list of lists
    One such list per text of a batch: `lengths` holds each text's id count (int64, native
    order) and `packed` all their ids back to back (encode_batch's unpacking;
    encode_chunk.lists_of is the compiled twin).  Lengths that need more ids than `packed`
    holds are a ValueError.

writer_in_place() -> bool
    Whether the loaded librt.strings has the BytesWriter layout id_list reads (its ABI 1); if
    not, callers pass getvalue()'s copy (Encoder.writer_ids).

untrack_atoms(objects) -> bool
    When every item of the list `objects` is an object the cyclic GC does not track (an int,
    bytes, a str ...) or a tuple of such, untrack those tuples and the list, and say True; else
    change nothing and say False.  For a vocabulary's long lists (its ids, tokens and merges),
    which every full collection of the process walked item by item.  A list stays untracked
    when something is appended to it later: it is for lists that only ever hold such items.

pair_list(packed, objects) -> list of (int, int)
    [(a, b), ...] of the int32 pairs in `packed` (native order; a buffer, or a BytesWriter
    read in place), the tuples and the list untracked as untrack_atoms leaves them (a
    vocabulary's merges, ranks.rank_vocab; the compiled twin is the list of tuples built
    from the same values, which the tests compare).  A value that indexes the list `objects`
    (or None) is that list's item, shared; any other a new int.  An odd number of int32 is a
    ValueError.

read_fd(fd, size) -> bytes
    Up to `size` bytes of the open file descriptor `fd` from its position (fewer at the end of
    the file), read into the bytes object itself with the GIL released; a buffer of 4 MB or
    more is given huge pages before it is written (the shim's fresh_huge).  location.py reads
    large local files so (a 17.6 MB tokenizer.json: 4,300 page faults fewer).  read(2)'s errors
    are OSError.

utf8_of(text) -> bytes
    text.encode("utf-8"); a str of ASCII characters is copied into a new bytes object whose
    pages fault in 2 MB at a time when it is 4 MB or more (as read_fd's), any other str is
    CPython's own encoding (UnicodeEncodeError on a lone surrogate).  streaming.text_bytes,
    the bytes every encode call works on, is it: 10 MB of ASCII took 2,400 page faults of
    fresh memory a call.  A non-str is a TypeError.

backend() names the kernels in use ("avx2" or "c"); backends() lists those this build can
run on this CPU; set_backend(name) switches (tests and benchmarks do); asm_built() says
whether the NASM objects were linked in at all.

Argument errors name the argument: TypeError for a non-int or a non-buffer, ValueError for an
int out of range (also beyond 64 bits, where Python itself would raise OverflowError).
"""

from mnemo._kernels import (
    align_offset,
    asm_built,
    backend,
    backends,
    class_masks,
    huge_pages,
    huge_pages_of,
    id_array,
    id_list,
    id_lists,
    memeq,
    pair_list,
    pair_positions,
    pair_scan,
    read_fd,
    set_backend,
    untrack_atoms,
    utf8_of,
    writer_in_place,
)

__all__ = [
    "align_offset",
    "asm_built",
    "backend",
    "backends",
    "class_masks",
    "huge_pages",
    "huge_pages_of",
    "id_array",
    "id_list",
    "id_lists",
    "memeq",
    "pair_list",
    "pair_positions",
    "pair_scan",
    "read_fd",
    "set_backend",
    "untrack_atoms",
    "utf8_of",
    "writer_in_place",
]
