"""The plugin host: built-in and pip-installed plugins, each loaded and called on its own.

Built-in plugins are modules listed in :data:`hwbench.core.plugins.BUILTIN_PLUGINS`; third-party
plugins are entry points in the group ``hwbench``. Both register through the same hooks. A plugin
that fails to import, raises in a hook, returns the wrong type or registers a name another plugin
already holds is recorded as failed with its error, and the rest of hwbench carries on — unless
``HWBENCH_STRICT_PLUGINS=1``, which re-raises (for plugin authors debugging their plugin).

Environment:
  ``HWBENCH_LOAD_PLUGINS``     comma-separated allowlist of entry-point plugins (set but empty: none)
  ``HWBENCH_DISABLE_PLUGINS``  comma-separated blocklist (built-in or entry-point names)
  ``HWBENCH_STRICT_PLUGINS``   ``1`` re-raises the first plugin failure
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal

import pluggy

from hwbench.core import hookspecs
from hwbench.core.device import Device
from hwbench.core.engine import Engine
from hwbench.core.errors import PluginError, unknown_name
from hwbench.core.kernel import Kernel
from hwbench.core.metric import Metric

# Built-ins, registered through the same hooks as third-party plugins. Names are the plugin names
# shown by `hwbench plugins` and accepted by HWBENCH_DISABLE_PLUGINS.
BUILTIN_PLUGINS: dict[str, str] = {
    "builtin-engines": "hwbench.plugins.engines",
    "builtin-cpu": "hwbench.plugins.devices.cpu",
    "builtin-a100": "hwbench.plugins.devices.a100",
    "builtin-tpu": "hwbench.plugins.devices.tpu",
    "builtin-ipu": "hwbench.plugins.devices.ipu",
    "builtin-groq": "hwbench.plugins.devices.groq",
    "builtin-loihi": "hwbench.plugins.devices.loihi",
    "builtin-spinnaker": "hwbench.plugins.devices.spinnaker",
    "builtin-kernels": "hwbench.plugins.kernels",
    "builtin-metrics": "hwbench.plugins.metrics",
}

# hook name -> (registry attribute, expected type, what the record is called)
_REGISTRATIONS: dict[str, tuple[str, type, str]] = {
    "hwbench_engines": ("engines", Engine, "engine"),
    "hwbench_devices": ("devices", Device, "device"),
    "hwbench_kernels": ("kernels", Kernel, "kernel"),
    "hwbench_metrics": ("metrics", Metric, "metric"),
}


@dataclass
class PluginStatus:
    """One row of ``hwbench plugins``."""

    name: str
    source: Literal["builtin", "entry point"]
    module: str
    distribution: str | None = None
    version: str | None = None
    status: Literal["loaded", "failed", "disabled"] = "loaded"
    error: str | None = None
    provides: dict[str, list[str]] = field(default_factory=dict)

    def fail(self, error: str) -> None:
        self.status = "failed"
        self.error = error if self.error is None else f"{self.error}; {error}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "error": self.error,
            "provides": self.provides,
        }


def _names(env: Mapping[str, str], key: str) -> set[str] | None:
    raw = env.get(key)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0]}" if text else exc.__class__.__name__


class Registry:
    """Everything the plugins registered, plus the status of every plugin."""

    def __init__(self, pm: pluggy.PluginManager, statuses: list[PluginStatus]) -> None:
        self.pm = pm
        self.plugins = statuses
        self.devices: dict[str, Device] = {}
        self.kernels: dict[str, Kernel] = {}
        self.metrics: dict[str, Metric] = {}
        self.engines: dict[str, Engine] = {}

    def _lookup(self, table: dict[str, Any], kind: str, name: str) -> Any:
        try:
            return table[name]
        except KeyError:
            raise unknown_name(kind, name, table) from None

    def device(self, name: str) -> Device:
        return self._lookup(self.devices, "device", name)

    def kernel(self, name: str) -> Kernel:
        return self._lookup(self.kernels, "kernel", name)

    def metric(self, name: str) -> Metric:
        return self._lookup(self.metrics, "metric", name)

    def engine(self, name: str) -> Engine:
        return self._lookup(self.engines, "engine", name)

    @property
    def failed(self) -> list[PluginStatus]:
        return [p for p in self.plugins if p.status == "failed"]

    def call_each(self, hook: str, **kwargs: Any) -> None:
        """Call a non-registration hook (e.g. ``hwbench_add_commands``) plugin by plugin."""
        by_name = {p.name: p for p in self.plugins}
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            try:
                impl.function(**kwargs)
            except Exception as exc:
                _failure(by_name[impl.plugin_name], f"{hook} raised {_describe(exc)}", exc)


def _strict() -> bool:
    return os.environ.get("HWBENCH_STRICT_PLUGINS", "") not in ("", "0")


def _failure(status: PluginStatus, message: str, exc: BaseException | None = None) -> None:
    status.fail(message)
    if _strict():
        raise PluginError(f"plugin '{status.name}' failed: {message}") from exc


def load_registry(
    *,
    builtins: bool = True,
    entry_point_plugins: bool = True,
    extra: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
) -> Registry:
    """Load every plugin on its own and collect what each registers.

    ``extra`` registers additional plugin objects by name (used by ``hwbench.testing``).
    """
    env = os.environ if env is None else env
    allow = _names(env, "HWBENCH_LOAD_PLUGINS")
    deny = _names(env, "HWBENCH_DISABLE_PLUGINS") or set()
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    statuses: list[PluginStatus] = []

    def register(status: PluginStatus, load: Any) -> None:
        statuses.append(status)
        if status.name in deny:
            status.status = "disabled"
            status.error = "disabled by HWBENCH_DISABLE_PLUGINS"
            return
        try:
            plugin = load()
            pm.register(plugin, name=status.name)
        except Exception as exc:
            _failure(status, f"failed to load: {_describe(exc)}", exc)

    if builtins:
        for name, module in BUILTIN_PLUGINS.items():
            register(PluginStatus(name, "builtin", module), lambda m=module: importlib.import_module(m))
    if entry_point_plugins:
        for ep in entry_points(group=hookspecs.ENTRY_POINT_GROUP):
            dist = getattr(ep, "dist", None)
            status = PluginStatus(
                ep.name,
                "entry point",
                ep.value,
                distribution=dist.metadata["Name"] if dist is not None else None,
                version=dist.version if dist is not None else None,
            )
            if allow is not None and ep.name not in allow:
                statuses.append(status)
                status.status = "disabled"
                status.error = "not in HWBENCH_LOAD_PLUGINS"
                continue
            if any(s.name == ep.name for s in statuses):
                statuses.append(status)
                _failure(status, f"duplicate plugin name '{ep.name}'")
                continue
            register(status, ep.load)
    for name, plugin in (extra or {}).items():
        register(PluginStatus(name, "entry point", repr(plugin)), lambda p=plugin: p)

    registry = Registry(pm, statuses)
    by_name = {s.name: s for s in statuses}
    owner: dict[tuple[str, str], str] = {}
    for hook, (attr, expected, what) in _REGISTRATIONS.items():
        table: dict[str, Any] = getattr(registry, attr)
        # pluggy orders implementations by registration and tryfirst/trylast; use load order (first wins).
        for impl in sorted(getattr(pm.hook, hook).get_hookimpls(), key=lambda i: list(by_name).index(i.plugin_name)):
            status = by_name[impl.plugin_name]
            if status.status == "failed":
                continue
            try:
                records = impl.function()
            except Exception as exc:
                _failure(status, f"{hook} raised {_describe(exc)}", exc)
                continue
            if records is None:
                continue
            if not isinstance(records, (list, tuple)) or not all(isinstance(r, expected) for r in records):
                _failure(status, f"{hook} must return a list of {expected.__name__}, got {records!r:.80}")
                continue
            for record in records:
                key = record.name
                if key in table:
                    _failure(status, f"{what} '{key}' is already registered by plugin '{owner[(attr, key)]}'")
                    continue
                table[key] = record
                owner[(attr, key)] = status.name
                status.provides.setdefault(attr, []).append(key)
    return registry


_cached: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    global _cached
    if _cached is None:
        _cached = load_registry()
    return _cached


def reset_registry() -> None:
    global _cached
    _cached = None
