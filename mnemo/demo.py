"""`mnemo demo`: the main job end to end on a corpus every Python installation has -- the running
Python's own standard library sources (every .py file under `sysconfig`'s stdlib path, without
site-packages) and its documentation (the reference topics `pydoc` ships in `pydoc_data`).

Steps: train a tokenizer, tokenize the corpus into a .tok file, show a few sentences with tokshow's
renderer, encode a slice of the corpus with mnemo, tiktoken and Hugging Face tokenizers (the peers
only when they are installed: they are optional) with the same vocabulary and check that the ids
are identical, train a bigram model briefly, and print the figures.  Everything is written under
one output folder.
"""

from __future__ import annotations

import json
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mnemo.errors import InputError
from mnemo.defaults import DEFAULT_VOCAB_SIZE, DEMO_PRETRAIN_STEPS

if TYPE_CHECKING:
    from mnemo.tokenizer import Tokenizer

SPEED_SAMPLE_BYTES: Final = 2_000_000
"""How much of the corpus the speed comparison encodes: long enough for a steady rate, short
enough that the slowest peer takes a second or two."""


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


def _time_encode(encode: Callable[[str], list[int]], texts: list[str]) -> tuple[list[list[int]], float]:
    """The ids of every text and the seconds it took, one text at a time on this thread."""
    t0 = time.perf_counter()
    ids = [encode(t) for t in texts]
    return ids, time.perf_counter() - t0


def _peer_encoders(tok: Tokenizer) -> list[tuple[str, Callable[[str], list[int]] | str]]:
    """(name, encode function) of each peer, or (name, why not) when it is not installed.

    Looked up and imported here, lazily: tiktoken and tokenizers are optional, mnemo never needs
    them.  A peer that is installed but refuses the vocabulary is reported, not fatal: the demo
    is about mnemo."""
    import importlib
    import importlib.util

    from mnemo.formats.hf import to_hf_json
    from mnemo.formats.tiktoken import to_tiktoken

    peers: list[tuple[str, Callable[[str], list[int]] | str]] = []
    if importlib.util.find_spec("tiktoken") is None:
        peers.append(("tiktoken", "not installed (pip install tiktoken)"))
    else:
        try:
            enc: Any = to_tiktoken(tok)
            peers.append(("tiktoken", enc.encode_ordinary))
        except Exception as exc:  # noqa: BLE001 -- reported; the peer's own exception types vary
            peers.append(("tiktoken", f"cannot load this vocabulary: {exc}"))
    if importlib.util.find_spec("tokenizers") is None:
        peers.append(("HF tokenizers", "not installed (pip install tokenizers)"))
    else:
        try:
            hf: Any = importlib.import_module("tokenizers").Tokenizer.from_str(json.dumps(to_hf_json(tok)))
        except Exception as exc:  # noqa: BLE001
            peers.append(("HF tokenizers", f"cannot load this vocabulary: {exc}"))
        else:

            def hf_encode(text: str) -> list[int]:
                ids: list[int] = hf.encode(text, add_special_tokens=False).ids
                return ids

            peers.append(("HF tokenizers", hf_encode))
    return peers


def compare_speed(tok: Tokenizer, texts: list[str], log: Callable[[str], None]) -> None:
    """Encode `texts` with mnemo and each installed peer, same vocabulary; print MB/s, the ratio
    to mnemo from this same run, and whether every document's ids are identical."""
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    mine, secs = _time_encode(tok.encode_ordinary, texts)
    log(f"    mnemo          {n_bytes / 1e6 / secs:6.1f} MB/s  ({len(texts)} documents, {n_bytes / 1e6:.1f} MB, "
        f"one thread)")
    for name, encode in _peer_encoders(tok):
        if isinstance(encode, str):
            log(f"    {name:<14} {encode}")
            continue
        theirs, t = _time_encode(encode, texts)
        bad = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b), None)
        same = "ids identical on every document" if bad is None else f"ids DIFFER, first in document {bad}"
        log(f"    {name:<14} {n_bytes / 1e6 / t:6.1f} MB/s  mnemo is {t / secs:.2f}x as fast; {same}")


