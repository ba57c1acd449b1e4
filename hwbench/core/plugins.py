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
from typing import Any, Literal, TypeVar

import pluggy

from hwbench.core import contract, hookspecs
from hwbench.core.audit_protocol import AuditProtocol
from hwbench.core.device import Device
from hwbench.core.engine import Engine
from hwbench.core.errors import PluginError, UnavailableError, unknown_name
from hwbench.core.kernel import Kernel
from hwbench.core.metric import Metric

# Built-ins, registered through the same hooks as third-party plugins. Names are the plugin names
# shown by `hwbench plugins` and accepted by HWBENCH_DISABLE_PLUGINS.
BUILTIN_PLUGINS: dict[str, str] = {
    "builtin-engines": "hwbench.plugins.engines",
    "builtin-cpu": "hwbench.plugins.devices.cpu",
    "builtin-a100": "hwbench.plugins.devices.a100",
    "builtin-h100": "hwbench.plugins.devices.h100",
    "builtin-tpu": "hwbench.plugins.devices.tpu",
    "builtin-ipu": "hwbench.plugins.devices.ipu",
    "builtin-groq": "hwbench.plugins.devices.groq",
    "builtin-loihi": "hwbench.plugins.devices.loihi",
    "builtin-spinnaker": "hwbench.plugins.devices.spinnaker",
    "builtin-kernels": "hwbench.plugins.kernels",
    "builtin-metrics": "hwbench.plugins.metrics",
    "builtin-neurobench-metrics": "hwbench.plugins.metrics_neurobench",
    "builtin-system-metrics": "hwbench.plugins.metrics_system",
    "builtin-audit-protocols": "hwbench.stress.protocols",
    "builtin-dl-protocol": "hwbench.plugins.kernels.dl.protocol",
    "builtin-model-protocol": "hwbench.plugins.kernels.model.protocol",
    "builtin-training-protocol": "hwbench.plugins.kernels.snn.precision_protocol",
}

# hook name -> (registry attribute, expected type, what the record is called)
_REGISTRATIONS: dict[str, tuple[str, type, str]] = {
    "hwbench_engines": ("engines", Engine, "engine"),
    "hwbench_devices": ("devices", Device, "device"),
    "hwbench_kernels": ("kernels", Kernel, "kernel"),
    "hwbench_metrics": ("metrics", Metric, "metric"),
    "hwbench_audit_protocols": ("protocols", AuditProtocol, "protocol"),
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
    contract: int | None = None  # the plugin contract it declares or was found written for
    notes: list[str] = field(default_factory=list)

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
            "contract": self.contract,
            "notes": self.notes,
        }


def _names(env: Mapping[str, str], key: str) -> set[str] | None:
    raw = env.get(key)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0]}" if text else exc.__class__.__name__


_Record = TypeVar("_Record")


class Registry:
    """Everything the plugins registered, plus the status of every plugin."""

    def __init__(self, pm: pluggy.PluginManager, statuses: list[PluginStatus]) -> None:
        self.pm = pm
        self.plugins = statuses
        self.devices: dict[str, Device] = {}
        self.kernels: dict[str, Kernel] = {}
        self.metrics: dict[str, Metric] = {}
        self.engines: dict[str, Engine] = {}
        self.protocols: dict[str, AuditProtocol] = {}
        self.registered: dict[str, PluginStatus] = {}
        self.warnings: list[str] = []  # configuration problems the CLI shows (e.g. unknown plugin names)

    def _lookup(self, table: dict[str, _Record], kind: str, name: str) -> _Record:
        try:
            return table[name]
        except KeyError:
            raise unknown_name(kind, name, table) from None

    def device(self, name: str) -> Device:
        if name not in self.devices:
            plugin = self._disabled_builtin_providing("hwbench_devices", name)
            if plugin is not None:
                what = "the CPU reference device" if name == "cpu" else f"device '{name}'"
                raise UnavailableError(f"{what} is disabled (HWBENCH_DISABLE_PLUGINS={plugin})")
        return self._lookup(self.devices, "device", name)

    def _disabled_builtin_providing(self, hook: str, name: str) -> str | None:
        """The disabled built-in plugin that would register ``name`` (only on the error path:
        built-ins are cheap to import; a disabled third-party plugin is never loaded)."""
        for status in self.plugins:
            if status.status != "disabled" or status.source != "builtin":
                continue
            try:
                records = getattr(importlib.import_module(status.module), hook, lambda: None)() or []
            except Exception:  # a broken built-in must not hide the original lookup error
                continue
            if any(getattr(r, "name", None) == name for r in records):
                return status.name
        return None

    def kernel(self, name: str) -> Kernel:
        return self._lookup(self.kernels, "kernel", name)

    def metric(self, name: str) -> Metric:
        return self._lookup(self.metrics, "metric", name)

    def engine(self, name: str) -> Engine:
        return self._lookup(self.engines, "engine", name)

    def protocol(self, name: str) -> AuditProtocol:
        return self._lookup(self.protocols, "protocol", name)

    @property
    def failed(self) -> list[PluginStatus]:
        return [p for p in self.plugins if p.status == "failed"]

    def call_each(self, hook: str, **kwargs: Any) -> None:
        """Call a non-registration hook (e.g. ``hwbench_add_commands``) plugin by plugin."""
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            status = self.registered[impl.plugin_name]
            if status.status == "failed":
                continue
            try:
                impl.function(**kwargs)
            except (Exception, SystemExit) as exc:
                status.fail(f"{hook} raised {_describe(exc)}")
                if os.environ.get("HWBENCH_STRICT_PLUGINS", "") not in ("", "0"):
                    raise PluginError(f"plugin '{status.name}' failed: {hook} raised {_describe(exc)}") from exc


