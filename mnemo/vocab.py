"""The vocabulary and its rules: what a valid byte-level BPE vocabulary is, checked in one place.

A vocabulary is 256 byte tokens, then merges (merge k makes id 256 + k from two earlier ids), then
special tokens, and optionally an id map renumbering the ids it shows (imported vocabularies keep
their own ids, docs/interop.md).  A vocabulary given as ranks (tiktoken's files, and later tekken
and tokenizer.json with ignore_merges) is "ranked" when tiktoken's rule needs more than that
(docs/formats.md, "Rank semantics"): a merge's parts may come after it, and the tokens no merge
makes ("whole" tokens, ids after the merges, before the specials) are kept: `from_ranks` derives
both from the ranks, `check_ranked` holds their rules.  The rules are written once here and used by every door a
vocabulary comes in by: `Tokenizer(...)` (a caller's values: ConfigError), tokenizer.bin
(vocabfile.py: FormatError with the offset) and other tools' byte-level tokens (`from_byte_tokens`,
used by interop.py and the CS336 interface: FormatError naming the source).  Each check takes a
`fail(index, message)` that builds the caller's error, so the wording is shared and the error
type and position are the caller's.

Plain Python (not compiled): it runs once per vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
import heapq
from dataclasses import dataclass, field
from typing import Final, cast

from mnemo.checks import type_error
from mnemo.constants import MAX_SPECIALS, MAX_TOKEN_ID, MAX_VOCAB
from mnemo.errors import ConfigError, FormatError, MnemoError
from mnemo.idmap import distinct_ids
from mnemo.patterns import SplitPattern

DEFAULT_SPECIAL_TOKENS: Final[tuple[str, ...]] = (
    "<|bos|>",
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<|end|>",
    *(f"<|reserved_{i}|>" for i in range(11)),
)
MAX_SPECIAL_BYTES: Final = 255  # a special token's name in tokenizer.bin: one length byte, then its UTF-8

#: fail(index, message) -> the error to raise for item `index` (a merge, a special, an id).
Fail = Callable[[int, str], MnemoError]


def _config_error(index: int, message: str) -> MnemoError:
    return ConfigError(message)


@dataclass(frozen=True)
class TokenizerFields:
    """A vocabulary's parts, as tokenizer.bin holds them and `Tokenizer(...)` takes them."""

    merges: list[tuple[int, int]]
    pattern: str | SplitPattern
    special_tokens: list[str]
    tie: str
    merge_counts: list[int] | None
    id_map: list[int] | None = None
    #: the tokens no merge makes, ids 256 + len(merges) + j (ranked vocabularies only)
    whole_tokens: list[bytes] = field(default_factory=list)
    #: tiktoken's rule: merges may use later merges, whole tokens are allowed (check_ranked)
    ranked: bool = False
    #: tokenizer.bin only: the encoder's prebuilt tables (encode_chunk.export_tables), when the
    #: file holds tables of this encoder's layout; None: the encoder builds them from the merges
    encoder_tables: bytes | None = None
    #: the rank-file loader only (ranks.RankVocab.spelled): the bytes of ids 0..255 +
    #: len(merges), which the encoder then does not spell from the merges; None: it spells them
    spelled: list[bytes] | None = None
    #: tokenizer.bin only: the program that wrote the file (its WRTR section), if it says
    writer: str | None = None
    #: a superword tokenizer's transition T (docs/superword.md): merges making ids >= T are
    #: stage 2's; None: plain BPE
    superword: int | None = None
    #: a superword tokenizer's stage-2 rule (mnemo.superword.RULES); None when plain
    stage2: str | None = None


# ---- the rules ----


def check_size(
    n_merges: int, n_specials: int, fail: Callable[[str], MnemoError], most: int = MAX_VOCAB
) -> int:
    """The number of ids, 256 + merges + specials, which must be at most `most` (MAX_VOCAB: the
    encoder packs ids in 21 bits; a version-1 tokenizer.bin holds 65,536), with at most
    MAX_SPECIALS specials (tokenizer.bin counts them in 16 bits)."""
    n_vocab = 256 + n_merges + n_specials
    if n_vocab > most:
        why = "the encoder packs ids in 21 bits" if most == MAX_VOCAB else "ids are stored as uint16 in this version"
        raise fail(f"{n_merges} merges + {n_specials} specials give {n_vocab:,} ids, more than {most:,} ({why})")
    if n_specials > MAX_SPECIALS:
        raise fail(f"{n_specials} special tokens are more than {MAX_SPECIALS} (tokenizer.bin counts them in 16 bits)")
    return n_vocab


