"""The kernel's own metrics of one audit run: synaptic events/s, NeuroBench's, energy where metered.

An audit run is a run like ``hwbench run``'s: the same registered ``performance``, ``static``,
``workload`` and ``energy`` metrics apply to it (:data:`hwbench.core.metric.RUN_KINDS`), computed
from its wall time and the kernel's structure and activity reports. The audit reads no energy
counter (its runs are short, and several run at once), so a real run's energy is "not measured";
an emulated one quotes the chip's published figure, as ``run`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hwbench.core.device import Device
from hwbench.core.energy import EnergyReading, published
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.metric import RUN_KINDS, evaluate
from hwbench.core.plugins import Registry
from hwbench.core.results import Timing
from hwbench.core.scenario import Trace

Reports = dict[tuple[int, ...], dict[str, Any]]
"""The kernel's structure and activity reports already computed in one audit, per workload and
step count (a replay can take seconds; reference, gold and candidates share one workload)."""


def run_metrics(
    registry: Registry, kernel: Kernel, workload: Workload, device: Device, trace: Trace, reports: Reports | None = None
) -> dict[str, Any]:
    """Every registered run metric that applies to ``kernel``, for the run that produced ``trace``."""
    samples = int(np.shape(trace.probes)[0])
    steps = samples * kernel.info.sample_every * max(1, trace.refine)
    run = AuditRun(trace.execution, trace.detail, trace.run_s, trace.setup_s, steps)
    return kernel_metrics(registry, kernel, workload, device, run, reports)


@dataclass(frozen=True)
class AuditRun:
    """What the metrics need of one audit run: how it executed, for how long, how many steps."""

    execution: Literal["real", "emulated"]
    engine: str
    run_s: float
    setup_s: float
    steps: int


def kernel_metrics(
    registry: Registry,
    kernel: Kernel,
    workload: Workload,
    device: Device,
    run: AuditRun,
    reports: Reports | None = None,
) -> dict[str, Any]:
    """Every registered run metric (``performance``, ``static``, ``workload``, ``energy``) that
    applies to ``kernel``, for ``run``; the errors of a metric or a kernel report under "errors"."""
    if run.steps == 0 or run.run_s <= 0:
        return {}
    timing = _timing(kernel, workload, device, run)
    if run.execution == "emulated":
        energy = published(run.run_s, device.spec.published_energy, device.name)
    else:
        energy = EnergyReading(status="not measured", seconds=run.run_s, method="the audit reads no energy counter")
    key = (id(workload.arrays), id(workload.params), id(workload.state0), run.steps)
    known = (reports if reports is not None else {}).get(key)
    if known is None:
        known = _reports(kernel, workload, run.steps)
        if reports is not None:
            reports[key] = known
    errors: dict[str, str] = known["errors"]
    data = {"timing": timing, "workload": workload, "energy": energy, "structure": known["structure"],
            "activity": known["activity"]}  # fmt: skip
    found = evaluate(registry.metrics.values(), RUN_KINDS, kernel, **data)
    out: dict[str, Any] = dict(found.values)
    if found.errors or errors:
        out["errors"] = {**errors, **found.errors}
    return out


def _reports(kernel: Kernel, workload: Workload, steps: int) -> dict[str, Any]:
    """The kernel's structure and activity reports (None where it gives none or its report fails)."""
    out: dict[str, Any] = {"errors": {}}
    for name in ("structure", "activity"):
        try:
            out[name] = kernel.activity(workload, steps) if name == "activity" else kernel.structure(workload)
        except Exception as exc:  # a kernel whose report fails: the metrics that need it are left out
            out[name] = None
            out["errors"][f"kernel.{name}"] = f"{exc.__class__.__name__}: {exc}"
    return out


def _timing(kernel: Kernel, workload: Workload, device: Device, run: AuditRun) -> Timing:
    simulated_ms = run.steps * kernel.info.step_ms(workload.params)
    src = workload.arrays.get("src")
    return Timing(
        kernel=kernel.name,
        device=device.name,
        mode="",
        execution=run.execution,
        engine=run.engine,
        dtype="",
        ncells=workload.size,
        ngj=0 if src is None else int(np.asarray(src).size),
        connected=bool(workload.meta.get("connected", True)),
        setup_s=run.setup_s,
        run_s=run.run_s,
        run_s_all=[run.run_s],
        simulated_ms=simulated_ms,
        steps=run.steps,
        us_per_step=run.run_s / run.steps * 1e6,
        rtf=run.run_s / (simulated_ms / 1000.0) if simulated_ms > 0 else None,
        cell_steps_per_s=workload.size * run.steps / run.run_s,
    )
