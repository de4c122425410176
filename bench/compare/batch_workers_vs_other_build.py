"""encode_batch and encode_batch_to_numpy of two builds side by side, with two workers and with
one process, in one run that alternates the builds process by process.

    .venv/bin/python bench/compare/batch_workers_vs_other_build.py BASE_DIR [--mb 20] [--rounds 2]
        [--corpus english multilingual] [--vocab cl100k_base PATH.bin] [--flat [--passes 9]]

BASE_DIR holds an installed copy of the build before (the `mnemo` folder and the `*__mypyc*.so`
files of site-packages, copied there after `make install`); the other side is the build this
interpreter imports.  Each round runs one child process per build, corpus and vocabulary, the
two builds in turns; a child loads the vocabulary (cl100k_base from ../shared/fixtures/tiktoken,
or a tokenizer.bin), takes corpus documents (each cut to 20,000 characters) up to --mb MB,
starts the two workers with one untimed call, then times, best of 3 passes in turns:
- np2 / ls2: encode_batch_to_numpy / encode_batch with workers=2, wall time;
- np1 / ls1: the same with workers=1, the process's CPU time.
Every result is checked against the first one-process result.  It prints MB/s per child and, at
the end, each build's best per form and the ratio new / base.  Run it when nothing else runs:
two workers need the two cores.

--flat compares the flat form alone (`packing.encode_flat`, what both forms run on one process
and in each worker) in ONE process: BASE_DIR's `mnemo/packing.py` is loaded beside this
build's (plain Python around the compiled encoder, which both sides share), both sides'
results are checked equal, then each of --passes passes times both by process CPU time, the
order flipped every pass (default --mb 10 there).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
FORMS = ("np2", "ls2", "np1", "ls1")


def child(corpus: str, vocab: str, mb: float) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
    import numpy as np
    from corpus import documents, vocabulary

    docs = documents(mb, corpus, max_chars=20_000)
    size = sum(len(d.encode("utf-8")) for d in docs)
    tok = vocabulary(vocab)
    flat, offsets = tok.encode_batch_to_numpy(docs, workers=1)
    tok.encode_batch_to_numpy(docs, workers=2)  # starts the workers, gives them the tokenizer
    best = dict.fromkeys(FORMS, float("inf"))
    for _ in range(3):
        for form in FORMS:
            workers = int(form[-1])
            clock = time.perf_counter if workers > 1 else time.process_time
            t0 = clock()
            if form.startswith("np"):
                got = tok.encode_batch_to_numpy(docs, workers=workers)
                assert np.array_equal(got[0], flat) and np.array_equal(got[1], offsets), form
            else:
                lists = tok.encode_batch(docs, workers=workers)
                assert len(lists) == len(docs) and lists[-1] == flat[offsets[-2] :].tolist(), form
                del lists
            best[form] = min(best[form], clock() - t0)
    print(json.dumps({form: size / 1e6 / best[form] for form in FORMS}))


def flat(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
    import numpy as np
    from corpus import documents, vocabulary

    from mnemo import packing as new

    mb = args.mb or 10.0
    spec = importlib.util.spec_from_file_location("base_packing", args.base / "mnemo" / "packing.py")
    if spec is None or spec.loader is None:
        sys.exit(f"no mnemo/packing.py in {args.base}")
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    print(f"{mb} MB a corpus, best of {args.passes} passes, CPU time; load average {os.getloadavg()[0]:.1f}")
    for vocab in args.vocab:
        tok = vocabulary(vocab)
        allowed, disallowed = tok._resolve_specials(frozenset(), "all")
        for corpus in args.corpus:
            docs = documents(mb, corpus, max_chars=20_000)
            size = sum(len(d.encode("utf-8")) for d in docs)
            a = base.encode_flat(tok, docs, allowed, disallowed)
            b = new.encode_flat(tok, docs, allowed, disallowed)
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), "the builds give other ids"
            best = {"base": float("inf"), "new": float("inf")}
            for p in range(args.passes):
                for name, module in ([("base", base), ("new", new)] if p % 2 == 0 else [("new", new), ("base", base)]):
                    t0 = time.process_time()
                    module.encode_flat(tok, docs, allowed, disallowed)
                    best[name] = min(best[name], time.process_time() - t0)
            print(
                f"  {Path(vocab).name:14} {corpus:12} new {size / 1e6 / best['new']:6.1f} MB/s  "
                f"base {size / 1e6 / best['base']:6.1f} MB/s  new / base {best['base'] / best['new']:.3f}x",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", type=Path, help="folder with the base build's installed mnemo package")
    ap.add_argument("--mb", type=float, help="MB of each corpus (20; --flat: 10)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--flat", action="store_true", help="the flat form alone, both builds in one process")
    ap.add_argument("--passes", type=int, default=9, help="--flat: passes")
    ap.add_argument("--corpus", nargs="+", default=["english", "multilingual"])
    ap.add_argument("--vocab", nargs="+", default=["cl100k_base"])
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], float(args.child[2]))
        return
    if not (SHARED / "corpus").is_dir():
        sys.exit(f"the corpora are not at {SHARED / 'corpus'} (../shared beside the repository)")
    if args.flat:
        flat(args)
        return
    args.mb = args.mb or 20.0
    print(f"batches of {args.mb} MB, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    best: dict[tuple[str, str, str], dict[str, float]] = {}
    for r in range(args.rounds):
        for corpus in args.corpus:
            for vocab in args.vocab:
                sides = ["base", "new"] if r % 2 == 0 else ["new", "base"]
                for side in sides:
                    env = dict(os.environ)
                    if side == "base":
                        env["PYTHONPATH"] = os.pathsep.join([str(args.base.resolve()), env.get("PYTHONPATH", "")])
                    # -P: the current folder (a checkout's uncompiled mnemo/) never comes first
                    out = subprocess.run(
                        [sys.executable, "-P", __file__, "x", "--child", corpus, vocab, str(args.mb)],
                        env=env, capture_output=True, text=True, check=True,
                    ).stdout
                    figures = json.loads(out.strip().splitlines()[-1])
                    shown = "  ".join(f"{f} {figures[f]:6.1f}" for f in FORMS)
                    print(f"round {r + 1} {side:4} {corpus:12} {Path(vocab).name:14} MB/s: {shown}", flush=True)
                    key = (side, corpus, vocab)
                    best[key] = {f: max(best.get(key, {}).get(f, 0.0), figures[f]) for f in FORMS}
    print(f"\nbest MB/s, new / base (load average {os.getloadavg()[0]:.1f}):")
    for corpus in args.corpus:
        for vocab in args.vocab:
            new, base = best[("new", corpus, vocab)], best[("base", corpus, vocab)]
            cells = "  ".join(f"{f} {new[f]:.1f} / {base[f]:.1f} = {new[f] / base[f]:.2f}x" for f in FORMS)
            print(f"  {corpus:12} {Path(vocab).name:14} {cells}")


if __name__ == "__main__":
    main()