def check_merges(merges: Sequence[tuple[int, int]], fail: Fail = _config_error, ranked: bool = False) -> None:
    """Merge k (id 256 + k) glues two ids that exist before it (bytes or earlier merges), and no
    pair is merged twice.  `ranked`: the parts may be any byte or merge, later ones too (in
    tiktoken's rule a merge's number is its token's rank, and a part may rank after what it
    makes), except the merge itself (check_ranked checks the chains of parts)."""
    n = len(merges)
    seen: dict[tuple[int, int], int] = {}
    for k, (a, b) in enumerate(merges):
        own = 256 + k
        for part in (a, b):
            if ranked and not (0 <= part < 256 + n and part != own):
                raise fail(
                    k,
                    f"merge {k} (id {own}) is {(a, b)}: token {part} is not a byte or another merge "
                    f"(parts must be in 0..{255 + n}, not {own})",
                )
            if not ranked and not 0 <= part < own:
                raise fail(
                    k,
                    f"merge {k} (id {own}) is {(a, b)}: token {part} does not exist yet "
                    f"(both parts must be in 0..{own - 1})",
                )
        first = seen.setdefault((a, b), k)
        if first != k:
            raise fail(k, f"merge {k} repeats the pair {(a, b)} of merge {first}")


def check_ranked(merges: Sequence[tuple[int, int]], whole: Sequence[bytes], fail: Fail = _config_error) -> list[bytes]:
    """The rules of a ranked vocabulary, and the bytes of each of its ids 0..255 + M + W.

    check_merges(ranked=True), and no merge is made of itself through any chain of parts.  Each
    whole token has at least 2 bytes, and no two tokens, merges and whole tokens together, spell
    the same bytes (a rank file lists each token once)."""
    n = len(merges)
    check_merges(merges, fail, ranked=True)
    spelled = spell(merges, fail)
    owner: dict[bytes, int] = {}
    for t in range(256, 256 + n):
        first_id = owner.setdefault(spelled[t], t)
        if first_id != t:
            raise fail(t - 256, f"merges {first_id - 256} and {t - 256} both spell {spelled[t]!r}")
    for j, raw in enumerate(whole):
        if not isinstance(raw, bytes) or len(raw) < 2:
            raise fail(j, f"whole token {j} is {raw!r}, not bytes of length 2 or more")
        first_id = owner.setdefault(raw, 256 + n + j)
        if first_id != 256 + n + j:
            raise fail(j, f"whole token {j} {raw!r} spells the same bytes as id {first_id}")
        spelled.append(raw)
    return spelled


def spell(merges: Sequence[tuple[int, int]], fail: Fail = _config_error) -> list[bytes]:
    """The bytes of ids 0..255 + len(merges): merge k spells its parts one after the other.
    Parts that come after the merge (a ranked vocabulary) are spelled first; a merge made of
    itself through a chain of parts is `fail`'s error."""
    n = len(merges)
    spelled: list[bytes | None] = [bytes([b]) for b in range(256)] + [None] * n
    for k in range(n):
        if spelled[256 + k] is not None:
            continue
        stack = [256 + k]
        on_stack = {256 + k}
        while stack:
            t = stack[-1]
            a, b = merges[t - 256]
            missing = next((p for p in (a, b) if spelled[p] is None), None)
            if missing is None:
                spelled[t] = cast(bytes, spelled[a]) + cast(bytes, spelled[b])
                on_stack.discard(stack.pop())
            elif missing in on_stack:
                raise fail(k, f"merge {missing - 256} (id {missing}) is made of itself, through the parts of other merges")
            else:
                stack.append(missing)
                on_stack.add(missing)
    return cast(list[bytes], spelled)


def special_name_problem(j: int, name: str) -> str | None:
    """What is wrong with special token j's name on its own (empty, longer than
    MAX_SPECIAL_BYTES of UTF-8), or None."""
    if not name:
        return f"special token {j} is {name!r}, not a non-empty string"
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_SPECIAL_BYTES:
        return f"special token {j} {name[:20]!r}... is longer than {MAX_SPECIAL_BYTES} UTF-8 bytes ({size})"
    return None


