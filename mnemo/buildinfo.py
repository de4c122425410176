"""What this installation of mnemo is: version, which hot modules are really compiled, and
which kernel backend runs.  `mnemo --version` prints `describe()`; the tests use the rest to
fail when the build is not the real one."""

import importlib
import importlib.machinery
from typing import Final

from mnemo import kernels
from mnemo._hot import HOT_MODULES

#: mnemo's version (`mnemo.__version__` re-exports it; pyproject.toml holds the same string).
VERSION: Final = "0.1.0"


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def compiled_modules() -> dict[str, bool]:
    """For each module on the mypyc list, whether the imported module is an extension module."""
    result: dict[str, bool] = {}
    for path in HOT_MODULES:
        name = _module_name(path)
        origin = getattr(importlib.import_module(name), "__file__", None) or ""
        result[name] = origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    return result


def is_compiled() -> bool:
    """True when every module on the mypyc list was loaded from a compiled extension."""
    return all(compiled_modules().values())


def describe() -> str:
    """One line: `mnemo 0.1.0 (compiled: yes, kernels: avx2)`."""
    mods = compiled_modules()
    if all(mods.values()):
        state = "yes"
    elif any(mods.values()):
        state = "partly (" + ", ".join(m for m, c in mods.items() if not c) + " interpreted)"
    else:
        state = "no"
    asm = "" if kernels.asm_built() else ", asm: not built"
    return f"mnemo {VERSION} (compiled: {state}, kernels: {kernels.backend()}{asm})"
