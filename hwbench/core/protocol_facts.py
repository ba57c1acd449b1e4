"""What the accuracy protocols need to know about a kernel, declared on its record.

The audit, the stress test and the CLI are written once for every kernel: they read the size of
the validation network, which input a stimulus drives and which parameter varies from cell to
cell from these records (``KernelInfo.audit``), never from the kernel's name. A kernel for which
a protocol has no meaning says why in :attr:`AuditFacts.refused`, and that reason is what a user
who asks for the protocol is told.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

PROTOCOL_NAMES = ("validation", "stress", "spike-train")
"""The protocols whose facts a kernel declares here (a third-party protocol reads its own facts)."""


class ValidationFacts(BaseModel):
    """Numerical validation: the network runs free and its probe is compared sample by sample."""

    size: int = Field(gt=0, description="cells (neurons) of the validation network")
    quick_size: int = Field(gt=0, description="cells of the --quick variant")
    ms: float = Field(gt=0, description="biological time of the run, ms")
    quick_ms: float = Field(gt=0, description="biological time of the --quick variant, ms")
    connected: bool = True
    drive: str | None = Field(
        None, description="per-cell input held at zero during the run (None: the input is part of the workload)"
    )
    source: str = Field("", description="where the protocol is published")


class StressFacts(BaseModel):
    """The stress test: a warm-up, then pulses of ``drive`` to a random fraction of the cells.

    Every pulse draws, with replacement, ``fraction`` of the cells and gives each an input drawn
    from N(amplitude_mean, amplitude_sd); after it the input rests at zero. ``heterogeneous``
    parameters get one value per cell, ``low + span * U(0, 1)``, so that cells differ."""

    size: int = Field(gt=0, description="cells of the stressed network")
    drive: str = Field(description="the per-cell input the pulses set")
    amplitude_mean: float
    amplitude_sd: float = Field(ge=0)
    fraction: float = Field(gt=0, le=1, description="share of the cells drawn for each pulse")
    warmup_ms: float = Field(ge=0)
    pulses: int = Field(gt=0)
    pulse_ms: float = Field(gt=0)
    rest_ms: float = Field(ge=0)
    quick_warmup_ms: float = Field(ge=0)
    quick_pulses: int = Field(gt=0)
    heterogeneous: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="parameter -> (low, span): per cell low + span * U(0, 1)"
    )
    connected: bool = True
    source: str = Field("", description="where the protocol is published")


class AuditFloors(BaseModel):
    """Absolute floors of the probe-comparing protocols (validation, stress), in the kernel's units.

    A deviation below its floor is irrelevant whatever the ensemble of legitimate variants says;
    and the regime is trajectory-stable while the ensemble's spread outside spikes stays below
    ``stable_spread``. They are facts of the kernel because they are in its probe's unit: 1 uV is
    negligible for a membrane in mV, not for a probe in volts or in spikes."""

    max_outside_spikes: float = Field(gt=0, description="probe deviation outside spike windows (probe unit)")
    stable_spread: float = Field(gt=0, description="ensemble spread below which the regime is stable (probe unit)")
    van_rossum_mean: float = Field(0.05, gt=0, description="mean van Rossum distance per cell (dimensionless)")
    count_diff_total: float = Field(1.0, gt=0, description="spike count difference summed over cells")
    unmatched: float = Field(0.01, gt=0, description="share of spikes left unmatched within 5 ms")
    source: str = Field("", description="why these values")

    def minimum(self) -> dict[str, float]:
        """The judged metrics' floors, keyed as :func:`hwbench.accuracy.verdict.floor` keys them."""
        keys = ("max_outside_spikes", "van_rossum_mean", "count_diff_total", "unmatched")
        return {k: float(getattr(self, k)) for k in keys}


CONTRACT2_FLOORS = AuditFloors(
    max_outside_spikes=1e-3,
    stable_spread=1.0,
    source="the module constants every kernel was judged with up to plugin contract 2 (in mV: 1 uV "
    "outside spikes, a 1 mV ensemble spread for the stable regime)",
)
"""What a contract-2 kernel, which declares no floors, is judged with (its adapter fills them in)."""


class SpikeTrainFacts(BaseModel):
    """The spike-train protocol: the network runs free on its own input and its probed spikes are
    compared, spike train against spike train, with the CPU fp32 reference (docs/audit.md)."""

    size: int = Field(gt=0, description="neurons of the (hidden) population")
    quick_size: int = Field(gt=0, description="neurons of the --quick variant")
    steps: int = Field(gt=0, description="time steps of the run")
    quick_steps: int = Field(gt=0, description="time steps of the --quick variant")
    params: dict[str, str | float | int] = Field(
        default_factory=dict, description="workload parameters of the protocol (e.g. the reset the chips implement)"
    )
    tau_ms: float = Field(10.0, gt=0, description="van Rossum kernel time constant, ms")
    window_ms: float = Field(2.0, ge=0, description="coincidence window of the coincidence factor and matching, ms")
    min_van_rossum: float = Field(0.05, gt=0, description="absolute floor of the mean van Rossum distance")
    min_count_diff: float = Field(1.0, gt=0, description="absolute floor of the summed spike count difference")
    min_incoincidence: float = Field(0.01, gt=0, description="absolute floor of 1 - coincidence factor")
    source: str = Field("", description="where the protocol's settings come from")


class AuditFacts(BaseModel):
    """The protocols a kernel can be audited with, why the others do not apply, and its floors."""

    validation: ValidationFacts | None = None
    stress: StressFacts | None = None
    spike_train: SpikeTrainFacts | None = Field(None, alias="spike-train")
    floors: AuditFloors | None = Field(
        None,
        description="absolute floors of validation and stress in the probe's unit (plugin contract 3; a "
        "kernel declaring either protocol without them was written for contract 2 and gets CONTRACT2_FLOORS)",
    )
    refused: dict[str, str] = Field(
        default_factory=dict, description="protocol -> why it does not apply to this kernel"
    )
    sweep_protocols: list[str] | None = Field(
        None, description="what a sweep of this kernel runs when none is named (None: every protocol that applies)"
    )

    model_config = {"populate_by_name": True}

    @model_validator(mode="after")
    def _each_protocol_declared_or_refused(self) -> AuditFacts:
        for name in self.refused:
            if name in PROTOCOL_NAMES and self.facts(name) is not None:
                raise ValueError(f"protocol {name!r} is both declared and refused")
        return self

    def facts(self, protocol: str) -> BaseModel | None:
        """The facts declared for ``protocol`` (None: not declared here)."""
        if protocol not in PROTOCOL_NAMES:
            return None
        value: BaseModel | None = getattr(self, protocol.replace("-", "_"))
        return value

    def declared(self) -> tuple[str, ...]:
        """The protocols this kernel declares, in the order the audit runs them."""
        return tuple(name for name in PROTOCOL_NAMES if self.facts(name) is not None)

    def reason(self, protocol: str) -> str:
        """Why ``protocol`` cannot run on this kernel (its own words, or that it declares none)."""
        return self.refused.get(protocol) or f"the kernel declares no {protocol} protocol"
