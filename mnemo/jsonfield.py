"""The text field of a JSON Lines record, without json.loads: the fast path of sources.py.

`string_field(line, key)` answers only for the shape of most JSONL corpora (../shared/corpus
included): one JSON object whose members are all strings.  It returns None whenever it is not
sure -- another shape, a value that is not a string, the key absent, anything malformed -- and
the caller then runs json.loads, which gives the same answer or the proper error.  So this module
needs no error messages and can never be the reason a file is rejected.

When it answers, the answer is exactly json.loads(line)[key].encode("utf-8"):

* escapes \\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX (hex digits in either case);
* a \\uD800-\\uDBFF escape directly followed by a \\uDC00-\\uDFFF escape is one code point (four
  UTF-8 bytes); any other surrogate escape (a lone surrogate, which has no UTF-8 form) gives None,
  and sources.py applies its rule for lone surrogates (U+FFFD) to what json.loads returns;
* of duplicate keys the last one wins (as in a dict); a key may itself contain escapes;
* raw bytes: below 0x20 inside a string is invalid JSON (None); bytes from 0x80 must form
  well-formed UTF-8 as Python's strict decoder defines it -- no overlong forms, no encoded
  surrogates, nothing above U+10FFFF -- else None (json.loads would accept an encoded surrogate:
  it decodes bytes with "surrogatepass"; returning None leaves that case to it);
* only JSON white space (space, tab, CR, LF) around the tokens; a UTF-8 byte order mark or
  anything else before "{" or after "}" gives None.

How: one pass over the line.  Inside a string, eight bytes at a time are tested for a byte that
needs attention (a quote, a backslash, a control byte or a byte from 0x80) with a few ALU
operations on one 64-bit load.  Only the values of `key` are decoded, into a librt BytesWriter;
other strings are only checked.  A word without a marked byte is written whole; one with a mark
is written and the writer cut back to the bytes before the mark, whose number is computed without
a branch per byte.  From the mark, escapes and UTF-8 sequences are handled one at a time for as
long as they follow each other, then the word scan goes on.

Why by hand: on every corpus measured this scan reads the text field faster than json.loads +
encode (bench/measure/worker_time_breakdown.py; the figures and their conditions are in
docs/measurements.md).
"""

from __future__ import annotations

from typing import Final

from librt.strings import BytesWriter, read_i16_le, read_i32_le, read_i64_le, write_i16_le, write_i32_le, write_i64_le
from mypy_extensions import i16, i32, i64, u8

# One in every byte of an i64, for the eight-bytes-at-a-time scan in json_string.
_ONES: Final[i64] = 0x0101010101010101
_QUOTE: Final[i64] = 0x22
_BACKSLASH: Final[i64] = 0x5C
_LETTER_U: Final[i64] = 0x75


def _special_table() -> bytes:
    """1 for a byte that ends a run of plain string bytes: a control byte, '"', '\\', or a byte
    from 0x80 (it starts a UTF-8 sequence to check)."""
    t = bytearray(256)
    for c in range(256):
        if c < 0x20 or c == 0x22 or c == 0x5C or c >= 0x80:
            t[c] = 1
    return bytes(t)


def _escape_table() -> bytes:
    """The byte a one-character escape stands for, by the character after the backslash; 0 for
    a character that does not make an escape (no valid one stands for 0).  'u' is handled
    apart."""
    t = bytearray(256)
    for c, v in ((0x22, 0x22), (0x5C, 0x5C), (0x2F, 0x2F), (0x62, 0x08), (0x66, 0x0C), (0x6E, 0x0A), (0x72, 0x0D), (0x74, 0x09)):
        t[c] = v
    return bytes(t)


def _hex_table() -> bytes:
    """The value of a hex digit (either case), 0xFF for any other byte."""
    t = bytearray(b"\xff" * 256)
    for c in range(10):
        t[0x30 + c] = c
    for c in range(6):
        t[0x41 + c] = 10 + c
        t[0x61 + c] = 10 + c
    return bytes(t)


