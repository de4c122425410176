"""pytest collects bench/bench_*.py in importlib mode, which puts no folder on sys.path: put this
one there, so that a bench imports its sibling `_corpus` as it does when run as a script."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
