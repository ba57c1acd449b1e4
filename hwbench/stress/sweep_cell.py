"""One cell of a sweep, as a Dask worker runs it: an ordinary audit, summarised.

:func:`run_cell` is the task function. It takes only pydantic records (:class:`Cell`,
:class:`CellSettings`), builds the workload itself (a pure function of the seed: the scenario and
network are drawn from it, so every worker builds the same bits in milliseconds, cheaper than
shipping arrays), and uses the worker process's registry and JAX compile cache, which live as long
as the worker does. A deterministic refusal (a device that cannot run the cell) comes back as a
``failed`` outcome with its one-line reason; anything else is raised, so Dask reports it.
"""

from __future__ import annotations

import os
import socket
import time
from collections import OrderedDict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hwbench.accuracy.audit import AuditSettings, Candidate
from hwbench.accuracy.numerics.formats import custom_float
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.accuracy.report import AuditReport
from hwbench.accuracy.verdict import Verdict, combine
from hwbench.core.device import Device
from hwbench.core.errors import HwbenchError
from hwbench.core.plugins import Registry
from hwbench.core.runner import resolve_mode
from hwbench.stress.sweep_spec import Cell

SWEEP_SOURCE = "hwbench sweep: the width under test (an assumption, by design)"
BASE_RUNS_KEPT = 4  # scenarios whose base traces a worker keeps (a full stress scenario's are ~30 MB)


class BaseRunCache(OrderedDict[tuple[Any, ...], dict[str, Any]]):
    """The reference, gold and ensemble traces of the last few scenarios this process ran.

    Cells that differ only in the candidate (every width of an op-class grid, for one seed) share
    them, so each worker runs them once per scenario instead of once per cell. Cells are expanded
    seed by seed, so a worker meets one seed's cells together.
    """

    def __setitem__(self, key: tuple[Any, ...], value: dict[str, Any]) -> None:
        super().__setitem__(key, value)
        while len(self) > BASE_RUNS_KEPT:
            self.popitem(last=False)


_BASE_RUNS = BaseRunCache()


def clear_base_runs() -> int:
    """Forget this process's shared base traces (benchmarks run on ``client.run``); how many there were."""
    n = len(_BASE_RUNS)
    _BASE_RUNS.clear()
    return n


class CellSettings(BaseModel):
    """What every cell of a sweep shares."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kernel: str  # the kernel every cell audits
    protocols: tuple[str, ...] = ()  # empty: every protocol that applies to the kernel
    quick: bool = False
    share_base_runs: bool = True  # reuse a worker's reference / gold / ensemble traces across cells
    baseline_cache: bool = True  # read and keep them in the audit's on-disk baseline cache (sweep --no-cache)
    options: dict[str, Any] = Field(default_factory=dict)  # protocol options of every cell (a model's file, inputs)


class CellOutcome(BaseModel):
    """A finished (or refused) cell: its verdict, the reason behind it, and the full audit report."""

    model_config = ConfigDict(extra="forbid")

    key: str
    cell: Cell
    status: Literal["done", "failed"]
    verdict: Verdict | None = None
    protocols: dict[str, Verdict] = Field(default_factory=dict)
    reason: str = ""
    elapsed_s: float = 0.0
    worker: str = ""
    report: dict[str, Any] | None = Field(None, description="the cell's hwbench.audit/1 report (what is recorded)")


def cell_profile(device: Device, mode: str, cell: Cell) -> NumericsProfile | None:
    """The candidate's profile: the device's own (with the cell's parameters) and, for a cell with
    reduced op classes, those classes replaced by ``m<bits>`` with fp32's exponent range and the
    cell's rounding. None when the cell changes nothing per op (the audit then applies
    ``overrides`` as ``--set`` does)."""
    if not cell.ops:
        return None
    base = device.numerics(mode, dict(cell.overrides) or None)
    if base is None:
        from hwbench.accuracy.numerics.presets import cpu_profile

        base = cpu_profile("fp32")
    fmt = custom_float(int(cell.bits or 0), -126, 127)
    entry = OpNumerics(format=fmt, rounding=cell.rounding, source=SWEEP_SOURCE, confidence=Confidence.ASSUMED)
    ops = {**base.ops, **{op: entry for op in cell.ops}}
    name = f"{base.name}+{cell.group}@m{cell.bits}-{cell.rounding.value}"
    return NumericsProfile.model_validate({**base.model_dump(), "name": name, "ops": ops})


def candidate(registry: Registry, cell: Cell) -> Candidate:
    """The cell's audit candidate (raises a UsageError for an unknown device, mode or parameter)."""
    device = registry.device(cell.device)
    mode = resolve_mode(device, cell.mode)
    profile = cell_profile(device, mode, cell)
    if profile is None and cell.overrides:
        device.numerics(mode, dict(cell.overrides))  # unknown keys fail now, naming the settable ones
    return Candidate(cell.device, mode, dict(cell.overrides), profile=profile)


