"""The audit engine: one auditor for every kernel, its protocols are plugins.

:class:`Auditor` knows no protocol. The protocols registered with ``hwbench_audit_protocols``
(:class:`hwbench.core.audit_protocol.AuditProtocol`) say which kernels they apply to; the auditor
runs, for the audited kernel, every one that applies (or those asked for), after each has refused
what cannot run, and combines their reports into one :class:`AuditReport` with one verdict. The
built-in protocols: validation, the spike stress test and the spike-train protocol (time-stepped,
:mod:`hwbench.accuracy.stepped`, assembled in :mod:`hwbench.stress.protocols`) and the DL
primitives' elementwise protocol (:mod:`hwbench.plugins.kernels.dl.protocol`).

:func:`run_audit` is the one entry point: the CLI, the library, the reproduction script and the
sweeps all call it (or build an :class:`Auditor`).
"""

from __future__ import annotations

import importlib
import os
import time
from functools import partial
from typing import Any

from hwbench.accuracy.stepped import (
    BASE_RUNS,
    Job,
    ProtocolData,
    Resolved,
    concurrently,
    perturbed_voltages,
    reversed_sum_order,
    with_grid_index,
)
from hwbench.core.audit_protocol import (
    AuditContext,
    AuditProtocol,
    AuditSettings,
    BaseRuns,
    Candidate,
    Progress,
)
from hwbench.core.audit_report import AuditReport, ProtocolReport, combine
from hwbench.core.errors import UsageError
from hwbench.core.plugins import Registry
from hwbench.core.run_slots import RunSlots

IMPORTED_BY_RUNS = (
    "hwbench.accuracy.baseline_cache",
    "hwbench.accuracy.numerics.emulate",
    "hwbench.accuracy.numerics.fused_exchange",
    "hwbench.core.engines.select",
)
"""Modules the runs import on first use (the baseline cache, the emulating ops of every emulated
device, the engine choice), imported by :meth:`Auditor.run` on its own thread before the audit's
threads start. Imported for the first time by several threads at once, a module can be seen half
initialised by another (Python's per-module import locks give way where two imports wait on
each other: "cannot import name 'emulating_ops'"), and CPython 3.11's parser, when two threads
compile at once (no bytecode cached yet, or pytest rewriting the modules of a plugin's
distribution), fails with "AST constructor recursion depth mismatch"."""

__all__ = [
    "BASE_RUNS",
    "AuditSettings",
    "Auditor",
    "BaseRuns",
    "Candidate",
    "Job",
    "Progress",
    "ProtocolData",
    "Resolved",
    "perturbed_voltages",
    "reversed_sum_order",
    "run_audit",
    "with_grid_index",
]


