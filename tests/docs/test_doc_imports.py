"""The docs teach the public API only: every Python example imports hwbench from a public module.

What a user copies from the docs must keep working when hwbench's internals move, so the code the
docs show imports from the modules hwbench promises to keep:

* ``hwbench`` — the library (``hwbench.audit``, ``run``, ``bench``, ``open_store``, ``probe``);
* ``hwbench.api`` — the plugin API, versioned by the plugin contract (``docs/plugin-authors.md``);
* ``hwbench.testing`` and its submodules (``conformance``, ``strategies``, ``assertions``,
  ``badinput``, ``plugin``) — the test helpers ``docs/testing.md`` documents module by module.

Everything else under ``hwbench.`` (``hwbench.core``, ``hwbench.accuracy``, ``hwbench.plugins``,
...) is internal. Checked: every fenced ``python`` block of ``README.md`` and ``docs/**/*.md``,
every code cell of ``docs/library.ipynb``, and every file in ``docs/examples/``. A block that does
not parse fails too: a reader cannot run it, and its imports could not be checked.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PUBLIC = ("hwbench", "hwbench.api", "hwbench.testing")
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def is_public(module: str) -> bool:
    if module in PUBLIC:
        return True
    return module.startswith("hwbench.testing.")


def python_sources() -> list[tuple[str, str]]:
    """(where, code) for every piece of Python the docs show."""
    sources = []
    for page in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text()
        for block in FENCE.finditer(text):
            line = text.count("\n", 0, block.start()) + 2
            sources.append((f"{page.relative_to(REPO)}:{line}", block.group(1)))
    notebook = json.loads((DOCS / "library.ipynb").read_text())
    for number, cell in enumerate(notebook["cells"], 1):
        if cell["cell_type"] == "code":
            code = "".join(cell["source"])
            # IPython's magics and shell escapes are not Python; the rest of the cell is
            code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in code.splitlines())
            sources.append((f"docs/library.ipynb cell {number}", code))
    for example in sorted((DOCS / "examples").glob("*.py")):
        sources.append((str(example.relative_to(REPO)), example.read_text()))
    return sources


def _is_module(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
    return path.is_dir() or path.with_suffix(".py").exists()


def hwbench_imports(code: str) -> list[tuple[int, str]]:
    """(line, module) for every import of an hwbench module in ``code``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "hwbench":  # `from hwbench import core` names a module, `audit` a function
                found += [(node.lineno, f"hwbench.{a.name}") for a in node.names if _is_module(f"hwbench.{a.name}")]
    return [(line, module) for line, module in found if module.split(".")[0] == "hwbench"]


SOURCES = python_sources()


def test_the_docs_show_python_to_check() -> None:
    where = {w.split(":")[0].split(" cell")[0] for w, _ in SOURCES}
    assert {"docs/plugin-authors.md", "docs/library.ipynb", "docs/examples/test_my_kernel.py"} <= where
    assert len(SOURCES) > 20


@pytest.mark.parametrize(("where", "code"), SOURCES, ids=[w for w, _ in SOURCES])
def test_docs_import_only_public_hwbench_modules(where: str, code: str) -> None:
    try:
        imports = hwbench_imports(code)
    except SyntaxError as exc:
        pytest.fail(f"{where}: the example does not parse ({exc.msg}, its line {exc.lineno})")
    private = [f"line {line}: {module}" for line, module in imports if not is_public(module)]
    assert not private, f"{where} imports internal modules (use hwbench, hwbench.api or hwbench.testing): {private}"


@pytest.mark.parametrize(
    ("code", "private"),
    [
        ("from hwbench.core.plugins import get_registry", ["hwbench.core.plugins"]),
        ("def f():\n    import hwbench.accuracy.numerics.rounding as r", ["hwbench.accuracy.numerics.rounding"]),
        ("from hwbench import core", ["hwbench.core"]),
        ("from hwbench import api, audit\nimport hwbench.testing.strategies", []),
        ("from hwbench.api import round_float\nimport numpy", []),
    ],
)
def test_the_check_tells_public_from_internal(code: str, private: list[str]) -> None:
    assert [m for _, m in hwbench_imports(code) if not is_public(m)] == private