def run_cell(cell: Cell, settings: CellSettings, base_runs: BaseRunCache | None = None) -> CellOutcome:
    """Audit one cell (the Dask task). ``base_runs``: the cache of base traces to share (default:
    this process's own, when ``settings.share_base_runs``)."""
    from hwbench.accuracy.audit import Auditor
    from hwbench.core.plugins import get_registry

    t0 = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    audit_settings = AuditSettings(
        kernel=settings.kernel,
        quick=settings.quick,
        seed=cell.seed,
        protocols=settings.protocols,
        dt_refine=cell.dt > 1,
        refine_factors=(cell.dt,) if cell.dt > 1 else (),
        threads=_worker_threads(),
        cache=settings.baseline_cache,
        options=dict(settings.options),
    )
    try:
        registry = get_registry()
        cand = candidate(registry, cell)
        if base_runs is None and settings.share_base_runs:
            base_runs = _BASE_RUNS
        report = Auditor(registry, audit_settings, base_runs=base_runs).run([cand])
    except HwbenchError as exc:
        return CellOutcome(
            key=cell.key(),
            cell=cell,
            status="failed",
            reason=str(exc),
            elapsed_s=time.perf_counter() - t0,
            worker=worker,
        )
    outcome = outcome_of(cell, report.model_dump(mode="json", by_alias=True))
    outcome.elapsed_s, outcome.worker = time.perf_counter() - t0, worker
    return outcome


def _worker_threads() -> int | None:
    """Inside a Dask worker, its thread count (an audit then runs that many jobs at once, not one
    per core: the cluster already gives every core a worker); None elsewhere."""
    try:
        from distributed import get_worker

        return get_worker().state.nthreads
    except (ImportError, ValueError, AttributeError):
        return None


def outcome_of(cell: Cell, document: dict[str, Any]) -> CellOutcome:
    """A cell's outcome from its audit report document (a fresh one, or one read back to resume)."""
    report = AuditReport.model_validate(document)
    judged = judged_verdicts(report, cell.dt)
    if not judged:
        return CellOutcome(key=cell.key(), cell=cell, status="failed", reason="the audit judged no candidate")
    verdict = combine([v.verdict for v in judged.values()])
    return CellOutcome(
        key=cell.key(),
        cell=cell,
        status="done",
        verdict=verdict,
        protocols={name: v.verdict for name, v in judged.items()},
        reason=_reason(judged, verdict),
        elapsed_s=report.elapsed_s,
        report=document,
    )


def judged_verdicts(report: AuditReport, dt: int) -> dict[str, Any]:
    """Per protocol, the verdict a cell is judged by: its candidate's, or at dt/k the refined run's
    (whose mode ends in ``dt/k``). A sweep cell audits one candidate."""
    out = {}
    for protocol in report.protocols:
        for verdict in protocol.verdicts:
            refined = verdict.mode.endswith(f" dt/{dt}")
            if (dt == 1 and " dt/" not in verdict.mode) or (dt > 1 and refined):
                out[protocol.name] = verdict
    return out


def _reason(judged: dict[str, Any], verdict: Verdict) -> str:
    """The reason of the protocol that decided the verdict (the forensic explanation of a FAIL)."""
    for name, v in judged.items():
        if v.verdict == verdict and v.reasons:
            return f"{name}: {v.reasons[0]}"
    return ""
