"""The modules compiled with mypyc: one list, read by setup.py and by `mnemo --version`.

Sorted.  Modules NOT compiled, and why:
  mnemo/__init__.py  re-exports only; nothing runs there
  mnemo/__main__.py  `python -m mnemo` entry; mypyc cannot compile `if __name__ == ...`
  mnemo/_hot.py      this list; setup.py reads it before anything is built
  mnemo/_unicode_tables.py  generated data only; pretokenize copies its tables into its own
                     `Final` statics once at import, so compiling it would buy nothing
  mnemo/buildinfo.py reports on the build itself; must work whatever got compiled
  mnemo/cli.py       argument parsing and printing; not hot, and plain Python keeps tracebacks readable
  mnemo/errors.py    exception classes users catch and subclass; nothing hot
"""

from typing import Final

HOT_MODULES: Final = [
    "mnemo/count.py",
    "mnemo/encode_text.py",
    "mnemo/encoder.py",
    "mnemo/kernels.py",
    "mnemo/pretokenize.py",
]