def check_special_names(names: Sequence[str], fail: Fail = _config_error) -> None:
    """Each special token's name passes special_name_problem, and no name is listed twice."""
    listed: dict[str, int] = {}  # name -> index: a list's `in` made 65,280 specials take 45 s
    for j, name in enumerate(names):
        problem = special_name_problem(j, name)
        if problem is not None:
            raise fail(j, problem)
        first = listed.setdefault(name, j)
        if first != j:
            raise fail(j, f"special token {j} {name!r} is listed twice (first as special token {first})")


def check_id_map(id_map: Sequence[int], n_vocab: int, fail: Fail = _config_error, top: int = MAX_TOKEN_ID) -> None:
    """The id map gives each of the n_vocab ids a distinct public id in 0..top.  Public ids may
    leave holes (cl100k_base has no token 100256; docs/ids32.md); bit 31 stays free, the loss-mask
    bit of uint32 token files.  A version-1 tokenizer.bin maps onto 0..n_vocab-1 (top)."""
    owner: dict[int, int] = {}
    for i, public in enumerate(id_map):
        if not 0 <= public <= top:
            raise fail(i, f"id_map[{i}] = {public} is outside 0..{top}")
        first = owner.setdefault(public, i)
        if first != i:
            raise fail(i, f"id_map gives id {public} to both {first} and {i}")


def check_special_tokens(special_tokens: object) -> list[str]:
    """A caller's special tokens (None: DEFAULT_SPECIAL_TOKENS) as a list of str, each valid
    UTF-8 (no lone surrogate), then check_special_names.  One rule for the Tokenizer and for
    training, which checks them before counting a byte of text."""
    if special_tokens is None:
        return list(DEFAULT_SPECIAL_TOKENS)
    if isinstance(special_tokens, (str, bytes, bytearray)) or not isinstance(special_tokens, Iterable):
        raise type_error("special_tokens", "a list of str", special_tokens)
    specials = list(special_tokens)
    for j, name in enumerate(specials):
        if not isinstance(name, str):
            raise type_error(f"special_tokens[{j}]", "a str", name)
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(
                f"special token {j} {name[:20]!r} is not encodable as UTF-8 (it holds a lone surrogate)"
            ) from None
    check_special_names(specials)
    return specials


def as_format_error(source: str, exc: ConfigError) -> FormatError:
    """A rule broken by a vocabulary read from `source` (a file, another tool's object): the
    source is damaged, not the caller's arguments."""
    return FormatError(f"{source}: {exc}")


# ---- vocabularies given as byte-level tokens (other tools, the CS336 interface) ----


def from_byte_tokens(
    source: str,
    vocab: Mapping[bytes, int],
    merges: Sequence[tuple[bytes, bytes]],
    *,
    pattern: str | SplitPattern,
    specials: Mapping[str, int] | None = None,
    show: Callable[[bytes], str] = repr,
    merge_where: Callable[[int], str] = lambda k: f"merge {k}",
    vocab_where: Callable[[bytes], str] | None = None,
    leftover_name: Callable[[bytes], str] | None = None,
) -> TokenizerFields:
    """A vocabulary from byte-level tokens with their ids, merges in priority order, and specials.

    `vocab` maps every byte token and every merge's result to its (public) id.  Merge k must use
    tokens that exist already (bytes or earlier merges) and make a token of `vocab`.  Entries of
    `vocab` no merge makes become special tokens named by `leftover_name` when it is given
    (GPT-2's vocab.json holds `<|endoftext|>` that way); otherwise they are an error.  The ids
    together must be distinct, in 0..2**31-1 (FormatError names a repeated id); they may leave
    holes, as cl100k_base's special tokens do (docs/ids32.md).  `show` spells
    a token in messages (interop.py passes GPT-2's printable alphabet); `vocab_where` names a
    vocabulary entry (default: `show`).  The Tokenizer built from the result checks the rules
    above; a ConfigError there is the source's fault (`as_format_error`).
    """
    where_vocab = show if vocab_where is None else vocab_where
    internal: dict[bytes, int] = {}
    public: list[int] = []
    # each entry of `public`'s token, named only for an error (making 200,000 names up front was
    # a tenth of loading a tokenizer.json)
    what: list[bytes] = []
    for b in range(256):
        raw = bytes([b])
        if raw not in vocab:
            raise FormatError(
                f"{source}: the byte 0x{b:02x} ({show(raw)}) is not in the vocabulary; a byte-level "
                f"BPE vocabulary has all 256 bytes"
            )
        internal[raw] = b
        public.append(vocab[raw])
        what.append(raw)
    pairs: list[tuple[int, int]] = []
    for k, (left, right) in enumerate(merges):
        left_id = internal.get(left)
        right_id = internal.get(right)
        merged = left + right
        merged_id = vocab.get(merged)
        if left_id is None or right_id is None or merged_id is None or merged in internal:
            raise _merge_error(source, merge_where(k), left, right, vocab, internal, show)
        internal[merged] = 256 + k
        pairs.append((left_id, right_id))
        public.append(merged_id)
        what.append(merged)
    names: list[str] = []
    for raw, i in sorted(vocab.items(), key=lambda item: item[1]):
        if raw in internal:
            continue
        if leftover_name is None:
            raise FormatError(
                f"{source}: vocabulary entry {where_vocab(raw)} (id {i}) is neither a byte nor made by a merge"
            )
        names.append(leftover_name(raw))
        public.append(i)
        what.append(raw)
    return with_specials(source, pairs, public, names, specials or {}, pattern, lambda pos: where_vocab(what[pos]))


