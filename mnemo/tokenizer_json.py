"""The BPE model of a tokenizer.json -- model.vocab and model.merges -- read without json.loads:
the fast path of formats/hf_file.py and hf_pipeline.py for two cases, the plain one (every
vocabulary entry a byte of GPT-2's alphabet, a merge's token or an added token's text; no
ignore_merges) and a file converted from ranks (ignore_merges, the ids the ranks, every pair
that spells a token listed: transformers' TikTokenConverter, Llama 3's layout).

Steps, so that nothing is read twice and a file outside those cases costs little more than
before:

1. `model_spans(data)` walks the file's top-level object and its "model" object and returns
   where the values of "vocab" and "merges" are (`Spans`), skipping every other value; the
   caller parses the file with those two values cut out (a few KB of JSON) with json.loads.
2. When that rest says one of the two cases may hold, `read_vocab` reads model.vocab strictly
   into a `PlainModel` (every key back to back in one bytes object, an open-addressing table of
   their hashes), and then
   - `alphabet_merges` does what hf_pipeline._alphabet_merges does on the parsed strings, on
     their UTF-8 bytes instead (UTF-8 is one-to-one and keeps concatenation, so a merge's token
     is its parts' bytes joined exactly when it is their strings joined), or
   - `ranked_tokens` and `listed_pairs` do _converted_from_ranks' reading and checks (the
     ranks' fields in between are formats.tiktoken.fields_of_ranks', as there); before them,
     `converted_vocab` tries both at once: each token's pair found among the items that spell
     it (ranks.PairSplits), the few tokens that cannot be settled so merged over their
     substrings' ranks from the key table (`KeyRanks`).  Both walk model.merges a block of
     items at a time (`MergeItems`).

Each returns None or False whenever it is not sure -- a key written with escapes where the walk
needs to know it, a key listed twice, malformed JSON, a lone surrogate, an id that is not a
plain non-negative integer, anything outside the case -- and the caller then puts the two values
back with json.loads and goes hf_pipeline's own ways, which give the same answer or word the
error.  So this module needs no error messages and is never the reason a file is rejected.
tests/formats/test_tokenizer_json.py loads written, generated and randomly edited files both
ways and compares.

Why: json.loads of cl100k_base's tokenizer.json builds 200,000 strings and a dict in 0.08 s and
the merges loop over them took 0.18 s more, where `tokenizers` loads the whole file in 0.15-0.17 s
(docs/speed.md, "tokenizer.json without json.loads").
"""

from __future__ import annotations

from typing import Final

from librt.strings import BytesWriter, read_i64_le, write_i32_le
from librt.vecs import append, vec
from mypy_extensions import i32, i64, u8

from mnemo.encode_chunk import same_bytes
from mnemo.jsonfield import json_string, skip_space
from mnemo.kernels import pair_list, untrack_atoms
from mnemo.ranks import HASH_MUL, M32, M62, MIX, NONE, PairSplits, RankVocab, SubstringRanks, byte_ranks

_QUOTE: Final = 0x22
_COMMA: Final = 0x2C
_COLON: Final = 0x3A
_LBRACE: Final = 0x7B
_RBRACE: Final = 0x7D
_LBRACKET: Final = 0x5B
_RBRACKET: Final = 0x5D
_BACKSLASH: Final = 0x5C
_ONES: Final = 0x0101010101010101  # one in every byte of an i64
_SPACE: Final = 0x20
_ZERO: Final = 0x30
_NINE: Final = 0x39
#: The longest id read here (digits); a longer one is left to the caller's checks.
_MAX_DIGITS: Final = 10
#: Keys of up to this many bytes are looked up by their bytes (PlainModel.short), the others
#: by hash.  Five bytes, their length and the key's index fit one word: a table of 8 bytes a
#: slot, 1 MB for the Llama-3-like file's 128,000 keys (16 bytes a slot, with up to 7 bytes,
#: made its probes miss the cache more often than they saved).
SHORT_KEY: Final = 5
#: A short key's index (+ 1) sits at this bit of its slot, above short_word's bits.
SHORT_E: Final = 8 * SHORT_KEY + 3
SHORT_MASK: Final = (1 << SHORT_E) - 1
#: Merge items read before their parts are looked up together (MergeItems).
MERGE_BLOCK: Final = 4096


class Spans:
    """Where model.vocab's and model.merges' values are in the file: [start, end) byte offsets,
    start at the value's first byte ('{' or '['), end after its last.

    `guessed`: merges_end is where the file's text ends `] } }` (merges_tail), not found by
    walking the array -- tokenizers writes model.merges as the model's last member and the
    model as the file's last, so it is that ']' in every file it writes.  A reader that walks
    the items from merges_start to that ']' proves it (items are strings and two-string arrays:
    none ends the array early); any other use checks it first (hf_file.ScannedModel)."""

    vocab_start: i64
    vocab_end: i64
    merges_start: i64
    merges_end: i64
    guessed: bool

    def __init__(self, vocab_start: i64, vocab_end: i64, merges_start: i64, merges_end: i64) -> None:
        self.vocab_start = vocab_start
        self.vocab_end = vocab_end
        self.merges_start = merges_start
        self.merges_end = merges_end
        self.guessed = False


