"""The host CPU: the IEEE fp32 reference and the fp64 gold every other device is judged against."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hwbench.core.device import Device, DeviceSpec, ProbeResult, RunRequest, Support
from hwbench.core.engine import Executor
from hwbench.core.errors import UsageError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.host import host_cpu
from hwbench.core.kernel import Kernel, Workload

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile

STUDY = "Landsmeer et al., Neurocomputing 2024, Table I"


class CpuDevice(Device):
    """Runs on this host's CPU. The spec quotes the founding study's CPU so results compare."""

    spec = DeviceSpec(
        name="cpu",
        vendor="AMD",
        model="Ryzen Threadripper PRO 3955WX (study reference; runs on this host's CPU)",
        kind="cpu",
        memory="128 GB DDR4",
        memory_bytes=128 * 10**9,
        process_nm=7,
        transistors_bn=19.94,
        clock_mhz="3900-4300",
        tdp_w=280,
        software="TF 2.11.0 (study); here: numpy / JAX / TensorFlow / ONNX Runtime",
        sources=[STUDY],
    )
    modes = ("fp32", "fp64")

    def probe(self) -> ProbeResult:
        return ProbeResult(status="real", reason=f"host CPU: {host_cpu()}")

    def numerics(self, mode: str | None = None, overrides: dict[str, Any] | None = None) -> NumericsProfile:
        """IEEE fp32 / fp64: nothing to set (``overrides`` is refused, naming what is settable)."""
        from hwbench.accuracy.numerics.presets import cpu_profile

        if overrides:
            raise UsageError(
                f"device 'cpu' has no parameter {', '.join(sorted(overrides))}; settable: nothing "
                "(the CPU runs native IEEE arithmetic)"
            )
        return cpu_profile(mode or self.default_mode)

    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        return Support.yes("IEEE-754 arithmetic; limited only by host memory")

    def executor(self, request: RunRequest) -> Executor:
        """Native IEEE arithmetic on the chosen engine. A request's profile is honoured by running
        the generic emulation of it (a CPU profile is native, so only a user's own file does that)."""
        from hwbench.core.engines.select import build_engine, pick_engine
        from hwbench.core.plugins import get_registry

        mode = request.mode or self.default_mode
        if request.profile is not None or request.counters:
            from hwbench.accuracy.numerics.emulated_device import emulated_executor

            profile = request.profile if request.profile is not None else self.numerics(mode)
            return emulated_executor(request.with_mode(mode), profile)
        dtype = request.dtype or ("float64" if mode == "fp64" else "float32")
        chosen = pick_engine(get_registry().engines, request.engine, dtype)
        return build_engine(
            chosen,
            request.kernel,
            request.workload,
            dtype=dtype,
            sample_every=request.sample_every,
            shards=request.shards,
        )


@hookimpl
def hwbench_devices() -> list[Device]:
    return [CpuDevice()]
