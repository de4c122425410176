"""Tokenize from `s3://` against a local file (docs/remote.md): `mnemo tokenize` on the same JSONL,
once read from a local file and once from an S3 bucket served by moto on 127.0.0.1.

    python bench/compare/s3_vs_local.py [--mb 50] [--workers 2] [--tokenizer tokenizer.bin]

The S3 API is moto's server (`python -m moto.server`, the `moto[server]` extra) in a process of
its own on a free port of 127.0.0.1: no network, so the figure is the cost of the S3 protocol,
fsspec's ranged reads and moto itself, not of a real link.  The corpus is the first --mb MB of
../shared/corpus/english.jsonl.xz as plain JSONL (byte-range tasks in both runs); the output is a
local .tok in both (the two are compared byte for byte).  One run of each, local first.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mnemo
from mnemo import Tokenizer
from mnemo.tokenizing import tokenize_files

SHARED = Path(__file__).resolve().parents[3] / "shared"


def write_corpus(path: Path, mb: float) -> int:
    size = 0
    with lzma.open(SHARED / "corpus" / "english.jsonl.xz", "rt", encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        for line in f:
            out.write(json.dumps({"text": json.loads(line)["text"]}) + "\n")
            size += len(line)
            if size >= mb * 1e6:
                break
    return path.stat().st_size


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.bin instead of training one (32,768 ids on 5 MB)")
    args = parser.parse_args()
    import boto3

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        corpus = tmp / "english.jsonl"
        n_bytes = write_corpus(corpus, args.mb)
        tok = Tokenizer.load(args.tokenizer) if args.tokenizer else mnemo.train([corpus], vocab_size=32768, workers=args.workers)
        port = free_port()
        endpoint = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_ENDPOINT_URL=endpoint,
                              AWS_DEFAULT_REGION="us-east-1")
            for _ in range(100):
                try:
                    s3 = boto3.client("s3", endpoint_url=endpoint)
                    s3.create_bucket(Bucket="bench")
                    break
                except Exception:
                    time.sleep(0.1)
            s3.upload_file(str(corpus), "bench", "english.jsonl")
            print(f"{n_bytes / 1e6:.1f} MB of JSONL, {args.workers} workers, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
            times = {}
            for label, source in (("local file", str(corpus)), ("s3:// (moto)", "s3://bench/english.jsonl")):
                t0 = time.perf_counter()
                tokenize_files([source], tok, tmp / f"{label[:2]}.tok", workers=args.workers)
                times[label] = time.perf_counter() - t0
                print(f"  {label:14s} {times[label]:7.2f} s  {n_bytes / 1e6 / times[label]:6.1f} MB/s")
            assert (tmp / "lo.tok").read_bytes() == (tmp / "s3.tok").read_bytes()
            local, remote = times.values()
            print(f"ratio s3:// / local: {remote / local:.2f}x the time  (load at the end {os.getloadavg()[0]:.1f})")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