class _Host:
    """One loading pass: the plugin manager, the statuses, and how strict to be."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.strict = env.get("HWBENCH_STRICT_PLUGINS", "") not in ("", "0")
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.statuses: list[PluginStatus] = []
        self.registered: dict[str, PluginStatus] = {}  # pluggy name -> status, in load order

    def fail(self, status: PluginStatus, message: str, exc: BaseException | None = None) -> None:
        status.fail(message)
        if self.strict:
            raise PluginError(f"plugin '{status.name}' failed: {message}") from exc

    def register(self, status: PluginStatus, load: Any) -> None:
        self.statuses.append(status)
        try:
            plugin = load()
            status.contract = contract.declared_contract(plugin)
        except (Exception, SystemExit) as exc:  # a vendor SDK calling exit() must not end hwbench
            self.fail(status, f"failed to load: {_describe(exc)}", exc)
            return
        refused = contract.refusal(status.contract)
        if refused:
            self.fail(status, refused)
            return
        try:
            self.pm.register(plugin, name=status.name)
        except (Exception, SystemExit) as exc:
            self.fail(status, f"failed to load: {_describe(exc)}", exc)
            return
        unknown = [hc.name for hc in self.pm.get_hookcallers(plugin) or [] if hc.spec is None]
        if unknown:
            self.pm.unregister(plugin)
            valid = [name for name in dir(hookspecs) if name.startswith("hwbench_")]
            hints = [unknown_name("hook", name, valid) for name in unknown]
            self.fail(status, "; ".join(str(h).replace("unknown hook", "implements unknown hook") for h in hints))
            return
        self.registered[status.name] = status


def load_registry(
    *,
    builtins: bool = True,
    entry_point_plugins: bool = True,
    extra: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
) -> Registry:
    """Load every plugin on its own and collect what each registers.

    A plugin contributes all of its records or none: one that fails to load, raises in any
    registration hook, returns the wrong type or claims a name already taken is marked failed
    and registers nothing. Names go to the first plugin in load order (built-ins first).
    ``extra`` registers additional plugin objects by name (used by ``hwbench.testing``).
    """
    env = os.environ if env is None else env
    allow = _names(env, "HWBENCH_LOAD_PLUGINS")
    deny = _names(env, "HWBENCH_DISABLE_PLUGINS") or set()
    host = _Host(env)

    def candidate(status: PluginStatus, load: Any) -> None:
        if status.name in deny:
            host.statuses.append(status)
            status.status, status.error = "disabled", "disabled by HWBENCH_DISABLE_PLUGINS"
        elif status.name in host.registered or any(s.name == status.name for s in host.statuses):
            host.statuses.append(status)
            host.fail(status, f"duplicate plugin name '{status.name}'")
        else:
            host.register(status, load)

    if builtins:
        for name, module in BUILTIN_PLUGINS.items():
            candidate(PluginStatus(name, "builtin", module), lambda m=module: importlib.import_module(m))
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
                host.statuses.append(status)
                status.status, status.error = "disabled", "not in HWBENCH_LOAD_PLUGINS"
                continue
            candidate(status, ep.load)
    for name, plugin in (extra or {}).items():
        candidate(PluginStatus(name, "entry point", repr(plugin)), lambda p=plugin: p)

    registry = Registry(host.pm, host.statuses)
    registry.warnings = _unknown_names(host.statuses, allow, deny, entry_point_plugins)
    registry.registered = host.registered
    _fill(registry, host)
    return registry


def _fill(registry: Registry, host: _Host) -> None:
    """Each registered plugin's records into the registry: all of them, or none if one name is taken."""
    owner: dict[tuple[str, str], str] = {}
    for plugin_name, status in host.registered.items():
        records = _collect(host, plugin_name, status)
        if records is None:
            continue
        clash = next(((attr, what, r.name) for attr, what, r in records if (attr, r.name) in owner), None)
        if clash is not None:
            attr, what, key = clash
            host.fail(status, f"{what} '{key}' is already registered by plugin '{owner[(attr, key)]}'")
            continue
        for attr, _, record in records:
            getattr(registry, attr)[record.name] = record
            owner[(attr, record.name)] = status.name
            status.provides.setdefault(attr, []).append(record.name)