def with_specials(
    source: str,
    pairs: list[tuple[int, int]],
    public: list[int],
    names: list[str],
    specials: Mapping[str, int],
    pattern: str | SplitPattern,
    label: Callable[[int], str],
) -> TokenizerFields:
    """The fields of an importer's merges (`pairs`), with `public` the ids of the bytes, the merges
    and the tokens `names` already lists, then `specials` added by id; every id checked
    (check_public_ids; `label(pos)` names the token of public[pos] before the specials)."""
    named = set(names)  # a list's `in` made 40,000 added_tokens take 15.6 s
    before = len(public)
    for name, i in sorted(specials.items(), key=lambda item: item[1]):
        if name in named:
            raise FormatError(f"{source}: special token {name!r} is listed twice")
        names.append(name)
        named.add(name)
        public.append(i)
    check_public_ids(source, public, lambda pos: label(pos) if pos < before else repr(names[pos - len(public)]))
    return TokenizerFields(pairs, pattern, names, "id", None, public)


def _merge_error(
    source: str,
    where: str,
    left: bytes,
    right: bytes,
    vocab: Mapping[bytes, int],
    internal: Mapping[bytes, int],
    show: Callable[[bytes], str],
) -> FormatError:
    """What is wrong with the merge (left, right) named `where` (from_byte_tokens)."""
    for part in (left, right):
        if part not in vocab:
            return FormatError(f"{source}: {where}: token {show(part)} is not in the vocabulary")
        if part not in internal:
            return FormatError(
                f"{source}: {where}: token {show(part)} is not made by any earlier merge (merges must come "
                f"in the order they apply)"
            )
    merged = left + right
    if merged not in vocab:
        return FormatError(f"{source}: {where}: the merged token {show(merged)} is not in the vocabulary")
    return FormatError(f"{source}: {where}: makes {show(merged)} again (a byte or an earlier merge already made it)")


def check_public_ids(source: str, public: Sequence[object], label: Callable[[int], str]) -> None:
    """Another tool's ids (label(i) names the token of public[i] in messages, made only for
    one): non-negative integers, distinct, at most MAX_TOKEN_ID; a FormatError naming `source`
    otherwise."""
    if isinstance(public, list) and distinct_ids(public, MAX_TOKEN_ID):  # the common case, compiled
        return
    if public and set(map(type, public)) == {int}:  # then in C loops
        ids = cast("Sequence[int]", public)
        if min(ids) >= 0 and max(ids) <= MAX_TOKEN_ID and len(set(ids)) == len(ids):
            return
    owner: dict[int, int] = {}  # then find the first id that breaks a rule, for the message
    for pos, i in enumerate(public):
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise FormatError(f"{source}: {label(pos)} has id {i!r}, not a non-negative integer")
        first = owner.setdefault(i, pos)
        if first != pos:
            raise FormatError(f"{source}: id {i} is given to both {label(first)} and {label(pos)} (duplicate id)")
    top = max(owner)
    if top > MAX_TOKEN_ID:  # holes are allowed: cl100k_base leaves some (docs/ids32.md)
        raise FormatError(
            f"{source}: {label(owner[top])} has id {top}, above {MAX_TOKEN_ID} (bit 31 of an id is "
            f"the loss-mask bit of uint32 token files)"
        )


