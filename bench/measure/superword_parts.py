"""Where superword training's time goes, against plain training's, in one process (docs/superword.md,
"Measured"): CPU seconds of plain counting and plain merging, then of counting both stages, stage 1,
stage 2's words, the cut and stage 2's merge loop, as `mnemo.train(..., superword=T, workers=1)` runs
them (no recount: `verify=False` in both).  With `--prefix`, also the merge loops' cost of their first
n merges (a run of n merges each, less a run of one): where the loops spend their time.  With
`--check`, the parts' merges are compared with `mnemo.train`'s (no special tokens), so that what is
timed is what training runs.  Vocabularies up to 65,535 ids (the 16-bit trainer).

Run: .venv/bin/python bench/measure/superword_parts.py TRAIN.jsonl [--vocab 32768] [--superword 24576]
         [--rounds 2] [--prefix 100,1000] [--check]
"""

from __future__ import annotations

import argparse
import resource

import mnemo
from mnemo import merge_loop, superbpe
from mnemo.defaults import DEFAULT_PATTERN, DEFAULT_TEXT_FIELD, DEFAULT_TIE
from mnemo.pretokenize import pattern_id
from mnemo.superword import RULE_SUPERWORD, Stage1Words, Stage2Words, SuperEncoder
from mnemo.training import _count, check_count_args


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="the training text (.jsonl with a text field, or anything mnemo.train reads)")
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--superword", type=int, default=24576, help="the transition T (default 24,576)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prefix", default="", help="comma-separated merge counts: time the loops' first n merges")
    parser.add_argument("--check", action="store_true", help="compare the merges with mnemo.train's (one more training run)")
    args = parser.parse_args()
    if args.vocab > merge_loop.MAX_IDS:
        parser.error(f"--vocab {args.vocab}: above {merge_loop.MAX_IDS:,} ids training runs merge_loop_wide, which this script does not time")
    run = check_count_args([args.path], DEFAULT_PATTERN, [], 256, 1, DEFAULT_TEXT_FIELD, None)
    n_all, n1 = args.vocab - 256, args.superword - 256
    prefixes = [int(x) for x in args.prefix.split(",") if x]
    for rnd in range(args.rounds):
        t = cpu()
        (blob, meta), _ = _count([args.path], run, None, False)
        count_plain = cpu() - t
        t = cpu()
        merge_loop.train_merges_packed(blob, meta, n_all, DEFAULT_TIE, False, None)
        merge_plain = cpu() - t
        for n in prefixes if rnd == 0 else []:
            t = cpu()
            merge_loop.train_state(blob, meta, 1, 1, DEFAULT_TIE, False, None, [])
            one = cpu() - t
            t = cpu()
            merge_loop.train_state(blob, meta, n, n, DEFAULT_TIE, False, None, [])
            print(f"  plain loop: first merge and set-up {one:.3f} s, merges 2..{n} {cpu() - t - one:.3f} s")
        del blob, meta
        t = cpu()
        (blob, meta), stats = _count([args.path], run, None, True)
        count_both = cpu() - t
        assert stats.coarse is not None
        t = cpu()
        state = merge_loop.train_state(blob, meta, n1, n1, DEFAULT_TIE, False, None, [])
        stage1 = cpu() - t
        merges, counts = state.merges, state.counts
        t = cpu()
        enc = SuperEncoder(merges, 256 + len(merges), RULE_SUPERWORD)
        words = Stage2Words(enc, stats.coarse, pattern_id(DEFAULT_PATTERN), stage1=Stage1Words(state.toks, state.n, merges))
        words_s = cpu() - t
        theta = max(2, words.count_at_rank(n_all - len(merges)) // superbpe.THETA_DIVISOR)
        t = cpu()
        pblob, pmeta = words.pieces(theta)
        cut = cpu() - t

        def loop(n: int) -> tuple[float, merge_loop.TrainState]:
            t0 = cpu()
            st = merge_loop.layout_ids(pblob, pmeta, merges, counts)
            merge_loop.continue_state(st, n, DEFAULT_TIE, False, None, superbpe.too_many_words, theta)
            return cpu() - t0, st

        loop_s, end = loop(n_all)
        got = end.counts
        if args.check and rnd == 0:
            tok = mnemo.train([args.path], vocab_size=args.vocab, superword=args.superword, special_tokens=[], workers=1)
            assert tok.merges == end.merges, "the parts learnt other merges than mnemo.train"
            print(f"  the same {len(end.merges):,} merges as mnemo.train")
        for n in prefixes if rnd == 0 else []:
            one, _ = loop(len(merges) + 1)
            some, _ = loop(len(merges) + n)
            print(f"  stage 2 loop: first merge and set-up {one:.3f} s, merges 2..{n} {some - one:.3f} s")
        plain = count_plain + merge_plain
        sw = count_both + stage1 + words_s + cut + loop_s
        print(f"round {rnd}: plain {plain:.2f} s (counting {count_plain:.3f}, merging {merge_plain:.3f}); "
              f"superword {sw:.2f} s (counting both {count_both:.3f}, stage 1 {stage1:.3f}, words {words_s:.3f}, "
              f"cut {cut:.3f}, loop {loop_s:.3f}); {sw / plain:.2f}x.  theta {theta}, pieces {len(pmeta) // 16:,} "
              f"({len(pblob) // 4:,} tokens), {len(got) - len(merges)} stage-2 merges, last count {got[-1]}", flush=True)


if __name__ == "__main__":
    main()
