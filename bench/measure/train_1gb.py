"""Train the default 32,768-id vocabulary on 1 GB: the four corpora's text (chat: message
contents) concatenated and repeated until 1 GB, as one JSONL file in a temporary folder, through
the command line (`mnemo train FILE -o OUT --workers N`).  Reports wall time and the peak of the
summed resident memory of mnemo and its workers (sampled from /proc every 0.1 s).

    .venv/bin/python bench/measure/train_1gb.py [--gb 1] [--workers 2] [--keep DIR]

Goals on a 2-core machine: issue 4, at most 30 s with peak RSS under 4 GB; issue 17, at most 15 s
with the summed peak under 1 GiB (bench/measure/peak_memory.py measures the peak alone).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def build(path: Path, target: int) -> int:
    lines: list[bytes] = []
    size = 0
    for name in ("english", "multilingual", "code", "chat"):
        with lzma.open(CORPUS / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                texts = [m["content"] for m in rec["messages"]] if "messages" in rec else [rec["text"]]
                for t in texts:
                    lines.append((json.dumps({"text": t}) + "\n").encode())
                    size += len(t.encode())
    written = 0
    with open(path, "wb") as f:
        while written < target:
            for line in lines:
                f.write(line)
                written += len(line)
                if written >= target:
                    break
    return written


def tree_rss(pid: int) -> int:
    """Summed VmRSS (bytes) of pid and all its descendants."""
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def peak_of(cmd: list[str], interval: float = 0.05) -> tuple[int, float, str, int]:
    """(peak summed RSS in bytes, wall seconds, stdout, exit status) of a command, its process
    tree sampled every `interval` seconds."""
    peak = 0
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)

    def sample() -> None:
        nonlocal peak
        while proc.poll() is None:
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(interval)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.join()
    return peak, wall, out.strip(), proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="build the input here and keep it (reused if present)")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="mnemo-1gb-"))
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "corpus.jsonl"
    target = int(args.gb * 1e9)
    if not data.exists() or data.stat().st_size < target:
        t = time.perf_counter()
        n = build(data, target)
        print(f"built {data}: {n / 1e9:.2f} GB of JSONL in {time.perf_counter() - t:.0f} s", flush=True)
    exe = str(Path(sys.executable).parent / "mnemo")
    cmd = [exe, "train", str(data), "-o", str(folder / "tokenizer.bin"), "--workers", str(args.workers), "-q"]
    peak, wall, out, code = peak_of(cmd, 0.1)
    print(out)
    print(f"1 GB bench: wall {wall:.1f} s, peak summed RSS {peak / 2**30:.2f} GiB, workers {args.workers}, "
          f"load average {os.getloadavg()[0]:.1f} (exit {code})")
    if not args.keep:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
