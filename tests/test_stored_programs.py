"""The presets' scanner programs stored ahead (mnemo/stored_programs.py, generated into
mnemo/_stored_programs.py by tools/gen_stored_programs.py) are exactly what the compiler builds
today, and a new process that loads a preset's pattern takes them instead of compiling."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mnemo import _unicode_data as udata
from mnemo import pretokenize as pt
from mnemo import regex_family as rf
from mnemo._stored_programs import INDEX, PROGRAMS
from mnemo.patterns import PRESETS, SplitStep, compile_steps
from mnemo.stored_programs import decode, encode, key_of, stored



def pieces(program: pt.SplitProgram, text: str) -> list[str]:
    """The chunks the scanner cuts `text` into."""
    data = text.encode("utf-8")
    out: list[str] = []
    i = 0
    while i < len(data):
        end = pt.scan(program, data, i, len(data))
        out.append(data[i:end].decode("utf-8"))
        i = end
    return out


def preset_steps() -> list[tuple[str, SplitStep, str]]:
    return [(name, step, version) for name, p in PRESETS.items() for step in p.steps for version in udata.VERSIONS]


@pytest.mark.parametrize("name, step, version", preset_steps(), ids=lambda v: v if isinstance(v, str) else "step")
def test_the_store_holds_what_the_compiler_builds(name: str, step: SplitStep, version: str) -> None:
    """Field by field: a stale store (regex_family.py, a preset or the Unicode tables changed
    without running tools/gen_stored_programs.py) fails here."""
    branches = rf.digits_branches() if step.kind == "digits" else rf.parse(step.regex, version)
    built = rf.compile_branches(branches, version)
    found = stored(step.kind, step.regex, version)
    assert found is not None, f"{name}'s step over Unicode {version} is not stored: run tools/gen_stored_programs.py"
    assert found == built, f"{name}'s stored program over Unicode {version} is stale: run tools/gen_stored_programs.py"


def test_the_store_holds_nothing_else() -> None:
    keys = {key_of(step.kind, step.regex, version) for _, step, version in preset_steps()}
    assert set(INDEX) == keys
    assert sorted(set(INDEX.values())) == list(range(len(PROGRAMS)))  # each program used, once


def test_an_entry_reads_back() -> None:
    step = PRESETS["gpt2"].steps[0]
    built = rf.compile_branches(rf.parse(step.regex, udata.DEFAULT), udata.DEFAULT)
    assert decode(encode(built)) == built


def test_any_other_regex_is_compiled() -> None:
    assert stored("regex", r"\p{L}+|\p{N}+", udata.DEFAULT) is None
    assert stored("regex", PRESETS["gpt2"].steps[0].regex + " ", udata.DEFAULT) is None
    assert stored("regex", PRESETS["gpt2"].steps[0].regex, "0.0.0") is None
    pattern = compile_steps([SplitStep(r"\p{L}+|\p{N}+")], udata.DEFAULT)
    assert pattern.engine == "scanner" and pieces(pattern.program, "ab 12") == ["ab", " ", "12"]


def test_a_new_process_does_not_compile_a_preset(tmp_path: Path) -> None:
    """Every preset by name, over both tables, and a tokenizer.json's regex that is a preset's,
    with the compiler made to fail: the store serves them all, and they split as the `regex`
    module does."""
    code = textwrap.dedent(
        """
        import regex
        import mnemo.regex_family as rf
        def refuse(*args, **kwargs):
            raise AssertionError("compiled a pattern the store holds")
        rf.compile_branches = refuse
        from mnemo.patterns import PRESETS, SplitStep, compile_pattern, compile_steps
        from mnemo.pretokenize import scan
        def pieces(program, text):
            data, out, i = text.encode("utf-8"), [], 0
            while i < len(data):
                end = scan(program, data, i, len(data))
                out.append(data[i:end].decode("utf-8"))
                i = end
            return out
        text = "Hello world's 12345 naïve  café\\n\\n数据 <tags>!!"
        for name, preset in PRESETS.items():
            for unicode in (None, "16.0.0", "18.0.0"):
                p = compile_pattern(name, unicode)
                assert p.engine == "scanner", (name, p.engines)
            if len(preset.steps) == 1:
                p = compile_steps([SplitStep(preset.steps[0].regex)], "tokenizers")
                assert pieces(p.program, text) == regex.findall(preset.steps[0].regex, text), name
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
