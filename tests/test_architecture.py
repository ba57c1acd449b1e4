"""The rooms of docs/architecture.md, enforced: which room may import which, and no import circles.

Every ``import`` in ``hwbench/`` is read from the source with ``ast`` (module level, inside
functions, and under ``TYPE_CHECKING``), so a lazy import cannot hide a dependency. Rooms are the
longest matching prefix in :data:`ROOMS`; a module may import its own room and the rooms listed
for it. A circle is any strongly connected set of modules in that graph.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hwbench"

# room -> the rooms it may import besides itself (docs/architecture.md, "Rooms")
ROOMS: dict[str, set[str]] = {
    "hwbench": set(),  # hwbench/__init__.py: the version, and the library names loaded lazily (PEP 562)
    "hwbench.core": {"hwbench"},
    "hwbench.accuracy.numerics": {"hwbench", "hwbench.core"},
    "hwbench.accuracy": {"hwbench", "hwbench.core", "hwbench.accuracy.numerics"},
    "hwbench.stress": {"hwbench", "hwbench.core", "hwbench.accuracy.numerics", "hwbench.accuracy"},
    "hwbench.store": {"hwbench", "hwbench.core"},
    "hwbench.report": {"hwbench", "hwbench.core", "hwbench.store"},
    "hwbench.api": {"hwbench", "hwbench.core", "hwbench.accuracy.numerics"},
    # the op-level evaluator of users' graphs (ONNX, jaxpr): it computes with a device's ops
    "hwbench.evaluator": {"hwbench", "hwbench.core", "hwbench.accuracy.numerics"},
    "hwbench.plugins": {
        "hwbench",
        "hwbench.core",
        "hwbench.accuracy.numerics",
        "hwbench.accuracy",
        "hwbench.api",
        "hwbench.evaluator",  # the onnx kernel and the GroqWare shim are its clients
    },
    "hwbench.library": {  # hwbench.audit / run / bench / open_store: what the CLI is a thin layer over
        "hwbench",
        "hwbench.core",
        "hwbench.accuracy.numerics",
        "hwbench.accuracy",
        "hwbench.stress",
        "hwbench.store",
        "hwbench.report",
        "hwbench.plugins",  # DEFAULT_KERNEL
        "hwbench.evaluator",
    },
    "hwbench.cli": {
        "hwbench.library",
        "hwbench",
        "hwbench.core",
        "hwbench.accuracy.numerics",
        "hwbench.accuracy",
        "hwbench.stress",
        "hwbench.store",
        "hwbench.report",
        "hwbench.api",
        "hwbench.plugins",  # kernel-family commands (DL bench/audit) call their built-in plugin
        "hwbench.evaluator",
    },
    "hwbench.testing": {
        "hwbench",
        "hwbench.core",
        "hwbench.accuracy.numerics",
        "hwbench.accuracy",
        "hwbench.stress",
        "hwbench.api",
        "hwbench.library",
        "hwbench.cli",
        "hwbench.evaluator",
    },
}

# Imports under TYPE_CHECKING that name a model of an outer room in an annotation only (no runtime
# dependency), each with the reason it is allowed.
TYPE_ONLY_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("hwbench.core.device", "hwbench.accuracy.numerics.profile"): (
        "Device.numerics() and RunRequest.profile are annotated with the NumericsProfile model; core "
        "never constructs or reads one"
    ),
}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _resolve(target: str, mods: dict[str, Path]) -> str | None:
    while target and target not in mods:
        target = target.rpartition(".")[0]
    return target or None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(name: str, path: Path, mods: dict[str, Path]) -> dict[str, bool]:
    """Modules ``name`` imports -> whether only under TYPE_CHECKING."""
    tree = ast.parse(path.read_text())
    typing_only = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule (as import-linter counts it), else pkg
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        for target in targets:
            if not target.startswith("hwbench"):
                continue
            module = _resolve(target, mods)
            if module and module != name:
                found[module] = found.get(module, True) and node.lineno in typing_only
    return found


def _room(module: str) -> str:
    return max((room for room in ROOMS if module == room or module.startswith(room + ".")), key=len)


GRAPH = {name: _imports(name, path, _modules()) for name, path in _modules().items()}


def test_every_module_is_in_a_room() -> None:
    """A new top-level package must be given a room here (and in docs/architecture.md) on purpose."""
    assert "hwbench.core.plugins" in GRAPH and "hwbench.accuracy.numerics.emulate" in GRAPH
    homeless = [m for m in GRAPH if _room(m) == "hwbench" and m not in ("hwbench", "hwbench.api")]
    assert not homeless, f"modules outside every room: {homeless}"


def test_no_module_imports_a_room_above_its_own() -> None:
    bad = []
    for module, imports in GRAPH.items():
        room = _room(module)
        for target, type_only in imports.items():
            other = _room(target)
            if other == room or other in ROOMS[room]:
                continue
            if type_only and (module, target) in TYPE_ONLY_EXCEPTIONS:
                continue
            bad.append(f"{module} ({room}) imports {target} ({other})")
    assert not bad, "imports against docs/architecture.md:\n" + "\n".join(sorted(bad))


def test_no_import_circles() -> None:
    """Tarjan's strongly connected components over every import, lazy and typing-only included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_core_names_no_plugin_and_the_checker_sees_lazy_imports() -> None:
    """The checker itself: a lazy import inside a function body is an edge."""
    assert "hwbench.accuracy.numerics.emulate" in GRAPH["hwbench.accuracy.numerics.emulated_device"]
    edges = defaultdict(set)
    for module, imports in GRAPH.items():
        for target in imports:
            edges[_room(module)].add(_room(target))
    assert "hwbench.plugins" not in edges["hwbench.core"]
    assert "hwbench.cli" not in edges["hwbench.core"]


# The audit engine and its protocols (docs/architecture.md, "The audit engine and its protocols").
ENGINE = "hwbench.accuracy.audit"
PROTOCOL_MODULES = {
    "hwbench.stress.protocols": {"validation", "stress", "spike-train"},
    "hwbench.plugins.kernels.dl.protocol": {"dl-primitives"},
    "hwbench.plugins.kernels.snn.precision_protocol": {"training-precision"},
    "hwbench.plugins.kernels.model.protocol": {"onnx-model"},
}


def test_the_audit_engine_imports_no_protocol() -> None:
    """The auditor knows no protocol: it reaches none of their modules, directly or through others
    (it may use the time-stepped machinery that several protocols share, which names none)."""
    reached: set[str] = set()
    todo = [ENGINE]
    while todo:
        module = todo.pop()
        for target in GRAPH.get(module, {}):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    assert not reached & {*PROTOCOL_MODULES, "hwbench.accuracy.spike_train", "hwbench.accuracy.validation"}
    assert not any(_room(m) in ("hwbench.plugins", "hwbench.stress", "hwbench.cli") for m in reached)


def test_every_builtin_protocol_comes_through_the_hook() -> None:
    """Built-in protocols are plugins like third-party ones: each module that registers them is a
    built-in plugin, and what the registry holds is exactly what those modules return."""
    from hwbench.core.plugins import BUILTIN_PLUGINS, load_registry

    assert set(PROTOCOL_MODULES) <= set(BUILTIN_PLUGINS.values())
    registry = load_registry(entry_point_plugins=False)
    owners = {s.module: set(s.provides.get("protocols", [])) for s in registry.plugins}
    assert {m: owners[m] for m in PROTOCOL_MODULES} == PROTOCOL_MODULES
    assert set(registry.protocols) == set().union(*PROTOCOL_MODULES.values())
