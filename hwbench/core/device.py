"""The Device contract: published facts, availability, numerics, capacity and execution."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from hwbench.core.energy import PublishedEnergy
from hwbench.core.engine import Executor
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.published import PublishedTiming

if TYPE_CHECKING:  # the profile model lives in accuracy/, which depends on core, not the reverse
    from hwbench.accuracy.numerics.profile import NumericsProfile


DeviceKind = Literal["cpu", "gpu", "tpu", "ipu", "lpu", "neuromorphic", "other"]
"""What a chip is: ``lpu`` a language/tensor streaming processor (GroqChip), ``neuromorphic`` a
spiking-network chip (Loihi, SpiNNaker), ``other`` anything else (DSPs, FPGAs)."""


class DeviceSpec(BaseModel):
    """Published facts about a chip. Every number carries a source in ``sources``."""

    name: str = Field(description="registry name, e.g. 'groq'")
    vendor: str
    model: str
    kind: DeviceKind
    memory: str | None = None
    memory_bytes: int | None = None
    process_nm: float | None = None
    transistors_bn: float | None = None
    clock_mhz: str | None = None
    tdp_w: float | None = None
    peak: dict[str, str] = {}
    software: str | None = None
    sources: list[str] = []
    published_energy: list[PublishedEnergy] = Field(
        default_factory=list,
        description="energy / power figures a study measured on the real chip (shown when it is emulated)",
    )
    published_timing: list[PublishedTiming] = Field(
        default_factory=list,
        description="speed figures a study measured on the real chip, per configuration (shown beside this host's)",
    )


class ProbeResult(BaseModel):
    """Whether this device runs for real here, is emulated, or cannot run at all — and why."""

    status: Literal["real", "emulated", "unavailable"]
    reason: str


# defer_build=True: pydantic builds such a model's validator when it is first used, not at import;
# hwbench devices imports this module and validates none of them (docs/cli.md, "Start-up time").
class Support(BaseModel, defer_build=True):
    """Answer of ``Device.supports``: yes, or no with a reason a user can act on."""

    ok: bool
    reason: str = ""

    @classmethod
    def yes(cls, reason: str = "") -> Support:
        return cls(ok=True, reason=reason)

    @classmethod
    def no(cls, reason: str) -> Support:
        return cls(ok=False, reason=reason)


@dataclass(frozen=True)
class RunRequest:
    """How a device is asked to run a kernel: one typed request instead of a keyword list.

    New options are added here with defaults that mean "as before", so a device written against an
    older contract keeps working: it reads the fields it knows and ignores the others.

    ``mode`` None means the device's default mode. ``engine`` and ``dtype`` None let the device
    choose (the fastest local engine; the mode's working precision). ``profile`` replaces the mode's
    numerics profile (a user's own file, or the mode's profile with ``--set`` overrides applied);
    a device must honour it — the conformance suite checks that. ``sample_every`` overrides the
    kernel's steps per sample (1 for step-by-step forensics). ``counters`` asks an emulation for
    per-op-class event counts (slower: forensics only). ``options`` carries device-specific
    settings by name (documented by the device), so they need no new field.
    """

    kernel: Kernel
    workload: Workload
    mode: str | None = None
    engine: str | None = None
    dtype: str | None = None
    profile: NumericsProfile | None = None
    sample_every: int | None = None
    counters: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sample_every is not None and (not isinstance(self.sample_every, int) or self.sample_every < 1):
            raise UsageError(f"sample_every must be a positive integer, got {self.sample_every!r}")

    def with_mode(self, mode: str) -> RunRequest:
        """The same request with its mode resolved (devices call this with their default)."""
        return replace(self, mode=mode)

    @classmethod
    def make(cls, kernel: Kernel, workload: Workload, **options: Any) -> RunRequest:
        """A request from keywords; an unknown keyword is a UsageError naming the valid ones."""
        names = {f.name for f in fields(cls)} - {"kernel", "workload"}
        unknown = sorted(set(options) - names)
        if unknown:
            raise UsageError(f"unknown run option(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
        return cls(kernel=kernel, workload=workload, **options)


class Device(ABC):
    """A chip hwbench can run kernels on (registered through ``hwbench_devices``)."""

    spec: DeviceSpec
    modes: tuple[str, ...] = ("default",)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def default_mode(self) -> str:
        return self.modes[0]

    @abstractmethod
    def probe(self) -> ProbeResult:
        """Real, emulated or unavailable here, with a human-readable reason. Must be cheap."""

    def numerics(self, mode: str | None = None, overrides: dict[str, Any] | None = None) -> NumericsProfile | None:
        """The arithmetic of ``mode`` as a numerics profile (None: native IEEE of the host).

        ``overrides`` sets the profile's documented, overridable parameters (e.g. the GroqChip's
        assumed reduced-precision width); unknown keys are a UsageError naming the valid ones.
        The base class has no profile and nothing to set.
        """
        if overrides:
            raise UsageError(
                f"device '{self.name}' has no settable numerics parameter ({', '.join(sorted(overrides))} given); "
                "settable: nothing"
            )
        return None

    def settable(self, mode: str | None = None) -> dict[str, Any]:
        """The numerics parameters ``--set`` may change in ``mode``, with their current values.

        ``numerics(mode, overrides)`` accepts exactly these keys (values of the same kind); the
        CLI lists them when a user names another. The base class has none.
        """
        return {}

    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        """Whether ``kernel`` (at this workload's size; None: at any size) can run on this chip, and why not.

        ``meta`` holds context the caller knows: ``mode`` (the resolved mode) today. Later versions
        may pass more keys; ignore the ones you do not use.
        """
        return Support.yes()

    @abstractmethod
    def executor(self, request: RunRequest) -> Executor:
        """An executor for ``request.kernel`` on this device: through the chip's SDK where it is
        real here, else an emulation of its arithmetic on a local engine. Building (allocation,
        compilation) happens here and is timed by the caller as setup.

        Raise :class:`~hwbench.core.errors.UsageError` for a request this device can never serve
        (a dtype it lacks) and :class:`~hwbench.core.errors.UnavailableError` for one it cannot
        serve here (capacity, a missing SDK).
        """

    def executor_for(self, kernel: Kernel, workload: Workload, **options: Any) -> Executor:
        """Shorthand for ``executor(RunRequest(kernel, workload, **options))`` (callers, not plugins)."""
        return self.executor(RunRequest.make(kernel, workload, **options))


def takes_overrides(numerics: Any) -> bool:
    """Whether a device's ``numerics`` method accepts ``overrides`` (one written before it did not)."""
    import inspect

    return "overrides" in inspect.signature(numerics).parameters


def numerics_with_overrides(device: Device, mode: str, overrides: dict[str, Any]) -> Any:
    """``device.numerics(mode, overrides)``, or a UsageError saying what is settable.

    Refuses (instead of a TypeError or silently ignoring ``--set``) a device whose ``numerics``
    takes no overrides, and one whose mode runs native IEEE arithmetic (no profile to change).
    """
    keys = ", ".join(sorted(overrides))
    if not takes_overrides(device.numerics):
        raise UsageError(f"device '{device.name}' has no parameter {keys}; settable: nothing")
    profile = device.numerics(mode, overrides)
    if profile is None:
        raise UsageError(
            f"device '{device.name}' [{mode}] has no parameter {keys}; settable: nothing (native IEEE arithmetic)"
        )
    return profile
