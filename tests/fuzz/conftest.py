"""The fuzz suite's shared pieces: fuzzer.py (importable beside these tests), the seed files made
by mnemo itself, and one long-lived worker process for the whole module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import fuzzer  # noqa: E402


@pytest.fixture(scope="session")
def seed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz-seeds")
    fuzzer.make_seeds(path)
    return path


@pytest.fixture(scope="session")
def seeds(seed_dir: Path) -> dict[str, list[bytes]]:
    return fuzzer.load_seeds(seed_dir)


@pytest.fixture(scope="module")
def s3_env() -> Iterator[None]:
    """moto's S3 server for the `url` target (fuzzer.start_s3), for this module only: the
    environment it needs (AWS_ENDPOINT_URL, test credentials) is put back afterwards."""
    pytest.importorskip("moto.server", reason="moto is not installed (pip install '.[test]')")
    server, env = fuzzer.start_s3()
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        try:
            yield
        finally:
            server.stop()


@pytest.fixture(scope="module")
def runner(seed_dir: Path, s3_env: None) -> Iterator[fuzzer.Runner]:
    """One worker for the module; a crash or hang restarts it (the runner does).  No second run
    to confirm a crash or hang: a regression case is judged on its one run."""
    r = fuzzer.Runner(seed_dir, confirm=False)
    yield r
    r.close()
