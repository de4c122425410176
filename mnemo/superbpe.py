"""Superword training, SuperBPE's curriculum (docs/superword.md): `mnemo.train(...,
superword=T)` learns stage 1 up to id T as usual, then this module's stage 2 continues from
those merges on the coarse chunks counted in the same pass (training.py counts both tables).

Stage 2's words are the coarse chunks, each as the stage-1 tokens of its stage-1 chunks (each
stage-1 chunk encoded alone: superword.Stage2Words), so that stage-1 merges never cross a
stage-1 boundary here either; the merge loop continues from them (merge_loop.continue_state) and
refuses, as the authors' final tokenizers did, every token of more than MAX_WORDS words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mnemo import merge_loop, merge_loop_wide
from mnemo.checks import check_int
from mnemo.errors import ConfigError
from mnemo.pretokenize import pattern_id
from mnemo.superword import RULE_SUPERWORD, CoarseCounts, Stage1Words, Stage2Words, SuperEncoder

#: A superword token holds at most this many space-separated words (the authors' `mw4`).
MAX_WORDS = 4

Merges = list[tuple[int, int]]
Skip = Callable[[bytes, bytes], bool]


def too_many_words(a: bytes, b: bytes) -> bool:
    """The skip of stage 2: the token a + b holds more than MAX_WORDS words (runs between
    spaces; the authors' fork counts its pieces split at 'Ġ' alike)."""
    joined = a + b
    if joined.count(b" ") < MAX_WORDS:
        return False
    return sum(1 for w in joined.split(b" ") if w) > MAX_WORDS


def check_superword(superword: object, vocab_size: int, n_specials: int) -> int:
    """`superword` (the transition T) checked against the vocabulary: 256 < T <= vocab_size
    minus the specials (T equal to it: no room for stage 2, plain BPE with a superword rule)."""
    t = check_int("superword", superword)
    top = vocab_size - n_specials
    if not 256 < t <= top:
        raise ConfigError(
            f"superword={t}: the transition must be in 257..{top} (vocab_size {vocab_size} less {n_specials} "
            f"special tokens); stage 1 learns ids up to it, stage 2 the rest"
        )
    return t


@dataclass
class Stage2Stats:
    """What stage 2 did: its words before and after the cut (Stage2Words.pieces), the cut's
    threshold (of the last run), whether a run fell back to a lower one (half the last, down to
    the always-exact 2) and how many merge-loop runs it took."""

    words: int = 0
    tokens: int = 0
    pieces: int = 0
    piece_tokens: int = 0
    theta: int = 0
    fell_back: bool = False
    runs: int = 1


@dataclass
class Seams:
    """Test knobs: `theta` forces the cut's first threshold (None: estimated); `sketch_bits`
    the size of Stage2Words' sketch (None: its default)."""

    theta: int | None = None
    sketch_bits: int | None = None


SEAMS = Seams()
#: The first threshold is the estimated count of the last stage-2 merge divided by this: the
#: estimate is the count of the (stage-2 merges)-th most frequent pair of stage-1 tokens, which
#: merges lower (English at 32,768 ids, T = 24,576: last count 29 against an estimate of 49 on
#: 25 MB, 109 against 184 on 100 MB -- 0.59 of it both times; a threshold above the last count
#: costs a second run at 2).
THETA_DIVISOR = 2


def learn_stage2(
    stage1: tuple[Merges, list[int]],
    coarse: CoarseCounts,
    n_merges: int,
    pattern: str,
    tie: str,
    verify: bool,
    progress: Callable[[str, int, int], None] | None,
    algorithm: str,
    skip: Skip | None,
    stats: Stage2Stats | None = None,
    stage1_words: merge_loop.TrainState | None = None,
) -> tuple[Merges, list[int]]:
    """Stage 2 up to `n_merges` merges in all, from stage 1's (merges, counts) -- and, when the
    16-bit trainer learnt them, its words as it left them (`stage1_words`: they give stage 2
    each word's stage-1 tokens, superword.Stage1Words; None: each word is encoded).

    The fast path cuts the words where no merge of count >= theta can reach (Stage2Words) and
    runs the merge loop on the pieces with the same theta (merge_loop.continue_state: it keeps
    no pair made below theta and stops at the first merge below it); when that run ends short
    or below theta, the merges below theta may differ from the uncut words' and it runs again
    with theta halved, down to theta = 2, which is always exact."""
    merges, counts = stage1
    stats = Stage2Stats() if stats is None else stats
    if algorithm == "naive":
        from mnemo.reference_superword import train_stage2

        return train_stage2(coarse.to_dict(), merges, counts, n_merges, pattern, tie, verify, progress, skip)
    pid = pattern_id(pattern)
    enc = SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD, wide=256 + n_merges > 65536)
    s1 = None if stage1_words is None else Stage1Words(stage1_words.toks, stage1_words.n, merges)
    if SEAMS.sketch_bits is None:
        words = Stage2Words(enc, coarse, pid, stage1=s1)
    else:
        words = Stage2Words(enc, coarse, pid, sketch_bits=SEAMS.sketch_bits, stage1=s1)
    stats.words = words.n_words
    stats.tokens = words.n_tokens
    theta = SEAMS.theta
    if theta is None:
        theta = max(2, words.count_at_rank(n_merges - len(merges)) // THETA_DIVISOR)
    while True:
        stats.theta = theta
        pblob, pmeta = words.pieces(theta)
        stats.pieces = len(pmeta) // 16
        stats.piece_tokens = len(pblob) // 4
        if 256 + n_merges <= merge_loop.MAX_IDS:
            state = merge_loop.layout_ids(pblob, pmeta, merges, counts)
            merge_loop.continue_state(state, n_merges, tie, verify, progress, skip, theta)
            out = state.merges, state.counts
        else:
            wide = merge_loop_wide.layout_ids(pblob, pmeta, merges, counts)
            merge_loop_wide.continue_state(wide, n_merges, tie, verify, progress, skip, theta)
            out = wide.merges, wide.counts
        learnt = out[1][len(merges) :]
        if theta <= 2 or (len(out[0]) == n_merges and (not learnt or learnt[-1] >= theta)):
            return out
        # Half the threshold, not 2 at once: the estimate misses by a little when it misses, and
        # a run at 2 reads the uncut words (100 MB of English: 9.3 s of merge loop at 2, 2.1 s
        # at the estimated 92; forced to start at 150, above the last count 109, the run at 75
        # that follows succeeds).  Each run is exact down to its own threshold; 2 always ends it.
        theta = max(2, theta // 2)
        stats.fell_back = True
        stats.runs += 1
