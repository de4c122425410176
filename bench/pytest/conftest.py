"""pytest collects bench/pytest/bench_*.py in importlib mode, which puts no folder on sys.path: put
bench/lib there, so that a bench imports the shared helpers (`corpus`, `words_cache`, `gpt2_merges`)
as it does when run as a script."""

import sys
from pathlib import Path

_LIB = str(Path(__file__).resolve().parents[1] / "lib")
if _LIB not in sys.path:
    sys.path.insert(0, _LIB)
