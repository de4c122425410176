"""Where one worker's time goes, in one process on one core: reading and decoding a JSONL file's
documents, then counting their words (what a training worker does) and encoding them: into one
list of ids made an array (for comparison), and with `encode_documents` in blocks of 256
documents (what a `mnemo tokenize` worker does).  CPU time of this process.

    .venv/bin/python bench/measure/worker_time_breakdown.py FILE.jsonl [--tokenizer tokenizer.bin] [--pattern mnemonic]

Without --tokenizer only the counting side is measured.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from mnemo import Tokenizer
from mnemo.count import WordCounter
from mnemo.pretokenize import pattern_id
from mnemo.sources import Task, iter_task_documents


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", type=Path)
    ap.add_argument("--tokenizer", type=Path)
    ap.add_argument("--pattern", default="mnemonic")
    args = ap.parse_args()

    t = time.process_time()
    docs = list(iter_task_documents(Task(str(args.jsonl), "jsonl")))
    t_read = time.process_time() - t
    size = sum(map(len, docs))
    print(f"{args.jsonl}: {len(docs):,} documents, {size / 1e6:.1f} MB of text")
    print(f"read + JSON decode + UTF-8 encode  {t_read:6.2f} s")

    counter = WordCounter(pattern_id(args.pattern))
    t = time.process_time()
    for d in docs:
        counter.add(d)
    t_count = time.process_time() - t
    t = time.process_time()
    counter.to_dict()
    t_dict = time.process_time() - t
    print(f"count words ({args.pattern})          {t_count:6.2f} s  ({size / 1e6 / t_count:.1f} MB/s, {len(counter):,} distinct)")
    print(f"counts to a dict                   {t_dict:6.2f} s")
    total = t_read + t_count + t_dict
    print(f"  -> a counting worker end to end: {size / 1e6 / total:.1f} MB/s; reading is {t_read / total:.0%} of its time")

    if args.tokenizer is not None:
        tok = Tokenizer.load(args.tokenizer)
        bos = tok.special_tokens.get("<|bos|>")
        out: list[int] = []
        t = time.process_time()
        for d in docs:
            if bos is not None:
                out.append(bos)
            tok._encode_range(d, 0, len(d), out)
        t_enc = time.process_time() - t
        t = time.process_time()
        np.array(out, dtype=np.uint16 if tok.n_vocab <= 1 << 16 else np.uint32)
        t_arr = time.process_time() - t
        print(f"encode into a list of ids          {t_enc:6.2f} s  ({size / 1e6 / t_enc:.1f} MB/s, {len(out):,} ids)")
        print(f"list -> numpy array                {t_arr:6.2f} s")
        t = time.process_time()
        for k in range(0, len(docs), 256):  # what a tokenize worker does: blocks of 256 documents
            tok.encode_documents(docs[k : k + 256], bos=bos)
        t_docs = time.process_time() - t
        print(f"encode_documents, blocks of 256    {t_docs:6.2f} s  ({size / 1e6 / t_docs:.1f} MB/s, packed in compiled code)")
        total = t_read + t_docs
        print(f"  -> a tokenize worker end to end: {size / 1e6 / total:.1f} MB/s; reading is {t_read / total:.0%} of its time")


if __name__ == "__main__":
    main()
