"""Fail when the build is not the real one: the hot modules must be compiled extension modules,
and with MNEMO_REQUIRE_ASM=1 (the Makefile and CI set it) the NASM kernels must be active."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mnemo import buildinfo, kernels
from mnemo._hot import HOT_MODULES


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return set(m.group(1).split()) if m else set()


@pytest.mark.parametrize("path", HOT_MODULES)
def test_hot_module_is_compiled(path: str) -> None:
    name = path.removesuffix(".py").replace("/", ".")
    module = importlib.import_module(name)
    origin = module.__file__ or ""
    assert origin.endswith(".so"), f"{name} was imported from {origin}, not a mypyc-compiled extension"


def test_installed_package_is_not_the_checkout() -> None:
    """The tests must exercise the installed build, not the .py files of the source tree."""
    import mnemo

    assert "site-packages" in (mnemo.__file__ or ""), mnemo.__file__


def test_hot_module_list_is_sorted_and_exists() -> None:
    assert HOT_MODULES == sorted(HOT_MODULES)
    assert buildinfo.is_compiled()


def test_every_module_is_compiled_or_says_why_not() -> None:
    """mnemo/_hot.py lists the compiled modules; its docstring gives a reason for every other."""
    import mnemo._hot as hot

    package = Path(hot.__file__ or "").parent
    found = [p for p in package.rglob("*") if p.suffix in (".py", ".so") and not p.stem.startswith("mnemo__")]
    names = {f"mnemo/{p.relative_to(package).with_name(p.stem).as_posix()}.py" for p in found}
    names = {n.split(".cpython")[0] if ".cpython" in n else n for n in names}
    names = {n if n.endswith(".py") else n + ".py" for n in names}
    explained = {line.split()[0] for line in (hot.__doc__ or "").splitlines() if line.strip().startswith("mnemo/")}
    missing = sorted(n for n in names if n not in HOT_MODULES and n not in explained and n != "mnemo/_kernels.py")
    assert not missing, f"neither compiled nor explained in mnemo/_hot.py: {missing}"


@pytest.mark.skipif(os.environ.get("MNEMO_REQUIRE_ASM") != "1", reason="MNEMO_REQUIRE_ASM is not 1")
def test_asm_backend_is_active_when_required() -> None:
    assert kernels.asm_built(), "built without the NASM kernels although MNEMO_REQUIRE_ASM=1"
    flags = cpu_flags()
    if {"avx2", "bmi1"} <= flags:
        # /proc/cpuinfo is an independent check of the shim's own cpuid + xgetbv detection
        assert kernels.backends()[0] == "avx2"
        assert kernels.backend() == "avx2"
    else:
        pytest.skip(f"this CPU lacks avx2/bmi1 (flags: {sorted(flags & {'avx', 'avx2', 'bmi1'})})")


def test_version_reports_build() -> None:
    exe = Path(sys.executable).parent / "mnemo"
    assert exe.exists(), f"console script {exe} is missing"
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True).stdout
    assert re.fullmatch(r"mnemo \S+ \(compiled: yes, kernels: (avx2|c)\)\n", out), out
    assert f"kernels: {kernels.backend()}" in out


def test_kernels_library_exports_only_its_init() -> None:
    """The asm symbols are `hidden`: only PyInit__kernels is exported (no interposition)."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm is not installed")
    so = importlib.import_module("mnemo._kernels").__file__
    assert so is not None
    out = subprocess.run([nm, "-D", "--defined-only", so], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.split()[1] in "TtDdBbRr"}
    assert "PyInit__kernels" in exported
    assert not {s for s in exported if s.startswith("mnemo_")}, exported


def test_compiled_group_exports_only_its_init() -> None:
    """The hot modules share one library (mypycify group "mnemo"), built with
    -fvisibility=hidden -fno-semantic-interposition (setup.py): calls between its native
    functions are direct and inlinable, not PLT calls (measured: the pre-tokenizer's chunk loop
    called chunk_end through the PLT before)."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm is not installed")
    so = importlib.import_module("mnemo__mypyc").__file__
    assert so is not None and so.endswith(".so"), so
    out = subprocess.run([nm, "-D", "--defined-only", so], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.split()[1] in "TtDdBbRr"}
    assert exported == {"PyInit_mnemo__mypyc"}, sorted(exported)[:20]


def test_kernels_library_has_no_executable_stack() -> None:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf is not installed")
    so = importlib.import_module("mnemo._kernels").__file__
    assert so is not None
    out = subprocess.run([readelf, "-lW", so], capture_output=True, text=True, check=True).stdout
    stack = [line for line in out.splitlines() if "GNU_STACK" in line]
    assert stack and "RWE" not in stack[0], stack
