"""Starting and stopping the nodes of the test cluster (imported by conftest.py and ray_cases.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: Set by tests/test_ray.py in the namespace it made; outside one, these tests refuse to start Ray.
NAMESPACE_ENV = "MNEMO_RAY_NAMESPACE"
PORT = 6399
ADDRESS = f"127.0.0.1:{PORT}"
#: Each node's object store (Ray's default is 30 % of the memory, per node).
OBJECT_STORE = str(150 << 20)
RAY = str(Path(sys.executable).with_name("ray"))


def ray_env() -> dict[str, str]:
    env = dict(os.environ)
    env["RAY_ENABLE_USAGE_STATS"] = "0"
    # Declare a node dead ~1.5 s after its raylet stops answering (default ~30 s), so that the
    # killed-raylet test sees its tasks retried elsewhere within seconds.
    env["RAY_health_check_period_ms"] = "500"
    env["RAY_health_check_timeout_ms"] = "500"
    env["RAY_health_check_failure_threshold"] = "3"
    return env


def start_node(*extra: str, block: bool = False) -> subprocess.Popen[bytes] | None:
    """`ray start` for one more node of the cluster (--block: a process that lives as long as the
    node, in a process group of its own, for the test that kills one)."""
    args = [RAY, "start", f"--address={ADDRESS}", "--num-cpus=1", f"--object-store-memory={OBJECT_STORE}",
            "--disable-usage-stats", f"--temp-dir={os.environ['MNEMO_RAY_TEMP']}", *extra]
    if block:
        return subprocess.Popen([*args, "--block"], env=ray_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    subprocess.run(args, env=ray_env(), check=True, capture_output=True, timeout=120)
    return None


def alive_nodes() -> int:
    import ray

    return sum(1 for n in ray.nodes() if n.get("Alive"))


def wait_nodes(n: int, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while alive_nodes() != n:
        if time.monotonic() > deadline:
            raise AssertionError(f"the cluster has {alive_nodes()} alive nodes, expected {n}")
        time.sleep(0.2)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """End a node started with start_node(block=True): its process group, by its id."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, name) of every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        names[int(entry)] = name
    found: list[tuple[int, str]] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append((child, names[child]))
            todo.append(child)
    return found


@dataclass
class Samples:
    folder: Path

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.jsonl"
