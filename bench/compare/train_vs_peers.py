"""Side by side: train a 32,768-id vocabulary on the first 100 MB of the English corpus with mnemo
and, where installed, rustbpe, Hugging Face tokenizers and bpeasy -- each in a fresh process, in
the same run -- and report wall time of the training call, peak RSS and bytes per token on the
10 MB of held-out documents that follow.  GPT-4's split pattern for everyone (mnemo: "gpt4"),
no special tokens, so every library learns 32,512 merges.

    .venv/bin/pip install rustbpe tokenizers bpeasy tiktoken    # the peers (optional)
    .venv/bin/python bench/compare/train_vs_peers.py [--mb 100] [--heldout-mb 10] [--threads 2] [--only mnemo,rustbpe] [--vocab 131072] [--rounds 3]

--vocab above 65,535 runs mnemo's 32-bit trainer after its 16-bit one (docs/ids32.md); the side
`mnemo-wide` runs the 32-bit trainer alone (merge_loop_wide.SEAMS.handoff = 0), for before/after.
--rounds N runs every library N times, alternating, and reports each one's best and median.

Read the ratios: these machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "english.jsonl.xz"
GPT4 = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
VOCAB = 32768
LIBRARIES = ("mnemo", "rustbpe", "tokenizers", "bpeasy")  # and "mnemo-wide" on request


def load(mb: float, heldout_mb: float) -> tuple[list[str], list[str]]:
    train: list[str] = []
    held: list[str] = []
    size = 0
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            n = len(text.encode("utf-8"))
            if size < mb * 1e6:
                train.append(text)
            elif size < (mb + heldout_mb) * 1e6:
                held.append(text)
            else:
                break
            size += n
    return train, held


def run_one(name: str, mb: float, heldout_mb: float, threads: int, vocab_size: int = VOCAB) -> dict[str, object]:
    VOCAB = vocab_size  # noqa: N806 -- the module default, or --vocab
    train, held = load(mb, heldout_mb)
    t0 = time.perf_counter()
    if name in ("mnemo", "mnemo-wide"):
        import mnemo.training
        from mnemo import merge_loop_wide

        if name == "mnemo-wide":
            merge_loop_wide.SEAMS.handoff = 0

        tok = mnemo.train_from_iterator(iter(train), vocab_size=VOCAB, pattern="gpt4", special_tokens=[], workers=threads, verify=False)
        seconds = time.perf_counter() - t0
        n_tokens = sum(len(tok.encode_ordinary(t)) for t in held)
    elif name == "rustbpe":
        os.environ["RAYON_NUM_THREADS"] = str(threads)
        import rustbpe

        rtok = rustbpe.Tokenizer()
        rtok.train_from_iterator(iter(train), vocab_size=VOCAB, pattern=GPT4)
        seconds = time.perf_counter() - t0
        n_tokens = sum(len(ids) for ids in rtok.batch_encode(held))
    elif name == "tokenizers":
        os.environ["RAYON_RS_NUM_CPUS"] = str(threads)
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

        htok = Tokenizer(models.BPE())
        htok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(GPT4), behavior="isolated"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
        htok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        htok.train_from_iterator(train, trainer=trainer)
        seconds = time.perf_counter() - t0
        n_tokens = sum(len(e.ids) for e in htok.encode_batch(held))
    elif name == "bpeasy":
        import bpeasy
        import tiktoken

        vocab = bpeasy.train_bpe(iter(train), GPT4, 128, VOCAB)
        seconds = time.perf_counter() - t0
        enc = tiktoken.Encoding(name="bpeasy", pat_str=GPT4, mergeable_ranks=vocab, special_tokens={})
        n_tokens = sum(len(enc.encode_ordinary(t)) for t in held)
    else:
        raise SystemExit(f"unknown library {name}")
    held_bytes = sum(len(t.encode("utf-8")) for t in held)
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return {"library": name, "seconds": seconds, "peak_rss_mib": rss / 1024, "bytes_per_token": held_bytes / n_tokens}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--heldout-mb", type=float, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default=",".join(LIBRARIES))
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.mb, args.heldout_mb, args.threads, args.vocab)))
        return
    if not CORPUS.is_file():
        raise SystemExit(f"{CORPUS} is absent")
    names = args.only.split(",")
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in names}
    for rnd in range(args.rounds):
        for name in names:
            if rnd > 0 and not runs[name]:
                continue  # skipped in the first round
            cmd = [sys.executable, __file__, "--one", name, "--mb", str(args.mb), "--heldout-mb", str(args.heldout_mb),
                   "--threads", str(args.threads), "--vocab", str(args.vocab)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{name:11s} skipped: {last}", flush=True)
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            runs[name].append(row)
            print(f"{name:11s} train {row['seconds']:7.2f} s   peak RSS {row['peak_rss_mib']:7.0f} MiB   held-out {row['bytes_per_token']:.3f} bytes/token"
                  f"   load {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for name in names:
        if runs[name]:
            times = sorted(float(r["seconds"]) for r in runs[name])  # type: ignore[arg-type]
            row = dict(runs[name][0], seconds=times[0], median=times[len(times) // 2])
            rows.append(row)
            if args.rounds > 1:
                print(f"{name:11s} best {times[0]:7.2f} s   median {times[len(times) // 2]:7.2f} s   ({len(times)} runs)")
    if rows and str(rows[0]["library"]).startswith("mnemo"):
        peers = [r for r in rows[1:] if not str(r["library"]).startswith("mnemo")]
        if peers:
            fastest = min(peers, key=lambda r: float(r["seconds"]))  # type: ignore[arg-type]
            ratio = float(rows[0]["seconds"]) / float(fastest["seconds"])  # type: ignore[arg-type]
            med = float(rows[0]["median"]) / float(fastest["median"])  # type: ignore[arg-type]
            print(f"{rows[0]['library']} / fastest peer ({fastest['library']}): {ratio:.2f}x the wall time (best of each), "
                  f"{med:.2f}x (medians) ({args.mb:g} MB, {args.threads} threads, vocabulary {args.vocab}, "
                  f"{args.rounds} alternating rounds)")
        for r in rows[1:]:
            if str(r["library"]).startswith("mnemo"):
                print(f"{rows[0]['library']} / {r['library']}: {float(rows[0]['seconds']) / float(r['seconds']):.2f}x (best of each)")

if __name__ == "__main__":
    main()
