"""The floor of a compiled encode loop against fastokens' whole pass: the barest front-cache hit
loop mypyc makes (the chunk ends given; a chunk of one byte, and a one-id hit of the front cache,
written; anything else only counted) timed
beside fastokens' warm `encode_batch_flat` of the same documents, in one process, alternated.
Issue 27's goal 1 asks for 1.5x fastokens; if this loop alone takes most of the time that
allows, no compiled loop that also finds the chunk ends and encodes the other chunks meets it
(docs/speed.md, sixteenth session).

    python bench/compare/hit_loop_floor_vs_fastokens.py [--corpus english] [--mb 1] [--rounds 15] [--callgrind]

The loop is built here, with the mypyc of this environment, from the source below (the same key,
hash and slot as `encode_text.encode_walk`'s front-cache hit).  Its cache holds every chunk of 2
to 7 bytes of the text (a slot's last writer wins), as a warm pass finds it.  Chunk ends:
mnemo's own pre-tokenizer (`mnemo.split`, the vocabulary's pattern).  Also timed: the class masks of
the same documents (`classmask.class_masks`, the kernel the chunk ends start from).
`--callgrind`: also the loop's instructions a chunk (valgrind, the loop's own function, three
passes less one, halved).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
from corpus import SHARED, documents  # noqa: E402

PATTERN = {"cl100k_base": "cl100k", "o200k_base": "o200k"}
SLOTS = 32768  # the front cache's entries (encode_chunk.FRONT_MASK + 1)
LOOP = '''
from __future__ import annotations
from typing import Final
from librt.strings import BytesWriter, read_i64_le, write_i16_le
from librt.vecs import vec
from mypy_extensions import i16, i64

M56: Final = 0xFFFFFFFFFFFFFF
SMALL_MUL: Final = 0x9E3779B97F4A7C1
MASK: Final = %d


def hits(data: bytes, ends: vec[i64], front: vec[i64], dst: BytesWriter) -> i64:
    pos: i64 = 0
    n: i64 = len(ends)
    dlen: i64 = len(data)
    i: i64 = 0
    other: i64 = 0
    while i < n:
        e: i64 = ends[i]
        ln: i64 = e - pos
        if ln == 1:
            write_i16_le(dst, i16(data[pos]))
        elif ln <= 7 and pos + 8 <= dlen:
            key: i64 = (read_i64_le(data, pos) & (M56 >> ((7 - ln) << 3))) | (ln << 56)
            fat: i64 = (((key * SMALL_MUL) >> 40) & MASK) << 1
            if front[fat] == key:
                write_i16_le(dst, i16(front[fat + 1]))
            else:
                other += 1
        else:
            other += 1
        pos = e
        i += 1
    return other
''' % (SLOTS - 1)


def build(folder: Path) -> None:
    (folder / "floorloop.py").write_text(LOOP)
    run = subprocess.run([sys.executable, "-m", "mypyc", "floorloop.py"], cwd=folder, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")


def inputs(folder: Path, corpus: str, mb: float, vocab: str) -> tuple[bytes, Any, Any, list[str]]:
    """The text, its chunk ends and the filled front cache (as vecs), and the documents."""
    import mnemo
    from librt.vecs import vec
    from mypy_extensions import i64

    docs = documents(mb, corpus)
    data = b"".join(d.encode("utf-8") for d in docs)
    ends: list[int] = []
    at = 0
    for d in docs:
        for chunk in mnemo.split(d.encode("utf-8"), PATTERN[vocab]):
            at += len(chunk)
            ends.append(at)
    front = [0] * (2 * SLOTS)
    pos = 0
    for e in ends:
        n = e - pos
        if 2 <= n <= 7 and pos + 8 <= len(data):
            key = (int.from_bytes(data[pos : pos + 8], "little") & (0xFFFFFFFFFFFFFF >> ((7 - n) * 8))) | (n << 56)
            fat = ((((key * 0x9E3779B97F4A7C1) % 2**64) >> 40) & (SLOTS - 1)) << 1
            front[fat] = key
            front[fat + 1] = 1000
        pos = e
    return data, vec[i64](ends), vec[i64](front), docs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", default="cl100k_base", choices=sorted(PATTERN))
    ap.add_argument("--corpus", default="english")
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # folder, passes (under valgrind)
    args = ap.parse_args()
    if args.child:
        folder, passes = Path(args.child[0]), int(args.child[1])
        sys.path.insert(0, str(folder))
        import floorloop
        from librt.strings import BytesWriter

        data, ends, front, _ = inputs(folder, args.corpus, args.mb, args.vocab)
        for _ in range(passes):
            floorloop.hits(data, ends, front, BytesWriter())
        return
    try:
        import fastokens
    except ImportError:
        raise SystemExit("fastokens is not installed (pip install 'mnemo[peers]')") from None
    from librt.strings import BytesWriter

    folder = Path(tempfile.mkdtemp(prefix="mnemo-floor-"))
    build(folder)
    sys.path.insert(0, str(folder))
    import floorloop

    data, ends, front, docs = inputs(folder, args.corpus, args.mb, args.vocab)
    plain = folder / f"{args.vocab}.tiktoken"
    plain.write_bytes(gzip.decompress((SHARED / "fixtures" / "tiktoken" / f"{args.vocab}.tiktoken.gz").read_bytes()))
    ft = fastokens.Tokenizer.from_tiktoken(str(plain), encoding=args.vocab)
    ft.encode_batch_flat(docs)  # warm: its word cache filled
    other = floorloop.hits(data, ends, front, BytesWriter())
    from mnemo.classmask import _gpt_table, class_masks

    table = _gpt_table()
    bdocs = [d.encode("utf-8") for d in docs]
    loop_s = ft_s = masks_s = float("inf")
    for _ in range(args.rounds):
        c = time.process_time()
        floorloop.hits(data, ends, front, BytesWriter())
        loop_s = min(loop_s, time.process_time() - c)
        c = time.process_time()
        for b in bdocs:
            class_masks(b, table)
        masks_s = min(masks_s, time.process_time() - c)
        c = time.process_time()
        ft.encode_batch_flat(docs)
        ft_s = min(ft_s, time.process_time() - c)
    mb = len(data) / 1e6
    budget = ft_s / 1.5
    print(f"hit_loop_floor_vs_fastokens: {args.vocab}, {args.corpus}, {len(data):,} bytes, {len(ends):,} chunks, "
          f"{len(ends) - other:,} answered by the loop ({(len(ends) - other) / len(ends):.0%}); CPU time, best of "
          f"{args.rounds}, alternated; load average {os.getloadavg()[0]:.2f}")
    print(f"  the bare hit loop:            {loop_s / mb * 1e3:6.3f} ms a MB")
    print(f"  fastokens, warm, flat:        {ft_s / mb * 1e3:6.3f} ms a MB (its whole pass)")
    print(f"  1.5x fastokens allows:        {budget / mb * 1e3:6.3f} ms a MB for mnemo's whole pass")
    print(f"  the loop alone takes {loop_s / budget:.0%} of it")
    print(f"  the class masks (the AVX2 kernel, per document): {masks_s / mb * 1e3:6.3f} ms a MB; "
          f"with the loop, {(loop_s + masks_s) / budget:.0%} of it")
    if args.callgrind and shutil.which("valgrind"):
        totals = []
        for passes in (1, 3):
            out = folder / f"cg{passes}.out"
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--toggle-collect=CPyDef_hits",
                            sys.executable, "-P", __file__, "--corpus", args.corpus, "--mb", str(args.mb), "--vocab",
                            args.vocab, "--child", str(folder), str(passes)], check=True, capture_output=True)
            totals.append(int(next(ln for ln in out.read_text().splitlines() if ln.startswith("summary:")).split()[1]))
        per_pass = (totals[1] - totals[0]) / 2
        print(f"  the loop's instructions: {per_pass / 1e6:.2f} M a pass, {per_pass / len(ends):.0f} a chunk")
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
