"""The audit hwbench runs by default: numerical validation and the spike stress test, with dt
refinement and first-divergence forensics.

:class:`hwbench.accuracy.audit.Auditor` runs and judges whatever protocols it is given; this
module, one room above it, assembles the published ones. ``hwbench audit``, the reproduction
script and sweeps all build their auditor here.
"""

from __future__ import annotations

from hwbench.accuracy.audit import Auditor, AuditSettings, BaseRuns, Progress, ProtocolFactory
from hwbench.accuracy.validation import validation
from hwbench.core.plugins import Registry
from hwbench.stress import forensics, refinement
from hwbench.stress.stimulus import spike_stress

# Each protocol builds its scenario from the audited kernel's record (KernelInfo.audit), which
# says what the protocol needs of that kernel or why it does not apply.
PROTOCOLS: dict[str, ProtocolFactory] = {
    "validation": lambda settings, info: validation(info, seed=settings.seed, quick=settings.quick),
    "stress": lambda settings, info: spike_stress(info, seed=settings.seed, quick=settings.quick),
}


def standard_auditor(
    registry: Registry,
    settings: AuditSettings,
    progress: Progress | None = None,
    *,
    base_runs: BaseRuns | None = None,
) -> Auditor:
    """An auditor with the published protocols, dt refinement (``settings.refine_factors``) and forensics.

    ``base_runs``: a cache of reference, gold and ensemble traces shared by the audits that use it
    (a sweep's worker passes one, so cells that differ only in the candidate run those once)."""
    return Auditor(
        registry,
        settings,
        progress,
        protocols=PROTOCOLS,
        refine=refinement.refined,
        forensics=forensics.replay,
        base_runs=base_runs,
    )
