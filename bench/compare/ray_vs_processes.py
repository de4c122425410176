"""What Ray costs: the same input with local processes and on a Ray cluster, and how the count
tables' combine grows with the number of tasks.  Numbers for docs/scale.md and docs/ray.md.

    .venv/bin/python bench/compare/ray_vs_processes.py ratio  [--mb 100] [--rounds 3]
    .venv/bin/python bench/compare/ray_vs_processes.py tables [--mb 100] [--tasks 8,16,32,64]
    .venv/bin/python bench/compare/ray_vs_processes.py rates  [--mb 100]

With no --address, the bench makes a loopback-only network namespace (and a PID namespace, so
that everything it started ends with it), starts a head and one more node of 1 CPU each there --
two CPUs, as many as the local run's two worker processes -- and measures against that running
cluster (../shared/notes/ray-on-loopback.md).  With --address it uses your cluster.

- ratio: counting (the phase that runs on the nodes; the merge loop is the driver's either way)
  and tokenizing, each timed `--rounds` times alternately local / Ray after one warm-up run of
  each; prints the medians and Ray / local.
- tables: counting on Ray with 8, 16, 32, 64 tasks, each in a fresh driver process: the
  driver's peak RSS (ru_maxrss) beside its RSS once connected, the tree's depth, the time from
  the last count table to the total on the driver, and the adding-up time of every combine task.
  `--mb 1000` is the closing note's "64 tables of 1 GB of text".
- rates: per-core counting and encoding rates, and distinct words against bytes (for the
  FineWeb-scale estimate in docs/scale.md).

Not a pytest-benchmark suite (no function here is named bench_*): a cluster run is minutes.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
WORK = Path(os.environ.get("MNEMO_BENCH_DIR", "/tmp/mnemo-bench-ray"))
PORT = 6389
INNER_ENV = "MNEMO_BENCH_RAY_INNER"


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def input_file(mb: int) -> Path:
    """`mb` MB of JSONL: English, multilingual and code records, repeated past their 270 MB
    (repeats add bytes, not distinct words: said where it matters)."""
    path = WORK / f"input-{mb}mb.jsonl"
    if path.is_file():
        return path
    WORK.mkdir(parents=True, exist_ok=True)
    want = mb * 1_000_000
    tmp = path.with_suffix(".part")
    written = 0
    with open(tmp, "wb") as out:
        while written < want:
            for name in ("english", "multilingual", "code"):
                with lzma.open(CORPUS / f"{name}.jsonl.xz", "rb") as f:
                    for line in f:
                        out.write(line)
                        written += len(line)
                        if written >= want:
                            break
                if written >= want:
                    break
    tmp.rename(path)
    return path


def tokenizer_file() -> Path:
    import mnemo

    path = WORK / "tokenizer.bin"
    if not path.is_file():
        mnemo.train(input_file(20), vocab_size=32768, workers=2).save(path)
    return path


# ---- the cluster ---------------------------------------------------------------------------------


def ensure_cluster(args: argparse.Namespace) -> None:
    """Re-run this command inside a fresh loopback-only namespace with a 2-node cluster, unless
    an address was given or this is that run."""
    if args.address or os.environ.get(INNER_ENV):
        return
    ray = Path(sys.executable).with_name("ray")
    start = (
        f"ip link set lo up && export RAY_ENABLE_USAGE_STATS=0 && "
        f"{ray} start --head --port={PORT} --node-ip-address=127.0.0.1 --num-cpus=1 --include-dashboard=false "
        f"--disable-usage-stats --object-store-memory={2 << 30} >/dev/null && "
        f"{ray} start --address=127.0.0.1:{PORT} --num-cpus=1 --object-store-memory={2 << 30} >/dev/null && "
        f"{sys.executable} {Path(__file__).resolve()} {' '.join(sys.argv[1:])} --address 127.0.0.1:{PORT}"
    )
    env = {**os.environ, INNER_ENV: "1"}
    sys.exit(subprocess.call(["unshare", "--net", "--pid", "--fork", "--mount-proc", "sh", "-c", start], env=env))


def connect(address: str) -> None:
    import ray

    ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    deadline = time.monotonic() + 60
    while sum(1 for n in ray.nodes() if n.get("Alive")) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)


# ---- ratio ---------------------------------------------------------------------------------------


def cmd_ratio(args: argparse.Namespace) -> None:
    import mnemo
    from mnemo.tokenizing import tokenize_files
    from mnemo.training import _count_packed
    from mnemo.work_ray import RayOptions

    path = input_file(args.mb)
    tok = mnemo.Tokenizer.load(tokenizer_file())
    connect(args.address)
    # shards of 4 MB: the size of a local run's pieces of work (tokenizing.TASK_BYTES), so that both
    # spread 100 MB as evenly over the two CPUs (7 shards of 16 MB on 2 CPUs idle one CPU for a
    # quarter of the run)
    opts = RayOptions(address=args.address, shard_bytes=4 << 20)
    out = WORK / "out"

    def local_count() -> float:
        t = time.perf_counter()
        _count_packed([path], pattern="mnemonic", special_tokens=[], max_chunk_bytes=256, workers=2, text_field="text", progress=None)
        return time.perf_counter() - t

    def ray_count() -> float:
        t = time.perf_counter()
        _count_packed([path], pattern="mnemonic", special_tokens=[], max_chunk_bytes=256, workers=None, text_field="text", progress=None, ray=opts)
        return time.perf_counter() - t

    def local_tokenize() -> float:
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        tokenize_files([path], tok, WORK / "out.tok", workers=2)
        return time.perf_counter() - t

    def ray_tokenize() -> float:
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        tokenize_files([path], tok, out, ray=opts)
        return time.perf_counter() - t

    print(f"input {path.name}: {path.stat().st_size / 1e6:.0f} MB; local: 2 worker processes; Ray: 2 nodes x 1 CPU "
          f"({args.address}); load average {os.getloadavg()[0]:.1f}", flush=True)
    for phase, local, on_ray in (("count", local_count, ray_count), ("tokenize", local_tokenize, ray_tokenize)):
        local(), on_ray()  # warm-up: page cache, Ray's worker processes
        lt, rt = [], []
        for _ in range(args.rounds):
            lt.append(local())
            rt.append(on_ray())
        lm, rm = statistics.median(lt), statistics.median(rt)
        print(f"{phase:8}  local {lm:6.2f} s  ray {rm:6.2f} s  ray/local {rm / lm:.2f}  "
              f"(rounds: local {', '.join(f'{x:.2f}' for x in lt)}; ray {', '.join(f'{x:.2f}' for x in rt)})", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


# ---- tables --------------------------------------------------------------------------------------


def cmd_tables(args: argparse.Namespace) -> None:
    path = input_file(args.mb)
    print(f"input {path.name}: {path.stat().st_size / 1e6:.0f} MB; cluster {args.address}; fan-in 4; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    print("tasks  depth combines  count s   tail s  combine s  words       table MB  driver RSS connected / peak MiB")
    for n in [int(x) for x in args.tasks.split(",")]:
        # a fresh driver per row: ru_maxrss is the peak of the process's whole life
        r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "tables-one", "--address", args.address, "--mb", str(args.mb), "--tasks", str(n)],
                           capture_output=True, text=True, env={**os.environ, INNER_ENV: "1"})
        if r.returncode:
            print(r.stderr[-3000:])
            sys.exit(1)
        row = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{row['tasks']:5}  {row['depth']:5} {row['combines']:8}  {row['map_s']:7.2f}  {row['tail_s']:7.2f}  "
              f"{row['combine_s']:9.2f}  {row['words']:10,}  {row['table_mb']:8.1f}  {row['rss_connected']:.0f} / {row['peak']:.0f}", flush=True)


def cmd_tables_one(args: argparse.Namespace) -> None:
    from functools import partial

    import ray

    from mnemo.patterns import compile_pattern, key_of
    from mnemo.training import CountSettings, CountSum, count_task
    from mnemo.work import map_combine
    from mnemo.work_ray import RayOptions, plan_count_tasks, ray_executor

    path = input_file(args.mb)
    connect(args.address)
    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    rss_connected = rss_mib()
    pid = key_of(compile_pattern("mnemonic"))  # the pattern as it travels to workers
    opts = RayOptions(address=args.address, tasks_per_node=max(1, int(args.tasks) // nodes))
    with ray_executor(opts) as executor:
        total = map_combine(plan_count_tasks([path], opts, executor, []), partial(count_task, CountSettings(pid, 256, (), "text")),
                            partial(CountSum, pid, 256), executor=executor)
        tree = executor.tree
    print(json.dumps({"tasks": tree.n_tasks, "depth": tree.depth, "combines": tree.n_combines, "map_s": tree.map_seconds,
                      "tail_s": tree.tail_seconds, "combine_s": tree.combine_seconds, "words": len(total.meta) // 16,
                      "table_mb": (len(total.blob) + len(total.meta)) / 1e6, "rss_connected": rss_connected, "peak": peak_mib()}))


# ---- rates ---------------------------------------------------------------------------------------


def cmd_rates(args: argparse.Namespace) -> None:
    """One core: counting MB/s, encoding MB/s and bytes/token; distinct words at growing sizes.
    Rates per CPU second (this process's CPU time: workers=1 runs in this process) beside wall
    time: on a shared machine the wall rate says as much about the other jobs as about mnemo."""
    import mnemo
    from mnemo.tokenizing import tokenize_files
    from mnemo.training import count_words

    tok = mnemo.Tokenizer.load(tokenizer_file())
    print(f"one core, load average {os.getloadavg()[0]:.1f}")
    sizes = [m for m in (12, 25, 50, 100, 200, 270, 500, 1000) if m <= args.mb] or [args.mb]
    for mb in sizes:
        path = input_file(mb)
        t, c = time.perf_counter(), time.process_time()
        words, st = count_words(path, workers=1)
        secs, cpu = time.perf_counter() - t, time.process_time() - c
        table = sum(len(w) + 16 for w in words)
        print(f"count  {mb:4} MB: {st.n_bytes / 1e6 / cpu:6.1f} MB per CPU s ({st.n_bytes / 1e6 / secs:5.1f} MB/s wall), "
              f"{len(words):>10,} distinct words, packed table {table / 1e6:6.1f} MB", flush=True)
    path = input_file(100)
    t, c = time.perf_counter(), time.process_time()
    st2 = tokenize_files([path], tok, WORK / "rate.tok", workers=1)
    secs, cpu = time.perf_counter() - t, time.process_time() - c
    print(f"encode 100 MB: {st2.n_bytes / 1e6 / cpu:6.1f} MB per CPU s ({st2.n_bytes / 1e6 / secs:5.1f} MB/s wall), "
          f"{st2.bytes_per_token:.2f} bytes/token ({tok.n_vocab} ids)", flush=True)


def cmd_scale(args: argparse.Namespace) -> None:
    """The FineWeb-scale estimate of docs/scale.md, from the rates `rates` printed (arguments)."""
    import math

    text = args.tb * 1e12
    cores = args.nodes * args.cores
    print(f"{args.tb:.0f} TB of text, {args.nodes} nodes x {args.cores} cores = {cores} cores; per core: counting "
          f"{args.count_rate} MB/s, encoding {args.encode_rate} MB/s, {args.bytes_per_token} bytes/token")

    def words(n_bytes: float) -> float:  # Heaps' law through the measured point
        return args.heaps_words * (n_bytes / (args.heaps_mb * 1e6)) ** args.heaps_beta

    # counting: mnemo's default plan, 16 tasks per CPU
    tasks = 16 * cores
    task_bytes = text / tasks
    depth = math.ceil(math.log(tasks, 4))
    table = lambda n: words(n) * args.bytes_per_word  # noqa: E731
    traffic = sum((tasks / 4**lv) * table(task_bytes * 4**lv) for lv in range(depth))
    total_words = words(text)
    print(f"count:    {text / 1e6 / args.count_rate / cores / 60:6.1f} min of counting; {tasks:,} tasks of "
          f"{task_bytes / 1e9:.2f} GB, {words(task_bytes) / 1e6:.1f} M distinct words each ({table(task_bytes) / 1e6:.0f} MB table); "
          f"tree depth {depth}; object-store traffic {traffic / 1e12:.1f} TB in all")
    print(f"          distinct words in all {total_words / 1e9:.2f} G: the final packed table {table(text) / 1e9:.0f} GB "
          f"(the root combine task and the driver each hold it; the merge loop's word array adds "
          f"{total_words * args.array_bytes_per_word / 1e9:.0f} GB on the driver)")
    for shard_mb in (64, 1024):
        shards = text / (shard_mb * 1e6)
        print(f"tokenize: {text / 1e6 / args.encode_rate / cores / 60:6.1f} min of encoding; --shard-mb {shard_mb}: "
              f"{shards:,.0f} shards of {shard_mb * 1e6 / args.bytes_per_token * 2 / 1e6:.0f} MB of tokens, manifest "
              f"~{shards * 250 / 1e6:.0f} MB; object store: tokenizer.bin x {args.nodes} nodes "
              f"({args.nodes * args.tokenizer_kb / 1e3:.0f} MB) + ~100 B per shard")
    io = text + text / args.bytes_per_token * 2
    secs = text / 1e6 / args.encode_rate / cores
    print(f"          shared filesystem: {text / 1e12:.0f} TB read + {text / args.bytes_per_token * 2 / 1e12:.0f} TB written = "
          f"{io / 1e12:.0f} TB, {io / secs / 1e9:.0f} GB/s to keep the cores busy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["ratio", "tables", "tables-one", "rates", "scale"])
    parser.add_argument("--address", default=None, help="a running cluster (default: start one in a namespace)")
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", default="8,16,32,64")
    scale = parser.add_argument_group("scale: the measured figures (ray_vs_processes.py rates) and the cluster")
    scale.add_argument("--tb", type=float, default=60.0)
    scale.add_argument("--nodes", type=int, default=100)
    scale.add_argument("--cores", type=int, default=32)
    scale.add_argument("--count-rate", type=float, default=42.8, help="MB per CPU second")
    scale.add_argument("--encode-rate", type=float, default=42.6, help="MB per CPU second")
    scale.add_argument("--bytes-per-token", type=float, default=4.04)
    scale.add_argument("--heaps-mb", type=float, default=100.0)
    scale.add_argument("--heaps-words", type=float, default=354_276)
    scale.add_argument("--heaps-beta", type=float, default=0.58)
    scale.add_argument("--bytes-per-word", type=float, default=24.3, help="packed table bytes per distinct word")
    scale.add_argument("--array-bytes-per-word", type=float, default=26.6,
                       help="merge loop: 2 bytes per byte + separator, and its count")
    scale.add_argument("--tokenizer-kb", type=float, default=390.0)
    args = parser.parse_args()
    # Ray puts the driver's working folder on its workers' import path: from the checkout, the
    # workers would import its uncompiled mnemo/ instead of the installed one.
    WORK.mkdir(parents=True, exist_ok=True)
    os.chdir(WORK)
    if args.what == "rates":
        cmd_rates(args)
        return
    if args.what == "scale":
        cmd_scale(args)
        return
    ensure_cluster(args)
    {"ratio": cmd_ratio, "tables": cmd_tables, "tables-one": cmd_tables_one}[args.what](args)


if __name__ == "__main__":
    main()