# ---- vocabularies given as ranks (tiktoken's rule) ----


def ranked_pairs(ranks: Mapping[bytes, int]) -> dict[bytes, tuple[bytes, bytes] | None]:
    """For each token of two bytes or more, the pair tiktoken's rule glues into it when it
    encodes the token's own bytes (the last step there), or None when that never ends in the
    token: such a token is produced only whole.  reference.ranked_pairs_naive is the twin.

    Why one pair is enough: when two adjacent parts of any text are a and b with a + b a
    token, no step has crossed the edges of a + b's bytes, so the steps inside them were those
    of the bytes alone, in the same order (each was the lowest, and leftmost, of the pairs
    inside); the bytes alone pass through one state of two parts at most, and it is this
    pair.  So no other split of a token is ever adjacent, and a token whose bytes never reach
    two parts is never made by a merge."""
    pairs: dict[bytes, tuple[bytes, bytes] | None] = {}
    for raw in ranks:
        if len(raw) >= 2:
            parts, last = split_by_ranks(raw, ranks)
            pairs[raw] = last if len(parts) == 1 else None
    return pairs


def split_by_ranks(
    raw: bytes, ranks: Mapping[bytes, int], limit: int | None = None
) -> tuple[list[bytes], tuple[bytes, bytes] | None]:
    """Step 2 of tiktoken's rule on `raw`, with the ranks below `limit` only when it is given:
    repeatedly glue the adjacent pair whose concatenation has the lowest rank, the leftmost of
    equals.  The parts at the end, and the last pair glued (None when none was).  A heap of
    candidate pairs with lazy deletion keeps it O(n log n) in the length (rescanning every
    pair for every glue took 5.5 s for one 8,000-byte token)."""
    n = len(raw)
    if n < 2:
        return ([raw] if n else []), None
    top = limit

    def rank_of(piece: bytes) -> int | None:
        rank = ranks.get(piece)
        return None if rank is None or (top is not None and rank >= top) else rank

    nxt = list(range(1, n + 1))  # the part starting at i ends at nxt[i]
    prv = list(range(-1, n - 1))  # the part before the one starting at i
    alive = [True] * n
    heap: list[tuple[int, int, int, int]] = []  # (rank, left start, right start, right end)
    for i in range(n - 1):
        rank = rank_of(raw[i : i + 2])
        if rank is not None:
            heap.append((rank, i, i + 1, i + 2))
    heapq.heapify(heap)
    last: tuple[int, int, int] | None = None
    while heap:
        _, a, b, end = heapq.heappop(heap)
        if not alive[a] or nxt[a] != b or not alive[b] or nxt[b] != end:
            continue  # stale: one of the two parts has grown since
        alive[b] = False
        nxt[a] = end
        if end < n:
            prv[end] = a
        last = (a, b, end)
        for left in (prv[a], a):
            if left >= 0 and nxt[left] < n:
                right = nxt[left]
                rank = rank_of(raw[left : nxt[right]])
                if rank is not None:
                    heapq.heappush(heap, (rank, left, right, nxt[right]))
    parts: list[bytes] = []
    i = 0
    while i < n:
        parts.append(raw[i : nxt[i]])
        i = nxt[i]
    return parts, None if last is None else (raw[last[0] : last[1]], raw[last[1] : last[2]])


