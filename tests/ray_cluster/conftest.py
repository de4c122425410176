"""A real two-node Ray cluster for the tests of this folder (../test_ray.py runs them).

These tests run only inside the network and PID namespaces that tests/test_ray.py makes with
`unshare` (../shared/notes/ray-on-loopback.md): the namespace holds nothing but loopback, so
127.0.0.1 is the only address Ray can find or listen on, and when the run ends the kernel kills
every process of the namespace -- the cluster stops also when a test, or pytest itself, fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _cluster import ADDRESS, NAMESPACE_ENV, OBJECT_STORE, PORT, RAY, Samples, ray_env, start_node, wait_nodes  # noqa: E402


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A head and one worker node, 1 CPU each; the address.  This process is connected as a
    driver for the whole session (the library reuses the connection)."""
    if os.environ.get(NAMESPACE_ENV) != "1":
        pytest.fail("the Ray cluster tests run inside the namespace tests/test_ray.py makes: run tests/test_ray.py")
    env = ray_env()
    # Ray's sessions (logs, sockets) under pytest's temporary folders, which pytest prunes
    env["MNEMO_RAY_TEMP"] = str(tmp_path_factory.mktemp("ray"))
    os.environ["MNEMO_RAY_TEMP"] = env["MNEMO_RAY_TEMP"]
    subprocess.run([RAY, "start", "--head", f"--temp-dir={env['MNEMO_RAY_TEMP']}", f"--port={PORT}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                    "--include-dashboard=false", "--disable-usage-stats", f"--object-store-memory={OBJECT_STORE}"],
                   env=env, check=True, capture_output=True, timeout=120)
    start_node()
    import ray

    ray.init(address=ADDRESS, logging_level="WARNING", log_to_driver=False)
    try:
        wait_nodes(2)
        yield ADDRESS
    finally:
        # The nodes stop with the namespace: when this pytest (its first process) ends, the
        # kernel kills every process in it -- on failure too, and ~25 s sooner than `ray stop`.
        ray.shutdown()


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory, corpus_docs: Callable[..., list[str]]) -> Samples:
    """A sample of each of the four corpora as a JSONL file of {"text": ...} (the chat corpus:
    one document per message), on the filesystem every node of this machine sees."""
    folder = tmp_path_factory.mktemp("samples")
    for name in ("english", "multilingual", "code", "chat"):
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for text in corpus_docs(name, 300_000):
                f.write(json.dumps({"text": text}) + "\n")
    return Samples(folder)
