"""Shared machinery of devices that run for real when their chip is present and are emulated
otherwise: probing, profile lookup with overrides, and the emulating executor.

A subclass supplies the spec, its modes, ``profile_for(mode)`` (a cited NumericsProfile), a
capacity model in ``supports``, and — where a real backend can exist — ``detect_real()`` and
``real_executor()``. Emulation always runs the kernel through ``hwbench.accuracy.emulate`` on the
fastest local engine, with the profile's carrier dtype.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from hwbench.core.device import Device, ProbeResult
from hwbench.core.engine import Executor
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel, Workload

if TYPE_CHECKING:
    from hwbench.accuracy.profile import NumericsProfile


class EmulatedDevice(Device):
    """A device that is real when its SDK and chip are found, emulated otherwise."""

    #: what ``detect_real`` looks for, shown in the emulated reason
    looked_for: str = "the vendor SDK"

    def detect_real(self) -> str | None:
        """A description of the real backend if the chip is usable here, else None. Cheap."""
        return None

    def real_executor(
        self, kernel: Kernel, workload: Workload, mode: str, engine: str | None, dtype: str | None
    ) -> Executor:
        raise UnavailableError(f"no real backend for device '{self.name}' in this version")

    @abstractmethod
    def profile_for(self, mode: str) -> NumericsProfile:
        """The cited numerics profile of ``mode`` (before user overrides)."""

    def probe(self) -> ProbeResult:
        real = self.detect_real()
        if real:
            return ProbeResult(status="real", reason=real)
        return ProbeResult(
            status="emulated", reason=f"{self.looked_for} not found; arithmetic emulated per its numerics profile"
        )

    def numerics(self, mode: str | None = None, overrides: dict[str, Any] | None = None) -> NumericsProfile:
        mode = mode or self.default_mode
        if mode not in self.modes:
            from hwbench.core.errors import unknown_name

            raise unknown_name(f"mode of device '{self.name}'", mode, self.modes)
        profile = self.profile_for(mode)
        if overrides:
            profile = self.apply_overrides(profile, overrides)
        return profile

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        """Default: only keys of ``profile.parameters`` may be set; subclasses rebuild what depends on them."""
        unknown = sorted(set(overrides) - set(profile.parameters))
        if unknown:
            allowed = ", ".join(sorted(profile.parameters)) or "(none)"
            raise UsageError(f"device '{self.name}' has no parameter {', '.join(unknown)}; settable: {allowed}")
        return profile.model_copy(update={"parameters": {**profile.parameters, **overrides}})

    def executor(
        self,
        kernel: Kernel,
        workload: Workload,
        *,
        mode: str | None = None,
        engine: str | None = None,
        dtype: str | None = None,
        profile: NumericsProfile | None = None,
        sample_every: int | None = None,
        counters: bool = False,
    ) -> Executor:
        mode = mode or self.default_mode
        if profile is None and sample_every is None and not counters and self.detect_real():
            return self.real_executor(kernel, workload, mode, engine, dtype)
        return self.emulated(
            kernel,
            workload,
            profile or self.numerics(mode),
            engine=engine,
            sample_every=sample_every,
            counters=counters,
        )

    def emulated(
        self,
        kernel: Kernel,
        workload: Workload,
        profile: NumericsProfile,
        *,
        engine: str | None = None,
        sample_every: int | None = None,
        counters: bool = False,
    ) -> Executor:
        """The emulation of ``profile`` (override for arithmetic a profile alone cannot express)."""
        return emulated_executor(kernel, workload, profile, engine=engine, sample_every=sample_every, counters=counters)


class KnobbedDevice(EmulatedDevice):
    """A device whose profiles are built from (mode, documented knob values): ``--set`` overrides
    go through the knobs' own validation and rebuild the whole profile, so derived entries follow."""

    mode_knobs: dict[str, dict[str, Any]]  # mode -> {name: presets.Knob}

    @staticmethod
    def build_profile(mode: str, values: dict[str, Any]) -> NumericsProfile:
        raise NotImplementedError

    def profile_for(self, mode: str) -> NumericsProfile:
        from hwbench.accuracy.presets import resolve_knobs

        return self.build_profile(mode, resolve_knobs(self.name, self.mode_knobs[mode], {}))

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        from hwbench.accuracy.presets import resolve_knobs

        values = resolve_knobs(self.name, self.mode_knobs[profile.mode], {**profile.parameters, **overrides})
        return self.build_profile(profile.mode, values)


def emulated_executor(
    kernel: Kernel,
    workload: Workload,
    profile: NumericsProfile,
    *,
    engine: str | None = None,
    sample_every: int | None = None,
    counters: bool = False,
) -> Executor:
    """Build ``kernel`` on a local engine (JAX by default) under ``profile``'s emulating ops.

    ``counters`` (per-op-class event counts) roughly triples the cost of emulation, so it is off
    except where forensics needs it."""
    from hwbench.accuracy.emulate import emulating_ops
    from hwbench.core.engines.select import pick_engine
    from hwbench.core.plugins import get_registry

    chosen = pick_engine(get_registry().engines, engine, profile.carrier)
    wrapper = emulating_ops(profile, counters=counters)
    executor = chosen.build(kernel, workload, dtype=profile.carrier, sample_every=sample_every, ops_wrapper=wrapper)
    executor.detail = f"emulating {profile.name}"
    return executor
