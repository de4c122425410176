"""The naive twins of mnemo's fast paths: boring, obviously right, slow.  Tests and benchmarks
compare the fast code against these.  Not compiled (it is the oracle; plain Python keeps it so).

This file has three sections: the naive TRAINER (here, first), the naive ENCODER of merges, and
tiktoken's rule for a vocabulary given as RANKS (at the end), each under its own banner.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from mnemo.checks import check_initial_merges, check_train_args
from mnemo.errors import VerificationError

# ---- training ----------------------------------------------------------------------------

TIE_RULE_DOC = """\
The merge rule, the same in the naive twin and the fast trainer:

  1. Count every adjacent pair of tokens in every word, each occurrence weighted by the word's
     count.  Overlapping occurrences all count: the word `a a a` holds the pair (a, a) twice.
  2. The pair with the highest count wins.
  3. A tie (several pairs with that count) is broken by `tie`:
       tie="id"    -> the smaller pair: smaller first id, then smaller second id;
       tie="bytes" -> the pair whose (bytes of first token, bytes of second token) is the
                      lexicographically greatest (Python's tuple-of-bytes order; Stanford CS336).
  4. Stop after n_merges merges, or earlier when the best count is below 2 (no pair occurs twice).
  5. Merge k (0-based) makes token 256 + k.  In every word, occurrences of the winning pair are
     replaced left to right, never overlapping: `a a a` with (a, a) becomes `c a`.
"""


SKIP_DOC = """\
`skip(bytes_a, bytes_b)`, when given, refuses pairs: a pair for which it returns True is never
merged, whatever its count -- rule 2 takes the best pair among the others, and training stops
when only refused pairs occur twice.  Initial merges are never refused.  Pruning refuses the
tokens it removed (mnemo/prune.py); superword training refuses tokens of more than four words
(mnemo/superbpe.py).
"""


def train_merges_naive(
    words: dict[bytes, int],
    n_merges: int,
    tie: str = "id",
    verify: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    initial_merges: Sequence[tuple[int, int]] | None = None,
    skip: Callable[[bytes, bytes], bool] | None = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Learn up to `n_merges` merges from word counts; return (merges, counts).

    `initial_merges` (continuing from an existing tokenizer): the first merges are these, in
    order, whatever the counts say; each one's count is its count in these words when it is
    applied (0 when they never hold it), and the free merges that follow obey the rule below.
    `n_merges` counts them.

    `words` maps each word (a pre-tokenized chunk, as bytes) to how often it occurs.  `counts[k]`
    is the count merge k had when it was chosen.  The rule (TIE_RULE_DOC, repeated here so that
    it is written once in words beside the code that states it most plainly):

    The pair with the highest count wins.  A tie goes, for tie="id", to the smaller pair (first
    id, then second id); for tie="bytes", to the pair whose (bytes(first), bytes(second)) is
    lexicographically greatest.  Stop after n_merges merges or when no pair occurs at least twice.
    Occurrences are replaced left to right without overlap.

    Every merge recounts every pair of every word from scratch.  `verify` checks that the winning
    count never goes up from one merge to the next (true for any correct run).  `progress("merge",
    done, n_merges)` is called after every merge.
    """
    check_train_args(words, n_merges, tie)
    forced = check_initial_merges(initial_merges, n_merges)
    return train_tokens_naive(
        [list(w) for w in words], list(words.values()), [], n_merges, tie, verify, progress, forced, skip
    )


def train_tokens_naive(
    seqs: list[list[int]],
    weights: list[int],
    merges: list[tuple[int, int]],
    n_merges: int,
    tie: str = "id",
    verify: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    forced: Sequence[tuple[int, int]] = (),
    skip: Callable[[bytes, bytes], bool] | None = None,
    given_counts: Sequence[int] | None = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """train_merges_naive's loop over words given as token sequences: `merges` made their
    tokens (and are the first of the result, with `given_counts`, else 0: they are given, not
    learnt), the merges len(merges) .. n_merges - 1 follow.  `forced` are taken first, as initial_merges.
    Superword training's second stage continues so from stage 1's tokens
    (mnemo/reference_superword.py)."""
    token_bytes: list[bytes] = [bytes([i]) for i in range(256)]
    for a, b in merges:
        token_bytes.append(token_bytes[a] + token_bytes[b])
    first = len(merges)
    merges = list(merges)
    counts: list[int] = [0] * first if given_counts is None else list(given_counts)
    forced = [*merges, *forced]
    for k in range(first, n_merges):
        pair_counts: defaultdict[tuple[int, int], int] = defaultdict(int)
        for seq, weight in zip(seqs, weights):
            for pair in zip(seq, seq[1:]):
                pair_counts[pair] += weight
        best: tuple[int, int] | None = None
        best_count = 0
        for pair, count in pair_counts.items():
            if best is not None and (count < best_count or count == best_count and not _beats(pair, best, tie, token_bytes)):
                continue
            if skip is not None and k >= len(forced) and skip(token_bytes[pair[0]], token_bytes[pair[1]]):
                continue
            best, best_count = pair, count
        if k < len(forced):
            best, best_count = forced[k], pair_counts.get(forced[k], 0)
        elif best is None or best_count < 2:
            break
        elif verify and len(counts) > len(forced) and best_count > counts[-1]:
            raise VerificationError(
                f"naive trainer: merge {k} of pair {best} has count {best_count}, more than the "
                f"previous merge's {counts[-1]}"
            )
        new_id = 256 + k
        merges.append(best)
        counts.append(best_count)
        token_bytes.append(token_bytes[best[0]] + token_bytes[best[1]])
        # a word without the pair's first token cannot change (and merge_word would copy it)
        seqs = [merge_word(seq, best, new_id) if best[0] in seq else seq for seq in seqs]
        if progress is not None:
            progress("merge", k + 1, n_merges)
    return merges, counts


def _beats(pair: tuple[int, int], best: tuple[int, int], tie: str, token_bytes: list[bytes]) -> bool:
    """Whether `pair` wins a count tie against `best` under the tie rule."""
    if tie == "id":
        return pair < best
    return (token_bytes[pair[0]], token_bytes[pair[1]]) > (token_bytes[best[0]], token_bytes[best[1]])


def merge_word(seq: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace each occurrence of `pair` in `seq` by `new_id`, left to right, never overlapping."""
    out: list[int] = []
    i = 0
    while i < len(seq):
        if i + 1 < len(seq) and seq[i] == pair[0] and seq[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


# ---- encoding ----


def encode_chunk_naive(chunk: bytes, ranks: dict[tuple[int, int], int]) -> list[int]:
    """BPE on one chunk, literally: while some adjacent pair has a merge, take the lowest-numbered
    one and replace every occurrence, left to right, by its id 256 + k.

    `ranks` maps each merge's pair to its number k (see `merge_ranks`).
    """
    return bpe_naive(list(chunk), ranks)


def bpe_naive(ids: list[int], ranks: dict[tuple[int, int], int]) -> list[int]:
    """encode_chunk_naive's loop over token ids (superword's second stage starts from stage 1's)."""
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


# ---- encoding by ranks (tiktoken's rule) ----

RANK_RULE_DOC = """\
tiktoken's rule, for a vocabulary given as ranks (bytes -> rank) and one pre-token:

  1. When the pre-token's bytes are a token, the result is that token.
  2. Otherwise start from its single bytes and repeat: among adjacent pairs of parts whose
     concatenation is a token, take the one whose concatenation has the lowest rank (the
     leftmost of equals) and glue it; stop when no adjacent concatenation is a token.

mnemo holds such a vocabulary as merges (merge k makes id 256 + k from the pair that step 2
glues into it, in rank order; a part may rank after what it makes) and the tokens step 2 never
makes ("whole" tokens, after the merges): encode_chunk_ranked_naive is that form's rule.
"""


def encode_piece_tiktoken_naive(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """tiktoken's rule (RANK_RULE_DOC) on one pre-token, literally: the ranks of its parts."""
    if piece in ranks:
        return [ranks[piece]]
    return [ranks[p] for p in glue_by_ranks(piece, ranks)[0]]


def glue_by_ranks(piece: bytes, ranks: Mapping[bytes, int]) -> tuple[list[bytes], tuple[bytes, bytes] | None]:
    """Step 2 of tiktoken's rule on `piece`: its parts at the end, and the last pair glued
    (None when nothing was)."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    last: tuple[bytes, bytes] | None = None
    while True:
        best: int | None = None
        at = -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best):
                best, at = rank, i
        if best is None:
            return parts, last
        last = (parts[at], parts[at + 1])
        parts[at : at + 2] = [parts[at] + parts[at + 1]]


def ranked_pairs_naive(ranks: Mapping[bytes, int]) -> dict[bytes, tuple[bytes, bytes] | None]:
    """For every token of two bytes or more, the pair step 2 of tiktoken's rule glues into it
    when its own bytes are encoded (the last step there), or None when step 2 never ends in it.
    Only that pair can ever be adjacent with the token's bytes between them, in any text: the
    parts inside those bytes went through the same steps as the bytes alone do."""
    pairs: dict[bytes, tuple[bytes, bytes] | None] = {}
    for token in ranks:
        if len(token) >= 2:
            parts, last = glue_by_ranks(token, ranks)
            pairs[token] = last if len(parts) == 1 else None
    return pairs


def encode_chunk_ranked_naive(chunk: bytes, ranks: dict[tuple[int, int], int], whole: Mapping[bytes, int]) -> list[int]:
    """A chunk by mnemo's form of a vocabulary from ranks (RANK_RULE_DOC): a whole token when
    the chunk is its bytes; else from its bytes, glue one pair at a time, the lowest merge
    number k (`ranks`, merge_ranks' pair -> k) and the leftmost of equals, into 256 + k.  With
    every part before its merge and no whole tokens this is encode_chunk_naive's rule."""
    if chunk in whole:
        return [whole[chunk]]
    ids = list(chunk)
    while True:
        best: int | None = None
        at = -1
        for i in range(len(ids) - 1):
            k = ranks.get((ids[i], ids[i + 1]))
            if k is not None and (best is None or k < best):
                best, at = k, i
        if best is None:
            return ids
        ids[at : at + 2] = [256 + best]


def encode_chunks_ranked_naive(
    chunks: Sequence[bytes], merges: Sequence[tuple[int, int]], whole: Sequence[bytes]
) -> list[int]:
    """The ids of already-split chunks by encode_chunk_ranked_naive, concatenated (the twin of
    Encoder.encode_chunks for an Encoder(merges, whole=whole))."""
    ranks = merge_ranks(merges)
    ids = {raw: 256 + len(merges) + j for j, raw in enumerate(whole)}
    out: list[int] = []
    for chunk in chunks:
        out.extend(encode_chunk_ranked_naive(chunk, ranks, ids))
    return out


# ---- special tokens ----


def find_specials_naive(names: Sequence[bytes], data: bytes) -> list[tuple[int, int, int]]:
    """The twin of SpecialMatcher.find_all: at each position from the left, the longest name
    that starts there (its index in `names`; a name listed twice keeps its first index); after a
    match, go on from its end."""
    out: list[tuple[int, int, int]] = []
    i = 0
    while i < len(data):
        best = -1
        for k, name in enumerate(names):
            if data.startswith(name, i) and (best < 0 or len(name) > len(names[best])):
                best = k
        if best >= 0:
            out.append((i, i + len(names[best]), best))
            i += len(names[best])
        else:
            i += 1
    return out