def model_spans(data: bytes, guess: bool = True) -> Spans | None:
    """The spans of model.vocab and model.merges when `data` is a JSON object with one "model"
    member, an object with one "vocab" object and one "merges" array; else None.  Values are
    skipped, not checked (the caller's json.loads of the rest checks them), except that every
    string outside model.vocab and model.merges is checked as json_string checks it (those two
    are checked by whatever reads them: skip_brackets).  `guess`: model.merges' end may be
    taken from the end of the text (Spans.guessed), not found by a walk over the array: 8 % of
    a converted Llama 3 file's load was that walk, and every reader walks the items anyway."""
    n: i64 = len(data)
    scratch = BytesWriter()
    i = skip_space(data, 0, n)
    if i >= n or data[i] != _LBRACE:
        return None
    spans: Spans | None = None
    i = skip_space(data, i + 1, n)
    while i < n and data[i] != _RBRACE:
        key_start = i + 1
        key_end, i = _member_key(data, i, n, scratch)
        if i < 0 or _has_backslash(data, key_start, key_end):
            return None  # a key with escapes might spell "model"
        if _is_key(data, key_start, key_end, b"model"):
            if spans is not None or data[i] != _LBRACE:
                return None
            spans = Spans(-1, -1, -1, -1)
            i = _model(data, i, n, spans, scratch, guess)
        else:
            i = skip_value(data, i, n, scratch)
        i = _after_member(data, i, n)
    if i >= n or spans is None or spans.vocab_start < 0 or spans.merges_start < 0:
        return None
    if skip_space(data, i + 1, n) != n:
        return None
    if data[spans.vocab_start] != _LBRACE or data[spans.merges_start] != _LBRACKET:
        return None
    return spans


def _model(data: bytes, i: i64, n: i64, spans: Spans, scratch: BytesWriter, guess: bool) -> i64:
    """Walk the "model" object whose '{' is at i, recording its vocab and merges in `spans`;
    the index after its '}', or -1.  `guess`: model_spans'."""
    i = skip_space(data, i + 1, n)
    while i < n and data[i] != _RBRACE:
        key_start = i + 1
        key_end, i = _member_key(data, i, n, scratch)
        if i < 0 or _has_backslash(data, key_start, key_end):
            return -1
        start = i
        vocab = _is_key(data, key_start, key_end, b"vocab")
        merges = not vocab and _is_key(data, key_start, key_end, b"merges")
        tail: i64 = merges_tail(data, i) if guess and merges and data[i] == _LBRACKET else -1
        if tail > 0:
            i = tail
            spans.guessed = True
        elif (vocab or merges) and (data[i] == _LBRACE or data[i] == _LBRACKET):
            i = skip_brackets(data, i, n)
        else:
            i = skip_value(data, i, n, scratch)
        if i < 0:
            return -1
        if vocab:
            if spans.vocab_start >= 0:
                return -1
            spans.vocab_start = start
            spans.vocab_end = i
        elif merges:
            if spans.merges_start >= 0:
                return -1
            spans.merges_start = start
            spans.merges_end = i
        i = _after_member(data, i, n)
    return i + 1 if i < n else -1


def merges_tail(data: bytes, start: i64) -> i64:
    """When the text ends with ']', '}', '}' (white space around them) and that ']' comes after
    `start`: the index after the ']' -- model.merges' end when it is the model's last member
    and the model the file's last, as tokenizers writes them; else -1."""
    j: i64 = len(data) - 1
    k: i64 = 0
    while k < 3:
        while j > start and (data[j] == _SPACE or data[j] == 0x0A or data[j] == 0x0D or data[j] == 0x09):
            j -= 1
        if j <= start or data[j] != (_RBRACKET if k == 2 else _RBRACE):
            return -1
        if k < 2:
            j -= 1
        k += 1
    return j + 1


def _member_key(data: bytes, i: i64, n: i64, scratch: BytesWriter) -> tuple[i64, i64]:
    """For the member whose key's opening quote should be at i: the index of the key's closing
    quote, and of its value's first byte; (-1, -1) when it is not `"key" :` and a value."""
    if i >= n or data[i] != _QUOTE:
        return -1, -1
    i = json_string(data, i + 1, n, scratch, False)
    if i < 0:
        return -1, -1
    close = i - 1
    i = skip_space(data, i, n)
    if i >= n or data[i] != _COLON:
        return -1, -1
    i = skip_space(data, i + 1, n)
    if i >= n:
        return -1, -1
    return close, i


def _after_member(data: bytes, i: i64, n: i64) -> i64:
    """After a member's value (i: the index after it, or -1): the index of the next member's
    key, or of the object's '}'; n when the text ends there or is malformed."""
    if i < 0:
        return n
    i = skip_space(data, i, n)
    if i >= n:
        return n
    c: i64 = data[i]
    if c == _COMMA:
        i = skip_space(data, i + 1, n)
        return i if i < n and data[i] == _QUOTE else n
    return i if c == _RBRACE else n


def _is_key(data: bytes, start: i64, end: i64, key: bytes) -> bool:
    """Whether data[start:end] is exactly `key` (a key without escapes)."""
    k: i64 = len(key)
    if end - start != k:
        return False
    j: i64 = 0
    while j < k:
        if data[start + j] != key[j]:
            return False
        j += 1
    return True


def _has_backslash(data: bytes, start: i64, end: i64) -> bool:
    j = start
    while j < end:
        if data[j] == _BACKSLASH:
            return True
        j += 1
    return False


def skip_value(data: bytes, i: i64, n: i64, scratch: BytesWriter) -> i64:
    """The index after the JSON value that starts at i, or -1.  Strings are checked (json_string);
    objects and arrays are skipped by their brackets, scalars up to the next delimiter, without
    checking their grammar: the caller parses what it keeps."""
    c: i64 = data[i]
    if c == _QUOTE:
        return json_string(data, i + 1, n, scratch, False)
    if c == _LBRACE or c == _LBRACKET:
        depth: i64 = 0
        while i < n:
            c = data[i]
            if c == _QUOTE:
                i = json_string(data, i + 1, n, scratch, False)
                if i < 0:
                    return -1
                continue
            if c == _LBRACE or c == _LBRACKET:
                depth += 1
            elif c == _RBRACE or c == _RBRACKET:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return -1
    while i < n:
        c = data[i]
        if c == _COMMA or c == _RBRACE or c == _RBRACKET or c == _SPACE or c == 0x0A or c == 0x0D or c == 0x09:
            return i
        i += 1
    return -1


