"""The audit report: a versioned pydantic model with a published JSON Schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hwbench.accuracy.verdict import Verdict
from hwbench.core.results import Provenance

Role = Literal["reference", "gold", "ensemble", "candidate", "dt-refine"]
"""What a run is for in a protocol: the CPU fp32 reference, the fp64 gold, a legitimate fp32 variant
(ensemble), a candidate, or a candidate at dt/k."""


class RunSummary(BaseModel):
    """One simulated run of a protocol, and how it compares with the CPU fp32 reference."""

    label: str
    role: Role
    device: str
    mode: str
    execution: Literal["real", "emulated"]
    engine: str
    profile: str | None = None
    profile_confidence: dict[str, int] = Field(default_factory=dict, description="op classes per confidence level")
    from_cache: bool = Field(
        False, description="read from the baseline cache (an earlier audit's identical run), not run; run_s: reading it"
    )
    setup_s: float
    run_s: float
    deviation: dict[str, Any] | None = None
    spikes: dict[str, Any] | None = None
    violation: dict[str, Any] | None = None
    counters: dict[str, int] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict, description="every registered accuracy/check metric")


class CandidateVerdict(BaseModel):
    device: str
    mode: str
    verdict: Verdict
    score: float
    reasons: list[str]


class ProtocolReport(BaseModel):
    name: str
    description: str
    reduced: str | None = None
    probe_unit: str = "mV"  # the unit of the probe and its deviations (reports before this field: mV)
    sample_ms: float
    regime: str
    floor: dict[str, float]
    runs: list[RunSummary]
    verdicts: list[CandidateVerdict]
    verdict: Verdict


class AuditReport(BaseModel):
    schema_: Literal["hwbench.audit/1"] = Field("hwbench.audit/1", alias="schema")
    provenance: Provenance = Field(default_factory=Provenance)
    settings: dict[str, Any]
    protocols: list[ProtocolReport]
    verdict: Verdict
    reasons: list[str]
    elapsed_s: float

    model_config = {"populate_by_name": True}
