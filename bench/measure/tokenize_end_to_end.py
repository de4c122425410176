"""`mnemo tokenize` end to end with all cores: reading a plain JSONL file of the first --mb MB of
the English corpus, encoding in worker processes, writing the .tok file.  Prints the command's
own summary (documents, tokens, MB/s including reading and writing, bytes per token).

    .venv/bin/python bench/measure/tokenize_end_to_end.py --tokenizer tokenizer.bin [--mb 100] [--workers 2]

Without --tokenizer it first trains the default 32,768-id vocabulary on the same text.
Goal (issue 5): at least 50 MB/s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "english.jsonl.xz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", type=Path)
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    exe = str(Path(sys.executable).parent / "mnemo")
    with tempfile.TemporaryDirectory(prefix="mnemo-tokenize-") as tmp:
        data = Path(tmp) / "english.jsonl"
        size = 0
        with lzma.open(CORPUS, "rt", encoding="utf-8") as f, open(data, "w", encoding="utf-8") as out:
            for line in f:
                size += len(json.loads(line)["text"].encode("utf-8"))
                out.write(line)
                if size >= args.mb * 1e6:
                    break
        tok = args.tokenizer
        if tok is None:
            tok = Path(tmp) / "tokenizer.bin"
            subprocess.run([exe, "train", str(data), "-o", str(tok), "-q"], check=True)
        result = subprocess.run(
            [exe, "tokenize", "-t", str(tok), str(data), "-o", str(Path(tmp) / "out.tok"), "--workers", str(args.workers), "-q"],
            check=True, capture_output=True, text=True,
        )
        print(result.stdout.strip())
        print(f"(workers {args.workers}, load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
