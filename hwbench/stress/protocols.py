"""The built-in time-stepped audit protocols (plugin ``builtin-audit-protocols``): numerical
validation, the spike stress test (both with dt refinement and first-divergence forensics) and
the spike-train protocol of spiking kernels.

:class:`hwbench.accuracy.audit.Auditor` runs whatever protocols are registered; this module, one
room above it (the dt refinement and forensics push numerics and live here), registers these
through the same hook a third-party protocol uses. Each builds its scenario from the audited
kernel's record (``KernelInfo.audit``), which says what the protocol needs of that kernel or why
it does not apply. They register as :class:`~hwbench.core.audit_protocol.LazyProtocol`: the
protocols and their machinery are imported when an audit first uses them, not on every start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hwbench.core.audit_protocol import (
    AuditProtocol,
    AuditSettings,
    BaseRuns,
    Compared,
    LazyProtocol,
    Progress,
    ProtocolInfo,
)
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel
from hwbench.core.plugins import Registry

if TYPE_CHECKING:
    from hwbench.accuracy.audit import Auditor
    from hwbench.accuracy.stepped import ScenarioFactory

HWBENCH_CONTRACT = 3

_RUNS = [
    "reference: CPU fp32",
    "gold: CPU fp64",
    "ensemble: the sums in reverse order",
    "ensemble: the initial voltages + 1 fp32 ulp",
    "candidate: each device and mode (and, with --dt-refine, at dt/10 and dt/100)",
]
_COMPARES = [
    Compared(header="max |dV|", path="deviation.max", unit=True),
    Compared(header="outside spikes", path="deviation.max_outside_spikes", unit=True),
    Compared(header="matched", path="spikes.matched_fraction"),
    Compared(header="vRossum", path="spikes.van_rossum_mean"),
]
_FLOOR = (
    "per judged metric the worst of gold and the ensemble, never below the kernel's absolute floors "
    "(AuditFacts.floors, in the probe's unit)"
)
_VERDICT = (
    "a hard-check violation is a FAIL; else the worst ratio to the floor: trajectory-stable regime (the ensemble "
    "tracks the reference) PASS up to 10x, WARN up to 100x; chaotic regime PASS up to 3x, WARN up to 10x "
    "(docs/audit.md)"
)
_FORENSICS = "a hard-check violation replayed step by step from the last good checkpoint: step, cell, variable, op"


def _info(name: str, summary: str) -> ProtocolInfo:
    return ProtocolInfo(
        name=name,
        summary=summary,
        applies_to=f"kernels whose record declares the {name} protocol (KernelInfo.audit.{name})",
        runs=_RUNS,
        compares=_COMPARES,
        floor=_FLOOR,
        verdict=_VERDICT,
        forensics=_FORENSICS,
        sources=["Landsmeer et al., Neurocomputing 2024 (docs/io-ehh.md)"],
    )


def declared(name: str) -> Callable[[Kernel], str | None]:
    """The refusal rule of a protocol whose facts the kernel declares in ``KernelInfo.audit``."""

    def refusal(kernel: Kernel) -> str | None:
        audit = kernel.info.audit
        return None if audit.facts(name) is not None else audit.reason(name)

    return refusal


def _stepped(name: str, summary: str, scenario: ScenarioFactory) -> AuditProtocol:
    from hwbench.accuracy.stepped import SteppedProtocol
    from hwbench.stress import forensics, refinement

    return SteppedProtocol(_info(name, summary), scenario, refine=refinement.refined, forensics=forensics.replay)


def _validation() -> AuditProtocol:
    from hwbench.accuracy.validation import validation

    return _stepped(
        "validation",
        "numerical validation: the network runs free, its probe compared sample by sample",
        lambda settings, info: validation(info, seed=settings.seed, quick=settings.quick),
    )


def _stress() -> AuditProtocol:
    from hwbench.stress.stimulus import spike_stress

    return _stepped(
        "stress",
        "spike stress test: pulses of input to random cells, spikes and voltages compared",
        lambda settings, info: spike_stress(info, seed=settings.seed, quick=settings.quick),
    )


def _spike_train() -> AuditProtocol:
    from hwbench.accuracy.spike_train import SpikeTrainProtocol

    return SpikeTrainProtocol()


@hookimpl
def hwbench_audit_protocols() -> list[AuditProtocol]:
    return [
        LazyProtocol("validation", declared("validation"), _validation),
        LazyProtocol("stress", declared("stress"), _stress),
        LazyProtocol("spike-train", declared("spike-train"), _spike_train),
    ]


def standard_auditor(
    registry: Registry,
    settings: AuditSettings,
    progress: Progress | None = None,
    *,
    base_runs: BaseRuns | None = None,
) -> Auditor:
    """The auditor with every registered protocol (kept for callers of the earlier API)."""
    from hwbench.accuracy.audit import Auditor

    return Auditor(registry, settings, progress, base_runs=base_runs)
