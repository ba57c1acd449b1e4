"""What the accuracy protocols need to know about a kernel, declared on its record.

The audit, the stress test and the CLI are written once for every kernel: they read the size of
the validation network, which input a stimulus drives and which parameter varies from cell to
cell from these records (``KernelInfo.audit``), never from the kernel's name. A kernel for which
a protocol has no meaning says why in :attr:`AuditFacts.refused`, and that reason is what a user
who asks for the protocol is told.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

PROTOCOL_NAMES = ("validation", "stress")


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


class AuditFacts(BaseModel):
    """The protocols a kernel can be audited with, and why the others do not apply."""

    validation: ValidationFacts | None = None
    stress: StressFacts | None = None
    refused: dict[str, str] = Field(
        default_factory=dict, description="protocol -> why it does not apply to this kernel"
    )

    @model_validator(mode="after")
    def _each_protocol_declared_or_refused(self) -> AuditFacts:
        for name in self.refused:
            if name not in PROTOCOL_NAMES:
                raise ValueError(f"refused names unknown protocol {name!r}; protocols: {', '.join(PROTOCOL_NAMES)}")
            if getattr(self, name) is not None:
                raise ValueError(f"protocol {name!r} is both declared and refused")
        return self

    def declared(self) -> tuple[str, ...]:
        """The protocols this kernel declares, in the order the audit runs them."""
        return tuple(name for name in PROTOCOL_NAMES if getattr(self, name) is not None)

    def reason(self, protocol: str) -> str:
        """Why ``protocol`` cannot run on this kernel (its own words, or that it declares none)."""
        return self.refused.get(protocol) or f"the kernel declares no {protocol} protocol"