def skip_brackets(data: bytes, i: i64, n: i64) -> i64:
    """The index after the object or array that starts at i, or -1: skip_value without checking
    its strings, only where each ends (a quote that no backslash escapes).  For model.vocab and
    model.merges, most of the file: whatever reads them checks their strings (read_vocab and
    the merges' readers with json_string, or json.loads when they decline), so the walk need
    not check them first (json_string's checks of each UTF-8 sequence, one pass more over them,
    were most of the walk).

    Eight bytes at a time: a word none of whose bytes is a quote, a backslash or a bracket is
    skipped whole -- most of a pretty-printed file is the indentation between its strings --
    and the first byte that is one (`_first_mark`) is handled as the byte loop of
    `skip_brackets_bytes` (its twin, which the tests hold it to) handles it."""
    depth: i64 = 0
    in_string = False
    # Masks built from locals (as json_string builds its own); every byte of y is at most 0x7F,
    # so no subtraction below leaves the i64 range.  A borrow marks bytes above a zero byte too,
    # and a byte from 0x80 may look like one of the six: such a mark is a byte the loop looks at
    # and lets pass; a byte that is one of the six is always marked.
    ones: i64 = _ONES
    k7f: i64 = 0x7F
    low7 = ones * k7f
    ascii_high = ~low7  # 0x80 in every byte
    quotes = ones * _QUOTE
    fold = ones * 0x20  # '[' '\\' ']' become '{' '|' '}'
    left = ones * _LBRACE
    bar = ones * 0x7C
    right = ones * _RBRACE
    while i < n:
        if i + 8 <= n:  # else the last bytes, each looked at as if marked
            x = read_i64_le(data, i)
            y = x & low7
            z = y | fold
            m = (((y ^ quotes) - ones) | ((z ^ left) - ones) | ((z ^ bar) - ones) | ((z ^ right) - ones)) & ~x & ascii_high
            if m == 0:
                i += 8
                continue
            i += _first_mark(m, ones)
        c: i64 = data[i]
        if in_string:
            if c == _QUOTE:
                in_string = False
            elif c == _BACKSLASH:
                i += 1  # the escaped byte, whatever it is
        elif c == _QUOTE:
            in_string = True
        elif c == _LBRACE or c == _LBRACKET:
            depth += 1
        elif c == _RBRACE or c == _RBRACKET:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def skip_brackets_bytes(data: bytes, i: i64, n: i64) -> i64:
    """skip_brackets a byte at a time: its twin, the definition the tests compare it with."""
    depth: i64 = 0
    while i < n:
        c: i64 = data[i]
        if c == _QUOTE:
            i += 1
            while i < n:
                c = data[i]
                if c == _QUOTE:
                    break
                if c == _BACKSLASH:
                    i += 1
                i += 1
            if i >= n:
                return -1
        elif c == _LBRACE or c == _LBRACKET:
            depth += 1
        elif c == _RBRACE or c == _RBRACKET:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _first_mark(m: i64, ones: i64) -> i64:
    """The index of the lowest byte of m with its top bit set (m has one): isolate that bit,
    set the low bit of every byte below it and add those up by folding (as json_string does)."""
    t = (m >> 7) & ones
    below = ((t & -t) - 1) & ones
    below += below >> 32
    below += below >> 16
    below += below >> 8
    return below & 0xFF


