"""The steps of ``hwbench sweep`` behind the options: build the spec, refuse bad cells early, run
the sweep with its ledger, and write the result file and heatmap."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwbench.core.errors import UsageError
from hwbench.plugins import DEFAULT_KERNEL
from hwbench.stress.sensitivity import SweepResult
from hwbench.stress.sweep_spec import Cell, SweepSpec


@dataclass
class SweepPlan:
    """A sweep about to run: its id and folder, spec and cells."""

    sweep_id: str
    folder: Path
    spec: SweepSpec
    cells: list[Cell]
    resumed: bool = False
    baseline_cache: bool = True  # the audits use the baseline cache (off: hwbench sweep --no-cache)


def open_sweep(
    root: Path,
    sweep_id: str,
    *,
    resume: bool = False,
    spec_path: str | None = None,
    axes: dict[str, Any] | None = None,
) -> SweepPlan:
    """A new sweep (its spec checked, every cell's candidate built, then ``spec.json`` written), or
    the saved one to resume. Nothing is written here (see :func:`_save_spec`)."""
    folder = root / sweep_id
    if resume:
        if not (folder / "spec.json").exists():
            raise UsageError(f"no sweep '{sweep_id}' in {root} (its spec.json is missing)")
        spec = SweepSpec.load(folder / "spec.json")
    else:
        if folder.exists():
            raise UsageError(f"sweep '{sweep_id}' already exists in {root}; use --resume {sweep_id}")
        spec = build_spec(spec_path, axes or {})
    cells = spec.expand()
    preflight(spec, cells)
    return SweepPlan(sweep_id, folder, spec, cells, resume)


def _save_spec(plan: SweepPlan) -> None:
    """``spec.json``, atomically, once the cluster is up (a scheduler that cannot be reached leaves nothing)."""
    plan.folder.mkdir(parents=True, exist_ok=True)
    tmp = plan.folder / "spec.json.partial"
    from hwbench.core.strict_json import dump_model

    tmp.write_text(dump_model(plan.spec, indent=1))
    tmp.replace(plan.folder / "spec.json")


def build_spec(spec_path: str | None, axes: dict[str, Any]) -> SweepSpec:
    """The spec from a file or from the CLI shorthands (not both: which would win is unclear)."""
    from hwbench.core.audit_protocol import MAX_SEED
    from hwbench.stress.sweep_spec import parse_grid, parse_ints, parse_rounding, parse_set_values

    if spec_path:
        if any(axes.values()):
            raise UsageError("give the sweep as --spec FILE or as options (--device, --grid, ...), not both")
        return SweepSpec.load(spec_path)
    data: dict[str, Any] = {"quick": bool(axes["quick"])}
    if axes.get("kernel"):
        data["kernel"] = axes["kernel"]
    if axes["devices"]:
        data["devices"] = list(axes["devices"])
    if axes["protocols"]:
        data["protocols"] = list(axes["protocols"])
    if axes["sets"]:
        data["sets"] = parse_set_values(tuple(axes["sets"]))
    if axes["grids"]:
        data["grid"] = [parse_grid(g) for g in axes["grids"]]
    if axes["rounding"]:
        if not axes["grids"]:
            raise UsageError("--rounding sets the rounding of the --grid formats; give a --grid too")
        data["rounding"] = parse_rounding(axes["rounding"])
    if axes["seeds"]:
        data["seeds"] = parse_ints(axes["seeds"], what="--seeds", low=0, high=MAX_SEED)
    if axes["dts"]:
        data["dt"] = parse_ints(axes["dts"], what="--dt", low=1)  # the kernel's limit: preflight
    if axes.get("model"):
        from hwbench.library.model import model_options
        from hwbench.plugins import MODEL_KERNEL

        if axes.get("kernel"):
            raise UsageError("--model cannot be combined with --kernel: the model is what every cell audits")
        data["kernel"] = MODEL_KERNEL
        data["options"] = model_options(axes["model"], **axes["model_settings"])
    return SweepSpec.parse(data, origin="sweep options")


def preflight(spec: SweepSpec, cells: list[Cell]) -> None:
    """Every cell's candidate built here first (unknown devices, modes, parameters, unfit
    formats), so bad input is one line before a cluster starts."""
    from hwbench.core.plugins import get_registry
    from hwbench.stress.sweep_cell import candidate

    registry = get_registry()
    seen: set[str] = set()
    for cell in cells:
        probe_key = cell.model_copy(update={"seed": 0, "dt": 1}).key()
        if probe_key not in seen:
            seen.add(probe_key)
            candidate(registry, cell)
    from hwbench.accuracy.audit import Auditor, AuditSettings

    kernel = registry.kernel(spec.kernel or DEFAULT_KERNEL)
    # an unknown protocol, or one the kernel refuses: one line with the reason, before the cluster starts
    auditor = Auditor(
        registry, AuditSettings(kernel=kernel.name, protocols=sweep_protocols(spec), options=spec.options)
    )
    auditor.selected()
    if spec.options:  # a model: its file, inputs and options checked too
        auditor.preflight([candidate(registry, cells[0])])
    if any(c.dt > 1 for c in cells) and kernel.info.dt_param is None:
        raise UsageError(f"--dt: kernel '{kernel.name}' is discrete-time (no dt parameter)")
    from hwbench.stress.refinement import max_factor

    top = max_factor(kernel)
    if any(c.dt > top for c in cells):
        raise UsageError(
            f"--dt: kernel '{kernel.name}' takes dt divisors from 1 to {top} (a sample of "
            f"{kernel.info.sample_every} x k steps numbers its spikes in 16 bits), got {max(c.dt for c in cells)}"
        )


def sweep_protocols(spec: SweepSpec) -> tuple[str, ...]:
    """The protocols every cell runs: the spec's, else the kernel's sweep default (empty: every
    protocol that applies to the kernel)."""
    from hwbench.core.plugins import get_registry

    if spec.protocols:
        return tuple(spec.protocols)
    kernel = get_registry().kernel(spec.kernel or DEFAULT_KERNEL)
    return tuple(kernel.info.audit.sweep_protocols or ())


def execute(
    plan: SweepPlan,
    *,
    scheduler: str | None,
    workers: int | None,
    monitor: Any,
) -> SweepResult:
    """Run the sweep on Dask, then write ``sweep.json`` and ``sensitivity.png`` (atomically)."""
    from hwbench.core.results import write_json
    from hwbench.stress.sensitivity import CellRow, seed_distribution, sensitivity
    from hwbench.stress.sweep import dask_client, run_sweep
    from hwbench.stress.sweep_cell import CellSettings
    from hwbench.stress.sweep_ledger import JsonlLedger

    sweep_id, spec, cells, folder = plan.sweep_id, plan.spec, plan.cells, plan.folder
    from hwbench.cli.record import opened_store
    from hwbench.cli.sweep_store import BothLedgers, StoreLedger

    pending = opened_store()
    store = None if pending is None else StoreLedger(pending, sweep_id, {c.key(): c for c in cells})
    ledger = BothLedgers(JsonlLedger(folder / "cells.jsonl"), store)
    settings = CellSettings(
        kernel=spec.kernel or DEFAULT_KERNEL,
        protocols=sweep_protocols(spec),
        quick=spec.quick,
        baseline_cache=plan.baseline_cache,
        options=spec.options,
    )
    t0 = time.perf_counter()
    with dask_client(scheduler, workers) as (client, info):
        if not plan.resumed:
            _save_spec(plan)
        outcomes = run_sweep(client, cells, settings, ledger, monitor=monitor)
    result = SweepResult(
        sweep_id=sweep_id,
        spec=spec,
        cluster={"kind": info.kind, "address": info.address, "workers": info.workers},
        elapsed_s=time.perf_counter() - t0,
        cells=[CellRow.of(o) for o in outcomes],
        sensitivity=sensitivity(outcomes),
        seeds=seed_distribution(outcomes),
    )
    write_json(result, folder / "sweep.json")
    if result.sensitivity:
        from hwbench.cli.sweep_plots import heatmap

        heatmap(result, folder / "sensitivity.png")
    return result
