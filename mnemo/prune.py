"""`prune="intermediate"`: a vocabulary without intermediate-only tokens, at the size asked.

A token is intermediate only when every occurrence of it in the training text was consumed by
later merges (`mnemo inspect`'s definition, from the merge counts alone: inspect_vocab.merges_left
bounds what is left of each token, and 0 means none).  Such a token is an embedding row the model
never sees in its own training data.  Pruning trains again with a `skip` (reference.SKIP_DOC)
refusing a set of byte strings, and grows the set until a run has no intermediate-only token.
What it refuses for an intermediate-only token is its *least frequent user* (the later merge
with it as a part that has the smallest count), not the token itself: with that user gone, the
token keeps that user's occurrences for itself and is no longer intermediate only, and the other
tokens built on it keep their way of being made.  Refusing the token itself cut every token built
on it off from its merges: the bytes E0 A4, the first two of every Devanagari character, are
intermediate only once each of those characters is a token, and refusing them took a script's
characters out of the vocabulary (docs/superword.md, "Pruning", has the figures).  The merges
that follow take the ids the refused ones would have had, so the vocabulary keeps its size, and
the result is an ordinary BPE tokenizer (the same encoder, the same files, every export).  Why
this and not the literature's demolishing at encoding time: docs/superword.md, "Pruning".

Only learnt merges are pruned: a run that continues from a tokenizer (`base=`) keeps the base's
merges as they are, intermediate or not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mnemo.errors import ConfigError, VerificationError
from mnemo.inspect_vocab import merges_left

#: The values of `prune=` (`--prune`): None or "none" keeps every token.
PRUNE_MODES = ("none", "intermediate")
#: Runs before giving up (each run refuses the intermediate tokens of the one before; measured:
#: docs/superword.md).  Reaching it is a VerificationError: the tokenizer would still hold some.
MAX_ROUNDS = 30

Merges = list[tuple[int, int]]
Skip = Callable[[bytes, bytes], bool]
#: One training run: `learn(skip)` -> (merges, counts), skip refusing pairs (None: none).
Learn = Callable[[Skip | None], tuple[Merges, list[int]]]


def check_prune(prune: object) -> str | None:
    """`prune` checked: None for no pruning, else the mode."""
    if prune is None or prune == "none":
        return None
    if not isinstance(prune, str) or prune not in PRUNE_MODES:
        raise ConfigError(f"prune must be one of {', '.join(PRUNE_MODES)} (or None), got {prune!r}")
    return prune


def token_bytes_of(merges: Sequence[tuple[int, int]]) -> list[bytes]:
    """The bytes of every id the merges make, bytes first."""
    out = [bytes([i]) for i in range(256)]
    for a, b in merges:
        out.append(out[a] + out[b])
    return out


def intermediate_merges(merges: Sequence[tuple[int, int]], counts: Sequence[int], first: int = 0) -> list[int]:
    """Numbers k >= first of the merges whose token is intermediate only (what `mnemo inspect`
    lists: none of it left after training, although it was made)."""
    left, _ = merges_left(merges, counts)
    return [k for k in range(first, len(merges)) if left[k] == 0 and counts[k] > 0]


def rarest_users(merges: Sequence[tuple[int, int]], counts: Sequence[int], found: Sequence[int]) -> list[int]:
    """For each merge number in `found` (intermediate-only tokens), the number of the merge to
    refuse in the next run: the least frequent of the later merges that use its token, and of
    those the last learnt (it changes the least of the run).  An intermediate-only token has at
    least one user: its count is used up by theirs."""
    _, used_by = merges_left(merges, counts)
    out: list[int] = []
    for k in found:
        best = -1
        for user in used_by[k]:
            j = user - 256
            if best < 0 or counts[j] <= counts[best]:  # in merge order: a tie goes to the later one
                best = j
        assert best >= 0, f"merge {k}: an intermediate-only token that no merge uses"
        out.append(best)
    return out


@dataclass
class PruneStats:
    """What pruning did: the runs, the intermediate-only tokens each run found (`per_round`),
    and the tokens refused for them (`removed`: each found token's least frequent user; one
    refusal can serve several found tokens)."""

    rounds: int = 0
    removed: list[bytes] = field(default_factory=list)
    per_round: list[int] = field(default_factory=list)


def refusing(banned: set[bytes], also: Skip | None = None) -> Skip:
    """A skip refusing the tokens in `banned` (and what `also` refuses)."""
    if also is None:
        return lambda a, b: a + b in banned
    return lambda a, b: a + b in banned or also(a, b)


def refusing_also(first: Skip, second: Skip) -> Skip:
    """A skip refusing what either refuses."""
    return lambda a, b: first(a, b) or second(a, b)


def learn_pruned(learn: Learn, first: int, stats: PruneStats | None = None, also: Skip | None = None) -> tuple[Merges, list[int]]:
    """Runs of `learn` until one has no intermediate-only token among merges first.. (the merges
    before `first` are given: a base's), each run refusing what the runs before refused and, for
    each intermediate-only token of the last one, its least frequent user (`rarest_users`).
    `also`: a skip of the caller's own (superword training's word limit), kept in every run.

    The set grows every run (a token refused is one the last run made, so not one refused
    before); MAX_ROUNDS bounds the runs all the same."""
    banned: set[bytes] = set()
    stats = PruneStats() if stats is None else stats
    skip: Skip | None = also
    for _ in range(MAX_ROUNDS):
        merges, counts = learn(skip)
        stats.rounds += 1
        found = intermediate_merges(merges, counts, first)
        stats.per_round.append(len(found))
        if not found:
            return merges, counts
        raw = token_bytes_of(merges)
        for j in rarest_users(merges, counts, found):
            if raw[256 + j] not in banned:
                banned.add(raw[256 + j])
                stats.removed.append(raw[256 + j])
        skip = refusing(banned, also)
    raise VerificationError(
        f"pruning: still {stats.per_round[-1]} intermediate-only tokens after {MAX_ROUNDS} training runs "
        f"(per run: {stats.per_round}); please report this with the corpus"
    )