_SPECIAL: Final[bytes] = _special_table()
_ESCAPED: Final[bytes] = _escape_table()
_HEX: Final[bytes] = _hex_table()


def string_field(line: bytes, key: bytes) -> bytes | None:
    """The value of member `key` (UTF-8 bytes of the name, as field.encode("utf-8",
    "surrogatepass")) when `line` is a JSON object whose members are all strings, as
    json.loads(line)[key].encode("utf-8") would give it; else None (also when a string holds a
    lone surrogate, which has no UTF-8: sources.py then applies its rule)."""
    return _field(line, 0, len(line), key)


def string_fields(data: bytes, at: i64, key: bytes, out: list[bytes]) -> i64:
    """string_field for each line of `data` from offset `at` (a line start) that ends with
    b"\n", appended to `out`, read in place: the lines are never sliced out of the block.  Stops
    at the first line it declines (blank, another shape, an error: the caller reads that one
    with json.loads) or at the unfinished last line, and returns that line's offset.  Every
    line it passes adds exactly one item to `out`, so the caller counts lines by len(out).

    Why: splitting each 8 MB block into line objects cost as many instructions as reading the
    text field out of them (cachegrind, docs/speed.md)."""
    end: i64 = len(data)
    while at < end:
        nl: i64 = data.find(b"\n", at)
        if nl < 0:
            return at
        value = _field(data, at, nl, key)
        if value is None:
            return at
        out.append(value)
        at = nl + 1
    return at


def _field(line: bytes, start: i64, n: i64, key: bytes) -> bytes | None:
    """string_field of the line line[start:n] (n: the index of its end, not its length)."""
    i = skip_space(line, start, n)
    if i >= n or line[i] != 0x7B:  # "{"
        return None
    i = skip_space(line, i + 1, n)
    if i >= n or line[i] == 0x7D:  # "}": an empty object has no such key
        return None
    out = BytesWriter()  # the decoded value; also passed, unwritten, when only checking
    found = False
    while True:
        if line[i] != _QUOTE:
            return None
        start = i + 1
        i = json_string(line, start, n, out, False)
        if i < 0:
            return None
        matches = _key_matches(line, start, i - 1, n, key)
        i = skip_space(line, i, n)
        if i >= n or line[i] != 0x3A:  # ":"
            return None
        i = skip_space(line, i + 1, n)
        if i >= n or line[i] != _QUOTE:
            return None
        if matches:
            if found:
                out.truncate(0)  # a duplicate key: the last value wins
            found = True
        i = json_string(line, i + 1, n, out, matches)
        if i < 0:
            return None
        i = skip_space(line, i, n)
        if i >= n:
            return None
        c: i64 = line[i]
        if c == 0x7D:  # "}"
            break
        if c != 0x2C:  # ","
            return None
        i = skip_space(line, i + 1, n)
        if i >= n:
            return None
    if not found or skip_space(line, i + 1, n) != n:
        return None
    return out.getvalue()


def skip_space(line: bytes, i: i64, n: i64) -> i64:
    """The first index from i that is not JSON white space (space, tab, LF, CR), or n."""
    while i < n:
        c: i64 = line[i]
        if c != 0x20 and c != 0x0A and c != 0x0D and c != 0x09:
            return i
        i += 1
    return i


def _key_matches(line: bytes, start: i64, end: i64, n: i64, key: bytes) -> bool:
    """Whether the string line[start:end] (without its quotes; already checked by _string)
    decodes to `key`."""
    j = start
    while j < end:
        if line[j] == _BACKSLASH:
            # rare: decode the whole key and compare that
            w = BytesWriter()
            json_string(line, start, n, w, True)
            return w.getvalue() == key
        j += 1
    k: i64 = len(key)
    if end - start != k:
        return False
    j = 0
    while j < k:
        if line[start + j] != key[j]:
            return False
        j += 1
    return True


