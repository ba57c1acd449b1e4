"""The audit report: a versioned pydantic model with a published JSON Schema.

It lives in ``core`` because it is part of the plugin contract: an audit protocol (a plugin, see
:mod:`hwbench.core.audit_protocol`) returns :class:`ProtocolReport` records, and the engine in
:mod:`hwbench.accuracy.audit` assembles them into one :class:`AuditReport`. Every field added
since ``hwbench.audit/1`` has a default, so reports written by older versions still load.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, Field

from hwbench.core.results import Provenance


class Verdict(str, Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"

    def __str__(self) -> str:
        """``PASS``, ``WARN`` or ``FAIL``, as a script prints it (``print(hwbench.audit(...).verdict)``)."""
        return self.value


def combine(verdicts: list[Verdict]) -> Verdict:
    """The worst of ``verdicts`` (PASS when there are none)."""
    order = [Verdict.PASS, Verdict.WARN, Verdict.FAIL]
    return max(verdicts, key=order.index, default=Verdict.PASS)


Role = Literal["reference", "gold", "ensemble", "candidate", "dt-refine"]
"""What a run is for in a protocol: the CPU fp32 reference, the fp64 gold, a legitimate fp32 variant
(ensemble), a candidate, or a candidate at dt/k."""


# defer_build=True: pydantic builds such a model's validator when it is first used, not at import;
# hwbench --help (every command's module) imports this module and validates none of them (docs/cli.md, "Start-up time").
class RunSummary(BaseModel, defer_build=True):
    """One run of a protocol, and how it compares with the reference."""

    label: str
    role: Role
    device: str
    mode: str
    execution: Literal["real", "emulated"]
    engine: str
    profile: str | None = None
    profile_confidence: dict[str, int] = Field(default_factory=dict, description="op classes per confidence level")
    native: list[str] = Field(
        default_factory=list,
        description="emulated runs: what ran natively by design, not with the device's arithmetic, and why "
        "(constants folded by the device's compiler, op classes the profile does not describe, ...)",
    )
    from_cache: bool = Field(
        False,
        description="read from the baseline cache (an earlier audit's identical run), not run; its timings and "
        "the metrics derived from them are those of the run that made the entry",
    )
    setup_s: float
    run_s: float
    deviation: dict[str, Any] | None = None
    spikes: dict[str, Any] | None = None
    violation: dict[str, Any] | None = None
    counters: dict[str, int] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(
        default_factory=dict,
        description="every registered accuracy/check metric, and the kernel's own metrics of the run "
        "(workload, performance, energy where metered: hwbench.core.metric)",
    )


class CandidateVerdict(BaseModel, defer_build=True):
    device: str
    mode: str
    verdict: Verdict
    score: float
    reasons: list[str]


class NodeReport(BaseModel, defer_build=True):
    """One node of a user's graph (an ONNX node, a jaxpr equation): its output's error against the
    float64 reference, as the candidate computed it from its own inputs, and against its floor."""

    name: str
    op_type: str
    source: str = Field("", description="where the user wrote it (file:line of a jaxpr equation; '' for ONNX)")
    elements: int
    nonfinite: int = Field(0, description="non-finite elements where the reference is finite")
    max_abs_error: float
    max_rel_error: float = Field(description="max |cand - ref| / |ref| over elements with ref != 0")
    max_ulps: float = Field(description="max |cand - ref| in ulps of the reference, in the device's storage format")
    mean_signed_rel: float = Field(description="mean (cand - ref) / |ref|: a bias (rounding toward zero shows)")
    floor_ulps: float | None = Field(None, description="the same error of the fp32 ensemble floor (None: no floor)")
    above_floor: bool = False
    mechanism: str | None = Field(None, description="what made it diverge, where known (saturation, flushing, ...)")


class PrecisionMap(BaseModel, defer_build=True):
    """The nodes to keep at a wider format of the device so that the outputs pass (``--precision-map``)."""

    wider_mode: str = Field(description="the device mode whose arithmetic the kept nodes use")
    keep_wider: list[str] = Field(description="node names, in graph order")
    verdict: Verdict = Field(description="the verdict of the rerun with these nodes kept wider")
    flops_share: float = Field(description="share of the model's matrix-product FLOPs the kept nodes compute")
    nodes_share: float = Field(description="share of the run-time nodes kept")
    evaluations: int = Field(description="evaluations of the model the search made")
    method: str = ""


class CandidateNodes(BaseModel, defer_build=True):
    """A candidate of a model or function audit: its verdict, every node's error and the first node
    above its floor (front-end neutral: ONNX graphs and jaxprs report the same)."""

    device: str
    mode: str
    verdict: Verdict
    engine: str = Field(description="what computed the candidate (the evaluator on the device's arithmetic, ...)")
    execution: Literal["real", "emulated"]
    arithmetic: dict[str, str] = Field(
        default_factory=dict, description="how each kind of op was computed: matmul method, reduction order, ..."
    )
    ulp_format: str = Field("", description="the format whose ulps nodes' errors are counted in")
    nodes: list[NodeReport] = Field(default_factory=list)
    first_divergent_node: str | None = Field(None, description="the first node, in graph order, above its floor")
    mechanism: str | None = Field(None, description="the first divergent node's mechanism, where known")
    outputs: dict[str, dict[str, Any]] = Field(default_factory=dict, description="each output's errors and agreement")
    real_run: dict[str, Any] | None = Field(
        None, description="the same model run on the real chip, beside the emulation (or why that was not possible)"
    )
    precision_map: PrecisionMap | None = None
    notes: list[str] = Field(default_factory=list)


class ProtocolReport(BaseModel, defer_build=True):
    name: str
    description: str
    protocol: str = Field("", description="the audit protocol (plugin) that wrote this (older reports: empty)")
    reduced: str | None = None
    probe_unit: str = "mV"  # the unit of the probe and its deviations (reports before this field: mV)
    sample_ms: float
    regime: str
    floor: dict[str, float]
    runs: list[RunSummary]
    verdicts: list[CandidateVerdict]
    verdict: Verdict
    candidates: list[CandidateNodes] = Field(
        default_factory=list, description="node by node, per candidate (model and function audits; else empty)"
    )


class AuditReport(BaseModel, defer_build=True):
    schema_: Literal["hwbench.audit/1"] = Field("hwbench.audit/1", alias="schema")
    provenance: Provenance = Field(default_factory=Provenance)
    settings: dict[str, Any]
    protocols: list[ProtocolReport]
    verdict: Verdict
    reasons: list[str]
    elapsed_s: float

    model_config = {"populate_by_name": True}
