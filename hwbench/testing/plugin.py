"""The hwbench pytest plugin, loaded through the ``pytest11`` entry point ``hwbench``.

Fixtures:
  ``hwbench_registry``  an isolated plugin registry (built-ins + installed plugins), installed as
                        the process-wide registry for the test and removed afterwards;
  ``register_plugin``   ``register_plugin(obj, name=None)`` adds an in-process plugin object (a
                        module or class with ``@hookimpl`` functions) and returns the new registry;
  ``device``            parametrised over devices: every registered device, or those named by
                        ``@pytest.mark.hwbench_devices("groq", "a100")`` or ``--hwbench-devices``;
  ``hwbench_cli``       ``hwbench_cli("devices", "--json")`` runs the real CLI in-process and
                        returns its exit code, stdout, stderr (and ``.json()``).
Importing this module is cheap: nothing heavy is imported until a fixture is used.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hwbench")
    group.addoption(
        "--hwbench-devices",
        default=None,
        help="comma-separated devices the `device` fixture runs over (default: all registered)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hwbench_devices(*names): devices the `device` fixture is parametrised with")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):  # the user parametrises it: stand aside
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if "device" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)):
            return
    marker = metafunc.definition.get_closest_marker("hwbench_devices")
    option = metafunc.config.getoption("--hwbench-devices", default=None)
    if marker is not None:
        names = list(marker.args)
    elif option:
        names = [n.strip() for n in option.split(",") if n.strip()]
    else:
        from hwbench.core.plugins import load_registry

        names = sorted(load_registry().devices)
    metafunc.parametrize("device", names, indirect=True, ids=names)


@pytest.fixture
def hwbench_registry() -> Iterator[Any]:
    """A fresh registry, used by everything hwbench does during the test, then discarded."""
    from hwbench.core import plugins

    saved = plugins._cached
    plugins._cached = plugins.load_registry()
    try:
        yield plugins._cached
    finally:
        plugins._cached = saved


@pytest.fixture
def register_plugin(hwbench_registry: Any) -> Callable[..., Any]:
    """Register in-process plugin objects; returns the registry that includes them."""
    from hwbench.core import plugins

    extra: dict[str, object] = {}

    def register(plugin: object, name: str | None = None) -> Any:
        extra[name or str(getattr(plugin, "__name__", repr(plugin)))] = plugin
        plugins._cached = plugins.load_registry(extra=extra)
        return plugins._cached

    return register


@pytest.fixture
def device(request: pytest.FixtureRequest, hwbench_registry: Any) -> Any:
    """The device named by the test's parameter (see the module docstring)."""
    name = getattr(request, "param", None)
    if name is None:
        pytest.fail(
            "the `device` fixture needs parameters: use @pytest.mark.hwbench_devices(...) or let it run over all"
        )
    return hwbench_registry.device(name)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def hwbench_cli(hwbench_registry: Any) -> Callable[..., CliResult]:
    """Run ``hwbench`` in-process with the isolated registry; output captured per call."""
    from hwbench.cli.main import main

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return CliResult(code, out.getvalue(), err.getvalue())

    return run
