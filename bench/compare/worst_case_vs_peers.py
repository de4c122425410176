"""The worst case is linear (issue 17, goal 3): encode_ordinary on 1 MB and 10 MB of inputs that
make one enormous chunk or defeat the caches, side by side with tiktoken and bpe-openai.

    .venv/bin/python bench/compare/worst_case_vs_peers.py [--sizes 1 10] [--peer-sizes 0.02 0.18] [--cap 20]
                                               [--only a,-,...] [--vocab cl100k_base|gpt2]

Inputs (each a str whose UTF-8 form has the stated size):
- `a`: one letter repeated (one \\p{L}+ chunk of the whole text);
- `-`, `^`: one punctuation character repeated (one ` ?[^\\s\\p{L}\\p{N}]++` chunk; tiktoken has
  overflowed its stack on a million `^`);
- `spaces`: one chunk of white space;
- `CJK`: 中 repeated (one letter chunk of 3-byte characters);
- `random`: random bytes.  A text API cannot take them as they are, so they are decoded as
  latin-1: every byte becomes the code point of the same number (U+0000-U+00FF), which every tool
  accepts as a str, and whose UTF-8 form is the input size (bytes >= 0x80 take two bytes in UTF-8).
  This exercises the pre-tokenizer on a mix of every class (letters, digits, controls, white
  space, punctuation) and the encoder on tokens a vocabulary rarely merges.  mnemo also takes raw
  bytes (`Tokenizer.encode_bytes`, invalid UTF-8 allowed); that is the extra row `random (raw)`,
  mnemo only;
- `base64`: base64 of random bytes, one line with no newline (the standard alphabet).

Goal: for mnemo, t(10 MB) / t(1 MB) at most 12 and at least 20 MB/s at both sizes.

`--core`: time only the compiled pre-tokenizer and encoder writing packed ids
(encode_text.encode_range_packed on the UTF-8 bytes), without the str's conversion, the list of
ints and the public-id map: where runs of one character are encoded at hundreds of MB/s, that
list (1.25 M ints for 10 MB of `a`, most of them new int objects) is most of the time at 10 MB.

mnemo runs in this process, with the same vocabulary as the peers: cl100k_base from
../shared/fixtures/tiktoken (`--vocab gpt2`: GPT-2's first 32,496 merges, 32,768 ids, mnemo only).
Each mnemo figure is the best of --repeat runs, its chunk cache emptied before each.  Times are
process CPU time (on a shared machine, wall time mostly measures the neighbours), which for
one thread is the time the work took on one core.
The peers run in child processes, one per (tool, input), at --peer-sizes (default 0.02 and 0.18
MB: bpe-openai refuses a text of 1,000,000 characters or more or of more than 200,000 tokens,
which 0.9 MB of base64 or random text exceeds, and tiktoken is quadratic on long chunks), under
a time cap of --cap seconds per child: a child over the cap is killed and reported as "> cap",
one that dies (a stack overflow) as "crashed", a refusal as "refused".  Their ratio is
t(0.18 MB)/t(0.02 MB), nine times the text: linear is 9, quadratic 81.  Single runs, CPU time of the encode call;
at these sizes their MB/s are not comparable with mnemo's at 1 and 10 MB, their ratios are.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
MB = 1_000_000
KINDS = ("a", "-", "spaces", "^", "CJK", "random", "base64")


def make(kind: str, size: int, seed: int = 17) -> str:
    """A text of `kind` whose UTF-8 form has `size` bytes (one less when a 2- or 3-byte character
    would not fit)."""
    if kind == "a":
        return "a" * size
    if kind == "-":
        return "-" * size
    if kind == "^":
        return "^" * size
    if kind == "spaces":
        return " " * size
    if kind == "CJK":
        return "中" * (size // 3)
    rng = random.Random(seed)
    if kind == "base64":
        return base64.b64encode(rng.randbytes(size * 3 // 4 + 3)).decode("ascii")[:size]
    if kind == "random":
        # latin-1 text: about 1.5 UTF-8 bytes a character; trim to `size` UTF-8 bytes
        text = rng.randbytes(size).decode("latin-1")
        utf8 = text.encode("utf-8")[:size]
        return utf8.decode("utf-8", errors="ignore")
    raise ValueError(kind)


def random_raw(size: int, seed: int = 17) -> bytes:
    return random.Random(seed).randbytes(size)


# ---- peers, in child processes ----------------------------------------------------------------

CHILD = r"""
import sys, time, json
sys.path.insert(0, {bench!r})
from worst_case_vs_peers import make, peer_encoder
tool, kind, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
enc = peer_encoder(tool, {vocab!r}, {tmp!r})
for size in sizes:
    text = make(kind, size)
    t0 = time.process_time()
    enc(text)
    print(json.dumps([size, time.process_time() - t0]), flush=True)
