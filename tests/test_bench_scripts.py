"""The side-by-side scripts run the way bench/README.md and the README say --
`.venv/bin/python bench/compare/NAME.py ...` from the checkout -- against the installed, compiled
mnemo.  A child a script starts with `python -c` has the current folder first on sys.path, so
from the checkout it imported the uncompiled mnemo/ source instead and failed (no _kernels);
the scripts start such children with -P."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_superword_bench_trains_in_children_from_the_checkout(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = [json.dumps({"text": f"By the way, the cat sat on the mat {i % 7}. " * 4}) for i in range(300)]
    corpus.write_text("\n".join(lines) + "\n")
    run = subprocess.run(
        [sys.executable, "bench/compare/superword_vs_plain.py", "train", str(corpus), "--vocab", "320",
         "--superword", "290", "--rounds", "1", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "superword / plain: cpu" in run.stdout, run.stdout
    assert (tmp_path / "superword_320.bin").is_file()


def test_superword_parts_time_what_training_runs(tmp_path: Path) -> None:
    """bench/measure/superword_parts.py times the parts of superword training one by one; --check
    asks that together they learn mnemo.train's merges (on text whose cut is active: theta > 2)."""
    import random

    rng = random.Random(7)
    words = ["the", "cat", "sat", "on", "a", "mat", "by", "way", "of", "and", "in", "to"]
    words += ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 7))) for _ in range(300)]
    weights = [1 / (i + 1) for i in range(len(words))]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": " ".join(rng.choices(words, weights, k=40)) + "."}) + "\n" for _ in range(3000)))
    run = subprocess.run(
        [sys.executable, "bench/measure/superword_parts.py", str(corpus), "--vocab", "1000", "--superword", "700",
         "--rounds", "1", "--check", "--prefix", "10"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "merges as mnemo.train" in run.stdout and "stage 2 loop: first merge" in run.stdout, run.stdout
    theta = int(run.stdout.split("theta ")[1].split(",")[0])
    assert theta > 2, run.stdout


SCRIPTS = sorted(
    p.relative_to(ROOT).as_posix() for folder in ("compare", "measure") for p in (ROOT / "bench" / folder).glob("*.py")
)


def test_every_script_is_listed() -> None:
    assert len(SCRIPTS) > 20, SCRIPTS  # the glob found the folders


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_script_answers_help_from_the_checkout(script: str) -> None:
    """bench/README.md's `.venv/bin/python bench/compare/NAME.py --help`: every script says what it
    compares without running it (merge_loop_100mb.py took --help for its byte count)."""
    run = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "usage:" in run.stdout