class PlainModel:
    """model.vocab (read_vocab), and what alphabet_merges or ranked_tokens make of the merges.

    `pairs` (the merges as pairs of mnemo's ids) and `public` (the file's id of each byte and
    merge) are what hf_pipeline._alphabet_merges returns; the vocabulary's keys (UTF-8) stay
    in one bytes object, `blob`, looked up through open-addressing tables: keys of up to
    SHORT_KEY bytes by their bytes (one word), the others by their polynomial hashes
    (ranks.py's), so that no bytes object or dict entry is made per key.  A merge looks up
    its two parts, mostly short: one random load each, where a hashed key takes three (its
    slot, its offsets, its bytes), most of the time of reading a file's merges."""

    pairs: list[tuple[int, int]]
    public: list[int]
    blob: bytes
    offsets: vec[i64]  # key e is blob[offsets[e]:offsets[e + 1]]
    ids: vec[i64]  # key e's id
    entry_of: vec[i64]  # the key of each byte and merge (mnemo's internal id -> e)
    made: vec[i64]  # key e's internal id, or -1 (no byte or merge is that key)
    short: vec[i64]  # (e + 1) << SHORT_E | short_word of its key; 0: empty
    short_mask: i64
    short_max: i64  # SHORT_KEY, or -1 when there are too many keys for SHORT_E's bits
    slots: vec[i64]  # keys longer than short_max: 31 bits of the hash << 32 | e + 1; 0: empty
    mask: i64
    powers: vec[i64]  # HASH_MUL ** k & M62, k up to the longest key

    def __init__(self, blob: bytes, offsets: vec[i64], ids: vec[i64]) -> None:
        self.pairs = []
        self.public = []
        untrack_atoms(self.public)  # ints the cyclic GC need not walk (kernels.untrack_atoms)
        self.blob = blob
        self.offsets = offsets
        self.ids = ids
        count: i64 = len(ids)
        self.entry_of = vec[i64]()
        self.made = vec[i64]([-1] * count)
        self.short_max = SHORT_KEY if count < (1 << (63 - SHORT_E)) - 1 else -1
        longest: i64 = 0
        n_short: i64 = 0
        e: i64 = 0
        while e < count:
            n: i64 = offsets[e + 1] - offsets[e]
            if n > longest:
                longest = n
            if n <= self.short_max:
                n_short += 1
            e += 1
        size: i64 = 1024
        while size < 2 * n_short:
            size *= 2
        self.short_mask = size - 1
        self.short = vec[i64]([0] * size)
        size = 1024
        while size < 2 * (count - n_short):
            size *= 2
        self.mask = size - 1
        # the key and bits of its hash in one word: a probe is one random load (two vectors of
        # keys and of hashes were two)
        self.slots = vec[i64]([0] * size)
        powers = vec[i64]([1] * (longest + 2))
        k: i64 = 1
        while k <= longest + 1:
            powers[k] = (powers[k - 1] * HASH_MUL) & M62
            k += 1
        self.powers = powers

    def size(self) -> int:
        return len(self.ids)

    def key(self, e: i64) -> bytes:
        return self.blob[self.offsets[e] : self.offsets[e + 1]]

    def keys(self) -> list[bytes]:
        """Every key, in the file's order."""
        return [self.key(e) for e in range(len(self.ids))]

    def public_keys(self) -> list[bytes]:
        """The key of each byte and merge, by mnemo's internal id (for messages)."""
        return [self.key(e) for e in self.entry_of]

    def ids_from(self, low: i64) -> list[int]:
        """The keys' ids of `low` and more: with low the vocabulary's size, the only ones an
        added token's new id can meet (tokenizers_ids), none in most files (a list of every
        id, made into a set, cost more than the rest of tokenizers_ids)."""
        out: list[int] = []
        for i in self.ids:
            if i >= low:
                out.append(int(i))
        return out

    def leftover(self) -> list[bytes]:
        """The keys no byte or merge is."""
        return [self.key(e) for e in range(len(self.ids)) if self.made[e] < 0]

    def get(self, key: bytes) -> int | None:
        """The id of `key`, or None."""
        e = self.find(key, 0, len(key), 0, 0)
        return None if e < 0 else int(self.ids[e])

    def insert_all(self) -> bool:
        """Add every key, in order; False when a key is there twice.  The words and hashes first,
        then the probes in one short loop, so that the processor has the loads of several keys
        in flight (one key's code at a time kept one miss in flight)."""
        count: i64 = len(self.ids)
        offsets = self.offsets
        blob = self.blob
        short_max: i64 = self.short_max
        words = vec[i64]([0] * count)
        e: i64 = 0
        while e < count:
            start: i64 = offsets[e]
            n: i64 = offsets[e + 1] - start
            words[e] = short_word(blob, start, n, 0, 0) if n <= short_max else hash_of(blob, start, n)
            e += 1
        short = self.short
        short_mask: i64 = self.short_mask
        slots = self.slots
        mask: i64 = self.mask
        e = 0
        while e < count:
            word: i64 = words[e]
            start = offsets[e]
            n = offsets[e + 1] - start
            got: i64 = 0
            if n <= short_max:
                at: i64 = _slot(word) & short_mask
                while True:
                    got = short[at]
                    if got == 0:
                        break
                    if got & SHORT_MASK == word:
                        return False
                    at = (at + 1) & short_mask
                short[at] = ((e + 1) << SHORT_E) | word
            else:
                check: i64 = _check(word)
                slot: i64 = _slot(word) & mask
                while True:
                    got = slots[slot]
                    if got == 0:
                        break
                    if got >> 32 == check and self.is_key((got & M32) - 1, blob, start, n, 0, 0):
                        return False
                    slot = (slot + 1) & mask
                slots[slot] = (check << 32) | (e + 1)
            e += 1
        return True

    def find(self, raw: bytes, a_at: i64, a_size: i64, b_at: i64, b_size: i64) -> i64:
        """The key that is raw[a_at:a_at + a_size] + raw[b_at:b_at + b_size], or -1; b_size is
        at most the longest key's size + 1 (powers)."""
        if a_size + b_size <= self.short_max:
            word = short_word(raw, a_at, a_size, b_at, b_size)
            short = self.short
            at: i64 = _slot(word) & self.short_mask
            while True:
                got: i64 = short[at]
                if got == 0:
                    return -1
                if got & SHORT_MASK == word:
                    return (got >> SHORT_E) - 1
                at = (at + 1) & self.short_mask
        h = (hash_of(raw, a_at, a_size) * self.powers[b_size] + hash_of(raw, b_at, b_size)) & M62
        check: i64 = _check(h)
        slot: i64 = _slot(h) & self.mask
        slots = self.slots
        while True:
            got = slots[slot]
            if got == 0:
                return -1
            if got >> 32 == check and self.is_key((got & M32) - 1, raw, a_at, a_size, b_at, b_size):
                return (got & M32) - 1
            slot = (slot + 1) & self.mask

    def is_key(self, e: i64, raw: bytes, a_at: i64, a_size: i64, b_at: i64, b_size: i64) -> bool:
        """Whether key e is raw[a_at:a_at + a_size] + raw[b_at:b_at + b_size]."""
        offsets = self.offsets
        at: i64 = offsets[e]
        return (
            offsets[e + 1] - at == a_size + b_size
            and same_bytes(self.blob, at, raw, a_at, a_size)
            and same_bytes(self.blob, at + a_size, raw, b_at, b_size)
        )


def short_word(raw: bytes, a_at: i64, a_size: i64, b_at: i64, b_size: i64) -> i64:
    """A key of at most SHORT_KEY bytes, raw[a_at:a_at + a_size] + raw[b_at:b_at + b_size], as
    one word: its bytes little-endian, its length above them (bits SHORT_KEY * 8 on)."""
    word: i64 = (a_size + b_size) << (8 * SHORT_KEY)
    j: i64 = 0
    while j < a_size:
        word |= i64(raw[a_at + j]) << (8 * j)
        j += 1
    k: i64 = 0
    while k < b_size:
        word |= i64(raw[b_at + k]) << (8 * (a_size + k))
        k += 1
    return word


def hash_of(raw: bytes, start: i64, n: i64) -> i64:
    """The polynomial hash of raw[start:start + n] (ranks.TokenTable's)."""
    h: i64 = 0
    i: i64 = 0
    while i < n:
        h = (h * HASH_MUL + i64(raw[start + i]) + 1) & M62
        i += 1
    return h


