"""The hwbench pytest plugin, loaded through the ``pytest11`` entry point ``hwbench``.

Fixtures:
  ``hwbench_registry``  an isolated plugin registry (built-ins + installed plugins), installed as
                        the process-wide registry for the test and removed afterwards;
  ``register_plugin``   ``register_plugin(obj, name=None)`` adds an in-process plugin object (a
                        module or class with ``@hookimpl`` functions) and returns the new registry;
  ``device``            parametrised over devices: every registered device, or those named by
                        ``@pytest.mark.hwbench_devices("groq", "a100")`` or ``--hwbench-devices``;
  ``hwbench_device``    the same parametrisation as device names (``"a100:tensorrt"``: a mode may
                        be named), for ``assert_device_close(fn, ..., device=hwbench_device)``; a
                        device that cannot run a function (a neuromorphic chip) skips the test and
                        says why; session-scoped, so a hypothesis ``@given`` test may take it;
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
        help="comma-separated devices (NAME or NAME:MODE) the `device` and `hwbench_device` fixtures run over "
        "(default: all registered)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "hwbench_devices(*names): devices the `device` and `hwbench_device` fixtures are parametrised with"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for fixture in ("device", "hwbench_device"):
        if fixture in metafunc.fixturenames and not _parametrised_by_user(metafunc, fixture):
            names = _device_names(metafunc)
            metafunc.parametrize(fixture, names, indirect=True, ids=names)


def _parametrised_by_user(metafunc: pytest.Metafunc, fixture: str) -> bool:
    """Whether the test parametrises ``fixture`` itself (the plugin then stands aside)."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if fixture in ([n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)):
            return True
    return False


def _device_names(metafunc: pytest.Metafunc) -> list[str]:
    """The marker's devices, else ``--hwbench-devices``, else every registered device."""
    marker = metafunc.definition.get_closest_marker("hwbench_devices")
    option = metafunc.config.getoption("--hwbench-devices", default=None)
    if marker is not None:
        return list(marker.args)
    if option:
        return [n.strip() for n in option.split(",") if n.strip()]
    from hwbench.core.plugins import load_registry

    return sorted(load_registry().devices)


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


@pytest.fixture(scope="session")
def hwbench_device(request: pytest.FixtureRequest) -> str:
    """The device (``NAME`` or ``NAME:MODE``) named by the test's parameter (see the module
    docstring); the test is skipped, with the device's reason, where it cannot run a function."""
    from hwbench.core.plugins import get_registry
    from hwbench.library.function import refusal

    spec = getattr(request, "param", None)
    if spec is None:
        pytest.fail(
            "the `hwbench_device` fixture needs parameters: @pytest.mark.hwbench_devices(...) or --hwbench-devices"
        )
    name = str(spec).partition(":")[0]
    registry = get_registry()
    registry.device(name)  # an unknown name: its UsageError, with the registered ones
    why = refusal(registry, name)
    if why:
        pytest.skip(why)
    return str(spec)


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
