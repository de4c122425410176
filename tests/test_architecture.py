"""The package's import graph against docs/architecture.md: no circle, and no arrow pointing up.

docs/architecture.md holds the layer table ("## Layers"): every mnemo module in exactly one
layer (a subpackage's modules by their dotted names: `formats.gpt2`; its __init__ as `formats`), numbered from the bottom (0) up.  A module may import modules of its own layer or below;
an import of a higher layer is an upward arrow, allowed only when the table "## Allowed upward
arrows" lists it with its reason.  No import circle is allowed at all, listed or not.  The test
reads the table from the doc, so the doc and the test cannot drift apart: adding a module to
mnemo/ means adding it to the doc's table, and that is the only step needed.

Imports counted: every `import mnemo.x` / `from mnemo.x import ...` / `from mnemo import x`,
at module level AND inside functions (a deferred import is still an arrow; it only hides a
circle until run time).  Not counted: imports under `if TYPE_CHECKING:`, which never run (they
exist for annotations only; a module that uses one is still below what it names at run time).
`from mnemo import name` where `name` is not a module is an arrow to the package's __init__.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mnemo"
DOC = ROOT / "docs" / "architecture.md"
HOW = (
    "add it to the layer table of docs/architecture.md ('## Layers'), in the lowest layer that is at or "
    "above every mnemo module it imports -- that is the only step needed"
)


def module_name(path: Path) -> str:
    """mnemo/tokenizer.py -> "tokenizer"; mnemo/formats/gpt2.py -> "formats.gpt2"; mnemo/formats/__init__.py ->
    "formats" (the package's own module); mnemo/__init__.py stays "__init__"."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if len(parts) > 1 and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def module_path(name: str) -> str:
    """The file of a module name, as the doc's paragraphs and the messages spell it."""
    if (PACKAGE / name.replace(".", "/") / "__init__.py").is_file():
        return f"mnemo/{name.replace('.', '/')}/__init__.py"
    return f"mnemo/{name.replace('.', '/')}.py"


def sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def modules() -> set[str]:
    """The package's modules: mnemo/**/*.py, and the C extension _kernels (its stub mnemo/_kernels.pyi)."""
    found = {module_name(p) for p in sources()}
    found |= {p.stem for p in PACKAGE.glob("*.pyi")}
    return found


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == f"## {title}")
    except StopIteration:
        raise AssertionError(f"docs/architecture.md has no '## {title}' section") from None
    out: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        out.append(line)
    return out


def _rows(lines: list[str]) -> list[list[str]]:
    """The cells of a markdown table's body rows (header and separator skipped)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.strip().startswith("|")]
    return [r for r in rows[2:]]


def layers() -> dict[str, int]:
    """Module -> layer number, from the doc's layer table (| layer | name | modules | ...)."""
    table: dict[str, int] = {}
    for row in _rows(_section(DOC.read_text(encoding="utf-8"), "Layers")):
        number = int(row[0])
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", row[2]):
            assert name not in table, f"docs/architecture.md lists {name} in layers {table[name]} and {number}"
            table[name] = number
    return table


