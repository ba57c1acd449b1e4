"""The plugin contract's version, and how plugins written against an older one keep working.

:data:`CONTRACT_VERSION` is re-exported by :mod:`hwbench.api`, whose docstring lists what each
version changed. The plugin host asks two things of every plugin it loads:

* its *declared* contract (``HWBENCH_CONTRACT`` in the entry-point module, optional): one newer
  than this hwbench's is refused at load time with a one-line reason, never a TypeError later;
* for each device, the contract its ``executor`` was *written* for, read from its signature:
  ``executor(self, request)`` is contract 2; ``executor(self, kernel, workload, ...)`` is contract
  1, and the device gets :class:`Contract1Adapter`, which translates a request into the
  keywords that executor accepts and refuses, with the reason, a request it cannot express;
* for each kernel, whether its audit facts were written for contract 2: one that declares the
  validation or stress protocol without ``AuditFacts.floors`` gets the floors contract 2 applied
  to every kernel (:data:`~hwbench.core.protocol_facts.CONTRACT2_FLOORS`, in mV).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hwbench.core.device import Device, RunRequest, takes_overrides
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel
from hwbench.core.protocol_facts import CONTRACT2_FLOORS

if TYPE_CHECKING:
    from hwbench.core.engine import Executor

CONTRACT_VERSION = 3
"""The plugin contract this hwbench implements (see :mod:`hwbench.api`)."""

# contract-1 executor keywords and the value that means "not asked for"
_LEGACY_KEYWORDS: dict[str, Any] = {
    "mode": None,
    "engine": None,
    "dtype": None,
    "profile": None,
    "sample_every": None,
    "counters": False,
}


def declared_contract(plugin: object) -> int | None:
    """The contract a plugin module declares (``HWBENCH_CONTRACT``), None when it declares none."""
    value = getattr(plugin, "HWBENCH_CONTRACT", None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"HWBENCH_CONTRACT must be a positive integer, got {value!r}")
    return value


def refusal(declared: int | None) -> str | None:
    """Why a plugin declaring ``declared`` cannot load here (None: it can)."""
    if declared is not None and declared > CONTRACT_VERSION:
        return (
            f"needs hwbench plugin contract {declared}; this hwbench implements contract {CONTRACT_VERSION} "
            "(upgrade hwbench)"
        )
    return None


def _parameters(method: Any) -> list[inspect.Parameter]:
    return list(inspect.signature(method).parameters.values())


def executor_contract(device: Device) -> int:
    """The contract ``device.executor`` was written for: 2 and later take a request, 1 takes kernel
    and workload (contract 3 left the executor as contract 2 had it)."""
    params = _parameters(device.executor)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return 1 if len(positional) >= 2 else CONTRACT_VERSION


def needs_contract2_floors(kernel: Kernel) -> bool:
    """A kernel declaring validation or stress but no floors: its facts follow contract 2."""
    audit = kernel.info.audit
    return audit.floors is None and (audit.validation is not None or audit.stress is not None)


def adapt_kernel(kernel: Kernel) -> Kernel:
    """The kernel with contract 2's floors on a copy of its record (the class's record is shared)."""
    audit = kernel.info.audit.model_copy(update={"floors": CONTRACT2_FLOORS})
    kernel.info = kernel.info.model_copy(update={"audit": audit})
    return kernel


def adapt(device: Device) -> Device:
    """``device`` itself when it implements this contract; else the same object, its class turned
    into a subclass that serves contract 2 through :class:`Contract1Adapter` (so ``isinstance``
    checks of the plugin's own class still hold)."""
    if executor_contract(device) == CONTRACT_VERSION:
        return device
    legacy = type(device)
    attrs = {"__module__": legacy.__module__, "__qualname__": legacy.__qualname__, "__doc__": legacy.__doc__}
    device.__class__ = type(legacy.__name__, (Contract1Adapter, legacy), attrs)
    return device


class Contract1Adapter(Device):
    """Serves a contract-1 device through the contract-2 interface (mixed in before its class).

    A request is translated into the keywords the old ``executor`` declares; an option the request
    needs (a replaced profile, step-wise sampling, counters) that the old signature cannot take is
    refused with :class:`~hwbench.core.errors.UnavailableError` naming the contract, instead of
    being dropped. ``numerics`` without an ``overrides`` parameter has nothing settable.
    """

    contract = 1

    def _legacy(self, name: str) -> Any:
        """The plugin's own method ``name`` (the class after this adapter in the MRO)."""
        return getattr(super(), name)

    def numerics(self, mode: str | None = None, overrides: dict[str, Any] | None = None) -> Any:
        legacy = self._legacy("numerics")
        if not overrides:
            return legacy(mode)
        if not takes_overrides(legacy):
            raise UsageError(f"device '{self.name}' has no settable numerics parameter; settable: nothing")
        return legacy(mode, overrides)

    def settable(self, mode: str | None = None) -> dict[str, Any]:
        legacy = self._legacy("numerics")
        if not takes_overrides(legacy):
            return {}
        return dict(getattr(legacy(mode), "parameters", None) or {})

    def executor(self, request: RunRequest) -> Executor:
        legacy: Callable[..., Executor] = self._legacy("executor")
        params = _parameters(legacy)
        takes_any = any(p.kind == p.VAR_KEYWORD for p in params)
        names = {p.name for p in params}
        call: dict[str, Any] = {}
        for key, unset in _LEGACY_KEYWORDS.items():
            value = getattr(request, key)
            if takes_any or key in names:
                call[key] = value
            elif value != unset:
                raise UnavailableError(
                    f"device '{self.name}' was written for hwbench plugin contract 1, whose executor() cannot "
                    f"take '{key}' (this run needs it); update its plugin to contract {CONTRACT_VERSION}: "
                    "executor(self, request: RunRequest)"
                )
        return legacy(request.kernel, request.workload, **call)