def json_string(line: bytes, i: i64, n: i64, out: BytesWriter, decode: bool) -> i64:
    """Check the JSON string whose first byte (after the opening quote) is at i; return the
    index after its closing quote, or -1 if it is not a well-formed string (or not one this
    module is sure of).  With `decode`, append its decoded UTF-8 bytes to `out`."""
    # Masks built from locals, not Final constants: mypyc would fold a product above 2**62
    # into a boxed constant, while this stays C arithmetic that gcc folds.
    k7f: i64 = 0x7F
    low7 = _ONES * k7f  # 0x7F in every byte
    high = ~low7  # 0x80 in every byte
    k5c: i64 = 0x5C
    backslashes = _ONES * k5c
    spaces = _ONES * 0x20
    quotes = _ONES * 0x22
    while True:
        # Plain ASCII, eight bytes at a time.  y = x with every byte's top bit cleared, so
        # every byte of y is at most 0x7F and no subtraction below overflows; a byte's top bit
        # in m is set iff x has its top bit set (>= 0x80), or y < 0x20 (y - 0x20 borrows), or
        # y == '"' or y == '\\' (y ^ c is 0, and 0 - 1 borrows).  A borrow can only mark
        # bytes above a marked byte, never the first one.
        while i + 8 <= n:
            x = read_i64_le(line, i)
            y = x & low7
            m = (x | (y - spaces) | ((y ^ quotes) - _ONES) | ((y ^ backslashes) - _ONES)) & high
            if m == 0:
                if decode:
                    write_i64_le(out, x)
                i += 8
                continue
            # k = the number of bytes before the first marked one: isolate its mark (t & -t,
            # with t > 0 so nothing overflows), set the low bit of every byte below it and
            # add those bits up by folding -- no branch per byte.
            t = (m >> 7) & _ONES
            below = ((t & -t) - 1) & _ONES
            below += below >> 32
            below += below >> 16
            below += below >> 8
            k = below & 0xFF
            if k != 0:
                if decode:
                    size: i64 = len(out)
                    write_i64_le(out, x)
                    out.truncate(size + k)  # keep only the bytes before the marked one
                i += k
            break
        if i + 8 > n:
            # fewer than eight bytes left: one at a time
            while i < n:
                c: i64 = line[i]
                if _SPECIAL[c] != 0:
                    break
                if decode:
                    out.append(u8(c))
                i += 1
            if i >= n:
                return -1  # unterminated
        # Bytes that need attention, as long as they follow each other (escapes in a row, a
        # run of non-ASCII characters); back to the word scan at the first plain byte.
        while True:
            c = line[i]
            if c == _QUOTE:
                return i + 1
            if c == _BACKSLASH:
                if i + 1 >= n:
                    return -1
                d: i64 = line[i + 1]
                if d == _LETTER_U:
                    i = _u_escape(line, i, n, out, decode)
                    if i < 0:
                        return -1
                else:
                    v: i64 = _ESCAPED[d]
                    if v == 0:
                        return -1
                    if decode:
                        out.append(u8(v))
                    i += 2
            elif c >= 0xC2 and c < 0xE0:
                # two-byte sequence: C2-DF 80-BF
                if i + 1 >= n or (line[i + 1] & 0xC0) != 0x80:
                    return -1
                if decode:
                    write_i16_le(out, read_i16_le(line, i))
                i += 2
            elif c >= 0xE0 and c < 0xF0:
                # three-byte: E0 A0-BF, E1-EC 80-BF, ED 80-9F (no surrogates), EE-EF 80-BF;
                # then 80-BF
                if i + 2 >= n:
                    return -1
                b1: i64 = line[i + 1]
                if b1 < (0xA0 if c == 0xE0 else 0x80) or b1 > (0x9F if c == 0xED else 0xBF):
                    return -1
                b2: i64 = line[i + 2]
                if (b2 & 0xC0) != 0x80:
                    return -1
                if decode:
                    write_i16_le(out, read_i16_le(line, i))
                    out.append(u8(b2))
                i += 3
            elif c >= 0xF0 and c < 0xF5:
                # four-byte: F0 90-BF, F1-F3 80-BF, F4 80-8F (nothing above U+10FFFF); then
                # 80-BF twice
                if i + 3 >= n:
                    return -1
                b1 = line[i + 1]
                if b1 < (0x90 if c == 0xF0 else 0x80) or b1 > (0x8F if c == 0xF4 else 0xBF):
                    return -1
                if (line[i + 2] & 0xC0) != 0x80 or (line[i + 3] & 0xC0) != 0x80:
                    return -1
                if decode:
                    write_i32_le(out, read_i32_le(line, i))
                i += 4
            else:
                # a raw control byte, a continuation byte without a lead, C0/C1 (overlong),
                # F5-FF
                return -1
            if i >= n:
                return -1
            if _SPECIAL[line[i]] == 0:
                break