def _speed_sample(inputs: list[Path]) -> list[str]:
    """Documents spread over the corpus (every k-th), about SPEED_SAMPLE_BYTES of valid UTF-8."""
    from mnemo.sources import iter_documents

    docs = [d for d in iter_documents(inputs) if d]
    total = sum(len(d) for d in docs)
    every = max(1, total // SPEED_SAMPLE_BYTES)
    out: list[str] = []
    for d in docs[::every]:
        try:
            out.append(d.decode("utf-8"))
        except UnicodeDecodeError:  # the peers take str; such a file is left out for all three
            continue
    return out


def run_demo(
    out_dir: Path,
    *,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    workers: int | None = None,
    pretrain_steps: int = DEMO_PRETRAIN_STEPS,
    log: Callable[[str], None] = print,
    color: bool = False,
    progress: bool = False,
) -> None:
    """`progress` (a terminal): the bigram phase's step bar on stderr, as `mnemo pretrain` shows it."""
    from mnemo.bigram import pretrain
    from mnemo.buildinfo import describe
    from mnemo.tokshow import render_tokens
    from mnemo.batches import TokenStream
    from mnemo.tokenizing import tokenize_files
    from mnemo.training import CountStats, TrainStats, check_vocab_size, train

    check_vocab_size(vocab_size)  # before anything is written: a bad value must leave no folder behind
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out_dir}: the output folder cannot be made ({exc.strerror}); choose another --out") from None
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
    log(f"[1/5] trained {tok_path}: {tok.n_vocab} ids ({stats.merges} merges) from "
        f"{stats.count.n_bytes / 1e6:.1f} MB, {stats.unique_words} unique words in {train_s:.2f} s "
        f"(counting {stats.count.n_bytes / 1e6 / max(stats.count.seconds, 1e-9):.1f} MB/s, "
        f"merging {stats.merges / max(stats.merge_seconds, 1e-9):.0f} merges/s)")

    tok_file = out_dir / "stdlib.tok"
    ts = tokenize_files(inputs, tok, tok_file, workers=workers)
    log(f"[2/5] tokenized {tok_file}: {ts.n_docs} documents, {ts.n_tokens} tokens in {ts.seconds:.2f} s "
        f"({ts.mb_per_s:.1f} MB/s, {ts.bytes_per_token:.2f} bytes/token)")

    log("[3/5] a few sentences, one colour per token:")
    samples = [
        "The quick brown fox jumps over the lazy dog.",
        "def fibonacci(n: int) -> int:\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
        "Exceptions are raised with the raise statement; see the try statement.",
    ]
    for text in samples:
        ids = tok.encode_ordinary(text)
        log(render_tokens(tok, ids, None, color=color, show_ids=False).rstrip("\n"))
        log(f"    ({len(ids)} tokens for {len(text.encode())} bytes)")

    log("[4/5] encoding speed with this vocabulary, beside the peers that are installed:")
    compare_speed(tok, _speed_sample(inputs), log)

    log(f"[5/5] a bigram language model on {tok_file}, {pretrain_steps} steps:")
    bos = tok.special_tokens.get("<|bos|>")
    t_pre = time.perf_counter()
    pretrain(
        TokenStream.from_tok_files([tok_file], tok),
        vocab_size=tok.n_vocab,
        steps=pretrain_steps,
        eval_every=max(1, pretrain_steps // 2),
        eval_windows=64,
        prompt=([bos] if bos is not None else []) + tok.encode_ordinary("def"),
        n_generate=20,
        stop_id=bos,
        decode=tok.decode,
        out=out_dir / "bigram.npz",
        log=log,
        progress=progress,
    )
    log(f"    (bigram model: {time.perf_counter() - t_pre:.1f} s)")
    total = time.perf_counter() - t0
    log(f"done in {total:.1f} s: {tok_path}, {tok_file}, {out_dir / 'bigram.npz'}")
