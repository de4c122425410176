"""The training sample of docs/eval.md's `mnemo eval` run: of each shared corpus, the documents
after its first 3 MB (`mnemo eval` reads the first 2 MB of each, so training and evaluation
text do not overlap), up to 8 MB per corpus, as one JSON Lines file; chat records become their
messages' contents joined by newlines, as `mnemo eval` reads them.

Run: python tools/eval_training_sample.py OUT.jsonl   (reads ../shared/corpus beside the repo)
"""

from __future__ import annotations

import json
import lzma
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
SKIP = 3_000_000
TAKE = 8_000_000


def main(out_path: str) -> None:
    with open(out_path, "w", encoding="utf-8") as out:
        for name in ("english", "multilingual", "code", "chat"):
            seen = taken = 0
            with lzma.open(CORPUS / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
                for line in f:
                    record = json.loads(line)
                    if "text" in record:
                        text = record["text"]
                    else:
                        text = "\n".join(m["content"] for m in record["messages"])
                    n = len(text.encode("utf-8"))
                    seen += n
                    if seen <= SKIP:
                        continue
                    out.write(json.dumps({"text": text}) + "\n")
                    taken += n
                    if taken >= TAKE:
                        break
            print(f"{name}: {taken} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