def _u_escape(line: bytes, i: i64, n: i64, out: BytesWriter, decode: bool) -> i64:
    """The \\uXXXX escape whose backslash is at i: return the index after it, or -1 if it is
    not a valid one.  With `decode`, append the code point to `out` as UTF-8."""
    cp = _hex4(line, i + 2, n)
    if cp < 0:
        return -1
    i += 6
    # A high surrogate directly followed by a low one is one code point, as json.loads joins
    # them.  A lone surrogate is declined: the caller's rule (U+FFFD, as Tokenizer.encode)
    # belongs to sources.py, and a key holding one must compare as json.loads keeps it.  Rare,
    # so json.loads reading those lines costs nothing measurable.
    if 0xD800 <= cp < 0xE000:
        if cp >= 0xDC00 or i + 6 > n or line[i] != _BACKSLASH or line[i + 1] != _LETTER_U:
            return -1
        low = _hex4(line, i + 2, n)
        if not 0xDC00 <= low < 0xE000:
            return -1
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
        i += 6
    if decode:
        _put_utf8(out, cp)
    return i


def _hex4(line: bytes, i: i64, n: i64) -> i64:
    """The value of the four hex digits at i, or -1."""
    if i + 4 > n:
        return -1
    a: i64 = _HEX[line[i]]
    b: i64 = _HEX[line[i + 1]]
    c: i64 = _HEX[line[i + 2]]
    d: i64 = _HEX[line[i + 3]]
    if (a | b | c | d) > 15:
        return -1
    return (a << 12) | (b << 8) | (c << 4) | d


def _put_utf8(out: BytesWriter, cp: i64) -> None:
    """Append code point cp (0 to 0x10FFFF, never a surrogate: _u_escape declines those) as
    UTF-8, in as few writes as possible (each write updates the writer's length in memory)."""
    if cp < 0x80:
        out.append(u8(cp))
    elif cp < 0x800:
        _put16(out, (0xC0 | (cp >> 6)) | ((0x80 | (cp & 0x3F)) << 8))
    elif cp < 0x10000:
        _put16(out, (0xE0 | (cp >> 12)) | ((0x80 | ((cp >> 6) & 0x3F)) << 8))
        out.append(u8(0x80 | (cp & 0x3F)))
    else:
        v = (0xF0 | (cp >> 18)) | ((0x80 | ((cp >> 12) & 0x3F)) << 8) | ((0x80 | ((cp >> 6) & 0x3F)) << 16)
        v |= (0x80 | (cp & 0x3F)) << 24
        write_i32_le(out, i32((v ^ 0x80000000) - 0x80000000))  # the same 32 bits, as a signed value


def _put16(out: BytesWriter, v: i64) -> None:
    """Append the 16-bit value v (0 to 0xFFFF) as two bytes, low first."""
    write_i16_le(out, i16((v ^ 0x8000) - 0x8000))  # the same 16 bits, as a signed value
