"""The modules compiled with mypyc: one list, read by setup.py and by `mnemo --version`.

Sorted.  Modules NOT compiled, and why:
  mnemo/__init__.py  re-exports only; nothing runs there
  mnemo/__main__.py  `python -m mnemo` entry; mypyc cannot compile `if __name__ == ...`
  mnemo/_hot.py      this list; setup.py reads it before anything is built
  mnemo/buildinfo.py reports on the build itself; must work whatever got compiled
  mnemo/cli.py       argument parsing and printing; not hot, and plain Python keeps tracebacks readable
  mnemo/errors.py    exception classes users catch and subclass; nothing hot
  mnemo/reference.py the naive twins: the oracle stays plain Python, boring and obviously right
"""

from typing import Final

HOT_MODULES: Final = [
    "mnemo/kernels.py",
    "mnemo/trainer.py",
]
