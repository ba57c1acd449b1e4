"""One job per function, and no kernel named in a generic layer, read from the source with ``ast``.

- No function in ``hwbench/`` is over 80 lines (signature, docstring and body). Over 60 only where
  the body is a cited data table or one commented algorithm, each listed below with why.
- The string ``"io-ehh"`` appears only under ``hwbench/plugins/`` (the kernel's own plugin and the
  default kernel in the built-in list): the audit, stress, bench, store and CLI layers read what
  they need of a kernel from its record (``KernelInfo``), so a new kernel adds no ``if``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hwbench"
HARD_LIMIT = 80
SOFT_LIMIT = 60

# (module path under hwbench/, function) -> why it may be longer than SOFT_LIMIT lines
LONG_ALLOWED: dict[tuple[str, str], str] = {
    ("plugins/devices/spinnaker.py", "spinnaker_profile"): "data table: sPyNNaker's fixed-point formats per op class",
    ("plugins/devices/loihi.py", "loihi_profile"): "data table: Loihi's integer formats per op class, cited",
    ("plugins/groqware_shim/numerics.py", "build_profile"): "data table: the GroqChip's formats per op class, cited",
}


def _functions() -> list[tuple[str, str, int]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((path.relative_to(PACKAGE).as_posix(), node.name, lines))
    return found


def test_no_function_is_over_80_lines() -> None:
    too_long = [f"{path}:{name} ({lines} lines)" for path, name, lines in _functions() if lines > HARD_LIMIT]
    assert not too_long, f"split these into one job per function: {too_long}"


def test_functions_over_60_lines_are_listed_data_tables() -> None:
    long = {(path, name): lines for path, name, lines in _functions() if lines > SOFT_LIMIT}
    unlisted = [f"{path}:{name} ({n} lines)" for (path, name), n in long.items() if (path, name) not in LONG_ALLOWED]
    assert not unlisted, f"over {SOFT_LIMIT} lines and not a listed data table: {unlisted}"
    stale = [f"{path}:{name}" for path, name in LONG_ALLOWED if (path, name) not in long]
    assert not stale, f"listed as long but no longer over {SOFT_LIMIT} lines (remove from LONG_ALLOWED): {stale}"


def test_no_kernel_is_named_outside_the_plugins() -> None:
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("plugins/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and node.value == "io-ehh":
                named.append(f"{relative}:{node.lineno}")
    assert not named, f"a generic layer names the io-ehh kernel (read it from the kernel's record): {named}"