class Auditor:
    """Runs the protocols that apply to ``settings.kernel`` on candidates and combines their verdicts.

    ``protocols``: the protocols to choose from (default: every registered one); ``base_runs``: a
    cache of baseline results shared by the audits that use it (a sweep's worker passes one, so
    cells that differ only in the candidate run those once).
    """

    def __init__(
        self,
        registry: Registry,
        settings: AuditSettings,
        progress: Progress | None = None,
        *,
        protocols: dict[str, AuditProtocol] | None = None,
        base_runs: BaseRuns | None = None,
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.progress = progress
        self.protocols = dict(registry.protocols if protocols is None else protocols)
        self.base_runs = base_runs
        self.data: dict[str, Any] = {}  # in-memory results for plots, per protocol

    def selected(self) -> list[AuditProtocol]:
        """The protocols asked for, or every one that applies to the kernel; a UsageError names
        an unknown one, or says why each refuses the kernel."""
        kernel = self.registry.kernel(self.settings.kernel)
        if self.settings.protocols:
            unknown = [p for p in self.settings.protocols if p not in self.protocols]
            if unknown:
                choices = ", ".join(self.protocols)
                raise UsageError(f"unknown protocol {', '.join(unknown)}; choose from: {choices}")
            chosen = [self.protocols[p] for p in self.settings.protocols]
            for protocol in chosen:
                why = protocol.refusal(kernel)
                if why is not None:
                    raise UsageError(f"kernel '{kernel.name}' has no {protocol.name} protocol: {why}")
            return chosen
        chosen = [p for p in self.protocols.values() if p.info.automatic and p.refusal(kernel) is None]
        if not chosen:
            why = "; ".join(f"{p.name}: {p.refusal(kernel)}" for p in self.protocols.values())
            raise UsageError(f"kernel '{kernel.name}' cannot be audited here ({why})")
        return chosen

    def context(self, candidates: list[Candidate]) -> AuditContext:
        return AuditContext(
            registry=self.registry,
            kernel=self.registry.kernel(self.settings.kernel),
            settings=self.settings,
            candidates=list(candidates),
            progress=self.progress,
            base_runs=self.base_runs,
            data=self.data,
        )

    def preflight(self, candidates: list[Candidate]) -> list[AuditProtocol]:
        """Every selected protocol refuses, before minutes of reference runs, what cannot run."""
        ctx = self.context(candidates)
        chosen = self.selected()
        self._refuse_unused(chosen)
        for protocol in chosen:
            protocol.preflight(ctx)
        return chosen

    def _refuse_unused(self, chosen: list[AuditProtocol]) -> None:
        """An option no chosen protocol takes (each declaring what it takes) is refused, not ignored."""
        declared = [p.takes() for p in chosen]
        if any(d is None for d in declared):
            return
        given = [*self.settings.options, *(["dt_refine"] if self.settings.dt_refine else [])]
        for option in given:
            if not any(option in d for d in declared if d is not None):
                names = ", ".join(p.name for p in chosen)
                raise UsageError(
                    f"--{option.replace('_', '-')} does not apply to kernel '{self.settings.kernel}': "
                    f"none of the protocols it runs ({names}) takes it (hwbench protocols)"
                )

    def planned_runs(self, candidates: list[Candidate]) -> list[tuple[str, float]]:
        """(label, total) of every run the protocols report progress for (progress bars)."""
        ctx = self.context(candidates)
        return [run for protocol in self.selected() for run in protocol.planned_runs(ctx)]

    def run(self, candidates: list[Candidate]) -> AuditReport:
        t_start = time.perf_counter()
        from hwbench.core.engines.jax_cache import enable_compilation_cache

        enable_compilation_cache()
        chosen = self.preflight(candidates)
        for module in IMPORTED_BY_RUNS:
            importlib.import_module(module)
        ctx = self.context(candidates)
        threads = self.settings.threads
        if threads != 1:  # one simulating run per core (or per thread asked for), the costliest first
            ctx.slots = RunSlots(threads or os.cpu_count() or 1)
        # the protocols are independent (own scenario, baselines and candidates): run at once
        runs = concurrently(threads, [partial(protocol.run, ctx) for protocol in chosen], ctx.slots)
        reports: list[ProtocolReport] = [report for run in runs for report in run]
        # the plots' data in the protocols' order, however the threads finished
        names = [p.name for p in chosen]
        ordered = sorted(self.data.items(), key=lambda item: names.index(item[0]) if item[0] in names else len(names))
        self.data.clear()
        self.data.update(ordered)
        reasons = [
            f"{p.name}: {v.device} [{v.mode}] {v.verdict.value} - {v.reasons[0] if v.reasons else ''}"
            for p in reports
            for v in p.verdicts
        ]
        return AuditReport(
            settings=self._settings(candidates, [p.name for p in chosen], ctx.reused),
            protocols=reports,
            verdict=combine([p.verdict for p in reports]),
            reasons=reasons,
            elapsed_s=time.perf_counter() - t_start,
        )

    def _settings(self, candidates: list[Candidate], protocols: list[str], reused: list[str]) -> dict[str, Any]:
        s = self.settings
        return {
            "quick": s.quick,
            "dt_refine": s.dt_refine,
            "seed": s.seed,
            "kernel": s.kernel,
            "protocols": protocols,
            # options under "_" hold in-memory values (a model's input arrays), not reported
            **({"options": {k: v for k, v in s.options.items() if not k.startswith("_")}} if s.options else {}),
            **({"base_runs_reused_from_earlier_audit": sorted(set(reused))} if reused else {}),
            "candidates": [
                {
                    "device": c.device,
                    "mode": c.mode or self.registry.device(c.device).default_mode,
                    "overrides": c.overrides,
                    "profile_file": c.profile_path,
                    **({"profile": c.profile.name} if c.profile is not None else {}),
                }
                for c in candidates
            ],
        }


def run_audit(
    registry: Registry,
    settings: AuditSettings,
    candidates: list[Candidate],
    progress: Progress | None = None,
    *,
    base_runs: BaseRuns | None = None,
) -> tuple[AuditReport, dict[str, Any]]:
    """Audit ``candidates`` on ``settings.kernel``: the report, and the in-memory data of the runs
    (per protocol, for the plots). The one call the CLI and the library make."""
    auditor = Auditor(registry, settings, progress, base_runs=base_runs)
    report = auditor.run(candidates)
    return report, auditor.data
