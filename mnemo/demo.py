"""`mnemo demo`: the main job end to end on a corpus every Python installation has -- the running
Python's own standard library sources (every .py file under `sysconfig`'s stdlib path, without
site-packages) and its documentation (the reference topics `pydoc` ships in `pydoc_data`).

Steps: train a tokenizer, tokenize the corpus into a .tok file, show a few sentences with tokshow's
renderer, train a bigram model briefly, and print the figures.  Everything is written under one
output folder.
"""

from __future__ import annotations

import json
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path


def demo_corpus(out_dir: Path) -> list[Path]:
    """The stdlib's .py files (sorted) plus a JSONL of pydoc's documentation topics, written to
    `out_dir/python-docs.jsonl`."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and p.is_file())
    docs = out_dir / "python-docs.jsonl"
    try:
        from pydoc_data import topics as pydoc_topics

        topics: dict[str, str] = dict(pydoc_topics.topics)
    except ImportError:  # some distributions strip pydoc_data
        topics = {}
    with open(docs, "w", encoding="utf-8") as f:
        for name in sorted(topics):
            f.write(json.dumps({"text": topics[name], "topic": name}) + "\n")
    return [*files, docs]


def run_demo(
    out_dir: Path,
    *,
    vocab_size: int = 32768,
    workers: int | None = None,
    pretrain_steps: int = 60,
    log: Callable[[str], None] = print,
    color: bool = False,
) -> None:
    from mnemo.bigram import pretrain
    from mnemo.buildinfo import describe
    from mnemo.tokshow import render_tokens
    from mnemo.data import TokenStream
    from mnemo.dataset import tokenize_files
    from mnemo.training import CountStats, TrainStats, train

    out_dir.mkdir(parents=True, exist_ok=True)
    log(describe())
    inputs = demo_corpus(out_dir)
    size = sum(p.stat().st_size for p in inputs)
    log(f"corpus: Python {sys.version.split()[0]}'s standard library, {len(inputs) - 1} source files "
        f"and its documentation topics, {size / 1e6:.1f} MB")

    stats = TrainStats(CountStats())
    t0 = time.perf_counter()
    tok = train(inputs, vocab_size=vocab_size, workers=workers, stats=stats)
    train_s = time.perf_counter() - t0
    tok_path = out_dir / "tokenizer.bin"
    tok.save(tok_path)
    log(f"[1/4] trained {tok_path}: {tok.n_vocab} ids ({stats.merges} merges) from "
        f"{stats.count.n_bytes / 1e6:.1f} MB, {stats.unique_words} unique words in {train_s:.2f} s "
        f"(counting {stats.count.n_bytes / 1e6 / max(stats.count.seconds, 1e-9):.1f} MB/s, "
        f"merging {stats.merges / max(stats.merge_seconds, 1e-9):.0f} merges/s)")

    tok_file = out_dir / "stdlib.tok"
    ts = tokenize_files(inputs, tok, tok_file, workers=workers)
    log(f"[2/4] tokenized {tok_file}: {ts.n_docs} documents, {ts.n_tokens} tokens in {ts.seconds:.2f} s "
        f"({ts.mb_per_s:.1f} MB/s, {ts.bytes_per_token:.2f} bytes/token)")

    log("[3/4] a few sentences, one colour per token:")
    samples = [
        "The quick brown fox jumps over the lazy dog.",
        "def fibonacci(n: int) -> int:\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
        "Exceptions are raised with the raise statement; see the try statement.",
    ]
    for text in samples:
        ids = tok.encode_ordinary(text)
        log(render_tokens(tok, ids, None, color=color, show_ids=False).rstrip("\n"))
        log(f"    ({len(ids)} tokens for {len(text.encode())} bytes)")

    log(f"[4/4] a bigram language model on {tok_file}, {pretrain_steps} steps:")
    bos = tok.special_tokens.get("<|bos|>")
    pretrain(
        TokenStream.from_tok_files([tok_file], tok),
        vocab_size=tok.n_vocab,
        steps=pretrain_steps,
        batch_size=4,
        context=64,
        eval_every=max(1, pretrain_steps // 3),
        eval_windows=64,
        prompt=([bos] if bos is not None else []) + tok.encode_ordinary("def"),
        n_generate=20,
        stop_id=bos,
        decode=tok.decode,
        out=out_dir / "bigram.npz",
        log=log,
    )
    total = time.perf_counter() - t0
    log(f"done in {total:.1f} s: {tok_path}, {tok_file}, {out_dir / 'bigram.npz'}")
