"""The built-in time-stepped audit protocols (plugin ``builtin-audit-protocols``): numerical
validation, the spike stress test (both with dt refinement and first-divergence forensics) and
the spike-train protocol of spiking kernels.

:class:`hwbench.accuracy.audit.Auditor` runs whatever protocols are registered; this module, one
room above it (the dt refinement and forensics push numerics and live here), registers these
through the same hook a third-party protocol uses. Each builds its scenario from the audited
kernel's record (``KernelInfo.audit``), which says what the protocol needs of that kernel or why
it does not apply.
"""

from __future__ import annotations

from hwbench.accuracy.audit import Auditor, AuditSettings, BaseRuns, Progress
from hwbench.accuracy.spike_train import SpikeTrainProtocol
from hwbench.accuracy.stepped import SteppedProtocol
from hwbench.accuracy.validation import validation
from hwbench.core.audit_protocol import Compared, ProtocolInfo
from hwbench.core.hookspecs import hookimpl
from hwbench.core.plugins import Registry
from hwbench.stress import forensics, refinement
from hwbench.stress.stimulus import spike_stress

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


def _stepped(name: str, summary: str, factory: object) -> SteppedProtocol:
    info = ProtocolInfo(
        name=name,
        summary=summary,
        applies_to=f"kernels whose record declares the {name} protocol (KernelInfo.audit.{name})",
        runs=_RUNS,
        compares=_COMPARES,
        floor=_FLOOR,
        verdict=_VERDICT,
        forensics=_FORENSICS,
        sources=["Landsmeer et al., Neurocomputing 2024 (specs/io-ehh.md)"],
    )
    return SteppedProtocol(info, factory, refine=refinement.refined, forensics=forensics.replay)  # type: ignore[arg-type]


VALIDATION = _stepped(
    "validation",
    "numerical validation: the network runs free, its probe compared sample by sample",
    lambda settings, info: validation(info, seed=settings.seed, quick=settings.quick),
)
STRESS = _stepped(
    "stress",
    "spike stress test: pulses of input to random cells, spikes and voltages compared",
    lambda settings, info: spike_stress(info, seed=settings.seed, quick=settings.quick),
)
SPIKE_TRAIN = SpikeTrainProtocol()


@hookimpl
def hwbench_audit_protocols() -> list[SteppedProtocol]:
    return [VALIDATION, STRESS, SPIKE_TRAIN]


def standard_auditor(
    registry: Registry,
    settings: AuditSettings,
    progress: Progress | None = None,
    *,
    base_runs: BaseRuns | None = None,
) -> Auditor:
    """The auditor with every registered protocol (kept for callers of the earlier API)."""
    return Auditor(registry, settings, progress, base_runs=base_runs)
