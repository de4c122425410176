"""Ray: the clear error without it, and the cluster tests of tests/ray_cluster/.

The cluster tests run in a child pytest inside fresh network and PID namespaces (`unshare`):
nothing but loopback in it, so Ray can listen on 127.0.0.1 only (../shared/notes/
ray-on-loopback.md), and when the child ends -- passed, failed or killed -- the kernel ends every
process of the namespace, the cluster with it.  `make test` thus starts and stops the cluster.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mnemo
from mnemo.errors import ConfigError
from mnemo.tokenizing import tokenize_files

HERE = Path(__file__).resolve().parent
MNEMO = str(Path(sys.executable).with_name("mnemo"))
#: A Python that cannot import ray (as where the extra is not installed), mnemo otherwise intact.
WITHOUT_RAY = "import sys; sys.modules['ray'] = None; "


def _run_without_ray(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`code` in a Python that cannot import ray, run outside the checkout (so that it imports
    the installed mnemo, as the tests do)."""
    return subprocess.run([sys.executable, "-c", WITHOUT_RAY + code], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_train_without_ray_installed_names_the_extra(tmp_path: Path) -> None:
    text = tmp_path / "in.txt"
    text.write_text("hello world " * 100)
    r = _run_without_ray(f"from mnemo.cli import main; sys.exit(main(['train', {str(text)!r}, '-o', {str(tmp_path / 'o.bin')!r}, '--vocab-size', '300', '--ray']))", tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == "mnemo: error: Ray is not installed, and --ray / ray= needs it: pip install 'mnemo[ray]'"
    assert not (tmp_path / "o.bin").exists()


def test_tokenize_without_ray_installed_names_the_extra(tmp_path: Path) -> None:
    text = tmp_path / "in.txt"
    text.write_text("hello world " * 100)
    code = (
        "import mnemo\n"
        "from mnemo.tokenizing import tokenize_files\n"
        f"tok = mnemo.train({str(text)!r}, vocab_size=300, workers=1)\n"
        "try:\n"
        f"    tokenize_files([{str(text)!r}], tok, {str(tmp_path / 'out')!r}, ray='127.0.0.1:1')\n"
        "except mnemo.ConfigError as exc:\n"
        "    print(exc)\n"
    )
    r = _run_without_ray(code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "pip install 'mnemo[ray]'" in r.stdout
    assert not (tmp_path / "out").exists()


def test_ray_is_imported_only_when_asked_for(tmp_path: Path) -> None:
    """`import ray` costs seconds and hundreds of MB: a local run never pays it."""
    text = tmp_path / "in.txt"
    text.write_text("hello world " * 100)
    code = (
        "import sys, mnemo\n"
        "from mnemo.tokenizing import tokenize_files\n"
        f"tok = mnemo.train({str(text)!r}, vocab_size=300, workers=2)\n"
        f"tokenize_files([{str(text)!r}], tok, {str(tmp_path / 'o.tok')!r}, workers=2)\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_ray_option_is_checked(tmp_path: Path) -> None:
    text = tmp_path / "in.txt"
    text.write_text("hello world " * 100)
    with pytest.raises(mnemo.ArgumentTypeError, match="ray must be"):
        mnemo.train(text, vocab_size=300, ray=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="fan_in"):
        mnemo.train(text, vocab_size=300, ray=mnemo.RayOptions(fan_in=1))
    tok = mnemo.train(text, vocab_size=300, workers=1)
    with pytest.raises(ConfigError, match="format 'megatron'"):
        tokenize_files([text], tok, tmp_path / "o", ray=True, format="megatron")


def test_workers_are_for_local_runs(tmp_path: Path) -> None:
    text = tmp_path / "in.txt"
    text.write_text("hello world " * 100)
    with pytest.raises(ConfigError, match="workers=2 is for local runs"):
        mnemo.train(text, vocab_size=300, workers=2, ray=True)
    tok = mnemo.train(text, vocab_size=300, workers=1)
    with pytest.raises(ConfigError, match="workers=2 is for local runs"):
        tokenize_files([text], tok, tmp_path / "o", workers=2, ray=True)
    assert not (tmp_path / "o").exists()


def test_tasks_per_node_needs_ray(tmp_path: Path) -> None:
    text = tmp_path / "in.txt"
    text.write_text("hello world " * 100)
    r = subprocess.run([MNEMO, "train", str(text), "-o", str(tmp_path / "o.bin"), "--tasks-per-node", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "--tasks-per-node is for runs on a Ray cluster; add --ray" in r.stderr


@pytest.mark.slow
def test_on_a_multi_node_cluster(tmp_path: Path) -> None:
    """tests/ray_cluster/ray_cases.py against a head and a worker node started in a namespace."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("the Ray cluster tests need root, unshare and ip (util-linux, iproute2) to make a loopback-only namespace")
    inner = (
        "ip link set lo up && "
        f"exec {Path(sys.executable).with_name('pytest')} {HERE / 'ray_cluster'} -q -p no:randomly -p no:cacheprovider "
        "-o python_files=ray_*.py -x --durations=8 -rA"
    )
    # A HOME of the test's own: Ray keeps state there (~/.ray/auth_token, written
    # by any earlier local Ray run on the machine, makes a second node's `ray start` fail), and
    # nothing outside the test may change what the cluster does.
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "MNEMO_RAY_NAMESPACE": "1", "RAY_ENABLE_USAGE_STATS": "0", "HOME": str(home)}
    for name in [k for k in env if k.startswith("RAY_") and k != "RAY_ENABLE_USAGE_STATS"]:
        env.pop(name)
    # The cluster uses token authentication, as Ray 2.60 sets up wherever a local cluster ran
    # before: every process of the namespace (head, second node, drivers) gets the token.
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    # Run from outside the checkout: Ray puts the driver's working folder on its workers' import
    # path, and the checkout's mnemo/ (uncompiled, no kernels) must not shadow the installed one.
    r = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount-proc", "sh", "-c", inner],
                       capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert r.returncode == 0, f"the Ray cluster tests failed:\n{r.stdout[-20000:]}\n{r.stderr[-5000:]}"
    assert " passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-5000:]
    print(r.stdout[-3000:])
