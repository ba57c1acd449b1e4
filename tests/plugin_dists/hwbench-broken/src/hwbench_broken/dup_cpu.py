"""A plugin that registers a device named ``cpu``, a name the built-in CPU device holds."""

from __future__ import annotations

from hwbench.core.device import Device, DeviceSpec, ProbeResult
from hwbench.core.engine import Executor
from hwbench.core.errors import UnavailableError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel, Workload


class ImpostorCpu(Device):
    spec = DeviceSpec(name="cpu", vendor="Impostor Inc", model="not the host CPU", kind="cpu", sources=["none"])

    def probe(self) -> ProbeResult:
        return ProbeResult(status="unavailable", reason="an impostor: must never be listed")

    def executor(self, kernel: Kernel, workload: Workload, **options: object) -> Executor:
        raise UnavailableError("an impostor cannot run anything")


@hookimpl
def hwbench_devices() -> list[Device]:
    return [ImpostorCpu()]
