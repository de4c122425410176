"""Build mnemo: assemble asm/*.asm with nasm, link them with the C shim into mnemo._kernels,
and compile the hot modules with mypyc.

Environment switches:
  MNEMO_REQUIRE_ASM=1  fail the build when the NASM kernels cannot be built (set by the
                       Makefile and CI), instead of falling back to the portable C twins.
  MNEMO_NO_MYPYC=1     skip mypyc (an interpreted build, for debugging and profiling).
"""

from __future__ import annotations

import os
import platform
import runpy
import shutil
import sys
from glob import glob
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
HOT_MODULES: list[str] = runpy.run_path(os.path.join(ROOT, "mnemo", "_hot.py"))["HOT_MODULES"]
ASM_SOURCES = sorted(glob("asm/*.asm"))


class NasmExtension(Extension):
    """An Extension whose `asm_sources` are assembled with nasm and linked in."""

    def __init__(self, name: str, asm_sources: list[str], **kw: Any) -> None:
        super().__init__(name, **kw)
        self.asm_sources = asm_sources


def asm_unavailable_reason() -> str | None:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"the target is {platform.machine()}, not x86-64"
    if not sys.platform.startswith("linux"):
        return f"the platform is {sys.platform}; the objects are built as ELF64"
    if shutil.which("nasm") is None:
        return "nasm is not installed (Debian/Ubuntu: apt-get install nasm)"
    return None


class build_ext_nasm(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if isinstance(ext, NasmExtension):
            reason = asm_unavailable_reason()
            if reason is None:
                os.makedirs(self.build_temp, exist_ok=True)
                objs = []
                for src in ext.asm_sources:
                    obj = os.path.join(self.build_temp, os.path.basename(src) + ".o")
                    self.spawn(["nasm", "-f", "elf64", "-Werror", "-o", obj, src])
                    objs.append(obj)
                ext.extra_objects = [o for o in ext.extra_objects if o not in objs] + objs
                ext.define_macros = [*ext.define_macros, ("MNEMO_HAVE_ASM", "1")]
            elif os.environ.get("MNEMO_REQUIRE_ASM") == "1":
                raise SystemExit(f"error: MNEMO_REQUIRE_ASM=1 but the NASM kernels cannot be built: {reason}")
            else:
                banner = "*" * 78
                sys.stderr.write(
                    f"\n{banner}\nWARNING: mnemo builds its portable C kernels instead of the NASM ones:\n"
                    f"  {reason}\nScans will be several times slower.\n{banner}\n\n"
                )
        super().build_extension(ext)


kernels = NasmExtension(
    "mnemo._kernels",
    asm_sources=ASM_SOURCES,
    sources=["asm/shim.c", "asm/kernels_portable.c"],
    include_dirs=["asm"],
    depends=["asm/kernels.h", *ASM_SOURCES],
    extra_compile_args=["-O2", "-fvisibility=hidden"],
    extra_link_args=["-Wl,-z,noexecstack"],
)

ext_modules: list[Extension] = [kernels]
if os.environ.get("MNEMO_NO_MYPYC") != "1":
    from mypyc.build import mypycify

    compiled = mypycify(sorted(HOT_MODULES), opt_level="3", group_name="mnemo")
    for ext in compiled:
        # One shared library holds every hot module (group_name): calls between its native
        # functions must be direct and inlinable, not PLT calls that the dynamic linker could
        # interpose.  Only PyInit_* needs to be visible (PyMODINIT_FUNC marks it so).
        ext.extra_compile_args = [*ext.extra_compile_args, "-fvisibility=hidden", "-fno-semantic-interposition"]
    ext_modules += compiled

setup(ext_modules=ext_modules, cmdclass={"build_ext": build_ext_nasm})