def _slot(h: i64) -> i64:
    return (((h ^ (h >> 29)) * MIX) >> 32) & M32


def _check(h: i64) -> i64:
    """The hash's bits a slot keeps (its top 31; `_slot` mixes them all)."""
    return h >> 31


def alphabet_merges(model: PlainModel, data: bytes, spans: Spans, byte_keys: list[bytes]) -> bool:
    """hf_pipeline._alphabet_merges on the file's bytes: fill model.pairs (the merges as pairs of
    mnemo's ids) and model.public (the public id of each byte and merge); False when the merges
    are not strictly a list of "a b" strings or two-string arrays, or anything is not the plain
    case.  The caller checks that each key left over is an added token's text.  byte_keys[b]:
    the UTF-8 of GPT-2's character for byte b.

    In passes, so that the look-ups of the parts' keys -- a random load in a table of a few MB
    each, most of the time of reading the merges when one followed another -- are made by a
    short loop whose loads the processor keeps several of in flight (`find_parts`): the items
    parsed in the file's order (each token's key is found there: it is most often the key after
    the last one), then the parts looked up, then the rule checked.  The rule is the one-pass
    rule: each token made once, its parts a byte or a token made by an earlier merge."""
    made = model.made
    public = model.public
    for byte in range(256):
        char = byte_keys[byte]
        e = model.find(char, 0, len(char), 0, 0)
        if e < 0:
            return False
        made[e] = byte
        model.entry_of = append(model.entry_of, e)
        public.append(int(model.ids[e]))
    end: i64 = spans.merges_end - 1  # the ']'
    i = skip_space(data, spans.merges_start + 1, end)
    w = BytesWriter()
    side = BytesWriter()  # the parts of items written with escapes, decoded
    spots = vec[i64]()  # each part: its offset << 1, | 1 when it is in `side`
    sizes = vec[i64]()
    tokens = vec[i64]()  # each item's token's key
    count: i64 = len(model.ids)
    longest: i64 = len(model.powers) - 2
    e = -1
    while i < end:
        a_at, a_size, b_at, b_size, i, raw = _item_parts(data, i, end, w)
        if i < 0 or a_size + b_size > longest:
            return False
        # the key after the last merge's token is tried first: files list the vocabulary and
        # the merges by id
        guess: i64 = e + 1
        if guess < count and model.is_key(guess, raw, a_at, a_size, b_at, b_size):
            e = guess
        else:
            e = model.find(raw, a_at, a_size, b_at, b_size)
            if e < 0:
                return False
        tokens = append(tokens, e)
        if raw is data:
            spots = append(spots, a_at << 1)
            spots = append(spots, b_at << 1)
        else:
            at: i64 = len(side)
            side.write(raw[a_at : a_at + a_size])
            side.write(raw[b_at : b_at + b_size])
            spots = append(spots, (at << 1) | 1)
            spots = append(spots, ((at + a_size) << 1) | 1)
        sizes = append(sizes, a_size)
        sizes = append(sizes, b_size)
        i = _next_item(data, i, end)
        if i < 0:
            return False
    found = find_parts(model, data, side.getvalue(), spots, sizes, len(sizes))
    if len(found) != len(sizes):
        return False
    n: i64 = len(tokens)
    k: i64 = 0
    while k < n:
        e = tokens[k]
        if made[e] >= 0:
            return False  # a byte, or made by an earlier merge
        made[e] = 256 + k
        k += 1
    # the parts' ids, in a loop of their own (random loads, several in flight)
    j: i64 = 0
    while j < 2 * n:
        x: i64 = made[found[j]]
        if x < 0 or x >= 256 + (j >> 1):
            return False  # a part no byte or earlier merge makes
        found[j] = x
        j += 1
    k = 0
    pairs = BytesWriter()  # made into tuples at once by pair_list (untracked by the GC)
    while k < n:
        e = tokens[k]
        model.entry_of = append(model.entry_of, e)
        write_i32_le(pairs, i32(found[2 * k]))
        write_i32_le(pairs, i32(found[2 * k + 1]))
        public.append(int(model.ids[e]))
        k += 1
    model.pairs = pair_list(pairs.getvalue(), None)
    return True


def find_parts(model: PlainModel, data: bytes, side: bytes, spots: vec[i64], sizes: vec[i64], n: i64) -> vec[i64]:
    """model.find of each of the first n parts (spots[j] >> 1: its offset in `data`, or in `side`
    when spots[j] & 1; sizes[j]: its size), or an empty vec when a part is no key.  The probes come from one
    short loop over words computed first, so that the processor has the loads of several parts
    in flight (one part's code at a time, with its branches on each load, kept one miss in
    flight: most of reading o200k_base's merges); a hashed key's candidate is then compared with
    the part's bytes, and the full find runs only when the bits of a slot matched another key."""
    short_max: i64 = model.short_max
    words = vec[i64]([0] * n)
    j: i64 = 0
    while j < n:
        spot: i64 = spots[j]
        raw = side if spot & 1 else data
        size: i64 = sizes[j]
        if size <= short_max:
            words[j] = short_word(raw, spot >> 1, size, 0, 0)
        else:
            words[j] = hash_of(raw, spot >> 1, size)
        j += 1
    found = vec[i64]([0] * n)
    short = model.short
    short_mask: i64 = model.short_mask
    slots = model.slots
    mask: i64 = model.mask
    j = 0
    while j < n:
        word: i64 = words[j]
        got: i64 = 0
        if sizes[j] <= short_max:
            at: i64 = _slot(word) & short_mask
            while True:
                got = short[at]
                if got == 0 or got & SHORT_MASK == word:
                    break
                at = (at + 1) & short_mask
            found[j] = (got >> SHORT_E) - 1
        else:
            check: i64 = _check(word)
            slot: i64 = _slot(word) & mask
            while True:
                got = slots[slot]
                if got == 0 or got >> 32 == check:
                    break
                slot = (slot + 1) & mask
            found[j] = (got & M32) - 1
        j += 1
    j = 0
    while j < n:
        e: i64 = found[j]
        size = sizes[j]
        if size > short_max and e >= 0:
            spot = spots[j]
            raw = side if spot & 1 else data
            if not model.is_key(e, raw, spot >> 1, size, 0, 0):
                e = model.find(raw, spot >> 1, size, 0, 0)
                found[j] = e
        if e < 0:
            return vec[i64]()
        j += 1
    return found