def from_ranks(
    source: str,
    ranks: Mapping[bytes, int],
    *,
    pattern: str | SplitPattern,
    specials: Mapping[str, int] | None = None,
    where: Callable[[bytes], str] | None = None,
) -> TokenizerFields:
    """A vocabulary from tiktoken's ranks (token bytes -> rank, which is also its id) that
    encodes as tiktoken's rule does, and the special tokens' ids.

    Each token's pair is ranked_pairs'; merge k is the k-th token with a pair, by rank, so
    its number orders the pairs as their ranks do, and the tokens without one follow the
    merges as whole tokens.  The vocabulary is ranked only when it must be: when every
    token's pair is of tokens of lower rank and every token has one (cl100k_base, o200k_base),
    the merges give tiktoken's ids by the plain rule (docs/formats.md, "Rank semantics"), and
    the result is the vocabulary mnemo built from these ranks before ranked ones existed.
    `where` names a token in messages (a line of the file)."""
    name_of = where or (lambda raw: f"token {raw!r}")
    for b in range(256):
        if bytes([b]) not in ranks:
            raise FormatError(
                f"{source}: the byte 0x{b:02x} is not a token; a byte-level BPE vocabulary has all 256 bytes "
                f"(tiktoken stops on the first text holding it)"
            )
    pairs = ranked_pairs(ranks)
    order = sorted(pairs, key=ranks.__getitem__)
    merged = [raw for raw in order if pairs[raw] is not None]
    whole = [raw for raw in order if pairs[raw] is None]
    internal = {bytes([b]): b for b in range(256)}
    internal.update((raw, 256 + k) for k, raw in enumerate(merged))
    merges: list[tuple[int, int]] = []
    for raw in merged:
        left, right = cast(tuple[bytes, bytes], pairs[raw])
        merges.append((internal[left], internal[right]))
    ranked = bool(whole) or any(a >= 256 + k or b >= 256 + k for k, (a, b) in enumerate(merges))
    tokens = [bytes([b]) for b in range(256)] + merged + whole
    public: list[object] = [ranks[raw] for raw in tokens]
    names: list[str] = []
    for name, i in sorted((specials or {}).items(), key=lambda item: item[1]):
        names.append(name)
        public.append(i)

    def label(pos: int) -> str:
        return name_of(tokens[pos]) if pos < len(tokens) else f"special token {names[pos - len(tokens)]!r}"

    check_public_ids(source, public, label)
    return TokenizerFields(merges, pattern, names, "id", None, cast(list[int], public), whole, ranked)


def from_vocab_merges(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] | None,
    pattern: str,
) -> TokenizerFields:
    """CS336's `vocab` (id -> bytes), `merges` (in the order they apply) and special tokens.

    A special token whose UTF-8 bytes are already in `vocab` keeps that id; the others get the
    next free ids, in the order given (as CS336's reference tokenizer does).  Entries of `vocab`
    that are neither a byte nor made by a merge are special tokens too, named by their UTF-8
    text, with their ids -- GPT-2's `<|endoftext|>` is one, and CS336's tests pass GPT-2's vocab
    without naming it (interop.load_gpt2 reads vocab.json the same way).  Tokens are shown as
    Python bytes in messages: CS336's interface speaks bytes.
    """
    source = "from_vocab_merges"
    by_bytes: dict[bytes, int] = {}
    for i, raw in vocab.items():
        if not isinstance(raw, bytes) or not raw:
            raise FormatError(f"{source}: vocab[{i!r}] is {raw!r}, not non-empty bytes")
        if raw in by_bytes:
            raise FormatError(f"{source}: vocab[{by_bytes[raw]}] and vocab[{i}] are both {raw!r}")
        by_bytes[raw] = i
    made = {a + b for a, b in merges}
    specials: dict[str, int] = {}
    next_id = max(vocab, default=-1) + 1
    for name in special_tokens or []:
        raw = name.encode("utf-8")
        if name in specials:
            continue
        if raw in by_bytes and raw not in made and len(raw) > 1:
            specials[name] = by_bytes.pop(raw)
        else:
            specials[name] = next_id
            next_id += 1

    def leftover_name(raw: bytes) -> str:
        """The special-token name of an entry no merge makes: its UTF-8 text."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(
                f"{source}: vocab[{by_bytes[raw]}] {raw!r} is neither a byte nor made by a merge, and not UTF-8 "
                f"text, so it cannot be a special token either; add the merge that makes it, or drop it from vocab"
            ) from None

    return from_byte_tokens(
        source,
        by_bytes,
        [(bytes(a), bytes(b)) for a, b in merges],
        pattern=pattern,
        specials=specials,
        merge_where=lambda k: f"merges[{k}]",
        vocab_where=lambda raw: f"vocab[{by_bytes.get(raw)}] {raw!r}",
        leftover_name=leftover_name,
    )