def allowed_upward() -> set[tuple[str, str]]:
    """The (importer, imported) pairs of '## Allowed upward arrows' (| from | to | why |)."""
    pairs: set[tuple[str, str]] = set()
    for row in _rows(_section(DOC.read_text(encoding="utf-8"), "Allowed upward arrows")):
        names = [re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", cell) for cell in row[:2]]
        if names[0] and names[1]:
            pairs.add((names[0][0], names[1][0]))
    return pairs


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, known: set[str], module: str | None = None) -> dict[str, int]:
    """The mnemo modules `path` (the module named `module`; default: its name under mnemo/)
    imports (module-level and function-level, not TYPE_CHECKING), each with the line of its
    first import.  Importing `mnemo.formats.gpt2` runs the package `mnemo.formats` first, so it
    is an arrow to both -- except from a module inside that package: Python has started the
    package's __init__.py before any of its modules runs, so `mnemo/cli/train.py` importing
    `mnemo.cli.common` is an arrow to `cli.common` only.  (Importing a name of the package
    itself, `from mnemo.cli import main`, is still an arrow to it.)"""
    found: dict[str, int] = {}
    if module is None and path.is_relative_to(PACKAGE):
        module = module_name(path)
    own = module.split(".") if module else []
    if path.name == "__init__.py":
        own.append("__init__")  # mnemo/cli/__init__.py is inside the package cli as well
    enclosing = {".".join(own[:k]) for k in range(1, len(own))}

    def add_one(name: str, line: int) -> None:
        found.setdefault(name, line)

    def add(dotted: str, line: int) -> None:
        """`dotted` (below mnemo): the longest known module it names, and the packages above it."""
        parts = dotted.split(".")
        while len(parts) > 1 and ".".join(parts) not in known:
            parts.pop()
        for k in range(1, len(parts) + 1):
            if k < len(parts) and ".".join(parts[:k]) in enclosing:
                continue  # the package this module is in has run already
            add_one(".".join(parts[:k]), line)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "mnemo":
                    add(".".join(parts[1:]) if len(parts) > 1 else "__init__", node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            parts = node.module.split(".")
            if parts[0] == "mnemo":
                below = ".".join(parts[1:])
                for alias in node.names:
                    # `from mnemo.formats import gpt2` imports a module; `from mnemo.formats.gpt2
                    # import load_gpt2` and `from mnemo import Tokenizer` import names of one
                    whole = f"{below}.{alias.name}" if below else alias.name
                    if whole in known:
                        add(whole, node.lineno)
                    else:
                        add(below or "__init__", node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            raise AssertionError(f"{path}:{node.lineno}: a relative import; mnemo spells imports in full")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def graph() -> dict[str, dict[str, int]]:
    known = modules()
    return {module_name(p): imports_of(p, known) for p in sources()}


def test_every_module_is_in_one_layer() -> None:
    table = layers()
    missing = sorted(modules() - set(table))
    assert not missing, "; ".join(f"{module_path(m)} is in no layer: {HOW}" for m in missing)
    gone = sorted(set(table) - modules())
    assert not gone, f"docs/architecture.md lists {gone} in its layer table, but mnemo/ has no such module: remove them"


def test_no_upward_arrow_that_the_doc_does_not_list() -> None:
    table = layers()
    allowed = allowed_upward()
    problems = []
    for importer, targets in graph().items():
        if importer not in table:
            continue  # reported by test_every_module_is_in_one_layer
        for target, line in targets.items():
            if target in table and table[target] > table[importer] and (importer, target) not in allowed:
                problems.append(
                    f"{module_path(importer)}:{line} (layer {table[importer]}) imports mnemo.{target} (layer "
                    f"{table[target]}): an upward arrow.  Move what it needs down, or move the module up in "
                    f"docs/architecture.md's layer table, or list the arrow with its reason under "
                    f"'## Allowed upward arrows'"
                )
    assert not problems, "\n".join(problems)


def test_allowed_upward_arrows_are_real() -> None:
    """A listed exception that no longer exists is removed from the doc (it would excuse the next one)."""
    edges = {(a, b) for a, targets in graph().items() for b in targets}
    stale = sorted(allowed_upward() - edges)
    assert not stale, f"docs/architecture.md allows upward arrows that no module has any more: {stale}; remove them"


def find_cycle(edges: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle (a list of modules, first == last), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, {})):
            if nxt == node:
                continue  # `from mnemo import x` inside mnemo/x.py is not an arrow
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = walk(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = walk(start)
            if found:
                return found
    return None


def test_no_import_circle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "an import circle: " + " -> ".join(f"mnemo.{m}" for m in cycle) + (
        "; break it by moving what the lower module borrows down (docs/architecture.md)"
    )


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The walker sees function-level imports and skips TYPE_CHECKING ones, and a circle is found."""
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "from mnemo.errors import MnemoError\n"
        "if TYPE_CHECKING:\n    from mnemo.tokenizer import Tokenizer\n"
        "def f():\n    from mnemo import interop\n    import mnemo.cli\n"
    )
    assert set(imports_of(src, {"errors", "tokenizer", "interop", "cli"})) == {"errors", "interop", "cli"}
    # a subpackage: its modules by dotted name, and the package itself runs first
    src.write_text(
        "from mnemo.formats.gpt2 import load_gpt2\n"
        "from mnemo.formats import hf\n"
        "import mnemo.formats.tiktoken\n"
        "from mnemo import Tokenizer\n"
    )
    known = {"formats", "formats.gpt2", "formats.hf", "formats.tiktoken", "tokenizer"}
    assert set(imports_of(src, known)) == {"formats", "formats.gpt2", "formats.hf", "formats.tiktoken", "__init__"}
    # the same imports from a module of that package: the package has run before it, but a name
    # imported from the package itself (`from mnemo.formats import x`, x no module) is an arrow to it
    inside = set(imports_of(src, known, module="formats.other"))
    assert inside == {"formats.gpt2", "formats.hf", "formats.tiktoken", "__init__"}
    src.write_text("from mnemo.formats import load\n")
    assert set(imports_of(src, known, module="formats.other")) == {"formats"}
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None


@pytest.mark.parametrize("module", sorted(modules()))
def test_every_module_has_a_paragraph(module: str) -> None:
    """docs/architecture.md says what each module is for: a bullet `mnemo/NAME.py` (`mnemo/PACKAGE/NAME.py`)
    under '## Modules'."""
    text = "\n".join(_section(DOC.read_text(encoding="utf-8"), "Modules"))
    path = module_path(module)
    assert f"- `{path}`" in text or f"- `mnemo/{module}.pyi`" in text, (
        f"docs/architecture.md has no paragraph for {path} under '## Modules': add one"
    )
