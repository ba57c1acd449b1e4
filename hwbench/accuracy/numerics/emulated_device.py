"""Shared machinery of devices that run for real when their chip is present and are emulated
otherwise: probing, profile lookup with overrides, and the emulating executor.

A subclass supplies the spec, its modes, ``profile_for(mode)`` (a cited NumericsProfile), a
capacity model in ``supports``, and — where a real backend can exist — ``detect_real()`` and
``real_executor()``. Emulation always runs the kernel through ``hwbench.accuracy.numerics.emulate`` on the
fastest local engine, with the profile's carrier dtype.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from hwbench.core.device import Device, ProbeResult, RunRequest
from hwbench.core.engine import Executor, OpsWrapper
from hwbench.core.errors import UnavailableError, UsageError

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile


class EmulatedDevice(Device):
    """A device that is real when its SDK and chip are found, emulated otherwise."""

    #: what ``detect_real`` looks for, shown in the emulated reason
    looked_for: str = "the vendor SDK"

    def detect_real(self) -> str | None:
        """A description of the real backend if the chip is usable here, else None. Cheap."""
        return None

    def real_executor(self, request: RunRequest) -> Executor:
        """The run on the real chip (``request.mode`` resolved); only called when ``detect_real()``."""
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

    def settable(self, mode: str | None = None) -> dict[str, Any]:
        """Default: every entry of the mode's ``profile.parameters``."""
        return dict(self.numerics(mode).parameters)

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        """Default: only keys of ``profile.parameters`` may be set; subclasses rebuild what depends on them."""
        unknown = sorted(set(overrides) - set(profile.parameters))
        if unknown:
            allowed = ", ".join(sorted(profile.parameters)) or "(none)"
            raise UsageError(f"device '{self.name}' has no parameter {', '.join(unknown)}; settable: {allowed}")
        return profile.model_copy(update={"parameters": {**profile.parameters, **overrides}})

    def executor(self, request: RunRequest) -> Executor:
        """The real chip where it is here and the request needs nothing only emulation gives
        (a replaced profile, step-wise sampling, counters); the emulation of the profile otherwise."""
        request = request.with_mode(request.mode or self.default_mode)
        plain = request.profile is None and request.sample_every is None and not request.counters
        if plain and self.detect_real():
            return self.real_executor(request)
        profile = request.profile if request.profile is not None else self.numerics(request.mode)
        return self.emulated(request, profile)

    def emulated(self, request: RunRequest, profile: NumericsProfile) -> Executor:
        """The emulation of ``profile`` (override for arithmetic a profile alone cannot express)."""
        return emulated_executor(request, profile)


class KnobbedDevice(EmulatedDevice):
    """A device whose profiles are built from (mode, documented knob values): ``--set`` overrides
    go through the knobs' own validation and rebuild the whole profile, so derived entries follow."""

    mode_knobs: dict[str, dict[str, Any]]  # mode -> {name: presets.Knob}

    @staticmethod
    def build_profile(mode: str, values: dict[str, Any]) -> NumericsProfile:
        raise NotImplementedError

    def settable(self, mode: str | None = None) -> dict[str, Any]:
        profile = self.numerics(mode)
        return {k: v for k, v in profile.parameters.items() if k in self.mode_knobs[profile.mode]}

    def profile_for(self, mode: str) -> NumericsProfile:
        from hwbench.accuracy.numerics.presets import resolve_knobs

        return self.build_profile(mode, resolve_knobs(self.name, self.mode_knobs[mode], {}))

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        from hwbench.accuracy.numerics.presets import resolve_knobs

        knobs = self.mode_knobs[profile.mode]
        kept = {k: v for k, v in profile.parameters.items() if k in knobs}  # derived parameters are rebuilt
        values = resolve_knobs(self.name, knobs, {**kept, **overrides})
        return self.build_profile(profile.mode, values)


def emulated_executor(request: RunRequest, profile: NumericsProfile, wrapper: OpsWrapper | None = None) -> Executor:
    """``request.kernel`` on a local engine (JAX by default) under ``profile``'s emulating ops.

    This is the emulation entry point every emulated device can use: the profile's carrier dtype,
    the request's engine, sampling and counters. ``counters`` (per-op-class event counts) roughly
    triples the cost of emulation, so it is off except where forensics needs it. ``wrapper``
    replaces the emulating ops for devices whose arithmetic needs more (the TPU's multi-pass
    bf16 matrix products)."""
    from hwbench.accuracy.numerics.emulate import emulating_ops
    from hwbench.core.engines.select import build_engine, pick_engine
    from hwbench.core.plugins import get_registry

    chosen = pick_engine(get_registry().engines, request.engine, profile.carrier)
    if wrapper is None:
        wrapper = emulating_ops(profile, counters=request.counters)
    executor = build_engine(
        chosen,
        request.kernel,
        request.workload,
        dtype=profile.carrier,
        sample_every=request.sample_every,
        ops_wrapper=wrapper,
        shards=request.shards,
    )
    sharded = getattr(executor, "shards", None) is not None  # (its detail names the shards)
    executor.detail = f"emulating {profile.name}" + (f", {executor.detail}" if sharded else "")
    return executor
