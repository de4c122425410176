"""The modules compiled with mypyc: one list, read by setup.py and by `mnemo --version`.

Sorted.  Modules NOT compiled, and why:
  mnemo/__init__.py  re-exports only; nothing runs there
  mnemo/__main__.py  `python -m mnemo` entry; mypyc cannot compile `if __name__ == ...`
  mnemo/_hot.py      this list; setup.py reads it before anything is built
  mnemo/bigram.py    numpy does the work; mypyc would only add a compile step
  mnemo/buildinfo.py reports on the build itself; must work whatever got compiled
  mnemo/cli.py       argument parsing and printing; not hot, and plain Python keeps tracebacks readable
  mnemo/data.py      numpy does the work; mypyc would only add a compile step
  mnemo/errors.py    exception classes users catch and subclass; nothing hot
"""

from typing import Final

HOT_MODULES: Final = [
    "mnemo/kernels.py",
]