def ranked_tokens(model: PlainModel, alphabet: list[int]) -> list[bytes] | None:
    """The bytes of each key by its id, when the ids are exactly 0..n-1 and every key is spelled
    in GPT-2's alphabet (alphabet[code point]: the byte, or -1); else None.  model.entry_of
    becomes the key of each id (it is left as it was when None is returned)."""
    count: i64 = len(model.ids)
    by_id = vec[i64]([-1] * count)
    e: i64 = 0
    while e < count:
        i: i64 = model.ids[e]
        if i >= count or by_id[i] >= 0:
            return None
        by_id[i] = e
        e += 1
    kept = model.entry_of
    model.entry_of = by_id
    out = spelled_keys(model, alphabet)
    if out is None:
        model.entry_of = kept
    return out


def spelled_keys(model: PlainModel, alphabet: list[int]) -> list[bytes] | None:
    """The bytes of each byte and merge, by mnemo's internal id (model.entry_of, as
    alphabet_merges leaves it), decoded from their keys in GPT-2's alphabet (alphabet[code
    point]: the byte, or -1); None when a key is not spelled in that alphabet (never after
    alphabet_merges: each key is the byte keys of its token's bytes, joined).  What
    encode_chunk.spell_merges makes of the merges, read in the file's order: spell_merges joins
    each token's two parts, two objects anywhere in the heap (a cache miss each: a sixth of
    building o200k_base's encoder)."""
    char_byte = vec[i64](alphabet)
    limit: i64 = len(char_byte)
    blob = model.blob
    offsets = model.offsets
    out: list[bytes] = []
    untrack_atoms(out)  # a list of bytes the cyclic GC need not walk (kernels.untrack_atoms)
    w = BytesWriter()
    for e in model.entry_of:
        w.truncate(0)
        j: i64 = offsets[e]
        stop: i64 = offsets[e + 1]
        while j < stop:
            c: i64 = blob[j]
            if c >= 0x80:  # GPT-2's alphabet is below U+0800: two UTF-8 bytes at most
                if c & 0xE0 != 0xC0 or j + 1 >= stop:
                    return None
                c = ((c & 0x1F) << 6) | (i64(blob[j + 1]) & 0x3F)
                j += 1
            b: i64 = char_byte[c] if c < limit else -1
            if b < 0:
                return None
            w.append(u8(b))
            j += 1
        out.append(w.getvalue())
    return out


def listed_pairs(model: PlainModel, data: bytes, spans: Spans, merges: list[tuple[int, int]], public: list[int]) -> bool:
    """hf_pipeline._converted_from_ranks' check of a file converted from ranks (ids dense, the
    ranks' fields built: `merges` and the `public` id of each byte and merge; model.entry_of
    the key of each id, as ranked_tokens leaves it): model.merges goes by the rank of each
    pair's token, and lists each token's one pair (the last step of tiktoken's merge of its
    bytes).  False otherwise, or when an item is not strictly a merge of two keys.

    An item a b whose a + b is token T's key is T's one pair (left, right) exactly when a is as
    long as left's key: T's key is left's then right's (GPT-2's alphabet spells each byte with
    one character), so a is left's key and b right's.  The items are read a block at a time
    (`MergeItems`), their parts looked up together (`find_parts`: every part must be a key)."""
    count: i64 = len(model.ids)
    offsets = model.offsets
    entry_of = model.entry_of
    split = vec[i64]([-1] * count)  # the length of the key of each rank's pair's left part
    k: i64 = 0
    for left, _ in merges:
        e_left: i64 = entry_of[i64(public[left])]
        split[i64(public[256 + k])] = offsets[e_left + 1] - offsets[e_left]
        k += 1
    listed = vec[i64]([0] * count)
    ids = model.ids
    last: i64 = -1
    items = MergeItems(data, spans)
    while items.more():
        found = items.read(model, data)
        if items.at < 0:
            return False
        j: i64 = 0
        while j < items.count:
            made: i64 = ids[items.tokens[j]]
            if made < last:
                return False
            last = made
            if split[made] == items.sizes[2 * j]:
                listed[made] = 1
            j += 1
    if items.at != items.end:
        return False  # stopped by an item that is no merge of two keys
    r: i64 = 0
    while r < count:
        if split[r] >= 0 and listed[r] == 0:
            return False
        r += 1
    return True


def converted_vocab(model: PlainModel, data: bytes, spans: Spans, tokens: list[bytes]) -> RankVocab | None:
    """merges_of_ranks(tokens) and listed_pairs' checks in one walk of model.merges, for a file
    converted from ranks (`tokens`: ranked_tokens' bytes of each key by id, model.entry_of as it
    leaves it): each token's pair is found among the items that spell it (ranks.PairSplits),
    not by merging its bytes.  None when the file is not that case, or not as PairSplits can
    show it; the caller then runs the two the other way, which decide.  The keys are distinct
    and GPT-2's alphabet spells each byte once, so no two tokens are equal."""
    byte_rank = byte_ranks(tokens)
    count: i64 = len(model.ids)
    if len(byte_rank) == 0 or len(tokens) != count:
        return None
    splits = PairSplits(tokens, byte_rank, KeyRanks(model))
    ids = model.ids
    last: i64 = -1
    items = MergeItems(data, spans)
    while items.more():
        found = items.read(model, data)
        if items.at < 0:
            return None
        j: i64 = 0
        while j < items.count:
            made: i64 = ids[items.tokens[j]]
            if made != last:
                if made < last:
                    return None
                splits.settle_below(made)
                last = made
            if not splits.offer(made, ids[found[2 * j]], ids[found[2 * j + 1]]):
                return None
            j += 1
    if items.at != items.end:
        return None
    return splits.vocab()


