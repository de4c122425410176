"""`prune="intermediate"`: a vocabulary without intermediate-only tokens, at the size asked.

A token is intermediate only when every occurrence of it in the training text was consumed by
later merges (`mnemo inspect`'s definition, from the merge counts alone: inspect_vocab.merges_left
bounds what is left of each token, and 0 means none).  Such a token is an embedding row the model
never sees in its own training data.  Pruning removes them by not learning them: the trainers
take a `skip` (reference.SKIP_DOC) refusing every token of a set of byte strings, training runs
again with the intermediate-only tokens of the last run added to the set, and stops when a run
has none.  The merges that follow take the ids the refused ones would have had, so the
vocabulary keeps its size, and the result is an ordinary BPE tokenizer (the same encoder, the
same files, every export).  Why this and not the literature's demolishing at encoding time:
docs/superword.md, "Pruning".

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


@dataclass
class PruneStats:
    """What pruning did: the runs, and the tokens each run found intermediate only."""

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
    before `first` are given: a base's).  `also`: a skip of the caller's own (superword training's
    word limit), kept in every run."""
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
        for k in found:
            banned.add(raw[256 + k])
            stats.removed.append(raw[256 + k])
        skip = refusing(banned, also)
    raise VerificationError(
        f"pruning: still {stats.per_round[-1]} intermediate-only tokens after {MAX_ROUNDS} training runs "
        f"(per run: {stats.per_round}); please report this with the corpus"
    )