"""


def peer_encoder(tool: str, vocab: str, tmp: str) -> Callable[[str], object]:
    if tool == "tiktoken":
        import tiktoken
        import tiktoken_ext.openai_public as openai_public
        from tiktoken.load import load_tiktoken_bpe

        plain = Path(tmp) / f"{vocab}.tiktoken"
        if not plain.exists():
            plain.write_bytes(gzip.decompress((SHARED / "fixtures" / "tiktoken" / f"{vocab}.tiktoken.gz").read_bytes()))
        os.environ["TIKTOKEN_CACHE_DIR"] = str(Path(tmp) / "cache")
        openai_public.load_tiktoken_bpe = lambda url, expected_hash=None: load_tiktoken_bpe(str(plain), expected_hash)
        enc = tiktoken.Encoding(**getattr(openai_public, vocab)())
        return enc.encode_ordinary
    if tool == "bpe-openai":
        import bpe_openai

        return bpe_openai.get_encoding(vocab).encode_ordinary  # type: ignore[no-any-return]
    raise ValueError(tool)


def run_peer(tool: str, kind: str, sizes: list[int], vocab: str, tmp: str, cap: float) -> dict[int, str | float]:
    """Seconds per size, or a reason ("> cap", "crashed", "refused") when the child did not finish."""
    code = CHILD.format(bench=str(Path(__file__).resolve().parent), vocab=vocab, tmp=tmp)
    # -P: the checkout's mnemo/ (the current folder) does not shadow the installed, compiled one
    proc = subprocess.Popen([sys.executable, "-P", "-c", code, tool, kind, *map(str, sizes)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        got = {int(json.loads(line)[0]): float(json.loads(line)[1]) for line in out.splitlines() if line}
        return {s: got.get(s, f"> {cap:g} s") for s in sizes}
    got = {int(json.loads(line)[0]): float(json.loads(line)[1]) for line in out.splitlines() if line}
    if proc.returncode != 0:
        last = (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        reason = "refused" if "Error" in last and proc.returncode == 1 else f"crashed ({last[:40]})"
        return {s: got.get(s, reason) for s in sizes}
    return {s: got[s] for s in sizes}


def available(tool: str) -> bool:
    module = {"tiktoken": "tiktoken", "bpe-openai": "bpe_openai"}[tool]
    return subprocess.run([sys.executable, "-P", "-c", f"import {module}"], capture_output=True).returncode == 0


# ---- mnemo, in this process -------------------------------------------------------------------


def mnemo_tokenizer(vocab: str):  # type: ignore[no-untyped-def]
    import mnemo

    if vocab == "gpt2":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # bench/lib: shared helpers
        from gpt2_merges import gpt2_tokenizer

        return gpt2_tokenizer()
    return mnemo.load_tiktoken(SHARED / "fixtures" / "tiktoken" / f"{vocab}.tiktoken.gz", vocab)


def best_of(repeat: int, fn: Callable[[], object], before: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        before()
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def fmt(size: int, t: str | float) -> str:
    return f"{size / MB / t:8.1f}" if isinstance(t, float) else f"{t:>8}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=float, nargs=2, default=[1.0, 10.0], metavar=("SMALL", "LARGE"), help="MB")
    ap.add_argument("--peer-sizes", type=float, nargs=2, default=[0.02, 0.18], metavar=("SMALL", "LARGE"), help="MB")
    ap.add_argument("--cap", type=float, default=20.0, help="seconds a peer child may take for one input")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help="comma-separated inputs (default all)")
    ap.add_argument("--vocab", default="cl100k_base", choices=["cl100k_base", "o200k_base", "gpt2"])
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--core", action="store_true", help="time the compiled encoder alone (packed ids, no list)")
    args = ap.parse_args()
    kinds = args.only.split(",") if args.only else [*KINDS, "random (raw)"]
    small, large = (int(s * MB) for s in args.sizes)
    psmall, plarge = (int(s * MB) for s in args.peer_sizes)
    tok = mnemo_tokenizer(args.vocab)
    clear = tok._encoder.clear_cache
    if args.core:
        from librt.strings import BytesWriter

        from mnemo.encode_text import encode_range_packed

        enc, pid = tok._encoder, tok._pattern_id

        def core(data: bytes) -> None:
            encode_range_packed(enc, data, 0, len(data), pid, BytesWriter())
    peers = [] if args.no_peers or args.vocab == "gpt2" else [p for p in ("tiktoken", "bpe-openai") if available(p)]
    print(f"vocabulary {args.vocab}; {'compiled encoder alone (--core), ' if args.core else ''}mnemo at {small / MB:g} and {large / MB:g} MB (best of {args.repeat}); "
          f"peers {', '.join(peers) or 'none'} at {psmall / MB:g} and {plarge / MB:g} MB (one run, cap {args.cap:g} s "
          f"each); MB/s by process CPU time; load average {os.getloadavg()[0]:.1f}")
    head = f"{'input':<13} | {'mnemo MB/s':>17} {'ratio':>6} {'goal':>5}"
    for p in peers:
        head += f" | {p + ' MB/s':>17} {'ratio':>6}"
    print(head)
    print(f"{'':<13} | {f'{small / MB:g} MB':>8} {f'{large / MB:g} MB':>8} {'t10/t1':>6} {'':>5}"
          + "".join(f" | {f'{psmall / MB:g} MB':>8} {f'{plarge / MB:g} MB':>8} {'':>6}" for _ in peers))
    met = True
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            times: dict[int, float] = {}
            for size in (small, large):
                if args.core:
                    data = random_raw(size) if kind == "random (raw)" else make(kind, size).encode("utf-8")
                    times[size] = best_of(args.repeat, lambda: core(data), clear)
                elif kind == "random (raw)":
                    raw = random_raw(size)
                    times[size] = best_of(args.repeat, lambda: tok.encode_bytes(raw), clear)
                else:
                    text = make(kind, size)
                    times[size] = best_of(args.repeat, lambda: tok.encode_ordinary(text), clear)
                    del text
            ratio = times[large] / times[small]
            ok = ratio <= 12 and min(small / times[small], large / times[large]) >= 20 * MB
            met = met and ok
            line = f"{kind:<13} | {fmt(small, times[small])} {fmt(large, times[large])} {ratio:6.1f} {'met' if ok else 'NOT':>5}"
            if kind != "random (raw)":
                for p in peers:
                    pt = run_peer(p, kind, [psmall, plarge], args.vocab, tmp, args.cap)
                    a, b = pt[psmall], pt[plarge]
                    pr = f"{b / a:6.1f}" if isinstance(a, float) and isinstance(b, float) else f"{'-':>6}"
                    line += f" | {fmt(psmall, a)} {fmt(plarge, b)} {pr}"
            print(line, flush=True)
    print(f"goal (every input at most 12x and at least 20 MB/s): {'met' if met else 'NOT met'}; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