class KeyRanks(SubstringRanks):
    """SubstringRanks from the file's keys (model.entry_of: the key of each rank, as
    ranked_tokens leaves it): a token's key is its bytes spelled in GPT-2's alphabet, one
    character a byte, so raw[i:j]'s key is the part of the token's key between the i-th and the
    j-th character, looked up in the table read_vocab built."""

    model: PlainModel

    def __init__(self, model: PlainModel) -> None:
        super().__init__([])
        self.model = model

    def fill(self, rank: i64, raw: bytes, sub: vec[i64], span: i64) -> bool:
        model = self.model
        blob = model.blob
        e: i64 = model.entry_of[rank]
        at: i64 = model.offsets[e]
        stop: i64 = model.offsets[e + 1]
        n: i64 = len(raw)
        starts = vec[i64]([0] * (n + 1))  # the offset in blob of each byte's character
        k: i64 = 0
        while at < stop and k < n:
            starts[k] = at
            at += 1 if blob[at] < 0x80 else 2  # GPT-2's alphabet is below U+0800
            k += 1
        starts[k] = at
        if k != n or at != stop:
            return False  # the key is not raw spelled (never after spelled_keys)
        i: i64 = 0
        while i < n:
            j: i64 = i + 2
            while j <= n:
                f: i64 = model.find(blob, starts[i], starts[j] - starts[i], 0, 0)
                sub[i * span + j] = model.ids[f] if f >= 0 else NONE
                j += 1
            i += 1
        return True


class MergeItems:
    """model.merges read MERGE_BLOCK items at a time, in the file's order: each item's token's
    key (`tokens`) and its two parts (`spots`, `sizes`: as find_parts takes them; the parts of
    an item written with escapes are decoded into `side`).  `read` then looks the block's parts
    up together (find_parts).  The one walk of converted_vocab and listed_pairs, which each had
    a copy of it; looking the parts up a block at a time instead of item by item measured no
    faster (docs/speed.md, "A load without the collapse"): the look-ups still miss one after
    another."""

    tokens: vec[i64]
    spots: vec[i64]
    sizes: vec[i64]
    count: i64  # the items of the block read last: tokens[:count], spots and sizes[:2 * count]
    side: BytesWriter
    w: BytesWriter
    at: i64  # the next item, `end` when there is none, -1 when the array is not strictly items
    end: i64  # the array's ']'
    e: i64  # the last item's token's key

    def __init__(self, data: bytes, spans: Spans) -> None:
        self.end = spans.merges_end - 1
        self.at = skip_space(data, spans.merges_start + 1, self.end)
        self.tokens = vec[i64]([0] * MERGE_BLOCK)
        self.spots = vec[i64]([0] * (2 * MERGE_BLOCK))
        self.sizes = vec[i64]([0] * (2 * MERGE_BLOCK))
        self.count = 0
        self.side = BytesWriter()
        self.w = BytesWriter()
        self.e = -1

    def more(self) -> bool:
        return 0 <= self.at < self.end

    def read(self, model: PlainModel, data: bytes) -> vec[i64]:
        """The next block: its items' token keys in `tokens` and the keys of their parts,
        returned (two an item); `at` becomes -1 (and the vec is empty) when an item is not
        strictly a merge of two keys whose a + b is a key."""
        tokens = self.tokens
        spots = self.spots
        sizes = self.sizes
        side = self.side
        side.truncate(0)
        w = self.w
        longest: i64 = len(model.powers) - 2
        end: i64 = self.end
        i: i64 = self.at
        e: i64 = self.e
        n: i64 = 0
        while i < end and n < MERGE_BLOCK:
            a_at, a_size, b_at, b_size, i, raw = _item_parts(data, i, end, w)
            if i < 0 or a_size + b_size > longest:  # not an item, or longer than every key
                self.at = -1
                return vec[i64]()
            e = _made_key(model, raw, a_at, a_size, b_at, b_size, e)
            if e < 0:
                self.at = -1
                return vec[i64]()
            tokens[n] = e
            if raw is data:
                spots[2 * n] = a_at << 1
                spots[2 * n + 1] = b_at << 1
            else:
                start: i64 = len(side)
                side.write(raw[a_at : a_at + a_size])
                side.write(raw[b_at : b_at + b_size])
                spots[2 * n] = (start << 1) | 1
                spots[2 * n + 1] = ((start + a_size) << 1) | 1
            sizes[2 * n] = a_size
            sizes[2 * n + 1] = b_size
            n += 1
            i = _next_item(data, i, end)
        self.at = i
        self.e = e
        self.count = n
        if i < 0:
            return vec[i64]()
        found = find_parts(model, data, side.getvalue(), spots, sizes, 2 * n)
        if len(found) != 2 * n:
            self.at = -1
        return found


def _made_key(model: PlainModel, raw: bytes, a_at: i64, a_size: i64, b_at: i64, b_size: i64, e: i64) -> i64:
    """The key of an item's a + b (model.find's answer), guessed first to be the last item's
    key `e` or the next one: a converted file lists the merges by rank, and the vocabulary too,
    so the file's order finds it without a random load of the 2 MB table."""
    if e + 1 < len(model.ids) and model.is_key(e + 1, raw, a_at, a_size, b_at, b_size):
        return e + 1
    if e >= 0 and model.is_key(e, raw, a_at, a_size, b_at, b_size):
        return e
    return model.find(raw, a_at, a_size, b_at, b_size)