def _unknown_names(
    statuses: list[PluginStatus], allow: set[str] | None, deny: set[str], entry_point_plugins: bool
) -> list[str]:
    """A warning for each name in HWBENCH_LOAD_PLUGINS / HWBENCH_DISABLE_PLUGINS that names no plugin."""
    installed = sorted(s.name for s in statuses if s.source == "entry point")
    known = sorted(s.name for s in statuses)
    out = []
    if allow is not None and entry_point_plugins:
        for name in sorted(allow - set(installed)):
            choices = ", ".join(installed) if installed else "none are installed"
            out.append(f"HWBENCH_LOAD_PLUGINS names unknown plugin '{name}'; installed plugins: {choices}")
    for name in sorted(deny - set(known)) if entry_point_plugins else ():
        out.append(f"HWBENCH_DISABLE_PLUGINS names unknown plugin '{name}'; known plugins: {', '.join(known)}")
    return out


def _collect(host: _Host, plugin_name: str, status: PluginStatus) -> list[tuple[str, str, Any]] | None:
    """Every record one plugin registers, validated; None (and the plugin failed) on any error."""
    plugin = host.pm.get_plugin(plugin_name)
    records: list[tuple[str, str, Any]] = []
    for hook, (attr, expected, what) in _REGISTRATIONS.items():
        impls = [i for i in getattr(host.pm.hook, hook).get_hookimpls() if i.plugin is plugin]
        for impl in impls:
            try:
                result = impl.function()
            except (Exception, SystemExit) as exc:
                host.fail(status, f"{hook} raised {_describe(exc)}", exc)
                return None
            if result is None:
                continue
            if not isinstance(result, (list, tuple)) or not all(isinstance(r, expected) for r in result):
                host.fail(status, f"{hook} must return a list of {expected.__name__}, got {result!r:.80}")
                return None
            names = [r.name for r in result]
            if len(set(names)) != len(names):
                host.fail(status, f"{hook} returned the same {what} name twice")
                return None
            if what == "device":
                result = [_adapted(status, r) for r in result]
            if what == "kernel":
                result = [_kernel_adapted(status, r) for r in result]
            records += [(attr, what, r) for r in result]
    if status.contract is None:
        status.contract = contract.CONTRACT_VERSION
    return records


def _adapted(status: PluginStatus, device: Device) -> Device:
    """The device as the host calls it: a contract-1 executor gets an adapter, and a note says so."""
    if contract.executor_contract(device) == contract.CONTRACT_VERSION:
        return device
    adapted = contract.adapt(device)
    status.contract = 1
    status.notes.append(
        f"device '{device.name}' implements plugin contract 1 (executor(kernel, workload, ...)); "
        f"served through an adapter: options it cannot take are refused (contract {contract.CONTRACT_VERSION} "
        "has executor(request))"
    )
    return adapted


def _kernel_adapted(status: PluginStatus, kernel: Kernel) -> Kernel:
    """A kernel that declares validation or stress without floors was written for contract 2: it
    gets the floors contract 2 applied to every kernel (in mV), and a note says so."""
    if not contract.needs_contract2_floors(kernel):
        return kernel
    contract.adapt_kernel(kernel)
    status.notes.append(
        f"kernel '{kernel.name}' declares no audit floors (plugin contract 2): judged with contract 2's "
        f"floors in mV; contract {contract.CONTRACT_VERSION} kernels declare AuditFacts.floors in their probe's unit"
    )
    return kernel


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
