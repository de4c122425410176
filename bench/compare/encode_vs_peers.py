"""Encoding speed against the peers that give the same ids: mnemo, fastokens, gigatok, bpe-openai,
tiktoken and HF tokenizers, each in its own process, on cl100k_base, o200k_base and mnemo's own
32,768-id vocabulary, over 5 MB of each corpus of ../shared/corpus.

    python bench/compare/encode_vs_peers.py                       # goal 1: one core, list and packed outputs
    python bench/compare/encode_vs_peers.py --threads 2           # goal 7: batches on 2 threads
    python bench/compare/encode_vs_peers.py --vocab cl100k_base --corpus english --output list --rounds 5

The peers are the optional extra `mnemo[peers]` (pip install '.[peers]'); a peer that is not
installed is skipped with a line saying so.

How it measures (one core, the default):
  * every runner (a tool and one of its methods) runs in a process of its own, pinned with
    `taskset -c 1` (--cpu), every thread pool capped at 1 (RAYON_NUM_THREADS, FASTOKENS_BPE_THREADS,
    RAYON_RS_NUM_CPUS, TOKENIZERS_PARALLELISM, OMP/MKL/OPENBLAS);
  * it loads its vocabulary and the texts, then encodes other text of the same corpus once (the
    API warmed, its caches filled with that text only), then encodes the timed texts once to
    give each document's ids (as a digest) to the parent, which compares them with the
    reference (tiktoken's encode_ordinary; HF tokenizers' for mnemo's vocabulary);
  * then the parent asks each runner in turn for one timed pass, --rounds times, the order
    rotated each round: a neighbour's burst of load hits every runner alike.  A pass's time is
    the process's CPU time; the best pass counts.  Two kinds of pass (--cache): "cold", the
    timed texts as new text -- before it the runner's caches are emptied (mnemo: clear_cache;
    its word tables, made from the merges at load, stay) or the runner is made anew (the
    peers: fastokens' and HF tokenizers' word caches, whatever gigatok keeps), and the other
    text encoded again, untimed; "warm", the same texts once more, every cache as the earlier
    passes left it.
  * MB/s are UTF-8 bytes of the timed texts per CPU second.  "mnemo / fastest" is the best mnemo
    runner of the output over the fastest peer runner of that output whose ids equal the
    reference's on every document.

Outputs: `list` is one Python list of ids per document (encode_ordinary or the tool's nearest
form: gigatok returns a numpy array per document); `packed` is ids in one buffer (mnemo's
encode_to_numpy per document and encode_batch_to_numpy, fastokens' encode_batch_flat,
gigatok's encode_batch, tiktoken's and bpe-openai's encode_to_numpy per document).

--threads 2 (goal 7): the batch runners only (mnemo encode_batch(workers=2) and
encode_batch_to_numpy(workers=2); fastokens encode_batch and encode_batch_flat with 2 threads),
pinned to cpus 0-1, timed by the wall clock (CPU time would hide the parallelism).

Files it makes (once, in --workdir): the decompressed rank files, cl100k/o200k as tokenizer.json
(mnemo's export) for HF tokenizers, and mnemo's 32,768-id vocabulary trained on text of the three
corpora that follows the timed and warm-up texts (tokenizer.bin and tokenizer.json).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import lzma
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
CORPORA = ("english", "multilingual", "code")
VOCABS = ("cl100k_base", "o200k_base", "mnemo32k")
MNEMO_PATTERN = {"cl100k_base": "cl100k", "o200k_base": "o200k"}
ONE_THREAD = {
    "RAYON_NUM_THREADS": "1",
    "RAYON_RS_NUM_CPUS": "1",
    "FASTOKENS_BPE_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
# runner name -> (the module it needs, the output it gives)
RUNNERS_1: dict[str, tuple[str, str]] = {
    "mnemo encode_ordinary": ("mnemo", "list"),
    "tiktoken encode_ordinary": ("tiktoken", "list"),
    "fastokens encode_ordinary": ("fastokens", "list"),
    "gigatok encode": ("gigatok", "list"),
    "bpe-openai encode_ordinary": ("bpe_openai", "list"),
    "tokenizers encode": ("tokenizers", "list"),
    "mnemo encode_to_numpy": ("mnemo", "packed"),
    "mnemo encode_batch_to_numpy": ("mnemo", "packed"),
    "tiktoken encode_to_numpy": ("tiktoken", "packed"),
    "fastokens encode_batch_flat": ("fastokens", "packed"),
    "gigatok encode_batch": ("gigatok", "packed"),
    "bpe-openai encode_to_numpy": ("bpe_openai", "packed"),
}
RUNNERS_2: dict[str, tuple[str, str]] = {
    "mnemo encode_batch(workers=2)": ("mnemo", "list"),
    "fastokens encode_batch (2 threads)": ("fastokens", "list"),
    "mnemo encode_batch_to_numpy(workers=2)": ("mnemo", "packed"),
    "fastokens encode_batch_flat (2 threads)": ("fastokens", "packed"),
}


# ---- data and vocabularies (parent) ----------------------------------------------------------


def read_docs(name: str, skip_bytes: int, want_bytes: int) -> list[str]:
    """Documents of corpus `name` after the first `skip_bytes` bytes of it, up to `want_bytes`."""
    docs: list[str] = []
    seen = 0
    got = 0
    with lzma.open(SHARED / "corpus" / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            size = len(text.encode("utf-8"))
            if seen < skip_bytes:
                seen += size
                continue
            docs.append(text)
            got += size
            if got >= want_bytes:
                break
    return docs


def prepare(work: Path, corpora: list[str], vocabs: list[str], mb: float, warm_mb: float, train_mb: float) -> None:
    work.mkdir(parents=True, exist_ok=True)
    timed_bytes, warm_bytes = int(mb * 1e6), int(warm_mb * 1e6)
    for name in CORPORA if "mnemo32k" in vocabs else corpora:
        timed = work / f"{name}-{mb:g}.json"
        if not timed.exists():
            docs = read_docs(name, 0, timed_bytes)
            used = sum(len(d.encode("utf-8")) for d in docs)
            warm = read_docs(name, used, warm_bytes)
            timed.write_text(json.dumps({"timed": docs, "warm": warm, "used": used + sum(len(d.encode()) for d in warm)}))
    for v in vocabs:
        if v == "mnemo32k":
            continue
        plain = work / f"{v}.tiktoken"
        if not plain.exists():
            plain.write_bytes(gzip.decompress((SHARED / "fixtures" / "tiktoken" / f"{v}.tiktoken.gz").read_bytes()))
        hf = work / f"{v}.tokenizer.json"
        if not hf.exists():
            import mnemo
            from mnemo.interop import save_hf

            save_hf(mnemo.load_tiktoken(plain, MNEMO_PATTERN[v]), hf)
        if v == "cl100k_base" and not (work / f"{v}.gigatok.v2.json").exists():
            # gigatok runs a pre-tokenizer of its own only for the spellings it knows: cl100k's
            # as the `regex` module reads it, with its last branch \s+ (the same chunks as
            # tiktoken's \s) -- not the export's, which save_hf rewrites for Oniguruma
            # (`(?>\p{N}{1,3})`, `\Z`): gigatok fails on that one ("no fast pretokenizer")
            from mnemo.patterns import compile_pattern, regex_of

            obj = json.loads(hf.read_text())
            spelled = regex_of(compile_pattern("cl100k"), "cl100k")
            assert spelled.endswith(r"|\s")
            obj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = spelled + "+"
            (work / f"{v}.gigatok.v2.json").write_text(json.dumps(obj))
    if "mnemo32k" in vocabs and not (work / "mnemo32k.bin").exists():
        import mnemo
        from mnemo.interop import save_hf

        texts: list[str] = []
        for name in CORPORA:
            used = json.loads((work / f"{name}-{mb:g}.json").read_text())["used"]
            texts += read_docs(name, used, int(train_mb * 1e6))
        print(f"training mnemo's 32,768-id vocabulary on {sum(len(t) for t in texts) / 1e6:.0f} M characters "
              "that follow the timed and warm-up texts of the three corpora...", flush=True)
        tok = mnemo.train_from_iterator(texts, vocab_size=32768)
        tok.save(work / "mnemo32k.bin")
        save_hf(tok, work / "mnemo32k.tokenizer.json")


# ---- runners (child) -----------------------------------------------------------------------------


def tiktoken_encoding(vocab: str, work: Path) -> Any:
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    from tiktoken.load import load_tiktoken_bpe

    if vocab == "mnemo32k":
        import mnemo
        from mnemo.interop import to_tiktoken

        return to_tiktoken(mnemo.Tokenizer.load(work / "mnemo32k.bin"))
    args = getattr(openai_public, vocab)  # the pattern and specials as tiktoken defines them
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda url, expected_hash=None: load_tiktoken_bpe(str(work / f"{vocab}.tiktoken"), expected_hash)
    try:
        return tiktoken.Encoding(**args())
    finally:
        openai_public.load_tiktoken_bpe = original


RESET: list[Callable[[], None]] = []  # how to empty the runner's caches, when it has a way


def make_runner(runner: str, vocab: str, work: Path) -> Callable[[list[str]], list[Any]]:
    """The runner's encode of a list of documents: one object per document (a list or an array of
    ids), or, for the flat forms, one array and its offsets split into per-document views.  A
    runner that can empty its caches in place (mnemo: clear_cache) leaves how in RESET; the
    others are made anew for a cold pass."""
    import numpy as np

    tool, _, method = runner.partition(" ")

    def split(ids: Any, offsets: Any) -> list[Any]:
        return [ids[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]

    if tool == "mnemo":
        import mnemo

        if vocab == "mnemo32k":
            tok = mnemo.Tokenizer.load(work / "mnemo32k.bin")
        else:
            tok = mnemo.load_tiktoken(work / f"{vocab}.tiktoken", MNEMO_PATTERN[vocab])
        RESET[:] = [tok._encoder.clear_cache]  # the chunk caches; the word tables made at load stay
        if method == "encode_ordinary":
            return lambda docs: [tok.encode_ordinary(d) for d in docs]
        if method == "encode_to_numpy":
            return lambda docs: [tok.encode_to_numpy(d, disallowed_special=()) for d in docs]  # as tiktoken's below
        if method == "encode_batch_to_numpy":
            return lambda docs: split(*tok.encode_batch_to_numpy(docs, workers=1))
        if method.endswith("(workers=2)"):
            from mnemo import work

            # a cold pass needs cold workers too: stop them (the warm-up text starts new ones)
            RESET[:] = [lambda: (tok._encoder.clear_cache(), work._shutdown_all())]  # type: ignore[func-returns-value]
        if method == "encode_batch(workers=2)":
            return lambda docs: tok.encode_batch(docs, workers=2)
        if method == "encode_batch_to_numpy(workers=2)":
            return lambda docs: split(*tok.encode_batch_to_numpy(docs, workers=2))
    if tool == "tiktoken":
        enc = tiktoken_encoding(vocab, work)
        if method == "encode_ordinary":
            return lambda docs: [enc.encode_ordinary(d) for d in docs]
        if method == "encode_to_numpy":
            return lambda docs: [enc.encode_to_numpy(d, disallowed_special=()) for d in docs]
    if tool == "fastokens":
        import fastokens

        if vocab == "mnemo32k":
            ft = fastokens.Tokenizer.from_file(str(work / "mnemo32k.tokenizer.json"))
        else:
            ft = fastokens.Tokenizer.from_tiktoken(str(work / f"{vocab}.tiktoken"), encoding=vocab)
        if method == "encode_ordinary":
            return lambda docs: [ft.encode_ordinary(d).ids for d in docs]
        if method.startswith("encode_batch_flat"):
            def flat(docs: list[str]) -> list[Any]:
                ids, offsets = ft.encode_batch_flat(docs)
                return split(np.frombuffer(ids, np.uint32), np.frombuffer(offsets, np.uint64).astype(np.int64))
            return flat
        if method.startswith("encode_batch"):
            return lambda docs: [e.ids for e in ft.encode_batch(docs)]
    if tool == "gigatok":
        import gigatok

        if vocab == "mnemo32k":
            gt = gigatok.Tokenizer(str(work / "mnemo32k.tokenizer.json"))
        elif vocab == "cl100k_base":
            gt = gigatok.Tokenizer(str(work / "cl100k_base.gigatok.v2.json"))
        else:  # it has no o200k pre-tokenizer: GPT-2's split (../shared/notes/peers.md)
            gt = gigatok.Tokenizer.from_tiktoken(str(work / f"{vocab}.tiktoken"))
        if method == "encode":
            return lambda docs: [gt.encode(d) for d in docs]
        if method == "encode_batch":
            def batch(docs: list[str]) -> list[Any]:
                import awkward as ak

                arr = gt.encode_batch(docs)
                return split(np.asarray(ak.flatten(arr)), np.concatenate([[0], np.cumsum(np.asarray(ak.num(arr)))]))
            return batch
    if tool == "bpe-openai":
        import bpe_openai

        if vocab == "mnemo32k":
            raise SystemExit("bpe-openai ships cl100k_base and o200k_base only")
        bpe = bpe_openai.get_encoding(vocab)
        if method == "encode_ordinary":
            return lambda docs: [bpe.encode_ordinary(d) for d in docs]
        if method == "encode_to_numpy":
            return lambda docs: [bpe.encode_to_numpy(d) for d in docs]
    if tool == "tokenizers":
        import tokenizers

        name = "mnemo32k" if vocab == "mnemo32k" else vocab
        hf = tokenizers.Tokenizer.from_file(str(work / f"{name}.tokenizer.json"))
        return lambda docs: [hf.encode(d, add_special_tokens=False).ids for d in docs]
    raise SystemExit(f"unknown runner {runner!r}")


def digest(ids: Any) -> str:
    import numpy as np

    return hashlib.blake2b(np.asarray(ids, dtype="<u4").tobytes(), digest_size=8).hexdigest()


def child(runner: str, vocab: str, corpus: str, mb: float, work: Path, wall: bool) -> None:
    """One runner's process: load, warm up, report digests, then one timed pass per request:
    "run warm" times a pass over the texts it has encoded before; "run cold" first empties its
    caches (or makes the runner anew) and encodes the other text again, untimed."""
    data = json.loads((work / f"{corpus}-{mb:g}.json").read_text())
    docs, warm = data["timed"], data["warm"]
    t0 = time.perf_counter()
    try:
        fn = make_runner(runner, vocab, work)
        load_s = time.perf_counter() - t0
        fn(warm)
        digests = [digest(ids) for ids in fn(docs)]
    except BaseException as exc:  # noqa: BLE001 -- any failure of a peer is a line of the table
        print(json.dumps({"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"}), flush=True)
        return
    print(json.dumps({"load_s": load_s, "digests": digests}), flush=True)
    clock = time.perf_counter if wall else time.process_time
    for line in sys.stdin:
        words = line.split()
        if words[:1] != ["run"]:
            break
        if words[1:] == ["cold"]:
            if RESET:
                RESET[0]()
            else:
                fn = make_runner(runner, vocab, work)
            fn(warm)
        t = clock()
        fn(docs)
        print(json.dumps({"s": clock() - t}), flush=True)


# ---- the parent ----------------------------------------------------------------------------------


def installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


class Runner:
    def __init__(self, name: str, vocab: str, corpus: str, args: argparse.Namespace) -> None:
        self.name = name
        env = {**os.environ, **(ONE_THREAD if args.threads == 1 else {})}
        if args.threads > 1:
            env.update({"RAYON_NUM_THREADS": str(args.threads), "FASTOKENS_BPE_THREADS": str(args.threads)})
        cpus = args.cpu if args.threads == 1 else ",".join(str(c) for c in range(args.threads))
        cmd = ["taskset", "-c", cpus, sys.executable, __file__, "--child", name, "--vocab", vocab, "--corpus", corpus,
               "--mb", str(args.mb), "--workdir", str(args.workdir)]
        if args.threads > 1:
            cmd.append("--wall")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.ready: dict[str, Any] = {}
        self.best: dict[str, float] = {}

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.ready = json.loads(line) if line else {"error": f"exited with {self.proc.wait()}"}

    def run(self, mode: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"run {mode}\n")
        self.proc.stdin.flush()
        s = float(json.loads(self.proc.stdout.readline())["s"])
        self.best[mode] = min(self.best.get(mode, float("inf")), s)
        return s

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def measure(vocab: str, corpus: str, output: str, args: argparse.Namespace, table: dict[str, dict[tuple[str, str], str]]) -> None:
    runners_of = RUNNERS_1 if args.threads == 1 else RUNNERS_2
    names = [r for r, (mod, out) in runners_of.items() if out == output and (not args.tools or r.split()[0] in args.tools)]
    if vocab == "mnemo32k":
        names = [r for r in names if not r.startswith("bpe-openai")]
    reference = "tokenizers encode" if vocab == "mnemo32k" else "tiktoken encode_ordinary"
    size = sum(len(d.encode("utf-8")) for d in json.loads((args.workdir / f"{corpus}-{args.mb:g}.json").read_text())["timed"])
    lines: list[str] = []
    started: list[Runner] = []
    ref_digests: list[str] | None = None
    if reference not in names:  # the reference's ids are needed even when it is not timed
        if installed(runners_of.get(reference, RUNNERS_1[reference])[0]):
            ref = Runner(reference, vocab, corpus, args)
            ref.wait_ready()
            ref.close()
            ref_digests = ref.ready.get("digests")
    for name in names:
        module = runners_of[name][0]
        if not installed(module):
            lines.append(f"  {name:42s} skipped: {module} is not installed (pip install 'mnemo[peers]')")
            continue
        r = Runner(name, vocab, corpus, args)
        r.wait_ready()  # one at a time: loading does not overlap another runner's
        if "error" in r.ready:
            lines.append(f"  {name:42s} fails: {r.ready['error']}")
            r.close()
            continue
        started.append(r)
        if name == reference:
            ref_digests = r.ready["digests"]
    same: dict[str, int] = {}
    for r in started:
        d = r.ready["digests"]
        same[r.name] = -1 if ref_digests is None else sum(a != b for a, b in zip(d, ref_digests)) + abs(len(d) - len(ref_digests))
    for k in range(args.rounds):
        order = started[k % max(len(started), 1):] + started[: k % max(len(started), 1)]
        for mode in args.cache:
            for r in order:
                r.run(mode)
    for r in started:
        r.close()
    for mode in args.cache:
        rates = {r.name: size / r.best[mode] / 1e6 for r in started}
        ok_peers = {n: v for n, v in rates.items() if not n.startswith("mnemo") and same[n] == 0}
        mnemo_best = max((v for n, v in rates.items() if n.startswith("mnemo") and same[n] == 0), default=None)
        lines.append(f"  {mode}:")
        for r in started:
            differs = same[r.name]
            note = "" if differs == 0 else (" (no reference ids)" if differs < 0 else f" ({differs} documents differ)")
            lines.append(f"    {r.name:42s} {rates[r.name]:8.1f} MB/s  load {r.ready['load_s']:5.2f} s{note}")
        ratio = ""
        if ok_peers and mnemo_best is not None:
            fastest = max(ok_peers, key=lambda n: ok_peers[n])
            ratio = f"{mnemo_best / ok_peers[fastest]:.2f}"
            lines.append(f"    mnemo / fastest same-id peer ({fastest}): {ratio}")
        cells = table.setdefault(f"{output}, {mode}", {})
        row = f"{vocab} {corpus}"
        for r in started:
            cells[(row, r.name)] = f"{rates[r.name]:.1f}" + ("" if same[r.name] == 0 else " (differs)")
        for name in names:
            cells.setdefault((row, name), "-")
        cells[(row, "mnemo / fastest")] = ratio
    print(f"\n{vocab} / {corpus} / {output} ({size / 1e6:.1f} MB, {args.rounds} rounds, "
          f"load average {os.getloadavg()[0]:.2f}):", flush=True)
    print("\n".join(lines), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=float, default=5.0, help="MB of each corpus timed (default 5)")
    p.add_argument("--warm-mb", type=float, default=0.5, help="MB of other text encoded before timing (default 0.5)")
    p.add_argument("--train-mb", type=float, default=10.0, help="MB of each corpus to train mnemo32k on (default 10)")
    p.add_argument("--rounds", type=int, default=3, help="timed passes per runner; the best counts (default 3)")
    p.add_argument("--vocab", nargs="+", default=list(VOCABS), choices=VOCABS)
    p.add_argument("--corpus", nargs="+", default=list(CORPORA), choices=CORPORA)
    p.add_argument("--output", nargs="+", default=["list", "packed"], choices=["list", "packed"])
    p.add_argument("--cache", nargs="+", default=["cold", "warm"], choices=["cold", "warm"],
                   help="cold: caches emptied (or the runner made anew) and other text encoded before each "
                        "timed pass; warm: the timed texts again (default both)")
    p.add_argument("--tools", nargs="*", help="only these tools (mnemo tiktoken fastokens gigatok bpe-openai tokenizers)")
    p.add_argument("--threads", type=int, default=1, choices=[1, 2], help="1: goal 1 (one core); 2: goal 7 (batches)")
    p.add_argument("--cpu", default="1", help="the core for --threads 1 (default 1)")
    p.add_argument("--workdir", type=Path, default=Path(f"/tmp/mnemo-peers-{os.getuid()}"))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--wall", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.vocab[0], args.corpus[0], args.mb, args.workdir, args.wall)
        return
    print(f"encode_vs_peers: {args.mb:g} MB per corpus, best of {args.rounds} rounds, "
          f"{'one core (taskset -c ' + args.cpu + '), CPU time' if args.threads == 1 else '2 threads on cpus 0-1, wall time'}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    prepare(args.workdir, args.corpus, args.vocab, args.mb, args.warm_mb, args.train_mb)
    table: dict[str, dict[tuple[str, str], str]] = {}
    for vocab in args.vocab:
        for corpus in args.corpus:
            for output in args.output:
                measure(vocab, corpus, output, args, table)
    for output, cells in table.items():
        rows = list(dict.fromkeys(r for r, _ in cells))
        cols = list(dict.fromkeys(c for _, c in cells if c != "mnemo / fastest")) + ["mnemo / fastest"]
        print(f"\n{output} caches, MB/s (\"differs\": ids differ from the reference on some documents):\n")
        print("| vocabulary / corpus | " + " | ".join(cols) + " |")
        print("| --- |" + " --- |" * len(cols))
        for row in rows:
            print(f"| {row} | " + " | ".join(cells.get((row, c), "-") for c in cols) + " |")
    print(f"\nload average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
