"""Peak memory (issue 17, goal 5): the peak of the resident memory SUMMED over the process tree
(the `mnemo` command and every worker it starts), sampled from /proc every 0.05 s.

    .venv/bin/python bench/measure/peak_memory.py tokenize [--mb 100 1000] [--workers 2] [--keep DIR]
    .venv/bin/python bench/measure/peak_memory.py train [--mb 1000] [--workers 2] [--keep DIR]

`tokenize`: `mnemo tokenize` of JSONL files of each --mb size (default 100 MB and 1 GB), so that
one run shows whether the peak grows with the input.  Goal: under 200 MiB plus the tokenizer,
whatever the input size.  "The tokenizer" is measured here too, as what loading it and encoding
a little adds to one Python process that has imported mnemo (its merge table and caches); the
verdict counts it once per process holding one (the parent and each worker).
`train`: `mnemo train` of the 1 GB input.  Goal: under 1 GiB summed.

The inputs are bench/measure/train_1gb.py's (the four corpora's text concatenated and repeated), built in
a temporary folder, or in --keep DIR and reused from there.  The tokenizer for `tokenize` is
GPT-2's first 32,496 merges with 16 specials (bench/pytest/bench_encoder.py's), 32,768 ids, unless
--tokenizer is given.  Prints the load average with every figure: the peak does not depend on
the load, the wall time does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from train_1gb import build, peak_of  # noqa: E402  (the same input and the same /proc walk)

MIB = 1 << 20


def tokenizer_cost(path: Path) -> tuple[int, int]:
    """(RSS of a Python that imported mnemo, what loading the tokenizer and encoding adds)."""
    code = (
        "import sys, mnemo\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'): return int(line.split()[1]) * 1024\n"
        "base = rss()\n"
        "tok = mnemo.Tokenizer.load(sys.argv[1])\n"
        "tok.encode_ordinary('The quick brown fox jumps over the lazy dog. ' * 20000)\n"
        "print(base, rss() - base)\n"
    )
    # not from the checkout: its mnemo/ would shadow the installed, compiled one
    out = subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True,
                         cwd=path.parent)
    base, cost = out.stdout.split()
    return int(base), int(cost)


def input_file(folder: Path, mb: float) -> Path:
    path = folder / f"corpus-{mb:g}mb.jsonl"
    target = int(mb * 1e6)
    if not path.exists() or path.stat().st_size < target:
        t = time.perf_counter()
        n = build(path, target)
        print(f"built {path}: {n / 1e6:.0f} MB of JSONL in {time.perf_counter() - t:.0f} s", flush=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["tokenize", "train"])
    ap.add_argument("--mb", type=float, nargs="+", help="input sizes in MB (tokenize: 100 1000; train: 1000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tokenizer", type=Path)
    ap.add_argument("--keep", type=Path, help="build the inputs here and keep them (reused if present)")
    args = ap.parse_args()
    sizes = args.mb or ([100.0, 1000.0] if args.what == "tokenize" else [1000.0])
    folder = args.keep or Path(tempfile.mkdtemp(prefix="mnemo-peak-"))
    folder.mkdir(parents=True, exist_ok=True)
    exe = str(Path(sys.executable).parent / "mnemo")
    try:
        if args.what == "train":
            for mb in sizes:
                data = input_file(folder, mb)
                cmd = [exe, "train", str(data), "-o", str(folder / "tokenizer.bin"), "--workers", str(args.workers), "-q"]
                peak, wall, _, code = peak_of(cmd)
                verdict = "meets" if peak < 1 << 30 else "DOES NOT meet"
                print(f"train {mb:g} MB, {args.workers} workers: peak summed RSS {peak / MIB:.0f} MiB "
                      f"({verdict} the 1 GiB goal), wall {wall:.1f} s, exit {code}, "
                      f"load average {os.getloadavg()[0]:.1f}", flush=True)
            return
        tok_path = args.tokenizer
        if tok_path is None:
            from gpt2_merges import gpt2_tokenizer

            tok_path = folder / "gpt2-32768.bin"
            gpt2_tokenizer().save(tok_path)
        base, cost = tokenizer_cost(tok_path)
        processes = 1 + args.workers
        budget = 200 * MIB + processes * cost
        print(f"tokenizer {tok_path.name}: {cost / MIB:.0f} MiB in one process (Python with mnemo imported: "
              f"{base / MIB:.0f} MiB); budget 200 MiB + {processes} x {cost / MIB:.0f} MiB = {budget / MIB:.0f} MiB",
              flush=True)
        for mb in sizes:
            data = input_file(folder, mb)
            out = folder / "out.tok"
            cmd = [exe, "tokenize", "-t", str(tok_path), str(data), "-o", str(out), "--workers", str(args.workers), "-q"]
            peak, wall, _, code = peak_of(cmd)
            verdict = "meets" if peak < budget else "DOES NOT meet"
            print(f"tokenize {mb:g} MB, {args.workers} workers: peak summed RSS {peak / MIB:.0f} MiB ({verdict} "
                  f"the budget), wall {wall:.1f} s ({mb / wall:.0f} MB/s), exit {code}, "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            out.unlink(missing_ok=True)
    finally:
        if not args.keep:
            for p in folder.iterdir():
                p.unlink()
            folder.rmdir()


if __name__ == "__main__":
    main()