def _item_parts(data: bytes, i: i64, end: i64, w: BytesWriter) -> tuple[i64, i64, i64, i64, i64, bytes]:
    """The merge item at i ("a b", or ["a", "b"]): where a and b are (start, size of each) in
    the bytes returned last (`data`, or the item decoded when it has an escape), and the index
    after the item; that index is -1 when the item is anything else."""
    fail = (0, 0, 0, 0, -1, data)
    c: i64 = data[i]
    raw = data
    if c == _QUOTE:
        a_at = i + 1
        i = json_string(data, a_at, end, w, False)
        if i < 0:
            return fail
        b_end = i - 1
        if _has_backslash(data, a_at, b_end):
            w.truncate(0)
            json_string(data, a_at, end, w, True)
            raw = w.getvalue()
            a_at = 0
            b_end = len(raw)
        space = a_at
        while space < b_end and raw[space] != _SPACE:
            space += 1
        b_at = space + 1
        if b_at > b_end or _has_space(raw, b_at, b_end):
            return fail
        return a_at, space - a_at, b_at, b_end - b_at, i, raw
    if c == _LBRACKET:
        return _two_strings(data, i, end, w)
    return fail


def _has_space(raw: bytes, start: i64, end: i64) -> bool:
    while start < end:
        if raw[start] == _SPACE:
            return True
        start += 1
    return False


def _two_strings(data: bytes, i: i64, end: i64, w: BytesWriter) -> tuple[i64, i64, i64, i64, i64, bytes]:
    """The merge ["a", "b"] whose '[' is at i: where a and b are (start, size of each) in the
    bytes returned last (`data`, or both decoded when either has an escape), and the index after
    the ']'; that index is -1 when the item is anything else."""
    fail = (0, 0, 0, 0, -1, data)
    a_at, a_end, a_plain = _string_at(data, skip_space(data, i + 1, end), end, w)
    if a_at < 0:
        return fail
    i = skip_space(data, a_end + 1, end)
    if i >= end or data[i] != _COMMA:
        return fail
    b_at, b_end, b_plain = _string_at(data, skip_space(data, i + 1, end), end, w)
    if b_at < 0:
        return fail
    i = skip_space(data, b_end + 1, end)
    if i >= end or data[i] != _RBRACKET:
        return fail
    i += 1
    if (a_plain or not _has_backslash(data, a_at, a_end)) and (b_plain or not _has_backslash(data, b_at, b_end)):
        return a_at, a_end - a_at, b_at, b_end - b_at, i, data
    w.truncate(0)
    json_string(data, a_at, end, w, True)
    a_size: i64 = len(w.getvalue())
    json_string(data, b_at, end, w, True)
    raw = w.getvalue()
    return 0, a_size, a_size, len(raw) - a_size, i, raw


def _string_at(data: bytes, i: i64, end: i64, w: BytesWriter) -> tuple[i64, i64, bool]:
    """The string whose opening quote should be at i: where its contents start, the index of its
    closing quote, and True when it has neither an escape nor a control character; (-1, -1,
    False) when there is none.

    A merge item's part is a key of model.vocab, or the item is refused: every caller matches
    the parts against keys, which read_vocab checked as JSON (a part's own look-up, or a + b as a
    token's key with a as long as its left part's key).  So a part without a backslash or a
    control character needs no UTF-8 check of its own: bytes that are no key's are refused
    there.  json_string checks the others (escapes: the caller decodes them).  The Llama-3-like
    file's 580,418 parts: 84 M instructions in json_string before, 61 M in this loop and
    json_string together (callgrind)."""
    if i >= end or data[i] != _QUOTE:
        return -1, -1, False
    j: i64 = i + 1
    while j < end:
        c: i64 = data[j]
        if c == _QUOTE:
            return i + 1, j, True
        if c == _BACKSLASH or c < 0x20:
            break
        j += 1
    close = json_string(data, i + 1, end, w, False)
    if close < 0:
        return -1, -1, False
    return i + 1, close - 1, False


def _next_item(data: bytes, i: i64, end: i64) -> i64:
    """After an item of an array that ends at `end` (its ']'): the next item's index, `end` when
    there is none, or -1 (a missing or trailing comma)."""
    i = skip_space(data, i, end)
    if i >= end:
        return end
    if data[i] != _COMMA:
        return -1
    i = skip_space(data, i + 1, end)
    return i if i < end else -1


def read_vocab(data: bytes, spans: Spans) -> PlainModel | None:
    """model.vocab as a PlainModel's keys and ids, or None (not strictly an object of plain
    non-negative integers of at most _MAX_DIGITS digits, or a key listed twice)."""
    start: i64 = spans.vocab_start
    end: i64 = spans.vocab_end - 1  # the '}'
    if data[end] != _RBRACE:
        return None
    keys = BytesWriter()
    offsets = vec[i64]([0])
    ids = vec[i64]()
    at: i64 = 0
    i = skip_space(data, start + 1, end)
    while i < end:
        if data[i] != _QUOTE:
            return None
        i = json_string(data, i + 1, end, keys, True)
        if i < 0:
            return None
        i = skip_space(data, i, end)
        if i >= end or data[i] != _COLON:
            return None
        i = skip_space(data, i + 1, end)
        value: i64 = 0
        digits: i64 = 0
        while i < end:
            c: i64 = data[i]
            if c < _ZERO or c > _NINE:
                break
            value = value * 10 + (c - _ZERO)
            digits += 1
            i += 1
        if digits == 0 or digits > _MAX_DIGITS or (digits > 1 and data[i - digits] == _ZERO):
            return None
        if i < end:
            c = data[i]
            if c != _COMMA and c != _SPACE and c != 0x0A and c != 0x0D and c != 0x09:
                return None  # a fraction, an exponent, or junk
        at = len(keys)
        offsets = append(offsets, at)
        ids = append(ids, value)
        i = _next_item(data, i, end)
        if i < 0:
            return None
    model = PlainModel(keys.getvalue(), offsets, ids)
    return model if model.insert_all() else None
